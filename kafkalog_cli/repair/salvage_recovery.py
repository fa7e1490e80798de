"""The read half of ``recover --salvage`` (beyond Kafka): every segment of a partition walked for damage
(``engine.salvage``), then, when anything is to change, the partition recovered over what salvage keeps, as
``LogSegment.recover`` would recover it had the damaged bytes never been there: indexes rebuilt on the new
positions, the producer state and the leader-epoch cache replayed over the kept batches. Nothing here
writes; ``recover_plan`` turns the result into actions.

Transactions the damage leaves open. A transaction whose batches precede a damaged range may have ended
inside it: its COMMIT or ABORT marker is among the lost bytes. Left open, the broker keeps the partition's
last stable offset at its first offset for good (a hanging transaction: READ_COMMITTED consumers see
nothing after it), and its producer's next transaction would end it with that transaction's marker: an
aborted transaction would become committed. Salvage therefore ends every transaction still open where a
damaged range is followed by kept batches with an ABORT marker of its own (a control batch written at the
first free offset of the gap, with the producer's epoch, its last coordinator epoch and timestamp, the
previous batch's leader epoch). An aborted transaction stays aborted; a committed one whose marker was lost
is read as aborted by READ_COMMITTED consumers (its records remain for READ_UNCOMMITTED consumers and in
the backup), which the report says, transaction by transaction. A torn tail (nothing kept after it) gets no
marker: there, as after any crash, the transaction coordinator completes what is open.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats import control as ctl
from kafkalog_formats.message_set import BatchV2View
from kafkalog_formats.record_batch import RecordSpec, build_batch

from ..engine.mapped import MappedFile
from ..engine.producer_state import ProducerState
from ..engine.salvage import Damage, Keep, Layout, Repair, first_epoch, walk_segment
from .epoch_cache import EpochCache
from .segment_recovery import SegmentRecovery, _SegmentWalk, _walk_runs, scan_partition


@dataclass
class Marker:
    """An ABORT marker salvage writes: ``offset``, the producer, and the transaction it ends."""
    offset: int
    producer_id: int
    producer_epoch: int
    first_offset: int          # the transaction's first offset
    data: bytes = field(repr=False, default=b"")


@dataclass
class SalvagedSegment:
    """What salvage makes of one segment: its layout (``engine.salvage.Layout``), the markers it writes (each
    after the damaged piece numbered ``piece``), its new size, and the transactions left open at damage it
    could not end (no free offset)."""
    layout: Layout
    markers: list = field(default_factory=list)       # (piece index, Marker)
    new_size: int = 0
    unended: list = field(default_factory=list)        # (producer id, first offset)

    @property
    def changed(self) -> bool:
        return self.layout.changed or bool(self.markers)


@dataclass
class SalvageFacts:
    """The salvage of a partition: per segment base, the layout and (when anything changes) the recovery."""
    layouts: dict = field(default_factory=dict)        # base -> Layout
    results: dict = field(default_factory=dict)        # base -> SegmentRecovery (with .salvaged)
    changed: bool = False
    state_entries: list | None = None
    state_end: int | None = None
    epochs_after: list | None = None
    replay_from: int | None = None
    problems: list = field(default_factory=list)       # (message, segment name)
    stop: tuple | None = None                          # the producer state refuses (Kafka's loader would)
    first_changed: int | None = None                   # base of the first segment that changes

    @property
    def damages(self) -> list:
        return [(base, d) for base, lay in self.layouts.items() for d in lay.damages]


def find_damage(directory: Path, segments: list, *, deep: bool = True, progress=None) -> dict:
    """Phase 1: every segment's ``Layout``, in offset order (the last kept offset and epoch carried from one
    segment to the next; a damaged range's first kept offset after it filled in across segments)."""
    layouts: dict = {}
    prev, prev_epoch = None, -1
    open_damage: list[Damage] = []
    for i, s in enumerate(segments):
        nxt = segments[i + 1].base if i + 1 < len(segments) else None
        next_epoch = -1
        if nxt is not None:
            with MappedFile(directory / segments[i + 1].log.name) as mf:
                next_epoch = first_epoch(mf.buf)
        with MappedFile(directory / s.log.name) as mf:
            lay = walk_segment(mf.buf, s.base, prev, nxt, deep=deep, release=mf.release_behind,
                               previous_epoch=prev_epoch, next_epoch=next_epoch)
        layouts[s.base] = lay
        first = lay.first_offset
        if first is not None:
            for d in open_damage:
                d.before = first
            open_damage = []
        open_damage += [d for d in lay.damages if d.before is None]
        if lay.last_offset is not None:
            prev = lay.last_offset
        prev_epoch = lay.last_epoch
        if progress is not None:
            progress(s.log.size)
    return layouts


