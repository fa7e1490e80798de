"""Verify one segment in one forward pass: the ``.log``, then its indexes against what the pass saw.

Checks (kafka-on-disk.md §1, §3, §4.1, §7.2), each a Finding with a stable ``kind``:

.log    framing (size < 14, partial entry, v2 batch < 61 bytes), zero-filled tails, CRC-32C / CRC-32,
        magic, offsets strictly increasing (within and across segments), segment base ≤ first offset,
        offsets representable relative to the base, batches above max.message.bytes (warning),
        records (deep: structure, decompression, offsets inside the batch, count, control keys).
.index  file length, Kafka's sanity rule, untrimmed tail (warning on inactive segments), every entry
        at a batch start with that batch's last offset — or, for follower multi-batch appends, the last
        offset of a later batch — offsets and positions strictly increasing.
.timeindex  length, sanity rule, timestamps strictly increasing, offsets non-decreasing, each entry
        (T, O) naming a batch's last offset O whose running max timestamp is T, and on inactive
        segments a last entry equal to the segment's max timestamp.
.txnindex   version, sanity rule, last offsets increasing, each pointing at an ABORT marker.

The result is plain data (picklable) so the Spark ``scan`` can run it per segment on executors.
"""
from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kafkalog_formats import control as ctl
from kafkalog_formats import offset_index as oi
from kafkalog_formats import time_index as ti
from kafkalog_formats import txn_index as tx
from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import all_zero
from kafkalog_formats.message_set import BatchReader

from .findings import Finding
from .mapped import MappedFile

INT_MAX = 0x7FFFFFFF
MAX_SEGMENT_BYTES = INT_MAX
DEFAULT_MAX_MESSAGE_BYTES = 1048588


@dataclass
class SegmentOptions:
    deep: bool = True
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_decompressed_bytes: int | None = None        # None: kafkalog_formats.limits (--max-decompressed-bytes)


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
    log_path = Path(log_path)
    res = SegmentResult(str(log_path), base_offset)
    try:
        table = _verify_log(log_path, base_offset, previous_last_offset, opts, res)
    except OSError as e:
        res.add("io_error", f"cannot read: {e.strerror or e}")
        return res
    for suffix, check in (("index", _verify_offset_index), ("timeindex", _verify_time_index),
                          ("txnindex", _verify_txn_index)):
        path = log_path.with_suffix("." + suffix)
        if not path.exists():
            if suffix == "index":
                res.add("missing_index", "no offset index: Kafka rebuilds the segment's indexes on load "
                        "(kafka-on-disk.md §7.1 pass 3)", str(path), severity="warning")
            elif suffix == "timeindex" and res.batches:
                res.add("missing_time_index", "no time index: Kafka creates it empty, so time-based "
                        "retention and lookups fall back to the file mtime", str(path), severity="warning")
            continue
        try:
            with MappedFile(path) as mf:
                check(mf.buf, str(path), base_offset, active, table, res)
        except OSError as e:
            res.add("io_error", f"cannot read: {e.strerror or e}", str(path))
    return res


class _BatchTable:
    """Per-batch positions, last offsets and timestamps collected by the log pass (for index checks)."""

    def __init__(self) -> None:
        self.positions = array("q")
        self.last_offsets = array("q")
        self.max_timestamps = array("q")
        self.aborts: dict[int, int] = {}      # marker offset -> producer id, for ABORT control records
        self.deep = True

    def arrays(self):
        pos = np.frombuffer(self.positions, dtype=np.int64) if self.positions else np.zeros(0, np.int64)
        last = np.frombuffer(self.last_offsets, dtype=np.int64) if self.last_offsets else np.zeros(0, np.int64)
        ts = np.frombuffer(self.max_timestamps, dtype=np.int64) if self.max_timestamps else np.zeros(0, np.int64)
        return pos, last, ts


