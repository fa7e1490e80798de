#!/usr/bin/env python3
"""Benchmarks (not tests): kafkalog's readers and commands next to aiokafka's C reader and kafka-python.

    python tools/bench.py [--mb 256] [--big-mb 1024] [--repeat 3] [--dir /tmp/kafkalog-bench] [--quick]
                          [--only records,compressed,shallow,shapes,big,lookup|kafka] [--pure]

Generates (once, into --dir; reused by later runs) with kafkalog's own writer:
  * records:    one segment of --mb MiB, batches of 50 records (10-byte key, 100-byte value, one header),
                offsets and timestamps increasing, indexes built with Kafka's rule;
  * compressed: the same records in lz4 and zstd batches;
  * shallow:    --big-mb MiB of one-record batches (about 5.8 M batches per GiB);
  * big:        a --big-mb MiB segment of 50-record batches (peak RSS);
  * lookup:     a --big-mb MiB partition of 65 segments with indexes.
Then measures, interleaved (every benchmark once per round, --repeat rounds) and reports the median CPU
time (user + system, of the child process for commands), the rate and the ratio to aiokafka's C reader
iterating every record of the same segment:
  * aiokafka's C reader iterating every record; kafka-python's; kafkalog's library (columns from the native
    scan, Record objects from ``records()``, the pure ``iter_records``);
  * ``dump-log --deep-iteration --print-data-log`` text and ``--format json`` to /dev/null, ``verify`` (deep),
    ``compact --force`` on a copy of the partition (the copy is not timed); with --pure also the same
    commands under KAFKALOG_PURE_PYTHON=1;
  * compressed: decompression alone (``codecs.decompress`` of every batch) and the same readers/commands;
  * shallow: aiokafka's batch walk + CRC and ``verify --shallow`` (CPU, peak RSS), and both libraries' record
    iterators on these one-record batches;
  * shapes: both record iterators on 16 KiB batches (96 records each; the Record iterator against aiokafka
    on every batch shape: 50-record, one-record, 16 KiB, lz4 and zstd batches);
  * big: peak RSS of dump-log (text, JSON), verify and compact on the 1 GiB segment;
  * lookup: ``lookup-offset`` wall time (whole process, start-up included) against a hand-written index
    bisect + header walk, and ``kafkalog --help``.
aiokafka and kafka-python are optional (``pip install -e '.[bench]'``); missing ones are left out.

``--only kafka`` runs tools/bench_kafka.py instead (--big-mb, --repeat passed on): ``dump-log`` against Kafka's
own DumpLogSegments (cold and warm JVM) on a segment a real broker wrote.
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
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

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000
MiB = 1 << 20


# --- data --------------------------------------------------------------------------------------------

def make_segment(path: Path, mb: float, codec: int = 0, records_per_batch: int = 50, value_size: int = 100,
                 base_offset: int = 0, records_total: int | None = None) -> tuple[int, int]:
    """A segment of about ``mb`` MiB: one batch built with the schema, repeated with patched base offset
    and timestamps (CRC recomputed), plus offset and time indexes built with Kafka's rule."""
    from crc32c import crc32c

    from kafkalog_cli.engine.index_rules import IndexBuilder
    from kafkalog_formats.offset_index import build_offset_index
    from kafkalog_formats.time_index import build_time_index
    value = bytes(range(value_size % 256)) * (value_size // 256) + bytes(range(value_size % 256))
    value = value[:value_size]
    n = records_per_batch
    specs = [RecordSpec(i, T0 + i, f"key-{i:06d}".encode(), value, ((b"h", b"v"),)) for i in range(n)]
    template = bytearray(build_batch(0, specs, codec=codec))
    index = IndexBuilder(base_offset)
    records, size, offset, ts = 0, 0, base_offset, T0
    pack_q = struct.Struct(">q").pack_into
    with open(path, "wb", buffering=1 << 22) as f:
        while (size < mb * MiB) if records_total is None else (records < records_total):
            pack_q(template, 0, offset)
            pack_q(template, 27, ts)
            pack_q(template, 35, ts + n - 1)
            struct.pack_into(">I", template, 17, crc32c(memoryview(template)[21:]))
            f.write(template)
            index.add(size, offset + n - 1, ts + n - 1)
            size += len(template)
            offset += n
            ts += n
            records += n
    index.finish()
    path.with_suffix(".index").write_bytes(build_offset_index(index.offset_entries, base_offset))
    path.with_suffix(".timeindex").write_bytes(build_time_index(index.time_entries, base_offset))
    return size, records


def make_partition(d: Path, mb: float, segments: int = 1, **kw) -> tuple[int, int]:
    """A partition directory of ``segments`` segments of ``mb / segments`` MiB each, and an empty active
    segment after them (so compact has something to clean)."""
    d.mkdir(parents=True, exist_ok=True)
    size = records = 0
    for _ in range(segments):
        s, r = make_segment(d / f"{records:020d}.log", mb / segments, base_offset=records, **kw)
        size += s
        records += r
    (d / f"{records:020d}.log").write_bytes(b"")
    (d / f"{records:020d}.index").write_bytes(b"")
    (d / f"{records:020d}.timeindex").write_bytes(b"")
    return size, records


def ensure(d: Path, name: str, mb: float, **kw) -> tuple[Path, int, int]:
    """The partition ``d/name`` (generated unless a previous run left it), its size and record count."""
    p = d / name / "bench-0"
    stamp = d / name / "done"
    if stamp.exists():
        size, records = map(int, stamp.read_text().split())
        return p, size, records
    shutil.rmtree(d / name, ignore_errors=True)
    t = time.perf_counter()
    size, records = make_partition(p, mb, **kw)
    stamp.write_text(f"{size} {records}")
    print(f"  generated {name}: {size / MiB:.0f} MiB, {records} records in {time.perf_counter() - t:.0f} s",
          file=sys.stderr)
    return p, size, records


# --- measuring ---------------------------------------------------------------------------------------

class Result:
    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.wall: list[float] = []
        self.rss: list[int] = []

    def med(self, what: str = "cpu") -> float:
        return statistics.median(getattr(self, what))


def in_process(fn):
    def run(res: Result) -> None:
        c, w = time.process_time(), time.perf_counter()
        fn()
        res.cpu.append(time.process_time() - c)
        res.wall.append(time.perf_counter() - w)
    return run


# Children write bytecode caches as an installed kafkalog would (this machine sets PYTHONDONTWRITEBYTECODE).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
PURE_ENV = dict(ENV, KAFKALOG_PURE_PYTHON="1")

# Peak RSS of a command, from the kernel's high-water mark of its own address space (VmHWM: anonymous
# and file-backed resident pages, mapped segment pages included). wait4's ru_maxrss would also count
# the pages the child shared with this process between fork and exec.
RSS_WRAPPER = """
import atexit, os, runpy, sys
out = os.environ.pop("KAFKALOG_BENCH_RSS")
def report():
    with open("/proc/self/status") as f:
        kb = next(line.split()[1] for line in f if line.startswith("VmHWM"))
    with open(out, "w") as o:
        o.write(kb)
atexit.register(report)
sys.argv[0] = "kafkalog"
runpy.run_module("kafkalog_cli", run_name="__main__", alter_sys=True)
"""


def command(args: list, env: dict | None = None, prepare=None, rss: bool = True):
    """A subprocess: its own CPU time (wait4), peak RSS (VmHWM, for kafkalog commands) and wall time."""
    def run(res: Result) -> None:
        if prepare:
            prepare()
        e = dict(env or ENV)
        argv = list(map(str, args))
        rss_file = None
        if rss and argv[1:3] == ["-m", "kafkalog_cli"]:
            rss_file = tempfile.NamedTemporaryFile(prefix="kafkalog-bench-rss", delete=False).name
            e["KAFKALOG_BENCH_RSS"] = rss_file
            argv = [argv[0], "-c", RSS_WRAPPER, *argv[3:]]
        with open(os.devnull, "w") as out:
            w = time.perf_counter()
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=e)
            _pid, status, ru = os.wait4(p.pid, 0)
            res.wall.append(time.perf_counter() - w)
        res.cpu.append(ru.ru_utime + ru.ru_stime)
        if rss_file:
            with open(rss_file) as f:
                res.rss.append(int(f.read()) * 1024)
            os.unlink(rss_file)
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise RuntimeError(f"{' '.join(argv)} exited with {os.waitstatus_to_exitcode(status)}")
    return run


