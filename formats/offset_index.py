"""Offset index, ``<base>.index`` (Kafka ``OffsetIndex`` / ``AbstractIndex``).

A bare array of 8-byte big-endian entries, no header, no checksum::

    off size field
    0   4    relativeOffset  int32  (absolute offset - segment base; last offset of the indexed batch)
    4   4    position        int32  (byte position in the .log where that batch starts)

Kafka believes a file holds ``floor(length / 8)`` entries, zero tail included (a crashed active segment
keeps its preallocated zero slots); ``real_entry_count`` applies DumpLogSegments' "relative offset 0 at
slot > 0 ends the data" heuristic. ``OffsetIndex``/``OffsetIndexEntry`` are the declarative schemas;
``offset_index_array`` (numpy, zero-copy) and ``largest_lower_bound_slot`` (struct probes, O(log n))
are the fast paths, tested for parity against them. The binary search is shared with ``time_index``.
"""
from __future__ import annotations

import struct
from typing import Iterable

from ._lazy import is_ndarray, lazy_attributes, np

from .errors import FormatError

ENTRY_SIZE = 8
INT32_MAX = 0x7FFFFFFF
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: Kafka searches the last 8192 bytes' worth of entries first (page-cache friendly "warm" section).
WARM_BYTES = 8192
#: slots compared at a time when looking for an index's zero tail (``real_entry_count``)
_WINDOW = 1 << 20


def _schemas() -> dict:
    """``OffsetIndexEntry`` and ``OffsetIndex``, the declarative schemas (built on first use)."""
    from construct import GreedyRange, Int32sb, Struct
    entry = Struct("relative_offset" / Int32sb, "position" / Int32sb)
    #: Whole entries only: a trailing partial entry is left unparsed, as Kafka's floor() ignores it.
    return {"OffsetIndexEntry": entry, "OffsetIndex": GreedyRange(entry)}

_DTYPE = None


def _dtype():
    global _DTYPE
    if _DTYPE is None:
        _DTYPE = np.dtype([("rel", ">i4"), ("pos", ">i4")])
    return _DTYPE


# made on first use: importing this module imports neither construct nor numpy
__getattr__ = lazy_attributes(schemas=(("OffsetIndexEntry", "OffsetIndex"), _schemas),
                              dtype=(("OFFSET_INDEX_DTYPE",), lambda: {"OFFSET_INDEX_DTYPE": _dtype()}))

# column name -> (struct format, byte offset inside the entry)
_FIELDS = {"rel": (">i", 0), "pos": (">i", 4)}


def buffer_length(buf) -> int:
    """Length in bytes of any buffer (``len`` of a cast memoryview counts items, not bytes)."""
    return memoryview(buf).nbytes


