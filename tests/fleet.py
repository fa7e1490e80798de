"""A generated fleet of Kafka log directories (several brokers' disks) and the damage a fleet's backups
show, built with kafkalog's own writer. Used by the Spark tests and ``tools/bench_spark.py``.

Layout: ``ROOT/<cluster>-broker-<id>/`` is one log directory (``meta.properties`` with the cluster id and
the node id, as a KRaft broker writes it, or ``broker.id`` for a ZooKeeper-era broker), holding replicas
of ``topic-<k>-<p>`` partitions. With ``replication`` > 1 each partition is on that many brokers of its
cluster, byte for byte the same (a follower appends the leader's batches unchanged). Batches hold 1..N
records of text-like values (so every codec compresses something), offsets and timestamps increase, and
indexes follow Kafka's rule (``PartitionWriter``).

``Fleet.batches`` lists every batch written (file, position, size, offsets, record count), so a test knows
which records a damaged batch holds without asking kafkalog's reader. The damage helpers edit bytes in
place and return what they broke.
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.crc import crc32c

from kafkalog_cli.repair.log_writer import PartitionWriter

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000
WORDS = ("order", "payment", "customer", "shipped", "pending", "refund", "warehouse", "invoice", "cart", "item",
         "quantity", "price", "currency", "EUR", "USD", "status", "created", "updated", "region", "priority")


@dataclass(frozen=True)
class Batch:
    cluster: str
    broker: int
    topic: str
    partition: int
    segment: Path
    position: int
    size: int
    base_offset: int
    count: int
    codec: str
    leader_epoch: int


@dataclass
class Fleet:
    root: Path
    log_dirs: list = field(default_factory=list)
    batches: list = field(default_factory=list)          # every batch of every replica, in file order

    @property
    def records(self) -> int:
        """Records on disk, every replica counted."""
        return sum(b.count for b in self.batches)

    def partitions(self) -> set:
        return {(b.cluster, b.topic, b.partition) for b in self.batches}

    def unique_records(self) -> int:
        """Records of each (cluster, topic, partition) counted once."""
        seen = {}
        for b in self.batches:
            seen[(b.cluster, b.topic, b.partition, b.base_offset)] = b.count
        return sum(seen.values())

    def in_segment(self, segment: Path) -> list:
        return [b for b in self.batches if b.segment == segment]


def _varint(n: int) -> bytes:
    """Kafka's zig-zag varint (``ByteUtils.writeVarint``/``writeVarlong``)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_V = [_varint(i) for i in range(-1, 400)]


def _v(n: int) -> bytes:
    return _V[n + 1] if -1 <= n < 399 else _varint(n)


def records_section(records: list) -> bytes:
    """``DefaultRecord.writeTo`` for (offset delta, timestamp delta, key, value, headers) tuples."""
    out = []
    for od, tsd, key, value, headers in records:
        body = [b"\x00", _v(tsd), _v(od)]
        body += [_v(-1)] if key is None else [_v(len(key)), key]
        body += [_v(-1)] if value is None else [_v(len(value)), value]
        body.append(_v(len(headers)))
        for hk, hv in headers:
            body += [_v(len(hk)), hk]
            body += [_v(-1)] if hv is None else [_v(len(hv)), hv]
        b = b"".join(body)
        out.append(_v(len(b)))
        out.append(b)
    return b"".join(out)


def batch_bytes(base_offset: int, base_ts: int, records: list, codec: int = 0, leader_epoch: int = 0,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """A v2 batch as ``MemoryRecordsBuilder`` lays it out (record_batch.build_batch is the schema's twin; this
    one is fast enough for millions of records)."""
    from kafkalog_formats.codecs import compress
    from kafkalog_formats.record_batch import HEADER
    raw = records_section(records)
    if codec:
        raw = compress(codec, raw, magic=2)
    lod = records[-1][0]
    max_ts = base_ts + max(r[1] for r in records)
    head = bytearray(HEADER.pack(base_offset, 49 + len(raw), leader_epoch, 2, 0, codec, lod, base_ts, max_ts,
                                 producer_id, producer_epoch, base_sequence, len(records)))
    data = head + raw
    struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
    return bytes(data)


def _text_pool(rng: random.Random, size: int) -> bytes:
    """Text-like bytes (words and numbers, like JSON or log lines): values are slices of it, so every
    value is different and codecs compress them about as much as real text."""
    vocab = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 10)))
             for _ in range(3000)] + [w.encode() for w in WORDS]
    out = bytearray()
    while len(out) < size:
        r = rng.random()
        if r < 0.75:
            out += rng.choice(vocab)
        elif r < 0.95:
            out += str(rng.randrange(10 ** rng.randint(1, 9))).encode()
        else:
            out += b'{"'
        out += b" " if rng.random() < 0.85 else b", "
    return bytes(out)


