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
"""
from __future__ import annotations

import json
import re
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

import clients
from broker import Broker, run_tool
from conftest import run_cli

TOPIC, TXN = "views", "txnviews"


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
        groups = {}
        for g in ("plain", "member"):
            fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g]
            groups[g] = {(tp.topic, tp.partition): tp.offset for tp in fut.result(60).topic_partitions}
        answers["groups"] = groups
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


def test_describe_matches_list_offsets_and_log_dirs(views):
    b, a = views
    r = run_cli("describe", "--format", "json", "--now", str(a["now"]), str(b.log_dir))
    parts = {(o["topic"], o["partition"]): o for o in map(json.loads, r.out.splitlines()) if o["type"] == "partition"}
    for tp in a["latest"]:
        d = parts[tp]
        assert d["log_start_offset"] == a["earliest"][tp], tp
        assert d["high_watermark"] == a["latest"][tp], tp
        assert d["last_stable_offset"] == a["committed"][tp], tp
    for tp, size in a["sizes"].items():
        if tp in parts and not tp[0].startswith("__cluster"):
            assert parts[tp]["size"] == size, tp
    txn = parts[(TXN, 0)]
    open_starts = {int(p["CurrentTransactionStartOffset"]) for p in a["producers"]
                   if p["CurrentTransactionStartOffset"] not in ("None", "-1")}
    assert {t["first_offset"] for t in txn["open_transactions"]} == open_starts
    assert txn["producers"] == len(a["producers"])


def test_consumer_groups_match_the_coordinator(views):
    b, a = views
    r = run_cli("consumer-groups", "--format", "json", "--now", str(a["now"]), str(b.log_dir))
    got: dict = {}
    for o in map(json.loads, r.out.splitlines()):
        if o["type"] == "offset":
            got.setdefault(o["group"], {})[(o["topic"], o["partition"])] = o["offset"]
    assert {g: got.get(g, {}) for g in a["groups"]} == a["groups"]


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
    assert r.code == 0


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
