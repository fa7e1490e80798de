"""Side files: .txnindex, producer .snapshot, checkpoints, meta.properties, partition.metadata,
quorum-state and .kafka_cleanshutdown — samples, parity, Kafka's error messages, the real corpus."""
from __future__ import annotations

import json
import re
import struct
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
from construct import ChecksumError
from hypothesis import given, settings, strategies as st

from kafkalog_formats import producer_snapshot as ps, txn_index as tx
from kafkalog_formats.checkpoint import (EpochEntry, build_checkpoint, build_leader_epoch_checkpoint,
                                         build_offset_checkpoint, parse_checkpoint,
                                         parse_leader_epoch_checkpoint, parse_offset_checkpoint)
from kafkalog_formats.clean_shutdown import CleanShutdown, build_clean_shutdown, parse_clean_shutdown
from kafkalog_formats.errors import FormatError
from kafkalog_formats.meta_properties import (MetaProperties, build_meta_properties, java_date,
                                              load_properties, parse_meta_properties, store_properties)
from kafkalog_formats.partition_metadata import (METADATA_TOPIC_ID, build_partition_metadata,
                                                 kafka_base64_to_uuid, parse_partition_metadata,
                                                 uuid_to_kafka_base64)
from kafkalog_formats.quorum_state import build_quorum_state, parse_quorum_state

from conftest import CORPUS  # noqa: E402  (honours KAFKALOG_SHARED)
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real broker corpus not found at {CORPUS}")
KRAFT_SNAPSHOT = re.compile(r"\d{20}-\d{10}\.checkpoint")

I64 = st.integers(-2**63, 2**63 - 1)
I32 = st.integers(-2**31, 2**31 - 1)
I16 = st.integers(-2**15, 2**15 - 1)


def _raises(kind: str, message: str | None, fn, *args, **kwargs) -> FormatError:
    with pytest.raises(FormatError) as e:
        fn(*args, **kwargs)
    assert e.value.kind == kind
    if message is not None:
        assert e.value.reason == message
    return e.value


# === .txnindex ====================================================================================

TXN_SAMPLE = bytes.fromhex("0000" "00000000000003e8" "0000000000000096" "00000000000000af" "0000000000000096")


def test_txn_sample_parses_to_documented_values_both_ways():
    expected = tx.AbortedTxn(0, 1000, 150, 175, 150)
    assert tx.parse_txn_index(TXN_SAMPLE) == [expected]
    (schema,) = tx.TxnIndex.parse(TXN_SAMPLE)
    assert tuple(schema[f] for f in tx.AbortedTxn._fields) == tuple(expected)
    assert tx.txn_index_array(TXN_SAMPLE).tolist() == [tuple(expected)]
    assert str(expected) == ("AbortedTxn(version=0, producerId=1000, firstOffset=150, lastOffset=175, "
                             "lastStableOffset=150)")


def test_txn_sample_rebuilt_byte_for_byte_by_both_builders():
    assert tx.build_txn_index([tx.AbortedTxn(0, 1000, 150, 175, 150)]) == TXN_SAMPLE
    assert tx.TxnIndex.build([dict(version=0, producer_id=1000, first_offset=150, last_offset=175,
                                   last_stable_offset=150)]) == TXN_SAMPLE


def test_txn_partial_entry_ignored_and_version_checked():
    assert tx.parse_txn_index(TXN_SAMPLE + TXN_SAMPLE[:20]) == [tx.AbortedTxn(0, 1000, 150, 175, 150)]
    assert tx.parse_txn_index(b"") == []
    v1 = b"\x00\x01" + TXN_SAMPLE[2:]
    err = _raises("txn_index_version", "Unexpected aborted transaction version 1 in transaction index "
                  "/d/t-0/00000000000000000100.txnindex, current version is 0",
                  tx.parse_txn_index, TXN_SAMPLE + v1, "/d/t-0/00000000000000000100.txnindex")
    assert err.position == 34


def test_txn_sanity_message():
    entries = tx.parse_txn_index(TXN_SAMPLE)
    assert tx.txn_index_sanity(entries, 100, "/p/x.txnindex") is None
    assert tx.txn_index_sanity(entries, 175, "/p/x.txnindex") is None
    assert tx.txn_index_sanity(entries, 176, "/p/x.txnindex") == (
        "Last offset of aborted transaction AbortedTxn(version=0, producerId=1000, firstOffset=150, "
        "lastOffset=175, lastStableOffset=150) in index /p/x.txnindex is less than start offset 176")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.just(0), I64, I64, I64, I64), max_size=30))
