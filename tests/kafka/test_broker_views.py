"""Broker test of the state views (issue 27): what a running broker answers about its partitions, groups and
transactions, then what kafkalog reads from the same log directory after a clean stop.

* ``describe``: size = ``kafka-log-dirs.sh --describe`` (DescribeLogDirs); log start, high watermark and last
  stable offset = ListOffsets earliest, latest (read_uncommitted) and latest (read_committed); the open
  transaction's first offset and the producers = ``kafka-transactions.sh describe-producers``.
* ``consumer-groups``: the committed offsets = ListConsumerGroupOffsets (what ``kafka-consumer-groups.sh
  --describe`` shows); its CSV, fed to the same release's ``kafka-consumer-groups.sh --reset-offsets
  --from-file --execute`` for another group on the restarted broker, gives that group the same offsets.
* ``transactions --list``: the transactional ids and states = ``kafka-transactions.sh list``; the open
  transaction is open, not hanging (its coordinator knows it).
* The group coordinator's first cleanup (issue 35, item 3): a broker with ``offsets.retention.minutes=2``
  keeps groups of every kind (simple, Stable classic with a subscription, classic left with and without
  offsets, deleted, transactional offset commits pending, KIP-848 groups on 4.x) past their retention; its
  log directory is copied after a clean stop, the broker is restarted with a 2 s cleanup interval, and what
  ListGroups and ListConsumerGroupOffsets then answer is what ``consumer-groups --now <that moment>`` gives
  for the copy, group for group (no group left out, none extra), by the rules of the release it detects.

Every kafkalog run's exit status is checked; describe's sizes cover every partition DescribeLogDirs lists and
its producers are compared field by field with ``describe-producers``.
"""
from __future__ import annotations

import json
import re
import shutil
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

import clients
from broker import Broker, run_tool
from conftest import run_cli

TOPIC, TXN = "views", "txnviews"
QUOTED, LINE_BREAK = 'q,"uoted group', "line\nbreak"


