#!/usr/bin/env python3
"""Benchmark of ``verify`` and ``recover --dry-run --force`` with ``-j1`` and ``-jN`` (partitions in worker
processes, ``engine.parallel``), on two log directories written by the tests' fleet writer:

  large     16 partitions of 20,000 records each (about 50 MiB of .log files, 13 segments a partition)
  many      10,000 partitions of 20 records each (one small segment a partition)

    python tools/bench_jobs.py                  # both, -j1 and -j2, 3 runs each (best kept)
    python tools/bench_jobs.py --only many --jobs 1,2,4 --runs 1

Each run is a fresh ``kafkalog`` process (start-up included); the directories are written once into
--work (default: a temporary directory) and reused when they are there. The wall time of each run is
printed with the CPU time it took (the process and its workers), then the best of the runs per command
and -j and the speed-up over -j1; ``describe`` (one process) runs once. Results depend on what else the
machine runs: the load average is printed beside each run; a wall time well above the CPU time divided
by the jobs means the run waited for a CPU.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = {"large": dict(partitions_per_broker=16, records_per_partition=20_000),
        "many": dict(partitions_per_broker=20, records_per_partition=20, segment_bytes=1 << 20)}
MANY = 10_000            # "many": its 20 written partitions copied until there are this many


def make(work: Path, name: str) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from fleet import make_fleet
    root = work / name
    logdir = root / "cluster-a-broker-0"
    if not logdir.is_dir():
        t0 = time.perf_counter()
        make_fleet(root, brokers=1, **SETS[name])
        if name == "many":            # the writer fsyncs every file: copy its partitions instead of writing 10,000
            import shutil
            written = sorted(p for p in logdir.iterdir() if p.is_dir())
            for i in range(MANY - len(written)):
                shutil.copytree(written[i % len(written)], logdir / f"copy-{i // 100}-{i % 100}")
        print(f"{name}: written in {time.perf_counter() - t0:.1f} s", flush=True)
    return logdir


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the run and its worker processes)."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()[-500:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=sorted(SETS), action="append")
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kafkalog-bench-jobs-"))
    jobs = [int(j) for j in args.jobs.split(",")]
    exe = [sys.executable, "-m", "kafkalog_cli"]
    print(f"cpus available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.2f}", flush=True)
    for name in args.only or sorted(SETS):
        logdir = make(work, name)
        size = sum(f.stat().st_size for f in logdir.rglob("*.log"))
        parts = sum(1 for p in logdir.iterdir() if p.is_dir())
        print(f"{name}: {parts} partitions, {size / 2**20:.1f} MiB of .log files", flush=True)
        wall, cpu = run([*exe, "describe", "--format", "json", str(logdir)])
        print(f"  {'describe':<26}    : {wall:.2f} s ({cpu:.1f} CPU-s)", flush=True)
        for label, base in (("verify", [*exe, "verify", "--format", "json"]),
                            ("recover --dry-run --force", [*exe, "recover", "--dry-run", "--force", "--format",
                                                           "json"])):
            best = {}
            for j in jobs:
                times = [run([*base, "-j", str(j), str(logdir)]) for _ in range(args.runs)]
                best[j] = min(t for t, _cpu in times)
                print(f"  {label:<26} -j{j}: " + ", ".join(f"{t:.2f} s ({cpu:.1f} CPU-s)" for t, cpu in times)
                      + f"; load average {os.getloadavg()[0]:.2f}", flush=True)
            for j in jobs[1:]:
                print(f"  {label:<26} -j{j} speed-up over -j{jobs[0]}: {best[jobs[0]] / best[j]:.2f}x "
                      f"({best[jobs[0]]:.2f} s -> {best[j]:.2f} s)", flush=True)
    print(f"directories kept in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