def test_txn_schema_and_fast_path_agree(entries):
    fast = tx.build_txn_index(entries)
    schema = tx.TxnIndex.build([dict(zip(tx.AbortedTxn._fields, e)) for e in entries])
    assert fast == schema
    assert tx.parse_txn_index(fast) == entries == tx.txn_index_array(fast).tolist()
    assert [tuple(getattr(c, f) for f in tx.AbortedTxn._fields) for c in tx.TxnIndex.parse(fast)] == entries


def test_txn_build_rejects_out_of_range():
    _raises("txn_index_value_range", None, tx.build_txn_index, [(0, 2**63, 0, 0, 0)])


# === producer .snapshot ===========================================================================

SNAPSHOT_SAMPLE = bytes.fromhex(
    "00015a94969b0000000100000000000003e800000000000900000000000000af"
    "000000090000018bcfe56805" "00000005" "ffffffffffffffff")
SAMPLE_ENTRY = ps.ProducerStateEntry(1000, 0, 9, 175, 9, 1700000000005, 5, -1)


def test_snapshot_sample_parses_to_documented_values_both_ways():
    assert len(SNAPSHOT_SAMPLE) == 56
    data = ps.parse_producer_snapshot(SNAPSHOT_SAMPLE)
    assert data == ps.ProducerSnapshotData(1, 0x5A94969B, 1519687323, [SAMPLE_ENTRY])
    parsed = ps.ProducerSnapshot.parse(SNAPSHOT_SAMPLE)
    assert (parsed.version, parsed.crc) == (1, 0x5A94969B)
    (entry,) = parsed.body.value.entries
    assert tuple(entry[f] for f in ps.ProducerStateEntry._fields) == SAMPLE_ENTRY


def test_snapshot_sample_rebuilt_byte_for_byte_by_both_builders():
    assert ps.build_producer_snapshot([SAMPLE_ENTRY]) == SNAPSHOT_SAMPLE
    built = ps.ProducerSnapshot.build(dict(version=1, body=dict(value=dict(
        entries=[SAMPLE_ENTRY._asdict()]))))
    assert built == SNAPSHOT_SAMPLE


def test_empty_snapshot_matches_the_brokers_bytes():
    # every empty snapshot in the corpus is exactly these 10 bytes
    assert ps.build_producer_snapshot([]) == bytes.fromhex("000148674bc700000000")
    assert ps.parse_producer_snapshot(bytes.fromhex("000148674bc700000000")).entries == []


def test_snapshot_flipped_crc_and_body_bytes():
    bad_crc = bytearray(SNAPSHOT_SAMPLE)
    bad_crc[5] ^= 0x01
    err = _raises("snapshot_crc", "Snapshot is corrupt (CRC is no longer valid). Stored crc: 1519687322. "
                  "Computed crc: 1519687323", ps.parse_producer_snapshot, bytes(bad_crc))
    assert err.position == 2
    with pytest.raises(ChecksumError):
        ps.ProducerSnapshot.parse(bytes(bad_crc))
    bad_body = bytearray(SNAPSHOT_SAMPLE)
    bad_body[20] ^= 0x80
    err = _raises("snapshot_crc", None, ps.parse_producer_snapshot, bytes(bad_body))
    assert err.reason.startswith("Snapshot is corrupt (CRC is no longer valid). Stored crc: 1519687323. "
                                 "Computed crc: ")
    lenient = ps.parse_producer_snapshot(bytes(bad_body), verify_crc=False)
    assert lenient.crc != lenient.computed_crc and lenient.entries[0].last_sequence != 9


def test_snapshot_wrong_version():
    v2 = b"\x00\x02" + SNAPSHOT_SAMPLE[2:]          # the CRC does not cover the version
    _raises("snapshot_schema", "Snapshot failed schema validation: Snapshot contained an unknown file version 2",
            ps.parse_producer_snapshot, v2)