def _tool(version: str, name: str, args: list[str]):
    import zipfile
    import jars
    lib = jars.jars(version)
    java_class = f"org/apache/kafka/tools/{name.replace('.', '/')}.class"
    main = f"org.apache.kafka.tools.{name}"
    jar = lib / f"kafka-tools-{version}.jar"
    if not (jar.is_file() and java_class in zipfile.ZipFile(jar).namelist()):
        main = f"kafka.admin.{name.rsplit('.', 1)[-1]}"
    res = run_tool(version, main, args, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def _table(text: str) -> list[dict]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = re.split(r"\s+", lines[0].strip())
    return [dict(zip(head, re.split(r"\s+", ln.strip()))) for ln in lines[1:]]


@pytest.fixture(scope="module")
def views(kafka_version, kafka_jars, tmp_path_factory):
    b = Broker(kafka_version, tmp_path_factory.mktemp(f"views-{kafka_version}-"))
    answers: dict = {}
    try:
        b.start()
        clients.create_topic(b.bootstrap, TOPIC, partitions=2)
        clients.create_topic(b.bootstrap, TXN, partitions=1)
        p = clients.producer(b.bootstrap)
        clients.deliver(p, TOPIC, [(f"k{i}".encode(), b"v" * (i % 50), (), None) for i in range(300)], 0)
        clients.deliver(p, TOPIC, [(f"k{i}".encode(), b"w", (), None) for i in range(120)], 1)
        clients.commit_offsets(b.bootstrap, "plain", TOPIC, {0: 120, 1: 40})
        clients.commit_offsets(b.bootstrap, "member", TOPIC, {0: 7}, subscribe=True)
        clients.commit_offsets(b.bootstrap, QUOTED, TOPIC, {0: 11, 1: 12})     # the CSV quotes it
        clients.commit_offsets(b.bootstrap, LINE_BREAK, TOPIC, {1: 13})       # the CSV cannot hold it
        tp_conf = {"bootstrap.servers": b.bootstrap, "transactional.id": "views-app", "acks": "all",
                   "log_level": 0}
        tx = Producer(tp_conf)
        tx.init_transactions(30)
        tx.begin_transaction()
        for i in range(10):
            tx.produce(TXN, key=b"c", value=str(i).encode(), partition=0)
        tx.commit_transaction(30)
        tx.begin_transaction()
        for i in range(5):
            tx.produce(TXN, key=b"o", value=str(i).encode(), partition=0)
        tx.flush(30)                      # written, left open: the last stable offset stays at its start
        admin = clients.admin(b.bootstrap)
        tps = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1), TopicPartition(TXN, 0)]
        for name, spec, iso in (("earliest", OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED),
                                ("latest", OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED),
                                ("committed", OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)):
            res = admin.list_offsets({tp: spec for tp in tps}, isolation_level=iso)
            answers[name] = {(tp.topic, tp.partition): f.result(60).offset for tp, f in res.items()}
        answers["groups"] = _groups_and_offsets(admin)[1]
        dirs = json.loads(next(ln for ln in _tool(kafka_version, "LogDirsCommand",
                                                     ["--bootstrap-server", b.bootstrap, "--describe"]).splitlines()
                               if ln.startswith("{")))
        answers["sizes"] = {(lambda t: (t[0], int(t[1])))(p["partition"].rsplit("-", 1)): p["size"]
                            for br in dirs["brokers"] for ld in br["logDirs"] for p in ld["partitions"]}
        answers["producers"] = _table(_tool(kafka_version, "TransactionsCommand",
                                            ["--bootstrap-server", b.bootstrap, "describe-producers",
                                             "--topic", TXN, "--partition", "0"]))
        answers["txn_list"] = _table(_tool(kafka_version, "TransactionsCommand",
                                           ["--bootstrap-server", b.bootstrap, "list"]))
        b.stop()
        del tx                             # the broker is stopped: the transaction stays open in the log
        answers["now"] = int(time.time() * 1000)
        yield b, answers
    finally:
        b.close()


def _groups_and_offsets(admin) -> tuple[dict, dict]:
    """ListGroups ({group: state}) and ListConsumerGroupOffsets of each ({group: {(topic, partition): offset}})."""
    listed = {g.group_id: g.state.name.capitalize() for g in admin.list_consumer_groups().result(60).valid}
    offsets = {}
    for g in sorted(listed):
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g]
        offsets[g] = {(tp.topic, tp.partition): tp.offset for tp in fut.result(60).topic_partitions}
    return listed, offsets


def test_describe_matches_list_offsets_and_log_dirs(views):
    b, a = views
    r = run_cli("describe", "--format", "json", "--now", str(a["now"]), str(b.log_dir))
    assert r.code == 0, r.out + r.err
    parts = {(o["topic"], o["partition"]): o for o in map(json.loads, r.out.splitlines()) if o["type"] == "partition"}
    for tp in a["latest"]:
        d = parts[tp]
        assert d["log_start_offset"] == a["earliest"][tp], tp
        assert d["high_watermark"] == a["latest"][tp], tp
        assert d["last_stable_offset"] == a["committed"][tp], tp
    # every partition DescribeLogDirs lists (the metadata log's size is the broker's, it grows while it runs)
    listed = {tp for tp in a["sizes"] if not tp[0].startswith("__cluster")}
    assert listed <= set(parts), listed - set(parts)
    for tp in listed:
        assert parts[tp]["size"] == a["sizes"][tp], tp
    txn = parts[(TXN, 0)]
    open_starts = {int(p["CurrentTransactionStartOffset"]) for p in a["producers"]
                   if p["CurrentTransactionStartOffset"] not in ("None", "-1")}
    assert {t["first_offset"] for t in txn["open_transactions"]} == open_starts
    described = {(int(p["ProducerId"]), int(p["ProducerEpoch"]), int(p["LastSequence"]), int(p["LastTimestamp"]),
                  int(p["LatestCoordinatorEpoch"]),
                  -1 if p["CurrentTransactionStartOffset"] in ("None", "-1") else int(p["CurrentTransactionStartOffset"]))
                 for p in a["producers"]}
    ours = {(e["producer_id"], e["producer_epoch"], e["last_sequence"], e["last_timestamp"], e["coordinator_epoch"],
             e["current_transaction_start_offset"]) for e in txn["producer_states"]}
    assert ours == described and txn["producers"] == len(described)


