"""``kafkalog export``: the records of many log directories to Parquet or JSON lines, on Spark."""
from __future__ import annotations

import json
import os
import sys
import time

import click

from ..status import Status
from ._decode import current_decode_limit, decode_limit_option
from ._times import Time

HELP = """Export the records of Kafka log directories to Parquet (default) or JSON lines, on Spark.

LOG_DIR may be a log directory, a partition directory, a .log segment, or a folder holding log
directories further down (several brokers' disks, a backup). Segments are cut into tasks of about
equal size at offset-index entries (--split-bytes); each task reads its segments with the compiled
record path and writes its files itself. The rows are the records "kafkalog dump-log
--deep-iteration --print-data-log" prints for the same .log files (control records included unless
--isolation read_committed), except what a damaged batch holds (below).

Columns (--schema spark-kafka, the default): those of Spark's Kafka source, with its names and
types: key, value, topic, partition, offset, timestamp (UTC; null for "no timestamp"),
timestampType (0 CreateTime, 1 LogAppendTime, -1 none), headers (array of key/value); then
producer_id, producer_epoch, sequence, partition_leader_epoch, is_transactional, is_control,
codec, segment (the .log file), batch_position, log_dir, cluster_id and node_id (the log
directory's meta.properties); with a decoder also key_decoded and value_decoded (the text
dump-log prints; JSON for internal topics). topic and partition are the Hive-style directories
(--partition-by, default topic=T/partition=P/), not columns inside the files, so that every
reader takes them from one place: spark.read.parquet(OUTPUT) and pandas.read_parquet(OUTPUT)
read the directory as one table, and so do pyarrow.dataset (partitioning="hive"), polars and
DuckDB (hive partitioning, on OUTPUT/topic=*/**/*.parquet); readers put the directory columns
last and infer their types (a topic named only with digits reads as a number unless the reader
is given the schema). --schema kafkalog gives the layout of earlier exports (topic first,
timestamp_type as text). Files are at most --target-file-size each. JSON lines hold binary
columns as base64 and timestamps as ISO-8601, as Spark's JSON writer does, and each line its
topic and partition.

Damaged data is never exported silently. Every problem "kafkalog verify" would report for the
segments read (a batch whose CRC fails, a broken batch size, a torn tail, records that do not
decode, index problems) is a row of OUTPUT/_errors (file, position, offset, kind, severity,
message, records and bytes not exported), and the exit status is 1. --on-error says what happens:

\b
  skip        (default) export everything else: the rows of a
              batch whose CRC fails are left out, the records of a
              batch decoded before an error are kept, and after a
              broken batch size the read resumes at the next intact
              offset-index entry (Kafka's reader and dump-log stop
              there)
  quarantine  as skip, and the records that can still be decoded
              from batches whose CRC fails go to OUTPUT/_quarantine
              (same columns, plus "problem")
  fail        stop at the first problem; nothing is written

The result does not depend on --split-bytes or on the number of tasks.

Fleets: --dedupe-replicas keeps one copy of each (cluster_id, topic, partition, offset): from a
batch whose CRC is valid, then the copy with the higher partition leader epoch (the log a
leader's followers truncate to), then the first log directory. --mode append adds only what is
new to an earlier export (segments that appeared or grew since; OUTPUT/_kafkalog_manifest.json
records what each segment contributed): a second run on the same input adds nothing.

Spark: --master local[*] (the default) runs inside this process and needs only Java and the spark
extra (pip install 'kafkalog[spark]'; pyspark 3.5 or 4.x). On a cluster (spark://, yarn, k8s://)
the executors use kafkalog where it is installed in their Python, else the copy this command ships
(spark.archives, compiled extension included; the executors must run this Python's minor
version). Every executor is checked: one that would run the pure-Python record path stops the
export with one line naming it and why, unless --allow-pure-executors. LOG_DIR and --output may be
object-storage URIs (s3://, s3a://, gs://, abfss://, hdfs://; credentials as pyarrow reads them,
e.g. AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL), read by ranged reads; otherwise
paths every executor sees. Nothing starts when the input holds no segment. Ctrl-C at any moment
stops the job and Spark (exit status 130).

\b
Examples:
  kafkalog export /var/lib/kafka/data --output /tmp/records
  kafkalog export /backups/broker-* --topic 'orders*' \\
    --from-time 2024-05-01 -o orders
  kafkalog export /backups --dedupe-replicas \\
    --partition-by topic,partition,date -o fleet
  kafkalog export /backups --mode append -o fleet   # only what is new
  kafkalog export kafka-logs --decoder auto --output-format json \\
    -o decoded
  kafkalog export kafka-logs --dry-run   # the tasks, without Spark
  kafkalog export /data --master spark://10.0.0.5:7077 \\
    --spark-conf spark.executor.memory=4g -o /shared/out
  kafkalog export s3a://backups/kafka -o s3a://lake/kafka --master yarn

\b
Exit status:
  0    exported, no problem
  1    problems found (rows in _errors; with --on-error fail:
       nothing written), nothing to read, or a transaction index
       Kafka would refuse with --isolation read_committed
  2    usage error (also: the output exists and --mode is new)
  3    could not run (Java or pyspark missing, Spark failed, I/O
       error)
  130  interrupted
"""