def partition_batches(rng: random.Random, records: int, codec: int, leader_epoch: int = 0, first_offset: int = 0,
                      batch_records: tuple = (20, 80), value_bytes: tuple = (60, 240)):
    """Batches holding ``records`` records from ``first_offset``, each value a different slice of a text pool,
    timestamps 10 ms apart: [(bytes, base offset, count)]."""
    pool = _text_pool(rng, 1 << 20)
    offset, written = first_offset, 0
    out = []
    while written < records:
        count = min(rng.randint(*batch_records), records - written)
        recs = []
        for i in range(count):
            n = rng.randint(*value_bytes)
            at = rng.randrange(len(pool) - n)
            recs.append((i, i * 10, b"key-%08d" % rng.randrange(10 ** 8), pool[at:at + n],
                         ((b"trace", b"%08x" % rng.getrandbits(32)),)))
        out.append((batch_bytes(offset, T0 + offset * 10, recs, codec, leader_epoch), offset, count))
        offset += count
        written += count
    return out


def make_fleet(root: Path, *, clusters: tuple = ("cluster-a",), brokers: int = 4, partitions_per_broker: int = 2,
               replication: int = 1, records_per_partition: int = 1000, codecs: tuple = tuple(CODECS),
               segment_bytes: int = 256 * 1024, batch_records: tuple = (20, 80), value_bytes: tuple = (60, 240),
               zookeeper_ids: bool = False, seed: int = 0) -> Fleet:
    """Log directories for ``brokers`` brokers of each cluster, each holding ``partitions_per_broker``
    partition replicas; topic ``topic-<k>`` has partitions spread over the brokers, each on
    ``replication`` brokers (consecutive ids). Codecs rotate over partitions."""
    root = Path(root)
    fleet = Fleet(root)
    rng = random.Random(seed)
    for cluster in clusters:
        slots = brokers * partitions_per_broker
        if slots % replication:
            raise ValueError("brokers * partitions_per_broker must be a multiple of replication")
        n_parts = slots // replication
        tps = [(f"topic-{k // 4}", k % 4) for k in range(n_parts)]
        for broker in range(brokers):
            d = root / f"{cluster}-broker-{broker}"
            d.mkdir(parents=True, exist_ok=True)
            if zookeeper_ids:
                meta = f"version=0\nbroker.id={broker}\ncluster.id={cluster}\n"
            else:
                meta = f"version=1\nnode.id={broker}\ncluster.id={cluster}\n"
            (d / "meta.properties").write_text(meta)
            fleet.log_dirs.append(d)
        placement: dict = {b: [] for b in range(brokers)}
        for k, tp in enumerate(tps):
            for r in range(replication):
                placement[(k + r) % brokers].append(tp)
        for k, (topic, p) in enumerate(tps):
            codec_name = codecs[k % len(codecs)]
            batches = partition_batches(random.Random(rng.random()), records_per_partition, CODECS[codec_name],
                                        batch_records=batch_records, value_bytes=value_bytes)
            for broker in range(brokers):
                if (topic, p) not in placement[broker]:
                    continue
                pdir = root / f"{cluster}-broker-{broker}" / f"{topic}-{p}"
                w = PartitionWriter(pdir, segment_bytes=segment_bytes, index_interval_bytes=4096)
                for data, _off, _count in batches:
                    w.append(data)
                w.close()
                fleet.batches.extend(_describe(pdir, cluster, broker, topic, p, codec_name))
    return fleet


def _describe(pdir: Path, cluster: str, broker: int, topic: str, partition: int, codec: str) -> list:
    from kafkalog_formats.message_set import BatchReader
    out = []
    for seg in sorted(pdir.glob("*.log")):
        data = seg.read_bytes()
        for b in BatchReader(data):
            out.append(Batch(cluster, broker, topic, partition, seg, b.position, b.size, b.base_offset,
                             b.count, codec, b.partition_leader_epoch))
    return out


# --- damage ----------------------------------------------------------------------------------------

def _patch(segment: Path, position: int, data: bytes) -> None:
    with open(segment, "r+b") as f:
        f.seek(position)
        f.write(data)


def flip_crc(batch: Batch) -> Batch:
    """Change one byte of the batch's stored CRC: the batch no longer matches its checksum."""
    raw = bytearray(batch.segment.read_bytes()[batch.position + 17:batch.position + 18])
    _patch(batch.segment, batch.position + 17, bytes([raw[0] ^ 0x5A]))
    return batch


def break_length(batch: Batch, value: int = 0x7FFFFF00) -> Batch:
    """Overwrite the batch's length field: it claims more bytes than the file has (Kafka's reader stops)."""
    _patch(batch.segment, batch.position + 8, struct.pack(">i", value))
    return batch


def garbage_payload(batch: Batch) -> Batch:
    """Overwrite the middle of a compressed batch's records with garbage and fix the CRC, so the batch
    passes its checksum and fails to decompress."""
    data = bytearray(batch.segment.read_bytes()[batch.position:batch.position + batch.size])
    start = 61 + 4
    for i in range(start, min(len(data), start + 64)):
        data[i] = (i * 37 + 11) & 0xFF
    struct.pack_into(">I", data, 17, crc32c(memoryview(data)[21:]))
    _patch(batch.segment, batch.position, bytes(data))
    return batch


def tear_tail(segment: Path, keep_of_last: int = 30) -> Batch | None:
    """Cut the segment inside its last batch (a torn write): ``keep_of_last`` bytes of it remain."""
    from kafkalog_formats.message_set import BatchReader
    data = segment.read_bytes()
    last = None
    for b in BatchReader(data):
        last = b
    if last is None:
        return None
    with open(segment, "r+b") as f:
        f.truncate(last.position + keep_of_last)
    return last
