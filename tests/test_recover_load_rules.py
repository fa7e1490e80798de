"""``recover`` against the rules of Kafka's log loader, each test written from the Kafka class/method that
defines the behaviour (cited in the test), not from kafkalog's specification.

* Load pass 3 (``LogLoader.loadSegmentFiles``, Scala ``Log``/``LogLoader`` 2.x-3.9 and Java trunk): a segment
  whose ``.index`` is missing, or whose ``.txnindex`` fails ``TransactionIndex.sanityCheck``, is recovered at
  every start, clean shutdown or not, and nothing catches what that recovery throws: an
  InvalidOffsetException (offsets going backwards at an index entry) stops the loader; a cut keeps every
  later segment, so offsets after the cut are missing in the middle of the log. recover refuses both and
  changes nothing in the partition unless ``--truncate-at-damage`` asks for the cut of pass 4
  (``LogLoader.recoverLog``: cut, or empty the segment, and delete every later segment).
* ``LogManager.loadLog``: every directory of a log dir reads that log dir's checkpoint entries for its
  topic-partition (a ``-future`` log has its own entries in the log dir holding it, ``logsByDir``);
  a ``-delete`` directory gets load passes 1-3 and no recovery (``LogLoader.load``).
* ``LogCleanerManager.cleanableOffsets`` (2.4+, KAFKA-8724): a cleaner checkpoint above the log end is reset
  to the log start offset (max of the log-start checkpoint entry and the first segment's base,
  ``LogLoader.load``).
"""
from __future__ import annotations

import json
import shutil

import pytest
from conftest import flat, FIXTURES, run_cli
from recover_helpers import (brute_batches, kafka_index_append_fails, partition_batches, segment_logs, tree_state,
                             writable_copy)

from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint

SEG51 = "00000000000000000051"


