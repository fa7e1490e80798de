"""Every real data directory in ../shared/corpus/real (written by real brokers) dumps with no problem,
the batch and record counts equal those the corpus README states (counted independently), and verify
passes on every directory whose data is complete."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import CORPUS, corpus_dirs, needs_corpus, run_cli

pytestmark = needs_corpus


def _readme_counts() -> dict[str, tuple[int, int]]:
    text = (CORPUS.parent / "README.md").read_text()
    counts = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        name = section.split("\n", 1)[0].strip()
        m = re.search(r"Batches: (\d+), records: (\d+) \(segments only\)", section)
        if m:
            counts[name] = (int(m.group(1)), int(m.group(2)))
    return counts


@pytest.mark.parametrize("root", corpus_dirs(), ids=lambda p: p.name)
def test_real_directory_dumps_every_batch_and_record_without_problem(root):
    r = run_cli("dump-log", "--deep-iteration", "--print-data-log", "--format", "json", str(root))
    objs = [json.loads(line) for line in r.out.splitlines()]
    problems = [o for o in objs if o["type"] == "problem"]
    assert problems == []
    assert r.code == 0
    seg_batches = [o for o in objs if o["type"] == "batch" and o["file"].endswith(".log")]
    seg_records = [o for o in objs if o["type"] == "record" and o["file"].endswith(".log")]
    expected = _readme_counts()[root.name]
    assert (len(seg_batches), len(seg_records)) == expected
    assert all(b["crc_valid"] for b in objs if b["type"] == "batch")
    assert all(b["magic"] == 2 for b in seg_batches)       # README: all batches are magic 2


@pytest.mark.parametrize("root", corpus_dirs(), ids=lambda p: p.name)
def test_real_directory_text_dump_is_clean(root):
    r = run_cli("dump-log", "--deep-iteration", "--print-data-log", str(root))
    assert r.code == 0
    assert "kafkalog:" not in r.err
    assert "isvalid: false" not in r.out and "invalid bytes" not in r.out
    # stderr may only carry Kafka's informational reports (compacted logs have offset gaps)
    for line in r.err.splitlines():
        assert line.startswith("Non-consecutive offsets in ") or re.fullmatch(r"  -?\d+ is followed by \d+", line)


def test_kraft_snapshot_header_lines():
    d = CORPUS / "gozieokafor__data-store" / "kafka-data" / "__cluster_metadata-0"
    f = d / "00000000000000016435-0000000008.checkpoint"
    r = run_cli("dump-log", "--deep-iteration", str(f))
    lines = r.out.splitlines()
    assert lines[1] == "Snapshot end offset: 16435, epoch: 8"
    assert " SnapshotHeader {\"version\":0,\"lastContainedLogTimestamp\":" in lines[3]
    assert lines[-1].endswith(' SnapshotFooter {"version":0}')


def test_bootstrap_checkpoint_header():
    f = CORPUS / "Niloufar1171__LDI-POC" / "bootstrap.checkpoint"
    r = run_cli("dump-log", str(f))
    assert r.out.splitlines()[1] == "KRaft bootstrap snapshot" and r.code == 0


def test_gzip_batches_of_a_nodejs_producer():
    d = CORPUS / "berkayakcay__toy-node-log-collector" / "kafka-data"
    r = run_cli("dump-log", "--print-data-log", "--format", "json", str(d))
    objs = [json.loads(line) for line in r.out.splitlines()]
    batches = [o for o in objs if o["type"] == "batch"]
    assert {b["codec"] for b in batches} == {"gzip"}
    assert {(b["producer_id"], b["producer_epoch"], b["base_sequence"]) for b in batches} == {(-1, 0, 0)}
    values = [o["value"] for o in objs if o["type"] == "record"]
    assert len(values) == 50 and all(isinstance(v, str) and v for v in values)


# --- verify on real broker data ------------------------------------------------------------------

def _absent_segment_files() -> dict[str, set[str]]:
    """Corpus README: per folder, the segment files that could not be retrieved (its data is incomplete)."""
    text = (CORPUS.parent / "README.md").read_text()
    out: dict[str, set[str]] = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        name = section.split("\n", 1)[0].strip()
        m = re.search(r"^Absent segment files: (.*)$", section, flags=re.M)
        out[name] = set(re.findall(r"`([^`]+\.log)`", m.group(1))) if m else set()
    return out


def _verify(root) -> tuple[int, list[dict], dict]:
    r = run_cli("verify", "--format", "json", str(root))
    objs = [json.loads(line) for line in r.out.splitlines()]
    return r.code, [o for o in objs if o["type"] == "finding"], [o for o in objs if o["type"] == "summary"][0]


def _restore_preallocated_indexes(root) -> None:
    """The README: absent index files of active segments were preallocated zeros (10485760 / 10485756)."""
    for log in root.rglob("*.log"):
        for suffix, size in ((".index", 10485760), (".timeindex", 10485756)):
            p = log.with_suffix(suffix)
            if not p.exists():
                with open(p, "wb") as f:
                    f.truncate(size)


@pytest.mark.parametrize("restore", [False, True], ids=["as-stored", "indexes-restored"])
@pytest.mark.parametrize("root", corpus_dirs(), ids=lambda p: p.name)
def test_real_directory_verifies(root, restore, tmp_path):
    """Every folder whose data is complete verifies with exit status 0 (no error); in the folders the
    README names as incomplete, the only errors are about the partitions whose segment files are absent
    (or that hold none): recovery point and flushed data beyond what the directory still has."""
    import shutil
    if restore:
        shutil.copytree(root, tmp_path / root.name)
        root = tmp_path / root.name
        _restore_preallocated_indexes(root)
    absent = _absent_segment_files()[root.name]
    code, findings, summary = _verify(root)
    errors = [o for o in findings if o["severity"] == "error"]
    assert summary["records"] > 0
    assert not [o for o in findings if o["kind"] == "untrimmed_index"]
    if not absent:
        assert errors == [] and code == 0
        return
    missing = {str(root / f).rsplit("/", 1)[0] for f in absent}
    for o in errors:
        pdir = Path(o["unit"])
        assert o["kind"] == "recovery_point_beyond_log_end", o
        assert str(pdir) in missing or not list(pdir.glob("*.log")), o
