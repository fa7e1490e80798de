"""Where an option may write (issue 34, item 1): never a file of a Kafka directory, never inside a directory
the command reads, compared by device and inode after links are resolved (``fileops.refuse_write_target``,
the one check of ``-o``, ``--save-discarded``, ``--backup-dir`` and ``export``/``scan -o``); a refusal is a
usage error (exit 2) that writes nothing. A report file lands whole: written beside its target, fsynced and
renamed into place, so a CI step reads the previous file or the new one, never half of one
(``fileops.ReportFile``).

Each ``-o`` test fails on the code before the fix: ``verify -o`` opened the path for writing, so the
segment was replaced by the report; ``export``/``scan -o`` checked nothing but existence. (The bind mount
of a compared partition under ``--save-discarded`` was fixed with ``--backup-dir``'s check, item 4.)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, copy_logdir, run_cli
from mounts import bind

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def _data(tmp_path: Path) -> Path:
    """``tmp_path/data``: a log directory whose orders-0 is called test0-0, as in the issue's reproduction."""
    data = copy_logdir(tmp_path / "data")
    (data / "orders-0").rename(data / "test0-0")
    return data


def _refused(r, option: str = "--output") -> str:
    """The one error line of a usage error (click's usage lines above it), after checking the status."""
    assert r.code == 2, (r.code, r.err)
    assert r.out == ""
    errors = [line for line in r.err.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: {option}: "), r.err
    return errors[0]


@pytest.mark.parametrize("fmt", ["junit", "text"])
def test_the_issues_reproduction_is_refused_and_the_segment_kept(tmp_path, fmt):
    """``kafkalog verify --format junit -o data/test0-0/00000000000000000000.log data`` replaced the segment's
    11 records with the report and exited 1; the text format did the same."""
    data = _data(tmp_path)
    seg = data / "test0-0" / "00000000000000000000.log"
    before = seg.read_bytes()
    done = subprocess.run(KAFKALOG + ["verify", "--format", fmt, "-o", "data/test0-0/00000000000000000000.log",
                                      "data"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert seg.read_bytes() == before
    assert sorted(p.name for p in seg.parent.iterdir()) == sorted(p.name for p in (FIXTURES / "logdir/orders-0").iterdir())
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("Error:")]
    assert line.startswith("Error: --output: data/test0-0/00000000000000000000.log must be outside Kafka's "
                           "directories: it lies inside the partition directory data/test0-0")


@pytest.mark.parametrize("fmt", ["json", "junit", "text"])
def test_any_file_of_a_kafka_directory_is_refused_even_when_not_read(tmp_path, fmt):
    """A partition or log directory the command does not read is just as much off limits: a file there joins
    (or replaces) the partition's files."""
    data = _data(tmp_path)
    other = copy_logdir(tmp_path / "other")
    for target in (data / "test0-0" / "report.xml", data / "test0-0" / "00000000000000000000.index",
                   data / "meta.properties", data / "report.xml"):
        before = target.read_bytes() if target.exists() else None
        line = _refused(run_cli("verify", "--format", fmt, "-o", str(target), str(other)))
        assert "the partition directory" in line or "the log directory" in line
        assert (target.read_bytes() if target.exists() else None) == before


def test_a_link_to_the_partition_directory_is_seen_through(tmp_path):
    data = _data(tmp_path)
    alias = tmp_path / "alias"
    alias.symlink_to(data / "test0-0")
    seg = data / "test0-0" / "00000000000000000000.log"
    before = seg.read_bytes()
    _refused(run_cli("verify", "--format", "junit", "-o", str(alias / seg.name), str(data)))
    _refused(run_cli("verify", "-o", str(alias / "report.txt"), str(data)))
    link = tmp_path / "report.xml"                      # a link named like a report, pointing at the segment
    link.symlink_to(seg)
    _refused(run_cli("verify", "--format", "junit", "-o", str(link), str(data)))
    assert seg.read_bytes() == before and link.is_symlink()
    assert not (data / "test0-0" / "report.txt").exists()


def test_inside_a_directory_the_command_reads_is_refused(tmp_path):
    """A folder of log directories is not a Kafka directory, but the command reads it: nothing is written
    into it, also through a bind mount of it (device and inode, not the path)."""
    backups = tmp_path / "backups"
    copy_logdir(backups / "broker-1")
    line = _refused(run_cli("verify", "-o", str(backups / "verify.txt"), str(backups)))
    assert f"must be outside {backups}, which this command reads" in line
    with bind(backups, tmp_path / "mirror") as mirror:
        _refused(run_cli("verify", "--format", "junit", "-o", str(mirror / "v.xml"), str(backups)))
    assert not (backups / "verify.txt").exists() and not (backups / "v.xml").exists()


def test_the_file_read_is_never_the_report_even_through_a_hard_link(tmp_path):
    """A segment hard-linked outside its partition directory and verified there: the report never replaces the
    bytes the command reads (they are the partition's too)."""
    data = _data(tmp_path)
    seg = data / "test0-0" / "00000000000000000000.log"
    loose = tmp_path / "loose"
    loose.mkdir()
    os.link(seg, loose / "copy.log")
    line = _refused(run_cli("verify", "-o", str(loose / "copy.log"), str(loose / "copy.log")))
    assert "which this command reads" in line
    assert (loose / "copy.log").read_bytes() == seg.read_bytes() == (FIXTURES / "logdir/orders-0" / seg.name).read_bytes()


def test_a_report_lands_whole_by_rename(tmp_path):
    """The new report replaces the old by a rename: a reader holding the old file (a hard link here) still
    has all of it; a link to the report stays a link; /dev/null takes it in place; no temporary is left."""
    data = _data(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    report = reports / "v.xml"
    report.write_text("old report\n")
    os.link(report, tmp_path / "held")
    r = run_cli("verify", "--format", "junit", "-o", str(report), str(data))
    assert r.code == 0 and r.out == ""
    assert (tmp_path / "held").read_text() == "old report\n"
    assert report.read_text().startswith("<?xml") and report.read_text().endswith("</testsuites>\n")
    assert sorted(p.name for p in reports.iterdir()) == ["v.xml"]
    link = tmp_path / "latest.xml"
    link.symlink_to(report)
    assert run_cli("verify", "--format", "json", "-o", str(link), str(data)).code == 0
    assert link.is_symlink() and report.read_text().startswith('{"type":')
    assert run_cli("verify", "-o", os.devnull, str(data)).code == 0
    assert Path(os.devnull).is_char_device()


def test_save_discarded_refuses_a_bind_mount_of_a_compared_partition(tmp_path):
    """``diff --save-discarded`` compared resolved paths: a bind mount of a compared partition directory was
    accepted and the saved segments landed inside it."""
    a = copy_logdir(tmp_path / "a")
    b = copy_logdir(tmp_path / "b")
    with bind(a / "orders-0", tmp_path / "alias") as alias:
        line = _refused(run_cli("diff", "--save-discarded", str(alias / "saved"), str(a / "orders-0"),
                                str(b / "orders-0")), "--save-discarded")
        assert "must be outside" in line and "--save-discarded: --save-discarded" not in line
    assert not (a / "orders-0" / "saved").exists()
    link = tmp_path / "link"
    link.symlink_to(b)
    _refused(run_cli("diff", "--save-discarded", str(link / "saved"), str(a), str(b)), "--save-discarded")


@pytest.mark.parametrize("command", ["export", "scan"])
def test_export_and_scan_refuse_an_output_inside_what_they_read(tmp_path, command):
    """Refused before Spark starts (exit 2 within a second), for a path in a Kafka directory or inside an input."""
    data = _data(tmp_path)
    for target in (data / "out", data / "test0-0" / "out", f"file://{data}/out"):
        line = _refused(run_cli(command, "-o", str(target), str(data)))
        assert "must be outside" in line
    backups = tmp_path / "backups"
    shutil.copytree(data, backups / "broker-1")
    line = _refused(run_cli(command, "-o", str(backups / "out"), str(backups)))
    assert "which this command reads" in line
    assert not (data / "out").exists() and not (backups / "out").exists()
