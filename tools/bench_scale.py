#!/usr/bin/env python3
"""Scale benchmark (not a test): every command at Kafka's real sizes, and how it grows from 1x to 4x.

    python tools/bench_scale.py [--dir /tmp/kafkalog-scale] [--scale 1.0] [--only NAME,...] [--repeat 1]
                                [--quick]

Builds (once, into --dir; reused by later runs) with templates patched and re-checksummed (kafkalog's
own writer builds each template):
  * segments:    a partition of 10,000 segments (and of 2,500: the 1x point), two one-record batches
                 each, indexes as the broker leaves them after a clean roll;
  * partitions:  a log directory of 10,000 partitions (and 2,500), one segment each;
  * keys:        a compacted partition of 5 M distinct keys (and 1.25 M) in zstd batches of 50,000
                 records, for compact at Kafka's default log.cleaner.dedupe.buffer.size (128 MiB);
  * segment:     a 1 GiB segment of 50-record batches (and 256 MiB), for recover and verify;
  * offsets:     a 100 MiB __consumer_offsets segment of offset commits, one record a batch as the group
                 coordinator writes them (and 25 MiB), for the offsets decoder;
  * bounds:      issue 39's inputs, at one size (the fuzz harness's generators, tests/damage.py): a 42 MB
                 server.properties, a 74 MB delete-records offset file, a 75 MB --topic-configs file, a KRaft
                 metadata log of 2 M distinct topics, one valid batch of 2.1 M distinct keys (one duplicate:
                 compact rebuilds it), a sparse 4 GiB segment (Kafka refuses it: over 2 GiB) and a sparse
                 segment of 2 GiB - 1 (valid batches, then a hole); every command reading each, peak RSS
                 against the 400 MiB bound.
Then runs every command on each as a child process and reports wall time, CPU time (user + system, from
wait4), peak RSS (the child's VmHWM) and the most files it held open (its /proc/PID/fd, sampled every
10 ms), and for each command the growth of its time per input byte from the 1x to the 4x input
(target: at most 2). Targets checked at the end (issue 24): every peak RSS below 400 MiB; open files
bounded (the same at 1x and 4x); recover at least 0.5x verify's throughput on the same segment;
``dump-log --offsets-decoder`` at least 0.3x ``dump-log --print-data-log --format json``.

--scale shrinks every size (0.1: a quick look); --only runs some of the groups (segments, partitions,
keys, segment, offsets). Long: a full run builds about 4 GiB and takes some 20-40 minutes on two cores;
run it niced on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "tools", ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from bench import ENV, RSS_WRAPPER  # noqa: E402  (the child that reports its own peak RSS, as bench.py measures)
from damage import keyed_records  # noqa: E402  (one valid record per key, the fuzz harness's generator)

MiB = 1 << 20
T0 = 1_700_000_000_000
GROUPS = ("segments", "partitions", "keys", "segment", "offsets", "bounds")


# --- data --------------------------------------------------------------------------------------------

def _patched(template: bytes):
    """A function (buffer, position, base offset, timestamp) writing ``template`` there with those fields
    (base timestamp and max timestamp alike) and its CRC recomputed."""
    from crc32c import crc32c
    n = len(template)
    delta = struct.unpack_from(">i", template, 23)[0]
    ts_delta = struct.unpack_from(">q", template, 35)[0] - struct.unpack_from(">q", template, 27)[0]
    pack_q, pack_i = struct.Struct(">q").pack_into, struct.Struct(">I").pack_into

    def put(buf: bytearray, pos: int, base: int, ts: int) -> int:
        buf[pos:pos + n] = template
        pack_q(buf, pos, base)
        pack_q(buf, pos + 27, ts)
        pack_q(buf, pos + 35, ts + ts_delta)
        pack_i(buf, pos + 17, crc32c(memoryview(buf)[pos + 21:pos + n]))
        return base + delta + 1
    return put


def _indexes(seg: Path, base: int, batches: list[tuple[int, int, int]], interval: int = 4096) -> None:
    """``.index``/``.timeindex`` of a segment as the broker writes them (per-batch rule, trimmed)."""
    from kafkalog_cli.engine.index_rules import IndexBuilder
    from kafkalog_formats.offset_index import build_offset_index
    from kafkalog_formats.time_index import build_time_index
    b = IndexBuilder(base, interval)
    for pos, last, ts in batches:
        b.add(pos, last, ts)
    b.finish()
    seg.with_suffix(".index").write_bytes(build_offset_index(b.offset_entries, base))
    seg.with_suffix(".timeindex").write_bytes(build_time_index(b.time_entries, base))


def _logdir_files(root: Path, partitions: dict) -> None:
    """The checkpoints of a log directory after a clean shutdown (``partitions``: (topic, p) -> log end)."""
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        (root / name).write_text(build_offset_checkpoint(partitions))
    (root / "log-start-offset-checkpoint").write_text(build_offset_checkpoint({k: 0 for k in partitions}))
    (root / "meta.properties").write_text("version=0\nbroker.id=1\n")


def build_segments(root: Path, n: int) -> int:
    """A log directory with one partition of ``n`` segments of two one-record batches (and an active one)."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = root / "many-0"
    d.mkdir(parents=True)
    put = _patched(build_batch(0, [RecordSpec(0, T0, b"key-0000", b"v" * 100, ())]))
    off = 0
    for s in range(n + 1):
        buf, rows = bytearray(), []
        for _ in range(2 if s < n else 1):
            pos = len(buf)
            nxt = put(buf, pos, off, T0 + off)
            rows.append((pos, nxt - 1, T0 + off))
            off = nxt
        seg = d / f"{rows[0][1]:020d}.log"
        seg.write_bytes(buf)
        _indexes(seg, rows[0][1], rows)
    _logdir_files(root, {("many", 0): off})
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    return off


