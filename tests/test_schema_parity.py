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
