"""Crash safety of ``kafkalog recover``, for real: the command runs in a subprocess that is killed —
at every file operation in turn (``KAFKALOG_FAULT_AFTER=n`` makes ``fileops`` call ``os._exit`` at the
(n+1)th operation) and by SIGKILL at seeded random times during a larger run — then recover runs again
without a fault. The result must hold exactly the records (offsets, CRCs, bytes of every batch) of an
undisturbed run, read cleanly (dump-log, verify) and need nothing more (a third run exits 0); no byte
that was cut or file that was removed may be missing from the backup directory.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, run_cli
from recover_helpers import partition_batches, segment_logs, tree_state, writable_copy

#: the crash matrix: every file operation of a real run interrupted (marker ``slow``, in the default run)
pytestmark = pytest.mark.slow

KILLED = 137          # fileops._step exits with 137, like a SIGKILLed process


def _env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), **extra)
    env.pop("KAFKALOG_FAULT_AFTER", None)
    env.update(extra)
    return env


def _run(args: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", "recover", *args], capture_output=True,
                          text=True, env=_env(**env), cwd=REPO, timeout=120)


def _records(logdir: Path) -> dict[str, list]:
    """(base offset, last offset, crc, bytes) of every batch, per partition, read by the test's own reader."""
    return {p.name: [(b[0], b[1], b[2], b[3]) for b in partition_batches(p)]
            for p in sorted(logdir.iterdir()) if p.is_dir() and segment_logs(p)}


def _check_finished(d: Path, args: list[str], reference: dict, verify: bool = True) -> None:
    again = run_cli("recover", *args)
    assert again.code in (0, 1), again.out + again.err
    assert _records(d) == reference
    third = run_cli("recover", "--dry-run", *args)          # nothing left to do
    assert third.code == 0, third.out
    assert run_cli("dump-log", "--deep-iteration", str(d)).code == 0
    if verify:
        result = run_cli("verify", str(d))
        assert result.code == 0, result.out


def _rich_case(tmp: Path) -> Path:
    """orders-0 with a flipped byte in a batch in the middle of segment 51, plus everything else recover
    does: a clean-shutdown marker (so --force), stale checkpoints and a stale leader epoch, a leftover
    .deleted file and an orphan index."""
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    d = tmp
    d.mkdir(parents=True)
    (d / "meta.properties").write_bytes((FIXTURES / "logdir" / "meta.properties").read_bytes())
    p = writable_copy(FIXTURES / "logdir" / "orders-0", d / "orders-0")
    log = p / "00000000000000000051.log"
    data = bytearray(log.read_bytes())
    data[DAMAGED_POSITION] ^= 0x10
    log.write_bytes(bytes(data))
    # recovery point 52: segment 51, where the damage is, is recovered; the rest point past the new log end
    for name, value in (("recovery-point-offset-checkpoint", 52), ("replication-offset-checkpoint", 91),
                        ("cleaner-offset-checkpoint", 91)):
        (d / name).write_text(build_offset_checkpoint({("orders", 0): value, ("orders", 1): 41}))
    (p / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n1 39\n2 80\n")
    (d / ".kafka_cleanshutdown").write_bytes(b'{"version":0,"brokerEpoch":7}')
    (p / "00000000000000000025.timeindex.deleted").write_bytes(b"x" * 12)
    (p / "00000000000000099999.index").write_bytes(bytes(8))
    return d


DAMAGED_POSITION = 1000     # inside a batch of orders-0's segment 51 (2028 bytes)


@pytest.fixture
def memory_dir(tmp_path):
    """A directory on tmpfs (/dev/shm) when there is one, else ``tmp_path``.

    The fault-injection test kills processes, not the machine: the page cache survives, so the cost of
    fsync (≈5 ms a call on this disk, and the test performs thousands) adds nothing to what it checks.
    Its log directories live on tmpfs and its backups on the disk, which also makes every backup cross
    a filesystem boundary (copy + fsync + unlink instead of a rename). The random SIGKILL test below runs
    entirely on the disk."""
    import shutil
    import tempfile
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        d = Path(tempfile.mkdtemp(prefix="kafkalog-recover-", dir=shm))
        yield d
        shutil.rmtree(d, ignore_errors=True)
    else:
        yield tmp_path / "mem"


def test_kill_at_every_file_operation_then_rerun(tmp_path, memory_dir):
    ref_dir = _rich_case(memory_dir / "reference")
    args = ["--force", "--index-interval-bytes", "256", "--format", "json"]
    undisturbed = _run([*args, "--backup-dir", str(tmp_path / "ref-backup"), str(ref_dir)])
    assert undisturbed.returncode == 1, undisturbed.stderr
    summary = json.loads(undisturbed.stdout.splitlines()[-1])
    total = summary["file_operations"]
    assert total >= 30                                  # the case exercises every kind of action
    reference = _records(ref_dir)
    damaged = (_rich_case(memory_dir / "damaged") / "orders-0" / "00000000000000000051.log").read_bytes()
    cut = (ref_dir / "orders-0" / "00000000000000000051.log").stat().st_size
    assert 0 < cut <= DAMAGED_POSITION

    def crash(n: int):
        d = _rich_case(memory_dir / f"run-{n}")
        backup = tmp_path / f"backup-{n}"
        res = _run([*args, "--backup-dir", str(backup), str(d)], KAFKALOG_FAULT_AFTER=str(n))
        return n, d, backup, res

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(crash, range(total)))
    for n, d, backup, res in runs:
        assert res.returncode == KILLED, (n, res.returncode, res.stderr)
        assert "Traceback" not in res.stderr
        _check_finished(d, ["--force", "--index-interval-bytes", "256", "--backup-dir", str(backup), str(d)],
                        reference, verify=n % 4 == 0)
        saved = {p.name: p.read_bytes() for p in (backup / "orders-0").iterdir()}
        assert saved[f"00000000000000000051.log.truncated-at-{cut}"] == damaged[cut:], n
        original = (FIXTURES / "logdir" / "orders-0" / "00000000000000000078.log").read_bytes()
        assert original in (saved.get("00000000000000000078.log"), saved.get("00000000000000000078.log.deleted")), n
    # one past the last operation: the run completes untouched by the fault hook
    d = _rich_case(memory_dir / "complete")
    assert _run([*args, str(d)], KAFKALOG_FAULT_AFTER=str(total)).returncode == 1
    assert _records(d) == reference


