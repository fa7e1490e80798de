"""The PySpark data source ``kafkalog`` (Spark 4's Python Data Source API): one row per record.

    from kafkalog_cli.spark.datasource import register
    register(spark)
    df = (spark.read.format("kafkalog")
          .option("topic", "orders*").option("isolation", "read_committed")
          .load("/var/lib/kafka/data"))

Options: see ``kafkalog_cli.spark.options``. Input partitions: one per segment, large segments cut at
offset-index entries (``kafkalog_cli.spark.plan``); ``read()`` yields Arrow record batches
(``kafkalog_cli.spark.rows``). Schema pruning: give a subset of the columns with
``spark.read.format("kafkalog").schema("offset long, value binary")`` and only those are built.

Where the code runs (measured, shared/docs/spark-findings.md §2): ``schema()``, ``reader()`` and
``partitions()`` in a Python worker on the driver machine, ``read()`` on executors. Nothing here holds
an open file or lock between calls, so the reader pickles.
"""
from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

from .options import OptionError, ReadOptions, paths_option

SCHEMA = StructType([
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestamp_type", StringType()),
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                 StructField("value", BinaryType())]))),
    StructField("producer_id", LongType()),
    StructField("producer_epoch", IntegerType()),
    StructField("sequence", IntegerType()),
    StructField("partition_leader_epoch", IntegerType()),
    StructField("is_transactional", BooleanType()),
    StructField("is_control", BooleanType()),
    StructField("codec", StringType()),
    StructField("segment", StringType()),
    StructField("batch_position", LongType()),
    StructField("log_dir", StringType()),
])


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafkalog").load(PATH)``: the records of Kafka log directories."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> "KafkaLogReader":
        return KafkaLogReader(dict(self.options), schema)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict, schema: StructType) -> None:
        self.opts = ReadOptions.from_options(options)
        lowered = {k.lower(): v for k, v in options.items()}
        self.plan_json = lowered.get("_plan")
        self.paths = paths_option(options)
        self.columns = _columns(schema)

    def partitions(self):
        from .plan import plan_ranges, ranges_from_json
        ranges = ranges_from_json(self.plan_json) if self.plan_json else plan_ranges(self.paths, self.opts).ranges
        # Spark needs at least one partition; an empty one reads nothing.
        return [InputPartition(r) for r in ranges] or [InputPartition(None)]

    def read(self, partition: InputPartition):
        if partition.value is None:
            return
        from .rows import read_range
        yield from read_range(partition.value, self.opts, self.columns)


def _columns(schema: StructType) -> list[str]:
    """The requested columns, each of which must be one of ours with our type."""
    ours = {f.name: f.dataType for f in SCHEMA.fields}
    out = []
    for f in schema.fields:
        if f.name not in ours:
            raise OptionError(f"column '{f.name}' is not provided by format 'kafkalog'; its columns are "
                              f"{', '.join(ours)}")
        if f.dataType != ours[f.name]:
            raise OptionError(f"column '{f.name}' has type {ours[f.name].simpleString()} in format 'kafkalog', "
                              f"not {f.dataType.simpleString()}")
        out.append(f.name)
    return out


def register(spark) -> None:
    """Make ``spark.read.format("kafkalog")`` available in this session."""
    spark.dataSource.register(KafkaLogDataSource)