def kafkalog(*args) -> list:
    return [sys.executable, "-m", "kafkalog_cli", *map(str, args)]


# --- readers -----------------------------------------------------------------------------------------

def read(path: Path) -> bytes:
    return path.read_bytes()


def aiokafka_records(data: bytes, n: int):
    from aiokafka.record.memory_records import MemoryRecords

    def go():
        mr = MemoryRecords(data)
        k = 0
        while (b := mr.next_batch()) is not None:
            for _r in b:
                k += 1
        assert k == n, (k, n)
    return go


def aiokafka_walk_crc(data: bytes):
    from aiokafka.record.memory_records import MemoryRecords

    def go():
        mr = MemoryRecords(data)
        while (b := mr.next_batch()) is not None:
            assert b.validate_crc()
    return go


def kafka_python_records(data: bytes, n: int):
    from kafka.record.memory_records import MemoryRecords

    def go():
        mr = MemoryRecords(data)
        k = 0
        while (b := mr.next_batch()) is not None:
            for _r in b:
                k += 1
        assert k == n
    return go


def kafkalog_columns(data: bytes, n: int):
    """The native scan over windows of 64 Ki records (columns; compressed batches through codecs)."""
    from kafkalog_formats import codecs
    from kafkalog_formats import columns as C
    dec = codecs.V2Decompressor(64 * MiB)

    def go():
        pos = k = 0
        while True:
            s = C.scan(data, pos, None, decompress=dec, max_records=65536)
            k += s.n_rows
            if s.reason != C.LIMIT:
                break
            pos = s.stop
        assert k == n, (k, n)
    return go


