"""Columns for a range of batches: offsets, timestamps, key/value/header spans and batch metadata, without a
Python object per record (the compiled record path's output; ``native.py`` says whether it is active).

``scan(buf, start, end, ...)`` walks the batches of ``buf[start:end]`` as ``message_set.BatchReader`` does
and returns a ``Scan``: three int64 tables in bytearrays (one row per batch, per record, per header) and the
buffers their spans point into (``sources[0]`` is ``buf``; a compressed batch's records point into its
decompressed bytes, ``sources[batch.source]``). Layout, one int64 per field::

    batch   position size base_offset last_offset_delta partition_leader_epoch magic crc attributes
            base_timestamp max_timestamp producer_id producer_epoch base_sequence count crc_valid
            first_row rows source decoded first_header
    record  offset timestamp key_pos key_len value_pos value_len first_header header_count sequence
            attributes                                    (len -1 = null, pos -1 for a null)
    header  key_pos key_len value_pos value_len

The walk stops *before* any batch it does not decode exactly like ``record_batch.iter_records`` (a legacy
entry, a record or decompression error, a value beyond 64 bits, and on request a bad CRC or a control
batch): ``reason`` is then ``PYTHON`` and ``stop`` that batch's position, and the caller reads it with
the pure API (``BatchReader(buf, stop, end)``), which also gives the pure path's exact error. ``FRAMING``:
``BatchReader`` stops at ``stop`` (trailing bytes, corrupt size); ``LIMIT``: ``max_records`` or
``max_bytes`` reached, continue at ``stop``; ``TO_OFFSET``: a v2 batch starts above ``hi``.

``_scan_pure`` is the reference implementation of the same contract (tests compare the tables byte for
byte); ``record_spans`` is its record decoder, the twin of ``iter_records`` with positions.
"""
from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from . import native
from .crc import crc32c
from .errors import FormatError
from .framing import Stop, frame
from .record_batch import CRC_START, HEADER, RECORD_BATCH_OVERHEAD, wrap64
from .varint import read_varint, read_varlong

BATCH_FIELDS = ("position", "size", "base_offset", "last_offset_delta", "partition_leader_epoch", "magic", "crc",
                "attributes", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                "base_sequence", "count", "crc_valid", "first_row", "rows", "source", "decoded", "first_header")
RECORD_FIELDS = ("offset", "timestamp", "key_pos", "key_len", "value_pos", "value_len", "first_header",
                 "header_count", "sequence", "attributes")
HEADER_FIELDS = ("key_pos", "key_len", "value_pos", "value_len")
NB, NR, NH = len(BATCH_FIELDS), len(RECORD_FIELDS), len(HEADER_FIELDS)
B = {name: i for i, name in enumerate(BATCH_FIELDS)}
R = {name: i for i, name in enumerate(RECORD_FIELDS)}

END, FRAMING, PYTHON, LIMIT, TO_OFFSET = range(5)
REASONS = ("end", "framing", "python", "limit", "to_offset")

# scan flags (formats/_native_c/scan.c)
RECORDS, HEADERS, CRC, STOP_BAD_CRC, STOP_CONTROL, DECOMPRESS, PAIRS = 1, 2, 4, 8, 16, 32, 64

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_I32 = struct.Struct(">i")

if native.ext is not None:
    assert (native.ext.NB, native.ext.NR, native.ext.NH) == (NB, NR, NH), "column layout differs from the C one"


