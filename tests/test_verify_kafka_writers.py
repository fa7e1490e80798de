"""verify accepts what every Kafka version writes, and still fails what makes a broker misbehave.

Each partition here is built by kafkalog's own writer (``repair.log_writer.PartitionWriter``) with the
index model of one Kafka writer (``engine.index_rules``):

* leaders of 0.11-3.6 (``LogValidator.assignOffsetsNonCompressed``): the time-index offset of an
  uncompressed CreateTime batch is its first record holding the max timestamp, inside the batch;
* the KAFKA-16342/KAFKA-16341 builds of March 2024 (trunk until KAFKA-16310, 3.6/3.7 branches until the
  reverts): the max-timestamp record of compressed batches too, the first offset for LogAppendTime;
* 0.8-1.1 (``LogSegment.append``: ``index.append(firstOffset, physicalPosition)``): offset entries name the
  first offset of an append;
* followers before KAFKA-806 (4.1): one entry per fetched chunk (last offset of the chunk, its position);
* the cleaner (``Cleaner.cleanInto`` → ``LogSegment.append(result.maxOffset, …)``): one entry per chunk
  naming the largest *retained* offset; before 2.0.1 (KAFKA-7385) it left the empty batches it kept out
  of the time index.

The log directories are made "trusted" (clean-shutdown marker, recovery point at the log end): Kafka's next
start then loads every file as is (``LogLoader.recoverLog`` is skipped), so verify reports at full
severity. Where Kafka would misbehave — a lookup skipping records, retention deleting too early — verify
must still fail.
"""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.legacy import build_wrapper
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.engine.index_rules import leader_offset_of_max_timestamp
from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import FIXTURES, run_cli

T0 = 1_700_000_000_000
GZIP, LZ4 = 1, 3


def verify_json(*args) -> tuple[int, list[dict]]:
    r = run_cli("verify", "--format", "json", *args)
    objs = [json.loads(line) for line in r.out.splitlines()]
    return r.code, [o for o in objs if o["type"] == "finding"]


def at(findings, severity) -> set:
    return {(o["kind"], Path(o["file"]).name, o["position"]) for o in findings if o["severity"] == severity}


def trusted(logdir: Path, partitions: dict[str, int]) -> Path:
    """What a clean shutdown leaves: the marker, and recovery point = high watermark = log end."""
    shutil.copy(FIXTURES / "logdir" / "meta.properties", logdir / "meta.properties")
    (logdir / ".kafka_cleanshutdown").write_bytes(b"")
    leo = {tuple(name.rsplit("-", 1)[:1]) + (int(name.rsplit("-", 1)[1]),): end for name, end in partitions.items()}
    for cp in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (logdir / cp).write_text(build_offset_checkpoint(leo))
    return logdir


def batches(log: Path) -> list:
    return list(BatchReader(log.read_bytes()))


def time_entries(path: Path, base: int) -> list[tuple[int, int]]:
    raw = path.read_bytes()
    return [(ts, base + rel) for ts, rel in struct.iter_unpack(">qi", raw)]


def offset_entries(path: Path, base: int) -> list[tuple[int, int]]:
    raw = path.read_bytes()
    return [(base + rel, pos) for rel, pos in struct.iter_unpack(">ii", raw)]


def leader_log(d: Path, kafka: str, *, codec: int = 0, lat_every: int = 0, n: int = 40) -> PartitionWriter:
    """A leader appending one producer batch per call: records of a batch often share a millisecond,
    and the newest record is not always the last one (several producer threads, one batch)."""
    w = PartitionWriter(d, segment_bytes=2500, index_interval_bytes=200, index_model="append")
    off = 0
    for i in range(n):
        ts = [T0 + i * 100 + d_ for d_ in ((0, 0, 0) if i % 3 == 0 else (5, 9, 2) if i % 3 == 1 else (1, 2, 3))]
        specs = [RecordSpec(j, t, f"k{i}-{j}".encode(), f"value {i}-{j} ".encode() * 3) for j, t in enumerate(ts)]
        lat = bool(lat_every) and i % lat_every == 0
        raw = build_batch(off, specs, codec=codec, log_append_time=lat, max_timestamp=T0 + i * 100 + 50 if lat else None)
        view = next(iter(BatchReader(raw)))
        w.append_set([raw], offset_of_max_timestamp=leader_offset_of_max_timestamp(view, kafka))
        off += len(specs)
    w.close()
    return w


