"""Files of an export, written by each Spark task with pyarrow: Parquet or JSON lines, in Hive-style
partition directories (``topic=orders/partition=0/[date=2024-05-01/]part-....parquet``), rolled at a
target size. No Spark here.

Spark's own readers read the result as one table (``spark.read.parquet(out)``, partition columns from
the directory names, directories starting with ``_`` ignored); so do pandas (``pandas.read_parquet(out)``),
pyarrow (``pyarrow.dataset`` with ``partitioning="hive"``), polars and DuckDB (hive partitioning over
``out/topic=*/**/*.parquet``) and Trino. A partition column is in the directory names only: where a file
holds it too, pandas and ``pyarrow.parquet.read_table`` refuse the export (the directory's inferred
dictionary type against the file's string). ``in_files`` keeps such columns inside the files for appends to
exports written that way before. Parquet: snappy, timestamps as INT64 microseconds adjusted to UTC. JSON lines
are what Spark's JSON writer gives for the same columns: binary as base64, timestamps as ISO-8601 with
``Z``, null fields left out.

Each file is written under a temporary name and renamed when complete (a retried or speculative task
rewrites the same names with the same content), and fsynced before the rename (``fileops``).
"""
from __future__ import annotations

import base64
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import fileops

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"          # Spark's name for a null partition value
PARTITION_COLUMNS = ("topic", "partition", "date")
DAY_US = 86_400_000_000
#: columns with few distinct values per file: dictionary-encoded (keys, values and headers are not: trying
#: costs as much as writing them, for nothing)
DICTIONARY_COLUMNS = ("timestamp_type", "codec", "segment", "log_dir", "cluster_id", "node_id", "producer_id",
                      "producer_epoch", "partition_leader_epoch", "is_transactional", "is_control", "topic",
                      "partition", "severity", "kind", "file", "problem")
#: min/max statistics where readers prune row groups with them (offset and time ranges)
STATISTICS_COLUMNS = ("offset", "timestamp", "batch_position", "position")


