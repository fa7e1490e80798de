"""Framing of a ``.log`` (or KRaft ``.checkpoint``) region: where each entry starts and how long it is.

Mirrors Kafka's ``FileLogInputStream.nextBatch`` (the reader of recovery, the cleaner and DumpLogSegments,
unchanged from 0.11 to 4.x): every entry starts with offset int64 | size int32 | (epoch or crc) int32 |
magic int8 (17 bytes), and

1. ≤ 17 bytes left → stop, the rest are trailing bytes;
2. size < 14 → CorruptRecordException (so a zero-filled tail is an error, not an end);
3. entry longer than what is left → stop (partial entry = trailing bytes);
4. magic < 2 → legacy entry, otherwise a v2 batch (``DefaultRecordBatch``, whose own check refuses one
   shorter than its 61-byte header); advance by 12 + size.

``frame`` is the one pure walk step: ``message_set.BatchReader`` (the batch views) and
``columns._scan_pure`` (the column tables) both frame their entries with it; ``scan.c`` and the compiled
``batch_iter`` are its C twins (tests/test_native_parity.py).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from .record_batch import RECORD_BATCH_OVERHEAD

LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V0 = 14
PREFIX = struct.Struct(">qiib")
_SIZE_AND_MAGIC = struct.Struct(">4xi4xb")       # the size and magic fields of the prefix at offset 8


class Stop(NamedTuple):
    """Why a walk over a region ended early: trailing bytes or a corrupt entry at ``position``."""
    position: int
    kind: str          # "trailing_bytes" | "corrupt_size" | "batch_too_small" | "corrupt_message"
    reason: str
    size: int          # number of bytes from position to the end of the region


def frame(buf, pos: int, end: int) -> tuple[int, int] | Stop | None:
    """The entry at ``pos`` of ``buf[:end]``: ``(magic, entry size)`` (12 + its size field), a ``Stop`` where
    the framing rules end the walk, or None at the exact end of the region. The entry's bytes are only
    known to lie within ``end``: its header (a v2 batch's 61 bytes) and CRC are the caller's to read."""
    left = end - pos
    if left <= HEADER_SIZE_UP_TO_MAGIC:
        return Stop(pos, "trailing_bytes", f"Found {left} invalid bytes at the end", left) if left > 0 else None
    size, magic = _SIZE_AND_MAGIC.unpack_from(buf, pos + 4)
    if size < RECORD_OVERHEAD_V0:
        return Stop(pos, "corrupt_size", f"Found record size {size} smaller than minimum record overhead "
                    f"({RECORD_OVERHEAD_V0})", left)
    if LOG_OVERHEAD + size > left:
        return Stop(pos, "trailing_bytes", f"Found {left} invalid bytes at the end (partial entry of size "
                    f"{LOG_OVERHEAD + size})", left)
    if magic >= 2 and LOG_OVERHEAD + size < RECORD_BATCH_OVERHEAD:
        return Stop(pos, "batch_too_small", "Record batch is corrupt (the size "
                    f"{LOG_OVERHEAD + size} is smaller than the minimum allowed overhead {RECORD_BATCH_OVERHEAD})",
                    left)
    return magic, LOG_OVERHEAD + size
