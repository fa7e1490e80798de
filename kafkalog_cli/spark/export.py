"""``kafkalog export`` on Spark: tasks of segment ranges, each read into Arrow and written with pyarrow.

The driver plans the byte ranges (``plan``), groups them into tasks (``group_tasks``: consecutive ranges
in plan order, tasks of about equal input and a multiple of the cores in number; a small partition stays
in one task) and runs one
Spark task per group (``run_task``, on the executors). A task reads its ranges with the compiled record
path (``rows.read_range``: Arrow batches straight from the scan's buffers) and writes them with pyarrow
(``writer``): the records never travel through the JVM, which only schedules tasks and returns a small
summary per task. On this kind of machine that is several times faster than handing Arrow batches to
Spark's own Parquet writer, and keeps the JVM small (README, "export": benchmark).

Every problem is a row of ``_errors`` (``problems``), written by the task that met it; with
``quarantine`` the rows of damaged batches go to ``_quarantine``. With ``fail`` the first problem stops
the task, marks the staging directory so the other tasks stop at their next range, and nothing is
published.

Output: a new directory staged beside the target and renamed into place (``mode=new``), or new files
added to an existing export (``mode=append``) through a pending manifest that a crashed run's successor
completes (``manifest``). ``_kafkalog_manifest.json`` records what each segment contributed.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.findings import Finding
from ..errors import UsageProblem
from . import problems as P
from .ranges import SegmentRange

MiB = 1024 * 1024
DEFAULT_TARGET_FILE_BYTES = 128 * MiB
MIN_TASK_BYTES = 8 * MiB
MAX_TASK_BYTES = 256 * MiB
FAILED_MARKER = "_FAILED"


@dataclass(frozen=True)
class ExportSpec:
    """What every task needs (pickled into the Spark job once)."""
    opts: object                    # ReadOptions
    columns: tuple
    fmt: str                        # parquet | json
    partition_by: tuple             # of topic, partition, date
    target_bytes: int
    staging: str                    # absolute path the tasks write under (shared storage on a cluster)
    run: str                        # this run's token, in every file name
    on_error: str                   # fail | skip | quarantine
    in_files: tuple = ()            # directory columns also written inside the files (appends to earlier exports)


@dataclass(frozen=True)
class Task:
    id: int
    ranges: tuple = ()              # SegmentRange, in order
    replicas: tuple = ()            # dedupe: (window, (SegmentRange, ...)) for one partition's copies

    @property
    def bytes(self) -> int:
        return sum(r.size for r in self.ranges) + sum(r.size for _w, rs in self.replicas for r in rs)


def task_bytes_for(total: int, parallelism: int) -> int:
    """Input bytes per task: four tasks per core when there is enough data, never tiny tasks
    (each costs tens of milliseconds of scheduling) nor huge ones (one slow straggler)."""
    return max(MIN_TASK_BYTES, min(MAX_TASK_BYTES, total // max(1, parallelism * 4)))


def task_count(total: int, task_bytes: int, parallelism: int) -> int:
    """About ``total / task_bytes`` tasks, rounded to a multiple of the cores once there are more tasks than
    cores: 9 tasks on 2 cores leave one core idle for the last wave (about 7 % of the job on the benchmark
    fleet, README "export")."""
    n = max(1, round(total / max(1, task_bytes)))
    return n if n <= parallelism else parallelism * max(1, round(n / parallelism))


def group_tasks(ranges: list, task_bytes: int, parallelism: int = 1) -> list[Task]:
    """The ranges, in plan order, cut into ``task_count`` tasks of about equal input: each task takes the
    ranges whose middle falls in its share of the cumulative bytes. A partition replica (same log
    directory, topic, partition) smaller than a share goes whole to the task where its middle falls, so
    it is written as one file; a larger one is cut between its ranges."""
    total = sum(r.size for r in ranges)
    n = task_count(total, task_bytes, parallelism)
    share = total / n if total else 1.0
    groups: list[list] = [[] for _ in range(n)]
    done = 0
    i = 0
    while i < len(ranges):
        key = _replica_key(ranges[i])
        j = i
        while j < len(ranges) and _replica_key(ranges[j]) == key:
            j += 1
        part = ranges[i:j]
        size = sum(r.size for r in part)
        units = [part] if size < share else [[r] for r in part]
        for unit in units:
            unit_size = sum(r.size for r in unit)
            groups[min(n - 1, int((done + unit_size / 2) / share))].extend(unit)
            done += unit_size
        i = j
    tasks = [g for g in groups if g]
    return [Task(k, tuple(g)) for k, g in enumerate(tasks)]


def make_tasks(ranges: list, task_bytes: int, dedupe: bool = False, parallelism: int = 1) -> list[Task]:
    """The export's tasks; with ``dedupe``, partitions held in several log directories are read by windows
    over all their copies (``dedupe``)."""
    if not dedupe:
        return group_tasks(ranges, task_bytes, parallelism)
    from .dedupe import split, windows
    single, multi = split(ranges)
    tasks = group_tasks(single, task_bytes, parallelism)
    for _key, rs in multi:
        for w, members in windows(rs, task_bytes):
            tasks.append(Task(len(tasks), replicas=((w, members),)))
    return tasks


def _replica_key(r: SegmentRange) -> tuple:
    return (r.log_dir, r.topic, r.partition)


# --- on the executors ------------------------------------------------------------------------------------

def _abandon(*writers) -> None:
    """The open writers of a task that stops: no temporary file left, none failing again at exit."""
    for w in writers:
        if w is not None:
            w.abandon()


def run_task(spec: ExportSpec, task: Task) -> dict:
    """Read the task's ranges and write them; a summary for the driver (never raises for bad data)."""
    import tempfile

    from . import storage
    if storage.is_remote(spec.staging):       # object storage: files written here, uploaded when complete
        local = tempfile.mkdtemp(prefix="kafkalog-task-")
        try:
            out = run_task(dataclasses.replace(spec, staging=local), task)
            for key in ("files", "errors", "quarantine"):
                sub = {"files": "", "errors": "_errors/", "quarantine": "_quarantine/"}[key]
                storage.upload(local, [sub + f for f, _n, _b in out[key]], spec.staging)
            return out
        finally:
            import shutil
            shutil.rmtree(local, ignore_errors=True)
    from .writer import TableWriter
    t0 = time.perf_counter()
    out = {"task": task.id, "rows": 0, "files": [], "errors": [], "quarantine": [], "problems": 0,
           "warnings": 0, "records_lost": 0, "bytes_lost": 0, "quarantined": 0, "ranges": [], "failed": None,
           "cancelled": False, "sample": [], "seconds": 0.0, "executor": _executor()}
    data = TableWriter(spec.staging, spec.fmt, spec.partition_by, spec.target_bytes, f"part-{spec.run}-{task.id:05d}",
                       spec.in_files)
    quarantine = None
    problems_by_range: list = []
    marker = os.path.join(spec.staging, FAILED_MARKER)
    sink = P.ReadSink(spec.on_error)
    try:
        for rng in task.ranges:
            if spec.on_error == "fail" and os.path.exists(marker):
                out["cancelled"] = True
                break
            before = len(sink.problems)
            stopped = _read_one(spec, rng, sink, data, out)
            quarantine = _quarantine(spec, task, sink, quarantine, out)
            problems_by_range.append((rng, sink.problems[before:]))
            out["ranges"].append((rng.segment, rng.start, rng.end, stopped))
        for window, rs in task.replicas:
            if spec.on_error == "fail" and os.path.exists(marker):
                out["cancelled"] = True
                break
            from .dedupe import run_window
            before = len(sink.problems)
            out["rows"] += run_window(spec, window, rs, sink, data.write)
            quarantine = _quarantine(spec, task, sink, quarantine, out)
            for p in sink.problems[before:]:
                problems_by_range.append((_range_of(rs, p), [p]))
            out["ranges"].extend((r.segment, r.start, r.end, sink.stopped_at.get((r.segment, r.start))) for r in rs)
        out["files"] = data.close()
        if quarantine is not None:
            out["quarantine"] = quarantine.close()
    except P.KafkaLogDataError as e:
        _abandon(data, quarantine)
        _touch(marker)
        rng = _current_range(task, e.problem)
        problems_by_range.append((rng, [e.problem]))
        out["failed"] = _problem_row(rng, e.problem)
    except BaseException:
        _abandon(data, quarantine)        # a full disk: no temporary file left, no open writer failing at exit
        raise
    for rng, ps in problems_by_range:
        for p in ps:
            if p.severity == "error":
                out["problems"] += 1
                out["records_lost"] += p.records or 0
                out["bytes_lost"] += p.bytes or 0
            else:
                out["warnings"] += 1
            if len(out["sample"]) < 20:
                out["sample"].append(_problem_row(rng, p))
    rows = [(rng, ps) for rng, ps in problems_by_range if ps]
    if rows and out["failed"] is None:
        errors = TableWriter(os.path.join(spec.staging, "_errors"), spec.fmt, (), 1 << 62,
                             f"part-{spec.run}-{task.id:05d}")
        for rng, ps in rows:
            errors.write(P.errors_batch(rng, ps))
        out["errors"] = errors.close()
    out["seconds"] = time.perf_counter() - t0
    return out


