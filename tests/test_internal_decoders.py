"""dump-log's record decoders, tried as a user would: Kafka's internal topics (docs/kafka-on-disk.md §6.3 for the
output, §10.2-10.4 and §1.4 for the layouts), schema-registry framing, plug-ins by ``module:function`` and
by entry point.

The real corpus: every record of every ``__consumer_offsets`` and ``__cluster_metadata`` partition and
every KRaft ``.checkpoint`` decodes without an error or warning, and concrete values read by hand from
those files (topic names and ids, partitions, broker and controller registrations with their endpoints,
configs, feature levels, offset commits, group members) come out of the decoders.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_formats import control as ctl
from kafkalog_formats import group_coordinator as gc
from kafkalog_formats import transaction_log as tl
from kafkalog_formats.metadata_records import build_metadata_record
from kafkalog_formats.record_batch import Record, RecordSpec, build_batch

from kafkalog_cli.render.kafka_text import json_text
from kafkalog_cli.render.record_decoders import BUILTIN, Decoded, apply
from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import CORPUS, FIXTURES, needs_corpus, run_cli

LOGDIR = FIXTURES / "logdir"
ROOT = Path(__file__).resolve().parents[1]
T0 = 1700000000000


def _json(*args) -> tuple[int, list[dict], str]:
    r = run_cli("dump-log", "--format", "json", *args)
    return r.code, [json.loads(line) for line in r.out.splitlines()], r.err


def _records(objs: list[dict]) -> list[dict]:
    return [o for o in objs if o["type"] == "record" and "control" not in o]


def _partition(tmp_path: Path, name: str, records: list[tuple]) -> Path:
    """A partition directory written by kafkalog's writer; records are (key, value) bytes."""
    d = tmp_path / name
    w = PartitionWriter(d)
    w.append(build_batch(0, [RecordSpec(i, T0 + i, k, v) for i, (k, v) in enumerate(records)]))
    w.close()
    return d


def _internal_files(root: Path) -> list[Path]:
    return sorted(f for f in root.rglob("*") if f.is_file() and f.suffix in (".log", ".checkpoint")
                  and (f.parent.name.startswith(("__consumer_offsets-", "__cluster_metadata-",
                                                 "__transaction_state-"))
                       or f.name == "bootstrap.checkpoint")
                  and "offset-checkpoint" not in f.name)


# --- the real corpus ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus_decoded() -> dict[str, list[dict]]:
    """Records of every internal-topic file of the corpus, dumped with --decoder auto, by file."""
    files = _internal_files(CORPUS)
    code, objs, err = _json("--decoder", "auto", *map(str, files))
    assert code == 0 and [o for o in objs if o["type"] == "problem"] == [], err
    by_file: dict[str, list[dict]] = {}
    for o in _records(objs):
        by_file.setdefault(str(Path(o["file"]).relative_to(CORPUS)), []).append(o)
    return by_file


@needs_corpus
def test_every_internal_record_of_the_corpus_decodes_cleanly(corpus_decoded):
    files = _internal_files(CORPUS)
    assert len(files) >= 30 and sum(f.suffix == ".checkpoint" for f in files) == 11
    records = [o for recs in corpus_decoded.values() for o in recs]
    assert len(records) > 42000
    for o in records:
        assert "decode_error" not in o and "decode_warning" not in o, o
        assert o["decoder"] in ("offsets", "cluster-metadata"), o["file"]
        assert isinstance(o["value"], dict) or (o["value"] is None and o["value_size"] == -1), o
        if o["decoder"] == "offsets":
            assert o["key"]["type"] in {"0", "1", "2"} and isinstance(o["key"]["data"], dict)
            assert o["value"] is None or set(o["value"]) == {"version", "data"}
        else:
            assert o["key"] is None and set(o["value"]) == {"type", "version", "data"}


@needs_corpus
def test_every_internal_record_of_the_corpus_decodes_in_text_with_kafkas_flags():
    """The same files through Kafka's own options, as Kafka's text: no error line, exit 0."""
    files = _internal_files(CORPUS)
    offsets = [str(f) for f in files if "__consumer_offsets" in f.parent.name]
    metadata = [str(f) for f in files if f not in offsets and str(f) not in offsets]
    for flag, group in (("--offsets-decoder", offsets), ("--cluster-metadata-decoder", metadata)):
        r = run_cli("dump-log", flag, *group)
        assert r.code == 0 and "kafkalog:" not in r.err and "skipping" not in r.out
        lines = [ln for ln in r.out.splitlines() if ln.startswith("| offset: ") and "payload: " in ln]
        assert lines and all("payload: {" in ln or "payload: <DELETE>" in ln for ln in lines)