def salvage_segment(buf, base: int, layout: Layout, *, interval: int, state: ProducerState | None,
                    epochs: EpochCache | None, path: str, release=None, next_base: int | None = None,
                    epoch_before: int = -1) -> SegmentRecovery:
    """Phase 2 for one segment: ``LogSegment.recover`` over the pieces ``layout`` keeps (positions shifted
    over the dropped bytes), with the ABORT markers of the transactions a gap leaves open written right
    after it (``SalvagedSegment.markers``). The result's ``valid_bytes`` is the new size."""
    w = _SegmentWalk(buf, base, interval, state, epochs, path)
    salvaged = SalvagedSegment(layout)
    new_pos = 0
    last_epoch = epoch_before
    for i, piece in enumerate(layout.pieces):
        if isinstance(piece, Keep):
            w.shift = piece.start - new_pos
            if _native():
                _walk_runs(buf, base, w.builder, w.res, state, epochs, w.one, release, piece.start, piece.end,
                           w.shift)
            else:
                _pure_run(buf, piece.start, piece.end, w)
            new_pos += piece.end - piece.start
            if piece.epoch >= 0:
                last_epoch = piece.epoch
        elif isinstance(piece, Repair):
            w.shift = piece.start - new_pos
            w.one(_Repaired(buf, piece))
            new_pos += piece.end - piece.start
            if piece.epoch >= 0:
                last_epoch = piece.epoch
        elif isinstance(piece, Damage) and piece.before is not None and state is not None:
            for marker in _end_open_transactions(state, piece, base, next_base, last_epoch, salvaged):
                w.shift = -new_pos
                w.one(BatchV2View(marker.data, 0))
                salvaged.markers.append((i, marker))
                new_pos += len(marker.data)
        if state is not None and state.stop is not None:
            break                              # Kafka's loader would stop here: the caller refuses the partition
        if release is not None:
            release(getattr(piece, "end", 0))
    res = w.res
    res.log_size = len(buf)
    res.valid_bytes = salvaged.new_size = new_pos
    if res.batches == 0:
        res.next_offset = base
    w.check_last_time_entry()
    w.build_indexes()
    res.salvaged = salvaged
    return res


class _Repaired:
    """The view of a batch as salvage repairs it: the stored batch (``BatchV2View`` at its position) with the
    header fields ``piece`` rewrites (base offset, length, leader epoch: all outside the CRC); no copy of
    the batch is made, however large."""

    def __init__(self, buf, piece: Repair) -> None:
        self._view = BatchV2View(buf, piece.start)
        self._buf, self.position, self.size = buf, piece.start, piece.end - piece.start
        fields = {name: new for name, _old, new in piece.fields}
        self.base_offset = fields.get("base_offset", self._view.base_offset)
        self.partition_leader_epoch = fields.get("partition_leader_epoch", self._view.partition_leader_epoch)
        self.last_offset = self.base_offset + self._view.last_offset_delta
        self.offset_field = self.base_offset
        self._as_stored = not ({"base_offset", "length"} & set(fields))      # its records read as they are

    def __getattr__(self, name):
        return getattr(self._view, name)

    def computed_crc(self) -> int:
        from kafkalog_formats.crc import crc32c_region
        return crc32c_region(self._buf, self.position + 21, self.position + self.size)

    def is_valid(self) -> bool:
        return self.size >= 61 and self.computed_crc() == self._view.crc

    def records(self, max_output: int | None = None):
        if self._as_stored:
            return self._view.records(max_output)
        from kafkalog_formats.record_batch import iter_records
        v = self._view
        data = memoryview(self._buf)[self.position + 61:self.position + self.size]
        if v.codec:
            from kafkalog_formats.codecs import decompress
            data = decompress(v.codec, data, magic=2, max_output=max_output)
        lat = v.max_timestamp if v.attributes & 0x08 else None
        return iter_records(data, v.count, self.base_offset, v.base_timestamp, v.base_sequence, lat,
                            compressed=bool(v.codec))


def _native() -> bool:
    from kafkalog_formats import native
    return native.ext is not None


def _pure_run(buf, start: int, end: int, w: _SegmentWalk) -> None:
    from kafkalog_formats.message_set import BatchReader
    for batch in BatchReader(buf, start, end):
        if w.one(batch):
            return


