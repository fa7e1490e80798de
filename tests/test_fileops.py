"""The shared file-operations layer on hostile directories (issue 11.8): the ``.lock`` is never created
through a symbolic link nor a link deleted, backups survive mounts that refuse rename/link (EXDEV), the
backup directory check sees through aliases, and I/O errors name their file (issue 11.7)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkalog_cli import fileops

from conftest import FIXTURES, lock_held_by_another_process, run_cli
from crash_harness import trimmed
from mounts import bind, fill, tmpfs


def test_a_dangling_lock_link_is_refused_and_left_alone(tmp_path):
    """Before: ``.lock`` → a missing file made recover create that file outside the log directory and then
    delete the link. Java's FileChannel.open(CREATE) would follow it too; we refuse, and change nothing."""
    root = trimmed(FIXTURES / "logdir", ["orders-0"], tmp_path / "logdir")
    outside = tmp_path / "outside" / "victim"
    (tmp_path / "outside").mkdir()
    (root / ".lock").symlink_to(outside)
    with pytest.raises(fileops.LockUnusable):
        fileops.lock_dir(root)
    for args in (["recover"], ["compact", "--all", "--force"], ["retain", "--all", "--retention-ms", "0"]):
        r = run_cli(*args, str(root))
        assert r.code == 3 and "symbolic link to the missing file" in r.err, (args, r.err)
        assert not outside.exists() and (root / ".lock").is_symlink()


def test_a_lock_link_to_an_existing_file_locks_that_file_and_stays(tmp_path):
    """A link to an existing file is followed, as the broker follows it: the POSIX lock is on the target, so
    a broker holding the target conflicts with us; the link is not removed when we release."""
    target = tmp_path / "real-lock"
    target.touch()
    root = tmp_path / "logdir"
    root.mkdir()
    (root / ".lock").symlink_to(target)
    with lock_held_by_another_process(target):
        with pytest.raises(fileops.LockHeld):
            fileops.lock_dir(root)
    with fileops.lock_dir(root) as lock:
        assert not lock.created
        probe = subprocess.run([sys.executable, "-c", (
            "import fcntl, os\n"
            f"fd = os.open({str(target)!r}, os.O_RDWR)\n"
            "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n    print('held')\n")],
            capture_output=True, text=True)
        assert probe.stdout.strip() == "held"          # a broker locking the target would be refused
    assert (root / ".lock").is_symlink() and target.exists()


def test_a_new_lock_file_is_created_and_removed_again(tmp_path):
    with fileops.lock_dir(tmp_path) as lock:
        assert lock.created and (tmp_path / ".lock").is_file() and not (tmp_path / ".lock").is_symlink()
    assert not (tmp_path / ".lock").exists()


def test_backup_move_and_keep_across_mounts_copy_instead_of_failing(tmp_path):
    """Both paths on one filesystem, seen through two mounts: rename() and link() give EXDEV although the
    device numbers are equal. Before: backup_move tried rename for ever. Now: copy, fsync, then unlink."""
    (tmp_path / "b").mkdir()
    src = tmp_path / "a" / "segment.log"
    src.parent.mkdir()
    with bind(tmp_path / "b", tmp_path / "mnt"):
        assert os.stat(src.parent).st_dev == os.stat(tmp_path / "mnt").st_dev
        src.write_bytes(b"x" * 5000)
        os.utime(src, ns=(10**18, 10**18))
        kept = fileops.backup_keep(src, tmp_path / "mnt" / "p" / "segment.log")
        assert kept.read_bytes() == src.read_bytes() and os.stat(kept).st_ino != os.stat(src).st_ino
        assert kept.stat().st_mtime_ns == 10**18
        moved = fileops.backup_move(src, tmp_path / "mnt" / "q" / "segment.log")
        assert moved.read_bytes() == b"x" * 5000 and not src.exists()


def test_backup_keep_links_on_one_mount_and_never_overwrites(tmp_path):
    src = tmp_path / "segment.log"
    src.write_bytes(b"one")
    dst = tmp_path / "backup" / "segment.log"
    kept = fileops.backup_keep(src, dst)
    assert kept == dst and os.stat(dst).st_ino == os.stat(src).st_ino        # a hard link, no copy
    assert fileops.backup_keep(src, dst) is None                              # already there: nothing new
    src.unlink()
    src.write_bytes(b"two")
    assert fileops.backup_keep(src, dst) == dst.with_name("segment.log.1")
    assert dst.read_bytes() == b"one"


def test_check_backup_dir(tmp_path):
    root = tmp_path / "logdir"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(root)
    assert fileops.check_backup_dir(tmp_path / "backup", root) is None
    for inside in (root, root / "new", root / "sub" / "deeper", tmp_path / "alias" / "new"):
        assert "must be outside" in fileops.check_backup_dir(inside, root)
    (tmp_path / "file").touch()
    assert "not a directory" in fileops.check_backup_dir(tmp_path / "file", root)


def test_a_backup_dir_that_cannot_be_created_is_refused_before_the_run(tmp_path):
    """The backup directory is created at the first file kept, in the middle of a run: a path that cannot
    become a directory is refused first. On main retain --backup-dir LOOP/x stopped at its first partition
    with 'Too many levels of symbolic links' and said 'Every file removed so far is in LOOP/x'."""
    import os
    from conftest import copy_logdir, run_cli
    root = copy_logdir(tmp_path / "logdir")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "gone").symlink_to("nowhere")
    (tmp_path / "file").touch()
    os.mkfifo(tmp_path / "fifo")
    for backup, why in ((tmp_path / "loop" / "x", "leads nowhere"), (tmp_path / "gone" / "x", "leads nowhere"),
                        (tmp_path / "gone", "leads nowhere"), (tmp_path / "file" / "x", "is not a directory"),
                        (tmp_path / "fifo" / "x", "is not a directory"), ("/dev/null/x", "is not a directory")):
        assert why in fileops.check_backup_dir(backup, root), backup
        r = run_cli("retain", "--all", "--retention-ms", "0", "--backup-dir", str(backup), str(root))
        assert r.code == 2 and why in " ".join(r.err.split()), (backup, r.err)
    assert fileops.check_backup_dir(tmp_path / "new" / "deeper", root) is None


def test_io_errors_name_their_file_and_leave_no_temporary_file(tmp_path):
    """ENOSPC comes from write()/fsync() without a file name; the layer adds it (issue 11.7)."""
    with tmpfs(tmp_path / "small", "64k") as small:
        filler = fill(small)
        with pytest.raises(OSError) as e:
            fileops.write_atomic(small / "cleaner-offset-checkpoint", b"0\n0\n" * 4096)
        assert e.value.errno == 28 and e.value.filename == str(small / "cleaner-offset-checkpoint.tmp")
        assert not (small / "cleaner-offset-checkpoint.tmp").exists()
        out = fileops.NewFile(small / "x.log.cleaned")
        with pytest.raises(OSError) as e:
            out.write(b"y" * 65536)
            out.close()
        assert e.value.errno == 28 and e.value.filename == str(small / "x.log.cleaned")
        out.abandon()
        assert not (small / "x.log.cleaned").exists()
        filler.unlink()
