"""``kafkalog retain``: Kafka's time, size and log-start-offset retention on a stopped broker's data."""
from __future__ import annotations

import sys

import click

from ..status import Status

HELP = """Delete old segments of a partition (or of every partition of a log directory) by Kafka's
retention rules, offline and crash-safely.

Policies, with Kafka's names, applied in Kafka's order: --log-start-offset (delete-records: advance the
log start offset, deleting whole segments below it), --retention-bytes (delete the oldest segments while
the log stays at least that large without them), --retention-ms (delete segments whose largest timestamp
-- their last time-index entry, or the .log file's modification time -- is older than that).

Kafka's rules hold exactly: deletion is always a prefix of the log and stops at the first segment that
stays; only segments entirely below the high watermark (from replication-offset-checkpoint, or
--high-watermark) can go; when every segment would go, the broker's roll comes first (an empty active
segment at the log end, and a producer snapshot there). Files are renamed to .deleted, then removed
(--keep-deleted leaves them), producer snapshots at deleted bases go too, log-start-offset-checkpoint
and leader-epoch-checkpoint are updated atomically. Every input is read before the first change; a
partition with an unreadable one is skipped and nothing of it changes. --backup-dir keeps every
deleted file and overwritten checkpoint. Refuses to run while a broker holds the directory's .lock;
leftovers of an interrupted run are finished first, as kafkalog recover does.

\b
Examples:
  kafkalog retain --dry-run --retention-ms 604800000 /var/lib/kafka/data
  kafkalog retain --retention-bytes 1073741824 --now 2024-03-01T00:00:00Z orders-0
  kafkalog retain --log-start-offset 5000 orders-0

\b
Exit status: 0 nothing to delete; 1 segments deleted (or would be, with --dry-run), or a partition
could not be handled (unknown high watermark, a problem found); 2 usage error; 3 could not run (lock
held, I/O error such as a full disk: the message names the file and what to run).
"""


class _Time(click.ParamType):
    name = "TIME"

    def convert(self, value, param, ctx):
        from ..engine.lookup import parse_timestamp
        try:
            t = parse_timestamp(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if t < 0:
            self.fail("give epoch milliseconds or an ISO-8601 time", param, ctx)
        return t


@click.command("retain", help=HELP, short_help="Delete old segments by Kafka's retention rules.")
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option("--retention-ms", type=int, default=-1, show_default=True, metavar="MS",
              help="Delete segments older than this (negative: no time retention).")
@click.option("--retention-bytes", type=int, default=-1, show_default=True, metavar="BYTES",
              help="Keep the log at most this large (negative: no size retention).")
@click.option("--log-start-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Advance the log start offset to this (one partition only).")
@click.option("--high-watermark", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Use this high watermark instead of replication-offset-checkpoint's (one partition only).")
@click.option("--now", type=_Time(), default=None, help="The current time (epoch ms or ISO-8601), for reproducible runs.")
@click.option("--partition", "partitions", multiple=True, metavar="TOPIC-N",
              help="Only this partition of a log directory (repeatable).")
@click.option("--dry-run", is_flag=True, help="Print what would be deleted and why; change nothing.")
@click.option("--keep-deleted", is_flag=True, help="Leave the renamed .deleted files in place.")
@click.option("--backup-dir", "backup_dir_", type=click.Path(file_okay=False, dir_okay=True), default=None,
              metavar="DIR", help="Keep every file retain removes or overwrites here (outside the log directory; "
                                  "created if needed): segments as <partition>/<file>, checkpoints likewise.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(path, retention_ms, retention_bytes, log_start_offset, high_watermark, now, partitions, dry_run,
            keep_deleted, backup_dir_, fmt) -> int:
    import time
    from pathlib import Path

    from ..layout import METADATA_PARTITION, parse_partition_spec
    from ..render import retain_report
    from ..repair.retain_exec import check, execute, roll_snapshot
    from ..repair.retain_plan import Policy, RetainPlan, SegmentFacts, plan_retention
    from ._targets import CannotRun, backup_dir, locked_states, partition_dirs, stopped_message

    now = int(time.time() * 1000) if now is None else now
    try:
        wanted = {parse_partition_spec(p) for p in partitions}
    except ValueError as e:
        raise click.UsageError(str(e))
    dirs, lock_root = partition_dirs(Path(path), wanted)
    dirs = [d for d in dirs if d.name != METADATA_PARTITION]
    if (log_start_offset is not None or high_watermark is not None) and len(dirs) != 1:
        raise click.UsageError("--log-start-offset and --high-watermark apply to one partition: give a partition "
                               "directory or one --partition")
    backup = backup_dir(backup_dir_, lock_root)
    status = Status.OK
    current = None
    try:
        for t in locked_states(dirs, lock_root, dry_run, backup):
            current = t.directory
            state = t.state
            if state is None:
                plan = RetainPlan(blocked=t.note)
                outcome = None
            else:
                d = state.directory
                log_end, problems = check(state, need_hw=high_watermark is None)
                facts = [SegmentFacts(s.base_offset, s.size, s.largest_timestamp,
                                      "time index" if s.timestamp_source.startswith("last") else "mtime")
                         for s in state.segments]
                hw = high_watermark if high_watermark is not None else state.high_watermark
                plan = plan_retention(facts, log_end, hw, state.log_start,
                                      Policy(retention_ms, retention_bytes, log_start_offset), now, problems)
                snapshot = None
                if plan.roll_at is not None:
                    snapshot, problems = roll_snapshot(d, state.segments, log_end, state.log_start)
                    if problems:
                        plan = plan_retention(facts, log_end, hw, state.log_start,
                                              Policy(retention_ms, retention_bytes, log_start_offset), now, problems)
                    plan.snapshot_at_roll = snapshot is not None
                outcome = None
                if not dry_run:
                    outcome = execute(d, state.topic, state.partition, plan, state.logdir, keep_deleted, backup,
                                      snapshot)
            if fmt == "json":
                retain_report.write_json(sys.stdout, retain_report.partition_object(t, plan, outcome, dry_run))
            else:
                retain_report.write_text(sys.stdout, t, plan, outcome, dry_run)
            if (plan.deleted or plan.new_log_start != plan.old_log_start or plan.blocked or t.finished):
                status = Status.PROBLEMS
            current = None
    except CannotRun as e:
        sys.stderr.write(f"kafkalog: {e}\n")
        return Status.CANNOT_RUN
    except OSError as e:
        sys.stdout.flush()
        sys.stderr.write(stopped_message("retain", current, lock_root, e, backup))
        return Status.CANNOT_RUN
    return status
