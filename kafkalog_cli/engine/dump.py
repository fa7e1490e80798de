"""What ``dump-log`` reads, as a stream of events (Kafka ``DumpLogSegments``, minus its crashes).

The dumper walks each file once and yields plain values; renderers turn them into Kafka's text lines or
JSON objects. Where Kafka's tool aborts the run (size < 14, corrupt control key, missing companion file,
undecodable records) we yield a ``Finding`` (``engine/findings``) and carry on with the next batch or file.
"""
from __future__ import annotations

import bisect
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NamedTuple

from kafkalog_formats import control as ctl
from kafkalog_formats import native
from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES, MAX_SEGMENT_BYTES
from kafkalog_formats.message_set import BatchReader

from ..layout import classify_file
from .dump_grade import UNGRADED
from .findings import Finding
from .mapped import MappedFile, read_regular

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
RUN_RECORDS = 16384                       # records per RecordRun (compiled record path)
RUN_BYTES = 32 * 1024 * 1024              # and bytes (mapped or decompressed) per RecordRun


@dataclass
class DumpOptions:
    deep_iteration: bool = False
    print_data: bool = False
    max_bytes: int | None = None          # None: option not given (trailing bytes are reported)
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    index_sanity_check: bool = False
    verify_index_only: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    salvage: bool = False                 # read past damage as recover --salvage would (engine/salvage)


class FileStart(NamedTuple):
    file: str
    kind: str                # log, kraft_snapshot, bootstrap, index, timeindex, snapshot, txnindex
    header: str | None       # "Log starting offset: 0", "Snapshot end offset: ..., epoch: ..." ...


class RecordItem(NamedTuple):
    record: object           # kafkalog_formats.record_batch.Record
    control: dict | None     # decoded control record, for control batches


class BatchItem(NamedTuple):
    file: str
    batch: object            # BatchV2View | LegacyBatchView
    records: object          # with deep iteration: an iterable of RecordItem (BatchRecords), else None


class RecordRun(NamedTuple):
    """Consecutive v2 data batches read by the compiled record path, as columns (``columns.Scan``; with
    their records when ``deep``). Renderers write them natively, or expand them with ``items()`` into
    the ``BatchItem`` events the pure path gives for the same batches."""
    file: str
    scan: object
    deep: bool
    lo: int | None           # --from-offset / --to-offset: the records the run holds
    hi: int | None

    def items(self) -> Iterator[BatchItem]:
        for i in range(self.scan.n_batches):
            yield self.item(i)

    def item(self, i: int) -> BatchItem:
        """The ``BatchItem`` of the run's ``i``-th batch."""
        from kafkalog_formats.columns import B, NB
        from kafkalog_formats.message_set import BatchV2View
        b = BatchV2View(self.scan.sources[0], self.scan.batch_table()[i * NB + B["position"]])
        return BatchItem(self.file, b, _RunRecords(b, self.lo, self.hi) if self.deep else None)


class _RunRecords:
    """The records of one batch of a ``RecordRun`` within --from-offset/--to-offset, decoded each time they
    are iterated (never listed: a batch of millions of records costs one record at a time)."""

    __slots__ = ("batch", "lo", "hi")

    def __init__(self, batch, lo: int | None, hi: int | None) -> None:
        self.batch, self.lo, self.hi = batch, lo, hi

    def __iter__(self) -> Iterator[RecordItem]:
        lo, hi = self.lo, self.hi
        for r in self.batch.records():
            if (lo is None or r.offset >= lo) and (hi is None or r.offset <= hi):
                yield RecordItem(r, None)


class IndexEntry(NamedTuple):
    file: str
    slot: int
    offset: int
    position: int


class TimeIndexEntry(NamedTuple):
    file: str
    slot: int
    timestamp: int
    offset: int


class SnapshotEntry(NamedTuple):
    file: str
    entry: object


class TxnEntry(NamedTuple):
    file: str
    entry: object


class Notice(NamedTuple):
    file: str
    text: str


class TrailingBytes(NamedTuple):
    file: str
    position: int
    count: int


class Ignored(NamedTuple):
    file: str


