"""dump-log on the verified byte samples of shared/docs/byte-samples.md, against the expected output
printed there (Kafka 3.2+ Scala tool; we leave out its stray ``}`` after legacy record CRCs)."""
from __future__ import annotations

import json
import struct

import pytest

from kafkalog_formats.record_batch import RecordSpec, build_batch

from conftest import FIXTURES, run_cli

# Hex dumps copied from byte-samples.md (samples 1-4): the spec's bytes, not our writer's.
SAMPLE1 = bytes.fromhex(
    "0000000000000000 0000004d 00000000 02 da8719ec 0000 00000001 0000018bcfe56800 0000018bcfe56805"
    " ffffffffffffffff ffff ffffffff 00000002"
    " 1e 00 00 00 046b31 047631 02 046831 0278 16 00 0a 02 01 0a68656c6c6f 00")
SAMPLE2 = bytes.fromhex(
    "0000000000000002 00000042 00000000 02 4e0746d7 0030 00000000 0000018bcfe56864 0000018bcfe56864"
    " 00000000000003e8 0000 ffffffff 00000001 20 000000 0800000001 0c000000000005 00")
SAMPLE3 = bytes.fromhex("0000000000000005 00000019 3e731674 01 00 0000018bcfe56800 00000001 6b 00000002 7631")
SAMPLE4 = bytes.fromhex("0000000000000006 00000013 87a77ab2 00 00 ffffffff 00000005 68656c6c6f")

EXPECTED_V2 = """\
Dumping {f}
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000005 size: 89 magic: 2 compresscodec: none crc: 3666287084 isvalid: true
| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [h1] key: k1 payload: v1
| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: hello
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 89 CreateTime: 1700000000100 size: 78 magic: 2 compresscodec: none crc: 1309099735 isvalid: true
| offset: 2 CreateTime: 1700000000100 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5
"""

EXPECTED_LEGACY = """\
Dumping {f}
Log starting offset: 5
offset: 5 position: 0 CreateTime: 1700000000000 size: 37 magic: 1 compresscodec: none crc: 1047729780 isvalid: true
| offset: 5 CreateTime: 1700000000000 keySize: 1 valueSize: 2 isValid: true crc: 1047729780 key: k payload: v1
offset: 6 position: 37 NoTimestampType: -1 size: 31 magic: 0 compresscodec: none crc: 2275900082 isvalid: true
| offset: 6 NoTimestampType: -1 keySize: -1 valueSize: 5 isValid: true crc: 2275900082 payload: hello
"""


