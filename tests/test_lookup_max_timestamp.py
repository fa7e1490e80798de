"""``lookup-time max-timestamp`` (ListOffsets MAX_TIMESTAMP, -3, KIP-734) answers as the release that wrote the
log directory does (KAFKA-16310, commit 9a6760f, first in 3.8.0; not in 3.7.0, 3.7.1 nor the 3.7 branch).

* 3.0-3.7 (``UnifiedLog.fetchOffsetByTimestamp``): the first segment with the greatest ``maxTimestampSoFar``
  answers ``readMaxTimestampAndOffsetSoFar``: its time index's last entry when loaded as it is, or for a
  segment the broker recovers, the last offset of its first batch reaching that timestamp
  (``LogSegment.recover``). What the time index holds is what the leader passed to ``LogSegment.append``
  (``engine/index_rules.leader_offset_of_max_timestamp``): a batch's last offset on 3.7; on 0.11-3.6 the first
  record holding the batch's max timestamp for an uncompressed CreateTime batch.
* 3.8+: the first batch from that entry's offset-index position whose max timestamp is the greatest, and in it
  the first record holding it (``RecordBatch.offsetOfMaxTimestamp``).

Every partition is written by kafkalog's own writer with the index model of the Kafka leader named
(``repair.log_writer.PartitionWriter``); the broker test is
``tests/kafka/test_broker_generated.py::test_regression[max_timestamp_lookup_at_3_7]`` (3.7.0).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.engine.index_rules import leader_offset_of_max_timestamp
from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import flat, run_cli
from test_verify_kafka_writers import trusted
from test_views_rules import _registration

T0 = 1_700_000_000_000
GZIP = 1
#: (timestamps of each batch): the greatest, T0 + 10, first held by offset 4 inside the second batch (3-7),
#: and again by the whole batch 10-11 in the next segment (the first segment holding it wins)
BATCHES = [[T0, T0 + 1, T0 + 2], [T0 + 4, T0 + 10, T0 + 10, T0 + 10, T0 + 9], [T0 + 5, T0 + 6]]
LATER = [[T0 + 10, T0 + 10], [T0 + 7]]


def _partition(tmp_path: Path, kafka: str, *, codec: int = 0, clean: bool = True) -> Path:
    """t-0 in two segments as a leader of ``kafka`` appends it (one producer batch per append); ``clean``: a
    clean shutdown (Kafka loads every segment as it is), else no marker and recovery point 0 (Kafka recovers
    every segment at its next start)."""
    ld = tmp_path / "logdir"
    w = PartitionWriter(ld / "t-0", index_model="append", index_interval_bytes=100)
    off = 0
    for group in (BATCHES, LATER):
        if off:
            w.roll()
        for ts in group:
            raw = build_batch(off, [RecordSpec(j, t, f"k{off + j}".encode(), b"v" * 40) for j, t in enumerate(ts)],
                              codec=codec)
            view = next(iter(BatchReader(raw)))
            w.append_set([raw], offset_of_max_timestamp=leader_offset_of_max_timestamp(view, kafka))
            off += len(ts)
    w.close()
    trusted(ld, {"t-0": w.log_end_offset})
    if not clean:
        (ld / ".kafka_cleanshutdown").unlink()
        (ld / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    return ld / "t-0"


def lookup(pdir: Path, *args) -> tuple[tuple[int, int], str]:
    r = run_cli("lookup-time", "--format", "json", *args, str(pdir), "max-timestamp")
    assert r.code == 0, r.out + r.err
    obj = json.loads(r.out)
    return (obj["found_offset"], obj["found_timestamp"]), obj["steps"][0]["note"]


def test_3_7_answers_the_batchs_last_offset_3_8_the_first_record(tmp_path):
    """A 3.7 leader records the batch's last offset (7) for the batch holding the greatest timestamp: 3.7.x
    answers 7 (as the 3.7.0 broker answered offset 4 of a five-record batch of equal timestamps in seed 1002);
    3.8 and later answer the first record holding it, 4. Before the fix: 4 whatever the release."""
    pdir = _partition(tmp_path, "3.7")
    for version, want in (("3.7", 7), ("3.7.1", 7), ("3.0", 7), ("3.8", 4), ("3.9.2", 4), ("4.0", 4)):
        got, note = lookup(pdir, "--kafka-version", version)
        assert got == (want, T0 + 10), version
        assert f"--kafka-version {version}" in note and ("3.0-3.7's rule" in note) == (want == 7), note
    r = run_cli("lookup-time", "--kafka-version", "3.7", str(pdir), "-3")
    text = flat(r.out)
    assert "max-timestamp (-3): the offset recorded for the largest timestamp (Kafka 3.0-3.7)" in text, text
    assert "recorded for its largest timestamp: timestamp" in text and "offset 7, from its last time-index entry" in text
    assert "found: offset 7, timestamp" in text and "| offset: 7 CreateTime: 1700000000009" in text, text


def test_before_3_7_an_uncompressed_batch_recorded_its_max_timestamp_record(tmp_path):
    """0.11-3.6 leaders (``LogValidator.assignOffsetsNonCompressed``) passed the first record holding the max
    timestamp for an uncompressed CreateTime batch, the batch's last offset for a compressed one
    (``validateMessagesAndAssignOffsetsCompressed``): the time index's last entry decides."""
    got, _note = lookup(_partition(tmp_path / "plain", "0.11-3.6"), "--kafka-version", "3.6")
    assert got == (4, T0 + 10)
    got, _note = lookup(_partition(tmp_path / "gzip", "0.11-3.6", codec=GZIP), "--kafka-version", "3.6")
    assert got == (7, T0 + 10)


