#!/usr/bin/env python3
"""Generate ``fixtures/`` deterministically with kafkalog's own writer.

    python tools/make_fixtures.py            # rewrite fixtures/ (commit the result)
    python tools/make_fixtures.py --check    # exit 1 if fixtures/ differs from a fresh generation

Layout:
  fixtures/logdir/            a log directory: several topics/partitions, every codec, headers,
                              tombstones, transactions (COMMIT+ABORT, .txnindex), producer snapshots,
                              legacy v0/v1 segments (with compressed wrappers), a compacted partition
                              and a compacted topic before its first cleaning (customers-0),
                              a KRaft metadata partition with a snapshot, and every checkpoint file
  fixtures/damaged/<case>/    one small log directory per kind of damage (see DAMAGE below)
  fixtures/samples/           the byte samples of shared/docs/byte-samples.md as files
"""
from __future__ import annotations

import argparse
import filecmp
import os
import random
import shutil
import struct
import sys
import tempfile
from pathlib import Path

from kafkalog_formats import control as ctl
from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.legacy import build_message, build_wrapper
from kafkalog_formats.meta_properties import MetaProperties, build_meta_properties
from kafkalog_formats.partition_metadata import build_partition_metadata, uuid_to_kafka_base64
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli import fileops
from kafkalog_cli.repair.log_writer import PartitionWriter

ROOT = Path(__file__).resolve().parents[1]
T0 = 1700000000000          # all timestamps are relative to this (2023-11-14T22:13:20Z)
MTIME = T0 + 3_600_000      # file mtimes written into fixtures
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)


def topic_id(name: str) -> str:
    raw = bytes((sum(map(ord, name)) * (i + 7)) % 251 + 1 for i in range(16))
    return uuid_to_kafka_base64(raw)


class Topic:
    """A partition being written: hands out offsets and builds batches."""

    def __init__(self, logdir: Path, name: str, partition: int, **writer_opts) -> None:
        self.name, self.partition = name, partition
        self.dir = logdir / f"{name}-{partition}"
        self.writer = PartitionWriter(self.dir, **writer_opts)
        self.next_offset = 0

    def batch(self, records: list[tuple], *, codec: int = NONE, epoch: int = 0, gap: int = 0, **kw) -> None:
        """records: (timestamp delta from T0, key, value[, headers]) — offsets assigned in order."""
        base = self.next_offset + gap
        specs = [RecordSpec(i, T0 + r[0], r[1], r[2], r[3] if len(r) > 3 else ()) for i, r in enumerate(records)]
        self.writer.append(build_batch(base, specs, codec=codec, partition_leader_epoch=epoch, **kw), MTIME)
        self.next_offset = base + len(records)

    def marker(self, ctype: int, producer_id: int, producer_epoch: int, ts: int, coordinator_epoch: int = 3,
               epoch: int = 0) -> None:
        spec = RecordSpec(0, T0 + ts, ctl.build_control_key(ctype), ctl.build_end_txn_marker(coordinator_epoch))
        self.writer.append(build_batch(self.next_offset, [spec], is_transactional=True, is_control=True,
                                       producer_id=producer_id, producer_epoch=producer_epoch,
                                       partition_leader_epoch=epoch), MTIME)
        self.next_offset += 1

    def close(self) -> None:
        self.writer.close()
        fileops.write_atomic(self.dir / "partition.metadata", build_partition_metadata(topic_id(self.name)).encode())


def orders(logdir: Path, rng: random.Random) -> Topic:
    """Multi-segment, uncompressed, headers, tombstones, an idempotent producer, two leader epochs."""
    t = Topic(logdir, "orders", 0, segment_bytes=2048, index_interval_bytes=256)
    seq = 0
    for i in range(46):
        n = 1 + i % 3
        recs = []
        for j in range(n):
            k = f"order-{(i * 3 + j) % 17}".encode()
            v = None if (i * 3 + j) % 11 == 5 else f'{{"id":{i * 3 + j},"amount":{rng.randint(1, 999)}}}'.encode()
            hdrs = ((b"source", b"web"), (b"trace", bytes([rng.randrange(256) for _ in range(4)]))) if j == 0 else ()
            recs.append((i * 1000 + j * 7, k, v, hdrs))
        if i % 4 == 0:
            t.batch(recs, producer_id=4000, producer_epoch=0, base_sequence=seq, epoch=0 if i < 20 else 1)
            seq += n
        else:
            t.batch(recs, epoch=0 if i < 20 else 1)
    t.close()
    return t


def orders_codecs(logdir: Path, rng: random.Random) -> Topic:
    """Every codec, a LogAppendTime batch, large compressible values spanning several codec blocks."""
    t = Topic(logdir, "orders", 1, segment_bytes=1 << 20, index_interval_bytes=512)
    for i, codec in enumerate([NONE, GZIP, SNAPPY, LZ4, ZSTD] * 2):
        big = (f"payload {i} " * (4000 if i >= 5 else 20)).encode()
        recs = [(i * 100 + j, f"k{i}-{j}".encode(), big + bytes([j]), ((b"codec", str(codec).encode()),))
                for j in range(4)]
        t.batch(recs, codec=codec)
    t.batch([(5000, b"lat", b"log append time")], log_append_time=True, max_timestamp=T0 + 6000)
    t.close()
    return t


