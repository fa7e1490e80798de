#!/usr/bin/env python3
"""Generate ``fixtures/`` deterministically with kafkalog's own writer.

    python tools/make_fixtures.py            # rewrite fixtures/ (commit the result)
    python tools/make_fixtures.py --check    # exit 1 if fixtures/ differs from a fresh generation

Layout:
  fixtures/logdir/            a log directory: several topics/partitions, every codec, headers,
                              tombstones, transactions (COMMIT+ABORT, .txnindex), producer snapshots,
                              legacy v0/v1 segments (with compressed wrappers), a compacted partition,
                              a KRaft metadata partition with a snapshot, and every checkpoint file
  fixtures/damaged/<case>/    one small log directory per kind of damage (see DAMAGE below)
  fixtures/samples/           the byte samples of shared/docs/byte-samples.md as files
"""
from __future__ import annotations

import argparse
import filecmp
import os
import random
import shutil
import struct
import sys
import tempfile
from pathlib import Path

from kafkalog_formats import control as ctl
from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.legacy import build_message, build_wrapper
from kafkalog_formats.meta_properties import MetaProperties, build_meta_properties
from kafkalog_formats.partition_metadata import build_partition_metadata, uuid_to_kafka_base64
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli import fileops
from kafkalog_cli.repair.log_writer import PartitionWriter

ROOT = Path(__file__).resolve().parents[1]
T0 = 1700000000000          # all timestamps are relative to this (2023-11-14T22:13:20Z)
MTIME = T0 + 3_600_000      # file mtimes written into fixtures
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)


def topic_id(name: str) -> str:
    raw = bytes((sum(map(ord, name)) * (i + 7)) % 251 + 1 for i in range(16))
    return uuid_to_kafka_base64(raw)


class Topic:
    """A partition being written: hands out offsets and builds batches."""

    def __init__(self, logdir: Path, name: str, partition: int, **writer_opts) -> None:
        self.name, self.partition = name, partition
        self.dir = logdir / f"{name}-{partition}"
        self.writer = PartitionWriter(self.dir, **writer_opts)
        self.next_offset = 0

    def batch(self, records: list[tuple], *, codec: int = NONE, epoch: int = 0, gap: int = 0, **kw) -> None:
        """records: (timestamp delta from T0, key, value[, headers]) — offsets assigned in order."""
        base = self.next_offset + gap
        specs = [RecordSpec(i, T0 + r[0], r[1], r[2], r[3] if len(r) > 3 else ()) for i, r in enumerate(records)]
        self.writer.append(build_batch(base, specs, codec=codec, partition_leader_epoch=epoch, **kw), MTIME)
        self.next_offset = base + len(records)

    def marker(self, ctype: int, producer_id: int, producer_epoch: int, ts: int, coordinator_epoch: int = 3,
               epoch: int = 0) -> None:
        spec = RecordSpec(0, T0 + ts, ctl.build_control_key(ctype), ctl.build_end_txn_marker(coordinator_epoch))
        self.writer.append(build_batch(self.next_offset, [spec], is_transactional=True, is_control=True,
                                       producer_id=producer_id, producer_epoch=producer_epoch,
                                       partition_leader_epoch=epoch), MTIME)
        self.next_offset += 1

    def close(self) -> None:
        self.writer.close()
        fileops.write_atomic(self.dir / "partition.metadata", build_partition_metadata(topic_id(self.name)).encode())


def orders(logdir: Path, rng: random.Random) -> Topic:
    """Multi-segment, uncompressed, headers, tombstones, an idempotent producer, two leader epochs."""
    t = Topic(logdir, "orders", 0, segment_bytes=2048, index_interval_bytes=256)
    seq = 0
    for i in range(46):
        n = 1 + i % 3
        recs = []
        for j in range(n):
            k = f"order-{(i * 3 + j) % 17}".encode()
            v = None if (i * 3 + j) % 11 == 5 else f'{{"id":{i * 3 + j},"amount":{rng.randint(1, 999)}}}'.encode()
            hdrs = ((b"source", b"web"), (b"trace", bytes([rng.randrange(256) for _ in range(4)]))) if j == 0 else ()
            recs.append((i * 1000 + j * 7, k, v, hdrs))
        if i % 4 == 0:
            t.batch(recs, producer_id=4000, producer_epoch=0, base_sequence=seq, epoch=0 if i < 20 else 1)
            seq += n
        else:
            t.batch(recs, epoch=0 if i < 20 else 1)
    t.close()
    return t