def kafkalog_records(data: bytes, n: int):
    """``BatchReader`` + ``records()``: Record objects (decoded in C when the native path is active)."""
    from kafkalog_formats.message_set import BatchReader

    def go():
        k = 0
        for b in BatchReader(data):
            for _r in b.records():
                k += 1
        assert k == n
    return go


def kafkalog_pure(data: bytes, n: int):
    """The pure-Python reference decoder (``iter_records``) over every batch."""
    from kafkalog_formats import codecs
    from kafkalog_formats.message_set import BatchReader
    from kafkalog_formats.record_batch import RECORD_BATCH_OVERHEAD, iter_records

    def go():
        k = 0
        for b in BatchReader(data):
            raw = memoryview(data)[b.position + RECORD_BATCH_OVERHEAD:b.position + b.size]
            sect = codecs.decompress(b.codec, raw, magic=2) if b.codec else raw
            for _r in iter_records(sect, b.count, b.base_offset, b.base_timestamp, b.base_sequence):
                k += 1
        assert k == n
    return go


def decompress_only(data: bytes):
    from kafkalog_formats import codecs
    from kafkalog_formats.message_set import BatchReader
    from kafkalog_formats.record_batch import RECORD_BATCH_OVERHEAD

    def go():
        for b in BatchReader(data):
            codecs.decompress(b.codec, memoryview(data)[b.position + RECORD_BATCH_OVERHEAD:b.position + b.size],
                              magic=2, max_output=64 * MiB)
    return go


HAND_LOOKUP = r'''
import bisect, mmap, os, struct, sys
d, target = sys.argv[1], int(sys.argv[2])
bases = sorted(int(n[:20]) for n in os.listdir(d) if n.endswith(".log"))
base = bases[bisect.bisect_right(bases, target) - 1]
with open(os.path.join(d, "%020d.index" % base), "rb") as f:
    idx = f.read()
n = len(idx) // 8
while n > 1 and struct.unpack_from(">i", idx, (n - 1) * 8)[0] == 0:
    n -= 1
lo, hi, pos = 0, n - 1, 0
while lo <= hi:
    mid = (lo + hi) // 2
    rel, p = struct.unpack_from(">ii", idx, mid * 8)
    if base + rel <= target:
        pos, lo = p, mid + 1
    else:
        hi = mid - 1
with open(os.path.join(d, "%020d.log" % base), "rb") as f:
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
while pos + 61 <= len(mm):
    first, length = struct.unpack_from(">qi", mm, pos)
    last = first + struct.unpack_from(">i", mm, pos + 23)[0]
    if last >= target:
        print("offset", target, "in batch", first, last, "at position", pos)
        break
    pos += 12 + length
'''


