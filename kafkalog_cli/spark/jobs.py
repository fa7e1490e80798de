"""The Spark job behind ``kafkalog scan``, and what every kafkalog Spark job shares (errors, progress).

``export`` is in ``kafkalog_cli.spark.export``.

scan:   ``verify`` distributed over segments, in three steps:
        1. on the driver, the Verifier walks the paths and lists the segments it would check;
        2. on executors, ``verify_segment`` runs once per segment (balanced groups, biggest first), without
           the previous segment's last offset;
        3. on the driver, the Verifier runs again with those results in place of its own segment checks:
           it adds every partition- and directory-level check, and where a segment's first offset does not
           follow the previous segment's last offset (the only check that needs the neighbour) it verifies
           that segment again on the driver with the offset, so findings are exactly ``verify``'s.

scan's report table written to a local path goes to a hidden directory beside it, every file is fsynced,
and the directory is renamed into place (through ``fileops``); an existing output is never replaced. Paths
with a scheme (``hdfs://``, ``s3a://``) are left to Spark's output committer (``_SUCCESS`` marks completion).
"""
from __future__ import annotations

import os
import re
import threading
import time
from functools import partial
from pathlib import Path
from typing import Callable

from ..errors import UsageProblem
from ..engine.verify import Verifier, VerifyOptions, VerifyReport
from ..engine.verify_segment import SegmentOptions, SegmentResult, verify_segment
from .calls import _spark_errors, run_cancellable

Progress = Callable[[int, str, int, int], None]     # (stage id, description, completed tasks, total tasks)


class OutputExists(UsageProblem):
    pass


def executor_rdd(spark, target: str, args: tuple, items: list, flat: bool = False):
    """An RDD running ``target(*args, item)`` (``module:function``) once per item on the executors, each
    task started by ``bootstrap.call`` (kafkalog found on the executor, its record path checked) before
    the pickled arguments are read."""
    import pickle

    from . import bootstrap
    from .session import executor_settings
    want, allow = executor_settings(spark)
    bootstrap.by_value()
    blobs = [pickle.dumps(i, protocol=pickle.HIGHEST_PROTOCOL) for i in items]
    fn = partial(bootstrap.call, want, allow, target, pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL))
    rdd = spark.sparkContext.parallelize(blobs, len(blobs))
    return rdd.flatMap(fn) if flat else rdd.map(fn)


# --- output helpers (scan's report table) ---------------------------------------------------------------

