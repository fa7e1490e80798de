"""The schema layer of Kafka's generated messages (formats/kafka_message.py) and the record families built on
it: group coordinator, consumer protocol, transaction log, metadata records, KRaft control records, share
group state, remote log metadata.

* on every distinct internal-topic record of the real corpus and of the fixtures, the hot path
  (``Message.read``) and the declarative construct schema give the same value, and building that value
  gives back the stored bytes, byte for byte;
* Kafka's encoding rules (docs/kafka-on-disk.md §10.2-10.4 and Kafka's message generator) on bytes written here
  by hand: compact lengths, nullable markers, tagged fields, the metadata frame and its errors, reading a
  newer version;
* random bytes never make a decoder raise anything but ``FormatError``.
"""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_formats import consumer_protocol as cp
from kafkalog_formats import group_coordinator as gc
from kafkalog_formats import kraft_control as kc
from kafkalog_formats import remote_log_metadata as rlm
from kafkalog_formats import share_group_state as sg
from kafkalog_formats import transaction_log as tl
from kafkalog_formats.errors import FormatError
from kafkalog_formats.kafka_message import Message, field, versions
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.metadata_records import (RECORDS, build_metadata_record, by_name, read_metadata_record,
                                               type_name)

from conftest import CORPUS, FIXTURES, needs_corpus

FIXTURE_LOGDIR = FIXTURES / "logdir"


def _roots() -> list[Path]:
    return [FIXTURE_LOGDIR] + ([CORPUS] if CORPUS.is_dir() else [])


def _records(topic: str):
    """(file, record) of every data record in the .log/.checkpoint files of ``topic`` partitions."""
    for root in _roots():
        files = sorted(f for f in root.rglob("*") if f.is_file() and f.suffix in (".log", ".checkpoint")
                       and (f.parent.name.startswith(topic + "-")
                            or (topic == "__cluster_metadata" and f.name == "bootstrap.checkpoint")))
        for f in files:
            for batch in BatchReader(f.read_bytes()):
                for rec in batch.records():
                    yield f, batch, rec


def _distinct(topic: str, control: bool = False) -> list[tuple]:
    seen = {}
    for f, batch, rec in _records(topic):
        if batch.is_control == control:
            seen.setdefault((rec.key, rec.value), f)
    return list(seen.items())


def _same(msg: Message, data: bytes, version: int, start: int = 0) -> dict:
    """Hot path == construct schema, and the value builds back to the bytes."""
    fast, end = msg.read(data, version, start)
    assert fast == msg.parse(data[start:end], version)
    assert msg.build(fast, version) == data[start:end]
    return fast


COORDINATOR = _distinct("__consumer_offsets")
METADATA = _distinct("__cluster_metadata")
CONTROL = _distinct("__cluster_metadata", control=True)
TXN = _distinct("__transaction_state")


def test_the_fixtures_hold_every_record_family():
    """Without the real corpus, the fixtures alone still exercise every family these tests read."""
    fixture_coordinator = [r for r in COORDINATOR if r[1].is_relative_to(FIXTURE_LOGDIR)]
    assert fixture_coordinator and TXN and METADATA
    assert any(f.is_relative_to(FIXTURE_LOGDIR) for _r, f in METADATA)


@needs_corpus
def test_the_corpus_and_fixtures_hold_what_these_tests_need():
    assert len(COORDINATOR) > 50 and len(METADATA) > 40 and len(TXN) >= 8
    kinds = {struct.unpack(">h", k[:2])[0] for (k, _v), _f in COORDINATOR}
    assert set(range(16)) <= kinds                      # every group-coordinator record type
    assert {struct.unpack(">h", k[2:4])[0] for (k, _v), _f in CONTROL} >= {2, 3, 4, 5, 6}


