"""Hand-made log directories for the state views (describe, consumer-groups, transactions), written with
kafkalog's own writer: a data partition with committed, aborted and open transactions, a
``__transaction_state`` partition that knows some of the producers and has forgotten others, and a
``__consumer_offsets`` partition with plain and transactional commits, tombstones, expiring offsets and a
deleted group. Each builder returns what it wrote, so tests compare against the inputs, not against
numbers copied from an output."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats import control as ctl
from kafkalog_formats import group_coordinator as gc
from kafkalog_formats import transaction_log as tl
from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.meta_properties import MetaProperties, build_meta_properties
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.repair.log_writer import PartitionWriter

T0 = 1_750_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR


class Partition:
    """A partition being written: offsets handed out in order."""

    def __init__(self, logdir: Path, topic: str, partition: int, **kw) -> None:
        self.topic, self.partition = topic, partition
        self.writer = PartitionWriter(logdir / f"{topic}-{partition}", **kw)
        self.next = 0

    def records(self, recs: list[tuple], *, pid: int = -1, epoch: int = -1, txn: bool = False,
                seq: int = -1) -> int:
        """recs: (timestamp, key, value); returns the batch's base offset."""
        base = self.next
        specs = [RecordSpec(i, ts, k, v) for i, (ts, k, v) in enumerate(recs)]
        self.writer.append(build_batch(base, specs, producer_id=pid, producer_epoch=epoch, is_transactional=txn,
                                       base_sequence=seq if pid >= 0 else -1))
        self.next += len(recs)
        return base

    def marker(self, kind: int, pid: int, epoch: int, ts: int, coordinator_epoch: int = 5) -> int:
        base = self.next
        spec = RecordSpec(0, ts, ctl.build_control_key(kind), ctl.build_end_txn_marker(coordinator_epoch))
        self.writer.append(build_batch(base, [spec], is_transactional=True, is_control=True, producer_id=pid,
                                       producer_epoch=epoch))
        self.next += 1
        return base

    def close(self) -> None:
        self.writer.close()


@dataclass
class Written:
    logdir: Path
    open_txns: dict = field(default_factory=dict)     # (topic, partition) -> {pid: first offset}
    log_ends: dict = field(default_factory=dict)      # (topic, partition) -> log end offset
    expected_hanging: set = field(default_factory=set)   # (topic, partition, pid)
    groups: dict = field(default_factory=dict)        # group -> {(topic, partition): offset} after load
    expired: dict = field(default_factory=dict)       # group -> {(topic, partition)} expired at NOW
    deleted_groups: set = field(default_factory=set)


NOW = T0 + 2 * DAY


def logdir_with_transactions(root: Path, *, high_watermarks: dict | None = None) -> Written:
    """``pay-0``: producer 100 commits, 101 aborts, 102 and 103 and 104 leave transactions open (102 known
    Ongoing with pay-0 to the coordinator, 103 known but CompleteCommit without pay-0, 104 unknown to it);
    ``__transaction_state-0`` (of 1 partition, per server.properties) holds the coordinator's view."""
    logdir = root / "logdir"
    logdir.mkdir(parents=True)
    w = Written(logdir)
    p = Partition(logdir, "pay", 0)
    t = T0
    p.records([(t, b"k", b"plain")])
    p.records([(t + 1, b"a", b"1")], pid=100, epoch=0, txn=True, seq=0)
    p.marker(ctl.COMMIT, 100, 0, t + 2)
    p.records([(t + 3, b"b", b"2")], pid=101, epoch=0, txn=True, seq=0)
    p.marker(ctl.ABORT, 101, 0, t + 4)
    first_102 = p.records([(t + 5, b"c", b"3")], pid=102, epoch=3, txn=True, seq=0)
    first_103 = p.records([(t + 6, b"d", b"4")], pid=103, epoch=1, txn=True, seq=0)
    first_104 = p.records([(t + 7, b"e", b"5"), (t + 8, b"f", b"6")], pid=104, epoch=0, txn=True, seq=0)
    p.records([(t + 9, b"g", b"7")], pid=102, epoch=3, txn=True, seq=1)
    p.close()
    w.open_txns[("pay", 0)] = {102: first_102, 103: first_103, 104: first_104}
    w.log_ends[("pay", 0)] = p.next
    w.expected_hanging = {("pay", 0, 103), ("pay", 0, 104)}

    ts = Partition(logdir, "__transaction_state", 0)

    def state(tid, pid, epoch, status, parts, at):
        value = {"producerId": pid, "producerEpoch": epoch, "transactionTimeoutMs": 60000,
                 "transactionStatus": status, "transactionPartitions": parts,
                 "transactionLastUpdateTimestampMs": at, "transactionStartTimestampMs": at}
        return (at, tl.build_key(tid), tl.build_value(value, 1))

    ts.records([state("app-100", 100, 0, 4, [], t + 2)])
    ts.records([state("app-102", 102, 3, 1, [{"topic": "pay", "partitionIds": [0]}], t + 5)])
    ts.records([state("app-103", 103, 1, 1, [{"topic": "pay", "partitionIds": [0]}], t + 6),
                state("app-103", 103, 1, 4, [], t + 60_000)])
    ts.records([state("gone", 104, 0, 1, [{"topic": "pay", "partitionIds": [0]}], t + 7)])
    ts.records([(t + 70_000, tl.build_key("gone"), None)])      # the coordinator forgot producer 104
    ts.close()
    _checkpoints(logdir, {("pay", 0): p.next, ("__transaction_state", 0): ts.next}, high_watermarks)
    (root / "server.properties").write_text("transaction.state.log.num.partitions=1\n"
                                              "offsets.topic.num.partitions=1\n")
    return w