@dataclass
class DumpReport:
    """End-of-run reports, in Kafka's discovery order (renderers choose the printing order)."""
    index_mismatches: dict = field(default_factory=dict)     # abs path -> [(index offset, log offset)]
    timestamp_mismatches: dict = field(default_factory=dict)  # abs path -> [(index ts, log ts)]
    out_of_order: dict = field(default_factory=dict)          # abs path -> [(ts, prev ts)]
    not_found: dict = field(default_factory=dict)             # abs path -> [(indexed offset, found offset)]
    non_consecutive: dict = field(default_factory=dict)       # abs path -> [(prev, next)]
    problems: int = 0
    ungraded: int = 0                 # problems about what could not be read (``dump_grade.UNGRADED``)
    problem_files: dict = field(default_factory=dict)         # files of the other problems (an ordered set)

    @property
    def has_problems(self) -> bool:
        return bool(self.problems or self.index_mismatches or self.timestamp_mismatches
                    or self.out_of_order or self.not_found)

    def graded_files(self) -> list[str]:
        """The files whose problems verify's grading decides (``dump_grade``): those of findings and
        trailing bytes, and the index files of the end-of-run reports."""
        files = dict(self.problem_files)
        for table in (self.index_mismatches, self.timestamp_mismatches, self.out_of_order, self.not_found):
            files.update(dict.fromkeys(table))
        return list(files)