def _value(recs: list[dict], offset: int) -> dict:
    return next(o for o in recs if o["offset"] == offset)


@needs_corpus
def test_kraft_log_registrations_topics_configs_and_features(corpus_decoded):
    """Niloufar1171__LDI-POC: bytes of offsets 6 and 416 checked by hand against Kafka's schemas."""
    recs = corpus_decoded["Niloufar1171__LDI-POC/__cluster_metadata-0/00000000000000000000.log"]
    broker = _value(recs, 6)["value"]
    assert broker == {"type": "REGISTER_BROKER_RECORD", "version": 3, "data": {
        "brokerId": 1, "isMigratingZkBroker": False, "incarnationId": "ta5R4VtUQvagltuIzSD9hg", "brokerEpoch": 6,
        "endPoints": [{"name": "PLAINTEXT", "host": "kafka", "port": 9092, "securityProtocol": 0}],
        "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 19}],
        "rack": None, "fenced": True, "inControlledShutdown": False, "logDirs": ["XHhkr4tkSsD900pOQ8pPfg"]}}
    controller = _value(recs, 5)["value"]["data"]
    assert (controller["controllerId"], controller["endPoints"]) == (
        1, [{"name": "CONTROLLER", "host": "e06a9e9dd037", "port": 9093, "securityProtocol": 0}])
    assert _value(recs, 416)["value"]["data"] == {"name": "__consumer_offsets", "topicId": "gSnfpEbtQfSDpxM2lhEn9A"}
    assert _value(recs, 417)["value"]["data"] == {"resourceType": 2, "resourceName": "__consumer_offsets",
                                                  "name": "compression.type", "value": "producer"}
    assert _value(recs, 2)["value"]["data"] == {"name": "metadata.version", "featureLevel": 19}
    assert _value(recs, 9)["value"] == {"type": "BROKER_REGISTRATION_CHANGE_RECORD", "version": 0,
                                        "data": {"brokerId": 1, "brokerEpoch": 8, "fenced": -1}}
    partitions = [o["value"]["data"] for o in recs if o["value"]["type"] == "PARTITION_RECORD"
                  and o["value"]["data"]["topicId"] == "gSnfpEbtQfSDpxM2lhEn9A"]
    assert sorted(p["partitionId"] for p in partitions) == list(range(50))
    assert all(p["replicas"] == [1] and p["leader"] == 1 for p in partitions)


@needs_corpus
def test_kraft_snapshots_hold_the_cluster_state(corpus_decoded):
    snap = corpus_decoded["Yashasvi960__kafka-service/kafka-data/__cluster_metadata-0/"
                          "00000000000000010830-0000000003.checkpoint"]
    types = [o["value"]["type"] for o in snap]
    features = {o["value"]["data"]["name"]: o["value"]["data"]["featureLevel"] for o in snap
                if o["value"]["type"] == "FEATURE_LEVEL_RECORD"}
    assert features == {"metadata.version": 27, "group.version": 1, "eligible.leader.replicas.version": 1,
                        "transaction.version": 2}
    topics = {o["value"]["data"]["name"] for o in snap if o["value"]["type"] == "TOPIC_RECORD"}
    assert {"telemetry", "vehicle.telemetry", "vehicle.avg.speed", "__consumer_offsets",
            "my-kafka-streams-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"} <= topics
    broker = next(o["value"]["data"] for o in snap if o["value"]["type"] == "REGISTER_BROKER_RECORD")
    assert [(e["name"], e["host"], e["port"]) for e in broker["endPoints"]] == [
        ("PLAINTEXT_HOST", "localhost", 9092), ("PLAINTEXT", "kafka", 29092)]
    configs = {(o["value"]["data"]["resourceName"], o["value"]["data"]["name"]): o["value"]["data"]["value"]
               for o in snap if o["value"]["type"] == "CONFIG_RECORD"}
    assert configs[("", "min.insync.replicas")] == "1"
    assert configs[("__consumer_offsets", "segment.bytes")] == "104857600"
    assert "SNAPSHOT_HEADER" not in types                       # control records carry no key/value
    boot = corpus_decoded["gozieokafor__data-store/kafka-data/bootstrap.checkpoint"]
    assert [o["value"]["data"] for o in boot] == [{"name": "metadata.version", "featureLevel": 21}]
    g = corpus_decoded["gozieokafor__data-store/kafka-data/__cluster_metadata-0/"
                       "00000000000000016435-0000000008.checkpoint"]
    assert {"input-topic": "LpjaivfUSGCieX6BI82CbQ", "__consumer_offsets": "ocfMwdypTgqhKmyqgnKkfg"} == {
        o["value"]["data"]["name"]: o["value"]["data"]["topicId"] for o in g
        if o["value"]["type"] == "TOPIC_RECORD"}


