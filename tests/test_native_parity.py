"""The compiled record path against the pure-Python reference, field for field and byte for byte.

Inputs: every fixture segment and KRaft snapshot, the real corpus, a segment with every codec and magic,
and hypothesis-generated batches (clean and damaged). Checked:

* CRC-32C (both the SSE4.2 and the table implementation) against the crc32c package, MD5 against hashlib;
* ``columns.scan``: native tables equal the pure reference's byte for byte, stop positions and reasons
  included, and the pure reference's records equal ``BatchReader``/``records()`` (the project's reader);
* ``native.records``: the same Records as ``iter_records``, or None exactly where it raises;
* rendering: the C text and JSON lines equal ``TextRenderer``/``JsonRenderer`` for every pure-formatting
  decoder combination;
* the offset map and the cleaner's per-record decisions equal ``cleaner.OffsetMap``/``_keep_record``;
* ``gather`` (Arrow buffers) equals the materialized values.
"""
from __future__ import annotations

import hashlib
import io
import os
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_formats import columns as C
from kafkalog_formats import native
from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RECORD_BATCH_OVERHEAD, iter_records

from native_cases import DECOMPRESS, batches, every_codec_and_magic, segment_files, segments

pytestmark = pytest.mark.skipif(native.ext is None, reason=f"native path not active: {native.reason}")
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FILES = segment_files()
FLAG_SETS = [dict(), dict(stop_bad_crc=True, stop_control=True, pairs=True), dict(headers=False, crc=False),
             dict(records=False), dict(lo=3, hi=40, pairs=True), dict(max_records=7), dict(until=300)]


def clean_ext():
    """The repair layer's extension (``kafkalog_cli.repair._native_clean``), active wherever the format layer's is."""
    from kafkalog_cli.repair import native_clean
    assert native_clean.ext is not None, native_clean.reason
    return native_clean.ext


def _file_id(p):
    return str(p.relative_to(p.parents[2]))


class Handed(int):
    """Position of a batch a scan handed to the pure path (an item of ``walk``'s list)."""


def walk(data: bytes, pure: bool | None, **kw) -> list:
    """Scan the whole buffer, stepping over each batch the scan hands to the pure path."""
    out, pos = [], 0
    while True:
        s = C.scan(data, pos, None, decompress=DECOMPRESS, pure=pure, **kw)
        out.append(s)
        if s.reason == C.LIMIT and s.stop < kw.get("until", len(data) + 1):
            pos = s.stop
        elif s.reason == C.PYTHON and s.stop < kw.get("until", len(data) + 1):
            nxt = next(iter(BatchReader(data, s.stop)), None)
            out.append(Handed(s.stop))
            if nxt is None:
                return out
            pos = s.stop + nxt.size
        else:
            return out


def assert_same_scans(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, Handed):
            assert isinstance(y, Handed) and x == y
            continue
        assert (x.stop, x.reason, x.pairs, x.prev_offset) == (y.stop, y.reason, y.pairs, y.prev_offset)
        assert x.batches == y.batches and x.rows == y.rows and x.headers == y.headers
        assert [bytes(s) for s in x.sources[1:]] == [bytes(s) for s in y.sources[1:]]


def reference_records(data: bytes, s: C.Scan, lo=None, hi=None) -> list:
    """What the project's reader gives for the batches a scan covered."""
    bt = s.batch_table()
    out = []
    for i in range(s.n_batches):
        pos = bt[i * C.NB + C.B["position"]]
        b = next(iter(BatchReader(data, pos)))
        for r in b.records(max_output=64 * 1024 * 1024):
            if (lo is not None and r.offset < lo) or (hi is not None and r.offset > hi):
                continue
            out.append((i, r.offset, r.timestamp, r.key, r.value, r.headers, r.sequence, r.attributes))
    return out


# --- checksums -------------------------------------------------------------------------------------

def test_crc32c_matches_the_crc32c_package():
    import crc32c
    rnd = random.Random(7)
    assert native.ext.crc32c(b"123456789") == 0xE3069283
    for size in (0, 1, 7, 8, 9, 63, 767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 100_003, 1 << 20):
        data = rnd.randbytes(size + 8)
        for shift in range(8):
            assert native.ext.crc32c(data[shift:shift + size]) == crc32c.crc32c(data[shift:shift + size])
        assert native.ext.crc32c(data, 0xDEADBEEF) == crc32c.crc32c(data, 0xDEADBEEF)