def build_partitions(root: Path, n: int) -> int:
    """A log directory of ``n`` partitions of topic ``t``, one segment of two batches each."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    put = _patched(build_batch(0, [RecordSpec(0, T0, b"key-0000", b"v" * 100, ())]))
    ends = {}
    for p in range(n):
        d = root / f"t-{p}"
        d.mkdir(parents=True)
        buf = bytearray()
        put(buf, 0, 0, T0)
        put(buf, len(buf), 1, T0 + 1)
        seg = d / f"{0:020d}.log"
        seg.write_bytes(buf)
        _indexes(seg, 0, [(0, 0, T0), (len(buf) // 2, 1, T0 + 1)])
        ends[("t", p)] = 2
    _logdir_files(root, ends)
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    return n


def build_keys(root: Path, n: int, per_batch: int = 50_000) -> int:
    """A partition of ``n`` distinct keys in zstd batches, then an active segment (a compact topic)."""
    from crc32c import crc32c

    from kafkalog_formats import codecs
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = root / "keys-0"
    d.mkdir(parents=True)
    value = b"v" * 40
    buf, rows, off = bytearray(), [], 0
    while off < n:
        k = min(per_batch, n - off)
        section = codecs.compress(codecs.ZSTD, keyed_records([b"key-%012d" % (off + i) for i in range(k)], value))
        head = struct.pack(">qiibIhiqqqhii", off, 49 + len(section), 0, 2, 0, codecs.ZSTD, k - 1, T0 + off,
                           T0 + off, -1, -1, -1, k)
        batch = bytearray(head + section)
        struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
        rows.append((len(buf), off + k - 1, T0 + off))
        buf += batch
        off += k
    seg = d / f"{0:020d}.log"
    seg.write_bytes(buf)
    _indexes(seg, 0, rows)
    tail = d / f"{off:020d}.log"
    tail.write_bytes(build_batch(off, [RecordSpec(0, T0 + off, b"tail", b"x", ())]))
    _indexes(tail, off, [(0, off, T0 + off)])
    _logdir_files(root, {("keys", 0): off + 1})
    (root / ".kafka_cleanshutdown").write_bytes(b"")
    return off + 1


def build_segment(root: Path, mb: float) -> int:
    """A partition holding one segment of ``mb`` MiB of 50-record batches (tools/bench.py's), recovered
    as after an unclean shutdown (no marker, recovery point 0)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from bench import make_segment
    d = root / "big-0"
    d.mkdir(parents=True)
    _size, records = make_segment(d / f"{0:020d}.log", mb)
    _logdir_files(root, {("big", 0): records})
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    (root / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("big", 0): 0}))
    return records


