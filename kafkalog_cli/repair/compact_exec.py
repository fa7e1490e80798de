"""One cleaning pass over a partition (Kafka ``Cleaner.doClean``), written with the broker's crash-safe swap
(Kafka ``LocalLog.replaceSegments``, 3.0-4.0).

Every input is read and checked before the first change (``preflight``): the checkpoints read or rewritten,
the framing of every segment, every batch of the cleanable range (CRC and records, beyond the broker),
the ``.txnindex`` files and the offset-index entry the offset map starts from. A partition with a problem
is skipped and nothing of it changes, in ``--dry-run`` and in a real run alike.

Per group of segments: the cleaned segment is written as ``<base>.{log,index,timeindex,txnindex}.cleaned``
(with the last source segment's mtime); with a backup directory, every file about to be removed is linked
or copied there; the ``.cleaned`` files are renamed to ``.swap``, the old segments' files (and the producer
snapshots at their bases, but the first: ``UnifiedLog.replaceSegments`` → ``deleteProducerSnapshots``) are
renamed to ``.deleted``, the ``.swap`` files are renamed into place, and the ``.deleted`` files are removed.
Kafka's loader (and ``kafkalog recover``, and the next compact or retain) completes or discards each
intermediate state: ``.cleaned`` files are deleted (old segments intact); ``.swap`` files replace every
file in their offset range. After every group, ``cleaner-offset-checkpoint`` is set to the pass's end
offset, atomically (the old file backed up first). A crash before that leaves the old checkpoint: the
next pass recomputes the same result.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint
from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.offset_index import build_offset_index, checked_lookup
from kafkalog_formats.time_index import build_time_index
from kafkalog_formats.txn_index import build_txn_index

from .. import fileops
from ..engine.findings import Finding
from ..engine.index_rules import IndexBuilder
from ..engine.mapped import MappedFile, parsed_once
from ..engine.producer_state import ProducerState
from ..layout import segment_file_name
from . import cleaner as cl
from . import native_clean
from . import preflight as pf
from . import txn_check


@dataclass
class PassReport:
    partition: str
    choice: object = None
    end_offset: int | None = None
    map_entries: int = 0
    map_full: bool = False
    groups: list = field(default_factory=list)        # [(bases, GroupStats)]
    skipped: str | None = None
    blocked: bool = False                             # could not be handled (unknown high watermark, problems)
    problems: list = field(default_factory=list)      # Findings: why the partition was skipped
    finished: list = field(default_factory=list)      # leftovers of an interrupted operation completed first
    backups: list = field(default_factory=list)       # files written into the backup directory
    checkpoint: tuple | None = None                   # (old, new)
    dry_run: bool = False
    topic_status: str = "live"                        # the directory's status in the metadata (config_resolver)
    untouched: str | None = None                      # left exactly as it is (nothing read), and why
    settings: object = None                           # topic_policy.CleaningSettings: the values used
    notes: list = field(default_factory=list)         # how an input was read (no problem)

    @property
    def problem(self) -> bool:
        """Exit status 1: something the operator should look at (not the records cleaned as configured)."""
        from .topic_policy import NOT_LIVE
        if self.untouched is not None:
            return self.topic_status in NOT_LIVE
        return bool(self.blocked or self.finished)


@dataclass
class _Scan:
    infos: list
    producers: ProducerState
    log_end: int
    problems: list
    markers: list         # txn_check.LogMarker: every transaction marker, with its transaction's first offset


def _scan(state) -> _Scan:
    """Walk every segment once (headers; control records decoded after validation): SegmentInfo for each,
    the producer state at the log end (``UnifiedLog.lastRecordsOfActiveProducers``, the last stable offset),
    and framing problems. Each segment's largest timestamp is the one the broker's cleaner reads once the
    log is loaded (``engine.segment_times``): from the batches for a segment the broker recovers first (no
    clean-shutdown marker; ``preflight.recovery_problem`` checks that recovery keeps it whole) or whose time
    index ends before its newest batch, from the time index otherwise."""
    from ..engine.segment_times import largest_timestamp
    d = state.directory
    infos, problems, markers = [], [], []
    load = state.load_plan()
    producers = ProducerState()
    log_end = state.segments[0].base_offset if state.segments else 0
    for i, s in enumerate(state.segments):
        base = s.base_offset
        idx = d / segment_file_name(base, "index")
        tix = d / segment_file_name(base, "timeindex")
        n_idx = idx.stat().st_size // 8 if idx.exists() else 0
        n_tix = tix.stat().st_size // 12 if tix.exists() else 0
        first_ts, nxt, log_max = -1, None, -1
        recovered = load.recovers(base)
        path = d / segment_file_name(base, "log")
        with MappedFile(path) as mf:
            # native: runs of batches without a producer id summed up in C (only their end offset matters)
            reader = native_clean.HeaderWalk(mf) if native_clean.available() else BatchReader(mf.buf)
            j = 0
            for b in reader:
                if isinstance(b, native_clean.Run):
                    if j == 0:
                        first_ts = b.first_max_timestamp
                    j += b.batches
                    nxt = b.next_offset
                    log_max = max(log_max, b.max_timestamp)
                    producers.map_end_offset = nxt       # ProducerState.update of such a batch sets only this
                    continue
                mf.release_behind(b.position)
                if j == 0:
                    first_ts = b.max_timestamp
                j += 1
                nxt = b.last_offset + 1
                log_max = max(log_max, b.max_timestamp)
                if b.magic >= 2 and b.is_control and b.producer_id >= 0:
                    p = pf.batch_problem(path, b)         # the producer state decodes the marker
                    if p is not None:
                        problems.append(p)
                        continue
                    kind = _marker_kind(b)
                    if kind is not None:
                        old = producers.entries.get(b.producer_id)
                        first = old.current_txn_first_offset if old is not None else -1
                        markers.append(txn_check.LogMarker(b.producer_id, b.last_offset, kind == "abort",
                                                           first if first >= 0 else None, str(path)))
                producers.update(b)
            p = pf.framing_problem(path, reader.stop, active=i == len(state.segments) - 1)
            if p is not None:
                problems.append(p)
            elif recovered:
                p = pf.recovery_problem(path, mf.buf, base)
                if p is not None:
                    problems.append(p)
        log_end = max(log_end, base, nxt or 0)
        lt = largest_timestamp(s.index_timestamp, log_max, s.mtime_ms, recovered=recovered)
        infos.append(cl.SegmentInfo(base, s.size, n_idx, n_tix, lt.value, first_ts, s.mtime_ms, nxt))
    return _Scan(infos, producers, log_end, problems, markers)


def _marker_kind(b) -> str | None:
    """"abort" or "commit" for a transaction marker (a control batch whose record's key says so)."""
    from kafkalog_formats import control as ctl
    if not b.count:
        return None
    t = ctl.parse_control_key(next(iter(b.records())).key).type
    return {ctl.ABORT: "abort", ctl.COMMIT: "commit"}.get(t)


def _released(mf: MappedFile, batches):
    """The batches, with the mapped pages behind them released as the walk goes (bounded resident memory)."""
    for b in batches:
        yield b
        mf.release_behind(b.position)


def _checkpoint_problems(state, need_hw: bool) -> list:
    if state.logdir is None:
        return []
    names = ["cleaner-offset-checkpoint", "log-start-offset-checkpoint"]
    if need_hw:
        names.append("replication-offset-checkpoint")
    out = [pf.checkpoint_problem(state.logdir / n, parse_offset_checkpoint) for n in names]
    return [p for p in (pf.topic_name_problem(state), *out) if p is not None]


def _aborted(d: Path, infos: list, log_start: int) -> tuple[list, list, list]:
    """(per segment: its .txnindex entries, every (file, entry), problems). Kafka's
    ``collectAbortedTransactions`` passes the log start offset as the fetch offset: only entries ending at or
    above it are ever collected."""
    per_segment, located, problems = [], [], []
    for s in infos:
        base = s.base_offset
        p = d / segment_file_name(base, "txnindex")
        entries = []
        if p.exists():
            entries, problem = pf.txn_index_problem(p, base, s.size)
            if problem is not None:
                problems.append(problem)
            located += [(str(p), e) for e in entries]
        per_segment.append([a for a in entries if a.last_offset >= log_start])
    return per_segment, located, problems


def _validate_range(d: Path, infos: list, first_uncleanable: int, first_dirty_seg: int,
                    first_dirty: int) -> tuple[list, int]:
    """Check every batch of every segment that may be rewritten (base < first uncleanable offset), and the
    offset-index entry the map starts from; returns (problems, start position in the first dirty segment)."""
    problems, start = [], 0
    for s in infos:
        if s.base_offset >= first_uncleanable:
            break
        path = d / segment_file_name(s.base_offset, "log")
        dirty_seg = s.base_offset == first_dirty_seg
        idx = d / segment_file_name(s.base_offset, "index")
        looked_up = dirty_seg and idx.exists()
        with MappedFile(path) as mf:
            if looked_up:                         # where the map will start: must be a batch start
                with MappedFile(idx) as ix:
                    _slot, entry, start, why = checked_lookup(ix.buf, mf.buf, s.base_offset, first_dirty)
                if why is not None:               # outside the segment, not increasing, past the offset
                    problems.append(Finding("offset_index", f"{why}: run kafkalog recover first (it rebuilds "
                                               "the index)", str(idx), offset=entry))
                    looked_up = False
            fast = native_clean.first_problem(path, mf, pf.batch_problem, start if looked_up else None)
            if fast is not None:
                p, start_found = fast
            else:
                p, start_found = None, False
                for b in BatchReader(mf.buf):
                    start_found = start_found or b.position == start
                    p = pf.batch_problem(path, b)
                    if p is not None:
                        break
                    mf.release_behind(b.position)
            if p is not None:
                problems.append(p)                # the first problem of each segment
        if looked_up and start and not start_found:
            problems.append(Finding(
                "offset_index", f"the entry for offset {entry} points at position {start}, which is not "
                "the start of a batch: run kafkalog recover first (it rebuilds the index)", str(idx),
                offset=entry))
            start = 0
    return problems, start


def run_pass(state, cfg: cl.CleanerConfig, now: int, *, high_watermark: int | None, force: bool,
             dry_run: bool, backup: Path | None = None, sole_replica: bool = False) -> PassReport:
    d = state.directory
    rep = PassReport(f"{state.topic}-{state.partition}", dry_run=dry_run)
    rep.problems += _checkpoint_problems(state, high_watermark is None)
    rep.problems += pf.misread_problems(state) + pf.segment_size_problems(state)
    if rep.problems:
        return _skip(rep)
    scan = _scan(state)
    rep.problems += scan.problems
    if rep.problems:
        return _skip(rep)
    infos = scan.infos
    bases = [s.base_offset for s in infos]
    from .retain_exec import loaded_high_watermark
    hw, hw_note = loaded_high_watermark(state, state.log_start, scan.log_end, sole_replica, given=high_watermark)
    if hw_note:
        rep.notes.append(hw_note)
    if hw is None:
        rep.blocked = True
        rep.skipped = ("the high watermark is unknown (not in replication-offset-checkpoint): give "
                       "--high-watermark; a broker only cleans below it")
        return rep
    producers = scan.producers
    open_txns = [e.current_txn_first_offset for e in producers.entries.values() if e.current_txn_first_offset >= 0]
    lso = min([min(hw, scan.log_end)] + open_txns)
    choice = cl.choose(infos, state.log_start, scan.log_end, state.cleaner_checkpoint, lso, cfg, now)
    rep.choice = choice
    if choice.first_uncleanable <= choice.first_dirty:
        rep.skipped = ("nothing is cleanable: the dirty range is empty (only the active segment, data at or above the "
                       "last stable offset, or younger than min.compaction.lag.ms, is left)")
        return rep
    if not choice.eligible and not force:
        rep.skipped = (f"dirty ratio {choice.ratio:.3f} does not exceed min.cleanable.dirty.ratio="
                       f"{cfg.min_cleanable_ratio} (--force cleans anyway)")
        return rep
    first_dirty_i = max(bisect.bisect_right(bases, choice.first_dirty) - 1, 0)
    per_segment, located, problems = _aborted(d, infos, state.log_start)
    range_problems, start = _validate_range(d, infos, choice.first_uncleanable, bases[first_dirty_i],
                                            choice.first_dirty)
    rep.problems += problems + range_problems
    if not problems:              # the entries the pass relies on, checked against the markers in the log
        rep.problems += txn_check.problems(located, scan.markers, state.log_start, choice.first_uncleanable)
    if rep.problems:
        return _skip(rep)

    try:
        offset_map = _offset_map(d, infos, first_dirty_i, start, choice, per_segment, cfg)
        rep.map_entries, rep.map_full = len(offset_map), offset_map.full
        end_offset = offset_map.latest_offset + 1
        rep.end_offset = end_offset
        active = cl.active_producers(producers, now, cfg)
        # Cleaner.doClean: logSegments(0, firstDirtyOffset).lastOption, the segment holding the first dirty
        # offset when it lies inside one
        below = [s for s in infos if s.base_offset < choice.first_dirty]
        legacy_horizon = (below[-1].mtime_ms - cfg.delete_retention_ms) if below else 0
        txn = cl.TxnTracker([a for entries in per_segment for a in entries])   # one for the whole pass
        for group in cl.group_segments(infos, end_offset, choice.first_uncleanable, cfg):
            stats = _clean_group(d, group, offset_map, choice.first_uncleanable, txn, active, cfg, now,
                                 legacy_horizon, dry_run, backup, rep)
            rep.groups.append(([s.base_offset for s in group], stats))
    except FormatError as e:      # preflight read these very bytes: only a file changed under us gets here.
        # The group being written was discarded; groups swapped in before it are whole (each swap completes
        # on its own) and the checkpoint is not advanced, so the next pass starts over.
        rep.problems.append(Finding(e.kind or "record", e.reason, e.file or str(d), e.position))
        return _skip(rep)
    if not dry_run and state.logdir is not None:
        rep.checkpoint = _write_checkpoint(state.logdir, (state.topic, state.partition), end_offset, backup, rep)
    elif state.logdir is not None:
        rep.checkpoint = (state.cleaner_checkpoint, end_offset)
    return rep


def _skip(rep: PassReport) -> PassReport:
    rep.blocked = True
    rep.skipped = f"{len(rep.problems)} problem(s) found: nothing of this partition was changed"
    return rep


def _offset_map(d: Path, infos: list, first_dirty_i: int, start: int, choice, per_segment: list,
                cfg: cl.CleanerConfig) -> cl.OffsetMap:
    """``buildOffsetMap`` over ``logSegments(firstDirty, firstUncleanable)``, aborted transactions from the
    first dirty segment's ``.txnindex`` on (``collectAbortedTransactions(start, end)``)."""
    dirty = [s for s in infos[first_dirty_i:] if s.base_offset < choice.first_uncleanable]

    def sources():
        """Each dirty segment mapped while the build reads it, then closed: one file open at a time,
        whatever the number of segments (a map holds a descriptor)."""
        for i, s in enumerate(dirty):
            next_base = dirty[i + 1].base_offset if i + 1 < len(dirty) else choice.first_uncleanable
            with MappedFile(d / segment_file_name(s.base_offset, "log")) as mf:
                yield s.base_offset, next_base, native_clean.MappedBatches(mf, start if i == 0 else 0)

    aborted = [a for entries in per_segment[first_dirty_i:] for a in entries
               if a.first_offset < choice.first_uncleanable]
    segments = sources()
    try:
        return native_clean.build_offset_map(segments, choice.first_dirty, choice.first_uncleanable, aborted, cfg)
    finally:
        segments.close()


def _clean_group(d: Path, group: list, offset_map, upper_bound: int, txn: cl.TxnTracker, active: dict,
                 cfg: cl.CleanerConfig, now: int, legacy_horizon: int, dry_run: bool, backup: Path | None,
                 rep: PassReport) -> cl.GroupStats:
    """Kafka ``Cleaner.cleanSegments``: stream the group's surviving batches into ``<base>.log.cleaned``
    (memory stays bounded by one batch), then swap it in; a single segment whose batches all survive
    unchanged is left as it is."""
    stats = cl.GroupStats()
    txn.start_group()
    base = group[0].base_offset
    out = None if dry_run else fileops.NewFile(d / (segment_file_name(base, "log") + ".cleaned"))
    try:
        position = 0
        index = IndexBuilder(base, cfg.index_interval_bytes)
        for s in group:
            with MappedFile(d / segment_file_name(s.base_offset, "log")) as mf:
                retain_legacy = s.mtime_ms > legacy_horizon
                walk = native_clean.clean_walk(mf, offset_map, now, upper_bound) or _released(mf, BatchReader(mf.buf))
                for batch_bytes in native_clean.clean_batches(walk, offset_map, upper_bound, txn, active, cfg, now,
                                                              retain_legacy, stats):
                    b = next(iter(BatchReader(batch_bytes)))
                    index.add(position, b.last_offset, b.max_timestamp)
                    position += len(batch_bytes)
                    if out is not None:
                        out.write(batch_bytes)
        index.finish()
    except BaseException:
        if out is not None:           # nothing was swapped yet: the old segments are intact
            out.abandon()
        raise
    if out is None:
        return stats
    if stats.batches_copied == stats.batches_in and len(group) == 1:
        out.discard()                                  # nothing to rewrite
        return stats
    mtime = group[-1].mtime_ms
    files = {"log": None, "index": build_offset_index(index.offset_entries, base),
             "timeindex": build_time_index(index.time_entries, base)}
    if txn.retained_aborted:
        files["txnindex"] = build_txn_index(txn.retained_aborted)
    doomed = []
    for s in group:
        for suffix in ("log", "index", "timeindex", "txnindex") + (("snapshot",) if s.base_offset != base else ()):
            p = d / segment_file_name(s.base_offset, suffix)
            if p.exists():
                doomed.append(p)
    try:
        out.close(mtime)
        for suffix, data in files.items():
            if data is not None:
                fileops.write_atomic(d / (segment_file_name(base, suffix) + ".cleaned"), data, mtime)
        if backup is not None:            # before the first rename: a kill anywhere later loses none of it
            for p in doomed:
                kept = fileops.backup_keep(p, backup / d.name / p.name)
                if kept is not None:
                    rep.backups.append(str(kept))
    except OSError:                       # e.g. a full disk: nothing was swapped yet, leave no .cleaned behind
        for suffix in files:
            fileops.discard_output(d / (segment_file_name(base, suffix) + ".cleaned"))
        raise
    for suffix in files:                       # .log first, then the indexes, as Kafka renames them
        src = d / (segment_file_name(base, suffix) + ".cleaned")
        fileops.rename(src, d / (segment_file_name(base, suffix) + ".swap"))
    deleted = []
    for p in doomed:
        target = p.with_name(p.name + ".deleted")
        fileops.rename(p, target)
        deleted.append(target)
    for suffix in files:
        fileops.rename(d / (segment_file_name(base, suffix) + ".swap"), d / segment_file_name(base, suffix))
    for p in deleted:
        fileops.unlink(p)
    return stats


def _write_checkpoint(logdir: Path, tp: tuple[str, int], end_offset: int, backup: Path | None,
                      rep: PassReport) -> tuple:
    path = logdir / "cleaner-offset-checkpoint"
    current = dict(parsed_once(path, parse_offset_checkpoint)) if path.exists() else {}
    old = current.get(tp)
    if old != end_offset:
        current[tp] = end_offset
        if backup is not None and path.exists():
            kept = fileops.backup_copy(path, backup / path.name)
            if kept is not None:
                rep.backups.append(str(kept))
        fileops.write_atomic(path, build_offset_checkpoint(current).encode())
    return old, end_offset
