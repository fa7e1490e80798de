"""Consumer groups and their committed offsets, loaded from ``__consumer_offsets`` partitions as the group
coordinator loads them when it becomes the partition's leader (then expired: ``group_expiration``).

Two coordinators, whose rules differ (``Rules``; docs/kafka-rules.md S5, S13-S16; which one applies:
``coordinator_version``): Kafka 2.1-3.9's ``GroupMetadataManager`` (core, Scala; ``doLoadGroupsAndOffsets``)
and 4.x's ``group-coordinator`` (``CoordinatorLoaderImpl``, ``GroupCoordinatorShard.replay``,
``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker``, ``GroupMetadataManager.replay``; read from
the 4.4.0 classes; 3.7-3.9 can run it as their "new" coordinator). Both replay every batch from the log
start offset to the log end, in offset order:

* An offset commit (record types 0 and 1) outside a transaction replaces the group/topic/partition's offset;
  inside one it is pending for its producer until that producer's COMMIT marker, which materialises each
  pending offset unless a later-written one is there already, or its ABORT, which drops them. "Inside a
  transaction" is the batch's transactional flag for 3.x, a producer id other than -1 for 4.x.
* A tombstone (null value): 3.x removes the committed offset (a plain batch) or the producer's pending one
  (a transactional batch), never both; 4.x removes the committed offset and every producer's pending one.
* Control batches: 3.x reads only the first record; a COMMIT materialises, any control record ends the
  producer's pending commits. 4.x reads every record; only COMMIT and ABORT act.
* A ``GroupMetadataValue`` (type 2) loads a classic group: Empty without members, else Stable (3.x
  ``readGroupMessageValue``, 4.x ``ClassicGroup.fromRecord``); its tombstone removes the group. Offsets of
  a group without metadata form a "simple" group (protocol type none), as both create one.
* KIP-848 consumer groups (types 3-8; 4.x only: 3.x's ``readMessageKey`` calls them unknown keys and skips
  them) are known by their metadata record (type 3; a tombstone deletes the group) and their members'
  subscribed topic names (type 5). Share-group and later records hold no committed offsets and are counted.
* A value whose version the coordinator does not know fails its load of the whole partition (3.x
  ``readOffsetMessageValue``/``readGroupMessageValue``: IllegalStateException, versions 0-4; 4.4.0
  ``CoordinatorRecordSerde.deserialize``: UnknownRecordVersionException, versions 0-4 for types 1-2, 0 for
  type 0 (LegacyOffsetCommitValue) and the KIP-848 types). So does an undecodable record, a record without a
  key, and a classic consumer group's subscription with a bad length (``consumer_protocol``). kafkalog reports
  it (exit 1) and shows what it could read of the partition.

The group's partition is ``abs(groupId.hashCode) % partitions`` (Kafka ``Utils.abs`` of Java's
``String.hashCode``: ``Integer.MIN_VALUE`` maps to 0), ``partitions`` being ``offsets.topic.num.partitions``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats import control as ctl
from kafkalog_formats.errors import FormatError
from kafkalog_formats.java_text import java_string_hash
from kafkalog_formats.message_set import BatchReader

from .findings import Finding
from .mapped import MappedFile

OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 50                  # offsets.topic.num.partitions
DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000        # offsets.retention.minutes = 10080 (since 2.0)


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` gives 0 (Java's Math.abs would give it back negative)."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group (``GroupMetadataManager.partitionFor``, 3.x;
    ``GroupCoordinatorService.partitionFor``, 4.x); also the ``__transaction_state`` partition of a
    transactional id (``TransactionStateManager.partitionFor``)."""
    return kafka_abs(java_string_hash(group_id)) % partitions


@dataclass
class CommittedOffset:
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None     # value version 1 only
    record_offset: int               # where it is in __consumer_offsets
    log_partition: int               # which __consumer_offsets partition
    expires_at: int | None = None    # when the coordinator's expiration run removes it (None: never, as things are)


@dataclass
class Member:
    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None = None