def logdir_with_offsets(root: Path) -> Written:
    """``__consumer_offsets-0`` with: group ``live`` (classic, stable, subscribed to ``orders``) committing
    to orders and to ``old`` (expires); ``simple`` committing with a v1 explicit expire timestamp (expired)
    and a plain one (kept); ``gone`` deleted (group metadata and offset tombstones); ``txn`` with a committed,
    an aborted and a pending transactional commit; an offset tombstone."""
    from kafkalog_formats import consumer_protocol as cp
    logdir = root / "logdir"
    logdir.mkdir(parents=True, exist_ok=True)
    w = Written(logdir)
    p = Partition(logdir, "__consumer_offsets", 0)
    t = T0

    def commit(group, topic, part, offset, at, version=3, **extra):
        key = gc.build_key(1, {"group": group, "topic": topic, "partition": part})
        value = dict({"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": at}, **extra)
        if version == 1:
            value.pop("leaderEpoch")
        return (at, key, gc.build_value(1, value, version))

    def tomb(group, topic, part, at):
        return (at, gc.build_key(1, {"group": group, "topic": topic, "partition": part}), None)

    def group(name, members, at):
        sub = cp.build_subscription({"topics": ["orders"], "userData": None, "ownedPartitions": []}, 1)
        asg = cp.build_assignment({"assignedPartitions": [{"topic": "orders", "partitions": [0]}],
                                   "userData": None}, 1)
        value = {"protocolType": "consumer", "generation": 3, "protocol": "range" if members else None,
                 "leader": members[0] if members else None, "currentStateTimestamp": at,
                 "members": [{"memberId": m, "groupInstanceId": None, "clientId": "c", "clientHost": "/h",
                              "rebalanceTimeout": 1000, "sessionTimeout": 1000, "subscription": sub,
                              "assignment": asg} for m in members]}
        return (at, gc.build_key(2, {"group": name}), gc.build_value(2, value, 3))

    p.records([commit("live", "orders", 0, 5, t), commit("live", "old", 0, 7, t)])
    p.records([group("live", ["m-1"], t + 1)])
    p.records([commit("live", "orders", 0, 9, t + 2)])
    p.records([commit("simple", "orders", 1, 3, t, version=1, expireTimestamp=t + DAY),
               commit("simple", "orders", 2, 4, t + 3)])
    p.records([commit("gone", "orders", 0, 1, t), group("gone", [], t)])
    p.records([group("gone", [], t + 4)])
    p.records([tomb("gone", "orders", 0, t + 5), (t + 5, gc.build_key(2, {"group": "gone"}), None)])
    p.records([commit("txn", "orders", 0, 11, t + 6)], pid=500, epoch=0, txn=True, seq=0)
    p.marker(ctl.COMMIT, 500, 0, t + 7)
    p.records([commit("txn", "orders", 1, 12, t + 8)], pid=501, epoch=0, txn=True, seq=0)
    p.marker(ctl.ABORT, 501, 0, t + 9)
    p.records([commit("txn", "orders", 1, 13, t + 10), commit("txn", "orders", 2, 14, t + 10)])
    p.records([tomb("txn", "orders", 2, t + 11)])
    p.records([commit("txn", "orders", 1, 15, t + 12)], pid=502, epoch=0, txn=True, seq=0)    # pending
    p.close()
    # at NOW (two days on): "simple" orders-1 passed its explicit expire timestamp; the others have the
    # default 7-day retention to go; "live"'s offset of "old" expires only later (not subscribed)
    w.groups = {"live": {("orders", 0): 9, ("old", 0): 7}, "simple": {("orders", 2): 4},
                "txn": {("orders", 0): 11, ("orders", 1): 13}}
    w.expired = {"simple": {("orders", 1)}}
    w.deleted_groups = {"gone"}
    _checkpoints(logdir, {("__consumer_offsets", 0): p.next}, None)
    return w


def _checkpoints(logdir: Path, ends: dict, hws: dict | None) -> None:
    hw = dict(ends)
    hw.update(hws or {})
    (logdir / "replication-offset-checkpoint").write_text(build_offset_checkpoint(hw))
    (logdir / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint(ends))
    (logdir / "log-start-offset-checkpoint").write_text(build_offset_checkpoint({k: 0 for k in ends}))
    (logdir / "meta.properties").write_text(build_meta_properties(MetaProperties(
        version=1, node_id=1, cluster_id="AAAAAAAAAAAAAAAAAAAAAA", directory_id=None), "Thu Jan 01 00:00:00 UTC 2025"))
