"""consumer-groups and transactions at the coordinators' edges (issue 35, item 2): the rules where Kafka 3.x's
GroupMetadataManager and 4.x's group coordinator differ, each checked under both, and which release's rules a
log directory gets (meta.properties, the KRaft metadata, the records, --kafka-version). Every case is built
with kafkalog's own writer; the expectations come from the Kafka source named in each test (and the broker
tests in tests/kafka/test_broker_views.py check them against real 3.9.2 and 4.4.0 brokers)."""
from __future__ import annotations

import json
import struct

import pytest

import views_data as vd
from conftest import run_cli
from kafkalog_formats import consumer_protocol as cp
from kafkalog_formats import control as ctl
from kafkalog_formats import group_coordinator as gc
from kafkalog_formats import transaction_log as tl
from kafkalog_formats.metadata_records import build_metadata_record
from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_cli.repair.log_writer import PartitionWriter

T0, DAY = vd.T0, vd.DAY
NOW = T0 + 2 * DAY
RULES = {"3.9": "3.x", "4.0": "4.x"}


def objs(out: str, kind: str) -> list[dict]:
    return [o for o in map(json.loads, out.splitlines()) if o.get("type") == kind]


def commit(group, topic, part, offset, at, version=3, **extra):
    key = gc.build_key(1, {"group": group, "topic": topic, "partition": part})
    value = dict({"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": at}, **extra)
    if version in (0, 1, 2):
        value.pop("leaderEpoch")
    return (at, key, gc.build_value(1, value, version))


def tomb(group, topic, part, at):
    return (at, gc.build_key(1, {"group": group, "topic": topic, "partition": part}), None)


def classic(name, members, at, subscription: bytes | None = None, protocol_type="consumer"):
    sub = subscription if subscription is not None else \
        cp.build_subscription({"topics": ["orders"], "userData": None, "ownedPartitions": []}, 1)
    value = {"protocolType": protocol_type, "generation": 3 if members else 0,
             "protocol": "range" if members else None, "leader": members[0] if members else None,
             "currentStateTimestamp": at,
             "members": [{"memberId": m, "groupInstanceId": None, "clientId": "c", "clientHost": "/h",
                          "rebalanceTimeout": 1000, "sessionTimeout": 1000, "subscription": sub,
                          "assignment": b""} for m in members]}
    return (at, gc.build_key(2, {"group": name}), gc.build_value(2, value, 3))


def consumer_group(name, at):
    return (at, gc.build_key(3, {"groupId": name}), gc.build_value(3, {"epoch": 1}, 0))


def member(name, member_id, topics, at, value=True):
    data = {"instanceId": None, "rackId": None, "clientId": "c", "clientHost": "/h", "subscribedTopicNames": topics,
            "subscribedTopicRegex": None, "rebalanceTimeoutMs": 1000, "serverAssignor": "uniform"}
    return (at, gc.build_key(5, {"groupId": name, "memberId": member_id}), gc.build_value(5, data, 0) if value else None)


def offsets_dir(tmp_path, write) -> vd.Written:
    """A log directory with ``__consumer_offsets-0`` written by ``write(partition)``."""
    logdir = tmp_path / "logdir"
    logdir.mkdir(parents=True, exist_ok=True)
    p = vd.Partition(logdir, "__consumer_offsets", 0)
    write(p)
    p.close()
    vd._checkpoints(logdir, {("__consumer_offsets", 0): p.next}, None)
    return vd.Written(logdir)


def groups(logdir, *args, now=NOW):
    r = run_cli("consumer-groups", "--format", "json", "--include-expired", "--now", str(now), *args, str(logdir))
    assert "Traceback" not in r.err, r.err
    live = {g["group"]: g for g in objs(r.out, "group")}
    offsets = {(o["group"], o["topic"], o["partition"]): o for o in objs(r.out, "offset")}
    deleted = {d["group"]: d["reason"] for d in objs(r.out, "deleted_group")}
    return r, live, offsets, deleted


# --- rules both coordinators share (fixed: they were wrong for both) ---------------------------------------------