@dataclass
class Group:
    group_id: str
    log_partition: int
    kind: str = "simple"             # classic | consumer (KIP-848) | simple (offsets only)
    protocol_type: str | None = None
    protocol: str | None = None
    generation: int | None = None
    state: str = "Empty"             # as loaded: Empty or Stable
    current_state_timestamp: int | None = None
    members: list = field(default_factory=list)
    subscribed_topics: set | None = None     # None: unknown (offsets of no topic are protected)
    offsets: dict = field(default_factory=dict)       # (topic, partition) -> CommittedOffset
    expired: dict = field(default_factory=dict)       # (topic, partition) -> CommittedOffset
    pending: dict = field(default_factory=dict)       # producer id -> {(topic, partition): CommittedOffset}
    deleted_by_expiration: bool = False
    loads: bool = True               # False: the coordinator's load of its partition fails (shown as read)


@dataclass(frozen=True)
class Rules:
    """Which group coordinator's rules load and expire the groups (see the module's docstring)."""
    modern: bool                     # 4.x group-coordinator; False: 2.1-3.9 GroupMetadataManager
    source: str = ""                 # how it was decided, in words

    @property
    def name(self) -> str:
        return "Kafka 4.x group coordinator" if self.modern else "Kafka 3.x GroupMetadataManager"

    def value_versions(self, record_type: int) -> range:
        """The value versions the coordinator reads for a record type (others fail its load)."""
        if not self.modern or record_type in (1, 2):
            return range(0, 5)
        return range(0, 1)           # 4.4.0: LegacyOffsetCommitValue (type 0) and the KIP-848 values: 0 only


MODERN, CLASSIC = Rules(True), Rules(False)
#: record types 4.4.0's CoordinatorRecordType no longer has (ShareGroupPartitionMetadata, a streams record):
#: UnknownRecordTypeException, skipped
UNKNOWN_TO_4X = frozenset({9, 18})


@dataclass
class OffsetsLoad:
    """What loading some ``__consumer_offsets`` partitions gives."""
    groups: dict = field(default_factory=dict)        # group id -> Group (after expiration)
    removed: dict = field(default_factory=dict)       # group id -> log partition: deleted (tombstone) groups
    partitions_read: dict = field(default_factory=dict)   # log partition -> (log start, log end)
    skipped_records: dict = field(default_factory=dict)   # why -> count
    problems: list = field(default_factory=list)      # Findings: records the coordinator's load fails on
    unloadable: dict = field(default_factory=dict)    # log partition -> the first reason its load fails
    above_high_watermark: dict = field(default_factory=dict)   # log partition -> records at or above it
    rules: dict = field(default_factory=dict)         # log partition -> Rules applied
    kip848: set = field(default_factory=set)          # log partitions whose KIP-848 records 3.x's rules skipped


