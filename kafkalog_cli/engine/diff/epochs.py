"""Where a follower truncates when it rejoins a leader: Kafka's leader-epoch protocol (KIP-101, KIP-279),
computed offline from the two replicas' leader-epoch caches.

``EpochCache`` is Kafka's ``LeaderEpochFileCache`` reduced to what truncation reads:

* loading (``LeaderEpochFileCache`` constructor, 3.x; ``assign`` per checkpoint line): an entry is taken
  when its epoch differs from the latest or its start offset is lower, after removing from the end every
  entry whose epoch or start offset is ≥ the new one's (``maybeTruncateNonMonotonicEntries``);
* ``LogLoader.load`` (2.8+; ``Log.loadSegments`` before) then calls ``truncateFromEnd(logEndOffset)``
  (entries starting at or after the log end go: an epoch a broker started as leader but never wrote in)
  and ``truncateFromStart(logStartOffset)`` (entries at or below the log start go, the last of them
  re-based to the log start);
* ``endOffsetFor(epoch, logEndOffset)`` (2.1+; 2.0 answered "undefined" for an epoch below the first
  entry, 2.1 returns the first entry's start offset): undefined epoch → undefined; the latest epoch →
  the log end offset; otherwise the largest epoch ≤ the requested one with the start offset of the first
  epoch above it, or (requested epoch, that start offset) when no epoch ≤ it is known; an epoch above
  every entry → undefined.

``truncation_point`` is the follower's side, ``AbstractFetcherThread.getOffsetTruncationState`` (2.0 to
trunk, unchanged in substance): the follower sends its latest epoch; the leader answers
``endOffsetFor``; an undefined answer truncates to the follower's high watermark (also when the follower
has no epoch cache: ``truncateToHighWatermark``); when the follower knows the answered epoch it truncates
to min(leader's end offset, its own end offset for that epoch, its log end) and is done; when it does not
(KIP-279), it truncates to its own end offset for the largest epoch below and asks again. Since 2.7 the
same answers arrive as "diverging epoch" in fetch responses (``Partition.fetchRecords``,
``truncateOnFetchResponse``) and the result is the same.

A replica becoming leader starts a new epoch at its log end (``Partition.makeLeader`` →
``maybeAssignEpochStartOffset``, 2.1+, KAFKA-7415), so the leader's cache gets one entry above every
epoch either replica knows; that is what makes a follower whose latest epoch the old leader never saw
(an unclean election) truncate by epochs rather than to its high watermark.
"""
from __future__ import annotations

