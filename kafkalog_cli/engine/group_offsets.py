"""Consumer groups and their committed offsets, loaded from ``__consumer_offsets`` partitions as the group
coordinator loads them when it becomes the partition's leader, then expired as its first offset-expiration
run would.

Load (Kafka 3.x ``GroupMetadataManager.doLoadGroupsAndOffsets``; 4.x ``OffsetMetadataManager.replay``,
``GroupMetadataManager.replay``, ``replayEndTransactionMarker``; the same results): every batch from the log
start offset to the log end, in offset order.

* An offset commit (record types 0 and 1) outside a transaction replaces the group/topic/partition's
  offset; inside one it is pending for its producer until that producer's COMMIT marker, which materialises
  each pending offset unless a later-written one is there already (compared by record offset: 4.x; 3.x
  compares the offsets of the batches, the same order), or its ABORT marker, which drops them.
* A null value (tombstone) removes the offset (and, as in 4.x, the group's pending transactional offsets of
  that partition; 3.x keeps those, a case no coordinator writes: its tombstones are never transactional).
* A ``GroupMetadataValue`` (type 2) loads a classic group: Empty without members, else Stable (3.x
  ``readGroupMessageValue``, 4.x ``ClassicGroup.fromRecord``); its tombstone removes the group. Offsets of
  a group without metadata form a "simple" group (protocol type none), as both versions create one.
* KIP-848 consumer groups (types 3-8) are known by their metadata record (type 3; a tombstone deletes
  the group) and their members' subscribed topic names (type 5). Share-group records (9-15) hold no
  committed offsets and are counted only; record types above 15 are skipped and counted.

Expiration (3.x ``GroupMetadata.removeExpiredOffsets``, 4.x ``OffsetMetadataManager.cleanupExpiredOffsets``
with ``ClassicGroup``/``ConsumerGroup.offsetExpirationCondition``), at ``now`` with ``offsets.retention.ms``
(``offsets.retention.minutes``, default 7 days): an offset with an explicit expire timestamp (value
version 1) expires at it; else it expires ``retention`` after its base time, which is the group's
current-state timestamp (else the commit time) for an Empty classic group with a protocol type, the commit
time for a simple group, a KIP-848 group, or a Stable classic consumer group (where offsets of subscribed
topics never expire); a Stable classic group of another protocol type expires nothing. An offset with a
pending transactional commit never expires. A group left with no offset and no member is deleted by
that run (an Empty classic group, a simple group).

The group's partition is ``abs(groupId.hashCode) % partitions`` (Kafka ``Utils.abs`` of Java's
``String.hashCode``: ``Integer.MIN_VALUE`` maps to 0), ``partitions`` being ``offsets.topic.num.partitions``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkalog_formats import control as ctl
from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader

from .findings import Finding
from .mapped import MappedFile

OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 50                  # offsets.topic.num.partitions
DEFAULT_RETENTION_MS = 7 * 24 * 3_600_000        # offsets.retention.minutes = 10080 (since 2.0)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + c`` over the UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


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
    kind: str = "simple"             # classic | consumer (KIP-848) | simple (offsets only) | share
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


@dataclass
class OffsetsLoad:
    """What loading some ``__consumer_offsets`` partitions gives."""
    groups: dict = field(default_factory=dict)        # group id -> Group (after expiration)
    removed: dict = field(default_factory=dict)       # group id -> log partition: deleted (tombstone) groups
    partitions_read: dict = field(default_factory=dict)   # log partition -> (log start, log end)
    skipped_records: dict = field(default_factory=dict)   # why -> count
    problems: list = field(default_factory=list)      # Findings: batches the coordinator's load fails on
    above_high_watermark: dict = field(default_factory=dict)   # log partition -> records at or above it


class _Loader:
    """One ``__consumer_offsets`` partition's replay (``doLoadGroupsAndOffsets``)."""

    def __init__(self, log_partition: int, out: OffsetsLoad) -> None:
        self.p = log_partition
        self.out = out
        self.offsets: dict = {}          # (group, topic, partition) -> CommittedOffset
        self.pending: dict = {}          # pid -> {(group, topic, partition): CommittedOffset}
        self.classic: dict = {}          # group -> dict (GroupMetadataValue data)
        self.consumer: dict = {}         # group -> {member id: subscribed topic names}
        self.removed: set = set()

    def skip(self, why: str) -> None:
        self.out.skipped_records[why] = self.out.skipped_records.get(why, 0) + 1

    def batch(self, b) -> None:
        from kafkalog_formats import group_coordinator as gc
        if b.is_control:
            if b.count == 0:
                return
            rec = next(iter(b.records()))
            kind = ctl.parse_control_key(rec.key).type
            pending = self.pending.pop(b.producer_id, {})
            if kind == ctl.COMMIT:
                for k, v in pending.items():
                    cur = self.offsets.get(k)
                    if cur is None or cur.record_offset < v.record_offset:
                        self.offsets[k] = v
            return
        txn = b.is_transactional
        for rec in b.records():
            if rec.key is None:
                self.skip("records without a key (the coordinator's loader fails on them)")
                continue
            key = gc.read_key(rec.key)
            if key.message is None:
                self.skip(f"record type {key.version} (unknown to this kafkalog)")
                continue
            rtype = key.version
            if rtype in (0, 1):
                gtp = (key.data["group"], key.data["topic"], key.data["partition"])
                if rec.value is None:
                    self.offsets.pop(gtp, None)
                    for pend in self.pending.values():
                        pend.pop(gtp, None)
                    continue
                v = gc.read_value(1, rec.value)
                d = v.data
                exp = d.get("expireTimestamp", -1) if v.version == 1 else -1
                co = CommittedOffset(gtp[0], gtp[1], gtp[2], d["offset"], d.get("leaderEpoch", -1),
                                     d.get("metadata") or "", d["commitTimestamp"], exp if exp >= 0 else None,
                                     rec.offset, self.p)
                if txn:
                    self.pending.setdefault(b.producer_id, {})[gtp] = co
                else:
                    self.offsets[gtp] = co
            elif rtype == 2:
                g = key.data["group"]
                if rec.value is None:
                    self.classic.pop(g, None)
                    self.removed.add(g)
                else:
                    self.classic[g] = gc.read_value(2, rec.value).data
                    self.removed.discard(g)
            elif rtype == 3:
                g = key.data["groupId"]
                if rec.value is None:
                    self.consumer.pop(g, None)
                    self.removed.add(g)
                else:
                    self.consumer.setdefault(g, {})
                    self.removed.discard(g)
            elif rtype == 5:
                g, m = key.data["groupId"], key.data["memberId"]
                members = self.consumer.setdefault(g, {})
                if rec.value is None:
                    members.pop(m, None)
                else:
                    members[m] = gc.read_value(5, rec.value).data
            elif rtype in (4, 6, 7, 8):
                continue                 # assignments: no bearing on committed offsets
            else:
                self.skip("share-group records (no committed offsets)")

    def groups(self) -> dict:
        """The groups this partition holds once loaded (before expiration)."""
        out: dict = {}
        for g, data in self.classic.items():
            out[g] = _classic(g, self.p, data)
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
    if g.protocol_type == "consumer" and members and g.protocol is not None:
        topics: set | None = set()
        for m in members:
            try:
                topics.update(cp.read_subscription(m["subscription"]).data["topics"])
            except (FormatError, KeyError, TypeError):
                topics = None          # GroupMetadata.computeSubscribedTopics: unknown on a decoding error
                break
        g.subscribed_topics = topics
    return g


