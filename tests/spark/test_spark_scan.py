"""``kafkalog scan``: verify's checks distributed over segments report exactly what ``kafkalog verify``
reports (same findings, same segment summaries, same exit status), on every damaged fixture, across
segments, and over the real corpus; the report table reads back with one row per finding and segment."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from conftest import CORPUS, FIXTURES, needs_corpus, run_cli

pytestmark = pytest.mark.spark

DAMAGED = FIXTURES / "damaged"
CASES = sorted(p.name for p in DAMAGED.iterdir() if p.is_dir()) if DAMAGED.is_dir() else []


def report(command: str, *args: str) -> tuple[int, list[dict], list[dict]]:
    r = run_cli(command, "--format", "json", *args)
    objs = [json.loads(line) for line in r.out.splitlines()]
    return (r.code, [o for o in objs if o["type"] == "finding"],
            [{k: v for k, v in o.items() if k != "seconds"} for o in objs if o["type"] == "segment"])


def where(findings: list[dict]) -> list[tuple]:
    return sorted((o["kind"], o["file"], o["position"], o["severity"], o["offset"]) for o in findings)


def assert_scan_equals_verify(*args: str) -> tuple[list, list]:
    code_s, found_s, segs_s = report("scan", *args)
    code_v, found_v, segs_v = report("verify", *args)
    assert where(found_s) == where(found_v)
    assert sorted(json.dumps(o, sort_keys=True) for o in found_s) == sorted(
        json.dumps(o, sort_keys=True) for o in found_v)          # messages, units and groups too
    assert segs_s == segs_v
    assert code_s == code_v
    return found_s, segs_s


@pytest.mark.parametrize("case", CASES)
def test_scan_reports_what_verify_reports_on_each_damaged_fixture(spark, case):
    found, segments = assert_scan_equals_verify(str(DAMAGED / case))
    assert found and segments


def test_relative_paths_name_files_as_given(spark, monkeypatch):
    """Executors open absolute paths (their working directory is not ours); findings still name files
    as the user spelled them, as verify does."""
    monkeypatch.chdir(DAMAGED)
    found, segments = assert_scan_equals_verify(CASES[0])
    assert all(not o["file"].startswith("/") for o in found + segments)


def test_scan_of_the_clean_fixtures_and_fail_on(spark):
    assert_scan_equals_verify(str(FIXTURES / "logdir"))
    assert_scan_equals_verify("--fail-on", "warning", "--shallow", str(FIXTURES / "logdir"))


def test_offsets_that_do_not_continue_across_segments_are_found_on_the_driver(spark, tmp_path):
    """The one check that needs the previous segment (docs/kafka-on-disk.md §7.2: offsets increase across
    segments): segment 51's first batch is given base offset 40, inside segment 25's range."""
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d, ignore=shutil.ignore_patterns("payments-*", "legacy-*"))
    seg = d / "orders-0" / "00000000000000000051.log"
    data = bytearray(seg.read_bytes())
    struct.pack_into(">q", data, 0, 40)             # the base offset is outside the CRC
    seg.write_bytes(bytes(data))
    found, _ = assert_scan_equals_verify(str(d))
    assert ("non_monotonic_offset", str(seg), 0) in {(o["kind"], o["file"], o["position"]) for o in found}
    found, _ = assert_scan_equals_verify(str(seg))  # a single file: verify finds the previous segment itself
    assert "non_monotonic_offset" in {o["kind"] for o in found}


def test_text_output_and_the_report_table(spark, tmp_path):
    import pyarrow.parquet as pq
    case = "flipped-crc-byte"                  # a fixture with an error (verify exits 1)
    out = tmp_path / "table"
    r = run_cli("scan", str(DAMAGED / case), "--output", str(out))
    v = run_cli("verify", str(DAMAGED / case))
    assert r.code == v.code == 1
    assert r.out.splitlines()[:-1] == v.out.splitlines()[:-1]                # the finding lines
    assert r.out.splitlines()[-1].split(" in ")[0] == v.out.splitlines()[-1].split(" in ")[0]
    rows = pq.read_table(str(out)).to_pylist()
    _, found, segments = report("verify", str(DAMAGED / case))
    assert sorted((o["kind"], o["file"], o["position"]) for o in rows if o["type"] == "finding") == sorted(
        (o["kind"], o["file"], o["position"]) for o in found)
    seg_rows = {o["file"]: o for o in rows if o["type"] == "segment"}
    assert set(seg_rows) == {o["file"] for o in segments}
    for o in segments:
        row = seg_rows[o["file"]]
        assert (row["status"], row["bytes"], row["records"], row["first_offset"], row["last_offset"]) == (
            o["status"], o["bytes"], o["records"], o["first_offset"], o["last_offset"])
        assert dict(row["codecs"]) == o["codecs"]
    r = run_cli("scan", str(DAMAGED / case), "--output", str(out))
    assert r.code == 2 and "already exists" in r.err


@needs_corpus
def test_scan_of_the_whole_real_corpus(spark, tmp_path):
    """No segment of the real corpus has an error. The two partitions whose segment file is absent from
    the corpus (its README: Yashasvi960 telemetry-0, and a changelog directory committed without a segment)
    have checkpoints naming offsets beyond the empty log: recovery points beyond the log end are warnings
    (the broker lowers them on load; LogManager.truncateTo leaves them with nothing missing), so the
    corpus has no error at all."""
    out = tmp_path / "scan.json"
    found, segments = assert_scan_equals_verify(str(CORPUS))
    assert len(segments) == len(list(CORPUS.rglob("*.log")))
    errors = [o for o in found if o["severity"] == "error"]
    assert not [o for o in errors if o["unit_kind"] == "segment"]
    for o in errors:
        assert o["unit_kind"] == "partition" and not list(Path(o["unit"]).glob("*.log")), o
    assert {Path(o["unit"]).name for o in errors} <= {
        "telemetry-0", "my-kafka-streams-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog-0"}
    r = run_cli("scan", str(CORPUS), "--output", str(out), "--output-format", "json", "--format", "json")
    assert not errors and r.code == 0
    lines = [json.loads(x) for f in sorted(out.glob("part-*.json")) for x in f.read_text().splitlines()]
    assert sum(o["type"] == "segment" for o in lines) == len(segments)
    assert sum(o["type"] == "finding" for o in lines) == len(found)
