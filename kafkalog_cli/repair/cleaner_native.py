"""compact's per-record passes on the compiled record path (formats/_native_c/offset_map.c).

* ``new_offset_map``: the offset map as a C hash table of MD5(key) -> offset with ``cleaner.OffsetMap``'s
  capacity rule and ``latest_offset`` (memory grows with the distinct keys, not the dedupe buffer);
* ``put_records``: ``build_offset_map``'s loop over one data batch's records;
* ``keep_decisions``: ``cleaner._keep_record`` for every record of one v2 data batch;
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


@functools.lru_cache(maxsize=4)
def _decompressor(max_output: int):
    from kafkalog_formats.codecs import decompress
    return functools.partial(decompress, magic=2, max_output=max_output)


def put_records(m, b, first_dirty: int, max_output: int) -> int | None:
    """Every keyed record of data batch ``b`` at or above ``first_dirty`` into map ``m``: 1, or 0 when the
    map filled up (the build stops); None: the pure loop must do it."""
    if native.ext is None or type(m) is not native.ext.OffsetMap or b.magic != 2:
        return None
    return native.ext.map_put_batch(m, b.buf, b.position, first_dirty, _decompressor(max_output))


class Keep(NamedTuple):
    records: int          # records in the batch
    mask: bytes           # 1 per record kept
    kept: int
    kept_tombstones: int  # kept records with a null value


def keep_decisions(m, b, now: int, max_output: int) -> Keep | None:
    """``_keep_record`` for every record of v2 data batch ``b``; None: the pure code decides."""
    if native.ext is None or type(m) is not native.ext.OffsetMap or b.magic != 2:
        return None
    res = native.ext.keep_batch(m, b.buf, b.position, now, _decompressor(max_output))
    return None if res is None else Keep(len(res[0]), *res)


def first_problem(path, mf, batch_problem, want_position: int | None = None):
    """(the first problem of the segment or None, whether a batch starts at ``want_position``) as
    ``_validate_range``'s loop finds them; None when the native path is off."""
    if native.ext is None:
        return None
    from kafkalog_formats import codecs, columns
    from kafkalog_formats.message_set import BatchReader
    from .preflight import MAX_DECOMPRESSED_BYTES
    buf = mf.buf
    decompress = functools.partial(codecs.decompress, magic=2, max_output=MAX_DECOMPRESSED_BYTES)
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
        p = batch_problem(path, b)
        if p is not None:
            return p, found
        pos = b.position + b.size