def test_a_segment_the_broker_recovers_records_the_batchs_last_offset(tmp_path):
    """Without a clean shutdown every segment from the recovery point is recovered at the next start, and
    ``LogSegment.recover`` records (batch max timestamp, batch last offset) whatever the time index held."""
    pdir = _partition(tmp_path, "0.11-3.6", clean=False)
    r = run_cli("lookup-time", "--kafka-version", "3.6", str(pdir), "max-timestamp")
    assert r.code == 0 and "found: offset 7," in flat(r.out) and "from its batches (the broker recovers" in flat(r.out)


def test_the_release_comes_from_the_kraft_metadata_else_3_8(tmp_path):
    """No KRaft metadata: 3.8+'s rule, said; a broker registered with metadata.version up to level 19
    (IBP_3_7_IV4, 3.7's production level): 3.0-3.7's; 20 (IBP_3_8_IV0) and above: 3.8+'s. --kafka-version wins."""
    pdir = _partition(tmp_path, "3.7")
    got, note = lookup(pdir)
    assert got == (4, T0 + 10) and "not known from its KRaft metadata" in note and "3.8+'s rule" in note
    _registration(pdir.parent, 1, 19)
    got, note = lookup(pdir)
    assert got == (7, T0 + 10) and "metadata.version level up to 19 (Kafka 3.7 or older)" in note, note
    assert lookup(pdir, "--kafka-version", "3.8")[0] == (4, T0 + 10)
    (pdir.parent / "__cluster_metadata-0").rename(tmp_path / "old-metadata")
    _registration(pdir.parent, 1, 20)
    got, note = lookup(pdir)
    assert got == (4, T0 + 10) and "level up to 20 (Kafka 3.8 or newer)" in note, note


def test_a_zookeeper_mode_directory_does_not_say_so_3_8s_rule_is_said(tmp_path):
    """meta.properties version 0: written by 3.9 or older, before or after 3.8 not known: 3.8+'s, and the note
    says why (a ZooKeeper-mode directory names no release)."""
    pdir = _partition(tmp_path, "3.7")
    (pdir.parent / "meta.properties").write_text("version=0\nbroker.id=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    got, note = lookup(pdir)
    assert got == (4, T0 + 10) and "ZooKeeper-mode log directory" in note and "3.8+'s" in note, note


def test_before_3_0_there_is_no_max_timestamp_lookup(tmp_path):
    """ListOffsets MAX_TIMESTAMP came with 3.0 (KIP-734): --kafka-version 2.8 with -3 is a usage error; with a
    time it is accepted (only -3 depends on the release)."""
    pdir = _partition(tmp_path, "3.7")
    r = run_cli("lookup-time", "--kafka-version", "2.8.2", str(pdir), "-3")
    assert r.code == 2 and "Kafka 2.8.2 has no max-timestamp (-3) lookup" in flat(r.err), r.err
    r = run_cli("lookup-time", "--kafka-version", "2.8.2", str(pdir), str(T0 + 5))
    assert r.code == 0 and "found: offset 4," in flat(r.out), r.out


@pytest.mark.parametrize("version", ["3", "three", "3.x"])
def test_a_bad_kafka_version_is_a_usage_error(tmp_path, version):
    r = run_cli("lookup-time", "--kafka-version", version, str(_partition(tmp_path, "3.7")), "-3")
    assert r.code == 2 and "is not a Kafka version" in r.err, r.err