def build_offsets(root: Path, mb: float) -> int:
    """A ``__consumer_offsets`` segment of ``mb`` MiB of offset commits (key v1, value v3), one record a
    batch, 400 groups x 50 topics x 8 partitions, as the group coordinator writes them."""
    from kafkalog_formats import group_coordinator as gc
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = root / "__consumer_offsets-0"
    d.mkdir(parents=True)
    key = gc.build_key(1, {"group": "group-0000", "topic": "topic-000", "partition": 0})
    value = gc.build_value(1, {"offset": 0, "leaderEpoch": 0, "metadata": "", "commitTimestamp": T0}, 3)
    template = build_batch(0, [RecordSpec(0, T0, key, value, ())])
    from crc32c import crc32c
    size = len(template)
    # record: length, attributes, timestamp delta, offset delta, key length (1 byte each), key, value length,
    # value, headers; key v1: version, group (length + "group-NNNN"), topic (length + "topic-NNN"), partition
    key_at = 61 + 5
    group_at, topic_at, part_at = key_at + 2 + 2 + 6, key_at + 2 + 12 + 2 + 6, key_at + len(key) - 4
    value_at = key_at + len(key) + 1
    buf = bytearray(int(mb * MiB) + size)
    pos = off = 0
    pack_q, pack_i, pack_crc = struct.Struct(">q").pack_into, struct.Struct(">i").pack_into, struct.Struct(">I").pack_into
    while pos + size <= mb * MiB:
        buf[pos:pos + size] = template
        pack_q(buf, pos, off)
        pack_q(buf, pos + 27, T0 + off)
        pack_q(buf, pos + 35, T0 + off)
        buf[pos + group_at:pos + group_at + 4] = b"%04d" % (off % 400)
        buf[pos + topic_at:pos + topic_at + 3] = b"%03d" % (off // 400 % 50)
        pack_i(buf, pos + part_at, off // 20_000 % 8)
        pack_q(buf, pos + value_at + 2, off)                      # the committed offset
        pack_q(buf, pos + value_at + 2 + 8 + 4 + 2, T0 + off)     # commitTimestamp
        pack_crc(buf, pos + 17, crc32c(memoryview(buf)[pos + 21:pos + size]))
        pos += size
        off += 1
    del buf[pos:]
    seg = d / f"{0:020d}.log"
    seg.write_bytes(buf)
    _indexes(seg, 0, [(p, p // size, T0 + p // size) for p in range(0, pos, size)])
    _logdir_files(root, {("__consumer_offsets", 0): off})
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    (root / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("__consumer_offsets", 0): 0}))
    return off


def build_bounds(root: Path, _size) -> int:
    """issue 39's inputs (see the module docstring), each a log directory under ``root`` (text inputs beside
    theirs), built with the fuzz harness's generators."""
    import damage
    from conftest import copy_logdir
    from kafkalog_formats import codecs
    copy_logdir(root / "text")
    damage.huge_server_properties(root / "server.properties", 42_000_000)
    damage.huge_offset_json(root / "offsets.json", 74_000_000, "orders")
    damage.huge_topic_configs(root / "topic-configs.txt", 75_000_000, "orders")
    md = copy_logdir(root / "metadata")
    damage.metadata_log(md / "__cluster_metadata-0", 2_000_000)
    keys = root / "keys" / "keys-0"
    keys.mkdir(parents=True)
    n = 2_100_000
    damage._new_segment(keys, 0, [damage.make_batch(0, codecs.compress(codecs.ZSTD, keyed_records(
        [b"key-%07d" % i for i in range(n - 1)] + [b"key-0000000"])), n, codecs.ZSTD)])
    damage._new_segment(keys, n, [damage.make_batch(n, damage.tiny_records(1), 1)])
    for name, size in (("huge", 4 << 30), ("sparse", (2 << 30) - 1)):
        d = copy_logdir(root / name) / "orders-0"
        seg = sorted(d.glob("*.log"))[-1]
        with open(seg, "r+b") as f:                 # valid batches, then a hole to ``size``
            f.truncate(size)
    return 0


def ensure(base: Path, name: str, builder, size) -> tuple[Path, dict]:
    """The data set ``base/name`` (built unless a previous run left it) and what its builder said."""
    root = base / name / "logdir"
    stamp = base / name / "done.json"
    if stamp.exists():
        return root, json.loads(stamp.read_text())
    shutil.rmtree(base / name, ignore_errors=True)
    root.mkdir(parents=True)
    t = time.perf_counter()
    out = builder(root, size)
    du = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    info = {"size": size, "result": out, "bytes": du, "files": sum(1 for _ in root.rglob("*"))}
    stamp.write_text(json.dumps(info))
    print(f"  built {name}: {du / MiB:.1f} MiB, {info['files']} files in {time.perf_counter() - t:.0f} s",
          file=sys.stderr)
    return root, info


# --- measuring ---------------------------------------------------------------------------------------



def measure(args: list, prepare=None, limit_files: int | None = None) -> dict:
    """One run of ``kafkalog ARGS`` as a child: wall, CPU (wait4), peak RSS (VmHWM), most open files
    (/proc/PID/fd sampled every 10 ms), exit status."""
    if prepare:
        prepare()
    rss_file = tempfile.NamedTemporaryFile(prefix="kafkalog-scale-rss", delete=False).name
    env = dict(ENV, KAFKALOG_BENCH_RSS=rss_file)
    argv = [sys.executable, "-c", RSS_WRAPPER, *map(str, args)]

    def limited():
        if limit_files:
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit_files, limit_files))
    fds = [0]
    with open(os.devnull, "w") as out:
        w = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env, preexec_fn=limited)
        done = threading.Event()

        def sample():
            fd_dir = f"/proc/{p.pid}/fd"
            while not done.is_set():
                try:
                    fds[0] = max(fds[0], len(os.listdir(fd_dir)))
                except OSError:
                    pass
                done.wait(0.01)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - w
        done.set()
        th.join()
    try:
        with open(rss_file) as f:
            rss = int(f.read() or 0) * 1024
    except OSError:
        rss = 0
    os.unlink(rss_file)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": rss, "fds": fds[0],
            "code": os.waitstatus_to_exitcode(status)}