# --- the run -----------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=256, help="size of the records segment (MiB)")
    ap.add_argument("--big-mb", type=float, default=1024, help="size of the shallow, big and lookup data (MiB)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-bench")
    ap.add_argument("--only", default="records,compressed,shallow,shapes,big,lookup")
    ap.add_argument("--pure", action="store_true", help="also time the commands on the pure-Python path")
    ap.add_argument("--quick", action="store_true", help="--mb 32 --big-mb 128 --repeat 1 (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.mb, args.big_mb, args.repeat = 32, 128, 1
    only = set(args.only.split(","))
    if "kafka" in only:
        return subprocess.call([sys.executable, str(ROOT / "tools" / "bench_kafka.py"), "--mb", f"{args.big_mb:.0f}",
                                "--repeat", str(args.repeat)])
    d = args.dir
    d.mkdir(parents=True, exist_ok=True)
    from kafkalog_formats import native
    print(f"kafkalog {native.describe()}; data in {d}", file=sys.stderr)
    have_aio = _importable("aiokafka.record.memory_records")
    have_kp = _importable("kafka.record.memory_records")

    benches: dict[str, tuple] = {}      # name -> (runner, bytes, records, group)
    groups: dict[str, tuple] = {}       # group -> (bytes, records, baseline name)
    if "records" in only:
        p, size, n = ensure(d, f"records-{args.mb:g}", args.mb)
        seg = next(p.glob("00000000000000000000.log"))
        data = read(seg)
        groups["records"] = (size, n, "aiokafka C reader, every record")
        g = ("records", size, n)
        if have_aio:
            benches["aiokafka C reader, every record"] = (in_process(aiokafka_records(data, n)), *g)
        if have_kp:
            benches["kafka-python, every record"] = (in_process(kafka_python_records(data, n)), *g)
        if native.ext is not None:
            benches["kafkalog library: columns (native scan)"] = (in_process(kafkalog_columns(data, n)), *g)
        benches["kafkalog library: records() " + ("(native)" if native.ext else "(pure)")] = (
            in_process(kafkalog_records(data, n)), *g)
        benches["kafkalog library: iter_records (pure)"] = (in_process(kafkalog_pure(data, n)), *g)
        for label, extra in (("text", []), ("json", ["--format", "json"])):
            cmd = kafkalog("dump-log", "--deep-iteration", "--print-data-log", *extra, seg)
            benches[f"dump-log --deep-iteration --print-data-log {label}"] = (command(cmd), *g)
            if args.pure:
                benches[f"dump-log ... {label} (pure)"] = (command(cmd, PURE_ENV), *g)
        benches["verify (deep)"] = (command(kafkalog("verify", p)), *g)
        if args.pure:
            benches["verify (deep, pure)"] = (command(kafkalog("verify", p), PURE_ENV), *g)
        work = d / "compact-work"
        benches["compact --force (offset map + cleaning + write)"] = (
            command(kafkalog("compact", "--force", "--config", "cleanup.policy=compact", "--high-watermark", n,
                                     "--now", T0 + 10 * n, work / "bench-0"),
                    prepare=functools.partial(_copy_partition, p, work / "bench-0")), *g)
    if "compressed" in only:
        for codec in ("lz4", "zstd"):
            _p, _size, same_n = ensure(d, f"records-{args.mb:g}", args.mb)
            p, size, n = ensure(d, f"records-{codec}-{args.mb:g}", args.mb, codec=CODECS[codec], records_total=same_n)
            seg = next(p.glob("00000000000000000000.log"))
            data = read(seg)
            gname = f"records ({codec} batches)"
            groups[gname] = (size, n, f"aiokafka C reader, every record ({codec})")
            g = (gname, size, n)
            if have_aio:
                benches[f"aiokafka C reader, every record ({codec})"] = (in_process(aiokafka_records(data, n)), *g)
            benches[f"decompression alone ({codec})"] = (in_process(decompress_only(data)), *g)
            if native.ext is not None:
                benches[f"kafkalog library: columns ({codec})"] = (in_process(kafkalog_columns(data, n)), *g)
            benches[f"kafkalog library: records() ({codec})"] = (in_process(kafkalog_records(data, n)), *g)
            benches[f"dump-log ... json ({codec})"] = (
                command(kafkalog("dump-log", "--deep-iteration", "--print-data-log", "--format", "json", seg)), *g)
            benches[f"verify (deep, {codec})"] = (command(kafkalog("verify", p)), *g)
    if "shallow" in only:
        p, size, n = ensure(d, f"shallow-{args.big_mb:g}", args.big_mb, records_per_batch=1, value_size=100)
        seg = next(p.glob("00000000000000000000.log"))
        groups["one-record batches"] = (size, n, "aiokafka batch walk + CRC")
        g = ("one-record batches", size, n)
        if have_aio:
            def aio_walk(seg=seg):
                data = read(seg)
                c = time.process_time()
                aiokafka_walk_crc(data)()
                return time.process_time() - c
            benches["aiokafka batch walk + CRC"] = (_timed_fn(aio_walk), *g)

            def aio_records(seg=seg, n=n):
                data = read(seg)
                c = time.process_time()
                aiokafka_records(data, n)()
                return time.process_time() - c
            benches["aiokafka C reader, every record (one-record batches)"] = (_timed_fn(aio_records), *g)

        def kl_records(seg=seg, n=n):
            data = read(seg)
            c = time.process_time()
            kafkalog_records(data, n)()
            return time.process_time() - c
        benches["kafkalog library: records() (one-record batches)"] = (_timed_fn(kl_records), *g)
        benches["verify --shallow"] = (command(kafkalog("verify", "--shallow", seg)), *g)
    if "shapes" in only:
        # records per batch of a 16 KiB producer batch (batch.size's default) of these 160-byte records
        p, size, n = ensure(d, f"records16k-{args.mb:g}", args.mb, records_per_batch=96)
        data = read(next(p.glob("00000000000000000000.log")))
        groups["16 KiB batches"] = (size, n, "aiokafka C reader, every record (16 KiB batches)")
        g = ("16 KiB batches", size, n)
        if have_aio:
            benches["aiokafka C reader, every record (16 KiB batches)"] = (in_process(aiokafka_records(data, n)), *g)
        benches["kafkalog library: records() (16 KiB batches)"] = (in_process(kafkalog_records(data, n)), *g)
    if "big" in only:
        p, size, n = ensure(d, f"big-{args.big_mb:g}", args.big_mb)
        seg = next(p.glob("00000000000000000000.log"))
        groups["big segment (peak RSS)"] = (size, n, None)
        g = ("big segment (peak RSS)", size, n)
        for label, extra in (("text", []), ("json", ["--format", "json"])):
            benches[f"dump-log ... {label} ({args.big_mb:g} MiB)"] = (
                command(kafkalog("dump-log", "--deep-iteration", "--print-data-log", *extra, seg)), *g)
        benches[f"verify ({args.big_mb:g} MiB)"] = (command(kafkalog("verify", seg)), *g)
        work = d / "compact-big-work"
        benches[f"compact --force ({args.big_mb:g} MiB)"] = (
            command(kafkalog("compact", "--force", "--config", "cleanup.policy=compact", "--high-watermark", n,
                                     "--now", T0 + 10 * n, work / "bench-0"),
                    prepare=functools.partial(_copy_partition, p, work / "bench-0")), *g)
    if "lookup" in only:
        p, size, n = ensure(d, f"lookup-{args.big_mb:g}", args.big_mb, segments=65)
        target = n * 2 // 3 + 17
        groups["lookup (wall, whole process)"] = (size, n, "hand-written index bisect + header walk")
        g = ("lookup (wall, whole process)", size, n)
        script = d / "hand_lookup.py"
        script.write_text(HAND_LOOKUP)
        benches["hand-written index bisect + header walk"] = (command([sys.executable, script, p, str(target)]), *g)
        benches["kafkalog lookup-offset"] = (command(kafkalog("lookup-offset", p, target), rss=False), *g)
        benches["kafkalog --help"] = (command(kafkalog("--help"), rss=False), *g)

    results = {name: Result() for name in benches}
    for r in range(args.repeat):
        print(f"  round {r + 1}/{args.repeat}", file=sys.stderr)
        for name, (run, *_rest) in benches.items():
            run(results[name])
    _report(benches, results, groups, args)
    _targets(results, args)
    return 0


def _timed_fn(fn):
    def run(res: Result) -> None:
        res.cpu.append(fn())
        res.wall.append(res.cpu[-1])
    return run


def _copy_partition(src: Path, dst: Path) -> None:
    shutil.rmtree(dst.parent, ignore_errors=True)
    dst.parent.mkdir(parents=True)
    shutil.copytree(src, dst)
    for cp in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (dst.parent / cp).write_text("0\n0\n")


def _importable(name: str) -> bool:
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _report(benches, results, groups, args) -> None:
    print(f"\n`python tools/bench.py {' '.join(sys.argv[1:])}`: CPU-time medians of {args.repeat} interleaved rounds"
          " (lookup and --help: wall time)\n")
    for gname, (size, n, baseline) in groups.items():
        wall = gname.startswith("lookup")
        print(f"| {gname}: {size / 1e6:.0f} MB, {n} records | MB/s | records/s | "
              f"{'s (wall)' if wall else 's (CPU)'} | peak RSS MiB | ratio |")
        print("|---|---|---|---|---|---|")
        base = results[baseline].med("wall" if wall else "cpu") if baseline in results else None
        for name, (_run, group, _s, _n) in benches.items():
            if group != gname:
                continue
            res = results[name]
            t = res.med("wall" if wall else "cpu")
            rss = f"{statistics.median(res.rss) / MiB:.0f}" if res.rss else ""
            if wall:
                ratio = f"{t / base:.2f}x the time" if base else ""
                print(f"| {name} |  |  | {t:.3f} | {rss} | {ratio} |")
            else:
                ratio = f"{base / t:.2f}x" if base else ""
                print(f"| {name} | {size / 1e6 / t:.0f} | {n / t / 1e3:.0f} k | {t:.2f} | {rss} | {ratio} |")
        print()


def _targets(results: dict, args) -> None:
    """The issue's targets, from this run's medians (ratios: CPU time of the reference / ours)."""
    def t(name, what="cpu"):
        return results[name].med(what) if name in results and getattr(results[name], what) else None

    rows = []
    aio = t("aiokafka C reader, every record")

    def ratio(label, name, goal, ref=aio):
        ours = t(name)
        if ours and ref:
            rows.append((label, f"{ref / ours:.2f}x", goal, ref / ours >= goal))

    ratio("library deep iteration (columns) vs aiokafka", "kafkalog library: columns (native scan)", 1.0)
    ratio("library Record iterator vs aiokafka (50-record batches)", "kafkalog library: records() (native)", 1.0)
    for shape in ("one-record batches", "16 KiB batches", "lz4", "zstd"):
        ref = t(f"aiokafka C reader, every record ({shape})")
        ratio(f"library Record iterator vs aiokafka ({shape})", f"kafkalog library: records() ({shape})", 1.0, ref)
    ratio("dump-log deep JSON vs aiokafka", "dump-log --deep-iteration --print-data-log json", 0.5)
    ratio("dump-log deep text vs aiokafka", "dump-log --deep-iteration --print-data-log text", 0.5)
    ratio("verify deep vs aiokafka", "verify (deep)", 0.5)
    ratio("compact vs aiokafka decode pass", "compact --force (offset map + cleaning + write)", 0.5)
    for codec in ("lz4", "zstd"):
        dec = t(f"decompression alone ({codec})")
        for label, unc, comp in (("library columns", "kafkalog library: columns (native scan)",
                                  f"kafkalog library: columns ({codec})"),
                                 ("dump-log JSON", "dump-log --deep-iteration --print-data-log json",
                                  f"dump-log ... json ({codec})"),
                                 ("verify deep", "verify (deep)", f"verify (deep, {codec})")):
            if dec and t(unc) and t(comp):
                r = (dec + t(unc)) / t(comp)
                rows.append((f"{codec} {label} vs decompression + uncompressed", f"{r:.2f}x", 0.8, r >= 0.8))
    ratio("verify --shallow on one-record batches vs aiokafka walk + CRC", "verify --shallow", 1.0,
          t("aiokafka batch walk + CRC"))
    hand, look = t("hand-written index bisect + header walk", "wall"), t("kafkalog lookup-offset", "wall")
    if hand and look:
        rows.append(("lookup-offset wall vs hand-written (lower is better)", f"{look / hand:.2f}x the time", 1.2,
                     look / hand <= 1.2))
    if t("kafkalog --help", "wall"):
        h = t("kafkalog --help", "wall") * 1000
        rows.append(("kafkalog --help (ms, wall)", f"{h:.0f}", 150, h < 150))
    for name, res in results.items():
        if res.rss and f"{args.big_mb:g} MiB" in name:
            m = statistics.median(res.rss) / MiB
            rows.append((f"peak RSS MiB: {name}", f"{m:.0f}", 200, m < 200))
    print("| target | measured | goal | met |\n|---|---|---|---|")
    for label, measured, goal, met in rows:
        print(f"| {label} | {measured} | {goal} | {'yes' if met else 'NO'} |")


if __name__ == "__main__":
    sys.exit(main())