def payments(logdir: Path) -> Topic:
    """Two transactional producers interleaved: one commits, one aborts (→ .txnindex), then again."""
    t = Topic(logdir, "payments", 0, segment_bytes=1024, index_interval_bytes=128)
    a, b = 7000, 7001
    seq = {a: 0, b: 0}

    def data(pid, ts, vals):
        t.batch([(ts + i, f"acct-{pid}-{i}".encode(), v.encode()) for i, v in enumerate(vals)],
                producer_id=pid, producer_epoch=2, base_sequence=seq[pid], is_transactional=True)
        seq[pid] += len(vals)

    t.batch([(0, b"plain", b"non-transactional")])
    for round_ in range(3):
        data(a, 100 + round_ * 1000, ["debit 10", "credit 10"])
        data(b, 200 + round_ * 1000, ["debit 99"])
        data(a, 300 + round_ * 1000, ["fee 1"])
        t.marker(ctl.COMMIT, a, 2, 400 + round_ * 1000)
        data(b, 500 + round_ * 1000, ["credit 99"])
        t.marker(ctl.ABORT, b, 2, 600 + round_ * 1000)
    t.marker(ctl.ABORT, b, 2, 9000)      # an empty transaction's marker: not indexed
    t.close()
    return t


def legacy(logdir: Path) -> Topic:
    """Magic 0 and 1 messages, uncompressed and in compressed wrappers (gzip, snappy, lz4)."""
    t = Topic(logdir, "legacy", 0, segment_bytes=600, index_interval_bytes=64)
    w = t.writer
    off = 0
    for i in range(3):
        w.append(build_message(off, f"k{off}".encode(), f"v0 message {off}".encode(), magic=0), MTIME)
        off += 1
    for codec in (GZIP, SNAPPY, LZ4):
        msgs = [(off + j, f"k{off + j}".encode(), f"v0 inner {off + j}".encode(), -1) for j in range(3)]
        w.append(build_wrapper(msgs, codec, magic=0), MTIME)
        off += 3
    for i in range(3):
        w.append(build_message(off, None if i == 1 else f"k{off}".encode(), f"v1 message {off}".encode(),
                               magic=1, timestamp=T0 + off), MTIME)
        off += 1
    for codec in (GZIP, SNAPPY, LZ4):
        msgs = [(off + j, f"k{off + j}".encode(), f"v1 inner {off + j}".encode(), T0 + off + j) for j in range(3)]
        w.append(build_wrapper(msgs, codec, magic=1), MTIME)
        off += 3
    msgs = [(off + j, b"lat", f"v1 log-append-time {off + j}".encode(), T0 + j) for j in range(2)]
    w.append(build_wrapper(msgs, GZIP, magic=1, log_append_time=T0 + 77_000), MTIME)
    t.writer.write_snapshots = False
    t.close()
    return t


def compacted(logdir: Path) -> Topic:
    """What the cleaner leaves: offset gaps, a batch with a delete horizon, an empty batch."""
    t = Topic(logdir, "compacted", 0, segment_bytes=1 << 20)
    w = t.writer
    w.append(build_batch(0, [RecordSpec(1, T0 + 1, b"a", b"1"), RecordSpec(3, T0 + 3, b"b", b"2")],
                         last_offset_delta=4), MTIME)
    w.append(build_batch(5, [RecordSpec(2, T0 + 10, b"c", None)], last_offset_delta=2,
                         delete_horizon_ms=T0 + 86_400_000), MTIME)
    w.append(build_batch(8, [], last_offset_delta=1, producer_id=42, producer_epoch=0, base_sequence=5,
                         max_timestamp=T0 + 20), MTIME)
    w.append(build_batch(10, [RecordSpec(0, T0 + 30, b"a", b"3")]), MTIME)
    t.close()
    return t


def customers(logdir: Path) -> Topic:
    """A compacted topic (cleanup.policy=compact in the metadata) as a producer leaves it before the log
    cleaner's first pass: several segments of updates to ten keys and a few tombstones, so that compact
    has something to clean."""
    t = Topic(logdir, "customers", 0, segment_bytes=1024, index_interval_bytes=256)
    for i in range(40):
        key = f"customer-{i * 7 % 10}".encode()
        value = None if i in (17, 31) else f'{{"name":"customer {i * 7 % 10}","version":{i}}}'.encode()
        t.batch([(i * 500, key, value)])
    t.close()
    return t


def metadata_record(api_key: int, data: dict, version: int = 0) -> bytes:
    """Metadata record value (frame version 1, record type, record version, flexible body), built by the
    schema layer (``kafkalog_formats.metadata_records``)."""
    from kafkalog_formats.metadata_records import build_metadata_record
    return build_metadata_record(api_key, data, version)