@needs_corpus
def test_offset_commits_and_groups_of_the_corpus(corpus_decoded):
    w = corpus_decoded["William0423__kafka/kafka-logs/__consumer_offsets-28/00000000000000000000.log"]
    assert _value(w, 1)["key"] == {"type": "1", "data": {"group": "debug-consumer-group", "topic": "debug_topic",
                                                         "partition": 0}}
    assert _value(w, 1)["value"] == {"version": "2", "data": {"offset": 20, "metadata": "",
                                                              "commitTimestamp": 1534299390704}}
    group = _value(w, 0)["value"]
    assert group["version"] == "2" and group["data"]["protocol"] == "range"
    member = group["data"]["members"][0]
    assert member["memberId"] == "consumer-1-61400dcb-1b93-4b4e-8891-5ae75e419305"
    assert (member["clientId"], member["clientHost"], member["sessionTimeout"]) == ("consumer-1", "/127.0.0.1", 10000)
    assert member["subscription"] == {"topics": ["debug_topic"], "userData": ""}
    assert member["assignment"] == {"assignedPartitions": [{"topic": "debug_topic", "partitions": [0]}],
                                    "userData": ""}
    d = corpus_decoded["DonaldY__kafka-2.7.1/kafka-logs/__consumer_offsets-39/00000000000000000018.log"]
    tomb = _value(d, 18)
    assert tomb["value"] is None and tomb["key"]["data"] == {"group": "console-consumer-65070",
                                                             "topic": "test_topic_0603", "partition": 0}
    y = corpus_decoded["Yashasvi960__kafka-service/kafka-data/__consumer_offsets-29/00000000000000000000.log"]
    commit = _value(y, 2)
    assert commit["key"]["data"] == {"group": "telemetry-streams", "topic": "telemetry", "partition": 0}
    assert commit["value"] == {"version": "4", "data": {"offset": 11376, "leaderEpoch": -1,
                                                        "metadata": "AgAAAZx309FV", "commitTimestamp": 1771624763435}}


