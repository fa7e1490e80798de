"""Cross-checks against an independent implementation: kafka-python's record classes (test-only dependency).

Both directions for magic 2 and legacy magic 0/1, every codec kafka-python can handle here:

* kafka-python writes (``DefaultRecordBatchBuilder`` / ``LegacyRecordBatchBuilder``) → ``BatchReader`` reads
  the same header fields and records as kafka-python's own readers (``MemoryRecords``) and as the input;
* we write (``build_batch`` / ``build_message`` / ``build_wrapper``) → kafka-python validates the CRC and
  reads the same records;
* byte equality where both writers must agree (uncompressed v2 and v0/v1, and the decompressed payload of
  compressed batches/wrappers);
* hypothesis round trips, plus parity between our construct schemas and our hand-written fast path.

kafka-python notes that shape the tests: its v2 builder always writes baseOffset 0 and leader epoch 0 (the
broker assigns both; they are outside the CRC, so we patch them like a broker would), falls back to an
uncompressed batch when compression does not shrink the data, and uses ``str`` header keys. Its legacy
builder writes compressed wrappers with offset 0 and timestamp 0 and cannot write LogAppendTime; its legacy
reader reports the *entry* offset as ``base_offset`` and ``None`` timestamps for magic 0.
"""
from __future__ import annotations

import contextlib
import struct
import types
import zlib
from unittest import mock

import cramjam
import pytest
from construct import Array, Struct, Terminated, this
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafka.codec as kc
from kafka.errors import UnsupportedCodecError
from kafka.record._crc32c import crc as kp_pure_crc32c
from kafka.record.default_records import ControlRecord, DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from kafkalog_formats import legacy
from kafkalog_formats.codecs import CODEC_NAMES, GZIP, LZ4, NONE, SNAPPY, ZSTD, decompress
from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader, BatchV2View, LegacyBatchView
from kafkalog_formats.record_batch import (RecordBatchV2, RecordSpec, RecordV2, build_batch, iter_records,
                                           parse_header, sequence_at)

INT_MAX = 2**31 - 1
BIG = 1 << 24  # builder batch_size: never refuse an append
PROPERTY = settings(max_examples=50, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# -- which codecs kafka-python handles here -----------------------------------------------------------

_KP_HAS = {NONE: lambda: True, GZIP: kc.has_gzip, SNAPPY: kc.has_snappy, LZ4: kc.has_lz4, ZSTD: kc.has_zstd}
KP_MISSING_REASON = {
    GZIP: "kafka-python cannot gzip here (kafka.codec.has_gzip() is False)",
    SNAPPY: "kafka-python cannot handle snappy here: python-snappy is not installed "
            "(kafka.codec.has_snappy() is False); see the snappy-cramjam-blocks variant",
    LZ4: "kafka-python cannot handle lz4 here: no lz4 binding (kafka.codec.has_lz4() is False)",
    ZSTD: "kafka-python cannot handle zstd here: zstandard missing (kafka.codec.has_zstd() is False)",
}
# kafka-python's own xerial framing and batch code with cramjam as the raw snappy block codec: runs even
# without python-snappy (the raw block codec is then shared with us, the framing is not).
CRAMJAM_BLOCKS = types.SimpleNamespace(compress=lambda b: bytes(cramjam.snappy.compress_raw(b)),
                                       decompress=lambda b: bytes(cramjam.snappy.decompress_raw(b)))


def kp_works(codec: int) -> bool:
    return _KP_HAS[codec]()


@contextlib.contextmanager
def kp_backend(codec: int, backend: str = "native"):
    """Make kafka-python able to use ``codec``: native library, or cramjam raw blocks for snappy."""
    if backend == "cramjam":
        with mock.patch.object(kc, "snappy", CRAMJAM_BLOCKS):
            yield
        return
    if not kp_works(codec):
        pytest.skip(KP_MISSING_REASON[codec])
    yield


def _codec_params(codecs):
    out = [pytest.param((c, "native"), id=CODEC_NAMES[c]) for c in codecs]
    if SNAPPY in codecs:
        out.append(pytest.param((SNAPPY, "cramjam"), id="snappy-cramjam-blocks"))
    return out


V2_CODEC_PARAMS = _codec_params([NONE, GZIP, SNAPPY, LZ4, ZSTD])
LEGACY_CODEC_PARAMS = _codec_params([NONE, GZIP, SNAPPY, LZ4])   # zstd is illegal in magic 0/1


@pytest.fixture
def codec(request):
    codec_id, backend = request.param
    with kp_backend(codec_id, backend):
        yield codec_id


# Property tests pick among codecs that work in kafka-python here; snappy goes through the cramjam shim when
# python-snappy is missing (the shim is installed for the whole example).
PROPERTY_V2_CODECS = [c for c in (NONE, GZIP, SNAPPY, LZ4, ZSTD) if kp_works(c) or c == SNAPPY]
PROPERTY_LEGACY_CODECS = [c for c in PROPERTY_V2_CODECS if c != ZSTD]


def kp_property_backend(codec: int):
    if codec == SNAPPY and not kp_works(SNAPPY):
        return kp_backend(SNAPPY, "cramjam")
    return contextlib.nullcontext()


# -- builders on both sides ---------------------------------------------------------------------------

def kp_build_v2(specs, codec=NONE, *, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                transactional=False) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                  producer_id=producer_id, producer_epoch=producer_epoch,
                                  base_sequence=base_sequence, batch_size=BIG)
    for r in specs:
        meta = b.append(r.offset_delta, timestamp=r.timestamp, key=r.key, value=r.value,
                        headers=[(k.decode("utf-8"), v) for k, v in r.headers])
        assert meta is not None
    return bytes(b.build())


