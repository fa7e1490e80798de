"""Append batches to a partition directory the way a Kafka broker lays them out.

Segments roll when the next batch would push the segment past ``segment_bytes`` (or when asked);
offset and time indexes follow Kafka's per-batch rule (``engine.index_rules``) and are written trimmed,
or, with ``index_model``, the per-append rule of older brokers (one entry per ``append_set`` call, as
leaders, followers and the cleaner of Kafka 0.8-4.0 wrote them);
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
from ..engine.index_rules import AppendIndexBuilder, IndexBuilder
from ..engine.producer_state import ProducerState
from ..layout import segment_file_name


#: index_model -> the writer of that era (``engine.index_rules``)
INDEX_MODELS = ("per-batch", "append", "append-first-offset")


class _OpenSegment:
    def __init__(self, base_offset: int, index_interval: int, model: str = "per-batch") -> None:
        self.base_offset = base_offset
        self.data = bytearray()
        self.index = (IndexBuilder(base_offset, index_interval) if model == "per-batch" else
                      AppendIndexBuilder(base_offset, index_interval,
                                         first_offset_entries=model == "append-first-offset"))
        self.aborted: list = []
        self.mtime_ms: int | None = None


class PartitionWriter:
    def __init__(self, directory: str | Path, *, segment_bytes: int = 1 << 30, index_interval_bytes: int = 4096,
                 write_snapshots: bool = True, index_model: str = "per-batch") -> None:
        if index_model not in INDEX_MODELS:
            raise ValueError(f"index_model must be one of {INDEX_MODELS}")
        self.directory = Path(directory)
        self.index_model = index_model
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
        self.append_set([batch_bytes], mtime_ms)

    def append_set(self, batches: list[bytes], mtime_ms: int | None = None, *, largest_offset: int | None = None,
                   max_timestamp: int | None = None, offset_of_max_timestamp: int | None = None) -> None:
        """One ``LogSegment.append`` call: a leader's batch, a follower's fetched chunk, a cleaner chunk.

        With the per-append index models the call adds at most one entry pair; ``largest_offset``,
        ``max_timestamp`` and ``offset_of_max_timestamp`` are what Kafka passes to ``append`` (defaults:
        the follower's values, i.e. the last batch's last offset and the shallow offset of the first batch
        holding the max timestamp). The per-batch model indexes each batch and ignores them.
        """
        data = b"".join(batches)
        views = list(BatchReader(data))
        first = views[0].base_offset
        if self.segment is None:
            self._open(max(first, self.log_end_offset))
        elif len(self.segment.data) > self.segment_bytes - len(data):
            self.roll(max(first, self.log_end_offset))
        seg = self.segment
        start = len(seg.data)
        seg.data += data
        views = list(BatchReader(seg.data, start))
        if isinstance(seg.index, AppendIndexBuilder):
            if max_timestamp is None:
                max_timestamp, shallow = -1, views[-1].last_offset
                for b in views:
                    if b.max_timestamp > max_timestamp:
                        max_timestamp, shallow = b.max_timestamp, b.last_offset
                offset_of_max_timestamp = shallow if offset_of_max_timestamp is None else offset_of_max_timestamp
            seg.index.append(start, len(data), views[0].base_offset,
                             views[-1].last_offset if largest_offset is None else largest_offset, max_timestamp,
                             views[-1].last_offset if offset_of_max_timestamp is None else offset_of_max_timestamp)
        for batch in views:
            self._after_append(seg, batch)
        if mtime_ms is not None:
            seg.mtime_ms = mtime_ms

    def _after_append(self, seg: _OpenSegment, batch) -> None:
        if isinstance(seg.index, IndexBuilder):
            seg.index.add(batch.position, batch.last_offset, batch.max_timestamp)
        aborted = self.state.update(batch)
        if aborted is not None:
            seg.aborted.append(aborted)
        if batch.magic >= 2 and batch.partition_leader_epoch >= 0 and (
                not self.epochs or batch.partition_leader_epoch > self.epochs[-1][0]):
            self.epochs.append((batch.partition_leader_epoch, batch.base_offset))
        self.log_end_offset = batch.last_offset + 1

    def _open(self, base_offset: int) -> None:
        self.segment = _OpenSegment(base_offset, self.index_interval, self.index_model)
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
