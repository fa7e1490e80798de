"""``kafkalog export``: the records of many log directories to Parquet or JSON lines, on Spark."""
from __future__ import annotations

import json
import os
import sys

import click

from ..status import Status
from ._decode import current_decode_limit, decode_limit_option

HELP = """Export every record of Kafka log directories to Parquet (default) or JSON lines, on Spark.

LOG_DIR may be a log directory, a partition directory, a .log segment, or a folder holding log
directories further down (several brokers' disks, a backup). Each segment is read by its own Spark
task; segments larger than --split-bytes are cut at offset-index entries and read by several tasks.
The rows are exactly the records "kafkalog dump-log --deep-iteration --print-data-log" prints for
the same .log files (control records included unless --isolation read_committed).

\b
Columns: topic, partition, offset, timestamp (UTC; null for "no timestamp"), timestamp_type, key,
value, headers (array of key/value), producer_id, producer_epoch, sequence, partition_leader_epoch,
is_transactional, is_control, codec, segment (the .log file), batch_position, log_dir.
Parquet output is partitioned by topic and partition (topic=orders/partition=0/part-*.parquet); JSON
lines hold binary columns as base64 and timestamps as ISO-8601 strings.

\b
Spark: --master local[*] (the default) runs inside this process and needs only Java 17+ and the
spark extra (pip install 'kafkalog[spark]'). On a standalone cluster (--master spark://HOST:7077)
kafkalog ships its own code to the executors; the nodes need the same Python environment (numpy,
pyarrow, ...) at the same path, or --spark-conf spark.pyspark.python=/path/to/venv/bin/python, and
the output must be on storage every node can write (a shared mount, hdfs://, s3a://).

\b
Examples:
  kafkalog export /var/lib/kafka/data --output /tmp/records
  kafkalog export /backups/broker-* --topic 'orders*' --from-time 2024-05-01 --output out.parquet
  kafkalog export kafka-logs --isolation read_committed --format json --output committed
  kafkalog export kafka-logs --dry-run            # the Spark tasks it would run, without Spark
  kafkalog export /data --master spark://10.0.0.5:7077 --spark-conf spark.executor.memory=4g -o /shared/out

\b
Exit status: 0 exported; 1 the input cannot be read as asked (a corrupt transaction index with
--isolation read_committed); 2 usage error (also: the output already exists, it is never replaced);
3 could not run (Java or pyspark missing, Spark failed, I/O error).
"""


def spark_options(f):
    """--master and --spark-conf, shared with ``scan``."""
    f = click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
                     help="A Spark configuration value (repeatable), e.g. spark.executor.memory=4g.")(f)
    f = click.option("--master", default="local[*]", show_default=True, metavar="URL", callback=_check_master,
                     help="Spark master: local[*] (embedded, all cores), local[N], spark://HOST:PORT.")(f)
    return f


def _check_master(ctx, param, value: str) -> str:
    import re
    if re.fullmatch(r"local(\[(\*|[1-9]\d*)(,\d+)?\])?|local-cluster\[.+\]|(spark|k8s)://.+|yarn", value):
        return value
    raise click.BadParameter(f"'{value}' is not a Spark master URL (local[*], local[N], spark://HOST:PORT, yarn, "
                             "k8s://...)")


@click.command("export", help=HELP, short_help="Export records to Parquet or JSON lines with Spark.")
@click.argument("paths", nargs=-1, required=True, metavar="LOG_DIR...",
                type=click.Path(exists=True, dir_okay=True, file_okay=True))
@click.option("--output", "-o", metavar="PATH",
              help="Output directory (required; must not exist; a local path is written beside it and "
                   "renamed into place when complete).")
@click.option("--format", "fmt", type=click.Choice(["parquet", "json"]), default="parquet", show_default=True,
              help="parquet: partitioned by topic and partition; json: JSON lines.")
@spark_options
@click.option("--topic", "topics", multiple=True, metavar="GLOB",
              help="Only topics matching this glob (repeatable, or comma-separated).")
@click.option("--partition", "partitions", metavar="LIST", help="Only these partitions, e.g. 0,2,5-7.")
@click.option("--from-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Skip records before this offset.")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Skip records after this offset.")
@click.option("--from-time", default=None, metavar="TIME",
              help="Skip records older than this: milliseconds or ISO-8601 (2024-05-01T12:00:00Z; UTC "
                   "when no zone is given).")
@click.option("--to-time", default=None, metavar="TIME", help="Skip records newer than this.")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted",
              show_default=True,
              help="read_committed: what a consumer with isolation.level=read_committed receives (no aborted "
                   "transactions from the .txnindex files, no control records, nothing from the last stable "
                   "offset on).")
@click.option("--include-control/--exclude-control", default=None,
              help="Keep control records (transaction markers, KRaft records). Default: kept with "
                   "read_uncommitted, dropped with read_committed.")
@click.option("--split-bytes", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="Cut segments larger than this into several tasks at offset-index entries "
                   "[default: 134217728].")
@click.option("--dry-run", is_flag=True, help="Print the Spark tasks (segment byte ranges) and exit; Spark "
                                              "is not started and nothing is written.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary (or the --dry-run plan) as JSON lines.")
