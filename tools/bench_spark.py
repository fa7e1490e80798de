#!/usr/bin/env python3
"""Spark export throughput on a generated fleet, next to one dump-log process. A benchmark, not a test.

    python tools/bench_spark.py [--brokers 20] [--partitions 4] [--records 2000000] [--masters local[2],standalone:2x1]
                                [--output-format parquet] [--dir /tmp/kafkalog-bench-fleet] [--dedupe]

Generates (once; reused by later runs with the same --dir) a fleet with kafkalog's own writer
(tests/fleet.py): --brokers log directories of one cluster with --partitions partitions each, codecs
none, gzip, snappy, lz4 and zstd in turn over the partitions, batches of 20-80 records with a 12-byte key,
a 60-240-byte text value (every value different) and one header, 16 MiB segments indexed like a broker.
Then runs, one after the other, each a fresh process:

  * ``kafkalog dump-log --format json --deep-iteration --print-data-log`` (output to /dev/null), and
    the same without --print-data-log;
  * ``kafkalog export --master M`` for each --masters value, JSON summary on stdout (``standalone:WxC``
    starts a standalone cluster of W workers with C cores each on 127.0.0.1 for that run and stops it; the
    job time is measured after the executors registered);
  * the mapInArrow recipe of shared/docs/spark-findings.md on the same fleet and master: a fresh
    local session, ``spark.range(n, numPartitions=n).mapInArrow`` over the same segment ranges read by
    the same reader (``rows.read_range``), into Spark's ``noop`` sink (nothing written: an upper bound
    for what Spark can do with this parser).

For each it prints the wall time, records/s, CPU seconds and the peak resident memory of the whole process
tree (the JVM and Python workers included: /usr/bin/time cannot see them; sampled from /proc every 50 ms);
for export also Spark's start-up (JVM, executors' Python workers) and the export job alone, the rows/s
of the job, and the ratios the README's targets are stated in. Numbers depend on the machine and on
what else runs on it: one run, as measured.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests", ROOT / "tests" / "spark"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

RECIPE_ROWS_PER_S = 696_000   # shared/docs/spark-findings.md §2: mapInArrow, 5 M rows, local[2], noop sink


def make(directory: Path, brokers: int, partitions: int, records: int) -> None:
    from fleet import make_fleet
    marker = directory / ".complete"
    want = f"{brokers} {partitions} {records}"
    if marker.exists() and marker.read_text() == want:
        return
    shutil.rmtree(directory, ignore_errors=True)
    t = time.perf_counter()
    fleet = make_fleet(directory, brokers=brokers, partitions_per_broker=partitions,
                       records_per_partition=records // (brokers * partitions), segment_bytes=16 * 1024 * 1024,
                       value_bytes=(60, 240), seed=1)
    marker.write_text(want)
    print(f"generated {fleet.records:,} records in {time.perf_counter() - t:.0f} s")


class TreeSampler:
    """Peak RSS (sum over the process and its descendants) and CPU seconds of a running command."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self.cpu: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.tick = os.sysconf("SC_CLK_TCK")
        self.page = os.sysconf("SC_PAGE_SIZE")

    def _children(self) -> dict[int, list[int]]:
        kids: dict[int, list[int]] = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                kids.setdefault(int(fields[1]), []).append(int(d))
            except OSError:
                continue
        return kids

    def _sample(self) -> None:
        kids = self._children()
        todo, tree = [self.pid], []
        while todo:
            p = todo.pop()
            tree.append(p)
            todo.extend(kids.get(p, []))
        rss = 0
        for p in tree:
            try:
                with open(f"/proc/{p}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                rss += int(fields[21]) * self.page
                self.cpu[p] = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / self.tick
            except (OSError, IndexError):
                continue
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


def run(cmd: list[str], capture: bool) -> dict:
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    with TreeSampler(p.pid) as s:
        out, err = p.communicate()
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err[-3000:]}")
    return {"wall": wall, "rss": s.peak, "cpu": sum(s.cpu.values()), "stdout": out or ""}


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--masters", default="local[2]", help="comma-separated Spark masters")
    ap.add_argument("--output-format", choices=("parquet", "json"), default="parquet")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kafkalog-bench-fleet"))
    ap.add_argument("--dedupe", action="store_true", help="also export with --dedupe-replicas")
    ap.add_argument("--no-recipe", action="store_true", help="leave out the mapInArrow recipe")
    args = ap.parse_args()
    data = args.dir / "fleet"
    make(data, args.brokers, args.partitions, args.records)
    logs = list(data.rglob("*.log"))
    size = sum(f.stat().st_size for f in logs)
    n = args.records
    print(f"fleet: {args.brokers} log directories x {args.partitions} partitions, {n:,} records, "
          f"{size / 1e6:.0f} MB in {len(logs)} segments (all codecs); {os.cpu_count()} cores")
    kafkalog = [sys.executable, "-m", "kafkalog_cli"]
    rows = []
    d = run(kafkalog + ["dump-log", "--format", "json", "--deep-iteration", "--print-data-log", str(data)], False)
    rows.append(("dump-log --format json --deep-iteration --print-data-log", d, None))
    d2 = run(kafkalog + ["dump-log", "--format", "json", "--deep-iteration", str(data)], False)
    rows.append(("dump-log --format json --deep-iteration", d2, None))
    exports = []
    variants = [(m, []) for m in args.masters.split(",")]
    if args.dedupe:
        variants.append((args.masters.split(",")[0], ["--dedupe-replicas"]))
    for master, extra in variants:
        out = args.dir / "out"
        shutil.rmtree(out, ignore_errors=True)
        with cluster(master, args.dir) as (url, conf):
            r = run(kafkalog + ["export", str(data), "--master", url, "--output-format", args.output_format,
                                "--output", str(out), "--format", "json", *conf, *extra], True)
        summary = json.loads(r["stdout"].splitlines()[0])
        assert summary["rows"] == n, summary
        assert {e["path"] for e in summary["executors"]} == {"native"}, summary["executors"]
        label = f"export --master {master} ({args.output_format}{' ' + ' '.join(extra) if extra else ''})"
        rows.append((label, r, summary))
        exports.append((label, r, summary))
        shutil.rmtree(out, ignore_errors=True)
    if not args.no_recipe:
        master = args.masters.split(",")[0]
        r = run([sys.executable, "-c", RECIPE, str(data), master], True)
        summary = json.loads(r["stdout"].splitlines()[-1])
        rows.append((f"mapInArrow recipe, --master {master} (noop sink)", r, summary))
    print(f"\n{'':58} {'wall s':>7} {'rows/s':>10} {'CPU s':>6} {'peak RSS':>9} {'start s':>7} {'job s':>6} "
          f"{'job rows/s':>10}")
    for label, r, s in rows:
        extra = ""
        if s is not None:
            extra = f" {s['startup_seconds']:7.1f} {s['job_seconds']:6.2f} {n / s['job_seconds']:10,.0f}"
        print(f"{label:58} {r['wall']:7.2f} {n / r['wall']:10,.0f} {r['cpu']:6.1f} {r['rss'] / 2**20:7.0f} MB{extra}")
    base = d["wall"]
    print()
    recipe = next((s for label, _r, s in rows if label.startswith("mapInArrow")), None)
    for label, r, s in exports:
        line = (f"{label}: job {base / s['job_seconds']:.2f}x one dump-log JSON process ({base:.2f} s), whole "
                f"command {base / r['wall']:.2f}x; job rows/s {n / s['job_seconds'] / RECIPE_ROWS_PER_S:.0%} of the "
                f"findings' recipe figure {RECIPE_ROWS_PER_S:,}")
        if recipe is not None:
            line += f", {recipe['job_seconds'] / s['job_seconds']:.0%} of the recipe measured here"
        master = label.split("--master ", 1)[1].split(" ", 1)[0]
        print(line + f"; job rows/s per core {n / s['job_seconds'] / cores_of(master):,.0f}; peak RSS of the "
              f"process tree {r['rss'] / 2**30:.2f} GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