PARTITION_BY = {"topic,partition": ("topic", "partition"), "topic,partition,date": ("topic", "partition", "date"),
                "none": ()}


class ByteSize(click.ParamType):
    """Bytes, or a number with K, M, G (KiB, MiB, GiB)."""
    name = "size"
    units = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
             "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        digits = text.rstrip("kmgib")
        unit = text[len(digits):]
        try:
            n = int(digits) * self.units[unit]
        except (ValueError, KeyError):
            self.fail(f"'{value}' is not a size (bytes, or a number with K, M or G)", param, ctx)
        if n < 1024:
            self.fail(f"'{value}' is below 1 KiB", param, ctx)
        return n


def spark_options(f):
    """--master and --spark-conf, shared with ``scan``."""
    f = click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
                     help="A Spark configuration value (repeatable), e.g. spark.executor.memory=4g.")(f)
    f = click.option("--allow-pure-executors", is_flag=True,
                     help="Run even where an executor's kafkalog would use the pure-Python record path "
                          "(7-8x slower) instead of failing.")(f)
    f = click.option("--master", default="local[*]", show_default=True, metavar="URL", callback=_check_master,
                     help="Spark master: local[*] (embedded, all cores), local[N], spark://HOST:PORT, yarn, "
                          "k8s://https://HOST:PORT.")(f)
    return f


def report_format_option(f):
    """--format text|json (the report on stdout), with the output-file spelling of older versions kept
    as a deprecated alias (``--format parquet``) and ``--json`` for ``--format json``."""
    f = click.option("--json", "as_json", is_flag=True, hidden=True,
                     help="Deprecated: --format json.")(f)
    return click.option("--format", "fmt", type=click.Choice(["text", "json", "parquet"]), default=None,
                        metavar="[text|json]",
                        help="The report on standard output: text (default) or JSON lines.")(f)


def _check_master(ctx, param, value: str) -> str:
    import re
    if re.fullmatch(r"local(\[(\*|[1-9]\d*)(,\d+)?\])?|local-cluster\[.+\]|(spark|k8s)://.+|yarn", value):
        return value
    raise click.BadParameter(f"'{value}' is not a Spark master URL (local[*], local[N], spark://HOST:PORT, yarn, "
                             "k8s://...)")


def warn(message: str) -> None:
    sys.stderr.write(f"kafkalog: warning: {message}\n")


def resolve_formats(fmt: str | None, as_json: bool, output_format: str | None, what: str) -> tuple[str, str]:
    """(report format, output file format) from --format, the deprecated spellings and --output-format."""
    if fmt == "json" and output_format is None and not as_json:
        warn(f"--format json chooses the report (JSON lines on standard output, as in every kafkalog "
             f"command); the {what} files are Parquet (--output-format json for JSON lines files; before, "
             "--format json chose JSON lines files)")
    if as_json:
        warn("--json is deprecated: use --format json")
        if fmt is None:
            fmt = "json"
    if fmt == "parquet":
        warn(f"--format parquet is deprecated for the {what} files: use --output-format parquet (--format now "
             "chooses the report, text or json, as in every kafkalog command)")
        fmt = None
        output_format = output_format or "parquet"
    return fmt or "text", output_format or "parquet"


def uri_credentials(uri: str) -> str | None:
    """Why an object-storage URI with credentials inside is refused (the message shows it without them)."""
    from ..spark.storage import credentials_problem
    return credentials_problem(uri)


