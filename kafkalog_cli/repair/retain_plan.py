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
    ``problems``: inputs that could not be read (checked before any change); any of them blocks the plan."""
    plan = RetainPlan(old_log_start=log_start, new_log_start=log_start, high_watermark=high_watermark,
                      log_end=log_end, problems=list(problems or []))
    remaining = list(segments)
    reasons: dict[int, tuple[str, str]] = {}
    if not remaining:
        plan.blocked = "the partition has no segment"
        return plan
    if plan.problems:
        plan.blocked = f"{len(plan.problems)} problem(s) found: nothing of this partition was changed"
    if high_watermark is None and not plan.blocked:
        plan.blocked = ("the high watermark is unknown (the partition is not in replication-offset-checkpoint, "
                        "and the KRaft metadata does not name this broker as its only replica): a broker starts "
                        "it at the log start offset and deletes nothing until its replicas have caught up; "
                        + policy.hw_remedy)
    asked = policy.log_start_offset
    if asked is not None and asked < 0 and high_watermark is not None:   # DeleteRecords: -1 is the high watermark
        plan.notes_info.append(f"log start offset -1: the high watermark {high_watermark}")
        asked = high_watermark
    target_start = log_start if asked is None or asked < 0 else max(log_start, asked)
    if plan.blocked:                  # nothing changes, the log start offset neither
        target_start = log_start
    elif target_start > high_watermark:
        plan.notes.append(f"not advancing the log start offset to {target_start}: it is above the high watermark "
                          f"{high_watermark} (Kafka's DeleteRecords refuses it too)")
        target_start = log_start

    plan.tiered = policy.tiered
    held: dict[int, str] = {}

    def eligible(nxt, upper: int) -> bool:
        """``isSegmentEligibleForDeletion``: uploaded, or entirely below the log start offset (tiered only)."""
        if not policy.tiered:
            return True
        return is_uploaded(upper, policy.remote_offset) or (nxt is not None and target_start >= nxt.base_offset)

    def walk(pred, rule: str, cause: str) -> None:
        nonlocal remaining
        gone = 0
        for i, seg in enumerate(remaining):
            nxt = remaining[i + 1] if i + 1 < len(remaining) else None
            upper = nxt.base_offset if nxt else log_end
            last_and_empty = nxt is None and seg.size == 0
            if plan.blocked or high_watermark < upper or last_and_empty or not pred(seg, nxt):
                break
            if not eligible(nxt, upper):
                held.setdefault(seg.base_offset, rule)
                break
            reasons[seg.base_offset] = (rule, cause)
            gone += 1
        remaining = remaining[gone:]

    walk(lambda s, n: n is not None and n.base_offset <= target_start,
         f"below the log start offset {target_start} (the next segment starts at or below it)", "log_start")
    if policy.retention_bytes >= 0:
        total = sum(s.size for s in remaining)
        if total >= policy.retention_bytes:
            diff = [total - policy.retention_bytes]

            def by_size(s, n):
                if diff[0] - s.size >= 0:
                    diff[0] -= s.size
                    return True
                return False
            walk(by_size, f"{policy.bytes_key}={policy.retention_bytes}: the log holds {total} bytes "
                          f"({units.size(total)})", "size")
    if policy.retention_ms >= 0:
        walk(lambda s, n: now_ms - s.largest_timestamp > policy.retention_ms,
             f"older than {policy.ms_key}={policy.retention_ms} ({units.duration(policy.retention_ms)})", "time")
    if not remaining:
        plan.roll_at = log_end
    survivors = {s.base_offset for s in remaining}
    first_kept = remaining[0] if remaining else None
    for s in segments:
        age = now_ms - s.largest_timestamp
        if s.base_offset in reasons:
            rule, cause = reasons[s.base_offset]
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
            why = _keep_reason(s, segments, log_end, high_watermark, policy, now_ms, target_start)
        else:
            why = "kept: deletion stops at the first surviving segment"
        plan.decisions.append(Decision(s.base_offset, s.size, s.largest_timestamp, s.timestamp_source, age,
                                       False, why, note=s.note))
    first_base = plan.roll_at if plan.roll_at is not None else min(survivors)
    plan.local_log_start = max(target_start, first_base)
    if policy.tiered:                 # incrementStartOffset: only the local log start moves
        plan.new_log_start = target_start
    else:
        plan.new_log_start = max(target_start, first_base) if plan.deleted else target_start
    return plan


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
