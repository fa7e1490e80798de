"""Which offset- and time-index entries Kafka brokers write, version by version (``LogSegment``).

Two writers, both sharing ``TimeIndex.maybeAppend`` (an entry only when its timestamp is strictly
greater than the last one's) and the final entry on roll, close and end of recovery
(``LogSegment.onBecomeInactiveSegment``/``close``/``recover``: the segment's running max):

``IndexBuilder``        one batch at a time: ``LogSegment.recover`` (every version) and live appends since
                        KAFKA-806 (4.1, cherry-picked to 4.0/3.9 maintenance branches). Offset entry
                        (batch last offset, batch position) when more than ``index.interval.bytes``
                        were written since the last entry; time entry (running max, offset of the
                        *last offset of the batch* that first reached it).
``AppendIndexBuilder``  ``LogSegment.append`` before KAFKA-806: at most one entry pair per *append call*.
                        A leader appends one batch per call, a follower a whole fetched chunk, the cleaner
                        one read-buffer chunk of retained batches. The offset entry is (the append's first
                        offset, Kafka 0.8-1.1) or (its largest offset, 2.0-4.0) at the position where the
                        append starts; the time entry's offset is whatever the caller passed as
                        ``shallowOffsetOfMaxTimestamp`` (see ``leader_offset_of_max_timestamp``).

The verifier does not rebuild indexes and compare bytes: it checks what lookups need (``verify_segment``);
these writers exist to build test data exactly as each Kafka version lays it out.
"""
from __future__ import annotations


class _TimeEntries:
    """The running max (``maxTimestampAndOffsetSoFar``) and ``TimeIndex.maybeAppend``."""

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self.offset_entries: list[tuple[int, int]] = []    # (absolute offset, position)
        self.time_entries: list[tuple[int, int]] = []      # (timestamp, absolute offset)
        self.max_timestamp = -1                            # TimeIndex.lastEntry of an empty index: (-1, base)
        self.offset_of_max_timestamp = base_offset

    def _observe(self, max_timestamp: int, offset_of_max: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = offset_of_max

    def _maybe_append_time(self) -> None:
        last_ts = self.time_entries[-1][0] if self.time_entries else -1
        if self.max_timestamp > last_ts:
            self.time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))

    def finish(self):
        """The roll/close/end-of-recovery entry guaranteeing the last time entry is the segment max."""
        self._maybe_append_time()
        return self


class IndexBuilder(_TimeEntries):
    """Per-batch rule (``LogSegment.recover``, all versions; ``LogSegment.append`` since KAFKA-806).

    Feed batches in file order; read ``offset_entries`` and ``time_entries`` after ``finish()``.
    """

    def __init__(self, base_offset: int, index_interval_bytes: int = 4096) -> None:
        super().__init__(base_offset)
        self.interval = index_interval_bytes
        self.last_indexed_position = 0

    def add(self, position: int, last_offset: int, max_timestamp: int) -> None:
        self._observe(max_timestamp, last_offset)
        if position - self.last_indexed_position > self.interval:
            self.offset_entries.append((last_offset, position))
            self._maybe_append_time()
            self.last_indexed_position = position


class AppendIndexBuilder(_TimeEntries):
    """``LogSegment.append`` of Kafka 0.8 … 4.0 (before KAFKA-806): one entry pair at most per call.

    ``first_offset_entries``: Kafka 0.8-1.1 indexed the append's *first* offset (``index.append(firstOffset,
    physicalPosition)``); 2.0 switched to the largest offset.
    """

    def __init__(self, base_offset: int, index_interval_bytes: int = 4096, *,
                 first_offset_entries: bool = False) -> None:
        super().__init__(base_offset)
        self.interval = index_interval_bytes
        self.first_offset_entries = first_offset_entries
        self.bytes_since_last_entry = 0

    def append(self, position: int, size: int, first_offset: int, largest_offset: int,
               largest_timestamp: int, offset_of_max_timestamp: int) -> None:
        self._observe(largest_timestamp, offset_of_max_timestamp)
        if self.bytes_since_last_entry > self.interval:
            self.offset_entries.append((first_offset if self.first_offset_entries else largest_offset, position))
            self._maybe_append_time()
            self.bytes_since_last_entry = 0
        self.bytes_since_last_entry += size


# --- what each Kafka version passes as shallowOffsetOfMaxTimestamp ---------------------------------

#: Kafka writers of the time-index offset for a v2 batch appended by a leader (``LogValidator``):
#:   "0.11-3.6"   uncompressed CreateTime: offset of the first record holding the batch's max timestamp
#:                (``assignOffsetsNonCompressed``); everything else: the batch's last offset
#:   "3.7"        the batch's last offset (KAFKA-14991 clean-up e905ef1, Nov 2023)
#:   "2024-03"    trunk/3.8-SNAPSHOT and 3.6/3.7 branch builds between KAFKA-16342/KAFKA-16341 (15-19 Mar
#:                2024) and their revert (28-29 Mar on the branches) or KAFKA-16310 (10 Apr on trunk):
#:                CreateTime: offset of the first record holding the max timestamp, compressed or not;
#:                LogAppendTime: the batch's first offset
#:   "3.8"        the batch's last offset (KAFKA-16310), and per-batch indexing from 4.1 (KAFKA-806)
LEADER_WRITERS = ("0.11-3.6", "3.7", "2024-03", "3.8")


def leader_offset_of_max_timestamp(batch, kafka: str) -> int:
    """The time-index offset a leader of Kafka ``kafka`` (one of ``LEADER_WRITERS``) records for ``batch``.

    Followers, the cleaner (per retained batch) and recovery always use the batch's last offset.
    """
    if kafka not in LEADER_WRITERS:
        raise ValueError(f"unknown Kafka writer {kafka!r}")
    if batch.magic < 2 or kafka in ("3.7", "3.8"):
        return batch.last_offset
    record_level = kafka == "2024-03" or (kafka == "0.11-3.6" and batch.codec == 0)
    if batch.log_append_time:
        return batch.base_offset if kafka == "2024-03" else batch.last_offset
    if not record_level:
        return batch.last_offset
    best_ts, best = -1, batch.last_offset         # NO_TIMESTAMP: such records never become the max
    for rec in batch.records():
        if rec.timestamp > best_ts:
            best_ts, best = rec.timestamp, rec.offset
    return best
