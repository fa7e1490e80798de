"""The read half of ``recover``: Kafka's ``LogSegment.recover`` for one segment, and the scan of a
partition directory that gathers every fact the planner (``recover_plan``) needs. Nothing here writes.

``recover_segment`` mirrors ``LogSegment.recover`` (Scala ``kafka.log`` 2.x-3.6, Java from 3.7; the same loop) on a
buffer:

* walk the batches with ``BatchReader`` (Kafka's ``FileLogInputStream``); each must pass
  ``ensureValid`` (``is_valid()``: size and CRC-32C, CRC-32 for magic 0/1) — no record parsing, no
  decompression;
* a batch whose last offset does not fit ``base .. base + Int.MAX`` is Kafka's
  LogSegmentOffsetOverflowException (Kafka splits the segment; reported, not repaired here);
* the index rule of ``engine.index_rules.IndexBuilder`` (per batch, ``index.interval.bytes``), with
  the two InvalidOffsetException checks of ``OffsetIndex.append`` / ``TimeIndex.maybeAppend``
  (non-monotonic offsets, KAFKA-3919);
* magic ≥ 2: the leader-epoch cache assignment and the producer-state update
  (``engine.producer_state.ProducerState``); an ABORT of a non-empty transaction becomes an entry of
  this segment's ``.txnindex`` (``LogSegment.updateTxnIndex``);
* the first invalid batch, corrupt size, too-small batch or incomplete trailing batch ends the walk:
  everything from that byte on is to be truncated.

The result holds the rebuilt, trimmed ``.index``/``.timeindex``/``.txnindex`` bytes (after Kafka's
final time-index entry for the segment's max timestamp).
"""
from __future__ import annotations

import copy
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats import native
from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES
from kafkalog_formats.offset_index import max_plausible_entries
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.offset_index import build_offset_index
from kafkalog_formats.time_index import build_time_index
from kafkalog_formats.txn_index import build_txn_index, parse_txn_index, txn_index_sanity

from ..engine.findings import Finding
from ..engine.index_rules import IndexBuilder
from ..engine.mapped import FileTooLarge, MappedFile, read_regular
from ..engine.producer_state import ProducerState
from ..layout import classify_file
from .epoch_cache import EpochCache
from .leftovers import plan_leftovers

INT32_MAX = 0x7FFFFFFF


# --- LogSegment.recover ----------------------------------------------------------------------------

@dataclass
class Truncation:
    """Where and why a segment is cut (``position`` = bytes kept)."""
    position: int
    size: int                 # bytes cut
    kind: str                 # crc_mismatch, trailing_bytes, corrupt_size, batch_too_small, corrupt_message,
    #                           invalid_offset, control_record
    reason: str
    offset: int | None = None  # base offset of the first batch cut, when known


@dataclass
class SegmentRecovery:
    base_offset: int
    log_size: int
    valid_bytes: int = 0
    batches: int = 0
    next_offset: int = 0            # last valid batch's last offset + 1 (the base when none)
    truncation: Truncation | None = None
    overflow: str | None = None     # LogSegmentOffsetOverflowException message (not repaired)
    index: bytes = b""
    timeindex: bytes = b""
    txnindex: bytes = b""
    aborted: int = 0
    salvaged: object = None         # salvage_recovery.SalvagedSegment, for a segment recover --salvage rewrites


def _invalid_offset_message(what: str, offset: int, slot: int, last: int, path: str, position: int) -> str:
    """Kafka's InvalidOffsetException message (``OffsetIndex.append`` / ``TimeIndex.maybeAppend``), plus
    where the batch is."""
    return (f"Attempt to append an offset ({offset}) to {what} {slot} no larger than the last offset appended "
            f"({last}) to {path} (batch at byte position {position})")


def recover_segment(buf, base_offset: int, *, index_interval_bytes: int = 4096,
                    state: ProducerState | None = None, epochs: EpochCache | None = None,
                    path: str = "", release=None) -> SegmentRecovery:
    """Kafka's ``LogSegment.recover`` on the bytes of one ``.log`` (see the module docstring).

    ``state`` and ``epochs`` are updated in place like Kafka's producer-state manager and leader-epoch
    cache. When the segment is to be emptied (InvalidOffsetException), ``state`` is left as it was
    before the segment — the caller never sees half of a discarded segment. ``release(position)``: called
    as the walk goes (``MappedFile.release_behind``).

    On the native path runs of plain batches (no producer id, no control records, no new leader epoch,
    CRC good) go through ``_native.recover_run``, which does for them exactly what ``_SegmentWalk.one``
    does; every other batch, and whatever stops a run, is ``one``'s.
    """
    w = _SegmentWalk(buf, base_offset, index_interval_bytes, state, epochs, path)
    saved = (copy.copy(state.entries), state.map_end_offset) if state is not None else None
    if native.ext is None:
        reader = BatchReader(buf)
        for batch in reader:
            if w.one(batch):
                break
        else:
            stop = reader.stop
            if stop is not None:
                w.res.truncation = Truncation(stop.position, stop.size, stop.kind, stop.reason)
    else:
        _walk_runs(buf, base_offset, w.builder, w.res, state, epochs, w.one, release)
    w.check_last_time_entry()
    if w.invalid is not None:
        return w.discard(saved)
    if w.res.overflow is None:
        w.build_indexes()
    return w.res


