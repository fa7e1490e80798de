"""People's reports at 80 columns, byte for byte against tests/golden/reports/: the lookups' steps, recover's
verdict, counts and reasons, diff's partitions held in one place only, dump-log's word on an index read
without its segment. Every line fits 80 columns but Kafka's own batch and record lines (quoted whole, as
kafka-dump-log.sh prints them) and dump-log's one-line problems (``kafkalog: FILE: position N: reason``,
one line each for grep, as compilers write them).

Regenerate after an intended change: ``KAFKALOG_UPDATE_GOLDEN=1 python -m pytest tests/test_report_goldens.py``
(then read the diff)."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, copy_logdir, run_cli

GOLDEN = REPO / "tests" / "golden" / "reports"
UPDATE = os.environ.get("KAFKALOG_UPDATE_GOLDEN") == "1"
#: lines that are not kafkalog's prose: Kafka's dump lines inside a lookup, dump-log's problem lines
WHOLE = re.compile(r"^(batch: |record: |kafkalog: \S+: (position \d+: )?its segment )")


def _compare(name: str, text: str) -> None:
    text = re.sub(r"in \d+\.\d+ s\b", "in 0.00 s", text)          # the run's time
    for line in text.splitlines():
        assert len(line) <= 80 or WHOLE.match(line), f"{len(line)} columns: {line}"
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path.relative_to(REPO)} is missing: run with KAFKALOG_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs (KAFKALOG_UPDATE_GOLDEN=1 rewrites it after a change)"


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """Paths in the reports are relative to a fresh directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_lookup_time_steps(here):
    shutil.copytree(FIXTURES / "logdir" / "payments-0", here / "payments-0")
    r = run_cli("lookup-time", "payments-0", "1700000002300")
    assert r.code == 0
    _compare("lookup-time.txt", r.out)


def test_lookup_offset_removed_by_compaction(here):
    shutil.copytree(FIXTURES / "logdir" / "compacted-0", here / "compacted-0")
    r = run_cli("lookup-offset", "compacted-0", "4")
    assert r.code == 0 and "not in the log" in r.out
    _compare("lookup-offset-compacted.txt", r.out)


def test_recover_counts_skipped_partitions_apart_and_gives_each_reason_as_a_phrase(here):
    """A clean-shutdown marker, a torn tail it hides, the KRaft metadata log skipped: one count of
    partitions throughout (verdict, others, totals), the skipped one named apart, reasons after "why:"."""
    d = copy_logdir(here / "data", metadata=True)
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    seg = sorted((d / "orders-0").glob("*.log"))[-1]
    with open(seg, "r+b") as f:
        f.truncate(seg.stat().st_size - 10)
    r = run_cli("recover", "--dry-run", "data")
    assert r.code == 1
    assert "in 1 of 8 partitions" in r.out and "7 other partitions with nothing to repair" in r.out
    assert "\n8 partitions, " in r.out and "skipped __cluster_metadata-0:" in r.out
    assert "because " not in r.out and "why: the directory was cleanly shut down" in r.out
    _compare("recover-marker.txt", r.out)


def test_recover_nothing_to_repair(here):
    copy_logdir(here / "data", metadata=True)
    r = run_cli("recover", "--dry-run", "data")
    assert r.code == 0
    _compare("recover-nothing.txt", r.out)


def test_diff_names_each_place_once(here):
    copy_logdir(here / "b1")
    copy_logdir(here / "b2")
    for name in ("orders-1", "customers-0"):
        shutil.rmtree(here / "b2" / name)
    r = run_cli("diff", "b1", "b2")
    assert r.code == 0
    assert "2 partitions held in one place only, not compared:\n  b1 (broker 1): customers-0, orders-1\n" in r.out
    _compare("diff-one-place.txt", r.out)


def test_dump_log_of_an_index_without_its_segment(here):
    shutil.copy(FIXTURES / "logdir" / "payments-0" / "00000000000000000013.timeindex", here)
    r = run_cli("dump-log", "00000000000000000013.timeindex")
    assert r.code == 1
    _compare("dump-log-index-alone.txt", r.out + r.err)