def kp_build_legacy(magic, codec, msgs) -> bytes:
    """``msgs`` = [(offset, timestamp, key, value)] written as given (inner offsets for wrappers)."""
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=BIG)
    for off, ts, k, v in msgs:
        assert b.append(off, timestamp=ts, key=k, value=v) is not None
    return bytes(b.build())


def our_build_legacy(magic, codec, msgs, *, log_append_time=None) -> bytes:
    if codec == NONE:
        return b"".join(legacy.build_message(off, k, v, magic=magic, timestamp=ts) for off, ts, k, v in msgs)
    return legacy.build_wrapper([(off, k, v, ts) for off, ts, k, v in msgs], codec, magic=magic,
                                log_append_time=log_append_time)


def broker_assign(buf: bytes, base_offset: int, leader_epoch: int) -> bytes:
    """What the broker does to a produced v2 batch without touching the CRC: set offset and epoch."""
    out = bytearray(buf)
    struct.pack_into(">q", out, 0, base_offset)
    struct.pack_into(">i", out, 12, leader_epoch)
    return bytes(out)


def set_entry_offset(buf: bytes, offset: int) -> bytes:
    """Legacy entry offset (outside the message CRC), as the broker assigns it to a wrapper."""
    out = bytearray(buf)
    struct.pack_into(">q", out, 0, offset)
    return bytes(out)


# -- normalised views of both readers -----------------------------------------------------------------

TS_TYPES = {None: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


def read_ours(buf):
    reader = BatchReader(buf)
    out = []
    for view in reader:
        if isinstance(view, BatchV2View):
            head = dict(magic=view.magic, base_offset=view.base_offset, last_offset=view.last_offset,
                        count=view.count, crc=view.crc, crc_valid=view.is_valid(), codec=view.codec,
                        timestamp_type=view.timestamp_type, leader_epoch=view.partition_leader_epoch,
                        base_timestamp=view.base_timestamp, max_timestamp=view.max_timestamp,
                        producer_id=view.producer_id, producer_epoch=view.producer_epoch,
                        base_sequence=view.base_sequence, last_sequence=view.last_sequence,
                        is_transactional=view.is_transactional, is_control=view.is_control, size=view.size)
            recs = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in view.records()]
        else:
            assert isinstance(view, LegacyBatchView)
            head = dict(magic=view.magic, offset=view.offset_field, crc=view.crc, crc_valid=view.is_valid(),
                        codec=view.codec, timestamp_type=view.timestamp_type, timestamp=view.max_timestamp,
                        size=view.size)
            recs = [(r.offset, r.timestamp, r.key, r.value, r.headers, r.crc, r.valid) for r in view.records()]
            # Kafka semantics that kafka-python does not expose as such: first inner / entry offset
            assert view.base_offset == recs[0][0]
            assert view.last_offset == view.offset_field
        out.append((head, recs))
    assert reader.stop is None, reader.stop
    return out


def read_kp(buf):
    out = []
    for batch in MemoryRecords(bytes(buf)):
        if isinstance(batch, DefaultRecordBatch):
            valid = batch.validate_crc()  # must run before iteration (it checks the raw buffer)
            head = dict(magic=batch.magic, base_offset=batch.base_offset, last_offset=batch.last_offset,
                        count=batch.records_count, crc=batch.crc, crc_valid=valid,
                        codec=batch.compression_type, timestamp_type=TS_TYPES[batch.timestamp_type],
                        leader_epoch=batch.leader_epoch, base_timestamp=batch.first_timestamp,
                        max_timestamp=batch.max_timestamp, producer_id=batch.producer_id,
                        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
                        last_sequence=batch.last_sequence, is_transactional=batch.is_transactional,
                        is_control=batch.is_control_batch, size=batch.size_in_bytes)
            recs = [(r.offset, r.timestamp, r.key, r.value,
                     tuple((k.encode("utf-8"), v) for k, v in r.headers)) for r in batch]
        else:
            assert isinstance(batch, LegacyRecordBatch)
            ts = batch._timestamp  # the entry's own timestamp: kafka-python has no public accessor
            head = dict(magic=batch.magic, offset=batch.base_offset, crc=batch._crc,
                        crc_valid=batch.validate_crc(), codec=batch.compression_type,
                        timestamp_type=TS_TYPES[batch.timestamp_type], timestamp=-1 if ts is None else ts,
                        size=batch.size_in_bytes)
            recs = [(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value, tuple(r.headers),
                     r.checksum, r.validate_crc()) for r in batch]
        out.append((head, recs))
    return out


def expected_v2_records(specs, base_offset, lat=None):
    return [(base_offset + r.offset_delta, r.timestamp if lat is None else lat, r.key, r.value,
             tuple(r.headers)) for r in specs]


def pure_crc32c(data: bytes) -> int:
    """kafka-python's pure-Python CRC-32C (kafka-python itself prefers the same C package we use)."""
    return kp_pure_crc32c(data) & 0xFFFFFFFF


# -- fixed inputs -------------------------------------------------------------------------------------