def orders_codecs(logdir: Path, rng: random.Random) -> Topic:
    """Every codec, a LogAppendTime batch, large compressible values spanning several codec blocks."""
    t = Topic(logdir, "orders", 1, segment_bytes=1 << 20, index_interval_bytes=512)
    for i, codec in enumerate([NONE, GZIP, SNAPPY, LZ4, ZSTD] * 2):
        big = (f"payload {i} " * (4000 if i >= 5 else 20)).encode()
        recs = [(i * 100 + j, f"k{i}-{j}".encode(), big + bytes([j]), ((b"codec", str(codec).encode()),))
                for j in range(4)]
        t.batch(recs, codec=codec)
    t.batch([(5000, b"lat", b"log append time")], log_append_time=True, max_timestamp=T0 + 6000)
    t.close()
    return t


def payments(logdir: Path) -> Topic:
    """Two transactional producers interleaved: one commits, one aborts (→ .txnindex), then again."""
    t = Topic(logdir, "payments", 0, segment_bytes=1024, index_interval_bytes=128)
    a, b = 7000, 7001
    seq = {a: 0, b: 0}

    def data(pid, ts, vals):
        t.batch([(ts + i, f"acct-{pid}-{i}".encode(), v.encode()) for i, v in enumerate(vals)],
                producer_id=pid, producer_epoch=2, base_sequence=seq[pid], is_transactional=True)
        seq[pid] += len(vals)

    t.batch([(0, b"plain", b"non-transactional")])
    for round_ in range(3):
        data(a, 100 + round_ * 1000, ["debit 10", "credit 10"])
        data(b, 200 + round_ * 1000, ["debit 99"])
        data(a, 300 + round_ * 1000, ["fee 1"])
        t.marker(ctl.COMMIT, a, 2, 400 + round_ * 1000)
        data(b, 500 + round_ * 1000, ["credit 99"])
        t.marker(ctl.ABORT, b, 2, 600 + round_ * 1000)
    t.marker(ctl.ABORT, b, 2, 9000)      # an empty transaction's marker: not indexed
    t.close()
    return t


def legacy(logdir: Path) -> Topic:
    """Magic 0 and 1 messages, uncompressed and in compressed wrappers (gzip, snappy, lz4)."""
    t = Topic(logdir, "legacy", 0, segment_bytes=600, index_interval_bytes=64)
    w = t.writer
    off = 0
    for i in range(3):
        w.append(build_message(off, f"k{off}".encode(), f"v0 message {off}".encode(), magic=0), MTIME)
        off += 1
    for codec in (GZIP, SNAPPY, LZ4):
        msgs = [(off + j, f"k{off + j}".encode(), f"v0 inner {off + j}".encode(), -1) for j in range(3)]
        w.append(build_wrapper(msgs, codec, magic=0), MTIME)
        off += 3
    for i in range(3):
        w.append(build_message(off, None if i == 1 else f"k{off}".encode(), f"v1 message {off}".encode(),
                               magic=1, timestamp=T0 + off), MTIME)
        off += 1
    for codec in (GZIP, SNAPPY, LZ4):
        msgs = [(off + j, f"k{off + j}".encode(), f"v1 inner {off + j}".encode(), T0 + off + j) for j in range(3)]
        w.append(build_wrapper(msgs, codec, magic=1), MTIME)
        off += 3
    msgs = [(off + j, b"lat", f"v1 log-append-time {off + j}".encode(), T0 + j) for j in range(2)]
    w.append(build_wrapper(msgs, GZIP, magic=1, log_append_time=T0 + 77_000), MTIME)
    t.writer.write_snapshots = False
    t.close()
    return t


def compacted(logdir: Path) -> Topic:
    """What the cleaner leaves: offset gaps, a batch with a delete horizon, an empty batch."""
    t = Topic(logdir, "compacted", 0, segment_bytes=1 << 20)
    w = t.writer
    w.append(build_batch(0, [RecordSpec(1, T0 + 1, b"a", b"1"), RecordSpec(3, T0 + 3, b"b", b"2")],
                         last_offset_delta=4), MTIME)
    w.append(build_batch(5, [RecordSpec(2, T0 + 10, b"c", None)], last_offset_delta=2,
                         delete_horizon_ms=T0 + 86_400_000), MTIME)
    w.append(build_batch(8, [], last_offset_delta=1, producer_id=42, producer_epoch=0, base_sequence=5,
                         max_timestamp=T0 + 20), MTIME)
    w.append(build_batch(10, [RecordSpec(0, T0 + 30, b"a", b"3")]), MTIME)
    t.close()
    return t