def escape_path_name(value: str) -> str:
    """Spark's ``ExternalCatalogUtils.escapePathName``: %XX for characters a path or Hive cannot hold."""
    out = []
    for ch in value:
        if ch < " " or ch in '"#%\'*/:=?\\\x7f{[]^':
            out.append(f"%{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


def partition_dir(names: tuple, values: tuple) -> str:
    parts = []
    for name, value in zip(names, values):
        text = DEFAULT_PARTITION if value is None or value == "" else escape_path_name(str(value))
        parts.append(f"{name}={text}")
    return "/".join(parts)


class TableWriter:
    """The files one task writes into one table (the records, ``_errors`` or ``_quarantine``) under
    ``root``: one open file per partition directory, a new one each ``target_bytes``."""

    def __init__(self, root: str, fmt: str, partition_by: tuple, target_bytes: int, prefix: str,
                 in_files: tuple = ()) -> None:
        self.root = Path(root)
        self.fmt = fmt
        self.partition_by = tuple(partition_by)
        self.dropped = tuple(c for c in self.partition_by if c not in in_files)   # in the directory names only
        self.target_bytes = target_bytes
        self.prefix = prefix
        self.open: dict = {}               # partition dir -> _File
        self.done: list = []               # (relative path, rows, bytes)
        self.seq = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        if "date" in self.partition_by:
            for day, part in _split_by_day(batch):
                self._write(part, day)
        else:
            self._write(batch, None)

    def _write(self, batch: pa.RecordBatch, day) -> None:
        values = []
        for name in self.partition_by:
            if name == "date":
                values.append(day)
            else:
                values.append(batch.column(name)[0].as_py())
        key = partition_dir(self.partition_by, tuple(values)) if self.partition_by else ""
        data = batch
        if self.dropped:
            keep = [i for i, name in enumerate(batch.schema.names) if name not in self.dropped]
            data = pa.RecordBatch.from_arrays([batch.column(i) for i in keep],
                                              schema=pa.schema([batch.schema.field(i) for i in keep]))
        # written in slices that fit the room left in the file (estimated from the rows' size in memory,
        # which encoding only shrinks), so that files end near --target-file-size whatever the batch size;
        # a file is complete once within an eighth of the target
        rows = data.num_rows
        row_bytes = max(1.0, data.nbytes / max(1, rows))
        at = 0
        while at < rows:
            f = self.open.get(key)
            if f is None:
                self.seq += 1
                f = self.open[key] = _File(self.root, key, f"{self.prefix}-{self.seq:04d}", self.fmt, data.schema)
            room = max(self.target_bytes - f.size, self.target_bytes // 8)
            n = max(1, int(room / row_bytes))
            f.write(data if at == 0 and n >= rows else data.slice(at, n))
            at += n
            if f.size >= self.target_bytes - self.target_bytes // 8:
                self.done.append(f.close())
                del self.open[key]

    def close(self) -> list:
        for f in self.open.values():
            self.done.append(f.close())
        self.open.clear()
        return self.done

    def abandon(self) -> None:
        for f in self.open.values():
            f.abandon()
        self.open.clear()


def _split_by_day(batch: pa.RecordBatch):
    """(``YYYY-MM-DD`` in UTC or None for a null timestamp, rows of that day), in order of first appearance."""
    ts = batch.column("timestamp")
    us = np.asarray(ts.cast(pa.int64()).fill_null(np.iinfo(np.int64).min), dtype=np.int64)
    days = np.where(us == np.iinfo(np.int64).min, np.iinfo(np.int64).min, np.floor_divide(us, DAY_US))
    uniq, first = np.unique(days, return_index=True)
    if len(uniq) == 1:
        yield _day_name(int(uniq[0])), batch
        return
    for d in uniq[np.argsort(first)]:
        yield _day_name(int(d)), batch.filter(pa.array(days == d))


def _day_name(day: int) -> str | None:
    if day == np.iinfo(np.int64).min:
        return None
    return str(np.datetime64(day, "D"))


class _File:
    def __init__(self, root: Path, partition: str, stem: str, fmt: str, schema: pa.Schema) -> None:
        self.rel = f"{partition}/{stem}.{'parquet' if fmt == 'parquet' else 'json'}".lstrip("/")
        self.final = root / self.rel
        fileops.make_dirs(self.final.parent)
        self.tmp = self.final.with_name(f".{self.final.name}.{uuid.uuid4().hex[:8]}.tmp")
        self.out = fileops.NewFile(self.tmp)
        self.fmt = fmt
        self.rows = 0
        self.pq = self.sink = None
        if fmt == "parquet":
            import pyarrow.parquet as pq
            names = set(schema.names)
            # pyarrow writes the file fileops created through a handle of its own: no Python call per page
            # (13,000 over the 4 M-record bench fleet); fileops still fsyncs and renames it
            try:
                with self.out.written_by_name():
                    self.sink = pa.OSFile(str(self.tmp), "wb")
                    self.pq = pq.ParquetWriter(self.sink, schema, compression="snappy",
                                               use_dictionary=[c for c in DICTIONARY_COLUMNS if c in names] or False,
                                               write_statistics=[c for c in STATISTICS_COLUMNS if c in names] or False)
            except BaseException:
                self.abandon()            # the magic is written at once: a full disk fails here, before the
                raise                     # task knows of this file

    @property
    def size(self) -> int:
        return self.out.size if self.sink is None else self.sink.tell()

    def write(self, batch: pa.RecordBatch) -> None:
        if self.pq is not None:
            with self.out.written_by_name():
                self.pq.write_batch(batch)
        else:
            self.out.write(json_lines(batch))
        self.rows += batch.num_rows

    def close(self) -> tuple:
        try:
            size = self.size
            if self.pq is not None:
                with self.out.written_by_name():
                    self.pq.close()
                    size = self.sink.tell()
                    self.sink.close()
            self.out.close()
        except BaseException:
            self.abandon()                # a full disk: no temporary file left, no writer failing again at exit
            raise
        fileops.rename(self.tmp, self.final)
        return (self.rel, self.rows, size)

    def abandon(self) -> None:
        pq, self.pq = self.pq, None
        try:
            if pq is not None:
                pq.close()
        except Exception:                 # noqa: BLE001 - the original error is what matters
            pass
        finally:
            if pq is not None:            # its __del__ would close again, fail again and print a traceback
                pq.is_open = False
        if self.sink is not None:
            self.sink.close()             # unbuffered: nothing left to write, nothing to fail
        self.out.abandon()


# --- JSON lines as Spark's JSON writer gives them --------------------------------------------------------

def json_lines(batch: pa.RecordBatch) -> bytes:
    """One JSON object per row: Spark's ``df.write.json`` layout (binary base64, timestamps
    ``2023-11-14T22:13:20.000Z``, null fields omitted, arrays of structs as arrays of objects)."""
    from orjson import dumps
    names = batch.schema.names
    cols = []
    for name in names:
        col = batch.column(name)
        t = col.type
        if pa.types.is_binary(t):
            cols.append([None if v is None else base64.b64encode(v).decode("ascii") for v in col.to_pylist()])
        elif pa.types.is_timestamp(t):
            cols.append(_iso_timestamps(col))
        elif pa.types.is_list(t):
            cols.append([None if v is None else [_json_struct(x) for x in v] for v in col.to_pylist()])
        else:
            cols.append(col.to_pylist())
    lines = []
    for row in zip(*cols):
        lines.append(dumps({k: v for k, v in zip(names, row) if v is not None}))
    return b"\n".join(lines) + b"\n" if lines else b""


def _json_struct(x: dict) -> dict:
    out = {}
    for k, v in x.items():
        if v is None:
            continue
        out[k] = base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
    return out


def _iso_timestamps(col: pa.Array) -> list:
    """Spark's JSON timestamp format (``yyyy-MM-dd'T'HH:mm:ss.SSSXXX`` in UTC: ``...T22:13:20.000Z``)."""
    us = col.cast(pa.int64())
    out = []
    for v in us.to_pylist():
        if v is None:
            out.append(None)
            continue
        ms = v // 1000
        text = str(np.datetime64(ms, "ms"))
        if "." not in text:
            text += ".000"
        out.append(text + "Z")
    return out
