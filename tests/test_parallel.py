"""verify and recover with -j: the report is the one -j1 writes, byte for byte (but for the time taken), on
healthy and damaged log directories; recover -j2 repairs as -j1 does."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import FIXTURES, run_cli

DAMAGED = sorted(p for p in (FIXTURES / "damaged").iterdir() if p.is_dir())
SECONDS = re.compile(r'"seconds":[0-9.e-]+|in [0-9.]+ s\b')


def same(a: str, b: str) -> bool:
    return SECONDS.sub("", a) == SECONDS.sub("", b)


@pytest.mark.parametrize("path", [FIXTURES / "logdir"] + DAMAGED, ids=lambda p: p.name)
def test_verify_j2_reports_as_j1(path):
    for fmt in ("json", "text", "junit"):
        one = run_cli("verify", "--format", fmt, "-j", "1", str(path))
        two = run_cli("verify", "--format", fmt, "-j", "2", str(path))
        assert one.code == two.code
        if fmt == "junit":
            one_out, two_out = re.sub(r'time="[^"]*"', "", one.out), re.sub(r'time="[^"]*"', "", two.out)
            assert one_out == two_out
        else:
            assert same(one.out, two.out)


def test_verify_j2_over_many_small_partitions(tmp_path):
    """More partitions than fit one task: the order across tasks is kept."""
    from kafkalog_cli.engine import parallel
    root = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", root)
    for i in range(parallel.TASK_PARTITIONS + 5):
        shutil.copytree(root / "orders-1", root / f"many-{i}")
    one = run_cli("verify", "--format", "json", "-j", "1", str(root))
    two = run_cli("verify", "--format", "json", "-j", "2", str(root))
    assert same(one.out, two.out)
    units = [json.loads(x) for x in two.out.splitlines()]
    assert sum(1 for u in units if u["type"] == "segment") > parallel.TASK_PARTITIONS


@pytest.mark.parametrize("case", [FIXTURES / "logdir"] + DAMAGED, ids=lambda p: p.name)
def test_recover_j2_plans_and_repairs_as_j1(tmp_path, case):
    from kafkalog_cli.engine.logdir import dir_kind
    cli = run_cli
    if dir_kind(case) != "logdir":
        pytest.skip(f"{case.name} is not a log directory")
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(case, a)
    shutil.copytree(case, b)
    for args in (("--dry-run", "--force"), ("--force",)):
        one = cli("recover", "--format", "json", *args, "-j", "1", str(a))
        two = cli("recover", "--format", "json", *args, "-j", "2", str(b))
        assert one.code == two.code
        assert one.out.replace(str(a), "X") == two.out.replace(str(b), "X")
    files = lambda root: sorted((p.relative_to(root).as_posix(), p.read_bytes()) for p in root.rglob("*")
                                if p.is_file() and p.name != ".lock")
    assert files(a) == files(b)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc: each task's children)."""
    import os
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(c) for t in os.listdir(f"/proc/{p}/task")
                    for c in open(f"/proc/{p}/task/{t}/children").read().split()]
        except OSError:
            continue
        out += kids
        todo += kids
    return out


def _kill_a_worker(args: list[str]) -> tuple[int, str, str]:
    """Run ``kafkalog ARGS`` in a process of its own and SIGKILL the first worker process it starts (a
    process below it with no child of its own, as the kernel's out-of-memory killer would pick it); returns
    (exit status, stdout, stderr)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killed = False
    deadline = time.monotonic() + 60
    while not killed and proc.poll() is None and time.monotonic() < deadline:
        below = _descendants(proc.pid)
        leaves = [p for p in below if not _descendants(p)]
        if leaves:
            os.kill(leaves[0], signal.SIGKILL)
            killed = True
        time.sleep(0.002)
    out, err = proc.communicate(timeout=120)
    assert killed, f"no worker seen before the run ended (exit {proc.returncode}): make the run longer"
    return proc.returncode, out, err


def _many_partitions(root, n: int = 300):
    shutil.copytree(FIXTURES / "logdir", root)
    for i in range(n):
        shutil.copytree(root / "orders-0", root / f"many-{i}")
    return root


@pytest.mark.parametrize("command", [["verify", "-j", "2"], ["recover", "--dry-run", "--force", "-j", "2"]],
                         ids=["verify", "recover"])
def test_a_worker_killed_by_sigkill_is_one_line_and_exit_3(tmp_path, command):
    """Issue 34 item 8: a worker of -j N dies by SIGKILL (as the OOM killer sends it): one line naming what
    happened, exit 3 ("could not run"), nothing changed. Before: a 41-line traceback ending in
    BrokenProcessPool, exit 1 ("problems found")."""
    root = _many_partitions(tmp_path / "logdir")
    before = sorted((p.relative_to(root), p.stat().st_size) for p in root.rglob("*") if p.is_file())
    code, out, err = _kill_a_worker([*command, str(root)])
    assert code == 3, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("kafkalog: a worker process of -j 2 was killed by SIGKILL"), err
    assert "nothing was changed" in lines[0]
    assert sorted((p.relative_to(root), p.stat().st_size) for p in root.rglob("*")
                  if p.is_file() and p.name != ".lock") == [b for b in before if b[0].name != ".lock"]