def inside_batch_entries(pdir: Path) -> int:
    """Time-index entries naming an offset that is not a batch's last offset (the case under test)."""
    n = 0
    for log in sorted(pdir.glob("*.log")):
        lasts = {b.last_offset for b in batches(log)}
        n += sum(1 for _ts, o in time_entries(log.with_suffix(".timeindex"), int(log.stem)) if o not in lasts)
    return n


def test_leaders_up_to_3_6_name_the_max_timestamp_record_of_uncompressed_batches(tmp_path):
    """LogValidator.assignOffsetsNonCompressed (0.11.0 … 3.6.2) hands LogSegment.append the offset of the
    first record holding the batch's max timestamp; real 3.x data shows it on most time-index entries."""
    d = tmp_path / "logdir"
    w = leader_log(d / "t-0", "0.11-3.6")
    assert len(w.segment_bases) > 2 and inside_batch_entries(d / "t-0") >= 3
    code, findings = verify_json(str(trusted(d, {"t-0": w.log_end_offset})))
    assert code == 0 and not at(findings, "error") and not at(findings, "warning")
    # DumpLogSegments (and dump-log) flags each of them: it compares with the batch's last offset
    tix = sorted((d / "t-0").glob("*.timeindex"))[0]
    assert "The following indexed offsets are not found in the log." in run_cli(
        "dump-log", "--verify-index-only", str(tix)).err


def test_march_2024_builds_name_records_inside_compressed_batches_and_first_offsets_for_log_append_time(tmp_path):
    """KAFKA-16342 (compressed) and KAFKA-16341 (uncompressed), trunk 15 Mar - 10 Apr 2024 and the 3.6/3.7
    branches until the 28/29 Mar reverts: the max-timestamp record's offset inside a compressed batch, and
    the batch's first offset for LogAppendTime (MemoryRecordsBuilder.info)."""
    d = tmp_path / "logdir"
    w = leader_log(d / "t-0", "2024-03", codec=GZIP, lat_every=4)
    assert inside_batch_entries(d / "t-0") >= 3
    code, findings = verify_json(str(trusted(d, {"t-0": w.log_end_offset})))
    assert code == 0 and not at(findings, "error") and not at(findings, "warning")


def test_3_7_and_3_8_leaders_name_the_last_offset(tmp_path):
    d = tmp_path / "logdir"
    for i, kafka in enumerate(("3.7", "3.8")):
        leader_log(d / f"t-{i}", kafka, codec=LZ4 if i else 0)
        assert inside_batch_entries(d / f"t-{i}") == 0
    code, findings = verify_json(str(trusted(d, {"t-0": 120, "t-1": 120})))
    assert code == 0 and not at(findings, "error") and not at(findings, "warning")


def test_kafka_0_8_to_1_1_indexed_the_first_offset_of_each_append(tmp_path):
    """LogSegment.append before 2.0: ``index.append(firstOffset, physicalPosition)``; for a v1 wrapper from a
    leader the first inner offset (decompressed). Lookups work; DumpLogSegments calls them mismatches."""
    d = tmp_path / "logdir"
    w = PartitionWriter(d / "old-0", segment_bytes=1500, index_interval_bytes=150, index_model="append-first-offset")
    off = 0
    for i in range(30):
        if i % 2:
            msgs = [(off + j, f"k{off + j}".encode(), f"v1 inner {off + j}".encode() * 4, T0 + off + j) for j in range(3)]
            w.append_set([build_wrapper(msgs, GZIP, magic=1)])
        else:
            w.append_set([build_batch(off, [RecordSpec(j, T0 + off + j, b"k", b"v" * 40) for j in range(3)])])
        off += 3
    w.close()
    first_segment = d / "old-0" / "00000000000000000000.index"
    entries = offset_entries(first_segment, 0)
    starts = {b.position: (b.base_offset, b.last_offset) for b in batches(first_segment.with_suffix(".log"))}
    assert entries and all(o == starts[p][0] < starts[p][1] for o, p in entries)
    code, findings = verify_json(str(trusted(d, {"old-0": w.log_end_offset})))
    assert code == 0 and not at(findings, "error") and not at(findings, "warning")
    assert "index_entry_not_batch_end" in {o["kind"] for o in findings if o["severity"] == "info"}
    assert "Mismatches in :" in run_cli("dump-log", "--verify-index-only", str(first_segment)).err