def test_snapshot_every_truncation_is_a_schema_error():
    for n in range(len(SNAPSHOT_SAMPLE)):
        err = _raises("snapshot_schema", None, ps.parse_producer_snapshot, SNAPSHOT_SAMPLE[:n])
        assert err.reason.startswith("Snapshot failed schema validation: Error reading field '")
    _raises("snapshot_schema", "Snapshot failed schema validation: Error reading field 'version': "
            "java.nio.BufferUnderflowException", ps.parse_producer_snapshot, b"\x00")
    _raises("snapshot_schema", "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "Error reading array of size 1, only 0 bytes available", ps.parse_producer_snapshot,
            SNAPSHOT_SAMPLE[:10])
    _raises("snapshot_schema", "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "Error reading field 'last_offset': java.nio.BufferUnderflowException",
            ps.parse_producer_snapshot, SNAPSHOT_SAMPLE[:30])
    negative = SNAPSHOT_SAMPLE[:6] + struct.pack(">i", -1) + SNAPSHOT_SAMPLE[10:]
    _raises("snapshot_schema", "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "Array size -1 cannot be negative", ps.parse_producer_snapshot, negative)


entry_strategy = st.tuples(I64, I16, I32, I64, I32, I64, I32, I64)


@settings(max_examples=60, deadline=None)
@given(st.lists(entry_strategy, max_size=20))
def test_snapshot_schema_and_fast_path_agree(entries):
    fast = ps.build_producer_snapshot(entries)
    schema = ps.ProducerSnapshot.build(dict(version=1, body=dict(value=dict(
        entries=[dict(zip(ps.ProducerStateEntry._fields, e)) for e in entries]))))
    assert fast == schema
    data = ps.parse_producer_snapshot(fast)
    assert data.entries == entries and data.crc == data.computed_crc
    parsed = ps.ProducerSnapshot.parse(fast)
    assert parsed.crc == data.crc
    assert [tuple(c[f] for f in ps.ProducerStateEntry._fields) for c in parsed.body.value.entries] == entries


# === checkpoints ==================================================================================

def test_offset_checkpoint_build_is_sorted_and_round_trips():
    offsets = {("vehicle.avg.speed", 0): 5553, ("__consumer_offsets", 10): 0, ("__consumer_offsets", 2): 7,
               ("_confluent-license", 0): 1, ("Retry.TestTopicPatient", 0): 0}
    text = build_offset_checkpoint(offsets)
    assert text == ("0\n5\nRetry.TestTopicPatient 0 0\n__consumer_offsets 2 7\n__consumer_offsets 10 0\n"
                    "_confluent-license 0 1\nvehicle.avg.speed 0 5553\n")
    assert parse_offset_checkpoint(text, "/p") == offsets
    assert build_offset_checkpoint({}) == "0\n0\n"
    _raises("checkpoint_value", None, build_offset_checkpoint, {("bad topic", 0): 1})
    _raises("checkpoint_value", None, build_offset_checkpoint, {("t", 2**31): 1})


def test_checkpoint_reader_edge_cases_follow_kafka():
    assert parse_offset_checkpoint("", "/p") == {}
    assert parse_offset_checkpoint("0\n", "/p") == {}                 # no count line: still no entries
    assert parse_offset_checkpoint(b"0\r\n1\r\nt\t3   9\r\n", "/p") == {("t", 3): 9}
    assert parse_offset_checkpoint("0\n1\nt 3 9", "/p") == {("t", 3): 9}  # no final newline
    assert parse_offset_checkpoint("0\n2\nt 1 5\nt 1 6\n", "/p") == {("t", 1): 6}
    assert parse_checkpoint("0\n2\na\nb c\n", "/p") == (0, ["a", "b c"])
    assert parse_checkpoint("", "/p") == (None, [])
    assert parse_checkpoint("3\n0\n", "/p", expected_version=3) == (3, [])


P = "/data/recovery-point-offset-checkpoint"


@pytest.mark.parametrize("line", ["t 1", "t 1 2 3", " t 1 2", "t x 2", "t 1 1_000", "t 2147483648 5",
                                  "t 1 9223372036854775808", "t 1 2.0", "t\u00a01 2", ""])
def test_malformed_offset_lines(line):
    _raises("checkpoint_malformed", f"Malformed line in checkpoint file [{P}]: {line}",
            parse_offset_checkpoint, f"0\n1\n{line}\n", P)


def test_checkpoint_version_count_and_header_errors():
    _raises("checkpoint_version", f"Unrecognised version:1, expected version: 0 in checkpoint file at: {P}",
            parse_offset_checkpoint, "1\n0\n", P)
    _raises("checkpoint_malformed", f"Malformed line in checkpoint file [{P}]: zero", parse_offset_checkpoint,
            "zero\n0\n", P)
    _raises("checkpoint_malformed", f"Malformed line in checkpoint file [{P}]: 1 ", parse_offset_checkpoint,
            "0\n1 \nt 0 0\n", P)
    _raises("checkpoint_count", f"Expected [3] entries in checkpoint file [{P}], but found only [2]",
            parse_offset_checkpoint, "0\n3\nt 0 1\nt 1 1\n", P)
    _raises("checkpoint_count", f"Expected [1] entries in checkpoint file [{P}], but found only [2]",
            parse_offset_checkpoint, "0\n1\nt 0 1\nt 1 1\n", P)
    # a malformed line is reported before the count is compared, as Kafka reads line by line
    _raises("checkpoint_malformed", None, parse_offset_checkpoint, "0\n5\nt 0 1\nbad\n", P)
    # a blank line is an entry line to Kafka, hence malformed
    _raises("checkpoint_malformed", f"Malformed line in checkpoint file [{P}]: ", parse_offset_checkpoint,
            "0\n1\nt 0 1\n\n", P)
    err = _raises("text_encoding", None, parse_offset_checkpoint, b"0\n1\n\xff 0 1\n", P)
    assert err.position == 4
    pos = _raises("checkpoint_malformed", None, parse_offset_checkpoint, "0\n2\nt 0 1\nbad\n", P).position
    assert pos == len("0\n2\nt 0 1\n")


def test_leader_epoch_checkpoint_round_trip_and_errors():
    text = "0\n3\n8 0\n10 60\n12 64\n"
    assert parse_leader_epoch_checkpoint(text, "/p") == [(8, 0), (10, 60), (12, 64)]
    assert parse_leader_epoch_checkpoint(text, "/p")[1] == EpochEntry(epoch=10, start_offset=60)
    assert build_leader_epoch_checkpoint([(8, 0), (10, 60), (12, 64)]) == text
    assert parse_leader_epoch_checkpoint("", "/p") == []
    assert parse_leader_epoch_checkpoint("0\n0\n", "/p") == []
    _raises("checkpoint_malformed", "Malformed line in checkpoint file [/p]: 1 2 3",
            parse_leader_epoch_checkpoint, "0\n1\n1 2 3\n", "/p")
    _raises("checkpoint_value", None, build_leader_epoch_checkpoint, [(2**31, 0)])
    assert build_checkpoint(7, ["x"]) == "7\n1\nx\n"


TOPIC = st.text(alphabet="abcxyzABCXYZ0189._-", min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.tuples(TOPIC, st.integers(0, 2**31 - 1)),
                       st.integers(-2**63, 2**63 - 1), max_size=25))
