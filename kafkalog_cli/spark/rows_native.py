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

from itertools import islice
from typing import Iterator

import numpy as np
import pyarrow as pa

from kafkalog_formats import codecs
from kafkalog_formats import columns as C
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.native import ext
from kafkalog_formats.record import HEADERS_INLINE

from ..engine.mapped import MappedFile
from . import problems as P
from . import rows_pure as R
from . import schema as S

_CODEC_NAMES = np.array(["none", "gzip", "snappy", "lz4", "zstd"], dtype=object)


def read_range(rng, opts, columns: list[str], schema: pa.Schema, rows_per_batch: int,
               sink) -> Iterator[pa.RecordBatch]:
    # with a last stable offset, rows.read_range looks at it before fromOffset: the batch-level fromOffset
    # test is then made on the batch table, in that order (records below it are masked either way)
    decompress = codecs.V2                # decompressed in C under the bound in force (rows.read_range's)
    with MappedFile(rng.segment) as mf:
        buf, end = mf.buf, len(mf.buf) if rng.limit is None else rng.limit
        walk = R._Walk(rng, opts, sink, buf)
        lso, aborted = walk.lso, walk.aborted
        lo, hi = (opts.from_offset if lso is None else None), opts.to_offset
        pos = rng.start
        def window(pos: int, until: int) -> C.Scan:
            return C.scan(buf, pos, end, crc=True, stop_bad_crc=True, stop_control=True, decompress=decompress,
                          lo=lo, hi=hi, max_records=rows_per_batch, max_bytes=S.BYTES_PER_BATCH, until=until)
        while pos is not None and pos < rng.end:
            s = window(pos, rng.end)
            big = _first_big_batch(s)
            if big == pos:                    # the pure path reads it, rows_per_batch records at a time
                s = _handed_over(big)
            elif big is not None:             # the window ends before it (reason LIMIT at its position)
                s = window(pos, big)
            keep, done = _batch_mask(s, opts, lso, aborted)
            if keep is not None and keep.any():
                out = _arrow(s, keep, rng, opts, columns, schema, sink)
                if out is not None and out.num_rows:
                    yield out
            mf.release_behind(s.stop)
            if done or s.reason in (C.END, C.TO_OFFSET):
                return
            if s.reason == C.LIMIT:
                pos = s.stop
                continue
            reader = BatchReader(buf, s.stop, end)
            b = next(iter(reader), None)      # a batch for the pure path, or where Kafka's reader stops
            if b is None:
                pos = walk.after_stop(reader.stop)
                continue
            pos = b.position + b.size
            verdict = walk.verdict(b)
            if verdict == "stop":
                return
            if verdict == "keep":
                acc = R._Chunk(rng, opts, columns, schema)
                records = R._batch_records(b, walk, rng.segment)
                while True:
                    part = list(islice(records, rows_per_batch))
                    if not part:
                        break
                    acc.add_batch(b, part, whole=False)
                    out = acc.flush()
                    if out is not None:
                        yield out


#: a batch of more records than this is left to the pure path, which reads it ``rows_per_batch`` records
#: at a time: a window's columns hold every record of its batches (one batch of 1,048,576 distinct keys,
#: inside the compiled path's bound, took the reader to 500 MiB; 262,144 was that bound before)
BIG_BATCH = 262_144


def _first_big_batch(s: C.Scan) -> int | None:
    """The position of the window's first batch of more than ``BIG_BATCH`` records, or holding a record of
    more than ``HEADERS_INLINE`` headers (the pure path weighs those against the bound: ``rows_pure``)."""
    many = len(s.headers) // (8 * C.NH) > HEADERS_INLINE
    if s.n_rows <= BIG_BATCH and not many:
        return None
    bt, rt, _ht = s.numpy()
    big = bt[:, C.B["rows"]] > BIG_BATCH
    if many:
        rows = np.nonzero(rt[:, C.R["header_count"]] > HEADERS_INLINE)[0]
        firsts = bt[:, C.B["first_row"]]
        big[np.searchsorted(firsts, rows, side="right") - 1] = True
    big = np.nonzero(big)[0]
    return int(bt[big[0], C.B["position"]]) if len(big) else None


def _handed_over(position: int) -> C.Scan:
    """An empty window that leaves the batch at ``position`` to the pure path, as a scan does (reason
    ``PYTHON``)."""
    return C.Scan(position, C.PYTHON, bytearray(), bytearray(), bytearray(), [], None, None)


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


def _arrow(s: C.Scan, keep: np.ndarray, rng, opts, columns: list[str], schema: pa.Schema,
           sink) -> pa.RecordBatch | None:
    bt, rows, _hdrs = s.numpy()
    counts = bt[:, C.B["rows"]]
    n = int(counts.sum())
    if not n:
        return None
    row_keep = np.repeat(keep, counts)
    offsets = rows[:, C.R["offset"]]
    bad = _record_offsets(bt, offsets, counts, keep, opts, rng, sink)
    if bad is not None:
        row_keep &= bad
    row_source = np.repeat(bt[:, C.B["source"]], counts).astype(np.int64)
    arrays = []
    ts_ms = None
    for c in columns:
        if c == "offset":
            arrays.append(pa.array(offsets, pa.int64()))
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
            arrays.append(pa.repeat(pa.scalar(R._CONSTANT[c](rng), S.COLUMNS[c]), n))
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema) if columns else None
    mask = row_keep
    if opts.filters_records:
        if ts_ms is None:
            ts_ms = rows[:, C.R["timestamp"]]
        mask = mask & R._record_mask(offsets, ts_ms, opts)
    if batch is None:
        return None
    if not mask.all():
        batch = batch.filter(pa.array(mask))
    return batch