class _SegmentWalk:
    """The state of one ``LogSegment.recover`` walk and its steps per batch: ``validate`` (framing and
    CRC: ``ensureValid``; the offset range of the segment), ``index`` (the offset and time index entries:
    ``OffsetIndex.append`` / ``TimeIndex.maybeAppend``), ``producer_state`` (leader epochs, producer state,
    aborted transactions: ``updateProducerState`` / ``updateTxnIndex``)."""

    def __init__(self, buf, base_offset: int, index_interval_bytes: int, state: ProducerState | None,
                 epochs: EpochCache | None, path: str) -> None:
        self.size = len(buf)
        self.base_offset, self.state, self.epochs, self.path = base_offset, state, epochs, path
        self.res = SegmentRecovery(base_offset, self.size, next_offset=base_offset)
        self.builder = IndexBuilder(base_offset, index_interval_bytes)
        self.aborted: list = []
        self.invalid: str | None = None     # an InvalidOffsetException: the segment is emptied
        self.shift = 0                      # a batch at byte p of buf lands at p - shift (salvage drops bytes)

    def one(self, batch) -> bool:
        """The loop's body for one batch; True: recovery stops here."""
        if self.validate(batch) or self.index(batch):
            return True
        res = self.res
        res.valid_bytes = batch.position - self.shift + batch.size
        res.batches += 1
        res.next_offset = batch.last_offset + 1
        return self.producer_state(batch)

    def validate(self, batch) -> bool:
        """``batch.ensureValid()`` (size and CRC), then the offset range of the segment
        (LogSegmentOffsetOverflowException); True: recovery stops before this batch."""
        res = self.res
        if not batch.is_valid():
            res.truncation = Truncation(batch.position, self.size - batch.position, "crc_mismatch",
                                        f"Record is corrupt (stored crc = {batch.crc}, computed crc = "
                                        f"{batch.computed_crc()})", batch.offset_field)
            return True
        last = batch.last_offset
        if not 0 <= last - self.base_offset <= INT32_MAX:
            res.overflow = (f"batch at position {batch.position} has last offset {last}, which does not fit "
                            f"the segment's base offset {self.base_offset} + 0..{INT32_MAX} "
                            "(LogSegmentOffsetOverflowException: Kafka splits such a segment)")
            return True
        return False

    def index(self, batch) -> bool:
        """The index rule for this batch and the two InvalidOffsetException checks of the entries it adds;
        True: the segment is to be emptied (``invalid``)."""
        builder = self.builder
        last = batch.last_offset
        n_off, n_time = len(builder.offset_entries), len(builder.time_entries)
        prev_off = builder.offset_entries[-1][0] if n_off else None
        prev_time_off = builder.time_entries[-1][1] if n_time else None
        builder.add(batch.position - self.shift, last, batch.max_timestamp)
        if len(builder.offset_entries) > n_off:
            if n_off and last <= prev_off:
                self.invalid = _invalid_offset_message("position", last, n_off, prev_off,
                                                       _sibling(self.path, "index"), batch.position)
                return True
            if n_time and builder.offset_of_max_timestamp < prev_time_off:
                self.invalid = _invalid_offset_message("slot", builder.offset_of_max_timestamp, n_time,
                                                       prev_time_off, _sibling(self.path, "timeindex"),
                                                       batch.position)
                return True
        return False

    def producer_state(self, batch) -> bool:
        """Magic ≥ 2: the leader epoch of the batch, the producer state and an aborted transaction's
        ``.txnindex`` entry; True: recovery stops after this batch."""
        state, last = self.state, batch.last_offset
        if batch.magic < 2:
            if state is not None:
                state.map_end_offset = last + 1
            return False
        if self.epochs is not None and batch.partition_leader_epoch >= 0:
            self.epochs.assign(batch.partition_leader_epoch, batch.base_offset)
        if state is None:
            return False
        try:
            txn = state.update(batch)
        except FormatError as e:
            # Kafka: InvalidRecordException from the control record ends recovery *after* this
            # batch (validBytes already counts it).
            end = batch.position + batch.size
            if end < self.size:
                self.res.truncation = Truncation(end, self.size - end, "control_record",
                                                 f"control batch at position {batch.position} cannot be read: "
                                                 f"{e.reason}")
            return True
        if txn is not None:
            self.aborted.append(txn)
        return state.stop is not None       # Kafka's loader throws here (the caller refuses the partition)

    def check_last_time_entry(self) -> None:
        """The final time-index entry (the segment's max timestamp) must not go back either."""
        b = self.builder
        if self.invalid is None and self.res.overflow is None and b.time_entries \
                and b.offset_of_max_timestamp < b.time_entries[-1][1]:
            self.invalid = _invalid_offset_message("slot", b.offset_of_max_timestamp, len(b.time_entries),
                                                   b.time_entries[-1][1], _sibling(self.path, "timeindex"),
                                                   self.res.valid_bytes)

    def discard(self, saved) -> SegmentRecovery:
        """recoverLog: "Found invalid offset during recovery. Deleting the corrupt segment and creating an
        empty one with starting offset <base>" -- the segment is truncated to its base offset, and the
        producer state is put back as it was before it (``saved``)."""
        res = self.res
        res.truncation = Truncation(0, self.size, "invalid_offset", self.invalid, self.base_offset)
        res.valid_bytes, res.batches, res.next_offset = 0, 0, self.base_offset
        if saved is not None:
            self.state.entries, self.state.map_end_offset = saved
        return res

    def build_indexes(self) -> None:
        """The rebuilt ``.index``, ``.timeindex`` (after Kafka's final entry) and ``.txnindex`` bytes."""
        b, res = self.builder, self.res
        b.finish()
        res.index = build_offset_index(b.offset_entries, self.base_offset)
        res.timeindex = build_time_index(b.time_entries, self.base_offset)
        res.txnindex = build_txn_index(self.aborted)
        res.aborted = len(self.aborted)