TS = 1_700_000_000_000
V2_SPECS = [
    RecordSpec(0, TS, b"key-0", b"value " * 20, ((b"trace", b"abc"), (b"null-header", None))),
    RecordSpec(1, TS + 5, None, b"value " * 20 + b"without key", ()),
    RecordSpec(2, TS - 10, b"key-2", None, ((b"tomb", b"stone"),)),            # tombstone, negative delta
    RecordSpec(3, TS + 123_456, b"", b"", ((b"", b""),)),                       # empty key/value/header key
    RecordSpec(5, TS + 7, b"key-5", bytes(range(256)) * 2, (("unicodé".encode(), b"\x00\xff"),)),  # gap
]
PRODUCERS = {
    "no-producer": dict(producer_id=-1, producer_epoch=-1, base_sequence=-1, transactional=False),
    # the sequence wraps past Int.MAX to 0 inside the batch: lastSequence = 2
    "transactional-seq-wrap": dict(producer_id=4242, producer_epoch=7, base_sequence=INT_MAX - 2,
                                   transactional=True),
}
LEGACY_MSGS = [  # (offset, timestamp, key, value)
    (0, TS, b"key-0", b"legacy value " * 10),
    (1, TS + 3, None, b"legacy value " * 10 + b"no key"),
    (2, TS - 1, b"key-2", None),                                                 # tombstone
    (3, TS + 9, b"", b""),
    (4, TS + 1, b"key-4", bytes(range(200)) * 2),
]

# -- 1. kafka-python writes, we read ------------------------------------------------------------------


@pytest.mark.parametrize("producer", PRODUCERS, ids=list(PRODUCERS))
@pytest.mark.parametrize("codec", V2_CODEC_PARAMS, indirect=True)
def test_v2_kafka_python_writes_we_read(codec, producer):
    p = PRODUCERS[producer]
    produced = kp_build_v2(V2_SPECS, codec, **p)
    assert produced[21 + 1] & 0x07 == codec, "kafka-python fell back to uncompressed: data not compressible"
    buf = broker_assign(produced, 1000, 17)
    (ours,) = read_ours(buf)
    (theirs,) = read_kp(buf)
    assert ours == theirs

    head, recs = ours
    assert recs == expected_v2_records(V2_SPECS, 1000)
    last_seq = -1 if p["base_sequence"] < 0 else 2
    assert head == dict(magic=2, base_offset=1000, last_offset=1005, count=5,
                        crc=struct.unpack_from(">I", buf, 17)[0], crc_valid=True, codec=codec,
                        timestamp_type="CreateTime", leader_epoch=17, base_timestamp=TS,
                        max_timestamp=TS + 123_456, producer_id=p["producer_id"],
                        producer_epoch=p["producer_epoch"], base_sequence=p["base_sequence"],
                        last_sequence=last_seq, is_transactional=p["transactional"], is_control=False,
                        size=len(buf))
    # the CRC stored by kafka-python, checked by a third CRC-32C implementation; epoch/offset are outside it
    assert head["crc"] == pure_crc32c(buf[21:]) == struct.unpack_from(">I", produced, 17)[0]
    # per-record sequence of the last record equals both readers' lastSequence
    last = list(next(iter(BatchReader(buf))).records())[-1]
    assert last.sequence == last_seq == sequence_at(p["base_sequence"], 5)


@pytest.mark.parametrize("codec", V2_CODEC_PARAMS, indirect=True)
def test_v2_corruption_is_seen_by_both(codec):
    buf = bytearray(broker_assign(kp_build_v2(V2_SPECS, codec, **PRODUCERS["transactional-seq-wrap"]), 7, 3))
    buf[-3] ^= 0x01  # inside the (maybe compressed) records section
    (view,) = BatchReader(bytes(buf))
    (kp_batch,) = MemoryRecords(bytes(buf))
    assert view.is_valid() is False and kp_batch.validate_crc() is False
    assert view.computed_crc() == pure_crc32c(bytes(buf[21:])) != view.crc
    buf[-3] ^= 0x01
    buf[53] ^= 0x80  # baseSequence: covered by the CRC although not part of the records
    (view,) = BatchReader(bytes(buf))
    (kp_batch,) = MemoryRecords(bytes(buf))
    assert view.is_valid() is False and kp_batch.validate_crc() is False


def test_v2_memory_records_builder_multi_batch():
    """Two batches from MemoryRecordsBuilder (sequential offsets), concatenated as in a segment."""
    bufs = []
    for base, (pid, epoch, seq) in ((0, (-1, -1, -1)), (3, (99, 1, 10))):
        mrb = MemoryRecordsBuilder(magic=2, compression_type=NONE, batch_size=BIG,
                                   transactional=False, producer_id=pid, producer_epoch=epoch,
                                   base_sequence=seq)
        for i in range(3):
            assert mrb.append(timestamp=TS + base + i, key=b"k%d" % i, value=None if i == 1 else b"v",
                              headers=[("h", b"%d" % i)]) is not None
        mrb.close()
        bufs.append(broker_assign(bytes(mrb.buffer()), base, 0))
    buf = b"".join(bufs)
    ours, theirs = read_ours(buf), read_kp(buf)
    assert ours == theirs
    assert [h["base_offset"] for h, _ in ours] == [0, 3]
    assert [r[0] for _, recs in ours for r in recs] == [0, 1, 2, 3, 4, 5]
    assert ours[1][0]["last_sequence"] == 12
    # byte-identical to our builder with the same inputs
    for (base, pid, epoch, seq), b in zip(((0, -1, -1, -1), (3, 99, 1, 10)), bufs):
        specs = [RecordSpec(i, TS + base + i, b"k%d" % i, None if i == 1 else b"v", ((b"h", b"%d" % i),))
                 for i in range(3)]
        assert build_batch(base, specs, producer_id=pid, producer_epoch=epoch, base_sequence=seq) == b