def _read_one(spec: ExportSpec, rng: SegmentRange, sink, data, out: dict):
    """Read one range into ``data`` (through a local copy of what it needs when it is on object storage,
    problems named by their URIs again); where Kafka's reader stopped in it, or None."""
    from . import storage
    from .rows import read_range
    before = len(sink.problems)
    with storage.local_view(rng) as (view, back):
        try:
            if view.first:
                for p in P.segment_problems(view, spec.opts.max_decompressed_bytes):
                    sink.problem(p)
            for batch in read_range(view, spec.opts, list(spec.columns), sink=sink):
                data.write(batch)
                out["rows"] += batch.num_rows
        except P.KafkaLogDataError as e:
            e.problem = e.problem._replace(file=back(e.problem.file))
            raise
        finally:
            if view is not rng:
                sink.problems[before:] = [p._replace(file=back(p.file)) for p in sink.problems[before:]]
        return sink.stopped_at.get((view.segment, view.start))


def _executor() -> dict | None:
    """Where this task ran and with which record path (``bootstrap``'s report of this worker process)."""
    import sys
    state = sys.modules.get("_kafkalog_executor_state")
    if state is None:
        return None
    return {k: state.report.get(k) for k in ("host", "python", "python_version", "source", "path", "package")}


def _quarantine(spec: ExportSpec, task: Task, sink, quarantine, out: dict):
    """Write what the sink quarantined; the (maybe new) quarantine writer."""
    if not sink.quarantined:
        return quarantine
    from .writer import TableWriter
    if quarantine is None:
        quarantine = TableWriter(os.path.join(spec.staging, "_quarantine"), spec.fmt, spec.partition_by,
                                 spec.target_bytes, f"part-{spec.run}-{task.id:05d}")
    for kind, qb in sink.quarantined:
        quarantine.write(_with_problem(qb, kind))
        out["quarantined"] += qb.num_rows
    sink.quarantined.clear()
    return quarantine