def _json(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _problems(out: str) -> list[dict]:
    return [o for o in _json(out) if o["type"] == "problem"]


def _no_gap(pdir) -> bool:
    """Every batch starts right after the previous one (the fixtures are written without gaps)."""
    batches = partition_batches(pdir)
    return all(b[0] == a[1] + 1 for a, b in zip(batches, batches[1:]))


def _issue_case(tmp_path, name="d"):
    """The reproduction of the issue: fixture non-monotonic-offsets, 51.index deleted, a clean-shutdown
    marker; recover run with --index-interval-bytes 100."""
    d = writable_copy(FIXTURES / "damaged" / "non-monotonic-offsets", tmp_path / name)
    (d / "orders-0" / f"{SEG51}.index").unlink()
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    return d


def test_kafka_would_stop_on_the_issue_reproduction():
    """The premise, from Kafka's index append rules: with index.interval.bytes 100 segment 51's recovery
    throws InvalidOffsetException; with the default 4096 it adds no index entry, so nothing throws and
    Kafka keeps the segment whole."""
    data = (FIXTURES / "damaged" / "non-monotonic-offsets" / "orders-0" / f"{SEG51}.log").read_bytes()
    assert kafka_index_append_fails(data, 51, 100)
    assert not kafka_index_append_fails(data, 51, 4096)
    for seg in ("00000000000000000000", "00000000000000000025", "00000000000000000078"):
        ok = (FIXTURES / "logdir" / "orders-0" / f"{seg}.log").read_bytes()
        assert not kafka_index_append_fails(ok, int(seg), 100)


def test_offsets_going_backwards_in_a_pass3_segment_are_refused_and_nothing_changes(tmp_path):
    d = _issue_case(tmp_path)
    before = tree_state(d)
    for extra in ([], ["--dry-run"], ["--mark-clean"], ["--backup-dir", str(tmp_path / "b")]):
        res = run_cli("recover", "--index-interval-bytes", "100", "--format", "json", *extra, str(d))
        assert res.code == 1, res.out
        assert tree_state(d) == before                              # not one byte, marker included
        (p,) = [p for p in _problems(res.out) if p["partition"] == "orders-0"]
        assert p["kind"] == "offsets_go_backwards" and p["file"] == f"orders-0/{SEG51}.log"
        assert "--truncate-at-damage" in p["message"] and "None" not in p["message"]
        assert [o for o in _json(res.out) if o["type"] == "action"] == []
        assert [o["left_unchanged"] for o in _json(res.out) if o["type"] == "partition"] == [True]
        if "--mark-clean" in extra:
            assert any(q["kind"] == "not_marked_clean" for q in _problems(res.out))
    text = run_cli("recover", "--index-interval-bytes", "100", str(d))
    assert "offsets go backwards" in flat(text.out) and "Nothing was changed in this partition" in flat(text.out)
    assert "§" not in text.out and "None" not in text.out


def test_without_index_entries_kafka_keeps_the_segment_and_so_does_recover(tmp_path):
    d = _issue_case(tmp_path)
    res = run_cli("recover", "--format", "json", str(d))          # default index.interval.bytes 4096
    assert res.code == 1
    assert not _problems(res.out)
    original = FIXTURES / "damaged" / "non-monotonic-offsets" / "orders-0"
    for log in segment_logs(original):
        assert (d / "orders-0" / log.name).read_bytes() == log.read_bytes()
    assert (d / "orders-0" / f"{SEG51}.index").read_bytes() == b""       # no entry: nothing to index


def test_truncate_at_damage_cuts_and_removes_every_later_segment(tmp_path):
    d = _issue_case(tmp_path)
    args = ["recover", "--index-interval-bytes", "100", "--truncate-at-damage"]
    res = run_cli(*args, str(d))
    assert res.code == 2 and "--backup-dir" in res.err                   # never without a backup
    plan = run_cli(*args, "--dry-run", "--format", "json", str(d))
    assert plan.code == 1
    backup = tmp_path / "backup"
    res = run_cli(*args, "--backup-dir", str(backup), "--format", "json", str(d))
    assert res.code == 1
    assert [o for o in _json(res.out) if o["type"] == "action"] == \
        [o for o in _json(plan.out) if o["type"] == "action"]
    # LogLoader.recoverLog's treatment of InvalidOffsetException: the segment emptied, later segments deleted
    pdir = d / "orders-0"
    assert (pdir / f"{SEG51}.log").stat().st_size == 0
    assert not (pdir / "00000000000000000078.log").exists()
    original = FIXTURES / "damaged" / "non-monotonic-offsets" / "orders-0"
    assert (backup / "orders-0" / f"{SEG51}.log.truncated-at-0").read_bytes() == \
        (original / f"{SEG51}.log").read_bytes()
    assert (backup / "orders-0" / "00000000000000000078.log").read_bytes() == \
        (original / "00000000000000000078.log").read_bytes()
    assert _no_gap(pdir) and partition_batches(pdir)[-1][1] == 50
    assert (d / ".kafka_cleanshutdown").exists()
    assert run_cli("recover", "--index-interval-bytes", "100", str(d)).code == 0
    assert run_cli("verify", str(d)).code == 0


def _flip(log, at: int) -> None:
    data = bytearray(log.read_bytes())
    data[at] ^= 0x10
    log.write_bytes(bytes(data))


def test_a_cut_in_a_middle_pass3_segment_would_leave_a_gap_and_is_refused(tmp_path):
    """Segment 25 without its .index and with a corrupt batch: Kafka's pass 3 cuts it and keeps segments
    51 and 78 (offsets missing in the middle of the log)."""
    d = writable_copy(FIXTURES / "damaged" / "missing-index-clean", tmp_path / "d")
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    pdir = d / "orders-0"
    log = pdir / "00000000000000000025.log"
    batches, _, _ = brute_batches(log.read_bytes())
    third = sum(len(b[3]) for b in batches[:2])
    _flip(log, third + 70)
    assert brute_batches(log.read_bytes())[1] == third           # Kafka's recovery would cut here
    before = tree_state(d)
    res = run_cli("recover", "--index-interval-bytes", "256", "--format", "json", str(d))
    assert res.code == 1 and tree_state(d) == before
    (p,) = _problems(res.out)
    assert p["kind"] == "gap_in_log" and p["position"] == third and "2 later segments" in p["message"]
    res = run_cli("recover", "--index-interval-bytes", "256", "--truncate-at-damage", "--backup-dir",
                  str(tmp_path / "b"), str(d))
    assert res.code == 1
    assert [x.name for x in segment_logs(pdir)] == ["00000000000000000000.log", "00000000000000000025.log"]
    assert log.stat().st_size == third and _no_gap(pdir)
    assert run_cli("recover", "--index-interval-bytes", "256", str(d)).code == 0


def test_a_cut_in_the_last_pass3_segment_leaves_no_gap_and_is_done(tmp_path):
    """The same damage in the last segment: Kafka's pass 3 cut leaves no gap; recover does it by default."""
    d = writable_copy(FIXTURES / "logdir", tmp_path / "d")
    for other in [p for p in d.iterdir() if p.is_dir() and p.name != "orders-0"]:
        shutil.rmtree(other)
    pdir = d / "orders-0"
    (pdir / "00000000000000000078.index").unlink()
    log = pdir / "00000000000000000078.log"
    _flip(log, 700)
    cut = brute_batches(log.read_bytes())[1]
    res = run_cli("recover", "--index-interval-bytes", "256", "--format", "json", str(d))
    assert res.code == 1 and not _problems(res.out)
    assert log.stat().st_size == cut and (pdir / "00000000000000000078.index").exists()
    assert (d / ".kafka_cleanshutdown").exists()


def test_pass3_comes_before_pass4(tmp_path):
    """Without a clean shutdown, segment 51 (missing .index, offsets going backwards) is also in recoverLog's
    range, but Kafka's loader fails in pass 3 first. Damage in an earlier segment recovered by pass 4 wins:
    recoverLog cuts there and deletes segment 51 with the others."""
    d = _issue_case(tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    res = run_cli("recover", "--index-interval-bytes", "100", "--format", "json", str(d))
    assert res.code == 1 and [p["kind"] for p in _problems(res.out)] == ["offsets_go_backwards"]
    log25 = d / "orders-0" / "00000000000000000025.log"
    _flip(log25, 1000)
    cut = brute_batches(log25.read_bytes())[1]
    res = run_cli("recover", "--index-interval-bytes", "100", "--format", "json", "--backup-dir",
                  str(tmp_path / "b"), str(d))
    assert res.code == 1 and not _problems(res.out)
    assert log25.stat().st_size == cut
    assert [x.name for x in segment_logs(d / "orders-0")] == ["00000000000000000000.log", "00000000000000000025.log"]


def test_a_producer_state_kafka_cannot_replay_is_refused(tmp_path):
    """ProducerAppendInfo.appendDataBatch throws InvalidTxnStateException for a non-transactional batch of a
    producer with an open transaction; no loader path catches it, so the broker does not start."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path / "d"
    pdir = d / "t-0"
    pdir.mkdir(parents=True)
    (d / "meta.properties").write_bytes((FIXTURES / "logdir" / "meta.properties").read_bytes())
    t = 1_700_000_000_000
    txn = build_batch(0, [RecordSpec(0, t, b"k", b"v")], is_transactional=True, producer_id=5, producer_epoch=0,
                      base_sequence=0)
    plain = build_batch(1, [RecordSpec(0, t, b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=1)
    (pdir / "00000000000000000000.log").write_bytes(txn + plain + bytes(30))
    before = tree_state(d)
    res = run_cli("recover", "--format", "json", str(d))
    assert res.code == 1 and tree_state(d) == before
    (p,) = _problems(res.out)
    assert p["kind"] == "producer_state" and "InvalidTxnStateException" in p["message"]
    assert run_cli("recover", "--truncate-at-damage", "--dry-run", str(d)).code == 1     # not overridable
    assert tree_state(d) == before


# --- LogManager.loadLog: -future, -stray and -delete directories ----------------------------------------

UUID = "0123456789abcdef0123456789abcdef"


def test_future_directory_uses_its_own_checkpoint_entries(tmp_path):
    """A -future log alone in its log dir (an intra-broker move in progress): the log dir's checkpoint
    entries for its topic-partition are its own, so recovery starts at its recovery point, not at its
    first segment, and the entries above its new log end are lowered."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "meta.properties").write_bytes((FIXTURES / "logdir" / "meta.properties").read_bytes())
    future = writable_copy(FIXTURES / "logdir" / "orders-0", d / f"orders-0.{UUID}-future")
    first = future / "00000000000000000000.log"
    _flip(first, 300)                      # below the recovery point: flushed data, Kafka does not look
    last = future / "00000000000000000078.log"
    last.write_bytes(last.read_bytes() + bytes(100))
    leo = 91
    for name, value in (("recovery-point-offset-checkpoint", 78), ("replication-offset-checkpoint", 95),
                        ("cleaner-offset-checkpoint", 95), ("log-start-offset-checkpoint", 10)):
        (d / name).write_text(build_offset_checkpoint({("orders", 0): value}))
    res = run_cli("recover", "--index-interval-bytes", "256", "--format", "json", str(d))
    assert res.code == 1
    part = next(o for o in _json(res.out) if o["type"] == "partition")
    assert part["kind"] == "future" and "recovery point 78" in part["recovery"]
    assert len(first.read_bytes()) == 1935                         # left alone, as Kafka leaves it
    assert last.stat().st_size == 1046
    value = lambda n: parse_offset_checkpoint((d / n).read_bytes())[("orders", 0)]  # noqa: E731
    assert value("recovery-point-offset-checkpoint") == 78 and value("replication-offset-checkpoint") == leo
    assert value("cleaner-offset-checkpoint") == 10 and value("log-start-offset-checkpoint") == 10
    mark = run_cli("recover", "--index-interval-bytes", "256", "--mark-clean", str(d))
    assert mark.code == 1 and value("recovery-point-offset-checkpoint") == leo   # checkpointed like a current log


def test_future_beside_its_current_log_is_recovered_from_its_first_segment(tmp_path):
    """Both in one log dir, the entries are the current log's: the -future log is recovered whole and the
    entries are left to the current log (beyond Kafka, which would apply them to both)."""
    d = writable_copy(FIXTURES / "damaged" / "stale-checkpoints", tmp_path / "d")
    (d / "log-start-offset-checkpoint").write_text("0\n1\norders 0 60\n")     # within the current log
    writable_copy(FIXTURES / "damaged" / "zero-tail" / "orders-0", d / f"orders-0.{UUID}-future")
    res = run_cli("recover", "--index-interval-bytes", "256", "--format", "json", str(d))
    future = next(o for o in _json(res.out) if o["type"] == "partition" and o["partition"].endswith("-future"))
    assert "beside the current log" in future["recovery"]
    assert future["truncations"][0]["bytes"] == 300 and future["checkpoints"] == []
    assert run_cli("recover", "--index-interval-bytes", "256", str(d)).code == 0


def test_delete_directory_gets_passes_1_to_3_only(tmp_path):
    """LogLoader.load: leftovers removed and a segment without .index recovered, but no recoverLog (the
    zero tail stays) and nothing of the producer state, epochs or checkpoints touched."""
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    (d / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("orders", 1): 5}))
    dele = writable_copy(FIXTURES / "damaged" / "zero-tail" / "orders-0", d / f"orders-1.{UUID}-delete")
    (dele / "00000000000000000025.log.cleaned").write_bytes(b"x")
    (dele / "00000000000000000025.index").unlink()
    (dele / "00000000000000099999.snapshot").write_bytes(b"stale")
    epochs = (dele / "leader-epoch-checkpoint").read_bytes()
    tail = (dele / "00000000000000000078.log").read_bytes()
    before_cp = (d / "recovery-point-offset-checkpoint").read_bytes()
    res = run_cli("recover", "--index-interval-bytes", "256", "--format", "json", "--partition", "orders-1", str(d))
    assert res.code == 1
    objs = _json(res.out)
    assert not [o for o in objs if o["type"] == "skipped"]
    part = next(o for o in objs if o["type"] == "partition")
    assert part["kind"] == "delete" and part["truncations"] == []
    assert not (dele / "00000000000000000025.log.cleaned").exists()
    assert (dele / "00000000000000000025.index").read_bytes() == \
        (FIXTURES / "logdir" / "orders-0" / "00000000000000000025.index").read_bytes()
    assert (dele / "00000000000000000078.log").read_bytes() == tail
    assert (dele / "00000000000000099999.snapshot").read_bytes() == b"stale"
    assert (dele / "leader-epoch-checkpoint").read_bytes() == epochs
    assert (d / "recovery-point-offset-checkpoint").read_bytes() == before_cp
    assert run_cli("recover", "--index-interval-bytes", "256", "--partition", "orders-1", str(d)).code == 0