def java_sequence(base: int, delta: int) -> int:
    """DefaultRecordBatch.incrementSequence, written out independently of ``sequence_at``."""
    return -1 if base < 0 else (base + delta if base + delta <= INT_MAX else base + delta - INT_MAX - 1)


def _sequence_case(deltas, base_sequence, writer):
    specs = [RecordSpec(d, TS + d, b"k", b"v") for d in deltas]
    if writer == "ours":
        buf = build_batch(0, specs, producer_id=9, producer_epoch=0, base_sequence=base_sequence)
    else:
        buf = kp_build_v2(specs, producer_id=9, producer_epoch=0, base_sequence=base_sequence)
    (view,) = BatchReader(buf)
    (kp_batch,) = MemoryRecords(buf)
    assert view.last_sequence == kp_batch.last_sequence == java_sequence(base_sequence, deltas[-1])
    assert [r.sequence for r in view.records()] == [java_sequence(base_sequence, d) for d in deltas]


@pytest.mark.parametrize("writer", ["ours", "kafka-python"])
@pytest.mark.parametrize("base_sequence", [-1, 0, INT_MAX - 4, INT_MAX - 2, INT_MAX])
def test_v2_record_sequences_contiguous(base_sequence, writer):
    """Per-record sequence = baseSequence + offsetDelta wrapping past Int.MAX; lastSequence from both."""
    _sequence_case([0, 1, 2, 3, 4], base_sequence, writer)


@pytest.mark.parametrize("writer", ["ours", "kafka-python"])
def test_v2_record_sequences_wrap_with_offset_gaps(writer):
    _sequence_case([0, 5, 10], INT_MAX - 5, writer)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODEC_PARAMS, indirect=True)
def test_legacy_kafka_python_writes_we_read(codec, magic):
    if codec == NONE:
        msgs = [(100 + o, ts, k, v) for o, ts, k, v in LEGACY_MSGS]   # one entry per message
        buf = kp_build_legacy(magic, codec, msgs)
        want_offsets = [100, 101, 102, 103, 104]
    elif magic == 1:
        # producer-side wrapper: relative inner offsets, wrapper offset 0 (read with base 0); then the
        # broker's view: wrapper offset = last absolute offset (outside the CRC)
        produced = kp_build_legacy(magic, codec, LEGACY_MSGS)
        assert struct.unpack_from(">q", produced)[0] == 0
        assert [r[0] for _, recs in read_ours(produced) for r in recs] == [0, 1, 2, 3, 4]
        assert read_ours(produced) == read_kp(produced)
        buf = set_entry_offset(produced, 104)
        want_offsets = [100, 101, 102, 103, 104]
    else:
        # v0: inner offsets are absolute; the wrapper carries the last one
        buf = set_entry_offset(kp_build_legacy(magic, codec, [(100 + o, *rest) for o, *rest in LEGACY_MSGS]),
                               104)
        want_offsets = [100, 101, 102, 103, 104]
    ours, theirs = read_ours(buf), read_kp(buf)
    assert ours == theirs
    assert len(ours) == (5 if codec == NONE else 1)

    recs = [r for _, rs in ours for r in rs]
    assert [r[0] for r in recs] == want_offsets
    assert [r[1] for r in recs] == [ts if magic == 1 else -1 for _, ts, _, _ in LEGACY_MSGS]
    assert [(r[2], r[3], r[4]) for r in recs] == [(k, v, ()) for _, _, k, v in LEGACY_MSGS]
    assert all(r[6] is True for r in recs)
    for head, _ in ours:
        assert head["magic"] == magic and head["codec"] == codec and head["crc_valid"] is True
        assert head["timestamp_type"] == ("CreateTime" if magic == 1 else "NoTimestampType")
    if codec == NONE:
        assert [h["crc"] for h, _ in ours] == [r[5] for r in recs]
        pos = 0
        for head, _ in ours:
            assert head["crc"] == zlib.crc32(buf[pos + 16:pos + head["size"]])
            pos += head["size"]
    else:
        (head, _), = ours
        assert head["offset"] == 104 and head["timestamp"] == (0 if magic == 1 else -1)  # kafka-python: ts 0
        assert head["crc"] == zlib.crc32(buf[16:])


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODEC_PARAMS[1:], indirect=True)
def test_legacy_corrupt_wrapper_crc_seen_by_both(codec, magic):
    buf = bytearray(kp_build_legacy(magic, codec, LEGACY_MSGS))
    buf[17] ^= 0x10  # wrapper attributes bit 4 (unused): covered by the CRC, harmless otherwise
    (view,) = BatchReader(bytes(buf))
    (kp_batch,) = MemoryRecords(bytes(buf))
    assert view.is_valid() is False and kp_batch.validate_crc() is False
    # inner messages are intact: both readers still decode them with valid inner CRCs
    assert read_ours(bytes(buf)) == read_kp(bytes(buf))
    assert all(r.valid for r in view.records())


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_corrupt_inner_message_seen_by_both(magic):
    """A wrapper whose own CRC is fine but one inner message's CRC is not (per-record isValid)."""
    inner = bytearray(kp_build_legacy(magic, NONE, [(i, TS + i, b"k%d" % i, b"value-%d" % i) for i in range(3)]))
    second = len(inner) // 3
    inner[second + len(inner) // 3 - 1] ^= 0x20  # last value byte of the 2nd inner message
    buf = legacy.build_message(2, None, kc.gzip_encode(bytes(inner)), magic=magic, timestamp=TS + 2,
                               attributes=GZIP)
    ours, theirs = read_ours(buf), read_kp(buf)
    assert ours == theirs
    (head, recs), = ours
    assert head["crc_valid"] is True
    assert [r[6] for r in recs] == [True, False, True]
    assert recs[1][3] == b"value-1"[:-1] + bytes([ord("1") ^ 0x20])


def test_segment_across_format_upgrade():
    """v0 entries, then a v1 gzip wrapper, then a v2 lz4 batch in one buffer: both readers agree."""
    v0 = kp_build_legacy(0, NONE, [(0, None, b"a", b"x" * 30), (1, None, None, b"y")])
    v1 = set_entry_offset(kp_build_legacy(1, GZIP, [(i, TS + i, b"k", b"w" * 40) for i in range(3)]), 4)
    v2 = broker_assign(kp_build_v2(V2_SPECS, LZ4 if kp_works(LZ4) else NONE), 5, 2)
    buf = v0 + v1 + v2
    ours, theirs = read_ours(buf), read_kp(buf)
    assert ours == theirs
    assert [h["magic"] for h, _ in ours] == [0, 0, 1, 2]
    assert [r[0] for _, recs in ours for r in recs] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]