class LogPath(click.ParamType):
    """A local path that must exist, or an object-storage URI (s3://, s3a://, gs://, abfss://, hdfs://)
    listed when the export is planned."""
    name = "path"

    def convert(self, value, param, ctx):
        import re
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", str(value)) and not str(value).startswith("file://"):
            refused = uri_credentials(str(value))
            if refused:
                self.fail(refused, param, ctx)
            return str(value)
        local = str(value)[len("file://"):] if str(value).startswith("file://") else str(value)
        return click.Path(exists=True, readable=False, dir_okay=True, file_okay=True).convert(local, param, ctx)


@click.command("export", help=HELP, short_help="Export records to Parquet or JSON lines with Spark.")
@click.argument("paths", nargs=-1, required=True, metavar="LOG_DIR...", type=LogPath())
@click.option("--output", "-o", metavar="PATH",
              help="Output directory (required). --mode new: must not exist; written beside and renamed into "
                   "place when complete. A local path or a mount every executor can write; never in a Kafka "
                   "directory nor inside a LOG_DIR.")
@click.option("--output-format", type=click.Choice(["parquet", "json"]), default=None,
              help="Format of the files: parquet (default) or json (JSON lines).")
@report_format_option
@click.option("--schema", "schema", type=click.Choice(["spark-kafka", "kafkalog"]), default="spark-kafka",
              show_default=True,
              help="Columns: spark-kafka (Spark's Kafka source columns and types first) or kafkalog (the layout "
                   "of kafkalog 0.1 exports).")
@click.option("--mode", type=click.Choice(["new", "append"]), default="new", show_default=True,
              help="new: OUTPUT must not exist. append: add only what is new since an earlier export to OUTPUT "
                   "(created when missing).")
@click.option("--on-error", type=click.Choice(["skip", "quarantine", "fail"]), default="skip", show_default=True,
              help="What a problem in the data does (see above); every problem is a row of OUTPUT/_errors.")
@click.option("--partition-by", type=click.Choice(list(PARTITION_BY)), default="topic,partition", show_default=True,
              help="Directories of the output: topic=T/partition=P[/date=YYYY-MM-DD (UTC)], or none (flat).")
@click.option("--target-file-size", type=ByteSize(), default="128M", show_default=True, metavar="SIZE",
              help="Roll to a new file when one reaches this size (bytes, or K/M/G).")
@click.option("--dedupe-replicas", is_flag=True,
              help="One row per (cluster_id, topic, partition, offset) across log directories holding copies "
                   "of a partition (see above).")
@spark_options
@click.option("--topic", "topics", multiple=True, metavar="GLOB",
              help="Only topics matching this glob (repeatable, or comma-separated).")
@click.option("--partition", "partitions", metavar="LIST", help="Only these partitions, e.g. 0,2,5-7.")
@click.option("--from-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Skip records before this offset.")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Skip records after this offset.")
@click.option("--from-time", type=Time(), default=None, metavar="TIME",
              help="Skip records older than this: milliseconds or ISO-8601 (2024-05-01T12:00:00Z; UTC "
                   "when no zone is given).")
@click.option("--to-time", type=Time(), default=None, metavar="TIME", help="Skip records newer than this.")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted",
              show_default=True,
              help="read_committed: what a consumer with isolation.level=read_committed receives (no aborted "
                   "transactions from the .txnindex files, no control records, nothing from the last stable "
                   "offset on).")
@click.option("--include-control/--exclude-control", default=None,
              help="Keep control records (transaction markers, KRaft records). Default: kept with "
                   "read_uncommitted, dropped with read_committed.")
@click.option("--key-decoder", type=click.Choice(["string", "hex", "base64", "json", "schema-registry",
                                                  "schema-registry-hex", "none"]), default=None,
              metavar="DECODER", help="Add key_decoded: the key as dump-log --key-decoder prints it.")
@click.option("--value-decoder", type=click.Choice(["string", "hex", "base64", "json", "schema-registry",
                                                    "schema-registry-hex", "none"]), default=None,
              metavar="DECODER", help="Add value_decoded: the value as dump-log --value-decoder prints it.")
@click.option("--decoder", "decoder_name", metavar="NAME", default=None,
              help="Record decoder, as dump-log --decoder: auto (Kafka's internal topics by topic), offsets, "
                   "transaction-log, cluster-metadata, remote-log-metadata, share-group-state, a payload "
                   "decoder, MODULE:FUNCTION or a kafkalog.decoders plug-in.")
