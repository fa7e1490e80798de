"""``kafkalog retain``: Kafka's time, size and log-start-offset retention on a stopped broker's data."""
from __future__ import annotations

import click

from ._decode import decode_limit_option
from ._times import Time
from ._targets import Directory, config_options, selection_options

HELP = """Delete old segments of a partition, or of the partitions of a log directory chosen by --all,
--topic or --partition, by Kafka's retention rules, offline and crash-safely. PATH is a partition
directory or one log directory (retain takes its lock); a folder holding log directories (one broker's
disk with several log.dirs, several brokers' disks) is refused with a command line for each.

Each partition gets its topic's own configuration, as the broker resolves it: Kafka's defaults, the
broker's server.properties (--server-properties), its dynamic configuration and the topic's overrides
from the KRaft metadata in the log directory (or, for a ZooKeeper-era broker, --topic-configs), then
--config [TOPIC:]KEY=VALUE. --retention-ms and --retention-bytes stand for --config retention.ms=... and
--config retention.bytes=... for every topic. Retention by time and size applies to topics whose
cleanup.policy contains delete; every topic loses what lies below its log start offset.
--log-start-offset also moves that offset first, as DeleteRecords does (refused, with exit 2, for an
internal or compacted-only topic, and for a topic whose cleanup.policy no source names, as kafkalog
delete-records refuses it; never above the high watermark, which is at most the log end), then
the topic's time and size retention run as well: to move it and nothing else, use kafkalog
delete-records. Tiered topics (remote.storage.enable) keep every local segment
not known to be uploaded (from __remote_log_metadata on the disk, or --remote-log-end-offset), use
local.retention.ms/bytes, and keep their log start offset. __cluster_metadata is never touched, nor
a directory the metadata says belongs to a deleted topic.

A time or size limit that only Kafka's built-in defaults set (retention.ms is 7 days) is applied only
with --use-defaults: without it that rule is left out (said in one line) and every rule whose value
is known runs. On a restored backup, give --now the time the backup was taken.

Kafka's rules hold exactly: deletion is always a prefix of the log and stops at the first segment that
stays; only segments entirely below the high watermark (from replication-offset-checkpoint, or
--high-watermark) can go; when every segment would go, the broker's roll comes first (an empty active
segment at the log end, and a producer snapshot there). Files are renamed to .deleted, then removed
(--keep-deleted leaves them), producer snapshots at deleted bases go too, log-start-offset-checkpoint
and leader-epoch-checkpoint are updated atomically. Every input is read before the first change; a
partition with an unreadable one is skipped and nothing of it changes. --backup-dir keeps every
deleted file and overwritten checkpoint. Refuses to run while a broker holds the directory's .lock;
leftovers of an interrupted run are finished first, as kafkalog recover does.

The report leads with the verdict (what was deleted, or with --dry-run would be, and the exit status),
says once which configuration sources were read, then shows each partition that loses segments or has
a problem (its segments, their largest timestamps and the rule deciding each), counts the others in one
line and ends with the totals, within 80 columns. --details (-v) shows every partition, every value
used and where it came from, and each segment's rule, timestamp source and age.

\b
Examples:
  kafkalog retain --dry-run --all /var/lib/kafka/data
  kafkalog retain --dry-run --all --server-properties \\
    /etc/kafka/server.properties /var/lib/kafka/data
  kafkalog retain --all --retention-ms 604800000 \\
    --config audit:retention.ms=-1 /var/lib/kafka/data
  kafkalog retain --retention-bytes 1073741824 --now 2024-03-01 orders-0
  kafkalog retain --log-start-offset 5000 --retention-ms -1 \\
    --retention-bytes -1 orders-0

\b
Exit status:
  0  the job ran as configured (segments deleted or not; with --dry-run:
     would run)
  1  a problem was found: a partition skipped (damage, unknown high
     watermark, a deleted topic's directory), a tiered segment kept
     because it is not known to be uploaded, a log start offset that
     could not be set, leftovers of an interrupted run finished
  2  usage error, a --config value Kafka would reject, --log-start-offset
     on a topic Kafka refuses DeleteRecords for or whose cleanup.policy
     no source names
  3  could not run (lock held, unreadable configuration or metadata, I/O
     error such as a full disk: the message names the file and what to
     run)
"""


@click.command("retain", help=HELP, short_help="Delete old segments by Kafka's retention rules.")
@click.argument("path", type=Directory())
@selection_options
@config_options(remote=True)
@click.option("--retention-ms", type=int, default=None, metavar="MS",
              help="--config retention.ms=MS for every topic (-1: no time limit).")
@click.option("--retention-bytes", type=int, default=None, metavar="BYTES",
              help="--config retention.bytes=BYTES for every topic (-1: no size limit).")
@click.option("--use-defaults", is_flag=True,
              help="Apply Kafka's built-in retention.ms/retention.bytes where nothing else sets them.")
@click.option("--log-start-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Also advance the log start offset to this before retention runs (one partition only; "
                   "delete-records alone: kafkalog delete-records).")