def _end_open_transactions(state: ProducerState, damage: Damage, base: int, next_base: int | None,
                           epoch: int, salvaged: SalvagedSegment) -> list[Marker]:
    """ABORT markers for every transaction open at a gap, at its first free offsets (see the module
    docstring); transactions for which the gap has no free offset in this segment are left to the next
    damaged piece of the same gap (``salvaged.unended`` says which)."""
    open_txns = sorted((e.current_txn_first_offset, pid, e) for pid, e in state.entries.items()
                       if e.current_txn_first_offset >= 0)
    if not open_txns:
        return []
    lo = max(damage.after + 1 if damage.after is not None else base, base)
    hi = damage.before
    if next_base is not None:
        hi = min(hi, next_base)
    hi = min(hi, base + 0x7FFFFFFF + 1)
    out = []
    for (first, pid, e), offset in zip(open_txns, range(lo, hi)):
        ts = e.timestamp if e.timestamp >= 0 else 0
        rec = RecordSpec(0, ts, ctl.build_control_key(ctl.ABORT), ctl.build_end_txn_marker(max(e.coordinator_epoch, 0)))
        data = build_batch(offset, [rec], partition_leader_epoch=epoch, is_transactional=True, is_control=True,
                           producer_id=pid, producer_epoch=e.producer_epoch, base_timestamp=ts, max_timestamp=ts)
        out.append(Marker(offset, pid, e.producer_epoch, first, data))
    salvaged.unended = [(pid, first) for first, pid, _e in open_txns[len(out):]]
    return out


def scan(directory: Path, kind: str, *, recovery_point: int | None, log_start: int | None, options,
         own_checkpoints: bool = False):
    """``segment_recovery.scan_partition`` (Kafka's view of the partition) and, with ``options.salvage``, the
    salvage of it (``facts.salvage``)."""
    facts = scan_partition(directory, kind, recovery_point=recovery_point, log_start=log_start, options=options,
                           own_checkpoints=own_checkpoints)
    if options.salvage and facts.segments and kind in ("normal", "future", "stray"):
        facts.salvage = salvage_partition(directory, facts, facts.snapshot_data, log_start, options)
    return facts


def salvage_partition(directory: Path, facts, snapshot_data: dict, log_start: int | None, options) -> SalvageFacts:
    """Both phases over a partition's segments (``facts``: ``segment_recovery.PartitionFacts`` after the
    passes 1-2 it applied virtually). The producer state starts from the newest readable snapshot at or below
    the first segment (above the log start), the leader-epoch cache from the checkpoint."""
    segs = facts.segments
    sf = SalvageFacts()
    sf.layouts = find_damage(directory, segs, progress=options.progress)
    if not any(lay.changed for lay in sf.layouts.values()):
        return sf
    state = ProducerState()
    first = segs[0].base
    log_start_cp = log_start if log_start is not None else 0
    usable = [o for o in snapshot_data if log_start_cp < o <= first]
    if usable:
        sf.replay_from = max(usable)
        state.load(snapshot_data[sf.replay_from].entries, sf.replay_from)
    else:
        state.map_end_offset = max(log_start_cp, first)
    epochs = EpochCache(facts.epochs_file or ())
    epoch_before = -1
    for i, s in enumerate(segs):
        nxt = segs[i + 1].base if i + 1 < len(segs) else None
        path = directory / s.log.name
        with MappedFile(path) as mf:
            res = salvage_segment(mf.buf, s.base, sf.layouts[s.base], interval=options.index_interval_bytes,
                                  state=state, epochs=epochs, path=str(path), release=mf.release_behind,
                                  next_base=nxt, epoch_before=epoch_before)
        sf.results[s.base] = res
        if res.salvaged.changed and sf.first_changed is None:
            sf.first_changed = s.base
        sf.changed = sf.changed or res.salvaged.changed
        for pid, first_offset in res.salvaged.unended:
            sf.problems.append((f"the transaction of producer {pid} from offset {first_offset} is open at damage, and "
                                "no free offset in the gap lets salvage end it with an ABORT marker", s.log.name))
        if state.stop is not None:
            sf.stop = state.stop
            break
        if sf.layouts[s.base].last_epoch >= 0:
            epoch_before = sf.layouts[s.base].last_epoch
    sf.state_entries = state.snapshot_entries()
    sf.state_end = state.map_end_offset
    sf.epochs_after = epochs.entries
    return sf
