"""compact's per-record passes on the compiled record path (formats/_native_c/offset_map.c).

* ``new_offset_map``: the offset map in C, the same fixed table of 24-byte entries as ``cleaner.OffsetMap``
  (Kafka's ``SkimpyOffsetMap``), its capacity rule and ``latest_offset``;
* ``put_records``: ``build_offset_map``'s loop over one data batch's records;
* ``keep_decisions``: ``cleaner._keep_record`` for every record of one v2 data batch;
* ``clean_walk``: ``clean_batches``'s input with each run of batches of which nothing survives decided in C;
* ``first_problem``: ``_validate_range``'s walk over a segment, records decoded in C, every batch the scan
  hands over checked by ``preflight.batch_problem``.

Each returns None when the pure code must do the work (the native path is off, a legacy or control batch,
a batch whose records do not decode or whose offsets exceed 64 bits), so decisions and problems are the
pure path's own; tests/test_native_commands.py compares compact's output files byte for byte.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from kafkalog_formats import native


def new_offset_map(slots: int, load_factor: float):
    """The C offset map, or None (the caller makes a ``cleaner.OffsetMap``)."""
    return None if native.ext is None else native.ext.OffsetMap(slots, load_factor)


@functools.cache
def _decompressor():
    """The one bounded decompression (``codecs.decompress``, which reads the bound in force,
    ``--max-decompressed-bytes``, at each call); a batch above it goes to the pure path, which reports it.
    Made once: compact asks for it per batch."""
    from kafkalog_formats.codecs import decompress
    return functools.partial(decompress, magic=2)


def put_records(m, b, first_dirty: int) -> int | None:
    """Every keyed record of data batch ``b`` at or above ``first_dirty`` into map ``m``: 1, or 0 when the
    map filled up (the build stops); None: the pure loop must do it."""
    if native.ext is None or type(m) is not native.ext.OffsetMap or b.magic != 2:
        return None
    return native.ext.map_put_batch(m, b.buf, b.position, first_dirty, _decompressor())


class Keep(NamedTuple):
    records: int          # records in the batch
    mask: bytes           # 1 per record kept
    kept: int
    kept_tombstones: int  # kept records with a null value


def keep_decisions(m, b, now: int) -> Keep | None:
    """``_keep_record`` for every record of v2 data batch ``b``; None: the pure code decides."""
    if native.ext is None or type(m) is not native.ext.OffsetMap or b.magic != 2:
        return None
    res = native.ext.keep_batch(m, b.buf, b.position, now, _decompressor())
    return None if res is None else Keep(len(res[0]), *res)


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


def available() -> bool:
    return native.ext is not None


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


def map_runs(m, src, one, consume_up_to, first_dirty: int, first_uncleanable: int):
    """``build_offset_map``'s loop over one segment's batches, runs of non-transactional v2 data batches
    done in C (``map_put_run``), every other batch by ``one(b)``; returns ("return",) when the build
    ends (the map is full), ("break",) at a batch above the first uncleanable offset, ("end",) at the end
    of the segment; None when ``src`` cannot be walked in runs (the caller loops itself)."""
    mf, start = getattr(src, "mapped", None), getattr(src, "start", None)
    if native.ext is None or mf is None or type(m) is not native.ext.OffsetMap:
        return None
    from kafkalog_formats.message_set import BatchReader
    buf, pos = mf.buf, start
    decompress = _decompressor()
    while True:
        pos, reason, max_last = native.ext.map_put_run(m, buf, pos, len(buf), first_dirty, first_uncleanable,
                                                        decompress, RUN_BYTES)
        if max_last is not None:
            consume_up_to(max_last)          # what TxnTracker.data_batch did for each batch of the run
        mf.release_behind(pos)
        if reason == "full":
            return ("return",)
        if reason == "uncleanable":
            return ("break",)
        if reason == "end":
            return ("end",)
        if reason == "limit":
            continue
        b = next(iter(BatchReader(buf, pos)), None)          # "python": this batch by the pure code
        if b is None:
            return ("end",)
        verdict = one(b)
        if verdict is not None:
            return (verdict,)
        pos = b.position + b.size


class MappedBatches:
    """The batches of a mapped segment from ``start`` (an iterable, pages released behind), which
    ``map_runs`` can also walk in runs."""

    def __init__(self, mapped, start: int = 0) -> None:
        self.mapped, self.start = mapped, start

    def __iter__(self):
        from kafkalog_formats.message_set import BatchReader
        for b in BatchReader(self.mapped.buf, self.start):
            yield b
            self.mapped.release_behind(b.position)


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
            pos, reason, n, size, records, max_last = native.ext.clean_run(
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
    if native.ext is None or type(m) is not native.ext.OffsetMap:
        return None
    return CleanWalk(mapped, m, now, upper_bound)
