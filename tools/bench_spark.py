#!/usr/bin/env python3
"""Spark export as a whole command against one dump-log process, and where Spark's start-up goes. A benchmark,
not a test.

    python tools/bench_spark.py [--records 4000000,16000000] [--pairs 3] [--masters local[2]]
                                [--startup 3] [--dir /tmp/kafkalog-bench-spark] [--recipe]

For each --records value a fleet is generated once (reused by later runs with the same --dir) with kafkalog's
own writer (tests/fleet.py): 20 log directories of one cluster with 4 partitions each, codecs none, gzip,
snappy, lz4 and zstd in turn over the partitions, batches of 20-80 records with a 12-byte key, a 60-240-byte
text value (every value different) and one header, 16 MiB segments indexed like a broker (4 M records: 624 MB
in 80 segments). Then, --pairs times, in turn (so that a change of the machine's load falls on both):

  * ``kafkalog dump-log --format json --deep-iteration --print-data-log`` over the fleet, output to
    /dev/null: one process, the reference;
  * ``kafkalog export --master M`` for each --masters value (``standalone:WxC`` starts a standalone cluster
    of W workers with C cores on 127.0.0.1 for that run), Parquet into a new directory, JSON summary.

Each run is a fresh process. Reported per command: median wall time, CPU seconds of the whole process tree
(each process's own user + system time, sampled from /proc every 50 ms: the JVM and the Python workers
included, a reaped child never counted twice) and peak RSS of the tree; for export also Spark's start-up and
the export job alone (the command's own ``startup_seconds`` and ``job_seconds``), and per pair the ratio
dump-log wall / export wall (the whole command) and dump-log wall / job. The load average is printed before
every run: numbers depend on the machine and on what else runs on it.

--startup N: where a start goes, N times in turn with and without the class-data archive of Spark's classes
(``KAFKALOG_SPARK_CDS=0``): a local[2] export of fixtures/logdir (18 small segments) in a process that stamps
each phase: Python imports and the checks (pyspark, pyarrow, ``java -version``), the JVM's launch to the py4j
gateway, the SparkContext, the warm-up job (the executors' Python daemon and workers, their imports), the
export job, and the stop (Spark stopped, the JVM and the Python workers exited).

--recipe adds the mapInArrow recipe of shared/docs/spark-findings.md on the same fleet and master (a fresh
session, ``spark.range(n, numPartitions=n).mapInArrow`` over the same segment ranges and reader, Spark's
``noop`` sink: nothing written).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests", ROOT / "tests" / "spark"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

RECIPE_ROWS_PER_S = 696_000   # shared/docs/spark-findings.md §2: mapInArrow, 5 M rows, local[2], noop sink
BROKERS, PARTITIONS = 20, 4


def make(directory: Path, records: int) -> Path:
    """The fleet of ``records`` records under ``directory/fleet`` (generated once)."""
    from fleet import make_fleet
    data = directory / "fleet"
    marker = data / ".complete"
    want = f"{BROKERS} {PARTITIONS} {records}"
    if marker.exists() and marker.read_text() == want:
        return data
    shutil.rmtree(data, ignore_errors=True)
    t = time.perf_counter()
    fleet = make_fleet(data, brokers=BROKERS, partitions_per_broker=PARTITIONS,
                       records_per_partition=records // (BROKERS * PARTITIONS), segment_bytes=16 * 1024 * 1024,
                       value_bytes=(60, 240), seed=1)
    marker.write_text(want)
    print(f"generated {fleet.records:,} records in {time.perf_counter() - t:.0f} s", flush=True)
    return data


class TreeSampler:
    """Peak RSS (sum over the process and its descendants) and CPU seconds of a running command: each
    process's own user + system time (not its reaped children's, which are counted as themselves)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.cpu: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.tick = os.sysconf("SC_CLK_TCK")
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.seen: set[int] = {pid}

    def _stats(self) -> dict[int, list[str]]:
        out = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    out[int(d)] = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
        return out

    def _sample(self) -> None:
        stats = self._stats()
        # the tree: descendants by parent, and processes seen before that were reparented (Spark's daemon)
        kids: dict[int, list[int]] = {}
        for pid, fields in stats.items():
            kids.setdefault(int(fields[1]), []).append(pid)
        todo, tree = [self.pid], set()
        while todo:
            p = todo.pop()
            if p in tree:
                continue
            tree.add(p)
            todo.extend(kids.get(p, []))
        tree |= self.seen & set(stats)
        self.seen |= tree
        rss = 0
        for p in tree:
            fields = stats.get(p)
            if fields is None:
                continue
            rss += int(fields[21]) * self.page
            self.cpu[p] = (int(fields[11]) + int(fields[12])) / self.tick
        self.peak = max(self.peak, rss)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            self._sample()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def run(cmd: list[str], capture: bool, env: dict | None = None) -> dict:
    load = os.getloadavg()[0]
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=env)
    with TreeSampler(p.pid) as s:
        out, err = p.communicate()
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err[-3000:]}")
    return {"wall": wall, "rss": s.peak, "cpu": sum(s.cpu.values()), "stdout": out or "", "load": load}


