"""retain and compact after an unclean shutdown (issue 21, item 1): what the broker's load does first.

Kafka appends a segment's final time-index entry (its greatest timestamp) only when it rolls, closes or
recovers the segment (``LogSegment.onBecomeInactiveSegment``/``close``/``recover``, 2.x–4.x): after a kill
-9 the active segment's live ``.timeindex`` ends with whatever entry ``index.interval.bytes`` last produced,
possibly hours before the newest record. A broker without ``.kafka_cleanshutdown`` recovers every segment
from the one holding the recovery point (``LogLoader.recoverLog``) before retention runs
(``UnifiedLog.deleteRetentionMsBreachedSegments`` → ``LogSegment.largestTimestamp``), so its retention sees
the batches' greatest timestamp. retain must too; and a time index contradicting its log never decides a
deletion, with or without the marker.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_formats.time_index import build_time_index

from kafkalog_cli.engine.index_rules import IndexBuilder
from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import flat, FIXTURES, run_cli

HOUR = 3_600_000
T0 = 1_700_000_000_000
N = 60
NOW = T0 + (N - 1) * HOUR + 60_000          # the newest record is one minute old
DAY = 24 * HOUR


def slow_topic(root: Path, *, clean_marker: bool) -> Path:
    """A topic that gets one record an hour for 60 hours, in one (active) segment whose ``.timeindex`` is
    the live one a kill -9 leaves: the entries ``index.interval.bytes`` produced, no final entry."""
    logdir = root / "logdir"
    pdir = logdir / "slow-0"
    w = PartitionWriter(pdir)
    live = IndexBuilder(0, 4096)
    position = 0
    for i in range(N):
        b = build_batch(i, [RecordSpec(0, T0 + i * HOUR, b"k%d" % i, b"v" * 64)], producer_id=-1)
        w.append(b, mtime_ms=NOW - 1000)
        live.add(position, i, T0 + i * HOUR)
        position += len(b)
    w.close()
    entries = live.time_entries                      # without finish(): no final entry
    assert entries and NOW - entries[-1][0] > DAY, "the live index must end more than a day back"
    (pdir / "00000000000000000000.timeindex").write_bytes(build_time_index(entries, 0))
    shutil.copy(FIXTURES / "logdir" / "meta.properties", logdir / "meta.properties")
    (logdir / "replication-offset-checkpoint").write_text(build_offset_checkpoint({("slow", 0): N}))
    (logdir / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("slow", 0): 0}))
    if clean_marker:
        (logdir / ".kafka_cleanshutdown").write_bytes(b"")
    return pdir


def retain_json(pdir: Path, *extra: str) -> tuple[int, dict]:
    r = run_cli("retain", "--format", "json", "--retention-ms", str(DAY), "--retention-bytes", "-1",
                "--now", str(NOW), *extra, str(pdir))
    objs = [json.loads(line) for line in r.out.splitlines()]
    return r.code, next(o for o in objs if o["type"] == "partition")


def test_retain_after_a_kill_takes_the_active_segments_time_from_its_batches(tmp_path):
    """No clean-shutdown marker: the broker recovers the active segment (LogLoader.recoverLog, from the
    segment holding the recovery point 0) and its largest timestamp becomes the newest batch's, one minute
    old: nothing is older than retention.ms = 1 day, nothing goes (before the fix all 60 records went)."""
    pdir = slow_topic(tmp_path, clean_marker=False)
    before = (pdir / "00000000000000000000.log").read_bytes()
    code, obj = retain_json(pdir)
    assert code == 0, obj
    (seg,) = obj["segments"]
    assert not seg["delete"] and seg["largest_timestamp"] == T0 + (N - 1) * HOUR
    assert seg["timestamp_source"].startswith("batches")
    assert (pdir / "00000000000000000000.log").read_bytes() == before
    assert sorted(p.name for p in pdir.glob("*.log")) == ["00000000000000000000.log"]


def test_a_time_index_older_than_its_log_never_decides_a_deletion(tmp_path):
    """With the marker the broker would trust the stale entry (and delete early); kafkalog reads the
    batches of every segment its time pass would delete and keeps what they show is younger."""
    pdir = slow_topic(tmp_path, clean_marker=True)
    code, obj = retain_json(pdir)
    assert code == 0, obj
    (seg,) = obj["segments"]
    assert not seg["delete"] and seg["largest_timestamp"] == T0 + (N - 1) * HOUR
    assert "older than the newest batch" in seg["timestamp_note"]
    assert (pdir / "00000000000000000000.log").stat().st_size > 0


def test_old_data_still_goes_after_a_kill(tmp_path):
    """The same log a day later: every record is past retention.ms by the batches too, and retention runs
    as the broker's would after its recovery (roll, then delete)."""
    pdir = slow_topic(tmp_path, clean_marker=False)
    r = run_cli("retain", "--retention-ms", str(DAY), "--retention-bytes", "-1", "--now", str(NOW + 2 * DAY),
                str(pdir))
    assert r.code == 0, r.out + r.err
    assert sorted(p.name for p in pdir.glob("*.log")) == [f"{N:020d}.log"]


