"""DeleteRecords: what the broker answers next to what ``kafkalog delete-records`` does (issue 34, items 2 and 3).

Scenario ``delete-records`` (seed 34): a broker writes ``plain`` (cleanup.policy delete, 1 MiB segments,
three segments), ``keyed`` (cleanup.policy compact), ``nopolicy`` (an empty cleanup.policy, where the release
takes one) and a consumer group's commit (``__consumer_offsets``); it is stopped cleanly, restarted with
``replica.high.watermark.checkpoint.interval.ms`` of an hour, given 15 more records on ``plain`` and killed:
the checkpointed high watermark then lags the log end by 15, as after any kill between two checkpoints, and
the directory has no ``.kafka_cleanshutdown``.

* item 2, by the topic: the broker answers DeleteRecords on ``keyed`` with POLICY_VIOLATION
  (``Partition.deleteRecordsOnLeader``: cleanup.policy without delete), on ``__consumer_offsets`` with
  INVALID_TOPIC_EXCEPTION (``ReplicaManager.deleteRecordsOnLocalLog``: an internal topic) and changes
  nothing; kafkalog refuses the same partitions with the same names, exit 2, nothing changed.
* item 3, by the high watermark, on copies of the killed directory: a broker restarted as the partition's
  only replica serves DeleteRecords -1 up to the log end (not the lagging checkpoint) and answers an offset
  above it OFFSET_OUT_OF_RANGE; with the checkpoint entry set 1000 beyond the log end (a tail lost unflushed,
  a restored backup) it serves -1 up to the log end too. kafkalog on a copy of the same directory refuses
  the same offset, moves the log start to the same offset and leaves the same segments.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException

import clients
import crash
import scenarios
from conftest import run_cli

LAG = 15
_PREPARED: dict = {}


#: Kafka's names (``org.apache.kafka.common.protocol.Errors``) of the error codes these tests meet; librdkafka
#: names code 17 TOPIC_EXCEPTION
KAFKA_ERRORS = {1: "OFFSET_OUT_OF_RANGE", 17: "INVALID_TOPIC_EXCEPTION", 44: "POLICY_VIOLATION"}


def answer(bootstrap: str, topic: str, partition: int, offset: int):
    """The broker's answer to DeleteRecords: the new low watermark, or the error's name as Kafka names it."""
    try:
        return clients.delete_records(bootstrap, topic, partition, offset)
    except KafkaException as e:
        return KAFKA_ERRORS.get(e.args[0].code(), e.args[0].name())


def _records(rng: random.Random, n: int, start: int) -> list:
    return [(f"k{i}".encode(), scenarios.payload(rng, 900), [], None) for i in range(start, start + n)]


def prepared(version: str, tmp_path_factory) -> tuple[Path, dict]:
    """(the killed writer's directory, facts), once per version; the broker's answers of item 2 are asked of
    the writer before its clean stop."""
    if version in _PREPARED:
        return _PREPARED[version]
    from broker import Broker
    rng = random.Random(34)
    w = Broker(version, tmp_path_factory.mktemp(f"delete-records-writer-{version}-"))
    facts: dict = {}
    try:
        w.start()
        clients.create_topic(w.bootstrap, "plain", config={"segment.bytes": scenarios.SEGMENT_BYTES,
                                                           "retention.ms": -1})
        clients.create_topic(w.bootstrap, "keyed", config={"cleanup.policy": "compact"})
        try:
            clients.create_topic(w.bootstrap, "nopolicy", config={"cleanup.policy": ""})
            facts["nopolicy"] = True
        except KafkaException as e:
            facts["nopolicy"] = KAFKA_ERRORS.get(e.args[0].code(), e.args[0].name())
        p = clients.producer(w.bootstrap, linger_ms=0, batch_num_messages=8)
        clients.deliver(p, "plain", _records(rng, 2500, 0))
        clients.deliver(p, "keyed", _records(rng, 40, 0))
        if facts["nopolicy"] is True:
            clients.deliver(p, "nopolicy", _records(rng, 40, 0))
        clients.commit_offsets(w.bootstrap, "g", "plain", {0: 100})
        facts["answers"] = {"keyed": answer(w.bootstrap, "keyed", 0, -1),
                            "__consumer_offsets": answer(w.bootstrap, "__consumer_offsets", 0, -1)}
        if facts["nopolicy"] is True:           # offset 0 changes nothing where the request is accepted
            facts["answers"]["nopolicy"] = answer(w.bootstrap, "nopolicy", 0, 0)
        facts["low"] = {t: clients.watermarks(w.bootstrap, t)[0] for t in ("keyed", "plain")}
        w.stop()
        w.config["replica.high.watermark.checkpoint.interval.ms"] = 3_600_000
        w.start()
        clients.deliver(clients.producer(w.bootstrap, linger_ms=0), "plain", _records(rng, LAG, 2500))
        facts["log_end"] = clients.watermarks(w.bootstrap, "plain")[1]
        w.kill()
    finally:
        w.close()
    assert w.errors() == [], w.errors()
    _PREPARED[version] = (w.log_dir, facts)
    return _PREPARED[version]


def _hw_entry(log_dir: Path, topic: str) -> int | None:
    from kafkalog_formats.checkpoint import parse_offset_checkpoint
    return parse_offset_checkpoint((log_dir / "replication-offset-checkpoint").read_bytes()).get((topic, 0))


def _segments(log_dir: Path, topic: str) -> list[str]:
    return sorted(p.name for p in (log_dir / f"{topic}-0").glob("*.log"))


def _files(log_dir: Path) -> dict:
    return {str(p.relative_to(log_dir)): p.read_bytes() for p in sorted(log_dir.rglob("*"))
            if p.is_file() and not p.name.startswith((".lock", "server-", "stdout-", "log4j"))}


def _wait_for_deletion(b, topic: str, before: list[str]) -> list[str]:
    """The segment list once the broker's log-start pass has deleted what DeleteRecords put below the log
    start (every log.retention.check.interval.ms; the first after 30 s on 3.7.0) and it stops changing."""
    deadline = time.monotonic() + (45 if b.version == "3.7.0" else 20) + 90
    while time.monotonic() < deadline and _segments(b.log_dir, topic) == before:
        time.sleep(0.5)
    last, since = None, time.monotonic()
    while time.monotonic() - since < 2 and time.monotonic() < deadline + 30:
        now = _segments(b.log_dir, topic)
        if now != last:
            last, since = now, time.monotonic()
        time.sleep(0.25)
    return last


def test_delete_records_refuses_the_topics_the_broker_refuses(kafka_version, kafka_jars, make_broker,
                                                              tmp_path_factory):
    """Item 2: POLICY_VIOLATION for the compacted topic, INVALID_TOPIC_EXCEPTION for __consumer_offsets, the
    log start unchanged on the broker; kafkalog names the same answers, exit 2, and changes no file."""
    src, facts = prepared(kafka_version, tmp_path_factory)
    assert facts["answers"]["keyed"] == "POLICY_VIOLATION"
    assert facts["answers"]["__consumer_offsets"] == "INVALID_TOPIC_EXCEPTION"
    assert facts["low"]["keyed"] == 0
    a = crash.adopt(src, make_broker(kafka_version, "a"))
    before = _files(a.log_dir)
    for topic, words in (("keyed", "POLICY_VIOLATION"), ("__consumer_offsets", "INVALID_TOPIC_EXCEPTION")):
        r = run_cli("delete-records", "--offset", f"{topic}-0=-1", "--offset", "plain-0=-1", str(a.log_dir))
        assert r.code == 2 and words in r.err, r.out + r.err
    assert _files(a.log_dir) == before
    # an empty cleanup.policy (every release creates the topic): 3.7.0 and 3.9.2 answer POLICY_VIOLATION, 4.4.0
    # accepts the request; kafkalog refuses it on every version, as the stricter releases do
    assert facts["nopolicy"] is True, facts
    expected = 0 if kafka_version.startswith("4.") else "POLICY_VIOLATION"
    assert facts["answers"]["nopolicy"] == expected, facts
    r = run_cli("delete-records", "--offset", "nopolicy-0=0", str(a.log_dir))
    assert r.code == 2 and "cleanup.policy=(empty)" in " ".join(r.err.split()), r.err


@pytest.mark.parametrize("checkpoint", ["lagging", "beyond-the-log-end"])
def test_delete_records_takes_the_high_watermark_the_broker_loads(kafka_version, kafka_jars, make_broker,
                                                                  tmp_path_factory, checkpoint):
    """Item 3: after the kill the checkpoint lags the log end by 15 (``lagging``) or is set 1000 beyond it
    (``beyond-the-log-end``). The broker restarted on copy B answers an offset above the log end
    OFFSET_OUT_OF_RANGE and serves -1 up to the log end; kafkalog on copy A refuses the same offset (exit 1,
    nothing changed), moves the log start to the broker's low watermark and keeps the same segments."""
    src, facts = prepared(kafka_version, tmp_path_factory)
    log_end = facts["log_end"]
    entry = _hw_entry(src, "plain")
    assert entry == log_end - LAG, f"the checkpoint says {entry}, the log end is {log_end}: the scenario is void"
    assert not (src / ".kafka_cleanshutdown").exists()
    b = crash.adopt(src, make_broker(kafka_version, "b"))
    a = crash.adopt(src, make_broker(kafka_version, "a"))
    if checkpoint == "beyond-the-log-end":
        for d in (a.log_dir, b.log_dir):
            crash.set_checkpoint_entry(d, "replication-offset-checkpoint", "plain", 0, log_end + 1000)
    segments_before = _segments(b.log_dir, "plain")

    b.start()
    above = answer(b.bootstrap, "plain", 0, log_end + 5)
    low = answer(b.bootstrap, "plain", 0, -1)
    kept_b = _wait_for_deletion(b, "plain", segments_before)
    b.stop()
    assert b.errors() == [], b.errors()
    assert above == "OFFSET_OUT_OF_RANGE" and low == log_end, (above, low)

    before = _files(a.log_dir)
    r = run_cli("delete-records", "--offset", f"plain-0={log_end + 5}", str(a.log_dir))
    assert r.code == 1 and f"above the high watermark {log_end}" in " ".join(r.out.split()), r.out + r.err
    assert _files(a.log_dir) == before
    r = run_cli("delete-records", "--format", "json", "--offset", "plain-0=-1", str(a.log_dir))
    assert r.code == 0, r.out + r.err
    (obj,) = [o for o in map(json.loads, r.out.splitlines()) if o["type"] == "partition"]
    assert obj["high_watermark"] == log_end and obj["log_start_offset"]["new"] == low
    assert _segments(a.log_dir, "plain") == kept_b != segments_before
    assert run_cli("verify", str(a.log_dir)).code == 0
    a.start()                                   # the broker serves kafkalog's result from the same log start
    assert clients.watermarks(a.bootstrap, "plain") == (low, log_end)
    a.stop()
    assert a.errors() == [], a.errors()