@needs_corpus
def test_kafka_text_lines_for_the_corpus():
    """Kafka's text form, byte for byte (§6.3): coordinator envelopes with versions as JSON strings,
    metadata envelopes with a number, ``<DELETE>``, LeaderChange decoded (4.1+ / Java tool)."""
    d = CORPUS / "DonaldY__kafka-2.7.1" / "kafka-logs" / "__consumer_offsets-39"
    r = run_cli("dump-log", "--offsets-decoder", str(d / "00000000000000000018.log"))
    assert r.out.splitlines()[-2:] == [
        '| offset: 18 CreateTime: 1686446865837 keySize: 47 valueSize: -1 sequence: -1 headerKeys: [] key: '
        '{"type":"1","data":{"group":"console-consumer-65070","topic":"test_topic_0603","partition":0}} '
        'payload: <DELETE>',
        '| offset: 19 CreateTime: 1686446865837 keySize: 26 valueSize: -1 sequence: -1 headerKeys: [] key: '
        '{"type":"2","data":{"group":"console-consumer-65070"}} payload: <DELETE>']
    r = run_cli("dump-log", "--offsets-decoder", "--skip-record-metadata", str(d / "00000000000000000000.log"))
    assert '| key: {"type":"1","data":{"group":"console-consumer-65070","topic":"test_topic_0603",' \
           '"partition":0}} payload: {"version":"3","data":{"offset":9,"leaderEpoch":-1,"metadata":"",' \
           '"commitTimestamp":1685814551579}}' in r.out.splitlines()
    m = CORPUS / "Niloufar1171__LDI-POC" / "__cluster_metadata-0" / "00000000000000000000.log"
    lines = run_cli("dump-log", "--cluster-metadata-decoder", str(m)).out.splitlines()
    assert lines[3] == ('| offset: 0 CreateTime: 1769791434349 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] '
                        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
                        '"grantingVoters":[{"voterId":1}]}')
    assert ('| offset: 416 CreateTime: 1769791638591 keySize: -1 valueSize: 39 sequence: -1 headerKeys: [] payload: '
            '{"type":"TOPIC_RECORD","version":0,"data":{"name":"__consumer_offsets","topicId":'
            '"gSnfpEbtQfSDpxM2lhEn9A"}}') in lines
    skipped = run_cli("dump-log", "--cluster-metadata-decoder", "--skip-record-metadata", "--to-offset", "2", str(m))
    # Scala's prefixes: control records with skipped metadata print an empty line; no key, so " payload:"
    out = skipped.out.splitlines()
    assert out[3:4] + out[5:7] == ["", ' payload: {"type":"BEGIN_TRANSACTION_RECORD","version":0,'
                                   '"data":{"name":"Bootstrap records"}}',
                                   ' payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":'
                                   '{"name":"metadata.version","featureLevel":19}}']


# --- the fixtures (written by kafkalog's own writer from the schemas) ------------------------------------