def test_retain_refuses_what_the_brokers_recovery_would_cut(tmp_path):
    """A torn batch in a segment the broker recovers (no marker): its recovery truncates there
    (LogSegment.recover), so retain skips the partition and says to run kafkalog recover first."""
    pdir = slow_topic(tmp_path, clean_marker=False)
    log = pdir / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[300] ^= 0xFF                                # inside the third batch: its CRC fails
    log.write_bytes(bytes(data))
    code, obj = retain_json(pdir, "--retention-ms", "0")
    assert code == 1
    assert any("run kafkalog recover first" in p["message"] and p["kind"] == "unclean_shutdown"
               for p in obj["problems"]), obj["problems"]
    assert log.read_bytes() == bytes(data)


def test_compact_waits_min_compaction_lag_by_the_batches_not_a_stale_time_index(tmp_path):
    """``LogCleanerManager.cleanableOffsets``: the first dirty segment whose ``largestTimestamp`` is within
    ``min.compaction.lag.ms`` of now bounds the cleanable range. A rolled segment whose time index ends a
    day before its newest batch (a damaged or stale index; the broker would recover it without a marker)
    must not look old: nothing of it is cleaned while its newest record is younger than the lag."""
    logdir = tmp_path / "logdir"
    pdir = logdir / "keyed-0"
    w = PartitionWriter(pdir)
    for i in range(40):                               # one key rewritten: everything but the last is dirty
        w.append(build_batch(i, [RecordSpec(0, NOW - (40 - i) * 1000, b"k", b"v%d" % i)]))
    w.roll()
    w.append(build_batch(40, [RecordSpec(0, NOW, b"k", b"last")]))
    w.close()
    stale = build_time_index([(NOW - 2 * DAY, 0)], 0)  # the first segment's index: a day-old last entry
    (pdir / "00000000000000000000.timeindex").write_bytes(stale)
    shutil.copy(FIXTURES / "logdir" / "meta.properties", logdir / "meta.properties")
    (logdir / "replication-offset-checkpoint").write_text(build_offset_checkpoint({("keyed", 0): 41}))
    (logdir / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("keyed", 0): 41}))
    (logdir / ".kafka_cleanshutdown").write_bytes(b"")
    before = (pdir / "00000000000000000000.log").read_bytes()
    r = run_cli("compact", "--config", "cleanup.policy=compact", "--config", f"min.compaction.lag.ms={HOUR}",
                "--force", "--now", str(NOW), str(pdir))
    assert r.code == 0, r.out + r.err
    assert r.out.startswith("compact: nothing to clean in 1 partition (exit 0)")
    assert "1 partition: 1 with nothing cleanable (the dirty range is empty)" in flat(r.out)
    assert (pdir / "00000000000000000000.log").read_bytes() == before
    r = run_cli("compact", "--config", "cleanup.policy=compact", "--config", f"min.compaction.lag.ms={HOUR}",
                "--force", "--now", str(NOW + 2 * HOUR), str(pdir))
    assert r.code == 0, r.out + r.err
    assert (pdir / "00000000000000000000.log").stat().st_size < len(before)


