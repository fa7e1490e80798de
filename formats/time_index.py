"""Time index, ``<base>.timeindex`` (Kafka ``TimeIndex``).

A bare array of 12-byte big-endian entries, no header, no checksum::

    off size field
    0   8    timestamp       int64  (max timestamp seen in the segment up to this entry's batch)
    8   4    relativeOffset  int32  (that batch's last offset - segment base)

Kafka preallocates ``roundDown(segment.index.bytes, 12)`` zero bytes (10485756 by default) and believes
``floor(length / 12)`` entries are real; an untrimmed file therefore *fails* Kafka's sanity check (last
timestamp 0 < first timestamp). ``TimeIndex``/``TimeIndexEntry`` are the declarative schemas;
``time_index_array`` and the shared struct-probing binary search are the fast paths.
"""
from __future__ import annotations

import struct
from typing import Iterable

from ._lazy import is_ndarray, lazy_attributes, np
from .offset_index import (buffer_length, checked_pairs, index_lower_bound_slot, interleaved,
                           real_entry_count, relative_offsets)

__all__ = ["ENTRY_SIZE", "TimeIndexEntry", "TimeIndex", "TIME_INDEX_DTYPE", "time_index_array",
           "real_entry_count", "largest_lower_bound_slot", "time_lookup",
           "time_index_sanity", "check_time_index", "build_time_index"]

ENTRY_SIZE = 12
NO_TIMESTAMP = -1



def _schemas() -> dict:
    """``TimeIndexEntry`` and ``TimeIndex``, the declarative schemas (built on first use)."""
    from construct import GreedyRange, Int32sb, Int64sb, Struct
    entry = Struct("timestamp" / Int64sb, "relative_offset" / Int32sb)
    #: Whole entries only, like Kafka's floor(length / 12).
    return {"TimeIndexEntry": entry, "TimeIndex": GreedyRange(entry)}

_DTYPE = None


def _dtype():
    global _DTYPE
    if _DTYPE is None:
        _DTYPE = np.dtype([("ts", ">i8"), ("rel", ">i4")])
    return _DTYPE


# made on first use: importing this module imports neither construct nor numpy
__getattr__ = lazy_attributes(schemas=(("TimeIndexEntry", "TimeIndex"), _schemas),
                              dtype=(("TIME_INDEX_DTYPE",), lambda: {"TIME_INDEX_DTYPE": _dtype()}))

_FIELDS = {"ts": (">q", 0), "rel": (">i", 8)}
_ENTRY = struct.Struct(">qi")


def time_index_array(buf) -> np.ndarray:
    """Zero-copy view of the whole entries of ``buf`` as a structured array (``ts``, ``rel``)."""
    return np.frombuffer(buf, dtype=_dtype(), count=buffer_length(buf) // ENTRY_SIZE)


def largest_lower_bound_slot(buf_or_arr, target: int, key: str = "ts",
                             entries: int | None = None) -> int:
    """Last slot whose ``key`` ≤ ``target``; −1 when empty or slot 0 is already greater (§3.5).

    ``key="ts"`` searches by timestamp (lookups); ``key="rel"`` by relative offset (Kafka's
    ``truncateTo`` searches the offset column).
    """
    return index_lower_bound_slot(buf_or_arr, target, ENTRY_SIZE, _FIELDS, key, entries)


def time_lookup(buf, base_offset: int, target_ts: int,
                entries: int | None = None) -> tuple[int, int, int]:
    """Kafka ``TimeIndex.lookup``: (slot, timestamp, absolute offset) of the last entry with ts ≤ target.

    No such entry ⇒ ``(-1, -1, base_offset)``.
    """
    slot = largest_lower_bound_slot(buf, target_ts, "ts", entries)
    if slot < 0:
        return -1, NO_TIMESTAMP, base_offset
    if is_ndarray(buf):
        ts, rel = int(buf["ts"][slot]), int(buf["rel"][slot])
    else:
        ts, rel = _ENTRY.unpack_from(buf, slot * ENTRY_SIZE)
    return slot, ts, base_offset + rel


def time_index_sanity(length: int, base_offset: int, first_ts: int | None, last_ts: int | None,
                      last_rel: int | None, path: str) -> str | None:
    """Kafka's CorruptIndexException message for this time index, or None when it passes.

    ``first_ts`` is slot 0's timestamp, ``last_ts``/``last_rel`` the last whole slot's fields (all
    ignored when the file holds no whole entry). Checks run in Kafka's order.
    """
    if length // ENTRY_SIZE != 0 and None not in (first_ts, last_ts, last_rel):
        if last_ts < first_ts:
            return (f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
                    f"timestamp is {last_ts} which is less than the first timestamp {first_ts}")
        if base_offset + last_rel < base_offset:
            return (f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
                    f"offset is {base_offset + last_rel} which is less than the first offset {base_offset}")
    if length % ENTRY_SIZE != 0:
        return (f"Time index file {path} is corrupt, found {length} bytes which is neither positive nor "
                f"a multiple of {ENTRY_SIZE}")
    return None


def check_time_index(buf, base_offset: int, path: str) -> str | None:
    """``time_index_sanity`` on the bytes of a whole time index file."""
    length = buffer_length(buf)
    n = length // ENTRY_SIZE
    if n == 0:
        return time_index_sanity(length, base_offset, None, None, None, path)
    first_ts = _ENTRY.unpack_from(buf, 0)[0]
    last_ts, last_rel = _ENTRY.unpack_from(buf, (n - 1) * ENTRY_SIZE)
    return time_index_sanity(length, base_offset, first_ts, last_ts, last_rel, path)


def build_time_index(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    """Bytes of a time index holding ``(timestamp, absolute offset)`` entries, in the given order."""
    timestamps, offsets = checked_pairs(entries, "time index entry")
    rel = relative_offsets(offsets, base_offset)
    return struct.pack(">" + "qi" * len(rel), *interleaved(timestamps, rel))

