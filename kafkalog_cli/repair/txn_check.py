"""The ``.txnindex`` entries a cleaning pass relies on, checked against the transaction markers in the log.

Kafka's cleaner trusts the index (``Cleaner.doClean`` → ``LogCleaner.cleanSegments`` with
``CleanedTransactionMetadata``, fed by ``UnifiedLog.collectAbortedTransactions``, 2.x–4.x): an entry
(producer P, first offset F, last offset L) makes every transactional batch of P from F up to the marker
at L count as aborted, and the cleaner removes it. The broker wrote the index itself, so it trusts it; a
repair tool cannot: one flipped bit in F makes a committed transaction of P "aborted" and its records are
deleted. So ``compact`` derives the aborted transactions from the log and skips the partition when an
entry the pass may use disagrees.

What a healthy broker leaves, and so what is checked (the producer state replayed from the first batch on
disk, ``engine.producer_state``):

* the marker at L is an ABORT of P (the entry is written with its marker, ``LogSegment.updateTxnIndex``, and
  the cleaner drops the entry with the marker, ``CleanedTransactionMetadata``);
* F lies after P's previous marker in the log: ``CleanedTransactionMetadata`` keeps P "aborted" from F until
  an ABORT of P (a COMMIT does not end it), so an F reaching back into an earlier transaction of P makes its
  committed records aborted;
* F is at or before the first batch of the transaction still in the log (``currentTxnFirstOffset``; the
  cleaner may have removed the first batches since, never added earlier ones), or the log holds none of its
  data (removed by the cleaner or by retention; before 2.8 an empty transaction was indexed with F = L);
* every ABORT marker of a transaction whose data is in the log has its entry (Kafka 2.8+ indexes only a
  non-empty transaction: ``ProducerAppendInfo.appendEndTxnMarker`` → ``CompletedTxn``); without it the
  aborted records would be kept as committed.

The entry's last stable offset is not checked (the cleaner does not use it).
"""
from __future__ import annotations

from typing import NamedTuple

from ..engine.findings import Finding

RECOVER = ("kafkalog never lets an index it cannot confirm decide which records are deleted: rebuild the "
           "index with kafkalog recover --all-segments --force, or restore it from a healthy replica")


class LogMarker(NamedTuple):
    """A COMMIT or ABORT marker in the log, with the first offset of the transaction it closes as the replay
    saw it (None: nothing of it on disk)."""
    producer_id: int
    offset: int
    abort: bool
    first_offset: int | None
    file: str


def problems(entries: list[tuple[str, object]], markers: list[LogMarker], log_start: int,
             first_uncleanable: int) -> list[Finding]:
    """``entries``: (file, AbortedTxn) of every ``.txnindex``; the ones a pass below ``first_uncleanable``
    may use (``lastOffset >= log start``, ``firstOffset < first uncleanable``) must agree with the markers
    (``markers`` in offset order), and every aborted transaction of that range whose data is in the log
    must have its entry."""
    import bisect
    at = {m.offset: m for m in markers}
    by_producer: dict[int, list[int]] = {}
    for m in markers:
        by_producer.setdefault(m.producer_id, []).append(m.offset)
    indexed = set()
    out = []
    for file, e in entries:
        if e.last_offset < log_start or e.first_offset >= first_uncleanable:
            continue
        indexed.add((e.producer_id, e.last_offset))
        where = (f"entry (producer {e.producer_id}, first offset {e.first_offset}, last offset "
                 f"{e.last_offset})")
        m = at.get(e.last_offset)
        if m is None or m.producer_id != e.producer_id or not m.abort:
            what = ("no transaction marker" if m is None else f"a {'ABORT' if m.abort else 'COMMIT'} marker of "
                    f"producer {m.producer_id}")
            out.append(Finding("txn_index_mismatch", f"{where}: the log has {what} at offset {e.last_offset}; "
                               + RECOVER, file, offset=e.last_offset))
            continue
        offsets = by_producer[e.producer_id]
        i = bisect.bisect_left(offsets, e.last_offset)
        if i > 0 and e.first_offset <= offsets[i - 1]:
            out.append(Finding("txn_index_mismatch", f"{where}: it reaches back over producer "
                               f"{e.producer_id}'s earlier transaction ending at offset {offsets[i - 1]}, whose "
                               "records the cleaner would delete as aborted; " + RECOVER, file,
                               offset=e.first_offset))
        elif m.first_offset is not None and e.first_offset > m.first_offset:
            out.append(Finding("txn_index_mismatch", f"{where}: the transaction's data in the log begins at "
                               f"offset {m.first_offset}, before the entry's first offset; " + RECOVER, file,
                               offset=e.first_offset))
    for m in markers:
        if not m.abort or m.first_offset is None or m.offset < log_start or m.first_offset >= first_uncleanable:
            continue
        if (m.producer_id, m.offset) not in indexed:
            out.append(Finding("txn_index_missing", f"the transaction of producer {m.producer_id} from offset "
                               f"{m.first_offset} aborted at {m.offset} has no .txnindex entry (its aborted "
                               "records would be kept as committed and their keys would displace older "
                               "committed records); " + RECOVER, m.file, offset=m.offset))
    return out
