"""Which segments Kafka's retention deletes (``UnifiedLog.deleteOldSegments``, 2.x-4.0): pure.

Three passes, in Kafka's order, each deleting a prefix of what the previous left:

1. log start offset: a segment goes when the *next* segment exists and its base offset ≤ logStartOffset;
2. size (retention.bytes ≥ 0 and total size ≥ it): diff = total − retention.bytes; oldest first, a segment
   goes while diff − its size ≥ 0 (then diff shrinks by its size);
3. time (retention.ms ≥ 0): a segment goes when now − largestTimestamp > retention.ms.

Passes 2 and 3 run only for topics whose cleanup.policy contains ``delete`` (the caller leaves their limits
negative otherwise). In every pass a segment is deletable only if the high watermark ≥ its upper bound
(next segment's base, or the log end for the last) and it is not the last segment while empty; the walk
stops at the first survivor (``UnifiedLog.deletableSegments``). If every segment goes, Kafka first rolls an
empty active segment at the log end, which is kept (``deleteSegments``).

Tiered topics with remote copy enabled (``Policy.tiered``; Kafka 3.6+): the limits are
``local.retention.ms/bytes``, and a segment is also deletable only when it is known to be uploaded —
upper bound − 1 ≤ highestOffsetInRemoteStorage — or lies below the log start offset
(``deletableSegments.isSegmentEligibleForDeletion``, 3.7+; 3.6.0 checked the upload alone). A segment a pass
would delete but that is not known to be uploaded stops the walk, as in Kafka, and is reported
(``RetainPlan.held``). Deleting local segments moves only the local log start offset
(``incrementStartOffset`` → ``maybeIncrementLocalLogStartOffset``): the log start offset itself — the
first offset still in remote storage, kept in ``log-start-offset-checkpoint`` — stays, unless delete-records
(``Policy.log_start_offset``) raised it. Kafka 3.7+ also rolls an active segment that breaches the limits so
that it can be uploaded; offline nothing can upload it, so kafkalog leaves that to the broker.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import units
from ..engine.remote_storage import is_uploaded


@dataclass(frozen=True)
class SegmentFacts:
    base_offset: int
    size: int
    largest_timestamp: int           # as the broker reads it once the log is loaded (engine.segment_times)
    timestamp_source: str            # engine.segment_times: TIME_INDEX, MTIME, RECOVERED, LOG_NEWER
    note: str | None = None          # why the time index did not decide


@dataclass(frozen=True)
class Policy:
    retention_ms: int = -1           # < 0: no time retention
    retention_bytes: int = -1        # < 0: no size retention
    log_start_offset: int | None = None   # delete-records: advance the log start offset to this
    tiered: bool = False             # remote copy enabled: only uploaded segments go, the log start stays
    remote_offset: int | None = None  # highestOffsetInRemoteStorage (-1: nothing uploaded, None: unknown)
    ms_key: str = "retention.ms"     # the names of the limits, for the reasons ("local.retention.ms" when tiered)
    bytes_key: str = "retention.bytes"
    hw_remedy: str = "give --high-watermark to proceed"   # what to do when the high watermark is unknown


@dataclass
class Decision:
    base_offset: int
    size: int
    largest_timestamp: int
    timestamp_source: str
    age_ms: int
    delete: bool
    rule: str                        # why it goes or stays
    cause: str = ""                  # the pass that deletes it: "log_start", "size", "time"
    note: str | None = None          # SegmentFacts.note


@dataclass
class RetainPlan:
    decisions: list = field(default_factory=list)
    roll_at: int | None = None       # base offset of the empty active segment to create first
    old_log_start: int = 0
    new_log_start: int = 0
    high_watermark: int | None = None
    log_end: int = 0
    blocked: str | None = None       # why nothing can be deleted at all
    notes: list = field(default_factory=list)   # what was asked but not done, and why
    notes_info: list = field(default_factory=list)  # how what was asked was read (no problem)
    problems: list = field(default_factory=list)  # Findings: inputs that cannot be read (partition skipped)
    snapshot_at_roll: bool = False   # a producer snapshot is written at ``roll_at`` (UnifiedLog.roll)
    tiered: bool = False             # only the local log start moves (new_log_start stays, but for delete-records)
    local_log_start: int = 0         # first offset kept on this disk
    held: list = field(default_factory=list)   # (base offset, rule): would go, but not known to be uploaded

    @property
    def deleted(self) -> list:
        return [d for d in self.decisions if d.delete]


def plan_retention(segments: list[SegmentFacts], log_end: int, high_watermark: int | None, log_start: int,
                   policy: Policy, now_ms: int, problems: list | None = None) -> RetainPlan:
    """Decide per segment; ``segments`` are in base-offset order, the last one is the active segment.
    ``problems``: inputs that could not be read (checked before any change); any of them blocks the plan.

    ``UnifiedLog.deleteOldSegments``' passes in Kafka's order, each a named phase over what the previous
    left: the log start offset, then retention.bytes, then retention.ms."""
    plan = RetainPlan(old_log_start=log_start, new_log_start=log_start, high_watermark=high_watermark,
                      log_end=log_end, problems=list(problems or []))
    if not segments:
        plan.blocked = "the partition has no segment"
        return plan
    plan.tiered = policy.tiered
    plan.blocked = _blocked(plan, high_watermark, policy)
    target_start = _target_log_start(plan, log_start, high_watermark, policy)
    walk = _Walk(plan, segments, log_end, high_watermark, policy, target_start)
    _delete_below_log_start(walk)
    _delete_over_size(walk, policy)
    _delete_over_time(walk, policy, now_ms)
    if not walk.remaining:
        plan.roll_at = log_end
    _decide(plan, segments, walk, policy, now_ms)
    _move_log_starts(plan, walk, policy)
    return plan


def _blocked(plan: RetainPlan, high_watermark: int | None, policy: Policy) -> str | None:
    """Why nothing of the partition may change: inputs that could not be read, or an unknown high watermark
    (``deletableSegments`` deletes nothing above it)."""
    if plan.problems:
        return f"{len(plan.problems)} problem(s) found: nothing of this partition was changed"
    if high_watermark is None:
        return ("the high watermark is unknown (the partition is not in replication-offset-checkpoint, and the "
                "KRaft metadata does not name this broker as its only replica): a broker starts it at the log "
                "start offset and deletes nothing until its replicas have caught up; " + policy.hw_remedy)
    return None


def _target_log_start(plan: RetainPlan, log_start: int, high_watermark: int | None, policy: Policy) -> int:
    """The log start offset asked for (delete-records; ``Partition.deleteRecordsOnLeader`` →
    ``UnifiedLog.maybeIncrementLogStartOffset``, 0.11–4.x): -1 is the high watermark, a lower one changes
    nothing, one above the high watermark is refused (OFFSET_OUT_OF_RANGE, noted), and a blocked plan keeps
    the current one. ``high_watermark`` is the loaded one (``retain_exec.loaded_high_watermark``): never above
    the log end."""
    asked = policy.log_start_offset
    if asked is not None and asked < 0 and high_watermark is not None:   # DeleteRecords: -1 is the high watermark
        plan.notes_info.append(f"log start offset -1: the high watermark {high_watermark}")
        asked = high_watermark
    target_start = log_start if asked is None or asked < 0 else max(log_start, asked)
    if plan.blocked:                  # nothing changes, the log start offset neither
        return log_start
    if target_start > high_watermark:
        plan.notes.append(f"not advancing the log start offset to {target_start}: it is above the high watermark "
                          f"{high_watermark} (Kafka's DeleteRecords refuses it too)")
        return log_start
    return target_start


class _Walk:
    """``UnifiedLog.deletableSegments``: the segments no pass has deleted yet (``remaining``), and one walk
    over them per pass, oldest first, stopping at the first survivor."""

    def __init__(self, plan: RetainPlan, segments: list[SegmentFacts], log_end: int, high_watermark: int | None,
                 policy: Policy, target_start: int) -> None:
        self.plan, self.log_end, self.hw, self.policy = plan, log_end, high_watermark, policy
        self.target_start = target_start
        self.remaining = list(segments)
        self.reasons: dict[int, tuple[str, str]] = {}   # base offset -> (rule, cause) of each deleted segment
        self.held: dict[int, str] = {}                  # base offset -> rule: would go, not known uploaded

    def eligible(self, nxt: SegmentFacts | None, upper: int) -> bool:
        """``isSegmentEligibleForDeletion``: uploaded, or entirely below the log start offset (tiered only)."""
        if not self.policy.tiered:
            return True
        return (is_uploaded(upper, self.policy.remote_offset)
                or (nxt is not None and self.target_start >= nxt.base_offset))

    def walk(self, pred, rule: str, cause: str) -> None:
        """Delete the oldest segments while ``pred(segment, next segment)`` holds and each lies wholly below
        the high watermark (the last one only when not empty)."""
        remaining = self.remaining
        gone = 0
        for i, seg in enumerate(remaining):
            nxt = remaining[i + 1] if i + 1 < len(remaining) else None
            upper = nxt.base_offset if nxt else self.log_end
            last_and_empty = nxt is None and seg.size == 0
            if self.plan.blocked or self.hw < upper or last_and_empty or not pred(seg, nxt):
                break
            if not self.eligible(nxt, upper):
                self.held.setdefault(seg.base_offset, rule)
                break
            self.reasons[seg.base_offset] = (rule, cause)
            gone += 1
        self.remaining = remaining[gone:]


def _delete_below_log_start(w: _Walk) -> None:
    """``deleteLogStartOffsetBreachedSegments``: a segment goes when the next one starts at or below the log
    start offset."""
    t = w.target_start
    w.walk(lambda s, n: n is not None and n.base_offset <= t,
           f"below the log start offset {t} (the next segment starts at or below it)", "log_start")


def _delete_over_size(w: _Walk, policy: Policy) -> None:
    """``deleteRetentionSizeBreachedSegments``: when the log holds at least retention.bytes, the oldest
    segments go while what is over the limit still covers each whole."""
    if policy.retention_bytes < 0:
        return
    total = sum(s.size for s in w.remaining)
    if total < policy.retention_bytes:
        return
    diff = [total - policy.retention_bytes]

    def by_size(s, n):
        if diff[0] - s.size >= 0:
            diff[0] -= s.size
            return True
        return False
    w.walk(by_size, f"{policy.bytes_key}={policy.retention_bytes}: the log holds {total} bytes "
                    f"({units.size(total)})", "size")


def _delete_over_time(w: _Walk, policy: Policy, now_ms: int) -> None:
    """``deleteRetentionMsBreachedSegments``: a segment goes when its largest timestamp is older than
    retention.ms."""
    if policy.retention_ms < 0:
        return
    w.walk(lambda s, n: now_ms - s.largest_timestamp > policy.retention_ms,
           f"older than {policy.ms_key}={policy.retention_ms} ({units.duration(policy.retention_ms)})", "time")


def _decide(plan: RetainPlan, segments: list[SegmentFacts], w: _Walk, policy: Policy, now_ms: int) -> None:
    """A ``Decision`` per segment, with the rule that deletes it or the reason it stays."""
    first_kept = w.remaining[0] if w.remaining else None
    held = w.held
    for s in segments:
        age = now_ms - s.largest_timestamp
        if s.base_offset in w.reasons:
            rule, cause = w.reasons[s.base_offset]
            plan.decisions.append(Decision(s.base_offset, s.size, s.largest_timestamp, s.timestamp_source, age,
                                           True, rule, cause, s.note))
            continue
        if plan.blocked:
            why = "kept: problems found" if plan.problems else "kept: high watermark unknown"
        elif s.base_offset in held and s is segments[-1]:
            why = (f"kept although {held[s.base_offset]}: the active segment is uploaded only once rolled (Kafka "
                   "3.7+ rolls it for that; kafkalog leaves it to the broker)")
        elif s.base_offset in held:
            why = (f"kept although {held[s.base_offset]}: not known to be uploaded to remote storage "
                   f"({_remote_words(policy.remote_offset)})")
            plan.held.append((s.base_offset, held[s.base_offset]))
        elif s is first_kept:
            why = _keep_reason(s, segments, plan.log_end, plan.high_watermark, policy, now_ms, w.target_start)
        else:
            why = "kept: deletion stops at the first surviving segment"
        plan.decisions.append(Decision(s.base_offset, s.size, s.largest_timestamp, s.timestamp_source, age,
                                       False, why, note=s.note))


def _move_log_starts(plan: RetainPlan, w: _Walk, policy: Policy) -> None:
    """The new log start and local log start offsets (``incrementStartOffset``): a tiered topic moves only
    the local one; otherwise the log start follows the first segment kept once anything was deleted."""
    first_base = plan.roll_at if plan.roll_at is not None else min(s.base_offset for s in w.remaining)
    plan.local_log_start = max(w.target_start, first_base)
    if policy.tiered:                 # incrementStartOffset: only the local log start moves
        plan.new_log_start = w.target_start
    else:
        plan.new_log_start = max(w.target_start, first_base) if plan.deleted else w.target_start


def _remote_words(offset: int | None) -> str:
    if offset is None:
        return "the highest offset in remote storage is unknown"
    if offset < 0:
        return "nothing of this partition is known to be uploaded"
    return f"the highest offset known to be in remote storage is {offset}"


def _keep_reason(s: SegmentFacts, segments: list, log_end: int, hw: int | None, policy: Policy, now: int,
                 target_start: int) -> str:
    i = segments.index(s)
    nxt = segments[i + 1] if i + 1 < len(segments) else None
    upper = nxt.base_offset if nxt else log_end
    if hw is not None and hw < upper:
        return f"kept: not entirely below the high watermark {hw} (it ends at offset {upper - 1})"
    if nxt is None and s.size == 0:
        return "kept: the active segment is empty"
    parts = []
    if policy.retention_ms >= 0:
        parts.append(f"{units.duration(now - s.largest_timestamp)} old, not older than {policy.ms_key}="
                     f"{policy.retention_ms} ({units.duration(policy.retention_ms)})")
    if policy.retention_bytes >= 0:
        parts.append(f"within {policy.bytes_key}={policy.retention_bytes}")
    if policy.log_start_offset is not None and (nxt is None or nxt.base_offset > target_start):
        parts.append(f"holds offsets at or above the log start offset {target_start}")
    return "kept: " + ("; ".join(parts) if parts else "no time or size limit applies")