class LoadFails(FormatError):
    """A record the coordinator cannot replay: its load of the partition fails (kind ``coordinator_load``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, None, "coordinator_load")


class _Loader:
    """One ``__consumer_offsets`` partition's replay."""

    def __init__(self, log_partition: int, out: OffsetsLoad, rules: Rules) -> None:
        self.p = log_partition
        self.out = out
        self.rules = rules
        self.offsets: dict = {}          # (group, topic, partition) -> CommittedOffset
        self.pending: dict = {}          # pid -> {(group, topic, partition): CommittedOffset}
        self.classic: dict = {}          # group -> dict (GroupMetadataValue data)
        self.consumer: dict = {}         # group -> {member id: ConsumerGroupMemberMetadataValue data}
        self.removed: set = set()

    def skip(self, why: str) -> None:
        self.out.skipped_records[why] = self.out.skipped_records.get(why, 0) + 1

    def batch(self, b) -> None:
        if b.is_control:
            self._control(b)
            return
        txn = b.producer_id != -1 if self.rules.modern else b.is_transactional
        for rec in b.records():
            self._record(rec, b.producer_id if txn else None)

    def _control(self, b) -> None:
        """3.x: the first record only; its producer's pending commits end, materialised at a COMMIT. 4.x:
        every record; COMMIT materialises, ABORT drops, other types do nothing."""
        if b.count == 0:
            return
        records = b.records() if self.rules.modern else [next(iter(b.records()))]
        for rec in records:
            kind = ctl.parse_control_key(rec.key).type
            if kind not in (ctl.COMMIT, ctl.ABORT) and self.rules.modern:
                continue
            pending = self.pending.pop(b.producer_id, {})
            if kind == ctl.COMMIT:
                for k, v in pending.items():
                    cur = self.offsets.get(k)
                    if cur is None or cur.record_offset < v.record_offset:
                        self.offsets[k] = v

    def _record(self, rec, pid: int | None) -> None:
        from kafkalog_formats import group_coordinator as gc
        if rec.key is None:
            raise LoadFails("a record without a key (3.x: 'Group metadata/offset entry key should not be null'; "
                            "4.x: it cannot be deserialized)")
        if len(rec.key) >= 2:
            rtype = int.from_bytes(rec.key[:2], "big", signed=True)
            if not self.rules.modern and not 0 <= rtype <= 2:
                if 3 <= rtype <= 8:
                    self.out.kip848.add(self.p)
                self.skip(f"record type {rtype} (KIP-848 and later: a 3.x GroupMetadataManager skips them)")
                return
            if self.rules.modern and rtype in UNKNOWN_TO_4X:
                self.skip(f"record type {rtype} (not a type the 4.x coordinator knows: it skips it)")
                return
        key = gc.read_key(rec.key)            # FormatError: the coordinator cannot read it either
        rtype = key.version
        if key.message is None:
            self.skip(f"record type {rtype} (unknown to this kafkalog; the coordinator skips types it does "
                      "not know)")
            return
        value = None
        if rec.value is not None:
            if rtype not in gc.VALUES:
                self.skip(f"record type {rtype} (no value schema in this kafkalog)")
                return
            known = self.rules.value_versions(rtype)
            version = int.from_bytes(rec.value[:2], "big", signed=True) if len(rec.value) >= 2 else None
            if version is not None and version not in known:     # checked before the body is read, as Kafka
                raise LoadFails(f"{gc.VALUES[rtype].name} version {version} at offset {rec.offset}: not one the "
                                f"{self.rules.name} reads ({known.start}-{known.stop - 1})")
            value = gc.read_value(rtype, rec.value)
        if rtype in (0, 1):
            self._offset(key.data, value, rec.offset, pid)
        elif rtype == 2:
            self._group(key.data["group"], value)
        elif rtype == 3:
            g = key.data["groupId"]
            if value is None:
                self.consumer.pop(g, None)
                self.removed.add(g)
            else:
                self.consumer.setdefault(g, {})
                self.removed.discard(g)
        elif rtype == 5:
            g, m = key.data["groupId"], key.data["memberId"]
            members = self.consumer.setdefault(g, {})
            if value is None:
                members.pop(m, None)
            else:
                members[m] = value.data
        elif rtype in (4, 6, 7, 8):
            return                       # assignments: no bearing on committed offsets
        else:
            self.skip("share-group records (no committed offsets)")

    def _offset(self, key: dict, value, record_offset: int, pid: int | None) -> None:
        gtp = (key["group"], key["topic"], key["partition"])
        if value is None:
            if self.rules.modern:        # OffsetMetadataManager.replay: the offset and every pending one
                self.offsets.pop(gtp, None)
                for pend in self.pending.values():
                    pend.pop(gtp, None)
            elif pid is not None:        # doLoadGroupsAndOffsets: the producer's pending one only
                self.pending.get(pid, {}).pop(gtp, None)
            else:
                self.offsets.pop(gtp, None)
            return
        d = value.data
        exp = d.get("expireTimestamp", -1) if value.version == 1 else -1
        co = CommittedOffset(gtp[0], gtp[1], gtp[2], d["offset"], d.get("leaderEpoch", -1), d.get("metadata") or "",
                             d["commitTimestamp"], None if exp == -1 else exp, record_offset, self.p)
        if pid is not None:
            self.pending.setdefault(pid, {})[gtp] = co
        else:
            self.offsets[gtp] = co

    def _group(self, group_id: str, value) -> None:
        if value is None:
            self.classic.pop(group_id, None)
            self.removed.add(group_id)
            return
        self.classic[group_id] = _classic(group_id, self.p, value.data)     # LoadFails on a bad subscription
        self.removed.discard(group_id)

    def groups(self) -> dict:
        """The groups this partition holds once loaded (before expiration)."""
        out: dict = dict(self.classic)
        for g, members in self.consumer.items():
            grp = out.setdefault(g, Group(g, self.p, kind="consumer", protocol_type="consumer"))
            grp.kind = "consumer"
            grp.state = "Stable" if members else "Empty"
            grp.members = [Member(m, d.get("clientId", ""), d.get("clientHost", ""), d.get("instanceId"))
                           for m, d in sorted(members.items())]
            topics = set()
            for d in members.values():
                topics.update(d.get("subscribedTopicNames") or [])
            grp.subscribed_topics = topics
        for (g, t, p), co in self.offsets.items():
            out.setdefault(g, Group(g, self.p)).offsets[(t, p)] = co
        for pid, pend in self.pending.items():
            for (g, t, p), co in pend.items():
                out.setdefault(g, Group(g, self.p)).pending.setdefault(pid, {})[(t, p)] = co
        return out