RECIPE = r"""
import json, os, sys, time
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
t0 = time.perf_counter()
from pyspark.sql import SparkSession
from kafkalog_cli.spark.options import ReadOptions
from kafkalog_cli.spark.plan import plan_ranges
from kafkalog_cli.spark.rows import read_range
from kafkalog_cli.spark.schema import DDL
spark = (SparkSession.builder.master(sys.argv[2]).config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "1g").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
opts = ReadOptions(on_error="skip")
ranges = plan_ranges([sys.argv[1]], opts).ranges

def fn(batches):
    for b in batches:
        for i in b.column(0).to_pylist():
            yield from read_range(ranges[i], opts)

started = time.perf_counter() - t0
t1 = time.perf_counter()
spark.range(0, len(ranges), 1, numPartitions=len(ranges)).mapInArrow(fn, DDL).write.format("noop").mode("overwrite").save()
job = time.perf_counter() - t1
print(json.dumps({"startup_seconds": started, "job_seconds": job}))
spark.stop()
"""

#: a local[2] export of fixtures/logdir that stamps its phases (--startup); prints one JSON line
PHASES = r"""
import json, sys, time
T0 = time.perf_counter()
stamps = {}
def stamp(name):
    stamps[name] = time.perf_counter() - T0
from kafkalog_cli.commands import export as E
import kafkalog_cli.spark.session as S
import pyspark.java_gateway as jg
try:
    import pyspark.core.context as C
except ImportError:                          # pyspark 3.5
    import pyspark.context as C
def around(owner, name, real, before=None, after=None):
    def stamped(*a, **k):
        if before:
            stamp(before)
        r = real(*a, **k)
        if after:
            stamp(after)
        return r
    setattr(owner, name, stamped)
around(C, "launch_gateway", jg.launch_gateway, "launch", "gateway")
around(S, "check_requirements", S.check_requirements, after="checked")
around(S, "warm_up", S.warm_up, "context", "warm")
around(S.Session, "__exit__", S.Session.__exit__, before="job")
from kafkalog_cli.app import main
try:
    main(["-q", "export", sys.argv[1], "-o", sys.argv[2], "--master", "local[2]"])
except SystemExit as e:
    code = e.code
stamp("stopped")
print(json.dumps(stamps))
"""
PHASE_NAMES = (("checked", "Python imports, the checks (pyspark, pyarrow, java -version), the plan"),
               ("launch", "(to the JVM's launch)"),
               ("gateway", "JVM launch (spark-submit, Spark's launcher JVM) to the py4j gateway"),
               ("context", "SparkContext"),
               ("warm", "warm-up job: the executors' Python daemon (imports made early) and workers"),
               ("job", "the export job (18 small segments)"),
               ("stopped", "stop: Spark, the JVM and the Python workers exited"))


