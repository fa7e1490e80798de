"""Verify one segment in one forward pass: the ``.log``, then its indexes against what the pass saw.

Every rule is written from what Kafka brokers *write* (``LogSegment.append``/``recover``, ``LogCleaner``,
``LogValidator``) and what a broker *does* with the files (lookups in ``OffsetIndex``/``TimeIndex``,
``LogSegment.translateOffset``/``findOffsetByTimestamp``, time retention from the last time-index
entry). A rule reports an error only for what no healthy broker of any version writes and what would
make a broker misbehave; ``verify_policy`` then lowers findings Kafka's next start repairs by itself.
The rules and their Kafka sources are tabled in docs/kafka-rules.md ("verify and dump-log reports").

.log        framing (size < 14, partial entry, v2 batch < 61 bytes), zero-filled tails, CRC-32C / CRC-32,
            magic, offsets increasing (within and across segments), segment base ≤ first offset, offsets
            representable relative to the base, batch sizes, records (deep: structure, decompression,
            offsets inside the batch, count, control keys). Fields of a batch whose CRC fails are not
            trusted. ``damage_from``/``damage_is_tail`` say where Kafka's recovery would truncate and
            whether anything intact follows (a torn write) or not (corruption inside the data).
.index      each entry (O, P): P is where a batch starts and O is above every offset stored before P
            and not beyond the segment's last offset — what ``translateOffset`` needs. Entries naming
            an append's first offset (Kafka ≤ 1.1), a follower's or the cleaner's multi-batch append
            (before KAFKA-806) are valid (noted, as DumpLogSegments calls them mismatches).
.timeindex  each entry (T, O): no batch holding records before the batch of O (the batch containing it,
            or the next one when compaction removed O) has a timestamp ≥ T — what ``findOffsetByTimestamp``
            needs; O may name any offset of that batch (leaders ≤ 3.6 and the March-2024 builds named the
            max-timestamp *record*). T should be the running max there (a warning otherwise: lookups
            stay correct). On inactive segments the last entry must be the segment's max timestamp (time
            retention reads it).
.txnindex   version, sanity rule, entries increasing, each at an ABORT marker of its producer inside the
            segment.

The result is plain data (picklable) so the Spark ``scan`` can run it per segment on executors.
"""
from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kafkalog_formats import control as ctl
from kafkalog_formats import native
from kafkalog_formats import offset_index as oi
from kafkalog_formats import time_index as ti
from kafkalog_formats import txn_index as tx
from kafkalog_formats.batch_search import CrcBudget, intact_batches
from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import MAX_SEGMENT_BYTES, all_zero, bound
from kafkalog_formats.message_set import BatchReader

from .findings import Finding
from .mapped import MappedFile

INT_MAX = 0x7FFFFFFF
DEFAULT_MAX_MESSAGE_BYTES = 1048588
#: Framing problems that end Kafka's file reader (``FileLogInputStream``) and recovery's valid bytes.
STOP_KINDS = ("zero_tail", "trailing_bytes", "corrupt_size", "batch_too_small", "corrupt_message")


@dataclass
class SegmentOptions:
    deep: bool = True
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_message_bytes_given: bool = False     # the user stated the topic's limit: larger batches are warnings
    max_decompressed_bytes: int | None = None  # applied while the segment is checked; None: the bound in force
    salvage: bool = False                     # scan --salvage: also report what recover --salvage would skip


@dataclass
class SegmentResult:
    """What one segment holds and what is wrong with it."""
    log_path: str
    base_offset: int
    size: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None        # last offset of the last valid batch
    next_offset: int | None = None        # last_offset + 1, the segment's contribution to the log end
    max_timestamp: int = -1
    first_timestamp: int | None = None
    codecs: dict = field(default_factory=dict)
    valid_bytes: int = 0
    damage_from: int | None = None        # byte where Kafka's recovery would cut the .log (None: intact)
    damage_is_tail: bool = False          # nothing intact after damage_from: a torn write at the end
    last_before_damage: int | None = None  # the last offset of the valid batches before damage_from
    raw_findings: list | None = None      # the findings before verify_policy graded them
    readable: bool = True                 # False: the .log could not be read (its offsets are unknown)
    findings: list = field(default_factory=list)

    def add(self, kind: str, message: str, file: str | None = None, position: int | None = None,
            offset: int | None = None, severity: str = "error") -> None:
        self.findings.append(Finding(kind, message, file or self.log_path, position, offset, severity))


def verify_segment(log_path: str | os.PathLike, base_offset: int, *, active: bool,
                   previous_last_offset: int | None = None,
                   options: SegmentOptions | None = None) -> SegmentResult:
    """Verify ``<base>.log`` and its index files. ``previous_last_offset`` is the last offset of the
    segment before it (offsets must keep increasing across segments)."""
    opts = options or SegmentOptions()
    with bound(opts.max_decompressed_bytes):      # scan's executors: the driver's --max-decompressed-bytes
        return _verify_segment(Path(log_path), base_offset, active, previous_last_offset, opts)


def _verify_segment(log_path: Path, base_offset: int, active: bool, previous_last_offset: int | None,
                    opts: SegmentOptions) -> SegmentResult:
    res = SegmentResult(str(log_path), base_offset)
    try:
        table = _verify_log(log_path, base_offset, previous_last_offset, opts, res)
    except OSError as e:
        res.readable = False
        res.add("io_error", f"cannot read: {e.strerror or e}: this segment was not verified")
        return res
    for suffix, check in (("index", _verify_offset_index), ("timeindex", _verify_time_index),
                          ("txnindex", _verify_txn_index)):
        path = log_path.with_suffix("." + suffix)
        if not path.exists():
            _missing_index(suffix, str(path), res)
            continue
        try:
            with MappedFile(path) as mf:
                check(mf.buf, str(path), base_offset, active, table, res)
                if suffix == "txnindex" and table.deep and res.readable:
                    _txn_entries_reaching_back(mf.buf, str(path), log_path, base_offset, res)
        except OSError as e:
            res.add("io_error", f"cannot read: {e.strerror or e}", str(path))
    if opts.salvage and res.damage_from is not None and res.readable:
        _salvage_ranges(log_path, base_offset, res, opts)
    return res


