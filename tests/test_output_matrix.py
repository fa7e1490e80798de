"""Every command's report lands whole or the command says it did not (issue 34, item 5), for every format:

* (a) a full disk (a real tmpfs, filled) as standard output and as ``-o``: exit status 3 and one line on
  stderr naming the file, never 0 with half a report;
* (b) a pipe whose reader has gone: exit status 141, nothing on stderr;
* (c) a non-blocking pipe (O_NONBLOCK on the pipe, as a parent may leave it) whose reader starts late: the
  whole report, byte for byte what a normal run writes, and the normal run's exit status. The pipe is
  shrunk to one page and filled before the run, so every write of every command meets EAGAIN first.

Before ``output.Output``, stdout was Python's ``sys.stdout`` (and, for dump-log's compiled writers, its raw
descriptor): a short write dropped the rest with exit 0 (``describe --details | head -1``), EAGAIN lost
bytes (dump-log --print-data-log 373 of 917,513, --format json 1,790 of 1,043,870) and a full disk left a
JUnit file at 65,536 of 136,621 bytes with exit 1. The runs are in-process (the real entry point, the real
file descriptors: no interpreter start-up per run), a few end to end in a subprocess at the bottom.
"""
from __future__ import annotations

import fcntl
import io
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, copy_logdir, run_cli
from mounts import fill, tmpfs

NOW = "1700000050000"
LOGDIR = FIXTURES / "logdir"
ORDERS = LOGDIR / "orders-0"


def _copy(tmp: Path) -> Path:
    return copy_logdir(tmp / "logdir")


def _recover_input(tmp: Path) -> Path:
    import shutil
    return Path(shutil.copytree(FIXTURES / "damaged" / "truncated-last-batch", tmp / "damaged"))


#: case -> the arguments, given a fresh directory (commands that change files get their own copy each run)
CASES = {
    "compact-text": lambda t: ["compact", "--force", "--now", NOW, "--config", "cleanup.policy=compact",
                               str(_copy(t) / "orders-0")],
    "compact-json": lambda t: ["compact", "--format", "json", "--force", "--now", NOW, "--config",
                               "cleanup.policy=compact", str(_copy(t) / "orders-0")],
    "consumer-groups-text": lambda t: ["consumer-groups", "--now", NOW, str(LOGDIR)],
    "consumer-groups-json": lambda t: ["consumer-groups", "--format", "json", "--now", NOW, str(LOGDIR)],
    "consumer-groups-csv": lambda t: ["consumer-groups", "--format", "csv", "--now", NOW, str(LOGDIR)],
    "delete-records-text": lambda t: ["delete-records", "--offset", "orders-0=30", "--config", "cleanup.policy=delete",
                                      str(_copy(t))],
    "delete-records-json": lambda t: ["delete-records", "--format", "json", "--offset", "orders-0=30", "--config",
                                      "cleanup.policy=delete", str(_copy(t))],
    "describe-text": lambda t: ["describe", "--now", NOW, str(LOGDIR)],
    "describe-details": lambda t: ["describe", "--details", "--now", NOW, str(LOGDIR)],
    "describe-json": lambda t: ["describe", "--format", "json", "--now", NOW, str(LOGDIR)],
    "diff-text": lambda t: ["diff", str(LOGDIR), str(_copy(t))],
    "diff-json": lambda t: ["diff", "--format", "json", str(LOGDIR), str(_copy(t))],
    "dump-log-text": lambda t: ["dump-log", "--print-data-log", str(ORDERS)],
    "dump-log-json": lambda t: ["dump-log", "--print-data-log", "--format", "json", str(ORDERS)],
    "dump-log-format-string": lambda t: ["dump-log", "--format-string", "%o %k %s\\n", str(ORDERS)],
    "dump-log-pure": lambda t: ["dump-log", "--print-data-log", "--value-decoder", "json", "--format", "json",
                                str(ORDERS)],
    "lookup-offset-text": lambda t: ["lookup-offset", "--print-data-log", str(ORDERS), "30"],
    "lookup-offset-json": lambda t: ["lookup-offset", "--format", "json", str(ORDERS), "30"],
    "lookup-time-text": lambda t: ["lookup-time", str(ORDERS), "1700000010000"],
    "lookup-time-json": lambda t: ["lookup-time", "--format", "json", str(ORDERS), "1700000010000"],
    "recover-text": lambda t: ["recover", str(_recover_input(t))],
    "recover-json": lambda t: ["recover", "--format", "json", str(_recover_input(t))],
    "retain-text": lambda t: ["retain", "--retention-ms", "0", "--now", "1700001050000", "--all", str(_copy(t))],
    "retain-json": lambda t: ["retain", "--format", "json", "--retention-ms", "0", "--now", "1700001050000",
                              "--all", str(_copy(t))],
    "transactions-text": lambda t: ["transactions", "--now", NOW, str(LOGDIR)],
    "transactions-json": lambda t: ["transactions", "--format", "json", "--now", NOW, str(LOGDIR)],
    "verify-text": lambda t: ["verify", str(LOGDIR)],
    "verify-json": lambda t: ["verify", "--format", "json", str(LOGDIR)],
    "verify-junit": lambda t: ["verify", "--format", "junit", str(LOGDIR)],
    "man": lambda t: ["man", "dump-log"],
    "completion": lambda t: ["completion", "bash"],
    "version": lambda t: ["--version"],
}


