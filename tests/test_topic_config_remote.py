"""Tiered storage facts for retention: tiered topics from the resolved configuration and the highest offset
uploaded to remote storage, replayed from ``__remote_log_metadata`` partitions written with our writer.

Expected values follow RemoteLogMetadataCache / RemoteLogLeaderEpochState (only COPY_SEGMENT_FINISHED
segments raise an epoch's highest offset; deletion does not lower it; invalid state transitions are
dropped), RemoteLogManager.findHighestRemoteOffset (latest local epoch first, capped by the epoch's end
offset), UnifiedLog.deletableSegments (upper bound - 1 ≤ highest offset in remote storage) and the consumer's
view of a partition (records below the high watermark only).
"""
from __future__ import annotations

import pytest

from kafkalog_cli.engine.config_resolver import ConfigResolver
from kafkalog_cli.engine.remote_storage import (RemotePartition, is_uploaded, metadata_partition_for, murmur2,
                                                parse_remote_offset_override)
from kafkalog_cli.repair.log_writer import PartitionWriter
from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.partition_metadata import build_partition_metadata
from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_formats.remote_log_metadata import build_remote_log_metadata
from test_topic_config_metadata import config, part, quorum_state, topic, write_log

T0 = 1_700_000_000_000
TIERED, RLM = "TTTTTTTTTTTTTTTTTTTTTQ", "RRRRRRRRRRRRRRRRRRRRRQ"
STARTED, FINISHED, DEL_STARTED, DEL_FINISHED = 0, 1, 2, 3


def seg_id(topic_name, tid, p, sid):
    return {"topicIdPartition": {"name": topic_name, "id": tid, "partition": p}, "id": sid}


def segment(p, sid, start, end, epochs):
    return build_remote_log_metadata(0, {
        "remoteLogSegmentId": seg_id("tiered", TIERED, p, sid), "startOffset": start, "endOffset": end,
        "brokerId": 1, "maxTimestampMs": T0, "eventTimestampMs": T0,
        "segmentLeaderEpochs": [{"leaderEpoch": e, "offset": o} for e, o in epochs],
        "segmentSizeInBytes": 1000, "customMetadata": None, "remoteLogSegmentState": STARTED})


def update(p, sid, state):
    return build_remote_log_metadata(1, {"remoteLogSegmentId": seg_id("tiered", TIERED, p, sid), "brokerId": 1,
                                         "eventTimestampMs": T0, "customMetadata": None,
                                         "remoteLogSegmentState": state})


S1, S2, S3 = "S1S1S1S1S1S1S1S1S1S1SQ", "S2S2S2S2S2S2S2S2S2S2SQ", "S3S3S3S3S3S3S3S3S3S3SQ"
RLM_RECORDS = [
    segment(0, S1, 0, 99, [(0, 0)]), update(0, S1, FINISHED),                       # 0-1: 0..99 uploaded
    segment(0, S2, 100, 199, [(0, 100), (1, 150)]),                                 # 2: copy started only
    segment(1, S3, 0, 49, [(0, 0)]), update(1, S3, FINISHED),                       # 3-4
    update(1, S3, DEL_STARTED), update(1, S3, DEL_FINISHED),                        # 5-6: deleted later
    update(0, S1, STARTED),                                                         # 7: invalid, dropped
    update(0, S2, FINISHED),                                                        # 8: 100..199 uploaded
]


