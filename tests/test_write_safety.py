"""compact and retain never make things worse: every input is validated before the first change (issue 10,
item 10), every byte removed can be brought back with --backup-dir (item 11), and a full disk stops them
with a message naming the file and the next step, after which the next run finishes the work (issue 11.7).
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from kafkalog_formats.message_set import BatchReader

from conftest import FIXTURES, dry_as_real, flat, json_objects, run_cli
from crash_harness import count_operations, trimmed
from mounts import bind, fill, tmpfs

#: the crash matrix: every file operation of a real run interrupted (marker ``slow``, in the default run)
pytestmark = pytest.mark.slow

NOW = 1_700_000_050_000
COMPACT = ["compact", "--force", "--now", str(NOW), "--config", "cleanup.policy=compact"]
RETAIN = ["retain", "--retention-ms", "0", "--now", str(NOW + 10**6)]
RETAIN_ALL = RETAIN + ["--all"]


def tree(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


def logdir(tmp_path: Path, partitions=("orders-0", "payments-0")) -> Path:
    root = trimmed(FIXTURES / "logdir", list(partitions), tmp_path / "logdir")
    (root / ".lock").touch()          # so that taking the lock is not a file operation either
    return root


def _mid_batch_index(root: Path) -> None:
    """orders-0's first .index entry pointing 3 bytes into its batch (cleaner checkpoint 30 starts there)."""
    idx = root / "orders-0" / f"{25:020d}.index"
    data = bytearray(idx.read_bytes())
    data[7] += 3
    idx.write_bytes(bytes(data))
    (root / "cleaner-offset-checkpoint").write_text("0\n1\norders 0 30\n")


def _partial_txn_entry(root: Path) -> None:
    p = root / "payments-0" / f"{0:020d}.txnindex"
    p.write_bytes(p.read_bytes() + b"\x00" * 7)


def _torn_active_segment(root: Path) -> None:
    p = root / "orders-0" / f"{78:020d}.log"
    p.write_bytes(p.read_bytes()[:-5])


def _rotten_marker(root: Path) -> None:
    """A byte of payments-0's last transaction marker flipped, and no producer snapshot at the log end, so
    that retain's roll must rebuild the producer state from the batches (reading that marker)."""
    (root / "payments-0" / f"{23:020d}.snapshot").unlink()
    log = root / "payments-0" / f"{13:020d}.log"
    data = bytearray(log.read_bytes())
    marker = [b for b in BatchReader(bytes(data)) if b.is_control][-1]
    data[marker.position + marker.size - 3] ^= 0x40
    log.write_bytes(bytes(data))


