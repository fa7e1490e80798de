"""``kafkalog scan``: the checks of ``verify``, distributed over segments with Spark, as a report table."""
from __future__ import annotations

import sys

import click

from ..status import Status
from ._decode import decode_limit_option
from .export import check_output, parse_spark_conf, run_spark, spark_options

HELP = """Run the checks of "kafkalog verify" over many log directories on Spark, one task per group of
segments, and report the findings as a table.

LOG_DIR may be a log directory, a partition directory, a single file, or a folder holding log
directories further down (several brokers' disks, backups, a shared filesystem). The findings are
exactly those of "kafkalog verify" on the same paths: segment checks run on the executors; the checks
that need a whole partition (offsets continuing across segments, checkpoints, snapshots, leftovers)
run on the driver.

Standard output: the verify report (text; a table per partition on a terminal; --format json for
verify's JSON lines). --output PATH also writes the report table (Parquet or JSON lines) with one
row per finding (type "finding": severity, kind, file, position, offset, message, unit, unit_kind,
group) and one summary row per segment (type "segment": file, status, bytes, batches, records,
first_offset, last_offset, first_timestamp, max_timestamp (milliseconds), codecs, active, seconds).

When the paths hold no segment, nothing is distributed: the checks run here and Spark is not started.

\b
Examples:
  kafkalog scan /backups/broker-*/kafka-logs
  kafkalog scan /data --output /tmp/scan --fail-on warning
  kafkalog scan /data --format json | jq 'select(.type=="finding")'
  kafkalog scan /shared/kafka --master spark://10.0.0.5:7077 \\
    --output /shared/scan-report

\b
Exit status (as verify):
  0    nothing at or above --fail-on was found
  1    something was
  2    usage error (also: the --output path exists)
  3    could not run (Java or pyspark missing, Spark failed)
  130  interrupted (Ctrl-C stops the job and Spark)
"""


@click.command("scan", help=HELP, short_help="Verify many log directories on Spark; findings as a table.")
@click.argument("paths", nargs=-1, required=True, metavar="LOG_DIR...",
                type=click.Path(exists=True, readable=False, dir_okay=True, file_okay=True))
@click.option("--output", "-o", default=None, metavar="PATH",
              help="Also write the report table here (a directory that must not exist; never in a Kafka "
                   "directory nor inside a LOG_DIR).")
@click.option("--output-format", type=click.Choice(["parquet", "json"]), default="parquet", show_default=True,
              help="Format of the --output table.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Standard output: text (a table per partition on a terminal) or verify's JSON lines.")
@spark_options
@click.option("--shallow", is_flag=True, help="Check batches only (framing, CRC); do not decode records.")
@click.option("--fail-on", type=click.Choice(["error", "warning"]), default="error", show_default=True,
              help="The lowest severity that makes the exit status 1.")
@click.option("--max-message-bytes", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="The topics' max.message.bytes: larger batches are warnings. Without it, batches above "
                   "Kafka's default (1048588) are only noted (info).")
@click.option("--show-info", is_flag=True, help="Also list informational findings (text output).")
@click.option("--salvage", is_flag=True,
              help="Also report, for each damaged segment, every stretch recover --salvage would skip (findings "
                   "of kind salvage_skipped, warnings: the bytes, what they held, the offsets lost, where reading "
                   "resumes).")
@decode_limit_option
def command(paths, output, output_format, fmt, master, spark_conf, allow_pure_executors, shallow, fail_on, max_message_bytes,
            show_info, salvage) -> int:
    from ..engine.verify import SEVERITY_RANK, VerifyOptions
    from ..spark import jobs
    conf = parse_spark_conf(spark_conf)
    if output is not None:
        check_output(output, paths)
    options = VerifyOptions(deep=not shallow, max_message_bytes=max_message_bytes, salvage=salvage)
    lister = jobs.list_segments(list(paths), options)

    def report(rep) -> int:
        from ..output import stdout
        from ..render import verify_report as rr
        out = stdout()
        if fmt == "json":
            rr.write_json(out, rep)
        elif out.isatty():
            from .. import ui
            rr.write_rich(ui.console(out), rep, show_info, fail_on=fail_on, given=paths)
        else:
            rr.write_text(out, rep, show_info, fail_on=fail_on, given=paths)
        threshold = SEVERITY_RANK[fail_on]
        failing = any(SEVERITY_RANK[f.severity] >= threshold for f in rep.findings())
        return Status.PROBLEMS if failing else Status.OK

    if not lister.jobs:
        # no segment to spread over executors: verify's partition and directory checks, here, without Spark
        from ..engine.verify import Verifier
        rep = Verifier(options).run(list(paths))
        if output is not None:
            from .. import ui
            if ui.show_info():
                sys.stderr.write("kafkalog: no segment found: Spark was not started and no report table written\n")
        return report(rep)

    def body(spark, progress, _started) -> int:
        rep = jobs.scan(spark, list(paths), options, progress, lister=lister)
        if output is not None:
            jobs.write_report(spark, rep, output, output_format)    # OutputExists: a usage error (exit 2)
        if progress is not None:
            progress.close()
        return report(rep)

    n = len(lister.jobs)
    return run_spark(body, master, conf, f"verify {n} segment{'s' * (n != 1)}", allow_pure=allow_pure_executors)
