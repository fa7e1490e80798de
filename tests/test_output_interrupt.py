"""A Ctrl-C that arrives after a command has made every change stops only its report (issue 34, list 10):
the run ends with the status of its work and one line saying so, not 130 with "run the same command
again" (there is nothing left to complete). Each writer marks that moment (``output.work_done``).

Real subprocesses and a real SIGINT: the report goes to a one-page pipe filled beforehand, so its first
write blocks; the signal is sent once the process sleeps in that write(2) on descriptor 1 (its
``/proc/PID/syscall``), that is, after the work. Before the fix: exit 130 and the rerun hint.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, copy_logdir, ctrl_c_default

NOW = "1700000050000"
WRITE = {"x86_64": "1", "aarch64": "64"}.get(os.uname().machine)     # write(2)'s number in /proc/PID/syscall

RUNS = {
    "compact": lambda d: ["compact", "--force", "--now", NOW, "--config", "cleanup.policy=compact", str(d / "orders-0")],
    "retain": lambda d: ["retain", "--retention-ms", "0", "--now", "1700001050000", "--all", str(d)],
    "delete-records": lambda d: ["delete-records", "--offset", "orders-0=30", "--config", "orders:cleanup.policy=delete",
                                 str(d)],
    "recover": lambda d: ["recover", str(d)],
}


def _input(tmp: Path, command: str) -> Path:
    if command == "recover":
        import shutil
        return Path(shutil.copytree(FIXTURES / "damaged" / "truncated-last-batch", tmp))
    return copy_logdir(tmp)


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="80")


@pytest.mark.skipif(WRITE is None, reason=f"write(2)'s number on {os.uname().machine} is not known to this test")
@pytest.mark.parametrize("command", sorted(RUNS))
def test_ctrl_c_after_the_work_ends_with_the_works_status(tmp_path, command):
    args = [sys.executable, "-m", "kafkalog_cli"] + RUNS[command](_input(tmp_path / "plain", command))
    plain = subprocess.run(args, capture_output=True, env=_env(), timeout=120)  # the same run, not interrupted
    assert plain.returncode in (0, 1), plain.stderr
    d = _input(tmp_path / "run", command)
    args = [sys.executable, "-m", "kafkalog_cli"] + RUNS[command](d)
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    os.write(w, b"#" * fcntl.fcntl(w, fcntl.F_GETPIPE_SZ))       # full: the report's first write blocks
    proc = subprocess.Popen(args, stdout=w, stderr=subprocess.PIPE, env=_env(), preexec_fn=ctrl_c_default)
    os.close(w)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        fields = Path(f"/proc/{proc.pid}/syscall").read_text().split()
        if fields[:2] == [WRITE, "0x1"]:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before writing its report"
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read().decode()
    os.close(r)
    assert proc.wait(60) == plain.returncode
    assert " ".join(err.split()) == (f"kafkalog: interrupted while writing the report: {command} had completed "
                                     f"its work, every change is made (exit status {plain.returncode}, as "
                                     "without the interrupt; only the report is incomplete)")
    assert max(map(len, err.splitlines())) <= 80, err           # wrapped, continued two columns in
    assert _tree(d) == _tree(tmp_path / "plain")                # the same changes as the run left alone