def metadata_record(api_key: int, body: bytes, version: int = 0) -> bytes:
    """Metadata record value: frame version 1, record type, record version (uvarints), flexible body."""
    return bytes([1, api_key, version]) + body


def topic_record(name: str) -> bytes:
    from kafkalog_formats.partition_metadata import kafka_base64_to_uuid
    enc = name.encode()
    return metadata_record(2, bytes([len(enc) + 1]) + enc + kafka_base64_to_uuid(topic_id(name)) + b"\x00")


def feature_level_record(name: str, level: int) -> bytes:
    enc = name.encode()
    return metadata_record(12, bytes([len(enc) + 1]) + enc + struct.pack(">h", level) + b"\x00")


def cluster_metadata(logdir: Path) -> Topic:
    """A KRaft metadata partition: data batches of metadata records and a snapshot .checkpoint."""
    t = Topic(logdir, "__cluster_metadata", 0, index_interval_bytes=4096)
    t.batch([(0, None, feature_level_record("metadata.version", 21))], epoch=1)
    t.batch([(10, None, topic_record("orders")), (10, None, topic_record("payments"))], epoch=1)
    t.close()
    snap = [build_batch(0, [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_HEADER),
                                       struct.pack(">hq", 0, T0 + 10) + b"\x00")],
                        is_control=True, partition_leader_epoch=1),
            build_batch(1, [RecordSpec(0, T0 + 10, None, feature_level_record("metadata.version", 21)),
                            RecordSpec(1, T0 + 10, None, topic_record("orders"))], partition_leader_epoch=1),
            build_batch(3, [RecordSpec(0, T0 + 10, ctl.build_control_key(ctl.SNAPSHOT_FOOTER),
                                       struct.pack(">h", 0) + b"\x00")], is_control=True, partition_leader_epoch=1)]
    fileops.write_atomic(t.dir / "00000000000000000003-0000000001.checkpoint", b"".join(snap))
    fileops.write_atomic(t.dir / "quorum-state",
                         b'{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
                         b'"currentVoters":[{"voterId":1}],"data_version":0}')
    return t


def write_logdir(logdir: Path) -> None:
    rng = random.Random(20231114)
    topics = [orders(logdir, rng), orders_codecs(logdir, rng), payments(logdir), legacy(logdir),
              compacted(logdir)]
    meta = cluster_metadata(logdir)
    leo = {(t.name, t.partition): t.writer.log_end_offset for t in topics}
    fileops.write_atomic(logdir / "recovery-point-offset-checkpoint", build_offset_checkpoint(leo).encode())
    fileops.write_atomic(logdir / "replication-offset-checkpoint", build_offset_checkpoint(leo).encode())
    fileops.write_atomic(logdir / "log-start-offset-checkpoint",
                         build_offset_checkpoint({("compacted", 0): 1}).encode())
    fileops.write_atomic(logdir / "cleaner-offset-checkpoint",
                         build_offset_checkpoint({("compacted", 0): 10}).encode())
    fileops.write_atomic(logdir / "meta.properties", build_meta_properties(
        MetaProperties(1, 1, "kafkalog-fixture-cluster", topic_id("log-dir-1")),
        "Tue Nov 14 22:13:20 UTC 2023").encode())
    fileops.write_atomic(logdir / ".kafka_cleanshutdown", b'{"version":0,"brokerEpoch":7}')
    boot = build_batch(0, [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_HEADER),
                                      struct.pack(">hq", 0, 0) + b"\x00")], is_control=True)
    boot += build_batch(1, [RecordSpec(0, T0, None, feature_level_record("metadata.version", 21))])
    boot += build_batch(2, [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_FOOTER), b"\x00\x00\x00")],
                        is_control=True)
    fileops.write_atomic(logdir / "bootstrap.checkpoint", boot)
    del meta


# --- damaged copies ------------------------------------------------------------------------------

def _copy_partition(src_logdir: Path, dst: Path, partition: str) -> Path:
    shutil.copytree(src_logdir / partition, dst / partition)
    return dst / partition


def _last_segment(pdir: Path) -> Path:
    return sorted(pdir.glob("*.log"))[-1]


def _batch_positions(log: Path) -> list[int]:
    from kafkalog_formats.message_set import BatchReader
    return [b.position for b in BatchReader(log.read_bytes())]