def test_consumer_groups_match_the_coordinator(views):
    b, a = views
    r = run_cli("consumer-groups", "--format", "json", "--now", str(a["now"]), str(b.log_dir))
    assert r.code == 0, r.out + r.err
    got: dict = {o["group"]: {} for o in map(json.loads, r.out.splitlines()) if o["type"] == "group"}
    for o in map(json.loads, r.out.splitlines()):
        if o["type"] == "offset":
            got.setdefault(o["group"], {})[(o["topic"], o["partition"])] = o["offset"]
    assert got == a["groups"]                      # every group the broker lists, and no other


def test_transactions_match_kafka_transactions(views):
    b, a = views
    r = run_cli("transactions", "--format", "json", "--list", "--now", str(a["now"]), str(b.log_dir))
    objs = [json.loads(x) for x in r.out.splitlines()]
    ids = {o["transactional_id"]: o for o in objs if o["type"] == "transactional_id"}
    listed = {row["TransactionalId"]: row for row in a["txn_list"]}
    assert set(ids) == set(listed)
    for tid, row in listed.items():
        assert ids[tid]["state"] == row["TransactionState"]
        assert ids[tid]["producer_id"] == int(row["ProducerId"])
    found = [o for o in objs if o["type"] == "open_transaction"]
    assert [o["status"] for o in found] == ["open"] and found[0]["transactional_id"] == "views-app"
    assert r.code == 0, r.out + r.err


def test_reset_csv_is_accepted_by_kafka_consumer_groups(views, kafka_version, tmp_path):
    b, a = views
    r = run_cli("consumer-groups", "--format", "csv", "--group", "plain", "--now", str(a["now"]), str(b.log_dir))
    assert r.code == 0
    csv = tmp_path / "plain.csv"
    csv.write_text(r.out)
    b.start()
    try:
        main = "consumer.group.ConsumerGroupCommand"
        _tool(kafka_version, main, ["--bootstrap-server", b.bootstrap, "--group", "restored", "--reset-offsets",
                                    "--from-file", str(csv), "--execute"])
        admin = clients.admin(b.bootstrap)
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("restored")])["restored"]
        restored = {(tp.topic, tp.partition): tp.offset for tp in fut.result(60).topic_partitions}
        assert restored == a["groups"]["plain"]
    finally:
        b.stop()


def test_reset_csv_of_every_group_restores_them_and_leaves_out_a_line_break(views, kafka_version, tmp_path):
    """Issue 35, item 4: the CSV of every group (group,topic,partition,offset) read by the same release's
    kafka-consumer-groups.sh --reset-offsets --from-file gives each group back its offsets, a group id with a
    comma and quotes included; a group id with a line break is left out (a note, exit 1), as the tool would
    split its row and read something else."""
    b, a = views
    r = run_cli("consumer-groups", "--format", "csv", "--now", str(a["now"]), str(b.log_dir))
    assert r.code == 1 and "not written to the CSV file" in r.err and "line\\x0abreak" in r.err, r.err
    assert "line\nbreak" not in r.out and "break," not in r.out
    csv = tmp_path / "all.csv"
    csv.write_text(r.out)
    restored = sorted(g for g in a["groups"] if g != LINE_BREAK)
    b.start()
    try:
        admin = clients.admin(b.bootstrap)
        for g in restored:                       # away from what the file holds, so the reset has to work
            zero = [TopicPartition(t, p, 0) for t, p in a["groups"][g]]
            admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, zero)])[g].result(60)
        main = "consumer.group.ConsumerGroupCommand"
        args = ["--bootstrap-server", b.bootstrap]
        for g in restored:
            args += ["--group", g]
        _tool(kafka_version, main, args + ["--reset-offsets", "--from-file", str(csv), "--execute"])
        _listed, offsets = _groups_and_offsets(admin)
        assert {g: offsets[g] for g in restored} == {g: a["groups"][g] for g in restored}
        assert offsets[LINE_BREAK] == a["groups"][LINE_BREAK]         # untouched
    finally:
        b.stop()