def test_crc32c_table_implementation_matches_too():
    code = ("import crc32c, random; from kafkalog_formats import _native as n; assert n.crc32c_impl() == 'table'; "
            "r = random.Random(3)\nfor s in list(range(0, 300)) + [30000, 100001]:\n"
            "    d = r.randbytes(s); assert n.crc32c(d) == crc32c.crc32c(d), s\nprint('ok')")
    env = dict(os.environ, KAFKALOG_NATIVE_NO_SSE42="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_md5_matches_hashlib():
    rnd = random.Random(5)
    keys = []
    for size in list(range(0, 130)) + [1000, 65536]:
        data = rnd.randbytes(size)
        assert clean_ext().md5(data) == hashlib.md5(data).digest()
        keys.append(data)
    keys += [rnd.randbytes(rnd.randrange(60)) for _ in range(333)]
    rnd.shuffle(keys)
    assert clean_ext().md5_many(keys) == b"".join(hashlib.md5(k).digest() for k in keys)     # eight at a time


def test_md5_without_avx2_matches_too():
    code = ("import hashlib, random; from kafkalog_cli.repair import _native_clean as n; r = random.Random(2)\n"
            "keys = [r.randbytes(r.randrange(70)) for _ in range(500)]\n"
            "assert n.md5_many(keys) == b''.join(hashlib.md5(k).digest() for k in keys); print('ok')")
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, KAFKALOG_NATIVE_NO_AVX2="1"),
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# --- scan ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", FILES, ids=_file_id)
def test_scan_native_equals_pure_on_every_segment(path):
    data = path.read_bytes()
    for flags in FLAG_SETS:
        assert_same_scans(walk(data, False, **flags), walk(data, True, **flags))


@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: ",".join(f) or "default")
def test_scan_native_equals_pure_on_every_codec_and_magic(flags):
    data = every_codec_and_magic()
    native_scans = walk(data, False, **flags)
    assert_same_scans(native_scans, walk(data, True, **flags))
    handed = sum(1 for s in native_scans if isinstance(s, Handed))
    if "hi" in flags:
        assert native_scans[-1].reason == C.TO_OFFSET
    elif "until" in flags:
        assert native_scans[-1].reason == C.LIMIT and native_scans[-1].stop >= flags["until"]
    else:
        assert handed >= 8                  # the legacy entries
    decompressed = any(s.n_batches and len(s.sources) > 1 for s in native_scans if not isinstance(s, Handed))
    assert decompressed == (flags.get("records", True) and "until" not in flags)


@pytest.mark.parametrize("path", FILES + ["every-codec"], ids=lambda p: p if isinstance(p, str) else _file_id(p))
def test_scan_gives_the_records_of_the_reference_reader(path):
    data = every_codec_and_magic() if path == "every-codec" else path.read_bytes()
    n = 0
    for lo, hi in ((None, None), (5, 30)):
        for s in walk(data, None, lo=lo, hi=hi):
            if isinstance(s, Handed):
                continue
            assert list(s.records()) == reference_records(data, s, lo, hi)
            n += s.n_rows
    if path == "every-codec":
        assert n > 100


@PROPERTY
@given(data=segments())
def test_generated_segments_scan_parity(data):
    for flags in (dict(), dict(stop_bad_crc=True, stop_control=True, pairs=True), dict(lo=3, hi=20)):
        scans = walk(data, False, **flags)
        assert_same_scans(scans, walk(data, True, **flags))
        for s in scans:
            if not isinstance(s, Handed):
                assert list(s.records()) == reference_records(data, s, flags.get("lo"), flags.get("hi"))


# --- records() ---------------------------------------------------------------------------------------

def _sections(data: bytes):
    """(records section, header fields) of every v2 batch whose section can be read."""
    for b in BatchReader(data):
        if b.magic != 2:
            continue
        raw = memoryview(data)[b.position + RECORD_BATCH_OVERHEAD:b.position + b.size]
        try:
            section = DECOMPRESS(b.codec, raw) if b.codec else bytes(raw)
        except FormatError:
            continue
        lat = b.max_timestamp if b.log_append_time else None
        yield section, (b.count, b.base_offset, b.base_timestamp, b.base_sequence, lat)


def _overflows(section, fields) -> bool:
    """Whether a record's ``base + delta`` leaves the int64 range (the native path hands such a batch over;
    the pure one computes it, as Java's long sum or as a Python int)."""
    spans = C.record_spans(section, *fields)
    return any(not C.INT64_MIN <= v <= C.INT64_MAX for sp in spans for v in sp[:2])


def assert_records_parity(section, fields) -> None:
    got = native.records(section, *fields)
    try:
        want = list(iter_records(section, *fields))
    except FormatError:
        want = None
    if got is None and want is not None:     # handed over: an offset or timestamp sum beyond 64 bits
        assert _overflows(section, fields)
    else:
        assert got == want


@pytest.mark.parametrize("path", FILES + ["every-codec"], ids=lambda p: p if isinstance(p, str) else _file_id(p))
def test_records_equal_iter_records(path):
    data = every_codec_and_magic() if path == "every-codec" else path.read_bytes()
    for section, fields in _sections(data):
        assert native.records(section, *fields) == list(iter_records(section, *fields))


@PROPERTY
@given(batch=batches(), edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
                                       max_size=4), cut=st.one_of(st.none(), st.floats(0, 1)),
       count_delta=st.sampled_from([0, 0, 0, 1, -1, -(2**31)]))
def test_damaged_sections_fail_exactly_where_iter_records_fails(batch, edits, cut, count_delta):
    for section, (count, *rest) in _sections(batch):
        s = bytearray(section)
        for where, value in edits:
            if s:
                s[int(where * len(s))] = value
        if cut is not None:
            s = s[:int(cut * len(s))]
        count = max(-(2**31), min(2**31 - 1, count + count_delta))
        assert_records_parity(bytes(s), (count, *rest))


