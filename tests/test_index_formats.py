"""Offset and time indexes: byte samples, schema/fast-path parity, Kafka's search and sanity rules,
and every .index/.timeindex of the real broker corpus."""
from __future__ import annotations

import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kafkalog_formats import offset_index as oi, time_index as ti
from kafkalog_formats.errors import FormatError

from conftest import CORPUS  # noqa: E402  (honours KAFKALOG_SHARED)
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real broker corpus not found at {CORPUS}")

# byte-samples.md, "Extra samples for the side files"
OFFSET_SAMPLE = bytes.fromhex("0000046e00000000" "000004b000001050")   # base 100: (1234, 0), (1300, 4176)
TIME_SAMPLE = bytes.fromhex("0000018bcfe56be7" "000004af")            # base 100: (1700000000999, 1299)
PATH = "/data/t-0/00000000000000000100.index"
TPATH = "/data/t-0/00000000000000000100.timeindex"
INT32_MAX = 2**31 - 1


# --- the documented samples --------------------------------------------------------------------

def test_offset_index_sample_parses_to_documented_values_both_ways():
    schema = [(e.relative_offset, e.position) for e in oi.OffsetIndex.parse(OFFSET_SAMPLE)]
    fast = oi.offset_index_array(OFFSET_SAMPLE)
    assert schema == [(1134, 0), (1200, 4176)]
    assert fast.tolist() == schema
    assert [(100 + r, p) for r, p in schema] == [(1234, 0), (1300, 4176)]


def test_offset_index_sample_rebuilt_byte_for_byte_by_both_builders():
    assert oi.build_offset_index([(1234, 0), (1300, 4176)], 100) == OFFSET_SAMPLE
    built = oi.OffsetIndex.build([dict(relative_offset=1134, position=0),
                                  dict(relative_offset=1200, position=4176)])
    assert built == OFFSET_SAMPLE
    assert oi.build_offset_index([], 100) == b""


def test_time_index_sample_parses_and_rebuilds():
    (entry,) = ti.TimeIndex.parse(TIME_SAMPLE)
    assert (entry.timestamp, entry.relative_offset) == (1700000000999, 1199)
    assert ti.time_index_array(TIME_SAMPLE).tolist() == [(1700000000999, 1199)]
    assert ti.build_time_index([(1700000000999, 1299)], 100) == TIME_SAMPLE
    assert ti.TimeIndex.build([dict(timestamp=1700000000999, relative_offset=1199)]) == TIME_SAMPLE


def test_fast_arrays_are_zero_copy_views_and_ignore_partial_entries():
    buf = bytearray(OFFSET_SAMPLE + b"\x01\x02\x03")
    arr = oi.offset_index_array(buf)
    assert len(arr) == 2 and arr.base is not None
    buf[3] = 0x6F                                        # the view sees writes to the buffer
    assert int(arr["rel"][0]) == 1135
    assert len(ti.time_index_array(memoryview(TIME_SAMPLE + bytes(11)))) == 1
    assert len(oi.offset_index_array(b"")) == 0
    # construct's GreedyRange also stops before the partial entry
    assert len(oi.OffsetIndex.parse(OFFSET_SAMPLE + b"\x01\x02\x03")) == 2


# --- zero tail and sanity checks (§3.2–3.4) ------------------------------------------------------

def test_untrimmed_offset_index_real_count_and_sanity_passes():
    untrimmed = OFFSET_SAMPLE + bytes(8 * 1022)
    arr = oi.offset_index_array(untrimmed)
    assert len(arr) == 1024                              # what Kafka believes
    assert oi.real_entry_count(arr) == 2                 # what DumpLogSegments prints
    assert oi.check_offset_index(untrimmed, 100, PATH) is None
    assert oi.offset_index_sanity(len(untrimmed), 100, 0, PATH) is None


def test_untrimmed_time_index_fails_sanity_with_kafkas_message():
    untrimmed = TIME_SAMPLE + bytes(12 * 99)
    assert ti.real_entry_count(ti.time_index_array(untrimmed)) == 1
    assert ti.check_time_index(untrimmed, 100, TPATH) == (
        "Corrupt time index found, time index file (/data/t-0/00000000000000000100.timeindex) has non-zero "
        "size but the last timestamp is 0 which is less than the first timestamp 1700000000999")
    assert ti.check_time_index(TIME_SAMPLE, 100, TPATH) is None