def build(tmp_path, hw, *, server_props=None, remote_dir=True):
    ld = tmp_path / "logs"
    md = ld / "__cluster_metadata-0"
    md.mkdir(parents=True)
    (ld / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    write_log(md, 0, [topic("tiered", TIERED), part(TIERED, 0), part(TIERED, 1),
                      config("tiered", "remote.storage.enable", "true"), config("tiered", "retention.ms", "-1"),
                      config("tiered", "local.retention.ms", "1000"),
                      topic("__remote_log_metadata", RLM), part(RLM, 0)])
    quorum_state(md, [1])
    if remote_dir:
        w = PartitionWriter(ld / "__remote_log_metadata-0", write_snapshots=False)
        for i, v in enumerate(RLM_RECORDS):
            w.append(build_batch(i, [RecordSpec(0, T0 + i, None, v)]))
        w.close(snapshot=False)
        (ld / "replication-offset-checkpoint").write_text(
            build_offset_checkpoint({("__remote_log_metadata", 0): hw}))
    for p in (0, 1):
        d = ld / f"tiered-{p}"
        w = PartitionWriter(d, write_snapshots=False)
        for base in range(0, 250, 50):
            if base in (100, 200):
                w.roll()
            w.append(build_batch(base, [RecordSpec(i, T0 + base + i, b"k", b"v") for i in range(50)],
                                 partition_leader_epoch=0 if base < 150 else 1))
        w.close(snapshot=False)
        (d / "partition.metadata").write_text(build_partition_metadata(TIERED))
    sp = None
    if server_props is not None:
        sp = tmp_path / "server.properties"
        sp.write_text(server_props)
    return ld, sp


def test_highest_uploaded_offset_follows_kafkas_cache(tmp_path):
    ld, sp = build(tmp_path, hw=9, server_props="remote.log.storage.system.enable=true\n")
    r = ConfigResolver.open(ld, server_properties=sp)
    pc = r.partition(ld / "tiered-0")
    assert pc.tiered and pc.config.remote_copy_enabled
    assert pc.config.local_retention("ms").value == 1000
    # S1 (0..99, epoch 0) finished, S2 finished too (offset 8 < high watermark 9): epoch 1 highest = 199,
    # the local epoch 1 ends at the log end (250) > 199 -> 199
    assert pc.remote.offset == 199 and "__remote_log_metadata" in pc.remote.source
    # tiered-1: S3 was uploaded (0..49) then deleted; deletion does not lower the epoch's highest offset.
    # Its local epoch 1 has nothing remote; epoch 0 has 49, and epoch 0 ends at 150 locally -> 49
    assert r.partition(ld / "tiered-1").remote.offset == 49


def test_records_at_or_above_the_high_watermark_are_not_seen(tmp_path):
    ld, sp = build(tmp_path, hw=8, server_props="remote.log.storage.system.enable=true\n")
    r = ConfigResolver.open(ld, server_properties=sp)
    # S2's COPY_SEGMENT_FINISHED (offset 8) is not committed: epoch 1 unknown, epoch 0 -> 99 (< its end 150)
    assert r.partition(ld / "tiered-0").remote.offset == 99


def test_upload_gate_for_each_local_segment(tmp_path):
    ld, sp = build(tmp_path, hw=8, server_props="remote.log.storage.system.enable=true\n")
    highest = ConfigResolver.open(ld, server_properties=sp).partition(ld / "tiered-0").remote.offset
    # local segments 0-99, 100-199, 200-249 (active): only the first is known to be uploaded
    assert [is_uploaded(upper, highest) for upper in (100, 200, 250)] == [True, False, False]
    assert not is_uploaded(100, None) and not is_uploaded(0, 5)


def test_override_wins_and_unknown_without_remote_metadata(tmp_path):
    ld, sp = build(tmp_path, hw=9, remote_dir=False)
    r = ConfigResolver.open(ld)
    pc = r.partition(ld / "tiered-0")
    assert pc.tiered and "unknown" in pc.config.tiered_reason      # no server.properties: assumed tiered
    assert pc.remote.offset is None
    r = ConfigResolver.open(ld, remote_offsets=["tiered-0:120"])
    assert r.partition(ld / "tiered-0").remote.offset == 120
    assert r.partition(ld / "tiered-1").remote.offset is None


def test_not_tiered_when_the_broker_has_tiered_storage_off(tmp_path):
    ld, sp = build(tmp_path, hw=9, server_props="remote.log.storage.system.enable=false\n")
    pc = ConfigResolver.open(ld, server_properties=sp).partition(ld / "tiered-0")
    assert not pc.tiered and pc.remote is None
    assert pc.config.local_retention("ms").value == -1          # retention.ms itself when not tiered


def test_find_highest_remote_offset_caps_at_the_local_epoch_end():
    rp = RemotePartition("t", TIERED, 0, epoch_highest={0: 99})
    assert rp.highest_offset([(0, 0), (1, 50)], 300) == 49       # epoch 0 ends at 50 locally
    assert rp.highest_offset([(0, 0)], 300) == 99
    assert rp.highest_offset([(2, 0)], 300) == -1                # no local epoch known remotely
    assert rp.highest_offset([], 300) == -1


def test_murmur2_matches_kafkas_test_vectors():
    # Kafka's UtilsTest.testMurmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def test_metadata_partition_is_in_range_and_stable():
    tid = bytes(range(16))
    parts = {metadata_partition_for(tid, p, 50) for p in range(200)}
    assert parts <= set(range(50)) and len(parts) > 25
    assert metadata_partition_for(tid, 3, 1) == 0


@pytest.mark.parametrize("spec,ok", [("orders-0:100", ("orders", 0, 100)), ("my-topic-12:-1", ("my-topic", 12, -1)),
                                     ("orders:5", None), ("orders-0", None), ("orders-0:x", None),
                                     ("orders-0:-2", None)])
def test_remote_offset_override_form(spec, ok):
    if ok:
        assert parse_remote_offset_override(spec) == ok
    else:
        with pytest.raises(ValueError):
            parse_remote_offset_override(spec)