def test_a_timestamp_of_zero_is_a_timestamp(tmp_path):
    """``LogSegment.largestTimestamp`` (2.x–4.x) uses ``maxTimestampSoFar`` when it is ``>= 0``: records
    produced with CreateTime 0 make the segment as old as the epoch, not as old as its file's mtime."""
    logdir = tmp_path / "logdir"
    pdir = logdir / "epoch-0"
    w = PartitionWriter(pdir)
    w.append(build_batch(0, [RecordSpec(0, 0, b"k", b"v")]), mtime_ms=NOW)
    w.roll()
    w.append(build_batch(1, [RecordSpec(0, NOW, b"k", b"v")]), mtime_ms=NOW)
    w.close()
    shutil.copy(FIXTURES / "logdir" / "meta.properties", logdir / "meta.properties")
    (logdir / "replication-offset-checkpoint").write_text(build_offset_checkpoint({("epoch", 0): 2}))
    (logdir / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("epoch", 0): 2}))
    (logdir / ".kafka_cleanshutdown").write_bytes(b"")
    code, obj = retain_json(pdir)
    assert code == 0, obj
    first = obj["segments"][0]
    assert first["largest_timestamp"] == 0 and first["timestamp_source"] == "time index" and first["delete"]


def _single_replica_logdir(tmp_path: Path, replicas: list[int]) -> Path:
    """The slow topic's directory beside a KRaft metadata log naming topic slow, partition 0 with
    ``replicas``; this broker is node 1; replication-offset-checkpoint has no entry (a kill before the
    broker's first checkpoint of the partition)."""
    from kafkalog_formats.partition_metadata import build_partition_metadata
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES.parent / "tools" / "make_fixtures.py")
    mf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mf)
    pdir = slow_topic(tmp_path, clean_marker=True)
    logdir = pdir.parent
    (logdir / "replication-offset-checkpoint").write_text(build_offset_checkpoint({}))
    tid = mf.topic_id("slow")
    (pdir / "partition.metadata").write_text(build_partition_metadata(tid))
    meta = logdir / "__cluster_metadata-0"
    w = PartitionWriter(meta)
    recs = [mf.topic_record("slow"),
            mf.metadata_record(3, {"partitionId": 0, "topicId": tid, "replicas": replicas, "isr": replicas,
                                   "removingReplicas": [], "addingReplicas": [], "leader": replicas[0],
                                   "leaderEpoch": 0, "partitionEpoch": 0})]
    w.append(build_batch(0, [RecordSpec(i, T0, None, v) for i, v in enumerate(recs)]))
    w.close()
    return pdir


def test_a_sole_replica_after_a_kill_gets_its_log_end_as_high_watermark(tmp_path):
    """After a kill before the broker's first high-watermark checkpoint of a partition, the partition is not in
    replication-offset-checkpoint. A broker that is the partition's only replica (KRaft metadata) leads it
    with itself as the whole ISR and raises the high watermark to the log end at start-up
    (``Partition.makeLeader`` → ``maybeIncrementLeaderHW``): its retention then deletes what is old. With
    another replica the follower's progress is unknown offline: nothing goes (found by the broker test of
    retain after a kill, issue 22)."""
    pdir = _single_replica_logdir(tmp_path, [1])
    code, obj = retain_json(pdir, "--now", str(NOW + 3 * DAY))
    assert code == 0, obj
    assert obj["high_watermark"] == N and obj["segments"][0]["delete"]
    other = _single_replica_logdir(tmp_path / "two", [1, 2])
    code, obj = retain_json(other, "--now", str(NOW + 3 * DAY))
    assert code == 1 and obj["blocked"] and "only replica" in obj["blocked"]