def test_offset_index_sanity_messages_exactly_as_kafka():
    """OffsetIndex.sanityCheck of the Java storage module (3.5 and later, trunk): no parentheses around the
    path and no full stop, unlike the Scala OffsetIndex of 3.4 and earlier."""
    negative_last = OFFSET_SAMPLE + struct.pack(">ii", -5, 9000)
    assert oi.check_offset_index(negative_last, 100, PATH) == (
        "Corrupt index found, index file /data/t-0/00000000000000000100.index has non-zero size but the "
        "last offset is 95 which is less than the base offset 100")
    assert oi.check_offset_index(OFFSET_SAMPLE + b"\x00", 100, PATH) == (
        "Index file /data/t-0/00000000000000000100.index is corrupt, found 17 bytes which is neither "
        "positive nor a multiple of 8")
    assert oi.offset_index_sanity(5, 100, None, PATH) == (
        "Index file /data/t-0/00000000000000000100.index is corrupt, found 5 bytes which is neither "
        "positive nor a multiple of 8")
    assert oi.check_offset_index(b"", 100, PATH) is None
    assert oi.offset_index_sanity(0, 100, -7, PATH) is None    # no entries: last_rel is irrelevant


def test_time_index_sanity_messages_in_kafkas_order():
    bad_offset = TIME_SAMPLE + struct.pack(">qi", 1700000001000, -1)
    assert ti.check_time_index(bad_offset, 100, TPATH) == (
        "Corrupt time index found, time index file (/data/t-0/00000000000000000100.timeindex) has non-zero "
        "size but the last offset is 99 which is less than the first offset 100")
    assert ti.check_time_index(TIME_SAMPLE + bytes(13), 100, TPATH) == (
        "Corrupt time index found, time index file (/data/t-0/00000000000000000100.timeindex) has non-zero "
        "size but the last timestamp is 0 which is less than the first timestamp 1700000000999")
    assert ti.check_time_index(TIME_SAMPLE + b"\x00" * 5, 100, TPATH) == (
        "Time index file /data/t-0/00000000000000000100.timeindex is corrupt, found 17 bytes which is "
        "neither positive nor a multiple of 12")
    assert ti.check_time_index(b"", 100, TPATH) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=0, max_size=40), st.integers(0, 300),
       st.booleans())
def test_real_entry_count_matches_dumper_loop(gaps, zeros, slot0_is_zero):
    rels = np.cumsum([0 if slot0_is_zero else 1, *gaps]).tolist()     # strictly increasing after slot 0
    entries = [(r, i * 10) for i, r in enumerate(rels)]
    buf = b"".join(struct.pack(">ii", r, p) for r, p in entries) + bytes(8 * zeros)
    arr = oi.offset_index_array(buf)
    expected = 0                                         # DumpLogSegments: stop at i > 0 with offset == base
    for i, (rel, _) in enumerate(arr.tolist()):
        if i > 0 and rel == 0:
            break
        expected += 1
    assert oi.real_entry_count(arr) == expected == len(entries)
    tbuf = b"".join(struct.pack(">qi", 1000 + r, r) for r, _ in entries) + bytes(12 * zeros)
    assert ti.real_entry_count(ti.time_index_array(tbuf)) == len(entries)


def test_real_entry_count_edge_cases():
    assert oi.real_entry_count(oi.offset_index_array(b"")) == 0
    assert oi.real_entry_count(oi.offset_index_array(bytes(80))) == 1   # an all-zero file: slot 0 counts


# --- parity of schema and fast path (hypothesis) -------------------------------------------------