def test_every_command_is_in_the_matrix():
    from kafkalog_cli.commands import COMMANDS
    covered = {a for build in CASES.values() for a in build.__code__.co_consts if isinstance(a, str)}
    assert set(COMMANDS) - {"export", "scan"} <= covered      # export and scan: their -o case below (Spark)


#: what differs between two runs of one command whatever the output path: wall times, ages at the clock's now
_TIMES = re.compile(r'(\d+\.\d+ s\b|"seconds":[\d.]+|time="[\d.]+"|in \d+ ms\b|"age_ms":\d+|now \S+ \(\d+\))')


def _same(text: bytes) -> bytes:
    return _TIMES.sub("T", text.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _run(args: list[str], stream) -> tuple[int, str]:
    """``kafkalog ARGS`` through the real entry point, standard output the text stream ``stream`` (which has
    a real file descriptor); (exit status, stderr)."""
    r = run_cli(*args, stdout=stream)
    return r.code, r.err


def _normal(args: list[str], tmp: Path) -> tuple[int, bytes]:
    path = tmp / "normal.out"
    with open(path, "w") as f:
        code, _err = _run(args, f)
    return code, path.read_bytes()


@pytest.fixture(scope="module")
def full_disk(tmp_path_factory):
    """A 64 KiB tmpfs with no byte free (skipped with the reason where mounting is refused)."""
    with tmpfs(tmp_path_factory.mktemp("full") / "mnt", "64k") as mnt:
        fill(mnt)
        yield mnt


def _one_line(err: str, where: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"kafkalog: cannot write the report to {where}: No space left on device"), err


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_full_disk_as_stdout_is_exit_3_with_one_line(case, tmp_path, full_disk):
    target = full_disk / f"{case}.out"
    with open(target, "w") as f:
        code, err = _run(CASES[case](tmp_path), f)
    assert code == 3
    _one_line(err, f"standard output ({target})")


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pipe_without_reader_is_141_and_quiet(case, tmp_path):
    r, w = os.pipe()
    os.close(r)
    with os.fdopen(w, "w") as f:
        code, err = _run(CASES[case](tmp_path), f)
    assert (code, err) == (141, "")


#: poll(2) and ppoll(2), the calls a writer waiting for a full pipe sleeps in (``/proc/.../syscall``'s numbers)
_POLLS = {"x86_64": {"7", "271"}, "aarch64": {"73"}}.get(os.uname().machine)


def _polling(task: str, fd: int | None = None) -> bool:
    """Is the thread ``task`` (``/proc/PID`` or ``/proc/self/task/TID``) asleep in poll(2) on one descriptor,
    ``fd`` when given (read from the pollfd it passed: this process's own memory)?"""
    try:
        fields = Path(task, "syscall").read_text().split()
    except OSError:
        return False
    if len(fields) < 3 or fields[0] not in _POLLS or int(fields[2], 16) != 1:
        return False
    if fd is None:
        return True
    import ctypes
    return ctypes.c_int.from_address(int(fields[1], 16)).value == fd


def _late_reader(fd: int, blocked, done: threading.Event) -> tuple[threading.Thread, dict]:
    """A reader that starts only once ``blocked()`` (the writer sleeps waiting for the full pipe), or once the
    run is ``done`` without having waited; then reads to the end. Its result: ``data``, and ``seen`` whether the
    writer was seen waiting."""
    result: dict = {}

    def read() -> None:
        seen = False
        while not done.is_set():
            if blocked():
                seen = True
                break
            time.sleep(0.002)
        chunks = []
        while True:
            c = os.read(fd, 1 << 16)
            if not c:
                break
            chunks.append(c)
        result.update(data=b"".join(chunks), seen=seen)
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, result


@pytest.mark.skipif(_POLLS is None, reason=f"poll(2)'s number on {os.uname().machine} is not known to this test")
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_non_blocking_pipe_read_late_gets_the_whole_report(case, tmp_path):
    """The reader starts once the run sleeps in poll(2) on the pipe: it met EAGAIN and waits, as a writer
    must; it then gets every byte of the report."""
    import shutil
    work = tmp_path / "work"                             # the same paths in both runs' reports
    code0, want = _normal(CASES[case](work), tmp_path)
    shutil.rmtree(work, ignore_errors=True)
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    filler = b"#" * fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
    assert os.write(w, filler) == len(filler)            # full: the first write of the run meets EAGAIN
    done = threading.Event()
    main = f"/proc/self/task/{threading.main_thread().native_id}"
    reader, got = _late_reader(r, lambda: _polling(main, w), done)
    args = CASES[case](work)
    with os.fdopen(w, "w") as f:
        code, _err = _run(args, f)
        done.set()
    reader.join(120)
    os.close(r)
    assert code == code0
    assert got["seen"], "the run never waited for the full pipe"
    assert got["data"][:len(filler)] == filler
    assert _same(got["data"][len(filler):]) == _same(want) and want


@pytest.mark.parametrize("fmt", ["text", "json", "junit"])
def test_verify_o_on_a_full_disk_is_exit_3_and_keeps_the_old_report(fmt, tmp_path, full_disk):
    """The issue's CI case: the JUnit file stopped at 65,536 of 136,621 bytes, invalid XML, and the step was
    green. Now the previous report stays as it was (or no file at all), no temporary file is left."""
    report = full_disk / f"v-{fmt}.xml"
    r = _run(["verify", "--format", fmt, "-o", str(report), str(LOGDIR)], io.StringIO())
    assert r[0] == 3
    _one_line(r[1], str(report))
    assert not report.exists()
    assert sorted(p.name for p in full_disk.iterdir() if p.name.startswith(f".v-{fmt}")) == []


def test_verify_o_keeps_the_previous_report_when_the_new_one_does_not_fit(tmp_path):
    with tmpfs(tmp_path / "mnt", "64k") as mnt:
        report = mnt / "v.xml"
        report.write_text("<previous/>\n")
        fill(mnt)
        code, err = _run(["verify", "--format", "junit", "-o", str(report), str(LOGDIR)], io.StringIO())
        assert code == 3 and report.read_text() == "<previous/>\n"
        assert sorted(p.name for p in mnt.iterdir()) == ["filler", "v.xml"]
        _one_line(err, str(report))


# --- end to end, in a subprocess -----------------------------------------------------------------------

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="80")