def _verify_log(path: Path, base: int, prev_last: int | None, opts: SegmentOptions,
                res: SegmentResult) -> _BatchTable:
    table = _BatchTable()
    f = str(path)
    with MappedFile(path) as mf:
        buf = mf.buf
        res.size = len(buf)
        if res.size > MAX_SEGMENT_BYTES:
            res.add("segment_too_large", f"segment of {res.size} bytes exceeds Kafka's limit of {MAX_SEGMENT_BYTES}")
        reader = BatchReader(buf)
        last = prev_last
        first_invalid = None
        table.deep = opts.deep
        for b in reader:
            pos = b.position
            magic = b.magic
            try:
                b_last = b.last_offset
                b_base = b.base_offset if (magic >= 2 or b.codec == 0 or opts.deep) else b_last
            except FormatError as e:
                res.add(e.kind, e.reason, position=pos, offset=b.offset_field)
                b_last = b_base = b.offset_field
            if magic > 2 or magic < 0:
                res.add("invalid_magic", f"Invalid magic found in record: {magic}", position=pos, offset=b_base)
            valid = b.is_valid()
            if not valid:
                res.add("crc_mismatch", f"Record is corrupt (stored crc = {b.crc}, computed crc = "
                        f"{b.computed_crc()})", position=pos, offset=b_base)
                if first_invalid is None:
                    first_invalid = pos
            if b.size > opts.max_message_bytes:
                res.add("oversized_batch", f"batch of {b.size} bytes exceeds max.message.bytes "
                        f"{opts.max_message_bytes} (Kafka enforces this on append only)",
                        position=pos, offset=b_base, severity="warning")
            if b_last < b_base:
                res.add("negative_offset_delta", f"batch last offset {b_last} is below its base offset {b_base}",
                        position=pos, offset=b_base)
            if res.batches == 0 and b_base < base:
                res.add("offset_below_segment_base", f"first batch starts at offset {b_base}, below the segment's "
                        f"base offset {base}", position=pos, offset=b_base)
            if last is not None and b_base <= last:
                where = "the previous segment" if res.batches == 0 else "the previous batch"
                res.add("non_monotonic_offset", f"batch offsets {b_base}..{b_last} do not follow {where}, which "
                        f"ended at offset {last} (Kafka: InvalidOffsetException on recovery)",
                        position=pos, offset=b_base)
            if b_last - base > INT_MAX:
                res.add("offset_overflow", f"offset {b_last} cannot be stored relative to base offset {base}",
                        position=pos, offset=b_last)
            codec = b.codec_name
            res.codecs[codec] = res.codecs.get(codec, 0) + 1
            if opts.deep and valid:
                res.records += _verify_records(b, b_base, b_last, opts, res, table)
            else:
                res.records += b.count if b.count is not None else 1
            if res.first_offset is None:
                res.first_offset = b_base
                res.first_timestamp = b.max_timestamp
            table.positions.append(pos)
            table.last_offsets.append(b_last)
            table.max_timestamps.append(b.max_timestamp)
            if b.max_timestamp > res.max_timestamp:
                res.max_timestamp = b.max_timestamp
            res.batches += 1
            last = b_last
            res.last_offset = b_last
            res.next_offset = b_last + 1
            if first_invalid is None:
                res.valid_bytes = pos + b.size
        stop = reader.stop
        if stop is not None:
            _report_stop(res, stop, buf, f)
        if first_invalid is not None:
            res.add("truncation_point", f"Kafka's recovery would truncate this segment at byte {first_invalid} "
                    f"({res.size - first_invalid} bytes) and delete every later segment of the partition",
                    position=first_invalid, severity="warning")
    return table


def _report_stop(res: SegmentResult, stop, buf, f: str) -> None:
    zeros = all_zero(buf, stop.position, len(buf))
    if zeros:
        res.add("zero_tail", f"{stop.size} zero bytes at the end (a preallocated or crash-extended file); "
                "Kafka's recovery truncates them", position=stop.position)
    elif stop.kind == "trailing_bytes":
        res.add("trailing_bytes", f"{stop.size} bytes at the end do not form a complete batch (torn write); "
                "Kafka's recovery truncates them", position=stop.position)
    else:
        res.add(stop.kind, stop.reason, position=stop.position)


def _verify_records(b, b_base: int, b_last: int, opts: SegmentOptions, res: SegmentResult,
                    table: _BatchTable) -> int:
    n = 0
    prev = None
    try:
        for rec in b.records(max_output=opts.max_decompressed_bytes):
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
    """Kafka's zero-tail heuristic, plus: a zero slot 0 followed only by zeros is an empty preallocated
    file. No real entry can be (base offset, position 0): the first batch of a segment is never indexed
    (kafka-on-disk.md §3.6), so an all-zero slot 0 is padding."""
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


def _untrimmed(entries: int, real: int, active: bool, f: str, res: SegmentResult, size: int) -> None:
    if real < entries and not active:
        res.add("untrimmed_index", f"{entries - real} zero slots after {real} entries on an inactive segment "
                "(Kafka trims indexes when a segment rolls)", f, real * size, severity="warning")