# -- 2. we write, kafka-python reads ------------------------------------------------------------------


@pytest.mark.parametrize("lat", [False, True], ids=["CreateTime", "LogAppendTime"])
@pytest.mark.parametrize("producer", PRODUCERS, ids=list(PRODUCERS))
@pytest.mark.parametrize("codec", V2_CODEC_PARAMS, indirect=True)
def test_v2_we_write_kafka_python_reads(codec, producer, lat):
    p = PRODUCERS[producer]
    buf = build_batch(2_000_000_000_000, V2_SPECS, codec=codec, partition_leader_epoch=42,
                      log_append_time=lat, is_transactional=p["transactional"], producer_id=p["producer_id"],
                      producer_epoch=p["producer_epoch"], base_sequence=p["base_sequence"],
                      max_timestamp=TS + 999_999 if lat else None)
    (kp_batch,) = MemoryRecords(buf)
    assert kp_batch.validate_crc() is True
    (theirs,) = read_kp(buf)
    (ours,) = read_ours(buf)
    assert theirs == ours
    head, recs = theirs
    assert recs == expected_v2_records(V2_SPECS, 2_000_000_000_000, TS + 999_999 if lat else None)
    assert head["codec"] == codec and head["count"] == 5 and head["crc_valid"] is True
    assert head["timestamp_type"] == ("LogAppendTime" if lat else "CreateTime")
    assert head["last_offset"] == 2_000_000_000_005 and head["leader_epoch"] == 42
    assert (head["producer_id"], head["producer_epoch"], head["base_sequence"], head["is_transactional"]) == (
        p["producer_id"], p["producer_epoch"], p["base_sequence"], p["transactional"])
    assert head["last_sequence"] == (-1 if p["base_sequence"] < 0 else 2)
    assert head["crc"] == pure_crc32c(buf[21:])


def test_v2_control_batch_we_write_kafka_python_reads():
    """byte-samples.md sample 2 (COMMIT marker) from build_batch; kafka-python sees a ControlRecord."""
    sample2 = bytes.fromhex(
        "00 00 00 00 00 00 00 02 00 00 00 42 00 00 00 00"
        "02 4e 07 46 d7 00 30 00 00 00 00 00 00 01 8b cf"
        "e5 68 64 00 00 01 8b cf e5 68 64 00 00 00 00 00"
        "00 03 e8 00 00 ff ff ff ff 00 00 00 01 20 00 00"
        "00 08 00 00 00 01 0c 00 00 00 00 00 05 00")
    buf = build_batch(2, [RecordSpec(0, TS + 100, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))],
                      is_control=True, is_transactional=True, producer_id=1000, producer_epoch=0)
    assert buf == sample2
    (batch,) = MemoryRecords(buf)
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    (rec,) = list(batch)
    assert isinstance(rec, ControlRecord) and rec.commit and rec.version == 0 and rec.offset == 2
    assert read_ours(buf) == read_kp(buf)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODEC_PARAMS, indirect=True)
def test_legacy_we_write_kafka_python_reads(codec, magic):
    msgs = [(500 + o, ts, k, v) for o, ts, k, v in LEGACY_MSGS]
    buf = our_build_legacy(magic, codec, msgs)
    kp_batches = list(MemoryRecords(buf))
    assert len(kp_batches) == (5 if codec == NONE else 1)
    assert all(b.validate_crc() for b in kp_batches)
    theirs = read_kp(buf)
    assert theirs == read_ours(buf)
    recs = [r for _, rs in theirs for r in rs]
    assert [(r[0], r[1], r[2], r[3]) for r in recs] == [
        (o, ts if magic == 1 else -1, k, v) for o, ts, k, v in msgs]
    assert all(r[6] is True for r in recs)  # inner CRCs, checked by kafka-python
    if codec != NONE:
        (head, _), = theirs
        assert head["offset"] == 504 and head["codec"] == codec
        assert head["timestamp"] == (max(ts for _, ts, _, _ in msgs) if magic == 1 else -1)