def topic_record(name: str) -> bytes:
    return metadata_record(2, {"name": name, "topicId": topic_id(name)})


def feature_level_record(name: str, level: int) -> bytes:
    return metadata_record(12, {"name": name, "featureLevel": level})


def partition_record(name: str, partition: int = 0) -> bytes:
    return metadata_record(3, {"partitionId": partition, "topicId": topic_id(name), "replicas": [1], "isr": [1],
                               "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0})


def config_record(topic: str, key: str, value: str) -> bytes:
    return metadata_record(4, {"resourceType": 2, "resourceName": topic, "name": key, "value": value})


#: The topics the metadata log creates after its snapshot (offset 3), with their overrides: the internal
#: topics with the configurations Kafka creates them with (GroupCoordinator, TransactionLog), the others
#: with what the README's retain and compact examples show: orders' retention.ms is in the snapshot.
LATER_TOPICS = {
    "legacy": {"retention.ms": "-1"},
    "compacted": {"cleanup.policy": "compact"},
    "customers": {"cleanup.policy": "compact"},
    "__consumer_offsets": {"cleanup.policy": "compact", "segment.bytes": "104857600",
                           "compression.type": "producer"},
    "__transaction_state": {"cleanup.policy": "compact", "segment.bytes": "104857600",
                            "unclean.leader.election.enable": "false", "compression.type": "uncompressed",
                            "min.insync.replicas": "2"},
}


def cluster_metadata(logdir: Path) -> Topic:
    """A KRaft metadata partition: data batches of metadata records and a snapshot .checkpoint."""
    t = Topic(logdir, "__cluster_metadata", 0, index_interval_bytes=4096)
    t.batch([(0, None, feature_level_record("metadata.version", 21))], epoch=1)
    t.batch([(10, None, topic_record("orders")), (10, None, topic_record("payments"))], epoch=1)
    # after the snapshot at offset 3: payments' size limit, then every other topic of the log directory,
    # so that each partition directory is known to the metadata (retain and compact act on them)
    t.batch([(20, None, config_record("payments", "retention.bytes", "512"))], epoch=1)
    for i, (name, overrides) in enumerate(LATER_TOPICS.items()):
        t.batch([(30 + i, None, topic_record(name)), (30 + i, None, partition_record(name))]
                + [(30 + i, None, config_record(name, k, v)) for k, v in overrides.items()], epoch=1)
    t.close()
    snap = [build_batch(0, [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_HEADER),
                                       struct.pack(">hq", 0, T0 + 10) + b"\x00")],
                        is_control=True, partition_leader_epoch=1),
            build_batch(1, [RecordSpec(0, T0 + 10, None, feature_level_record("metadata.version", 21)),
                            RecordSpec(1, T0 + 10, None, topic_record("orders"))], partition_leader_epoch=1),
            build_batch(3, [RecordSpec(0, T0 + 10, ctl.build_control_key(ctl.SNAPSHOT_FOOTER),
                                       struct.pack(">h", 0) + b"\x00")], is_control=True, partition_leader_epoch=1)]
    fileops.write_atomic(t.dir / "00000000000000000003-0000000001.checkpoint", b"".join(snap))
    fileops.write_atomic(t.dir / "quorum-state",
                         b'{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
                         b'"currentVoters":[{"voterId":1}],"data_version":0}')
    return t


def kraft_value(ctype: int, data: dict) -> bytes:
    from kafkalog_formats.kraft_control import build_control_value
    return build_control_value(ctype, data)


