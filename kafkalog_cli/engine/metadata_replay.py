"""Replay a KRaft broker's ``__cluster_metadata-0`` the way its metadata loader does, keeping what the
configuration resolver needs: topics (name <-> id, partitions) and the ConfigRecords of topics and brokers.

Which files, in which order (Kafka 3.3-4.0):

* Snapshots: ``KafkaMetadataLog.recoverSnapshots`` keeps every ``<endOffset>-<epoch>.checkpoint`` whose end
  offset is at or above the log start offset and ignores ``.checkpoint.part`` and ``.checkpoint.deleted``
  files; ``latestSnapshotId`` is the greatest ``OffsetAndEpoch``, which orders by epoch first, then by
  offset (``OffsetAndEpoch.compareTo``). ``KafkaRaftClient.updateListenersProgress`` hands a new listener
  (the broker's ``MetadataLoader``) that latest snapshot, then the committed log from its end offset on.
* Snapshot load (``MetadataLoader.loadSnapshot``, ``MetadataDelta.finishSnapshot``): the image is exactly the
  snapshot's records; nothing from before survives.
* Log after the snapshot (``MetadataBatchLoader``): records in offset order; control batches carry no
  metadata; records between ``BeginTransactionRecord`` and ``EndTransactionRecord`` are applied together,
  an ``AbortTransactionRecord`` discards them, and a transaction still open at the end of the log is not
  applied.
* Records (``TopicsDelta``, ``ConfigurationsDelta``, ``ConfigurationDelta``): ``TopicRecord`` creates a topic
  under its id; ``RemoveTopicRecord`` deletes the topic and every ConfigRecord of its *name*
  (``ConfigurationsDelta.replay(RemoveTopicRecord, name)`` → ``deleteAll``); ``ConfigRecord`` with a null
  value deletes that key, otherwise sets it; resources are (type, name) with type 2 = TOPIC, 4 = BROKER
  (name "" = the cluster-wide default, a node id = that broker).

What is committed: the broker applies only records below the quorum's high watermark, which is not kept
on disk (``KafkaMetadataLog.updateHighWatermark`` keeps it in memory). A snapshot is only ever taken at a
committed offset (``KafkaRaftClient.createSnapshot`` refuses an id above the high watermark), so the snapshot
is certain. Records after it are applied as the broker would once they are committed, and are reported as
certain only when the quorum has a single voter that is this node (it commits its whole log when it next
becomes leader); otherwise ``uncertain_from`` says from which offset a multi-voter quorum might still
truncate them. The log is read up to the first batch that fails its CRC or is torn (what recovery would
truncate).

What is kept: given ``keep`` (``TopicFilter``: the topics of the partition directories on the disk being
read, by name and by topic id), only those topics, their ConfigRecords, and the internal topics (``__``
names) are kept, with every broker config: a metadata log of millions of topics (a few MB on disk) costs
memory in proportion to the topics on this disk, not to the cluster. A RemoveTopicRecord for a topic not
kept is then not told apart from one for an unknown topic id, and is skipped without a note.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader, BatchV2View

from ..errors import CannotRun
from ..layout import classify_file
from .mapped import MappedFile, read_regular

TOPIC, BROKER = 2, 4
TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, PARTITION_CHANGE_RECORD, REMOVE_TOPIC_RECORD = 2, 3, 4, 5, 9
REGISTER_BROKER_RECORD, FEATURE_LEVEL_RECORD = 0, 12
#: read as hints only (which Kafka release ran: ``coordinator_version``); one that cannot be decoded is skipped
_HINTS = frozenset((REGISTER_BROKER_RECORD, FEATURE_LEVEL_RECORD))
BEGIN_TXN, END_TXN, ABORT_TXN = 23, 24, 25
KRAFT_VOTERS = 6


_USED = frozenset((TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, PARTITION_CHANGE_RECORD, REMOVE_TOPIC_RECORD,
                   BEGIN_TXN, END_TXN, ABORT_TXN)) | _HINTS


def _record_type(value) -> int | None:
    """The record type (apiKey) of a metadata record value, read from its envelope without decoding it."""
    from kafkalog_formats.varint import read_unsigned_varint
    try:
        _frame, pos = read_unsigned_varint(value, 0, len(value))
        return read_unsigned_varint(value, pos, len(value))[0]
    except Exception:       # malformed envelope: let the full decoder report it
        return None


class MetadataError(CannotRun):
    """The metadata log or snapshot cannot be read as the broker would read it."""


@dataclass(frozen=True)
class Origin:
    """Where a metadata fact comes from: a snapshot file or an offset of the metadata log."""
    offset: int                      # record offset (inside the snapshot: the snapshot's own numbering)
    snapshot: str | None = None      # snapshot file name, or None for the log
    certain: bool = True             # False: not known to be committed (see the module docstring)

    def __str__(self) -> str:
        if self.snapshot:
            return f"metadata snapshot {self.snapshot}"
        return f"metadata log offset {self.offset}" + ("" if self.certain else " (not known to be committed)")


@dataclass
class TopicInfo:
    name: str
    topic_id: str                    # Kafka base64 Uuid
    origin: Origin
    partitions: set = field(default_factory=set)
    replicas: dict = field(default_factory=dict)     # partition -> tuple of replica node ids

@dataclass
class ConfigValue:
    value: str
    origin: Origin


@dataclass(frozen=True)
class TopicFilter:
    """The topics a replay keeps: these names, these topic ids, and every internal (``__``) topic."""
    names: frozenset
    ids: frozenset

    def keeps(self, name: str, topic_id: str | None = None) -> bool:
        return name in self.names or (topic_id is not None and topic_id in self.ids) or name.startswith("__")


@dataclass
class ClusterMetadata:
    directory: Path
    snapshot: str | None = None                  # file name of the snapshot replayed
    snapshot_end_offset: int | None = None
    next_offset: int = 0                         # first offset not applied
    uncertain_from: int | None = None            # records at or above this offset are not known committed
    voters: tuple | None = None
    topics: dict = field(default_factory=dict)           # name -> TopicInfo
    topics_by_id: dict = field(default_factory=dict)     # id -> TopicInfo
    removed: dict = field(default_factory=dict)          # id -> (name, Origin of the RemoveTopicRecord)
    configs: dict = field(default_factory=dict)          # (type, name) -> {key: ConfigValue}
    features: dict = field(default_factory=dict)         # finalized feature -> level (FeatureLevelRecord)
    registrations: dict = field(default_factory=dict)    # broker id -> {feature: (min, max) supported}, latest
    notes: list = field(default_factory=list)
    kept: TopicFilter | None = None              # the topics kept (None: every topic)

    def topic_configs(self, topic: str) -> dict:
        return self.configs.get((TOPIC, topic), {})

    def cluster_default_configs(self) -> dict:
        return self.configs.get((BROKER, ""), {})

    def broker_configs(self, node_id: int | None) -> dict:
        return {} if node_id is None else self.configs.get((BROKER, str(node_id)), {})


class _State:
    """The parts of Kafka's MetadataImage the resolver uses, changed record by record."""

    def __init__(self, md: ClusterMetadata) -> None:
        self.md = md

    def apply(self, api_key: int, data: dict, origin: Origin) -> None:
        md = self.md
        if api_key == TOPIC_RECORD:
            if md.kept is not None and not md.kept.keeps(data["name"], data["topicId"]):
                return
            info = TopicInfo(data["name"], data["topicId"], origin)
            md.topics_by_id[info.topic_id] = info
            md.topics[info.name] = info
            md.removed.pop(info.topic_id, None)
        elif api_key == PARTITION_RECORD:
            info = md.topics_by_id.get(data["topicId"])
            if info is not None:
                info.partitions.add(data["partitionId"])
                info.replicas[data["partitionId"]] = tuple(data["replicas"])
        elif api_key == PARTITION_CHANGE_RECORD:       # PartitionChangeRecord: replicas when they changed
            info = md.topics_by_id.get(data["topicId"])
            if info is not None and data.get("replicas") is not None:
                info.replicas[data["partitionId"]] = tuple(data["replicas"])
        elif api_key == REMOVE_TOPIC_RECORD:
            info = md.topics_by_id.pop(data["topicId"], None)
            if info is None:      # TopicsDelta: "Can't find topic with ID ..." -- a fault, the record is skipped
                if md.kept is None:             # (else it may be a topic not kept)
                    md.notes.append(f"{origin}: RemoveTopicRecord for unknown topic id {data['topicId']} ignored")
                return
            if md.topics.get(info.name) is info:
                del md.topics[info.name]
            md.removed[info.topic_id] = (info.name, origin)
            md.configs.pop((TOPIC, info.name), None)
        elif api_key == FEATURE_LEVEL_RECORD:         # FeaturesDelta: level 0 removes the feature
            if data["featureLevel"]:
                md.features[data["name"]] = data["featureLevel"]
            else:
                md.features.pop(data["name"], None)
        elif api_key == REGISTER_BROKER_RECORD:       # ClusterDelta: the broker's latest registration
            md.registrations[data["brokerId"]] = {f["name"]: (f["minSupportedVersion"], f["maxSupportedVersion"])
                                                  for f in data.get("features") or ()}
        elif api_key == CONFIG_RECORD:
            if data["resourceType"] == TOPIC and md.kept is not None and not md.kept.keeps(data["resourceName"]):
                return
            resource = (data["resourceType"], data["resourceName"])
            entries = md.configs.setdefault(resource, {})
            if data["value"] is None:
                entries.pop(data["name"], None)
                if not entries:
                    del md.configs[resource]
            else:
                entries[data["name"]] = ConfigValue(data["value"], origin)


