"""``kafkalog retain`` against Kafka's behaviour where issue 10 found us wrong: the roll that precedes
deleting every segment also writes a producer snapshot (``UnifiedLog.roll``), and the leader-epoch cache
is truncated from the start as ``LeaderEpochFileCache.truncateFromStart`` does."""
from __future__ import annotations

from pathlib import Path

from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.producer_snapshot import parse_producer_snapshot

from conftest import copy_logdir, run_cli

NOW = 1_700_000_050_000


def copy(tmp_path: Path) -> Path:
    return copy_logdir(tmp_path / "logdir")


def test_rolling_before_deleting_every_segment_writes_a_producer_snapshot(tmp_path):
    """``UnifiedLog.deleteSegments`` rolls first when every segment goes, and ``UnifiedLog.roll`` (2.x–4.0) calls
    ``producerStateManager.updateMapEndOffset(newSegment.baseOffset)`` then ``takeSnapshot``: a snapshot at the
    new base offset holding every producer's state. Checked against the batches themselves: per producer, its
    last data batch's offset, sequence and epoch, and no open transaction (every transaction ended)."""
    root = copy(tmp_path)
    pdir = root / "payments-0"
    (pdir / f"{23:020d}.snapshot").unlink()          # as after an unclean shutdown: none at the log end
    last = {}
    for log in sorted(pdir.glob("*.log")):
        for b in BatchReader(log.read_bytes()):
            if b.producer_id >= 0 and not b.is_control:
                last[b.producer_id] = (b.last_offset, b.last_sequence, b.producer_epoch)
    r = run_cli("retain", "--retention-ms", "0", "--now", str(NOW + 10**6), str(pdir))
    assert r.code == 0 and "and a producer snapshot there" in r.out
    snap = parse_producer_snapshot((pdir / f"{23:020d}.snapshot").read_bytes())
    assert {e.producer_id: (e.last_offset, e.last_sequence, e.producer_epoch) for e in snap.entries} == last
    assert all(e.current_txn_first_offset == -1 for e in snap.entries)
    assert sorted(p.name for p in pdir.iterdir() if p.name[0] == "0") == [
        f"{23:020d}.{s}" for s in ("index", "log", "snapshot", "timeindex")]
    assert run_cli("verify", str(root)).code == 0


def test_an_existing_snapshot_at_the_log_end_is_left_as_it_is(tmp_path):
    """``ProducerStateManager.takeSnapshot`` writes only when the map end offset is past the last snapshot's:
    after a clean shutdown there is one at the log end already, and the roll leaves it untouched."""
    root = copy(tmp_path)
    pdir = root / "orders-0"
    snap = pdir / f"{91:020d}.snapshot"
    before = (snap.read_bytes(), snap.stat().st_mtime_ns)
    r = run_cli("retain", "--retention-bytes", "0", "--retention-ms", "-1", "--now", str(NOW), str(pdir))
    assert r.code == 0 and "rolled an empty active segment at 91 first" in r.out
    assert (snap.read_bytes(), snap.stat().st_mtime_ns) == before


def test_leader_epochs_are_truncated_from_the_start_while_entries_start_at_or_below_it(tmp_path):
    """``LeaderEpochFileCache.truncateFromStart`` (3.x–4.0: ``removeWhileMatching`` from the oldest entry while
    startOffset <= the new log start, then the last removed epoch re-added at the log start)."""
    root = copy(tmp_path)
    pdir = root / "orders-0"
    (pdir / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n1 30\n2 70\n")
    r = run_cli("retain", "--log-start-offset", "51", "--config", "orders:cleanup.policy=delete", "--now", str(NOW),
                str(pdir))
    assert r.code == 0
    assert (pdir / "leader-epoch-checkpoint").read_text() == "0\n2\n1 51\n2 70\n"


def test_the_recovery_point_is_raised_to_the_new_log_start(tmp_path):
    """``UnifiedLog.updateLogStartOffset`` (2.x–4.x): a recovery point below the new log start offset is
    raised to it (and written at the broker's next recovery-point checkpoint). Issue 21."""
    from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint
    root = copy(tmp_path)
    rp = root / "recovery-point-offset-checkpoint"
    values = parse_offset_checkpoint(rp.read_bytes())
    values[("orders", 0)] = 10
    rp.write_text(build_offset_checkpoint(values))
    r = run_cli("delete-records", "--offset", "orders-0=51", "--config", "orders:cleanup.policy=delete", str(root))
    assert r.code == 0, r.out + r.err
    assert parse_offset_checkpoint(rp.read_bytes())[("orders", 0)] == 51


def test_recover_truncates_the_leader_epochs_from_the_log_start_checkpoint(tmp_path):
    """``LogLoader.load`` (3.0–4.x): after ``truncateFromEnd`` the cache is truncated from the start at the
    log-start checkpoint's value ("the earliest leader epoch may not be flushed during a hard failure")."""
    from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint
    root = copy(tmp_path)
    (root / ".kafka_cleanshutdown").unlink(missing_ok=True)
    pdir = root / "orders-0"
    (pdir / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n1 30\n2 70\n")
    ls = root / "log-start-offset-checkpoint"
    values = parse_offset_checkpoint(ls.read_bytes()) if ls.exists() else {}
    values[("orders", 0)] = 40
    ls.write_text(build_offset_checkpoint(values))
    r = run_cli("recover", "--partition", "orders-0", str(root))
    assert r.code == 1, r.out
    assert (pdir / "leader-epoch-checkpoint").read_text() == "0\n2\n1 40\n2 70\n"
