"""Resynchronisation inside damaged bytes: the first position from which written v2 batches follow each
other again (the scan behind ``recover --salvage`` and the readers' ``--salvage``; Kafka has none: its
``LogSegment.recover`` truncates at the first invalid batch).

A position ``p`` is a *resynchronisation point* when the bytes prove, with nothing else known, that a
batch was written there:

1. its prefix frames a v2 batch (``framing.frame``'s rules): magic (byte 16) 2, length ≥ 49, the batch
   inside the region;
2. its header is one a consumer reads: codec (attributes bits 0-2) ≤ 4, last offset delta ≥ 0, record
   count ≥ 0 (``plausible``);
3. its CRC-32C (bytes 21 to its end, ``DefaultRecordBatch.isValid``) matches;
4. **its end is a batch boundary**: the end of the region, or the start of another batch meeting 1-3.

Rule 4 is the neighbour rule that keeps batches stored *inside* records out. A producer may write the
bytes of a whole batch as a record value (or header value): in an uncompressed batch they stay CRC-valid
(rules 1-3 hold). But a record never ends with its value: the header count follows it, then the next
record or the end of the batch, and none of those starts with a whole CRC-valid batch; so such a batch
fails rule 4. One shape passes rule 4: a batch at the very end of the last header value of the last
record of a batch whose own header was destroyed (it ends where the next written batch starts). Rule 5
(``inside_record``, a separate test the caller applies to a point found after damage) refuses it:

5. it is not the end of a v2 record framed earlier in the damaged bytes: no position ``r`` before it
   (within ``RECORD_WINDOW``) whose length varint frames a record ending exactly where the batch ends and
   whose body reads as a record (``record_batch.iter_records``' rules); and the bytes right before it are
   not the length varint of a value of exactly its size (the header value's own length, when the record's
   start is destroyed too). A written batch is preceded by the end of another batch or by damage: that
   they spell its size is a chance of 2^-16 for a batch of 64 bytes or more.

What rules 1-5 cannot see (a stored batch with other bytes before it in the same header value, its record's
start and its batch's header destroyed) is left to the offset rules of ``engine.salvage`` (a point found
after damage must fit its neighbours' offsets and epochs with at least one offset lost before it, above
the offsets the damaged headers claim).

``find`` is the pure reference; ``_native.resync_find`` (formats/_native_c/salvage.c) is its compiled
twin (tests/test_resync.py checks both on the same bytes). Both look only at positions whose byte 16 is
2 (a ``find`` for that byte, memchr in C), test rules 1-2 and the next header before spending any CRC,
and stop after ``crc_budget`` bytes of CRC (a crafted region of chained huge claims stays bounded).
"""
from __future__ import annotations

import mmap
import struct
from typing import NamedTuple

from .crc import crc32c_region

HEADER = 61
MIN_LENGTH = 49          # the smallest length field of a v2 batch (61-byte header less the 12-byte prefix)
_LENGTH = struct.Struct(">i")
_ATTRS = struct.Struct(">h")
NOT_FOUND = -1
BUDGET_SPENT = -2


#: how far before a point rule 5 looks for the record that might hold it
RECORD_WINDOW = 1 << 20


class Found(NamedTuple):
    position: int        # the resynchronisation point, NOT_FOUND, or BUDGET_SPENT
    crc_bytes: int       # bytes of CRC computed


def plausible(buf, p: int, end: int) -> int:
    """The end of the v2 batch framed at ``p`` when rules 1-2 hold (its header inside ``buf[:end]``), else -1."""
    if p < 0 or p + HEADER > end or buf[p + 16] != 2:
        return -1
    length = _LENGTH.unpack_from(buf, p + 8)[0]
    q = p + 12 + length
    if length < MIN_LENGTH or q > end:
        return -1
    if _ATTRS.unpack_from(buf, p + 21)[0] & 0x07 > 4:
        return -1
    if _LENGTH.unpack_from(buf, p + 23)[0] < 0 or _LENGTH.unpack_from(buf, p + 57)[0] < 0:
        return -1
    return q


