"""Producer state replayed from batches (Kafka ``ProducerStateManager``/``ProducerAppendInfo``), simplified
to what the files record: the last batch per producer, open transactions and aborted transactions.

Used to write producer ``.snapshot`` files and ``.txnindex`` entries (writer, recover).
"""
from __future__ import annotations

from kafkalog_formats import control as ctl
from kafkalog_formats.producer_snapshot import ProducerStateEntry
from kafkalog_formats.txn_index import AbortedTxn


class ProducerState:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerStateEntry] = {}
        self.map_end_offset = 0

    def load(self, entries, map_end_offset: int) -> None:
        self.entries = {e.producer_id: e for e in entries}
        self.map_end_offset = map_end_offset

    def _open_txn_firsts(self, exclude: int) -> list[int]:
        return [e.current_txn_first_offset for pid, e in self.entries.items()
                if pid != exclude and e.current_txn_first_offset >= 0]

    def update(self, batch) -> AbortedTxn | None:
        """Apply one v2 batch; return the AbortedTxn to index when it is an ABORT of a non-empty txn."""
        self.map_end_offset = batch.last_offset + 1
        pid = batch.producer_id
        if batch.magic < 2 or pid < 0:
            return None
        old = self.entries.get(pid)
        if batch.is_control:
            if batch.count == 0:
                return None
            rec = next(iter(batch.records()))
            key = ctl.parse_control_key(rec.key)
            if key.type not in (ctl.ABORT, ctl.COMMIT):
                return None
            _v, coord_epoch = ctl.parse_end_txn_marker(rec.value)
            first = old.current_txn_first_offset if old else -1
            aborted = None
            if key.type == ctl.ABORT and first >= 0:
                others = self._open_txn_firsts(pid)
                lso = min(others) if others else batch.last_offset + 1
                aborted = AbortedTxn(0, pid, first, batch.last_offset, lso)
            self.entries[pid] = ProducerStateEntry(
                pid, batch.producer_epoch, old.last_sequence if old else -1, old.last_offset if old else -1,
                old.offset_delta if old else 0, batch.max_timestamp, coord_epoch, -1)
            return aborted
        txn_first = old.current_txn_first_offset if old else -1
        if batch.is_transactional and txn_first < 0:
            txn_first = batch.base_offset
        self.entries[pid] = ProducerStateEntry(
            pid, batch.producer_epoch, batch.last_sequence, batch.last_offset, batch.last_offset_delta,
            batch.max_timestamp, old.coordinator_epoch if old else -1, txn_first)
        return None

    def snapshot_entries(self) -> list[ProducerStateEntry]:
        return [self.entries[p] for p in sorted(self.entries)]
