"""Broker-exact lookups by offset and by timestamp (Kafka ``UnifiedLog.read`` / ``fetchOffsetByTimestamp``).

Each lookup records its steps (segment chosen, index slot and entry, start position, bytes scanned,
the batch) so the command can show how Kafka finds the record. Index files are searched in place:
the entry count and the binary search probe O(log n) slots of the mapped file, never the whole index.

Offset (docs/kafka-on-disk.md §3.5): floor segment by base offset → relative offset → ``largestLowerBoundSlotFor``
in the offset index (slot −1 ⇒ position 0) → scan forward to the first batch whose last offset ≥ target.

Timestamp (§3.5, §8): first segment whose largestTimestamp (last time-index entry when > 0, else the
``.log`` mtime) ≥ target → time-index floor lookup → offset-index lookup of max(that offset, log start)
→ scan for the first record with timestamp ≥ target and offset ≥ log start. Like Kafka, only that one
segment is searched.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats import offset_index as oi
from kafkalog_formats import time_index as ti
from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import all_zero
from kafkalog_formats.message_set import BatchReader

from .. import units
from ..errors import KafkalogError
from ..status import Status
from .logdir import LogDir
from .mapped import MappedFile, is_regular
from .partition import PartitionLog

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


class LookupFailed(KafkalogError):
    """A lookup that cannot be answered (out of range, nothing at or after a timestamp, no segments):
    ``kind`` names which. No segment to look in: the lookup could not run (exit status 3); otherwise the
    log was read and holds no answer, a problem found (1)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def status(self) -> int:
        return Status.CANNOT_RUN if self.kind == "no_segments" else Status.PROBLEMS


@dataclass
class Step:
    segment: str
    base_offset: int
    index_file: str | None = None
    index_entries: int = 0
    slot: int = -1
    entry: tuple | None = None           # (offset, position) or (timestamp, offset)
    start_position: int = 0
    bytes_scanned: int = 0
    batches_scanned: int = 0
    note: str | None = None


@dataclass
class LookupResult:
    target: int
    log_start_offset: int
    log_end_offset: int
    steps: list = field(default_factory=list)
    batch: object = None                 # BatchV2View | LegacyBatchView (kept mapped by ``mapped``)
    record: object = None                # kafkalog_formats.record_batch.Record
    found_offset: int | None = None
    found_timestamp: int | None = None
    exact: bool = True                   # False: the target offset was removed (compaction), next one given
    recorded: bool = False               # max-timestamp by 3.0-3.7's rule (the offset a segment recorded)
    mapped: list = field(default_factory=list)

    def close(self) -> None:
        for m in self.mapped:
            m.close()


def _entry_count(buf, entry_size: int, rel_at: int) -> int:
    """Entries before the zero tail (DumpLogSegments' heuristic), by binary search: for i ≥ 1 real entries
    have relative offset > 0 and the preallocated tail has 0."""
    n = len(buf) // entry_size
    if n <= 1:
        if n == 1 and not any(bytes(buf[0:entry_size])):
            return 0
        return n
    rel = lambda i: struct.unpack_from(">i", buf, i * entry_size + rel_at)[0]
    if rel(n - 1) != 0:
        return n
    lo, hi = 1, n - 1                      # first slot ≥ 1 whose relative offset is 0
    while lo < hi:
        mid = (lo + hi) // 2
        if rel(mid) == 0:
            hi = mid
        else:
            lo = mid + 1
    if lo == 1 and not any(bytes(buf[0:entry_size])):
        return 0                           # an all-zero preallocated file: no entry at position 0 exists
    return lo