# --- LogCleanerManager.cleanableOffsets ---------------------------------------------------------------------

@pytest.mark.parametrize("log_start_entry,expected", [(30, 30), (None, 0)])
def test_cleaner_checkpoint_above_the_log_end_is_reset_to_the_log_start(tmp_path, log_start_entry, expected):
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    (d / "cleaner-offset-checkpoint").write_text(build_offset_checkpoint({("orders", 0): 200}))
    if log_start_entry is not None:
        (d / "log-start-offset-checkpoint").write_text(build_offset_checkpoint({("orders", 0): log_start_entry}))
    res = run_cli("recover", "--index-interval-bytes", "256", str(d))
    assert res.code == 1
    assert parse_offset_checkpoint((d / "cleaner-offset-checkpoint").read_bytes())[("orders", 0)] == expected
    assert f"write cleaner-offset-checkpoint (orders-0: 200 -> {expected})" in flat(res.out)
    assert run_cli("recover", "--index-interval-bytes", "256", str(d)).code == 0


def test_no_replay_after_a_clean_shutdown_without_any_snapshot(tmp_path):
    """UnifiedLog.rebuildProducerState: after a clean shutdown with no snapshot file at all (an upgrade)
    Kafka writes empty snapshots and does not read the log, so a batch it could not replay does not stop
    it; without the marker it replays from the log start and stops."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path / "d"
    pdir = d / "t-0"
    pdir.mkdir(parents=True)
    (d / "meta.properties").write_bytes((FIXTURES / "logdir" / "meta.properties").read_bytes())
    t = 1_700_000_000_000
    txn = build_batch(0, [RecordSpec(0, t, b"k", b"v")], is_transactional=True, producer_id=5, producer_epoch=0,
                      base_sequence=0)
    plain = build_batch(1, [RecordSpec(0, t, b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=1)
    (pdir / "00000000000000000000.log").write_bytes(txn + plain)
    from kafkalog_formats.offset_index import build_offset_index
    from kafkalog_formats.time_index import build_time_index
    (pdir / "00000000000000000000.index").write_bytes(build_offset_index([], 0))
    (pdir / "00000000000000000000.timeindex").write_bytes(build_time_index([(t, 1)], 0))
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    res = run_cli("recover", "--format", "json", str(d))
    assert res.code == 0 and not _problems(res.out), res.out
    res = run_cli("recover", "--force", "--format", "json", str(d))
    assert res.code == 1 and [p["kind"] for p in _problems(res.out)] == ["producer_state"]


def test_inconsistent_kraft_snapshots_are_reported_and_none_is_removed(tmp_path):
    """KafkaMetadataLog.recoverSnapshots throws (the Raft layer does not start) before it deletes any
    partial or old snapshot when no snapshot reaches the log start offset; once one does, the partial
    snapshot and those ending below the log start are deleted."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch

    from kafkalog_cli.repair.log_writer import PartitionWriter
    d = tmp_path / "d"
    d.mkdir()
    (d / "meta.properties").write_bytes((FIXTURES / "logdir" / "meta.properties").read_bytes())
    meta = d / "__cluster_metadata-0"
    w = PartitionWriter(meta, write_snapshots=False)
    w.append(build_batch(10, [RecordSpec(0, 1_700_000_000_000, None, b"record")]))
    w.close(snapshot=False)
    old = meta / "00000000000000000005-0000000001.checkpoint"
    partial = meta / "00000000000000000012-0000000001.checkpoint.part"
    old.write_bytes(b"old")
    partial.write_bytes(b"partial")
    res = run_cli("recover", "--include-metadata-log", "--format", "json", str(d))
    assert res.code == 1 and [p["kind"] for p in _problems(res.out)] == ["kraft_snapshot_missing"]
    assert old.exists() and partial.exists()
    (meta / "00000000000000000011-0000000001.checkpoint").write_bytes(b"snapshot")
    res = run_cli("recover", "--include-metadata-log", "--format", "json", str(d))
    assert res.code == 1 and not _problems(res.out)
    assert not old.exists() and not partial.exists()