@pytest.mark.parametrize("version", ["3.9", "4.0"])
def test_a_newer_subscription_is_read_as_its_v0_prefix(tmp_path, version):
    """GroupMetadata.computeSubscribedTopics (3.x) / ClassicGroup.computeSubscribedTopics (4.x) read version 0
    whatever the version says. Before: a version 9 subscription whose later fields are not v1-v3's failed to
    parse, the subscription was unknown and nothing of the Stable group expired."""
    v0 = cp.build_subscription({"topics": ["orders"], "userData": None}, 0)
    newer = struct.pack(">h", 9) + v0[2:] + b"\x07future-fields"
    w = offsets_dir(tmp_path, lambda p: (p.records([commit("g", "orders", 0, 5, T0), commit("g", "old", 0, 7, T0)]),
                                         p.records([classic("g", ["m-1"], T0 + 1, newer)])))
    r, live, offsets, _ = groups(w.logdir, "--kafka-version", version, now=T0 + 30 * DAY)
    assert r.code == 0, r.err
    assert live["g"]["subscribed_topics"] == ["orders"]
    assert not offsets[("g", "orders", 0)]["expired"] and offsets[("g", "orders", 0)]["expires_at"] is None
    assert offsets[("g", "old", 0)]["expired"]


@pytest.mark.parametrize("version", ["3.9", "4.0"])
def test_a_subscription_with_a_bad_length_fails_the_partitions_load(tmp_path, version):
    """A negative topic count is a RuntimeException of the generated reader, which computeSubscribedTopics does
    not catch (it catches SchemaException): the coordinator's load of the partition fails."""
    bad = struct.pack(">hi", 0, -1)
    w = offsets_dir(tmp_path, lambda p: (p.records([commit("g", "orders", 0, 5, T0)]),
                                         p.records([classic("g", ["m-1"], T0 + 1, bad)])))
    r, live, offsets, _ = groups(w.logdir, "--kafka-version", version)
    assert r.code == 1
    assert "a broker cannot load this partition" in r.out and "subscription topics serialized as null" in r.out
    # a cut-short subscription is a SchemaException: caught, the subscription unknown, nothing expires
    short = struct.pack(">hi", 0, 1) + b"\x00"
    w2 = offsets_dir(tmp_path / "b", lambda p: (p.records([commit("g", "old", 0, 5, T0)]),
                                                p.records([classic("g", ["m-1"], T0 + 1, short)])))
    r, live, offsets, _ = groups(w2.logdir, "--kafka-version", version, now=T0 + 30 * DAY)
    assert r.code == 0 and live["g"]["subscribed_topics"] is None and not offsets[("g", "old", 0)]["expired"]


@pytest.mark.parametrize("version", ["3.9", "4.0"])
def test_empty_groups_without_offsets_are_deleted_by_the_first_cleanup(tmp_path, version):
    """3.x cleanupGroupMetadata: is(Empty) && !hasOffsets -> Dead; 4.x cleanupExpiredOffsets (no offsets: true)
    then maybeDeleteGroup (isEmpty). Before: listed as live Empty groups."""
    def write(p):
        p.records([classic("empty", [], T0)])                       # metadata only, never an offset
        p.records([classic("stable", ["m-1"], T0)])                 # members: not empty, kept
        p.records([consumer_group("kip848", T0), member("kip848", "m", ["orders"], T0)])
        p.records([member("kip848", "m", [], T0 + 1, value=False)])  # its last member left
        p.records([consumer_group("kip848-live", T0), member("kip848-live", "m", ["orders"], T0)])
    w = offsets_dir(tmp_path, write)
    r, live, _o, deleted = groups(w.logdir, "--kafka-version", version)
    assert r.code == 0, r.err
    if version == "3.9":             # 3.x's GroupMetadataManager skips KIP-848 records: no such groups
        assert deleted == {"empty": "expiration"} and set(live) == {"stable"}
    else:
        assert deleted == {"empty": "expiration", "kip848": "expiration"}
        assert set(live) == {"stable", "kip848-live"}
    text = run_cli("consumer-groups", "--now", str(NOW), "--kafka-version", version, str(w.logdir)).out
    assert "Group empty: classic" in text and "deleted by the coordinator's first cleanup" in " ".join(text.split())