def test_fixture_internal_topics_under_auto():
    code, objs, err = _json("--decoder", "auto", str(LOGDIR))
    assert code == 0 and err == "" and not [o for o in objs if o["type"] == "problem"]
    recs = _records(objs)
    by_decoder = {}
    for o in recs:
        by_decoder.setdefault(o.get("decoder"), []).append(o)
    assert set(by_decoder) == {None, "offsets", "transaction-log", "cluster-metadata"}
    assert all("decode_warning" not in o for o in recs)
    assert {o["file"].split("/")[-2] for o in by_decoder[None]} == {"orders-0", "orders-1", "payments-0",
                                                                   "legacy-0", "compacted-0", "customers-0"}
    offsets = by_decoder["offsets"]
    assert {o["key"]["type"] for o in offsets} == {str(t) for t in range(16)}
    v = {o["value"]["version"] for o in offsets if o["key"]["type"] in ("0", "1") and o["value"]}
    assert v == {"0", "1", "2", "3", "4"}
    classic = {o["key"]["data"]["group"]: o["value"] for o in offsets if o["key"]["type"] == "2"}
    assert classic["classic-v3"]["data"]["members"][0]["subscription"] == {
        "topics": ["orders"], "userData": None, "ownedPartitions": [{"topic": "orders", "partitions": [0]}],
        "generationId": 3, "rackId": "rack-1"}
    assert classic["classic-v1"]["data"]["members"][0]["assignment"] == {
        "assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}], "userData": "YXNzaWdub3Itc3RhdGU="}
    # a group not of the consumer protocol keeps its member bytes, base64, as Kafka does
    assert classic["connect-cluster"]["data"]["members"][0]["subscription"] == "AAFjb25uZWN0LXdvcmtlcg=="
    assert classic["billing"] is None                                   # the tombstone
    txn = by_decoder["transaction-log"]
    assert [o["value"]["data"]["transactionStatus"] for o in txn if o["value"]] == [
        "Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort",
        "PrepareEpochFence", "Dead"]
    complete = txn[3]["value"]
    assert complete["version"] == "1" and complete["data"]["previousProducerId"] == 6999
    assert "previousProducerId" not in txn[2]["value"]["data"]          # tagged, default: left out
    metadata = {o["value"]["type"] for o in by_decoder["cluster-metadata"]}
    assert len(metadata) == 27                                     # every type 0-29 but 6, 13, 16
    quota = next(o for o in by_decoder["cluster-metadata"] if o["value"]["type"] == "CLIENT_QUOTA_RECORD")
    assert quota["value"]["data"]["value"] == 10485760.0
    controls = [o["control"] for o in objs if o["type"] == "record" and "control" in o]
    voters = next(c for c in controls if c["type"] == "KRAFT_VOTERS")
    assert voters["data"]["voters"][0]["endpoints"] == [{"name": "CONTROLLER", "host": "controller-1.example",
                                                          "port": 9093}]


def test_fixture_text_lines():
    f = LOGDIR / "__transaction_state-0" / "00000000000000000000.log"
    lines = run_cli("dump-log", "--transaction-log-decoder", "--skip-record-metadata", str(f)).out.splitlines()
    assert lines[3] == ('| key: {"type":"0","data":{"transactionalId":"payments-app"}} payload: {"version":"0",'
                        '"data":{"producerId":7000,"producerEpoch":2,"transactionTimeoutMs":60000,'
                        '"transactionStatus":"Empty","transactionPartitions":null,'
                        '"transactionLastUpdateTimestampMs":1700000000000,'
                        '"transactionStartTimestampMs":1700000000100}}')
    snap = LOGDIR / "__cluster_metadata-0" / "00000000000000000003-0000000002.checkpoint"
    out = run_cli("dump-log", "--cluster-metadata-decoder", str(snap)).out
    assert "KRaftVersion {\"version\":0,\"kRaftVersion\":1}" in out
    assert ' KRaftVoters {"version":0,"voters":[{"voterId":3000,' in out
    assert '"key":"producer_byte_rate","value":1.048576E7,"remove":false}}' in out       # Java's double


def test_decoder_flags_follow_kafkas_precedence_and_imply_print_data_log():
    f = str(LOGDIR / "__transaction_state-0" / "00000000000000000000.log")
    both = run_cli("dump-log", "--cluster-metadata-decoder", "--transaction-log-decoder", f)
    assert both.out == run_cli("dump-log", "--transaction-log-decoder", f).out
    assert '"transactionStatus":"Ongoing"' in both.out
    over = run_cli("dump-log", "--transaction-log-decoder", "--decoder", "cluster-metadata", f)
    assert over.out == both.out
    plain = run_cli("dump-log", f).out
    assert "| offset:" not in plain                        # no decoder, no --print-data-log: batches only


# --- unknown types and versions, damage -------------------------------------------------------------

def test_unknown_types_and_versions_give_markers_not_errors(tmp_path):
    commit_key = gc.build_key(1, {"group": "g", "topic": "t", "partition": 0})
    newer_value = gc.build_value(1, {"offset": 7, "metadata": "", "commitTimestamp": 1}, 4)[:-1] + b"\x00\x07\x07"
    newer_value = b"\x00\x09" + newer_value[2:]            # value version 9, two bytes of a newer field
    d = _partition(tmp_path, "__consumer_offsets-4", [
        (b"\x00\x10\x00\x01g", b"\x00\x00"),                # record type 16 (streams groups): unknown here
        (commit_key, newer_value),
    ])
    r = run_cli("dump-log", "--decoder", "auto", str(d / "00000000000000000000.log"))
    lines = r.out.splitlines()
    assert lines[3].endswith(" key: Unknown record type 16 at offset 0, skipping.")
    assert lines[4].endswith(' payload: {"version":"9","data":{"offset":7,"leaderEpoch":-1,"metadata":"",'
                             '"commitTimestamp":1}}')
    assert r.code == 0
    err = r.err.splitlines()
    assert err[0] == f"kafkalog: {d / '00000000000000000000.log'}: position 0: offset 0: warning: unknown record type 16"
    assert "OffsetCommitValue version 9 is not one kafkalog knows (0-4)" in err[1]
    assert "2 byte(s) after the known fields of OffsetCommitValue v9" in err[1]
    code, objs, _ = _json("--offsets-decoder", str(d))
    recs = _records(objs)
    assert recs[0]["key"] == "ABAAAWc=" and recs[0]["key_encoding"] == "base64"
    assert "decode_warning" in recs[0] and "decode_warning" in recs[1] and code == 0


def test_unknown_metadata_types_and_bad_frames(tmp_path):
    good = build_metadata_record(12, {"name": "metadata.version", "featureLevel": 21})
    d = _partition(tmp_path, "__cluster_metadata-0", [
        (None, b"\x01\x1e\x00\x00"),                        # type 30: newer than this table
        (None, b"\x00" + good[1:]),                         # frame version 0: refused, as Kafka does
        (None, good[:-3]),                                  # truncated
        (None, good),
    ])
    log = d / "00000000000000000000.log"
    r = run_cli("dump-log", "--decoder", "auto", str(log))
    lines = [ln for ln in r.out.splitlines() if ln.startswith("| offset:")]
    assert lines[0].endswith(" payload: Error at 0, skipping. Unknown metadata id 30")
    assert lines[1].endswith(" payload: Error at 1, skipping. Could not deserialize metadata record with frame "
                             "version 0. Note that upgrades from the preview release of KRaft in 2.8 to newer "
                             "versions are not supported. (at byte 0 of the value)")
    assert "payload: Error at 2, skipping. FeatureLevelRecord v0: " in lines[2]
    assert lines[3].endswith('payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version",'
                             '"featureLevel":21}}')
    assert r.code == 1                                      # two records break the format
    problems = [ln for ln in r.err.splitlines() if "warning" not in ln]
    assert len(problems) == 2 and problems[0].startswith(f"kafkalog: {log}: position 0: offset 1: ")
    code, objs, _ = _json("--cluster-metadata-decoder", str(log))
    assert [(o["kind"], o["offset"], o["position"]) for o in objs if o["type"] == "problem"] == [
        ("decode", 1, 0), ("decode", 2, 0)]
    assert code == 1


def test_missing_keys_and_corrupt_coordinator_values(tmp_path):
    key = tl.build_key("tx")
    d = _partition(tmp_path, "__transaction_state-1", [(None, b"\x00\x01"), (key, b"\x00\x01\x00")])
    r = run_cli("dump-log", "--decoder", "auto", str(d))
    lines = [ln for ln in r.out.splitlines() if ln.startswith("| offset:")]
    assert not lines[0].endswith("payload:") and "key:" not in lines[0]
    assert "key: Error at offset 1, skipping. TransactionLogValue v1: field 'producerId' needs 8 bytes, 1 left " \
           "(at byte 2 of the value)" in lines[1]
    assert "Failed to decode message at offset 0 using transaction log decoder (message had a missing key)" in r.err
    assert r.code == 1


# --- user payloads and plug-ins ------------------------------------------------------------------------

def test_schema_registry_framing(tmp_path):
    d = _partition(tmp_path, "orders-0", [(b"k", b"\x00\x00\x00\x00\x2a" + b'{"id":1}'), (b"k2", b"plain text")])
    r = run_cli("dump-log", "--value-decoder", "schema-registry", str(d / "00000000000000000000.log"))
    lines = [ln for ln in r.out.splitlines() if ln.startswith("| offset:")]
    assert lines[0].endswith('key: k payload: {"schemaId":42,"payload":"eyJpZCI6MX0="}')
    assert lines[1].endswith("key: k2 payload: plain text")
    code, objs, _ = _json("--value-decoder", "schema-registry-hex", str(d))
    assert [o["value"] for o in _records(objs)] == [{"schemaId": 42, "payload": b'{"id":1}'.hex()}, "plain text"]


PLUGIN = '''
def decode(key, value, record, batch):
    return (None if key is None else key.decode().upper(),
            {"offset": record.offset, "size": len(value), "magic": batch.magic})


def broken(key, value, record, batch):
    raise ValueError("cannot read " + repr(value[:2]))


NOT_CALLABLE = 3
'''


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    d = tmp_path / "plugins"
    d.mkdir()
    (d / "kl_test_plugin.py").write_text(PLUGIN)
    dist = d / "kl_test_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kl-test-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[kafkalog.decoders]\nupper = kl_test_plugin:decode\n")
    monkeypatch.syspath_prepend(str(d))
    yield d
    sys.modules.pop("kl_test_plugin", None)


