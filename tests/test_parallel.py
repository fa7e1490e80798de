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