def _salvage_ranges(log_path: Path, base: int, res: SegmentResult, opts: SegmentOptions) -> None:
    """``scan --salvage``: from the damage on, each stretch ``recover --salvage`` would skip (the bytes, what
    they held, the offsets lost) and where reading resumes (``engine/salvage``)."""
    from .salvage import Damage, walk_segment
    with MappedFile(log_path) as mf:
        layout = walk_segment(mf.buf, base, res.last_before_damage, None, deep=opts.deep, release=mf.release_behind,
                              start=res.damage_from)
    for d in layout.pieces:
        if isinstance(d, Damage):
            held = "; ".join(f"{e.kind} at byte {e.position}" for e in d.entries[:3])
            lost = f"; offsets {d.lost[0]}..{d.lost[1]} lost" if d.lost else ""
            resumes = "nothing after it is kept" if d.end >= res.size else f"reading resumes at byte {d.end}"
            res.add("salvage_skipped", f"recover --salvage skips bytes {d.start}..{d.end - 1} ({d.size} bytes: "
                    f"{held}){lost}; {resumes}", position=d.start,
                    offset=None if d.after is None else d.after + 1, severity="warning")


def _txn_entries_reaching_back(buf, f: str, log_path: Path, base: int, res: SegmentResult) -> None:
    """An AbortedTxn (P, first F, marker L) makes READ_COMMITTED consumers skip every batch of P from F
    until an ABORT of P (``Fetcher``/``CompletedFetch`` ``abortedProducerIds``: a COMMIT does not end it),
    and the log cleaner delete them (``CleanedTransactionMetadata``): an F reaching back over an earlier
    COMMIT or ABORT marker of P in this segment turns that transaction's records into aborted ones. Kafka
    writes F = the transaction's first offset (``ProducerStateManager``), after P's previous marker. An
    index longer than its segment could need is judged by its size alone (``_verify_txn_index``), not read."""
    if len(buf) > oi.max_plausible_entries(res.size) * tx.ENTRY_SIZE:
        return
    try:
        entries = [e for e in tx.parse_txn_index(buf, f) if e.first_offset >= base]
    except FormatError:
        return                                   # reported by _verify_txn_index
    if not entries:
        return
    markers = _markers_by_producer(log_path, {e.producer_id for e in entries})
    for i, e in enumerate(entries):
        inside = [(o, kind) for o, kind in markers.get(e.producer_id, ()) if e.first_offset <= o < e.last_offset]
        if inside:
            o, kind = inside[-1]
            res.add("txn_index_mismatch", f"entry for producer {e.producer_id} (first offset {e.first_offset}, "
                    f"ABORT at {e.last_offset}) reaches back over its {kind} marker at offset {o}: READ_COMMITTED "
                    "consumers would skip that earlier transaction's records as aborted and the log cleaner "
                    "would delete them", f, None, e.first_offset)


def _markers_by_producer(log_path: Path, producers: set) -> dict:
    """{producer id: [(marker offset, "COMMIT"|"ABORT")]} of the segment's transaction markers of
    ``producers`` (headers walked on the columnar scan; only their control batches decoded)."""
    from kafkalog_formats import columns as C
    from kafkalog_formats.record_batch import ATTR_CONTROL
    out: dict = {}
    with MappedFile(log_path) as mf:
        buf, pos = mf.buf, 0
        while True:
            s = C.scan(buf, pos, None, records=False, headers=False, crc=False, max_bytes=32 << 20)
            bt, n = s.batch_table(), s.n_batches
            for i in range(n):
                row = bt[i * C.NB:(i + 1) * C.NB]
                if row[C.B["attributes"]] & ATTR_CONTROL and row[C.B["producer_id"]] in producers:
                    _add_marker(out, next(iter(BatchReader(buf, row[C.B["position"]]))))
            mf.release_behind(s.stop)
            if s.reason == C.LIMIT:
                pos = s.stop
                continue
            b = next(iter(BatchReader(buf, s.stop)), None) if s.reason == C.PYTHON else None
            if b is None:
                return out
            if b.magic >= 2 and b.is_control and b.producer_id in producers:
                _add_marker(out, b)
            pos = b.position + b.size


def _add_marker(out: dict, b) -> None:
    try:
        rec = next(iter(b.records()), None)
        kind = None if rec is None else ctl.parse_control_key(rec.key).type
    except FormatError:
        return                                   # reported by the record checks
    if kind in (ctl.ABORT, ctl.COMMIT):
        out.setdefault(b.producer_id, []).append((b.base_offset, "ABORT" if kind == ctl.ABORT else "COMMIT"))


def _missing_index(suffix: str, path: str, res: SegmentResult) -> None:
    """``LogSegment.sanityCheck`` (LogLoader): no ``.index`` → the segment is recovered (indexes rebuilt);
    no ``.timeindex`` → created empty (3.x: resized to 0), time retention then falls back to the mtime."""
    if suffix == "index":
        res.add("missing_index", "no offset index: Kafka rebuilds this segment's indexes when it loads the log",
                path, severity="warning" if res.size else "info")
    elif suffix == "timeindex" and res.batches:
        res.add("missing_time_index", "no time index: Kafka creates it empty, so time-based retention and "
                "lookups fall back to the file's modification time", path, severity="warning")


