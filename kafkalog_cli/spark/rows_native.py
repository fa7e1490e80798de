"""``rows.read_range`` on the compiled record path: Arrow record batches built from the scan's columns.

The records of each window of v2 data batches come from ``columns.scan`` (keys, values and headers as
spans into the mapped segment or the decompressed records), and every column is built from buffers:
offsets and timestamps straight from the int64 tables, keys/values/header fields gathered into Arrow
binary buffers in C (``_native.gather``), batch-level columns repeated with numpy. No Python object per
record. The per-batch decisions are those of ``rows.read_range`` (range end, last stable offset, offset
and time filters, aborted transactions), evaluated on the batch table; control batches, legacy entries
and batches the scan hands over are read by the pure ``rows._Chunk``, so their rows are the pure path's.
tests/test_native_commands.py compares both paths table for table.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from kafkalog_formats import columns as C
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.native import ext

from ..engine.mapped import MappedFile
from . import rows as R

_CODEC_NAMES = np.array(["none", "gzip", "snappy", "lz4", "zstd"], dtype=object)


def read_range(rng, opts, columns: list[str], schema: pa.Schema, rows_per_batch: int) -> Iterator[pa.RecordBatch]:
    aborted = R._aborted_by_producer(rng.txns) if opts.read_committed and rng.txns else {}
    lso = rng.txns.last_stable_offset if (opts.read_committed and rng.txns) else None
    # with a last stable offset, rows.read_range looks at it before fromOffset: the batch-level fromOffset
    # test is then made on the batch table, in that order (records below it are masked either way)
    lo, hi = (opts.from_offset if lso is None else None), opts.to_offset
    decompress = _decompress
    with MappedFile(rng.segment) as mf:
        buf, end = mf.buf, len(mf.buf)
        pos = rng.start
        while pos < rng.end:
            s = C.scan(buf, pos, end, crc=False, stop_control=True, decompress=decompress, lo=lo, hi=hi,
                       max_records=rows_per_batch, max_bytes=R.BYTES_PER_BATCH, until=rng.end)
            keep, done = _batch_mask(s, opts, lso, aborted)
            if keep is not None and keep.any():
                out = _arrow(s, keep, rng, opts, columns, schema)
                if out is not None and out.num_rows:
                    yield out
            mf.release_behind(s.stop)
            if done or s.reason in (C.END, C.FRAMING, C.TO_OFFSET):
                return
            if s.reason == C.LIMIT:
                pos = s.stop
                continue
            b = next(iter(BatchReader(buf, s.stop, end)), None)      # a batch for the pure path
            if b is None:
                return
            pos = b.position + b.size
            verdict = _pure_verdict(b, opts, lso, aborted)
            if verdict == "stop":
                return
            if verdict == "keep":
                acc = R._Chunk(rng, opts, columns, schema)
                yield from R.add_batch_streamed(acc, b, rows_per_batch)
                out = acc.flush()
                if out is not None:
                    yield out


def _pure_verdict(b, opts, lso, aborted) -> str:
    """``rows.read_range``'s decision for one batch: keep, skip or stop."""
    magic = b.magic
    if lso is not None and magic >= 2 and b.base_offset >= lso:
        return "stop"
    if opts.from_offset is not None and b.last_offset < opts.from_offset:
        return "skip"
    if opts.to_offset is not None and magic >= 2 and b.base_offset > opts.to_offset:
        return "stop"
    if opts.from_timestamp is not None and magic >= 2 and b.max_timestamp < opts.from_timestamp:
        return "skip"
    if b.is_control:
        return "keep" if opts.include_control else "skip"
    if aborted and b.is_transactional and R._is_aborted(aborted, b.producer_id, b.last_offset):
        return "skip"
    return "keep"


def _batch_mask(s: C.Scan, opts, lso, aborted):
    """Which batches of the window ``rows.read_range`` keeps, and whether it stops in this window (the last
    stable offset reached). The scan already skipped batches ending below fromOffset and stopped before
    a batch starting above toOffset; control batches are never in a window."""
    if not s.n_batches:
        return None, False
    bt = s.numpy()[0]
    n = len(bt)
    keep = np.ones(n, dtype=bool)
    done = False
    base = bt[:, C.B["base_offset"]]
    if lso is not None:
        over = np.nonzero(base >= lso)[0]
        if len(over):
            keep[over[0]:] = False
            done = True
        if opts.from_offset is not None:
            keep &= base + bt[:, C.B["last_offset_delta"]] >= opts.from_offset
    if opts.from_timestamp is not None:
        keep &= bt[:, C.B["max_timestamp"]] >= opts.from_timestamp
    if aborted:
        txn = np.nonzero(keep & ((bt[:, C.B["attributes"]] & 0x10) != 0))[0]
        last = base + bt[:, C.B["last_offset_delta"]]
        for i in txn:
            if R._is_aborted(aborted, int(bt[i, C.B["producer_id"]]), int(last[i])):
                keep[i] = False
    return keep, done


