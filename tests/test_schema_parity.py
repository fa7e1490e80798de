"""The declarative construct schemas and the fast decoders agree on every batch of every fixture (and of
the real corpus), and the schemas rebuild each batch byte for byte."""
from __future__ import annotations

from pathlib import Path

import pytest
from construct import Array

from kafkalog_formats import codecs, legacy
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RecordBatchV2, RecordV2

from conftest import CORPUS, FIXTURES

LOGS = sorted(FIXTURES.glob("logdir/*/*.log")) + sorted(FIXTURES.glob("logdir/*/*.checkpoint")) + \
    [FIXTURES / "logdir" / "bootstrap.checkpoint"] + sorted(FIXTURES.glob("samples/*.log"))


def _check_v2(batch) -> None:
    raw = batch.raw()
    parsed = RecordBatchV2.parse(raw)
    a = parsed.attributes
    assert (parsed.base_offset, parsed.partition_leader_epoch, parsed.crc, parsed.last_offset_delta,
            parsed.base_timestamp, parsed.max_timestamp, parsed.producer_id, parsed.producer_epoch,
            parsed.base_sequence, parsed.records_count) == \
        (batch.base_offset, batch.partition_leader_epoch, batch.crc, batch.last_offset_delta,
         batch.base_timestamp, batch.max_timestamp, batch.producer_id, batch.producer_epoch,
         batch.base_sequence, batch.count)
    assert (a.codec, a.log_append_time, a.is_transactional, a.is_control, a.has_delete_horizon) == \
        (batch.codec, batch.log_append_time, batch.is_transactional, batch.is_control,
         batch.delete_horizon_ms is not None)
    assert RecordBatchV2.build(parsed) == raw                       # byte-for-byte rebuild
    data = codecs.decompress(a.codec, parsed.records) if a.codec else parsed.records
    schema_records = Array(parsed.records_count, RecordV2).parse(data)
    fast = list(batch.records())
    assert len(schema_records) == len(fast)
    for s, f in zip(schema_records, fast):
        ts = batch.max_timestamp if a.log_append_time else parsed.base_timestamp + s.timestamp_delta
        assert (parsed.base_offset + s.offset_delta, ts, s.key, s.value,
                tuple((h.key, h.value) for h in s.headers)) == (f.offset, f.timestamp, f.key, f.value, f.headers)
    assert Array(parsed.records_count, RecordV2).build(schema_records) == data


def _check_legacy(batch) -> None:
    raw = batch.raw()
    parsed = legacy.LegacyMessage.parse(raw)
    m = batch.message
    assert (parsed.offset, parsed.size, parsed.crc, parsed.magic, parsed.attributes,
            parsed.timestamp if parsed.magic else -1, parsed.key.data, parsed.value.data) == \
        (m.offset, m.size, m.crc, m.magic, m.attributes, m.timestamp, m.key, m.value)
    assert legacy.LegacyMessage.build(parsed) == raw
    records = list(batch.records())
    if m.codec:
        inner = codecs.decompress(m.codec, m.value, magic=m.magic)
        pos, schema_inner = 0, []
        while pos < len(inner):
            im = legacy.LegacyMessage.parse(inner[pos:])
            schema_inner.append(im)
            pos += 12 + im.size
        assert [(im.key.data, im.value.data) for im in schema_inner] == [(r.key, r.value) for r in records]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_schema_equals_fast_path_on_fixture(log: Path):
    n = 0
    for batch in BatchReader(log.read_bytes()):
        (_check_v2 if batch.magic >= 2 else _check_legacy)(batch)
        n += 1
    assert n > 0


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real Kafka corpus not found at {CORPUS}")
def test_schema_equals_fast_path_on_real_corpus_sample():
    """Every non-empty real segment, up to 300 batches each (the schema parser is slow by design)."""
    from kafkalog_cli.layout import classify_file
    logs = [p for p in sorted(CORPUS.rglob("*")) if p.is_file() and p.stat().st_size
            and (classify_file(p.name).kind in ("log", "kraft_snapshot") or p.name == "bootstrap.checkpoint")]
    checked = 0
    for log in logs:
        for i, batch in enumerate(BatchReader(log.read_bytes())):
            if i >= 300:
                break
            _check_v2(batch)
            checked += 1
    assert checked > 1000


