"""How serious a verify finding is, given what a broker does with the files when it next loads the log.

Severities (README "verify"; docs/kafka-rules.md):

error    no healthy broker of any Kafka version leaves this, even after a crash, and a broker loading the
         files as they are would misbehave (refuse to start, serve wrong or corrupt data, skip records,
         delete data early), or data the broker had made durable is gone.
warning  a state a broker leaves only through a crash, a kill or an operator's hand, which Kafka's loader
         repairs or tolerates on its next start (truncating a torn tail, rebuilding indexes, deleting
         leftovers, clamping checkpoints), or a degraded but working state. ``--fail-on warning`` fails CI
         on them.
info     normal states of healthy brokers worth a note (never changes the exit status).

A segment Kafka's next start *recovers* (``LogLoader.recoverLog``: every segment from the one holding the
recovery point on, unless the log directory has a clean-shutdown marker; the whole KRaft metadata log
(``KafkaMetadataLog``: recovery point 0, never a clean shutdown); a segment without ``.index`` or with a
``.txnindex`` failing ``sanityCheck``) has its indexes rebuilt from the ``.log`` and its unreadable end
truncated (``LogSegment.recover``). There, index findings are information and a damaged *tail* of the
``.log`` is a warning; damage followed by intact batches stays an error (Kafka would cut the good data
off). Partitions in ``-delete`` directories are deleted by Kafka: their findings are information.
"""
from __future__ import annotations

from dataclasses import dataclass

from .findings import Finding
from .load_plan import UNKNOWN, LoadPlan, plan_for  # noqa: F401 (re-exported)
from .verify_segment import STOP_KINDS, SegmentResult

#: .log findings that describe where Kafka's recovery stops reading (with crc_mismatch: a torn tail)
TAIL_KINDS = frozenset(STOP_KINDS) | {"crc_mismatch"}
#: findings about a segment's indexes that a rebuild makes irrelevant
INDEX_KINDS = frozenset({"missing_index", "missing_time_index", "untrimmed_index", "time_index_missing_final_entry"})
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
#: problems even a recovering broker trips over: ``TransactionIndex.sanityCheck`` throws a plain
#: KafkaException for an unknown entry version before recovery starts, which fails the log load
LOAD_FAILURES = frozenset({"txn_index_version", "io_error"})


def apply(res: SegmentResult, plan: LoadPlan) -> list[Finding]:
    """The segment's findings with severities for what Kafka's next start does with it."""
    findings = res.findings
    if plan.deleted:
        return [_at_most(f, "info") for f in findings]
    recovered = plan.recovers(res.base_offset) or any(
        f.kind in ("missing_index", "txn_index_sanity") for f in findings)
    if not recovered:
        return list(findings)
    out = []
    for f in findings:
        name = f.file or ""
        if f.kind in LOAD_FAILURES:
            out.append(f)
        elif f.kind in INDEX_KINDS or name.endswith(INDEX_SUFFIXES):
            out.append(_at_most(f, "info"))
        elif (res.damage_is_tail and f.kind in TAIL_KINDS and f.position is not None
                and res.damage_from is not None and f.position >= res.damage_from):
            out.append(_at_most(f, "warning"))
        else:
            out.append(f)
    return out


@dataclass(frozen=True)
class TopicRules:
    """The rules a broker runs on a topic that read its segments' largest timestamps (the last time-index
    entry, ``LogSegment.largestTimestamp``): time retention (``UnifiedLog.deleteRetentionMsBreachedSegments``,
    cleanup.policy with delete and retention.ms >= 0) and the cleaner's min.compaction.lag.ms
    (``LogCleanerManager.cleanableOffsets``, on segments above the cleaner checkpoint)."""
    time_retention: bool | None          # None: the topic's cleanup.policy is not known here
    policy: str = ""                     # the policy and where it comes from, in words
    compaction_lag_ms: int = 0           # > 0: the cleaner waits this long after a segment's largest timestamp
    cleaner_checkpoint: int | None = None


UNKNOWN_TOPIC = TopicRules(None, "cleanup.policy unknown (no configuration source for this topic here; Kafka's "
                                 "default is delete)")
#: findings whose consequence depends on the rules the topic runs (``grade_by_topic``)
TOPIC_KINDS = frozenset({"time_index_missing_final_entry", "untrimmed_index"})


def grade_by_topic(findings: list[Finding], res: SegmentResult, rules: TopicRules) -> list[Finding]:
    """Findings about a segment's largest timestamp, graded by what the topic's rules would do with it:
    an error where time retention would delete the segment early (a delete topic, or one whose policy is
    unknown: Kafka's default is delete) or the cleaner would compact it before min.compaction.lag.ms; a
    warning where only lookups by timestamp are affected (a compact-only topic runs no time retention).
    Findings already lowered by ``apply`` (a segment Kafka recovers, a partition it deletes) stay as they are."""
    out = []
    for f in findings:
        below_max = f.kind == "time_index_missing_final_entry" and f.severity == "error"
        zero_last = (f.kind == "untrimmed_index" and f.severity == "warning"
                     and (f.file or "").endswith(".timeindex"))
        if not (below_max or zero_last):
            out.append(f)
            continue
        early = "deletes the segment at its next check" if zero_last else "would delete the segment too early"
        dirty = rules.cleaner_checkpoint is None or (res.last_offset is not None
                                                     and res.last_offset >= rules.cleaner_checkpoint)
        if rules.time_retention is None:
            out.append(_said(f, f"if the topic runs time retention it {early.replace('would ', '')} "
                                f"({rules.policy})", "error"))
        elif rules.time_retention:
            out.append(_said(f, f"time retention {early} ({rules.policy})", "error"))
        elif rules.compaction_lag_ms > 0 and dirty:
            out.append(_said(f, f"the cleaner would compact the segment before its min.compaction.lag.ms of "
                                f"{rules.compaction_lag_ms} ms has passed ({rules.policy})", "error"))
        else:
            out.append(_said(f, f"the topic runs no time retention ({rules.policy}): only lookups by timestamp "
                                "(ListOffsets) can miss this segment's newest records", "warning"))
    return out


def _said(f: Finding, consequence: str, severity: str) -> Finding:
    msg = f.message
    if msg.endswith(")") and f.kind == "untrimmed_index":
        msg = msg[:-1] + f": {consequence})"
    else:
        msg = f"{msg}: {consequence}"
    return f._replace(message=msg, severity=severity)


def _at_most(f: Finding, severity: str) -> Finding:
    rank = {"info": 0, "warning": 1, "error": 2}
    return f._replace(severity=severity) if rank[f.severity] > rank[severity] else f