def copy_tree(src: Path, dst: Path):
    def go():
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
    return go


def replica(p: Path, work: Path) -> Path:
    """A second replica of partition ``p`` for diff (hard links: no bytes copied). diff refuses a path
    compared with itself (a usage error, exit 2), which is what it timed before."""
    peer = work / "replica" / p.name
    if not peer.is_dir():
        peer.mkdir(parents=True)
        for f in p.iterdir():
            if f.is_file():
                os.link(f, peer / f.name)
    return peer


def commands(group: str, root: Path, info: dict, work: Path) -> list[tuple[str, list, object]]:
    """(label, argv, prepare) of every command measured on a data set."""
    copy = work / "copy"
    c = copy / "logdir"
    if group == "segments":
        p, end = root / "many-0", info["result"]
        return [("verify", ["verify", str(p)], None),
                ("dump-log json", ["dump-log", "--format", "json", "--print-data-log", str(p)], None),
                ("lookup-offset", ["lookup-offset", str(p), str(end - 2)], None),
                ("lookup-time", ["lookup-time", str(p), str(T0 + end - 2)], None),
                ("diff", ["diff", str(p), str(replica(p, work))], None),
                ("recover --dry-run --all-segments", ["recover", "--dry-run", "--all-segments", str(root)], None),
                ("recover --all-segments", ["recover", "--all-segments", str(c)], copy_tree(root, c)),
                ("retain --dry-run", ["retain", "--dry-run", "--config", "retention.bytes=1000", str(p)], None),
                ("retain", ["retain", "--config", "retention.bytes=1000", str(c / "many-0")], copy_tree(root, c)),
                ("compact --dry-run", ["compact", "--dry-run", "--force", "--config", "cleanup.policy=compact",
                                       str(p)], None),
                ("compact", ["compact", "--force", "--config", "cleanup.policy=compact", str(c / "many-0")],
                 copy_tree(root, c))]
    if group == "partitions":
        return [("verify", ["verify", str(root)], None),
                ("recover --dry-run --all-segments", ["recover", "--dry-run", "--all-segments", str(root)], None),
                ("recover --all-segments", ["recover", "--all-segments", str(c)], copy_tree(root, c)),
                ("retain --dry-run --all", ["retain", "--dry-run", "--all", "--config", "retention.bytes=0",
                                            str(root)], None),
                ("compact --dry-run --all", ["compact", "--dry-run", "--all", "--force", "--config",
                                             "cleanup.policy=compact", str(root)], None)]
    if group == "keys":
        p = root / "keys-0"
        return [("compact --dry-run (128 MiB map)", ["compact", "--dry-run", "--force", "--config",
                                                     "cleanup.policy=compact", str(p)], None),
                ("compact (128 MiB map)", ["compact", "--force", "--config", "cleanup.policy=compact",
                                           str(c / "keys-0")], copy_tree(root, c)),
                ("verify", ["verify", str(p)], None)]
    if group == "segment":
        p = root / "big-0"
        seg = p / f"{0:020d}.log"
        return [("verify", ["verify", str(p)], None),
                ("recover --dry-run", ["recover", "--dry-run", str(root)], None),
                ("dump-log json", ["dump-log", "--format", "json", "--deep-iteration", str(seg)], None),
                ("lookup-offset", ["lookup-offset", str(p), str(info["result"] - 5)], None),
                ("diff", ["diff", str(p), str(replica(p, work))], None)]
    if group == "offsets":
        seg = root / "__consumer_offsets-0" / f"{0:020d}.log"
        return [("verify", ["verify", str(seg.parent)], None),
                ("recover --dry-run", ["recover", "--dry-run", str(root)], None),
                ("dump-log --print-data-log json", ["dump-log", "--print-data-log", "--format", "json", str(seg)],
                 None),
                ("dump-log --offsets-decoder", ["dump-log", "--offsets-decoder", str(seg)], None),
                ("dump-log --offsets-decoder json", ["dump-log", "--offsets-decoder", "--format", "json", str(seg)],
                 None),
                ("dump-log --decoder auto", ["dump-log", "--decoder", "auto", str(seg)], None)]
    if group == "bounds":
        base = root
        text, md = str(base / "text"), str(base / "metadata")
        out = [("retain --server-properties 42 MB", ["retain", "--dry-run", "--all", "--server-properties",
                                                     str(base / "server.properties"), text], None),
               ("consumer-groups --server-properties 42 MB", ["consumer-groups", "--server-properties",
                                                              str(base / "server.properties"), text], None),
               ("delete-records --offset-json-file 74 MB", ["delete-records", "--dry-run", "--offset-json-file",
                                                            str(base / "offsets.json"), text], None),
               ("retain --topic-configs 75 MB", ["retain", "--dry-run", "--all", "--topic-configs",
                                                 str(base / "topic-configs.txt"), text], None),
               ("retain, metadata of 2 M topics", ["retain", "--dry-run", "--all", md], None),
               ("describe, metadata of 2 M topics", ["describe", md], None),
               ("consumer-groups, metadata of 2 M topics", ["consumer-groups", md], None),
               ("compact, one batch of 2.1 M keys", ["compact", "--force", "--config", "cleanup.policy=compact",
                                                     "--high-watermark", "9999999", str(c / "keys-0")],
                copy_tree(base / "keys", c))]
        for name, what in (("huge", "4 GiB sparse segment"), ("sparse", "2 GiB - 1 sparse segment")):
            p = str(base / name / "orders-0")
            out += [(f"{cmd[0]}, {what}", [*cmd, p], None) for cmd in
                    (["verify"], ["dump-log"], ["recover", "--dry-run"], ["retain", "--dry-run"],
                     ["compact", "--dry-run", "--force", "--config", "cleanup.policy=compact"],
                     ["lookup-offset", "--print-data-log"])]
            out[-1] = (out[-1][0], [*out[-1][1], "0"], None)
        return out
    raise ValueError(group)


