"""What a log directory's ``__remote_log_metadata`` partitions say was uploaded to remote (tiered) storage.

Kafka 3.6-4.0: ``TopicBasedRemoteLogMetadataManager`` consumes ``__remote_log_metadata`` and feeds each record
to ``RemotePartitionMetadataStore`` / ``RemoteLogMetadataCache``:

* ``RemoteLogSegmentMetadataRecord`` (state COPY_SEGMENT_STARTED) adds a segment (``addCopyInProgressSegment``);
* ``RemoteLogSegmentMetadataUpdateRecord`` moves it on; only transitions allowed by
  ``RemoteLogSegmentState.isValidTransition`` are applied (STARTED -> FINISHED or DELETE_STARTED, FINISHED ->
  DELETE_STARTED, DELETE_STARTED -> DELETE_FINISHED, a state to itself), others are dropped; updates of an
  unknown segment are dropped;
* on COPY_SEGMENT_FINISHED, ``RemoteLogLeaderEpochState.handleSegmentWithCopySegmentFinishedState`` raises, for
  every leader epoch of the segment, the epoch's highest uploaded offset to the segment's last offset in
  that epoch (the next epoch's start - 1, or the segment's end offset). Deleting a segment later does not
  lower it (``RemoteLogLeaderEpochState.highestLogOffset`` only grows);
* ``RemotePartitionDeleteMetadataRecord`` with DELETE_PARTITION_FINISHED drops the partition's whole state.

The consumer only sees records below each metadata partition's high watermark; kafkalog reads a metadata
partition up to the high watermark in ``replication-offset-checkpoint`` (a lower bound of the real one, so
an upload may be missed but never invented), and not at all when the checkpoint has no entry for it.

``RemoteLogManager.findHighestRemoteOffset`` then gives the broker's ``highestOffsetInRemoteStorage`` of a
partition: walking the partition's leader epochs from the latest back, the first epoch with an uploaded
offset gives min(that offset, the epoch's end offset - 1); none gives -1. ``UnifiedLog.deletableSegments``
lets retention delete a local segment of a tiered topic only when its end (next segment's base offset,
exclusive) - 1 ≤ that offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.errors import FormatError

from ..errors import CannotRun
from ..layout import classify_file, parse_partition_dir
from .mapped import MappedFile

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
COPY_STARTED, COPY_FINISHED, DELETE_STARTED, DELETE_FINISHED = 0, 1, 2, 3
DELETE_PARTITION_FINISHED = 2
_VALID = {None: {COPY_STARTED}, COPY_STARTED: {COPY_FINISHED, DELETE_STARTED},
          COPY_FINISHED: {DELETE_STARTED}, DELETE_STARTED: {DELETE_FINISHED}, DELETE_FINISHED: set()}


class RemoteMetadataError(CannotRun):
    """A ``__remote_log_metadata`` record that cannot be decoded."""


@dataclass
class RemotePartition:
    """``RemoteLogMetadataCache`` of one user partition (by topic id and partition)."""
    topic: str
    topic_id: str
    partition: int
    segments: dict = field(default_factory=dict)        # segment id -> (state, start, end, {epoch: start})
    epoch_highest: dict = field(default_factory=dict)   # leader epoch -> highest uploaded offset
    origin: str = ""                                    # the last record applied, for messages

    def apply_segment(self, seg_id: str, state: int, start: int, end: int, epochs: dict, origin: str) -> None:
        if seg_id in self.segments or state != COPY_STARTED:
            return                                       # addCopyInProgressSegment: invalid transition
        self.segments[seg_id] = (state, start, end, epochs)
        self.origin = origin

    def apply_update(self, seg_id: str, state: int, origin: str) -> None:
        old = self.segments.get(seg_id)
        if old is None or (state != old[0] and state not in _VALID.get(old[0], ())):
            return
        _, start, end, epochs = old
        if state == COPY_FINISHED:
            ordered = sorted(epochs.items())
            for i, (epoch, _s) in enumerate(ordered):
                last = ordered[i + 1][1] - 1 if i + 1 < len(ordered) else end
                if last > self.epoch_highest.get(epoch, -1):
                    self.epoch_highest[epoch] = last
        if state == DELETE_FINISHED:
            del self.segments[seg_id]
        else:
            self.segments[seg_id] = (state, start, end, epochs)
        self.origin = origin

    def highest_offset(self, leader_epochs: list[tuple[int, int]], log_end_offset: int) -> int:
        """``RemoteLogManager.findHighestRemoteOffset`` for a local log with these leader-epoch entries
        ((epoch, start offset), oldest first) and log end offset; -1 when nothing is known uploaded."""
        for i in range(len(leader_epochs) - 1, -1, -1):
            epoch = leader_epochs[i][0]
            highest = self.epoch_highest.get(epoch)
            if highest is None:
                continue
            end = leader_epochs[i + 1][1] if i + 1 < len(leader_epochs) else log_end_offset
            return end - 1 if end <= highest else highest
        return -1


@dataclass
class RemoteLogMetadata:
    partitions: dict = field(default_factory=dict)      # (topic id, partition) -> RemotePartition
    metadata_partitions: dict = field(default_factory=dict)   # metadata partition -> offsets read (end)
    notes: list = field(default_factory=list)

    def partition(self, topic_id: str, partition: int) -> RemotePartition | None:
        return self.partitions.get((topic_id, partition))


def _tip(d: dict) -> tuple[str, str, int]:
    return d["name"], d["id"], d["partition"]


def apply_record(rlm: RemoteLogMetadata, api_key: int, data: dict, origin: str) -> None:
    if api_key == 0:
        name, tid, part = _tip(data["remoteLogSegmentId"]["topicIdPartition"])
        rp = rlm.partitions.setdefault((tid, part), RemotePartition(name, tid, part))
        epochs = {e["leaderEpoch"]: e["offset"] for e in data["segmentLeaderEpochs"]}
        rp.apply_segment(data["remoteLogSegmentId"]["id"], data["remoteLogSegmentState"], data["startOffset"],
                         data["endOffset"], epochs, origin)
    elif api_key == 1:
        name, tid, part = _tip(data["remoteLogSegmentId"]["topicIdPartition"])
        rp = rlm.partitions.get((tid, part))
        if rp is not None:
            rp.apply_update(data["remoteLogSegmentId"]["id"], data["remoteLogSegmentState"], origin)
    elif api_key == 2:
        name, tid, part = _tip(data["topicIdPartition"])
        if data["remotePartitionDeleteState"] == DELETE_PARTITION_FINISHED:
            rlm.partitions.pop((tid, part), None)
            rlm.notes.append(f"{name}-{part}: remote partition deleted ({origin})")


def read_metadata_partition(rlm: RemoteLogMetadata, directory: Path, high_watermark: int) -> None:
    """Apply the records of one ``__remote_log_metadata-N`` directory below ``high_watermark``."""
    from kafkalog_formats.message_set import BatchReader, BatchV2View
    from kafkalog_formats.remote_log_metadata import read_remote_log_metadata

    bases = sorted(fn.offset for fn in (classify_file(p.name) for p in directory.iterdir())
                   if fn.kind == "log" and fn.state is None)
    for base in bases:
        path = directory / f"{base:020d}.log"
        with MappedFile(path) as mf:
            for batch in BatchReader(mf.buf):
                if not isinstance(batch, BatchV2View) or not batch.is_valid():
                    rlm.notes.append(f"{path}: invalid batch at position {batch.position}; not read further")
                    return
                if batch.is_control or batch.base_offset >= high_watermark:
                    if batch.base_offset >= high_watermark:
                        return
                    continue
                try:
                    for rec in batch.records():
                        if rec.offset >= high_watermark:
                            return
                        if rec.value is None:
                            continue
                        record = read_remote_log_metadata(bytes(rec.value))
                        if record.data is not None:
                            apply_record(rlm, record.api_key, record.data, f"{directory.name} offset {rec.offset}")
                except FormatError as e:
                    raise RemoteMetadataError(f"{path}: batch at position {batch.position}: {e.reason}") from None


def read_remote_log_metadata_dirs(logdir: Path, high_watermarks: dict) -> RemoteLogMetadata:
    """Replay every ``__remote_log_metadata-N`` directory of ``logdir`` (``high_watermarks``: the log
    directory's replication-offset-checkpoint as {(topic, partition): offset})."""
    from .logdir import LogDir
    rlm = RemoteLogMetadata()
    for d in sorted(LogDir.open(Path(logdir)).partition_dirs):
        name = parse_partition_dir(d.name)
        if name.topic != REMOTE_LOG_METADATA_TOPIC or name.state is not None:
            continue
        hw = high_watermarks.get((name.topic, name.partition))
        if hw is None:
            rlm.notes.append(f"{d.name}: no high watermark in replication-offset-checkpoint; not read")
            continue
        read_metadata_partition(rlm, d, hw)
        rlm.metadata_partitions[name.partition] = hw
    return rlm


def java_long_hash(v: int) -> int:
    v &= (1 << 64) - 1
    return _int32(v ^ (v >> 32))


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def murmur2(data: bytes) -> int:
    """Kafka ``Utils.murmur2`` (seed 0x9747b28c), as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest, tail = length % 4, length & ~3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return _int32(h)


def metadata_partition_for(topic_id: bytes, partition: int, num_partitions: int) -> int:
    """``RemoteLogMetadataTopicPartitioner.metadataPartition``: murmur2 of the 4 big-endian bytes of
    ``Objects.hash(lsb, msb, partition)``, made positive, modulo the partition count."""
    msb = int.from_bytes(topic_id[:8], "big", signed=True)
    lsb = int.from_bytes(topic_id[8:], "big", signed=True)
    h = 1
    for part in (java_long_hash(lsb), java_long_hash(msb), partition):
        h = _int32(31 * h + part)
    return (murmur2((h & 0xFFFFFFFF).to_bytes(4, "big")) & 0x7FFFFFFF) % num_partitions


def parse_remote_offset_override(spec: str) -> tuple[str, int, int]:
    """``TOPIC-N:OFFSET`` (the highest offset known to be in remote storage) -> (topic, partition, offset)."""
    from ..layout import parse_partition_spec
    head, sep, tail = spec.rpartition(":")
    if not sep:
        raise ValueError(f"'{spec}' is not of the form TOPIC-PARTITION:OFFSET")
    topic, partition = parse_partition_spec(head)
    try:
        offset = int(tail)
    except ValueError:
        raise ValueError(f"'{spec}': '{tail}' is not an offset") from None
    if offset < -1:
        raise ValueError(f"'{spec}': the offset must be -1 (nothing uploaded) or more")
    return topic, partition, offset


def is_uploaded(upper_bound_offset: int, highest_remote_offset: int | None) -> bool:
    """``UnifiedLog.deletableSegments`` for a tiered topic with copy enabled: may a local segment whose
    next segment starts at ``upper_bound_offset`` (the log end offset for the last one) go? Only when
    ``upper_bound_offset - 1 <= highestOffsetInRemoteStorage``; an unknown highest offset allows nothing.
    (Kafka also lets a segment go once the log start offset has passed the next segment's base offset.)"""
    if highest_remote_offset is None:
        return False
    return upper_bound_offset > 0 and upper_bound_offset - 1 <= highest_remote_offset