class PartitionView:
    """A partition directory with its log range (log start from the checkpoint when there is one)."""

    def __init__(self, directory: str | Path, log_start_checkpoint: dict | None = None, load=None) -> None:
        """``log_start_checkpoint``: the log directory's log-start-offset-checkpoint, when the caller has read
        it already (else it is found and read here: a listing of the log directory per partition); ``load``:
        the partition's ``LoadPlan``, when the caller knows it (else read on first use, ``load``)."""
        self.log = PartitionLog.open(directory)
        if not self.log.segments:
            raise LookupFailed(f"{directory} holds no segment file", "no_segments")
        self.bases = list(self.log.segments)
        first = self.bases[0]
        self.log_start = first
        self.checkpoint_log_start: int | None = None   # the partition's log start as the broker checkpointed it
        name = self.log.name
        cp = log_start_checkpoint
        if cp is None and name is not None:
            from .targets import logdir_of
            parent = logdir_of(Path(directory))
            if parent is not None:
                cp, _err = LogDir(parent).offset_checkpoint("log-start-offset-checkpoint")
        if cp is not None and name is not None:
            self.checkpoint_log_start = cp.get((name.topic, name.partition))
            self.log_start = max(cp.get((name.topic, name.partition), first), first)
        self.damage: FormatError | None = None   # where reading the log's end stopped on damaged bytes
        self.log_end = self._log_end()
        self._load = load

    @property
    def load(self):
        """Which segments the broker's next start recovers (``load_plan.plan_for``: without
        ``.kafka_cleanshutdown``, from the segment holding the recovery point; a partition given without its
        log directory: the active segment), read from the log directory on first use unless given."""
        if self._load is None:
            from ..layout import METADATA_PARTITION
            from .load_plan import plan_for
            from .targets import logdir_of
            name = self.log.name
            parent = logdir_of(self.log.directory)
            clean = rp = None
            if name is not None and parent is not None:
                d = LogDir(parent)
                clean = d.has_clean_shutdown_marker
                rp = d.offset_checkpoint("recovery-point-offset-checkpoint")[0].get((name.topic, name.partition))
            self._load = plan_for(self.bases, metadata_log=str(name) == METADATA_PARTITION, deleted=False,
                                  clean_shutdown=clean, recovery_point=rp)
        return self._load

    def _log_end(self) -> int:
        """The next offset after the last batch that can be read. Damaged bytes where the reading stops
        (not a zero-filled, preallocated end) are kept in ``damage``: offsets past them are not out of
        range but unreadable (what verify reports, where Kafka's recovery would cut)."""
        for base in reversed(self.bases):
            seg = self.log.segments[base]
            with MappedFile(seg.log_path) as mf:
                start = 0
                if is_regular(seg.index_path):
                    with MappedFile(seg.index_path) as ix:
                        n = _entry_count(ix.buf, 8, 0)
                        if n:       # the last entry, checked like any lookup's
                            start = oi.checked_lookup(ix.buf, mf.buf, base, oi.INT64_MAX, n)[2]
                # without an index entry the walk covers the whole segment: its pages are released
                # behind it (a 192 MiB segment held 192 MiB resident until the end of the walk)
                last, reader = None, BatchReader(mf.buf, start)
                for b in reader:
                    last = b.last_offset
                    mf.release_behind(b.position)
                if last is None and start:
                    reader = BatchReader(mf.buf)
                    for b in reader:
                        last = b.last_offset
                        mf.release_behind(b.position)
                if self.damage is None:
                    self.damage = _damage(reader, mf.buf, seg.log_path)
            if last is not None:
                return last + 1
            if base == self.bases[-1]:
                return base
        return self.bases[-1]

    def index_position(self, seg, offset: int, step: Step, log_buf=None) -> int:
        """Offset-index floor lookup, the entry checked against the segment (``checked_lookup``);
        returns the position to scan from and fills ``step`` (saying so when the entry is corrupt)."""
        if not seg.index_path.exists():
            step.note = "no offset index: scanning from the start of the segment"
            return 0
        if not is_regular(seg.index_path):
            step.note = "the offset index is not a regular file: scanning from the start of the segment"
            return 0
        with MappedFile(seg.index_path) as ix:
            n = _entry_count(ix.buf, 8, 0)
            step.index_file = str(seg.index_path)
            step.index_entries = n
            if log_buf is None:
                with MappedFile(seg.log_path) as mf:
                    slot, entry_offset, pos, problem = oi.checked_lookup(ix.buf, mf.buf, seg.base_offset, offset, n)
            else:
                slot, entry_offset, pos, problem = oi.checked_lookup(ix.buf, log_buf, seg.base_offset, offset, n)
        step.slot = slot
        step.entry = None if slot < 0 else (entry_offset, pos)
        if problem:
            step.note = (f"corrupt offset index ({problem}): scanning from the start of the segment, as the "
                         "broker does once recovery has rebuilt the index")
        return pos


def _damage(reader: BatchReader, buf, path) -> FormatError | None:
    """The damage a batch walk stopped at, as verify locates it (file, byte position, reason), or None
    for a clean end or a zero-filled one (a preallocated segment's unwritten part)."""
    stop = reader.stop
    if stop is None or all_zero(buf, stop.position, len(buf)):
        return None
    return FormatError(f"{stop.reason}; Kafka's recovery truncates the segment here", stop.position, stop.kind,
                       str(path))


def _unreadable_at(damage: FormatError, offset: int) -> FormatError:
    """A lookup of an offset in or after damaged bytes: the damage, with the offset that was asked for."""
    return FormatError(f"{damage.reason}: offset {offset} is in or after these bytes, which cannot be read "
                       f"(verify reports them as {damage.kind})", damage.position, damage.kind, damage.file)


