"""Kill a write command at every file operation (``KAFKALOG_FAULT_AFTER``: the process exits at once,
as under SIGKILL), then ``recover`` (or just the command again, which finishes the interrupted work itself)
and re-run it, and compare with an undisturbed run; with a backup directory, also check that every byte
the command removed is in it."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, run_cli

_COUNT = ("import sys; from kafkalog_cli import fileops; from kafkalog_cli.app import main\n"
          "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\nprint(fileops.operations())")


def count_operations(args: list[str], directory: Path) -> int:
    """How many file operations ``kafkalog ARGS DIRECTORY`` performs (in a child process)."""
    out = subprocess.run([sys.executable, "-c", _COUNT, *args, str(directory)], cwd=REPO, capture_output=True,
                         text=True).stdout.strip().splitlines()
    return int(out[-1])


def contents(d: Path) -> set[str]:
    """SHA-256 of every non-empty file below ``d``."""
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in d.rglob("*") if p.is_file() and p.stat().st_size}


def assert_nothing_lost(source: Path, result: Path, backup: Path) -> None:
    """Every file of ``source`` is, byte for byte, still in ``result`` or in ``backup``."""
    missing = contents(source) - contents(result) - (contents(backup) if backup.exists() else set())
    assert not missing, f"{len(missing)} removed file(s) are in neither the directory nor the backup"


def run_killed(argv: list[str], after: int) -> int:
    """Run ``kafkalog ARGV`` in a forked child told to die after ``after`` file operations; its exit status.
    (A fork, not a new interpreter: the same code without half a second of start-up per kill.)"""
    pid = os.fork()
    if pid == 0:                                   # the child: never returns
        status = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            from kafkalog_cli import fileops
            from kafkalog_cli.app import main
            fileops._ops = 0
            os.environ["KAFKALOG_FAULT_AFTER"] = str(after)
            try:
                main(argv)
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else 1
        finally:
            os._exit(status)
    _pid, wstatus = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(wstatus)


def scratch(tmp_path: Path) -> Path:
    """Where the copies go: a directory in /dev/shm when there is one (tmpfs: the same rename, link and unlink
    semantics, a kill is a kill, but fsync costs nothing, so the run takes half the time), else ``tmp_path``."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        import tempfile
        return Path(tempfile.mkdtemp(prefix="kafkalog-crash-", dir=shm))
    return tmp_path


def trimmed(source: Path, partitions: list[str], into: Path) -> Path:
    """A copy of the log directory ``source`` with only ``partitions`` (and every log-directory file)."""
    into.mkdir(parents=True)
    for p in source.iterdir():
        if p.is_file():
            shutil.copy2(p, into / p.name)
        elif p.name in partitions:
            shutil.copytree(p, into / p.name)
    return into


def kill_at_every_operation(tmp_path: Path, source: Path, args: list[str], observe, *, backup: bool = False,
                            recover_first: bool = True, partitions: list[str] | None = None) -> int:
    work = scratch(tmp_path)
    try:
        if partitions is not None:
            source = trimmed(source, partitions, work / "source")
        return _kill_at_every_operation(work, source, args, observe, backup, recover_first)
    finally:
        if work != tmp_path:
            shutil.rmtree(work, ignore_errors=True)


def _kill_at_every_operation(tmp_path: Path, source: Path, args: list[str], observe, backup: bool,
                             recover_first: bool) -> int:
    """Run ``kafkalog ARGS DIR`` on copies of ``source`` killed after 0, 1, … file operations; after each,
    ``recover`` (unless ``recover_first`` is false) then ``ARGS`` again must leave ``observe(DIR)`` equal to
    an undisturbed run's and a directory that ``verify`` passes. With ``backup``, every run gets its own
    ``--backup-dir`` (kept across the kill and the re-run, and not given to recover) and nothing of
    ``source`` may be missing from the directory and the backup together. Returns the number of
    operations of the undisturbed run."""
    def with_backup(n: str) -> list[str]:
        return args + (["--backup-dir", str(tmp_path / f"backup-{n}")] if backup else [])

    clean = tmp_path / "clean"
    shutil.copytree(source, clean)
    assert run_cli(*with_backup("clean"), str(clean)).code in (0, 1)
    expected = observe(clean)
    probe = tmp_path / "probe"
    shutil.copytree(source, probe)
    ops = count_operations(with_backup("probe"), probe)
    assert ops > 10
    for n in range(1, ops + 1):
        d = tmp_path / f"kill-{n}"
        shutil.copytree(source, d)
        assert run_killed(with_backup(str(n)) + [str(d)], n - 1) == 137, n
        if recover_first:
            assert run_cli("recover", str(d)).code in (0, 1), n
        again = run_cli(*with_backup(str(n)), str(d))
        assert again.code in (0, 1), (n, again.out, again.err)
        assert observe(d) == expected, n
        assert run_cli("verify", str(d)).code == 0, n
        if backup:
            assert_nothing_lost(source, d, tmp_path / f"backup-{n}")
        shutil.rmtree(d)
    return ops
