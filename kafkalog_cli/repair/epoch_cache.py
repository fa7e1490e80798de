"""The leader-epoch cache as recovery changes it (Kafka's ``LeaderEpochFileCache``: ``assign``,
``truncateFromEnd``, ``truncateFromStart``), over ``leader-epoch-checkpoint`` entries (epoch, start offset).

Used by the segment recovery (``assign`` per v2 batch) and by the planner (the truncations ``LogLoader.load``
applies after recovery).
"""
from __future__ import annotations


class EpochCache:
    """``leader-epoch-checkpoint`` entries as Kafka's ``LeaderEpochFileCache`` keeps them while recovering."""

    def __init__(self, entries=()) -> None:
        self.entries: list[tuple[int, int]] = [(int(e), int(s)) for e, s in entries]

    def assign(self, epoch: int, start_offset: int) -> None:
        """What ``LogSegment.recover`` does per v2 batch: a new entry only for an epoch above the latest;
        entries starting at or after the new start offset are dropped first (``assign``)."""
        if epoch < 0 or start_offset < 0:
            return
        if self.entries and epoch <= self.entries[-1][0]:
            return
        self.entries = [(e, s) for e, s in self.entries if e < epoch and s < start_offset]
        self.entries.append((epoch, start_offset))

    def truncated_from_end(self, end_offset: int) -> list[tuple[int, int]]:
        """``truncateFromEnd``: the entries starting before ``end_offset`` (the log end offset)."""
        return [(e, s) for e, s in self.entries if s < end_offset]


def truncated_from_start(entries: list[tuple[int, int]], start_offset: int) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.truncateFromStart`` (2.8–4.x): entries removed from the oldest while their
    start offset is ≤ ``start_offset``, the last one removed re-added at ``start_offset``."""
    n = 0
    while n < len(entries) and entries[n][1] <= start_offset:
        n += 1
    if n == 0:
        return list(entries)
    return [(entries[n - 1][0], start_offset)] + list(entries[n:])
