"""compact's passes on the compiled path: the repair layer's seam to its extension
``kafkalog_cli.repair._native_clean`` (repair/_native_c/offset_map.c), and to the format layer's walks.

Which pure function each native one accelerates (``cleaner`` is the reference; every batch the C code does
not decide exactly — legacy, control or transactional batches, records that do not decode, offsets beyond
64 bits — goes back to the pure function, so decisions and problems are the pure path's own):

* ``OffsetMap`` -> ``cleaner.OffsetMap`` (Kafka's ``SkimpyOffsetMap``: the same table of 24-byte entries,
  capacity rule and ``latest_offset``);
* ``put_records`` (``map_put_batch``) -> ``cleaner.put_records``;
* ``map_segment`` (``map_put_run``: runs of plain data batches) -> ``cleaner.map_segment``
  (``Cleaner.buildOffsetMapForSegment``); with the two above, ``build_offset_map`` is
  ``cleaner.build_offset_map`` (``Cleaner.buildOffsetMap``) on the compiled map;
* ``survivors`` (``keep_batch``) -> ``cleaner.survivors`` (``_keep_record`` for every record of a batch);
* ``CleanWalk`` (``clean_run``: runs of batches of which nothing survives, as ``Dropped``) and
  ``clean_batches`` -> ``cleaner.clean_batches`` (``Cleaner.cleanInto``/``MemoryRecords.filterTo``);
* ``first_problem`` (the format layer's ``scan`` and ``batch_sound``) -> ``compact_exec._validate_range``'s
  loop over ``preflight.batch_problem``;
* ``HeaderWalk`` (the format layer's ``scan`` without records) -> ``compact_exec._scan``'s BatchReader walk.

Every function here falls back to the pure one when the native path is off (``KAFKALOG_PURE_PYTHON``, an
extension not built); tests/test_native_commands.py compares compact's output files byte for byte and
tests/test_native_parity.py the maps and decisions.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from kafkalog_formats import native

from . import cleaner
from .cleaner import MapEnd, Survivors

ext, reason = native.load("kafkalog_cli.repair._native_clean")
if ext is not None and native.ext is None:     # its walks read batches the format layer's extension frames
    ext, reason = None, native.reason


def available() -> bool:
    """Whether the format layer's compiled walks run (``HeaderWalk``, ``first_problem``)."""
    return native.ext is not None


@functools.cache
def _decompressor():
    """The one bounded decompression (``codecs.decompress``, which reads the bound in force,
    ``--max-decompressed-bytes``, at each call); a batch above it goes to the pure path, which reports it.
    Made once: compact asks for it per batch. The compiled passes decompress in C what it would."""
    from kafkalog_formats.codecs import V2
    return V2


# --- the offset map (Cleaner.buildOffsetMap) -------------------------------------------------------------

def build_offset_map(segment_batches, first_dirty: int, first_uncleanable: int, aborted: list,
                     cfg: cleaner.CleanerConfig):
    """``cleaner.build_offset_map`` on the compiled map, segments walked by ``map_segment``."""
    if ext is None:
        return cleaner.build_offset_map(segment_batches, first_dirty, first_uncleanable, aborted, cfg)
    return cleaner.build_offset_map(segment_batches, first_dirty, first_uncleanable, aborted, cfg,
                                    new_map=ext.OffsetMap, segment_pass=map_segment)


def put_records(m, b, first_dirty: int) -> bool:
    """``cleaner.put_records`` for a v2 data batch in C (``map_put_batch``: the whole section validated
    before the first key is put); any other batch, or one whose records do not decode, by the pure loop."""
    if ext is not None and type(m) is ext.OffsetMap and b.magic == 2:
        done = ext.map_put_batch(m, b.buf, b.position, first_dirty, _decompressor())
        if done is not None:
            return bool(done)
    return cleaner.put_records(m, b, first_dirty)


#: how a run of ``map_put_run`` ended, as the segment's loop ends ("limit": go on with the next run,
#: "python": the next batch is the pure code's)
_RUN_END = {"full": MapEnd.FULL, "uncleanable": MapEnd.UNCLEANABLE, "end": MapEnd.SEGMENT}