offset_entries = st.lists(st.tuples(st.integers(0, INT32_MAX), st.integers(0, INT32_MAX)), max_size=60)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**62), offset_entries)
def test_offset_index_schema_and_fast_path_agree(base, rel_pos):
    entries = [(base + r, p) for r, p in rel_pos]
    fast = oi.build_offset_index(entries, base)
    schema = oi.OffsetIndex.build([dict(relative_offset=r, position=p) for r, p in rel_pos])
    assert fast == schema
    assert oi.offset_index_array(fast).tolist() == [(e.relative_offset, e.position)
                                                    for e in oi.OffsetIndex.parse(fast)] == rel_pos
    assert list(struct.iter_unpack(">ii", fast)) == rel_pos


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**62), st.lists(st.tuples(st.integers(-2**63, 2**63 - 1), st.integers(0, INT32_MAX)),
                                       max_size=60))
def test_time_index_schema_and_fast_path_agree(base, ts_rel):
    fast = ti.build_time_index([(t, base + r) for t, r in ts_rel], base)
    assert fast == ti.TimeIndex.build([dict(timestamp=t, relative_offset=r) for t, r in ts_rel])
    assert ti.time_index_array(fast).tolist() == [(e.timestamp, e.relative_offset)
                                                  for e in ti.TimeIndex.parse(fast)] == ts_rel


def test_builders_reject_values_that_do_not_fit():
    with pytest.raises(FormatError) as e:
        oi.build_offset_index([(99, 0)], 100)
    assert e.value.kind == "index_offset_overflow"
    with pytest.raises(FormatError) as e:
        oi.build_offset_index([(100 + 2**31, 0)], 100)
    assert e.value.kind == "index_offset_overflow"
    assert oi.build_offset_index([(100 + INT32_MAX, 0)], 100) == struct.pack(">ii", INT32_MAX, 0)
    with pytest.raises(FormatError):
        oi.build_offset_index([(100, -1)], 100)
    with pytest.raises(FormatError):
        oi.build_offset_index([(2**64, 0)], 100)
    with pytest.raises(FormatError):
        ti.build_time_index([(2**63, 100)], 100)
    with pytest.raises(FormatError):
        ti.build_time_index([(5, 2**31 + 100)], 100)


# --- lookups (§3.5) ------------------------------------------------------------------------------

def test_offset_lookup_semantics_on_the_sample():
    assert oi.offset_lookup(OFFSET_SAMPLE, 100, 1233) == (-1, 100, 0)
    assert oi.offset_lookup(OFFSET_SAMPLE, 100, 1234) == (0, 1234, 0)
    assert oi.offset_lookup(OFFSET_SAMPLE, 100, 1299) == (0, 1234, 0)
    assert oi.offset_lookup(OFFSET_SAMPLE, 100, 1300) == (1, 1300, 4176)
    assert oi.offset_lookup(OFFSET_SAMPLE, 100, 10**12) == (1, 1300, 4176)
    assert oi.offset_lookup(b"", 100, 500) == (-1, 100, 0)
    arr = oi.offset_index_array(OFFSET_SAMPLE)
    assert oi.offset_lookup(arr, 100, 1299) == (0, 1234, 0)


def test_lookup_on_untrimmed_index_needs_the_real_count():
    untrimmed = OFFSET_SAMPLE + bytes(8 * 30)
    real = oi.real_entry_count(oi.offset_index_array(untrimmed))
    assert oi.offset_lookup(untrimmed, 100, 1300, entries=real) == (1, 1300, 4176)
    # Kafka, searching all 32 slots, is misled by the zero tail (that is why it never loads one as-is)
    assert oi.offset_lookup(untrimmed, 100, 1300) != (1, 1300, 4176)


def test_time_lookup_semantics_on_the_sample():
    assert ti.time_lookup(TIME_SAMPLE, 100, 1700000000998) == (-1, -1, 100)
    assert ti.time_lookup(TIME_SAMPLE, 100, 1700000000999) == (0, 1700000000999, 1299)
    assert ti.time_lookup(TIME_SAMPLE, 100, 1800000000000) == (0, 1700000000999, 1299)
    assert ti.time_lookup(b"", 100, 0) == (-1, -1, 100)
    assert ti.largest_lower_bound_slot(TIME_SAMPLE, 1199, key="rel") == 0
    assert ti.largest_lower_bound_slot(TIME_SAMPLE, 1198, key="rel") == -1