def _classic(group_id: str, log_partition: int, data: dict) -> Group:
    from kafkalog_formats import consumer_protocol as cp
    members = data.get("members") or []
    g = Group(group_id, log_partition, kind="classic", protocol_type=data.get("protocolType") or None,
              protocol=data.get("protocol"), generation=data.get("generation"),
              state="Stable" if members else "Empty",
              current_state_timestamp=_or_none(data.get("currentStateTimestamp", -1)))
    g.members = [Member(m["memberId"], m.get("clientId", ""), m.get("clientHost", ""), m.get("groupInstanceId"))
                 for m in members]
    if g.protocol_type == cp.PROTOCOL_TYPE and not members:
        g.subscribed_topics = set()
    elif g.protocol_type == cp.PROTOCOL_TYPE and g.protocol is not None:
        topics: set | None = set()
        for m in members:
            try:
                topics.update(cp.subscription_topics_v0(m["subscription"]))
            except FormatError as e:
                if e.kind == cp.LOAD_FAILS:
                    raise LoadFails(f"group {group_id}: member {m['memberId']}'s {e.reason}: the coordinator's "
                                    "computeSubscribedTopics fails and so does its load") from None
                topics = None            # SchemaException: the coordinator does not know the subscribed topics
                break
        g.subscribed_topics = topics
    return g


def _or_none(ts) -> int | None:
    return ts if ts is not None and ts >= 0 else None


def load_offsets(directories, now: int, retention_ms: int = DEFAULT_RETENTION_MS,
                 high_watermarks: dict | None = None, rules_for=None) -> OffsetsLoad:
    """Load every given ``__consumer_offsets-N`` directory and expire at ``now``. ``rules_for(directory)``
    gives the ``Rules`` of a partition directory (default: 4.x's)."""
    from .coordinator_log import coordinator_partitions
    from .group_expiration import expire
    out = OffsetsLoad()
    rules_by_part = {}
    for directory in directories:
        rules_by_part[int(Path(directory).name.rsplit("-", 1)[1])] = (rules_for or (lambda d: MODERN))(directory)
    for part, view in coordinator_partitions(directories, out.partitions_read):
        rules = out.rules[part] = rules_by_part.get(part, MODERN)
        loader = _Loader(part, out, rules)
        out.above_high_watermark[part] = _replay(view, loader, (high_watermarks or {}).get(part), out)
        if not out.above_high_watermark[part]:
            del out.above_high_watermark[part]
        for g in loader.removed:
            out.removed[g] = part
        for gid, g in loader.groups().items():
            g.loads = part not in out.unloadable
            expire(g, now, retention_ms, rules)
            out.groups[gid] = g
    return out


def _replay(view, loader: _Loader, hw: int | None, out: OffsetsLoad) -> int:
    """Every batch from the log start to the log end through ``loader``; returns the records at or above the
    high watermark."""
    above = 0
    for base in view.bases:
        seg = view.log.segments[base]
        with MappedFile(seg.log_path) as mf:
            reader = BatchReader(mf.buf)
            for b in reader:
                mf.release_behind(b.position)
                if b.last_offset < view.log_start:
                    continue
                if hw is not None and b.last_offset >= hw:
                    above += b.last_offset - max(b.base_offset, hw) + 1
                try:
                    loader.batch(b)
                except FormatError as e:
                    why = f"{e.reason} (batch at offset {b.base_offset}: the coordinator's load of " \
                          f"__consumer_offsets-{loader.p} fails on it)"
                    out.problems.append(Finding(e.kind, why, str(seg.log_path), b.position))
                    out.unloadable.setdefault(loader.p, why)
            stop = reader.stop
            if stop is not None and stop.kind != "trailing_bytes":
                from kafkalog_formats.limits import all_zero
                if not all_zero(mf.buf, stop.position, len(mf.buf)):
                    out.problems.append(Finding(stop.kind, stop.reason, str(seg.log_path), stop.position))
    return above

