"""The state views' broker configuration comes from the one resolver retain and compact use
(``engine/config_resolver``, via ``engine/coordinator_config``), with Kafka's validation (issue 34, item 9):
a value Kafka refuses in server.properties is refused (exit 3, as retain and compact do), never replaced by
the default; a valid one is applied and its source said; the KRaft metadata's partition count of an internal
topic wins over server.properties, the flag over both; describe reads producer.id.expiration.ms from the
dynamic broker configuration."""
from __future__ import annotations

import json

import pytest

import views_data as vd
from conftest import run_cli
from kafkalog_formats.metadata_records import build_metadata_record
from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_cli.repair.log_writer import PartitionWriter

NOW = str(vd.NOW)


def objs(out: str, kind: str) -> list[dict]:
    return [o for o in map(json.loads, out.splitlines()) if o.get("type") == kind]


def _metadata(logdir, records: list[bytes]) -> None:
    w = PartitionWriter(logdir / "__cluster_metadata-0", write_snapshots=False)
    for i, v in enumerate(records):
        w.append(build_batch(i, [RecordSpec(0, vd.T0 + i, None, v)], partition_leader_epoch=1))
    w.close(snapshot=False)


def _topic(name: str, tid: str, partitions: int) -> list[bytes]:
    out = [build_metadata_record(2, {"name": name, "topicId": tid})]
    for p in range(partitions):
        out.append(build_metadata_record(3, {"partitionId": p, "topicId": tid, "replicas": [1], "isr": [1],
                                             "removingReplicas": [], "addingReplicas": [], "leader": 1,
                                             "leaderEpoch": 0, "partitionEpoch": 0}))
    return out


REFUSED = [("offsets.retention.minutes", "abc", "not a 32-bit integer"),
           ("offsets.retention.minutes", "-1", "Value must be at least 1"),
           ("offsets.retention.minutes", "0", "Value must be at least 1"),
           ("offsets.topic.num.partitions", "0", "Value must be at least 1"),
           ("transaction.state.log.num.partitions", "x", "not a 32-bit integer"),
           ("transaction.state.log.num.partitions", "-3", "Value must be at least 1")]


@pytest.mark.parametrize("command", ["consumer-groups", "transactions"])
@pytest.mark.parametrize("key,value,why", REFUSED)
def test_a_value_kafka_refuses_is_refused_not_replaced(tmp_path, command, key, value, why):
    """Before: consumer-groups and transactions took these as Kafka's defaults (or 0 minutes as 0 ms, every
    offset expired) and exited 0."""
    w = vd.logdir_with_transactions(tmp_path)
    vd.logdir_with_offsets(tmp_path)
    props = tmp_path / "broker.properties"
    props.write_text(f"{key}={value}\n")
    for fmt in ("text", "json"):
        r = run_cli(command, "--format", fmt, "--now", NOW, "--server-properties", str(props), str(w.logdir))
        assert r.code == 3, (r.code, r.out, r.err)
        assert r.out == ""
        assert f"{key}='{value}' from broker.properties" in r.err and why in r.err, r.err
        assert "Traceback" not in r.err


def test_retention_from_server_properties_is_applied_and_said(tmp_path):
    w = vd.logdir_with_offsets(tmp_path)
    props = tmp_path / "server.properties"
    props.write_text("offsets.retention.minutes=60\n")
    r = run_cli("consumer-groups", "--format", "json", "--include-expired", "--now", NOW, "--server-properties",
                str(props), str(w.logdir))
    assert r.code == 0, r.err
    summary = objs(r.out, "summary")[0]
    assert summary["retention_ms"] == 3_600_000
    assert summary["retention_source"] == "offsets.retention.minutes=60 in server.properties"
    # two days after the commits, an hour's retention: every offset of the simple group has expired
    simple = [o for o in objs(r.out, "offset") if o["group"] == "simple"]
    assert simple and all(o["expired"] for o in simple)
    assert {o["expires_at"] for o in simple if o["expire_timestamp"] is None} == \
        {o["commit_timestamp"] + 3_600_000 for o in simple if o["expire_timestamp"] is None}
    text = run_cli("consumer-groups", "--now", NOW, "--server-properties", str(props), str(w.logdir)).out
    assert "offsets retention 1 h, offsets.retention.minutes=60 in server.properties" in " ".join(text.split())
    default = objs(run_cli("consumer-groups", "--format", "json", "--now", NOW, str(w.logdir)).out, "summary")[0]
    assert default["retention_source"] == "Kafka's default offsets.retention.minutes=10080"
    flag = objs(run_cli("consumer-groups", "--format", "json", "--now", NOW, "--offsets-retention-ms", "5",
                        "--server-properties", str(props), str(w.logdir)).out, "summary")[0]
    assert (flag["retention_ms"], flag["retention_source"]) == (5, "--offsets-retention-ms")


def test_partition_counts_metadata_then_server_properties_then_flag(tmp_path):
    w = vd.logdir_with_transactions(tmp_path)
    vd.logdir_with_offsets(tmp_path)
    props = tmp_path / "server.properties"
    props.write_text("offsets.topic.num.partitions=7\ntransaction.state.log.num.partitions=9\n")

    def counts(*extra):
        cg = run_cli("consumer-groups", "--format", "json", "--now", NOW, *extra, str(w.logdir))
        tx = run_cli("transactions", "--format", "json", "--now", NOW, *extra[:2], str(w.logdir))
        s, t = objs(cg.out, "summary")[0], objs(tx.out, "summary")[0]
        return s["offsets_partition_count"], s["offsets_partition_count_source"], t["transaction_state_partition_count"]

    assert counts("--server-properties", str(props)) == (7, "offsets.topic.num.partitions=7 in server.properties", 9)
    assert counts() == (50, "Kafka's default offsets.topic.num.partitions=50", 50)
    _metadata(w.logdir, _topic("__consumer_offsets", "AAAAAAAAAAAAAAAAAAAAAQ", 3)
              + _topic("__transaction_state", "BBBBBBBBBBBBBBBBBBBBBA", 1))
    n, source, txn = counts("--server-properties", str(props))
    assert (n, txn) == (3, 1) and source.startswith("the KRaft metadata in ")
    assert counts("--server-properties", str(props), "--offsets-partitions", "4")[:2] == (4, "--offsets-partitions")
    # with the coordinator's whole topic on this disk (1 partition, from the metadata), an unknown producer
    # id is hanging, no longer "unknown"
    tx = run_cli("transactions", "--format", "json", "--now", NOW, str(w.logdir))
    assert objs(tx.out, "summary")[0]["transaction_state_complete"] is True


def test_describe_takes_producer_id_expiration_from_the_dynamic_broker_config(tmp_path):
    """Before: the lookup raised KeyError (the key was not one the resolver knew), swallowed: always 1 day."""
    w = vd.logdir_with_transactions(tmp_path)
    at = str(vd.T0 + 2 * vd.HOUR)
    before = objs(run_cli("describe", "--format", "json", "--now", at, str(w.logdir)).out, "partition")
    assert {p["topic"]: p["producers"] for p in before}["pay"] == 5
    _metadata(w.logdir, _topic("pay", "CCCCCCCCCCCCCCCCCCCCCA", 1) + [build_metadata_record(
        4, {"resourceType": 4, "resourceName": "1", "name": "producer.id.expiration.ms", "value": "3600000"})])
    after = objs(run_cli("describe", "--format", "json", "--now", at, str(w.logdir)).out, "partition")
    # producers 100 and 101 ended their transactions two hours ago: idle past the broker's one hour, dropped
    assert {p["topic"]: p["producers"] for p in after}["pay"] == 3