def test_offset_checkpoint_round_trip_property(offsets):
    text = build_offset_checkpoint(offsets)
    assert parse_offset_checkpoint(text, "/p") == offsets
    assert build_offset_checkpoint(parse_offset_checkpoint(text, "/p")) == text


# === meta.properties ==============================================================================

def test_meta_properties_versions_and_fields():
    v0 = parse_meta_properties("#\n#Wed Apr 22 11:14:59 CDT 2020\ncluster.id=lRaQCIBoRh2xRKLuP9CAQg\n"
                               "version=0\nbroker.id=0\n")
    assert (v0.version, v0.broker_id, v0.node_id, v0.cluster_id) == (0, 0, 0, "lRaQCIBoRh2xRKLuP9CAQg")
    no_version = parse_meta_properties("broker.id=7\n")
    assert (no_version.version, no_version.broker_id, no_version.cluster_id) == (0, 7, None)
    assert parse_meta_properties("version=0\n").node_id is None
    v1 = parse_meta_properties("node.id=3\nversion=1\ncluster.id=q1w2e3r4t5y6u7i8o9p0\n"
                               "directory.id=XHhkr4tkSsD900pOQ8pPfg\n")
    assert (v1.version, v1.node_id, v1.broker_id, v1.directory_id) == (1, 3, None, "XHhkr4tkSsD900pOQ8pPfg")


