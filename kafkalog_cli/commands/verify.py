"""``kafkalog verify``: integrity checks of log directories, partitions or single files, for CI."""
from __future__ import annotations

import sys

import click

from ..status import Status
from ._decode import decode_limit_option
from ._jobs import jobs_option
from ._targets import filter_options

HELP = """Check Kafka log files for corruption and inconsistency, offline, in one forward pass per segment.

PATH may be a log directory, a partition directory, a single file (.log, .index, .timeindex, .txnindex,
.snapshot, a checkpoint or metadata file), several of them, or a folder holding log directories
further down (one broker's disk with several log.dirs, several brokers' disks, a backup). --topic and
--partition verify only those partitions (and the files of their log directories).

\b
Checks:
  .log        framing, zero-filled tails, trailing bytes, CRC-32C (CRC-32
              for legacy), magic, offsets increasing within and across
              segments, records (deep; --shallow skips them),
              decompression, batch sizes
  indexes     what Kafka's lookups need: every offset entry at a batch
              start with no earlier batch holding its offset, every time
              entry at or before the batch reaching its timestamp, the
              last time entry of a rolled segment equal to its max
              timestamp; entries written by any Kafka version (first
              offsets, multi-batch appends, offsets inside batches) pass
  .txnindex   entries increasing, each at an ABORT marker of its producer
  others      producer snapshots, leader-epoch-checkpoint, the four
              offset checkpoints against the log, meta.properties,
              partition.metadata, orphan indexes, leftover files
  file names  as Kafka's log loader reads them: the text before the
              first '.' of every .log, index, .snapshot, .cleaned and
              .swap file is an offset; where it is not a number
              (notes.log) the broker does not start; a .log not named
              with 20 digits (12.log) makes it open an empty segment at
              that offset instead of reading the file (both errors)
  unreadable  a directory or file that cannot be read is an error
              finding; the rest is verified

\b
Severity follows what the broker does with the files on its next start:
  error       a broker would misbehave: refuse to start, skip or serve
              corrupt records, or run a rule of the topic wrongly (time
              retention deleting a segment too early where cleanup.policy
              has delete; the topic's configuration is read from the log
              directory's KRaft metadata, else Kafka's defaults); no
              healthy broker of any version writes it
  warning     Kafka repairs it when it loads the log (torn tail after a
              crash, leftovers, stale checkpoints); without a
              clean-shutdown marker Kafka recovers every segment from the
              recovery point on, so their index problems are only noted
  info        normal for healthy brokers (shown with --show-info)

The text report leads with the verdict (passed or FAILED, with the counts), then each partition with
findings: one line (errors, warnings, segments, offsets) and its findings under it, each naming the
file in full with byte position and offset; then how many partitions are clean, and the totals.
It fits 80 columns, coloured on a terminal and plain otherwise. --details (-v) adds every
partition with a table of its segments and lists every finding.

\b
Examples:
  kafkalog verify /var/lib/kafka/data
  kafkalog verify --details /var/lib/kafka/data/orders-0
  kafkalog verify --topic orders --topic payments /var/lib/kafka/data
  kafkalog verify --format junit --output verify.xml /backups/broker-1
  kafkalog verify --fail-on warning --format json orders-0 \\
    | jq 'select(.type=="finding")'

\b
Exit status:
  0  nothing at or above --fail-on was found
  1  something was (an unreadable directory or file too), or nothing was
     verified (no Kafka file under the paths)
  2  usage error (also a --topic or --partition found nowhere; an --output
     in a Kafka directory or inside a PATH: nothing is written)
  3  could not run (the report cannot be written whole: a full disk, an
     I/O error; the previous --output file is left as it was)
"""


@click.command("verify", help=HELP, short_help="Check segments, indexes and checkpoints for corruption.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                type=click.Path(exists=True, readable=False, dir_okay=True, file_okay=True))
@click.option("--shallow", is_flag=True, help="Check batches only (framing, CRC); do not decode records.")
@click.option("--fail-on", type=click.Choice(["error", "warning"]), default="error", show_default=True,
              help="The lowest severity that makes the exit status 1.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "junit"]), default="text", show_default=True,
              help="text: the verdict, the findings by partition and the totals, within 80 columns "
                   "(coloured on a terminal); json: one object per finding and segment plus a summary; "
                   "junit: JUnit XML for CI systems.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the report to this file instead of standard output: written beside it and renamed "
                   "into place once complete. Never a file in a Kafka log or partition directory, nor inside a "
                   "PATH (compared by device and inode: links are seen through).")
@click.option("--max-message-bytes", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="The topics' max.message.bytes: larger batches are warnings. Without it, batches above "
                   "Kafka's default (1048588) are only noted (info).")
@click.option("--show-info", is_flag=True, help="Also list informational findings (text output).")
@click.option("--details", "-v", is_flag=True,
              help="Text output: also every partition with a table of its segments, and every finding "
                   "(by default more than three of one kind in one file are summarised).")
@filter_options
@jobs_option
@decode_limit_option
def command(paths, shallow, fail_on, fmt, output, max_message_bytes, show_info, details, topics, partitions,
            jobs) -> int:
    from contextlib import nullcontext

    from .. import output as output_
    from ..engine.targets import resolve
    from ..engine.verify import SEVERITY_RANK, Verifier, VerifyOptions
    from ..render import verify_report as rr
    from ._targets import selected

    if output:
        output_.refuse(output, paths)                  # before anything is read: exit 2, nothing written
    targets = selected(resolve(paths), topics, partitions)
    with _progress(targets) as progress:
        report = Verifier(VerifyOptions(deep=not shallow, max_message_bytes=max_message_bytes,
                                        jobs=jobs), progress).run(list(paths), targets)
    with output_.report_file(output) if output else nullcontext(output_.stdout()) as out:
        if fmt == "json":
            rr.write_json(out, report)
        elif fmt == "junit":
            out.write(rr.junit_xml(report, fail_on).decode("utf-8"))
        elif out.isatty():
            from .. import ui
            rr.write_rich(ui.console(out), report, show_info, details=details, fail_on=fail_on, given=paths)
        else:
            rr.write_text(out, report, show_info, details=details, fail_on=fail_on, given=paths)
    threshold = SEVERITY_RANK[fail_on]
    failing = any(SEVERITY_RANK[f.severity] >= threshold for f in report.findings())
    return Status.PROBLEMS if failing else Status.OK


class _progress:
    """A rich progress bar on stderr (bytes verified) when stderr is a terminal; silent otherwise."""

    def __init__(self, targets) -> None:
        self.targets = targets
        self.bar = None

    def __enter__(self):
        from .. import ui
        if not ui.show_progress(sys.stderr):
            return None
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
        total = self.targets.segment_bytes()
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                            TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        self.bar.start()
        task = self.bar.add_task("verifying", total=total or None)
        return lambda n, d: self.bar.update(task, advance=n, description=d)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()
