"""Broker test group 4, retain (and group 5, verify, on what it leaves).

Scenario ``retention``: three topics of 1 MiB segments written with retention off (``retention.ms=-1``):
``timed`` (the first segments' records two hours old, the rest recent), ``sized`` (4+ segments) and
``lso`` (delete-records target), then a clean stop or a SIGKILL (``dirty``: the active segments then have
no final time-index entry, issue 21 item 1). Copied twice. Copy B: the broker, given ``retention.ms`` of
one hour on ``timed``, ``retention.bytes`` of 1.5 MiB on ``sized`` (incremental alter configs) and
DeleteRecords on ``lso``, runs its retention (``UnifiedLog.deleteOldSegments``: log start offset, size,
time). Copy A: ``kafkalog retain`` with the same limits, ``kafkalog delete-records`` for ``lso``. kafkalog must remove exactly the segments the
broker removed, never one it keeps; verify exits 0 on both.
"""
from __future__ import annotations

import random
import time

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

import clients
import crash
import scenarios
from conftest import run_cli

HOUR = 3_600_000
SIZE_LIMIT = 3 * scenarios.SEGMENT_BYTES // 2


def _records(rng, n, ts):
    return [(f"k{i}".encode(), scenarios.payload(rng, 900), [("i", str(i).encode())], ts + i) for i in range(n)]


def write(broker, seed: int) -> dict:
    """The three topics; returns facts the test needs (the delete-records offset, the time of writing)."""
    rng = random.Random(seed)
    for t in ("timed", "sized", "lso"):
        clients.create_topic(broker.bootstrap, t, config={"segment.bytes": scenarios.SEGMENT_BYTES,
                                                          "retention.ms": -1})
    now = int(time.time() * 1000)
    p = clients.producer(broker.bootstrap, linger_ms=0, batch_num_messages=8)
    # timed: ~2.2 segments two hours old, then a small recent tail in the active segment (under one
    # index.interval.bytes, so its time index has no entry for it: a kill leaves the stale last entry)
    clients.deliver(p, "timed", _records(rng, 2500, now - 2 * HOUR))
    clients.deliver(p, "timed", _records(rng, 3, now - 60_000)[:1])
    clients.deliver(p, "sized", _records(rng, 4500, now))
    clients.deliver(p, "lso", _records(rng, 3500, now))
    return {"lso_offset": 2345}


def segments(log_dir, topic) -> list[str]:
    return sorted(p.name for p in (log_dir / f"{topic}-0").glob("*.log"))


def broker_retention(b, facts) -> None:
    adm = clients.admin(b.bootstrap)
    res = [ConfigResource(ConfigResource.Type.TOPIC, "timed", incremental_configs=[
               ConfigEntry("retention.ms", str(HOUR), incremental_operation=AlterConfigOpType.SET)]),
           ConfigResource(ConfigResource.Type.TOPIC, "sized", incremental_configs=[
               ConfigEntry("retention.bytes", str(SIZE_LIMIT), incremental_operation=AlterConfigOpType.SET)])]
    for fut in adm.incremental_alter_configs(res).values():
        fut.result(30)
    clients.delete_records(b.bootstrap, "lso", 0, facts["lso_offset"])
    # retention runs every log.retention.check.interval.ms (1 s here; first run after 30 s on 3.7.0); on a
    # loaded machine a restarted broker may take much longer to get there (the deadline only bounds a hang)
    deadline = time.monotonic() + (45 if b.version == "3.7.0" else 20) + 90
    want = {"timed", "sized", "lso"}
    while time.monotonic() < deadline:
        done = {t for t in want if b.grep(rf"{t}-0.*(Deleting segment|Found deletable segments)")}
        if done == want:
            break
        time.sleep(0.5)
    # the segment lists are final once they stop changing (.deleted files go after file.delete.delay.ms)
    last, stable_since = None, time.monotonic()
    while time.monotonic() - stable_since < 2 and time.monotonic() < deadline + 30:
        now = {t: segments(b.log_dir, t) for t in want}
        if now != last:
            last, stable_since = now, time.monotonic()
        time.sleep(0.25)


def log_start(log_dir, topic, default: int) -> int:
    from kafkalog_formats.checkpoint import parse_offset_checkpoint
    path = log_dir / "log-start-offset-checkpoint"
    entries = parse_offset_checkpoint(path.read_bytes()) if path.is_file() else {}
    return entries.get((topic, 0), default)


def _high_watermarks(log_dir) -> dict[str, int]:
    lines = (log_dir / "replication-offset-checkpoint").read_text().splitlines()[2:]
    return {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines)}


