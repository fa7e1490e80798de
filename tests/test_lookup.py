"""lookup-offset and lookup-time agree with a brute-force scan of every record (docs/kafka-on-disk.md §3.5, §8),
for every offset and for random timestamps of the fixtures and the real corpus."""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from kafkalog_formats.message_set import BatchReader

from kafkalog_cli.engine.lookup import (LookupFailed, PartitionView, lookup_offset, lookup_time,
                                        parse_timestamp, segment_largest_timestamp)

from conftest import CORPUS, FIXTURES, run_cli

FIXTURE_PARTITIONS = sorted(p for p in (FIXTURES / "logdir").iterdir() if p.is_dir())


def corpus_partitions() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted({p.parent for p in CORPUS.rglob("*.log") if p.stat().st_size})


def all_records(pdir: Path) -> list[tuple[Path, int, int]]:
    """(segment, offset, timestamp) of every record, by reading every batch: the brute-force model."""
    out = []
    for log in sorted(pdir.glob("*.log")):
        for b in BatchReader(log.read_bytes()):
            for r in b.records():
                out.append((log, r.offset, r.timestamp))
    return out


def check_every_offset(pdir: Path, limit: int | None = None) -> int:
    view = PartitionView(pdir)
    recs = [(o, t) for _s, o, t in all_records(pdir) if o >= view.log_start]
    offsets = range(view.log_start, view.log_end)
    if limit and len(offsets) > limit:
        offsets = sorted(random.Random(7).sample(offsets, limit))
    i = 0
    for o in offsets:
        while i < len(recs) and recs[i][0] < o:
            i += 1
        res = lookup_offset(view, o)
        try:
            assert (res.found_offset, res.found_timestamp) == recs[i], (pdir, o)
            assert res.exact == (recs[i][0] == o)
        finally:
            res.close()
    return len(offsets)


def check_random_timestamps(pdir: Path, n: int = 60) -> int:
    view = PartitionView(pdir)
    recs = all_records(pdir)
    by_seg: dict[Path, list] = {}
    for seg, o, t in recs:
        by_seg.setdefault(seg, []).append((o, t))
    ts = [t for _s, _o, t in recs]
    rng = random.Random(hash(pdir.name) & 0xFFFF)
    targets = [rng.randint(min(ts) - 5, max(ts) + 5) for _ in range(n)] + [min(ts), max(ts)] + ts[:3]
    checked = 0
    for target in targets:
        expected = None
        for base in view.bases:                      # model: Kafka's segment choice, then a full scan
            seg = view.log.segments[base]
            largest, _src = segment_largest_timestamp(seg)
            if largest >= target:
                expected = next(((o, t) for o, t in by_seg.get(seg.log_path, [])
                                 if t >= target and o >= view.log_start), None)
                break
        try:
            res = lookup_time(view, target)
            got = (res.found_offset, res.found_timestamp)
            res.close()
        except LookupFailed:
            got = None
        assert got == expected, (pdir, target)
        checked += 1
    return checked


@pytest.mark.parametrize("pdir", FIXTURE_PARTITIONS, ids=lambda p: p.name)
def test_every_offset_of_fixtures(pdir):
    assert check_every_offset(pdir) > 0


@pytest.mark.parametrize("pdir", [p for p in FIXTURE_PARTITIONS if p.name != "legacy-0"], ids=lambda p: p.name)
def test_random_timestamps_of_fixtures(pdir):
    assert check_random_timestamps(pdir) > 0


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real Kafka corpus not found at {CORPUS}")
def test_every_offset_and_random_timestamps_of_the_real_corpus():
    """Every offset of partitions holding up to 400, 400 seeded random offsets of larger ones (most real
    partitions have no index file in the corpus, so each lookup scans from position 0)."""
    parts = corpus_partitions()
    assert len(parts) > 30
    total = 0
    for pdir in parts:
        total += check_every_offset(pdir, limit=400)
        check_random_timestamps(pdir, n=20)
    assert total > 5000


