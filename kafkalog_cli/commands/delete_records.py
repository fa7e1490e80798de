"""``kafkalog delete-records``: Kafka's DeleteRecords on a stopped broker's data, nothing else."""
from __future__ import annotations

import click

from ..status import Status
from ._decode import decode_limit_option
from ._targets import Directory, config_options

HELP = """Move the log start offset of partitions forward, and delete the segments that lie wholly below it:
what kafka-delete-records.sh asks of a running cluster (DeleteRecords), offline and crash-safely. No
retention by time or size runs (that is kafkalog retain).

The offsets come from --offset-json-file, in kafka-delete-records.sh's format

\b
  {"partitions": [{"topic": "orders", "partition": 0, "offset": 5000}],
   "version": 1}

or from --offset TOPIC-N=OFFSET (repeatable). An offset of -1 means the partition's high watermark, as
for Kafka. Each partition is looked for in the LOG_DIRs given (a broker with several log directories:
give them all, or the folder holding them: each is locked); one not found is a problem, one
found in two of them (several brokers' disks) a usage error. As Kafka's DeleteRecords does, an
offset above the high watermark is refused, an offset below the current log start changes nothing,
and a segment goes only when the next one starts at or below the new log start offset (the segment
holding it stays, its records below it are no longer served).

The high watermark is the one the broker has once it has loaded the log: replication-offset-checkpoint's,
lowered to the log end when it lies beyond it (a tail lost unflushed, a restored backup); for a partition
whose only replica is this broker (KRaft metadata), the log end, to which the broker raises it when it
leads the partition (after a kill the checkpoint lags behind).

Kafka refuses DeleteRecords on an internal topic (__consumer_offsets, __transaction_state,
__share_group_state) and on a topic whose cleanup.policy has no "delete" (compacted only). The policy
comes from the KRaft metadata, --server-properties, --topic-configs and --config, as for retain and
compact. Kafka answers each partition of a request on its own; kafkalog refuses the whole request
(exit 2, nothing changed) when it names such a partition: it is a mistaken request, and the
rest of it should not half-apply. It refuses it too when no source names the cleanup.policy of a
partition's topic (a ZooKeeper-era directory: the overrides are in ZooKeeper), rather than take
Kafka's default (delete) for a topic that may be compacted: give --topic-configs FILE, the output of
kafka-configs.sh --describe --entity-type topics (a topic absent from it has no override, so the
broker's default applies), or --config TOPIC:cleanup.policy=delete.

Files are renamed to .deleted, then log-start-offset-checkpoint and leader-epoch-checkpoint are
rewritten atomically, then the .deleted files are removed (--keep-deleted leaves them); every input is
read before the first change; --backup-dir keeps every file removed or overwritten; --dry-run prints
the plan. Refuses to run while a broker holds a directory's .lock.

\b
Examples:
  kafkalog delete-records --offset-json-file offsets.json /data/kafka
  kafkalog delete-records --dry-run --offset orders-0=5000 \\
    --offset orders-1=-1 /var/lib/kafka/data

\b
Exit status:
  0  every log start offset asked for was set (or already there)
  1  a problem: a partition not found, an offset above the high
     watermark, a partition skipped (damage, unknown high watermark)
  2  usage error, a malformed offset file, a partition Kafka refuses
     (an internal or compacted-only topic) or whose topic's
     cleanup.policy no source names: nothing changed
  3  could not run (lock held, I/O error)
"""


@click.command("delete-records", help=HELP, short_help="Move log start offsets forward (Kafka's DeleteRecords).")
@click.argument("log_dirs", nargs=-1, required=True, metavar="LOG_DIR...",
                type=Directory())
@click.option("--offset-json-file", type=click.Path(exists=True, dir_okay=False), default=None, metavar="FILE",
              help="kafka-delete-records.sh's JSON: {\"partitions\": [{\"topic\", \"partition\", \"offset\"}]}.")
@click.option("--offset", "offsets", multiple=True, metavar="TOPIC-N=OFFSET",
              help="The new log start offset of one partition (repeatable; -1: its high watermark).")
