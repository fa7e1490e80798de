"""Spark's Kafka source schema and option names (local Spark, the shared session).

``kafkalog export`` writes Spark's Kafka source columns by default; topic and partition are the hive
directories, so ``spark.read.parquet(OUTPUT)`` gives that schema's columns and types with the directory
columns last (a topic named ``00123`` beside other topics stays a string); the data source accepts
``subscribe``, ``subscribePattern``, ``assign``, ``startingOffsets``/``endingOffsets`` JSON,
``startingTimestamp`` and ``kafka.isolation.level`` with Spark's meanings, checked against the records
dump-log prints for the same files.
"""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, assert_same_records, consumer_view, dump_log_records, run_cli, table_records

pytestmark = pytest.mark.spark

LOGDIR = FIXTURES / "logdir"
#: Spark's Kafka source (KafkaRecordToRowConverter, includeHeaders=true), Spark 3.x and 4.x
KAFKA_SOURCE = ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
                "timestampType:int,headers:array<struct<key:string,value:binary>>")


def test_spark_read_parquet_gives_the_kafka_source_schema(spark, tmp_path):
    src = tmp_path / "logs"
    src.mkdir()
    shutil.copytree(LOGDIR / "orders-0", src / "00123-0")          # a topic whose name looks like a number
    shutil.copytree(LOGDIR / "payments-0", src / "payments-0")
    out = tmp_path / "out"
    r = run_cli("export", str(src), "-o", str(out), "--format", "json")
    assert r.code == 0, r.err
    df = spark.read.parquet(str(out))
    fields = [f"{f.name}:{f.dataType.simpleString()}" for f in df.schema.fields]
    kafka = KAFKA_SOURCE[len("struct<"):].split(",", 7)               # 8 columns (the last, headers, has commas)
    assert fields[:6] == [f for f in kafka if not f.startswith(("topic:", "partition:"))]
    assert fields[6] == "producer_id:bigint" and "timestamp_type" not in df.columns
    assert fields[-2:] == ["topic:string", "partition:int"]          # the directory columns, last
    topics = {row.topic for row in df.select("topic").distinct().collect()}
    assert topics == {"00123", "payments"}
    got = table_records(df.toArrow() if hasattr(df, "toArrow") else _arrow(df))
    want = dump_log_records(str(src))
    # the records are dump-log's, whose topic for the copy is the directory's
    assert_same_records(got, want)
    types = {(row.timestampType,) for row in df.select("timestampType").distinct().collect()}
    assert types <= {(0,), (1,), (-1,)} and types


def test_an_append_keeps_the_layout_of_an_earlier_export(spark, tmp_path):
    """Exports made before the manifest recorded its layout held topic and partition inside the files too;
    an append to one keeps doing so (a new export does not)."""
    import pyarrow.parquet as pq
    out = tmp_path / "out"
    r = run_cli("export", str(LOGDIR / "orders-0"), "-o", str(out))
    assert r.code == 0, r.err
    manifest = json.loads((out / "_kafkalog_manifest.json").read_text())
    assert manifest["in_files"] == []
    assert all("topic" not in pq.read_schema(f).names for f in out.glob("topic=*/*/*.parquet"))
    del manifest["in_files"]                                     # as an earlier version wrote it
    (out / "_kafkalog_manifest.json").write_text(json.dumps(manifest))
    r = run_cli("export", str(LOGDIR / "orders-1"), "-o", str(out), "--mode", "append")
    assert r.code == 0, r.err
    added = list(out.glob("topic=orders/partition=1/*.parquet"))
    assert added and all({"topic", "partition"} <= set(pq.read_schema(f).names) for f in added)
    assert json.loads((out / "_kafkalog_manifest.json").read_text())["in_files"] == ["topic", "partition"]


def _arrow(df):
    import pyarrow as pa
    return pa.Table.from_pandas(df.toPandas())