@click.option("--split-bytes", type=click.IntRange(min=1), default=None, metavar="BYTES",
              help="Cut segments larger than this at offset-index entries [default: 67108864].")
@click.option("--salvage", is_flag=True,
              help="Read past damage as recover --salvage would keep, changing nothing: each stretch it would drop "
                   "is a problem of kind salvage_skipped (the bytes, what they held, the offsets lost), a batch it "
                   "would repair one of kind salvage_repairable (its rows are not returned).")
@click.option("--dry-run", is_flag=True, help="Print the Spark tasks (segment byte ranges) and exit; Spark "
                                              "is not started and nothing is written.")
@decode_limit_option
def command(paths, output, output_format, fmt, as_json, schema, mode, on_error, partition_by, target_file_size,
            dedupe_replicas, master, spark_conf, allow_pure_executors, topics, partitions, from_offset, to_offset, from_time, to_time,
            isolation, include_control, key_decoder, value_decoder, decoder_name, split_bytes, salvage, dry_run) -> int:
    from ..spark.options import ReadOptions
    from ..spark.plan import plan_ranges

    t_start = time.perf_counter()
    report, out_fmt = resolve_formats(fmt, as_json, output_format, "export")
    conf = parse_spark_conf(spark_conf)
    options = {"topic": ",".join(topics) or None, "partition": partitions, "fromOffset": from_offset,
               "toOffset": to_offset, "fromTimestamp": from_time, "toTimestamp": to_time, "isolation": isolation,
               "includeControl": None if include_control is None else str(include_control).lower(),
               "splitBytes": split_bytes, "onError": on_error, "keyDecoder": key_decoder,
               "valueDecoder": value_decoder, "decoder": decoder_name,
               "maxDecompressedBytes": current_decode_limit(), "salvage": "true" if salvage else None}
    options = {k: str(v) for k, v in options.items() if v is not None}
    opts = ReadOptions.from_options(options)           # an OptionError is a usage error (exit 2)
    if output is None and not dry_run:
        raise click.UsageError("give --output PATH (or --dry-run to see the plan)")
    if output is not None and "://" in output and uri_credentials(output):
        raise click.BadParameter(uri_credentials(output), param_hint="'--output'")
    if output is not None:
        refuse_output(output, paths)
    if mode == "append" and (opts.filters_records or opts.read_committed):
        raise click.UsageError("--mode append exports whole segments as they grow: it cannot be combined with "
                               "--from-offset/--to-offset/--from-time/--to-time or --isolation read_committed")
    if any("://" in p and not p.startswith("file://") for p in paths) or "://" in (output or ""):
        check_spark_modules()                      # object storage goes through pyarrow
    # a PlanError (input Kafka would refuse) ends the run with status 1, a StorageError is a usage error
    plan = plan_ranges([p if "://" in p else os.path.abspath(p) for p in paths], opts)
    for f in plan.findings:
        warn(f"{f.where()}: {f.message}")
    if not plan.ranges:
        sys.stderr.write(f"kafkalog: nothing to read: {nothing_to_read(paths, opts)}; Spark was not started\n")
        return Status.PROBLEMS
    if dry_run:
        _print_plan(plan, report)
        return Status.OK
    check_spark_modules()
    from ..spark import export as X
    columns = export_columns(opts, schema)
    parts = PARTITION_BY[partition_by]
    # JSON lines stay self-describing: each line holds its topic and partition (Parquet readers take them from
    # the directories only: pandas refuses a column that is in both)
    in_lines = out_fmt == "json" and schema == "spark-kafka"
    in_files = tuple(c for c in parts if c in ("topic", "partition")) if in_lines else ()
    prep = X.prepare(plan, output=output, mode=mode, fmt=out_fmt, columns=columns, partition_by=parts,
                     target_bytes=target_file_size, opts=opts, on_error=on_error, dedupe=dedupe_replicas,
                     in_files=in_files)                # an OutputError is a usage error (exit 2)
    if prep.completed_pending and show_info():
        sys.stderr.write(f"kafkalog: completed an interrupted append to {prep.output}\n")
    if not prep.ranges:
        result = X.ExportResult(str(prep.output), out_fmt, mode=mode, unchanged=prep.unchanged)
        result.warnings = len(prep.driver_problems)
        result.sample = [_problem_dict(p) for _r, p in prep.driver_problems]
        _print_result(result, report, time.perf_counter() - t_start, 0.0, nothing_new=True)
        return Status.OK
    return run_spark(lambda spark, progress, started: _export(spark, prep, progress, report, t_start, started),
                     master, conf, f"export {prep.segments} segment{'s' * (prep.segments != 1)} "
                     f"({prep.bytes:,} bytes)", cleanup=lambda: X.discard(prep), allow_pure=allow_pure_executors)