# (what is damaged, how, command, partition, file named in the problem). The Kafka behaviour each stands for:
# CheckpointFileWithFailureHandler.read turns a malformed checkpoint into KafkaStorageException (the log
# directory goes offline); TransactionIndex.sanityCheck / a partial entry and an index entry inside a batch make
# the broker rebuild the segment; a torn active segment is what LogLoader recovery truncates.
DAMAGE = [
    ("cleaner checkpoint", lambda r: (r / "cleaner-offset-checkpoint").write_text("0\n1\nnot a line\n"),
     COMPACT, "orders-0", "cleaner-offset-checkpoint"),
    ("log start checkpoint", lambda r: (r / "log-start-offset-checkpoint").write_text("1\n"),
     COMPACT, "orders-0", "log-start-offset-checkpoint"),
    ("high watermark checkpoint", lambda r: (r / "replication-offset-checkpoint").write_text("0\n2\norders 0 91\n"),
     COMPACT, "orders-0", "replication-offset-checkpoint"),
    ("txn index", _partial_txn_entry, COMPACT, "payments-0", f"{0:020d}.txnindex"),
    ("offset index", _mid_batch_index, COMPACT, "orders-0", f"{25:020d}.index"),
    ("leader epochs", lambda r: (r / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\nx y\n"),
     RETAIN, "orders-0", "leader-epoch-checkpoint"),
    ("log start checkpoint", lambda r: (r / "log-start-offset-checkpoint").write_text("0\n1\norders zero 5\n"),
     RETAIN, "orders-0", "log-start-offset-checkpoint"),
    ("torn active segment", _torn_active_segment, RETAIN, "orders-0", f"{78:020d}.log"),
    ("transaction marker", _rotten_marker, RETAIN, "payments-0", f"{13:020d}.log"),
    ("transaction marker", _rotten_marker, COMPACT, "payments-0", f"{13:020d}.log"),
]


@pytest.mark.parametrize("what, damage, args, partition, file", DAMAGE, ids=[f"{d[2][0]}-{d[0]}" for d in DAMAGE])
def test_unreadable_input_stops_before_the_first_change(tmp_path, what, damage, args, partition, file):
    """Before: a malformed leader-epoch-checkpoint or cleaner-offset-checkpoint made a real run change data and
    then crash while the dry run passed. Now the partition is skipped with a problem naming the file, the run
    performs no file operation at all, and the dry run says exactly the same."""
    root = logdir(tmp_path)
    damage(root)
    before = tree(root)
    target = [str(root / partition)]
    assert count_operations(args, root / partition) == 0
    real = run_cli(*args, *target)
    dry = run_cli(*args, "--dry-run", *target)
    assert real.code == 1 and dry.code == 1, real.out + real.err
    problem = [line for line in real.out.splitlines() if line.startswith("  problem: ")][0]
    assert problem.startswith(f"  problem: {file}"), problem      # named relative to the partition directory
    assert "nothing of this partition was changed" in flat(real.out)
    assert dry_as_real(dry.out) == dry_as_real(real.out)
    assert tree(root) == before


# --- --backup-dir -----------------------------------------------------------------------------------

def _originals(root: Path) -> dict:
    return {hashlib.sha256(p.read_bytes()).hexdigest(): str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and p.stat().st_size}


@pytest.mark.parametrize("args", [COMPACT + ["--topic", "orders", "--topic", "payments"], RETAIN_ALL],
                         ids=["compact", "retain"])
def test_backup_dir_keeps_every_removed_or_overwritten_file(tmp_path, args):
    root = logdir(tmp_path)
    originals = _originals(root)
    backup = tmp_path / "backup"
    r = run_cli(*args, "--backup-dir", str(backup), str(root))
    assert r.code == 0, r.out
    after = {hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}
    kept = {hashlib.sha256(p.read_bytes()).hexdigest(): str(p.relative_to(backup)) for p in backup.rglob("*")
            if p.is_file()}
    gone = {h: name for h, name in originals.items() if h not in after}
    assert gone, "the command removed nothing: the test proves nothing"
    assert {h: kept.get(h) for h in gone} == gone          # the same name, below the backup directory
    for obj in json_objects(run_cli(*args, "--format", "json", "--backup-dir", str(backup), str(root)).out):
        assert obj["backups"] == []                       # a second run removes nothing: nothing to keep


def test_backup_dir_inside_the_log_dir_is_refused_even_through_an_alias(tmp_path):
    root = logdir(tmp_path)
    (tmp_path / "alias").symlink_to(root)
    for backup in (root / "backup", tmp_path / "alias" / "backup", root / "orders-0" / ".." / "x"):
        for args in (COMPACT + ["--all"], RETAIN_ALL, ["recover"]):
            r = run_cli(*args, "--backup-dir", str(backup), str(root))
            assert r.code == 2 and "must be outside" in r.err, (args, backup, r.err)
    assert not (root / "backup").exists() and not (root / "x").exists()


def test_backup_dir_through_a_bind_mount_of_the_log_dir_is_refused(tmp_path):
    """Compared by device and inode: a bind mount shows the log directory under another path."""
    root = logdir(tmp_path)
    with bind(root, tmp_path / "mnt"):
        for args in (COMPACT + ["--all"], RETAIN_ALL, ["recover"]):
            r = run_cli(*args, "--backup-dir", str(tmp_path / "mnt" / "backup"), str(root))
            assert r.code == 2 and "must be outside" in r.err, args


@pytest.mark.parametrize("args", [COMPACT + ["--topic", "orders", "--topic", "payments"], RETAIN_ALL],
                         ids=["compact", "retain"])
def test_backup_dir_on_another_mount_gets_copies(tmp_path, args):
    """rename()/link() across mounts fail with EXDEV even on one filesystem: the backup is copied (fsynced)
    instead of failing for ever."""
    root = logdir(tmp_path)
    originals = _originals(root)
    (tmp_path / "elsewhere").mkdir()
    with bind(tmp_path / "elsewhere", tmp_path / "mnt"):
        r = run_cli(*args, "--backup-dir", str(tmp_path / "mnt" / "bk"), str(root))
        assert r.code == 0, r.err
        kept = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (tmp_path / "mnt" / "bk").rglob("*")
                if p.is_file()}
        after = {hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}
        assert set(originals) - after and set(originals) - after <= kept
        assert all(p.stat().st_nlink == 1 for p in (tmp_path / "mnt" / "bk").rglob("*") if p.is_file())


# --- a full disk (issue 11.7) -------------------------------------------------------------------------

def _segments(root: Path) -> list:
    """Every batch (retain) — or every record (compact): an interrupted compact re-run is a second pass, which
    may stamp a delete horizon on a marker (a new CRC) but keeps and drops exactly the same records."""
    return [(log.parent.name, b.base_offset, b.last_offset, b.crc if not b.is_control else None,
             [(r.offset, r.key, r.value) for r in b.records()])
            for log in sorted(root.rglob("*.log")) for b in BatchReader(log.read_bytes())]