def _record_offsets(bt, offsets: np.ndarray, counts: np.ndarray, keep: np.ndarray, opts, rng, sink):
    """verify's deep ``record_offset`` rule on the kept batches' records inside the offset window: each
    offset within its batch's range and above the previous one. Reports the first offending record of a
    batch and returns a row mask without it and the rest of its batch (None: nothing wrong)."""
    n = len(offsets)
    if not n:
        return None
    batch_of = np.repeat(np.arange(len(bt)), counts)
    base = bt[:, C.B["base_offset"]]
    last = base + bt[:, C.B["last_offset_delta"]]
    inside = np.ones(n, dtype=bool)
    if opts.from_offset is not None:
        inside &= offsets >= opts.from_offset
    if opts.to_offset is not None:
        inside &= offsets <= opts.to_offset
    inside &= keep[batch_of]
    outside_batch = (offsets < base[batch_of]) | (offsets > last[batch_of])
    # not above the previous in-window record of the same batch
    idx = np.nonzero(inside)[0]
    not_up = np.zeros(n, dtype=bool)
    if len(idx) > 1:
        same = batch_of[idx[1:]] == batch_of[idx[:-1]]
        down = offsets[idx[1:]] <= offsets[idx[:-1]]
        not_up[idx[1:][same & down]] = True
    wrong = inside & (outside_batch | not_up)
    if not wrong.any():
        return None
    ok = np.ones(n, dtype=bool)
    first_row = bt[:, C.B["first_row"]]
    for i in np.unique(batch_of[wrong]):
        j = int(np.nonzero(wrong & (batch_of == i))[0][0])
        ok[j:int(first_row[i] + counts[i])] = False
        sink.problem(P.record_offset_problem(int(offsets[j]), int(base[i]), int(last[i]),
                                             int(bt[i, C.B["position"]]), rng.segment))
    return ok


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
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array([], type=S.HEADER_TYPE.value_type),
                                        type=S.HEADER_TYPE)
    hsource = np.repeat(row_source, hcount).astype(np.int64)
    keys = _binary(s.headers, C.NH, 0, 1, s.sources, hsource, nh, pa.string())
    try:
        keys.validate(full=True)
    except pa.ArrowInvalid:                 # invalid UTF-8: decoded with replacement, as the pure path does
        raw = _binary(s.headers, C.NH, 0, 1, s.sources, hsource, nh)
        keys = pa.array([k.decode("utf-8", "replace") for k in raw.to_pylist()], pa.string())
    values = _binary(s.headers, C.NH, 2, 3, s.sources, hsource, nh)
    structs = pa.StructArray.from_arrays([keys, values], fields=list(S.HEADER_TYPE.value_type))
    return pa.ListArray.from_arrays(pa.array(offsets), structs, type=S.HEADER_TYPE)


def _repeat_np(values: np.ndarray, counts: np.ndarray, typ: pa.DataType, dtype) -> pa.Array:
    return pa.array(np.repeat(values.astype(dtype), counts), typ)


def _strings(labels: list, counts: np.ndarray) -> pa.Array:
    """One label per batch, repeated over its records (taken from a per-batch array, as rows._repeat)."""
    idx = np.repeat(np.arange(len(labels), dtype=np.int32), counts)
    return pa.array(labels, pa.string()).take(pa.array(idx))


_BATCH = {
    "timestamp_type": lambda bt, c: _strings(["LogAppendTime" if a & 0x08 else "CreateTime"
                                              for a in bt[:, C.B["attributes"]].tolist()], c),
    "timestampType": lambda bt, c: _repeat_np((bt[:, C.B["attributes"]] & 0x08) != 0, c, pa.int32(), np.int32),
    "producer_id": lambda bt, c: _repeat_np(bt[:, C.B["producer_id"]], c, pa.int64(), np.int64),
    "producer_epoch": lambda bt, c: _repeat_np(bt[:, C.B["producer_epoch"]], c, pa.int32(), np.int32),
    "partition_leader_epoch": lambda bt, c: _repeat_np(bt[:, C.B["partition_leader_epoch"]], c, pa.int32(),
                                                       np.int32),
    "is_transactional": lambda bt, c: _repeat_np((bt[:, C.B["attributes"]] & 0x10) != 0, c, pa.bool_(), np.bool_),
    "is_control": lambda bt, c: _repeat_np((bt[:, C.B["attributes"]] & 0x20) != 0, c, pa.bool_(), np.bool_),
    "codec": lambda bt, c: _strings(_CODEC_NAMES[bt[:, C.B["attributes"]] & 7].tolist(), c),
    "batch_position": lambda bt, c: _repeat_np(bt[:, C.B["position"]], c, pa.int64(), np.int64),
}