@pytest.mark.parametrize("version", ["3.9", "4.0"])
def test_an_expire_timestamp_below_minus_one_is_a_timestamp(tmp_path, version):
    """OffsetCommitValue v1: only -1 (OffsetCommitRequest.DEFAULT_TIMESTAMP) means none; -5 is a time long
    past (3.x readOffsetMessageValue, 4.x OffsetAndMetadata.fromRecord). Before: any negative meant none."""
    w = offsets_dir(tmp_path, lambda p: p.records([commit("s", "orders", 0, 3, T0, version=1, expireTimestamp=-5),
                                                   commit("s", "orders", 1, 4, T0, version=1, expireTimestamp=-1)]))
    _r, _live, offsets, _ = groups(w.logdir, "--kafka-version", version)
    assert offsets[("s", "orders", 0)]["expire_timestamp"] == -5 and offsets[("s", "orders", 0)]["expired"]
    assert offsets[("s", "orders", 1)]["expire_timestamp"] is None and not offsets[("s", "orders", 1)]["expired"]


@pytest.mark.parametrize("version", ["3.9", "4.0"])
@pytest.mark.parametrize("rtype,value_version", [(1, 5), (1, -1), (2, 7), (2, -3)])
def test_a_value_of_unknown_version_fails_the_partitions_load(tmp_path, version, rtype, value_version):
    """3.x readOffsetMessageValue/readGroupMessageValue: IllegalStateException; 4.4.0
    CoordinatorRecordSerde.deserialize: UnknownRecordVersionException. Either way the partition's load fails.
    Before: a negative version crashed with KeyError, a higher one loaded silently."""
    def write(p):
        p.records([commit("g", "orders", 0, 5, T0)])
        rec = commit("g", "orders", 1, 6, T0) if rtype == 1 else classic("g", [], T0)
        p.records([(rec[0], rec[1], struct.pack(">h", value_version) + rec[2][2:])])
    w = offsets_dir(tmp_path, write)
    for fmt in ("text", "csv", "json"):
        r = run_cli("consumer-groups", "--format", fmt, "--now", str(NOW), "--kafka-version", version, str(w.logdir))
        assert r.code == 1 and "Traceback" not in r.err, (fmt, r.err)
        assert f"version {value_version}" in " ".join((r.out + r.err).split())
    _r, live, _o, _d = groups(w.logdir, "--kafka-version", version)
    assert live["g"]["coordinator_loads"] is False


def test_a_legacy_offset_commit_key_takes_only_value_version_0_in_4x(tmp_path):
    """4.4.0's CoordinatorRecordType: type 0 is LegacyOffsetCommit, values 0-0; 3.x reads any OffsetCommitValue."""
    def write(p):
        key = gc.build_key(0, {"group": "old", "topic": "orders", "partition": 0})
        value = gc.build_value(0, {"offset": 9, "metadata": "", "commitTimestamp": T0, "expireTimestamp": -1}, 1)
        p.records([(T0, key, value)])
    w = offsets_dir(tmp_path, write)
    assert groups(w.logdir, "--kafka-version", "3.9")[0].code == 0
    assert groups(w.logdir, "--kafka-version", "4.0")[0].code == 1


# --- rules that differ: transactional offset commits -------------------------------------------------------------

def test_a_pending_transactional_commit_protects_the_offset_in_4x_only(tmp_path):
    """4.x cleanupExpiredOffsets skips an offset with a pending transactional commit; 3.x
    removeExpiredOffsets checks only in-flight plain commits (none after a load): it expires. Neither deletes
    a group with one pending."""
    w = offsets_dir(tmp_path, lambda p: (p.records([commit("t", "orders", 0, 5, T0)]),
                                         p.records([commit("t", "orders", 0, 8, T0 + 1)], pid=7, epoch=0, txn=True,
                                                   seq=0)))
    later = T0 + 30 * DAY
    _r, live4, off4, del4 = groups(w.logdir, "--kafka-version", "4.0", now=later)
    _r, live3, off3, del3 = groups(w.logdir, "--kafka-version", "3.9", now=later)
    assert not off4[("t", "orders", 0)]["expired"] and off3[("t", "orders", 0)]["expired"]
    assert "t" in live4 and "t" in live3 and not del3 and not del4
    assert live3["t"]["pending_transactional_offsets"] == 1