def map_segment(m, batches, txn: cleaner.TxnTracker, first_dirty: int, first_uncleanable: int) -> MapEnd:
    """``cleaner.map_segment`` with each run of non-transactional v2 data batches done in C
    (``map_put_run``) when ``batches`` is a ``MappedBatches``; every other batch by ``cleaner.map_batch``."""
    mf, start = getattr(batches, "mapped", None), getattr(batches, "start", None)
    if mf is None or ext is None or type(m) is not ext.OffsetMap:
        for b in batches:
            end = cleaner.map_batch(m, b, txn, first_dirty, first_uncleanable, put_records)
            if end is not None:
                return end
        return MapEnd.SEGMENT
    from kafkalog_formats.message_set import BatchReader
    buf, pos = mf.buf, start
    decompress = _decompressor()
    while True:
        pos, reason, max_last = ext.map_put_run(m, buf, pos, len(buf), first_dirty, first_uncleanable, decompress,
                                                RUN_BYTES)
        if max_last is not None:
            txn.plain_batches(max_last)
        mf.release_behind(pos)
        if reason in _RUN_END:
            return _RUN_END[reason]
        if reason == "limit":
            continue
        b = next(iter(BatchReader(buf, pos)), None)          # "python": this batch by the pure code
        if b is None:
            return MapEnd.SEGMENT
        end = cleaner.map_batch(m, b, txn, first_dirty, first_uncleanable, put_records)
        if end is not None:
            return end
        pos = b.position + b.size


class MappedBatches:
    """The batches of a mapped segment from ``start`` (an iterable, pages released behind), which
    ``map_segment`` can also walk in runs."""

    def __init__(self, mapped, start: int = 0) -> None:
        self.mapped, self.start = mapped, start

    def __iter__(self):
        from kafkalog_formats.message_set import BatchReader
        for b in BatchReader(self.mapped.buf, self.start):
            yield b
            self.mapped.release_behind(b.position)


# --- the cleaning (Cleaner.cleanInto) ----------------------------------------------------------------------

def survivors(b, offset_map, now: int, retain_legacy_deletes: bool, discard: bool) -> Survivors:
    """``cleaner.survivors`` for a v2 data batch decided in C (``keep_batch``: one byte per record; its
    records are made only when the batch must be rebuilt); any other batch by the pure rule."""
    if ext is not None and type(offset_map) is ext.OffsetMap and b.magic == 2:
        res = ext.keep_batch(offset_map, b.buf, b.position, now, _decompressor())
        if res is not None:
            mask, kept, kept_tombstones = res
            if discard or not kept:
                return Survivors(len(mask), 0, False, None)
            return Survivors(len(mask), kept, kept_tombstones > 0,
                             lambda: (r for r, k in zip(b.records(), mask) if k))
    return cleaner.survivors(b, offset_map, now, retain_legacy_deletes, discard)


def clean_batches(batches, offset_map, upper_bound: int, txn: cleaner.TxnTracker, active_producers: dict,
                  cfg: cleaner.CleanerConfig, now: int, retain_legacy_deletes: bool, stats: cleaner.GroupStats):
    """``cleaner.clean_batches`` over ``batches`` that may hold ``Dropped`` runs (``clean_walk``): each run is
    what ``clean_batch`` would do for its batches (count them, drop them, move the transaction tracker),
    every other batch goes to ``cleaner.clean_batch`` with its keep decisions made in C."""
    if ext is None:
        yield from cleaner.clean_batches(batches, offset_map, upper_bound, txn, active_producers, cfg, now,
                                         retain_legacy_deletes, stats)
        return
    for b in batches:
        if type(b) is Dropped:
            txn.plain_batches(b.max_last_offset)
            stats.batches_in += b.batches
            stats.bytes_in += b.bytes
            stats.records_in += b.records
            continue
        out = cleaner.clean_batch(b, offset_map, upper_bound, txn, active_producers, cfg, now, retain_legacy_deletes,
                                  stats, survivors)
        if out is not None:
            yield out


def first_problem(path, mf, batch_problem, want_position: int | None = None):
    """(the first problem of the segment or None, whether a batch starts at ``want_position``) as
    ``_validate_range``'s loop finds them; None when the native path is off."""
    if native.ext is None:
        return None
    from kafkalog_formats import columns
    from kafkalog_formats.message_set import BatchReader
    buf = mf.buf
    decompress = _decompressor()
    found = False
    pos = 0
    while True:
        s = columns.scan(buf, pos, None, headers=False, stop_bad_crc=True, stop_control=True, decompress=decompress,
                         max_records=65536)
        if want_position is not None and not found and s.n_batches:
            found = want_position in s.batch_table()[columns.B["position"]::columns.NB]
        mf.release_behind(s.stop)
        if s.reason == columns.LIMIT:
            pos = s.stop
            continue
        if s.reason != columns.PYTHON:
            return None, found
        b = next(iter(BatchReader(buf, s.stop)), None)
        if b is None:
            return None, found
        found = found or b.position == want_position
        # a batch beyond the scan's rows (millions of records): CRC and records checked in C, nothing kept
        sound = b.magic == 2 and native.ext.batch_sound(buf, b.position, decompress)
        p = None if sound else batch_problem(path, b)
        if p is not None:
            return p, found
        pos = b.position + b.size