@pytest.mark.parametrize("text, message", [
    ("version=2\nnode.id=1\ncluster.id=c\n", "Unknown meta.properties version number 2"),
    ("version=x\n", "Invalid meta.properties version string 'x'"),
    ("version=1\nnode.id=1\n", "cluster.id was not found."),
    ("version=1\ncluster.id=c\n", "node.id was not found."),
    ("version=0\nbroker.id=abc\n", "Unable to read broker.id as a base-10 number."),
    ("version=1\nnode.id= 1x\ncluster.id=c\n", "Unable to read node.id as a base-10 number."),
    ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=AAAA\n",
     "Unable to read directory.id as a Uuid: Input string `AAAA` decoded as 3 bytes, which is not equal to "
     "the expected 16 bytes of a base64-encoded UUID"),
    ("broker.id=\\u12G4\n", "Malformed \\uxxxx encoding."),
])
def test_bad_meta_properties(text, message):
    _raises("meta_properties", message, parse_meta_properties, text)


def test_java_properties_syntax():
    text = ("  # comment\n! also a comment\n\n"
            "a=1\n"
            "b : 2\n"
            "c 3\n"
            "d\\=x=4\n"
            "e=multi \\\n    line\n"
            "f=\\u0041\\t\\z\n"
            "g\n"
            "h=trailing \n"
            "a=override\r\n"
            "k\\ ey=v=w\n")
    assert load_properties(text) == {"a": "override", "b": "2", "c": "3", "d=x": "4", "e": "multi line",
                                     "f": "A\tz", "g": "", "h": "trailing ", "k ey": "v=w"}
    assert load_properties(b"k=caf\xe9\n") == {"k": "caf\u00e9"}      # ISO-8859-1, never a decode error


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=12), max_size=8))
def test_store_then_load_round_trips_any_text(props):
    assert load_properties(store_properties(props, "Thu Jan 01 00:00:00 UTC 1970")) == props
    assert load_properties(store_properties(props, "d", escape_unicode=False)) == props


def test_meta_properties_build():
    meta = MetaProperties(1, 1, "59e89b28-0084-46-5e-ba95-e812b7283840", "BjblrhBkm9Zc7HPgzt5Y6Q")
    text = build_meta_properties(meta, "Sat Feb 22 23:38:33 UTC 2025")
    assert text == ("#\n#Sat Feb 22 23:38:33 UTC 2025\nnode.id=1\ndirectory.id=BjblrhBkm9Zc7HPgzt5Y6Q\n"
                    "version=1\ncluster.id=59e89b28-0084-46-5e-ba95-e812b7283840\n")
    assert parse_meta_properties(text) == meta
    assert java_date(datetime(2025, 2, 22, 23, 38, 33, tzinfo=timezone.utc)) == "Sat Feb 22 23:38:33 UTC 2025"
    with pytest.raises(FormatError):
        build_meta_properties(MetaProperties(1, 1, None, None), "d")


# === partition.metadata ===========================================================================

def test_partition_metadata_parse_and_build():
    text = "version: 0\ntopic_id: gSnfpEbtQfSDpxM2lhEn9A"
    pm = parse_partition_metadata(text, "/p")
    assert (pm.version, pm.topic_id) == (0, "gSnfpEbtQfSDpxM2lhEn9A")
    assert build_partition_metadata(pm.topic_uuid) == text == build_partition_metadata("gSnfpEbtQfSDpxM2lhEn9A")
    assert parse_partition_metadata("version: 0\ntopic_id: gSnfpEbtQfSDpxM2lhEn9A\n").topic_id == pm.topic_id
    assert parse_partition_metadata("whatever:\t3\nx:  gSnfpEbtQfSDpxM2lhEn9A").version == 3


