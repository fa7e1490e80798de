"""One range of a segment -> Arrow record batches with the ``kafkalog`` schema. pyarrow, no Spark.

Records come from the same reader as ``dump-log`` (``BatchReader`` + ``records()``), with its rules:
batches with a bad CRC still give their records, a batch that cannot be decoded gives the records before
the error, a corrupt control key ends its batch, a framing error ends the segment. Per batch the reader
decides what a consumer would: under ``read_committed`` it drops control batches and transactional
batches of aborted transactions (a batch of producer P whose last offset lies in [firstOffset, ABORT
marker) of one of P's aborted transactions: the condition Kafka's consumer evaluates with the fetch
response's aborted-transaction list, kafka-on-disk.md §4.1) and stops at the last stable offset.

Columns are built at C speed: records are transposed with ``zip``, batch-level values repeated with
numpy, constant columns with ``pa.repeat``. Only the requested columns are built (schema pruning).
"""
from __future__ import annotations

import bisect
from itertools import islice
from typing import Iterator

import numpy as np
import pyarrow as pa

from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader

from ..engine.mapped import MappedFile
from .options import ReadOptions
from .plan import SegmentRange


ROWS_PER_BATCH = 65536
BYTES_PER_BATCH = 32 * 1024 * 1024

HEADER_TYPE = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

#: name -> Arrow type, in the schema's order (equal to pyspark's to_arrow_schema of the DDL below).
COLUMNS = {
    "topic": pa.string(), "partition": pa.int32(), "offset": pa.int64(), "timestamp": TIMESTAMP_TYPE,
    "timestamp_type": pa.string(), "key": pa.binary(), "value": pa.binary(), "headers": HEADER_TYPE,
    "producer_id": pa.int64(), "producer_epoch": pa.int32(), "sequence": pa.int32(),
    "partition_leader_epoch": pa.int32(), "is_transactional": pa.bool_(), "is_control": pa.bool_(),
    "codec": pa.string(), "segment": pa.string(), "batch_position": pa.int64(), "log_dir": pa.string(),
}
ARROW_SCHEMA = pa.schema(list(COLUMNS.items()))
DDL = ("topic string, partition int, offset long, timestamp timestamp, timestamp_type string, key binary, "
       "value binary, headers array<struct<key:string,value:binary>>, producer_id long, producer_epoch int, "
       "sequence int, partition_leader_epoch int, is_transactional boolean, is_control boolean, codec string, "
       "segment string, batch_position long, log_dir string")

# Spark's TimestampType covers years 0001..9999; other millisecond values become null.
MIN_TS_MS, MAX_TS_MS = -62135596800000, 253402300799999


def read_range(rng: SegmentRange, opts: ReadOptions, columns: list[str] | None = None,
               rows_per_batch: int = ROWS_PER_BATCH) -> Iterator[pa.RecordBatch]:
    """Record batches (at most ``rows_per_batch`` rows) of the records in batches starting in the range."""
    from kafkalog_formats.limits import bound
    with bound(opts.max_decompressed_bytes):      # on an executor: the driver's --max-decompressed-bytes
        yield from _read_range(rng, opts, columns, rows_per_batch)


def _read_range(rng: SegmentRange, opts: ReadOptions, columns: list[str] | None,
                rows_per_batch: int) -> Iterator[pa.RecordBatch]:
    columns = list(COLUMNS) if columns is None else columns
    schema = pa.schema([(c, COLUMNS[c]) for c in columns])
    from kafkalog_formats import native
    if native.ext is not None:                # the compiled record path: columns built from buffers
        from . import rows_native
        yield from rows_native.read_range(rng, opts, columns, schema, rows_per_batch)
        return
    acc = _Chunk(rng, opts, columns, schema)
    aborted = _aborted_by_producer(rng.txns) if opts.read_committed and rng.txns else {}
    lso = rng.txns.last_stable_offset if (opts.read_committed and rng.txns) else None
    lo, hi = opts.from_offset, opts.to_offset
    from_ts = opts.from_timestamp
    with MappedFile(rng.segment) as mf:
        reader = BatchReader(mf.buf, rng.start, len(mf.buf))
        for b in reader:
            if b.position >= rng.end:
                break
            magic = b.magic
            if lso is not None and magic >= 2 and b.base_offset >= lso:
                break
            if lo is not None and b.last_offset < lo:
                continue
            if hi is not None and magic >= 2 and b.base_offset > hi:
                break
            if from_ts is not None and magic >= 2 and b.max_timestamp < from_ts:
                continue
            if b.is_control:
                if not opts.include_control:
                    continue
            elif aborted and b.is_transactional and _is_aborted(aborted, b.producer_id, b.last_offset):
                continue
            yield from add_batch_streamed(acc, b, rows_per_batch)
    out = acc.flush()
    if out is not None:
        yield out