#: Bytes a native run reads before handing back (pages behind it are then released).
RUN_BYTES = 32 * 1024 * 1024
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)


def _builder_state(builder: IndexBuilder):
    """``recover_run``'s view of the index builder (8 int64), None when a value exceeds 64 bits."""
    from array import array
    off = builder.offset_entries[-1][0] if builder.offset_entries else 0
    ts, toff = builder.time_entries[-1] if builder.time_entries else (0, 0)
    try:
        return array("q", [builder.max_timestamp, builder.offset_of_max_timestamp, builder.last_indexed_position,
                           len(builder.offset_entries), off, len(builder.time_entries), ts, toff])
    except OverflowError:
        return None


def _walk_runs(buf, base_offset: int, builder: IndexBuilder, res: SegmentRecovery, state, epochs, one,
               release, start: int = 0, end: int | None = None, shift: int = 0) -> None:
    """``recover_segment``'s walk on the native path: runs of plain batches in C, every other batch by
    ``one``; a framing stop (or the end) as the pure loop's ``BatchReader`` reports it. ``start``/``end``/
    ``shift``: only ``buf[start:end]``, each batch at byte p written at p - shift (a salvaged segment)."""
    from array import array
    interval = min(builder.interval, _INT64_MAX)
    end = len(buf) if end is None else end
    pos = start
    while True:
        st = _builder_state(builder) if -(1 << 63) <= base_offset <= _INT64_MAX else None
        if st is not None:
            latest = _INT64_MAX if epochs is None else (epochs.entries[-1][0] if epochs.entries else -1)
            st[2] += shift                            # the last indexed position, in buf's coordinates
            state_bytes, offs, times = bytearray(st.tobytes()), bytearray(), bytearray()
            pos, reason, n, nxt = native.ext.recover_run(buf, pos, end, base_offset, interval, latest,
                                                         state_bytes, offs, times, RUN_BYTES)
            st = array("q", bytes(state_bytes))
            st[2] -= shift
            if n:
                o, t = array("q", bytes(offs)), array("q", bytes(times))
                builder.offset_entries += zip(o[0::2], (p - shift for p in o[1::2]))
                builder.time_entries += zip(t[0::2], t[1::2])
                builder.max_timestamp, builder.offset_of_max_timestamp, builder.last_indexed_position = st[0:3]
                res.valid_bytes = pos - shift
                res.batches += n
                res.next_offset = nxt
                if state is not None:
                    state.map_end_offset = nxt       # what ProducerState.update does for such a batch
            if release is not None:
                release(pos)
            if reason == "limit":
                continue
        reader = BatchReader(buf, pos, end)
        for batch in reader:
            if one(batch):
                return
            if st is not None:                        # back to C after this batch
                pos = batch.position + batch.size
                break
        else:
            if reader.stop is not None:
                res.truncation = Truncation(reader.stop.position, reader.stop.size, reader.stop.kind,
                                            reader.stop.reason)
            return


def _sibling(path: str, suffix: str) -> str:
    """The ``.index``/``.timeindex`` path next to a ``.log`` path."""
    head, dot, _ = path.rpartition(".log")
    return f"{head}.{suffix}" if dot else path


def _replay_one(batch, state: ProducerState, from_offset: int) -> bool:
    """``replay_segment``'s step for one batch; True: the replay stops here."""
    last = batch.last_offset
    if last < from_offset:
        return False
    if batch.magic >= 2:
        try:
            state.update(batch)
        except FormatError as e:
            # LogSegment.recover catches this InvalidRecordException; the replay of
            # UnifiedLog.loadProducersFromRecords does not
            state.map_end_offset = last + 1
            state.stop = state.stop or (batch.base_offset, f"{e.reason}: InvalidRecordException")
        return state.stop is not None     # Kafka's loader throws here (the caller refuses the partition)
    state.map_end_offset = last + 1
    return False