@pytest.mark.parametrize("i", range(0, len(COORDINATOR), 500), ids=lambda i: f"from-{i}")
def test_coordinator_records_parse_identically_and_rebuild(i):
    for (key, value), f in COORDINATOR[i:i + 500]:
        k = gc.read_key(key)
        assert k.message is not None and k.unparsed == 0, f
        assert _same(k.message, key, k.version, 2) == k.data
        assert gc.build_key(k.version, k.data) == key
        if value is None:
            continue
        v = gc.read_value(k.version, value)
        assert v.unparsed == 0 and v.known_version, f
        _same(v.message, value, v.version, 2)
        assert gc.build_value(k.version, v.data, v.version) == value
        if k.version == gc.GROUP_METADATA and v.data["protocolType"] == cp.PROTOCOL_TYPE:
            for m in v.data["members"]:
                s, a = cp.read_subscription(m["subscription"]), cp.read_assignment(m["assignment"])
                _same(cp.Subscription, m["subscription"], s.version, 2)
                _same(cp.Assignment, m["assignment"], a.version, 2)
                assert cp.build_subscription(s.data, s.version) == m["subscription"]
                assert cp.build_assignment(a.data, a.version) == m["assignment"]


def test_metadata_records_parse_identically_and_rebuild():
    """Every distinct metadata record value of every __cluster_metadata segment, KRaft snapshot and
    bootstrap.checkpoint (docs/kafka-on-disk.md §10.2)."""
    seen_types = set()
    for (_key, value), f in METADATA:
        m = read_metadata_record(value)
        assert m.message is not None and m.known_version and m.unparsed == 0, f
        frame_len = len(value) - len(m.message.build(m.data, m.version))
        _same(m.message, value, m.version, frame_len)
        assert build_metadata_record(m.api_key, m.data, m.version) == value
        seen_types.add((m.api_key, m.version))
    every = {(k, v) for k, msg in RECORDS.items() for v in range(msg.valid.lo, msg.valid.hi + 1)}
    assert every <= seen_types                          # the fixture snapshot holds every type and version


def test_kraft_control_values_parse_identically_and_rebuild():
    for (key, value), f in CONTROL:
        ctype = struct.unpack(">h", key[2:4])[0]
        data = kc.read_control_value(ctype, value)
        _same(kc.MESSAGES[ctype], value, 0)
        assert kc.build_control_value(ctype, data) == value, f


def test_transaction_records_parse_identically_and_rebuild():
    statuses = set()
    for (key, value), _f in TXN:
        k = tl.read_key(key)
        _same(tl.Key, key, 0, 2)
        assert tl.build_key(k.data["transactionalId"]) == key
        if value is not None:
            v = tl.read_value(value)
            _same(tl.Value, value, v.version, 2)
            assert tl.build_value(v.data, v.version) == value
            statuses.add(v.data["transactionStatus"])
    assert statuses == set(tl.STATUS_NAMES)


# --- Kafka's encoding rules on hand-written bytes ----------------------------------------------------

def test_compact_and_classic_strings_and_nullability():
    flexible = Message("T", "0-1", "1+", [field("s", "string"), field("n", "string", nullable="0+")])
    # v0: int16 length, -1 null; v1: uvarint(length + 1), 0 null, then an empty tagged section
    assert flexible.build({"s": "ab", "n": None}, 0) == b"\x00\x02ab\xff\xff"
    assert flexible.build({"s": "ab", "n": None}, 1) == b"\x03ab\x00\x00"
    assert flexible.read(b"\x03ab\x00\x00", 1) == ({"s": "ab", "n": None}, 5)
    with pytest.raises(FormatError, match="non-nullable field s was serialized as null"):
        flexible.read(b"\x00\x00\x00", 1)
    with pytest.raises(FormatError, match="string field s had invalid length 32768"):
        flexible.read(b"\x81\x80\x02", 1)                # uvarint 32769 - 1


def test_arrays_refuse_counts_larger_than_the_bytes_left():
    m = Message("A", "0", "none", [field("xs", "[]int32")])
    assert m.read(b"\x00\x00\x00\x02\x00\x00\x00\x07\xff\xff\xff\xff", 0)[0] == {"xs": [7, -1]}
    with pytest.raises(FormatError, match="Tried to allocate a collection of size 100"):
        m.read(b"\x00\x00\x00\x64\x00\x00\x00\x07", 0)