# --- the record encoder beside the schema (compact's rebuilt batches) ----------------------------------

def _spec_strategy():
    from hypothesis import strategies as st
    from kafkalog_formats.record_batch import RecordSpec
    i64 = st.integers(-(1 << 63), (1 << 63) - 1)
    small = st.integers(-300, 70000)
    blob = st.none() | st.binary(max_size=300)
    header = st.tuples(st.binary(max_size=20), blob)
    return st.builds(RecordSpec, st.one_of(small, st.integers(0, (1 << 31) - 1)), st.one_of(small, i64), blob,
                     blob, st.lists(header, max_size=4).map(tuple))


def test_encode_record_is_the_schema_byte_for_byte():
    """``encode_record`` (the hot path of ``build_batch``) writes exactly what the ``RecordV2`` schema
    builds, for every delta, null key/value/header value and length size (one- to ten-byte varints)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from kafkalog_formats.record_batch import build_records, encode_record

    @settings(max_examples=600, deadline=None)
    @given(specs=st.lists(_spec_strategy(), max_size=6), base=st.one_of(st.integers(-5, 5),
                                                                        st.integers(-(1 << 62), 1 << 62)))
    def check(specs, base):
        out = bytearray()
        for r in specs:
            encode_record(r, base, out)
        assert bytes(out) == build_records(specs, base)
    check()


def test_a_timestamp_delta_beyond_a_long_wraps_as_in_java():
    """MemoryRecordsBuilder writes ``timestamp - baseTimestamp`` as a long difference: a record far from its
    batch's base timestamp (a hostile base, or a delete horizon) gets a wrapped delta, and reading adds it
    back with the same wrap. On main both encoders wrote the unbounded Python difference (an 11-byte varint
    that decoded to another timestamp: -9223370240915828784 for 1795938947024)."""
    from kafkalog_formats.message_set import BatchReader
    from kafkalog_formats.record_batch import RecordSpec, build_batch, build_records, encode_record, wrap64
    base = -(1 << 63) + 1000
    spec = RecordSpec(0, 1795938947024, b"k", b"v")
    out = bytearray()
    encode_record(spec, base, out)
    assert bytes(out) == build_records([spec], base)
    (batch,) = BatchReader(build_batch(0, [spec], base_timestamp=base))
    assert [r.timestamp for r in batch.records()] == [1795938947024]
    assert wrap64(spec.timestamp - base) < 0                 # the delta itself did wrap


def test_build_batch_streams_an_iterable_like_a_list():
    """``build_batch`` reads its records once (a generator of millions of records is never listed) and
    gives the same bytes as for the list, every codec; the header is the schema's (RecordBatchV2)."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    specs = [RecordSpec(i, 1_700_000_000_000 + (i * 37) % 1000, None if i % 5 == 0 else b"k%d" % i,
                        None if i % 7 == 0 else b"v" * (i % 300), ((b"h", None),) if i % 3 else ())
             for i in range(2000)]
    for codec in (0, 1, 2, 3, 4):
        for kw in ({}, {"delete_horizon_ms": 1_800_000_000_000}, {"log_append_time": True, "max_timestamp": 5}):
            a = build_batch(77, specs, codec=codec, producer_id=9, producer_epoch=2, base_sequence=4, **kw)
            b = build_batch(77, (s for s in specs), codec=codec, producer_id=9, producer_epoch=2, base_sequence=4,
                            **kw)
            assert a == b and RecordBatchV2.build(RecordBatchV2.parse(a)) == a
            got = [(r.offset, r.key, r.value, r.headers) for r in next(iter(BatchReader(a))).records()]
            assert got == [(77 + s.offset_delta, s.key, s.value, s.headers) for s in specs]
    empty = build_batch(5, iter(()), last_offset_delta=3, base_timestamp=-1, max_timestamp=9)
    assert empty == build_batch(5, [], last_offset_delta=3, base_timestamp=-1, max_timestamp=9)
