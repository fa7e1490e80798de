"""verify and dump-log on a log directory of which one partition directory and one segment cannot be read.

A broker that cannot read a partition's files fails that log's load with an IOException
(``LogLoader.removeTempFilesAndCollectSwapFiles``: ``Could not read file``; 2.0 - trunk), and
``LogManager.loadLogs`` takes the whole log directory offline (``handleIOException``): the other log
directories keep serving. verify and dump-log report the unreadable directory or file as a finding and
go on with the rest; an unreadable ``.log`` is not an empty one, so nothing is compared with a log end
it cannot know (no "recovery point beyond the log end", no "snapshot above the log end").

As root, permissions do not bite: the CLI runs in a subprocess as root without any capability
(``setpriv`` clearing the bounding, inheritable and ambient sets, so no CAP_DAC_OVERRIDE/READ_SEARCH: the
interpreter under /root stays reachable, mode-000 files do not); the test first proves that this process
cannot read the files (and skips with the reason otherwise).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO

def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, where file permissions do not bite, and setpriv (util-linux) is not "
                    "installed to run the CLI without privileges")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all"]


def _run(prefix: list[str], *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(REPO))
    return subprocess.run([*prefix, sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True,
                          env=env, cwd="/", timeout=300)


@pytest.fixture
def locked():
    """A copy of fixtures/logdir where orders-1/ (mode 000) and orders-0's last segment (mode 000) cannot
    be read by the process without capabilities; everything else is world-readable."""
    prefix = _unprivileged()
    top = Path(tempfile.mkdtemp(prefix="kafkalog-unreadable-"))
    try:
        top.chmod(0o755)
        d = top / "logdir"
        shutil.copytree(FIXTURES / "logdir", d)
        for p in [d, *d.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        part, log = d / "orders-1", d / "orders-0" / "00000000000000000078.log"
        part.chmod(0o000)
        log.chmod(0o000)
        probe = subprocess.run([*prefix, sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])",
                                str(part)], capture_output=True)
        probe2 = subprocess.run([*prefix, sys.executable, "-c", "import sys; open(sys.argv[1], 'rb')", str(log)],
                                capture_output=True)
        if probe.returncode == 0 or probe2.returncode == 0:
            pytest.skip("a process without capabilities can still read a mode-000 file here")
        yield prefix, d
    finally:
        for p in [top, *top.rglob("*")]:
            try:
                p.chmod(0o755)
            except OSError:
                pass
        shutil.rmtree(top, ignore_errors=True)


def test_verify_reports_an_unreadable_partition_and_segment_and_goes_on(locked):
    prefix, d = locked
    r = _run(prefix, "verify", "--format", "json", str(d))
    assert r.returncode == 1, r.stderr                    # problems found, not "could not run" (3)
    objs = [json.loads(line) for line in r.stdout.splitlines()]
    findings = [o for o in objs if o["type"] == "finding"]
    summary = next(o for o in objs if o["type"] == "summary")
    io = {(Path(o["file"]).name, o["severity"]) for o in findings if o["kind"] == "io_error"}
    assert io == {("orders-1", "error"), ("00000000000000000078.log", "error")}
    assert "Permission denied" in next(o["message"] for o in findings if o["kind"] == "io_error")
    # the rest of the log directory was verified: every other partition, orders-0's readable segments
    segments = {Path(o["file"]).relative_to(d).as_posix() for o in objs if o["type"] == "segment"}
    assert {"orders-0/00000000000000000000.log", "orders-0/00000000000000000051.log",
            "payments-0/00000000000000000000.log", "compacted-0/00000000000000000000.log"} <= segments
    assert summary["partitions"] == 9
    # an unreadable last segment does not make the log end 78: no follow-on findings against a log end
    follow_on = {"recovery_point_beyond_log_end", "snapshot_above_log_end", "high_watermark_beyond_log_end",
                 "leader_epoch_beyond_log_end", "clean_shutdown_with_unflushed_data", "log_start_beyond_log_end"}
    assert not [o for o in findings if o["kind"] in follow_on], findings
    assert [o for o in findings if o["kind"] == "log_end_unknown" and o["severity"] == "info"]
    # the text report says the same within its lines
    r = _run(prefix, "verify", str(d))
    assert r.returncode == 1 and "orders-1: 1 error; not read" in r.stdout
    assert "log end unknown (last segment unreadable)" in r.stdout and "Traceback" not in r.stderr


def test_dump_log_reports_an_unreadable_partition_and_segment_and_goes_on(locked):
    prefix, d = locked
    r = _run(prefix, "dump-log", str(d))
    assert r.returncode == 1, r.stderr
    assert f"{d / 'orders-1'}: cannot read: Permission denied" in r.stderr
    assert f"{d / 'orders-0' / '00000000000000000078.log'}: cannot read: Permission denied" in r.stderr
    assert "Traceback" not in r.stderr
    # the index beside the unreadable segment is readable: the problem names the companion it could not read
    assert "00000000000000000078.index: cannot read its companion 00000000000000000078.log" in r.stderr
    assert f"Dumping {d / 'payments-0' / '00000000000000000000.log'}" in r.stdout
    assert f"Dumping {d / 'orders-0' / '00000000000000000051.log'}" in r.stdout


#: each command on a whole log directory it cannot read: the commands that report findings report it among
#: them (1); those that need every path they are given (they change files, or answer from one partition,
#: compare replicas, export records) could not run (3); none calls it a usage error (2: click's readable check)
UNREADABLE_STATUS = {
    "verify": 1, "dump-log": 1, "describe": 1, "consumer-groups": 1, "transactions": 1, "scan": 1,
    "recover": 3, "retain --all": 3, "compact --all": 3, "delete-records --offset orders-0=1": 3,
    "lookup-offset": 3, "diff": 3, "export --dry-run": 3,
}


@pytest.fixture
def unreadable_logdir():
    """A folder holding a copy of fixtures/logdir that the process without capabilities cannot list."""
    prefix = _unprivileged()
    top = Path(tempfile.mkdtemp(prefix="kafkalog-unreadable-"))
    try:
        top.chmod(0o755)
        d = top / "disk" / "logdir"
        shutil.copytree(FIXTURES / "logdir", d)
        (top / "disk").chmod(0o755)
        d.chmod(0o000)
        probe = subprocess.run([*prefix, sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(d)],
                               capture_output=True)
        if probe.returncode == 0:
            pytest.skip("a process without capabilities can still list a mode-000 directory here")
        yield prefix, d
    finally:
        d.chmod(0o755)
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("command", sorted(UNREADABLE_STATUS))
def test_an_unreadable_log_directory_has_one_exit_status_per_kind_of_command(unreadable_logdir, command):
    prefix, d = unreadable_logdir
    for given in (d, d.parent):                  # the log directory itself, or a folder holding it
        args = command.split() + [str(given)] + (["1"] if command == "lookup-offset" else [])
        r = _run(prefix, *args)
        assert r.returncode == UNREADABLE_STATUS[command], (command, given, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        said = " ".join((r.stdout + r.stderr).split())               # reports wrap at 80 columns
        assert "cannot read: Permission denied" in said and "logdir" in said, (command, r.stdout, r.stderr)