def test_a_transactional_tombstone(tmp_path):
    """4.x OffsetMetadataManager.replay: a tombstone removes the committed offset and every pending one; 3.x
    doLoadGroupsAndOffsets: a transactional tombstone removes only its producer's pending one, a plain one
    only the committed one. (No coordinator writes a transactional tombstone; the records say what a disk
    holds.)"""
    def write(p):
        p.records([commit("t", "orders", 0, 5, T0), commit("t", "orders", 1, 6, T0)])
        p.records([commit("t", "orders", 0, 8, T0 + 1), commit("t", "orders", 1, 9, T0 + 1)], pid=7, epoch=0,
                  txn=True, seq=0)
        p.records([tomb("t", "orders", 0, T0 + 2)], pid=7, epoch=0, txn=True, seq=2)
        p.records([tomb("t", "orders", 1, T0 + 3)])
        p.marker(ctl.COMMIT, 7, 0, T0 + 4)
    w = offsets_dir(tmp_path, write)
    _r, _l, off4, _d = groups(w.logdir, "--kafka-version", "4.0")
    _r, _l, off3, _d = groups(w.logdir, "--kafka-version", "3.9")
    # 4.x: both tombstones removed both the committed and the pending offsets: nothing left
    assert {k for k in off4 if k[0] == "t"} == set()
    # 3.x: orders-0 keeps 5 (only the pending 8 was removed); orders-1's plain tombstone removed 6, and the
    # pending 9 commits at the marker
    assert off3[("t", "orders", 0)]["offset"] == 5 and off3[("t", "orders", 1)]["offset"] == 9


def test_producer_id_not_transactional_flag_marks_a_pending_commit_in_4x(tmp_path):
    """4.x replays a commit as pending when its batch has a producer id (CoordinatorLoaderImpl passes
    batch.producerId), 3.x when the batch is transactional."""
    w = offsets_dir(tmp_path, lambda p: p.records([commit("i", "orders", 0, 5, T0)], pid=9, epoch=0, seq=0))
    _r, live4, off4, _d = groups(w.logdir, "--kafka-version", "4.0")
    _r, live3, off3, _d = groups(w.logdir, "--kafka-version", "3.9")
    assert ("i", "orders", 0) in off3 and ("i", "orders", 0) not in off4
    assert live4["i"]["pending_transactional_offsets"] == 1


def test_a_control_record_of_another_type_ends_pending_commits_in_3x_only(tmp_path):
    """3.x: any control batch ends its producer's pending commits (materialised only at COMMIT); 4.x acts on
    COMMIT and ABORT only."""
    def write(p):
        p.records([commit("c", "orders", 0, 5, T0)], pid=4, epoch=0, txn=True, seq=0)
        spec = RecordSpec(0, T0 + 1, ctl.build_control_key(9), b"\x00\x00\x00\x00\x00\x05")
        p.writer.append(build_batch(p.next, [spec], is_transactional=True, is_control=True, producer_id=4,
                                    producer_epoch=0))
        p.next += 1
    w = offsets_dir(tmp_path, write)
    _r, live4, _o, _d = groups(w.logdir, "--kafka-version", "4.0")
    _r, live3, _o, del3 = groups(w.logdir, "--kafka-version", "3.9")
    assert live4["c"]["pending_transactional_offsets"] == 1
    assert "c" not in live3 and "c" not in del3        # nothing left of it: no group


# --- which release wrote the directory ---------------------------------------------------------------------------

def _pending_case(tmp_path):
    return offsets_dir(tmp_path, lambda p: (p.records([commit("t", "orders", 0, 5, T0)]),
                                            p.records([commit("t", "orders", 0, 8, T0 + 1)], pid=7, epoch=0,
                                                      txn=True, seq=0)))


def _registration(logdir, node: int, max_level: int, finalized: int | None = None) -> None:
    recs = [build_metadata_record(0, {"brokerId": node, "incarnationId": "AAAAAAAAAAAAAAAAAAAAAQ", "brokerEpoch": 5,
                                      "endPoints": [], "rack": None, "fenced": False,
                                      "features": [{"name": "metadata.version", "minSupportedVersion": 7,
                                                    "maxSupportedVersion": max_level}]}, 1)]
    if finalized is not None:
        recs.append(build_metadata_record(12, {"name": "metadata.version", "featureLevel": finalized}))
    w = PartitionWriter(logdir / "__cluster_metadata-0", write_snapshots=False)
    for i, v in enumerate(recs):
        w.append(build_batch(i, [RecordSpec(0, T0 + i, None, v)], partition_leader_epoch=1))
    w.close(snapshot=False)


def _rules(logdir, *args):
    r = run_cli("consumer-groups", "--format", "json", "--now", str(T0 + 30 * DAY), *args, str(logdir))
    return objs(r.out, "summary")[0]["coordinator_rules"]["0"], " ".join(r.out.split())