def _range_of(ranges, problem: Finding) -> SegmentRange:
    """The range whose segment (or index files) a problem is about."""
    for r in ranges:
        if os.path.splitext(problem.file)[0] == os.path.splitext(r.segment)[0]:
            return r
    return ranges[0]


def _current_range(task: Task, problem: Finding) -> SegmentRange:
    return _range_of(list(task.ranges) + [r for _w, rs in task.replicas for r in rs], problem)


def _problem_row(rng: SegmentRange, p: Finding) -> dict:
    return {"cluster_id": rng.cluster_id, "node_id": rng.node_id, "log_dir": rng.log_dir, "topic": rng.topic,
            "partition": rng.partition, "file": p.file, "position": p.position, "offset": p.offset,
            "kind": p.kind, "severity": p.severity, "message": p.message, "records": p.records, "bytes": p.bytes}


def _with_problem(batch, kind: str):
    import pyarrow as pa
    return pa.RecordBatch.from_arrays(list(batch.columns) + [pa.array([kind] * batch.num_rows, pa.string())],
                                      names=batch.schema.names + ["problem"])


def _touch(path: str) -> None:
    from pathlib import Path

    from .. import fileops
    try:
        fileops.write_atomic(Path(path), b"")
    except OSError:
        pass


# --- on the driver ----------------------------------------------------------------------------------------