def test_followers_before_kafka_4_1_indexed_whole_fetched_chunks(tmp_path):
    """ReplicaFetcherThread appends each fetched chunk with one LogSegment.append call: at most one entry,
    (last offset of the chunk, position of its first batch); the time entry names the last offset of the
    first batch holding the chunk's max timestamp (UnifiedLog.analyzeAndValidateRecords)."""
    d = tmp_path / "logdir"
    w = PartitionWriter(d / "f-0", segment_bytes=4000, index_interval_bytes=100, index_model="append")
    off = 0
    for chunk in range(12):
        raws = []
        for i in range(4):
            ts = T0 + chunk * 1000 + (300 - i * 10 if chunk % 2 else i * 10)
            raws.append(build_batch(off, [RecordSpec(j, ts, b"k", b"x" * 30) for j in range(2)]))
            off += 2
        w.append_set(raws)
    w.close()
    entries = offset_entries(d / "f-0" / "00000000000000000000.index", 0)
    starts = {b.position: b.last_offset for b in batches(d / "f-0" / "00000000000000000000.log")}
    assert any(o > starts[p] for o, p in entries)
    code, findings = verify_json(str(trusted(d, {"f-0": w.log_end_offset})))
    assert code == 0 and not at(findings, "error") and not at(findings, "warning")


def cleaned_chunk(base: int, kept: list[int], last: int, ts: int, lat: bool = False) -> bytes:
    """A batch the cleaner rebuilt: base offset and lastOffsetDelta kept, some records removed."""
    specs = [RecordSpec(o - base, ts + (o - base), f"key-{o}".encode(), b"offset commit") for o in kept]
    return build_batch(base, specs, last_offset_delta=last - base, log_append_time=lat,
                       max_timestamp=ts + 9 if lat else None)


def test_cleaned_consumer_offsets_segment_whose_time_index_names_a_removed_offset(tmp_path):
    """Cleaner.cleanInto appends each chunk with LogSegment.append(result.maxOffset, …): the offset entry
    names the chunk's largest *retained* offset, which can lie inside its last batch. The March-2024 builds'
    MemoryRecordsBuilder.info returned the rebuilt batch's base offset for LogAppendTime, so the time index
    can name an offset compaction removed (a real __consumer_offsets segment holds 23-24 and its time
    index names 20). An entry in a gap belongs to the batch that follows it."""
    d = tmp_path / "logdir"
    w = PartitionWriter(d / "__consumer_offsets-7", segment_bytes=1 << 20, index_interval_bytes=60,
                        index_model="append")
    w.append_set([cleaned_chunk(0, [0, 1], 2, T0 - 50)])                      # first append: never indexed
    w.append_set([cleaned_chunk(3, [4], 5, T0), cleaned_chunk(6, [6, 8], 9, T0 + 100)],
                 largest_offset=8)                                            # 8: last retained, batch ends at 9
    w.append_set([cleaned_chunk(10, [12], 14, T0 + 200), cleaned_chunk(15, [15, 19], 19, T0 + 300)])
    b = cleaned_chunk(20, [23, 24], 24, T0 + 400, lat=True)
    w.append_set([b], offset_of_max_timestamp=20)                             # info(): LogAppendTime → baseOffset
    w.append_set([cleaned_chunk(30, [31], 33, T0 + 500)], offset_of_max_timestamp=27)   # 27: in a gap
    w.close()
    pdir = d / "__consumer_offsets-7"
    tix = time_entries(pdir / "00000000000000000000.timeindex", 0)
    assert (T0 + 409, 20) in tix and (T0 + 501, 27) in tix
    assert any(o == 8 for o, _p in offset_entries(pdir / "00000000000000000000.index", 0))
    code, findings = verify_json(str(trusted(d, {"__consumer_offsets-7": w.log_end_offset})))
    assert code == 0 and not at(findings, "error") and not at(findings, "warning"), findings