def _out_of_range(view: "PartitionView", offset: int) -> str:
    """``offset N is out of range: ...`` in words that read naturally for an empty log too."""
    start, end = view.log_start, view.log_end
    if end <= start:
        held = f"the log is empty (log start {start}, log end {end})"
    elif end - start == 1:
        held = f"the log holds offset {start} only (log start {start}, log end {end})"
    else:
        held = f"the log holds offsets {start} to {end - 1} (log start {start}, log end {end})"
    return f"offset {offset} is out of range: {held}"


def _not_local(view: PartitionView, offset: int) -> str:
    """Why an offset below the first local segment can still exist: the checkpointed log start is lower
    (a tiered topic's local log start is above its log start, ``UnifiedLog.localLogStartOffset``, 3.6+;
    kafkalog reads local segments only)."""
    cp = view.checkpoint_log_start
    if cp is None or not cp <= offset < view.log_start:
        return ""
    return (f"; the partition's log start offset is {cp} (log-start-offset-checkpoint): offsets {cp} to "
            f"{view.log_start - 1} are not on this disk (a tiered topic keeps them in remote storage)")


def _view(directory) -> "PartitionView":
    return directory if isinstance(directory, PartitionView) else PartitionView(directory)


def lookup_offset(directory: "str | Path | PartitionView", offset: int) -> LookupResult:
    """Look up ``offset``; pass a ``PartitionView`` to run many lookups on one partition."""
    view = _view(directory)
    if offset >= view.log_end and view.damage is not None and offset >= view.log_start:
        raise _unreadable_at(view.damage, offset)
    if offset < view.log_start or offset >= view.log_end:
        raise LookupFailed(_out_of_range(view, offset) + _not_local(view, offset), "offset_out_of_range")
    res = LookupResult(offset, view.log_start, view.log_end)
    seg = view.log.floor_segment(offset)
    first = True
    while seg is not None:
        step = Step(str(seg.log_path), seg.base_offset)
        res.steps.append(step)
        mf = MappedFile(seg.log_path)
        res.mapped.append(mf)
        pos = view.index_position(seg, offset, step, mf.buf) if first else 0
        first = False
        step.start_position = pos
        reader = BatchReader(mf.buf, pos)
        for b in reader:
            step.batches_scanned += 1
            step.bytes_scanned = b.position + b.size - pos
            if b.last_offset < offset:
                mf.release_behind(b.position)    # a segment without an index is walked from its start
                continue
            if _take_record(res, b, offset):
                return res
        damage = _damage(reader, mf.buf, seg.log_path)
        if damage is not None:        # the offset is in the bytes the walk could not read
            raise _unreadable_at(damage, offset)
        nxt = view.bases.index(seg.base_offset) + 1
        seg = view.log.segments[view.bases[nxt]] if nxt < len(view.bases) else None
        if seg is not None:
            step.note = (step.note + "; " if step.note else "") + "not in this segment: continuing in the next"
    raise LookupFailed(f"no record at or after offset {offset} (the rest of the log holds only empty or "
                       "compacted-away batches)", "offset_not_found")


