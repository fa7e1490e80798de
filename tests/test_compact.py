"""``kafkalog compact`` on copies of fixtures and real compacted partitions: exactly the records a
brute-force model keeps survive with their offsets, verify passes, a second run is a no-op, and a kill
at any file operation followed by ``recover`` and a re-run gives the same result (§9)."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.txn_index import parse_txn_index

from conftest import CORPUS, FIXTURES, copy_logdir, dry_as_real, json_partition, run_cli
from crash_harness import kill_at_every_operation

NOW = 1_700_000_050_000
DAY = 86_400_000
#: The fixtures' topics have no configuration source: Kafka's default cleanup.policy=delete would leave them alone.
POLICY = ("--config", "cleanup.policy=compact")


def records(pdir: Path, with_producer: bool = False) -> list:
    """(offset, key, value, is_control, batch delete horizon[, transactional producer id]) of every record."""
    out = []
    for log in sorted(pdir.glob("*.log")):
        for b in BatchReader(log.read_bytes()):
            for r in b.records():
                row = (r.offset, r.key, r.value, b.is_control, b.delete_horizon_ms)
                out.append(row + ((b.producer_id if b.is_transactional else None),) if with_producer else row)
    return out


def model(pdir: Path, first_uncleanable: int, now: int) -> list:
    """Brute force over the original records: below the first uncleanable offset keep the latest
    non-aborted keyed record per key (a tombstone only while its horizon, stamped now when absent, is
    ahead), every control record (first pass); above it keep everything."""
    txns = [a for t in pdir.glob("*.txnindex") for a in parse_txn_index(t.read_bytes())]
    aborted = {off for off, _k, _v, control, _h, pid in records(pdir, True) if not control and any(
        a.producer_id == pid and a.first_offset <= off < a.last_offset for a in txns)}
    recs = records(pdir)
    latest = {}
    for off, key, _v, control, _h in recs:
        if off < first_uncleanable and key is not None and not control and off not in aborted:
            latest[key] = off
    keep = []
    for off, key, value, control, horizon in recs:
        if off >= first_uncleanable or control:
            keep.append(off)
        elif off in aborted or key is None or latest.get(key) != off:
            continue
        elif value is None and horizon is not None and horizon <= now:
            continue
        else:
            keep.append(off)
    return keep


def tree_hash(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(d)).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def logdir(tmp_path) -> Path:
    return copy_logdir(tmp_path / "logdir")


@pytest.mark.parametrize("partition", ["orders-0", "payments-0", "legacy-0"])
def test_keeps_exactly_the_latest_per_key(logdir, partition):
    pdir = logdir / partition
    active_base = int(sorted(pdir.glob("*.log"))[-1].name[:20])
    original = {r[0]: r for r in records(pdir)}
    expected = model(pdir, active_base, NOW)
    r = run_cli("compact", *POLICY, "--force", "--now", str(NOW), "--format", "json", str(pdir))
    assert r.code == 0, r.err
    after = records(pdir)
    assert [x[0] for x in after] == expected
    for off, key, value, _c, _h in after:                  # offsets unchanged, same key and value
        assert (original[off][1], original[off][2]) == (key, value)
    assert run_cli("verify", str(logdir)).code == 0
    before = tree_hash(logdir)
    again = run_cli("compact", *POLICY, "--force", "--now", str(NOW), str(pdir))
    assert again.code == 0 and tree_hash(logdir) == before      # a second run is a no-op


def test_tombstones_stay_until_the_horizon_then_go(logdir):
    pdir = logdir / "orders-0"
    run_cli("compact", *POLICY, "--force", "--now", str(NOW), str(pdir))
    stamped = [r for r in records(pdir) if r[2] is None and not r[3] and r[0] < 78]    # 78: active segment
    assert stamped and all(h == NOW + DAY for *_x, h in stamped)
    # the clean part is only rewritten by a pass over new dirty data (§9.3); make everything dirty again
    (logdir / "cleaner-offset-checkpoint").write_text("0\n0\n")
    run_cli("compact", *POLICY, "--force", "--now", str(NOW + 2 * DAY), str(pdir))
    assert not [r for r in records(pdir) if r[2] is None and not r[3] and r[0] < 78]
    assert run_cli("verify", str(logdir)).code == 0


@pytest.mark.parametrize("args", [("--config", "delete.retention.ms=9223372036854775807", "--now", str(NOW)),
                                  ("--now", "9223372036854775807")])
def test_a_horizon_beyond_long_max_is_not_stamped_and_the_tombstones_stay(logdir, args):
    """delete.retention.ms up to Long.MAX is valid (atLeast(0)) and --now takes any long: the horizon
    now + delete.retention.ms is a long sum in Kafka (MemoryRecords.filterTo) that wraps below zero, and
    MemoryRecordsBuilder stamps only a horizon >= 0, so the batch is rebuilt without one and its tombstones
    stay through every later pass (the broker does so: tests/kafka/test_broker_compact). On main both runs
    stopped with a struct.error traceback."""
    pdir = logdir / "orders-0"
    r = run_cli("compact", *POLICY, "--force", *args, str(pdir))
    assert r.code == 0, r.out + r.err
    kept = [r for r in records(pdir) if r[2] is None and not r[3] and r[0] < 78]    # 78: active segment
    assert kept and all(h is None for *_x, h in kept)
    (logdir / "cleaner-offset-checkpoint").write_text("0\n0\n")                     # dirty again
    run_cli("compact", *POLICY, "--force", "--now", str(NOW + 2 * DAY), str(pdir))
    assert [r[0] for r in records(pdir) if r[2] is None and not r[3] and r[0] < 78] == [r[0] for r in kept]
    assert run_cli("verify", str(logdir)).code == 0


def test_aborted_transaction_data_is_removed(logdir):
    pdir = logdir / "payments-0"
    aborted = [a for t in pdir.glob("*.txnindex") for a in parse_txn_index(t.read_bytes())]
    run_cli("compact", *POLICY, "--force", "--now", str(NOW), str(pdir))
    kept = {r[0] for r in records(pdir) if not r[3]}
    assert aborted
    for a in aborted:
        if a.last_offset < 13:
            assert not kept & {3, 6, 10} & set(range(a.first_offset, a.last_offset))


def test_ratio_gate_dry_run_and_checkpoint(logdir):
    pdir = logdir / "orders-0"
    before = tree_hash(logdir)
    r = run_cli("compact", *POLICY, "--dry-run", "--format", "json", "--now", str(NOW), str(pdir))
    obj = json_partition(r.out)
    assert tree_hash(logdir) == before and r.code == 0
    assert obj["dirty_ratio"] == 1.0 and obj["groups"][0]["records_out"] < obj["groups"][0]["records_in"]
    (logdir / "cleaner-offset-checkpoint").write_text("0\n1\norders 0 51\n")
    r = run_cli("compact", *POLICY, "--format", "json", "--min-cleanable-ratio", "0.9", "--now", str(NOW), str(pdir))
    assert "does not exceed" in json_partition(r.out)["skipped"] and r.code == 0
    r = run_cli("compact", *POLICY, "--format", "json", "--now", str(NOW), str(pdir))      # 2028 of 5916 bytes < 0.5
    assert json_partition(r.out)["dirty_ratio"] == pytest.approx(2028 / 5916, abs=1e-6) and r.code == 0
    r = run_cli("compact", *POLICY, "--format", "json", "--min-cleanable-ratio", "0.3", "--now", str(NOW), str(pdir))
    obj = json_partition(r.out)
    assert obj["first_dirty_offset"] == 51 and obj["cleaner_checkpoint"] == {"old": 51, "new": 78}
    assert "orders 0 78" in (logdir / "cleaner-offset-checkpoint").read_text()


def test_log_dir_needs_a_choice(logdir):
    assert run_cli("compact", *POLICY, str(logdir)).code == 2
    r = run_cli("compact", *POLICY, "--topic", "orders", "--force", "--now", str(NOW), str(logdir))
    assert r.code == 0 and "orders-0:" in r.out and "payments-0" not in r.out


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real Kafka corpus not found at {CORPUS}")
def test_real_compacted_consumer_offsets(tmp_path):
    """DonaldY__kafka-2.7.1 holds __consumer_offsets partitions a 2.7 broker already compacted."""
    root = tmp_path / "kafka-logs"
    shutil.copytree(CORPUS / "DonaldY__kafka-2.7.1" / "kafka-logs", root)
    for p in root.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    checked = 0
    for pdir in sorted(root.glob("__consumer_offsets-*")):
        logs = sorted(pdir.glob("*.log"))
        if len(logs) < 2:
            continue
        active = int(logs[-1].name[:20])
        expected = model(pdir, active, NOW + 10**12)
        original = {r[0]: r for r in records(pdir)}
        r = run_cli("compact", "--force", "--now", str(NOW + 10**12), "--high-watermark", str(10**9), str(pdir))
        assert r.code in (0, 1), r.err
        after = records(pdir)
        assert [x[0] for x in after] == expected, pdir.name
        assert all((original[o][1], original[o][2]) == (k, v) for o, k, v, _c, _h in after)
        checked += 1
    assert checked == 3
    assert run_cli("verify", str(root)).code == 0
    before = tree_hash(root)
    for pdir in sorted(root.glob("__consumer_offsets-*")):
        if len(list(pdir.glob("*.log"))) >= 2:
            again = run_cli("compact", "--force", "--now", str(NOW + 10**12), "--high-watermark", str(10**9),
                            str(pdir))
            assert again.code == 0, again.out
    assert tree_hash(root) == before                       # a second run is a no-op


def _records(d: Path) -> list:
    """Every record (partition, offset, key, value): a crash before the checkpoint is written makes the
    re-run a second pass, which may stamp a delete horizon on a marker (batch CRC changes) but keeps and
    drops exactly the same records."""
    return [(log.parent.name, r.offset, r.key, r.value) for log in sorted(d.rglob("*.log"))
            for b in BatchReader(log.read_bytes()) for r in b.records()]


def test_kill_at_every_file_operation_then_recover_and_rerun(tmp_path):
    """With --backup-dir: the backups are made before the first rename, so whatever the kill and recover
    (run without the backup directory) remove, every original byte is in the directory or the backup."""
    args = ["compact", *POLICY, "--force", "--now", str(NOW), "--topic", "orders", "--topic", "payments"]
    kill_at_every_operation(tmp_path, FIXTURES / "logdir", args, _records, backup=True,
                            partitions=["orders-0", "payments-0"])


def test_kill_at_every_file_operation_then_just_rerun(tmp_path):
    """No recover in between: the next compact finishes the interrupted swap (or rolls it back) itself."""
    args = ["compact", *POLICY, "--force", "--now", str(NOW), "--topic", "payments"]
    kill_at_every_operation(tmp_path, FIXTURES / "logdir", args, _records, recover_first=False,
                            partitions=["payments-0"])


@pytest.mark.parametrize("partition", ["orders-0", "payments-0", "legacy-0"])
def test_dry_run_shows_exactly_what_the_real_run_does(logdir, partition):
    """The plan --dry-run prints is the real run's, line for line (only the tense differs)."""
    pdir = logdir / partition
    dry = run_cli("compact", *POLICY, "--dry-run", "--force", "--now", str(NOW), str(pdir))
    real = run_cli("compact", *POLICY, "--force", "--now", str(NOW), str(pdir))
    assert dry.code == real.code == 0
    assert dry_as_real(dry.out) == dry_as_real(real.out)
    verdict = dry.out.splitlines()[0]
    assert verdict.startswith("compact --dry-run: would clean 1 partition (")
    assert real.out.splitlines()[0] == verdict.replace("--dry-run: would clean", ": cleaned").replace(" :", ":")