def test_module_function_plugin(plugin_dir, tmp_path):
    d = _partition(tmp_path, "orders-0", [(b"abc", b"12345"), (None, b"x")])
    r = run_cli("dump-log", "--decoder", "kl_test_plugin:decode", str(d / "00000000000000000000.log"))
    lines = [ln for ln in r.out.splitlines() if ln.startswith("| offset:")]
    assert lines[0].endswith(' key: ABC payload: {"offset":0,"size":5,"magic":2}')
    assert lines[1].endswith(' payload: {"offset":1,"size":1,"magic":2}') and " key:" not in lines[1]
    code, objs, _ = _json("--decoder", "kl_test_plugin:decode", str(d))
    assert [(o["decoder"], o["key"], o["value"]) for o in _records(objs)] == [
        ("kl_test_plugin:decode", "ABC", {"offset": 0, "size": 5, "magic": 2}),
        ("kl_test_plugin:decode", None, {"offset": 1, "size": 1, "magic": 2})]


def test_entry_point_plugin_in_process(plugin_dir, tmp_path):
    d = _partition(tmp_path, "orders-0", [(b"abc", b"12345")])
    code, objs, _ = _json("--decoder", "upper", str(d))
    assert code == 0 and [(o["decoder"], o["key"]) for o in _records(objs)] == [("upper", "ABC")]