def replay_segment(buf, state: ProducerState, from_offset: int = 0, release=None) -> int:
    """Producer-state replay over a segment below the recovery point (``loadProducersFromRecords``):
    batches whose last offset is below ``from_offset`` are skipped; no validation. Returns the next offset
    after the last complete batch (or None when there is no batch). On the native path the batch headers
    are read in C (``header_walk``) and only batches with a producer id are looked at here (for the others
    the producer state moves only its end offset)."""
    from kafkalog_formats.message_set import BatchV2View
    next_offset = None
    reader = BatchReader(buf)
    if native.ext is not None and _INT64_MIN <= from_offset <= _INT64_MAX:
        pos = 0
        while True:
            pos, reason, n, nxt, eligible, positions = native.ext.header_walk(buf, pos, len(buf), from_offset,
                                                                               RUN_BYTES)
            for p in positions:
                batch = BatchV2View(buf, p)
                if _replay_one(batch, state, from_offset):
                    return batch.last_offset + 1
            if eligible is not None:
                state.map_end_offset = eligible + 1      # the last batch replayed sets the end offset
            if n:
                next_offset = nxt
            if release is not None:
                release(pos)
            if reason == "limit":
                continue
            reader = BatchReader(buf, pos)
            if reason == "end":                          # BatchReader agrees: nothing more to read
                break
            batch = next(iter(reader), None)             # "python": this batch by the loop
            if batch is None:
                break
            next_offset = batch.last_offset + 1
            if _replay_one(batch, state, from_offset):
                return next_offset
            pos = batch.position + batch.size
        reader = BatchReader(buf, pos)
    for batch in reader:
        next_offset = batch.last_offset + 1
        if _replay_one(batch, state, from_offset):
            break
    return next_offset


def next_offset_of(buf, base_offset: int, release=None) -> int:
    """``readNextOffset``: the offset after the last complete batch (headers only), the base when empty."""
    nxt = base_offset
    pos = 0
    if native.ext is not None:
        while True:
            pos, reason, n, last_next, _e, _p = native.ext.header_walk(buf, pos, len(buf), _INT64_MAX, RUN_BYTES)
            if n:
                nxt = last_next
            if release is not None:
                release(pos)
            if reason == "limit":
                continue
            if reason == "end":                          # BatchReader agrees (checked below)
                break
            batch = next(iter(BatchReader(buf, pos)), None)
            if batch is None:
                return nxt
            nxt = batch.last_offset + 1
            pos = batch.position + batch.size
    for batch in BatchReader(buf, pos):
        nxt = batch.last_offset + 1
    return nxt


# --- the scan of a partition directory ---------------------------------------------------------------

@dataclass
class FileFact:
    name: str                 # current file name (the .swap name while a swap is pending)
    size: int
    digest: str | None = None


def file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


INDEX_ENTRY_BYTES = {"index": 8, "timeindex": 12, "txnindex": 34}


def rebuilt_index_bound(log_size: int, suffix: str) -> int:
    """The largest ``suffix`` index a segment of ``log_size`` bytes can need: an entry per batch at most
    (``offset_index.max_plausible_entries``; a ``.txnindex`` entry per ABORT marker batch)."""
    return max_plausible_entries(log_size) * INDEX_ENTRY_BYTES[suffix]


def oversized_index_message(size: int, log_size: int, suffix: str) -> str:
    """Why an index larger than its segment could need is not read."""
    entry = INDEX_ENTRY_BYTES[suffix]
    return (f"{size} bytes ({size // entry} entries) for a segment of {log_size} bytes, which holds at most "
            f"{max_plausible_entries(log_size)} batches: entries beyond them describe nothing in "
            "the segment (not read)")


@dataclass
class SegmentFacts:
    base: int
    log: FileFact
    mtime_ns: int
    indexes: dict = field(default_factory=dict)   # suffix -> FileFact (index, timeindex, txnindex)
    why: str | None = None        # "recovery" (pass 4), "missing_index", "txnindex", "missing_timeindex"
    pass3: str | None = None      # "missing_index" / "txnindex": LogLoader.loadSegmentFiles recovers it first
    txn_problem: str | None = None
    txn_oversized: bool = False   # the .txnindex is larger than the segment could need (not read)
    result: SegmentRecovery | None = None
    next_offset: int | None = None


@dataclass
class SnapshotFact:
    offset: int
    name: str
    problem: str | None = None    # parse / CRC failure


@dataclass
class PartitionFacts:
    """Everything ``recover_plan.plan_partition`` needs, as read from one partition directory."""
    dir_name: str
    topic: str | None
    partition: int | None
    kind: str                     # normal, metadata, future, stray, delete
    names: list = field(default_factory=list)          # regular files, sorted (but the misread ones)
    misread: list = field(default_factory=list)        # (name, Finding of layout.name_problem): names Kafka's loader misreads
    subdirs: list = field(default_factory=list)
    swap_extents: dict = field(default_factory=dict)   # base of <base>.log.swap -> next offset after it
    segments: list = field(default_factory=list)       # SegmentFacts in base order (after pass 2)
    snapshots: list = field(default_factory=list)      # SnapshotFact
    kraft_snapshots: list = field(default_factory=list)  # (name, end offset, epoch, state)
    epochs_file: list | None = None                    # parsed leader-epoch-checkpoint (None: absent)
    epochs_problem: str | None = None
    epochs_after: list | None = None                   # the cache after recovery (before truncateFromEnd)
    epochs_rebuilt: list | None = None                 # from the batches, when the checkpoint is unreadable
    recovery_start: int | None = None                  # base of the first segment recovered in pass 4
    recovery_reason: str = ""
    replay_from: int | None = None                     # snapshot offset the producer state came from
    state_entries: list | None = None                  # producer state at the log end (for a new snapshot)
    state_end: int | None = None
    stopped_at: int | None = None                      # base of the segment whose recovery truncated (pass 4)
    log_end_before: int | None = None                  # after the last complete batch, before any repair
    log_start: int | None = None                       # log-start-offset-checkpoint entry
    bytes_scanned: int = 0
    problems: list = field(default_factory=list)       # Findings not repaired (file: the segment's name)
    notes: list = field(default_factory=list)
    own_checkpoints: bool = False                      # the log dir's checkpoint entries for this topic-partition
    #                                                    are this directory's (LogManager.loadLog)
    refusal: Finding | None = None                     # why nothing may be changed (file: the segment's name)
    overridable: bool = False                          # the refusal yields to --truncate-at-damage
    salvage: object = None                             # salvage_recovery.SalvageFacts (recover --salvage)
    snapshot_data: dict = field(default_factory=dict, repr=False)   # offset -> the readable snapshots' contents

    @property
    def name(self) -> str:
        return self.dir_name


