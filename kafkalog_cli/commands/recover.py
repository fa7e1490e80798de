"""``kafkalog recover``: do offline what a broker does at start-up after an unclean shutdown."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..status import Status
from ._decode import decode_limit_option
from ._jobs import jobs_option
from ._targets import Directory

HELP = """Repair a Kafka log directory after an unclean shutdown, offline, the way the broker's log
loader would at start-up, and report exactly what was done.

Stop the broker first: recover takes the directory's .lock (a POSIX lock, as the broker does) and
refuses to run while another process holds it. LOG_DIR is one log directory: a partition directory
is refused with the command to give instead (--partition), a folder holding log directories (one
broker's disk with several log.dirs, several brokers' disks) with a command line for each.

\b
In the broker's order (Kafka LogManager/LogLoader):
  1. leftovers: *.deleted and *.cleaned files removed, interrupted .swap
     files completed (or discarded when they belong to an incomplete
     split), orphan index files removed; a file whose name Kafka's
     loader misreads (notes.log, old.snapshot: the broker does not
     start; 12.log: an empty segment 12) is moved into --backup-dir, or
     reported and left in place without one;
  2. segments missing their .index (or with a corrupt .txnindex) are
     recovered even after a clean shutdown; where Kafka's loader would
     stop on such a segment (offsets going backwards) or cut it and keep
     the later segments (a gap in the log), the partition is left
     unchanged and reported, unless --truncate-at-damage asks for the cut
     of step 3;
  3. without a .kafka_cleanshutdown marker (or with --force), every
     segment from the one holding the recovery point
     (recovery-point-offset-checkpoint; 0 when absent) is recovered batch
     by batch: framing and CRC checked, the .log truncated at the first
     invalid byte, every later segment of the partition removed,
     .index/.timeindex rebuilt with the per-batch rule and .txnindex from
     the replayed producer state; with the marker (Kafka skips this
     step, and so does recover) those segments are still read, and
     damage in them is reported as a problem (exit 1) that --force
     recovers;
  4. afterwards: leader-epoch entries past the new log end dropped,
     producer snapshots above it removed and one written at it; recovery
     point, high watermark and log start offset lowered where they exceed
     it, a cleaner offset beyond it reset to the log start offset (as the
     log cleaner does); each checkpoint rewritten atomically. A log start
     offset beyond the log end makes the broker delete every record of
     the partition: offline that cannot be told from a damaged
     log-start-offset-checkpoint, so the partition is left unchanged and
     reported unless --trust-checkpoints (with --backup-dir) asks for the
     broker's deletion.

A batch Kafka's recovery keeps (it checks size and CRC only) but a consumer stops at (a magic byte of 3,
records that do not decode, an unknown codec, a negative offset delta) is reported as a problem.