def _take_record(res: LookupResult, batch, offset: int) -> bool:
    """The record at ``offset``, or the next one present (compaction); False if the batch has none."""
    for rec in batch.records():
        if rec.offset >= offset:
            res.batch, res.record = batch, rec
            res.found_offset, res.found_timestamp = rec.offset, rec.timestamp
            res.exact = rec.offset == offset
            return True
    return False


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, ISO-8601 (naive means UTC), or Kafka's specials earliest/latest/max-timestamp
    (also -2/-1/-3)."""
    t = text.strip().lower()
    specials = {"earliest": EARLIEST, "latest": LATEST, "max-timestamp": MAX_TIMESTAMP}
    if t in specials:
        return specials[t]
    try:
        return int(t)
    except ValueError:
        pass
    from datetime import datetime, timedelta, timezone
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"'{text}' is neither epoch milliseconds, an ISO-8601 time, nor one of earliest, "
                         "latest, max-timestamp") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    # exact, and down to the millisecond as Java's Instant.toEpochMilli: through a float (timestamp() * 1000)
    # 0.6% of the times written with microseconds came out a millisecond early
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)


#: how the lookups name the sources of ``segment_times.largest_timestamp``
_SOURCE_WORDS = {"time index": "last time-index entry",
                 "batches: recovered at start": "batches (the broker recovers this segment when it starts: "
                                                "no clean-shutdown marker)"}


def segment_largest_timestamp(seg, recovered: bool = False) -> tuple[int, str]:
    """Kafka's ``LogSegment.largestTimestamp`` once the broker has loaded the log, and where it came from, by
    the rule retain and compact use (``segment_times.largest_timestamp``): a segment the broker's next start
    recovers (``recovered``: ``PartitionView.load``) from its batches, as its rebuilt time index gives it; any
    other from the last time-index entry when it is ``>= 0`` (a timestamp of 0 counts), else the ``.log``
    mtime. After a kill the active segment's ``.timeindex`` is still preallocated, its last slot zero: read
    as 0, the lookups used to skip the segment (issue 34 item 6)."""
    from .segment_times import largest_timestamp, log_max_timestamp, time_index_last
    log_max = None
    if recovered:
        with MappedFile(seg.log_path) as mf:
            log_max = log_max_timestamp(mf)
    lt = largest_timestamp(time_index_last(seg.timeindex_path), log_max,
                           int(seg.log_path.stat().st_mtime * 1000), recovered=recovered)
    return lt.value, _SOURCE_WORDS.get(lt.source, lt.source)


def lookup_time(directory: "str | Path | PartitionView", timestamp: int, max_rule=None) -> LookupResult:
    """``max_rule``: which release's answer max-timestamp (-3) gets (``coordinator_version.MaxTimestampRule``;
    None: 3.8+'s, unsaid)."""
    view = _view(directory)
    res = LookupResult(timestamp, view.log_start, view.log_end)
    if timestamp == EARLIEST:
        res.found_offset = view.log_start
        res.steps.append(Step("", view.log_start, note="earliest: the log start offset"))
        return res
    if timestamp == LATEST:
        res.found_offset = view.log_end
        res.steps.append(Step("", view.log_end, note="latest: the log end offset"))
        return res
    if timestamp == MAX_TIMESTAMP:
        if max_rule is not None and max_rule.recorded:
            res.steps.append(Step("", view.log_start, note="max-timestamp by Kafka 3.0-3.7's rule: the offset the "
                                  "segment with the largest timestamp recorded for it (before KAFKA-16310); the "
                                  f"release: {max_rule.source}"))
            res.recorded = True
            return _max_timestamp_recorded(view, res)
        if max_rule is not None:
            res.steps.append(Step("", view.log_start, note="max-timestamp by Kafka 3.8+'s rule: the first record "
                                  f"holding the largest timestamp (KAFKA-16310); the release: {max_rule.source}"))
        return _max_timestamp(view, res)
    load = view.load
    for base in view.bases:
        seg = view.log.segments[base]
        largest, source = segment_largest_timestamp(seg, load.recovers(base))
        step = Step(str(seg.log_path), base, note=f"largestTimestamp {units.timestamp(largest)} from the {source}")
        res.steps.append(step)
        if largest < timestamp:
            continue
        _search_segment(view, seg, timestamp, res, step)
        return res
    largest = max(segment_largest_timestamp(view.log.segments[b], load.recovers(b))[0] for b in view.bases)
    raise LookupFailed(f"no segment has a timestamp at or after {units.timestamp(timestamp)} (the largest is "
                       f"{units.timestamp(largest)})",
                       "timestamp_not_found")


def _search_segment(view: PartitionView, seg, timestamp: int, res: LookupResult, step: Step) -> None:
    ts_offset = seg.base_offset
    if is_regular(seg.timeindex_path):
        with MappedFile(seg.timeindex_path) as tf:
            n = _entry_count(tf.buf, 12, 8)
            slot, ts, ts_offset = ti.time_lookup(tf.buf, seg.base_offset, timestamp, n)
        step.index_file, step.index_entries, step.slot = str(seg.timeindex_path), n, slot
        step.entry = None if slot < 0 else (ts, ts_offset)
    off_step, mf, pos = _scan_step(view, res, seg, max(ts_offset, view.log_start))
    for b in BatchReader(mf.buf, pos):
        off_step.batches_scanned += 1
        off_step.bytes_scanned = b.position + b.size - pos
        if b.max_timestamp < timestamp:
            mf.release_behind(b.position)
            continue
        for rec in b.records():
            if rec.timestamp >= timestamp and rec.offset >= view.log_start:
                res.batch, res.record = b, rec
                res.found_offset, res.found_timestamp = rec.offset, rec.timestamp
                return
    raise LookupFailed(f"no record at or after timestamp {units.timestamp(timestamp)} in {seg.log_path.name}, the first "
                       "segment whose largest timestamp reaches it (Kafka searches only that segment)",
                       "timestamp_not_found")