def test_index_is_used_and_scan_is_short():
    """A lookup deep inside a multi-segment partition starts at an index entry, not at position 0."""
    res = lookup_offset(FIXTURES / "logdir" / "orders-0", 60)
    step = res.steps[0]
    assert Path(step.segment).name == "00000000000000000051.log"
    assert step.slot >= 0 and step.entry[0] <= 60 and step.start_position == step.entry[1] > 0
    assert step.batches_scanned <= 3
    res.close()


def test_untrimmed_index_is_searched_like_a_trimmed_one():
    d = FIXTURES / "damaged" / "untrimmed-indexes" / "orders-0"
    for o in (0, 5, 30, 80, 90):
        a, b = lookup_offset(d, o), lookup_offset(FIXTURES / "logdir" / "orders-0", o)
        assert (a.found_offset, a.steps[0].slot, a.steps[0].start_position) == \
            (b.found_offset, b.steps[0].slot, b.steps[0].start_position)
        a.close(), b.close()


def _found(pdir: Path, target: int):
    try:
        res = lookup_time(pdir, target)
    except LookupFailed as e:
        return e.kind
    res.close()
    return res.found_offset, res.found_timestamp


def test_lookup_time_after_a_crash_reads_the_untrimmed_time_index_as_the_recovered_broker_does():
    """Issue 34 item 6: after an unclean shutdown the time indexes are still preallocated (their last slot reads
    timestamp 0). The broker recovers those segments when it starts (no .kafka_cleanshutdown) and answers
    ListOffsets from the rebuilt indexes: the largest timestamp is the batches'. Every record's timestamp, and
    the ones between, find what they find in the healthy copy of the same partition; before the fix the
    newest ones found nothing ("no segment has a timestamp at or after") and segment 0 was skipped, so
    1700000010000 found offset 25 instead of 19."""
    crashed = FIXTURES / "damaged" / "untrimmed-indexes" / "orders-0"
    healthy = FIXTURES / "logdir" / "orders-0"
    ts = sorted({t for _s, _o, t in all_records(healthy)})
    targets = ts + [t + 1 for t in ts] + [ts[0] - 1, 1_700_000_010_000]
    assert [_found(crashed, t) for t in targets] == [_found(healthy, t) for t in targets]
    assert _found(crashed, 1_700_000_010_000)[0] == 19
    for cmd in (["lookup-time", str(crashed), "1700000040000"],
                ["dump-log", "--from-time", "1700000030000", "--to-time", "1700000044000", str(crashed)]):
        r, h = run_cli(*cmd), run_cli(*[str(healthy) if c == str(crashed) else c for c in cmd])
        assert r.code == h.code == 0, r.err
        assert r.out.replace("damaged/untrimmed-indexes", "logdir").split("found:")[-1] == \
            h.out.split("found:")[-1]


def test_a_recovered_segment_is_named_as_the_source_of_its_largest_timestamp():
    r = run_cli("lookup-time", str(FIXTURES / "damaged" / "untrimmed-indexes" / "orders-0"), "1700000040000")
    assert "largestTimestamp 2023-11-14T22:14:05.000Z (1700000045000) from the batches (the broker recovers" \
        in " ".join(r.out.split())


def test_out_of_range_names_the_valid_range():
    r = run_cli("lookup-offset", str(FIXTURES / "logdir" / "orders-0"), "91")
    assert r.code == 1 and "the log holds offsets 0 to 90" in r.err
    r = run_cli("lookup-offset", str(FIXTURES / "logdir" / "compacted-0"), "0")   # log start 1 (checkpoint)
    assert r.code == 1 and "log start 1" in r.err


def test_compacted_offset_gives_next_present():
    r = run_cli("lookup-offset", "--format", "json", str(FIXTURES / "logdir" / "compacted-0"), "6")
    obj = json.loads(r.out)
    assert (obj["found_offset"], obj["exact"], obj["record"]["offset"]) == (7, False, 7)
    assert obj["batch"]["delete_horizon_ms"] is not None and r.code == 0