@click.option("--high-watermark", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Use this high watermark instead of replication-offset-checkpoint's (one partition only).")
@click.option("--now", type=Time(), default=None, metavar="TIME",
              help="The current time (epoch ms or ISO-8601): reproducible runs, restored backups.")
@click.option("--dry-run", is_flag=True,
              help="Print what would be deleted and why (--details: every value used); change nothing.")
@click.option("--keep-deleted", is_flag=True, help="Leave the renamed .deleted files in place.")
@click.option("--backup-dir", "backup_dir_", type=click.Path(file_okay=False, dir_okay=True), default=None,
              metavar="DIR", help="Keep every file retain removes or overwrites here (outside the log directory; "
                                  "created if needed): segments as <partition>/<file>, checkpoints likewise.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Report format: text, or JSON lines (a partition object each, then a summary).")
@click.option("--details", "-v", is_flag=True,
              help="Text: every partition, the values it used and where each came from, every segment's rule.")
@decode_limit_option
def command(path, all_, topics, partitions, server_properties, topic_configs, config_flags, remote_offsets,
            retention_ms, retention_bytes, use_defaults, log_start_offset, high_watermark, now, dry_run,
            keep_deleted, backup_dir_, fmt, details) -> int:
    import time
    from pathlib import Path

    from ..layout import parse_partition_spec
    from ..output import stdout, work_done
    from ..render import repair_text, retain_report
    from ..repair.retain_exec import retain_partition
    from ..repair.topic_policy import (builtin_default_message, delete_records_refusal, refused_request,
                                       retention_settings, unknown_policy_refusal)
    from ._targets import (WriterRun, backup_dir, check_topic_flags, holding_lock, kraft_untouched,
                           open_configs, partition_dirs, policy_settings)

    started = time.monotonic()
    now_given = now is not None
    now = int(time.time() * 1000) if now is None else now
    try:
        wanted = {parse_partition_spec(p) for p in partitions}
    except ValueError as e:
        raise click.UsageError(str(e))
    dirs, lock_root = partition_dirs(Path(path), wanted, topics, all_)
    untouched = kraft_untouched(dirs)
    if (log_start_offset is not None or high_watermark is not None) and len(dirs) - len(untouched) != 1:
        raise click.UsageError("--log-start-offset and --high-watermark apply to one partition: give a partition "
                               "directory or one --partition")
    check_topic_flags(config_flags, remote_offsets, dirs)
    shorthands = [(k, str(v), f"--{k.replace('.', '-')} {v}") for k, v in
                  (("retention.ms", retention_ms), ("retention.bytes", retention_bytes)) if v is not None]
    backup = backup_dir(backup_dir_, lock_root)
    run = WriterRun("retain", lock_root, backup, dry_run)
    out = stdout()
    try:
        with holding_lock(lock_root, dry_run):
            resolver, pcs = open_configs(lock_root, [d for d in dirs if d not in untouched],
                                         server_properties=server_properties, topic_configs=topic_configs,
                                         config_flags=config_flags, remote_offsets=remote_offsets,
                                         shorthands=shorthands)
            settings = policy_settings(pcs, untouched, retention_settings)
            if log_start_offset is not None:         # DeleteRecords first: refused where Kafka refuses it
                live = [pc for d, pc in pcs.items() if d in settings]
                refused = refused_request([(f"{pc.topic}-{pc.partition}", delete_records_refusal(pc)) for pc in live])
                if refused:
                    raise click.UsageError(f"--log-start-offset: {refused}")
                refused = unknown_policy_refusal(live, "--log-start-offset: ")
                if refused:
                    raise click.UsageError(refused)
            left_out = []
            if not use_defaults:
                left_out = [(pcs[d].topic, u) for d, s in settings.items() for u in s.drop_builtin_defaults()]
            skipped = builtin_default_message(left_out) if left_out else None
            run.run(dirs, untouched,
                    lambda t: retain_partition(t, pcs.get(t.directory), settings.get(t.directory),
                                               log_start_offset=log_start_offset, high_watermark=high_watermark,
                                               now=now, dry_run=dry_run, keep_deleted=keep_deleted, backup=backup),
                    (lambda rep: retain_report.write_json(out, retain_report.partition_object(rep)))
                    if fmt == "json" else None)
            if not dry_run:
                work_done(run.status)       # a Ctrl-C from here on stops only the report
            if fmt == "json":
                retain_report.write_json(out, retain_report.summary_object(run.reports, now, now_given,
                                                                                  resolver, dry_run, int(run.status),
                                                                                  skipped))
            else:
                screen = repair_text.Run("retain", dry_run, details, time.monotonic() - started, int(run.status),
                                         now, now_given, list(resolver.sources),
                                         list(resolver.notes) + ([skipped] if skipped else []), root=str(lock_root))
                repair_text.emit(out, retain_report.text_lines(run.reports, screen))
    except BrokenPipeError:
        raise                   # the reader of the report went away (| head): app.main ends quietly with 141
    except OSError as e:
        raise run.failed(e) from e
    return run.status