def check_spark_modules() -> None:
    """``SparkUnavailable`` (exit status 3, one line naming the extra to install) when pyspark or pyarrow is
    missing."""
    from ..spark.session import check_modules
    check_modules()


def export_columns(opts, schema: str = "spark-kafka") -> tuple:
    from ..spark.schema import columns_of
    return columns_of(schema, opts.decodes)


def nothing_to_read(paths, opts) -> str:
    """Why a plan is empty, in the user's terms."""
    filtered = opts.topics or opts.partitions is not None or opts.filters_records
    what = ", ".join(str(p) for p in paths)
    if filtered:
        return f"no segment of {what} matches the --topic/--partition/offset/time options"
    return f"{what} holds no Kafka segment (.log files in topic-partition directories)"


def show_info() -> bool:
    from .. import ui
    return ui.show_info()


def _export(spark, prep, progress, report, t_start, started) -> int:
    from ..spark import export as X
    from ..output import work_done
    res = X.execute(spark, prep, progress)
    status = Status.PROBLEMS if res.failed is not None or res.problems else Status.OK
    if res.failed is None:
        work_done(status)             # published: a Ctrl-C while Spark stops must neither undo it nor say 130
    if progress is not None:
        progress.close()
    _print_result(res, report, time.perf_counter() - t_start, started)
    return status


def _problem_dict(p) -> dict:
    return {"file": p.file, "position": p.position, "offset": p.offset, "kind": p.kind, "severity": p.severity,
            "message": p.message}


def _print_result(res, report: str, total: float, started: float, nothing_new: bool = False) -> None:
    """The summary on stdout; the problems (a few) on stderr."""
    from ..output import stdout
    startup = started
    out = stdout()
    if report == "json":
        obj = {"type": "export", "output": res.output, "format": res.format, "mode": res.mode,
               "rows": res.rows, "files": res.files, "segments": res.segments, "ranges": res.ranges,
               "tasks": res.tasks, "bytes": res.bytes, "problems": res.problems, "warnings": res.warnings,
               "records_not_exported": res.records_lost, "bytes_not_exported": res.bytes_lost,
               "quarantined": res.quarantined, "unchanged_segments": res.unchanged,
               "failed": res.failed, "seconds": round(total, 3), "startup_seconds": round(startup, 3),
               "job_seconds": round(res.job_seconds, 3), "executors": res.executors}
        out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        for p in res.sample:
            out.write(json.dumps({"type": "problem", **p}, separators=(",", ":")) + "\n")
    else:
        if res.failed is not None:
            p = res.failed
            out.write(f"export stopped at the first problem (--on-error fail); nothing was written to {res.output}\n")
            sys.stderr.write(f"kafkalog: {_where(p)}: {p['message']} ({p['kind']})\n")
            return
        if nothing_new:
            out.write(f"nothing new to export to {res.output} ({res.unchanged} segment"
                      f"{'s' * (res.unchanged != 1)} unchanged since the last export)\n")
        else:
            out.write(f"exported {res.rows:,} records from {res.segments} segment{'s' * (res.segments != 1)} "
                      f"({res.tasks} task{'s' * (res.tasks != 1)}, {res.bytes:,} bytes) to {res.output} "
                      f"({res.format}, {res.files} file{'s' * (res.files != 1)}{', appended' if res.mode == 'append' else ''}) "
                      f"in {total:.1f} s (Spark start-up {startup:.1f} s, export {res.job_seconds:.1f} s)\n")
        if res.problems or res.warnings:
            lost = []
            if res.records_lost:
                lost.append(f"{res.records_lost:,} records")
            if res.bytes_lost:
                lost.append(f"{res.bytes_lost:,} bytes")
            tail = f": {' and '.join(lost)} not exported" if lost else ""
            out.write(f"{res.problems} problem{'s' * (res.problems != 1)}, {res.warnings} warning"
                      f"{'s' * (res.warnings != 1)}{tail}; every one is a row of {res.output}/_errors"
                      f"{' (quarantined records in _quarantine)' if res.quarantined else ''}\n")
            for p in res.sample[:10]:
                sys.stderr.write(f"kafkalog: {p['severity']}: {_where(p)}: {p['message']} ({p['kind']})\n")
            if len(res.sample) > 10 or res.problems + res.warnings > len(res.sample[:10]):
                sys.stderr.write(f"kafkalog: ... {res.problems + res.warnings - min(len(res.sample), 10)} more in "
                                 f"{res.output}/_errors\n")