def cluster_metadata_snapshot(logdir: Path) -> None:
    """A 3.9+-style KRaft snapshot in ``__cluster_metadata-0``: a header batch carrying SnapshotHeader,
    KRaftVersion and KRaftVoters, then one record of every metadata record type and version the schema
    layer knows (compressed batches included), then the footer."""
    from kafkalog_formats.metadata_records import RECORDS
    d = logdir / "__cluster_metadata-0"
    broker_dir, ctl_dir = topic_id("broker-1-dir"), topic_id("controller-dir")
    endpoint = {"name": "PLAINTEXT", "host": "broker-1.example", "port": 9092, "securityProtocol": 0}
    feature = {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}
    orders = topic_id("orders")
    samples = {
        0: {"brokerId": 1, "isMigratingZkBroker": False, "incarnationId": topic_id("incarnation-1"),
            "brokerEpoch": 12, "endPoints": [endpoint, dict(endpoint, name="SSL", port=9093, securityProtocol=1)],
            "features": [feature, {"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1}],
            "rack": "rack-a", "fenced": False, "inControlledShutdown": False, "logDirs": [broker_dir],
            "cordonedLogDirs": [broker_dir]},
        1: {"brokerId": 2, "brokerEpoch": 13},
        2: {"name": "orders", "topicId": orders},
        3: {"partitionId": 0, "topicId": orders, "replicas": [1, 2, 3], "isr": [1, 2], "removingReplicas": [],
            "addingReplicas": [3], "leader": 1, "leaderRecoveryState": 1, "leaderEpoch": 4, "partitionEpoch": 7,
            "directories": [broker_dir, ctl_dir, topic_id("broker-3-dir")], "eligibleLeaderReplicas": [3],
            "lastKnownElr": [2]},
        4: {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "604800000"},
        5: {"partitionId": 0, "topicId": orders, "isr": [1], "leader": 2, "directories": [broker_dir],
            "eligibleLeaderReplicas": [], "lastKnownElr": [3]},
        7: {"id": 2, "epoch": 13},
        8: {"id": 2, "epoch": 14},
        9: {"topicId": topic_id("old-topic")},
        10: {"owner": "User:alice", "requester": "User:admin", "renewers": ["User:bob"],
             "issueTimestamp": T0, "maxTimestamp": T0 + 604800000, "expirationTimestamp": T0 + 86400000,
             "tokenId": "token-1"},
        11: {"name": "alice", "mechanism": 1, "salt": b"salt-bytes", "storedKey": bytes(range(32)),
             "serverKey": bytes(range(32, 64)), "iterations": 8192},
        12: {"name": "metadata.version", "featureLevel": 21},
        14: {"entity": [{"entityType": "user", "entityName": "alice"}, {"entityType": "client-id",
                                                                        "entityName": None}],
             "key": "producer_byte_rate", "value": 10485760.0, "remove": False},
        15: {"brokerId": 1, "brokerEpoch": 12, "nextProducerId": 5000},
        17: {"brokerId": 1, "brokerEpoch": 12, "fenced": -1, "inControlledShutdown": 1, "logDirs": [broker_dir],
             "cordonedLogDirs": []},
        18: {"id": topic_id("acl-1"), "resourceType": 2, "resourceName": "orders", "patternType": 3,
             "principal": "User:alice", "host": "*", "operation": 3, "permissionType": 3},
        19: {"id": topic_id("acl-1")},
        20: {},
        21: {"zkMigrationState": 0},
        22: {"name": "alice", "mechanism": 1},
        23: {"name": "Bootstrap records"},
        24: {},
        25: {"reason": "controller failover"},
        26: {"tokenId": "token-1"},
        27: {"controllerId": 3000, "incarnationId": topic_id("incarnation-3000"), "zkMigrationReady": False,
             "endPoints": [dict(endpoint, name="CONTROLLER", host="controller-1.example")], "features": [feature]},
        28: {"topicName": "orders"},
        29: {"controllerId": 3001},
    }
    # the state up to offset 2 (payments was created there) and old-topic, whose RemoveTopicRecord is below
    records = [topic_record("payments"), topic_record("old-topic")]
    records += [metadata_record(k, samples[k], v) for k, m in sorted(RECORDS.items())
                for v in range(m.valid.lo, m.valid.hi + 1)]
    header = [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_HEADER),
                         kraft_value(ctl.SNAPSHOT_HEADER, {"version": 0, "lastContainedLogTimestamp": T0 + 10})),
              RecordSpec(1, T0, ctl.build_control_key(ctl.KRAFT_VERSION),
                         kraft_value(ctl.KRAFT_VERSION, {"version": 0, "kRaftVersion": 1})),
              RecordSpec(2, T0, ctl.build_control_key(ctl.KRAFT_VOTERS), kraft_value(ctl.KRAFT_VOTERS, {
                  "version": 0, "voters": [{"voterId": 3000, "voterDirectoryId": ctl_dir,
                                            "endpoints": [{"name": "CONTROLLER", "host": "controller-1.example",
                                                           "port": 9093}],
                                            "kRaftVersionFeature": {"minSupportedVersion": 0,
                                                                    "maxSupportedVersion": 1}}]}))]
    batches = [build_batch(0, header, is_control=True, partition_leader_epoch=2)]
    off = 3
    for i in range(0, len(records), 8):
        chunk = records[i:i + 8]
        batches.append(build_batch(off, [RecordSpec(j, T0 + 10, None, v) for j, v in enumerate(chunk)],
                                   codec=(NONE, ZSTD)[i // 8 % 2], partition_leader_epoch=2))
        off += len(chunk)
    batches.append(build_batch(off, [RecordSpec(0, T0 + 10, ctl.build_control_key(ctl.SNAPSHOT_FOOTER),
                                                kraft_value(ctl.SNAPSHOT_FOOTER, {"version": 0}))],
                               is_control=True, partition_leader_epoch=2))
    fileops.write_atomic(d / "00000000000000000003-0000000002.checkpoint", b"".join(batches))


def consumer_offsets(logdir: Path) -> Topic:
    """``__consumer_offsets`` as the group coordinator writes it: offset commits with every value version
    (0-4), classic group metadata with every value version (0-4) and consumer-protocol subscriptions and
    assignments of every version (0-3), a non-consumer (connect) group, KIP-848 consumer-group records,
    KIP-932 share-group records, and tombstones."""
    from kafkalog_formats import consumer_protocol as cp
    from kafkalog_formats import group_coordinator as gc
    t = Topic(logdir, "__consumer_offsets", 0, index_interval_bytes=512)

    def commit(ts, group, topic, part, version, **value):
        key = gc.build_key(0 if version == 0 else 1, {"group": group, "topic": topic, "partition": part})
        return (ts, key, gc.build_value(1, dict(value, commitTimestamp=T0 + ts), version))

    def member(n, version, sub_v, asg_v, topics, parts, **extra):
        sub = {"topics": topics, "userData": None if sub_v % 2 else bytes([n, 1, 2]),
               "ownedPartitions": [{"topic": topics[0], "partitions": parts[:1]}] if sub_v >= 1 else [],
               "generationId": 3, "rackId": f"rack-{n}" if sub_v >= 3 else None}
        asg = {"assignedPartitions": [{"topic": tp, "partitions": parts} for tp in topics],
               "userData": b"assignor-state" if asg_v >= 1 else None}
        return dict({"memberId": f"consumer-{n}-{version:04d}", "groupInstanceId": f"static-{n}",
                     "clientId": f"consumer-{n}", "clientHost": f"/10.0.0.{n}", "rebalanceTimeout": 300000,
                     "sessionTimeout": 45000, "subscription": cp.build_subscription(sub, sub_v),
                     "assignment": cp.build_assignment(asg, asg_v)}, **extra)

    def group(ts, name, version, members, protocol_type="consumer", protocol="range"):
        value = {"protocolType": protocol_type, "generation": version + 1, "protocol": protocol,
                 "leader": members[0]["memberId"] if members else None, "currentStateTimestamp": T0 + ts,
                 "members": members}
        return (ts, gc.build_key(2, {"group": name}), gc.build_value(2, value, version))

    t.batch([commit(0, "billing", "orders", 0, 0, offset=10, metadata="")])
    t.batch([commit(10, "billing", "orders", 1, 1, offset=11, metadata="m1", expireTimestamp=T0 + 86400000),
             commit(10, "billing", "payments", 0, 2, offset=12, metadata="")])
    t.batch([commit(20, "billing", "orders", 0, 3, offset=20, leaderEpoch=1, metadata=""),
             commit(20, "billing", "orders", 1, 4, offset=21, leaderEpoch=1, metadata="checkpoint-7")])
    for v in range(5):
        t.batch([group(100 + v, f"classic-v{v}", v,
                       [member(1, v, min(v, 3), min(v, 3), ["orders"], [0, 1]),
                        member(2, v, max(v - 1, 0), 3, ["orders", "payments"], [2])])])
    connect = [dict(member(9, 4, 0, 0, ["orders"], [0]), subscription=b"\x00\x01connect-worker",
                    assignment=b"\x00\x01tasks")]
    t.batch([group(200, "connect-cluster", 4, connect, protocol_type="connect", protocol="sessioned"),
             group(201, "billing", 3, [], protocol=None)])
    uid = topic_id("orders")
    kip848 = [
        (3, {"groupId": "cg"}, {"epoch": 5}),
        (4, {"groupId": "cg"}, {"topics": [{"topicId": uid, "topicName": "orders", "numPartitions": 2,
                                             "partitionMetadata": [{"partition": 0, "racks": ["rack-a"]},
                                                                   {"partition": 1, "racks": []}]}]}),
        (5, {"groupId": "cg", "memberId": "m-1"},
         {"instanceId": None, "rackId": "rack-a", "clientId": "app", "clientHost": "/10.0.0.7",
          "subscribedTopicNames": ["orders"], "subscribedTopicRegex": None, "rebalanceTimeoutMs": 60000,
          "serverAssignor": "uniform",
          "classicMemberMetadata": {"sessionTimeoutMs": 45000, "supportedProtocols": [
              {"name": "range", "metadata": cp.build_subscription({"topics": ["orders"]}, 3)}]}}),
        (6, {"groupId": "cg"}, {"assignmentEpoch": 5}),
        (7, {"groupId": "cg", "memberId": "m-1"}, {"topicPartitions": [{"topicId": uid, "partitions": [0, 1]}]}),
        (8, {"groupId": "cg", "memberId": "m-1"},
         {"memberEpoch": 5, "previousMemberEpoch": 4, "state": 0,
          "assignedPartitions": [{"topicId": uid, "partitions": [0]}],
          "partitionsPendingRevocation": [{"topicId": uid, "partitions": [1]}]}),
        (9, {"groupId": "sg"}, {"topics": [{"topicId": uid, "topicName": "orders", "numPartitions": 2,
                                             "partitionMetadata": []}]}),
        (10, {"groupId": "sg", "memberId": "s-1"}, {"rackId": None, "clientId": "share-app",
                                                    "clientHost": "/10.0.0.8", "subscribedTopicNames": ["orders"]}),
        (11, {"groupId": "sg"}, {"epoch": 2}),
        (12, {"groupId": "sg"}, {"assignmentEpoch": 2}),
        (13, {"groupId": "sg", "memberId": "s-1"}, {"topicPartitions": [{"topicId": uid, "partitions": [0, 1]}]}),
        (14, {"groupId": "sg", "memberId": "s-1"},
         {"memberEpoch": 2, "previousMemberEpoch": 1, "state": 0,
          "assignedPartitions": [{"topicId": uid, "partitions": [0, 1]}]}),
        (15, {"groupId": "sg"}, {"initializedTopics": [{"topicId": uid, "topicName": "orders", "partitions": [0, 1]}],
                                 "deletingTopics": [{"topicId": topic_id("old-topic"), "topicName": "old-topic"}]}),
    ]
    t.batch([(300 + rt, gc.build_key(rt, k), gc.build_value(rt, v, 0)) for rt, k, v in kip848[:6]])
    t.batch([(400 + rt, gc.build_key(rt, k), gc.build_value(rt, v, 0)) for rt, k, v in kip848[6:]])
    t.batch([(500, gc.build_key(1, {"group": "billing", "topic": "payments", "partition": 0}), None),
             (500, gc.build_key(2, {"group": "billing"}), None)])
    t.close()
    return t


def transaction_state(logdir: Path) -> Topic:
    """``__transaction_state`` as the transaction coordinator writes it: a transaction's life (Ongoing,
    PrepareCommit, CompleteCommit) with value versions 0 and 1 (tagged fields), aborts, a fenced epoch,
    an expired id (Dead) and its tombstone."""
    from kafkalog_formats import transaction_log as tl
    t = Topic(logdir, "__transaction_state", 0, index_interval_bytes=512)

    def txn(ts, tid, version, status, partitions, **extra):
        value = dict({"producerId": 7000, "producerEpoch": 2, "transactionTimeoutMs": 60000,
                      "transactionStatus": status, "transactionPartitions": partitions,
                      "transactionLastUpdateTimestampMs": T0 + ts, "transactionStartTimestampMs": T0 + 100},
                     **extra)
        return (ts, tl.build_key(tid), tl.build_value(value, version))

    parts = [{"topic": "payments", "partitionIds": [0]}, {"topic": "orders", "partitionIds": [0, 1]}]
    t.batch([txn(0, "payments-app", 0, 0, None)])
    t.batch([txn(100, "payments-app", 0, 1, parts)])
    t.batch([txn(400, "payments-app", 1, 2, parts, clientTransactionVersion=2)])
    t.batch([txn(410, "payments-app", 1, 4, [], previousProducerId=6999, nextProducerId=7002,
                 clientTransactionVersion=2)])
    t.batch([txn(500, "fraud-app", 1, 3, parts[:1]), txn(510, "fraud-app", 1, 5, [])])
    t.batch([txn(600, "fenced-app", 1, 7, parts[1:]), txn(700, "old-app", 0, 6, [])])
    t.batch([(800, tl.build_key("old-app"), None)])
    t.close()
    return t


def write_logdir(logdir: Path) -> None:
    rng = random.Random(20231114)
    topics = [orders(logdir, rng), orders_codecs(logdir, rng), payments(logdir), legacy(logdir),
              compacted(logdir), customers(logdir), consumer_offsets(logdir), transaction_state(logdir)]
    meta = cluster_metadata(logdir)
    cluster_metadata_snapshot(logdir)
    leo = {(t.name, t.partition): t.writer.log_end_offset for t in topics}
    fileops.write_atomic(logdir / "recovery-point-offset-checkpoint", build_offset_checkpoint(leo).encode())
    fileops.write_atomic(logdir / "replication-offset-checkpoint", build_offset_checkpoint(leo).encode())
    fileops.write_atomic(logdir / "log-start-offset-checkpoint",
                         build_offset_checkpoint({("compacted", 0): 1}).encode())
    # a log start moved by DeleteRecords also truncates the leader-epoch cache from the start
    # (LeaderEpochFileCache.truncateFromStart), as every load does again (LogLoader.load)
    from kafkalog_formats.checkpoint import build_leader_epoch_checkpoint
    fileops.write_atomic(logdir / "compacted-0" / "leader-epoch-checkpoint",
                         build_leader_epoch_checkpoint([(0, 1)]).encode())
    fileops.write_atomic(logdir / "cleaner-offset-checkpoint",
                         build_offset_checkpoint({("compacted", 0): 10}).encode())
    fileops.write_atomic(logdir / "meta.properties", build_meta_properties(
        MetaProperties(1, 1, "kafkalog-fixture-cluster", topic_id("log-dir-1")),
        "Tue Nov 14 22:13:20 UTC 2023").encode())
    fileops.write_atomic(logdir / ".kafka_cleanshutdown", b'{"version":0,"brokerEpoch":7}')
    boot = build_batch(0, [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_HEADER),
                                      struct.pack(">hq", 0, 0) + b"\x00")], is_control=True)
    boot += build_batch(1, [RecordSpec(0, T0, None, feature_level_record("metadata.version", 21))])
    boot += build_batch(2, [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_FOOTER), b"\x00\x00\x00")],
                        is_control=True)
    fileops.write_atomic(logdir / "bootstrap.checkpoint", boot)
    del meta