def test_schema_kafkalog_keeps_the_earlier_layout(spark, tmp_path):
    out = tmp_path / "out"
    r = run_cli("export", str(LOGDIR / "orders-0"), "-o", str(out), "--schema", "kafkalog")
    assert r.code == 0, r.err
    import pyarrow.parquet as pq
    f = next(out.glob("topic=orders/partition=0/*.parquet"))
    names = pq.read_schema(f).names
    assert names[:3] == ["offset", "timestamp", "timestamp_type"] and "topic" not in names


def read(spark, **options):
    reader = spark.read.format("kafkalog")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(LOGDIR))


def offsets(df) -> list:
    return sorted((r.topic, r.partition, r.offset) for r in df.select("topic", "partition", "offset").collect())


def dumped(*topics: str) -> list:
    out = []
    for seg, off, _d in dump_log_records(*(str(p) for t in topics for p in sorted(LOGDIR.glob(f"{t}-*")))):
        name = seg.split("/")[-2]
        t, _, p = name.rpartition("-")
        out.append((t, int(p), off))
    return sorted(out)


def test_subscribe_gives_the_kafka_schema_and_dump_logs_records(spark):
    df = read(spark, subscribe="orders,payments", **{"kafka.bootstrap.servers": "ignored:9092"})
    assert df.schema.simpleString().startswith(KAFKA_SOURCE)
    assert offsets(df) == dumped("orders", "payments")
    assert read(spark, subscribePattern="pay.*").select("topic").distinct().collect()[0].topic == "payments"
    assert offsets(read(spark, subscribePattern="pay")) == []            # the whole name must match
    assert "timestamp_type" in read(spark, topic="orders").columns      # our option names: our schema


def test_assign_and_offsets_json(spark):
    want = [x for x in dumped("orders") if x[1] == 1]
    assert offsets(read(spark, assign=json.dumps({"orders": [1]}))) == want
    got = offsets(read(spark, subscribe="orders", startingOffsets=json.dumps({"orders": {"0": 5, "1": -2}}),
                       endingOffsets=json.dumps({"orders": {"0": 9, "1": -1}})))
    assert got == [x for x in dumped("orders") if x[1] == 1 or 5 <= x[2] < 9]     # ending is exclusive


def test_starting_timestamp_is_offsets_for_times(spark):
    import pyarrow as pa
    rows = [r for r in read(spark, subscribe="orders", schema="kafkalog").select("partition", "offset", "timestamp")
            .collect()]
    by_part: dict = {}
    for r in rows:
        by_part.setdefault(r.partition, []).append((r.offset, r.timestamp))
    ts = sorted(t for _o, t in by_part[0])[len(by_part[0]) // 2]
    ms = int(pa.scalar(ts, pa.timestamp("us", tz="UTC")).value // 1000)
    want = []
    for p, recs in by_part.items():
        recs.sort()
        first = next((o for o, t in recs if int(pa.scalar(t, pa.timestamp("us", tz="UTC")).value // 1000) >= ms), None)
        want += [("orders", p, o) for o, _t in recs if first is not None and o >= first]
    assert offsets(read(spark, subscribe="orders", startingTimestamp=str(ms))) == sorted(want) and want


def test_kafka_isolation_level(spark):
    df = read(spark, subscribe="payments", **{"kafka.isolation.level": "read_committed"})
    got = sorted((r.offset, bytes(r.value)) for r in df.select("offset", "value").collect())
    assert got == sorted(consumer_view(LOGDIR / "payments-0"))


@pytest.mark.parametrize("options, message", [
    ({"subscribe": "a", "assign": '{"a":[0]}'}, "only one of subscribe, subscribePattern and assign"),
    ({"subscribe": "a", "startingOffsets": "latest"}, "latest is not allowed in a batch read"),
    ({"subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, "-2 (earliest) is not allowed"),
    ({"assign": "[1,2]"}, "assign: expected JSON"),
    ({"subscribePattern": "("}, "is not a regular expression"),
])
def test_spark_option_errors(spark, options, message):
    from kafkalog_cli.spark.options import OptionError, ReadOptions
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ReadOptions.from_options(options)
