"""Kafka's rule for which batches get offset- and time-index entries (``LogSegment.recover``/``append``).

For each batch, in file order (kafka-on-disk.md §3.6, §7.2):
  1. the running max timestamp moves only on a strictly greater batch maxTimestamp, remembering that
     batch's last offset;
  2. if ``position - lastIndexedPosition > index.interval.bytes``: offset entry (batch last offset,
     position) and time entry (running max, its offset) when the timestamp is strictly greater than the
     last time entry's; the batch becomes the last indexed one;
and once the segment is done, a final time entry for the segment's max timestamp.
Live appends of single batches (leaders, and every append since KAFKA-806) give the same entries.
"""
from __future__ import annotations


class IndexBuilder:
    """Feed batches in order; read ``offset_entries`` and ``time_entries`` after ``finish()``."""

    def __init__(self, base_offset: int, index_interval_bytes: int = 4096) -> None:
        self.base_offset = base_offset
        self.interval = index_interval_bytes
        self.offset_entries: list[tuple[int, int]] = []    # (absolute offset, position)
        self.time_entries: list[tuple[int, int]] = []      # (timestamp, absolute offset)
        self.last_indexed_position = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset

    def add(self, position: int, last_offset: int, max_timestamp: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if position - self.last_indexed_position > self.interval:
            self.offset_entries.append((last_offset, position))
            self._maybe_append_time()
            self.last_indexed_position = position

    def _maybe_append_time(self) -> None:
        last_ts = self.time_entries[-1][0] if self.time_entries else -1
        if self.max_timestamp > last_ts:
            self.time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))

    def finish(self) -> "IndexBuilder":
        """The roll/close/end-of-recovery entry guaranteeing the last time entry is the segment max."""
        self._maybe_append_time()
        return self