@pytest.mark.parametrize("codec", LEGACY_CODEC_PARAMS[1:], indirect=True)
def test_legacy_v1_log_append_time_wrapper_kafka_python_reads(codec):
    msgs = [(500 + o, ts, k, v) for o, ts, k, v in LEGACY_MSGS]
    buf = our_build_legacy(1, codec, msgs, log_append_time=TS + 777)
    theirs = read_kp(buf)
    assert theirs == read_ours(buf)
    (head, recs), = theirs
    assert head["timestamp_type"] == "LogAppendTime" and head["timestamp"] == TS + 777
    assert [r[1] for r in recs] == [TS + 777] * 5
    assert [r[0] for r in recs] == [500, 501, 502, 503, 504]


def test_zstd_is_refused_in_legacy_by_both():
    with pytest.raises(UnsupportedCodecError):
        kp_build_legacy(1, ZSTD, LEGACY_MSGS[:1])
    with pytest.raises(FormatError, match="zstd is not allowed"):
        our_build_legacy(1, ZSTD, LEGACY_MSGS[:1])


# -- 3. byte identity ---------------------------------------------------------------------------------

SAMPLE1 = bytes.fromhex(
    "0000000000000000 0000004d 00000000 02 da8719ec 0000 00000001 0000018bcfe56800 0000018bcfe56805"
    "ffffffffffffffff ffff ffffffff 00000002 1e0000 00046b31 047631 02 046831 0278"
    "16000a0201 0a68656c6c6f 00")
SAMPLE3 = bytes.fromhex("0000000000000005 00000019 3e731674 01 00 0000018bcfe56800 00000001 6b 00000002 7631")
SAMPLE4 = bytes.fromhex("0000000000000006 00000013 87a77ab2 00 00 ffffffff 00000005 68656c6c6f")


def test_byte_samples_from_both_writers():
    s1 = [RecordSpec(0, TS, b"k1", b"v1", ((b"h1", b"x"),)), RecordSpec(1, TS + 5, None, b"hello")]
    assert kp_build_v2(s1) == build_batch(0, s1) == SAMPLE1
    assert kp_build_legacy(1, NONE, [(5, TS, b"k", b"v1")]) == legacy.build_message(
        5, b"k", b"v1", magic=1, timestamp=TS) == SAMPLE3
    assert kp_build_legacy(0, NONE, [(6, None, None, b"hello")]) == legacy.build_message(
        6, None, b"hello", magic=0) == SAMPLE4


@pytest.mark.parametrize("producer", PRODUCERS, ids=list(PRODUCERS))
def test_v2_uncompressed_byte_identical(producer):
    p = PRODUCERS[producer]
    theirs = kp_build_v2(V2_SPECS, NONE, **p)
    ours = build_batch(0, V2_SPECS, producer_id=p["producer_id"], producer_epoch=p["producer_epoch"],
                       base_sequence=p["base_sequence"], is_transactional=p["transactional"])
    assert ours == theirs


@pytest.mark.parametrize("codec", V2_CODEC_PARAMS[1:], indirect=True)
def test_v2_compressed_same_header_and_records_section(codec):
    """Compressed bytes differ by library/settings; the header (bar length/crc) and payload must not."""
    p = PRODUCERS["transactional-seq-wrap"]
    theirs = kp_build_v2(V2_SPECS, codec, **p)
    ours = build_batch(0, V2_SPECS, codec=codec, producer_id=p["producer_id"],
                       producer_epoch=p["producer_epoch"], base_sequence=p["base_sequence"],
                       is_transactional=p["transactional"])
    assert theirs[21:61] == ours[21:61] and theirs[:8] == ours[:8] and theirs[12:17] == ours[12:17]
    assert decompress(codec, theirs[61:]) == decompress(codec, ours[61:]) == kp_build_v2(V2_SPECS, NONE, **p)[61:]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_uncompressed_byte_identical(magic):
    msgs = [(100 + o, ts, k, v) for o, ts, k, v in LEGACY_MSGS]
    assert our_build_legacy(magic, NONE, msgs) == kp_build_legacy(magic, NONE, msgs)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODEC_PARAMS[1:], indirect=True)
def test_legacy_wrapper_inner_message_set_byte_identical(codec, magic):
    """kafka-python's wrapper (offset 0, ts 0) differs from ours, but the inner message set must not."""
    msgs = LEGACY_MSGS if magic == 1 else [(100 + o, *rest) for o, *rest in LEGACY_MSGS]
    theirs = legacy.parse_message(kp_build_legacy(magic, codec, msgs), 0)
    ours = legacy.parse_message(our_build_legacy(magic, codec, msgs), 0)
    assert (theirs.magic, theirs.attributes, theirs.key) == (ours.magic, ours.attributes, ours.key) == (
        magic, codec, None)
    inner = decompress(codec, theirs.value, magic=magic)
    assert inner == decompress(codec, ours.value, magic=magic) == kp_build_legacy(magic, NONE, msgs)
    if codec == LZ4 and magic == 0:
        # v0 frames carry the historical descriptor checksum over magic+FLG+BD (0x1a), which both readers
        # ignore; compare our frame header with kafka-python's old-Kafka encoder (content size stripped)
        assert ours.value[:7] == kc.lz4_encode_old_kafka(inner)[:7] == bytes.fromhex("04224d18 60401a")