def crc_ok(buf, p: int, q: int) -> bool:
    """Rule 3 for the batch ``buf[p:q]``."""
    return crc32c_region(buf, p + 21, q) == int.from_bytes(buf[p + 17:p + 21], "big")


def find(buf, start: int, limit: int, end: int, crc_budget: int) -> Found:
    """The first resynchronisation point ``p`` with ``start <= p < limit`` (batches must end by ``end``)."""
    spent = 0
    if start < 0:
        start = 0
    stop = min(limit, end - HEADER + 1)
    i = buf.find(b"\x02", start + 16, stop + 16) if start < stop else -1
    while i != -1:
        p = i - 16
        q = plausible(buf, p, end)
        if q >= 0:
            r = end if q == end else plausible(buf, q, end)
            if r >= 0:
                spent += q - p - 21
                if spent > crc_budget:
                    return Found(BUDGET_SPENT, spent)
                if crc_ok(buf, p, q):
                    if q == end:
                        return Found(p, spent)
                    spent += r - q - 21
                    if spent > crc_budget:
                        return Found(BUDGET_SPENT, spent)
                    if crc_ok(buf, q, r):
                        return Found(p, spent)
        i = buf.find(b"\x02", i + 1, stop + 16)
    return Found(NOT_FOUND, spent)


#: positions looked at per call: the mapped pages behind are released between calls
WINDOW = 8 * 1024 * 1024
#: CRC bytes a resynchronisation may spend by default: four times a 1 GiB segment
DEFAULT_CRC_BUDGET = 4 << 30


def scan(buf, start: int, end: int, crc_budget: int = DEFAULT_CRC_BUDGET, release=None,
         limit: int | None = None) -> Found:
    """``find`` over ``[start, end)`` (points before ``limit`` only, when given) window by window
    (``release(position)`` after each, so the pages of a long damaged region never stay resident; on a map,
    the compiled path also releases the pages of a long CRC as it goes), on the compiled path when it is
    active."""
    from . import native
    if native.ext is None:
        fn = find
    else:
        drop = isinstance(buf, mmap.mmap)      # only a map's pages may be handed back (never a heap buffer)

        def fn(buf, lo, hi, end, budget):
            return native.ext.resync_find(buf, lo, hi, end, budget, drop)
    spent = 0
    lo = max(start, 0)
    stop = end if limit is None else min(limit, end)
    while lo < stop:
        hi = min(stop, lo + WINDOW)
        pos, n = fn(buf, lo, hi, end, crc_budget - spent)
        spent += n
        if pos != NOT_FOUND:
            return Found(pos, spent)
        if release is not None:
            release(hi)
        lo = hi
    return Found(NOT_FOUND, spent)


def inside_record(buf, lo: int, p: int, q: int) -> bool:
    """Rule 5: the batch ``buf[p:q]`` is the end of a v2 record framed at some ``r`` in
    ``[max(lo, p - RECORD_WINDOW), p)`` (the record's length varint says it ends at ``q`` and its body reads
    whole as one record)."""
    from . import native
    if native.ext is not None:
        return native.ext.resync_inside_record(buf, lo, p, q)
    return _inside_record(buf, lo, p, q)


def _size_varint(n: int) -> bytes:
    """A record field's length varint (zig-zag) for ``n`` bytes."""
    z, out = n << 1, bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _inside_record(buf, lo: int, p: int, q: int) -> bool:
    from .errors import FormatError
    from .record_batch import iter_records
    from .varint import read_varint
    v = _size_varint(q - p)
    if p - len(v) >= max(lo, 0) and bytes(buf[p - len(v):p]) == v:
        return True
    for r in range(max(lo, p - RECORD_WINDOW, 0), p):
        try:
            length, body = read_varint(buf, r, q)
        except FormatError:
            continue
        if length < 0 or body + length != q:
            continue
        try:
            for _rec in iter_records(bytes(buf[r:q]), 1, 0, 0, -1):
                pass
        except FormatError:
            continue
        return True
    return False
