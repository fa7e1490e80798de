"""The ``kafkalog`` PySpark data source and ``kafkalog export`` on a real local Spark (one shared session):
the rows are dump-log's records (counts and per-record checksums), on the fixtures and the real corpus,
read back from Parquet by pyarrow (an independent reader) and from JSON lines."""
from __future__ import annotations

import base64
import json
import os
import struct
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import (CORPUS, FIXTURES, assert_same_records, consumer_view, dump_log_records, needs_corpus,
                      require_spark, run_cli, table_records)

pytestmark = pytest.mark.spark

LOGDIR = FIXTURES / "logdir"
T0 = 1700000000000


def read_parquet(path: Path):
    """Read an export back with pyarrow (not Spark), with the hive partition columns typed as exported
    (directories starting with "_", the errors and quarantine tables, left out as Spark does)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    part = ds.partitioning(pa.schema([("topic", pa.string()), ("partition", pa.int32())]), flavor="hive")
    return ds.dataset(str(path), format="parquet", partitioning=part, ignore_prefixes=["_", "."]).to_table()


def read_json_lines(path: Path):
    """Spark's JSON lines back into an Arrow table of the export's columns (binary as base64, timestamps
    as ISO-8601, topic and partition from the directory names)."""
    import pyarrow as pa

    from kafkalog_cli.spark.schema import ALL_COLUMNS, columns_of
    rows = []
    for f in sorted(path.glob("topic=*/partition=*/part-*.json")):
        topic = f.parent.parent.name.split("=", 1)[1]
        partition = int(f.parent.name.split("=", 1)[1])
        for line in f.read_text().splitlines():
            o = json.loads(line)
            o["topic"], o["partition"] = topic, partition
            for k in ("key", "value"):
                o[k] = None if o.get(k) is None else base64.b64decode(o[k])
            o["headers"] = [{"key": h.get("key"), "value": None if h.get("value") is None
                             else base64.b64decode(h["value"])} for h in o.get("headers", [])]
            ts = o.get("timestamp")
            o["timestamp"] = None if ts is None else datetime.fromisoformat(ts)
            rows.append(o)
    names = columns_of("kafkalog" if rows and "timestamp_type" in rows[0] else "spark-kafka")
    schema = pa.schema([(c, ALL_COLUMNS[c]) for c in names])
    return pa.Table.from_pylist([{c: o.get(c) for c in names} for o in rows], schema=schema)


def big_partition(directory: Path, mb: float) -> int:
    """A partition with one segment of about ``mb`` MiB: batches of 50 records with a header, indexed
    every 4 KiB like a broker (the project's writer). Returns the record count."""
    specs = [RecordSpec(i, T0 + i, f"key-{i}".encode(), bytes(range(100)), ((b"h", b"v"),)) for i in range(50)]
    template = bytearray(build_batch(0, specs, producer_id=9, producer_epoch=0, base_sequence=0))
    w = PartitionWriter(directory, segment_bytes=1 << 30, index_interval_bytes=4096)
    offset = size = 0
    while size < mb * 1024 * 1024:
        struct.pack_into(">q", template, 0, offset)           # the base offset is outside the CRC
        w.append(bytes(template))
        offset += 50
        size += len(template)
    w.close()
    return offset


def test_datasource_rows_are_dump_logs_records(spark):
    from kafkalog_cli.spark.datasource import SCHEMA
    df = spark.read.format("kafkalog").load(str(LOGDIR))
    assert df.schema == SCHEMA
    table = df.toArrow()
    assert_same_records(table_records(table), dump_log_records(str(LOGDIR)))
    assert set(table.column("log_dir").to_pylist()) == {os.path.abspath(LOGDIR)}
    assert df.rdd.getNumPartitions() == len(list(LOGDIR.glob("*/*.log")))   # one task per segment


def test_several_paths_and_options(spark):
    paths = [str(LOGDIR / "orders-0"), str(LOGDIR / "payments-0")]
    df = (spark.read.format("kafkalog").option("topic", "orders").option("fromOffset", "10")
          .option("toOffset", "20").load(paths))
    assert [(r.topic, r.offset) for r in df.orderBy("offset").collect()] == [("orders", o) for o in range(10, 21)]


def test_a_large_segment_is_read_by_several_tasks(spark, tmp_path):
    d = tmp_path / "big-0"
    n = big_partition(d, 3)
    df = spark.read.format("kafkalog").option("splitBytes", str(1024 * 1024)).load(str(d))
    assert df.rdd.getNumPartitions() >= 3
    table = df.toArrow()
    assert table.num_rows == n
    assert_same_records(table_records(table), dump_log_records(str(d)))


def test_schema_pruning_and_its_errors(spark):
    df = spark.read.format("kafkalog").schema("offset long, value binary").load(str(LOGDIR / "orders-0"))
    assert df.columns == ["offset", "value"]
    full = spark.read.format("kafkalog").load(str(LOGDIR / "orders-0"))
    assert sorted(df.collect()) == sorted(full.select("offset", "value").collect())
    with pytest.raises(Exception, match="column 'colour' is not provided by format 'kafkalog'"):
        spark.read.format("kafkalog").schema("colour string").load(str(LOGDIR)).collect()
    with pytest.raises(Exception, match="isolation: 'dirty' is not read_uncommitted or read_committed"):
        spark.read.format("kafkalog").option("isolation", "dirty").load(str(LOGDIR)).collect()


def test_read_committed_through_spark(spark):
    part = LOGDIR / "payments-0"
    rows = (spark.read.format("kafkalog").option("isolation", "read_committed").load(str(part))
            .orderBy("offset").select("offset", "value").collect())
    assert [(r.offset, bytes(r.value)) for r in rows] == consumer_view(part)


def test_export_parquet_is_partitioned_and_equals_dump_log(spark, tmp_path):
    out = tmp_path / "out"
    r = run_cli("export", str(LOGDIR), "--output", str(out), "--format", "json", "--output-format", "parquet")
    assert r.code == 0, r.err
    summary = json.loads(r.out)
    want = dump_log_records(str(LOGDIR))
    assert summary["rows"] == len(want) and summary["format"] == "parquet"
    assert (out / "_SUCCESS").exists() and (out / "topic=orders" / "partition=1").is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]                  # no temporary directory left
    assert_same_records(table_records(read_parquet(out)), want)