@pytest.mark.parametrize("section", [
    b"\x0c\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",       # varlong too long
    b"\x0e\x00\x00\x80\x80\x80\x80\x10\x01\x01\x00",            # offset delta varint too long
    b"\x0c\x00\x00\x80\x00\x01\x01\x00",                        # non-minimal varints are valid
    b"\x0a\x00\x80\x80\x80\x80\x80\x80\x80\x80\x01",            # timestamp varlong reaching the body end
    b"\x14\x00\x80\x80\x80\x80\x80\x80\x80\x80\x01",            # ... and the end of the data
    b"\x0c\x00\x80\x80\x80\x80\x01",                             # a shorter one, also at the data end
    b"\x10\x00\x00\x00\x02\x61\x01\x02\x00\x01",                # header count past the body
    b"\x0c\x00\x00\x00\x01\x01\x02\x02\x61\x01",                # header key reaching the body end
])
def test_hand_made_sections(section):
    assert_records_parity(section, (1, 100, 1000, 5, None))


# --- rendering ---------------------------------------------------------------------------------------

DECODERS = ["string", "hex", "base64", "none", "json"]


def _pure_items(data: bytes, s: C.Scan, f: str):
    from kafkalog_cli.engine.dump import BatchItem, RecordItem
    items = []
    for b in BatchReader(data, 0, s.stop):
        recs = [RecordItem(r, None) for r in b.records(max_output=64 * 1024 * 1024)]
        items.append(BatchItem(f, b, recs))
    return items


def assert_render_parity(data: bytes, f: str, decoders=DECODERS) -> int:
    from kafkalog_cli.render import native_lines as nl
    from kafkalog_cli.render import jsonl
    from kafkalog_cli.render.jsonl import JsonRenderer
    from kafkalog_cli.render.kafka_text import TextRenderer
    s = C.scan(data, 0, None, decompress=DECOMPRESS, stop_bad_crc=True, stop_control=True)
    if not s.n_batches:
        return 0
    items = _pure_items(data, s, f)
    assert len(items) == s.n_batches
    for kd in decoders:
        for vd in decoders:
            for print_data in (False, True):
                for deep in (False, True):
                    evs = items if deep else [it._replace(records=None) for it in items]
                    for skip in (False, True):
                        o = io.StringIO()
                        tr = TextRenderer(o, io.StringIO(), kd, vd, print_data, skip)
                        for it in evs:
                            tr.emit(it)
                        out = bytearray()
                        nl.render_text(s, out, deep=deep, print_data=print_data, skip_metadata=skip,
                                       key_decoder=kd, value_decoder=vd)
                        assert out.decode("utf-8") == o.getvalue()
                    if nl.json_supported(kd, vd):
                        o = io.StringIO()
                        jr = JsonRenderer(o, kd, vd, print_data)
                        for it in evs:
                            jr.emit(it)
                        out = bytearray()
                        nl.render_json(s, out, file_json=jsonl.file_fields_json(f), deep=deep, print_data=print_data,
                                       key_decoder=kd, value_decoder=vd)
                        assert out.decode("utf-8") == o.getvalue()
    return s.n_batches


@pytest.mark.parametrize("path", FILES + ["every-codec"], ids=lambda p: p if isinstance(p, str) else _file_id(p))
def test_rendering_equals_the_pure_renderers(path):
    data = every_codec_and_magic() if path == "every-codec" else path.read_bytes()
    f = str(path) if path != "every-codec" else "/tmp/ünïcode \"name\"\t.log"
    if path == "every-codec" or "samples" in str(path):
        decoders = DECODERS
    else:                                  # the decoders' own code is covered above and by hypothesis
        decoders = ["string", "hex"] if len(data) < 256 * 1024 else ["string"]
    assert_render_parity(data, f, decoders)


@PROPERTY
@given(data=segments(damaged=False))
def test_generated_batches_render_as_the_pure_renderers(data):
    assert_render_parity(data, "gen/00000000000000000000.log")


def test_rendering_refuses_what_it_does_not_cover():
    from kafkalog_cli.render import native_lines as nl
    data = every_codec_and_magic()
    s = C.scan(data, 0, None, decompress=DECOMPRESS)      # control batch included, not stopped at
    assert any(int(a) & 0x20 for a in s.numpy()[0][:, C.B["attributes"]])
    with pytest.raises(ValueError):
        nl.render_text(s, bytearray(), deep=True, print_data=True, skip_metadata=False, key_decoder="string",
                       value_decoder="string")
    tampered = C.Scan(*s[:2], s.batches, bytearray(s.rows[:-8]) + (10**9).to_bytes(8, "little", signed=True),
                      *s[4:])
    with pytest.raises(ValueError):
        nl.render_json(tampered, bytearray(), file_json=b'"f"', deep=True, print_data=True, key_decoder="string",
                       value_decoder="string")


# --- cleaner -----------------------------------------------------------------------------------------

@PROPERTY
@given(ops=st.lists(st.tuples(st.binary(max_size=3), st.integers(0, 50)), max_size=60),
       slots=st.integers(1, 40), lookups=st.lists(st.binary(max_size=3), max_size=20))
