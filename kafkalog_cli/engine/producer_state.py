"""Producer state replayed from batches, as Kafka's ``ProducerStateManager`` keeps it while a log is loaded
(``LogSegment.updateProducerState`` and ``UnifiedLog.loadProducersFromRecords``, origin REPLICATION), reduced
to what a ``.snapshot`` records: per producer the last data batch, the epochs, the open transaction; plus
the aborted transactions a ``.txnindex`` lists.

Kafka's rules, read in ``ProducerAppendInfo``, ``ProducerStateEntry`` and ``ProducerStateManager``
(Scala ``kafka.log.ProducerStateManager`` in 2.x/3.x, ``org.apache.kafka.storage.internals.log`` since
3.6; the same in apache/kafka trunk of 2026, commit 074553555c60):

* a data batch replaces the entry's last batch (sequence, last offset, ``lastOffset - firstOffset``,
  max timestamp) and sets the epoch; a transactional batch opens a transaction at its base offset when
  none is open; a non-transactional batch while one is open is ``InvalidTxnStateException``, which stops
  the broker's loader (no version catches it);
* a COMMIT/ABORT marker (``appendEndTxnMarker``) closes the transaction and sets the coordinator epoch,
  the timestamp (the marker record's) and the epoch through ``ProducerStateEntry.update`` →
  ``maybeUpdateProducerEpoch``: **when the marker's epoch differs from the entry's, the entry's batch
  metadata is cleared**, so the snapshot says last sequence -1, last offset -1, offset delta 0. Every
  version does this (2.0 ``maybeUpdateEpoch``, …, 4.x); it matters in practice since transaction
  version 2 (KIP-890, Kafka 4.0), where every marker carries the epoch + 1, and for TV0/TV1 markers
  written after the coordinator bumped the epoch of a timed-out transaction. With the same epoch the last
  batch is kept. (≤ 2.4 the entry's timestamp was its last batch's, so cleared too; since 2.5 the marker's.)
* only a non-empty transaction is completed (2.8+): an ABORT of one becomes an ``AbortedTxn`` whose
  last stable offset is the first offset of the earliest transaction still open by another producer,
  else the marker offset + 1 (``ProducerStateManager.lastStableOffset``);
* an empty control batch (its records removed by the cleaner) changes nothing but still creates an
  empty entry for a producer not yet known (``prepareUpdate`` + ``update``);
* a control batch of a producer whose type is neither COMMIT nor ABORT makes ``EndTransactionMarker``
  throw IllegalArgumentException, which also stops the loader.

The two conditions that stop Kafka's loader are recorded in ``stop`` (the first one met); the state is
updated as Kafka's would be up to that batch. Used to write producer ``.snapshot`` files and ``.txnindex``
entries (writer, recover, compact).
"""
from __future__ import annotations

from kafkalog_formats import control as ctl
from kafkalog_formats.producer_snapshot import ProducerStateEntry
from kafkalog_formats.txn_index import AbortedTxn

NO_SEQUENCE = -1
NO_EPOCH = -1
NO_TIMESTAMP = -1


class ProducerState:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0
        self.stop: tuple[int, str] | None = None    # (offset, Kafka's exception) where the loader stops

    def load(self, entries, map_end_offset: int) -> None:
        self.entries = {e.producer_id: e for e in entries}
        self.map_end_offset = map_end_offset

    def _open_txn_firsts(self, exclude: int) -> list[int]:
        return [e.current_txn_first_offset for pid, e in self.entries.items()
                if pid != exclude and e.current_txn_first_offset >= 0]

    def _stop(self, offset: int, message: str) -> None:
        if self.stop is None:
            self.stop = (offset, message)

    def update(self, batch) -> AbortedTxn | None:
        """Apply one batch; return the AbortedTxn to index when it is an ABORT of a non-empty transaction.

        Raises ``FormatError`` when the control record cannot be read (Kafka's InvalidRecordException)."""
        self.map_end_offset = batch.last_offset + 1
        pid = batch.producer_id
        if batch.magic < 2 or pid < 0:
            return None
        old = self.entries.get(pid)
        if batch.is_control:
            if batch.count == 0:
                if old is None:
                    self.entries[pid] = ProducerStateEntry(pid, NO_EPOCH, NO_SEQUENCE, -1, 0, NO_TIMESTAMP, -1, -1)
                return None
            rec = next(iter(batch.records()))
            key = ctl.parse_control_key(rec.key)
            if key.type not in (ctl.ABORT, ctl.COMMIT):
                self._stop(batch.base_offset, f"Invalid control record type for end transaction marker "
                           f"{key.name} (producer {pid}): EndTransactionMarker throws IllegalArgumentException")
                return None
            _v, coord_epoch = ctl.parse_end_txn_marker(rec.value)
            first = old.current_txn_first_offset if old else -1
            aborted = None
            if key.type == ctl.ABORT and first >= 0:
                others = self._open_txn_firsts(pid)
                lso = min(others) if others else batch.last_offset + 1
                aborted = AbortedTxn(0, pid, first, batch.last_offset, lso)
            keep = old is not None and old.producer_epoch == batch.producer_epoch
            self.entries[pid] = ProducerStateEntry(
                pid, batch.producer_epoch, old.last_sequence if keep else NO_SEQUENCE,
                old.last_offset if keep else -1, old.offset_delta if keep else 0, rec.timestamp, coord_epoch, -1)
            return aborted
        txn_first = old.current_txn_first_offset if old else -1
        if txn_first >= 0 and not batch.is_transactional:
            self._stop(batch.base_offset, f"Expected transactional write from producer {pid} at offset "
                       f"{batch.base_offset}: InvalidTxnStateException")
        if batch.is_transactional and txn_first < 0:
            txn_first = batch.base_offset
        self.entries[pid] = ProducerStateEntry(
            pid, batch.producer_epoch, batch.last_sequence, batch.last_offset, batch.last_offset_delta,
            batch.max_timestamp, old.coordinator_epoch if old else -1, txn_first)
        return None

    def snapshot_entries(self) -> list[ProducerStateEntry]:
        return [self.entries[p] for p in sorted(self.entries)]
