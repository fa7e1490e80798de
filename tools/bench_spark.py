#!/usr/bin/env python3
"""Spark export throughput on 1, 2 and all cores, next to single-process dump-log. Not a test.

    python tools/bench_spark.py [--mb 256] [--partitions 4] [--segment-mb 64] [--codec none|lz4|zstd|...]
                                [--format parquet|json] [--keep DIR]

Generates a log directory with kafkalog's own writer (--partitions partitions, segments of
--segment-mb MiB, batches of 50 records with a 16-byte key, a 100-byte value and one header, indexed every
4 KiB like a broker), then times, on the same files:
  * ``kafkalog dump-log --format json --deep-iteration --print-data-log`` (one process, output to /dev/null)
  * ``kafkalog export --master local[1]``, ``local[2]``, ``local[*]`` (a fresh process each)
Prints records/s for each, from the wall time of the whole command and, for export, of the Spark job
alone (the JVM start-up, about 10 s here, is in the first number only). Numbers depend on the machine
and on what else runs on it.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkalog_formats.record_batch import RecordSpec, build_batch  # noqa: E402

from kafkalog_cli.repair.log_writer import PartitionWriter  # noqa: E402

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1700000000000


def make_logdir(root: Path, mb: int, partitions: int, segment_mb: int, codec: int) -> int:
    """Batches built once with the schema and repeated with patched base offsets (outside the CRC)."""
    specs = [RecordSpec(i, T0 + i, f"key-{i:012d}".encode(), bytes(range(100)), ((b"trace", b"abcd"),))
             for i in range(50)]
    template = bytearray(build_batch(0, specs, codec=codec))
    per_partition = mb * 1024 * 1024 // partitions
    records = 0
    for p in range(partitions):
        w = PartitionWriter(root / f"bench-{p}", segment_bytes=segment_mb * 1024 * 1024, index_interval_bytes=4096)
        size = offset = 0
        while size < per_partition:
            struct.pack_into(">q", template, 0, offset)
            w.append(bytes(template))
            offset += 50
            size += len(template)
        w.close()
        records += offset
    (root / "meta.properties").write_text("version=1\nbroker.id=0\ncluster.id=bench\n")
    return records


def timed(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE if stdout is None else stdout, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return elapsed, r.stdout or ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256, help="total segment data (MiB)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--segment-mb", type=int, default=64)
    ap.add_argument("--codec", choices=CODECS, default="none")
    ap.add_argument("--format", choices=("parquet", "json"), default="parquet")
    ap.add_argument("--keep", type=Path, help="generate the data here and keep it")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kafkalog-bench-spark-"))
    data = args.keep or tmp / "kafka-logs"
    data.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    n = make_logdir(data, args.mb, args.partitions, args.segment_mb, CODECS[args.codec])
    size = sum(f.stat().st_size for f in data.rglob("*.log"))
    print(f"data: {n:,} records, {size / 1e6:.0f} MB in {len(list(data.rglob('*.log')))} segments "
          f"({args.codec}), generated in {time.perf_counter() - t:.1f} s; {os.cpu_count()} cores")
    kafkalog = [sys.executable, "-m", "kafkalog_cli"]
    rows = []
    wall, _ = timed(kafkalog + ["dump-log", "--format", "json", "--deep-iteration", "--print-data-log", str(data)])
    rows.append(("dump-log --format json --print-data-log (1 process)", wall, None))
    for master in ("local[1]", "local[2]", "local[*]"):
        out = tmp / f"out-{master.strip('local[]').replace('*', 'all')}"
        wall, stdout = timed(kafkalog + ["export", str(data), "--master", master, "--format", args.format,
                                         "--output", str(out), "--json"], stdout=None)
        summary = json.loads(stdout.splitlines()[-1])
        assert summary["rows"] == n, summary
        rows.append((f"export --master {master} ({args.format})", wall, summary["seconds"]))
        shutil.rmtree(out, ignore_errors=True)
    print(f"{'':52} {'wall s':>8} {'records/s':>11} {'job s':>7} {'records/s':>11}")
    for label, wall, job in rows:
        job_cols = f"{job:7.1f} {n / job:11,.0f}" if job else ""
        print(f"{label:52} {wall:8.1f} {n / wall:11,.0f} {job_cols}")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