class _BatchTable:
    """What the index checks need of the CRC-valid batches, in file order (``add`` one batch at a time).

    Row fields: position, last offset, max timestamp, record count (-1: a legacy entry), the last offset of
    the valid batch before it (``NO_PREV`` for the first), the running max timestamp of every batch so
    far, the same over the batches holding records (an empty batch counts as -1), and that value before
    this batch (-1 for the first): the running maxima of the time-index rules, kept per row.

    Memory stays flat on any segment: given the positions the offset index names and the offsets the
    time index names (``keep_positions``/``keep_offsets``, sorted int64), only the rows the checks look up
    are kept: the batch starting at each named position, and for each named offset the first batch ending
    at or after it. Without them every row is kept (``full``), and a table whose last offsets stop
    increasing (a damaged log: the lookups then follow ``searchsorted`` over every batch) is rebuilt full.
    The compiled record path fills the same state and rows (``_native.verify_walk``).
    """

    FIELDS = 8
    STATE = 8        # has previous, previous last offset, rows seen, run max (all), run max (records),
    #                  has max of batches holding records, that max, still monotonic

    def __init__(self, keep_positions=None, keep_offsets=None) -> None:
        self.keep_positions = keep_positions
        self.keep_offsets = keep_offsets
        self.full = keep_positions is None
        self.rows = bytearray()
        self.state = bytearray(8 * self.STATE)
        self._st = memoryview(self.state).cast("q")
        self._st[7] = 1
        self.invalid_positions: set[int] = set()
        self.aborts: dict[int, int] = {}      # marker offset -> producer id, for ABORT control records
        self.deep = True
        self._cache = None

    def add(self, position: int, last: int, max_ts: int, count: int) -> None:
        st = self._st
        last = min(last, INT64_MAX)           # a base offset + delta beyond Java's long (corrupt data)
        prev_last = st[1] if st[0] else NO_PREV
        if st[0] and last <= st[1]:
            st[7] = 0
        before = st[4] if st[2] else -1
        ts_records = max_ts if count != 0 else -1
        if not st[2] or max_ts > st[3]:
            st[3] = max_ts
        if not st[2] or ts_records > st[4]:
            st[4] = ts_records
        if count != 0 and (not st[5] or max_ts > st[6]):
            st[5], st[6] = 1, max_ts
        st[2] += 1
        st[0], st[1] = 1, last
        keep = self.full or _in_sorted(self.keep_positions, position)
        if not keep and len(self.keep_offsets):
            i = int(np.searchsorted(self.keep_offsets, prev_last, side="right"))
            keep = i < len(self.keep_offsets) and int(self.keep_offsets[i]) <= last
        if keep:
            self.rows += array("q", (position, last, max_ts, count, prev_last, st[3], st[4], before)).tobytes()
            self._cache = None

    @property
    def monotonic(self) -> bool:
        return bool(self._st[7])

    @property
    def max_all(self) -> int:
        """The greatest max timestamp of every valid batch (-1 when there is none)."""
        return int(self._st[3]) if self._st[2] else -1

    @property
    def max_records(self) -> int:
        """The greatest max timestamp of the valid batches holding records (-1 when there is none)."""
        return int(self._st[6]) if self._st[5] else -1

    def _table(self) -> np.ndarray:
        if self._cache is None:
            self._cache = np.frombuffer(bytes(self.rows), np.int64).reshape(-1, self.FIELDS)
        return self._cache

    def at_positions(self, pos: np.ndarray, base: int):
        """For offset-index positions: (is a valid batch's start, the last offset of the batch before it or
        ``base - 1``, that batch's last offset). Values of positions that are no batch start are unspecified."""
        t = self._table()
        if not len(t):
            z = np.zeros(len(pos), np.int64)
            return np.zeros(len(pos), bool), z + base - 1, z
        k = np.searchsorted(t[:, 0], pos)
        kk = np.minimum(k, len(t) - 1)
        at_start = (k < len(t)) & (t[kk, 0] == pos)
        prev = t[kk, 4]
        return at_start, np.where(prev == NO_PREV, base - 1, prev), t[kk, 1]

    def at_offsets(self, offs: np.ndarray):
        """For time-index offsets, the first valid batch ending at or after each: (no such batch, the running
        max of every batch up to it, of the batches holding records up to it, of those before it)."""
        t = self._table()
        if not len(t):
            z = np.zeros(len(offs), np.int64)
            return np.ones(len(offs), bool), z, z, z
        k = np.searchsorted(t[:, 1], offs)
        kk = np.minimum(k, len(t) - 1)
        return k >= len(t), t[kk, 5], t[kk, 6], t[kk, 7]


NO_PREV = -(1 << 63)
WALK_WINDOW = 32 * 1024 * 1024      # bytes per verify_walk call: mapped pages are released behind it
INT64_MAX = (1 << 63) - 1


def _in_sorted(a: np.ndarray, v: int) -> bool:
    i = int(np.searchsorted(a, v))
    return i < len(a) and int(a[i]) == v