@dataclass
class ExportResult:
    output: str
    format: str
    rows: int = 0
    files: int = 0
    segments: int = 0
    ranges: int = 0
    tasks: int = 0
    bytes: int = 0
    problems: int = 0
    warnings: int = 0
    records_lost: int = 0
    bytes_lost: int = 0
    quarantined: int = 0
    failed: dict | None = None
    sample: list = field(default_factory=list)
    job_seconds: float = 0.0
    mode: str = "new"
    unchanged: int = 0              # append: segments with nothing new
    executors: list = field(default_factory=list)   # distinct (host, python, source, record path) of the tasks


def run_job(spark, spec: ExportSpec, tasks: list[Task], progress=None) -> list[dict]:
    """Run ``run_task`` for every task on Spark; the tasks' summaries."""
    from .calls import _spark_errors, run_cancellable
    from .jobs import _StagePoller, executor_rdd
    if not tasks:
        return []
    with _spark_errors(), _StagePoller(spark, progress, "export"):
        rdd = executor_rdd(spark, "kafkalog_cli.spark.export:run_task", (spec,), tasks)
        return run_cancellable(spark, rdd.collect)


def summarize(result: ExportResult, summaries: list[dict]) -> None:
    for s in summaries:
        result.rows += s["rows"]
        result.files += len(s["files"])
        result.problems += s["problems"]
        result.warnings += s["warnings"]
        result.records_lost += s["records_lost"]
        result.bytes_lost += s["bytes_lost"]
        result.quarantined += s["quarantined"]
        if s["failed"] is not None and result.failed is None:
            result.failed = s["failed"]
        if s.get("executor") is not None and s["executor"] not in result.executors:
            result.executors.append(s["executor"])
        for row in s["sample"]:
            if len(result.sample) < 20:
                result.sample.append(row)


class OutputError(UsageProblem):
    """An output the export cannot write (exists in mode new, not an export in mode append, a URI)."""


@dataclass
class Prepared:
    """An export planned on the driver, before Spark starts (``--dry-run`` prints it)."""
    output: Path
    mode: str
    fmt: str
    columns: tuple
    partition_by: tuple
    target_bytes: int
    opts: object
    on_error: str
    ranges: list
    segments: int
    bytes: int
    run: str
    manifest: dict | None = None
    driver_problems: list = field(default_factory=list)     # (None, Finding): warnings found while planning
    unchanged: int = 0
    completed_pending: bool = False
    dedupe: bool = False
    in_files: tuple = ()


def staging_path(prep: "Prepared") -> Path:
    """Where this run's tasks write: beside the output for a new export (renamed into place at the end),
    inside it for an append (files moved into place)."""
    out = prep.output
    if isinstance(out, str):                   # object storage: tasks write the final names (run token in each)
        return out
    if prep.mode == "new" or not out.exists():
        return out.with_name(f".{out.name}.kafkalog-tmp-{prep.run}")
    return out / f".kafkalog-staging-{prep.run}"


def discard(prep: "Prepared") -> None:
    """After Ctrl-C or a failed job, once Spark is stopped: remove what this run staged (on object storage:
    the objects it wrote)."""
    from . import manifest as M
    from . import storage
    if storage.is_remote(str(prep.output)):
        storage.delete_run(str(prep.output), prep.run)
        return
    M.remove_tree(staging_path(prep), quietly=True)


def local_output(output: str) -> Path | str:
    """The local (or mounted shared) path of ``--output``, or the object-storage URI (``storage``)."""
    from . import storage
    if output.startswith("file://"):
        output = output[len("file://"):]
    elif storage.is_remote(output):
        return output.rstrip("/")
    return Path(output).absolute()


