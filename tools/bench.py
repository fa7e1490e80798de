#!/usr/bin/env python3
"""Read-throughput benchmark: kafkalog's readers side by side with other Python Kafka readers, one run.

    python tools/bench.py [--mb 64] [--codec none|gzip|lz4|zstd|snappy] [--keep DIR]

Generates one segment of about --mb MiB with kafkalog's writer (batches of 50 records, 100-byte values,
a header each), then times, on the same bytes:
  * kafkalog batch walk + CRC-32C (what recovery and `verify --shallow` do)
  * kafkalog record iteration (what `dump-log --deep-iteration` decodes)
  * kafkalog `dump-log --format json --deep-iteration` end to end (subprocess, output to /dev/null)
  * kafka-python's MemoryRecords record iteration
  * aiokafka's C record reader, when aiokafka is installed
Prints MB/s and records/s for each. Not a test: numbers depend on the machine.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RecordSpec, build_batch

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def make_segment(path: Path, mb: int, codec: int) -> tuple[int, int]:
    """One batch of 50 records built with the schema, repeated with patched base offsets (the base offset
    is outside the CRC), plus offset and time indexes built with Kafka's rule: fast even for 1 GiB."""
    import struct

    from kafkalog_cli.engine.index_rules import IndexBuilder
    from kafkalog_formats.offset_index import build_offset_index
    from kafkalog_formats.time_index import build_time_index
    value = bytes(range(100))
    ts = 1700000000000
    specs = [RecordSpec(i, ts + i, f"key-{i:06d}".encode(), value, ((b"h", b"v"),)) for i in range(50)]
    template = bytearray(build_batch(0, specs, codec=codec))
    index = IndexBuilder(0)
    records, size, offset = 0, 0, 0
    with open(path, "wb", buffering=1 << 20) as f:
        while size < mb * 1024 * 1024:
            struct.pack_into(">q", template, 0, offset)
            f.write(template)
            index.add(size, offset + 49, ts + 49)
            size += len(template)
            offset += 50
            records += 50
    index.finish()
    path.with_suffix(".index").write_bytes(build_offset_index(index.offset_entries, 0))
    path.with_suffix(".timeindex").write_bytes(build_time_index(index.time_entries, 0))
    return size, records


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--codec", choices=CODECS, default="none")
    ap.add_argument("--keep", type=Path, help="write the segment here and keep it")
    ap.add_argument("--verify", action="store_true",
                    help="time `kafkalog verify` (deep and --shallow) instead of the readers, e.g. --mb 1024")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp())
    tmp.mkdir(parents=True, exist_ok=True)
    seg = tmp / "00000000000000000000.log"
    size, nrec = make_segment(seg, args.mb, CODECS[args.codec])
    mib = size / 1e6
    rows = []
    if args.verify:
        for label, extra in (("kafkalog verify (deep: records decoded)", []),
                             ("kafkalog verify --shallow (framing + CRC)", ["--shallow"])):
            def run(extra=extra):
                with open(os.devnull, "w") as out:
                    subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify", *extra, str(tmp)],
                                   stdout=out, check=False)
            rows.append((label, timed(run, 1)))
        _print(rows, size, nrec, args.codec, mib)
        return 0
    data = seg.read_bytes()

    def walk_crc():
        n = 0
        for b in BatchReader(data):
            n += b.is_valid()
        assert n

    def records():
        n = 0
        for b in BatchReader(data):
            for _r in b.records():
                n += 1
        assert n == nrec

    rows.append(("kafkalog batch walk + CRC-32C", timed(walk_crc)))
    rows.append(("kafkalog record iteration", timed(records)))

    def dump_json():
        with open(os.devnull, "w") as out:
            subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump-log", "--format", "json",
                            "--deep-iteration", str(seg)], stdout=out, check=False)
    rows.append(("kafkalog dump-log --format json --deep-iteration", timed(dump_json, 1)))

    try:
        from kafka.record.memory_records import MemoryRecords

        def kafka_python():
            mr = MemoryRecords(data)
            n = 0
            while (batch := mr.next_batch()) is not None:
                for _r in batch:
                    n += 1
            assert n == nrec
        rows.append(("kafka-python MemoryRecords", timed(kafka_python, 1)))
    except ImportError:
        rows.append(("kafka-python (not installed)", None))
    try:
        from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords

        def aiokafka():
            mr = AioMemoryRecords(data)
            n = 0
            while (batch := mr.next_batch()) is not None:
                for _r in batch:
                    n += 1
            assert n == nrec
        rows.append(("aiokafka C reader", timed(aiokafka)))
    except ImportError:
        rows.append(("aiokafka (not installed)", None))

    _print(rows, size, nrec, args.codec, mib)
    return 0


def _print(rows, size, nrec, codec, mib) -> None:
    print(f"segment: {size / 2**20:.1f} MiB, {nrec} records, codec {codec}")
    print(f"{'reader':52} {'MB/s':>9} {'records/s':>12}")
    for name, secs in rows:
        if secs is None:
            print(f"{name:52} {'-':>9} {'-':>12}")
        else:
            print(f"{name:52} {mib / secs:9.1f} {nrec / secs:12.0f}")


if __name__ == "__main__":
    sys.exit(main())