class Dumper:
    def __init__(self, options: DumpOptions) -> None:
        self.opts = options
        self.report = DumpReport()

    def dump(self, files: list[str]) -> Iterator:
        for f in files:
            yield from self._problems_counted(self._dump_one(f))

    def _problems_counted(self, events):
        for ev in events:
            if isinstance(ev, (Finding, TrailingBytes)):
                self.report.problems += 1
                if isinstance(ev, Finding) and ev.kind in UNGRADED:
                    self.report.ungraded += 1
                else:
                    self.report.problem_files[ev.file] = None
            yield ev

    def _dump_one(self, f: str) -> Iterator:
        path = Path(f)
        name = path.name
        suffix = name[name.rfind("."):] if "." in name else ""
        if suffix not in (".log", ".checkpoint", ".index", ".timeindex", ".snapshot", ".txnindex"):
            yield Ignored(f)
            return
        if not path.is_file():
            yield FileStart(f, "missing", None)
            yield Finding("missing_file", "no such file" if not path.exists() else "not a regular file", f)
            return
        try:
            if suffix in (".log", ".checkpoint"):
                yield from self._dump_log(f, path, suffix)
            elif suffix == ".index":
                yield from self._dump_offset_index(f, path)
            elif suffix == ".timeindex":
                yield from self._dump_time_index(f, path)
            elif suffix == ".snapshot":
                yield from self._dump_snapshot(f, path)
            else:
                yield from self._dump_txn_index(f, path)
        except OSError as e:
            other = Path(e.filename).name if e.filename else None       # an index's companion .log, say
            what = f"its companion {other}" if other and other != name else ""
            yield Finding("io_error", f"cannot read{' ' + what if what else ''}: {e.strerror or e}", f)

    # --- .log / .checkpoint ----------------------------------------------------------------------

    def _dump_log(self, f: str, path: Path, suffix: str) -> Iterator:
        name = path.name
        if suffix == ".log":
            base = _leading_offset(name)
            yield FileStart(f, "log", f"Log starting offset: {base}" if base is not None else None)
            if base is None:
                yield Finding("bad_file_name", f"cannot parse a base offset from '{name}'", f)
        elif name == "bootstrap.checkpoint":
            yield FileStart(f, "bootstrap", "KRaft bootstrap snapshot")
        else:
            fn = classify_file(name)
            if fn.kind == "kraft_snapshot":
                yield FileStart(f, "kraft_snapshot", f"Snapshot end offset: {fn.offset}, epoch: {fn.epoch}")
            else:
                yield FileStart(f, "kraft_snapshot", None)
                yield Finding("bad_file_name", f"'{name}' is not named <endOffset>-<epoch>.checkpoint", f)
        opts = self.opts
        deep = opts.deep_iteration or opts.print_data
        walk = _Walk(str(path.resolve()), deep)
        size = path.stat().st_size
        if suffix == ".log" and size > MAX_SEGMENT_BYTES:       # FileRecords refuses to open it: not read
            yield Finding("segment_too_large", f"segment of {size} bytes exceeds Kafka's limit of {MAX_SEGMENT_BYTES} "
                          "(FileRecords refuses to open it, as kafka-dump-log.sh does): not read", f)
            return
        with MappedFile(path) as mf:
            end = len(mf.buf) if opts.max_bytes is None else min(len(mf.buf), opts.max_bytes)
            if opts.salvage and suffix == ".log":
                yield from self._log_salvaged(f, mf, end, walk, _leading_offset(name) or 0)
            elif native.ext is not None:
                yield from self._log_native(f, mf, end, walk)
            else:
                yield from self._log_batches(f, mf, 0, end, walk)

    def _log_salvaged(self, f: str, mf: MappedFile, end: int, walk: "_Walk", base: int) -> Iterator:
        """``--salvage``: the batches ``recover --salvage`` would keep (``engine/salvage``), each range it would
        drop reported (``salvage_skipped``: the bytes, what they held, the offsets lost), each batch it would
        repair shown as stored with the repair said (``salvage_repaired``). Nothing is changed."""
        from .salvage import Damage, Keep, walk_segment
        layout = walk_segment(mf.buf, base, None, None, release=mf.release_behind)
        for piece in layout.pieces:
            if piece.start >= end:
                break
            if isinstance(piece, Keep):
                if native.ext is not None:
                    yield from self._log_native(f, mf, min(piece.end, end), walk, piece.start)
                else:
                    yield from self._log_batches(f, mf, piece.start, min(piece.end, end), walk)
            elif isinstance(piece, Damage):
                yield Finding("salvage_skipped", f"bytes {piece.start}..{piece.end - 1} ({piece.size} bytes) skipped: "
                              f"{_held(piece)}" + (f"; offsets {piece.lost[0]}..{piece.lost[1]} lost" if piece.lost
                                                   else ""), f, piece.start)
            else:
                fields = ", ".join(f"{n.replace('_', ' ')} {o} -> {v}" for n, o, v in piece.fields)
                yield Finding("salvage_repaired", f"the batch at byte {piece.start} is shown as stored; recover "
                              f"--salvage repairs it ({fields}): {piece.reason}", f, piece.start, piece.first,
                              severity="warning")
                yield from self._log_batches(f, mf, piece.start, piece.end, walk, one=True)

    def _log_native(self, f: str, mf: MappedFile, end: int, walk: "_Walk", start: int = 0) -> Iterator:
        """The compiled record path: runs of v2 data batches as columns (``RecordRun``), and every batch the
        scan does not handle exactly as the pure path (control batches, bad CRCs, legacy entries, undecodable
        records) read by ``_log_batches``, so events and problems are the pure path's own."""
        from kafkalog_formats import codecs, columns
        opts = self.opts
        decompress = codecs.V2 if walk.deep else None
        pos = start
        while True:
            s = columns.scan(mf.buf, pos, end, records=walk.deep, headers=walk.deep, stop_bad_crc=True,
                             stop_control=True, decompress=decompress, lo=opts.from_offset, hi=opts.to_offset,
                             max_records=RUN_RECORDS, max_bytes=RUN_BYTES, pairs=walk.deep,
                             prev_offset=walk.last_offset)
            if s.n_batches:
                yield RecordRun(f, s, walk.deep, opts.from_offset, opts.to_offset)
            if s.pairs:
                self.report.non_consecutive.setdefault(walk.abs_path, []).extend(s.pairs)
            walk.last_offset = s.prev_offset
            mf.release_behind(s.stop)
            if s.reason == columns.LIMIT:
                pos = s.stop
                continue
            if s.reason == columns.TO_OFFSET:
                return
            nxt = yield from self._log_batches(f, mf, s.stop, end, walk, one=True)
            if nxt is None:
                return
            pos = nxt

    def _log_batches(self, f: str, mf: MappedFile, start: int, end: int, walk: "_Walk", one: bool = False):
        """The pure path over the batches from ``start`` (only the first when ``one``); returns the position
        after the batch read, or None once the file is done (its end, a stop, or --to-offset reached)."""
        opts = self.opts
        reader = BatchReader(mf.buf, start, end)
        for batch in reader:
            nxt = batch.position + batch.size
            if opts.from_offset is not None and batch.last_offset < opts.from_offset:
                if one:
                    return nxt
                continue
            if (opts.to_offset is not None and batch.magic >= 2
                    and batch.base_offset > opts.to_offset):
                return None
            if batch.codec > 4:
                yield Finding("codec", f"Unknown compression type id: {batch.codec}", f, batch.position,
                              batch.offset_field)
            if not batch.is_valid():
                yield Finding("crc_mismatch", f"Record is corrupt (stored crc = {batch.crc}, computed crc = "
                              f"{batch.computed_crc()})", f, batch.position, batch.offset_field)
            if not walk.deep:
                yield BatchItem(f, batch, None)
            else:
                items = BatchRecords(self, f, batch, walk.abs_path, walk.last_offset)
                yield BatchItem(f, batch, items)
                if not items.complete:          # nobody iterated them: decode once for the report
                    for _ in items:
                        pass
                if items.problem:
                    yield items.problem
                walk.last_offset = items.last_offset
            mf.release_behind(batch.position)
            if one:
                return nxt
        stop = reader.stop
        if stop is not None:
            if stop.kind == "trailing_bytes":
                if opts.max_bytes is None:
                    yield TrailingBytes(f, stop.position, stop.size)
            else:
                yield Finding(stop.kind, f"{stop.reason} in file {f}", f, stop.position)
        return None

    # --- indexes ---------------------------------------------------------------------------------

    def _companion(self, f: str, path: Path, suffix: str) -> Path | None:
        base = _leading_offset(path.name)
        if base is None:
            return None
        p = path.with_name(f"{path.name[:path.name.find('.')]}.{suffix}")
        return p if p.is_file() else None

    def _dump_offset_index(self, f: str, path: Path) -> Iterator:
        from kafkalog_formats import offset_index as oi
        yield FileStart(f, "index", None)
        base = _leading_offset(path.name)
        if base is None:
            yield Finding("bad_file_name", f"cannot parse a base offset from '{path.name}'", f)
            return
        log_path = self._companion(f, path, "log")
        with MappedFile(path) as mf:
            arr = oi.offset_index_array(mf.buf)
            entries = len(arr)
            if entries == 0:
                yield Notice(f, f"{f} is empty.")
                return
            if self.opts.index_sanity_check:
                msg = oi.offset_index_sanity(len(mf.buf), base, int(arr["rel"][-1]), str(path.resolve()))
                if msg:
                    yield Finding("index_sanity", msg, f)
                else:
                    yield Notice(f, f"{f} passed sanity check.")
                return
            if log_path is None:
                yield Finding("missing_companion", _without_segment(path, "index", base), f)
                return
            mismatches = []
            with MappedFile(log_path) as lf:
                size = len(lf.buf)
                cap = oi.max_plausible_entries(size)
                count = oi.real_entry_count(arr[:cap + 1])      # never reads past what the log can justify
                if count > cap:
                    count = cap
                    yield Finding("index_too_many_entries", f"more entries than the {size}-byte "
                                  f"segment can hold batches: only the first {count} are read", f, count * 8)
                rels = arr["rel"][:count].tolist()
                poss = arr["pos"][:count].tolist()
                for slot, (rel, pos) in enumerate(zip(rels, poss)):
                    lf.release_behind(pos)                  # the segment's pages behind the entries read
                    offset = base + rel
                    if pos < 0 or pos > size:
                        yield Finding("index_position_out_of_range", f"index entry {slot} (offset {offset}) points at "
                                      f"position {pos}, outside the {size}-byte log", f, slot * 8, offset)
                    else:
                        first = next(iter(BatchReader(lf.buf, pos, min(size, pos + self.opts.max_message_size))),
                                     None)
                        if first is None:
                            yield Finding("index_no_batch", f"no complete batch within "
                                          f"{self.opts.max_message_size} bytes of position {pos} "
                                          f"(index entry {slot}, offset {offset})", f, slot * 8, offset)
                        elif first.last_offset != offset:
                            mismatches.append((offset, first.last_offset))
                    if not self.opts.verify_index_only:
                        yield IndexEntry(f, slot, offset, pos)
            if mismatches:
                self.report.index_mismatches.setdefault(str(path.resolve()), []).extend(mismatches)

    def _dump_time_index(self, f: str, path: Path) -> Iterator:
        from kafkalog_formats import offset_index as oi
        from kafkalog_formats import time_index as ti
        yield FileStart(f, "timeindex", None)
        base = _leading_offset(path.name)
        if base is None:
            yield Finding("bad_file_name", f"cannot parse a base offset from '{path.name}'", f)
            return
        with MappedFile(path) as mf:
            arr = ti.time_index_array(mf.buf)
            if self.opts.index_sanity_check:
                msg = None
                if len(arr):
                    msg = ti.time_index_sanity(len(mf.buf), base, int(arr["ts"][0]), int(arr["ts"][-1]),
                                               int(arr["rel"][-1]), str(path.resolve()))
                elif len(mf.buf) % 12:
                    msg = ti.time_index_sanity(len(mf.buf), base, 0, 0, 0, str(path.resolve()))
                if msg:
                    yield Finding("index_sanity", msg, f)
                else:
                    yield Notice(f, f"{f} passed sanity check.")
                return
            log_path = self._companion(f, path, "log")
            idx_path = self._companion(f, path, "index")     # None: looked up from the segment's start, as
            if log_path is None:                              # Kafka's tool does with the empty index it creates
                yield Finding("missing_companion", _without_segment(path, "timeindex", base), f)
                return
            cap = oi.max_plausible_entries(log_path.stat().st_size)
            count = ti.real_entry_count(arr[:cap + 1])
            if count > cap:
                count = cap
                yield Finding("index_too_many_entries", "more entries than the segment can hold "
                              f"batches: only the first {count} are read", f, count * 12)
            entries = list(zip(arr["ts"][:count].tolist(), arr["rel"][:count].tolist()))
        abs_path = str(path.resolve())
        with MappedFile(log_path) as lf, (MappedFile(idx_path) if idx_path else nullcontext()) as xf:
            batches = _BatchTable(lf)
            prev_ts = -1
            for slot, (ts, rel) in enumerate(entries):
                offset = base + rel
                pos = 0 if xf is None else oi.offset_lookup(xf.buf, base, offset)[2]
                batch = batches.first_at_or_after(pos, offset)
                if batch is not None:
                    lf.release_behind(batch.position)      # the segment's pages behind the entries read
                if batch is None or batch.last_offset != offset:
                    self.report.not_found.setdefault(abs_path, []).append(
                        (offset, -1 if batch is None else batch.last_offset))
                else:
                    try:                      # DumpLogSegments starts from NO_TIMESTAMP (-1)
                        max_ts = max((r.timestamp for r in batch.records()),
                                     default=-1)
                        max_ts = max(max_ts, -1)
                    except FormatError as e:
                        yield Finding(e.kind, e.reason, f, e.position, offset)
                        max_ts = None
                    if max_ts is not None and max_ts != ts:
                        self.report.timestamp_mismatches.setdefault(abs_path, []).append((ts, max_ts))
                    if prev_ts >= ts:
                        self.report.out_of_order.setdefault(abs_path, []).append((ts, prev_ts))
                if not self.opts.verify_index_only:
                    yield TimeIndexEntry(f, slot, ts, offset)
                prev_ts = ts

    # --- producer snapshots and transaction indexes ----------------------------------------------

    def _dump_snapshot(self, f: str, path: Path) -> Iterator:
        from kafkalog_formats import producer_snapshot as ps
        yield FileStart(f, "snapshot", None)
        data = read_regular(path, MAX_BINARY_SIDE_FILE_BYTES)
        try:
            snap = ps.parse_producer_snapshot(data)
        except FormatError as e:
            yield Finding(e.kind, e.reason, f, e.position)
            return
        for entry in snap.entries:
            yield SnapshotEntry(f, entry)

    def _dump_txn_index(self, f: str, path: Path) -> Iterator:
        from kafkalog_formats import txn_index as tx
        yield FileStart(f, "txnindex", None)
        data = read_regular(path, MAX_BINARY_SIDE_FILE_BYTES)
        try:
            entries = tx.parse_txn_index(data)
        except FormatError as e:
            yield Finding(e.kind, e.reason, f, e.position)
            return
        for entry in entries:
            yield TxnEntry(f, entry)
        if len(data) % 34:
            yield Finding("partial_entry", f"{len(data) % 34} bytes at the end do not form a whole 34-byte entry "
                          "(ignored)", f, len(data) - len(data) % 34)