@decode_limit_option
def command(paths, output, fmt, master, spark_conf, topics, partitions, from_offset, to_offset, from_time,
            to_time, isolation, include_control, split_bytes, dry_run, as_json) -> int:
    from ..spark.options import OptionError, ReadOptions
    from ..spark.plan import PlanError, plan_ranges

    conf = parse_spark_conf(spark_conf)
    options = {"topic": ",".join(topics) or None, "partition": partitions, "fromOffset": from_offset,
               "toOffset": to_offset, "fromTimestamp": from_time, "toTimestamp": to_time, "isolation": isolation,
               "includeControl": None if include_control is None else str(include_control).lower(),
               "splitBytes": split_bytes, "maxDecompressedBytes": current_decode_limit()}
    options = {k: str(v) for k, v in options.items() if v is not None}
    try:
        opts = ReadOptions.from_options(options)
    except OptionError as e:
        raise click.UsageError(str(e)) from None
    if output is None and not dry_run:
        raise click.UsageError("give --output PATH (or --dry-run to see the plan)")
    if not dry_run:
        check_output(output)
    try:
        plan = plan_ranges([os.path.abspath(p) for p in paths], opts)
    except PlanError as e:
        sys.stderr.write(f"kafkalog: {e}\n")
        return Status.PROBLEMS
    for f in plan.findings:
        sys.stderr.write(f"kafkalog: warning: {f.where()}: {f.message}\n")
    if dry_run:
        _print_plan(plan, as_json)
        return Status.OK
    return run_spark(lambda spark, progress: _export(spark, plan, options, output, fmt, progress, as_json),
                     master, conf)


def _export(spark, plan, options, output, fmt, progress, as_json) -> int:
    from ..spark import jobs
    try:
        res = jobs.export(spark, plan, options, output, fmt, progress)
    except jobs.OutputExists as e:
        raise click.UsageError(str(e)) from None
    if progress is not None:
        progress.close()
    if as_json:
        sys.stdout.write(json.dumps({"type": "export", "output": res.output, "format": res.format, "rows": res.rows,
                                     "segments": res.segments, "ranges": res.ranges, "bytes": res.bytes,
                                     "seconds": round(res.seconds, 3)}, separators=(",", ":")) + "\n")
    else:
        sys.stdout.write(f"exported {res.rows:,} records from {res.segments} segment{'s' * (res.segments != 1)} "
                         f"({res.ranges} task{'s' * (res.ranges != 1)}, {res.bytes:,} bytes) to {res.output} "
                         f"({res.format}) in {res.seconds:.1f} s\n")
    return Status.OK


def _print_plan(plan, as_json: bool) -> None:
    out = sys.stdout
    for r in plan.ranges:
        name = r.topic if r.partition is None else f"{r.topic}-{r.partition}"
        if as_json:
            out.write(json.dumps({"type": "range", "topic": r.topic, "partition": r.partition, "segment": r.segment,
                                  "start": r.start, "end": r.end, "bytes": r.size, "log_dir": r.log_dir},
                                 separators=(",", ":")) + "\n")
        else:
            out.write(f"{name}\t{r.segment}\t{r.start}..{r.end}\t{r.size} bytes\n")
    if as_json:
        out.write(json.dumps({"type": "plan", "segments": plan.segments, "ranges": len(plan.ranges),
                              "bytes": plan.bytes}, separators=(",", ":")) + "\n")
    else:
        out.write(f"{len(plan.ranges)} task{'s' * (len(plan.ranges) != 1)} over {plan.segments} "
                  f"segment{'s' * (plan.segments != 1)}, {plan.bytes:,} bytes\n")


def check_output(output: str) -> None:
    """Refuse an existing output (never replaced) or a local one whose directory does not exist."""
    import re
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", output) and not output.startswith("file://"):
        return
    local = output[len("file://"):] if output.startswith("file://") else output
    if os.path.lexists(local):
        raise click.UsageError(f"{output} already exists; kafkalog never replaces an output")
    parent = os.path.dirname(os.path.abspath(local))
    if not os.path.isdir(parent):
        raise click.UsageError(f"{output}: the directory {parent} does not exist")


def parse_spark_conf(values) -> dict:
    conf = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"--spark-conf '{item}' is not KEY=VALUE")
        conf[key.strip()] = value
    return conf


def run_spark(body, master: str, conf: dict) -> int:
    """Check Java and pyspark, start (or reuse) a session, run ``body(spark, progress)``; Spark failures
    become one line on stderr and exit status 3."""
    from ..spark.session import Session, SparkUnavailable, check_requirements
    try:
        check_requirements()
    except SparkUnavailable as e:
        sys.stderr.write(f"kafkalog: {e}\n")
        return Status.CANNOT_RUN
    from ..spark.jobs import SparkJobError
    try:
        with Session(master, conf) as spark, StageProgress() as progress:
            return body(spark, progress)
    except SparkJobError as e:
        sys.stderr.write(f"kafkalog: Spark failed: {e}\n")
        return Status.CANNOT_RUN


class StageProgress:
    """A rich progress bar per Spark stage on stderr when it is a terminal; None (silent) otherwise."""

    def __init__(self) -> None:
        self.bar = None
        self.tasks: dict[int, int] = {}

    def __enter__(self):
        from .. import ui
        if not ui.show_progress(sys.stderr):
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self.bar.start()
        return self

    def __call__(self, stage: int, description: str, done: int, total: int) -> None:
        if self.bar is None:
            return
        if stage not in self.tasks:
            self.tasks[stage] = self.bar.add_task(description, total=total)
        self.bar.update(self.tasks[stage], completed=done, total=total, description=description)

    def close(self) -> None:
        """Stop drawing (before the command prints its result)."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __exit__(self, *exc) -> None:
        self.close()