@pytest.mark.parametrize("text, message", [
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "Invalid topic ID in partition metadata file (/p)"),
    ("version: -1\ntopic_id: gSnfpEbtQfSDpxM2lhEn9A", "Unrecognized version of partition metadata file (/p): -1"),
    ("version:0\ntopic_id: gSnfpEbtQfSDpxM2lhEn9A", "Malformed line in checkpoint file (/p): 'version:0'"),
    ("version: zero\ntopic_id: gSnfpEbtQfSDpxM2lhEn9A", "Malformed line in checkpoint file (/p): 'version: zero'"),
    ("version: 0\ntopic_id gSnfpEbtQfSDpxM2lhEn9A",
     "Malformed line in checkpoint file (/p): 'topic_id gSnfpEbtQfSDpxM2lhEn9A'"),
    ("version: 0", "Malformed line in checkpoint file (/p): 'version: 0'"),
    ("", "Malformed line in checkpoint file (/p): ''"),
    ("version: 0\ntopic_id: gSnfpEbtQfSDpxM2lhEn9+", "Illegal base64 character 2b"),
    ("version: 0\ntopic_id: gSnfpEbtQfSDpxM2lhEn9Agggggg",
     "Input string with prefix `gSnfpEbtQfSDpxM2lhEn9Agg` is too long to be decoded as a base64 UUID"),
])
def test_bad_partition_metadata(text, message):
    _raises("partition_metadata", message, parse_partition_metadata, text, "/p")


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_uuid_base64_round_trip(raw):
    text = uuid_to_kafka_base64(raw)
    assert len(text) == 22 and kafka_base64_to_uuid(text) == raw
    assert kafka_base64_to_uuid(text + "==") == raw              # Java's decoder accepts padding


def test_uuid_helpers_against_the_uuid_module():
    assert uuid_to_kafka_base64(uuid.UUID(int=1).bytes) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_to_kafka_base64(uuid.UUID(int=2**128 - 1).bytes) == "_____________________w"
    assert METADATA_TOPIC_ID == uuid.UUID(int=1).bytes
    assert kafka_base64_to_uuid("gSnfpEbtQfSDpxM2lhEn9A").hex() == "8129dfa446ed41f483a71336961127f4"


# === quorum-state =================================================================================

def test_quorum_state_v0_and_v1():
    v0 = ('{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
          '"currentVoters":[{"voterId":1}],"data_version":0}')
    assert parse_quorum_state(v0)["leaderEpoch"] == 2
    assert build_quorum_state(parse_quorum_state(v0)) == v0
    v1 = '{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"XHhkr4tkSsD900pOQ8pPfg","data_version":1}'
    assert parse_quorum_state(v1)["votedDirectoryId"] == "XHhkr4tkSsD900pOQ8pPfg"
    shuffled = dict(reversed(list(json.loads(v1).items())))
    assert build_quorum_state(shuffled) == v1
    assert parse_quorum_state(v0.replace('"currentVoters":[{"voterId":1}]', '"currentVoters":null'))


@pytest.mark.parametrize("text, message", [
    ('{"leaderId":1}', 'Deserialized node {"leaderId":1} does not have data_version field'),
    ('[1]', "Deserialized node [1] is not an object node"),
    ('{"leaderId":1,"leaderEpoch":2,"votedId":1,"data_version":2}',
     "data_version (2) is not within the min (0) and max (1) supported version"),
    ('{"leaderEpoch":2,"votedId":1,"votedDirectoryId":"XHhkr4tkSsD900pOQ8pPfg","data_version":1}',
     "QuorumStateData: unable to locate field 'leaderId', which is mandatory in version 1"),
    ('{"leaderId":-1,"leaderEpoch":2,"votedId":1,"data_version":0}',
     "QuorumStateData: unable to locate field 'clusterId', which is mandatory in version 0"),
    ('{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[{}],'
     '"data_version":0}', "Voter: unable to locate field 'voterId', which is mandatory in version 0"),
])
def test_bad_quorum_state(text, message):
    _raises("quorum_state", message, parse_quorum_state, text)


def test_quorum_state_bad_json_and_types():
    _raises("quorum_state", None, parse_quorum_state, '{"leaderId":')
    err = _raises("quorum_state", None, parse_quorum_state,
                  '{"leaderId":"1","leaderEpoch":2,"votedId":1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
                  '"data_version":1}')
    assert "leaderId" in err.reason


# === .kafka_cleanshutdown =========================================================================

def test_clean_shutdown_forms():
    assert parse_clean_shutdown(b"") == CleanShutdown(None, None)
    assert build_clean_shutdown() == ""
    text = build_clean_shutdown(42)
    assert text == '{"version":0,"brokerEpoch":42}'
    parsed = parse_clean_shutdown(text)
    assert (parsed.version, parsed.broker_epoch) == (0, 42)
    _raises("clean_shutdown", None, parse_clean_shutdown, "{not json")
    _raises("clean_shutdown", None, parse_clean_shutdown, "[]")
    _raises("clean_shutdown", None, parse_clean_shutdown, '{"version":0,"brokerEpoch":"x"}')
    _raises("clean_shutdown", None, parse_clean_shutdown, "[" * 100_000)
    _raises("quorum_state", None, parse_quorum_state, "[" * 100_000 + "]" * 100_000)
    _raises("text_encoding", None, parse_clean_shutdown, b"\xc3")