# --- damaged copies ------------------------------------------------------------------------------

def _copy_partition(src_logdir: Path, dst: Path, partition: str) -> Path:
    shutil.copytree(src_logdir / partition, dst / partition)
    return dst / partition


def _last_segment(pdir: Path) -> Path:
    return sorted(pdir.glob("*.log"))[-1]


def _batch_positions(log: Path) -> list[int]:
    from kafkalog_formats.message_set import BatchReader
    return [b.position for b in BatchReader(log.read_bytes())]


def damage(logdir: Path, out: Path) -> None:
    """One directory per kind of damage, each a log directory holding one damaged partition."""
    cases = {}

    def case(name):
        d = out / name
        d.mkdir(parents=True)
        cases[name] = d
        return d

    # truncated last batch: the active segment ends 10 bytes into its last batch's records
    p = _copy_partition(logdir, case("truncated-last-batch"), "orders-0")
    log = _last_segment(p)
    data = log.read_bytes()
    log.write_bytes(data[:_batch_positions(log)[-1] + 40])
    # one byte flipped inside a batch of the first segment (CRC no longer matches)
    p = _copy_partition(logdir, case("flipped-crc-byte"), "orders-0")
    log = sorted(p.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    pos = _batch_positions(log)[2] + 70
    data[pos] ^= 0x10
    log.write_bytes(bytes(data))
    # a zero-filled tail on the active segment (crash after the file was extended)
    p = _copy_partition(logdir, case("zero-tail"), "orders-0")
    log = _last_segment(p)
    log.write_bytes(log.read_bytes() + bytes(300))
    # untrimmed (preallocated) indexes on the active segment, as a running broker leaves them
    # (normal on the active segment; on the inactive first segment it is a warning for verify)
    p = _copy_partition(logdir, case("untrimmed-indexes"), "orders-0")
    for log in (_last_segment(p), sorted(p.glob("*.log"))[0]):
        for suffix, size in (("index", 1024), ("timeindex", 1020)):
            f = log.with_suffix("." + suffix)
            f.write_bytes(f.read_bytes().ljust(size, b"\x00"))
    # an index whose segment is gone (Kafka's loader deletes it)
    p = _copy_partition(logdir, case("orphan-index"), "orders-0")
    (p / "00000000000000099999.index").write_bytes(struct.pack(">ii", 5, 0))
    # leftovers of interrupted cleaning / deletion
    p = _copy_partition(logdir, case("leftover-files"), "orders-0")
    first = sorted(p.glob("*.log"))[0]
    shutil.copy(first, p / (first.name + ".cleaned"))
    shutil.copy(first, p / (first.name + ".swap"))
    shutil.copy(first.with_suffix(".index"), p / (first.with_suffix(".index").name + ".deleted"))
    # a time index that lies: wrong timestamp and an entry pointing inside a batch
    p = _copy_partition(logdir, case("bad-indexes"), "orders-0")
    seg = sorted(p.glob("*.log"))[0]
    idx = seg.with_suffix(".index")
    raw = bytearray(idx.read_bytes())
    rel, pos = struct.unpack_from(">ii", raw, 0)
    struct.pack_into(">ii", raw, 0, rel - 1, pos)          # not the last offset of its batch → mismatch
    idx.write_bytes(bytes(raw))
    tix = seg.with_suffix(".timeindex")
    raw = bytearray(tix.read_bytes())
    ts, rel = struct.unpack_from(">qi", raw, 0)
    struct.pack_into(">qi", raw, 0, ts + 1, rel)            # timestamp off by one → mismatch
    tix.write_bytes(bytes(raw))
    for d in cases.values():
        shutil.copy(logdir / "meta.properties", d / "meta.properties")


def recover_damage(logdir: Path, out: Path) -> None:
    """Damage that ``kafkalog recover`` repairs beyond the cases above (one log directory per case).

    interrupted-swap            segments 0 and 25 of orders-0 compacted into one ``.swap`` segment that
                                was never renamed in (the old files and 25.snapshot still there), after a
                                clean shutdown (marker present)
    stale-checkpoints           the active segment lost its last batches (a torn one left), while the
                                recovery point, high watermark, log start, cleaner offset, a leader epoch
                                and a producer snapshot still point past the new log end
    missing-index-clean         clean shutdown, but 25.index and 51.timeindex are gone
    non-monotonic-offsets       segment 51 of orders-0 goes back 10 offsets halfway (CRCs still valid:
                                the base offset is outside the CRC), so Kafka's index append fails
    torn-transaction-segment    payments-0's last segment torn after its first ABORT marker (its
                                .txnindex must lose the second aborted transaction)
    """
    from kafkalog_formats.checkpoint import build_leader_epoch_checkpoint, parse_leader_epoch_checkpoint
    from kafkalog_formats.message_set import BatchReader

    def case(name: str, partition: str) -> tuple[Path, Path]:
        d = out / name
        d.mkdir(parents=True)
        shutil.copy(logdir / "meta.properties", d / "meta.properties")
        return d, _copy_partition(logdir, d, partition)

    d, p = case("interrupted-swap", "orders-0")
    with tempfile.TemporaryDirectory() as tmp:
        w = PartitionWriter(Path(tmp) / "orders-0", index_interval_bytes=256, write_snapshots=False)
        for name in ("00000000000000000000.log", "00000000000000000025.log"):
            for b in BatchReader((p / name).read_bytes()):
                w.append(b.raw(), MTIME)
        w.close(snapshot=False)
        for suffix in ("log", "index", "timeindex"):
            shutil.copy(Path(tmp) / "orders-0" / f"00000000000000000000.{suffix}",
                        p / f"00000000000000000000.{suffix}.swap")
    fileops.write_atomic(d / "recovery-point-offset-checkpoint",
                         build_offset_checkpoint({("orders", 0): 91}).encode())
    fileops.write_atomic(d / ".kafka_cleanshutdown", b'{"version":0,"brokerEpoch":7}')

    d, p = case("stale-checkpoints", "orders-0")
    log = _last_segment(p)
    positions = _batch_positions(log)
    data = log.read_bytes()
    log.write_bytes(data[:positions[-3] + 30])
    old_end = 91
    fileops.write_atomic(d / "recovery-point-offset-checkpoint",
                         build_offset_checkpoint({("orders", 0): old_end, ("orders", 1): 41}).encode())
    fileops.write_atomic(d / "replication-offset-checkpoint",
                         build_offset_checkpoint({("orders", 0): old_end, ("orders", 1): 41}).encode())
    fileops.write_atomic(d / "log-start-offset-checkpoint",
                         build_offset_checkpoint({("orders", 0): 89}).encode())
    fileops.write_atomic(d / "cleaner-offset-checkpoint",
                         build_offset_checkpoint({("orders", 0): old_end}).encode())
    epochs = [tuple(e) for e in parse_leader_epoch_checkpoint((p / "leader-epoch-checkpoint").read_bytes())]
    fileops.write_atomic(p / "leader-epoch-checkpoint",
                         build_leader_epoch_checkpoint(epochs + [(2, 89)]).encode())

    d, p = case("missing-index-clean", "orders-0")
    (p / "00000000000000000025.index").unlink()
    (p / "00000000000000000051.timeindex").unlink()
    fileops.write_atomic(d / "recovery-point-offset-checkpoint",
                         build_offset_checkpoint({("orders", 0): 91}).encode())
    fileops.write_atomic(d / ".kafka_cleanshutdown", b'{"version":0,"brokerEpoch":7}')

    d, p = case("non-monotonic-offsets", "orders-0")
    log = p / "00000000000000000051.log"
    raw = bytearray(log.read_bytes())
    positions = _batch_positions(log)
    for pos in positions[len(positions) // 2:]:
        base, = struct.unpack_from(">q", raw, pos)
        struct.pack_into(">q", raw, pos, base - 10)
    log.write_bytes(bytes(raw))

    d, p = case("torn-transaction-segment", "payments-0")
    log = _last_segment(p)
    data = log.read_bytes()
    aborts = [b.position + b.size for b in BatchReader(data) if b.is_control
              and ctl.parse_control_key(next(iter(b.records())).key).type == ctl.ABORT]
    log.write_bytes(data[:aborts[0] + 20])


def samples(out: Path) -> None:
    """The byte samples of byte-samples.md (checked byte for byte in the tests)."""
    out.mkdir(parents=True)
    s1 = build_batch(0, [RecordSpec(0, T0, b"k1", b"v1", ((b"h1", b"x"),)), RecordSpec(1, T0 + 5, None, b"hello")])
    s2 = build_batch(2, [RecordSpec(0, T0 + 100, ctl.build_control_key(ctl.COMMIT), ctl.build_end_txn_marker(5))],
                     is_transactional=True, is_control=True, producer_id=1000, producer_epoch=0)
    (out / "00000000000000000000.log").write_bytes(s1 + s2)
    s3 = build_message(5, b"k", b"v1", magic=1, timestamp=T0)
    s4 = build_message(6, None, b"hello", magic=0)
    (out / "00000000000000000005.log").write_bytes(s3 + s4)


def generate(target: Path) -> None:
    write_logdir(target / "logdir")
    damage(target / "logdir", target / "damaged")
    recover_damage(target / "logdir", target / "damaged")
    samples(target / "samples")
    for p in sorted(target.rglob("*")):
        if p.is_file() and not p.name.startswith("README"):
            os.utime(p, ns=(MTIME * 1_000_000, MTIME * 1_000_000))


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b, ignore=["README.md", "__pycache__"])
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _m, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with fixtures/ instead of writing")
    ap.add_argument("--out", type=Path, default=ROOT / "fixtures")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "fixtures"
        generate(fresh)
        if args.check:
            ok = _same_tree(fresh, args.out)
            print("fixtures are current" if ok else "fixtures differ from the generator's output")
            return 0 if ok else 1
        for sub in ("logdir", "damaged", "samples"):
            shutil.rmtree(args.out / sub, ignore_errors=True)
            shutil.copytree(fresh / sub, args.out / sub)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