def test_offset_map_equals_the_cleaners(ops, slots, lookups):
    from kafkalog_cli.repair.cleaner import OffsetMap
    pure, fast = OffsetMap(slots, 0.9), clean_ext().OffsetMap(slots, 0.9)
    for key, offset in ops:
        assert fast.put(key, offset) == pure.put(key, offset)
        assert (len(fast), fast.full, fast.latest_offset) == (len(pure), pure.full, pure.latest_offset)
        assert bytes(memoryview(fast)) == bytes(pure.table)
    assert fast.max_entries == pure.max_entries
    for key in lookups + [k for k, _ in ops]:
        assert fast.get(key) == pure.get(key)


@PROPERTY
@given(data=segments(damaged=False), slots=st.integers(1, 30), first_dirty=st.integers(0, 60),
       now=st.integers(0, 2**42), latest=st.integers(-1, 80))
def test_map_put_and_keep_mask_equal_the_cleaner_loops(data, slots, first_dirty, now, latest):
    from kafkalog_cli.repair.cleaner import OffsetMap, _keep_record
    pure, fast = OffsetMap(slots, 0.9), clean_ext().OffsetMap(slots, 0.9)
    for b in BatchReader(data):
        if b.magic != 2:
            continue
        raw = memoryview(data)[b.position + RECORD_BATCH_OVERHEAD:b.position + b.size]
        try:
            section = DECOMPRESS(b.codec, raw) if b.codec else bytes(raw)
        except FormatError:
            continue
        lat = b.max_timestamp if b.log_append_time else None
        fields = (b.count, b.base_offset, b.base_timestamp, b.base_sequence, lat)
        try:
            recs = list(iter_records(section, *fields))
        except FormatError:
            recs = None
        got = clean_ext().map_put(fast, section, *fields, first_dirty)
        if recs is None or _overflows(section, fields):
            assert got is None            # handed to the pure path (an error, or offsets beyond 64 bits)
            continue
        want = 1
        for r in recs:
            if r.key is not None and r.offset >= first_dirty and not pure.put(r.key, r.offset):
                want = 0
                break
        assert got == want and len(fast) == len(pure) and fast.full == pure.full
        assert bytes(memoryview(fast)) == bytes(pure.table)
        assert fast.latest_offset == pure.latest_offset
        pure.latest_offset = fast.latest_offset = latest
        mask, kept, tombstones = clean_ext().keep_mask(fast, section, *fields, b.delete_horizon_ms, now)
        want_mask = [_keep_record(r, b, pure, now, False) for r in recs]
        assert list(mask) == want_mask and kept == sum(want_mask)
        assert tombstones == sum(1 for r, k in zip(recs, want_mask) if k and r.value is None)
        if not want:
            break


# --- verify's batch table -------------------------------------------------------------------------

@PROPERTY
@given(batches=st.lists(st.tuples(st.integers(0, 10), st.integers(-3, 4), st.integers(-10, 10),
                                  st.sampled_from([0, 1, 5, -1])), max_size=40),
       positions=st.lists(st.integers(0, 400), max_size=8), offsets=st.lists(st.integers(-5, 100), max_size=8),
       full=st.booleans())
def test_batch_table_rows_equal_the_pure_ones(batches, positions, offsets, full):
    """``_native.table_add`` (what verify_walk does per batch) against ``_BatchTable.add``."""
    import numpy as np
    from kafkalog_cli.engine.verify_segment import _BatchTable
    keep = (None, None) if full else (np.unique(np.array(positions, np.int64)), np.unique(np.array(offsets, np.int64)))
    pure = _BatchTable(*keep)
    state, rows = bytearray(8 * _BatchTable.STATE), bytearray()
    memoryview(state).cast("q")[7] = 1
    pos = last = 0
    for step, delta, ts, count in batches:
        pos += 10 + step
        last += delta
        pure.add(pos, last, ts, count)
        native.ext.table_add(state, rows, None if full else keep[0].tobytes(), None if full else keep[1].tobytes(),
                             pos, last, ts, count)
    assert bytes(rows) == bytes(pure.rows) and bytes(state) == bytes(pure.state)


# --- Arrow buffers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", FILES[:40] + ["every-codec"], ids=lambda p: p if isinstance(p, str) else _file_id(p))
def test_gather_gives_the_values(path):
    import numpy as np
    data = every_codec_and_magic() if path == "every-codec" else path.read_bytes()
    for s in walk(data, None):
        if isinstance(s, Handed) or not s.n_rows:
            continue
        bt, rows, _h = s.numpy()
        row_source = np.repeat(bt[:, C.B["source"]], bt[:, C.B["rows"]]).astype(np.int64)
        recs = list(s.records())
        for field, idx in (("key", 3), ("value", 4)):
            offs, payload, valid, nulls = native.ext.gather(s.rows, C.NR, C.R[f"{field}_pos"], C.R[f"{field}_len"],
                                                            s.sources, row_source)
            o = np.frombuffer(offs, np.int32)
            got = [bytes(payload[o[i]:o[i + 1]]) if valid[i >> 3] >> (i & 7) & 1 else None for i in range(len(recs))]
            assert got == [r[idx] for r in recs] and nulls == sum(1 for r in recs if r[idx] is None)