# === robustness: nothing but FormatError escapes ==================================================

@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=120))
def test_binary_decoders_raise_only_format_error(data):
    for fn in (ps.parse_producer_snapshot, tx.parse_txn_index):
        try:
            fn(data)
        except FormatError:
            pass


FRAGMENTS = ["0", "1", "t 0 1", "1 5", " ", "version: 0", "topic_id: AAAAAAAAAAAAAAAAAAAAAQ", "a=b", "\\u00",
             "{", "}", '"data_version":1', "\r"]


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.text(max_size=80), st.binary(max_size=80),
                 st.lists(st.sampled_from(FRAGMENTS), max_size=6).map("\n".join)))
def test_text_decoders_raise_only_format_error(text):
    for fn in (parse_offset_checkpoint, parse_leader_epoch_checkpoint, parse_meta_properties,
               parse_partition_metadata, parse_quorum_state, parse_clean_shutdown):
        try:
            fn(text)
        except FormatError:
            pass


# === the real corpus ==============================================================================

def _files(pred) -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and pred(p.name))


@needs_corpus
def test_every_corpus_snapshot_parses_and_rebuilds_byte_for_byte():
    files = _files(lambda n: n.endswith(".snapshot"))
    assert len(files) >= 40
    for p in files:
        data = p.read_bytes()
        snap = ps.parse_producer_snapshot(data)
        assert snap.crc == snap.computed_crc, p
        assert ps.build_producer_snapshot(snap.entries) == data, p
        assert ps.ProducerSnapshot.build(dict(version=1, body=dict(value=dict(
            entries=[e._asdict() for e in snap.entries])))) == data, p
    d = ps.parse_producer_snapshot((CORPUS / "DonaldY__kafka-2.7.1" / "kafka-logs" / "myTopic-0"
                                    / "00000000000000000038.snapshot").read_bytes())
    assert d.entries[0] == (4001, 0, 11, 11, 2, 1670068129797, -1, -1)
    assert [e.producer_id for e in d.entries] == [4001, 4002, 4003]
    g = ps.parse_producer_snapshot((CORPUS / "gozieokafor__data-store" / "kafka-data" / "input-topic-0"
                                    / "00000000000000000009.snapshot").read_bytes())
    assert {e.producer_id: e.last_offset for e in g.entries} == {0: 2, 2000: 8, 1: 3, 2: 4, 1000: 7}


@needs_corpus
def test_every_corpus_txnindex_parses():
    files = _files(lambda n: n.endswith(".txnindex"))
    if not files:
        pytest.skip("the real corpus holds no .txnindex file (no aborted transactions were recorded)")
    for p in files:
        entries = tx.parse_txn_index(p.read_bytes(), str(p))
        assert tx.txn_index_sanity(entries, int(p.name[:20]), str(p)) is None


@needs_corpus
def test_every_corpus_checkpoint_parses():
    offset_files = _files(lambda n: n.endswith("offset-checkpoint"))
    epoch_files = _files(lambda n: n == "leader-epoch-checkpoint")
    skipped = _files(lambda n: n.endswith(".checkpoint"))
    assert len(offset_files) >= 40 and len(epoch_files) >= 380
    assert skipped and all(KRAFT_SNAPSHOT.fullmatch(p.name) or p.name == "bootstrap.checkpoint" for p in skipped)
    for p in offset_files:
        offsets = parse_offset_checkpoint(p.read_bytes(), str(p))
        assert parse_offset_checkpoint(build_offset_checkpoint(offsets), str(p)) == offsets
    empty = 0
    for p in epoch_files:
        data = p.read_bytes()
        entries = parse_leader_epoch_checkpoint(data, str(p))
        empty += not data
        if data:
            assert build_leader_epoch_checkpoint(entries).encode() == data, p
    assert empty == 50                                       # William0423's zero-length files

    r = CORPUS / "anujparmar545__kafka-pos-simulator" / "tmp" / "kafka-logs-1" / "replication-offset-checkpoint"
    rep = parse_offset_checkpoint(r.read_text(), str(r))
    assert len(rep) == 19 and rep[("pos", 1)] == 885 and rep[("pos", 2)] == 1018
    y = CORPUS / "Yashasvi960__kafka-service" / "kafka-data"
    assert parse_offset_checkpoint((y / "replication-offset-checkpoint").read_text())[("vehicle.avg.speed", 0)] == 5553
    assert parse_leader_epoch_checkpoint((y / "__consumer_offsets-29" / "leader-epoch-checkpoint").read_text()) == [
        (8, 0), (10, 60), (12, 64)]
    s = CORPUS / "SharaWeil__kafka-0.11.0" / "data" / "recovery-point-offset-checkpoint"
    assert parse_offset_checkpoint(s.read_text()) == {("test0", 1): 11, ("test0", 0): 11, ("mac_test", 0): 78,
                                                      ("test0", 2): 11}