def test_messages_say_absent_not_none(tmp_path):
    """A recovery point not in the checkpoint is absent (Kafka: 0), never Python's None, in the report."""
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    res = run_cli("recover", "--details", "--index-interval-bytes", "256", "--mark-clean", str(d))
    assert res.code == 1
    said = flat(res.out)
    assert "orders-0: absent -> 91" in said and "(absent from recovery-point-offset-checkpoint)" in said
    assert "None" not in res.out and "§" not in res.out


def test_log_end_without_snapshots_after_a_clean_shutdown(tmp_path):
    """No snapshot file and a clean shutdown (no producer-state replay): the log end is still the offset
    after the last batch of the last segment (LogLoader.recoverLog: readNextOffset), so a high watermark
    above it is lowered to it, not to the last segment's base."""
    d = writable_copy(FIXTURES / "logdir", tmp_path / "d")
    for other in [p for p in d.iterdir() if p.is_dir() and p.name != "orders-0"]:
        shutil.rmtree(other)
    for snap in (d / "orders-0").glob("*.snapshot"):
        snap.unlink()
    (d / "replication-offset-checkpoint").write_text(build_offset_checkpoint({("orders", 0): 200}))
    assert (d / ".kafka_cleanshutdown").exists()
    res = run_cli("recover", "--index-interval-bytes", "256", "--mark-clean", str(d))
    assert res.code == 1
    leo = partition_batches(d / "orders-0")[-1][1] + 1
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        assert parse_offset_checkpoint((d / name).read_bytes())[("orders", 0)] == leo == 91


