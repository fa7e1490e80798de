"""The retention plan selects exactly what a brute-force model of Kafka's rules selects
(``UnifiedLog.deleteOldSegments``/``deletableSegments``), tiered topics included."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_cli.repair.retain_plan import Policy, SegmentFacts, plan_retention


def model(segments, log_end, hw, log_start, policy, now):
    """Kafka's three passes restated as "the longest prefix such that ...", computed by trying every prefix.
    Tiered (remote copy enabled): a segment is also deletable only when upper bound - 1 ≤ the highest offset
    in remote storage or the next segment starts at or below the log start offset
    (``isSegmentEligibleForDeletion``, 3.7+)."""
    if hw is None:
        return 0
    target = log_start if policy.log_start_offset is None else max(log_start, policy.log_start_offset)
    if target > hw:
        target = log_start
    n = len(segments)

    def upper(i):
        return segments[i + 1].base_offset if i + 1 < n else log_end

    def uploaded_or_below_start(i):
        if not policy.tiered:
            return True
        below = i + 1 < n and target >= segments[i + 1].base_offset
        return below or (policy.remote_offset is not None and 0 < upper(i) and upper(i) - 1 <= policy.remote_offset)

    def allowed(i):
        return hw >= upper(i) and not (i == n - 1 and segments[i].size == 0) and uploaded_or_below_start(i)

    def longest(start, pred):
        k = start
        for j in range(start, n + 1):
            if all(allowed(i) and pred(i, start) for i in range(start, j)):
                k = j
        return k

    k = longest(0, lambda i, s: i + 1 < n and segments[i + 1].base_offset <= target)
    if policy.retention_bytes >= 0:
        total = sum(s.size for s in segments[k:])
        if total >= policy.retention_bytes:
            excess = total - policy.retention_bytes
            k = longest(k, lambda i, s: sum(x.size for x in segments[s:i + 1]) <= excess)
    if policy.retention_ms >= 0:
        k = longest(k, lambda i, s: now - segments[i].largest_timestamp > policy.retention_ms)
    return k


segments_st = st.lists(st.tuples(st.integers(1, 50), st.integers(0, 3000), st.integers(0, 1000)),
                       min_size=1, max_size=6)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(segs=segments_st, hw_extra=st.one_of(st.none(), st.integers(-60, 20)),
       retention_ms=st.integers(-1, 1200), retention_bytes=st.integers(-1, 9000),
       start=st.one_of(st.none(), st.integers(0, 300)), now=st.integers(0, 1500))
def test_plan_equals_brute_force(segs, hw_extra, retention_ms, retention_bytes, start, now):
    facts, base = [], 0
    for span, size, ts in segs:
        facts.append(SegmentFacts(base, size, ts, "time index"))
        base += span
    log_end = base
    hw = None if hw_extra is None else max(0, min(log_end, log_end + hw_extra))
    policy = Policy(retention_ms, retention_bytes, start)
    plan = plan_retention(facts, log_end, hw, 0, policy, now)
    k = model(facts, log_end, hw, 0, policy, now)
    assert [d.delete for d in plan.decisions] == [i < k for i in range(len(facts))]
    assert (plan.roll_at is not None) == (k == len(facts))
    if k:
        first = log_end if k == len(facts) else facts[k].base_offset
        assert plan.new_log_start >= first


CASES = [
    # (now, retention.ms, retention.bytes, log start offset, high watermark) -> deleted bases
    ((400, 150, -1, None, 91), [0, 25]),
    ((400, -1, 1600, None, 91), [0]),
    ((400, -1, -1, 30, 91), [0]),
    ((400, 0, -1, None, 91), [0, 25, 51]),
    ((400, 0, -1, None, 60), [0, 25]),          # the high watermark holds back segment 51
    ((400, 0, -1, None, None), []),             # unknown high watermark: nothing
    ((400, -1, 0, None, 91), [0, 25, 51, 78]),  # everything: Kafka rolls an empty active segment first
    ((400, -1, -1, 95, 91), []),                # a start offset above the high watermark is refused
]


def test_table_of_cases():
    facts = [SegmentFacts(0, 1000, 100, "t"), SegmentFacts(25, 1000, 200, "t"), SegmentFacts(51, 1000, 300, "t"),
             SegmentFacts(78, 500, 400, "t")]
    for (now, ms, by, start, hw), expected in CASES:
        plan = plan_retention(facts, 91, hw, 0, Policy(ms, by, start), now)
        assert [d.base_offset for d in plan.deleted] == expected, (now, ms, by, start, hw)
        assert [d.base_offset for d in plan.deleted] == \
            [f.base_offset for f in facts[:model(facts, 91, hw, 0, Policy(ms, by, start), now)]]
    everything = plan_retention(facts, 91, 91, 0, Policy(-1, 0, None), 400)
    assert everything.roll_at == 91 and everything.new_log_start == 91
    refused = plan_retention(facts, 91, 91, 0, Policy(-1, -1, 95), 400)
    assert "above the high watermark" in refused.notes[0] and refused.blocked is None


@settings(max_examples=400, deadline=None, derandomize=True)
@given(segs=segments_st, retention_ms=st.integers(-1, 1200), retention_bytes=st.integers(-1, 9000),
       start=st.one_of(st.none(), st.integers(0, 300)), now=st.integers(0, 1500),
       remote=st.one_of(st.none(), st.integers(-1, 320)), log_start=st.integers(0, 40))
def test_tiered_plan_equals_brute_force_and_keeps_the_log_start(segs, retention_ms, retention_bytes, start, now,
                                                                   remote, log_start):
    facts, base = [], 0
    for span, size, ts in segs:
        facts.append(SegmentFacts(base, size, ts, "time index"))
        base += span
    policy = Policy(retention_ms, retention_bytes, start, tiered=True, remote_offset=remote)
    plan = plan_retention(facts, base, base, log_start, policy, now)
    k = model(facts, base, base, log_start, policy, now)
    assert [d.delete for d in plan.decisions] == [i < k for i in range(len(facts))]
    target = log_start if start is None else max(log_start, start)
    target = log_start if target > base else target            # above the high watermark: refused
    assert plan.new_log_start == target                        # only delete-records moves the log start
    first_kept = base if k == len(facts) else facts[k].base_offset
    assert plan.local_log_start == max(target, first_kept)
    # a non-active segment kept only for want of an upload is reported, and it is the first one kept
    for b, _rule in plan.held:
        assert b == facts[k].base_offset and k < len(facts) - 1


def test_tiered_segments_wait_for_their_upload():
    facts = [SegmentFacts(0, 1000, 100, "t"), SegmentFacts(25, 1000, 200, "t"), SegmentFacts(51, 1000, 300, "t"),
             SegmentFacts(78, 500, 400, "t")]
    tiered = dict(tiered=True, ms_key="local.retention.ms")
    plan = plan_retention(facts, 91, 91, 0, Policy(0, -1, None, remote_offset=40, **tiered), 400)
    assert [d.base_offset for d in plan.deleted] == [0] and plan.held == [(25, "older than local.retention.ms=0 "
                                                                               "(0 ms)")]
    assert plan.new_log_start == 0 and plan.local_log_start == 25
    plan = plan_retention(facts, 91, 91, 0, Policy(0, -1, None, remote_offset=None, **tiered), 400)
    assert plan.deleted == [] and plan.held[0][0] == 0
    plan = plan_retention(facts, 91, 91, 0, Policy(0, -1, None, remote_offset=80, **tiered), 500)
    assert [d.base_offset for d in plan.deleted] == [0, 25, 51] and plan.held == []   # the active one: no problem
    assert "the active segment is uploaded only once rolled" in plan.decisions[-1].rule
    plan = plan_retention(facts, 91, 91, 0, Policy(-1, -1, 60, remote_offset=-1, **tiered), 400)
    assert [d.base_offset for d in plan.deleted] == [0, 25] and plan.new_log_start == 60     # delete-records