@contextlib.contextmanager
def cluster(master: str, directory: Path):
    """``standalone:WxC``: a standalone cluster of W workers with C cores each on 127.0.0.1 for the run
    (tests/spark/standalone.py; stopped afterwards), its executors running this Python; any other master as
    given. Yields (master URL, --spark-conf arguments)."""
    m = re.fullmatch(r"standalone:(\d+)x(\d+)", master)
    if m is None:
        yield master, []
        return
    from standalone import standalone
    workers, cores = int(m.group(1)), int(m.group(2))
    tmp = directory / "cluster"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    try:
        with standalone(tmp, [{"cores": cores, "env": env}] * workers) as url:
            yield url, ["--spark-conf", f"spark.cores.max={workers * cores}", "--spark-conf",
                        f"spark.executor.cores={cores}", "--spark-conf", "spark.executor.memory=1g"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cores_of(master: str) -> int:
    m = re.fullmatch(r"standalone:(\d+)x(\d+)", master) or re.fullmatch(r"local\[(\d+)\]", master)
    if m is None:
        return os.cpu_count() or 1
    return int(m.group(1)) * (int(m.group(2)) if m.lastindex == 2 else 1)


def med(xs) -> float:
    return statistics.median(xs) if xs else float("nan")


def throughput(directory: Path, records: int, masters: list[str], pairs: int, recipe: bool) -> None:
    data = make(directory, records)
    logs = list(data.rglob("*.log"))
    size = sum(f.stat().st_size for f in logs)
    print(f"\nfleet: {BROKERS} log directories x {PARTITIONS} partitions, {records:,} records, {size / 1e6:.0f} MB "
          f"in {len(logs)} segments (all codecs); {os.cpu_count()} cores", flush=True)
    kafkalog = [sys.executable, "-m", "kafkalog_cli"]
    dump = []
    exports: dict[str, list] = {m: [] for m in masters}
    for i in range(pairs):
        r = run(kafkalog + ["dump-log", "--format", "json", "--deep-iteration", "--print-data-log", str(data)], False)
        dump.append(r)
        print(f"  pair {i + 1}: dump-log {r['wall']:.2f} s (load {r['load']:.1f})", flush=True)
        for master in masters:
            out = directory / "out"
            shutil.rmtree(out, ignore_errors=True)
            with cluster(master, directory) as (url, conf):
                r = run(kafkalog + ["export", str(data), "--master", url, "--output", str(out), "--format", "json",
                                    *conf], True)
            summary = json.loads(r["stdout"].splitlines()[0])
            assert summary["rows"] == records, summary
            assert {e["path"] for e in summary["executors"]} == {"native"}, summary["executors"]
            r["summary"] = summary
            exports[master].append(r)
            shutil.rmtree(out, ignore_errors=True)
            print(f"  pair {i + 1}: export --master {master} {r['wall']:.2f} s (start-up {summary['startup_seconds']:.1f}"
                  f" s, job {summary['job_seconds']:.2f} s; load {r['load']:.1f})", flush=True)
    rows = [("dump-log --format json --deep-iteration --print-data-log", dump, None)]
    rows += [(f"export --master {m} (parquet)", rs, m) for m, rs in exports.items()]
    if recipe:
        master = masters[0]
        r = run([sys.executable, "-c", RECIPE, str(data), master], True)
        r["summary"] = json.loads(r["stdout"].splitlines()[-1])
        rows.append((f"mapInArrow recipe, --master {master} (noop sink)", [r], master))
    loads = [r["load"] for _l, rs, _m in rows for r in rs]
    print(f"\n{records:,} records, {pairs} pairs (medians); load average (1 min) at the runs' starts: "
          f"{min(loads):.1f}-{max(loads):.1f}, median {med(loads):.1f}")
    print(f"{'':58} {'wall s':>7} {'CPU s':>6} {'peak RSS':>9} {'start s':>7} {'job s':>6} {'job rows/s':>10}")
    for label, rs, _m in rows:
        extra = ""
        if rs[0].get("summary"):
            start = med([r["summary"]["startup_seconds"] for r in rs])
            job = med([r["summary"]["job_seconds"] for r in rs])
            extra = f" {start:7.1f} {job:6.2f} {records / job:10,.0f}"
        print(f"{label:58} {med([r['wall'] for r in rs]):7.2f} {med([r['cpu'] for r in rs]):6.1f} "
              f"{med([r['rss'] for r in rs]) / 2**20:7.0f} MB{extra}")
    for master, rs in exports.items():
        whole = [d["wall"] / r["wall"] for d, r in zip(dump, rs)]
        job = [d["wall"] / r["summary"]["job_seconds"] for d, r in zip(dump, rs)]
        print(f"export --master {master}: whole command {med(whole):.2f}x one dump-log JSON process (pairs "
              f"{', '.join(f'{x:.2f}' for x in whole)}); job alone {med(job):.2f}x ({', '.join(f'{x:.2f}' for x in job)});"
              f" job rows/s per core {records / med([r['summary']['job_seconds'] for r in rs]) / cores_of(master):,.0f}")


def startup(n: int, directory: Path) -> None:
    """--startup: the phases of a small local export, with and without the class-data archive."""
    src = ROOT / "fixtures" / "logdir"
    res: dict[str, list] = {"archive": [], "no archive": []}
    for i in range(n):
        for label in res:
            out = directory / "phases-out"
            shutil.rmtree(out, ignore_errors=True)
            env = dict(os.environ, **({"KAFKALOG_SPARK_CDS": "0"} if label == "no archive" else {}))
            r = run([sys.executable, "-c", PHASES, str(src), str(out)], True, env=env)
            r["phases"] = json.loads(r["stdout"].splitlines()[-1])
            res[label].append(r)
            shutil.rmtree(out, ignore_errors=True)
            print(f"  {label}: {r['wall']:.2f} s, {r['cpu']:.1f} CPU s (load {r['load']:.1f})", flush=True)
    loads = [r["load"] for rs in res.values() for r in rs]
    print(f"\nstart-up of a local[2] export of fixtures/logdir, {n} runs each in turn (medians); load average at "
          f"the runs' starts {min(loads):.1f}-{max(loads):.1f}, median {med(loads):.1f}")
    print(f"{'phase':76} " + " ".join(f"{k:>12}" for k in res))
    for key, what in PHASE_NAMES:
        cells = []
        for rs in res.values():
            prev = [0.0] * len(rs)
            idx = [k for k, _w in PHASE_NAMES].index(key)
            if idx:
                before = PHASE_NAMES[idx - 1][0]
                prev = [r["phases"].get(before, 0.0) for r in rs]
            cells.append(med([r["phases"].get(key, 0.0) - p for r, p in zip(rs, prev)]))
        print(f"{what:76} " + " ".join(f"{c:12.2f}" for c in cells))
    print(f"{'Spark start-up (launch to the end of the warm-up)':76} " + " ".join(
        f"{med([r['phases']['warm'] - r['phases']['launch'] for r in rs]):12.2f}" for rs in res.values()))
    print(f"{'whole command, wall':76} " + " ".join(f"{med([r['wall'] for r in rs]):12.2f}" for rs in res.values()))
    print(f"{'whole command, CPU of the process tree':76} " + " ".join(
        f"{med([r['cpu'] for r in rs]):12.2f}" for rs in res.values()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", default="4000000", help="comma-separated fleet sizes (records)")
    ap.add_argument("--pairs", type=int, default=3, help="dump-log/export runs in turn per fleet")
    ap.add_argument("--masters", default="local[2]", help="comma-separated Spark masters")
    ap.add_argument("--startup", type=int, default=0, metavar="N", help="also the start-up phases, N runs each")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-bench-spark")
    ap.add_argument("--recipe", action="store_true", help="also the mapInArrow recipe (one run)")
    ap.add_argument("--no-throughput", action="store_true", help="only --startup")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"kafkalog Spark benchmark: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.startup:
        startup(args.startup, args.dir)
    if not args.no_throughput:
        for n in (int(x) for x in args.records.split(",")):
            throughput(args.dir / f"records-{n}", n, args.masters.split(","), args.pairs, args.recipe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
