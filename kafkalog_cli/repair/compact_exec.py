"""One cleaning pass over a partition, written with the broker's crash-safe swap (kafka-on-disk.md §9.4).

Per group of segments: the cleaned segment is written as ``<base>.{log,index,timeindex,txnindex}.cleaned``
(with the last source segment's mtime), renamed to ``.swap``, the old segments' files (and the producer
snapshots at their bases, but the first) are renamed to ``.deleted``, the ``.swap`` files are renamed
into place, and the ``.deleted`` files are removed. Kafka's loader (and ``kafkalog recover``) completes or
discards each intermediate state: ``.cleaned`` files are deleted (old segments intact); ``.swap`` files
replace every file in their offset range. After every group, ``cleaner-offset-checkpoint`` is set to
the pass's end offset, atomically. A crash before that leaves the old checkpoint: the next pass
recomputes the same result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint
from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.offset_index import build_offset_index, checked_lookup
from kafkalog_formats.time_index import build_time_index
from kafkalog_formats.txn_index import build_txn_index, parse_txn_index

from .. import fileops
from ..engine.index_rules import IndexBuilder
from ..engine.mapped import MappedFile, read_regular
from ..engine.producer_state import ProducerState
from ..layout import segment_file_name
from . import cleaner as cl


@dataclass
class PassReport:
    partition: str
    choice: object = None
    end_offset: int | None = None
    map_entries: int = 0
    map_full: bool = False
    groups: list = field(default_factory=list)        # [(bases, GroupStats)]
    skipped: str | None = None
    blocked: bool = False                             # could not be handled (unknown high watermark)
    checkpoint: tuple | None = None                   # (old, new)
    dry_run: bool = False


def segment_infos(state) -> list:
    """SegmentInfo for each segment: sizes, index entry counts, timestamps, next offset."""
    infos = []
    for s in state.segments:
        base = s.base_offset
        d = state.directory
        idx = d / segment_file_name(base, "index")
        tix = d / segment_file_name(base, "timeindex")
        n_idx = idx.stat().st_size // 8 if idx.exists() else 0
        n_tix = tix.stat().st_size // 12 if tix.exists() else 0
        first_ts, nxt = -1, None
        with MappedFile(d / segment_file_name(base, "log")) as mf:
            for i, b in enumerate(BatchReader(mf.buf)):
                if i == 0:
                    first_ts = b.max_timestamp
                nxt = b.last_offset + 1
        infos.append(cl.SegmentInfo(base, s.size, n_idx, n_tix, s.largest_timestamp, first_ts, s.mtime_ms, nxt))
    return infos


def _aborted_in(d: Path, bases: list[int]) -> list:
    out = []
    for base in bases:
        p = d / segment_file_name(base, "txnindex")
        if p.exists():
            out.extend(parse_txn_index(read_regular(p, MAX_BINARY_SIDE_FILE_BYTES), str(p)))
    return out


def _producer_state(d: Path, bases: list[int]) -> ProducerState:
    st = ProducerState()
    for base in bases:
        with MappedFile(d / segment_file_name(base, "log")) as mf:
            for b in BatchReader(mf.buf):
                st.update(b)
    return st


def run_pass(state, cfg: cl.CleanerConfig, now: int, *, high_watermark: int | None, force: bool,
             dry_run: bool) -> PassReport:
    d = state.directory
    rep = PassReport(f"{state.topic}-{state.partition}", dry_run=dry_run)
    infos = segment_infos(state)
    bases = [s.base_offset for s in infos]
    hw = high_watermark if high_watermark is not None else state.high_watermark
    if hw is None:
        rep.blocked = True
        rep.skipped = ("the high watermark is unknown (not in replication-offset-checkpoint): give "
                       "--high-watermark; a broker only cleans below it")
        return rep
    producers = _producer_state(d, bases)
    open_txns = [e.current_txn_first_offset for e in producers.entries.values() if e.current_txn_first_offset >= 0]
    lso = min([min(hw, state.log_end)] + open_txns)
    choice = cl.choose(infos, state.log_start, state.log_end, state.cleaner_checkpoint, lso, cfg, now)
    rep.choice = choice
    if choice.first_uncleanable <= choice.first_dirty:
        rep.skipped = "nothing is cleanable: the dirty range is empty (active segment, high watermark or lag)"
        return rep
    if not choice.eligible and not force:
        rep.skipped = (f"dirty ratio {choice.ratio:.3f} does not exceed --min-cleanable-ratio "
                       f"{cfg.min_cleanable_ratio} (use --force to clean anyway)")
        return rep
    dirty = [s for s in infos if s.base_offset < choice.first_uncleanable and
             (s.next_offset or s.base_offset) > choice.first_dirty]
    aborted = _aborted_in(d, bases)
    maps = []
    try:
        sources = []
        for i, s in enumerate(dirty):
            mf = MappedFile(d / segment_file_name(s.base_offset, "log"))
            maps.append(mf)
            start = 0
            idx = d / segment_file_name(s.base_offset, "index")
            if i == 0 and idx.exists():          # start at the index entry for the first dirty offset
                with MappedFile(idx) as ix:
                    start = checked_lookup(ix.buf, mf.buf, s.base_offset, choice.first_dirty)[2]
            next_base = bases[bases.index(s.base_offset) + 1]     # dirty segments are never the active one
            sources.append((s.base_offset, next_base, iter(BatchReader(mf.buf, start))))
        offset_map = cl.build_offset_map(sources, choice.first_dirty, choice.first_uncleanable, aborted, cfg)
    finally:
        for m in maps:
            m.close()
    rep.map_entries, rep.map_full = len(offset_map.entries), offset_map.full
    end_offset = offset_map.latest_offset + 1
    rep.end_offset = end_offset
    active = cl.active_producers(producers, now, cfg)
    below = [s for s in infos if s.base_offset < choice.first_dirty and (s.next_offset or 0) <= choice.first_dirty]
    legacy_horizon = (below[-1].mtime_ms - cfg.delete_retention_ms) if below else 0
    for group in cl.group_segments(infos, end_offset, choice.first_uncleanable, cfg):
        stats = _clean_group(d, group, offset_map, end_offset, aborted, active, cfg, now, legacy_horizon, dry_run)
        rep.groups.append(([s.base_offset for s in group], stats))
    if not dry_run and state.logdir is not None:
        rep.checkpoint = _write_checkpoint(state.logdir, (state.topic, state.partition), end_offset)
    elif state.logdir is not None:
        rep.checkpoint = (state.cleaner_checkpoint, end_offset)
    return rep


def _clean_group(d: Path, group: list, offset_map, end_offset: int, aborted: list, active: dict,
                 cfg: cl.CleanerConfig, now: int, legacy_horizon: int, dry_run: bool) -> cl.GroupStats:
    """Stream the group's surviving batches into ``<base>.log.cleaned`` (memory stays bounded by one batch),
    then swap it in; a single segment whose batches all survive unchanged is left as it is."""
    stats = cl.GroupStats()
    txn = cl.TxnTracker([a for a in aborted if a.last_offset >= group[0].base_offset])
    base = group[0].base_offset
    out = None if dry_run else fileops.NewFile(d / (segment_file_name(base, "log") + ".cleaned"))
    position = 0
    index = IndexBuilder(base, cfg.index_interval_bytes)
    for s in group:
        with MappedFile(d / segment_file_name(s.base_offset, "log")) as mf:
            retain_legacy = s.mtime_ms > legacy_horizon
            for batch_bytes in cl.clean_batches(iter(BatchReader(mf.buf)), offset_map, end_offset, txn, active,
                                                cfg, now, retain_legacy, stats):
                b = next(iter(BatchReader(batch_bytes)))
                index.add(position, b.last_offset, b.max_timestamp)
                position += len(batch_bytes)
                if out is not None:
                    out.write(batch_bytes)
    index.finish()
    if out is None:
        return stats
    if stats.batches_copied == stats.batches_in and len(group) == 1:
        out.discard()                                  # nothing to rewrite
        return stats
    mtime = group[-1].mtime_ms
    out.close(mtime)
    files = {"log": None, "index": build_offset_index(index.offset_entries, base),
             "timeindex": build_time_index(index.time_entries, base)}
    if txn.retained_aborted:
        files["txnindex"] = build_txn_index(txn.retained_aborted)
    for suffix, data in files.items():
        if data is not None:
            fileops.write_atomic(d / (segment_file_name(base, suffix) + ".cleaned"), data, mtime)
    for suffix in files:                       # .log first, then the indexes, as Kafka renames them
        src = d / (segment_file_name(base, suffix) + ".cleaned")
        fileops.rename(src, d / (segment_file_name(base, suffix) + ".swap"))
    doomed = []
    for s in group:
        for suffix in ("log", "index", "timeindex", "txnindex") + (("snapshot",) if s.base_offset != base else ()):
            p = d / segment_file_name(s.base_offset, suffix)
            if p.exists():
                target = p.with_name(p.name + ".deleted")
                fileops.rename(p, target)
                doomed.append(target)
    for suffix in files:
        fileops.rename(d / (segment_file_name(base, suffix) + ".swap"), d / segment_file_name(base, suffix))
    for p in doomed:
        fileops.unlink(p)
    return stats


def _write_checkpoint(logdir: Path, tp: tuple[str, int], end_offset: int) -> tuple:
    path = logdir / "cleaner-offset-checkpoint"
    current = parse_offset_checkpoint(read_regular(path), str(path)) if path.exists() else {}
    old = current.get(tp)
    if old != end_offset:
        current[tp] = end_offset
        fileops.write_atomic(path, build_offset_checkpoint(current).encode())
    return old, end_offset