class ScanOptions:
    def __init__(self, *, index_interval_bytes: int = 4096, clean_shutdown: bool = False, force: bool = False,
                 all_segments: bool = False, progress=None, producer_state: bool = False,
                 salvage: bool = False) -> None:
        self.index_interval_bytes = index_interval_bytes
        self.salvage = salvage                      # salvage_recovery.scan walks every segment for what it keeps
        self.clean_shutdown = clean_shutdown
        self.producer_state = producer_state        # replay the producer state to the log end in any case
        self.force = force
        self.all_segments = all_segments
        self.progress = progress or (lambda n: None)


def scan_partition(directory: Path, kind: str, *, recovery_point: int | None, log_start: int | None,
                   options: ScanOptions, own_checkpoints: bool = False) -> PartitionFacts:
    """Read a partition directory the way ``LogLoader.load`` would see it, without changing anything.

    Passes 1–2 (leftovers, swaps) are applied *virtually* (``leftovers.plan_leftovers``) so that the
    segments scanned are the ones the directory will hold after them; then each segment is checked as in
    pass 3 (missing ``.index``, ``.txnindex`` sanity) and, from the recovery point on, recovered (pass 4).
    """
    from ..layout import parse_partition_dir

    pname = parse_partition_dir(directory.name)
    facts = PartitionFacts(directory.name, pname.topic if pname else None, pname.partition if pname else None,
                           kind, log_start=log_start, own_checkpoints=own_checkpoints)
    from ..layout import name_problem
    entries = sorted(directory.iterdir(), key=lambda p: p.name)
    regular = [e.name for e in entries if e.is_file()]
    facts.misread = [(n, pr) for n, pr in ((n, name_problem(n, regular)) for n in regular) if pr is not None]
    misread = {n for n, _pr in facts.misread}
    facts.names = [n for n in regular if n not in misread]
    facts.subdirs = [e.name for e in entries if e.is_dir()]
    sizes = {e.name: e.stat().st_size for e in entries if e.is_file()}
    for name in facts.names:
        fn = classify_file(name)
        if fn.kind == "log" and fn.state == "swap":
            with MappedFile(directory / name) as mf:
                facts.swap_extents[fn.offset] = next_offset_of(mf.buf, fn.offset)
    _actions, virtual = plan_leftovers(facts.names, facts.swap_extents)
    # virtual: final name -> current name, for the files that remain after passes 1-2

    for final, current in sorted(virtual.items()):
        fn = classify_file(final)
        if fn.state is not None:
            continue
        if fn.kind == "log":
            st = os.stat(directory / current)
            facts.segments.append(SegmentFacts(fn.offset, FileFact(current, st.st_size), st.st_mtime_ns))
        elif fn.kind == "snapshot":
            facts.snapshots.append(SnapshotFact(fn.offset, current))
        elif fn.kind == "kraft_snapshot":
            facts.kraft_snapshots.append((current, fn.offset, fn.epoch, fn.state))
    for name in facts.names:
        fn = classify_file(name)
        if fn.kind == "kraft_snapshot" and fn.state is not None:
            facts.kraft_snapshots.append((name, fn.offset, fn.epoch, fn.state))
    facts.segments.sort(key=lambda s: s.base)
    bases = {s.base: s for s in facts.segments}
    for final, current in virtual.items():
        fn = classify_file(final)
        if fn.state is None and fn.kind in ("index", "timeindex", "txnindex") and fn.offset in bases:
            bases[fn.offset].indexes[fn.kind] = FileFact(current, sizes.get(current, 0))

    # producer snapshots: which are readable (Kafka deletes corrupt ones when it meets them)
    from kafkalog_formats.producer_snapshot import parse_producer_snapshot
    snapshot_data = {}
    for snap in facts.snapshots:
        try:
            snapshot_data[snap.offset] = parse_producer_snapshot(read_regular(directory / snap.name, MAX_BINARY_SIDE_FILE_BYTES))
        except FormatError as e:
            snap.problem = e.reason
        except FileTooLarge as e:     # Kafka's readAllBytes fails on it (OutOfMemoryError beyond 2 GiB)
            snap.problem = e.strerror
    # leader-epoch-checkpoint
    epoch_path = directory / "leader-epoch-checkpoint"
    if epoch_path.is_file():
        from kafkalog_formats.checkpoint import parse_leader_epoch_checkpoint
        try:
            facts.epochs_file = [(e.epoch, e.start_offset) for e in
                                 parse_leader_epoch_checkpoint(read_regular(epoch_path), str(epoch_path))]
        except FormatError as e:
            facts.epochs_problem = e.reason

    if facts.segments:
        _scan_segments(directory, facts, snapshot_data, recovery_point, log_start, options)
    facts.snapshot_data = snapshot_data
    return facts


