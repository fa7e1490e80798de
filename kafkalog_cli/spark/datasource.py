"""The PySpark data source ``kafkalog`` (Spark 4's Python Data Source API): one row per record.

    df = spark.read.format("kafkalog").load("/var/lib/kafka/data")          # registered by itself
    df.where("topic = 'orders' and offset >= 1000").select("offset", "value")
    errors = spark.read.format("kafkalog").option("table", "errors").load("/var/lib/kafka/data")

Registration: installing kafkalog installs the top-level module ``pyspark_kafkalog``, whose
``DefaultSource`` Spark registers in every session on the first use of a Python data source (Spark's
``lookup_data_sources`` worker imports every ``pyspark_*`` module it finds). Where kafkalog is not
installed in the Python that Spark's workers run (an editable install, a zip on ``--py-files``),
``register(spark)`` does it; without either, Spark answers ``DATA_SOURCE_NOT_FOUND``.

Filter pushdown: ``pushFilters`` takes conditions on ``topic`` (=, IN, LIKE 'prefix%'), ``partition``,
``offset``, ``timestamp`` (=, <, <=, >, >=, IN), ``cluster_id`` and ``node_id`` (=, IN): segments of other
partitions and log directories are not read, offset and time ranges skip segments and batches, and
Spark does not evaluate those conditions again. Spark calls it only with
``spark.sql.python.filterPushdown.enabled=true`` (Spark 4.1+; sessions kafkalog creates set it, and
``register`` sets it in yours); with it off, reads still work and Spark filters every row itself.
(Spark refuses to plan a reader that defines ``pushFilters`` while that setting is off; the reader's
``pushFilters`` is therefore presented to that check as the base class's, see ``_Pushdown``.)

Columns: Spark's Python Data Source API does not tell a source which columns a query uses, so every
column is built unless the read names its own: ``.option("columns", "offset,timestamp,value")`` or
``.schema("offset long, value binary")`` (only those are built; the offset and key/value are the costly
ones).

Options: see ``kafkalog_cli.spark.options``. Input partitions: one per segment, large segments cut at
offset-index entries (``kafkalog_cli.spark.plan``); ``read()`` yields Arrow record batches
(``kafkalog_cli.spark.rows``). Where the code runs (shared/docs/spark-findings.md §2): ``schema()``,
``reader()``, ``pushFilters()`` and ``partitions()`` in a Python worker on the driver machine, ``read()``
on executors; nothing here holds an open file or lock between calls, so the reader pickles.
"""
from __future__ import annotations

import functools
import glob
from datetime import datetime, timezone

from pyspark.sql.datasource import (DataSource, DataSourceReader, EqualTo, GreaterThan, GreaterThanOrEqual, In,
                                    InputPartition, IsNotNull, LessThan, LessThanOrEqual, StringStartsWith)
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

from .options import OptionError, ReadOptions, paths_option
from .problems import ERROR_COLUMNS
from .schema import ALL_COLUMNS, COLUMNS, DECODED_COLUMNS, columns_of

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def _struct(columns: dict) -> StructType:
    """The Spark schema of Arrow columns (``pyspark.sql.pandas.types.to_arrow_schema`` of it gives them back,
    which is what Spark checks each batch against)."""
    return StructType([StructField(name, _spark_type(t)) for name, t in columns.items()])


def _spark_type(t):
    import pyarrow as pa
    if pa.types.is_timestamp(t):
        return TimestampType()
    if pa.types.is_list(t):
        return ArrayType(_struct({f.name: f.type for f in t.value_type}))
    return {pa.string(): StringType(), pa.int32(): IntegerType(), pa.int64(): LongType(), pa.binary(): BinaryType(),
            pa.bool_(): BooleanType()}[t]


SCHEMA = _struct(COLUMNS)
DECODED_SCHEMA = _struct({**COLUMNS, **DECODED_COLUMNS})
ERRORS_SCHEMA = _struct(ERROR_COLUMNS)
#: ``schema=spark-kafka``: Spark's Kafka source columns first (the default when the read names its topics
#: with subscribe, subscribePattern or assign, as a ``format("kafka")`` job does)
SPARK_KAFKA_SCHEMA = _struct({c: ALL_COLUMNS[c] for c in columns_of("spark-kafka")})
SPARK_KAFKA_DECODED_SCHEMA = _struct({c: ALL_COLUMNS[c] for c in columns_of("spark-kafka", True)})


