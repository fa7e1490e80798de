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


def _at_most(f: Finding, severity: str) -> Finding:
    rank = {"info": 0, "warning": 1, "error": 2}
    return f._replace(severity=severity) if rank[f.severity] > rank[severity] else f
