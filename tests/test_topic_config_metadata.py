"""KRaft metadata replay for topic configurations: real brokers' ``__cluster_metadata-0`` from
../shared/corpus/real and a synthetic metadata log (written with our writer) with config changes, deletions,
metadata transactions, a torn tail and a snapshot in the middle.

Expected values follow Kafka's loader (MetadataLoader/MetadataBatchLoader, TopicsDelta, ConfigurationsDelta,
KafkaMetadataLog.recoverSnapshots, OffsetAndEpoch ordering) and, for the real topics, what Kafka itself writes
when it creates them (GroupCoordinator.offsetsTopicConfigs; Kafka Streams' windowed changelog configs).
"""
from __future__ import annotations

import shutil
import struct

import pytest

from conftest import CORPUS, needs_corpus
from kafkalog_cli.engine.config_resolver import ConfigResolver
from kafkalog_cli.engine.metadata_replay import MetadataError, replay_metadata
from kafkalog_cli.layout import kraft_snapshot_name
from kafkalog_cli.repair.log_writer import PartitionWriter
from kafkalog_formats import control as ctl
from kafkalog_formats.metadata_records import build_metadata_record
from kafkalog_formats.partition_metadata import build_partition_metadata
from kafkalog_formats.record_batch import RecordSpec, build_batch

T0 = 1_700_000_000_000
ID_A, ID_B, ID_G = "AAAAAAAAAAAAAAAAAAAAAQ", "BBBBBBBBBBBBBBBBBBBBBA", "GGGGGGGGGGGGGGGGGGGGGA"


def topic(name, tid):
    return build_metadata_record(2, {"name": name, "topicId": tid})


def part(tid, p=0):
    return build_metadata_record(3, {"partitionId": p, "topicId": tid, "replicas": [1], "isr": [1],
                                     "removingReplicas": [], "addingReplicas": [], "leader": 1,
                                     "leaderEpoch": 0, "partitionEpoch": 0})


def config(name, key, value, rtype=2):
    return build_metadata_record(4, {"resourceType": rtype, "resourceName": name, "name": key, "value": value})


def remove(tid):
    return build_metadata_record(9, {"topicId": tid})


BEGIN, END, ABORT = (build_metadata_record(23, {}), build_metadata_record(24, {}), build_metadata_record(25, {}))


def write_log(d, first_offset, values, epoch=1):
    """One batch per record value, from ``first_offset`` on."""
    w = PartitionWriter(d, write_snapshots=False)
    for i, v in enumerate(values):
        w.append(build_batch(first_offset + i, [RecordSpec(0, T0 + i, None, v)], partition_leader_epoch=epoch))
    w.close(snapshot=False)


def write_snapshot(d, end_offset, epoch, values):
    header = build_batch(0, [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_HEADER),
                                        struct.pack(">hq", 0, T0) + b"\x00")], is_control=True,
                         partition_leader_epoch=epoch)
    body = build_batch(1, [RecordSpec(i, T0, None, v) for i, v in enumerate(values)], partition_leader_epoch=epoch)
    footer = build_batch(1 + len(values), [RecordSpec(0, T0, ctl.build_control_key(ctl.SNAPSHOT_FOOTER),
                                                      struct.pack(">h", 0) + b"\x00")],
                         is_control=True, partition_leader_epoch=epoch)
    (d / kraft_snapshot_name(end_offset, epoch)).write_bytes(header + body + footer)


def quorum_state(d, voters):
    (d / "quorum-state").write_text('{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,'
                                    '"currentVoters":[' + ",".join('{"voterId":%d}' % v for v in voters) +
                                    '],"data_version":0}')


SNAPSHOT = [topic("orders", ID_A), part(ID_A), config("orders", "retention.ms", "1000"),
            config("orders", "cleanup.policy", "compact"), config("", "log.retention.ms", "5000", rtype=4),
            topic("gone", ID_G), part(ID_G)]
LOG_AFTER = [
    config("orders", "retention.ms", None),                       # 6: delete the override
    config("orders", "segment.bytes", "1048576"),                 # 7
    config("1", "log.retention.ms", "7000", rtype=4),             # 8: this broker's own dynamic config
    remove(ID_G),                                                 # 9
    BEGIN, config("orders", "min.compaction.lag.ms", "5"), ABORT,  # 10-12: aborted, not applied
    BEGIN, config("orders", "delete.retention.ms", "10"), END,     # 13-15: applied
    remove(ID_A),                                                 # 16: orders deleted with its configs
    topic("orders", ID_B), part(ID_B),                            # 17-18: recreated under a new id
    config("orders", "cleanup.policy", "delete"),                 # 19
    config("orders", "retention.ms", "2000"),                     # 20
    BEGIN, config("orders", "retention.ms", "1"),                 # 21-22: never ended
]