SIZES = {"segments": (2_500, 10_000), "partitions": (2_500, 10_000), "keys": (1_250_000, 5_000_000),
         "segment": (256, 1024), "offsets": (25, 100), "bounds": (1, None)}
BUILDERS = {"segments": build_segments, "partitions": build_partitions, "keys": build_keys,
            "segment": build_segment, "offsets": build_offsets, "bounds": build_bounds}


def run(args) -> int:
    base = Path(args.dir)
    base.mkdir(parents=True, exist_ok=True)
    groups = args.only.split(",") if args.only else list(GROUPS)
    results: dict = {}
    for g in groups:
        small, big = SIZES[g]
        sizes = [type(small)(small * args.scale), type(big)(big * args.scale)] if big else [small]
        for which, size in zip(("1x", "4x"), sizes):
            root, info = ensure(base, f"{g}-{size}", BUILDERS[g], size)
            work = base / "work"
            for label, argv, prepare in commands(g, root, info, work):
                runs = [measure(argv, prepare, args.limit_files) for _ in range(args.repeat)]
                r = {k: statistics.median(x[k] for x in runs) for k in ("wall", "cpu", "rss", "fds")}
                r["code"] = runs[-1]["code"]
                r["bytes"] = info["bytes"]
                results[(g, label, which)] = r
                print(f"{g:10} {which} {label:38} wall {r['wall']:7.2f} s  cpu {r['cpu']:7.2f} s  "
                      f"rss {r['rss'] / MiB:6.1f} MiB  files {r['fds']:4}  exit {r['code']}", flush=True)
            shutil.rmtree(base / "work", ignore_errors=True)
    _report(results)
    if args.json:
        Path(args.json).write_text(json.dumps({" | ".join(k): v for k, v in results.items()}, indent=1))
    return 0