# --- the group coordinator's first cleanup (issue 35, item 3) ----------------------------------------------------

RETENTION_MIN = 2
OTHER = "viewsother"


def _member(bootstrap: str, group: str, topic: str, protocol: str = "classic") -> Consumer:
    """A consumer in ``group`` subscribed to ``topic``, joined (it has its assignment) and left running."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "log_level": 0}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"session.timeout.ms": 240000, "max.poll.interval.ms": 900000, "heartbeat.interval.ms": 3000})
    c = Consumer(conf)
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.2)
    assert c.assignment(), f"{group} got no assignment"
    return c


def _commit(c: Consumer, topic: str, offsets: dict) -> None:
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


@pytest.fixture(scope="module")
def cleanup(kafka_version, kafka_jars, tmp_path_factory):
    """Groups of every kind past their retention, the log directory copied after a clean stop, then the broker
    restarted with a 2 s cleanup interval: (copy, what ListGroups and ListConsumerGroupOffsets answer, when)."""
    home = tmp_path_factory.mktemp(f"cleanup-{kafka_version}-")
    b = Broker(kafka_version, home, config={"offsets.retention.minutes": RETENTION_MIN,
                                            "offsets.retention.check.interval.ms": 3_600_000})
    modern = int(kafka_version.split(".")[0]) >= 4
    keep = []                             # clients that stay members (or keep a transaction open) to the end
    try:
        b.start()
        clients.create_topic(b.bootstrap, TOPIC, partitions=2)
        clients.create_topic(b.bootstrap, OTHER, partitions=1)
        p = clients.producer(b.bootstrap)
        clients.deliver(p, TOPIC, [(b"k", b"v", (), None)] * 30, 0)
        clients.deliver(p, TOPIC, [(b"k", b"v", (), None)] * 30, 1)
        clients.deliver(p, OTHER, [(b"k", b"v", (), None)] * 10, 0)
        # phase 1: everything here is past its retention at the cleanup
        clients.commit_offsets(b.bootstrap, "old-simple", TOPIC, {0: 10})
        stable = _member(b.bootstrap, "stable", TOPIC)
        _commit(stable, TOPIC, {0: 5, 1: 6})
        _commit(stable, OTHER, {0: 3})                   # not subscribed: expires; TOPIC's never do
        keep.append(stable)
        _member(b.bootstrap, "left-no-offsets", TOPIC).close()       # Empty, no offsets: deleted
        left = _member(b.bootstrap, "left-with-offsets", TOPIC)
        _commit(left, TOPIC, {0: 7})
        left.close()                                     # Empty since now: its offsets expire, then the group
        clients.commit_offsets(b.bootstrap, "deleted", TOPIC, {0: 1})            # generation 0: no group record
        gone = _member(b.bootstrap, "deleted-member", TOPIC)
        _commit(gone, TOPIC, {1: 1})
        gone.close()
        admin = clients.admin(b.bootstrap)
        for fut in admin.delete_consumer_groups(["deleted", "deleted-member"], request_timeout=30).values():
            fut.result(60)
        clients.commit_offsets(b.bootstrap, "txg", TOPIC, {0: 2})
        tx = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "cleanup-app", "acks": "all",
                       "transaction.timeout.ms": 900000, "log_level": 0})
        tx.init_transactions(30)
        tx.begin_transaction()
        tx.produce(TOPIC, key=b"t", value=b"t", partition=1)
        meta = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "txg", "log_level": 0})
        tx.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 9)], meta.consumer_group_metadata(), 30)
        tx.flush(30)                                     # the offset commit pending: no marker
        keep += [tx, meta]
        if modern:
            _member(b.bootstrap, "kip848-left", TOPIC, "consumer").close()      # no member, no offsets
            kip = _member(b.bootstrap, "kip848-stable", TOPIC, "consumer")
            _commit(kip, TOPIC, {1: 4})
            _commit(kip, OTHER, {0: 2})
            keep.append(kip)
        time.sleep(RETENTION_MIN * 60 + 5)
        # phase 2: within its retention at the cleanup
        clients.commit_offsets(b.bootstrap, "fresh-simple", TOPIC, {1: 20})
        b.stop()
        copy = home / "copy"
        shutil.copytree(b.log_dir, copy)
        b.config["offsets.retention.check.interval.ms"] = 2000
        b.start()
        time.sleep(8)                                    # loaded, then cleaned at least twice
        now = int(time.time() * 1000)
        listed, offsets = _groups_and_offsets(clients.admin(b.bootstrap))
        yield copy, home / "server.properties", listed, offsets, now, modern
    finally:
        b.close()
        del keep


def test_consumer_groups_after_the_coordinators_first_cleanup(cleanup, kafka_version):
    copy, props, listed, offsets, now, modern = cleanup
    r = run_cli("consumer-groups", "--format", "json", "--now", str(now), "--server-properties", str(props), str(copy))
    assert r.code == 0, r.out + r.err
    objs = [json.loads(x) for x in r.out.splitlines()]
    groups = {o["group"]: o for o in objs if o["type"] == "group"}
    got = {g: {} for g in groups}
    for o in objs:
        if o["type"] == "offset":
            got[o["group"]][(o["topic"], o["partition"])] = o["offset"]
    summary = next(o for o in objs if o["type"] == "summary")
    assert summary["retention_ms"] == RETENTION_MIN * 60_000, summary
    # the release is known from the copy's KRaft metadata, and its rules applied
    assert set(summary["coordinator_rules"].values()) == {"4.x" if modern else "3.x"}, summary
    assert got == offsets, (got, offsets)                         # every group the broker still has, no other
    for g, state in listed.items():
        if groups[g]["kind"] != "consumer":
            assert groups[g]["state"] == state, (g, groups[g]["state"], state)
    # what the broker's cleanup did, named (so a wrong rule on both sides cannot pass unseen)
    deleted = {o["group"]: o["reason"] for o in objs if o["type"] == "deleted_group"}
    assert {"left-no-offsets", "left-with-offsets", "old-simple"} <= {g for g, why in deleted.items()
                                                                       if why == "expiration"}
    # DeleteGroups: offset tombstones, and a group tombstone for a group that had a generation (3.x), for every
    # group (4.x)
    assert "deleted" not in listed and "deleted" not in got
    assert deleted.get("deleted") == ("tombstone" if modern else None)
    assert deleted.get("deleted-member") == "tombstone" and "deleted-member" not in listed
    assert offsets["stable"] == {(TOPIC, 0): 5, (TOPIC, 1): 6}    # the subscribed topic's offsets only
    assert offsets["fresh-simple"] == {(TOPIC, 1): 20}
    # the pending transactional commit: 4.x keeps the offset under it, 3.x expires it; both keep the group
    assert offsets["txg"] == ({(TOPIC, 0): 2} if modern else {})
    if modern:
        assert "kip848-left" not in listed and deleted.get("kip848-left") == "expiration"
        assert offsets["kip848-stable"] == {(TOPIC, 1): 4}