@pytest.mark.parametrize("damage", [None, "last_record", "count"])
def test_a_batch_of_more_records_than_a_chunk_decodes_in_chunks_as_iter_records(damage):
    """A batch of more than ``native.RECORDS_CHUNK`` records is made into Records a chunk at a time (a
    batch of millions never becomes one list); the records are those of the pure decoder, and a section
    the pure decoder fails on is handed over whole (validated before the first chunk)."""
    from damage import tiny_records
    n = 3 * native.RECORDS_CHUNK + 5
    section = bytearray(tiny_records(n))
    count = n
    if damage == "last_record":
        section[-1] = 0x05               # header count 5 past the end of the last record
    elif damage == "count":
        count = n + 1
    fields = (count, 1000, 1_700_000_000_000, 7, None)
    got = native.records(bytes(section), *fields)
    try:
        want = list(iter_records(bytes(section), *fields))
    except FormatError:
        want = None
    if want is None:
        assert got is None
    else:
        assert not isinstance(got, list) and list(got) == want and len(want) == n


# --- recover's walk (LogSegment.recover) ---------------------------------------------------------------

@st.composite
def recover_segments(draw) -> tuple[int, bytes]:
    """(base offset, bytes) of a segment for recovery: runs of plain batches between batches the C walk
    leaves to the loop (a producer id, a transaction marker, a legacy message, a new or lower leader epoch,
    offsets going backwards, beyond the segment's 2^31 range), timestamps up and down, maybe damaged."""
    from kafkalog_formats import control as ctl
    from kafkalog_formats.legacy import build_message
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    base = draw(st.sampled_from([0, 1000, 2**40]))
    off, epoch, out = base, draw(st.integers(-1, 3)), []
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["plain"] * 8 + ["pid", "control", "legacy", "back", "epoch", "far"]))
        n = draw(st.integers(1, 3))
        ts = 1_700_000_000_000 + draw(st.integers(-5, 50)) * 1000
        specs = [RecordSpec(i, ts + i, b"k", b"v" * draw(st.integers(0, 40))) for i in range(n)]
        if kind == "back":
            off = max(base, off - draw(st.integers(1, 10)))
        elif kind == "far":
            off += 2**31
        elif kind == "epoch":
            epoch += draw(st.sampled_from([-1, 1, 2]))
        if kind == "legacy":
            out.append(build_message(off, b"k", b"v", magic=1, timestamp=ts))
            off += 1
            continue
        kw = {}
        if kind in ("pid", "control"):
            kw = dict(producer_id=7, producer_epoch=0, base_sequence=-1 if kind == "control" else 0,
                      is_transactional=kind == "control")
        if kind == "control":
            specs = [RecordSpec(0, ts, ctl.build_control_key(ctl.ABORT), ctl.build_end_txn_marker(0))]
            kw["is_control"] = True
        out.append(build_batch(off, specs, codec=draw(st.sampled_from([0, 0, 3])), partition_leader_epoch=epoch,
                               **kw))
        off += len(specs)
    data = bytearray(b"".join(out))
    if draw(st.booleans()):
        for _ in range(draw(st.integers(1, 3))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]
    return base, bytes(data)


def _recover_both(data, base: int, interval: int, epochs: list, with_state: bool):
    """recover_segment on the native path and on the pure one: (results, how many batches C took)."""
    from kafkalog_cli.engine.producer_state import ProducerState
    from kafkalog_cli.repair.epoch_cache import EpochCache
    from kafkalog_cli.repair.segment_recovery import recover_segment
    taken, ext = [], native.ext

    class Spy:
        def __getattr__(self, name):
            return getattr(ext, name)

        def recover_run(self, *a):
            r = ext.recover_run(*a)
            taken.append(r[2])
            return r
    out = []
    for impl in (Spy(), None):
        native.ext = impl
        try:
            state = ProducerState() if with_state else None
            cache = EpochCache(epochs)
            res = recover_segment(data, base, index_interval_bytes=interval, state=state, epochs=cache,
                                  path="/d/t-0/x.log")
        finally:
            native.ext = ext
        out.append((res, cache.entries, None if state is None else (state.entries, state.map_end_offset)))
    return out, sum(taken)


@PROPERTY
@given(seg=recover_segments(), interval=st.sampled_from([0, 1, 64, 200, 4096]),
       epochs=st.sampled_from([[], [(0, 0)], [(2, 0)], [(5, 0)]]), with_state=st.booleans())
def test_recover_walk_equals_the_pure_loop(seg, interval, epochs, with_state):
    """``recover_run`` takes runs of plain batches for ``recover_segment``: the same truncation, index and
    time-index bytes, batches, log end, producer state and epoch cache as the pure loop alone."""
    base, data = seg
    (fast, pure), _ = _recover_both(data, base, interval, epochs, with_state)
    assert fast == pure


@pytest.mark.parametrize("path", FILES + ["every-codec"], ids=lambda p: p if isinstance(p, str) else _file_id(p))
def test_recover_walk_equals_the_pure_loop_on_every_segment(path):
    data = every_codec_and_magic() if path == "every-codec" else path.read_bytes()
    base = 0 if path == "every-codec" else (int(path.name[:20]) if path.name[:20].isdigit() else 0)
    for interval in (0, 4096):
        (fast, pure), taken = _recover_both(data, base, interval, [], True)
        assert fast == pure
    if path == "every-codec":
        assert taken > 0