def test_cleaner_before_2_0_1_left_the_empty_batches_it_kept_out_of_the_time_index(tmp_path):
    """MemoryRecords.filterTo counted a kept empty batch (RETAIN_EMPTY) in the FilterResult only from
    KAFKA-7385 (2.0.1/2.1.0): older cleaners end the time index with the greatest timestamp of batches that
    hold records, even when an empty batch's header carries a greater one."""
    d = tmp_path / "logdir"
    w = PartitionWriter(d / "c-0", segment_bytes=1 << 20, index_interval_bytes=40, index_model="append")
    w.append_set([cleaned_chunk(0, [0, 1], 2, T0)])
    empty = build_batch(3, [], last_offset_delta=2, max_timestamp=T0 + 9000, base_timestamp=-1,
                        producer_id=11, producer_epoch=0, base_sequence=5)
    w.append_set([empty], max_timestamp=-1)                                   # left out of the FilterResult
    w.append_set([cleaned_chunk(6, [6, 7], 7, T0 + 100)])
    w.roll()
    w.append_set([cleaned_chunk(8, [8], 8, T0 + 200)])
    w.close()
    tix = time_entries(d / "c-0" / "00000000000000000000.timeindex", 0)
    assert tix[-1][0] == T0 + 101                                             # not the empty batch's T0 + 9000
    code, findings = verify_json(str(trusted(d, {"c-0": w.log_end_offset})))
    assert code == 0 and not at(findings, "error") and not at(findings, "warning"), findings


def test_a_copy_of_a_running_broker_verifies_with_warnings_at_most(tmp_path):
    """No clean-shutdown marker: Kafka recovers every segment from the recovery point on, rebuilding their
    indexes and cutting a torn tail (LogLoader.recoverLog, LogSegment.recover). The copy raced the writer:
    the active segment's preallocated indexes name batches the .log copy does not have yet."""
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    (d / ".kafka_cleanshutdown").unlink()
    p = d / "orders-0"
    log = p / "00000000000000000078.log"
    whole = log.read_bytes()
    log.write_bytes(whole[:batches(log)[-1].position + 25])                  # the last batch half copied
    for suffix, size in (("index", 10485760), ("timeindex", 10485756)):
        f = log.with_suffix("." + suffix)
        f.write_bytes(f.read_bytes().ljust(size, b"\0"))
    (d / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("orders", 0): 78}))
    code, findings = verify_json(str(d))
    assert code == 0 and not at(findings, "error")
    assert "trailing_bytes" in {k for k, _f, _p in at(findings, "warning")}
    assert {o["kind"] for o in findings if o["severity"] == "warning"} <= {
        "trailing_bytes", "high_watermark_beyond_log_end", "snapshot_above_log_end", "clean_shutdown_with_unflushed_data"}
    assert run_cli("verify", "--fail-on", "warning", str(d)).code == 1
    # the same files after a clean shutdown would be loaded as they are: now the torn tail is an error
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    code, findings = verify_json(str(d))
    assert "trailing_bytes" in {k for k, _f, _p in at(findings, "error")} and code == 1


# --- what makes a broker misbehave is still an error ----------------------------------------------

@pytest.fixture
def healthy(tmp_path) -> tuple[Path, Path]:
    d = tmp_path / "logdir"
    w = leader_log(d / "t-0", "3.8", n=60)
    trusted(d, {"t-0": w.log_end_offset})
    return d, d / "t-0" / "00000000000000000000.log"


def _patch(path: Path, fmt: str, slot: int, *values) -> int:
    raw = bytearray(path.read_bytes())
    struct.pack_into(fmt, raw, slot * struct.calcsize(fmt), *values)
    path.write_bytes(bytes(raw))
    return slot * struct.calcsize(fmt)


def test_offset_index_entry_after_its_offsets_batch_is_an_error(healthy):
    """translateOffset starts reading at the entry's position: an offset held by an earlier batch is skipped."""
    d, log = healthy
    idx = log.with_suffix(".index")
    _o, p = offset_entries(idx, 0)[0]
    bs = batches(log)
    k = next(i for i, b in enumerate(bs) if b.position == p)
    pos = _patch(idx, ">ii", 0, bs[k - 1].last_offset, p)    # an offset the batch before p holds, at p
    code, findings = verify_json(str(d))
    assert ("index_offset_mismatch", idx.name, pos) in at(findings, "error") and code == 1