class BatchRecords:
    """The records of one batch as ``RecordItem``s, decoded each time they are iterated, never listed:
    memory stays bounded by one record however many the batch holds (a million-record batch is
    streamed to the renderer). The first complete iteration sets ``problem`` (the error that ended the
    batch, records before it kept) and ``last_offset`` and records offset gaps in the dump report."""

    def __init__(self, dumper: "Dumper", f: str, batch, abs_path: str, last_offset: int | None) -> None:
        self.dumper, self.file, self.batch, self.abs_path = dumper, f, batch, abs_path
        self.last_offset = last_offset
        self.problem: Finding | None = None
        self.complete = False

    def __iter__(self):
        first = not self.complete
        last = self.last_offset
        f, batch = self.file, self.batch
        lo, hi = self.dumper.opts.from_offset, self.dumper.opts.to_offset
        is_control = batch.is_control
        gaps = self.dumper.report.non_consecutive
        problem = None
        try:
            for rec in batch.records():
                if (lo is not None and rec.offset < lo) or (hi is not None and rec.offset > hi):
                    continue
                control = None
                if is_control:
                    try:
                        control = decode_control(rec)
                    except FormatError as e:
                        problem = Finding(e.kind, f"{e.reason} (record at offset "
                                          f"{rec.offset})", f, batch.position, rec.offset)
                        control = {"type": "INVALID", "error": e.reason}
                if first:
                    off = rec.offset
                    if last is not None and off != last + 1:
                        gaps.setdefault(self.abs_path, []).append((last, off))
                    last = off
                yield RecordItem(rec, control)
                if problem is not None:
                    break
        except FormatError as e:
            problem = Finding(e.kind, e.reason, f, e.position, batch.offset_field)
        if first:
            self.problem, self.last_offset, self.complete = problem, last, True