def offset_index_array(buf) -> np.ndarray:
    """Zero-copy view of the whole entries of ``buf`` as a structured array (``rel``, ``pos``)."""
    return np.frombuffer(buf, dtype=_dtype(), count=buffer_length(buf) // ENTRY_SIZE)


def real_entry_count(arr: np.ndarray) -> int:
    """Entries before the zero tail: the first slot i > 0 whose relative offset is 0 ends the data.

    Works on offset- and time-index arrays (both have a ``rel`` column). Vectorised: one comparison and
    one ``argmax``, no Python loop (a 10 MiB preallocated index is 1.3M slots).
    """
    n = len(arr)
    if n <= 1:
        return n
    # in windows of 1 Mi slots: a huge preallocated (or sparse, hostile) index is read only up to its
    # first zero slot, never compared whole (bounded memory: the pages of a mapped index count as resident)
    for start in range(1, n, _WINDOW):
        tail = arr["rel"][start:start + _WINDOW] == 0
        i = int(tail.argmax())
        if tail[i]:
            return start + i
    return n


# --- binary search (Kafka AbstractIndex.indexSlotRangeFor) ---------------------------------------

def index_lower_bound_slot(buf_or_arr, target: int, entry_size: int, fields: dict, key: str,
                           entries: int | None) -> int:
    """Kafka's ``largestLowerBoundSlotFor(target)`` on column ``key`` of an index with ``entry_size``.

    Mirrors Kafka's exact probe order (warm section of the last 8192 bytes first, then the rest) so that
    even a corrupt, unsorted index gives the answer the broker would; on sorted data it is a plain
    binary search. Reads only the probed slots: a buffer is never parsed as a whole.
    """
    if is_ndarray(buf_or_arr):
        col = buf_or_arr[key]
        n = len(col) if entries is None else min(entries, len(col))

        def at(slot: int) -> int:
            return int(col[slot])
    else:
        try:
            fmt, off = fields[key]
        except KeyError:
            raise ValueError(f"unknown index column {key!r}; expected one of {sorted(fields)}") from None
        unpack = struct.Struct(fmt).unpack_from
        whole = buffer_length(buf_or_arr) // entry_size
        n = whole if entries is None else min(entries, whole)

        def at(slot: int) -> int:
            return unpack(buf_or_arr, slot * entry_size + off)[0]

    if n <= 0:
        return -1

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = at(mid)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    first_hot = max(0, n - 1 - WARM_BYTES // entry_size)
    if at(first_hot) < target:
        return search(first_hot, n - 1)
    if at(0) > target:
        return -1
    return search(0, first_hot)


def largest_lower_bound_slot(buf_or_arr, target_rel: int, key: str = "rel",
                             entries: int | None = None) -> int:
    """Last slot whose ``key`` ≤ ``target_rel``; −1 when empty or slot 0 is already greater (§3.5).

    ``buf_or_arr`` is the raw index bytes or an ``offset_index_array``; ``entries`` defaults to Kafka's
    ``floor(len / 8)`` — pass ``real_entry_count`` to search an untrimmed index the way the dumper sees it.
    """
    return index_lower_bound_slot(buf_or_arr, target_rel, ENTRY_SIZE, _FIELDS, key, entries)


def offset_lookup(buf, base_offset: int, target_offset: int,
                  entries: int | None = None) -> tuple[int, int, int]:
    """Kafka ``OffsetIndex.lookup``: (slot, absolute offset, position) of the last entry ≤ target.

    No such entry ⇒ ``(-1, base_offset, 0)``: scan the log from its start.
    """
    slot = largest_lower_bound_slot(buf, target_offset - base_offset, "rel", entries)
    if slot < 0:
        return -1, base_offset, 0
    if is_ndarray(buf):
        rel, pos = int(buf["rel"][slot]), int(buf["pos"][slot])
    else:
        rel, pos = struct.unpack_from(">ii", buf, slot * ENTRY_SIZE)
    return slot, base_offset + rel, pos


# --- sanity check (Kafka OffsetIndex.sanityCheck) -------------------------------------------------

def offset_index_sanity(length: int, base_offset: int, last_rel: int | None, path: str) -> str | None:
    """Kafka's CorruptIndexException message for this index, or None when it passes.

    ``length`` is the file length in bytes, ``last_rel`` the relative offset in the last whole slot
    (ignored when there is none). An untrimmed index ends in a zero slot (last offset == base) and passes.
    """
    if length // ENTRY_SIZE != 0 and last_rel is not None and base_offset + last_rel < base_offset:
        # the Java OffsetIndex (3.5+): no parentheses around the path, no full stop (Scala ≤ 3.4 had both)
        return (f"Corrupt index found, index file {path} has non-zero size but the last offset is "
                f"{base_offset + last_rel} which is less than the base offset {base_offset}")
    if length % ENTRY_SIZE != 0:
        return (f"Index file {path} is corrupt, found {length} bytes which is neither positive nor a "
                f"multiple of {ENTRY_SIZE}")
    return None


def check_offset_index(buf, base_offset: int, path: str) -> str | None:
    """``offset_index_sanity`` on the bytes of a whole index file."""
    length = buffer_length(buf)
    n = length // ENTRY_SIZE
    last_rel = struct.unpack_from(">i", buf, (n - 1) * ENTRY_SIZE)[0] if n else None
    return offset_index_sanity(length, base_offset, last_rel, path)


# --- building ----------------------------------------------------------------------------------

def checked_pairs(entries: Iterable[tuple[int, int]], what: str) -> tuple[list[int], list[int]]:
    """The two columns of ``(a, b)`` entries as lists of ints, FormatError when a value does not fit a
    64-bit signed integer. Plain Python (no numpy): compact, recover and retain write indexes and should
    not pay numpy's import for a few hundred entries (a million take about a quarter of a second)."""
    firsts, seconds = [], []
    for a, b in entries:
        firsts.append(a)
        seconds.append(b)
    for col in (firsts, seconds):
        if col:
            try:
                lo, hi = min(col), max(col)
                bad = lo if lo < INT64_MIN else hi if hi > INT64_MAX else None
            except TypeError:
                bad = next(v for v in col if not hasattr(v, "__index__"))
            if bad is not None:
                raise FormatError(f"{what} does not fit a 64-bit signed integer: {bad!r}", None,
                                  "index_value_range")
    return firsts, seconds


def relative_offsets(offsets: list[int], base_offset: int) -> list[int]:
    """``offset - base`` per entry, checked to fit 0..Int.MAX like Kafka's ``toRelative``."""
    if not INT64_MIN <= base_offset <= INT64_MAX:
        raise FormatError(f"base offset {base_offset} does not fit a 64-bit signed integer", None,
                          "index_offset_overflow")
    if offsets:
        lo, hi = min(offsets), max(offsets)
        if lo - base_offset < 0 or hi - base_offset > INT32_MAX:
            bad = lo if lo - base_offset < 0 else hi
            raise FormatError(f"Integer overflow for offset: {bad} (relative to base offset {base_offset} "
                              "it does not fit 0..2147483647)", None, "index_offset_overflow")
    return [o - base_offset for o in offsets]


def interleaved(a: list[int], b: list[int]) -> list[int]:
    """a0, b0, a1, b1, ... (the argument list of one ``struct.pack`` for a whole index)."""
    out = [0] * (2 * len(a))
    out[0::2] = a
    out[1::2] = b
    return out


def build_offset_index(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    """Bytes of an offset index holding ``(absolute offset, position)`` entries, in the given order.

    Order and monotonicity are the caller's business (the test-data builder writes damaged indexes on
    purpose); only the ranges are checked.
    """
    offsets, pos = checked_pairs(entries, "offset index entry")
    rel = relative_offsets(offsets, base_offset)
    if pos and (min(pos) < 0 or max(pos) > INT32_MAX):
        raise FormatError("offset index position does not fit 0..2147483647", None, "index_value_range")
    return struct.pack(f">{2 * len(rel)}i", *interleaved(rel, pos))


# --- one validation of the entry a lookup starts from (lookups, compact's and retain's planners) --

def checked_lookup(buf, log_buf, base_offset: int, target_offset: int,
                   entries: int | None = None) -> tuple[int, int, int, str | None]:
    """``offset_lookup`` whose entry is checked against the segment before anyone scans from it.

    Returns ``(slot, offset, position, problem)``. Kafka trusts the entry: ``OffsetIndex.lookup`` then
    ``LogSegment.translateOffset`` → ``FileRecords.searchForOffsetWithSize(target, position)`` reads
    batches from that position (AbstractIndex/OffsetIndex in core ``kafka.log`` up to 3.5, in
    ``org.apache.kafka.storage.internals.log`` from 3.6). A position past the end finds nothing (the
    offset is wrongly reported missing), a negative one fails the read, a position inside a batch
    reads garbage. Such an index fails the recovery a broker runs after an unclean shutdown, which
    rebuilds it from the log (``LogSegment.recover``); kafkalog reads it as that rebuilt index would
    answer: an entry is used only when its position lies inside the segment, its offset is not below
    the segment's base, it increases on the entry before it, and a batch starts there whose first
    offset (magic 2) is not above the target. Otherwise ``problem`` says why and the position is 0,
    a scan of the whole segment, which gives the broker's answer for a healthy index too.
    """
    slot, offset, pos = offset_lookup(buf, base_offset, target_offset, entries)
    if slot < 0:
        return slot, offset, pos, None
    problem = _entry_problem(buf, log_buf, base_offset, target_offset, slot, offset, pos)
    if problem is None:
        return slot, offset, pos, None
    return slot, offset, 0, problem


def _entry_problem(buf, log_buf, base_offset: int, target: int, slot: int, offset: int, pos: int) -> str | None:
    size = buffer_length(log_buf)
    if offset < base_offset:
        return f"entry {slot} names offset {offset}, below the segment's base offset {base_offset}"
    if not 0 <= pos < size:
        return f"entry {slot} points at position {pos}, outside the {size}-byte segment"
    if slot > 0:
        prev_rel, prev_pos = struct.unpack_from(">ii", buf, (slot - 1) * ENTRY_SIZE)
        if base_offset + prev_rel >= offset or prev_pos >= pos:
            return f"entry {slot} ({offset} at {pos}) does not increase on entry {slot - 1} " \
                   f"({base_offset + prev_rel} at {prev_pos})"
    if size - pos < 17:
        return f"entry {slot} points at position {pos}, too close to the end of the segment for a batch"
    first, length, _mid, magic = struct.unpack_from(">qiib", log_buf, pos)
    if length < 14 or pos + 12 + length > size:
        return f"entry {slot} points at position {pos}, where no batch starts"
    if magic >= 2 and first > target:
        return f"entry {slot} points at position {pos}, whose batch starts at offset {first}, after {target}"
    return None


#: The smallest entry a segment can hold: a legacy v0 message (12-byte log overhead + 14 bytes).
MIN_ENTRY_BYTES = 26


def max_plausible_entries(log_size: int) -> int:
    """The most index entries a ``log_size``-byte segment can justify: every entry names a distinct batch
    start (positions strictly increase, ``OffsetIndex``/``TimeIndex`` append), so an index claiming more
    is corrupt past that count. Readers that build arrays of an index stop there (a sparse 1 GiB index
    beside a small segment costs nothing)."""
    return max(0, log_size) // MIN_ENTRY_BYTES + 1