def _sorted_unique(values: "np.ndarray") -> "np.ndarray":
    """``np.unique`` of an int64 array without its first-call cost: numpy 2 imports ``numpy.ma`` inside it
    (37 ms, a fifth of a small verify's run)."""
    values = np.sort(values)
    if len(values) < 2:
        return values
    keep = np.empty(len(values), bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _index_interest(log_path: Path, base: int):
    """(positions the .index names, offsets the .timeindex names), sorted and unique; the batch table keeps
    the rows the index checks look up. An unreadable index names nothing (its check reports it). Only the
    entries the checks read are looked at: as many as the segment can hold batches (``_capped``), so a
    sparse 1 GiB index beside a small segment costs nothing."""
    positions = offsets = np.zeros(0, np.int64)
    try:
        cap = oi.max_plausible_entries(os.stat(log_path).st_size) + 1
    except OSError:
        return positions, offsets
    for suffix in ("index", "timeindex"):
        try:
            with MappedFile(log_path.with_suffix("." + suffix)) as mf:
                if suffix == "index":
                    arr = oi.offset_index_array(mf.buf)[:cap]
                    positions = _sorted_unique(arr["pos"][:_real_entries(arr)].astype(np.int64))
                else:
                    arr = ti.time_index_array(mf.buf)[:cap]
                    offsets = _sorted_unique(arr["rel"][:_real_entries(arr)].astype(np.int64) + base)
                del arr
        except (OSError, ValueError):
            pass
    return positions, offsets


# --- .log ----------------------------------------------------------------------------------------

def _verify_log(path: Path, base: int, prev_last: int | None, opts: SegmentOptions,
                res: SegmentResult) -> _BatchTable:
    positions, offsets = _index_interest(path, base)
    table = _BatchTable(positions, offsets)
    table.deep = opts.deep
    with MappedFile(path) as mf:
        buf = mf.buf
        res.size = len(buf)
        if res.size > MAX_SEGMENT_BYTES:       # the broker stops loading the log there: its bytes are not read
            res.add("segment_too_large", f"segment of {res.size} bytes exceeds Kafka's limit of {MAX_SEGMENT_BYTES} "
                    "(FileRecords refuses to open it, and the broker does not start): not read")
            res.readable = False
            return table
        walk = _LogWalk(base, prev_last, opts, res, table)
        stop = _walk_native(mf, walk) if native.ext is not None else _walk_pure(mf, walk, 0)
        first_invalid = walk.first_invalid
        intact_after_damage = walk.intact_after_damage
        if stop is not None:
            kind = _report_stop(res, stop, buf)
            if first_invalid is None:
                first_invalid = stop.position
                intact_after_damage = (kind not in ("trailing_bytes", "zero_tail")      # all zeros: nothing after
                                       and _intact_batch_after(buf, stop.position))
        if first_invalid is not None:
            res.damage_from = first_invalid
            res.last_before_damage = walk.last_before_damage if walk.first_invalid is not None else walk.last
            res.damage_is_tail = not intact_after_damage
            if first_invalid in table.invalid_positions:
                res.add("truncation_point", f"Kafka's log recovery truncates this segment at byte {first_invalid} "
                        f"({res.size - first_invalid} bytes) and deletes every later segment of the partition",
                        position=first_invalid, severity="warning")
        if not table.monotonic and not table.full:
            table = _full_table(buf, opts, table)
    return table


class _LogWalk:
    """The per-batch rules of the .log pass and what they carry from one batch to the next."""

    def __init__(self, base: int, prev_last: int | None, opts: SegmentOptions, res: SegmentResult,
                 table: _BatchTable) -> None:
        self.base, self.last, self.opts, self.res, self.table = base, prev_last, opts, res, table
        self.first_invalid: int | None = None
        self.last_before_damage: int | None = None
        self.intact_after_damage = False

    def batch(self, b) -> None:
        res, table, opts = self.res, self.table, self.opts
        pos = b.position
        res.batches += 1
        if not b.is_valid():
            res.add("crc_mismatch", f"Record is corrupt (stored crc = {b.crc}, computed crc = "
                    f"{b.computed_crc()})", position=pos, offset=b.offset_field)
            table.invalid_positions.add(pos)
            if self.first_invalid is None:
                self.first_invalid = pos
                self.last_before_damage = self.last
            res.codecs[b.codec_name] = res.codecs.get(b.codec_name, 0) + 1
            res.records += max(b.count, 0) if b.count is not None else 1
            return
        if self.first_invalid is not None:
            self.intact_after_damage = True
        b_base, b_last = _batch_offsets(b, res, opts)
        _check_batch(b, b_base, b_last, self.base, self.last, opts, res)
        codec = b.codec_name
        res.codecs[codec] = res.codecs.get(codec, 0) + 1
        if opts.deep:
            res.records += _verify_records(b, b_base, b_last, opts, res, table)
        else:
            res.records += b.count if b.count is not None else 1
        if res.first_offset is None:
            res.first_offset = b_base
            res.first_timestamp = b.max_timestamp
        table.add(pos, b_last, b.max_timestamp, -1 if b.count is None else b.count)
        if b.max_timestamp > res.max_timestamp:
            res.max_timestamp = b.max_timestamp
        self.last = b_last
        res.last_offset = b_last
        res.next_offset = b_last + 1
        if self.first_invalid is None:
            res.valid_bytes = pos + b.size


def _walk_pure(mf: MappedFile, walk: _LogWalk, start: int):
    """The .log pass from ``start``, batch by batch; returns BatchReader's stop."""
    reader = BatchReader(mf.buf, start)
    for b in reader:
        walk.batch(b)
        mf.release_behind(b.position)
    return reader.stop


def _walk_native(mf: MappedFile, walk: _LogWalk):
    """The .log pass on the compiled record path: ``verify_walk`` runs the rules of ``_LogWalk.batch`` in C
    over the batches that have no finding (filling the same table), and stops before any batch with one,
    which ``_LogWalk.batch`` then reads, so findings are the pure path's own. Returns BatchReader's stop."""
    from kafkalog_formats import codecs, columns
    buf, res, table, opts = mf.buf, walk.res, walk.table, walk.opts
    decompress = codecs.V2               # the bound in force; verify_walk decompresses in C where it can
    pos, end = 0, len(buf)
    keep = (None, None) if table.full else (table.keep_positions.tobytes(), table.keep_offsets.tobytes())
    while True:
        if walk.last is not None and not -(1 << 63) <= walk.last <= INT64_MAX:
            return _walk_pure(mf, walk, pos)  # after offsets beyond Java's long every batch is a finding
        (pos, reason, n, records, codec_counts, first, max_ts, last, valid_end,
         aborts) = native.ext.verify_walk(buf, pos, end, walk.base, walk.last, res.first_offset is not None,
                                          opts.max_message_bytes, opts.deep, decompress, table.state, table.rows,
                                          *keep, pos + WALK_WINDOW)
        if n:
            table._cache = None
            res.batches += n
            res.records += records
            for name, count in zip(("none", "gzip", "snappy", "lz4", "zstd"), codec_counts):
                if count:
                    res.codecs[name] = res.codecs.get(name, 0) + count
            if res.first_offset is None:
                res.first_offset, res.first_timestamp = first
            if max_ts > res.max_timestamp:
                res.max_timestamp = max_ts
            walk.last = res.last_offset = last
            res.next_offset = last + 1
            if walk.first_invalid is None:
                res.valid_bytes = valid_end
            else:
                walk.intact_after_damage = True
            for o, producer in aborts:
                table.aborts[o] = producer
        mf.release_behind(pos)
        if reason == columns.END:
            return None
        if reason == columns.LIMIT:
            continue
        reader = BatchReader(buf, pos, end)
        b = next(iter(reader), None)
        if b is None:                        # a framing stop: BatchReader describes it
            return reader.stop
        walk.batch(b)
        pos = b.position + b.size


def _full_table(buf, opts: SegmentOptions, reduced: _BatchTable) -> _BatchTable:
    """The table with every valid batch, for a log whose last offsets do not increase (the index checks
    then look batches up as in an unsorted list); its ABORT markers and corrupt positions carried over."""
    table = _BatchTable()
    table.deep, table.aborts, table.invalid_positions = reduced.deep, reduced.aborts, reduced.invalid_positions
    scratch = SegmentResult("", 0)
    for b in BatchReader(buf):
        if b.is_valid():
            _b_base, b_last = _batch_offsets(b, scratch, opts)
            table.add(b.position, b_last, b.max_timestamp, -1 if b.count is None else b.count)
    return table


def _batch_offsets(b, res: SegmentResult, opts: SegmentOptions) -> tuple[int, int]:
    """(first, last) offset of a CRC-valid batch; a legacy wrapper's first offset needs decompression."""
    try:
        b_last = b.last_offset
        b_base = b.base_offset if (b.magic >= 2 or b.codec == 0 or opts.deep) else b_last
    except FormatError as e:
        res.add(e.kind, e.reason, position=b.position, offset=b.offset_field)
        b_last = b_base = b.offset_field
    return b_base, b_last


def _check_batch(b, b_base: int, b_last: int, base: int, last: int | None, opts: SegmentOptions,
                 res: SegmentResult) -> None:
    """Header rules of one CRC-valid batch (``LogSegment.recover``, ``FileLogInputStream``, ``LogValidator``)."""
    pos = b.position
    if b.magic > 2 or b.magic < 0:
        res.add("invalid_magic", f"Invalid magic found in record: {b.magic}", position=pos, offset=b_base)
    if b.size > opts.max_message_bytes:
        given = opts.max_message_bytes_given
        res.add("oversized_batch", f"batch of {b.size} bytes exceeds {'' if given else 'the default '}"
                f"max.message.bytes {opts.max_message_bytes} (Kafka enforces it on produce only; followers and "
                "the cleaner may write larger batches)", position=pos, offset=b_base,
                severity="warning" if given else "info")
    if b_last < b_base:
        res.add("negative_offset_delta", f"batch last offset {b_last} is below its base offset {b_base}",
                position=pos, offset=b_base)
    if res.first_offset is None and b_base < base:
        res.add("offset_below_segment_base", f"first batch starts at offset {b_base}, below the segment's "
                f"base offset {base}", position=pos, offset=b_base)
    if last is not None and b_base <= last:
        where = "the previous segment" if res.first_offset is None else "the previous batch"
        res.add("non_monotonic_offset", f"batch offsets {b_base}..{b_last} do not follow {where}, which "
                f"ended at offset {last} (Kafka: InvalidOffsetException on recovery)", position=pos, offset=b_base)
    if b_last - base > INT_MAX:
        res.add("offset_overflow", f"offset {b_last} cannot be stored relative to base offset {base}: Kafka "
                "(2.0+) splits this segment when it loads the log; brokers before 2.0 could write it",
                position=pos, offset=b_last, severity="warning")


def _report_stop(res: SegmentResult, stop, buf) -> str:
    zeros = all_zero(buf, stop.position, len(buf))
    if zeros:
        res.add("zero_tail", f"{stop.size} zero bytes at the end (a preallocated or crash-extended file); "
                "Kafka's recovery truncates them", position=stop.position)
        return "zero_tail"
    if stop.kind == "trailing_bytes":
        res.add("trailing_bytes", f"{stop.size} bytes at the end do not form a complete batch (torn write); "
                "Kafka's recovery truncates them", position=stop.position)
        return "trailing_bytes"
    res.add(stop.kind, f"{stop.reason}; Kafka's recovery truncates the segment here", position=stop.position)
    return stop.kind


def _intact_batch_after(buf, start: int, max_candidates: int = 4096, crc_budget: int = 1 << 30) -> bool:
    """Whether a CRC-valid v2 batch starts anywhere after ``start`` (damage inside the data, not a torn end).
    Bounded (``batch_search``: windows with pages released, at most ``max_candidates`` candidates and
    ``crc_budget`` bytes of CRC); past the bound the damage counts as a tail."""
    budget = CrcBudget(max_candidates, crc_budget)
    return next(intact_batches(buf, start + 1, len(buf), budget), None) is not None


def _verify_records(b, b_base: int, b_last: int, opts: SegmentOptions, res: SegmentResult,
                    table: _BatchTable) -> int:
    """Per-record checks of one CRC-valid batch (``DefaultRecord.readFrom``, ``ControlRecordType.parse``,
    ``EndTransactionMarker``): structure, decompression, offsets inside the batch, the declared count."""
    n = 0
    prev = None
    try:
        for rec in b.records():
            o = rec.offset
            if o < b_base or o > b_last or (prev is not None and o <= prev):
                res.add("record_offset", f"record offset {o} is outside the batch range {b_base}..{b_last} or not "
                        "increasing", position=b.position, offset=o)
                return n
            prev = o
            n += 1
            if b.is_control:
                key = ctl.parse_control_key(rec.key)
                if key.type in (ctl.ABORT, ctl.COMMIT):
                    ctl.parse_end_txn_marker(rec.value)
                    if key.type == ctl.ABORT:
                        table.aborts[o] = b.producer_id
    except FormatError as e:
        res.add(e.kind, e.reason, position=b.position, offset=b_base)
        return n
    if b.count is not None and n != b.count:
        res.add("record_count", f"batch declares {b.count} records but holds {n}", position=b.position,
                offset=b_base)
    return n


# --- indexes -------------------------------------------------------------------------------------

def _real_entries(arr) -> int:
    """DumpLogSegments' zero-tail heuristic, plus: a zero slot 0 followed only by zeros is an empty
    preallocated file. No real entry is (base offset, position 0) or (timestamp 0, base offset): Kafka
    never indexes the first append of a segment (``bytesSinceLastIndexEntry`` starts at 0)."""
    real = oi.real_entry_count(arr) if len(arr) else 0
    if real == 1 and not any(int(arr[0][name]) for name in arr.dtype.names):
        return 0
    return real


def _capped(arr, f: str, size: int, res: SegmentResult) -> int:
    """Real entries, at most as many as the segment can hold batches (``max_plausible_entries``): only
    that prefix and the last slot are read, a longer index with data beyond it is reported (bounded
    memory on a sparse or hostile index)."""
    cap = oi.max_plausible_entries(res.size)
    real = _real_entries(arr[:cap + 1])
    if real > cap or (len(arr) > cap + 1 and any(int(v) for v in arr[-1].tolist())):
        res.add("index_too_many_entries", f"{len(arr)} slots with data past slot {cap}, more entries than the "
                f"{res.size}-byte segment can hold batches: the index is corrupt from entry {cap} on", f,
                cap * size)
        return min(real, cap)
    return real


def _index_size(buf, f: str, entry_size: int, label: str, res: SegmentResult) -> None:
    """Length rule: ``AbstractIndex`` counts floor(length / size) entries, so Kafka ignores a partial entry
    (only ``sanityCheck``, run by DumpLogSegments and, up to 2.2, by the loader, rejects the file)."""
    length = len(buf)
    if length % entry_size:
        res.add("index_size", f"{label} file {f} is corrupt, found {length} bytes which is neither positive nor "
                f"a multiple of {entry_size} (Kafka ignores the partial entry at the end)", f,
                length - length % entry_size, severity="warning")


def _untrimmed(entries: int, real: int, active: bool, f: str, res: SegmentResult, size: int,
               consequence: str) -> None:
    if real < entries and not active:
        res.add("untrimmed_index", f"{entries - real} zero slots after {real} entries on an inactive segment "
                f"(Kafka trims indexes when a segment rolls; loaded as is, {consequence})", f, real * size,
                severity="warning")


def _verify_offset_index(buf, f: str, base: int, active: bool, table: _BatchTable, res: SegmentResult) -> None:
    _index_size(buf, f, 8, "Index", res)
    arr = oi.offset_index_array(buf)
    real = _capped(arr, f, 8, res)
    _untrimmed(len(arr), real, active, f, res, 8, "lookups scan from the start of the segment")
    if real == 0:
        return
    rel = arr["rel"][:real].astype(np.int64)
    pos = arr["pos"][:real].astype(np.int64)
    msg = oi.offset_index_sanity(real * 8, base, int(rel[-1]), f)
    if msg:
        res.add("index_sanity", msg, f, (real - 1) * 8, base + int(rel[-1]))
    offs = rel + base
    _not_increasing(offs, pos, f, res)
    _offset_entries(offs, pos, f, base, table, res)


def _not_increasing(offs, pos, f: str, res: SegmentResult) -> None:
    """``OffsetIndex.append`` refuses an offset not above the last one; positions only grow. Lookups
    binary-search the entries, so an unsorted index returns wrong positions."""
    for i in np.nonzero(np.diff(offs) <= 0)[0][:20]:
        res.add("index_not_increasing", f"slot {i + 1}: offset {offs[i + 1]} is not above slot {i}'s {offs[i]}",
                f, int(i + 1) * 8, int(offs[i + 1]))
    for i in np.nonzero(np.diff(pos) <= 0)[0][:20]:
        res.add("index_not_increasing", f"slot {i + 1}: position {pos[i + 1]} is not after slot {i}'s {pos[i]}",
                f, int(i + 1) * 8, int(offs[i + 1]))



def _beyond(res) -> str:
    """The end of an index-entry message naming an offset past the log: a segment where no batch could be
    read has no last offset to quote."""
    if res.last_offset is None:
        return "is beyond the log: the segment holds no readable batch"
    return f"is beyond the segment's last offset {res.last_offset}"

def _offset_entries(offs, pos, f: str, base: int, table: _BatchTable, res: SegmentResult) -> None:
    """Each entry (O, P) against ``LogSegment.translateOffset``: a lookup of any offset ≥ O starts reading
    batches at P, so P must be a batch start, no batch before P may hold an offset ≥ O, and O must not
    lie beyond the segment (``readNextOffset`` of the active segment reads from the last entry).

    Which O Kafka stores at a batch's position: its last offset (recovery; 2.0+ appends of one batch;
    every append since KAFKA-806), the append's first offset (0.8-1.1), the last offset of a later batch of
    the same append (followers' and the cleaner's multi-batch appends before KAFKA-806), or the largest
    *retained* offset of a cleaner chunk (which can lie inside the chunk's last batch)."""
    seg_last = -1 if res.last_offset is None else res.last_offset
    out_of_range = (pos < 0) | (pos >= res.size)
    corrupt = np.isin(pos, np.fromiter(table.invalid_positions, np.int64)) & ~out_of_range
    at_start, prev_last, last_at = table.at_positions(pos, base)
    checked = ~out_of_range & ~corrupt & at_start
    below = checked & (offs < base)
    after = checked & ~below & (offs <= prev_last)
    beyond = checked & ~below & ~after & (offs > seg_last)
    bad = out_of_range | (~corrupt & ~out_of_range & ~at_start) | below | after | beyond
    for i in np.nonzero(bad)[0][:50]:
        i = int(i)
        o, p = int(offs[i]), int(pos[i])
        if out_of_range[i]:
            res.add("index_position_out_of_range", f"slot {i}: position {p} is outside the {res.size}-byte log",
                    f, i * 8, o)
        elif not at_start[i]:
            res.add("index_position_not_batch_start", f"slot {i}: position {p} is not the start of a batch", f,
                    i * 8, o)
        elif below[i]:
            res.add("index_offset_mismatch", f"slot {i}: offset {o} is below the segment's base offset {base}",
                    f, i * 8, o)
        elif after[i]:
            last_before = int(prev_last[i])
            res.add("index_offset_mismatch", f"slot {i}: offset {o} at position {p}, but the batch before that "
                    f"position already ends at offset {last_before}: lookups of offsets {o}..{last_before} "
                    "would start after their batch", f, i * 8, o)
        else:
            res.add("index_offset_mismatch", f"slot {i}: offset {o} {_beyond(res)}", f, i * 8, o)
    ok = checked & ~below & ~after & ~beyond
    not_last = np.nonzero(ok & (offs != last_at))[0]
    if len(not_last):
        i = int(not_last[0])
        inside = int(np.count_nonzero(offs[not_last] < last_at[not_last]))
        res.add("index_entry_not_batch_end", f"{len(not_last)} entries (first: slot {i}) do not name the last "
                f"offset of the batch at their position ({inside} an offset inside it, {len(not_last) - inside} "
                "a later batch's last offset): written by Kafka 0.8-1.1 (first offset of an append), by a "
                "follower's or the cleaner's multi-batch append before Kafka 4.1; valid for lookups "
                "(DumpLogSegments reports them as mismatches)", f, i * 8, int(offs[i]), severity="info")


def _verify_time_index(buf, f: str, base: int, active: bool, table: _BatchTable, res: SegmentResult) -> None:
    _index_size(buf, f, 12, "Time index", res)
    arr = ti.time_index_array(buf)
    real = _capped(arr, f, 12, res)
    _untrimmed(len(arr), real, active, f, res, 12, "its last slot (timestamp 0) becomes the segment's "
               "largest timestamp")
    max_all, max_records = table.max_all, table.max_records
    if real == 0:
        if not active and max_records >= 0:
            res.add("time_index_missing_final_entry", f"empty time index on an inactive segment whose max "
                    f"timestamp is {max_records}: time retention and lookups fall back to the file's "
                    "modification time (segments written before Kafka 0.10.1 have no time index)", f,
                    severity="warning")
        return
    ts = arr["ts"][:real].astype(np.int64)
    offs = arr["rel"][:real].astype(np.int64) + base
    msg = ti.time_index_sanity(real * 12, base, int(ts[0]), int(ts[-1]), int(offs[-1] - base), f)
    if msg:
        res.add("index_sanity", msg, f, (real - 1) * 12, int(offs[-1]))
    for i in np.nonzero(np.diff(ts) <= 0)[0][:20]:
        res.add("time_index_not_increasing", f"slot {i + 1}: timestamp {ts[i + 1]} is not above slot {i}'s "
                f"{ts[i]}", f, int(i + 1) * 12, int(offs[i + 1]))
    for i in np.nonzero(np.diff(offs) < 0)[0][:20]:
        res.add("time_index_not_increasing", f"slot {i + 1}: offset {offs[i + 1]} is below slot {i}'s "
                f"{offs[i]}", f, int(i + 1) * 12, int(offs[i + 1]))
    _time_entries(ts, offs, f, base, table, res)
    if not active:
        _final_time_entry(int(ts[-1]), int(offs[-1]), real, max_all, max_records, f, res)


def _time_entries(ts, offs, f: str, base: int, table: _BatchTable, res: SegmentResult) -> None:
    """Each entry (T, O) against ``LogSegment.findOffsetByTimestamp``: a lookup of a timestamp ≥ T starts
    at the batch holding O (or the next batch when O was compacted away), so no batch before it may hold a
    record with a timestamp ≥ T, and O must lie inside the segment. Which O Kafka stores: the last offset
    of the first batch reaching T (recovery, followers, the cleaner, leaders of 3.7+ and for compressed or
    LogAppendTime batches), the first record holding T (leaders ≤ 3.6, uncompressed CreateTime batches,
    LogValidator.assignOffsetsNonCompressed), any record of that batch (KAFKA-16342/16341 builds, spring
    2024: the max-timestamp record, or the first offset for LogAppendTime)."""
    beyond, run_all, run_records, before = table.at_offsets(offs)
    below = offs < base
    late = ~below & ~beyond & (before >= ts)
    mismatch = ~below & ~beyond & ~late & (ts != run_all) & (ts != run_records)
    for i in np.nonzero(below | beyond | late)[0][:50]:
        i = int(i)
        t, o = int(ts[i]), int(offs[i])
        if below[i]:
            res.add("time_index_offset_mismatch", f"slot {i}: offset {o} is below the segment's base offset "
                    f"{base}", f, i * 12, o)
        elif beyond[i]:
            res.add("time_index_offset_mismatch", f"slot {i}: offset {o} {_beyond(res)}", f, i * 12, o)
        else:
            res.add("time_index_offset_mismatch", f"slot {i}: timestamp {t} at offset {o}, but a batch before "
                    f"it already holds timestamp {int(before[i])}: lookups of {t} would start after that "
                    "batch", f, i * 12, o)
    idx = np.nonzero(mismatch)[0]
    if len(idx):
        i = int(idx[0])
        res.add("time_index_timestamp_mismatch", f"{len(idx)} entries (first: slot {i}, timestamp {int(ts[i])} "
                f"at offset {int(offs[i])}) do not hold the greatest batch timestamp up to their batch "
                f"({int(run_all[i])}); lookups stay correct", f, i * 12, int(offs[i]), severity="warning")


def _final_time_entry(t_last: int, o_last: int, real: int, max_all: int, max_records: int, f: str,
                      res: SegmentResult) -> None:
    """``onBecomeInactiveSegment``/``recover``/the cleaner end every inactive segment's time index with its
    max timestamp; time retention (``LogSegment.largestTimestamp``), the cleaner's min.compaction.lag.ms
    (``LogCleanerManager.cleanableOffsets``) and ListOffsets read that last entry. Below the records' max it
    is an error here; ``verify_policy.grade_by_topic`` then grades it by the rules the topic runs."""
    if t_last in (max_all, max_records):
        return
    if t_last < max_records:
        res.add("time_index_missing_final_entry", f"last time index entry has timestamp {t_last}, but the "
                f"segment holds records up to timestamp {max_records}", f, (real - 1) * 12, o_last)
    else:       # retention keeps the segment longer (no data lost); lookups after max_all answer nothing
        res.add("time_index_missing_final_entry", f"last time index entry has timestamp {t_last}, but no batch "
                f"holds a timestamp above {max_all}: time retention keeps the segment longer, and a lookup of "
                f"a timestamp after {max_all} picks this segment and finds no record in it", f,
                (real - 1) * 12, o_last, severity="warning")


def _verify_txn_index(buf, f: str, base: int, active: bool, table: _BatchTable, res: SegmentResult) -> None:
    """``TransactionIndex``: a version above 0 fails the log load; ``sanityCheck`` failure (an entry ending
    before the segment) makes the loader recover the segment; fetches in READ_COMMITTED scan the entries in
    order and stop early (``collectAbortedTxns``), so order and marker positions matter. One longer than an
    entry per batch of the segment is judged by its size and not parsed (a sparse 10 GiB file)."""
    cap = oi.max_plausible_entries(res.size)
    if len(buf) > cap * tx.ENTRY_SIZE:
        res.add("index_too_many_entries", f"{len(buf) // tx.ENTRY_SIZE} entries, more than the {res.size}-byte "
                f"segment can hold batches ({cap}): the index is corrupt from entry {cap} on (not read)", f,
                cap * tx.ENTRY_SIZE)
        return
    try:
        entries = tx.parse_txn_index(buf, f)
    except FormatError as e:
        res.add(e.kind, e.reason, f, e.position)
        return
    if len(buf) % tx.ENTRY_SIZE:
        res.add("txn_index_partial_entry", f"{len(buf) % tx.ENTRY_SIZE} bytes at the end do not form a whole "
                "34-byte entry (Kafka ignores them)", f, len(buf) - len(buf) % tx.ENTRY_SIZE, severity="warning")
    msg = tx.txn_index_sanity(entries, base, f)
    if msg:
        res.add("txn_index_sanity", msg + " (Kafka rebuilds the segment's indexes when it loads the log)", f,
                severity="warning")
    prev = None
    for i, e in enumerate(entries):
        if prev is not None and e.last_offset <= prev:
            res.add("txn_index_not_increasing", f"entry {i}: last offset {e.last_offset} is not above "
                    f"{prev}", f, i * tx.ENTRY_SIZE, e.last_offset)
        prev = e.last_offset
        if res.last_offset is not None and e.last_offset > res.last_offset:
            res.add("txn_index_mismatch", f"entry {i}: ABORT marker offset {e.last_offset} is beyond the "
                    f"segment's last offset {res.last_offset}", f, i * tx.ENTRY_SIZE, e.last_offset)
        elif (table.deep and res.last_offset is not None and e.last_offset >= base
                and table.aborts.get(e.last_offset) != e.producer_id):
            res.add("txn_index_mismatch", f"entry {i}: no ABORT marker of producer {e.producer_id} at "
                    f"offset {e.last_offset}", f, i * tx.ENTRY_SIZE, e.last_offset)
        if e.first_offset > e.last_offset:
            res.add("txn_index_range", f"entry {i}: first offset {e.first_offset} is after the marker at "
                    f"{e.last_offset}", f, i * tx.ENTRY_SIZE, e.first_offset)
