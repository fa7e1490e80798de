"""Hostile input against the compiled record path: random and damaged bytes through every C entry point.

Each C function must return (or hand the batch to the pure path) and never read outside its buffers,
whatever the bytes claim; where it returns values they must equal the pure reference's (``scan``) or be
consistent with the input (stop positions inside the buffer, spans inside their sources). The same
inputs run under AddressSanitizer in tests/test_native_asan.py.
"""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings

from kafkalog_formats import columns as C
from kafkalog_formats import native
from kafkalog_formats.record_batch import Record
from kafkalog_cli.repair import native_clean

from native_cases import DECOMPRESS, every_codec_and_magic, segment_files, segments

pytestmark = pytest.mark.skipif(native.ext is None, reason=f"native path not active: {native.reason}")
ITERATIONS = 10000


def _seeds() -> list[bytes]:
    small = [f.read_bytes()[:200_000] for f in segment_files()[:60]]
    return [every_codec_and_magic()] + [s for s in small if s]


def _mutate(rnd: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rnd.randint(1, 8)):
        kind = rnd.random()
        if not b:
            break
        i = rnd.randrange(len(b))
        if kind < 0.5:
            b[i] = rnd.randrange(256)
        elif kind < 0.7:                           # a length field set to an extreme
            b[i:i + 4] = rnd.choice([b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff\xff\xff", b"\x00\x00\x00\x0e"])
        elif kind < 0.85:                          # varint bytes with the continuation bit
            b[i:i + 6] = bytes(rnd.choice([0x80, 0xff, 0xfe, 0x81]) for _ in range(6))
        else:
            del b[i:i + rnd.randint(1, 40)]
    if rnd.random() < 0.3:
        b = b[:rnd.randrange(len(b) + 1)]
    return bytes(b)


def exercise(data: bytes) -> None:
    """Every C entry point on ``data``; assertions on what comes back."""
    ext = native.ext
    end = len(data)
    for kw in (dict(), dict(stop_bad_crc=True, stop_control=True, pairs=True, lo=2, hi=10**6),
               dict(max_records=3, headers=False)):
        a = C.scan(data, 0, None, decompress=DECOMPRESS, **kw)
        b = C.scan(data, 0, None, decompress=DECOMPRESS, pure=True, **kw)
        assert (a.stop, a.reason, a.batches, a.rows, a.headers) == (b.stop, b.reason, b.batches, b.rows, b.headers)
        assert 0 <= a.stop <= end
        if a.n_batches and kw.get("headers", True):          # rendering needs the header rows
            from kafkalog_cli.render import native_lines as nl
            try:
                out = bytearray()
                nl.render_text(a, out, deep=True, print_data=True, skip_metadata=False, key_decoder="string",
                               value_decoder="hex")
                nl.render_json(a, out, file_json=b'"f"', deep=True, print_data=True, key_decoder="string",
                               value_decoder="base64")
                out.decode("utf-8")
            except ValueError:
                assert any(x & 0x20 for x in a.batch_table()[C.B["attributes"]::C.NB])   # control batches
    r = ext.verify_walk(data, 0, end, 0, None, False, 1 << 20, True, DECOMPRESS, bytearray(64), bytearray(),
                        None, None)
    assert 0 <= r[0] <= end
    r = ext.verify_walk(data, 0, end, 5, 3, True, 100, False, None, bytearray(64), bytearray(), b"\x00" * 8,
                        (10).to_bytes(8, "little") * 3)
    assert 0 <= r[0] <= end
    clean = native_clean.ext
    m = clean.OffsetMap(16)
    for position in (0, 1, 12, max(0, end - 61), end, -1):
        assert clean.map_put_batch(m, data, position, 0, DECOMPRESS) in (None, 0, 1)
        res = clean.keep_batch(m, data, position, 7, DECOMPRESS)
        assert res is None or len(res[0]) == res[1] + (len(res[0]) - res[1])
    r = clean.map_put_run(clean.OffsetMap(16), data, 0, end, 0, 1 << 40, DECOMPRESS, 0)
    assert 0 <= r[0] <= end and r[1] in ("end", "python", "full", "uncleanable")
    for start in (0, 61, max(0, end - 30)):
        section = data[start:]
        got = ext.records(section, 3, 10, 1000, 5, None, Record)
        assert got is None or len(got) == 3
        m = clean.OffsetMap(4)
        assert clean.map_put(m, section, 2, 0, 0, -1, None, 0) in (None, 0, 1)
        res = clean.keep_mask(m, section, 2, 0, 0, -1, 7, 5, 3)
        assert res is None or len(res[0]) == 2


def test_mutated_segments_through_every_entry_point():
    rnd = random.Random(20240611)
    seeds = _seeds()
    for _ in range(ITERATIONS):
        exercise(_mutate(rnd, rnd.choice(seeds)))


def test_random_bytes_through_every_entry_point():
    rnd = random.Random(99)
    for _ in range(ITERATIONS // 3):
        n = rnd.randrange(0, 400)
        head = rnd.choice([b"", b"\x00" * 8 + (n).to_bytes(4, "big") + b"\x00" * 4 + b"\x02"])
        exercise(head + rnd.randbytes(n))


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=segments())
def test_generated_damaged_segments(data):
    exercise(data)


def test_tampered_columns_are_refused_not_read():
    """render_* and gather check every span against its source before reading."""
    from kafkalog_cli.render import native_lines as nl
    data = every_codec_and_magic()
    s = C.scan(data, 0, None, decompress=DECOMPRESS, stop_control=True)
    rnd = random.Random(1)
    refused = 0
    for _ in range(400):
        rows = bytearray(s.rows)
        i = rnd.randrange(len(rows) // 8)
        rows[i * 8:i * 8 + 8] = rnd.choice([2**40, -(2**40), 2**62, -2, len(data)]).to_bytes(8, "little", signed=True)
        t = C.Scan(s.stop, s.reason, s.batches, rows, s.headers, s.sources, None, None)
        try:
            nl.render_text(t, bytearray(), deep=True, print_data=True, skip_metadata=False, key_decoder="hex",
                           value_decoder="string")
        except ValueError:
            refused += 1
        try:
            native.ext.gather(rows, C.NR, C.R["key_pos"], C.R["key_len"], s.sources, bytes(8 * (len(rows) // 8)))
        except ValueError:
            pass
    assert refused > 50