@pytest.fixture
def v2log(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(SAMPLE1 + SAMPLE2)
    return f


def test_sample_sizes_match_spec():
    assert (len(SAMPLE1), len(SAMPLE2), len(SAMPLE3), len(SAMPLE4)) == (89, 78, 37, 31)


def test_committed_sample_fixtures_are_the_spec_bytes():
    assert (FIXTURES / "samples/00000000000000000000.log").read_bytes() == SAMPLE1 + SAMPLE2
    assert (FIXTURES / "samples/00000000000000000005.log").read_bytes() == SAMPLE3 + SAMPLE4


def test_our_writer_builds_sample1_byte_for_byte():
    built = build_batch(0, [RecordSpec(0, 1700000000000, b"k1", b"v1", ((b"h1", b"x"),)),
                            RecordSpec(1, 1700000000005, None, b"hello")])
    assert built == SAMPLE1


def test_v2_print_data_log_matches_kafka(v2log):
    r = run_cli("dump-log", "--print-data-log", str(v2log))
    assert r.code == 0
    assert r.out == EXPECTED_V2.format(f=v2log)
    assert r.err == ""


def test_files_option_as_in_kafka(v2log):
    r = run_cli("dump-log", "--print-data-log", "--files", str(v2log))
    assert r.out == EXPECTED_V2.format(f=v2log)


def test_v2_without_deep_iteration_prints_batches_only(v2log):
    lines = EXPECTED_V2.format(f=v2log).splitlines()
    r = run_cli("dump-log", str(v2log))
    assert r.out.splitlines() == [lines[0], lines[1], lines[2], lines[5]]


def test_skip_record_metadata_scala_layout(v2log):
    r = run_cli("dump-log", "--print-data-log", "--skip-record-metadata", str(v2log))
    lines = r.out.splitlines()
    assert lines[3:5] == ["| key: k1 payload: v1", " payload: hello"]
    assert lines[6] == ""           # the control record prints an empty line
    assert len(lines) == 7


def test_legacy_samples_match_kafka_without_stray_brace(tmp_path):
    f = tmp_path / "00000000000000000005.log"
    f.write_bytes(SAMPLE3 + SAMPLE4)
    r = run_cli("dump-log", "--print-data-log", str(f))
    assert r.code == 0
    assert r.out == EXPECTED_LEGACY.format(f=f)


def test_17_garbage_bytes_are_trailing_bytes(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(SAMPLE1 + SAMPLE2 + bytes(range(1, 18)))
    r = run_cli("dump-log", str(f))
    assert r.out.splitlines()[-1] == "Found 17 invalid bytes at the end of 00000000000000000000.log"
    assert r.code == 0 == run_cli("verify", str(f)).code     # a segment without indexes is recovered: the
                                                              # next start cuts the tail (a warning)


def test_max_bytes_slices_and_silences_trailing_message(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(SAMPLE1 + SAMPLE2 + bytes(range(1, 18)))
    r = run_cli("dump-log", "--max-bytes", "100", str(f))
    assert r.code == 0
    assert [ln for ln in r.out.splitlines() if ln.startswith("baseOffset")] == \
        [EXPECTED_V2.format(f=f).splitlines()[2]]
    assert "invalid bytes" not in r.out


def test_zero_tail_is_reported_not_a_crash(tmp_path):
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(SAMPLE1 + SAMPLE2 + bytes(18))
    r = run_cli("dump-log", str(f))
    assert r.code == 0 == run_cli("verify", str(f)).code     # the active segment: Kafka cuts a zero tail
    assert "position 167: Found record size 0 smaller than minimum record overhead (14)" in r.err
    assert r.out.count("baseOffset:") == 2


def test_flipped_bit_in_value_fails_crc_with_spec_value(tmp_path):
    data = bytearray(SAMPLE1)
    data[87] ^= 0x01
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(bytes(data))
    r = run_cli("dump-log", "--format", "json", str(f))
    batch = [json.loads(ln) for ln in r.out.splitlines() if '"type":"batch"' in ln][0]
    assert batch["crc_valid"] is False and batch["crc"] == 3666287084
    problems = [json.loads(ln) for ln in r.out.splitlines() if '"type":"problem"' in ln]
    assert problems[0]["kind"] == "crc_mismatch" and "computed crc = 3374678427" in problems[0]["message"]
    assert r.code == 0 == run_cli("verify", str(f)).code     # the active segment's last batch: a torn tail
    f.write_bytes(bytes(data) + SAMPLE2)                      # with an intact batch after it: an error
    assert run_cli("dump-log", str(f)).code == 1 == run_cli("verify", str(f)).code


def test_partition_leader_epoch_is_outside_the_crc(tmp_path):
    data = bytearray(SAMPLE1)
    struct.pack_into(">i", data, 12, 5)
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(bytes(data))
    r = run_cli("dump-log", str(f))
    assert "partitionLeaderEpoch: 5" in r.out and "isvalid: true" in r.out and r.code == 0


# --- side files (byte-samples.md "Extra samples for the side files") -------------------------------

INDEX_SAMPLE = bytes.fromhex("0000046e00000000000004b000001050")
TIMEINDEX_SAMPLE = bytes.fromhex("0000018bcfe56be7000004af")
TXN_SAMPLE = bytes.fromhex("0000" "00000000000003e8" "0000000000000096" "00000000000000af" "0000000000000096")
SNAPSHOT_SAMPLE = bytes.fromhex(
    "0001 5a94969b 00000001"
    " 00000000000003e8 0000 00000009 00000000000000af 00000009 0000018bcfe56805 00000005 ffffffffffffffff")


def _log_for_index_sample() -> bytes:
    """A segment at base 100 whose batches start where the sample index says: 1234 at 0, 1300 at 4176."""
    for n in range(4000, 4200):
        first = build_batch(1234, [RecordSpec(0, 1700000000000, None, b"x" * n)])
        if len(first) == 4176:
            break
    second = build_batch(1235, [RecordSpec(i, 1700000000999, None, b"y") for i in range(66)])
    return first + second


def test_index_sample_dump_lines(tmp_path):
    (tmp_path / "00000000000000000100.log").write_bytes(_log_for_index_sample())
    f = tmp_path / "00000000000000000100.index"
    f.write_bytes(INDEX_SAMPLE + bytes(16))          # untrimmed: the dumper stops at the zero tail
    r = run_cli("dump-log", str(f))
    assert r.out.splitlines()[1:] == ["offset: 1234 position: 0", "offset: 1300 position: 4176"]
    assert r.code == 0 and r.err == ""


def test_time_index_sample_dump_line(tmp_path):
    (tmp_path / "00000000000000000100.log").write_bytes(_log_for_index_sample())
    (tmp_path / "00000000000000000100.index").write_bytes(INDEX_SAMPLE)
    f = tmp_path / "00000000000000000100.timeindex"
    f.write_bytes(TIMEINDEX_SAMPLE)
    r = run_cli("dump-log", str(f))
    assert r.out.splitlines()[1:] == ["timestamp: 1700000000999 offset: 1299"]
    # offset 1299 is inside the batch ending at 1300: Kafka reports it as not found at that offset, and
    # exits 0 (so does dump-log: a lookup by that entry still finds the batch, verify's information)
    assert "Indexed offset: 1299, found log offset: 1300" in r.err
    assert r.code == 0 == run_cli("verify", str(f)).code


def test_txn_index_sample_dump_line(tmp_path):
    f = tmp_path / "00000000000000000100.txnindex"
    f.write_bytes(TXN_SAMPLE)
    r = run_cli("dump-log", str(f))
    assert r.out.splitlines()[1:] == [
        "version: 0 producerId: 1000 firstOffset: 150 lastOffset: 175 lastStableOffset: 150"]


def test_snapshot_sample_dump_line(tmp_path):
    f = tmp_path / "00000000000000000176.snapshot"
    f.write_bytes(SNAPSHOT_SAMPLE)
    r = run_cli("dump-log", str(f))
    assert r.out.splitlines()[1:] == [
        "producerId: 1000 producerEpoch: 0 coordinatorEpoch: 5 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1700000000005 firstSequence: 0 lastSequence: 9 lastOffset: 175 offsetDelta: 9 "
        "timestamp: 1700000000005"]


def test_corrupt_snapshot_is_reported_and_dump_continues(tmp_path):
    bad = bytearray(SNAPSHOT_SAMPLE)
    bad[20] ^= 0xFF
    f = tmp_path / "00000000000000000176.snapshot"
    f.write_bytes(bytes(bad))
    g = tmp_path / "00000000000000000100.txnindex"
    g.write_bytes(TXN_SAMPLE)
    r = run_cli("dump-log", str(f), str(g))
    assert "Snapshot is corrupt (CRC is no longer valid). Stored crc: 1519687323" in r.err
    assert "version: 0 producerId: 1000" in r.out
    assert r.code == 0 == run_cli("verify", str(f)).code     # Kafka deletes a corrupt snapshot: a warning


def test_index_sanity_check(tmp_path):
    f = tmp_path / "00000000000000000100.index"
    f.write_bytes(INDEX_SAMPLE + bytes(8))
    r = run_cli("dump-log", "--index-sanity-check", str(f))
    assert r.out.splitlines()[1] == f"{f} passed sanity check."
    g = tmp_path / "00000000000000000100.timeindex"
    g.write_bytes(TIMEINDEX_SAMPLE + bytes(12))     # untrimmed time index fails Kafka's check
    r = run_cli("dump-log", "--index-sanity-check", str(g))
    assert "has non-zero size but the last timestamp is 0 which is less than the first timestamp " \
           "1700000000999" in r.err
    assert r.code == 1


def test_empty_index_and_missing_companion(tmp_path):
    e = tmp_path / "00000000000000000000.index"
    e.write_bytes(b"")
    r = run_cli("dump-log", str(e))
    assert r.out.splitlines()[1] == f"{e} is empty." and r.code == 0
    f = tmp_path / "00000000000000000100.index"
    f.write_bytes(INDEX_SAMPLE)
    r = run_cli("dump-log", str(f))
    assert "its segment 00000000000000000100.log does not exist" in r.err and r.code == 1
    assert not (tmp_path / "00000000000000000100.log").exists()     # never creates files


def test_unknown_suffix_is_ignored_like_kafka(tmp_path):
    f = tmp_path / "00000000000000000000.log.deleted"
    f.write_bytes(SAMPLE1)
    r = run_cli("dump-log", str(f))
    assert r.out == f"Dumping {f}\n"
    ignoring, reason = r.err.splitlines()           # Kafka's line, then why nothing was read (exit 1)
    assert ignoring == f"Ignoring unknown file {f}"
    assert reason.startswith(f"kafkalog: {f}: nothing dumped: not a Kafka log file") and r.code == 1


def test_usage_errors_exit_2(tmp_path):
    assert run_cli("dump-log").code == 2
    assert run_cli("dump-log", str(tmp_path / "nope.log")).code == 2
    assert run_cli("dump-log", "--format", "xml", str(tmp_path)).code == 2