@config_options(remote=False)
@click.option("--dry-run", is_flag=True, help="Print what would be deleted and why; change nothing.")
@click.option("--keep-deleted", is_flag=True, help="Leave the renamed .deleted files in place.")
@click.option("--backup-dir", "backup_dir_", type=click.Path(file_okay=False, dir_okay=True), default=None,
              metavar="DIR", help="Keep every file removed or overwritten here (outside the log directories).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Report format: text, or JSON lines (a partition object each, then a summary).")
@click.option("--details", "-v", is_flag=True, help="Text: every partition and every segment's rule.")
@decode_limit_option
def command(log_dirs, offset_json_file, offsets, server_properties, topic_configs, config_flags, dry_run,
            keep_deleted, backup_dir_, fmt, details) -> int:
    import time
    from contextlib import ExitStack
    started = time.monotonic()

    from ..output import stdout, work_done
    from ..render import retain_report
    from ._targets import WriterRun, backup_dir, check_topic_flags, holding_lock, kraft_untouched

    wanted = _wanted(offset_json_file, offsets)
    roots, found, problems = _locate(log_dirs, wanted)
    check_topic_flags(config_flags, (), list(found))
    backups = {r: backup_dir(backup_dir_, r) for r in roots}
    now = int(time.time() * 1000)
    # before the first log directory is locked, a stopped run names the first one and no backup
    run = WriterRun("delete-records", roots[0], None, dry_run)
    if problems:
        run.status = Status.PROBLEMS
    on_report = ((lambda rep: retain_report.write_json(stdout(), retain_report.partition_object(rep)))
                 if fmt == "json" else None)
    sources = dict(server_properties=server_properties, topic_configs=topic_configs, config_flags=config_flags)
    try:
        with ExitStack() as locks:      # every log directory locked and every partition's policy known first
            todo = []
            for root in roots:
                dirs = sorted(d for d, r in found.items() if r == root)
                if dirs:
                    run.lock_root = root
                    locks.enter_context(holding_lock(root, dry_run))
                    untouched = kraft_untouched(dirs)
                    todo.append((root, dirs, untouched, *_settings(root, dirs, untouched, sources)))
            live = [pc for _r, _d, _u, pcs, settings in todo for d, pc in pcs.items() if d in settings]
            _refuse(live)
            run.check_reader()
            for root, dirs, untouched, pcs, settings in todo:
                run.lock_root, run.backup = root, backups[root]
                run.run(dirs, untouched,
                        lambda t: _delete(t, pcs, settings, wanted, now, dry_run, keep_deleted, run.backup),
                        on_report)
        if not dry_run:
            work_done(run.status)           # a Ctrl-C from here on stops only the report
        _render(run, problems, dry_run, details, time.monotonic() - started, now, fmt)
    except BrokenPipeError:
        raise                   # the reader of the report went away (| head): app.main ends quietly with 141
    except OSError as e:
        raise run.failed(e) from e
    return run.status


def _wanted(offset_json_file, offsets) -> dict[tuple[str, int], int]:
    """{(topic, partition): new log start offset} from the offset file and the --offset flags (a usage error
    when malformed, empty, or a partition is given twice)."""
    from ..engine.delete_records import OffsetsError, parse_offset_flags, parse_offset_json
    from ..engine.mapped import read_regular
    wanted: dict[tuple[str, int], int] = {}             # an OffsetsError is a usage error (exit 2)
    if offset_json_file is not None:     # up to the size limit of every text input (16 MiB), never blocking
        wanted.update(parse_offset_json(read_regular(offset_json_file).decode("utf-8", errors="replace")))
    for tp, off in parse_offset_flags(offsets).items():
        if tp in wanted:
            raise OffsetsError(f"{tp[0]}-{tp[1]} is given twice")
        wanted[tp] = off
    if not wanted:
        raise click.UsageError("give --offset-json-file FILE or --offset TOPIC-N=OFFSET")
    from ..repair.topic_policy import delete_records_refusal_by_name, refused_request
    refused = refused_request([(f"{t}-{p}", delete_records_refusal_by_name(t)) for t, p in sorted(wanted)])
    if refused:
        raise click.UsageError(refused)
    return wanted