def _or_none(ts) -> int | None:
    return ts if ts is not None and ts >= 0 else None


def expire(g: Group, now: int, retention_ms: int) -> None:
    """The first expiration run on the loaded group: moves expired offsets to ``g.expired``, sets each
    remaining offset's ``expires_at`` (None when it cannot expire as things are)."""
    base_rule = None         # offset -> base timestamp, or None: nothing expires
    protected: set = set()
    if g.kind == "consumer":
        base_rule = lambda co: co.commit_timestamp
        protected = g.subscribed_topics or set()
    elif g.kind == "simple" or g.protocol_type is None:
        base_rule = lambda co: co.commit_timestamp
    elif g.state == "Empty":
        cst = g.current_state_timestamp
        base_rule = lambda co: cst if cst is not None else co.commit_timestamp
    elif g.protocol_type == "consumer" and g.subscribed_topics is not None and g.state == "Stable":
        base_rule = lambda co: co.commit_timestamp
        protected = g.subscribed_topics
    pending_tps = {tp for pend in g.pending.values() for tp in pend}
    for tp, co in list(g.offsets.items()):
        if base_rule is None or tp[0] in protected or tp in pending_tps:
            co.expires_at = None
            continue
        co.expires_at = co.expire_timestamp if co.expire_timestamp is not None else base_rule(co) + retention_ms
        if now >= co.expires_at:
            g.expired[tp] = g.offsets.pop(tp)
    if g.expired and not g.offsets and not g.members and not g.pending and g.kind in ("classic", "simple"):
        g.deleted_by_expiration = True


def load_offsets(directories, now: int, retention_ms: int = DEFAULT_RETENTION_MS,
                 high_watermarks: dict | None = None) -> OffsetsLoad:
    """Load every given ``__consumer_offsets-N`` directory and expire at ``now``."""
    from .coordinator_log import coordinator_partitions
    out = OffsetsLoad()
    for part, view in coordinator_partitions(directories, out.partitions_read):
        loader = _Loader(part, out)
        hw = (high_watermarks or {}).get(part)
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
                        out.problems.append(Finding(e.kind, f"{e.reason} (batch at offset {b.base_offset}: the "
                                                    "coordinator's load fails on it)", str(seg.log_path), b.position))
                stop = reader.stop
                if stop is not None and stop.kind != "trailing_bytes":
                    from kafkalog_formats.limits import all_zero
                    if not all_zero(mf.buf, stop.position, len(mf.buf)):
                        out.problems.append(Finding(stop.kind, stop.reason, str(seg.log_path), stop.position))
        if above:
            out.above_high_watermark[part] = above
        for g in loader.removed:
            out.removed[g] = part
        for gid, g in loader.groups().items():
            expire(g, now, retention_ms)
            out.groups[gid] = g
    return out

