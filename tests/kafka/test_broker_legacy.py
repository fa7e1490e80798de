"""Broker test group 1 for message formats v0 and v1 (scenario ``legacy``, seed 5): a ZooKeeper-mode 3.x
broker with ``inter.broker.protocol.version=2.8`` (Kafka applies ``message.format.version`` only below 3.0,
``LogConfig.shouldIgnoreMessageFormatVersion``) converts what a v2 producer sends down to magic 0 (topic
``v0``, ``message.format.version=0.9.0``) and magic 1 (``v1``, 0.10.2; ``v1-appendtime`` with LogAppendTime),
uncompressed and in every codec those formats have (gzip, snappy, lz4: the magic-0 LZ4 checksum quirk).

``dump-log`` text equals the same release's ``DumpLogSegments`` for every option; ``verify`` exits 0;
consumers read what ``dump-log --format json`` gives; ``lookup-time`` (v1) equals ListOffsets.
"""
from __future__ import annotations

import difflib
import json
import random
import re

import pytest

import clients
import jars
import scenarios
from broker import Broker, dump_log_segments
from conftest import run_cli

TOPICS = {"v0": {"message.format.version": "0.9.0"},
          "v1": {"message.format.version": "0.10.2"},
          "v1-appendtime": {"message.format.version": "0.10.2", "message.timestamp.type": "LogAppendTime"}}
OPTIONS = {"shallow": (), "deep-iteration": ("--deep-iteration",), "print-data-log": ("--print-data-log",),
           "verify-index-only": ("--verify-index-only",), "index-sanity-check": ("--index-sanity-check",)}


@pytest.fixture(scope="session")
def legacy(zk_version, tmp_path_factory):
    if reason := jars.unavailable_reason(zk_version):
        pytest.skip(reason)
    b = Broker(zk_version, tmp_path_factory.mktemp(f"legacy-{zk_version}-"), mode="zk",
               config={"inter.broker.protocol.version": "2.8", "log.message.format.version": "0.10.2"})
    try:
        b.start()
        rng = random.Random(5)
        for t, config in TOPICS.items():
            clients.create_topic(b.bootstrap, t, config={**config, "retention.ms": -1,
                                                         "index.interval.bytes": 1024})
            for codec in ("none", "gzip", "snappy", "lz4"):
                recs = [(k, v, [], ts) for k, v, _h, ts in scenarios.keyed_records(rng, 120, out_of_order_every=0)]
                clients.deliver(clients.producer(b.bootstrap, compression_type=codec, enable_idempotence=False,
                                                 batch_num_messages=15), t, recs)
        reads = {t: clients.consume(b.bootstrap, t) for t in TOPICS}
        stamps = sorted({r.timestamp for r in reads["v1"]})
        by_time = {ts: clients.offset_for_time(b.bootstrap, "v1", 0, ts)
                   for ts in [stamps[0] - 1, *stamps[::37], stamps[-1] + 1]}
        b.stop()
    except Exception as e:      # the broker's own log says what it was doing (CI has only this output)
        raise AssertionError(f"legacy broker: {e!r}\n{b.tail()}") from e
    finally:
        b.close()
    assert b.errors() == []
    return b, reads, by_time


@pytest.mark.parametrize("option", list(OPTIONS))
def test_legacy_dump_log_equals_dump_log_segments(legacy, option):
    """Scenario legacy (seed 5); rule: dump-log text output = DumpLogSegments, magic 0 and 1."""
    b, _reads, _ = legacy
    suffixes = (".log",) if option in ("deep-iteration", "print-data-log") else \
        (".index", ".timeindex") if "index" in option else (".log", ".index", ".timeindex", ".snapshot")
    files = sorted(p for t in TOPICS for p in (b.log_dir / f"{t}-0").iterdir() if p.suffix in suffixes)
    kafka = dump_log_segments(b.version, files, *OPTIONS[option])
    assert kafka.returncode == 0, kafka.stderr
    ours = run_cli("dump-log", "--files", ",".join(map(str, files)), *OPTIONS[option])
    # 3.7.0 indexes a down-converted chunk by its last offset at the chunk's first message: its own tool
    # reports "Mismatches in :" on stderr and exits 0; dump-log reports the same lines, then one line saying
    # verify does not grade them as errors, and exits 0 too
    reports = "\n".join(line for line in kafka.stderr.splitlines() if not line.startswith(("WARN ", "ERROR ")))
    graded = "kafkalog: not an error by verify's grading (healthy brokers write this): exit 0"
    err = ours.err.strip()
    if reports.strip():
        assert err.endswith("\n" + graded), ours.err
        err = err[:-len(graded)].strip()
    assert err == reports.strip()
    assert ours.code == 0, ours.err
    magics = {line.split("magic: ")[1].split()[0] for line in kafka.stdout.splitlines() if "magic: " in line}
    assert option not in ("shallow", "deep-iteration") or magics == {"0", "1"}
    # documented difference: the Scala tool (3.0-3.9) prints a stray "}" after a legacy record's crc
    want = re.sub(r"(isValid: \w+ crc: \d+)\}", r"\1", kafka.stdout)
    if ours.out != want:
        diff = difflib.unified_diff(want.splitlines(), ours.out.splitlines(), "DumpLogSegments",
                                    "kafkalog", lineterm="", n=1)
        pytest.fail("dump-log differs from DumpLogSegments:\n" + "\n".join(list(diff)[:40]))


def test_legacy_verify_and_records(legacy):
    """Scenario legacy; rules: verify never cries wolf on v0/v1; dump-log JSON records = consumer reads."""
    b, reads, _ = legacy
    res = run_cli("verify", "--fail-on", "warning", str(b.log_dir))
    assert res.code == 0, res.out
    for t in TOPICS:
        res = run_cli("dump-log", "--format", "json", "--print-data-log", "--value-decoder", "base64",
                      "--key-decoder", "base64", str(b.log_dir / f"{t}-0"))
        # index_mismatch reports: 3.7.0's index entries, which its own tool reports too (see above)
        other = [o for o in map(json.loads, res.out.splitlines())
                 if o["type"] not in ("file", "batch", "record", "index_entry", "time_index_entry",
                                      "producer_snapshot_entry", "index_mismatch")]
        assert res.code == 0 and not other, res.err       # what verify passes, Kafka's tool exits 0 on
        import base64
        ours = [(o["offset"], o["timestamp"], base64.b64decode(o["key"]),
                 None if o["value"] is None else base64.b64decode(o["value"]))
                for o in map(json.loads, res.out.splitlines()) if o["type"] == "record"]
        # librdkafka reports a magic-0 record's missing timestamp as (TIMESTAMP_NOT_AVAILABLE, 0); Kafka's
        # record (and dump-log) says -1 (RecordBatch.NO_TIMESTAMP)
        assert ours == [(r.offset, -1 if r.timestamp_type == 0 else r.timestamp, r.key, r.value)
                        for r in reads[t]], t


def test_legacy_lookup_time_equals_list_offsets(legacy):
    """Scenario legacy, magic 1; rule: lookup-time = ListOffsets by timestamp."""
    b, _reads, by_time = legacy
    wrong = []
    for ts, want in by_time.items():
        res = run_cli("lookup-time", "--format", "json", str(b.log_dir / "v1-0"), str(ts))
        obj = json.loads(res.out)
        got = (obj.get("found_offset", -1), obj.get("found_timestamp", -1)) if res.code == 0 else (-1, -1)
        if got != want:
            wrong.append(f"{ts}: broker {want}, kafkalog {got}")
    assert not wrong, "\n".join(wrong)