# --- random SIGKILLs during a larger run -----------------------------------------------------------------

PARTITIONS = 2
SEGMENTS = 12
DAMAGED_SEGMENT = 6


def build_big(root: Path) -> Path:
    """PARTITIONS × SEGMENTS segments written by the project's writer (index interval 256), each partition
    damaged by a flipped byte in segment DAMAGED_SEGMENT; recovering with the default interval also
    rewrites every earlier index, so the run has hundreds of file operations."""
    from kafkalog_formats.record_batch import RecordSpec, build_batch

    from kafkalog_cli.repair.log_writer import PartitionWriter
    root.mkdir(parents=True)
    (root / "meta.properties").write_bytes((FIXTURES / "logdir" / "meta.properties").read_bytes())
    rng = random.Random(5)
    for part in range(PARTITIONS):
        w = PartitionWriter(root / f"big-{part}", segment_bytes=12000, index_interval_bytes=256)
        offset = 0
        while len(w.segment_bases) < SEGMENTS:
            n = rng.randint(1, 4)
            specs = [RecordSpec(i, 1_700_000_000_000 + offset + i, f"k{offset + i}".encode(),
                                rng.randbytes(rng.randint(20, 200))) for i in range(n)]
            w.append(build_batch(offset, specs, partition_leader_epoch=offset // 2000,
                                 producer_id=100 + part, producer_epoch=0, base_sequence=offset))
            offset += n
        w.close()
        log = segment_logs(root / f"big-{part}")[DAMAGED_SEGMENT]
        data = bytearray(log.read_bytes())
        data[len(data) // 2] ^= 0x01
        log.write_bytes(bytes(data))
    return root


@pytest.fixture(scope="module")
def big_logdir(tmp_path_factory) -> Path:
    return build_big(tmp_path_factory.mktemp("big") / "logdir")


def _start(d: Path, backup: Path) -> tuple[subprocess.Popen, float]:
    """Start recover on ``d``; return once it has taken the directory's lock (its first file operation,
    after the interpreter's start-up), with the time that happened."""
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "recover", "--format", "json",
                             "--backup-dir", str(backup), str(d)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(), cwd=REPO, text=True)
    while not (d / ".lock").exists() and proc.poll() is None:
        time.sleep(0.001)
    return proc, time.monotonic()


def test_sigkill_at_random_times_then_rerun(big_logdir, tmp_path):
    ref = writable_copy(big_logdir, tmp_path / "ref")
    proc, started = _start(ref, tmp_path / "ref-backup")
    out, err = proc.communicate()
    work = time.monotonic() - started             # from taking the lock to the end of the run
    assert proc.returncode == 1, err
    summary = json.loads(out.splitlines()[-1])
    total, planned = summary["file_operations"], summary["actions"]
    assert total > 100
    reference = _records(ref)
    assert all(len(segment_logs(ref / p)) == DAMAGED_SEGMENT + 1 for p in reference)
    original = tree_state(big_logdir)

    rng = random.Random(20240601)
    mid_run = 0
    for i in range(4):
        d = writable_copy(big_logdir, tmp_path / f"kill-{i}")
        backup = tmp_path / f"kill-backup-{i}"
        proc, started = _start(d, backup)
        time.sleep(max(0.0, started + rng.uniform(0.2, 0.9) * work - time.monotonic()))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        if proc.returncode == -signal.SIGKILL and tree_state(d) != original:
            left = [o for o in map(json.loads, run_cli("recover", "--dry-run", "--format", "json", str(d))
                                   .out.splitlines()) if o["type"] == "action"]
            mid_run += 0 < len(left) < planned   # killed after it had changed something, before it finished
        _check_finished(d, ["--backup-dir", str(backup), str(d)], reference)
    assert mid_run >= 1, "no kill landed in the middle of the repair; the run is too short"