def _output_paths(output: str) -> tuple[str, str | None]:
    """(where Spark writes, where it is renamed to or None). Local outputs are written beside."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", output) and not output.startswith("file://"):
        return output, None
    local = Path(output[len("file://"):] if output.startswith("file://") else output).absolute()
    if local.exists():
        raise OutputExists(f"{local} already exists; kafkalog never replaces an output (choose a new path "
                           "or remove it first)")
    if not local.parent.is_dir():
        raise FileNotFoundError(2, "No such directory", str(local.parent))
    tmp = local.with_name(f".{local.name}.kafkalog-tmp-{os.getpid()}")
    return str(tmp), str(local)


def _publish(tmp: Path, final: Path) -> None:
    """fsync every file and directory Spark wrote, then rename the directory into place."""
    from .. import fileops
    for root, _dirs, files in os.walk(tmp, topdown=False):
        for f in files:
            fileops.fsync_file(os.path.join(root, f))
        fileops.fsync_dir(root)
    fileops.rename(tmp, final)


# --- scan --------------------------------------------------------------------------------------------

SCAN_DDL = ("type string, severity string, kind string, file string, position long, offset long, "
            "message string, unit string, unit_kind string, `group` string, status string, bytes long, "
            "batches long, records long, first_offset long, last_offset long, first_timestamp long, "
            "max_timestamp long, codecs map<string,long>, active boolean, seconds double")


def list_segments(paths: list[str], options: VerifyOptions) -> "_SegmentLister":
    """Step 1 (no Spark): the segments ``verify`` would check."""
    lister = _SegmentLister(options)
    lister.run(paths)
    return lister


def scan(spark, paths: list[str], options: VerifyOptions, progress: Progress | None = None,
         verify_progress: Callable[[int, str], None] | None = None, lister=None) -> VerifyReport:
    t0 = time.perf_counter()
    if lister is None:
        lister = list_segments(paths, options)
    jobs = lister.jobs
    results: dict[str, tuple[SegmentResult, float]] = {}
    if jobs:
        groups = _balanced_groups(jobs, spark.sparkContext.defaultParallelism)
        with _spark_errors(), _StagePoller(spark, progress, "scan"):
            rdd = executor_rdd(spark, "kafkalog_cli.spark.jobs:_verify_group", (lister.seg_opts,), groups, flat=True)
            for key, res, seconds in run_cancellable(spark, rdd.collect):
                results[key] = (res, seconds)
    report = _Precomputed(options, results, verify_progress).run(paths)
    report.seconds = time.perf_counter() - t0
    return report


def report_rows(report: VerifyReport) -> list[tuple]:
    """The scan table: one row per finding, one summary row per segment (columns of SCAN_DDL)."""
    rows = []
    for u in report.units:
        for f in u.findings:
            rows.append(("finding", f.severity, f.kind, f.file, f.position, f.offset, f.message, u.name, u.kind,
                         u.group, None, None, None, None, None, None, None, None, None, None, None))
    for u in report.units:
        if u.kind == "segment":
            s = u.stats
            rows.append(("segment", None, None, u.name, None, None, None, u.name, u.kind, u.group,
                         u.worst() or "ok", s.get("bytes"), s.get("batches"), s.get("records"),
                         s.get("first_offset"), s.get("last_offset"), s.get("first_timestamp"),
                         s.get("max_timestamp"), s.get("codecs") or {}, s.get("active"), round(u.seconds, 6)))
    return rows


def write_report(spark, report: VerifyReport, output: str, fmt: str = "parquet") -> int:
    target, final = _output_paths(output)
    rows = report_rows(report)
    with _spark_errors():
        df = spark.createDataFrame(rows, SCAN_DDL).coalesce(1)
        writer = df.write.mode("errorifexists")
        if fmt == "parquet":
            writer.parquet(target)
        else:
            writer.json(target)
    if final is not None:
        _publish(Path(target), Path(final))
    return len(rows)


class _SegmentLister(Verifier):
    """Step 1: the segments ``verify`` would check, with the arguments it would pass; nothing is read."""

    def __init__(self, options: VerifyOptions) -> None:
        super().__init__(options)
        self.jobs: list[tuple[str, str, int, bool, int]] = []
        self._seen: set[str] = set()

    def _segment(self, log_path, base, active, prev_last, group):
        key = str(log_path)
        if key not in self._seen:
            self._seen.add(key)
            try:
                size = os.path.getsize(log_path)
            except OSError:
                size = 0
            self.jobs.append((key, os.path.abspath(log_path), base, active, size))
        return SegmentResult(key, base)

    def _producer_snapshot(self, *args, **kw) -> None:
        pass

    def _kraft_snapshot(self, *args, **kw) -> None:
        pass

    def _metadata_file(self, *args, **kw) -> None:
        pass

    def _leader_epochs(self, *args, **kw) -> None:
        pass


def _balanced_groups(jobs: list, parallelism: int) -> list[list]:
    """Groups of segments of about equal bytes (largest first onto the lightest group), at most a few
    per core so that many small segments do not each cost a task, and every big one gets its own."""
    n = max(1, min(len(jobs), max(parallelism, 1) * 4))
    groups: list[list] = [[] for _ in range(n)]
    load = [0] * n
    for job in sorted(jobs, key=lambda j: -j[4]):
        i = load.index(min(load))
        groups[i].append(job)
        load[i] += job[4] + 4096
    return [g for g in groups if g]


def _verify_group(seg_opts: SegmentOptions, group: list) -> list:
    """Step 2, on an executor: verify each segment of the group (absolute paths, no neighbour)."""
    out = []
    for key, abspath, base, active, _size in group:
        t0 = time.perf_counter()
        res = verify_segment(abspath, base, active=active, previous_last_offset=None, options=seg_opts)
        out.append((key, _relocate(res, key, abspath), time.perf_counter() - t0))
    return out


def _relocate(res: SegmentResult, key: str, abspath: str) -> SegmentResult:
    """Name files as the user gave them (verify's naming), not by the absolute paths executors used."""
    absdir = os.path.dirname(abspath)
    given = Path(key)

    def rename(f: str | None) -> str | None:
        if f is not None and os.path.dirname(f) == absdir:
            return str(given.with_name(os.path.basename(f)))
        return f
    res.log_path = key
    res.findings = [f._replace(file=rename(f.file)) for f in res.findings]
    return res


class _Precomputed(Verifier):
    """Step 3: the Verifier with segment results from the executors."""

    def __init__(self, options: VerifyOptions, results: dict, progress=None) -> None:
        super().__init__(options, progress)
        self.results = results

    def _segment(self, log_path, base, active, prev_last, group):
        got = self.results.get(str(log_path))
        t0 = time.perf_counter()
        if got is None:
            res = verify_segment(log_path, base, active=active, previous_last_offset=prev_last,
                                 options=self.seg_opts)
            seconds = time.perf_counter() - t0
        else:
            res, seconds = got
            if prev_last is not None and res.first_offset is not None and res.first_offset <= prev_last:
                res = verify_segment(log_path, base, active=active, previous_last_offset=prev_last,
                                     options=self.seg_opts)
                seconds += time.perf_counter() - t0
        return self._record_segment(log_path, group, res, active, seconds)


# --- progress per stage ----------------------------------------------------------------------------

class _StagePoller:
    """Polls Spark's status tracker while a job runs and reports each stage's completed tasks."""

    def __init__(self, spark, progress: Progress | None, label: str, interval: float = 0.25) -> None:
        self.sc = spark.sparkContext
        self.progress = progress
        self.label = label
        self.interval = interval
        self.stop = threading.Event()
        self.seen: dict[int, tuple[str, int, int]] = {}
        self.thread = None

    def __enter__(self):
        if self.progress is not None:
            self.thread = threading.Thread(target=self._run, name="kafkalog-stage-progress", daemon=True)
            self.thread.start()
        return self

    def _poll(self) -> None:
        tracker = self.sc.statusTracker()
        active = set()
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is None:
                continue
            active.add(sid)
            name = f"{self.label}: stage {sid} ({info.name.split(' at ')[0]})"
            state = (name, info.numCompletedTasks, info.numTasks)
            if self.seen.get(sid) != state:
                self.seen[sid] = state
                self.progress(sid, *state)
        for sid, (name, done, total) in list(self.seen.items()):
            if sid not in active and done < total:
                self.seen[sid] = (name, total, total)
                self.progress(sid, name, total, total)

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            try:
                self._poll()
            except Exception:           # the tracker is best effort; never fail the job for a progress bar
                pass

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=2)
            if exc[0] is None:
                for sid, (name, _done, total) in self.seen.items():
                    self.progress(sid, name, total, total)