class Scan(NamedTuple):
    stop: int               # position where the walk ended
    reason: int             # END, FRAMING, PYTHON, LIMIT, TO_OFFSET
    batches: bytearray      # NB int64 per batch
    rows: bytearray         # NR int64 per record
    headers: bytearray      # NH int64 per header
    sources: list           # [buf, decompressed bytes of compressed batches...]
    pairs: list | None      # (previous, next) record offsets that are not consecutive (flag PAIRS)
    prev_offset: int | None  # last record offset seen (for the next call's prev_offset)

    @property
    def n_batches(self) -> int:
        return len(self.batches) // (8 * NB)

    @property
    def n_rows(self) -> int:
        return len(self.rows) // (8 * NR)

    def batch_table(self) -> memoryview:
        return memoryview(self.batches).cast("q")

    def row_table(self) -> memoryview:
        return memoryview(self.rows).cast("q")

    def header_table(self) -> memoryview:
        return memoryview(self.headers).cast("q")

    def numpy(self):
        """(batches, rows, headers) as int64 arrays of shape (n, NB|NR|NH), sharing the bytearrays."""
        import numpy as np
        return (np.frombuffer(self.batches, np.int64).reshape(-1, NB),
                np.frombuffer(self.rows, np.int64).reshape(-1, NR),
                np.frombuffer(self.headers, np.int64).reshape(-1, NH))

    def records(self) -> Iterator[tuple]:
        """(batch index, offset, timestamp, key, value, headers, sequence, attributes) per record, the
        values materialized as bytes: for tests and small callers, not for bulk paths."""
        bt, rt, ht = self.batch_table(), self.row_table(), self.header_table()
        for i in range(self.n_batches):
            b = bt[i * NB:(i + 1) * NB]
            src = self.sources[b[B["source"]]]
            for j in range(b[B["first_row"]], b[B["first_row"]] + b[B["rows"]]):
                r = rt[j * NR:(j + 1) * NR]
                hs = []
                for k in range(r[6], r[6] + r[7]):
                    h = ht[k * NH:(k + 1) * NH]
                    hs.append((bytes(src[h[0]:h[0] + h[1]]), None if h[3] < 0 else bytes(src[h[2]:h[2] + h[3]])))
                yield (i, r[0], r[1], None if r[3] < 0 else bytes(src[r[2]:r[2] + r[3]]),
                       None if r[5] < 0 else bytes(src[r[4]:r[4] + r[5]]), tuple(hs), r[8], r[9])


def scan(buf, start: int = 0, end: int | None = None, *, records: bool = True, headers: bool = True,
         crc: bool = True, stop_bad_crc: bool = False, stop_control: bool = False, decompress=None,
         lo: int | None = None, hi: int | None = None, max_records: int = 0, max_bytes: int = 0,
         pairs: bool = False, prev_offset: int | None = None, until: int | None = None,
         pure: bool | None = None) -> Scan:
    """Columns of the batches of ``buf[start:end]`` (see the module docstring). ``decompress(codec, view)``
    gives a compressed batch's records section (normally ``codecs.decompress`` with ``max_output``); without
    it compressed batches stop the walk. ``lo``/``hi``: dump-log's --from-offset/--to-offset (batches ending
    below ``lo`` skipped, records outside [lo, hi] left out). ``until``: no batch starting at or after this
    position is read (reason ``LIMIT``; ``end`` still bounds the batches that start before it).
    ``pure``: force an implementation."""
    end = len(buf) if end is None else min(end, len(buf))
    until = (1 << 62) if until is None else until
    flags = ((RECORDS if records else 0) | (HEADERS if headers else 0) | (CRC if crc else 0)
             | (STOP_BAD_CRC if stop_bad_crc else 0) | (STOP_CONTROL if stop_control else 0)
             | (DECOMPRESS if decompress is not None else 0) | (PAIRS if pairs else 0))
    use_native = native.ext is not None if pure is None else not pure
    if use_native and pure is None and any(v is not None and not INT64_MIN <= v <= INT64_MAX
                                           for v in (lo, hi, prev_offset)):
        use_native = False                # Python ints beyond 64 bits (after offsets that overflowed)
    if use_native:
        if native.ext is None:
            raise RuntimeError(f"the native record path is not available: {native.reason}")
        return Scan(*native.ext.scan(buf, start, end, flags, decompress, lo, hi, max_records, max_bytes,
                                     prev_offset, until))
    return _scan_pure(buf, start, end, flags, decompress, lo, hi, max_records, max_bytes, prev_offset, until)


# --- the pure reference -------------------------------------------------------------------------------

class _Tables:
    """The tables ``_scan_pure`` grows: a row per batch, per record and per header, the buffers the spans
    point into, and the (previous, next) offset pairs that are not consecutive."""

    def __init__(self, buf, pairs: bool, prev: int | None) -> None:
        from array import array
        self.batches, self.rows, self.hdrs = array("q"), array("q"), array("q")
        self.sources = [buf]
        self.pairs = [] if pairs else None
        self.prev = prev

    def add_records(self, spans: list[tuple], base_pos: int, lo: int | None, hi: int | None,
                    headers: bool) -> None:
        """One batch's records (``record_spans``' tuples, positions relative to ``base_pos``), those outside
        [lo, hi] left out."""
        rows, hdrs, pairs, prev = self.rows, self.hdrs, self.pairs, self.prev
        for off, ts, kp, kl, vp, vl, hs, seq, a in spans:
            if (lo is not None and off < lo) or (hi is not None and off > hi):
                continue
            h0 = len(hdrs) // NH
            if headers:
                for hkp, hkl, hvp, hvl in hs:
                    hdrs.extend((base_pos + hkp, hkl, -1 if hvl < 0 else base_pos + hvp, hvl))
            else:
                h0 = -1
            rows.extend((off, ts, -1 if kl < 0 else base_pos + kp, kl, -1 if vl < 0 else base_pos + vp, vl,
                         h0, len(hs), seq, a))
            if pairs is not None:
                if prev is not None and off != prev + 1:
                    pairs.append((prev, off))
                prev = off
        self.prev = prev

    def scan(self, stop: int, reason: int) -> Scan:
        return Scan(stop, reason, bytearray(self.batches.tobytes()), bytearray(self.rows.tobytes()),
                    bytearray(self.hdrs.tobytes()), self.sources, self.pairs, self.prev)