def test_text_output_shows_steps_and_record():
    r = run_cli("lookup-offset", "--print-data-log", str(FIXTURES / "logdir" / "orders-0"), "60")
    lines = r.out.splitlines()
    assert lines[0] == "log range:       offsets 0 to 90 (log end 91)"
    assert lines[1] == "segment:         00000000000000000051.log (base offset 51)"
    assert lines[2] == "relative offset: 9"
    assert lines[3].startswith("offset index:    00000000000000000051.index, 5 entries; slot 1: offset 60 at")
    assert any(ln.startswith("batch:           baseOffset: 60 lastOffset: 60 ") for ln in lines)
    assert any(ln.startswith("record:          | offset: 60 ") and " key: order-5 payload: " in ln for ln in lines)


def test_lookup_time_specials_and_iso(tmp_path):
    p = FIXTURES / "logdir" / "payments-0"
    assert json.loads(run_cli("lookup-time", "--format", "json", str(p), "earliest").out)["found_offset"] == 0
    assert json.loads(run_cli("lookup-time", "--format", "json", str(p), "-1").out)["found_offset"] == 23
    mx = json.loads(run_cli("lookup-time", "--format", "json", str(p), "max-timestamp").out)
    recs = all_records(p)
    best = max(t for _s, _o, t in recs)
    assert (mx["found_timestamp"], mx["found_offset"]) == (best, min(o for _s, o, t in recs if t == best))
    assert parse_timestamp("2023-11-14T22:13:20Z") == 1700000000000
    assert parse_timestamp("2023-11-14T22:13:20") == 1700000000000
    assert parse_timestamp("2023-11-14T23:13:20+01:00") == 1700000000000
    r = run_cli("lookup-time", str(p), "2023-11-14T22:13:20.300Z")
    assert r.code == 0 and "found:           offset 4, timestamp 2023-11-14T22:13:20.300Z (1700000000300)" in r.out
    r = run_cli("lookup-time", str(p), "2030-01-01")
    assert r.code == 1 and "no segment has a timestamp at or after" in r.err
    assert run_cli("lookup-time", str(p), "yesterday").code == 2


def test_mtime_fallback_for_segments_without_time_index_entries(tmp_path):
    """An empty time index (v0 data, or a deleted .timeindex Kafka recreated empty): Kafka compares the
    target with the .log file's mtime, picks that segment, and finds nothing in it if no record reaches
    the target (it does not go on to the next segment)."""
    import shutil
    d = tmp_path / "orders-0"
    shutil.copytree(FIXTURES / "logdir" / "orders-0", d)
    first = d / "00000000000000000000.log"
    first.with_suffix(".timeindex").write_bytes(b"")
    os.utime(first, ns=(1_800_000_000_000 * 1_000_000,) * 2)
    (tmp_path / ".kafka_cleanshutdown").write_bytes(b"")   # not recovered at start: the index decides
    view = PartitionView(d)
    assert segment_largest_timestamp(view.log.segments[0]) == (1_800_000_000_000, ".log mtime")
    with pytest.raises(LookupFailed) as e:
        lookup_time(view, 1_700_000_030_000)        # offset 60 holds it, but segment 0 is chosen first
    assert e.value.kind == "timestamp_not_found" and "00000000000000000000.log" in str(e.value)
    res = lookup_time(view, 1_700_000_005_000)      # inside segment 0: found there
    assert Path(res.steps[-1].segment).name == "00000000000000000000.log" and res.found_timestamp >= 1_700_000_005_000
    res.close()


def test_no_segments_is_could_not_run(tmp_path):
    (tmp_path / "t-0").mkdir()
    assert run_cli("lookup-offset", str(tmp_path / "t-0"), "0").code == 3