def damage(logdir: Path, out: Path) -> None:
    """One directory per kind of damage, each a log directory holding one damaged partition."""
    cases = {}

    def case(name):
        d = out / name
        d.mkdir(parents=True)
        cases[name] = d
        return d

    # truncated last batch: the active segment ends 10 bytes into its last batch's records
    p = _copy_partition(logdir, case("truncated-last-batch"), "orders-0")
    log = _last_segment(p)
    data = log.read_bytes()
    log.write_bytes(data[:_batch_positions(log)[-1] + 40])
    # one byte flipped inside a batch of the first segment (CRC no longer matches)
    p = _copy_partition(logdir, case("flipped-crc-byte"), "orders-0")
    log = sorted(p.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    pos = _batch_positions(log)[2] + 70
    data[pos] ^= 0x10
    log.write_bytes(bytes(data))
    # a zero-filled tail on the active segment (crash after the file was extended)
    p = _copy_partition(logdir, case("zero-tail"), "orders-0")
    log = _last_segment(p)
    log.write_bytes(log.read_bytes() + bytes(300))
    # untrimmed (preallocated) indexes on the active segment, as a running broker leaves them
    # (normal on the active segment; on the inactive first segment it is a warning for verify)
    p = _copy_partition(logdir, case("untrimmed-indexes"), "orders-0")
    for log in (_last_segment(p), sorted(p.glob("*.log"))[0]):
        for suffix, size in (("index", 1024), ("timeindex", 1020)):
            f = log.with_suffix("." + suffix)
            f.write_bytes(f.read_bytes().ljust(size, b"\x00"))
    # an index whose segment is gone (Kafka's loader deletes it)
    p = _copy_partition(logdir, case("orphan-index"), "orders-0")
    (p / "00000000000000099999.index").write_bytes(struct.pack(">ii", 5, 0))
    # leftovers of interrupted cleaning / deletion
    p = _copy_partition(logdir, case("leftover-files"), "orders-0")
    first = sorted(p.glob("*.log"))[0]
    shutil.copy(first, p / (first.name + ".cleaned"))
    shutil.copy(first, p / (first.name + ".swap"))
    shutil.copy(first.with_suffix(".index"), p / (first.with_suffix(".index").name + ".deleted"))
    # a time index that lies: wrong timestamp and an entry pointing inside a batch
    p = _copy_partition(logdir, case("bad-indexes"), "orders-0")
    seg = sorted(p.glob("*.log"))[0]
    idx = seg.with_suffix(".index")
    raw = bytearray(idx.read_bytes())
    rel, pos = struct.unpack_from(">ii", raw, 0)
    struct.pack_into(">ii", raw, 0, rel - 1, pos)          # not the last offset of its batch → mismatch
    idx.write_bytes(bytes(raw))
    tix = seg.with_suffix(".timeindex")
    raw = bytearray(tix.read_bytes())
    ts, rel = struct.unpack_from(">qi", raw, 0)
    struct.pack_into(">qi", raw, 0, ts + 1, rel)            # timestamp off by one → mismatch
    tix.write_bytes(bytes(raw))
    for d in cases.values():
        shutil.copy(logdir / "meta.properties", d / "meta.properties")


def samples(out: Path) -> None:
    """The byte samples of byte-samples.md (checked byte for byte in the tests)."""
    out.mkdir(parents=True)
    s1 = build_batch(0, [RecordSpec(0, T0, b"k1", b"v1", ((b"h1", b"x"),)), RecordSpec(1, T0 + 5, None, b"hello")])
    s2 = build_batch(2, [RecordSpec(0, T0 + 100, ctl.build_control_key(ctl.COMMIT), ctl.build_end_txn_marker(5))],
                     is_transactional=True, is_control=True, producer_id=1000, producer_epoch=0)
    (out / "00000000000000000000.log").write_bytes(s1 + s2)
    s3 = build_message(5, b"k", b"v1", magic=1, timestamp=T0)
    s4 = build_message(6, None, b"hello", magic=0)
    (out / "00000000000000000005.log").write_bytes(s3 + s4)


def generate(target: Path) -> None:
    write_logdir(target / "logdir")
    damage(target / "logdir", target / "damaged")
    samples(target / "samples")
    for p in sorted(target.rglob("*")):
        if p.is_file() and not p.name.startswith("README"):
            os.utime(p, ns=(MTIME * 1_000_000, MTIME * 1_000_000))


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b, ignore=["README.md", "__pycache__"])
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _m, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with fixtures/ instead of writing")
    ap.add_argument("--out", type=Path, default=ROOT / "fixtures")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "fixtures"
        generate(fresh)
        if args.check:
            ok = _same_tree(fresh, args.out)
            print("fixtures are current" if ok else "fixtures differ from the generator's output")
            return 0 if ok else 1
        for sub in ("logdir", "damaged", "samples"):
            shutil.rmtree(args.out / sub, ignore_errors=True)
            shutil.copytree(fresh / sub, args.out / sub)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
