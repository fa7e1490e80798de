"""What data engineers try first reads an export: pandas, polars, DuckDB, pyarrow.dataset and Spark, each on
an export with an ``_errors`` table beside the data (a segment with a bad CRC), each giving exactly the
records dump-log prints for the same files.

``pandas.read_parquet(OUTPUT)`` failed with "Unable to merge: Field topic has incompatible types: string vs
dictionary" while topic and partition were written inside the files as well as in the hive directories:
pyarrow, under pandas, types a directory column as a dictionary. The directory columns are now in the
directory names only. polars and DuckDB are pointed at the data files (``OUTPUT/topic=*/**/*.parquet``): a
directory read would take the manifest and the ``_errors`` table for data.
"""
from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES, assert_same_records, dump_log_records, run_cli, table_records

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    src = tmp_path_factory.mktemp("logs")
    for name in ("orders-0", "orders-1", "payments-0"):
        shutil.copytree(FIXTURES / "logdir" / name, src / name)
    shutil.copytree(FIXTURES / "damaged" / "flipped-crc-byte" / "orders-0", src / "damaged-0")
    out = src.parent / "out"
    return src, out


@pytest.fixture(scope="module")
def exported(export, spark):
    src, out = export
    spark.ensure()                                  # the export runs in this process, on the live session
    r = run_cli("export", str(src), "-o", str(out))
    assert r.code == 1, r.err                       # the bad CRC: a row of _errors
    assert list((out / "_errors").glob("*.parquet"))
    return out, dump_log_records(str(src))


def normalized(table):
    """An Arrow table of any reader with the timestamp in microseconds (pandas gives nanoseconds)."""
    import pyarrow as pa
    i = table.schema.get_field_index("timestamp")
    return table.set_column(i, "timestamp", table.column("timestamp").cast(pa.timestamp("us", tz="UTC")))


def valid_only(want: list, out) -> list:
    """dump-log prints the records of a batch whose CRC fails; the export leaves them out (a row of _errors
    with the batch's first offset and its record count)."""
    import pyarrow.dataset as ds
    errors = ds.dataset(str(out / "_errors")).to_table().to_pylist()
    bad = {(e["file"], e["offset"] + i) for e in errors if e["kind"] == "crc_mismatch" for i in range(e["records"])}
    assert bad
    return [w for w in want if (w[0], w[1]) not in bad]


def test_pandas_read_parquet(exported):
    import pandas as pd
    import pyarrow as pa
    out, want = exported
    df = pd.read_parquet(out)
    assert_same_records(table_records(normalized(pa.Table.from_pandas(df, preserve_index=False))),
                        valid_only(want, out))


def test_polars_read_and_scan_with_hive_partitioning(exported):
    pl = pytest.importorskip("polars", reason="polars is not installed: pip install -e '.[test]'")
    out, want = exported
    want = valid_only(want, out)
    files = f"{out}/topic=*/**/*.parquet"
    read = pl.read_parquet(files, hive_partitioning=True)
    assert_same_records(table_records(normalized(read.to_arrow())), want)
    scanned = pl.scan_parquet(files, hive_partitioning=True).collect()
    assert_same_records(table_records(normalized(scanned.to_arrow())), want)
    # with the directory columns' types given, as a reader should for a topic named only with digits
    typed = pl.scan_parquet(files, hive_partitioning=True,
                            hive_schema={"topic": pl.String, "partition": pl.Int32}).collect()
    assert typed.schema["partition"] == pl.Int32 and typed.height == len(want)


def test_duckdb_read_parquet_with_hive_partitioning(exported):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed: pip install -e '.[test]'")
    out, want = exported
    table = duckdb.read_parquet(f"{out}/topic=*/**/*.parquet", hive_partitioning=True).arrow()
    if hasattr(table, "read_all"):               # a RecordBatchReader in newer releases
        table = table.read_all()
    assert_same_records(table_records(normalized(table)), valid_only(want, out))


def test_pyarrow_dataset(exported):
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq
    out, want = exported
    want = valid_only(want, out)
    assert_same_records(table_records(ds.dataset(out, partitioning="hive").to_table()), want)
    assert_same_records(table_records(pq.read_table(out)), want)


def test_spark_read_parquet(exported, spark):
    out, want = exported
    df = spark.read.parquet(str(out))
    table = df.toArrow() if hasattr(df, "toArrow") else None
    if table is None:                                # pyspark 3.5
        import pyarrow as pa
        table = pa.Table.from_pandas(df.toPandas(), preserve_index=False)
    assert_same_records(table_records(normalized(table)), valid_only(want, out))