# --- the cut asked for with --truncate-at-damage ----------------------------------------------------------

def _pass3_case(root: Path) -> Path:
    """The issue's reproduction: segment 51 without its .index and with offsets going backwards (Kafka's
    loader stops on it), a clean-shutdown marker; the cut empties 51 and removes 78."""
    d = writable_copy(FIXTURES / "damaged" / "non-monotonic-offsets", root)
    (d / "orders-0" / "00000000000000000051.index").unlink()
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    return d


def test_kill_during_truncate_at_damage_then_rerun(tmp_path, memory_dir):
    args = ["--truncate-at-damage", "--index-interval-bytes", "100", "--format", "json"]
    ref = _pass3_case(memory_dir / "reference")
    undisturbed = _run([*args, "--backup-dir", str(tmp_path / "ref-backup"), str(ref)])
    assert undisturbed.returncode == 1, undisturbed.stderr
    total = json.loads(undisturbed.stdout.splitlines()[-1])["file_operations"]
    reference = _records(ref)
    original = [p.name for p in segment_logs(FIXTURES / "damaged" / "non-monotonic-offsets" / "orders-0")]

    def crash(n: int):
        d = _pass3_case(memory_dir / f"cut-{n}")
        backup = tmp_path / f"cut-backup-{n}"
        return n, d, backup, _run([*args, "--backup-dir", str(backup), str(d)], KAFKALOG_FAULT_AFTER=str(n))

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(crash, range(total)))
    for n, d, backup, res in runs:
        assert res.returncode == KILLED, (n, res.returncode, res.stderr)
        # at every instant the segments left are a prefix of the log: never a later one behind a gap
        present = [p.name for p in segment_logs(d / "orders-0")]
        assert present == original[:len(present)], (n, present)
        _check_finished(d, ["--truncate-at-damage", "--index-interval-bytes", "100", "--backup-dir", str(backup),
                            str(d)], reference, verify=n % 3 == 0)
        saved = {p.name: p.read_bytes() for p in (backup / "orders-0").iterdir()}
        seg51 = (FIXTURES / "damaged" / "non-monotonic-offsets" / "orders-0" / "00000000000000000051.log").read_bytes()
        assert saved["00000000000000000051.log.truncated-at-0"] == seg51, n


# --- recover --salvage ------------------------------------------------------------------------------------

def _salvage_case(root: Path) -> Path:
    """orders-0 with a zero page in the middle of segment 25 (two batches lost, the rest of the segment and
    the later segments kept) and a base offset flipped outside the CRC in segment 51 (repaired), a
    clean-shutdown marker, a stale leader epoch: salvage rewrites two segments, removes the producer
    snapshots past the first and writes one at the log end."""
    d = _rich_case(root)
    (d / "orders-0" / "00000000000000000051.log").write_bytes(
        (FIXTURES / "logdir" / "orders-0" / "00000000000000000051.log").read_bytes())
    for name, change in (("00000000000000000025.log", lambda b: b.__setitem__(slice(600, 700), bytes(100))),
                         ("00000000000000000051.log", lambda b: b.__setitem__(7, b[7] ^ 0x04))):
        log = d / "orders-0" / name
        data = bytearray(log.read_bytes())
        change(data)
        log.write_bytes(bytes(data))
    return d


def test_kill_during_salvage_then_rerun(tmp_path, memory_dir):
    """Every file operation of ``recover --salvage`` interrupted, then ``recover --salvage`` again: the
    records of an undisturbed run, nothing left to do, and every byte of the original segments in the
    backup (the rewritten segments are kept there whole)."""
    args = ["--salvage", "--index-interval-bytes", "256", "--format", "json"]
    ref = _salvage_case(memory_dir / "reference")
    undisturbed = _run([*args, "--backup-dir", str(tmp_path / "ref-backup"), str(ref)])
    assert undisturbed.returncode == 1, undisturbed.stderr
    out = [json.loads(line) for line in undisturbed.stdout.splitlines()]
    total = out[-1]["file_operations"]
    assert total >= 20
    assert [a["action"] for a in out if a["type"] == "action"].count("salvage") == 2
    reference = _records(ref)
    orig = _salvage_case(memory_dir / "orig") / "orders-0"
    originals = {n: (orig / n).read_bytes() for n in ("00000000000000000025.log", "00000000000000000051.log")}

    def crash(n: int):
        d = _salvage_case(memory_dir / f"salvage-{n}")
        backup = tmp_path / f"salvage-backup-{n}"
        return n, d, backup, _run([*args, "--backup-dir", str(backup), str(d)], KAFKALOG_FAULT_AFTER=str(n))

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(crash, range(total)))
    for n, d, backup, res in runs:
        assert res.returncode == KILLED, (n, res.returncode, res.stderr)
        assert "Traceback" not in res.stderr
        _check_finished(d, ["--salvage", "--index-interval-bytes", "256", "--backup-dir", str(backup), str(d)],
                        reference, verify=n % 3 == 0)
        saved = {p.name: p.read_bytes() for p in (backup / "orders-0").iterdir()}
        for name, data in originals.items():
            assert data in saved.values(), (n, name)