def _records(path: Path, start_offset: int):
    """(offset, is_control, record) of every record of ``path`` with offset ≥ start_offset; at a torn or
    corrupt batch, yields ``(None, None, reason)`` and ends (recovery would truncate the log there)."""
    with MappedFile(path) as mf:
        reader = BatchReader(mf.buf)
        for batch in reader:
            if not isinstance(batch, BatchV2View) or not batch.is_valid():
                yield None, None, f"batch at position {batch.position} is not a valid v2 batch"
                return
            if batch.last_offset < start_offset:
                continue
            try:
                for rec in batch.records():
                    if rec.offset >= start_offset:
                        yield rec.offset, batch.is_control, rec
            except FormatError as e:
                yield None, None, f"cannot decode the batch at position {batch.position}: {e.reason}"
                return
        if reader.stop is not None:
            yield None, None, f"{reader.stop.reason} at position {reader.stop.position}"


class _Walk:
    """Applies the records of the snapshot, then of each log segment, to the state."""

    def __init__(self, state: _State, up_to: int | None) -> None:
        self.state = state
        self.up_to = up_to
        self.pending: list | None = None      # records of an open metadata transaction
        self.pending_start: int | None = None
        self.pending_ids: set = set()         # topic ids of the kept TopicRecords among them
        self.stopped = False

    def file(self, path: Path, start: int, snapshot: str | None, certain_below: int | None) -> int:
        """Apply one file from ``start``; returns the next offset. Sets ``stopped`` at a torn tail."""
        from kafkalog_formats.control import parse_control_key
        from kafkalog_formats.kraft_control import read_control_value
        from kafkalog_formats.metadata_records import read_metadata_record

        md = self.state.md
        next_offset = start
        for offset, is_control, rec in _records(path, start):
            if offset is None:
                if snapshot is not None:
                    raise MetadataError(f"{path}: {rec}; the broker cannot load this snapshot")
                md.notes.append(f"{path.name}: {rec}; the metadata log is not applied from there on "
                                "(recovery truncates it)")
                self.stopped = True
                break
            if self.up_to is not None and snapshot is None and offset > self.up_to:
                self.stopped = True
                break
            next_offset = offset + 1
            if is_control:
                try:
                    if parse_control_key(rec.key).type == KRAFT_VOTERS:
                        voters = read_control_value(KRAFT_VOTERS, rec.value)["voters"]
                        md.voters = tuple(v["voterId"] for v in voters)
                except FormatError:
                    pass
                continue
            kind = _record_type(rec.value) if rec.value is not None else None
            if kind is not None and kind not in _USED:
                continue                         # NoOp, broker registrations, ...: not needed here
            try:
                record = read_metadata_record(rec.value)
            except FormatError as e:
                if kind in _HINTS:
                    continue
                where = f"snapshot {snapshot}" if snapshot else f"metadata log offset {offset}"
                raise MetadataError(f"{path}: {where}: cannot decode the metadata record: {e.reason}") from None
            certain = snapshot is not None or certain_below is None or offset < certain_below
            self.record(record.api_key, record.data, Origin(offset, snapshot, certain), snapshot is None)
        return next_offset

    def _kept(self, api_key: int, data: dict) -> bool:
        """Whether a record held in an open transaction may change what is kept (with a ``TopicFilter``, the
        records of other topics are not held: a transaction of a million topics stays small)."""
        kept = self.state.md.kept
        if kept is None:
            return True
        if api_key == TOPIC_RECORD:
            if kept.keeps(data["name"], data["topicId"]):
                self.pending_ids.add(data["topicId"])
                return True
            return False
        if api_key == CONFIG_RECORD:
            return data["resourceType"] != TOPIC or kept.keeps(data["resourceName"])
        if api_key in (PARTITION_RECORD, PARTITION_CHANGE_RECORD):
            return data["topicId"] in self.pending_ids or data["topicId"] in self.state.md.topics_by_id
        return True

    def record(self, api_key: int, data: dict | None, origin: Origin, in_log: bool) -> None:
        if in_log and api_key == BEGIN_TXN:
            self.pending, self.pending_start, self.pending_ids = [], origin.offset, set()
        elif in_log and api_key == END_TXN:
            for args in self.pending or ():
                self.state.apply(*args)
            self.pending = None
        elif in_log and api_key == ABORT_TXN:
            self.pending = None
        elif data is not None:
            if self.pending is not None:
                if self._kept(api_key, data):
                    self.pending.append((api_key, data, origin))
            else:
                self.state.apply(api_key, data, origin)

    def finish(self) -> None:
        if self.pending is not None:
            self.state.md.notes.append(
                f"metadata transaction begun at offset {self.pending_start} has not ended; its records are "
                "not applied (as the broker's metadata loader)")