@pytest.fixture
def logdir(tmp_path):
    ld = tmp_path / "logs"
    md = ld / "__cluster_metadata-0"
    md.mkdir(parents=True)
    (ld / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    write_snapshot(md, 6, 1, SNAPSHOT)
    write_log(md, 6, LOG_AFTER)
    with open(md / "00000000000000000006.log", "ab") as f:      # a torn tail: a partial batch
        f.write(b"\x00" * 8 + b"\x00\x00\x01\x00" + b"\x01" * 20)
    quorum_state(md, [1])
    return ld


def partition_dir(ld, name, tid):
    d = ld / name
    d.mkdir()
    (d / "partition.metadata").write_text(build_partition_metadata(tid))
    return d


def test_synthetic_log_snapshot_then_changes_and_deletions(logdir):
    md = replay_metadata(logdir / "__cluster_metadata-0", node_id=1)
    assert md.snapshot == kraft_snapshot_name(6, 1) and md.snapshot_end_offset == 6
    assert md.uncertain_from is None                    # one voter, this broker
    assert md.topics["orders"].topic_id == ID_B and set(md.topics) == {"orders"}
    assert md.removed[ID_A][0] == "orders" and md.removed[ID_A][1].offset == 16
    assert md.removed[ID_G][1].offset == 9
    orders = md.topic_configs("orders")
    assert {k: v.value for k, v in orders.items()} == {"cleanup.policy": "delete", "retention.ms": "2000"}
    assert orders["retention.ms"].origin.offset == 20
    assert any("transaction begun at offset 21" in n for n in md.notes)
    assert any("not applied from there on" in n for n in md.notes)      # the torn tail
    assert md.next_offset == 23


def test_synthetic_resolution_by_partition_directory(logdir):
    live = partition_dir(logdir, "orders-0", ID_B)
    r = ConfigResolver.open(logdir)
    pc = r.partition(live)
    assert pc.status == "live" and pc.topic_id == ID_B
    cfg = pc.config
    assert cfg.delete and not cfg.compact
    assert cfg.value("retention.ms") == 2000 and "metadata log offset 20" in str(cfg["retention.ms"].source)
    # configs of the deleted incarnation are gone with it (ConfigurationsDelta deleteAll)
    assert cfg.value("segment.bytes") == 1 << 30 and cfg.value("delete.retention.ms") == 86_400_000
    assert cfg.value("min.compaction.lag.ms") == 0
    # a topic without overrides gets this broker's dynamic log.retention.ms over the cluster-wide one
    other = r.topic("payments")
    assert other.value("retention.ms") == 7000 and other["retention.ms"].source.kind == "broker"


def test_the_replay_keeps_the_topics_of_the_disk_and_answers_as_if_it_kept_every_one(tmp_path):
    """Issue 39: a resolver keeps of the metadata only the topics of its log directory's partition
    directories (by name and by the topic id of their partition.metadata) and the internal ones, so a
    metadata log of millions of topics costs this disk's topics. What it answers is what a resolver keeping
    every topic answers, for those directories and, through such a resolver opened when asked, for any
    other topic or directory."""
    logdir = tmp_path / "logs"
    d = logdir / "__cluster_metadata-0"
    d.mkdir(parents=True)
    (logdir / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    quorum_state(d, [1])
    write_log(d, 0, SNAPSHOT + LOG_AFTER[:15] + [         # (LOG_AFTER without its open transaction)
                      topic("__consumer_offsets", "CCCCCCCCCCCCCCCCCCCCCA"), part("CCCCCCCCCCCCCCCCCCCCCA"),
                      topic("payments", "PPPPPPPPPPPPPPPPPPPPPA"), part("PPPPPPPPPPPPPPPPPPPPPA"),
                      config("payments", "retention.ms", "123"),
                      BEGIN, topic("refunds", "RRRRRRRRRRRRRRRRRRRRRA"), part("RRRRRRRRRRRRRRRRRRRRRA"),
                      config("refunds", "retention.ms", "9"), END])
    orders = partition_dir(logdir, "orders-0", ID_B)
    gone = partition_dir(logdir, "gone-0", ID_G)                      # by id: a deleted topic's leftover
    r, every = ConfigResolver.open(logdir), ConfigResolver.open(logdir, every_topic=True)
    assert set(r.metadata.topics) == {"orders", "__consumer_offsets"}
    assert set(every.metadata.topics) == {"orders", "__consumer_offsets", "payments", "refunds"}
    assert set(r.metadata.configs) == {c for c in every.metadata.configs if c[1] not in ("payments", "refunds")}
    for directory in (orders, gone):
        assert r.partition(directory) == every.partition(directory)
    assert r.internal_partitions("__consumer_offsets", "offsets.topic.num.partitions").value == 1
    assert r._every_topic is None                       # nothing asked beyond the disk yet
    assert r.topic("payments").value("retention.ms") == 123 == every.topic("payments").value("retention.ms")
    (tmp_path / "elsewhere").mkdir()
    other = partition_dir(tmp_path / "elsewhere", "refunds-0", "RRRRRRRRRRRRRRRRRRRRRA")
    assert r.partition(other) == every.partition(other) and r.partition(other).config.value("retention.ms") == 9


def test_directory_of_a_deleted_incarnation_is_reported(logdir):
    old = partition_dir(logdir, "orders-1", ID_A)
    gone = partition_dir(logdir, "gone-0", ID_G)
    r = ConfigResolver.open(logdir)
    pc = r.partition(old)
    assert pc.status == "deleted_topic" and "offset 16" in pc.message and ID_B in pc.message
    assert r.partition(gone).status == "deleted_topic"
    stranger = partition_dir(logdir, "stranger-0", "SSSSSSSSSSSSSSSSSSSSSA")
    assert r.partition(stranger).status == "unknown_topic"


def test_replay_stopped_earlier_sees_the_first_incarnation(logdir):
    md = replay_metadata(logdir / "__cluster_metadata-0", node_id=1, up_to_offset=15)
    assert md.topics["orders"].topic_id == ID_A and "gone" not in md.topics
    assert {k: v.value for k, v in md.topic_configs("orders").items()} == {
        "cleanup.policy": "compact", "segment.bytes": "1048576", "delete.retention.ms": "10"}
    r = ConfigResolver.open(logdir, metadata_up_to=15)
    cfg = r.topic("orders")
    assert cfg.compact and cfg.value("retention.ms") == 7000 and cfg.value("segment.bytes") == 1048576


def test_snapshot_supersedes_the_log_before_its_end(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    write_log(d, 0, [topic("early", ID_A), config("early", "retention.ms", "1"), topic("later", ID_B)])
    write_snapshot(d, 2, 1, [topic("snap", ID_G)])
    md = replay_metadata(d, node_id=1)
    assert set(md.topics) == {"snap", "later"}          # the log is read from the snapshot's end offset


def test_latest_snapshot_is_the_greatest_epoch_then_offset(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    write_snapshot(d, 8, 1, [topic("from-epoch-1", ID_A)])
    write_snapshot(d, 4, 2, [topic("from-epoch-2", ID_B)])
    (d / (kraft_snapshot_name(9, 3) + ".part")).write_bytes(b"partial")
    (d / (kraft_snapshot_name(9, 4) + ".deleted")).write_bytes(b"gone")
    md = replay_metadata(d, node_id=1)
    assert md.snapshot == kraft_snapshot_name(4, 2) and set(md.topics) == {"from-epoch-2"}


def test_snapshot_below_the_log_start_is_not_used(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    write_snapshot(d, 3, 1, [topic("old", ID_A)])
    write_snapshot(d, 10, 1, [topic("current", ID_B)])
    write_log(d, 10, [topic("after", ID_G)])
    md = replay_metadata(d, node_id=1)
    assert set(md.topics) == {"current", "after"}
    shutil.rmtree(d)
    d.mkdir()
    write_log(d, 10, [topic("after", ID_G)])
    with pytest.raises(MetadataError):                  # "Inconsistent snapshot state"
        replay_metadata(d, node_id=1)


def test_multi_voter_quorum_marks_the_log_after_the_snapshot_uncertain(logdir):
    quorum_state(logdir / "__cluster_metadata-0", [1, 2, 3])
    partition_dir(logdir, "orders-0", ID_B)
    r = ConfigResolver.open(logdir)
    assert r.metadata.uncertain_from == 6
    src = str(r.topic("orders")["retention.ms"].source)
    assert "not known to be committed" in src
    assert any("not known to be committed" in s for s in r.sources)


def test_corrupt_snapshot_is_an_error(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    write_snapshot(d, 3, 1, [topic("t", ID_A)])
    p = d / kraft_snapshot_name(3, 1)
    data = bytearray(p.read_bytes())
    data[-10] ^= 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(MetadataError):
        replay_metadata(d, node_id=1)


# --- real brokers' metadata ------------------------------------------------------------------------

YASHASVI = CORPUS / "Yashasvi960__kafka-service" / "kafka-data"
CHANGELOG = "my-kafka-streams-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"


@needs_corpus
def test_real_kraft_broker_compacted_and_streams_changelog_topics():
    r = ConfigResolver.open(YASHASVI)
    assert r.node_id == 1 and r.metadata.snapshot == "00000000000000010830-0000000003.checkpoint"
    co = r.partition(YASHASVI / "__consumer_offsets-0")
    # Kafka creates __consumer_offsets with cleanup.policy=compact and offsets.topic.segment.bytes (100 MiB)
    assert co.status == "live" and co.config.compact and not co.config.delete
    assert co.config.value("segment.bytes") == 100 * 1024 * 1024
    assert co.config["cleanup.policy"].source.kind == "topic"
    # Kafka Streams: a windowed store's changelog is compact,delete with retention = window + 1 day
    ch = r.partition(YASHASVI / f"{CHANGELOG}-0")
    assert ch.status == "live" and ch.config.compact and ch.config.delete
    assert ch.config.value("retention.ms") == 86_400_000 + 30_000
    assert ch.config.value("segment.bytes") == 1 << 30 and ch.config["segment.bytes"].source.kind == "kafka_default"
    # the cluster-wide dynamic broker default (ConfigRecord BROKER "") applies to every topic
    assert ch.config.value("min.insync.replicas") == 1 and ch.config["min.insync.replicas"].source.kind == \
        "cluster_default"
    assert r.partition(YASHASVI / "__cluster_metadata-0").config.managed_by_kraft


@needs_corpus
def test_real_topic_deleted_and_recreated(tmp_path):
    md_dir = YASHASVI / "__cluster_metadata-0"
    before = replay_metadata(md_dir, node_id=1, up_to_offset=5700)     # the RemoveTopicRecord is at 5676
    assert "vehicle.telemetry" not in before.topics
    old_id = "1DWgupWVSRykljwZzLYBVQ"
    assert before.removed[old_id][0] == "vehicle.telemetry"
    after = replay_metadata(md_dir, node_id=1, up_to_offset=5800)      # recreated at 5746
    assert after.topics["vehicle.telemetry"].topic_id == "5RxlknBbTbWdXzza5ANNpQ"
    assert replay_metadata(md_dir, node_id=1).topics["vehicle.telemetry"].topic_id == "5RxlknBbTbWdXzza5ANNpQ"
    # a directory left by the first incarnation, in a copy of the log directory
    ld = tmp_path / "kafka-data"
    ld.mkdir()
    shutil.copy(YASHASVI / "meta.properties", ld)
    shutil.copytree(md_dir, ld / "__cluster_metadata-0")
    d = ld / "vehicle.telemetry-0"
    d.mkdir()
    (d / "partition.metadata").write_text(build_partition_metadata(old_id))
    r = ConfigResolver.open(ld, metadata_up_to=5800)
    pc = r.partition(d)
    assert pc.status == "deleted_topic" and "5RxlknBbTbWdXzza5ANNpQ" in pc.message


@needs_corpus
@pytest.mark.parametrize("logdir,snapshot", [
    ("Niloufar1171__LDI-POC", None),                                       # log only, no snapshot
    ("gozieokafor__data-store/kafka-data", "00000000000000063224-0000000009.checkpoint"),  # snapshots only
])
def test_real_consumer_offsets_is_compacted(logdir, snapshot):
    r = ConfigResolver.open(CORPUS / logdir)
    assert r.metadata.snapshot == snapshot
    cfg = r.partition(CORPUS / logdir / "__consumer_offsets-1").config
    assert cfg.compact and cfg.value("segment.bytes") == 100 * 1024 * 1024
    assert cfg.value("compression.type") == "producer"