@pytest.mark.parametrize("args", [COMPACT + ["--topic", "orders"], RETAIN + ["--partition", "orders-0"]],
                         ids=["compact", "retain"])
def test_a_full_disk_names_the_file_and_the_next_run_finishes(tmp_path, args):
    """On a real, full tmpfs: the run stops with exit 3 and a message naming the partition, the file and
    what to run; no .cleaned or temporary file is left to block anything; once there is space, the same
    command completes and the result is an undisturbed run's."""
    expected_root = logdir(tmp_path / "undisturbed", ("orders-0",))
    assert run_cli(*args, str(expected_root)).code == 0
    expected = _segments(expected_root)
    with tmpfs(tmp_path / "small", "1m") as small:
        root = trimmed(FIXTURES / "logdir", ["orders-0"], small / "logdir")
        filler = fill(small)
        r = run_cli(*args, str(root))
        assert r.code == 3, r.out + r.err
        first = r.err.splitlines()[0]
        assert first.startswith("kafkalog: orders-0: No space left on device (") and str(root) in first, r.err
        assert f"run the same kafkalog {args[0]} again" in r.err and f"kafkalog recover {root}" in r.err
        assert not [p for p in root.rglob("*") if p.name.endswith((".cleaned", ".tmp"))]
        filler.unlink()
        again = run_cli(*args, str(root))
        # exit 1 exactly when leftovers of the interrupted run were found (and finished)
        assert again.code == (1 if "finish an interrupted operation" in again.out else 0), again.out + again.err
        assert _segments(root) == expected
        assert run_cli("verify", str(root)).code == 0


@pytest.mark.parametrize("args", [COMPACT + ["--topic", "orders", "--topic", "payments"],
                                  RETAIN + ["--partition", "orders-0", "--partition", "payments-0"]],
                         ids=["compact", "retain"])
def test_an_io_error_at_any_file_operation_then_the_next_run(tmp_path, monkeypatch, args):
    """ENOSPC injected at every file operation in turn (``KAFKALOG_FAULT_ERRNO``, the failure staying until
    the run ends, as a full disk does): always exit 3 with the file named, and the next run, with no recover
    in between, ends where an undisturbed run does."""
    from kafkalog_cli import fileops
    clean = logdir(tmp_path / "clean")
    assert run_cli(*args, str(clean)).code == 0
    expected = _segments(clean)
    ops = count_operations(args, logdir(tmp_path / "probe"))
    assert ops > 5
    for n in range(ops):
        root = logdir(tmp_path / f"n{n}")
        monkeypatch.setattr(fileops, "_ops", 0)
        monkeypatch.setenv("KAFKALOG_FAULT_AFTER", str(n))
        monkeypatch.setenv("KAFKALOG_FAULT_ERRNO", "28")
        r = run_cli(*args, str(root))
        monkeypatch.delenv("KAFKALOG_FAULT_AFTER")
        assert r.code == 3 and "No space left on device (" in r.err and "again" in r.err, (n, r.err)
        again = run_cli(*args, str(root))
        assert again.code in (0, 1), (n, again.out, again.err)
        assert _segments(root) == expected, n
        assert run_cli("verify", str(root)).code == 0, n
        shutil.rmtree(root.parent)


WRITERS = {"recover": ["recover"], "delete-records": ["delete-records", "--offset", "orders-0=1"],
           "retain": RETAIN_ALL, "compact": COMPACT + ["--all"]}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_backup_dir_through_a_link_into_a_kafka_directory_is_refused(tmp_path, command):
    """A link that leads into a partition directory (here, or of another log directory), or a path below
    one: the backup would land inside orders-0/, where Kafka deletes it with the partition. Compared after
    resolving links (fileops.refuse_write_target), on every command that takes --backup-dir."""
    root = logdir(tmp_path)
    other = logdir(tmp_path / "other")
    (tmp_path / "into-partition").symlink_to(root / "orders-0")
    (tmp_path / "into-other").symlink_to(other / "payments-0")
    def listing(d: Path) -> tuple:
        return tree(d), sorted(map(str, d.rglob("*")))

    before, before_other = listing(root), listing(other)
    for backup in (tmp_path / "into-partition", tmp_path / "into-partition" / "backup",
                   tmp_path / "into-other" / "backup", other, other / "backup"):
        r = run_cli(*WRITERS[command], "--backup-dir", str(backup), str(root))
        assert r.code == 2 and "must be outside" in r.err, (command, backup, r.out, r.err)
    assert listing(root) == before and listing(other) == before_other    # nothing changed, nothing created