def _verify_offset_index(buf, f: str, base: int, active: bool, table: _BatchTable, res: SegmentResult) -> None:
    if len(buf) % 8:
        res.add("index_size", f"Index file {f} is corrupt, found {len(buf)} bytes which is neither positive nor "
                "a multiple of 8", f, len(buf) - len(buf) % 8)
    arr = oi.offset_index_array(buf)
    real = _capped(arr, f, 8, res)
    _untrimmed(len(arr), real, active, f, res, 8)
    if real == 0:
        return
    rel = arr["rel"][:real].astype(np.int64)
    pos = arr["pos"][:real].astype(np.int64)
    msg = oi.offset_index_sanity(real * 8, base, int(rel[-1]), f)
    if msg:
        res.add("index_sanity", msg, f, (real - 1) * 8, base + int(rel[-1]))
    offs = rel + base
    bad = np.nonzero(np.diff(offs) <= 0)[0]
    for i in bad[:20]:
        res.add("index_not_increasing", f"slot {i + 1}: offset {offs[i + 1]} is not above slot {i}'s {offs[i]}",
                f, int(i + 1) * 8, int(offs[i + 1]))
    bad = np.nonzero(np.diff(pos) <= 0)[0]
    for i in bad[:20]:
        res.add("index_not_increasing", f"slot {i + 1}: position {pos[i + 1]} is not after slot {i}'s {pos[i]}",
                f, int(i + 1) * 8, int(offs[i + 1]))
    bpos, blast, _bts = table.arrays()
    k = np.searchsorted(bpos, pos)
    inside = k < len(bpos)
    at_start = np.zeros(real, dtype=bool)
    at_start[inside] = bpos[k[inside]] == pos[inside]
    j = np.searchsorted(blast, offs)
    ends_batch = np.zeros(real, dtype=bool)
    ok_j = j < len(blast)
    ends_batch[ok_j] = blast[j[ok_j]] == offs[ok_j]
    valid = at_start & ends_batch & (j >= k)
    multi = valid & (j > k)
    if multi.any():
        i = int(np.nonzero(multi)[0][0])
        res.add("index_multi_batch_entry", f"{int(multi.sum())} entries (first: slot {i}) name the last offset of "
                "a later batch than the one at their position: written by a follower's multi-batch append, "
                "valid for lookups (DumpLogSegments reports them as mismatches)", f, i * 8, int(offs[i]),
                severity="info")
    for i in np.nonzero(~valid)[0][:50]:
        i = int(i)
        o, p = int(offs[i]), int(pos[i])
        if p >= res.size or p < 0:
            res.add("index_position_out_of_range", f"slot {i}: position {p} is outside the {res.size}-byte log",
                    f, i * 8, o)
        elif not at_start[i]:
            res.add("index_position_not_batch_start", f"slot {i}: position {p} is not the start of a batch", f,
                    i * 8, o)
        elif not ends_batch[i]:
            res.add("index_offset_mismatch", f"slot {i}: offset {o} is not the last offset of any batch "
                    f"(the batch at position {p} ends at {int(blast[k[i]])})", f, i * 8, o)
        else:
            res.add("index_offset_mismatch", f"slot {i}: offset {o} ends a batch before position {p}", f, i * 8, o)


def _verify_time_index(buf, f: str, base: int, active: bool, table: _BatchTable, res: SegmentResult) -> None:
    if len(buf) % 12:
        res.add("index_size", f"Time index file {f} is corrupt, found {len(buf)} bytes which is neither "
                "positive nor a multiple of 12", f, len(buf) - len(buf) % 12)
    arr = ti.time_index_array(buf)
    real = _capped(arr, f, 12, res)
    _untrimmed(len(arr), real, active, f, res, 12)
    if real == 0:
        if not active and res.max_timestamp >= 0:
            res.add("time_index_missing_final_entry", f"empty time index on an inactive segment whose max "
                    f"timestamp is {res.max_timestamp}: time retention falls back to the file mtime", f,
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
    _bpos, blast, bts = table.arrays()
    running = np.maximum.accumulate(bts) if len(bts) else bts
    j = np.searchsorted(blast, offs)
    for i in range(real):
        ji = int(j[i])
        o, t = int(offs[i]), int(ts[i])
        if ji >= len(blast) or blast[ji] != o:
            res.add("time_index_offset_mismatch", f"slot {i}: offset {o} is not the last offset of a batch",
                    f, i * 12, o)
        elif int(running[ji]) != t:
            res.add("time_index_timestamp_mismatch", f"slot {i}: timestamp {t} but the greatest batch timestamp "
                    f"up to offset {o} is {int(running[ji])}", f, i * 12, o)
    if not active and res.max_timestamp >= 0 and int(ts[-1]) != res.max_timestamp:
        res.add("time_index_missing_final_entry", f"last time index entry has timestamp {int(ts[-1])}, not the "
                f"segment's max timestamp {res.max_timestamp} (Kafka writes it on roll)", f, (real - 1) * 12,
                int(offs[-1]), severity="warning")


def _verify_txn_index(buf, f: str, base: int, active: bool, table: _BatchTable, res: SegmentResult) -> None:
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
        res.add("index_sanity", msg, f)
    prev = None
    for i, e in enumerate(entries):
        if prev is not None and e.last_offset <= prev:
            res.add("txn_index_not_increasing", f"entry {i}: last offset {e.last_offset} is not above "
                    f"{prev}", f, i * tx.ENTRY_SIZE, e.last_offset)
        prev = e.last_offset
        if (table.deep and res.last_offset is not None and e.last_offset <= res.last_offset
                and table.aborts.get(e.last_offset) != e.producer_id):
            res.add("txn_index_mismatch", f"entry {i}: no ABORT marker of producer {e.producer_id} at "
                    f"offset {e.last_offset}", f, i * tx.ENTRY_SIZE, e.last_offset)
        if e.first_offset > e.last_offset:
            res.add("txn_index_range", f"entry {i}: first offset {e.first_offset} is after the marker at "
                    f"{e.last_offset}", f, i * tx.ENTRY_SIZE, e.first_offset)