class _Walk:
    """What the walk over one .log carries from batch to batch (and between the native and pure paths)."""

    def __init__(self, abs_path: str, deep: bool) -> None:
        self.abs_path = abs_path
        self.deep = deep
        self.last_offset: int | None = None      # last record offset, for the non-consecutive report


class _BatchTable:
    """All batch positions and last offsets of a log, walked once (its pages released behind the walk);
    lookups by binary search, each batch read again when asked for. 16 bytes a batch, never a list of views.

    Replaces the per-entry rescans of Kafka's time-index verification (quadratic on large segments)
    with one pass, giving the same answer when offsets increase, and falling back to a scan otherwise.
    """

    def __init__(self, mapped: MappedFile) -> None:
        from array import array
        self.buf = mapped.buf
        self.positions, self.last_offsets = array("q"), array("q")
        for b in BatchReader(mapped.buf):
            self.positions.append(b.position)
            self.last_offsets.append(min(b.last_offset, (1 << 63) - 1))
            mapped.release_behind(b.position)
        mapped.restart()                  # the lookups walk it again from the start
        self.monotonic = all(a < b for a, b in zip(self.last_offsets, self.last_offsets[1:]))

    def _at(self, i: int):
        return next(iter(BatchReader(self.buf, self.positions[i])))

    def first_at_or_after(self, position: int, offset: int):
        i = bisect.bisect_left(self.positions, position)
        if self.monotonic:
            j = max(i, bisect.bisect_left(self.last_offsets, offset))
            return self._at(j) if j < len(self.positions) else None
        for j in range(i, len(self.positions)):
            if self.last_offsets[j] >= offset:
                return self._at(j)
        return None


