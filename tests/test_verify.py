"""``kafkalog verify``: clean fixtures pass, every kind of damage is caught with its kind and position,
the real corpus verifies clean, and the JUnit report is readable by a standard JUnit parser."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from kafkalog_formats.crc import crc32c
from kafkalog_formats.message_set import BatchReader

from conftest import FIXTURES, run_cli

DAMAGED = FIXTURES / "damaged"


def verify_json(*args) -> tuple[int, list[dict], dict]:
    r = run_cli("verify", "--format", "json", *args)
    objs = [json.loads(line) for line in r.out.splitlines()]
    findings = [o for o in objs if o["type"] == "finding"]
    summary = [o for o in objs if o["type"] == "summary"][0]
    return r.code, findings, summary


def kinds(findings, severity=None) -> set:
    return {(o["kind"], Path(o["file"]).name, o["position"]) for o in findings
            if severity is None or o["severity"] == severity}


@pytest.fixture
def logdir(tmp_path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    return d


def _patch_batch(log: Path, index: int, edit) -> int:
    """Apply ``edit(bytearray_of_batch)`` to the index-th batch and fix its CRC; return its position."""
    data = bytearray(log.read_bytes())
    b = list(BatchReader(bytes(data)))[index]
    raw = bytearray(data[b.position:b.position + b.size])
    edit(raw)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    data[b.position:b.position + b.size] = raw
    log.write_bytes(bytes(data))
    return b.position


def test_clean_fixture_passes_with_the_verdict_and_the_totals():
    r = run_cli("verify", str(FIXTURES / "logdir"))
    assert r.code == 0
    verdict, totals = r.out.splitlines()
    assert verdict == "verify: passed, no problems in 9 partitions"
    assert totals.startswith("verified 18 segments, ")


def test_summary_counts_equal_an_independent_reader():
    from kafka.record.memory_records import MemoryRecords
    expected_batches = expected_records = 0
    for log in (FIXTURES / "logdir").glob("*/*.log"):
        mr = MemoryRecords(log.read_bytes())
        while (batch := mr.next_batch()) is not None:
            expected_batches += 1
            expected_records += sum(1 for _ in batch)
    code, findings, summary = verify_json(str(FIXTURES / "logdir"))
    assert (summary["batches"], summary["records"]) == (expected_batches, expected_records)
    assert summary["errors"] == summary["warnings"] == 0 and code == 0


def where(findings) -> set:
    return {(o["kind"], Path(o["file"]).name, o["position"], o["severity"]) for o in findings}


def trusted_copy(src: Path, dst: Path) -> Path:
    """``src`` as a broker leaves it after a clean shutdown: Kafka's next start recovers nothing
    (LogLoader skips recoverLog with the marker), so every file is used as it is."""
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    shutil.copytree(src, dst)
    (dst / ".kafka_cleanshutdown").write_bytes(b"")
    ends = {}
    for pdir in (p for p in dst.iterdir() if p.is_dir()):
        topic, part = pdir.name.rsplit("-", 1)
        lasts = [b.last_offset for log in sorted(pdir.glob("*.log")) for b in BatchReader(log.read_bytes())]
        ends[(topic, int(part))] = max(lasts) + 1
    (dst / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint(ends))
    return dst


# Every damaged fixture is caught with its kind and position. Its severity follows what Kafka's next start
# does: these log directories have no clean-shutdown marker and no recovery point for the partition, so
# Kafka recovers every segment (LogLoader.recoverLog from offset 0): it cuts torn tails, rebuilds indexes,
# deletes leftovers and orphans. What it repairs silently is a warning (torn data) or information
# (indexes it rebuilds); what it cannot repair without losing intact data is an error.
@pytest.mark.parametrize("case, expected, code", [
    ("truncated-last-batch", {("trailing_bytes", "00000000000000000078.log", 925, "warning"),
                              ("index_position_not_batch_start", "00000000000000000078.index", 16, "info")}, 0),
    ("flipped-crc-byte", {("crc_mismatch", "00000000000000000000.log", 271, "error")}, 1),
    ("zero-tail", {("zero_tail", "00000000000000000078.log", 1046, "warning")}, 0),
    ("orphan-index", {("orphan_index", "00000000000000099999.index", None, "warning")}, 0),
    ("leftover-files", {("leftover_swap", "00000000000000000000.log.swap", None, "warning"),
                        ("leftover_cleaned", "00000000000000000000.log.cleaned", None, "warning"),
                        ("leftover_deleted", "00000000000000000000.index.deleted", None, "info")}, 0),
    ("interrupted-swap", {("leftover_swap", "00000000000000000000.log.swap", None, "warning")}, 0),
    ("bad-indexes", {("index_entry_not_batch_end", "00000000000000000000.index", 0, "info"),
                     ("time_index_timestamp_mismatch", "00000000000000000000.timeindex", 0, "info")}, 0),
    ("untrimmed-indexes", {("untrimmed_index", "00000000000000000000.index", 48, "info"),
                           ("untrimmed_index", "00000000000000000000.timeindex", 72, "info")}, 0),
    ("missing-index-clean", {("missing_index", "00000000000000000025.index", None, "info"),
                             ("missing_time_index", "00000000000000000051.timeindex", None, "warning")}, 0),
    ("non-monotonic-offsets", {("non_monotonic_offset", "00000000000000000051.log", 911, "error")}, 1),
    ("stale-checkpoints", {("recovery_point_beyond_log_end", "recovery-point-offset-checkpoint", None, "warning"),
                           ("trailing_bytes", "00000000000000000078.log", 569, "warning"),
                           ("high_watermark_beyond_log_end", "replication-offset-checkpoint", None, "warning"),
                           ("log_start_beyond_log_end", "log-start-offset-checkpoint", None, "error")}, 1),
    ("torn-transaction-segment", {("trailing_bytes", "00000000000000000013.log", 166, "warning"),
                                  ("txn_index_mismatch", "00000000000000000013.txnindex", 34, "info")}, 0),
])
def test_damaged_fixture_is_caught(case, expected, code):
    rc, findings, _summary = verify_json(str(DAMAGED / case))
    assert expected <= where(findings)
    assert rc == code
    if any(sev == "warning" for *_x, sev in expected):
        assert run_cli("verify", "--fail-on", "warning", str(DAMAGED / case)).code == 1


def test_all_twelve_damaged_fixtures_are_covered():
    assert len([p for p in DAMAGED.iterdir() if p.is_dir()]) == 12


@pytest.mark.parametrize("case, expected", [
    ("truncated-last-batch", {("trailing_bytes", "00000000000000000078.log", 925),
                              ("index_position_not_batch_start", "00000000000000000078.index", 16)}),
    ("zero-tail", {("zero_tail", "00000000000000000078.log", 1046)}),
    ("torn-transaction-segment", {("trailing_bytes", "00000000000000000013.log", 166),
                                  ("index_position_out_of_range", "00000000000000000013.index", 8),
                                  ("txn_index_mismatch", "00000000000000000013.txnindex", 34)}),
])
def test_damage_kafka_would_not_repair_after_a_clean_shutdown_is_an_error(case, expected, tmp_path):
    """The same bytes behind a clean-shutdown marker: the broker appends after the torn tail and serves the
    indexes as they are (no recovery), so both are errors."""
    rc, findings, _ = verify_json(str(trusted_copy(DAMAGED / case, tmp_path / case)))
    assert expected <= kinds(findings, "error") and rc == 1


def test_corruption_inside_the_data_of_a_recovered_segment_stays_an_error(tmp_path):
    """Kafka's recovery truncates at the first bad batch and deletes every later segment: intact data after
    the damage would be lost, so a CRC failure followed by good batches is an error even where the broker
    recovers; the same failure in the very last batch is a torn write (warning)."""
    rc, findings, _ = verify_json(str(DAMAGED / "flipped-crc-byte"))
    assert ("crc_mismatch", "00000000000000000000.log", 271) in kinds(findings, "error") and rc == 1
    d = tmp_path / "logdir"
    shutil.copytree(DAMAGED / "zero-tail", d)
    log = d / "orders-0" / "00000000000000000078.log"
    data = bytearray(log.read_bytes()[:1046])          # drop the zeros, then tear the last batch's payload
    last = list(BatchReader(bytes(data)))[-1]
    data[last.position + 70] ^= 0x10
    log.write_bytes(bytes(data))
    rc, findings, _ = verify_json(str(d))
    assert ("crc_mismatch", log.name, last.position) in kinds(findings, "warning") and rc == 0


def test_untrimmed_indexes_normal_on_active_segment_warning_on_inactive(tmp_path):
    """A live broker's active segment keeps its preallocated zero slots (AbstractIndex); roll trims them
    (onBecomeInactiveSegment). Loaded as is, an inactive segment's zero slots are entries: offset lookups
    only scan longer (warning), but the time index's last slot (timestamp 0) becomes the segment's largest
    timestamp (TimeIndex.lastEntryFromIndexFile → LogSegment.largestTimestamp), so time retention deletes
    the segment at its next check: an error where the topic runs it (Kafka's default cleanup.policy=delete
    here), a warning on a compact-only topic (__consumer_offsets: GroupCoordinator creates it so)."""
    d = trusted_copy(DAMAGED / "untrimmed-indexes", tmp_path / "untrimmed")
    rc, findings, _ = verify_json(str(d))
    assert where(findings) == {("untrimmed_index", "00000000000000000000.index", 48, "warning"),
                               ("untrimmed_index", "00000000000000000000.timeindex", 72, "error")} and rc == 1
    assert "time retention deletes the segment at its next check" in next(
        o["message"] for o in findings if o["file"].endswith(".timeindex"))
    c = trusted_copy(DAMAGED / "untrimmed-indexes" / "orders-0", tmp_path / "compact" / "__consumer_offsets-0")
    (c / ".kafka_cleanshutdown").rename(c.parent / ".kafka_cleanshutdown")
    (c / "recovery-point-offset-checkpoint").write_text("0\n1\n__consumer_offsets 0 1000\n")
    (c / "recovery-point-offset-checkpoint").rename(c.parent / "recovery-point-offset-checkpoint")
    rc, findings, _ = verify_json(str(c.parent))
    assert {o["severity"] for o in findings} == {"warning"} and rc == 0
    assert run_cli("verify", "--fail-on", "warning", str(d)).code == 1


def test_non_monotonic_offsets_across_segments(logdir):
    p = logdir / "orders-0"
    _patch_batch(p / "00000000000000000025.log", 0, lambda raw: struct.pack_into(">q", raw, 0, 24))
    (p / "00000000000000000025.log").rename(p / "00000000000000000024.log")
    for suf in ("index", "timeindex"):
        (p / f"00000000000000000025.{suf}").rename(p / f"00000000000000000024.{suf}")
    rc, findings, _ = verify_json(str(p))
    assert ("non_monotonic_offset", "00000000000000000024.log", 0) in kinds(findings, "error")
    assert rc == 1


def test_segment_base_above_first_batch(logdir):
    p = logdir / "orders-0"
    for suf in ("log", "index", "timeindex", "snapshot"):
        (p / f"00000000000000000051.{suf}").rename(p / f"00000000000000000052.{suf}")
    rc, findings, _ = verify_json(str(p))
    assert ("offset_below_segment_base", "00000000000000000052.log", 0) in kinds(findings, "error")


def test_record_count_and_decompression_errors_deep_only(logdir):
    log = logdir / "orders-1" / "00000000000000000000.log"
    pos_count = _patch_batch(log, 0, lambda raw: struct.pack_into(">i", raw, 57, 3))
    pos_gzip = _patch_batch(log, 1, lambda raw: raw.__setitem__(slice(70, 80), b"\xff" * 10))
    rc, findings, _ = verify_json(str(log.parent))
    found = kinds(findings, "error")
    assert ("record", "00000000000000000000.log", pos_count) in found or \
        ("record_count", "00000000000000000000.log", pos_count) in found
    assert ("decompress", "00000000000000000000.log", pos_gzip) in found
    rc, findings, _ = verify_json("--shallow", str(log.parent))
    assert rc == 0 and not kinds(findings, "error")


def test_index_entries_out_of_order_and_out_of_range(logdir):
    idx = logdir / "orders-0" / "00000000000000000000.index"
    raw = bytearray(idx.read_bytes())
    a, b = raw[0:8], raw[8:16]
    raw[0:8], raw[8:16] = b, a                          # swap the first two entries
    raw += struct.pack(">ii", 24, 99999)                # an entry beyond the end of the log
    idx.write_bytes(bytes(raw))
    rc, findings, _ = verify_json(str(idx.parent))
    found = {(k, f) for k, f, _p in kinds(findings, "error")}
    assert ("index_not_increasing", "00000000000000000000.index") in found
    assert ("index_position_out_of_range", "00000000000000000000.index") in found
    assert rc == 1


def test_follower_multi_batch_index_entries_are_valid(logdir):
    """(last offset of a multi-batch append, position of its first batch) is valid, only noted as info."""
    log = logdir / "orders-0" / "00000000000000000000.log"
    batches = list(BatchReader(log.read_bytes()))
    idx = log.with_suffix(".index")
    raw = bytearray(idx.read_bytes())
    rel, pos = struct.unpack_from(">ii", raw, 0)
    k = next(i for i, b in enumerate(batches) if b.position == pos)
    struct.pack_into(">ii", raw, 0, batches[k + 1].last_offset, pos)   # the chunk = batches k and k+1
    idx.write_bytes(bytes(raw))
    rc, findings, _ = verify_json(str(log.parent))
    assert rc == 0 and {(o["kind"], o["severity"]) for o in findings} == {("index_entry_not_batch_end", "info")}
    # DumpLogSegments (and our dump-log) calls it a mismatch, as Kafka does
    assert "Mismatches in :" in run_cli("dump-log", "--verify-index-only", str(idx)).err


def test_txn_index_entry_without_abort_marker(logdir):
    from kafkalog_formats.txn_index import AbortedTxn, build_txn_index, parse_txn_index
    f = logdir / "payments-0" / "00000000000000000000.txnindex"
    entries = parse_txn_index(f.read_bytes())
    e = entries[0]
    f.write_bytes(build_txn_index([AbortedTxn(0, e.producer_id, e.first_offset, 5, 9)]))  # 5 is a COMMIT
    rc, findings, _ = verify_json(str(f.parent))
    assert ("txn_index_mismatch", "00000000000000000000.txnindex", 0) in kinds(findings, "error")


def test_side_files(logdir):
    (logdir / "orders-0" / "00000000000000000025.snapshot").write_bytes(b"\x00\x01garbage")
    (logdir / "orders-0" / "leader-epoch-checkpoint").write_text("0\n2\n1 0\n0 30\n")
    (logdir / "orders-1" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    (logdir / "replication-offset-checkpoint").write_text("0\n2\norders 0 500\npayments 0 3\n")
    (logdir / "recovery-point-offset-checkpoint").write_text("0\n3\norders 0 5\n")
    rc, findings, _ = verify_json(str(logdir))
    errors = {(k, f) for k, f, _p in kinds(findings, "error")}
    warnings = {(k, f) for k, f, _p in kinds(findings, "warning")}
    # what the broker refuses or takes offline: PartitionMetadataFile.read, CheckpointFileWithFailureHandler
    assert {("partition_metadata", "partition.metadata"),
            ("checkpoint_count", "recovery-point-offset-checkpoint")} <= errors
    # what it repairs on load: ProducerStateManager deletes a corrupt snapshot, LeaderEpochFileCache drops
    # conflicting entries, the high watermark is lowered to the log end
    assert {("snapshot_corrupt", "00000000000000000025.snapshot"),
            ("leader_epoch_not_increasing", "leader-epoch-checkpoint"),
            ("high_watermark_beyond_log_end", "replication-offset-checkpoint")} <= warnings
    assert rc == 1


def test_meta_properties_and_oversized_batches(logdir):
    (logdir / "meta.properties").write_text("version=1\nnode.id=1\n")
    rc, findings, _ = verify_json("--max-message-bytes", "4096", str(logdir))
    assert ("meta_properties", "meta.properties", None) in kinds(findings, "error")
    assert any(o["kind"] == "oversized_batch" and o["severity"] == "warning" for o in findings)
    # without the topic's limit only a note: Kafka checks max.message.bytes on produce, and followers and
    # the cleaner (recompressing after compaction) write larger batches
    big = logdir / "orders-1" / "00000000000000000000.log"
    data = bytearray(big.read_bytes())
    b = list(BatchReader(bytes(data)))[0]
    assert b.size < 1048588
    rc, findings, _ = verify_json(str(big.parent))
    assert not any(o["kind"] == "oversized_batch" for o in findings)


def test_single_files(logdir):
    p = logdir / "payments-0"
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000013.timeindex",
                 "00000000000000000000.txnindex", "00000000000000000013.snapshot", "leader-epoch-checkpoint",
                 "partition.metadata"):
        assert run_cli("verify", str(p / name)).code == 0, name
    assert run_cli("verify", str(logdir / "replication-offset-checkpoint")).code == 0
    assert run_cli("verify", str(logdir / "__cluster_metadata-0" / "00000000000000000003-0000000001.checkpoint")).code == 0
    assert run_cli("verify", str(DAMAGED / "flipped-crc-byte" / "orders-0" / "00000000000000000000.log")).code == 1
    # a torn tail that Kafka's recovery cuts (no clean-shutdown marker there): a warning
    assert run_cli("verify", str(DAMAGED / "zero-tail" / "orders-0" / "00000000000000000078.log")).code == 0


def test_junit_report_is_valid_and_readable(tmp_path):
    from junitparser import Failure, JUnitXml
    out = tmp_path / "report.xml"
    r = run_cli("verify", "--format", "junit", "--output", str(out), str(DAMAGED))
    assert r.code == 1 and r.out == ""
    xml = JUnitXml.fromfile(str(out))
    cases = [c for suite in xml for c in suite]
    segment_cases = [c for c in cases if c.name.endswith(".log")]
    assert len(segment_cases) == len([p for p in DAMAGED.glob("*/*/*.log")])   # one per segment
    failed = {c.name.split("damaged/")[1] for c in cases if any(isinstance(x, Failure) for x in c.result)}
    assert "flipped-crc-byte/orders-0/00000000000000000000.log" in failed
    assert "non-monotonic-offsets/orders-0/00000000000000000051.log" in failed
    assert "zero-tail/orders-0/00000000000000000078.log" not in failed            # a warning
    assert "untrimmed-indexes/orders-0/00000000000000000000.log" not in failed
    assert xml.tests == len(cases) and xml.failures == len(failed)
    r = run_cli("verify", "--format", "junit", "--fail-on", "warning", "--output", str(out), str(DAMAGED))
    failed = {c.name.split("damaged/")[1] for suite in JUnitXml.fromfile(str(out)) for c in suite
              if any(isinstance(x, Failure) for x in c.result)}
    assert "zero-tail/orders-0/00000000000000000078.log" in failed


def test_usage_errors():
    assert run_cli("verify").code == 2
    assert run_cli("verify", "/nonexistent/path").code == 2
    assert run_cli("verify", "--fail-on", "info", str(FIXTURES)).code == 2


def test_a_path_without_kafka_data_fails(tmp_path):
    """A mistyped path in CI must not pass by verifying nothing."""
    (tmp_path / "notes.txt").write_text("hello")
    r = run_cli("verify", str(tmp_path))
    assert r.code == 1 and "nothing_verified" in r.out
    # the verdict says what the path is not (issue 23: "FAILED, 1 error in 1 file")
    verdict = " ".join(r.out.split("\n\n")[0].split())
    assert verdict == f"verify: FAILED, nothing verified: {tmp_path} is not a Kafka log directory"
    r = run_cli("verify", str(tmp_path / "notes.txt"))
    assert r.code == 1 and "unknown_file" in r.out


def test_a_folder_of_segments_is_said_to_be_read_as_a_partition():
    """fixtures/samples holds two segments in a directory not named TOPIC-PARTITION: verify reads them as one
    partition and its verdict says so (issue 23: "1 partition", without a word)."""
    r = run_cli("verify", str(FIXTURES / "samples"))
    assert r.code == 0
    assert " ".join(r.out.split("\n\n")[0].split()) == ("verify: passed, no problems in 1 partition (samples: a "
                                                         "directory not named TOPIC-PARTITION, read as a partition)")
    assert "not named" not in run_cli("verify", str(FIXTURES / "logdir" / "orders-0")).out


# --- partition and log-directory rules (LogManager.loadLogs, LogLoader, LeaderEpochFileCache) -------

def test_leader_epoch_checkpoint_rules(logdir):
    f = logdir / "orders-0" / "leader-epoch-checkpoint"
    # 0.11-2.0 brokers appended an epoch starting where the previous one did (assign: offset >= latest)
    f.write_text("0\n3\n0 0\n1 39\n2 39\n")
    rc, findings, _ = verify_json(str(logdir / "orders-0"))
    assert rc == 0 and not [o for o in findings if o["file"].endswith("leader-epoch-checkpoint")]
    f.write_text("0\n2\n1 0\n0 30\n")                   # dropped by the cache on load (maybeTruncate...)
    rc, findings, _ = verify_json(str(logdir / "orders-0"))
    assert ("leader_epoch_not_increasing", f.name, None) in kinds(findings, "warning") and rc == 0
    f.write_text("0\n2\n0 0\n-1 30\n")                  # LeaderEpochFileCache.assign throws: the log fails to load
    rc, findings, _ = verify_json(str(logdir / "orders-0"))
    assert ("leader_epoch_invalid", f.name, None) in kinds(findings, "error") and rc == 1


def test_checkpoint_rules(logdir):
    """Loading clamps the high watermark and log start offset and resets the cleaner offset (normal after a
    power loss); a recovery point beyond the log end means flushed data is gone."""
    (logdir / "replication-offset-checkpoint").write_text("0\n1\norders 0 500\n")
    rc, findings, _ = verify_json(str(logdir))
    assert ("high_watermark_beyond_log_end", "replication-offset-checkpoint", None) in kinds(findings, "warning")
    assert rc == 0
    (logdir / "log-start-offset-checkpoint").write_text("0\n1\norders 0 95\n")
    rc, findings, _ = verify_json(str(logdir))
    assert ("log_start_beyond_log_end", "log-start-offset-checkpoint", None) in kinds(findings, "error")
    (logdir / "replication-offset-checkpoint").write_text("0\n1\norders 0 20\n")
    (logdir / "log-start-offset-checkpoint").write_text("0\n1\norders 0 25\n")
    rc, findings, _ = verify_json(str(logdir))
    assert ("log_start_beyond_high_watermark", "log-start-offset-checkpoint", None) in kinds(findings, "info")
    # LogManager.truncateTo truncates a follower, then checkpoints the recovery points: a crash in between
    # leaves the recovery point beyond the log end with nothing missing; LogLoader.recoverLog lowers it to
    # the log end (min(recoveryPoint, logEndOffset), 2.0 - trunk): a warning, not an error
    (logdir / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 95\n")
    rc, findings, _ = verify_json(str(logdir))
    assert ("recovery_point_beyond_log_end", "recovery-point-offset-checkpoint", None) in kinds(findings, "warning")
    assert "LogManager.truncateTo" in next(o["message"] for o in findings
                                           if o["kind"] == "recovery_point_beyond_log_end") and rc == 0


def test_log_directory_entries_kafka_cannot_parse(logdir):
    """LogManager.loadLogs parses every subdirectory as a partition and stops the log directory on one it
    cannot parse (UnifiedLog.parseTopicPartitionName); it ignores unknown files."""
    (logdir / "notes.txt").write_text("backup taken by cron")
    rc, findings, _ = verify_json(str(logdir))
    assert ("unknown_file", "notes.txt", None) in kinds(findings, "info") and rc == 0
    (logdir / "lost+found").mkdir()
    rc, findings, _ = verify_json(str(logdir))
    assert ("unknown_directory", "lost+found", None) in kinds(findings, "error") and rc == 1


@pytest.mark.parametrize("name", ["notes.log", "old.snapshot", "foo.cleaned", "backup.swap", "a.index",
                                  "99999999999999999999.log", ".timeindex"])
def test_a_name_kafkas_loader_cannot_parse_stops_the_broker(logdir, name):
    """LogLoader (2.0-trunk; 3.7.0 core/.../LogLoader.scala, 4.3.1 storage/.../LogLoader.java) parses the
    offset of every .log/.index/.timeindex/.txnindex/.cleaned/.swap file with LogFileUtils.offsetFromFileName
    (Long.parseLong of the text before the first '.'), ProducerStateManager every .snapshot; only the swap
    completion's second pass catches NumberFormatException. LogManager.loadLogs rethrows it and the broker
    stops (a 3.9.2 broker exits 1: "NumberFormatException: For input string: \"notes\"")."""
    f = logdir / "orders-0" / name
    f.write_bytes(b"kept by an operator")
    rc, findings, _ = verify_json(str(logdir))
    assert ("unparsable_file_name", name, None) in kinds(findings, "error") and rc == 1
    found = next(o for o in findings if o["kind"] == "unparsable_file_name")
    assert "broker does not start" in found["message"] and "NumberFormatException" in found["message"]
    rc, findings, _ = verify_json(str(f))                     # the file given by name
    assert ("unparsable_file_name", name, None) in kinds(findings, "error") and rc == 1
    # LogManager.loadLogs loads a -delete directory too (LogLoader passes 1-3): still an error there
    f.rename(logdir / "orders-1" / name)
    d = logdir / "orders-1.0123456789abcdef0123456789abcdef-delete"
    (logdir / "orders-1").rename(d)
    rc, findings, _ = verify_json(str(logdir))
    assert ("unparsable_file_name", name, None) in kinds(findings, "error") and rc == 1


def test_a_segment_name_not_in_kafkas_20_digit_form_opens_an_empty_segment(logdir):
    """LogLoader.loadSegmentFiles: ``12.log`` is a log file of offset 12, and LogSegment.open(dir, 12, ...)
    opens (creating it empty) 00000000000000000012.log; this file is never read. LocalLog.read serves offset
    12 on from that empty segment, so the records 12..24 of segment 0 can no longer be fetched (a 3.9.2
    broker given kv-0/2700.log created 00000000000000002700.log and a fetch from 2700 returned 2740 on)."""
    p = logdir / "orders-0"
    (p / "12.log").write_bytes((p / "00000000000000000025.log").read_bytes())
    rc, findings, _ = verify_json(str(logdir))
    assert ("phantom_segment", "12.log", None) in kinds(findings, "error") and rc == 1
    msg = next(o["message"] for o in findings if o["kind"] == "phantom_segment")
    assert "00000000000000000012.log" in msg and "records 12 to 24 of 00000000000000000000.log" in msg
    (p / "12.log").rename(p / "200.log")                     # above every segment: it becomes the active one
    rc, findings, _ = verify_json(str(p))
    msg = next(o["message"] for o in findings if o["kind"] == "phantom_segment")
    assert "log end offset becomes 200" in msg and "offsets 91 to 199 are skipped" in msg
    (p / "200.log").rename(p / "25.log")                     # 00000000000000000025.log exists: this one is unread
    (p / "25.timeindex").write_bytes(b"")
    rc, findings, _ = verify_json(str(p))
    assert {("misnamed_file", "25.log", None), ("misnamed_file", "25.timeindex", None)} <= kinds(findings, "warning")
    assert rc == 0


def test_a_deleted_leftover_is_not_parsed_by_kafka(logdir):
    """removeTempFilesAndCollectSwapFiles deletes every *.deleted file before parsing any name."""
    (logdir / "orders-0" / "notes.log.deleted").write_bytes(b"")
    rc, findings, _ = verify_json(str(logdir))
    assert not [o for o in findings if o["severity"] == "error"] and rc == 0


def test_partition_marked_for_deletion_only_notes_its_problems(logdir):
    """A ``-delete`` directory is deleted by Kafka after file.delete.delay.ms, its content never served."""
    d = logdir / "orders-0.0123456789abcdef0123456789abcdef-delete"
    (logdir / "orders-0").rename(d)
    log = d / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[300] ^= 0xFF
    log.write_bytes(bytes(data))
    rc, findings, _ = verify_json(str(logdir))
    assert ("crc_mismatch", log.name) in {(k, f) for k, f, _p in kinds(findings, "info")} and rc == 0


def test_the_metadata_log_is_recovered_on_every_start(logdir):
    """KafkaMetadataLog opens its UnifiedLog with recovery point 0 and lastShutdownClean=false: a torn tail
    there is cut on the next start even with the clean-shutdown marker present."""
    log = logdir / "__cluster_metadata-0" / "00000000000000000000.log"
    log.write_bytes(log.read_bytes() + b"\0" * 40)
    rc, findings, _ = verify_json(str(logdir))
    assert ("zero_tail", log.name) in {(k, f) for k, f, _p in kinds(findings, "warning")} and rc == 0
    log2 = logdir / "orders-1" / "00000000000000000000.log"          # a normal partition: trusted as is
    log2.write_bytes(log2.read_bytes() + b"\0" * 40)
    rc, findings, _ = verify_json(str(logdir))
    assert ("zero_tail", log2.name) in {(k, f) for k, f, _p in kinds(findings, "error")} and rc == 1


def test_side_file_states_a_healthy_broker_leaves(logdir):
    # an empty segment (rolled, never appended to): its lazy index files were never created
    p = logdir / "orders-1"
    (p / "00000000000000000041.log").write_bytes(b"")
    rc, findings, _ = verify_json(str(p))
    assert ("missing_index", "00000000000000000041.index", None) in kinds(findings, "info") and rc == 0
    # 3.7+ writes JSON into the marker; unreadable content is only logged by CleanShutdownFileHandler
    (logdir / ".kafka_cleanshutdown").write_text("{not json")
    rc, findings, _ = verify_json(str(logdir / ".kafka_cleanshutdown"))
    assert ("clean_shutdown", ".kafka_cleanshutdown", 1) in kinds(findings, "warning") and rc == 0
    # a .deleted file is normal for file.delete.delay.ms after retention or cleaning
    (p / "00000000000000000000.log.deleted").write_bytes(b"")
    rc, findings, _ = verify_json(str(p))
    assert ("leftover_deleted", "00000000000000000000.log.deleted", None) in kinds(findings, "info")


def _append(path: Path, data: bytes) -> None:
    path.write_bytes(path.read_bytes() + data)


def _swap_time_entries(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[0:12], raw[12:24] = raw[12:24], raw[0:12]
    path.write_bytes(bytes(raw))


def _txn(path: Path, version: int, last: int) -> None:
    from kafkalog_formats.txn_index import build_txn_index
    path.write_bytes(build_txn_index([(version, 7001, last - 3, last, last)]))


def _rp(logdir: Path, offset: int) -> None:
    (logdir / "recovery-point-offset-checkpoint").write_text(f"0\n1\norders 0 {offset}\n")


@pytest.mark.parametrize("damage, expected", [
    # AbstractIndex counts floor(length / 8) entries; only sanityCheck (DumpLogSegments) rejects the length
    (lambda d: _append(d / "orders-0" / "00000000000000000000.index", b"\0\0\1"),
     ("index_size", "00000000000000000000.index", "warning")),
    # OffsetIndex.sanityCheck: the last offset below the base; not run on load since 2.2 (KAFKA-7283)
    (lambda d: _append(d / "orders-0" / "00000000000000000025.index", struct.pack(">ii", -3, 9)),
     ("index_sanity", "00000000000000000025.index", "error")),
    # TimeIndex.maybeAppend only appends increasing timestamps; lookups binary-search them
    (lambda d: _swap_time_entries(d / "orders-0" / "00000000000000000000.timeindex"),
     ("time_index_not_increasing", "00000000000000000000.timeindex", "error")),
    # TransactionIndex reads whole 34-byte entries only
    (lambda d: _append(d / "payments-0" / "00000000000000000000.txnindex", b"\0" * 5),
     ("txn_index_partial_entry", "00000000000000000000.txnindex", "warning")),
    # TransactionIndex.sanityCheck → CorruptIndexException → LogLoader recovers the segment
    (lambda d: _txn(d / "payments-0" / "00000000000000000013.txnindex", 0, 5),
     ("txn_index_sanity", "00000000000000000013.txnindex", "info")),
    # an unknown AbortedTxn version throws a plain KafkaException: the log fails to load, recovery or not
    (lambda d: _txn(d / "payments-0" / "00000000000000000013.txnindex", 1, 20),
     ("txn_index_version", "00000000000000000013.txnindex", "error")),
    # FileLogInputStream reads magic 3 as v2 and the CRC does not cover the magic byte
    (lambda d: _patch_magic(d / "orders-0" / "00000000000000000025.log"),
     ("invalid_magic", "00000000000000000025.log", "error")),
    # LogManager.shutdown flushes every log before it writes the recovery points and the marker
    (lambda d: _rp(d, 80), ("clean_shutdown_with_unflushed_data", ".kafka_cleanshutdown", "warning")),
    # LogCleanerManager resets a cleaner offset beyond the log end to the log start offset
    (lambda d: (d / "cleaner-offset-checkpoint").write_text("0\n1\ncompacted 0 500\n"),
     ("cleaner_checkpoint_beyond_log_end", "cleaner-offset-checkpoint", "warning")),
])
def test_rule(logdir, damage, expected):
    damage(logdir)
    rc, findings, _ = verify_json(str(logdir))
    got = {(o["kind"], Path(o["file"]).name, o["severity"]) for o in findings}
    assert expected in got, got
    assert rc == (1 if expected[2] == "error" else 0)


def _patch_magic(log: Path) -> None:
    data = bytearray(log.read_bytes())
    b = list(BatchReader(bytes(data)))[1]
    data[b.position + 16] = 3
    log.write_bytes(bytes(data))


def test_txn_index_sanity_failure_makes_kafka_recover_the_segment(logdir):
    """LogLoader recovers a segment whose .txnindex fails sanityCheck, rebuilding all its indexes: its index
    problems are then only noted."""
    p = logdir / "payments-0"
    _txn(p / "00000000000000000013.txnindex", 0, 5)
    idx = p / "00000000000000000013.index"
    _append(idx, struct.pack(">ii", 99, 12345))                   # a position beyond the log
    rc, findings, _ = verify_json(str(p))
    assert ("index_position_out_of_range", idx.name, "info") in {
        (o["kind"], Path(o["file"]).name, o["severity"]) for o in findings} and rc == 0
    # an unknown entry version fails the load before any recovery, marker or not
    (logdir / ".kafka_cleanshutdown").unlink()
    _txn(p / "00000000000000000013.txnindex", 1, 20)
    rc, findings, _ = verify_json(str(logdir))
    assert ("txn_index_version", "00000000000000000013.txnindex", 0) in kinds(findings, "error") and rc == 1


def test_offsets_that_overflow_their_segment_are_split_by_kafka(tmp_path):
    """Brokers before 2.0 could write them; LogLoader splits such a segment (LogSegmentOffsetOverflowException)."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    p = tmp_path / "old-0"
    p.mkdir()
    (p / "00000000000000000000.log").write_bytes(
        build_batch(0, [RecordSpec(0, 1, b"k", b"v")]) + build_batch(2 ** 31 + 10, [RecordSpec(0, 2, b"k", b"v")]))
    rc, findings, _ = verify_json(str(p))
    assert ("offset_overflow", "00000000000000000000.log") in {(k, f) for k, f, _p in kinds(findings, "warning")}
    assert rc == 0