# -- 4. property tests --------------------------------------------------------------------------------

maybe_bytes = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=4), st.integers(1, 80)),  # compressible
    st.binary(min_size=64, max_size=300),  # multi-byte varint lengths
)
header_st = st.tuples(st.text(max_size=10).map(lambda s: s.encode("utf-8")),
                      st.one_of(st.none(), st.binary(max_size=20)))
timestamp_st = st.integers(0, 2**43)


@st.composite
def v2_specs(draw, max_records=20):
    n = draw(st.integers(1, max_records))
    delta, specs = draw(st.integers(0, 3)), []
    for _ in range(n):
        specs.append(RecordSpec(delta, draw(timestamp_st), draw(maybe_bytes), draw(maybe_bytes),
                                tuple(draw(st.lists(header_st, max_size=3)))))
        delta += draw(st.integers(1, 3))  # gaps, as after compaction
    return specs


producer_st = st.one_of(
    st.just((-1, -1, -1, False)),
    st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(0, INT_MAX), st.booleans()))


@PROPERTY
@given(specs=v2_specs(), codec=st.sampled_from(PROPERTY_V2_CODECS), producer=producer_st,
       base_offset=st.integers(0, 2**62), epoch=st.integers(-1, INT_MAX), lat=st.booleans())
def test_property_v2_round_trip_both_ways(specs, codec, producer, base_offset, epoch, lat):
    pid, pepoch, seq, txn = producer
    with kp_property_backend(codec):
        # kafka-python writes (it may fall back to uncompressed), both read the same, equal to the input
        kbuf = broker_assign(kp_build_v2(specs, codec, producer_id=pid, producer_epoch=pepoch,
                                         base_sequence=seq, transactional=txn), base_offset, epoch)
        ours, theirs = read_ours(kbuf), read_kp(kbuf)
        assert ours == theirs
        (head, recs), = ours
        assert recs == expected_v2_records(specs, base_offset)
        assert head["crc_valid"] and head["codec"] in (NONE, codec) and head["count"] == len(specs)
        assert head["last_offset"] == base_offset + specs[-1].offset_delta
        assert head["last_sequence"] == sequence_at(seq, specs[-1].offset_delta)
        assert head["max_timestamp"] == max(r.timestamp for r in specs)
        assert head["base_timestamp"] == specs[0].timestamp

        # we write, kafka-python reads the same
        lat_ts = max(r.timestamp for r in specs) + 1 if lat else None
        obuf = build_batch(base_offset, specs, codec=codec, partition_leader_epoch=epoch,
                           log_append_time=lat, is_transactional=txn, producer_id=pid,
                           producer_epoch=pepoch, base_sequence=seq, max_timestamp=lat_ts)
        (kp_batch,) = MemoryRecords(obuf)
        assert kp_batch.validate_crc()
        theirs2 = read_kp(obuf)
        assert theirs2 == read_ours(obuf)
        (head2, recs2), = theirs2
        assert recs2 == expected_v2_records(specs, base_offset, lat_ts)
        assert head2["codec"] == codec
        assert head2["timestamp_type"] == ("LogAppendTime" if lat else "CreateTime")

        # both writers agree on everything that is not library-made compressed bytes
        if not lat:
            if head["codec"] == NONE and codec == NONE:
                assert obuf == kbuf
            assert obuf[21 + 2:61] == kbuf[21 + 2:61]  # lastOffsetDelta .. recordsCount
            assert decompress(head["codec"], kbuf[61:]) == decompress(codec, obuf[61:])


@st.composite
def legacy_msgs(draw):
    n = draw(st.integers(1, 20))
    return [(i, draw(timestamp_st), draw(maybe_bytes), draw(maybe_bytes)) for i in range(n)]


@PROPERTY
@given(msgs=legacy_msgs(), magic=st.sampled_from([0, 1]), codec=st.sampled_from(PROPERTY_LEGACY_CODECS),
       base=st.integers(0, 2**62), lat=st.booleans())
def test_property_legacy_round_trip_both_ways(msgs, magic, codec, base, lat):
    absolute = [(base + o, ts, k, v) for o, ts, k, v in msgs]
    want = [(base + o, ts if magic == 1 else -1, k, v) for o, ts, k, v in msgs]
    with kp_property_backend(codec):
        # kafka-python writes; for wrappers emulate the broker: wrapper offset = last absolute offset
        if codec == NONE:
            kbuf = kp_build_legacy(magic, codec, absolute)
        else:
            kbuf = set_entry_offset(kp_build_legacy(magic, codec, msgs if magic == 1 else absolute),
                                    base + len(msgs) - 1)
        ours, theirs = read_ours(kbuf), read_kp(kbuf)
        assert ours == theirs
        assert [r[:4] for _, rs in ours for r in rs] == want
        assert all(h["crc_valid"] and h["codec"] == codec for h, _ in ours)

        # we write (v1 wrappers optionally with LogAppendTime), kafka-python reads the same
        lat_ts = TS if (lat and magic == 1 and codec != NONE) else None
        obuf = our_build_legacy(magic, codec, absolute, log_append_time=lat_ts)
        assert all(b.validate_crc() for b in MemoryRecords(obuf))
        theirs2 = read_kp(obuf)
        assert theirs2 == read_ours(obuf)
        assert [r[:4] for _, rs in theirs2 for r in rs] == [
            (o, ts if lat_ts is None else lat_ts, k, v) for o, ts, k, v in want]

        # byte identity: whole output uncompressed, inner message set for wrappers
        if codec == NONE:
            assert obuf == kbuf
        else:
            ours_inner = decompress(codec, legacy.parse_message(obuf, 0).value, magic=magic)
            kp_inner = decompress(codec, legacy.parse_message(kbuf, 0).value, magic=magic)
            assert ours_inner == kp_inner


