"""The Spark pipeline's planning and row building, without a JVM: input partitions cut at offset-index
entries, Arrow batches with the exact schema, filters, and read_committed as a Kafka consumer sees it.

These need pyarrow (the ``spark`` extra) but not Java; they are not marked ``spark``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed: pip install -e '.[spark]'")

from kafkalog_formats import control as ctl  # noqa: E402
from kafkalog_formats.message_set import BatchReader  # noqa: E402
from kafkalog_formats.offset_index import offset_index_array, real_entry_count  # noqa: E402
from kafkalog_formats.record_batch import RecordSpec, build_batch  # noqa: E402

from kafkalog_cli.repair.log_writer import PartitionWriter  # noqa: E402
from kafkalog_cli.spark.options import OptionError, ReadOptions  # noqa: E402
from kafkalog_cli.spark.plan import plan_ranges  # noqa: E402
from kafkalog_cli.spark.ranges import ranges_from_json, ranges_to_json  # noqa: E402
from kafkalog_cli.spark.rows import read_range  # noqa: E402
from kafkalog_cli.spark.schema import ARROW_SCHEMA  # noqa: E402

from conftest import (FIXTURES, assert_same_records, consumer_view, dump_log_records,  # noqa: E402
                      run_cli, table_records)

LOGDIR = FIXTURES / "logdir"
DAMAGED = FIXTURES / "damaged"
T0 = 1700000000000


def read_all(paths, opts: ReadOptions, columns=None, sink=None) -> pa.Table:
    """Every row of ``paths`` (problems go to ``sink``; by default there must be none)."""
    plan = plan_ranges([str(p) for p in paths], opts)
    batches = [b for r in plan.ranges for b in read_range(r, opts, columns, rows_per_batch=7, sink=sink)]
    schema = ARROW_SCHEMA if columns is None else pa.schema([ARROW_SCHEMA.field(c) for c in columns])
    return pa.Table.from_batches(batches, schema=schema)


def batch_positions(log: Path) -> set[int]:
    return {b.position for b in BatchReader(log.read_bytes())}


def test_rows_equal_dump_log_on_every_fixture_segment():
    """One range per segment and tiny Arrow batches (7 rows): the same records, field for field, as
    ``dump-log --deep-iteration --print-data-log`` (every codec, legacy wrappers, control records,
    compacted gaps, headers, tombstones)."""
    got = table_records(read_all([LOGDIR], ReadOptions()))
    want = dump_log_records(str(LOGDIR))
    assert len(want) > 200
    assert_same_records(got, want)


def test_batches_have_exactly_the_schema_spark_checks():
    plan = plan_ranges([str(LOGDIR / "orders-1")], ReadOptions())
    batch = next(read_range(plan.ranges[0], ReadOptions()))
    assert batch.schema.equals(ARROW_SCHEMA)
    assert batch.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert batch.schema.field("partition").type == pa.int32()


@pytest.mark.parametrize("split", [300, 600, 1500])
def test_segments_split_at_offset_index_entries_give_the_same_records(split):
    """With splitBytes below the segment size, each inner cut is an offset-index position and a batch
    start (docs/kafka-on-disk.md §3.1), the ranges tile the file, and together they read every record once."""
    opts = ReadOptions(split_bytes=split)
    plan = plan_ranges([str(LOGDIR)], opts)
    by_segment: dict[str, list] = {}
    for r in plan.ranges:
        by_segment.setdefault(r.segment, []).append(r)
    split_segments = 0
    for seg, ranges in by_segment.items():
        assert ranges[0].start == 0 and ranges[-1].end == Path(seg).stat().st_size
        assert all(a.end == b.start for a, b in zip(ranges, ranges[1:]))
        if len(ranges) > 1:
            split_segments += 1
            index = Path(seg).with_suffix(".index").read_bytes()
            arr = offset_index_array(index)
            positions = set(arr["pos"][:real_entry_count(arr)].tolist())
            cuts = {r.start for r in ranges[1:]}
            assert cuts <= positions and cuts <= batch_positions(Path(seg))
    assert split_segments >= 3
    assert len(plan.ranges) > plan.segments
    assert ranges_from_json(ranges_to_json(plan.ranges)) == plan.ranges
    assert_same_records(table_records(read_all([LOGDIR], opts)), dump_log_records(str(LOGDIR)))


def test_cuts_never_trust_a_bad_index(tmp_path):
    """An index whose positions are not batch starts (the bad-indexes fixture, plus one made here that
    points into the middle of batches) costs parallelism, never records."""
    d = tmp_path / "orders-0"
    shutil.copytree(LOGDIR / "orders-0", d)
    seg = d / "00000000000000000000.log"
    idx = seg.with_suffix(".index")
    arr = offset_index_array(idx.read_bytes()).copy()
    arr["pos"] = arr["pos"] + 5                    # every entry now points 5 bytes into a batch
    idx.write_bytes(arr.tobytes())
    opts = ReadOptions(split_bytes=300)
    for paths in ([d], [DAMAGED / "bad-indexes"]):
        plan = plan_ranges([str(p) for p in paths], opts)
        for r in plan.ranges:
            assert r.start == 0 or r.start in batch_positions(Path(r.segment))
        assert_same_records(table_records(read_all(paths, opts)), dump_log_records(*map(str, paths)))
    assert [r.start for r in plan_ranges([str(d)], opts).ranges if r.segment == str(seg)] == [0]


def test_offset_range_matches_dump_log_and_starts_at_the_index_entry():
    """fromOffset/toOffset are dump-log's --from-offset/--to-offset; the first segment read starts at
    the offset-index entry at or below fromOffset (the broker's lookup, §3.5), not at byte 0."""
    opts = ReadOptions(from_offset=40, to_offset=60)
    plan = plan_ranges([str(LOGDIR / "orders-0")], opts)
    assert [Path(r.segment).name for r in plan.ranges] == ["00000000000000000025.log", "00000000000000000051.log"]
    assert plan.ranges[0].start > 0
    got = table_records(read_all([LOGDIR / "orders-0"], opts))
    want = dump_log_records("--from-offset", "40", "--to-offset", "60", str(LOGDIR / "orders-0"))
    assert [o for _s, o, _d in got] == list(range(40, 61))
    assert_same_records(got, want)


def test_time_topic_and_partition_filters():
    every = read_all([LOGDIR], ReadOptions()).to_pylist()
    lo, hi = T0 + 5000, T0 + 30000
    opts = ReadOptions.from_options({"topic": "ord*", "partition": "0-0", "fromTimestamp": str(lo),
                                     "toTimestamp": "2023-11-14T22:13:50Z"})
    assert opts.to_timestamp == hi
    got = read_all([LOGDIR], opts).to_pylist()
    want = [r for r in every if r["topic"].startswith("ord") and r["partition"] == 0 and r["timestamp"] is not None
            and lo <= int(r["timestamp"].timestamp() * 1000) <= hi]
    assert got and [(r["segment"], r["offset"]) for r in got] == [(r["segment"], r["offset"]) for r in want]


def test_schema_pruning_builds_only_the_columns_asked_for():
    t = read_all([LOGDIR / "orders-0"], ReadOptions(), columns=["offset", "value"])
    assert t.column_names == ["offset", "value"]
    full = read_all([LOGDIR / "orders-0"], ReadOptions())
    assert t.column("offset").to_pylist() == full.column("offset").to_pylist()
    assert t.column("value").to_pylist() == full.column("value").to_pylist()


# --- read_committed --------------------------------------------------------------------------------


def test_read_committed_drops_aborted_transactions_like_a_consumer():
    """payments-0 interleaves producer 7000 (commits) and 7001 (aborts, indexed in .txnindex)."""
    part = LOGDIR / "payments-0"
    opts = ReadOptions.from_options({"isolation": "read_committed"})
    assert not opts.include_control
    t = read_all([part], opts)
    got = list(zip(t.column("offset").to_pylist(), t.column("value").to_pylist()))
    assert got == consumer_view(part)
    values = set(t.column("value").to_pylist())
    assert {b"debit 10", b"credit 10", b"fee 1", b"non-transactional"} <= values
    assert not values & {b"debit 99", b"credit 99"}
    assert not any(t.column("is_control").to_pylist())
    every = read_all([part], ReadOptions())
    assert {b"debit 99", b"credit 99"} <= set(every.column("value").to_pylist())
    assert any(every.column("is_control").to_pylist())


def _txn_partition(directory: Path, close_open_txn: bool) -> None:
    """Producer 1 commits a transaction, producer 2 opens one and never ends it (a crash between
    produce and EndTxn), then plain records follow."""
    w = PartitionWriter(directory, segment_bytes=400, index_interval_bytes=64)
    off = 0

    def batch(values, **kw):
        nonlocal off
        specs = [RecordSpec(i, T0 + off + i, None, v) for i, v in enumerate(values)]
        w.append(build_batch(off, specs, **kw))
        off += len(values)

    def marker(ctype, pid):
        nonlocal off
        spec = RecordSpec(0, T0 + off, ctl.build_control_key(ctype), ctl.build_end_txn_marker(1))
        w.append(build_batch(off, [spec], is_transactional=True, is_control=True, producer_id=pid, producer_epoch=0))
        off += 1

    batch([b"a1", b"a2"], is_transactional=True, producer_id=1, producer_epoch=0, base_sequence=0)
    marker(ctl.COMMIT, 1)
    batch([b"plain-1"])
    batch([b"open-1"], is_transactional=True, producer_id=2, producer_epoch=0, base_sequence=0)
    for i in range(12):
        batch([f"after-{i}".encode()])
    if close_open_txn:
        marker(ctl.COMMIT, 2)
    w.close()


@pytest.mark.parametrize("committed", [False, True])
def test_read_committed_stops_at_the_last_stable_offset(tmp_path, committed):
    """A transaction still open at the end of the log holds back everything from its first offset: a
    read_committed consumer only reads below the LSO. Once it commits, everything is visible."""
    d = tmp_path / "txn-0"
    _txn_partition(d, committed)
    assert len(list(d.glob("*.log"))) > 2 and list(d.glob("*.snapshot"))
    t = read_all([d], ReadOptions.from_options({"isolation": "read_committed"}))
    values = t.column("value").to_pylist()
    if committed:
        assert values == [b"a1", b"a2", b"plain-1", b"open-1"] + [f"after-{i}".encode() for i in range(12)]
    else:
        assert values == [b"a1", b"a2", b"plain-1"]
    assert len(read_all([d], ReadOptions()).column("value")) == 16 + 1 + (1 if committed else 0)


def test_last_stable_offset_survives_a_corrupt_newest_snapshot(tmp_path):
    """A corrupt newest producer snapshot falls back to an older one and replays from there (§4.2, §7.4)."""
    d = tmp_path / "txn-0"
    _txn_partition(d, False)
    newest = sorted(d.glob("*.snapshot"))[-1]
    data = bytearray(newest.read_bytes())
    data[-1] ^= 0xFF
    newest.write_bytes(bytes(data))
    values = read_all([d], ReadOptions.from_options({"isolation": "read_committed"})).column("value").to_pylist()
    assert values == [b"a1", b"a2", b"plain-1"]


def test_options_fail_with_the_option_named():
    cases = {"partition": "x", "fromOffset": "-3", "isolation": "serializable", "fromTimestamp": "yesterday",
             "includeControl": "maybe", "splitBytes": "0", "color": "red"}
    for key, value in cases.items():
        with pytest.raises(OptionError) as e:
            ReadOptions.from_options({key: value})
        assert key.lower() in str(e.value).lower()
    with pytest.raises(OptionError, match="above toOffset"):
        ReadOptions.from_options({"fromOffset": "9", "toOffset": "3"})


def test_export_dry_run_prints_the_plan_without_spark(tmp_path):
    r = run_cli("export", str(LOGDIR), "--dry-run", "--json", "--split-bytes", "600")
    objs = [json.loads(line) for line in r.out.splitlines()]
    ranges = [o for o in objs if o["type"] == "range"]
    summary = objs[-1]
    assert r.code == 0 and summary["type"] == "plan" and summary["ranges"] == len(ranges) > summary["segments"]
    assert sum(o["bytes"] for o in ranges) == summary["bytes"] == sum(
        p.stat().st_size for p in LOGDIR.glob("*/*.log"))
    r = run_cli("export", str(LOGDIR), "--output", str(tmp_path), "--master", "local[1]")
    assert r.code == 2 and "already exists" in r.err
    r = run_cli("export", str(LOGDIR), "--output", str(tmp_path / "new"), "--spark-conf", "nonsense")
    assert r.code == 2 and "KEY=VALUE" in r.err
    r = run_cli("export", str(LOGDIR), "--output", str(tmp_path / "new"), "--partition", "1-0")
    assert r.code == 2 and "partition" in r.err


def _dump_batches(d: Path) -> dict:
    """dump-log's batches of ``d`` by (file, position): what the reader must report or leave out."""
    out = run_cli("dump-log", "--format", "json", "--deep-iteration", str(d)).out
    return {(o["file"], o["position"]): o for o in map(json.loads, out.splitlines()) if o["type"] == "batch"}


def test_damaged_tails_and_crcs_are_problems_never_rows():
    """The damaged fixtures, cut into tiny ranges: a zero-filled tail (a preallocated segment) holds nothing
    and is a warning; a torn last batch is an error with its byte count; a batch whose CRC fails gives no
    row and is an error with verify's message and the batch's record count. Every other record is
    dump-log's."""
    from kafkalog_cli.spark.problems import ReadSink
    for case, kind, severity in (("zero-tail", "zero_tail", "warning"), ("truncated-last-batch", "trailing_bytes", "error"),
                                 ("flipped-crc-byte", "crc_mismatch", "error")):
        d = DAMAGED / case
        sink = ReadSink("skip")
        got = table_records(read_all([d], ReadOptions(split_bytes=300, on_error="skip"), sink=sink))
        want = dump_log_records(str(d))
        [p] = sink.problems
        assert (p.kind, p.severity) == (kind, severity), p
        batches = _dump_batches(d)
        if kind == "crc_mismatch":
            bad = batches[(str(d / "orders-0" / Path(p.file).name), p.position)]
            assert bad["crc_valid"] is False and p.records == bad["count"] and p.bytes == bad["size"]
            assert p.message == f"Record is corrupt (stored crc = {bad['crc']}, computed crc = " + p.message.split(
                "computed crc = ")[1]
            lost = {(seg, o) for seg, o, _ in want if bad["base_offset"] <= o <= bad["last_offset"]
                    and seg.endswith(Path(p.file).name)}
            assert len(lost) == bad["count"] and lost
            want = [w for w in want if (w[0], w[1]) not in lost]
        elif kind == "trailing_bytes":
            size = Path(p.file).stat().st_size
            assert p.bytes == size - p.position and "could not be read" in p.message
        assert_same_records(got, want)
        with pytest.raises(Exception, match=kind):
            read_all([d], ReadOptions(split_bytes=300, on_error="fail")) if severity == "error" else (_ for _ in ()).throw(
                RuntimeError(kind))


def test_payments_fixture_has_indexed_aborts():
    """A guard for the fixture the read_committed tests depend on: its ABORT markers are indexed."""
    out = run_cli("dump-log", "--format", "json", str(LOGDIR / "payments-0")).out
    entries = [json.loads(x) for x in out.splitlines()]
    assert [e["producer_id"] for e in entries if e["type"] == "txn_index_entry"] == [7001, 7001, 7001]


def test_a_transaction_index_kafka_would_refuse_stops_read_committed(tmp_path):
    """A .txnindex entry with version 1 makes Kafka's fetch fail ("Unexpected aborted transaction
    version", docs/kafka-on-disk.md §4.1): read_committed cannot be answered, so export stops before Spark
    with the file and byte position, exit status 1. read_uncommitted does not need the index."""
    d = tmp_path / "payments-0"
    shutil.copytree(LOGDIR / "payments-0", d)
    txn = sorted(d.glob("*.txnindex"))[0]
    data = bytearray(txn.read_bytes())
    data[0:2] = b"\x00\x01"                        # the first entry's version
    txn.write_bytes(bytes(data))
    r = run_cli("export", str(d), "--isolation", "read_committed", "-o", str(tmp_path / "out"))
    assert r.code == 1
    assert r.err == f"kafkalog: {txn}: position 0: Unexpected aborted transaction version 1 in transaction " \
                    f"index {txn}, current version is 0\n"
    assert run_cli("export", str(d), "--dry-run").code == 0


def _ranges(sizes_by_partition: list[list[int]]) -> list:
    from kafkalog_cli.spark.ranges import SegmentRange
    out = []
    for p, sizes in enumerate(sizes_by_partition):
        pos = 0
        for s in sizes:
            out.append(SegmentRange("/d", "t", p, f"/d/t-{p}/00000000000000000000.log", 0, pos, pos + s, 10**9))
            pos += s
    return out


@pytest.mark.parametrize("sizes, parallelism", [
    ([[39]] * 80, 2),                           # the benchmark fleet: 80 partitions of one 3.9 MB segment
    ([[10] * 30, [5], [7, 7], [100]], 2),
    ([[3] * 50] * 7, 4),
    ([[1]], 2),
])
def test_export_tasks_are_balanced_in_a_multiple_of_the_cores(sizes, parallelism):
    """Tasks take consecutive ranges in plan order (each range exactly once), a partition smaller than a
    task's share stays in one task (one file), and once there are more tasks than cores their number is
    a multiple of the cores (9 tasks on 2 cores made the last wave run on one core)."""
    from kafkalog_cli.spark.export import group_tasks, task_bytes_for
    ranges = _ranges(sizes)
    total = sum(r.size for r in ranges)
    tasks = group_tasks(ranges, task_bytes_for(total, parallelism) if total > 100 else max(1, total // 8),
                        parallelism)
    assert [r for t in tasks for r in t.ranges] == ranges
    assert [t.id for t in tasks] == list(range(len(tasks)))
    if len(tasks) > parallelism:
        assert len(tasks) % parallelism == 0
    share = total / len(tasks)
    for p, s in enumerate(sizes):
        holders = {t.id for t in tasks for r in t.ranges if r.partition == p}
        if sum(s) < share:
            assert len(holders) == 1
    unit = max(sum(s) if sum(s) < share else max(s) for s in sizes)    # what goes to a task whole
    assert max(t.bytes for t in tasks) <= share + unit


def test_the_benchmark_fleet_makes_eight_equal_tasks_on_two_cores():
    from kafkalog_cli.spark.export import group_tasks, task_bytes_for
    from kafkalog_cli.spark.export import MiB
    ranges = _ranges([[39 * MiB // 10]] * 80)
    tasks = group_tasks(ranges, task_bytes_for(sum(r.size for r in ranges), 2), 2)
    assert [len(t.ranges) for t in tasks] == [10] * 8