# After a kill -9 before the broker's first high-watermark checkpoint (the partitions are not in
# replication-offset-checkpoint), the restarted broker, leader of its one-replica partitions, sets the high
# watermark to the log end and deletes; kafkalog deleted nothing until main's 57d1b17 (found here: strict xfails
# "dirty-*", and delete-records naming a --high-watermark option it lacked).


def _case(shutdown: str, give_hw: bool, topic: str, defect: str | None = None):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=defect)] if defect else []
    return pytest.param(shutdown, give_hw, topic, marks=marks,
                        id=f"{shutdown}{'-with-high-watermark' if give_hw else ''}-{topic}")


CASES = [_case("clean", False, t) for t in ("timed", "sized", "lso")] + \
        [_case("dirty", False, t) for t in ("timed", "sized", "lso")] + \
        [_case("dirty", True, "timed"), _case("dirty", True, "sized"), _case("dirty", True, "lso")]

_PREPARED: dict = {}


def prepared(version: str, shutdown: str, tmp_path_factory):
    """(the writer's directory, broker B after its retention, facts), once per version and shutdown."""
    key = (version, shutdown)
    if key not in _PREPARED:
        from broker import Broker
        writer = Broker(version, tmp_path_factory.mktemp(f"retention-writer-{shutdown}-{version}-"))
        b = Broker(version, tmp_path_factory.mktemp(f"retention-b-{shutdown}-{version}-"))
        try:
            writer.start()
            facts = write(writer, 4)
            (writer.stop if shutdown == "clean" else writer.kill)()
            crash.adopt(writer.log_dir, b)
            b.start()
            broker_retention(b, facts)
            b.stop()
        finally:
            writer.close()
            b.close()
        assert b.errors() == []
        _PREPARED[key] = (writer.log_dir, b, facts)
    return _PREPARED[key]


@pytest.mark.parametrize("shutdown,give_hw,topic", CASES)
def test_retain_removes_what_the_broker_removes(kafka_version, kafka_jars, make_broker, tmp_path_factory,
                                                shutdown, give_hw, topic):
    """Scenario retention (seed 4), after a clean stop and after a kill -9 (then also with
    ``--high-watermark`` set to what the restarted broker had; issue 21 item 1: the largest timestamp of the
    active segment as after recovery); rules: ``UnifiedLog.deleteOldSegments``
    (``deleteRetentionMsBreachedSegments`` with ``LogSegment.largestTimestamp``,
    ``deleteRetentionSizeBreachedSegments``, ``deleteLogStartOffsetBreachedSegments`` after DeleteRecords)."""
    src, b, facts = prepared(kafka_version, shutdown, tmp_path_factory)
    assert run_cli("verify", str(src)).code == 0                     # group 5
    a = crash.adopt(src, make_broker(kafka_version, "a"))
    hw = _high_watermarks(b.log_dir)[f"{topic}-0"]
    if topic == "lso":
        res = run_cli("delete-records", "--offset", f"{topic}-0={facts['lso_offset']}", str(a.log_dir))
    else:
        limits = {"timed": ["--retention-ms", str(HOUR), "--retention-bytes", "-1"],
                  "sized": ["--retention-ms", "-1", "--retention-bytes", str(SIZE_LIMIT)]}[topic]
        res = run_cli("retain", "--partition", f"{topic}-0", "--now", str(int(time.time() * 1000)), *limits,
                      *(["--high-watermark", str(hw)] if give_hw else []), str(a.log_dir))
    assert res.code in (0, 1), res.out + res.err
    kept_a, kept_b = segments(a.log_dir, topic), segments(b.log_dir, topic)
    assert kept_a == kept_b, f"of {segments(src, topic)} the broker kept {kept_b}, kafkalog kept {kept_a}"
    assert kept_b != segments(src, topic), "the broker deleted nothing: the scenario is void"
    # the log start offset both leave (what DeleteRecords changes; retention moves it to the first kept
    # segment): the broker checkpoints it only above the first segment's base offset
    # (LogManager.checkpointLogStartOffsetsInDir), so a missing entry means that base
    first = int(kept_b[0][:20])
    start_a, start_b = log_start(a.log_dir, topic, first), log_start(b.log_dir, topic, first)
    assert start_a == start_b, f"log-start-offset-checkpoint: the broker {start_b}, kafkalog {start_a}"
    if topic == "lso":
        assert start_b == facts["lso_offset"], "DeleteRecords did not move the log start: the scenario is void"
    for d in (a.log_dir, b.log_dir):                                  # group 5
        assert run_cli("verify", str(d)).code == 0
    if topic == "timed":                      # the broker loads what kafkalog left (once per shutdown kind)
        a.start()
        assert a.errors() == []
        a.stop()