def _replay_both(data: bytes, from_offset: int, snapshot: bool):
    """replay_segment and next_offset_of on both paths (native with ``header_walk``, pure loops)."""
    from kafkalog_cli.engine.producer_state import ProducerState
    from kafkalog_cli.repair.segment_recovery import next_offset_of, replay_segment
    ext, out = native.ext, []
    for impl in (ext, None):
        native.ext = impl
        try:
            state = ProducerState()
            if snapshot:               # an open transaction of producer 7 from an earlier segment
                from kafkalog_cli.engine.producer_state import ProducerStateEntry
                state.entries[7] = ProducerStateEntry(7, 0, 0, 0, 0, 0, -1, 0)
            nxt = replay_segment(data, state, from_offset)
            out.append((nxt, state.entries, state.map_end_offset, state.stop, next_offset_of(data, 123)))
        finally:
            native.ext = ext
    return out


@PROPERTY
@given(seg=recover_segments(), from_offset=st.sampled_from([0, 5, 1003, 2**40 + 7, 2**62]), snapshot=st.booleans())
def test_replay_and_next_offset_equal_the_pure_loops(seg, from_offset, snapshot):
    """``header_walk`` for the producer-state replay below the recovery point and the log end offset: the
    same producer entries, end offset, stop and next offset as the pure ``BatchReader`` loops."""
    _base, data = seg
    fast, pure = _replay_both(data, from_offset, snapshot)
    assert fast == pure


@pytest.mark.parametrize("path", FILES + ["every-codec"], ids=lambda p: p if isinstance(p, str) else _file_id(p))
def test_replay_and_next_offset_equal_the_pure_loops_on_every_segment(path):
    data = every_codec_and_magic() if path == "every-codec" else path.read_bytes()
    for from_offset in (0, 20, 2**62):
        fast, pure = _replay_both(data, from_offset, False)
        assert fast == pure


# --- the library's batch views, records and LZ4/zstd unframing (issue 24, item 8) -------------------------

_VIEW_FIELDS = ("position", "size", "base_offset", "partition_leader_epoch", "magic", "crc", "attributes",
                "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                "base_sequence", "count", "last_offset", "codec", "is_transactional", "is_control",
                "log_append_time", "timestamp_type", "delete_horizon_ms", "last_sequence", "codec_name")


def _outcome(fn):
    """(items, the exception's type, text and position, or None) of iterating ``fn()``."""
    items = []
    try:
        for x in fn():
            items.append(x)
    except FormatError as e:
        return items, (type(e).__name__, str(e), e.position, e.offset)
    return items, None


def _walks(data: bytes):
    """The entries and stop of BatchReader on the compiled path, and on the pure loop with pure views."""
    from kafkalog_formats import message_set as ms

    def native_walk():
        r = ms.BatchReader(data)
        return [(type(b).__name__, b.position) for b in r], r.stop

    def pure_walk():
        r = ms.BatchReader(data)
        return [(type(b).__name__, b.position) for b in r._walk()], r.stop
    return native_walk(), pure_walk()


def assert_view_parity(data: bytes) -> None:
    from kafkalog_formats import message_set as ms
    fast, pure = _walks(data)
    assert fast == pure
    for b in ms.BatchReader(data):
        if not isinstance(b, ms.BatchV2View):
            continue
        p = ms.PureBatchV2View(data, b.position)
        assert [getattr(b, f) for f in _VIEW_FIELDS] == [getattr(p, f) for f in _VIEW_FIELDS]
        assert (b.is_valid(), b.computed_crc(), b.raw()) == (p.is_valid(), p.computed_crc(), p.raw())
        assert _outcome(b.records) == _outcome(lambda: p.records())


@pytest.mark.parametrize("path", FILES + ["every-codec"], ids=lambda p: p if isinstance(p, str) else _file_id(p))
def test_views_records_and_walk_equal_the_pure_ones_on_every_segment(path):
    """``_native.BatchBase`` (BatchV2View), its ``records()`` iterator and ``batch_iter`` against
    ``PureBatchV2View``, the pure generator and BatchReader's pure loop."""
    assert_view_parity(every_codec_and_magic() if path == "every-codec" else path.read_bytes())


@PROPERTY
@given(data=segments(damaged=True))
def test_views_records_and_walk_equal_the_pure_ones_on_damaged_segments(data):
    """Damaged sections: the C iterator hands over to the pure generator at the first record it cannot give,
    so the records before the error and the FormatError itself are the pure path's."""
    assert_view_parity(data)


@PROPERTY
@given(raw=st.binary(max_size=3000), codec=st.sampled_from([1, 2, 3, 4]), edits=st.lists(
    st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=3), cut=st.booleans(),
       bound=st.sampled_from([10, 1000, 1 << 27]))