def _brute_lower(keys: list[int], target: int) -> int:
    return max((i for i, k in enumerate(keys) if k <= target), default=-1)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 2**32 - 1), st.lists(st.integers(-5, 10**6 + 5), min_size=1,
                                                                 max_size=8))
def test_binary_search_equals_linear_search(n, seed, raw_targets):
    """Sizes up to 3000 slots exercise both Kafka's warm section (last 1024/682 slots) and the cold one."""
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.choice(10**6, size=n, replace=False)).tolist()
    buf = oi.build_offset_index([(100 + k, i) for i, k in enumerate(keys)], 100)
    arr = oi.offset_index_array(buf)
    tbuf = ti.build_time_index([(2 * k - 7, 100 + k) for k in keys], 100)
    tarr = ti.time_index_array(tbuf)
    targets = raw_targets + ([keys[0] - 1, keys[0], keys[-1], keys[-1] + 1, keys[n // 2]] if n else [])
    for t in targets:
        lower = _brute_lower(keys, t)
        assert oi.largest_lower_bound_slot(buf, t) == oi.largest_lower_bound_slot(arr, t) == lower
        slot, off, pos = oi.offset_lookup(buf, 100, 100 + t)
        assert (slot, off, pos) == ((-1, 100, 0) if lower < 0 else (lower, 100 + keys[lower], lower))
        tkeys = [2 * k - 7 for k in keys]
        tl = _brute_lower(tkeys, t)
        assert ti.largest_lower_bound_slot(tbuf, t) == ti.largest_lower_bound_slot(tarr, t) == tl
        assert ti.largest_lower_bound_slot(tbuf, t, key="rel") == lower
        assert ti.time_lookup(tbuf, 100, t) == ((-1, -1, 100) if tl < 0 else (tl, tkeys[tl], 100 + keys[tl]))


def test_binary_search_across_the_warm_section_boundary():
    """Kafka probes the last 1024 (.index) / 682 (.timeindex) slots first; check every slot around that
    boundary, exact hits and gaps, against numpy's searchsorted."""
    n = 5000
    keys = np.arange(n, dtype=np.int64) * 3 + 10                       # gaps between keys
    buf = oi.build_offset_index([(int(k), i) for i, k in enumerate(keys)], 0)
    tbuf = ti.build_time_index([(int(k), int(k)) for k in keys], 0)
    for hot, mod, b in ((n - 1 - 1024, oi, buf), (n - 1 - 682, ti, tbuf)):
        for slot in [0, 1, hot - 2, hot - 1, hot, hot + 1, hot + 2, n - 2, n - 1]:
            for t in (int(keys[slot]) - 1, int(keys[slot]), int(keys[slot]) + 1):
                expected = int(np.searchsorted(keys, t, side="right")) - 1
                assert mod.largest_lower_bound_slot(b, t) == expected, (mod.__name__, slot, t)


def test_binary_search_reads_only_probed_slots(monkeypatch):
    """O(log n): a 1.3M-slot (10 MiB) index is searched by unpacking a few dozen slots, not parsed."""
    probes: list[int] = []

    class CountingStruct(struct.Struct):
        def unpack_from(self, buf, offset=0):
            probes.append(offset)
            return super().unpack_from(buf, offset)

    monkeypatch.setattr(oi, "struct", SimpleNamespace(Struct=CountingStruct, unpack_from=struct.unpack_from))
    n = 1_310_720
    big = np.arange(n, dtype=">i4").repeat(2).tobytes()    # rel = pos = slot number
    assert oi.largest_lower_bound_slot(big, 777_777) == 777_777
    assert 0 < len(probes) <= 2 * 21 + 2


def test_unknown_search_column_is_a_programming_error():
    with pytest.raises(ValueError):
        oi.largest_lower_bound_slot(OFFSET_SAMPLE, 0, key="ts")


# --- the real corpus -----------------------------------------------------------------------------

def _index_files(suffix: str) -> list[Path]:
    return sorted(p for p in CORPUS.rglob(f"*{suffix}") if p.is_file())


@needs_corpus
def test_every_corpus_offset_index_parses_with_schema_fast_path_parity():
    files = _index_files(".index")
    assert len(files) >= 80
    for p in files:
        data = p.read_bytes()
        base = int(p.name[:20])
        arr = oi.offset_index_array(data)
        assert arr.tolist() == [(e.relative_offset, e.position) for e in oi.OffsetIndex.parse(data)], p
        assert oi.check_offset_index(data, base, str(p)) is None, p
        real = oi.real_entry_count(arr)
        assert real == len(arr), p                        # every stored index was trimmed
        assert oi.build_offset_index([(base + r, q) for r, q in arr.tolist()], base) == data, p
        rel, pos = arr["rel"].astype(np.int64), arr["pos"].astype(np.int64)
        assert (np.diff(rel) > 0).all() and (np.diff(pos) > 0).all(), p
        for target in range(-1, int(rel[-1]) + 2 if len(rel) else 1, 97):
            assert oi.largest_lower_bound_slot(data, target) == _brute_lower(rel.tolist(), target)


@needs_corpus
def test_every_corpus_time_index_parses_with_schema_fast_path_parity():
    files = _index_files(".timeindex")
    assert len(files) >= 80
    for p in files:
        data = p.read_bytes()
        base = int(p.name[:20])
        arr = ti.time_index_array(data)
        assert arr.tolist() == [(e.timestamp, e.relative_offset) for e in ti.TimeIndex.parse(data)], p
        assert ti.check_time_index(data, base, str(p)) is None, p
        assert ti.real_entry_count(arr) == len(arr), p
        assert ti.build_time_index([(t, base + r) for t, r in arr.tolist()], base) == data, p
        assert (np.diff(arr["ts"].astype(np.int64)) > 0).all(), p
        assert (np.diff(arr["rel"].astype(np.int64)) >= 0).all(), p


@needs_corpus
def test_corpus_index_values_read_by_hand():
    d = CORPUS / "Niloufar1171__LDI-POC" / "__consumer_offsets-6"
    idx = (d / "00000000000000000000.index").read_bytes()
    assert oi.offset_index_array(idx).tolist() == [(3, 4730), (7, 9571)]
    assert oi.offset_lookup(idx, 0, 6) == (0, 3, 4730)
    tix = ti.time_index_array((d / "00000000000000000000.timeindex").read_bytes())
    assert tix.tolist() == [(1769791783399, 3), (1769792518093, 7), (1769793578176, 12)]

    w = CORPUS / "William0423__kafka" / "kafka-logs" / "__consumer_offsets-28" / "00000000000000000000.index"
    warr = oi.offset_index_array(w.read_bytes())
    assert len(warr) == 254
    assert warr[0].tolist() == (31, 4221) and warr[-1].tolist() == (8179, 1063461)
    assert (CORPUS / "William0423__kafka" / "kafka-logs" / "debug_topic-0"
            / "00000000000000000000.index").stat().st_size == 0


def test_schemas_are_built_on_first_use_and_served_as_module_attributes():
    """The declarative schemas of the modules a lookup imports are built when first asked for
    (``_lazy.lazy_attributes``): the same objects by attribute and by ``from ... import``, and a name
    that is not one of them is an AttributeError without building anything."""
    import importlib
    from kafkalog_formats import control, legacy, record_batch
    for mod, names in ((oi, ("OffsetIndexEntry", "OffsetIndex")), (ti, ("TimeIndexEntry", "TimeIndex")),
                       (record_batch, ("RecordV2", "RecordBatchV2", "RecordHeader", "BatchAttributes")),
                       (legacy, ("LegacyMessage", "NullableBytes32")),
                       (control, ("ControlRecordKey", "EndTxnMarker"))):
        for name in names:
            assert getattr(mod, name) is getattr(importlib.import_module(mod.__name__), name)
            assert hasattr(getattr(mod, name), "parse")
        with pytest.raises(AttributeError):
            getattr(mod, "NoSuchSchema")
    from kafkalog_formats.record_batch import RecordV2
    assert RecordV2 is record_batch.RecordV2
    assert oi.OffsetIndex.parse(struct.pack(">ii", 3, 40)) == [dict(relative_offset=3, position=40)]
