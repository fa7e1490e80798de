"""The columns of a read: names, Arrow types, the Spark DDL and ``schema=spark-kafka``'s layout. pyarrow, no
Spark. Shared by the readers (``rows``, ``rows_pure``, ``rows_native``), the decoders (``decode``) and the data
source, so none of them imports another for the schema.
"""
from __future__ import annotations

import pyarrow as pa

ROWS_PER_BATCH = 65536
BYTES_PER_BATCH = 16 * 1024 * 1024

HEADER_TYPE = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

#: name -> Arrow type, in the schema's order (equal to pyspark's to_arrow_schema of the DDL below).
COLUMNS = {
    "topic": pa.string(), "partition": pa.int32(), "offset": pa.int64(), "timestamp": TIMESTAMP_TYPE,
    "timestamp_type": pa.string(), "key": pa.binary(), "value": pa.binary(), "headers": HEADER_TYPE,
    "producer_id": pa.int64(), "producer_epoch": pa.int32(), "sequence": pa.int32(),
    "partition_leader_epoch": pa.int32(), "is_transactional": pa.bool_(), "is_control": pa.bool_(),
    "codec": pa.string(), "segment": pa.string(), "batch_position": pa.int64(), "log_dir": pa.string(),
    "cluster_id": pa.string(), "node_id": pa.int32(),
}
#: with a key/value decoder (``keyDecoder``/``valueDecoder``/``decoder``)
DECODED_COLUMNS = {"key_decoded": pa.string(), "value_decoded": pa.string()}
#: Spark's Kafka source: ``timestampType`` is Kafka's ``TimestampType.id`` (0 CreateTime, 1 LogAppendTime,
#: -1 NoTimestampType for magic 0 messages)
TIMESTAMP_TYPE_IDS = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}
SPARK_KAFKA_ONLY = {"timestampType": pa.int32()}
ALL_COLUMNS = {**COLUMNS, **DECODED_COLUMNS, **SPARK_KAFKA_ONLY}
#: ``schema=spark-kafka``: exactly the columns and types of Spark's Kafka source (KafkaRecordToRowConverter,
#: Spark 3.x-4.x, with includeHeaders), then kafkalog's own (not its text timestamp_type)
SPARK_KAFKA_HEAD = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")
SPARK_KAFKA_COLUMNS = SPARK_KAFKA_HEAD + tuple(c for c in COLUMNS if c not in SPARK_KAFKA_HEAD
                                               and c != "timestamp_type")


def columns_of(schema: str, decodes: bool = False) -> tuple:
    """The columns of a schema name (``spark-kafka`` or ``kafkalog``), decoded columns last."""
    base = SPARK_KAFKA_COLUMNS if schema == "spark-kafka" else tuple(COLUMNS)
    return base + (tuple(DECODED_COLUMNS) if decodes else ())
ARROW_SCHEMA = pa.schema(list(COLUMNS.items()))
DDL = ("topic string, partition int, offset long, timestamp timestamp, timestamp_type string, key binary, "
       "value binary, headers array<struct<key:string,value:binary>>, producer_id long, producer_epoch int, "
       "sequence int, partition_leader_epoch int, is_transactional boolean, is_control boolean, codec string, "
       "segment string, batch_position long, log_dir string, cluster_id string, node_id int")
DECODED_DDL = "key_decoded string, value_decoded string"

# Spark's TimestampType covers years 0001..9999; other millisecond values become null.
MIN_TS_MS, MAX_TS_MS = -62135596800000, 253402300799999


def schema_for(columns: list[str]) -> pa.Schema:
    return pa.schema([(c, ALL_COLUMNS[c]) for c in columns])