def test_export_json_lines(spark, tmp_path):
    out = tmp_path / "json"
    r = run_cli("export", str(LOGDIR / "orders-1"), str(LOGDIR / "legacy-0"), "--output-format", "json", "-o", str(out))
    assert r.code == 0, r.err
    assert r.out.startswith("exported ")
    files = sorted(out.glob("topic=*/partition=*/part-*.json"))
    rows = {f.parent.parent.name: [json.loads(line) for line in f.read_text().splitlines()] for f in files}
    # Spark's JSON writer leaves null fields out: legacy v0 records have no timestamp; topic and partition
    # are in the directory names and (--schema spark-kafka, the default) in every line
    assert set(rows) == {"topic=orders", "topic=legacy"}
    assert all(f"topic={r['topic']}" == d for d, rs in rows.items() for r in rs)
    assert all(r["timestamp"].endswith("Z") for r in rows["topic=orders"])
    assert any("timestamp" not in r for r in rows["topic=legacy"])
    import pyspark  # noqa: F401  (Spark reads the JSON export back as one table)
    back = spark.read.json(str(out))
    assert back.count() == sum(len(rs) for rs in rows.values())
    assert {"topic", "partition", "offset", "cluster_id"} <= set(back.columns)
    want = dump_log_records(str(LOGDIR / "orders-1"), str(LOGDIR / "legacy-0"))
    assert_same_records(table_records(read_json_lines(out)), want)


def test_export_read_committed_drops_aborted_records(spark, tmp_path):
    out = tmp_path / "committed"
    r = run_cli("export", str(LOGDIR / "payments-0"), "--isolation", "read_committed", "-o", str(out))
    assert r.code == 0, r.err
    t = read_parquet(out).sort_by("offset")
    assert list(zip(t.column("offset").to_pylist(), t.column("value").to_pylist())) == consumer_view(
        LOGDIR / "payments-0")


@needs_corpus
def test_export_of_the_real_corpus_equals_dump_log(spark, tmp_path):
    """Every real broker directory of shared/corpus/real at once (several brokers, replicated partitions,
    KRaft and ZooKeeper mode): exported rows, read back from Parquet, are dump-log's records."""
    out = tmp_path / "corpus"
    r = run_cli("export", str(CORPUS), "--output", str(out), "--format", "json")
    assert r.code == 0, r.err
    want = dump_log_records(str(CORPUS))
    summary = json.loads(r.out.splitlines()[0])
    assert summary["rows"] == len(want) > 50000 and summary["problems"] == 0
    assert_same_records(table_records(read_parquet(out)), want)