def test_the_release_is_known_from_meta_properties_and_the_kraft_metadata(tmp_path):
    w = _pending_case(tmp_path)
    rules, text = _rules(w.logdir)
    assert rules == "4.x" and "not known" in text
    (w.logdir / "meta.properties").write_text("version=0\nbroker.id=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    rules, text = _rules(w.logdir)
    assert rules == "3.x" and "ZooKeeper-mode" in text
    assert _rules(w.logdir, "--kafka-version", "4.0")[0] == "4.x"
    vd._checkpoints(w.logdir, {("__consumer_offsets", 0): 2}, None)          # KRaft meta.properties again
    _registration(w.logdir, 1, 21)
    assert _rules(w.logdir)[0] == "3.x"
    (w.logdir / "__cluster_metadata-0").rename(tmp_path / "old-metadata")
    _registration(w.logdir, 1, 25)
    rules, text = _rules(w.logdir)
    assert rules == "4.x" and "metadata.version level up to 25" in text


def test_kip848_records_mean_the_new_coordinator(tmp_path):
    """3.x's GroupMetadataManager never writes KIP-848 records: a 3.x directory holding them ran the new
    coordinator, whose rules apply (unless --kafka-version says otherwise)."""
    def write(p):
        p.records([commit("t", "orders", 0, 5, T0)])
        p.records([commit("t", "orders", 0, 8, T0 + 1)], pid=7, epoch=0, txn=True, seq=0)
        p.records([consumer_group("k", T0), member("k", "m", ["orders"], T0)])
    w = offsets_dir(tmp_path, write)
    (w.logdir / "meta.properties").write_text("version=0\nbroker.id=1\n")
    rules, text = _rules(w.logdir)
    assert rules == "4.x" and "KIP-848 records" in text
    assert _rules(w.logdir, "--kafka-version", "3.9")[0] == "3.x"


def test_a_bad_kafka_version_is_a_usage_error(tmp_path):
    w = _pending_case(tmp_path)
    for command in ("consumer-groups", "transactions"):
        r = run_cli(command, "--kafka-version", "four", str(w.logdir))
        assert r.code == 2 and "--kafka-version" in r.err


# --- the transaction coordinator ----------------------------------------------------------------------------------

def _txn_dir(tmp_path, bad_version: int):
    logdir = tmp_path / "logdir"
    logdir.mkdir(parents=True)
    ts = vd.Partition(logdir, "__transaction_state", 0)

    def state(tid, pid, status, at):
        value = {"producerId": pid, "producerEpoch": 0, "transactionTimeoutMs": 60000, "transactionStatus": status,
                 "transactionPartitions": [], "transactionLastUpdateTimestampMs": at,
                 "transactionStartTimestampMs": at}
        return (at, tl.build_key(tid), tl.build_value(value, 1))
    ts.records([state("before", 1, 4, T0)])
    bad = state("bad", 2, 4, T0 + 1)
    ts.records([(bad[0], bad[1], struct.pack(">h", bad_version) + bad[2][2:])])
    ts.records([state("after", 3, 4, T0 + 2)])
    ts.close()
    vd._checkpoints(logdir, {("__transaction_state", 0): ts.next}, None)
    return logdir


@pytest.mark.parametrize("bad_version", [-1, 2])
def test_a_transaction_log_value_of_unknown_version(tmp_path, bad_version):
    """3.x readTxnRecordValue: IllegalStateException, caught by loadTransactionMetadata: the load stops there,
    what came before is kept. 4.4.0 TransactionLog.read: UnknownValueVersion, skipped with a warning. Before:
    KeyError, with and without --list."""
    logdir = _txn_dir(tmp_path, bad_version)
    for version, ids, code in (("3.9", {"before"}, 1), ("4.0", {"before", "after"}, 0)):
        for extra in ((), ("--list",)):
            r = run_cli("transactions", "--format", "json", "--list", *extra, "--kafka-version", version, str(logdir))
            assert "Traceback" not in r.err and r.code == code, (version, r.err, r.out)
            assert {o["transactional_id"] for o in objs(r.out, "transactional_id")} == ids
        text = run_cli("transactions", "--list", "--kafka-version", version, str(logdir))
        assert text.code == code and "Traceback" not in text.err
        assert f"version {bad_version}" in " ".join(text.out.split())