def add_batch_streamed(acc: "_Chunk", b, rows_per_batch: int) -> Iterator[pa.RecordBatch]:
    """Add the records of batch ``b`` to ``acc``, yielding every full row batch on the way: a batch of
    millions of records is cut into row batches, never listed."""
    records = _batch_records(b)
    first = True
    while True:
        room = max(1, rows_per_batch - acc.rows)
        part = list(islice(records, room))
        if not part:
            return
        acc.add_batch(b, part, whole=first and len(part) < room)
        first = False
        if acc.rows >= rows_per_batch or acc.bytes >= BYTES_PER_BATCH:
            out = acc.flush()
            if out is not None:
                yield out


def _aborted_by_producer(txns) -> dict:
    by: dict[int, tuple[list, list]] = {}
    for pid, first, last in txns.aborted:
        firsts, lasts = by.setdefault(pid, ([], []))
        firsts.append(first)
        lasts.append(last)
    return by


def _is_aborted(aborted: dict, producer_id: int, last_offset: int) -> bool:
    """Kafka consumer: a transactional batch is aborted when an aborted transaction of its producer has
    ``firstOffset <= batch.lastOffset`` and its ABORT marker comes after the batch."""
    entry = aborted.get(producer_id)
    if entry is None:
        return False
    firsts, lasts = entry
    i = bisect.bisect_right(firsts, last_offset) - 1
    return i >= 0 and last_offset < lasts[i]


class _Chunk:
    """Records of consecutive batches, turned into one RecordBatch by ``flush``."""

    def __init__(self, rng: SegmentRange, opts: ReadOptions, columns: list[str], schema: pa.Schema) -> None:
        self.rng = rng
        self.opts = opts
        self.columns = columns
        self.schema = schema
        self.need_batch = [c for c in columns if c in _BATCH_COLUMNS]
        self._reset()

    def _reset(self) -> None:
        self.records: list = []
        self.counts: list[int] = []
        self.batch_values: dict[str, list] = {c: [] for c in self.need_batch}
        self.rows = 0
        self.bytes = 0

    def add_batch(self, b, part: list, whole: bool = True) -> None:
        """Add ``part``, records of batch ``b`` (all of them when ``whole``)."""
        n = len(part)
        if n == 0:
            return
        self.records.extend(part)
        self.counts.append(n)
        for c in self.need_batch:
            self.batch_values[c].append(_BATCH_COLUMNS[c](b))
        self.rows += n
        if b.codec or not whole:
            self.bytes += sum(len(r.value or b"") + len(r.key or b"") for r in part)
        else:
            self.bytes += b.size

    def flush(self) -> pa.RecordBatch | None:
        if not self.rows:
            return None
        n = self.rows
        cols = list(zip(*self.records))    # offset, timestamp, key, value, headers, sequence, ...
        counts = np.asarray(self.counts, dtype=np.int64)
        arrays = []
        ts_ms = None
        for c in self.columns:
            if c in _RECORD_COLUMNS:
                if c == "timestamp":
                    ts_ms = ts_ms if ts_ms is not None else np.asarray(cols[1], dtype=np.int64)
                    arrays.append(_timestamps(ts_ms))
                else:
                    arrays.append(_RECORD_COLUMNS[c](cols))
            elif c in _BATCH_COLUMNS:
                values = self.batch_values[c]
                arrays.append(_repeat(values, counts, COLUMNS[c]))
            else:
                arrays.append(pa.repeat(pa.scalar(_CONSTANT[c](self.rng), COLUMNS[c]), n))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        if self.opts.filters_records:
            if ts_ms is None:
                ts_ms = np.asarray(cols[1], dtype=np.int64)
            mask = _record_mask(np.asarray(cols[0], dtype=np.int64), ts_ms, self.opts)
            if not mask.all():
                batch = batch.filter(pa.array(mask))
        self._reset()
        return batch if batch.num_rows else None