def test_offset_index_position_inside_a_batch_is_an_error(healthy):
    d, log = healthy
    idx = log.with_suffix(".index")
    o, p = offset_entries(idx, 0)[1]
    pos = _patch(idx, ">ii", 1, o, p + 3)
    code, findings = verify_json(str(d))
    assert ("index_position_not_batch_start", idx.name, pos) in at(findings, "error") and code == 1


def test_time_index_entry_pointing_past_the_batch_holding_its_timestamp_is_an_error(healthy):
    """findOffsetByTimestamp scans from the entry's batch: an earlier batch holding the timestamp is skipped."""
    d, log = healthy
    tix = log.with_suffix(".timeindex")
    ts, o = time_entries(tix, 0)[0]
    later = [b.last_offset for b in batches(log) if b.last_offset > o][2]
    pos = _patch(tix, ">qi", 0, ts, later)
    code, findings = verify_json(str(d))
    assert ("time_index_offset_mismatch", tix.name, pos) in at(findings, "error") and code == 1


def test_time_index_entry_beyond_the_segment_is_an_error(healthy):
    d, log = healthy
    tix = log.with_suffix(".timeindex")
    ts, _o = time_entries(tix, 0)[0]
    pos = _patch(tix, ">qi", 0, ts, batches(log)[-1].last_offset + 5)
    code, findings = verify_json(str(d))
    assert ("time_index_offset_mismatch", tix.name, pos) in at(findings, "error") and code == 1


def test_last_time_entry_below_the_segment_max_is_an_error(healthy):
    """Time retention reads the last entry (LogSegment.largestTimestamp): too small deletes records early."""
    d, log = healthy
    tix = log.with_suffix(".timeindex")
    raw = tix.read_bytes()
    tix.write_bytes(raw[:-12])                        # drop the roll's final entry
    code, findings = verify_json(str(d))
    kinds = {(k, f) for k, f, _p in at(findings, "error")}
    assert ("time_index_missing_final_entry", tix.name) in kinds and code == 1


def test_a_harmless_time_entry_mismatch_is_a_warning(healthy):
    """A timestamp that is not the running max there leaves lookups correct (findOffsetByTimestamp)."""
    d, log = healthy
    tix = log.with_suffix(".timeindex")
    ts, o = time_entries(tix, 0)[0]
    pos = _patch(tix, ">qi", 0, ts + 1, o)
    code, findings = verify_json(str(d))
    assert ("time_index_timestamp_mismatch", tix.name, pos) in at(findings, "warning") and code == 0
    assert run_cli("verify", "--fail-on", "warning", str(d)).code == 1


# --- the last time-index entry below the records' max, graded by the topic's rules ---------------------

def low_final_entry(d: Path, name: str) -> Path:
    """What issue 21 found in a real __consumer_offsets partition cleaned by a 3.x broker: a rolled segment
    holding offsets 23-24 (a batch 20..24 whose records 20-22 compaction removed, at T0+403/T0+404) whose
    one time-index entry is (T0+100, 20), older than both records; then an active segment."""
    p = d / name
    p.mkdir(parents=True)
    (p / "00000000000000000020.log").write_bytes(cleaned_chunk(20, [23, 24], 24, T0 + 400))
    (p / "00000000000000000020.index").write_bytes(b"")
    (p / "00000000000000000020.timeindex").write_bytes(struct.pack(">qi", T0 + 100, 0))
    (p / "00000000000000000025.log").write_bytes(build_batch(25, [RecordSpec(0, T0 + 500, b"k", b"v")]))
    (p / "00000000000000000025.index").write_bytes(b"")
    (p / "00000000000000000025.timeindex").write_bytes(b"")
    return p / "00000000000000000020.timeindex"


def final_entry(findings) -> dict:
    return next(o for o in findings if o["kind"] == "time_index_missing_final_entry")