def test_a_spark_failure_is_one_line_and_exit_status_3(spark, tmp_path):
    """A real failure inside Spark (its executors are told to run a Python that does not exist) is reported
    in one line, with exit status 3, and nothing appears at the output path; the session's work
    directory (the driver's log configuration) is removed although Spark failed while starting."""
    temp = tmp_path / "temp"
    temp.mkdir()
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "export", str(LOGDIR / "orders-0"), "--output",
                        str(tmp_path / "out"), "--master", "local[1]"],
                       env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON="/nonexistent/python3",
                                TMPDIR=str(temp)),
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert [p.name for p in temp.iterdir() if p.name.startswith("kafkalog-spark-")] == []
    shutil.rmtree(temp)                 # whatever else used TMPDIR is not this test's business
    assert r.returncode == 3, r.stderr[-3000:]
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("kafkalog: starting Spark (master local[1])")
    assert lines[1].startswith("kafkalog: Spark failed: ") and "/nonexistent/python3" in lines[1]
    assert len(lines) == 2, r.stderr
    assert list(tmp_path.iterdir()) == []
    r = run_cli("export", str(LOGDIR), "-o", str(tmp_path / "x"), "--master", "nonsense://x")
    assert r.code == 2 and "is not a Spark master URL" in r.err


def test_a_full_disk_is_one_line_in_the_systems_words_and_no_output(spark, tmp_path):
    """A disk that fills while the executors write: exit status 3, one line naming the file and the
    system's reason (Python's ``OSError: [Errno 28] ... 'FILE'`` before), nothing at the output path and
    no hidden temporary directory left beside it."""
    from mounts import fill, tmpfs
    with tmpfs(tmp_path / "small", "256k") as small:
        filler = fill(small)
        os.truncate(filler, filler.stat().st_size - 48 * 1024)      # room for a few files, not the export
        r = run_cli("export", str(LOGDIR), "-o", str(small / "out"))
        assert r.code == 3, r.err
        line = [ln for ln in r.err.splitlines() if "Spark failed" in ln]
        assert len(line) == 1 and "No space left on device" in line[0], r.err
        assert "Errno" not in r.err and "OSError" not in r.err, r.err
        assert sorted(p.name for p in small.iterdir()) == ["filler"]


def test_a_ctrl_c_while_spark_stops_after_publishing_keeps_the_export_and_its_status(spark, tmp_path,
                                                                                  monkeypatch):
    """Found by the interrupt test at 10 s: the export was renamed into place, then the Ctrl-C came while
    Spark stopped; the run said 'interrupted' and exited 130 over a complete export (and the cleanup of an
    interrupted run would have deleted an object-storage export's objects). A published export is done:
    the run ends with its own status and says the work was complete."""
    from kafkalog_cli.spark import session
    stop = session.Session.__exit__

    def stop_then_ctrl_c(self, kind, value, tb):
        stop(self, kind, value, tb)
        if kind is None:
            raise KeyboardInterrupt
    monkeypatch.setattr(session.Session, "__exit__", stop_then_ctrl_c)
    out = tmp_path / "out"
    r = run_cli("export", str(LOGDIR / "orders-0"), "-o", str(out))
    assert r.code == 0, r.err
    assert "had completed its work" in r.err and (out / "_SUCCESS").is_file()
    assert read_parquet(out).num_rows == len(dump_log_records(str(LOGDIR / "orders-0")))


def test_a_crash_while_publishing_leaves_no_partial_output(tmp_path):
    """The driver is killed (fileops fault injection, KAFKALOG_FAULT_AFTER) after the tasks have written
    everything, while it publishes: nothing is at the output path, the complete output waits in the hidden
    directory beside it. (The executors' Python workers get a limit they never reach.)"""
    require_spark()
    out = tmp_path / "out"
    env = dict(os.environ, KAFKALOG_FAULT_AFTER="3", SPARK_LOCAL_IP="127.0.0.1")
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "export", str(LOGDIR / "orders-0"), "-o", str(out),
                        "--master", "local[1]", "--spark-conf", "spark.executorEnv.KAFKALOG_FAULT_AFTER=1000000"],
                       env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 137, r.stderr[-3000:]
    assert not out.exists()
    [hidden] = [p for p in tmp_path.iterdir() if p.name.startswith(".out.kafkalog-tmp-")]
    assert (hidden / "_kafkalog_manifest.json").exists() and list(hidden.rglob("part-*.parquet"))
    assert not (hidden / "_SUCCESS").exists()
