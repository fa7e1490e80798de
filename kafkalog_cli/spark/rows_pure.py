"""The pure-Python reader of one range (the reference the compiled ``rows_native`` is tested against, and the
reader of every batch the compiled scan hands over: control batches, legacy entries, bad CRCs, decoding
errors), with the per-batch decisions both paths share (``_Walk``) and the column builder (``_Chunk``).
``rows.read_range`` chooses the path; what a read returns is described there.
"""

from __future__ import annotations

import bisect
from itertools import islice
from typing import Iterator

import numpy as np
import pyarrow as pa

from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import all_zero, max_decompressed_bytes
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record import RecordHeaders

from ..engine.mapped import MappedFile
from . import problems as P
from .options import ReadOptions
from .ranges import SegmentRange
from .schema import (ALL_COLUMNS, ARROW_SCHEMA, BYTES_PER_BATCH, COLUMNS, HEADER_TYPE, MAX_TS_MS, MIN_TS_MS,
                     TIMESTAMP_TYPE, TIMESTAMP_TYPE_IDS)


def read_pure(rng, opts, columns, schema, rows_per_batch, sink) -> Iterator[pa.RecordBatch]:
    acc = _Chunk(rng, opts, columns, schema)
    with MappedFile(rng.segment) as mf:
        buf = mf.buf
        walk = _Walk(rng, opts, sink, buf)
        pos = rng.start
        while pos is not None and pos < rng.end:
            reader = BatchReader(buf, pos, len(buf) if rng.limit is None else rng.limit)
            ended = False
            for b in reader:
                if b.position >= rng.end:
                    ended = True
                    break
                verdict = walk.verdict(b)
                if verdict == "stop":
                    ended = True
                    break
                if verdict != "keep":
                    continue
                records = _batch_records(b, walk, rng.segment)
                first = True
                while True:             # a batch of millions of records is cut into row batches, never listed
                    room = max(1, rows_per_batch - acc.rows)
                    part = list(islice(records, room))
                    if not part:
                        break
                    acc.add_batch(b, part, whole=first and len(part) < room)
                    first = False
                    if acc.rows >= rows_per_batch or acc.bytes >= BYTES_PER_BATCH:
                        out = acc.flush()
                        if out is not None:
                            yield out
                mf.release_behind(b.position)
            if ended:
                break
            pos = walk.after_stop(reader.stop)
    out = acc.flush()
    if out is not None:
        yield out


class _Walk:
    """The per-batch decisions and problems of a range (shared by both record paths)."""

    def __init__(self, rng: SegmentRange, opts: ReadOptions, sink: P.ReadSink, buf) -> None:
        self.rng, self.opts, self.sink, self.buf = rng, opts, sink, buf
        self.committed = opts.read_committed and rng.txns is not None
        self.aborted = _aborted_by_producer(rng.txns) if self.committed else {}
        self.lso = rng.txns.last_stable_offset if self.committed else None

    def verdict(self, b) -> str:
        """keep, skip or stop for one batch (the module docstring's order); a bad CRC is reported here."""
        opts = self.opts
        magic = b.magic
        if self.lso is not None and magic >= 2 and b.base_offset >= self.lso:
            return "stop"
        if opts.from_offset is not None and b.last_offset < opts.from_offset:
            return "skip"
        if opts.to_offset is not None and magic >= 2 and b.base_offset > opts.to_offset:
            return "stop"
        if not b.is_valid():
            self.bad_crc(b)
            return "skip"
        if opts.from_timestamp is not None and magic >= 2 and b.max_timestamp < opts.from_timestamp:
            return "skip"
        if b.is_control:
            return "keep" if opts.include_control else "skip"
        if self.aborted and b.is_transactional and _is_aborted(self.aborted, b.producer_id, b.last_offset):
            return "skip"
        return "keep"

    def bad_crc(self, b) -> None:
        self.sink.problem(P.crc_problem(b, self.rng.segment))
        if self.sink.wants_quarantine:
            acc = _Chunk(self.rng, self.opts, list(COLUMNS), ARROW_SCHEMA, mask=False)
            scratch = P.ReadSink("skip")
            records = list(islice(_batch_records(b, _Quiet(scratch), self.rng.segment), 1 << 20))
            acc.add_batch(b, records)
            self.sink.quarantine("crc_mismatch", acc.flush())

    def after_stop(self, stop) -> int | None:
        """Report where Kafka's reader stopped; the position to go on from (None: done)."""
        if stop is None:
            return None
        rng = self.rng
        resumed = None
        if not all_zero(self.buf, stop.position, len(self.buf)):    # windowed: pages released behind
            resumed = P.resume_position(self.buf, stop.position, rng.base_offset, _index_path(rng.segment))
        inside = resumed if resumed is not None and resumed < rng.end else None
        if resumed is None:
            self.sink.stopped_at[(rng.segment, rng.start)] = stop.position
        # the same problem whatever the range: a read resuming exactly where the next range starts says so
        said = resumed if resumed is not None and resumed <= rng.end else None
        self.sink.problem(P.framing_problem(self.buf, stop, rng.segment, said, rng.end if said is None else said))
        return inside


class _Quiet:
    """A walk stand-in for decoding the records of a damaged batch into quarantine (problems not reported)."""

    def __init__(self, sink) -> None:
        self.sink = sink


def _index_path(segment: str):
    from pathlib import Path
    return Path(segment).with_suffix(".index")