def prepare(plan, *, output: str, mode: str, fmt: str, columns: tuple, partition_by: tuple, target_bytes: int,
            opts, on_error: str, dedupe: bool = False, in_files: tuple = ()) -> Prepared:
    """Check the output and decide what to read (in append mode: only what is new). No Spark."""
    import uuid

    from . import manifest as M
    out = local_output(output)
    run = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    ranges = list(plan.ranges)
    if isinstance(out, str):
        from . import storage
        if mode != "new":
            raise OutputError(f"{out}: --mode append is not offered on object storage (export to a new prefix)")
        if dedupe:
            raise OutputError("--dedupe-replicas with an object-storage output is not offered yet")
        try:
            storage.require_empty(out)
        except storage.StorageError as e:
            raise OutputError(str(e)) from None
        return Prepared(out, mode, fmt, tuple(columns), tuple(partition_by), target_bytes, opts, on_error, ranges,
                        len({r.segment for r in ranges}), sum(r.size for r in ranges), run, None, [], 0, False,
                        dedupe, tuple(in_files))
    m = None
    warnings = []
    unchanged = 0
    completed = False
    if mode == "new":
        if os.path.lexists(out):
            raise OutputError(f"{out} already exists; kafkalog never replaces an output (choose a new path, or "
                              "--mode append to add what is new to an earlier export)")
    elif out.exists():
        if not out.is_dir():
            raise OutputError(f"{out} is not a directory")
        try:
            completed = M.complete_pending(out)
            m = M.load(out)
        except M.ManifestError as e:
            raise OutputError(str(e)) from None
        if m is None:
            if any(out.iterdir()):
                raise OutputError(f"{out} is not a kafkalog export (no {M.MANIFEST}); --mode append adds to an "
                                  "export made by kafkalog")
        else:
            try:
                M.check_compatible(m, fmt, partition_by, columns)
            except M.ManifestError as e:
                raise OutputError(str(e)) from None
            in_files = M.in_files(m)
            ranges, warnings, unchanged = M.plan_append(ranges, m)
    if not out.parent.is_dir():
        raise OutputError(f"{out}: the directory {out.parent} does not exist")
    segments = len({r.segment for r in ranges})
    return Prepared(out, mode, fmt, tuple(columns), tuple(partition_by), target_bytes, opts, on_error, ranges,
                    segments, sum(r.size for r in ranges), run, m, [(None, w) for w in warnings], unchanged,
                    completed, dedupe, tuple(in_files))


def execute(spark, prep: Prepared, progress=None) -> ExportResult:
    """Run the export on Spark and publish it (nothing is published when a task failed with ``fail``)."""
    from pathlib import Path as _P

    from .. import fileops
    from . import manifest as M
    out = prep.output
    staging = staging_path(prep)
    if isinstance(out, str):
        return _execute_remote(spark, prep, progress)
    fileops.make_dirs(staging)
    parallelism = spark.sparkContext.defaultParallelism
    tasks = make_tasks(prep.ranges, task_bytes_for(prep.bytes, parallelism), prep.dedupe, parallelism)
    spec = ExportSpec(prep.opts, prep.columns, prep.fmt, prep.partition_by, prep.target_bytes, str(staging),
                      prep.run, prep.on_error, prep.in_files)
    result = ExportResult(str(out), prep.fmt, segments=prep.segments, ranges=len(prep.ranges), tasks=len(tasks),
                          bytes=prep.bytes, mode=prep.mode, unchanged=prep.unchanged)
    t0 = time.perf_counter()
    try:
        summaries = run_job(spark, spec, tasks, progress)
    except BaseException:
        M.remove_tree(staging, quietly=True)
        raise
    result.job_seconds = time.perf_counter() - t0
    summarize(result, summaries)
    for _r, p in prep.driver_problems:
        result.warnings += p.severity != "error"
        result.problems += p.severity == "error"
        if len(result.sample) < 20:
            result.sample.append({"file": p.file, "position": p.position, "offset": p.offset, "kind": p.kind,
                                  "severity": p.severity, "message": p.message})
    if result.failed is not None:
        M.remove_tree(staging)
        return result
    files = [f for s in summaries for f, _n, _b in s["files"]]
    extra = [f"_errors/{f}" for s in summaries for f, _n, _b in s["errors"]]
    extra += [f"_quarantine/{f}" for s in summaries for f, _n, _b in s["quarantine"]]
    if prep.driver_problems:
        extra.append(_driver_errors(staging, prep))
    if not files and prep.manifest is None and prep.fmt == "parquet":
        files.append(_empty_parquet(staging, prep))
    new_manifest = M.updated(prep.manifest, spec, prep.ranges, summaries, prep.run, result.rows, files)
    result.files = len(files)
    if staging.parent == out.parent:            # a new export: the whole directory is renamed into place
        M.write(staging, new_manifest)
        fileops.write_atomic(staging / "_SUCCESS", b"")
        _fsync_tree(staging)
        fileops.rename(staging, out)
    else:
        _fsync_tree(staging)
        M.publish_append(out, _P(staging), files + extra, new_manifest)
    return result