def test_a_low_last_time_entry_on_a_compact_only_topic_is_a_warning(tmp_path):
    """LogSegment.largestTimestamp (the last time-index entry) is read by time retention
    (UnifiedLog.deleteRetentionMsBreachedSegments, cleanup.policy with delete) and by the cleaner's
    min.compaction.lag.ms (LogCleanerManager.cleanableOffsets, dirty segments only). __consumer_offsets is
    created compact-only (GroupCoordinator.offsetsTopicConfigs, every version): neither runs on this
    cleaned segment, only ListOffsets lookups by timestamp are affected."""
    d = tmp_path / "logdir"
    tix = low_final_entry(d, "__consumer_offsets-7")
    trusted(d, {"__consumer_offsets-7": 26})
    (d / "cleaner-offset-checkpoint").write_text("0\n1\n__consumer_offsets 7 25\n")
    code, findings = verify_json(str(d))
    assert ("time_index_missing_final_entry", tix.name, 0) in at(findings, "warning") and code == 0
    msg = final_entry(findings)["message"]
    assert "runs no time retention" in msg and "cleanup.policy=compact" in msg and "GroupCoordinator" in msg


def test_a_low_last_time_entry_on_a_delete_topic_is_an_error(tmp_path):
    """Time retention deletes a segment once now - largestTimestamp > retention.ms: the records up to
    T0+404 would go as if they were T0+100. Without a configuration source the topic has Kafka's default
    cleanup.policy=delete (log.cleanup.policy), said so in the message."""
    d = tmp_path / "logdir"
    tix = low_final_entry(d, "orders-0")
    trusted(d, {"orders-0": 26})
    code, findings = verify_json(str(d))
    assert ("time_index_missing_final_entry", tix.name, 0) in at(findings, "error") and code == 1
    msg = final_entry(findings)["message"]
    assert "time retention would delete the segment too early" in msg and "cleanup.policy=delete" in msg
    loose = tmp_path / "copied" / "segments"      # a directory not named TOPIC-N: its topic and policy unknown
    shutil.copytree(d / "orders-0", loose)
    code, findings = verify_json(str(loose))
    assert code == 1 and "cleanup.policy unknown" in final_entry(findings)["message"]


@pytest.mark.parametrize("configs, severity, said", [
    ({"cleanup.policy": "compact"}, "warning", "runs no time retention"),
    ({"cleanup.policy": "compact,delete"}, "error", "time retention would delete"),
    ({"cleanup.policy": "delete", "retention.ms": "-1"}, "warning", "retention.ms=-1"),
    # LogCleanerManager.cleanableOffsets: a dirty segment is cleanable once now - largestTimestamp > the lag
    ({"cleanup.policy": "compact", "min.compaction.lag.ms": "3600000"}, "error", "min.compaction.lag.ms"),
])
def test_the_topic_configuration_in_the_kraft_metadata_decides(tmp_path, configs, severity, said):
    from test_topic_config_metadata import config, part, quorum_state, topic, write_log
    d = tmp_path / "logdir"
    md = d / "__cluster_metadata-0"
    md.mkdir(parents=True)
    write_log(md, 0, [topic("events", "AAAAAAAAAAAAAAAAAAAAAQ"), part("AAAAAAAAAAAAAAAAAAAAAQ")]
              + [config("events", k, v) for k, v in configs.items()])
    quorum_state(md, [1])
    tix = low_final_entry(d, "events-0")
    trusted(d, {"events-0": 26})
    code, findings = verify_json(str(d))
    assert ("time_index_missing_final_entry", tix.name, 0) in at(findings, severity), findings
    assert said in final_entry(findings)["message"] and code == (1 if severity == "error" else 0)


def test_a_last_time_entry_above_every_batch_only_keeps_the_segment_longer(healthy):
    """largestTimestamp too large: retention keeps the segment longer (nothing is deleted early) and a lookup
    of a later timestamp finds nothing in it (fetchOffsetByTimestamp searches one segment): a warning."""
    d, log = healthy
    tix = log.with_suffix(".timeindex")
    entries = time_entries(tix, 0)
    ts, o = entries[-1]
    pos = _patch(tix, ">qi", len(entries) - 1, ts + 10_000, o)
    code, findings = verify_json(str(d))
    assert ("time_index_missing_final_entry", tix.name, pos) in at(findings, "warning") and code == 0