def test_entry_point_plugin_in_a_real_process(plugin_dir, tmp_path):
    d = _partition(tmp_path, "orders-0", [(b"abc", b"12345")])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugin_dir), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump-log", "--decoder", "upper",
                           "--skip-record-metadata", str(d / "00000000000000000000.log")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[3] == '| key: ABC payload: {"offset":0,"size":5,"magic":2}'


def test_plugin_failures(plugin_dir, tmp_path):
    d = _partition(tmp_path, "orders-0", [(b"abc", b"12345")])
    r = run_cli("dump-log", "--decoder", "kl_test_plugin:broken", str(d))
    assert "key: Error at offset 0, skipping. ValueError: cannot read b'12'" in r.out
    assert "ValueError: cannot read b'12'" in r.err and r.code == 1
    for name, message in (("kl_test_plugin:NOT_CALLABLE", "is not callable"),
                          ("kl_test_plugin:missing", "has no attribute 'missing'"),
                          ("no_such_module_kl:decode", "cannot import decoder module 'no_such_module_kl'"),
                          ("no-such-decoder", "(installed: upper)")):
        r = run_cli("dump-log", "--decoder", name, str(d))
        assert r.code == 2 and message in r.err, (name, r.err)


def test_the_readme_plugin_example(tmp_path, monkeypatch):
    """The plug-in of dump-log's page (docs/commands/dump-log.md), run as the page says (house style 11)."""
    readme = (ROOT / "docs" / "commands" / "dump-log.md").read_text()
    code = readme.split("```python\n# sr_json.py\n", 1)[1].split("```", 1)[0]
    (tmp_path / "sr_json.py").write_text(textwrap.dedent(code))
    monkeypatch.syspath_prepend(str(tmp_path))
    d = _partition(tmp_path, "orders-0", [(b"o-1", b"\x00\x00\x00\x00\x07" + b'{"amount": 5}'), (b"o-2", None)])
    try:
        code_, objs, _ = _json("--decoder", "sr_json:decode", str(d))
    finally:
        sys.modules.pop("sr_json", None)
    assert [(o["key"], o["value"]) for o in _records(objs)] == [
        ("o-1", {"schemaId": 7, "value": {"amount": 5}}), ("o-2", None)]


def test_kraft_control_records_in_json(tmp_path):
    """LeaderChange and KRaftVoters values decoded into ``control.data`` (§1.4)."""
    from kafkalog_formats.kraft_control import build_control_value
    lc = build_control_value(ctl.LEADER_CHANGE, {"version": 0, "leaderId": 2, "voters": [{"voterId": 1},
                                                                                         {"voterId": 2}],
                                                 "grantingVoters": [{"voterId": 2}]})
    d = tmp_path / "__cluster_metadata-0"
    w = PartitionWriter(d)
    w.append(build_batch(0, [RecordSpec(0, T0, ctl.build_control_key(ctl.LEADER_CHANGE), lc)], is_control=True))
    w.close()
    code, objs, _ = _json("--deep-iteration", str(d))
    control = next(o["control"] for o in objs if o["type"] == "record")
    assert control == {"type": "LEADER_CHANGE", "data": {"version": 0, "leaderId": 2,
                                                         "voters": [{"voterId": 1}, {"voterId": 2}],
                                                         "grantingVoters": [{"voterId": 2}]}}


# --- fuzz: decoders never raise -----------------------------------------------------------------------