def test_tagged_fields_are_written_when_not_default_in_tag_order_and_read_back_as_defaults():
    pc = by_name("PartitionChangeRecord")
    tid = "AAAAAAAAAAAAAAAAAAAAAQ"
    # leader -2 and every null list are defaults: nothing tagged
    assert pc.build({"partitionId": 3, "topicId": tid}, 0) == bytes.fromhex("00000003") + bytes(15) + b"\x01\x00"
    raw = pc.build({"partitionId": 3, "topicId": tid, "leader": 5, "isr": [1, 2]}, 0)
    # count 2; tag 0 (isr: compact array of 2 -> 03, 1, 2), tag 1 (leader: 4 bytes)
    assert raw[20:] == bytes.fromhex("02" "00" "09" "03" "00000001" "00000002" "01" "04" "00000005")
    data, _ = pc.read(raw, 0)
    assert data["leader"] == 5 and data["isr"] == [1, 2] and data["replicas"] is None
    assert data["leaderRecoveryState"] == -1                 # absent tagged field: its default
    assert pc.to_json(data, 0) == {"partitionId": 3, "topicId": tid, "isr": [1, 2], "leader": 5}
    # unknown tags are kept, rebuilt in tag order, and left out of the JSON
    with_unknown = raw[:20] + bytes.fromhex("03" "00" "09" "03" "00000001" "00000002" "01" "04" "00000005"
                                            "1e" "02" "abcd")
    data, _ = pc.read(with_unknown, 0)
    assert data["_unknownTaggedFields"] == [[30, b"\xab\xcd"]]
    assert pc.build(data, 0) == with_unknown and "_unknownTaggedFields" not in pc.to_json(data, 0)


def test_tagged_nullable_struct_uses_a_uvarint_marker():
    v = gc.VALUES[5]                                      # ConsumerGroupMemberMetadataValue
    data = {"clientId": "c", "clientHost": "h", "subscribedTopicNames": [],
            "classicMemberMetadata": {"sessionTimeoutMs": 9, "supportedProtocols": []}}
    raw = v.build(data, 0)
    # tagged section: 1 field, tag 0, size = 1 (marker) + 4 + 1 (empty array) + 1 (struct's tags), marker 1
    assert raw.endswith(bytes.fromhex("01" "00" "07" "01" "00000009" "01" "00"))
    assert v.read(raw, 0)[0]["classicMemberMetadata"] == {"sessionTimeoutMs": 9, "supportedProtocols": []}


def test_offset_commit_value_fields_by_version():
    """OffsetCommitValue: expireTimestamp only in v1, leaderEpoch from v3, flexible from v4 (§10.3)."""
    value = {"offset": 5, "leaderEpoch": 2, "metadata": "m", "commitTimestamp": 7, "expireTimestamp": 9}
    sizes = {v: len(gc.build_value(1, value, v)) for v in range(5)}
    assert sizes == {0: 2 + 8 + 3 + 8, 1: 2 + 8 + 3 + 8 + 8, 2: 2 + 8 + 3 + 8, 3: 2 + 8 + 4 + 3 + 8,
                     4: 2 + 8 + 4 + 2 + 8 + 1}
    assert set(gc.read_value(1, gc.build_value(1, value, 1)).data) == {"offset", "metadata", "commitTimestamp",
                                                                       "expireTimestamp"}