# --- walks in runs: batches that need no Python decision summed up in C ------------------------------

RUN_BYTES = 32 * 1024 * 1024


class Run(NamedTuple):
    """Consecutive v2 batches without a producer id (nothing for the producer state but the end offset)."""
    batches: int
    first_max_timestamp: int
    next_offset: int          # last offset + 1 of the run's last batch
    max_timestamp: int        # the greatest batch max timestamp of the run


class HeaderWalk:
    """compact's first walk of a segment (``compact_exec._scan``): every batch with a producer id, every
    legacy entry and every batch the scan hands over as its view, each run of other v2 batches as one
    ``Run``; ``stop`` is BatchReader's after the loop. Mapped pages are released behind it."""

    def __init__(self, mf) -> None:
        self.mf = mf
        self.stop = None

    def __iter__(self):
        from kafkalog_formats import columns as C
        from kafkalog_formats.message_set import BatchReader, BatchV2View
        buf = self.mf.buf
        pos = 0
        while True:
            s = C.scan(buf, pos, None, records=False, headers=False, crc=False, max_bytes=RUN_BYTES)
            bt = s.batch_table()
            n = s.n_batches
            prev = 0
            for i in range(n + 1):
                if i < n and bt[i * C.NB + C.B["producer_id"]] < 0:
                    continue
                if i > prev:
                    last = i - 1
                    col = C.B["max_timestamp"]
                    yield Run(i - prev, bt[prev * C.NB + col],
                              bt[last * C.NB + C.B["base_offset"]] + bt[last * C.NB + C.B["last_offset_delta"]] + 1,
                              max(bt[prev * C.NB + col:i * C.NB:C.NB]))
                if i < n:
                    yield BatchV2View(buf, bt[i * C.NB + C.B["position"]])
                prev = i + 1
            self.mf.release_behind(s.stop)
            if s.reason == C.LIMIT:
                pos = s.stop
                continue
            reader = BatchReader(buf, s.stop)
            b = next(iter(reader), None) if s.reason == C.PYTHON else None
            if b is None:
                for _ in reader:                 # a framing stop (or the end): BatchReader describes it
                    pass
                self.stop = reader.stop
                return
            yield b
            pos = b.position + b.size


class Dropped(NamedTuple):
    """A run of v2 data batches of which the cleaning keeps nothing (``clean_run``): what ``clean_batches``
    counts for them, and how far the transaction tracker moves."""
    batches: int
    bytes: int
    records: int
    max_last_offset: int


class CleanWalk:
    """The batches of a mapped segment for ``clean_batches``: each run of non-transactional batches without
    a producer id of which no record survives as one ``Dropped`` (decided in C), every other batch as
    itself for the pure code; mapped pages released behind."""

    def __init__(self, mapped, offset_map, now: int, upper_bound: int) -> None:
        self.mapped, self.map, self.now, self.upper_bound = mapped, offset_map, now, upper_bound

    def __iter__(self):
        from kafkalog_formats.message_set import BatchReader
        buf, pos = self.mapped.buf, 0
        decompress = _decompressor()
        while True:
            pos, reason, n, size, records, max_last = ext.clean_run(
                self.map, buf, pos, len(buf), self.now, self.upper_bound, decompress, RUN_BYTES)
            if n:
                yield Dropped(n, size, records, max_last)
            self.mapped.release_behind(pos)
            if reason == "limit":
                continue
            if reason == "end":
                return
            b = next(iter(BatchReader(buf, pos)), None)       # "python": this batch by the pure code
            if b is None:
                return
            yield b
            self.mapped.release_behind(b.position)
            pos = b.position + b.size


def clean_walk(mapped, m, now: int, upper_bound: int) -> CleanWalk | None:
    """``CleanWalk`` over a mapped segment, or None when the native path is off (the caller walks every
    batch)."""
    if ext is None or type(m) is not ext.OffsetMap:
        return None
    return CleanWalk(mapped, m, now, upper_bound)