--salvage (beyond Kafka) is for a damaged disk: where the recovery above would cut a segment at damage
in its middle and delete every later segment (or Kafka's loader would stop), it keeps every batch after
the damage that proves itself (CRC, readable records, offsets and leader epoch in order with its
neighbours), repairs the header fields outside the CRC that the evidence fixes, ends transactions the
damage leaves open with an ABORT marker, and drops only the damaged bytes, every segment checked. The
report says, per damaged range, the file, the bytes, the offsets lost and where the bytes are kept, and
how many records Kafka's recovery would have deleted; see "When the disk is damaged" in
kafkalog-recover(1).

Nothing is lost with --backup-dir: every file removed or overwritten is moved or copied there and
every cut tail is saved as <segment>.log.truncated-at-<position>. --dry-run prints the plan and
changes nothing. A kill at any instant leaves a directory that a second run (or the broker) completes.

The report leads with the verdict (the repairs made, or with --dry-run to make, and the exit status),
then the repairs grouped by partition, one line each (partitions whose repairs read the same share a
block), the partitions with nothing to repair counted in one line, and the totals, within 80 columns.
--details (-v) shows every partition, how its recovery is decided, and under each repair its reason and
the Kafka rule it follows.

--mark-clean writes .kafka_cleanshutdown afterwards (after fsyncing every partition file, writing a
producer snapshot at each log end and setting the recovery points to the log end, as a broker's clean
shutdown does), so the broker skips its own recovery and starts fast. A new marker holds
{"version":0,"brokerEpoch":-1} (the broker epoch of a crashed broker is unknown). Risk: the
broker then trusts this tool's recovery completely, including any segment below the recovery point
that was never checked; use it only when recover ran on every partition of the directory (it cannot
be combined with --partition). Without it, a marker present at the start is removed first (as the
broker does) and put back at the end.

The KRaft metadata log (__cluster_metadata-0) is recovered only with --include-metadata-log (fully,
as the Raft layer does, plus its snapshot files). -future and -stray directories use the log
directory's checkpoint entries of their partition, as the broker does; -delete directories get
steps 1 and 2 only.

\b
Examples:
  kafkalog recover --dry-run /var/lib/kafka/data
  kafkalog recover --backup-dir /root/kafka-backup /var/lib/kafka/data
  kafkalog recover --salvage --backup-dir /root/kafka-backup \\
    /var/lib/kafka/data
  kafkalog recover --partition orders-0 --partition orders-1 --force \\
    /var/lib/kafka/data
  kafkalog recover --format json /var/lib/kafka/data \\
    | jq 'select(.type=="action")'

\b
Exit status:
  0  nothing needed repair
  1  repairs were made (or planned, with --dry-run), or a problem was
     found that recover does not repair (a partition left unchanged
     among them)
  2  usage error
  3  could not run (lock held by a running broker, I/O error)
"""


def _usage(message: str) -> click.UsageError:
    return click.UsageError(message)


def _check_removals(root: Path, backup_dir, dry_run: bool, truncate_at_damage: bool, salvage: bool,
                    trust_checkpoints: bool) -> None:
    """The options that remove records need a backup directory (or --dry-run), one that may hold it."""
    if truncate_at_damage and backup_dir is None and not dry_run:
        raise _usage("--truncate-at-damage removes records from the log: give --backup-dir DIR to keep them "
                     "(or --dry-run to see the plan)")
    if salvage and truncate_at_damage:
        raise _usage("--salvage keeps what --truncate-at-damage would cut: give one of them")
    if salvage and backup_dir is None and not dry_run:
        raise _usage("--salvage removes damaged bytes from the log: give --backup-dir DIR to keep them (or --dry-run "
                     "to see the plan)")
    if trust_checkpoints and backup_dir is None and not dry_run:
        raise _usage("--trust-checkpoints lets recover delete every record of a partition whose log start offset "
                     "lies beyond its log end: give --backup-dir DIR to keep them (or --dry-run to see the plan)")
    if backup_dir is not None:
        from .. import fileops
        why = fileops.check_backup_dir(backup_dir, root)    # device and inode: aliases and bind mounts too
        if why:
            raise _usage(f"--backup-dir: {why}")


@click.command("recover", help=HELP, short_help="Repair a log directory after an unclean shutdown (crash-safe).")
@click.argument("log_dir", metavar="LOG_DIR",
                type=Directory())
@click.option("--partition", "partitions", multiple=True, metavar="TOPIC-N",
              help="Only this partition (repeatable). The log-directory checkpoints are still updated for it.")
@click.option("--dry-run", is_flag=True, help="Print the full plan and change nothing (exit 1 when it is not empty).")
@click.option("--backup-dir", type=click.Path(file_okay=False, dir_okay=True), default=None, metavar="DIR",
              help="Move every removed file and copy every overwritten file and cut tail here (outside LOG_DIR; "
                   "created if needed).")
@click.option("--force", is_flag=True,
              help="Recover from the recovery point even when .kafka_cleanshutdown says the shutdown was clean.")
@click.option("--all-segments", is_flag=True,
              help="Check and repair every segment, also below the recovery point (beyond Kafka, which trusts "
                   "flushed data): for corruption in old segments, e.g. a disk that went bad. Implies --force.")
@click.option("--truncate-at-damage", is_flag=True,
              help="Where Kafka's loader would stop (offsets going backwards in a segment it recovers at every "
                   "start) or leave a gap (a cut with later segments behind it), cut the log there and remove "
                   "every later segment instead of leaving the partition alone. Needs --backup-dir (or --dry-run).")
@click.option("--salvage", is_flag=True,
              help="Where damage would make Kafka's recovery cut the log (deleting every later segment) or stop, keep "
                   "every batch after it that proves itself instead: only the damaged bytes go (into --backup-dir, "
                   "which it needs, or see --dry-run), repairable header fields are repaired, a transaction the "
                   "damage leaves open is ended with an ABORT marker; every segment is checked. Beyond Kafka (see "
                   "\"When the disk is damaged\" in kafkalog-recover(1)).")
@click.option("--trust-checkpoints", is_flag=True,
              help="Where log-start-offset-checkpoint puts the log start beyond the log end, delete every record "
                   "of the partition as the broker would, instead of leaving it unchanged. Needs --backup-dir "
                   "(or --dry-run).")
@click.option("--mark-clean", is_flag=True,
              help="After a successful run write .kafka_cleanshutdown so the broker skips its own recovery "
                   "(see the risk above).")
@click.option("--include-metadata-log", is_flag=True,
              help="Also recover the KRaft metadata log __cluster_metadata-0 (every segment, snapshot files).")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=4096, show_default=True,
              metavar="BYTES", help="The topic's index.interval.bytes, used to rebuild .index/.timeindex files.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: the repairs grouped by partition; json: one JSON object per line "
                   "(see kafkalog-recover(1)).")
@click.option("--details", "-v", is_flag=True,
              help="Text: every partition, how it is recovered, and under each repair why and which Kafka rule it "
                   "follows.")
@jobs_option
@decode_limit_option
def command(log_dir, partitions, dry_run, backup_dir, force, all_segments, truncate_at_damage, salvage,
            trust_checkpoints, mark_clean, include_metadata_log, index_interval_bytes, fmt, details, jobs) -> int:
    import time
    started = time.monotonic()
    from ..layout import METADATA_PARTITION, parse_partition_spec
    from ._targets import writer_targets

    root = Path(log_dir)
    (found,) = writer_targets([root], "recover").logdirs
    wanted = []
    present = {str(p.name) for p in found.partitions}         # topic-N, of -delete/-future directories too
    for spec in partitions:
        try:
            topic, part = parse_partition_spec(spec)
        except ValueError as e:
            raise _usage(str(e)) from None
        name = f"{topic}-{part}"
        if name not in present:
            raise _usage(f"no partition directory {name} in {log_dir}")
        if name == METADATA_PARTITION and not include_metadata_log:
            raise _usage(f"{METADATA_PARTITION} is the KRaft metadata log: add --include-metadata-log")
        wanted.append(name)
    if mark_clean and wanted:
        raise _usage("--mark-clean covers the whole log directory and cannot be combined with --partition")
    _check_removals(root, backup_dir, dry_run, truncate_at_damage, salvage, trust_checkpoints)
    from kafkalog_formats.errors import FormatError

    from .. import fileops
    from ..errors import CannotRun
    from ..render.recover_report import PartitionProgress, render_json, render_text
    from ..output import check_reader, stdout, work_done
    from ..repair.recover_exec import ExecutionStopped, RecoverOptions, recover

    def report(outcome) -> None:
        if fmt == "json":
            render_json(outcome, stdout(), backup_dir)
        else:
            render_text(outcome, stdout(), backup_dir, details, time.monotonic() - started)
        stdout().flush()

    options = RecoverOptions(str(root), tuple(wanted), dry_run, backup_dir, mark_clean, force or all_segments,
                             include_metadata_log, index_interval_bytes, all_segments, truncate_at_damage,
                             trust_checkpoints, jobs, salvage)
    try:
        if not dry_run:
            check_reader()                  # a report nobody reads never comes with changes
        with PartitionProgress(sys.stderr) as progress:
            outcome = recover(options, progress=progress)
    except fileops.LockHeld:
        raise CannotRun(f"cannot lock {root / '.lock'}: another process holds it (a running Kafka broker?). "
                        "Stop the broker and run recover again; nothing was changed.") from None
    except FormatError as e:
        raise CannotRun(str(e)) from None
    except ExecutionStopped as e:
        report(e.outcome)
        raise CannotRun(f"stopped after {e.outcome.completed} of {len(e.outcome.plan.actions())} actions: "
                        f"{e.outcome.error}. The directory is consistent; run recover again once the cause is "
                        "fixed.") from e
    status = Status.PROBLEMS if (outcome.plan.has_changes or outcome.plan.has_problems) else Status.OK
    if not dry_run:
        work_done(status)                   # a Ctrl-C from here on stops only the report
    report(outcome)
    return status