def _execute_remote(spark, prep: Prepared, progress=None) -> ExportResult:
    """``execute`` onto object storage: tasks upload their files under the output prefix; the manifest and
    ``_SUCCESS`` are written last; a failure removes this run's objects."""
    import json
    import tempfile

    from . import manifest as M
    from . import storage
    out = str(prep.output)
    parallelism = spark.sparkContext.defaultParallelism
    tasks = make_tasks(prep.ranges, task_bytes_for(prep.bytes, parallelism), prep.dedupe, parallelism)
    spec = ExportSpec(prep.opts, prep.columns, prep.fmt, prep.partition_by, prep.target_bytes, out, prep.run,
                      prep.on_error, prep.in_files)
    result = ExportResult(out, prep.fmt, segments=prep.segments, ranges=len(prep.ranges), tasks=len(tasks),
                          bytes=prep.bytes, mode=prep.mode)
    t0 = time.perf_counter()
    try:
        summaries = run_job(spark, spec, tasks, progress)
        result.job_seconds = time.perf_counter() - t0
        summarize(result, summaries)
        if result.failed is not None:
            storage.delete_run(out, prep.run)
            return result
        files = [f for s in summaries for f, _n, _b in s["files"]]
        if not files and prep.fmt == "parquet":
            with tempfile.TemporaryDirectory(prefix="kafkalog-empty-") as tmp:
                rel = _empty_parquet(Path(tmp), prep)
                storage.upload(tmp, [rel], out)
            files.append(rel)
        manifest = M.updated(None, spec, prep.ranges, summaries, prep.run, result.rows, files)
        storage.write_object(storage.join(out, M.MANIFEST),
                             (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
        storage.write_object(storage.join(out, "_SUCCESS"), b"")
    except BaseException:
        storage.delete_run(out, prep.run)
        raise
    result.files = len(files)
    return result


def _driver_errors(staging: Path, prep: Prepared) -> str:
    """The planning warnings (segments changed since the last export) as ``_errors`` rows."""
    import pyarrow as pa

    from .writer import TableWriter
    w = TableWriter(str(staging / "_errors"), prep.fmt, (), 1 << 62, f"part-{prep.run}-driver")
    cols = {name: [] for name in P.ERROR_COLUMNS}
    for _r, p in prep.driver_problems:
        for name in P.ERROR_COLUMNS:
            cols[name].append(getattr(p, name) if name in Finding._fields else None)
    w.write(pa.RecordBatch.from_arrays([pa.array(cols[c], t) for c, t in P.ERROR_COLUMNS.items()],
                                       schema=P.ERROR_SCHEMA))
    (rel, _n, _b), = w.close()
    return f"_errors/{rel}"


def _empty_parquet(staging: Path, prep: Prepared) -> str:
    """No record matched: one empty file with the schema, so that Spark can read the export back."""
    import pyarrow as pa

    from .schema import schema_for
    from .writer import _File
    schema = schema_for([c for c in prep.columns if c not in prep.partition_by or c in prep.in_files])
    f = _File(staging, "", f"part-{prep.run}-empty", prep.fmt, schema)
    f.write(pa.RecordBatch.from_pylist([], schema=schema))
    rel, _n, _b = f.close()
    return rel


def _fsync_tree(root: Path) -> None:
    from .. import fileops
    for d, _dirs, _files in os.walk(root, topdown=False):
        fileops.fsync_dir(d)