def list_snapshots(directory: Path, log_start: int) -> list[tuple[int, int, Path]]:
    """(epoch, end offset, path) of the snapshots Kafka would keep, in ``OffsetAndEpoch`` order."""
    out = []
    for p in directory.iterdir():
        fn = classify_file(p.name)
        if fn.kind == "kraft_snapshot" and fn.state is None and fn.offset >= log_start:
            out.append((fn.epoch, fn.offset, p))
    return sorted(out)


def replay_metadata(directory: str | Path, node_id: int | None = None, up_to_offset: int | None = None,
                    static_voters: tuple | None = None, keep: TopicFilter | None = None) -> ClusterMetadata:
    """Replay ``__cluster_metadata-0`` (latest snapshot, then the log after it). ``up_to_offset`` stops after
    that offset (as if the high watermark were just above it); ``keep``: the topics to keep (None: all)."""
    from kafkalog_formats.quorum_state import parse_quorum_state

    directory = Path(directory)
    md = ClusterMetadata(directory, kept=keep)
    bases = sorted(classify_file(p.name).offset for p in directory.iterdir()
                   if classify_file(p.name).kind == "log" and classify_file(p.name).state is None)
    log_start = bases[0] if bases else 0
    snapshots = list_snapshots(directory, log_start)
    if up_to_offset is not None:
        snapshots = [s for s in snapshots if s[1] <= up_to_offset + 1]
    walk = _Walk(_State(md), up_to_offset)
    start = 0
    if snapshots:
        epoch, end, path = snapshots[-1]
        md.snapshot, md.snapshot_end_offset = path.name, end
        walk.file(path, 0, path.name, None)
        start = end
    elif log_start > 0:
        raise MetadataError(f"{directory}: the metadata log starts at offset {log_start} and no snapshot covers "
                            "the offsets before it (Kafka: \"Inconsistent snapshot state\")")
    qs = directory / "quorum-state"
    if qs.exists():
        try:
            data = parse_quorum_state(read_regular(qs))
            if data.get("currentVoters") is not None:
                md.voters = tuple(v["voterId"] for v in data["currentVoters"])
        except FormatError as e:
            md.notes.append(f"{qs}: {e.reason}")
        except OSError as e:            # a FIFO or device in its place: never read, never blocks
            md.notes.append(f"{qs}: {e.strerror or e}")
    if md.voters is None and static_voters:
        md.voters = tuple(static_voters)
    single_self = md.voters is not None and node_id is not None and tuple(md.voters) == (node_id,)
    md.uncertain_from = None if single_self else start
    md.next_offset = start
    for i, base in enumerate(bases):
        if i + 1 < len(bases) and bases[i + 1] <= start:
            continue
        md.next_offset = max(md.next_offset, walk.file(directory / f"{base:020d}.log", start, None,
                                                       md.uncertain_from))
        if walk.stopped:
            break
    walk.finish()
    if md.uncertain_from is not None and md.next_offset <= md.uncertain_from:
        md.uncertain_from = None        # nothing was applied past the snapshot
    return md