def _held(damage) -> str:
    """What a dropped range held, in a few words (its first entries)."""
    parts = []
    for e in damage.entries[:3]:
        claimed = f", offsets {e.base}..{e.last} claimed" if e.base is not None else ""
        parts.append(f"{e.kind} at byte {e.position}{claimed}: {e.reason}")
    more = len(damage.entries) - 3
    return "; ".join(parts) + (f"; {more} more" if more > 0 else "")


def decode_control(rec) -> dict:
    """A control record as the dict dump-log, lookups and export show; FormatError when it is corrupt."""
    key = ctl.parse_control_key(rec.key)
    out: dict = {"type": key.name}
    if key.type in (ctl.ABORT, ctl.COMMIT):
        version, epoch = ctl.parse_end_txn_marker(rec.value)
        out.update(version=version, coordinator_epoch=epoch)
    elif key.type in (ctl.LEADER_CHANGE, ctl.SNAPSHOT_HEADER, ctl.SNAPSHOT_FOOTER, ctl.KRAFT_VERSION,
                      ctl.KRAFT_VOTERS):
        out["data"] = ctl.decode_kraft_control(key.type, rec.value)
    else:
        out["id"] = key.type
    return out


def _without_segment(path: Path, kind: str, base: int) -> str:
    """Why an index is not dumped without its segment, and the form that prints its entries unverified."""
    return (f"its segment {path.name[:path.name.find('.')]}.log does not exist, so it cannot be verified; to "
            f"print its entries unverified: kafkalog dump-log --type {kind} --base-offset {base} - < {path.name}")


def _leading_offset(name: str) -> int | None:
    head = name.split(".", 1)[0].split("-", 1)[0]
    return int(head) if head.isascii() and head.isdigit() else None