def test_describe_details_into_head_is_141(tmp_path):
    """``describe --details | head -1`` exited 0: the write the pipe took only part of ended the report
    silently. With 200 partitions the report is 140 KiB, more than the pipe and head's first read."""
    import shutil
    big = tmp_path / "big"
    big.mkdir()
    shutil.copy(LOGDIR / "meta.properties", big)
    for i in range(200):
        shutil.copytree(ORDERS, big / f"t{i}-0")
    done = subprocess.run(["sh", "-c", 'kafkalog_status() { "$@"; echo $? >&3; }; '
                           f'{{ kafkalog_status {" ".join(KAFKALOG)} describe --details {big} | head -1; }} 3>status'],
                          cwd=tmp_path, capture_output=True, text=True, env=_env(), timeout=120)
    assert done.stdout == "t0-0\n"
    assert (tmp_path / "status").read_text().strip() == "141"
    assert done.stderr == ""


def test_describe_details_into_a_reader_that_leaves_is_141():
    """The same with a one-page pipe and fixtures/logdir (5.6 KB): the reader leaves once the pipe is full."""
    proc = subprocess.Popen(KAFKALOG + ["describe", "--details", "--now", NOW, str(LOGDIR)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(), pipesize=4096)
    import termios
    n = bytearray(4)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        fcntl.ioctl(proc.stdout.fileno(), termios.FIONREAD, n)
        if int.from_bytes(n, sys.byteorder) >= 4096:
            break
        time.sleep(0.01)
    proc.stdout.close()
    assert proc.wait(60) == 141
    assert proc.stderr.read() == b""


@pytest.mark.skipif(_POLLS is None, reason=f"poll(2)'s number on {os.uname().machine} is not known to this test")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_dump_log_into_a_non_blocking_pipe_read_late_loses_nothing(tmp_path, fmt):
    """The issue's numbers, end to end: dump-log --print-data-log of fixtures/logdir (917,513 bytes) lost 373,
    its JSON lines (1,043,870) lost 1,790, both with exit 0."""
    args = KAFKALOG + ["dump-log", "--print-data-log", "--format", fmt, str(LOGDIR)]
    want = subprocess.run(args, capture_output=True, env=_env(), timeout=120)
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    proc = subprocess.Popen(args, stdout=w, stderr=subprocess.DEVNULL, env=_env())
    os.close(w)
    done = threading.Event()
    reader, got = _late_reader(r, lambda: _polling(f"/proc/{proc.pid}"), done)
    code = proc.wait(120)
    done.set()
    reader.join(120)
    os.close(r)
    assert code == want.returncode
    assert got["seen"] and got["data"] == want.stdout and len(want.stdout) > 900_000


def test_a_full_disk_as_stdout_end_to_end(tmp_path, full_disk):
    target = full_disk / "e2e.out"
    with open(target, "w") as f:
        done = subprocess.run(KAFKALOG + ["verify", "--format", "junit", str(LOGDIR)], stdout=f,
                              stderr=subprocess.PIPE, text=True, env=_env(), timeout=120)
    assert done.returncode == 3
    _one_line(done.stderr, f"standard output ({target})")


# --- export and scan: their -o on a full disk (Spark) --------------------------------------------------

@pytest.mark.spark
@pytest.mark.slow            # two Spark runs onto a small file system: 20 s each
@pytest.mark.parametrize("command", ["export", "scan"])
def test_export_and_scan_o_on_a_full_disk_is_exit_3(command, tmp_path, full_disk):
    """The files Spark's tasks write (export's Parquet, scan's report table) on a full disk: one line naming
    the cause after the line saying Spark starts. Before: export's open Parquet writers, never abandoned on
    an OSError, printed a traceback each at exit; scan's line ended at Spark's TASK_WRITE_FAILED."""
    out = full_disk / f"{command}-out"
    done = subprocess.run(KAFKALOG + [command, "-o", str(out), str(LOGDIR)], capture_output=True, text=True,
                          env=_env(), timeout=600)
    assert done.returncode == 3, done.stderr
    lines = [x for x in done.stderr.splitlines() if not x.startswith("kafkalog: starting Spark")]
    assert len(lines) == 1 and "No space left on device" in lines[0], done.stderr     # no traceback either