def _max_timestamp(view: PartitionView, res: LookupResult) -> LookupResult:
    """KIP-734: the record with the largest timestamp (the first such record in offset order). Only the
    segment holding the best record so far stays mapped (a mapping holds a file descriptor: 1,500
    segments under ``ulimit -n`` 128 ran out of them)."""
    best, best_mf = None, None
    for base in view.bases:
        seg = view.log.segments[base]
        step = Step(str(seg.log_path), base, note="scanning for the largest timestamp")
        res.steps.append(step)
        mf = MappedFile(seg.log_path)
        found = False
        for b in BatchReader(mf.buf):
            step.batches_scanned += 1
            step.bytes_scanned = b.position + b.size
            mf.release_behind(b.position)     # the best batch's pages, if behind, are read back on use
            if best is not None and b.max_timestamp <= best[0]:
                continue
            try:
                for rec in b.records():
                    if best is None or rec.timestamp > best[0]:
                        best, found = (rec.timestamp, rec.offset, b, rec), True
            except FormatError:
                continue
        b = rec = None                                     # no view of this mapping is left but ``best``
        if found:
            if best_mf is not None:
                best_mf.close()
            best_mf = mf
        else:
            mf.close()
    if best_mf is not None:
        res.mapped.append(best_mf)
    if best is None:
        raise LookupFailed("the log holds no record", "timestamp_not_found")
    res.found_timestamp, res.found_offset, res.batch, res.record = best
    return res


def _max_timestamp_recorded(view: PartitionView, res: LookupResult) -> LookupResult:
    """Kafka 3.0-3.7 (``UnifiedLog.fetchOffsetByTimestamp`` before KAFKA-16310): the first segment with the
    greatest ``maxTimestampSoFar`` (``maxBy``) answers its ``readMaxTimestampAndOffsetSoFar``: for a segment
    loaded as it is, its time index's last entry (``TimeIndex.lastEntry``; (-1, base) when empty or missing);
    for one the broker recovers when it starts (``PartitionView.load``, or no offset index), the last offset
    of its first batch reaching the largest batch max timestamp (``LogSegment.recover``). A leader appending a
    batch records its last offset too (3.7: ``LogValidator``, ``MemoryRecordsBuilder.info``), so on 3.7 the
    answer is a batch's last offset, not the first record holding the timestamp. The record shown is the one
    at that offset (or the next present)."""
    from .segment_times import time_index_last_entry
    load = view.load
    best = None                                            # (timestamp, offset, base)
    for base in view.bases:
        seg = view.log.segments[base]
        if load.recovers(base) or not seg.index_path.exists():
            ts, off = -1, base
            with MappedFile(seg.log_path) as mf:
                for b in BatchReader(mf.buf):
                    if b.max_timestamp > ts:
                        ts, off = b.max_timestamp, b.last_offset
                    mf.release_behind(b.position)
            source = "its batches (the broker recovers this segment when it starts)"
        else:
            ts, off = time_index_last_entry(seg.timeindex_path, base) or (-1, base)
            source = "its last time-index entry"
        shown = f"timestamp {units.timestamp(ts)}, offset {off}" if ts >= 0 else f"no timestamp, offset {off}"
        res.steps.append(Step(str(seg.log_path), base, note=f"recorded for its largest timestamp: {shown}, from "
                                                            f"{source}"))
        if best is None or ts > best[0]:
            best = (ts, off, base)
    ts, off, base = best
    if off >= view.log_end:         # the broker answers only an offset below its high watermark
        raise LookupFailed("the log holds no record" if view.log_end <= view.log_start else
                           f"the offset recorded, {off}, is at or beyond the log end {view.log_end}",
                           "timestamp_not_found")
    step, mf, pos = _scan_step(view, res, view.log.segments[base], off)
    for b in BatchReader(mf.buf, pos):
        step.batches_scanned += 1
        step.bytes_scanned = b.position + b.size - pos
        if b.last_offset >= off and _take_record(res, b, off):
            break
    res.found_offset, res.found_timestamp, res.exact = off, ts, True
    return res


def _scan_step(view: PartitionView, res: LookupResult, seg, offset: int) -> tuple[Step, MappedFile, int]:
    """The step scanning ``seg`` for ``offset``: added to ``res``, its .log mapped (closed with ``res``), and
    the position its offset index gives to start from."""
    step = Step(str(seg.log_path), seg.base_offset)
    res.steps.append(step)
    mf = MappedFile(seg.log_path)
    res.mapped.append(mf)
    step.start_position = view.index_position(seg, offset, step, mf.buf)
    return step, mf, step.start_position