def _batch_records(b):
    """The records of ``b`` as dump-log gives them: those before an error that ends the batch, and a
    control batch stopped after the first record whose control key or marker does not decode."""
    from ..engine.dump import decode_control
    try:
        for rec in b.records():
            yield rec
            if b.is_control:
                try:
                    decode_control(rec)
                except FormatError:
                    return
    except FormatError:
        return


def _record_mask(offsets: np.ndarray, ts: np.ndarray, opts: ReadOptions) -> np.ndarray:
    mask = np.ones(len(offsets), dtype=bool)
    if opts.from_offset is not None:
        mask &= offsets >= opts.from_offset
    if opts.to_offset is not None:
        mask &= offsets <= opts.to_offset
    if opts.from_timestamp is not None:
        mask &= (ts >= opts.from_timestamp) & (ts != -1)
    if opts.to_timestamp is not None:
        mask &= (ts <= opts.to_timestamp) & (ts != -1)
    return mask


def _timestamps(ms: np.ndarray) -> pa.Array:
    """Kafka milliseconds -> Spark timestamps (microseconds, UTC); -1 (no timestamp) becomes null."""
    invalid = (ms == -1) | (ms < MIN_TS_MS) | (ms > MAX_TS_MS)
    us = np.where(invalid, 0, ms) * 1000
    return pa.array(us, type=TIMESTAMP_TYPE, mask=invalid if invalid.any() else None)


def _repeat(values: list, counts: np.ndarray, typ: pa.DataType) -> pa.Array:
    if pa.types.is_string(typ):
        idx = np.repeat(np.arange(len(values), dtype=np.int32), counts)
        return pa.array(values, typ).take(pa.array(idx))
    dtype = {pa.int64(): np.int64, pa.int32(): np.int32, pa.bool_(): np.bool_}[typ]
    return pa.array(np.repeat(np.asarray(values, dtype=dtype), counts), typ)


def _headers(cols) -> pa.Array:
    hdrs = cols[4]
    n = len(hdrs)
    if not any(hdrs):
        empty = pa.array([], type=HEADER_TYPE.value_type)
        return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)), empty, type=HEADER_TYPE)
    lens = np.fromiter(map(len, hdrs), dtype=np.int32, count=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    flat = [h for hs in hdrs for h in hs]
    keys = pa.array([k.decode("utf-8", "replace") for k, _v in flat], pa.string())
    vals = pa.array([v for _k, v in flat], pa.binary())
    structs = pa.StructArray.from_arrays([keys, vals], fields=list(HEADER_TYPE.value_type))
    return pa.ListArray.from_arrays(pa.array(offsets), structs, type=HEADER_TYPE)


_RECORD_COLUMNS = {
    "offset": lambda cols: pa.array(cols[0], pa.int64()),
    "timestamp": None,                                  # built in flush (shares the numpy array)
    "key": lambda cols: pa.array(cols[2], pa.binary()),
    "value": lambda cols: pa.array(cols[3], pa.binary()),
    "headers": _headers,
    "sequence": lambda cols: pa.array(cols[5], pa.int32()),
}
_BATCH_COLUMNS = {
    "timestamp_type": lambda b: b.timestamp_type,
    "producer_id": lambda b: b.producer_id,
    "producer_epoch": lambda b: b.producer_epoch,
    "partition_leader_epoch": lambda b: b.partition_leader_epoch,
    "is_transactional": lambda b: b.is_transactional,
    "is_control": lambda b: b.is_control,
    "codec": lambda b: b.codec_name,
    "batch_position": lambda b: b.position,
}
_CONSTANT = {
    "topic": lambda r: r.topic,
    "partition": lambda r: r.partition,
    "segment": lambda r: r.segment,
    "log_dir": lambda r: r.log_dir,
}