FULL = ("recovery", "missing_index", "txnindex")


def _scan_segments(directory: Path, facts: PartitionFacts, snapshot_data: dict, recovery_point: int | None,
                   log_start: int | None, options: ScanOptions) -> None:
    """Kafka's passes 3 and 4 over the segments, read-only, in one walk in offset order.

    ``LogLoader.loadSegmentFiles`` (pass 3, every segment, whatever the shutdown) recovers a segment whose
    ``.index`` is missing or whose ``.txnindex`` fails ``TransactionIndex.sanityCheck``; an exception from
    that recovery is not caught: InvalidOffsetException (offsets going backwards) stops the loader and the
    broker does not start; a cut there keeps every later segment, so the log gets a gap. ``recoverLog``
    (pass 4, only without a clean shutdown) recovers from the segment holding the recovery point; the first
    cut (or InvalidOffsetException, which empties the segment) removes every later segment. The same in
    Scala ``kafka.log.Log.loadSegmentFiles``/``recoverLog`` (2.x), ``kafka.log.LogLoader`` (3.0–3.9) and
    ``org.apache.kafka.storage.internals.log.LogLoader`` (trunk 2024-10; it also catches IOException in pass 4).

    Where Kafka would refuse to start or leave a gap, ``facts.refusal`` says so and the planner changes
    nothing in the partition unless asked (``--truncate-at-damage``: the cut of pass 4, at that segment).
    A cut in pass 4 at an earlier segment wins: the later segments go with it, pass-3 findings included.
    """
    _choose_recovery_start(facts, recovery_point, options)
    for s in facts.segments:
        _sanity_check(directory, s, facts.recovery_start)
    state, replay = _initial_producer_state(directory, facts, snapshot_data, log_start, options)
    epochs = EpochCache(facts.epochs_file or ())
    _recover_and_replay(directory, facts, state, epochs, replay, options)
    facts.epochs_after = epochs.entries
    if facts.epochs_problem is not None:
        facts.epochs_rebuilt = _epochs_from_batches(directory, facts.segments, facts.stopped_at)
    if replay:
        facts.state_entries = state.snapshot_entries()
        facts.state_end = state.map_end_offset


def _choose_recovery_start(facts: PartitionFacts, recovery_point: int | None, options: ScanOptions) -> None:
    """Which segments pass 4 recovers (``facts.recovery_start``, None: none) and why (``recovery_reason``):
    ``recoverLog`` from the segment holding the recovery point, unless the shutdown was clean; every
    segment of the metadata log, of a -future/-stray directory beside its current log, or when asked."""
    segs = facts.segments
    if facts.kind == "metadata":
        facts.recovery_start = segs[0].base
        facts.recovery_reason = ("KRaft metadata log: the Raft layer recovers every segment on every start "
                                 "(KafkaMetadataLog opens it with recovery point 0 and no clean shutdown)")
    elif facts.kind == "delete":
        facts.recovery_reason = ("-delete directory: Kafka's loader only completes leftovers and recovers segments "
                                 "missing their .index (LogLoader.load without recoverLog); the broker deletes the directory later")
    elif facts.kind in ("future", "stray") and not facts.own_checkpoints:
        facts.recovery_start = segs[0].base
        facts.recovery_reason = (f"-{facts.kind} directory beside the current log of its partition: the log "
                                 "directory's checkpoint entries are the current log's, so every segment is "
                                 "recovered (beyond Kafka, which would apply them to both)")
    elif options.all_segments:
        facts.recovery_start = segs[0].base
        facts.recovery_reason = ("--all-segments: every segment is recovered, also below the recovery point "
                                 "(beyond Kafka, which trusts flushed data)")
    elif options.clean_shutdown and not options.force:
        facts.recovery_reason = "clean-shutdown marker present: recovery skipped as Kafka does (--force recovers)"
    else:
        rp = recovery_point if recovery_point is not None else 0
        floor = segs[0]
        for s in segs:
            if s.base <= rp:
                floor = s
        facts.recovery_start = floor.base
        why = "--force" if options.clean_shutdown else "no clean-shutdown marker"
        facts.recovery_reason = (f"{why}; recovery point {rp}"
                                 + (" (absent from recovery-point-offset-checkpoint)" if recovery_point is None
                                    else "")
                                 + f": segments from base offset {floor.base} on are recovered")