def _where(p: dict) -> str:
    parts = [str(p["file"])]
    if p.get("position") is not None:
        parts.append(f"position {p['position']}")
    if p.get("offset") is not None:
        parts.append(f"offset {p['offset']}")
    return ": ".join(parts)


def _print_plan(plan, report: str) -> None:
    from ..output import stdout
    out = stdout()
    as_json = report == "json"
    for r in plan.ranges:
        name = r.topic if r.partition is None else f"{r.topic}-{r.partition}"
        if as_json:
            out.write(json.dumps({"type": "range", "topic": r.topic, "partition": r.partition, "segment": r.segment,
                                  "start": r.start, "end": r.end, "bytes": r.size, "log_dir": r.log_dir,
                                  "cluster_id": r.cluster_id, "node_id": r.node_id},
                                 separators=(",", ":")) + "\n")
        else:
            out.write(f"{name}\t{r.segment}\t{r.start}..{r.end}\t{r.size} bytes\n")
    if as_json:
        out.write(json.dumps({"type": "plan", "segments": plan.segments, "ranges": len(plan.ranges),
                              "bytes": plan.bytes}, separators=(",", ":")) + "\n")
    else:
        out.write(f"{len(plan.ranges)} range{'s' * (len(plan.ranges) != 1)} over {plan.segments} "
                  f"segment{'s' * (plan.segments != 1)}, {plan.bytes:,} bytes\n")


def _local(path: str) -> str | None:
    """The local file system path of PATH or a file:// URI; None for object storage (s3://, gs:// ...)."""
    import re
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path) and not path.startswith("file://"):
        return None
    return path[len("file://"):] if path.startswith("file://") else path


def refuse_output(output: str, paths) -> None:
    """A local --output inside a directory the command reads, or in or under a Kafka directory: a usage error
    (exit 2) before anything starts (``output.refuse``)."""
    local = _local(output)
    if local is not None:
        from ..output import refuse
        refuse(local, [p for p in map(_local, paths) if p is not None])


def check_output(output: str, paths=()) -> None:
    """Refuse an existing output (never replaced), a local one whose directory does not exist, or one where
    nothing may be written (``refuse_output``)."""
    refuse_output(output, paths)
    local = _local(output)
    if local is None:
        return
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


def run_spark(body, master: str, conf: dict, what: str, cleanup=None, allow_pure: bool = False) -> int:
    """Check Java and pyspark, say that Spark starts, start (or reuse) a session, run ``body(spark,
    progress, startup seconds)``; Spark failures are ``CannotRun`` errors (one line on stderr, exit status
    3: ``SparkUnavailable``, ``ExecutorProblem``, a failed job). ``cleanup`` runs once Spark is stopped
    when the body did not finish (Ctrl-C, a failure), never after it published (``output.work_done``)."""
    from ..spark.session import Session, check_requirements
    check_requirements()
    from pyspark.sql import SparkSession

    from ..errors import CannotRun
    from ..spark.calls import SparkJobError
    if show_info():
        if SparkSession.getActiveSession() is not None:
            sys.stderr.write(f"kafkalog: using the active Spark session to {what}...\n")
        else:
            sys.stderr.write(f"kafkalog: starting Spark (master {master}) to {what}...\n")
        sys.stderr.flush()
    try:
        t0 = time.perf_counter()
        with Session(master, conf, allow_pure=allow_pure, notice=_notice) as spark, StageProgress() as progress:
            status = body(spark, progress, time.perf_counter() - t0)
        from .. import teardown
        teardown.allow()                      # Spark stopped, every output file closed: no interpreter teardown
        return status
    except BaseException as e:
        from ..output import done_status
        if cleanup is not None and done_status() is None:     # never what a completed run published
            cleanup()
        if isinstance(e, SparkJobError):
            raise CannotRun(f"Spark failed: {e}") from e
        raise


def _notice(line: str) -> None:
    if show_info():
        sys.stderr.write(f"kafkalog: {line}\n")
        sys.stderr.flush()


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