def test_fast_decompress_equals_codecs_decompress(raw, codec, edits, cut, bound):
    """``_native.fast_decompress`` (gzip, snappy, LZ4, zstd decoded in C) gives what ``codecs.decompress``
    gives, or None (never anything else): damaged streams, stored and compressed LZ4 blocks, output above
    the bound; and an undamaged section within the bound, as the Java producer writes it, it decodes."""
    from kafkalog_formats import codecs
    data = bytearray(codecs.compress(codec, raw))
    for at, v in edits:
        data[int(at * len(data))] = v
    if cut:
        data = data[:len(data) // 2]
    try:
        want = codecs.decompress(codec, bytes(data), max_output=bound)
    except FormatError:
        want = None
    got = native.ext.fast_decompress(codec, bytes(data), bound)
    assert got is None or (got == want and type(got) is type(want))
    if not edits and not cut and bound == 1 << 27:
        assert got == raw


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_fast_decompress_of_large_sections_and_the_result_type(codec):
    """Sections of up to 12 MiB: bytes up to 8 MiB, a bytearray above (as codecs._result), equal to the pure
    path's; the bound applies to the output (one byte above it: the pure path reports it)."""
    from kafkalog_formats import codecs
    rnd = random.Random(codec)
    for size in (0, 1, 65536, 8 * 1024 * 1024, 12 * 1024 * 1024):
        raw = (rnd.randbytes(1000) + bytes(3000)) * (size // 4000) + bytes(size % 4000)
        data = codecs.compress(codec, raw)
        got = native.ext.fast_decompress(codec, data, 1 << 27)
        want = codecs.decompress(codec, data)
        assert got == want == raw and type(got) is type(want), size
        if size:
            assert native.ext.fast_decompress(codec, data, size - 1) is None
            at_bound = native.ext.fast_decompress(codec, data, size)
            # gzip and snappy know their exact size; LZ4 and zstd an upper bound, so a section filling the
            # bound exactly may be left to the pure path
            assert at_bound == raw if codec in (1, 2) else at_bound in (None, raw)


class _Bits:
    """A DEFLATE bit stream (RFC 1951): fields LSB first, Huffman codes MSB first."""

    def __init__(self):
        self.acc = self.n = 0
        self.out = bytearray()

    def put(self, value: int, bits: int) -> None:
        self.acc |= value << self.n
        self.n += bits
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def code(self, code: tuple) -> None:
        value, bits = code
        self.put(int(format(value, f"0{bits}b")[::-1], 2), bits)

    def align(self) -> None:
        if self.n:
            self.put(0, 8 - self.n)

    def done(self) -> bytes:
        self.align()
        return bytes(self.out)


def _canonical(lengths: list) -> dict:
    """symbol -> (code, length) of a canonical Huffman code (RFC 1951 3.2.2)."""
    counts = [lengths.count(b) for b in range(16)]
    counts[0] = 0
    code, first = 0, [0] * 16
    for b in range(1, 16):
        code = (code + counts[b - 1]) << 1
        first[b] = code
    out = {}
    for sym, b in enumerate(lengths):
        if b:
            out[sym] = (first[b], b)
            first[b] += 1
    return out


_FIXED_LIT = _canonical([8] * 144 + [9] * 112 + [7] * 24 + [8] * 8)
_PRECODE_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]


def _dynamic(bits: _Bits, lit_lengths: list, dist_lengths: list, pre_lengths: dict) -> dict:
    """A dynamic block's header (BFINAL set): the code lengths written one by one with the precode
    ``pre_lengths`` (length value -> its precode length); returns the literal/length code."""
    bits.put(1, 1)
    bits.put(2, 2)
    bits.put(len(lit_lengths) - 257, 5)
    bits.put(len(dist_lengths) - 1, 5)
    order = [pre_lengths.get(sym, 0) for sym in _PRECODE_ORDER]
    while order[-1] == 0:
        order.pop()
    bits.put(len(order) - 4, 4)
    for b in order:
        bits.put(b, 3)
    pre = _canonical([pre_lengths.get(sym, 0) for sym in range(19)])
    for b in lit_lengths + dist_lengths:
        bits.code(pre[b])
    return _canonical(lit_lengths)


def _gzip(deflate: bytes, output: bytes) -> bytes:
    import struct
    import zlib
    return bytes.fromhex("1f8b0800000000000000") + deflate + struct.pack("<II", zlib.crc32(output), len(output))


def _deflate_cases():
    """(name, gzip member, what libdeflate as released decodes from it, whether zlib accepts it): the
    streams where libdeflate and zlib disagree, which kafkalog's copy of libdeflate refuses."""
    cases = []
    b = _Bits()                                       # fixed block: literal/length symbol 286
    b.put(1, 1), b.put(1, 2)
    b.code(_FIXED_LIT[65]), b.code(_FIXED_LIT[286]), b.code((0, 5)), b.code(_FIXED_LIT[256])
    cases.append(("fixed litlen 286", b.done(), b"A" * 259, False))
    b = _Bits()                                       # stored 30,000 bytes, then a fixed block: distance 30
    stored = bytes(range(256)) * 117 + bytes(48)
    b.put(0, 1), b.put(0, 2), b.align()
    b.put(len(stored), 16), b.put(len(stored) ^ 0xFFFF, 16)
    for byte in stored:
        b.put(byte, 8)
    b.put(1, 1), b.put(1, 2)
    b.code(_FIXED_LIT[257]), b.code((30, 5)), b.put(0, 13), b.code(_FIXED_LIT[256])
    cases.append(("fixed distance 30", b.done(), stored + stored[-24577:][:3], False))
    b = _Bits()                                       # 288 literal/length lengths (zlib: at most 286)
    lit = _dynamic(b, [8] * 224 + [9] * 64, [1, 1], {8: 1, 9: 2, 1: 2})
    b.code(lit[65]), b.code(lit[256])
    cases.append(("288 literal/length codes", b.done(), b"A", False))
    b = _Bits()                                       # 31 distance lengths (zlib: at most 30)
    lit = _dynamic(b, [8] * 226 + [9] * 60, [4] + [5] * 30, {8: 2, 9: 2, 4: 2, 5: 2})
    b.code(lit[65]), b.code(lit[256])
    cases.append(("31 distance codes", b.done(), b"A", False))
    b = _Bits()                                       # one distance code of length 1: incomplete, zlib takes it
    lit = _dynamic(b, [8] * 255 + [9] * 2, [1], {8: 1, 9: 2, 1: 2})
    b.code(lit[65]), b.code(lit[256])
    cases.append(("incomplete distance code", b.done(), b"A", True))
    return cases


@pytest.mark.parametrize("name,deflate,released,zlib_accepts", _deflate_cases(), ids=[c[0] for c in _deflate_cases()])
def test_gzip_in_c_refuses_what_zlib_refuses(name, deflate, released, zlib_accepts):
    """kafkalog's copy of libdeflate (formats/_native_c/vendor/README.md) refuses the DEFLATE streams on
    which libdeflate as released and zlib (Java's GZIPInputStream, the pure path) disagree: the fixed code's
    literal/length symbols 286-287 and distance symbols 30-31, more than 286/30 code lengths (zlib refuses
    all of these, libdeflate decodes them), and incomplete codes (zlib accepts two kinds): the batch then
    goes to the pure path, so what C decodes is always what zlib decodes."""
    import ctypes
    import ctypes.util
    from kafkalog_formats import codecs
    member = _gzip(deflate, released)
    lib = ctypes.util.find_library("deflate")
    if lib:                 # the case is one where libdeflate as released decodes the stream
        ld = ctypes.CDLL(lib)
        ld.libdeflate_alloc_decompressor.restype = ctypes.c_void_p
        d = ld.libdeflate_alloc_decompressor()
        out, n = ctypes.create_string_buffer(len(released) + 64), ctypes.c_size_t()
        ld.libdeflate_deflate_decompress.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                                     ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        assert ld.libdeflate_deflate_decompress(d, deflate, len(deflate), out, len(out), ctypes.byref(n)) == 0
        assert out.raw[:n.value] == released
    if zlib_accepts:
        assert codecs.decompress(codecs.GZIP, member) == released
    else:
        with pytest.raises(FormatError, match="gzip"):
            codecs.decompress(codecs.GZIP, member)
    assert native.ext.fast_decompress(codecs.GZIP, member, 1 << 27) is None


def test_zstd_in_c_refuses_a_window_the_streaming_decoder_refuses():
    """A frame whose window is above 128 MiB (zstd's streaming decoder, the pure path, refuses it) is left
    to the pure path, which reports it; one-shot decoding in C would have taken it."""
    import zstandard
    from kafkalog_formats import codecs
    # magic, frame header descriptor 0 (no content size), window descriptor 2^(10 + 18), one raw last block
    frame = bytes.fromhex("28b52ffd00") + bytes([18 << 3]) + ((1000 << 3) | 1).to_bytes(3, "little") + b"x" * 1000
    assert zstandard.get_frame_parameters(frame).window_size == 1 << 28
    with pytest.raises(FormatError, match="zstd"):
        codecs.decompress(codecs.ZSTD, frame)
    assert native.ext.fast_decompress(codecs.ZSTD, frame, 1 << 30) is None


def test_snappy_in_c_refuses_what_the_snappy_library_refuses():
    """Raw snappy blocks: an offset of 0 or beyond the output, a copy past the declared length, a length
    the ops do not fill: refused here as by cramjam (and snappy-java), the pure path reports them."""
    import cramjam
    lit = bytes([0x04]) + b"ab"                       # literal "ab"
    cases = {"offset 0": bytes([6]) + lit + bytes([0x0E, 0, 0]), "offset beyond": bytes([6]) + lit + bytes([0x0E, 3, 0]),
             "too long": bytes([5]) + lit + bytes([0x0E, 2, 0]), "too short": bytes([7]) + lit + bytes([0x0E, 2, 0]),
             "good": bytes([6]) + lit + bytes([0x0E, 2, 0])}
    for name, block in cases.items():
        try:
            want = bytes(cramjam.snappy.decompress_raw(block))
        except Exception:
            want = None
        assert native.ext.fast_decompress(2, block, 1 << 20) == want, name
    assert native.ext.fast_decompress(2, cases["good"], 1 << 20) == b"ababab"


def test_xxh32_matches_the_xxhash_package():
    import xxhash
    rnd = random.Random(5)
    for n in list(range(40)) + [255, 256, 1000, 65536]:
        data = rnd.randbytes(n)
        for seed in (0, 1, 2**32 - 1):
            assert native.ext.xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)