def _report(results: dict) -> None:
    print("\ngrowth from 1x to 4x input (CPU per input byte, 4x / 1x; target <= 2), peak RSS and files at 4x:")
    keys = sorted({(g, label) for g, label, _ in results})
    worst_rss = 0
    for g, label in keys:
        a, b = results.get((g, label, "1x")), results.get((g, label, "4x"))
        if not a or not b:
            continue
        per = (b["cpu"] / b["bytes"]) / (a["cpu"] / a["bytes"]) if a["cpu"] and b["bytes"] else float("nan")
        worst_rss = max(worst_rss, b["rss"])
        print(f"  {g:10} {label:38} {per:5.2f}  rss {b['rss'] / MiB:6.1f} MiB  files {a['fds']} -> {b['fds']}")
    print(f"largest peak RSS: {worst_rss / MiB:.1f} MiB (target < 400 MiB)")
    bounds = [(label, r) for (g, label, _w), r in results.items() if g == "bounds"]
    if bounds:
        print("\nissue 39's bounds (one run each; target < 400 MiB):")
        for label, r in bounds:
            print(f"  {label:48} rss {r['rss'] / MiB:7.1f} MiB  cpu {r['cpu']:7.2f} s  wall {r['wall']:7.2f} s  "
                  f"exit {r['code']}  {'ok' if r['rss'] < 400 * MiB else 'OVER'}")

    def ratio(g, num, den, goal):
        for which in ("1x", "4x"):
            a, b = results.get((g, num, which)), results.get((g, den, which))
            if a and b:
                r = b["cpu"] / a["cpu"]
                print(f"  {g} {which}: {num} at {r:.2f}x the throughput of {den} (target >= {goal})")
    ratio("segment", "recover --dry-run", "verify", 0.5)
    ratio("offsets", "recover --dry-run", "verify", 0.5)
    ratio("offsets", "dump-log --offsets-decoder", "dump-log --print-data-log json", 0.3)
    ratio("offsets", "dump-log --offsets-decoder json", "dump-log --print-data-log json", 0.3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default="/tmp/kafkalog-scale")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--limit-files", type=int, default=1024,
                    help="RLIMIT_NOFILE of every command (default 1024, a common ulimit -n)")
    ap.add_argument("--json", default="", help="also write the figures here")
    return run(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