def test_an_offset_below_the_local_segments_but_above_the_log_start_is_said_to_be_remote(tmp_path):
    """A tiered topic's local log start is above its log start (UnifiedLog.localLogStartOffset, 3.6+); the
    log start offset stays in log-start-offset-checkpoint. The lookup reads local segments only and says
    where the missing offsets are."""
    import shutil
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    for f in (d / "orders-0").glob("00000000000000000000.*"):
        f.unlink()
    (d / "log-start-offset-checkpoint").write_text("0\n1\norders 0 10\n")
    r = run_cli("lookup-offset", str(d / "orders-0"), "12")
    assert r.code == 1
    assert "the log holds offsets 25 to 90" in r.err
    assert "log start offset is 10 (log-start-offset-checkpoint): offsets 10 to 24 are not on this disk" in r.err
    r = run_cli("lookup-offset", str(d / "orders-0"), "5")      # below the log start: plainly out of range
    assert r.code == 1 and "not on this disk" not in r.err


def _corrupt_size(log: Path, batch: int) -> int:
    """Write a record size of 5 into the batch's length field: FileLogInputStream.nextBatch throws
    CorruptRecordException there ("Found record size 5 smaller than minimum record overhead"), so the
    broker cannot read past it and LogSegment.recover truncates the segment at it. Returns its position."""
    data = bytearray(log.read_bytes())
    pos = list(BatchReader(bytes(data)))[batch].position
    data[pos + 8:pos + 12] = (5).to_bytes(4, "big")
    log.write_bytes(bytes(data))
    return pos


def _verify_finding(path: Path) -> dict:
    r = run_cli("verify", "--format", "json", str(path))
    return next(o for o in map(json.loads, r.out.splitlines())
                if o["type"] == "finding" and o["kind"] == "corrupt_size")


def test_an_offset_in_damaged_bytes_is_named_as_verify_names_it(tmp_path):
    """A segment that cannot be read from its first batch is not an empty log ("holds offsets 0 to -1"):
    the lookup names the file, byte position and reason verify reports, exit 3 (could not run). Kafka
    cannot serve it either: a fetch reads through FileLogInputStream.nextBatch, which throws
    CorruptRecordException (2.0 - trunk); recovery truncates there (LogSegment.recover)."""
    import shutil
    d = tmp_path / "orders-1"
    shutil.copytree(FIXTURES / "logdir" / "orders-1", d)
    log = d / "00000000000000000000.log"
    _corrupt_size(log, 0)
    seen = _verify_finding(d)
    assert (Path(seen["file"]).name, seen["position"]) == (log.name, 0)
    r = run_cli("lookup-offset", str(d), "5")
    assert r.code == 3 and "out of range" not in r.err and "to -1" not in r.err
    assert r.err.startswith(f"kafkalog: cannot read: {log}: byte 0: ")
    assert seen["message"].split(";")[0] in r.err and "offset 5" in r.err
    r = run_cli("lookup-offset", "--format", "json", str(d), "5")
    obj = json.loads(r.out)
    assert r.code == 3 and (obj["error"], obj["file"], obj["position"]) == ("corrupt_size", str(log), 0)


def test_an_offset_after_damage_inside_a_segment_is_unreadable_and_earlier_ones_are_found(tmp_path):
    import shutil
    d = tmp_path / "orders-0"
    shutil.copytree(FIXTURES / "logdir" / "orders-0", d)
    log = d / "00000000000000000025.log"
    batches = list(BatchReader(log.read_bytes()))
    pos = _corrupt_size(log, 3)
    before, after = batches[2].last_offset, batches[4].base_offset
    res = lookup_offset(PartitionView(d), before)
    assert res.found_offset == before
    res.close()
    seen = _verify_finding(d)
    assert (Path(seen["file"]).name, seen["position"]) == (log.name, pos)
    r = run_cli("lookup-offset", str(d), str(after))
    assert r.code == 3 and f"{log}: byte {pos}: " in r.err and f"offset {after} " in r.err
    assert run_cli("lookup-offset", str(d), "60").code == 0        # segment 51 on is intact


def test_an_empty_log_is_said_to_be_empty(tmp_path):
    """Wording (issue 23): not "holds offsets 0 to -1"."""
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    r = run_cli("lookup-offset", str(d), "5")
    assert r.code == 1 and "offset 5 is out of range: the log is empty (log start 0, log end 0)" in r.err
    assert "to -1" not in r.err