def test_metadata_frame_rules():
    """Frame version 1 only, Kafka's messages for 0 and others, garbage after a known version (§10.2)."""
    topic = build_metadata_record(2, {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    assert topic[:3] == b"\x01\x02\x00"
    with pytest.raises(FormatError, match="frame version 0. Note that upgrades from the preview release"):
        read_metadata_record(b"\x00" + topic[1:])
    with pytest.raises(FormatError, match="unknown frame version 2"):
        read_metadata_record(b"\x02" + topic[1:])
    with pytest.raises(FormatError, match=r"Found 2 byte\(s\) of garbage after 2"):
        read_metadata_record(topic + b"\x00\x00")
    unknown = read_metadata_record(b"\x01\x63\x00abc")
    assert unknown.message is None and unknown.api_key == 99 and unknown.unparsed == 3


def test_a_newer_version_is_read_with_the_fields_kafka_knows():
    """A version above the known range is read as the open ranges say ("3+"), as Kafka's generated
    readers do; what follows the known fields is counted, not refused."""
    body = by_name("TopicRecord").build({"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"}, 0)
    m = read_metadata_record(b"\x01\x02\x07" + body[:-1] + b"\x01\x05\x01\x00" + b"\xee\xee")
    assert (m.version, m.known_version, m.unparsed) == (7, False, 2)
    assert m.data == {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "_unknownTaggedFields": [[5, b"\x00"]]}
    v = gc.read_value(1, gc.build_value(1, {"offset": 1, "metadata": "", "commitTimestamp": 2}, 4)[:-1]
                      + b"\x00" + b"\x99")
    assert v.version == 4 and v.unparsed == 1


def test_share_group_and_remote_log_metadata_round_trip():
    key = sg.build_key(0, {"groupId": "g", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 3})
    assert sg.read_key(key).data == {"groupId": "g", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 3}
    snap = {"snapshotEpoch": 1, "stateEpoch": 2, "leaderEpoch": 3, "startOffset": 40,
            "stateBatches": [{"firstOffset": 40, "lastOffset": 49, "deliveryState": 2, "deliveryCount": 1}]}
    assert sg.read_value(0, sg.build_value(0, snap)).data == snap
    seg = {"remoteLogSegmentId": {"topicIdPartition": {"name": "t", "id": "AAAAAAAAAAAAAAAAAAAAAQ",
                                                       "partition": 0}, "id": "AAAAAAAAAAAAAAAAAAAAAg"},
           "startOffset": 0, "endOffset": 99, "brokerId": 1, "maxTimestampMs": 5, "eventTimestampMs": 6,
           "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0}], "segmentSizeInBytes": 4096,
           "customMetadata": None, "remoteLogSegmentState": 0}
    raw = rlm.build_remote_log_metadata(0, seg)
    m = rlm.read_remote_log_metadata(raw)
    assert m.name == "REMOTE_LOG_SEGMENT_METADATA_RECORD" and m.data == seg
    _same(rlm.RECORDS[0], raw, 0, 3)


def test_dump_log_type_names():
    assert type_name("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
    assert type_name("KRaftVersionRecord") == "KRAFT_VERSION_RECORD"
    assert [type_name(RECORDS[k].name) for k in (0, 2, 17)] == [
        "REGISTER_BROKER_RECORD", "TOPIC_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"]


def test_version_ranges():
    assert 5 in versions("3+") and 2 not in versions("3+") and versions("none").empty
    assert str(versions("0-2")) == "0-2" and 1 not in versions("0")


# --- fuzz ---------------------------------------------------------------------------------------------

ALL_MESSAGES = ([(m, v) for m in RECORDS.values() for v in (m.valid.lo, m.valid.hi, m.valid.hi + 1)]
                + [(m, v) for t, m in gc.VALUES.items() for v in (m.valid.lo, m.valid.hi + 1)]
                + [(m, t) for t, m in gc.KEYS.items()]
                + [(cp.Subscription, v) for v in range(5)] + [(cp.Assignment, v) for v in range(5)]
                + [(tl.Value, v) for v in range(3)] + [(m, 0) for m in kc.MESSAGES.values()]
                + [(m, v) for m in list(sg.VALUES.values()) + list(rlm.RECORDS.values()) for v in (0, 1)])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ALL_MESSAGES), st.binary(max_size=96))
def test_random_bytes_raise_only_format_errors(mv, data):
    msg, version = mv
    try:
        msg.read(data, version)
    except FormatError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_random_metadata_values_raise_only_format_errors(data):
    for read in (read_metadata_record, rlm.read_remote_log_metadata):
        try:
            read(data)
        except FormatError:
            pass