def _sanity_check(directory: Path, s: SegmentFacts, recovery_start: int | None) -> None:
    """Pass 3's checks of one segment (``LogSegment.sanityCheck``: a missing ``.index``, a ``.txnindex``
    failing ``TransactionIndex.sanityCheck``), then why it is read (``s.why``), and the digests of its
    indexes."""
    if "index" not in s.indexes:
        s.pass3 = "missing_index"
    txn = s.indexes.get("txnindex")
    if txn is not None and txn.size > rebuilt_index_bound(s.log.size, "txnindex"):
        # beyond Kafka, whose sanityCheck reads every entry (and passes zeros in a segment based at 0):
        # more entries than the segment has batches can only describe aborts it does not hold
        s.txn_problem = oversized_index_message(txn.size, s.log.size, "txnindex")
        s.txn_oversized = True
    elif txn is not None and txn.size:
        tpath = directory / txn.name
        try:
            s.txn_problem = txn_index_sanity(parse_txn_index(read_regular(tpath, MAX_BINARY_SIDE_FILE_BYTES), str(tpath)), s.base, str(tpath))
        except FormatError as e:
            s.txn_problem = e.reason
    if s.txn_problem and s.pass3 is None:
        s.pass3 = "txnindex"
    if recovery_start is not None and s.base >= recovery_start:
        s.why = "recovery"
    elif s.pass3 is not None:
        s.why = s.pass3
    elif "timeindex" not in s.indexes:
        s.why = "missing_timeindex"
    for suffix, ff in s.indexes.items():
        # only an index no larger than any rebuild of its segment can equal one (the plan compares
        # digests to leave a rebuilt index's file alone): a 10 GiB sparse index is never read
        if ff.size <= rebuilt_index_bound(s.log.size, suffix):
            ff.digest = file_digest(directory / ff.name)


def _initial_producer_state(directory: Path, facts: PartitionFacts, snapshot_data: dict, log_start: int | None,
                            options: ScanOptions) -> tuple[ProducerState, bool]:
    """(the producer state to replay from, whether the log is read for it at all); also the log end before
    any repair (``facts.log_end_before``).

    The state comes from the newest readable snapshot at or below the first segment recovered (or the log
    end when none is), then is replayed forward (UnifiedLog.rebuildProducerState, ProducerStateManager
    .truncateAndReload: snapshots at or below the log start offset are not used)."""
    segs = facts.segments
    first_full = next((s.base for s in segs if s.why in FULL), None)
    with MappedFile(directory / segs[-1].log.name) as mf:
        facts.log_end_before = next_offset_of(mf.buf, segs[-1].base, mf.release_behind)
    limit = first_full if first_full is not None else facts.log_end_before
    log_start_cp = log_start if log_start is not None else 0
    usable = [o for o in snapshot_data if log_start_cp < o <= limit]
    state = ProducerState()
    # Kafka reads the log for producer state only to recover a segment, and in rebuildProducerState at the end
    # of loading: not after a clean shutdown with no snapshot file at all (an upgrade), not in a -delete
    # directory (rebuilt up to offset 0 there). Nothing here needs the state either then.
    replay = not (first_full is None and (facts.kind == "delete" or (
        not facts.snapshots and options.clean_shutdown and not options.force and not options.producer_state)))
    if usable:
        facts.replay_from = max(usable)
        state.load(snapshot_data[facts.replay_from].entries, facts.replay_from)
    else:
        state.map_end_offset = max(log_start_cp, segs[0].base)
    return state, replay


def _recover_and_replay(directory: Path, facts: PartitionFacts, state: ProducerState, epochs: EpochCache,
                        replay: bool, options: ScanOptions) -> None:
    """One walk in offset order: each segment to recover is recovered (``_recover_full``), each other one
    read as far as the producer state, the time index or the next offset need (``_read_segment``); a
    segment already covered by the snapshot and needing nothing is not opened."""
    segs = facts.segments
    for i, s in enumerate(segs):
        later = segs[i + 1:]
        nxt_base = later[0].base if later else None
        covered = not replay or (nxt_base is not None and state.map_end_offset >= nxt_base)
        if covered and s.why is None:
            if not later:
                s.next_offset = facts.log_end_before
            continue
        path = directory / s.log.name
        with MappedFile(path) as mf:
            if s.why in FULL:
                if _recover_full(facts, s, later, mf, path, state, epochs, options):
                    break
            elif _read_segment(facts, s, covered, mf, path, state, options):
                break
        options.progress(s.log.size)


def _recover_full(facts: PartitionFacts, s: SegmentFacts, later: list, mf, path: Path, state: ProducerState,
                  epochs: EpochCache, options: ScanOptions) -> bool:
    """Pass 3's or pass 4's ``recoverSegment`` of one segment; True: the walk ends here (an offset overflow,
    a producer state Kafka's loader refuses, or a cut, which removes every later segment)."""
    res = recover_segment(mf.buf, s.base, index_interval_bytes=options.index_interval_bytes,
                          state=state, epochs=epochs, path=str(path), release=mf.release_behind)
    s.result = res
    s.next_offset = res.next_offset
    facts.bytes_scanned += res.valid_bytes
    if res.overflow is not None:
        facts.problems.append(Finding("offset_overflow", res.overflow, s.log.name))
        return True
    if state.stop is not None:
        _refuse_producer_state(facts, s, state.stop)
        return True
    _consumer_stops(facts, s, mf, res.valid_bytes)
    if res.truncation is not None:
        facts.stopped_at = s.base
        if s.pass3 is not None and (res.truncation.kind == "invalid_offset" or later):
            _refuse_pass3(facts, s, res, later)
        return True
    return False