def _framed_bytes():
    """Random bytes, and random bytes behind a valid-looking prefix (so the fuzz reaches the bodies)."""
    prefixes = st.sampled_from([b"", b"\x00\x01", b"\x00\x02", b"\x00\x04", b"\x00\x05", b"\x00\x0f",
                                b"\x01\x00\x03", b"\x01\x03\x02", b"\x01\x05\x02", b"\x01\x00\x00"])
    return st.one_of(st.none(), st.builds(lambda p, b: p + b, prefixes, st.binary(max_size=64)))


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(sorted(BUILTIN)), _framed_bytes(), _framed_bytes())
def test_decoders_never_raise_on_random_bytes(name, key, value):
    rec = Record(5, T0, key, value, (), -1)
    d = apply(BUILTIN[name], rec, None)
    assert isinstance(d, Decoded) and len(d) == 2
    for rep in d:
        assert rep is None or isinstance(rep, (str, dict))
        json_text(rep)                                 # printable
    assert not d.error or d.raw                        # an error always keeps the raw bytes in JSON


@pytest.mark.parametrize("x, text", [(1048576.0, "1048576.0"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7"),
                                     (0.001, "0.001"), (0.0001, "1.0E-4"), (-2.5e-5, "-2.5E-5"), (0.0, "0.0"),
                                     (100.0, "100.0"), (float("inf"), "Infinity")])
def test_doubles_print_as_java_prints_them(x, text):
    """Jackson writes doubles with Java's Double.toString: plain in [1e-3, 1e7), otherwise d.dddE±n."""
    assert json_text({"value": x}) == '{"value":' + text + "}"


def test_share_group_state_and_remote_log_metadata_topics(tmp_path):
    """``--decoder auto`` on the two 4.0 topics: share-coordinator records in the coordinator envelope
    (Kafka 4.0 labels the value's version "type" too), remote log metadata as a metadata envelope."""
    from kafkalog_formats import remote_log_metadata as rlm
    from kafkalog_formats import share_group_state as sg
    tid = "AAAAAAAAAAAAAAAAAAAAAQ"
    share = _partition(tmp_path, "__share_group_state-7", [
        (sg.build_key(0, {"groupId": "sg", "topicId": tid, "partition": 2}),
         sg.build_value(0, {"snapshotEpoch": 1, "stateEpoch": 0, "leaderEpoch": 4, "startOffset": 10,
                            "stateBatches": [{"firstOffset": 10, "lastOffset": 12, "deliveryState": 0,
                                              "deliveryCount": 1}]})),
        (sg.build_key(0, {"groupId": "sg", "topicId": tid, "partition": 2}), None)])
    remote = _partition(tmp_path, "__remote_log_metadata-0", [
        (None, rlm.build_remote_log_metadata(2, {"topicIdPartition": {"name": "orders", "id": tid, "partition": 0},
                                                 "brokerId": 1, "eventTimestampMs": T0,
                                                 "remotePartitionDeleteState": 1}))])
    r = run_cli("dump-log", "--decoder", "auto", "--skip-record-metadata", str(share), str(remote))
    assert r.code == 0 and r.err == ""
    lines = [ln for ln in r.out.splitlines() if "payload: " in ln]
    assert lines == [
        '| key: {"type":"0","data":{"groupId":"sg","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","partition":2}} payload: '
        '{"type":"0","data":{"snapshotEpoch":1,"stateEpoch":0,"leaderEpoch":4,"startOffset":10,"stateBatches":'
        '[{"firstOffset":10,"lastOffset":12,"deliveryState":0,"deliveryCount":1}]}}',
        '| key: {"type":"0","data":{"groupId":"sg","topicId":"AAAAAAAAAAAAAAAAAAAAAQ","partition":2}} payload: '
        '<DELETE>',
        ' payload: {"type":"REMOTE_PARTITION_DELETE_METADATA_RECORD","version":0,"data":{"topicIdPartition":'
        '{"name":"orders","id":"AAAAAAAAAAAAAAAAAAAAAQ","partition":0},"brokerId":1,"eventTimestampMs":'
        '1700000000000,"remotePartitionDeleteState":1}}']
    same = run_cli("dump-log", "--share-group-state-decoder", "--skip-record-metadata", str(share))
    assert [ln for ln in same.out.splitlines() if "payload: " in ln] == lines[:2]