@needs_corpus
def test_every_corpus_meta_properties_parses_and_rebuilds_byte_for_byte():
    files = _files(lambda n: n == "meta.properties")
    assert len(files) == 11
    orders = {}
    for p in files:
        data = p.read_bytes()
        meta = parse_meta_properties(data)
        date = data.decode("latin-1").splitlines()[1][1:]
        matches = [o for o in ("java8", "java9", "sorted")
                   if build_meta_properties(meta, date, key_order=o).encode("latin-1") == data]
        assert matches, p
        orders[p.relative_to(CORPUS).parts[0]] = matches
    assert orders["VolodymyrZee__kafka"] == ["java8"]                 # 2020: Hashtable order
    assert "java9" in orders["Niloufar1171__LDI-POC"]                 # ConcurrentHashMap order
    assert orders["Yashasvi960__kafka-service"] == ["sorted"]         # Java 18+ sorts the keys
    by_repo = {p.relative_to(CORPUS).parts[0] + "/" + p.parent.name: parse_meta_properties(p.read_bytes())
               for p in files}
    assert by_repo["anujparmar545__kafka-pos-simulator/kafka-logs-2"].broker_id == 2
    assert by_repo["anujparmar545__kafka-pos-simulator/kafka-logs-2"].cluster_id == "Cjr9FJ_zRqi5sM-SI7BTXw"
    odd = by_repo["gozieokafor__data-store/kafka-data"]
    assert (odd.version, odd.node_id, odd.cluster_id) == (1, 1, "59e89b28-0084-46-5e-ba95-e812b7283840")
    assert by_repo["William0423__kafka/kafka-logs"].cluster_id is None
    assert by_repo["SharaWeil__kafka-0.11.0/data"] == MetaProperties(0, 0, None, None)


@needs_corpus
def test_every_corpus_partition_metadata_parses_and_rebuilds_byte_for_byte():
    files = _files(lambda n: n == "partition.metadata")
    assert len(files) == 164
    for p in files:
        data = p.read_bytes()
        pm = parse_partition_metadata(data, str(p))
        assert build_partition_metadata(pm.topic_uuid, pm.version).encode() == data, p
    n = CORPUS / "Niloufar1171__LDI-POC"
    assert parse_partition_metadata((n / "__consumer_offsets-4" / "partition.metadata").read_text()).topic_id \
        == "gSnfpEbtQfSDpxM2lhEn9A"
    meta = parse_partition_metadata((n / "__cluster_metadata-0" / "partition.metadata").read_text())
    assert meta.topic_uuid == METADATA_TOPIC_ID


@needs_corpus
def test_every_corpus_quorum_state_and_clean_shutdown():
    qs = _files(lambda n: n == "quorum-state")
    assert len(qs) == 3
    for p in qs:
        data = p.read_bytes()
        assert build_quorum_state(parse_quorum_state(data)).encode() == data, p
    g = parse_quorum_state((CORPUS / "gozieokafor__data-store" / "kafka-data" / "__cluster_metadata-0"
                            / "quorum-state").read_text())
    assert (g["leaderId"], g["leaderEpoch"], g["currentVoters"], g["data_version"]) == (1, 15, [{"voterId": 1}], 0)
    cs = _files(lambda n: n == ".kafka_cleanshutdown")
    assert len(cs) == 3
    assert all(parse_clean_shutdown(p.read_bytes()) == CleanShutdown(None, None) for p in cs)