def _consumer_stops(facts: PartitionFacts, s: SegmentFacts, mf, end: int) -> None:
    """The batches this recovery keeps (Kafka's checks size and CRC only) that a consumer cannot read: a
    magic byte above 2 (outside the CRC), an unknown codec, a negative offset delta or record count, records
    or a control record that do not decode. Reported; ``--salvage`` moves them to the backup."""
    from ..engine.salvage import unreadable_batches
    mf.restart()                          # a second walk of the segment: its pages released behind it too
    for e in unreadable_batches(mf.buf, end, s.base, release=mf.release_behind):
        facts.problems.append(Finding(
            "consumer_stops", f"the batch at byte {e.position} (offsets {e.base}..{e.last} claimed) passes Kafka's "
            f"recovery (size and CRC) but {e.reason}; the broker serves it and every consumer fails there. "
            "recover --salvage --backup-dir DIR moves it into the backup and leaves a gap", s.log.name, e.position,
            e.base))


def _read_segment(facts: PartitionFacts, s: SegmentFacts, covered: bool, mf, path: Path, state: ProducerState,
                  options: ScanOptions) -> bool:
    """A segment not recovered: its time index rebuilt when missing, then its next offset (headers only
    when the snapshot covers it, else through the producer-state replay); True: the replay stopped where
    Kafka's loader refuses the partition."""
    buf = mf.buf
    if s.why == "missing_timeindex":
        s.result = recover_segment(buf, s.base, index_interval_bytes=options.index_interval_bytes,
                                   path=str(path), release=mf.release_behind)
    if covered:
        s.next_offset = next_offset_of(buf, s.base, mf.release_behind)
        return False
    nxt = replay_segment(buf, state, state.map_end_offset, mf.release_behind)
    s.next_offset = s.base if nxt is None else nxt
    if state.stop is not None:
        _refuse_producer_state(facts, s, state.stop)
        return True
    return False


_PASS3_WHY = {"missing_index": "its .index is missing",
              "txnindex": "its .txnindex fails Kafka's sanity check"}


def _later_text(later: list) -> str:
    if not later:
        return "no later segment"
    n = len(later)
    return f"{n} later segment{'' if n == 1 else 's'} (from offset {later[0].base})"


def _refuse_pass3(facts: PartitionFacts, s: SegmentFacts, res: SegmentRecovery, later: list) -> None:
    """A pass-3 recovery that Kafka's loader cannot complete (offsets going backwards) or that would leave
    a gap (a cut in a segment with later segments): refused unless --truncate-at-damage."""
    t = res.truncation
    head = (f"Kafka's loader recovers this segment at every start, even after a clean shutdown, because "
            f"{_PASS3_WHY[s.pass3]}")
    if t.kind == "invalid_offset":
        kind = "offsets_go_backwards"
        what = (f"its offsets go backwards ({t.reason}): Kafka's LogLoader stops on the InvalidOffsetException "
                "and the broker does not start")
        cut = (f"the cut empties this segment ({s.log.size} bytes, as Kafka's recoverLog empties a segment whose "
               f"offsets go backwards) and removes {_later_text(later)}")
    else:
        kind = "gap_in_log"
        what = (f"it holds invalid data from byte position {t.position} ({t.kind}: {t.reason}): Kafka's loader would "
                f"cut it there and keep the {_later_text(later)}, leaving a gap in the middle of the log that "
                "replication never fills")
        cut = f"the cut removes {t.size} bytes from this segment and {_later_text(later)}"
    facts.refusal = Finding(kind, f"{head}; {what}. Nothing was changed in this partition: {cut}, so that the log "
                                  "keeps no gap; run again with --truncate-at-damage (and --backup-dir) to do it",
                            s.log.name, None if t.kind == "invalid_offset" else t.position)
    facts.overridable = True


def _refuse_producer_state(facts: PartitionFacts, s: SegmentFacts, stop: tuple) -> None:
    offset, message = stop
    facts.refusal = Finding("producer_state", f"the batch at offset {offset} cannot be applied to the producer state "
                                              f"({message}): Kafka's loader stops there and the broker does not start. "
                                              "Nothing was changed in this partition (recover does not repair this)",
                            s.log.name)
    facts.overridable = False


def _epochs_from_batches(directory: Path, segs: list, stop_at: int | None) -> list:
    """The leader-epoch cache as recovering every segment from scratch would build it: each v2 batch with
    a partition leader epoch above the latest starts a new entry at its base offset (headers only)."""
    cache = EpochCache(())
    for s in segs:
        with MappedFile(directory / s.log.name) as mf:
            end = s.result.valid_bytes if s.result is not None else len(mf.buf)
            for b in BatchReader(mf.buf, 0, end):
                if b.magic >= 2 and b.is_valid():
                    cache.assign(b.partition_leader_epoch, b.base_offset)
        if stop_at is not None and s.base >= stop_at:
            break
    return cache.entries