def _arrow(s: C.Scan, keep: np.ndarray, rng, opts, columns: list[str], schema: pa.Schema) -> pa.RecordBatch | None:
    bt, rows, _hdrs = s.numpy()
    counts = bt[:, C.B["rows"]]
    n = int(counts.sum())
    if not n:
        return None
    row_keep = np.repeat(keep, counts)
    row_source = np.repeat(bt[:, C.B["source"]], counts).astype(np.int64)
    arrays = []
    ts_ms = None
    for c in columns:
        if c == "offset":
            arrays.append(pa.array(rows[:, C.R["offset"]], pa.int64()))
        elif c == "timestamp":
            ts_ms = rows[:, C.R["timestamp"]]
            arrays.append(R._timestamps(ts_ms))
        elif c in ("key", "value"):
            arrays.append(_binary(s.rows, C.NR, C.R[f"{c}_pos"], C.R[f"{c}_len"], s.sources, row_source, n))
        elif c == "headers":
            arrays.append(_headers(s, rows, row_source, n))
        elif c == "sequence":
            arrays.append(pa.array(rows[:, C.R["sequence"]].astype(np.int32), pa.int32()))
        elif c in _BATCH:
            arrays.append(_BATCH[c](bt, counts))
        else:
            arrays.append(pa.repeat(pa.scalar(R._CONSTANT[c](rng), R.COLUMNS[c]), n))
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    mask = row_keep
    if opts.filters_records:
        if ts_ms is None:
            ts_ms = rows[:, C.R["timestamp"]]
        mask = mask & R._record_mask(rows[:, C.R["offset"]], ts_ms, opts)
    if not mask.all():
        batch = batch.filter(pa.array(mask))
    return batch


def _binary(table, width: int, pos_field: int, len_field: int, sources: list, row_source, n: int,
            typ=pa.binary()) -> pa.Array:
    offsets, data, valid, nulls = ext.gather(table, width, pos_field, len_field, sources, row_source)
    return pa.Array.from_buffers(typ, n, [pa.py_buffer(valid) if nulls else None, pa.py_buffer(offsets),
                                          pa.py_buffer(data)], null_count=nulls)


def _headers(s: C.Scan, rows: np.ndarray, row_source: np.ndarray, n: int) -> pa.Array:
    hcount = rows[:, C.R["header_count"]]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(hcount, out=offsets[1:])
    nh = int(offsets[-1])
    if not nh:
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array([], type=R.HEADER_TYPE.value_type),
                                        type=R.HEADER_TYPE)
    hsource = np.repeat(row_source, hcount).astype(np.int64)
    keys = _binary(s.headers, C.NH, 0, 1, s.sources, hsource, nh, pa.string())
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:                 # invalid UTF-8: decoded with replacement, as the pure path does
        raw = _binary(s.headers, C.NH, 0, 1, s.sources, hsource, nh)
        keys = pa.array([k.decode("utf-8", "replace") for k in raw.to_pylist()], pa.string())
    values = _binary(s.headers, C.NH, 2, 3, s.sources, hsource, nh)
    structs = pa.StructArray.from_arrays([keys, values], fields=list(R.HEADER_TYPE.value_type))
    return pa.ListArray.from_arrays(pa.array(offsets), structs, type=R.HEADER_TYPE)


def _repeat_np(values: np.ndarray, counts: np.ndarray, typ: pa.DataType, dtype) -> pa.Array:
    return pa.array(np.repeat(values.astype(dtype), counts), typ)


def _strings(labels: list, counts: np.ndarray) -> pa.Array:
    """One label per batch, repeated over its records (taken from a per-batch array, as rows._repeat)."""
    idx = np.repeat(np.arange(len(labels), dtype=np.int32), counts)
    return pa.array(labels, pa.string()).take(pa.array(idx))


_BATCH = {
    "timestamp_type": lambda bt, c: _strings(["LogAppendTime" if a & 0x08 else "CreateTime"
                                              for a in bt[:, C.B["attributes"]].tolist()], c),
    "producer_id": lambda bt, c: _repeat_np(bt[:, C.B["producer_id"]], c, pa.int64(), np.int64),
    "producer_epoch": lambda bt, c: _repeat_np(bt[:, C.B["producer_epoch"]], c, pa.int32(), np.int32),
    "partition_leader_epoch": lambda bt, c: _repeat_np(bt[:, C.B["partition_leader_epoch"]], c, pa.int32(),
                                                       np.int32),
    "is_transactional": lambda bt, c: _repeat_np((bt[:, C.B["attributes"]] & 0x10) != 0, c, pa.bool_(), np.bool_),
    "is_control": lambda bt, c: _repeat_np((bt[:, C.B["attributes"]] & 0x20) != 0, c, pa.bool_(), np.bool_),
    "codec": lambda bt, c: _strings(_CODEC_NAMES[bt[:, C.B["attributes"]] & 7].tolist(), c),
    "batch_position": lambda bt, c: _repeat_np(bt[:, C.B["position"]], c, pa.int64(), np.int64),
}


def _decompress(codec: int, data) -> bytes:
    """The one bounded decompression (the bound ``rows.read_range`` put in force from the read options);
    a batch above it is handed to the pure path, which reads it as one that cannot be decoded."""
    from kafkalog_formats.codecs import decompress
    return decompress(codec, data, magic=2)