def _refuse(pcs: list) -> None:
    """Refuse the whole request when Kafka refuses DeleteRecords for any partition of it by its topic's
    configuration (``topic_policy.refused_request``), or when no source names the cleanup.policy of one
    (``topic_policy.unknown_policy_refusal``)."""
    from ..repair.topic_policy import delete_records_refusal, refused_request, unknown_policy_refusal
    refused = (refused_request([(f"{pc.topic}-{pc.partition}", delete_records_refusal(pc)) for pc in pcs])
               or unknown_policy_refusal(pcs))
    if refused:
        raise click.UsageError(refused)


def _settings(root, dirs, untouched: dict, sources: dict) -> tuple[dict, dict]:
    """(partition configs, delete-records settings) of the partitions of one log directory, from the same
    configuration sources retain and compact read (``sources``: the options naming them); a partition the
    topic's policy leaves alone goes into ``untouched`` with the reason."""
    from ..repair.topic_policy import delete_records_settings
    from ._targets import open_configs, policy_settings
    _resolver, pcs = open_configs(root, [d for d in dirs if d not in untouched], **sources)
    return pcs, policy_settings(pcs, untouched, delete_records_settings)


def _delete(t, pcs: dict, settings: dict, wanted: dict, now: int, dry_run: bool, keep_deleted: bool, backup):
    """One partition's DeleteRecords: retain's executor with only the log start offset rule."""
    from ..repair.retain_exec import retain_partition
    return retain_partition(t, pcs.get(t.directory), settings.get(t.directory),
                            log_start_offset=wanted[_tp(t.directory)], high_watermark=None, now=now,
                            dry_run=dry_run, keep_deleted=keep_deleted, backup=backup,
                            hw_remedy="delete-records moves the log start only up to a known high watermark, as "
                                      "Kafka's DeleteRecords does")


def _render(run, problems: list[str], dry_run: bool, details: bool, elapsed: float, now: int, fmt: str) -> None:
    """The report: JSON lines (the partitions went out as they came; then the partitions not found and the
    summary), or the text screen."""
    from ..output import stdout
    from ..render import repair_text, retain_report
    out = stdout()
    if fmt == "json":
        for p in problems:
            retain_report.write_json(out, {"type": "problem", "kind": "partition_not_found", "message": p})
        retain_report.write_json(out, {"type": "summary", "dry_run": dry_run, "partitions": len(run.reports),
                                              "not_found": len(problems), "notes": [], "status": int(run.status)})
    else:
        screen = repair_text.Run("delete-records", dry_run, details, elapsed, int(run.status), now)
        repair_text.emit(out, retain_report.text_lines(run.reports, screen, problems))


def _tp(directory) -> tuple[str, int]:
    from ..layout import parse_partition_dir
    n = parse_partition_dir(directory.name)
    return n.topic, n.partition


def _locate(log_dirs, wanted: dict) -> tuple[list, dict, list[str]]:
    """(the log directories, {partition directory: its log directory}, problems) for every partition asked
    for, among the log directories given and those further down a folder given."""
    from ._targets import writer_targets
    targets = writer_targets(log_dirs, "delete-records", folders=True)
    roots = targets.logdir_paths()
    found, where = {}, {}
    for tp, copies in targets.replicas().items():
        if tp not in wanted:
            continue
        if len(copies) > 1:
            raise click.UsageError(f"{tp[0]}-{tp[1]} is in both {copies[0].logdir} and {copies[1].logdir}: give the "
                                   "log directory that holds its current log")
        where[tp] = copies[0].logdir
        found[copies[0].path] = copies[0].logdir
    missing = [f"{t}-{p}: not in {', '.join(str(r) for r in roots)}" for t, p in sorted(set(wanted) - set(where))]
    return roots, found, missing