from dataclasses import dataclass, field

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochCache:
    """An ordered list of (epoch, start offset) with Kafka's rules (see the module docstring)."""

    def __init__(self, entries=()) -> None:
        self.entries: list[tuple[int, int]] = []
        for epoch, start in entries:
            self.assign(int(epoch), int(start))

    def copy(self) -> "EpochCache":
        c = EpochCache()
        c.entries = list(self.entries)
        return c

    def assign(self, epoch: int, start_offset: int) -> None:
        """``LeaderEpochFileCache.assign`` (3.x): negative values are ignored here (Kafka throws)."""
        if epoch < 0 or start_offset < 0:
            return
        if self.entries:
            le, ls = self.entries[-1]
            if epoch == le and start_offset >= ls:
                return
        while self.entries and (self.entries[-1][0] >= epoch or self.entries[-1][1] >= start_offset):
            self.entries.pop()
        self.entries.append((epoch, start_offset))

    def assign_from_batch(self, epoch: int, base_offset: int) -> None:
        """What recovery and replication do per v2 batch: a new entry only for an epoch above the latest
        (``UnifiedLog.append`` / ``LogSegment.recover``: ``if batch.partitionLeaderEpoch > latestEpoch``)."""
        if epoch >= 0 and (not self.entries or epoch > self.entries[-1][0]):
            self.assign(epoch, base_offset)

    def truncate_from_end(self, end_offset: int) -> None:
        """``truncateFromEnd``: drop entries whose start offset is ≥ ``end_offset``."""
        if end_offset >= 0:
            while self.entries and self.entries[-1][1] >= end_offset:
                self.entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """``truncateFromStart``: drop entries starting at or below ``start_offset``; the last one dropped
        comes back starting at ``start_offset``."""
        removed = None
        while self.entries and self.entries[0][1] <= start_offset:
            removed = self.entries.pop(0)
        if removed is not None:
            self.entries.insert(0, (removed[0], start_offset))

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """``endOffsetFor(requestedEpoch, logEndOffset)`` → (epoch, end offset), Kafka 2.1+."""
        if requested == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.entries and self.entries[-1][0] == requested:
            return requested, log_end_offset
        higher = next((e for e in self.entries if e[0] > requested), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for e in self.entries:
            if e[0] <= requested:
                floor = e
        if floor is None:
            return requested, higher[1]
        return floor[0], higher[1]

    def __repr__(self) -> str:
        return "EpochCache(" + ", ".join(f"{e}@{s}" for e, s in self.entries) + ")"


def loaded_cache(entries, log_start: int, log_end: int) -> EpochCache:
    """The cache a broker holds after loading the log (constructor, then ``LogLoader.load``'s
    ``truncateFromEnd(logEndOffset)`` and ``truncateFromStart(logStartOffset)``)."""
    cache = EpochCache(entries)
    cache.truncate_from_end(log_end)
    cache.truncate_from_start(log_start)
    return cache


@dataclass
class Step:
    """One OffsetsForLeaderEpoch round trip."""
    follower_epoch: int | None        # the epoch the follower asked about (its latest)
    leader_epoch: int                 # the leader's answer
    leader_end_offset: int
    follower_end_offset: int | None   # the follower's end offset for the leader's epoch (None: unknown)
    truncate_to: int
    final: bool
    note: str


@dataclass
class Truncation:
    """Where the follower truncates, by which rule, and the round trips that led there."""
    offset: int                       # the follower keeps offsets below this
    rule: str                         # "leader-epoch" | "high-watermark"
    steps: list = field(default_factory=list)
    leader_new_epoch: int | None = None
    note: str = ""


def leader_cache(leader: EpochCache, follower: EpochCache, leader_end: int) -> EpochCache | None:
    """The leader's cache once it leads: its own entries plus a new epoch, above every epoch known to
    either replica, starting at its log end (KAFKA-7415). None when it has no epochs (old message
    format: Kafka keeps no cache and answers "undefined")."""
    if not leader.entries:
        return None
    c = leader.copy()
    top = max(e for e, _ in leader.entries + follower.entries)
    c.assign(top + 1, leader_end)
    return c


def truncation_point(leader: EpochCache | None, leader_end: int, follower: EpochCache, follower_end: int,
                     follower_hw: int) -> Truncation:
    """``AbstractFetcherThread.getOffsetTruncationState`` looped until the follower is done (see the
    module docstring). ``leader`` is the cache from ``leader_cache`` (None: no epochs on the leader)."""
    f = follower.copy()
    end = follower_end
    steps: list[Step] = []
    while True:
        asked = f.latest_epoch
        if asked is None:
            # fetchTruncatingPartitions: no latest epoch → truncateToHighWatermark
            hw = min(follower_hw, end)
            note = ("the follower has no leader epochs (no leader-epoch-checkpoint entries, or an old "
                    "message format): it truncates to its high watermark")
            return Truncation(hw, "high-watermark", steps, note=note)
        if leader is None:
            le, lo = UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        else:
            le, lo = leader.end_offset_for(asked, leader_end)
        if lo == UNDEFINED_EPOCH_OFFSET:
            hw = min(follower_hw, end)
            steps.append(Step(asked, le, lo, None, hw, True, "the leader knows no end offset for this epoch: "
                              "the follower truncates to its high watermark"))
            return Truncation(hw, "high-watermark", steps)
        fe_lo = f.end_offset_for(le, end)
        if fe_lo[1] == UNDEFINED_EPOCH_OFFSET:
            t = min(lo, end)
            steps.append(Step(asked, le, lo, None, t, True, "the follower tracks no epoch at or below the "
                              "leader's answer: it truncates to the leader's end offset"))
            return Truncation(t, "leader-epoch", steps)
        fepoch, foff = fe_lo
        if fepoch != le:
            t = min(foff, end)
            steps.append(Step(asked, le, lo, foff, t, False, f"epoch {le} is unknown to the follower: it "
                              f"truncates to the end of its epoch {fepoch} and asks again (KIP-279)"))
            end = min(end, t)
            f.truncate_from_end(t)       # UnifiedLog.truncateTo → leaderEpochCache.truncateFromEnd
            if len(steps) > 10_000:      # cannot happen: each round removes an entry
                return Truncation(end, "leader-epoch", steps)
            continue
        t = min(foff, lo, end)
        steps.append(Step(asked, le, lo, foff, t, True, "min(leader's end offset, follower's end offset for "
                          "the epoch, follower's log end)"))
        return Truncation(t, "leader-epoch", steps)
