"""The leader-epoch rules ``kafkalog diff`` uses, checked against the behaviour Kafka's own unit tests
pin down (``LeaderEpochFileCacheTest`` and ``AbstractFetcherThreadTest``, Kafka 3.7) and the KIP-101 /
KIP-279 scenarios. Expected values come from those tests and from working the protocol by hand."""
from __future__ import annotations

from kafkalog_cli.engine.diff.epochs import (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochCache, leader_cache,
                                             loaded_cache, truncation_point)

UNDEF = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def cache(*entries) -> EpochCache:
    c = EpochCache()
    for e, s in entries:
        c.assign(e, s)
    return c


# --- LeaderEpochFileCache (LeaderEpochFileCacheTest, 3.7) --------------------------------------------

def test_latest_epoch_ends_at_the_log_end():
    c = cache((2, 11), (2, 12))                       # shouldReturnLogEndOffsetIfLatestEpochRequested
    assert c.entries == [(2, 11)]
    assert c.end_offset_for(2, 14) == (2, 14)


def test_undefined_epoch_and_empty_cache_answer_undefined():
    assert cache((2, 11), (3, 12)).end_offset_for(UNDEFINED_EPOCH, 0) == UNDEF
    assert EpochCache().end_offset_for(0, 0) == UNDEF
    assert EpochCache().end_offset_for(UNDEFINED_EPOCH, 73) == UNDEF


def test_epoch_below_the_first_answers_the_first_start_offset():
    # shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch (2.1+; 2.0 answered undefined)
    assert cache((5, 11), (6, 12), (7, 13)).end_offset_for(4, 0) == (4, 11)


def test_same_epoch_with_an_earlier_start_truncates_the_conflicting_entries():
    c = cache((5, 11), (6, 12), (7, 13), (7, 12))      # shouldTruncateIfMatchingEpochButEarlierStartingOffset
    assert c.entries == [(5, 11), (7, 12)]
    assert c.end_offset_for(5, 0) == (5, 12)
    assert c.end_offset_for(6, 0) == (5, 12)


def test_previous_epoch_ends_where_the_next_starts():
    c = cache((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16))
    assert c.end_offset_for(2, 17) == (2, 15)
    c = cache((0, 10), (2, 13), (4, 17))              # shouldReturnNextAvailableEpochIfThereIsNoExact...
    assert c.end_offset_for(1, 0) == (0, 13)
    assert c.end_offset_for(2, 0) == (2, 17)
    assert c.end_offset_for(3, 0) == (2, 17)


def test_epoch_above_every_entry_is_unknown():
    assert cache((2, 100)).end_offset_for(3, 100) == UNDEF


def test_monotonic_start_offsets_and_epochs():
    assert cache((2, 9), (3, 9)).entries == [(3, 9)]   # shouldEnforceMonotonicallyIncreasingStartOffsets
    assert cache((2, 6), (2, 10)).entries == [(2, 6)]  # shouldNotOverwriteOffsetForALeaderEpoch...
    c = cache((1, 5), (2, 6), (1, 7))                  # shouldEnforceMonotonicallyIncreasingEpochs
    assert c.latest_epoch == 1
    assert c.end_offset_for(1, 8) == (1, 8)


def test_loading_drops_entries_at_the_log_end_and_rebases_the_first():
    # LogLoader.load: truncateFromEnd(logEndOffset), then truncateFromStart(logStartOffset)
    c = loaded_cache([(3, 0), (4, 577)], 0, 577)
    assert c.entries == [(3, 0)]
    c = loaded_cache([(0, 0), (1, 10), (2, 20)], 15, 30)
    assert c.entries == [(1, 15), (2, 20)]


# --- the follower's truncation (AbstractFetcherThread.getOffsetTruncationState) -------------------------

def test_kafka_test_truncation_multiple_rounds():
    # AbstractFetcherThreadTest.testTruncation: follower batches at epochs 0, 2, 4 (offsets 0, 1, 2), leader
    # at epochs 1, 3, 5; the follower ends with the leader's log, i.e. it truncates to 0 in three rounds.
    follower, leader = cache((0, 0), (2, 1), (4, 2)), cache((1, 0), (3, 1), (5, 2))
    t = truncation_point(leader_cache(leader, follower, 3), 3, follower, 3, 0)
    assert t.offset == 0 and t.rule == "leader-epoch"
    assert [(s.follower_epoch, s.leader_epoch, s.leader_end_offset, s.truncate_to, s.final) for s in t.steps] == [
        (4, 3, 2, 2, False), (2, 1, 1, 1, False), (0, 0, 0, 0, True)]


def test_kafka_test_no_epochs_truncates_to_the_high_watermark():
    # testTruncateToHighWatermarkIfLeaderEpochInfoNotAvailable: latestEpoch is None -> high watermark 2
    t = truncation_point(cache((1, 0)), 3, EpochCache(), 3, 2)
    assert (t.offset, t.rule) == (2, "high-watermark")
    # a leader without epochs (old message format) answers undefined: high watermark too
    t = truncation_point(None, 3, cache((0, 0)), 3, 1)
    assert (t.offset, t.rule) == (1, "high-watermark")


def test_kip101_two_leaders_at_the_same_offsets():
    # Both wrote epoch 0 to offset 10; A went on to 15 under epoch 0 (unreplicated), B was elected with
    # epoch 1 at 10 and wrote to 18. The leader's answer for the follower's epoch is where the next starts.
    a, b = cache((0, 0)), cache((0, 0), (1, 10))
    t = truncation_point(leader_cache(b, a, 18), 18, a, 15, 10)     # A rejoins, B leads
    assert t.offset == 10
    t = truncation_point(leader_cache(a, b, 15), 15, b, 18, 10)     # B rejoins, A leads with a new epoch 2
    assert t.offset == 10
    assert (t.steps[0].leader_epoch, t.steps[0].leader_end_offset) == (0, 15)


def test_kip279_epoch_gap():
    # KIP-279: the follower's latest epoch (2) was never seen by the leader, which answers with its epoch
    # 1 ending at 20; the follower does not know epoch 1 and truncates to the end of its epoch 0 (10),
    # then asks again: epoch 0 ends at 10 on both.
    leader, follower = cache((0, 0), (1, 10)), cache((0, 0), (2, 10))
    t = truncation_point(leader_cache(leader, follower, 20), 20, follower, 15, 0)
    assert t.offset == 10
    assert [s.final for s in t.steps] == [False, True]


def test_kip279_second_round_goes_lower():
    # follower 0@0 1@5 3@10 (end 15), leader 0@0 1@5 2@8 (end 20): first round cuts to 10 (end of the
    # follower's epoch 1 as far as it knows), the second to 8 (where epoch 1 ends on the leader).
    leader, follower = cache((0, 0), (1, 5), (2, 8)), cache((0, 0), (1, 5), (3, 10))
    t = truncation_point(leader_cache(leader, follower, 20), 20, follower, 15, 0)
    assert [s.truncate_to for s in t.steps] == [10, 8]
    assert t.offset == 8


def test_lagging_follower_keeps_everything():
    a = cache((0, 0), (3, 50))
    t = truncation_point(leader_cache(a, cache((0, 0)), 80), 80, cache((0, 0)), 40, 40)
    assert t.offset == 40


def test_follower_ahead_in_the_same_epoch_is_cut_to_the_leader_end():
    a, b = cache((0, 0)), cache((0, 0))
    t = truncation_point(leader_cache(a, b, 30), 30, b, 45, 30)
    assert t.offset == 30