def full_schema(opts: ReadOptions) -> StructType:
    """The records' schema of a read: spark-kafka or kafkalog (option ``schema``; by default spark-kafka when
    Spark's option names choose the topics), with the decoded columns when a decoder is given."""
    spark_kafka = opts.schema == "spark-kafka" or (opts.schema is None and opts.spark_kafka_names)
    if spark_kafka:
        return SPARK_KAFKA_DECODED_SCHEMA if opts.decodes else SPARK_KAFKA_SCHEMA
    return DECODED_SCHEMA if opts.decodes else SCHEMA


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafkalog").load(PATH)``: the records of Kafka log directories."""

    @classmethod
    def name(cls) -> str:
        return "kafkalog"

    def schema(self) -> StructType:
        opts = ReadOptions.from_options(self.options)
        if opts.table == "errors":
            return ERRORS_SCHEMA
        full = full_schema(opts)
        wanted = _columns_option(self.options)
        if wanted is None:
            return full
        fields = {f.name: f for f in full.fields}
        unknown = [c for c in wanted if c not in fields]
        if unknown:
            raise OptionError(f"columns: {', '.join(unknown)} not provided by format 'kafkalog'; its columns are "
                              f"{', '.join(fields)}")
        return StructType([fields[c] for c in wanted])

    def reader(self, schema: StructType) -> "KafkaLogReader":
        return KafkaLogReader(dict(self.options), schema)


def _columns_option(options) -> list[str] | None:
    o = {k.lower(): v for k, v in options.items()}
    text = o.get("columns")
    if not text:
        return None
    return [c.strip() for c in text.split(",") if c.strip()]


class _Pushdown:
    """``pushFilters`` of ``KafkaLogReader``. Spark (4.1-4.3, ``plan_data_source_read``) refuses to plan a
    reader whose ``pushFilters`` is not the base class's while ``spark.sql.python.filterPushdown.enabled``
    is off, so every read in a session without that setting would fail, although this source gives the same
    rows either way (pushed conditions only skip data). The bound method is therefore presented with the
    base class's ``__func__``: with the setting on, Spark calls it and pushes filters; with it off, Spark
    filters itself and never calls it."""

    __func__ = DataSourceReader.pushFilters

    def __init__(self, fn) -> None:
        self.fn = fn

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        bound = functools.partial(self.fn, obj)
        bound.__func__ = DataSourceReader.pushFilters
        return bound


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict, schema: StructType) -> None:
        self.opts = ReadOptions.from_options(options)
        if self.opts.on_error == "quarantine":
            raise OptionError("onError: quarantine writes a second table and is for kafkalog export; with the "
                              "data source read the problems with option table=errors")
        self.paths = paths_option(options)
        self.columns = _columns(schema, self.opts)
        self.pushed: list = []

    def _push_filters(self, filters):
        """Narrow the read by the conditions it can evaluate exactly; give back the others (Spark then
        evaluates them)."""
        for f in filters:
            got = _condition(f, errors_table=self.opts.table == "errors")
            if got is None:
                yield f
                continue
            kw, exact = got
            if kw:
                self.opts = self.opts.narrowed(**kw)
            self.pushed.append(repr(f))
            if not exact:
                yield f

    pushFilters = _Pushdown(_push_filters)

    def partitions(self):
        from .plan import plan_ranges
        ranges = plan_ranges(self.paths, self.opts).ranges
        # Spark needs at least one partition; an empty one reads nothing.
        return [InputPartition(r) for r in ranges] or [InputPartition(None)]

    def read(self, partition: InputPartition):
        rng = partition.value
        if rng is None:
            return
        from .storage import local_view
        with local_view(rng) as (view, back):       # object storage: what the range needs, by ranged reads
            if self.opts.table == "errors":
                yield from _errors(view, self.opts, back)
                return
            from .rows import read_range
            yield from read_range(view, self.opts, self.columns)


def _errors(rng, opts, back=lambda name: name):
    from . import problems as P
    from .rows import read_range
    sink = P.ReadSink("skip")
    found = P.segment_problems(rng, opts.max_decompressed_bytes) if rng.first else []
    for _ in read_range(rng, opts, [], sink=sink):
        pass
    found = [p._replace(file=back(p.file)) for p in found + sink.problems]
    if found:
        yield P.errors_batch(rng, found)


def _columns(schema: StructType, opts: ReadOptions) -> list[str]:
    """The requested columns, each of which must be one of ours with our type."""
    if opts.table == "errors":
        if schema != ERRORS_SCHEMA:
            raise OptionError("table=errors has a fixed schema; select columns from the DataFrame instead")
        return []
    full = full_schema(opts)
    ours = {f.name: f.dataType for f in full.fields}
    out = []
    for f in schema.fields:
        if f.name not in ours:
            hint = " (add a decoder option for it)" if f.name in DECODED_COLUMNS else ""
            raise OptionError(f"column '{f.name}' is not provided by format 'kafkalog'{hint}; its columns are "
                              f"{', '.join(ours)}")
        if f.dataType != ours[f.name]:
            raise OptionError(f"column '{f.name}' has type {ours[f.name].simpleString()} in format 'kafkalog', "
                              f"not {f.dataType.simpleString()}")
        out.append(f.name)
    return out