# -- parity: construct schemas vs fast path ----------------------------------------------------------

def attributes_int(a) -> int:
    return (a.unused_high << 8 | a.unused_bit7 << 7 | a.has_delete_horizon << 6 | a.is_control << 5
            | a.is_transactional << 4 | a.log_append_time << 3 | a.codec)


@PROPERTY
@given(specs=v2_specs(), codec=st.sampled_from(PROPERTY_V2_CODECS), producer=producer_st,
       base_offset=st.integers(0, 2**62), epoch=st.integers(-1, INT_MAX), lat=st.booleans(),
       writer=st.sampled_from(["ours", "kafka-python"]))
def test_property_v2_construct_matches_fast_path(specs, codec, producer, base_offset, epoch, lat, writer):
    pid, pepoch, seq, txn = producer
    with kp_property_backend(codec):
        if writer == "ours":
            buf = build_batch(base_offset, specs, codec=codec, partition_leader_epoch=epoch, log_append_time=lat,
                              is_transactional=txn, producer_id=pid, producer_epoch=pepoch, base_sequence=seq)
        else:  # bytes not made by our construct schema
            buf = broker_assign(kp_build_v2(specs, codec, producer_id=pid, producer_epoch=pepoch,
                                            base_sequence=seq, transactional=txn), base_offset, epoch)
    c = RecordBatchV2.parse(buf)
    h = parse_header(buf)
    assert (c.base_offset, c.length, c.partition_leader_epoch, c.magic, c.crc, c.last_offset_delta,
            c.base_timestamp, c.max_timestamp, c.producer_id, c.producer_epoch, c.base_sequence,
            c.records_count) == (h.base_offset, h.length, h.partition_leader_epoch, h.magic, h.crc,
                                 h.last_offset_delta, h.base_timestamp, h.max_timestamp, h.producer_id,
                                 h.producer_epoch, h.base_sequence, h.records_count)
    assert attributes_int(c.attributes) == h.attributes
    assert bytes(c.records) == buf[61:]
    assert RecordBatchV2.build(c) == buf  # the schema also rebuilds the exact bytes

    data = decompress(h.attributes & 7, c.records)
    schema = Struct("records" / Array(this._.count, RecordV2), Terminated)
    parsed = schema.parse(data, count=c.records_count).records
    lat_ts = h.max_timestamp if h.attributes & 0x08 else None
    fast = list(iter_records(data, h.records_count, h.base_offset, h.base_timestamp, h.base_sequence, lat_ts))
    assert len(parsed) == len(fast) == len(specs)
    for cr, fr in zip(parsed, fast):
        assert (h.base_offset + cr.offset_delta,
                lat_ts if lat_ts is not None else h.base_timestamp + cr.timestamp_delta,
                cr.key, cr.value, tuple((x.key, x.value) for x in cr.headers),
                sequence_at(h.base_sequence, cr.offset_delta), cr.attributes) == (
            fr.offset, fr.timestamp, fr.key, fr.value, fr.headers, fr.sequence, fr.attributes)
    assert [(r.key, r.value, r.headers) for r in fast] == [(s.key, s.value, tuple(s.headers)) for s in specs]


@st.composite
def legacy_entries(draw):
    """One legacy entry from either writer: plain message (any attributes) or a compressed wrapper."""
    magic = draw(st.sampled_from([0, 1]))
    kind = draw(st.sampled_from(["ours", "kafka-python", "ours-wrapper", "kafka-python-wrapper"]))
    offset, ts, key, value = draw(st.integers(0, 2**63 - 1)), draw(timestamp_st), draw(maybe_bytes), draw(
        maybe_bytes)
    if kind == "ours":
        return legacy.build_message(offset, key, value, magic=magic, timestamp=ts,
                                    attributes=draw(st.integers(-128, 127)))
    if kind == "kafka-python":
        return kp_build_legacy(magic, NONE, [(offset, ts, key, value)])
    codec = draw(st.sampled_from(PROPERTY_LEGACY_CODECS[1:]))
    msgs = draw(legacy_msgs())
    with kp_property_backend(codec):
        if kind == "ours-wrapper":
            return our_build_legacy(magic, codec, msgs)
        return kp_build_legacy(magic, codec, msgs)


@PROPERTY
@given(entry=legacy_entries())
def test_property_legacy_construct_matches_fast_path(entry):
    c = legacy.LegacyMessage.parse(entry)
    f = legacy.parse_message(entry, 0)
    assert (c.offset, c.size, c.crc, c.magic, c.attributes,
            -1 if c.timestamp is None else c.timestamp, c.key.data, c.value.data) == tuple(f)
    assert (c.timestamp is None) == (f.magic == 0)
    assert c.size == len(entry) - 12
    assert legacy.message_crc(entry, 0, f.size) == f.crc == zlib.crc32(entry[16:])
