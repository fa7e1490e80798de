"""Append batches to a partition directory the way a Kafka broker lays them out.

Segments roll when the next batch would push the segment past ``segment_bytes`` (or when asked);
offset and time indexes follow Kafka's per-batch rule (``engine.index_rules``) and are written trimmed;
aborted transactions go to the ``.txnindex`` of the segment holding the ABORT marker; a producer
snapshot is written at each roll (new base offset) and at close (log end offset). Used by the fixture
generator and, later, by recover/compact to write segments.
"""
from __future__ import annotations

from pathlib import Path

from kafkalog_formats.checkpoint import build_leader_epoch_checkpoint
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.offset_index import build_offset_index
from kafkalog_formats.producer_snapshot import build_producer_snapshot
from kafkalog_formats.time_index import build_time_index
from kafkalog_formats.txn_index import build_txn_index

from .. import fileops
from ..engine.index_rules import IndexBuilder
from ..engine.producer_state import ProducerState
from ..layout import segment_file_name


class _OpenSegment:
    def __init__(self, base_offset: int, index_interval: int) -> None:
        self.base_offset = base_offset
        self.data = bytearray()
        self.index = IndexBuilder(base_offset, index_interval)
        self.aborted: list = []
        self.mtime_ms: int | None = None


class PartitionWriter:
    def __init__(self, directory: str | Path, *, segment_bytes: int = 1 << 30, index_interval_bytes: int = 4096,
                 write_snapshots: bool = True) -> None:
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self.index_interval = index_interval_bytes
        self.write_snapshots = write_snapshots
        self.state = ProducerState()
        self.epochs: list[tuple[int, int]] = []     # (leader epoch, start offset)
        self.log_end_offset = 0
        self.segment: _OpenSegment | None = None
        self.segment_bases: list[int] = []
        fileops.make_dirs(self.directory)

    def append(self, batch_bytes: bytes, mtime_ms: int | None = None) -> None:
        """Append one batch (any magic); roll first if it would overflow the segment."""
        batch = next(iter(BatchReader(batch_bytes)))
        first = batch.base_offset
        if self.segment is None:
            self._open(max(first, self.log_end_offset))
        elif len(self.segment.data) > self.segment_bytes - len(batch_bytes):
            self.roll(max(first, self.log_end_offset))
        seg = self.segment
        position = len(seg.data)
        seg.data += batch_bytes
        batch = next(iter(BatchReader(seg.data, position)))
        seg.index.add(position, batch.last_offset, batch.max_timestamp)
        aborted = self.state.update(batch)
        if aborted is not None:
            seg.aborted.append(aborted)
        if batch.magic >= 2 and batch.partition_leader_epoch >= 0 and (
                not self.epochs or batch.partition_leader_epoch > self.epochs[-1][0]):
            self.epochs.append((batch.partition_leader_epoch, batch.base_offset))
        self.log_end_offset = batch.last_offset + 1
        if mtime_ms is not None:
            seg.mtime_ms = mtime_ms

    def _open(self, base_offset: int) -> None:
        self.segment = _OpenSegment(base_offset, self.index_interval)
        self.segment_bases.append(base_offset)

    def roll(self, new_base: int | None = None) -> None:
        """Close the current segment and start the next one at ``new_base`` (default: log end)."""
        if self.segment is not None:
            self._flush_segment()
        base = self.log_end_offset if new_base is None else new_base
        self._open(base)
        if self.write_snapshots:
            self._snapshot(base)

    def close(self, snapshot: bool = True) -> None:
        """Write the active segment (indexes trimmed, as after a clean shutdown) and its side files."""
        if self.segment is None:
            self._open(self.log_end_offset)
        self._flush_segment()
        if snapshot and self.write_snapshots:
            self._snapshot(self.log_end_offset)
        fileops.write_atomic(self.directory / "leader-epoch-checkpoint",
                             build_leader_epoch_checkpoint(self.epochs).encode())

    def _flush_segment(self) -> None:
        seg = self.segment
        seg.index.finish()
        d = self.directory
        fileops.write_atomic(d / segment_file_name(seg.base_offset, "log"), bytes(seg.data), seg.mtime_ms)
        fileops.write_atomic(d / segment_file_name(seg.base_offset, "index"),
                             build_offset_index(seg.index.offset_entries, seg.base_offset), seg.mtime_ms)
        fileops.write_atomic(d / segment_file_name(seg.base_offset, "timeindex"),
                             build_time_index(seg.index.time_entries, seg.base_offset), seg.mtime_ms)
        if seg.aborted:
            fileops.write_atomic(d / segment_file_name(seg.base_offset, "txnindex"),
                                 build_txn_index(seg.aborted), seg.mtime_ms)

    def _snapshot(self, offset: int) -> None:
        entries = self.state.snapshot_entries()
        fileops.write_atomic(self.directory / segment_file_name(offset, "snapshot"),
                             build_producer_snapshot(entries))