# --- filters -> read options ---------------------------------------------------------------------------

_RANGE = (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)


def _condition(f, errors_table: bool = False):
    """(options to narrow by, whether that is the whole condition) for a pushed filter, or None."""
    if len(f.attribute) != 1:
        return None
    col = f.attribute[0]
    if isinstance(f, IsNotNull):
        return ({}, True) if col in ("topic", "offset") and not errors_table else None
    value = getattr(f, "value", None)
    if col == "topic":
        if isinstance(f, EqualTo) and isinstance(value, str):
            return {"topic_groups": (glob.escape(value),)}, True
        if isinstance(f, In) and value and all(isinstance(v, str) for v in value):
            return {"topic_groups": tuple(glob.escape(v) for v in value)}, True
        if isinstance(f, StringStartsWith) and isinstance(value, str):
            return {"topic_groups": (glob.escape(value) + "*",)}, True
        return None
    if col == "partition":
        ranges = _int_ranges(f, value, 0, (1 << 31) - 1)
        return None if ranges is None else ({"partition_groups": ranges}, True)
    if col in ("cluster_id", "node_id"):
        kind = str if col == "cluster_id" else int
        values = [value] if isinstance(f, EqualTo) else list(value) if isinstance(f, In) else None
        if not values or not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
            return None
        return {col + "s": frozenset(values)}, True
    if errors_table:
        return None
    if col == "offset":
        if isinstance(f, In):
            if not value or not all(isinstance(v, int) for v in value):
                return None
            return {"from_offset": min(value), "to_offset": max(value)}, False
        if not isinstance(f, _RANGE) or not isinstance(value, int) or isinstance(value, bool):
            return None
        return _bounds(f, value, value, value), True
    if col == "timestamp":
        if isinstance(f, In):
            us = [_micros(v) for v in value or ()]
            if not us or None in us:
                return None
            return {"from_timestamp": -(-min(us) // 1000), "to_timestamp": max(us) // 1000}, False
        us = _micros(value)
        if us is None or not isinstance(f, _RANGE):
            return None
        # record times are whole milliseconds: t*1000 > X  <=>  t >= X//1000 + 1, and so on
        return _bounds(f, -(-us // 1000), us // 1000, None, strict_lo=us // 1000 + 1,
                       strict_hi=-(-us // 1000) - 1, time=True), True
    return None


def _bounds(f, ge: int, le: int, eq, strict_lo: int | None = None, strict_hi: int | None = None,
            time: bool = False) -> dict:
    """Inclusive from/to for one comparison: ``ge`` the least value >= the literal, ``le`` the greatest <= it."""
    lo_key, hi_key = ("from_timestamp", "to_timestamp") if time else ("from_offset", "to_offset")
    if strict_lo is None:
        strict_lo, strict_hi = ge + 1, le - 1
    if isinstance(f, EqualTo):
        return {lo_key: ge, hi_key: le}
    if isinstance(f, GreaterThan):
        return {lo_key: strict_lo}
    if isinstance(f, GreaterThanOrEqual):
        return {lo_key: ge}
    if isinstance(f, LessThan):
        return {hi_key: strict_hi}
    return {hi_key: le}


def _int_ranges(f, value, lo: int, hi: int):
    """Inclusive ranges of ints matching a comparison on an int column, or None."""
    if isinstance(f, In):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return None
        return tuple((v, v) for v in sorted(set(value)) if lo <= v <= hi) or ((1, 0),)
    if not isinstance(f, _RANGE) or not isinstance(value, int) or isinstance(value, bool):
        return None
    b = _bounds(f, value, value, value)
    a, z = b.get("from_offset", lo), b.get("to_offset", hi)
    a, z = max(a, lo), min(z, hi)
    return ((a, z),) if a <= z else ((1, 0),)


def _micros(value) -> int | None:
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return (value - datetime(1970, 1, 1, tzinfo=timezone.utc)) // _MICRO


_MICRO = __import__("datetime").timedelta(microseconds=1)


def register(spark) -> None:
    """Make ``spark.read.format("kafkalog")`` available in this session (where the installed
    ``pyspark_kafkalog`` module did not already), and turn on Spark's filter pushdown for Python data
    sources (``spark.sql.python.filterPushdown.enabled``)."""
    spark.dataSource.register(KafkaLogDataSource)
    try:
        spark.conf.set(PUSHDOWN_CONF, "true")
    except Exception:                 # noqa: BLE001 - Spark before 4.1 has no such setting: no pushdown
        pass