_SKIP = -1       # a batch wholly below ``lo``: stepped over


def _scan_pure(buf, start, end, flags, decompress, lo, hi, max_records, max_bytes, prev, until) -> Scan:
    """The reference walk: frame the next batch (``framing.frame``), check its header, its CRC and its
    records section, decode the records, add the rows; stop before the first batch the compiled walk
    would hand to the pure API."""
    t = _Tables(buf, bool(flags & PAIRS), prev)
    pos = max(start, 0)
    nbatches = nbytes = 0
    while True:
        if (nbatches and ((max_records > 0 and len(t.rows) // NR >= max_records)
                          or (max_bytes > 0 and nbytes >= max_bytes)) or pos >= until):
            return t.scan(pos, LIMIT)
        reason, h = _batch_header(buf, pos, end, flags, lo, hi)
        if reason == _SKIP:
            pos += h
            continue
        if reason is not None:
            return t.scan(pos, reason)
        (base, length, ple, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq, count) = h
        size = 12 + length
        valid = -1
        if flags & CRC:
            valid = _crc_valid(buf, pos, size, crc)
            if not valid and flags & STOP_BAD_CRC:
                return t.scan(pos, PYTHON)
        first_row, first_header, source, decoded = len(t.rows) // NR, len(t.hdrs) // NH, 0, 0
        if flags & RECORDS:
            section = _records_section(buf, pos, size, attrs & 7, flags, decompress)
            if section is None:
                return t.scan(pos, PYTHON)
            data, base_pos = section
            spans = _spans(data, count, base, base_ts, bseq, max_ts if attrs & 0x08 else None)
            if spans is None:
                return t.scan(pos, PYTHON)
            if attrs & 7:
                nbytes += len(data)
                source = len(t.sources)
                t.sources.append(data)
            decoded = len(spans)
            t.add_records(spans, base_pos, lo, hi, bool(flags & HEADERS))
        t.batches.extend((pos, size, base, lod, ple, magic, crc, attrs, base_ts, max_ts, pid, pepoch, bseq, count,
                          valid, first_row, len(t.rows) // NR - first_row, source, decoded, first_header))
        nbatches += 1
        nbytes += size
        pos += size


def _batch_header(buf, pos: int, end: int, flags: int, lo: int | None, hi: int | None) -> tuple:
    """(None, the 13 header fields) of the v2 batch at ``pos`` to decode; (``_SKIP``, its size) for one
    wholly below ``lo``; (reason, None) where the walk stops: ``END``/``FRAMING`` by the framing rules,
    ``PYTHON`` for what only the pure API reads (a legacy entry, magic above 2, a last offset beyond 64
    bits, an unknown codec, a control batch when asked to stop there), ``TO_OFFSET`` above ``hi``."""
    f = frame(buf, pos, end)
    if f is None:
        return END, None
    if f.__class__ is Stop:
        return FRAMING, None
    if f[0] < 2:
        return PYTHON, None
    h = HEADER.unpack_from(buf, pos)
    base, lod, attrs = h[0], h[6], h[5]
    last = base + lod
    if h[3] != 2 or not INT64_MIN <= last <= INT64_MAX:
        return PYTHON, None
    if lo is not None and last < lo:
        return _SKIP, f[1]
    if hi is not None and base > hi:
        return TO_OFFSET, None
    if attrs & 7 > 4 or (flags & STOP_CONTROL and attrs & 0x20):
        return PYTHON, None
    return None, h


def _crc_valid(buf, pos: int, size: int, crc: int) -> int:
    """1 when the batch's stored CRC-32C matches its bytes from the attributes on, else 0."""
    mv = memoryview(buf)[pos + CRC_START:pos + size]
    valid = int(crc32c(mv) == crc)
    mv.release()
    return valid


def _records_section(buf, pos: int, size: int, codec: int, flags: int, decompress) -> tuple | None:
    """(the records section, the position its spans are relative to: the batch's records in ``buf``, or 0 in
    the decompressed bytes); None when it cannot be had here (compressed without ``DECOMPRESS``, or a
    decompression error: the pure API reports it)."""
    if not codec:
        return memoryview(buf)[pos + RECORD_BATCH_OVERHEAD:pos + size], pos + RECORD_BATCH_OVERHEAD
    if not flags & DECOMPRESS:
        return None
    mv = memoryview(buf)[pos + RECORD_BATCH_OVERHEAD:pos + size]
    try:
        return decompress(codec, mv), 0
    except Exception:
        return None
    finally:
        mv.release()


def _spans(data, count: int, base: int, base_ts: int, bseq: int, log_append_time: int | None) -> list | None:
    """``record_spans``, or None for a section the pure API reads (a record error, a value beyond 64 bits)."""
    try:
        spans = record_spans(data, count, base, base_ts, bseq, log_append_time)
    except FormatError:
        return None
    if any(not INT64_MIN <= s[0] <= INT64_MAX or not INT64_MIN <= s[1] <= INT64_MAX for s in spans):
        return None
    return spans


def record_spans(data, count: int, base_offset: int, base_timestamp: int, base_sequence: int,
                 log_append_time: int | None = None) -> list[tuple]:
    """``iter_records`` with positions: (offset, timestamp, key_pos, key_len, value_pos, value_len,
    [(hkey_pos, hkey_len, hvalue_pos, hvalue_len)], sequence, attributes) per record, lengths -1 for
    null; FormatError (without the pure path's message: callers re-run ``iter_records`` for it) exactly
    where ``iter_records`` raises."""
    if count < 0:
        raise FormatError("invalid record count", 0, "record")
    end = len(data)
    pos = 0
    out = []
    for _ in range(count):
        if pos >= end:
            raise FormatError("premature end", pos, "record")
        start = pos
        length, pos = read_varint(data, pos, end)
        if length < 0 or pos + length > end or length < 6:
            raise FormatError("invalid record size", start, "record")
        body_end = pos + length
        attributes = data[pos]
        ts_delta, pos = read_varlong(data, pos + 1, body_end)
        off_delta, pos = read_varint(data, pos, body_end)
        if pos >= body_end:
            raise FormatError("record ends before its key", start, "record")
        klen, pos = read_varint(data, pos, body_end)
        kpos = pos
        if klen >= 0:
            if pos + klen > body_end:
                raise FormatError("key extends past the record", start, "record")
            pos += klen
        else:
            klen = -1
        if pos >= body_end:
            raise FormatError("record ends before its value", start, "record")
        vlen, pos = read_varint(data, pos, body_end)
        vpos = pos
        if vlen >= 0:
            if pos + vlen > body_end:
                raise FormatError("value extends past the record", start, "record")
            pos += vlen
        else:
            vlen = -1
        if pos >= body_end:
            raise FormatError("record ends before its headers", start, "record")
        nheaders, pos = read_varint(data, pos, body_end)
        headers = []
        if nheaders:
            if nheaders < 0 or nheaders > body_end - pos:
                raise FormatError("invalid number of record headers", start, "record")
            for _h in range(nheaders):
                hklen, pos = read_varint(data, pos, body_end)
                if hklen < 0 or pos + hklen >= body_end:
                    raise FormatError("invalid header key", start, "record")
                hkpos = pos
                hvlen, pos = read_varint(data, pos + hklen, body_end)
                hvpos = pos
                if hvlen >= 0:
                    if pos + hvlen > body_end:
                        raise FormatError("header value extends past the record", start, "record")
                    pos += hvlen
                else:
                    hvlen = -1
                headers.append((hkpos, hklen, hvpos, hvlen))
        if pos != body_end:
            raise FormatError("record size mismatch", start, "record")
        if base_sequence < 0:
            seq = -1
        else:
            seq = base_sequence + off_delta
            if seq > 0x7FFFFFFF:
                seq -= 0x80000000
        ts = log_append_time if log_append_time is not None else wrap64(base_timestamp + ts_delta)
        out.append((base_offset + off_delta, ts, kpos, klen, vpos, vlen, headers, seq, attributes))
    if pos != end:
        raise FormatError("records remaining", pos, "record")
    return out