def _batch_records(b, walk, file: str):
    """The records of ``b`` as dump-log gives them: those before an error that ends the batch, and a
    control batch stopped after the first record whose control key or marker does not decode. The error,
    and a record offset outside the batch or not increasing, are reported to the walk's sink."""
    from ..engine.dump import decode_control
    opts_lo = getattr(getattr(walk, "opts", None), "from_offset", None)
    opts_hi = getattr(getattr(walk, "opts", None), "to_offset", None)
    n = 0
    prev = None
    first, last = None, None
    try:
        if b.magic >= 2:
            first, last = b.base_offset, b.last_offset
        for rec in b.records():
            o = rec.offset
            if type(rec.headers) is RecordHeaders and len(rec.headers) * P.ROW_BYTES_PER_HEADER > max_decompressed_bytes():
                walk.sink.problem(P.headers_problem(rec, b, file, n, max_decompressed_bytes()))
                return
            inside = (opts_lo is None or o >= opts_lo) and (opts_hi is None or o <= opts_hi)
            if inside and first is not None and (o < first or o > last or (prev is not None and o <= prev)):
                walk.sink.problem(P.record_offset_problem(o, first, last, b.position, file))
                return
            if inside:
                prev = o
            n += 1
            yield rec
            if b.is_control:
                try:
                    decode_control(rec)
                except FormatError as e:
                    walk.sink.problem(P.decode_problem(e, b, file, n))
                    return
    except FormatError as e:
        walk.sink.problem(P.decode_problem(e, b, file, n))


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

    def __init__(self, rng: SegmentRange, opts: ReadOptions, columns: list[str], schema: pa.Schema,
                 mask: bool = True) -> None:
        self.rng = rng
        self.opts = opts
        self.columns = columns
        self.schema = schema
        self.mask = mask
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
                    ts_ms = ts_ms if ts_ms is not None else _int64s(cols[1])
                    arrays.append(_timestamps(ts_ms))
                else:
                    arrays.append(_RECORD_COLUMNS[c](cols))
            elif c in _BATCH_COLUMNS:
                values = self.batch_values[c]
                arrays.append(_repeat(values, counts, ALL_COLUMNS[c]))
            else:
                arrays.append(pa.repeat(pa.scalar(_CONSTANT[c](self.rng), COLUMNS[c]), n))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        if self.mask and self.opts.filters_records:
            if ts_ms is None:
                ts_ms = _int64s(cols[1])
            mask = _record_mask(_int64s(cols[0]), ts_ms, self.opts)
            if not mask.all():
                batch = batch.filter(pa.array(mask))
        self._reset()
        return batch if batch.num_rows else None


def _int64s(values) -> np.ndarray:
    """Offsets/timestamps as int64; a value beyond 64 bits (a corrupt header's sums) raises OverflowError
    on both record paths."""
    return np.asarray(values, dtype=np.int64)


def _record_mask(offsets: np.ndarray, ts: np.ndarray, opts: ReadOptions) -> np.ndarray:
    mask = np.ones(len(offsets), dtype=bool)
    if opts.from_offset is not None:
        mask &= offsets >= opts.from_offset
    if opts.to_offset is not None:
        mask &= offsets <= opts.to_offset
    if opts.from_timestamp is not None or opts.to_timestamp is not None:
        mask &= (ts != -1) & (ts >= MIN_TS_MS) & (ts <= MAX_TS_MS)    # null in Spark: never in a time window
        if opts.from_timestamp is not None:
            mask &= ts >= opts.from_timestamp
        if opts.to_timestamp is not None:
            mask &= ts <= opts.to_timestamp
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
    keys, vals, flat = [], [], []

    def add(pairs) -> None:
        keys.append(pa.array([k.decode("utf-8", "replace") for k, _v in pairs], pa.string()))
        vals.append(pa.array([v for _k, v in pairs], pa.binary()))

    for hs in hdrs:
        if type(hs) is RecordHeaders:       # millions of headers: Arrow a chunk at a time, no list of them all
            for chunk in hs.chunks():
                flat.extend(chunk)
                add(flat)
                flat.clear()
        else:
            flat.extend(hs)
    if flat or not keys:
        add(flat)
    if len(keys) > 1:
        keys, vals = [pa.concat_arrays(keys)], [pa.concat_arrays(vals)]
    structs = pa.StructArray.from_arrays([keys[0], vals[0]], fields=list(HEADER_TYPE.value_type))
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
    "timestampType": lambda b: TIMESTAMP_TYPE_IDS[b.timestamp_type],
    "producer_id": lambda b: b.producer_id,
    "producer_epoch": lambda b: b.producer_epoch,
    "partition_leader_epoch": lambda b: b.partition_leader_epoch,
    "is_transactional": lambda b: b.is_transactional,
    "is_control": lambda b: b.is_control,
    "codec": lambda b: b.codec_name,
    "batch_position": lambda b: b.position,
}
def _name(text: str | None) -> str | None:
    """A name for a string column: Arrow strings are UTF-8, a directory's name may not be (issue 24); the
    bytes that are not are written ``\\xHH`` as in dump-log's JSON (``names.json_name``), reversibly."""
    if text is None:
        return None
    from ..names import json_name
    return json_name(text)


_CONSTANT = {
    "topic": lambda r: _name(r.topic),
    "partition": lambda r: r.partition,
    "segment": lambda r: _name(r.source or r.segment),
    "log_dir": lambda r: _name(r.log_dir),
    "cluster_id": lambda r: r.cluster_id,
    "node_id": lambda r: r.node_id,
}