def test_no_producer_state_replay_in_a_delete_directory(tmp_path):
    """LogLoader.load rebuilds a -delete directory's producer state only up to offset 0, so a batch Kafka
    could not replay does not stop it there."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    pdir = d / f"t-0.{UUID}-delete"
    pdir.mkdir()
    t = 1_700_000_000_000
    txn = build_batch(0, [RecordSpec(0, t, b"k", b"v")], is_transactional=True, producer_id=5, producer_epoch=0,
                      base_sequence=0)
    plain = build_batch(1, [RecordSpec(0, t, b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=1)
    (pdir / "00000000000000000000.log").write_bytes(txn + plain)
    from kafkalog_formats.offset_index import build_offset_index
    from kafkalog_formats.time_index import build_time_index
    (pdir / "00000000000000000000.index").write_bytes(build_offset_index([], 0))
    (pdir / "00000000000000000000.timeindex").write_bytes(build_time_index([(t, 1)], 0))
    res = run_cli("recover", "--partition", "t-0", "--format", "json", str(d))
    assert res.code == 0 and not _problems(res.out), res.out


# --- LogLoader.recoverLog: log end below the checkpointed log start (Kafka 2.3+, KAFKA-8306) ---------------

def test_log_end_below_the_log_start_deletes_every_segment_as_kafka_does(tmp_path):
    """Kafka's LogLoaderTest.testLogEndLessThanStartAfterReopen, on disk: the log start offset was advanced
    (delete-records to 60), then the segments at and above it were lost (here: deleted from the file
    system, the cause Kafka's warning names). Kafka's loader (Log.recoverLog 2.3-2.8, LogLoader.recoverLog
    3.0+, trunk deleteSegmentsIfLogStartGreaterThanLogEnd) deletes every remaining segment, empties the
    leader-epoch cache, restarts the producer state at the log start and creates one empty segment there:
    log start = log end = 60. Lowering the log start instead would make deleted records readable again."""
    d = writable_copy(FIXTURES / "logdir", tmp_path / "d")
    (d / ".kafka_cleanshutdown").unlink()
    pdir = d / "orders-0"
    for name in list(pdir.iterdir()):
        if name.name.startswith(("00000000000000000051.", "00000000000000000078.", "00000000000000000091.")):
            name.unlink()
    starts = parse_offset_checkpoint((d / "log-start-offset-checkpoint").read_bytes())
    starts[("orders", 0)] = 60
    (d / "log-start-offset-checkpoint").write_text(build_offset_checkpoint(starts))
    before = {p.name: p.read_bytes() for p in pdir.iterdir()}
    backup = tmp_path / "backup"

    dry = run_cli("recover", "--dry-run", "--trust-checkpoints", "--format", "json", "--partition", "orders-0",
                  str(d))
    assert dry.code == 1
    assert {p.name: p.read_bytes() for p in pdir.iterdir()} == before      # the dry run changes nothing
    res = run_cli("recover", "--trust-checkpoints", "--backup-dir", str(backup), "--partition", "orders-0", str(d))
    assert res.code == 1, res.err
    assert "below the log start offset 60" in res.out

    left = sorted(p.name for p in pdir.iterdir())
    assert left == ["00000000000000000060.index", "00000000000000000060.log", "00000000000000000060.timeindex",
                    "leader-epoch-checkpoint", "partition.metadata"]
    assert all((pdir / n).stat().st_size == 0 for n in left if n.startswith("000"))
    assert (pdir / "leader-epoch-checkpoint").read_text().splitlines() == ["0", "0"]
    assert parse_offset_checkpoint((d / "log-start-offset-checkpoint").read_bytes())[("orders", 0)] == 60
    assert parse_offset_checkpoint((d / "recovery-point-offset-checkpoint").read_bytes())[("orders", 0)] == 60
    # every removed or overwritten byte is in the backup
    saved = {p.name: p.read_bytes() for p in (backup / "orders-0").iterdir()}
    for name, data in before.items():
        if name != "partition.metadata":
            assert saved.get(name) == data, name
    # the broker's state after loading is stable: a second recover has nothing to do, verify is clean
    assert run_cli("recover", "--partition", "orders-0", str(d)).code == 0
    assert run_cli("verify", str(pdir)).code == 0


def test_a_log_start_beyond_the_log_end_is_left_alone_unless_trusted(tmp_path):
    """Issue 21, item 5: one value of log-start-offset-checkpoint changed to 1048576 (the log ends at 91).
    A broker would delete all 91 records (KAFKA-8306); offline a damaged checkpoint looks the same, so
    recover changes nothing in the partition and says what the broker will do and how to choose; verify
    reports it as an error. --trust-checkpoints needs --backup-dir."""
    d = writable_copy(FIXTURES / "logdir", tmp_path / "d")
    (d / ".kafka_cleanshutdown").unlink()
    pdir = d / "orders-0"
    starts = parse_offset_checkpoint((d / "log-start-offset-checkpoint").read_bytes())
    starts[("orders", 0)] = 1048576
    (d / "log-start-offset-checkpoint").write_text(build_offset_checkpoint(starts))
    before = {p.name: p.read_bytes() for p in pdir.iterdir()}
    checkpoints = {n: (d / n).read_bytes() for n in ("log-start-offset-checkpoint", "recovery-point-offset-checkpoint")}
    res = run_cli("recover", "--format", "json", str(d))
    assert res.code == 1
    problems = [o for o in _json(res.out) if o["type"] == "problem" and o["kind"] == "log_start_beyond_log_end"]
    assert problems and "deletes every record of the partition" in problems[0]["message"]
    assert "--trust-checkpoints" in problems[0]["message"]
    assert {p.name: p.read_bytes() for p in pdir.iterdir()} == before
    assert {n: (d / n).read_bytes() for n in checkpoints} == checkpoints
    assert run_cli("verify", "--format", "json", str(d)).code == 1
    assert "give --backup-dir" in run_cli("recover", "--trust-checkpoints", str(d)).err


def test_log_end_at_the_log_start_keeps_the_segments(tmp_path):
    """Kafka deletes only when the log end is strictly below the log start (logEndOffset >= logStartOffset
    keeps the log)."""
    d = writable_copy(FIXTURES / "logdir", tmp_path / "d")
    pdir = d / "orders-0"
    for name in list(pdir.iterdir()):
        if name.name.startswith(("00000000000000000078.", "00000000000000000091.")):
            name.unlink()
    starts = parse_offset_checkpoint((d / "log-start-offset-checkpoint").read_bytes())
    starts[("orders", 0)] = 78                  # the log now ends at 78
    (d / "log-start-offset-checkpoint").write_text(build_offset_checkpoint(starts))
    run_cli("recover", "--partition", "orders-0", str(d))
    assert (pdir / "00000000000000000051.log").exists() and (pdir / "00000000000000000000.log").exists()
