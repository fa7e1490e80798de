"""A segment's largest timestamp as Kafka's time retention and log cleaner read it once the log is loaded.

Kafka (``LogSegment.largestTimestamp``, Scala 2.x–3.6, Java 3.7–4.x): ``maxTimestampSoFar`` when it is
``>= 0``, otherwise the ``.log`` file's last-modified time. ``maxTimestampSoFar`` starts, for a segment
loaded from disk, from the last entry of its ``.timeindex`` (``TimeIndex.lastEntry``). The time index gets
its final entry, the segment's greatest batch max timestamp, only when the segment is rolled, closed or
recovered (``onBecomeInactiveSegment``, ``close``, ``LogSegment.recover``): a live index copied or left by a
kill -9 can end hours before the newest record. That is why a broker without a clean-shutdown marker first
recovers every segment from the one holding the recovery point (``LogLoader.recoverLog``), rebuilding each
time index from the batches, and only then runs retention (``UnifiedLog.deleteRetentionMsBreachedSegments``)
or cleaning (``LogCleanerManager``, ``min.compaction.lag.ms``).

``largest_timestamp`` reproduces that, with one rule beyond the broker: a time index whose last entry is
older than the newest batch of its segment never decides a deletion; the log's value is used instead (a
segment goes later than the broker would delete it, never earlier).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

from .mapped import MappedFile, is_regular

#: how much of a segment one columnar scan covers before its pages are released
_WINDOW = 32 * 1024 * 1024

# sources of a largest timestamp, as reports name them
TIME_INDEX = "time index"
MTIME = ".log mtime"
RECOVERED = "batches: recovered at start"
LOG_NEWER = "batches: newer than the time index"


class LargestTimestamp(NamedTuple):
    value: int
    source: str
    note: str | None = None      # why the time index was not used, for reports


def time_index_last(path: Path) -> int | None:
    """The timestamp of the last entry of a ``.timeindex`` as the broker loads it: an existing index counts
    ``length / 12`` entries (``AbstractIndex``: the position is the file's length rounded down to whole
    entries), so a trimmed index's last slot, zero timestamp included. None: no whole entry, or not a
    regular file. (A preallocated, untrimmed index ends in zeros, read as timestamp 0: the broker recovers
    such a segment after an unclean shutdown, and the log's newer value replaces it here otherwise.)"""
    entry = time_index_last_entry(path, 0)
    return None if entry is None else entry[0]


def time_index_last_entry(path: Path, base_offset: int) -> tuple[int, int] | None:
    """(timestamp, absolute offset) of the last entry of a ``.timeindex`` as the broker loads it
    (``TimeIndex.lastEntry``; whole entries as ``time_index_last`` counts them); None: no whole entry, or not
    a regular file (the broker's ``lastEntry`` is then (-1, the base offset))."""
    if not is_regular(path):
        return None
    with open(path, "rb") as f:
        n = os.fstat(f.fileno()).st_size // 12
        if n == 0:
            return None
        f.seek((n - 1) * 12)
        raw = f.read(12)
    if len(raw) != 12:
        return None
    ts, rel = struct.unpack(">qi", raw)
    return ts, base_offset + rel


def log_max_timestamp(mf: MappedFile) -> int:
    """The greatest batch max timestamp of a segment's intact batches (``LogSegment.recover``'s
    ``maxTimestampSoFar``: every batch, records or not), -1 when none has one (magic 0). Headers only,
    on the columnar scan; mapped pages are released behind it."""
    from kafkalog_formats import columns as C
    from kafkalog_formats.message_set import BatchReader
    buf = mf.buf
    best, pos, col = -1, 0, C.B["max_timestamp"]
    while True:
        s = C.scan(buf, pos, None, records=False, headers=False, crc=False, max_bytes=_WINDOW)
        if s.n_batches:
            best = max(best, max(s.batch_table()[col::C.NB]))
        mf.release_behind(s.stop)
        if s.reason == C.LIMIT:
            pos = s.stop
            continue
        if s.reason != C.PYTHON:
            return best
        b = next(iter(BatchReader(buf, s.stop)), None)       # a legacy entry: the pure view
        if b is None:
            return best
        best = max(best, b.max_timestamp)
        pos = b.position + b.size


def largest_timestamp(index_last: int | None, log_max: int | None, mtime_ms: int, *,
                      recovered: bool) -> LargestTimestamp:
    """The value retention and the cleaner use. ``recovered``: the broker recovers this segment before
    either runs, so the value is the batches' (``log_max`` must be given). ``log_max`` None: the log was not
    read (only the time index can decide, as on the broker)."""
    if recovered:
        if log_max is not None and log_max >= 0:
            return LargestTimestamp(log_max, RECOVERED)
        return LargestTimestamp(mtime_ms, MTIME)
    if index_last is not None and index_last >= 0:
        if log_max is not None and log_max > index_last:
            return LargestTimestamp(log_max, LOG_NEWER,
                                    f"the last time-index entry ({index_last}) is older than the newest batch "
                                    f"({log_max}): the time index is stale or damaged, the log decides")
        return LargestTimestamp(index_last, TIME_INDEX)
    return LargestTimestamp(mtime_ms, MTIME)
