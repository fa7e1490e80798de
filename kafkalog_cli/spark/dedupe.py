"""``--dedupe-replicas``: one row per (cluster, topic, partition, offset) across copies of a partition.

A partition found in several log directories of one cluster (its replicas, or backups of them) is read
by windows of offsets, each one Spark task holding every copy's segments that overlap the window:

1. the batch headers of every copy are walked (CRC checked, no record decoded);
2. each offset goes to one batch: a batch whose CRC is valid, then the higher partition leader epoch,
   then the first log directory (in path order). The epoch rule is Kafka's: after a leader change a
   follower truncates its log to the new leader's epoch end offset (``LeaderEpochFileCache.endOffsetFor``,
   used by ``AbstractFetcherThread.truncateToEpochEndOffsets``), so where copies disagree, the copy with
   the higher epoch is the one Kafka keeps. Copies usually agree batch for batch (followers append the
   leader's batches unchanged), and then the first directory's copy is read;
3. only the chosen batches are read (runs of them, as ranges), and rows are kept for the offsets each was
   chosen for.

Problems: a batch whose CRC fails in one copy is a warning when other copies gave all its offsets (the
data is exported), an error otherwise; everything else as for a plain read. Each problem is reported
by one window only (a batch's by the window holding its base offset, a segment's by the first window the
segment overlaps).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace

import numpy as np

from . import problems as P


@dataclass(frozen=True)
class Window:
    lo: int | None                # first offset (None: everything below hi)
    hi: int | None                # last offset (None: no end)

    def contains(self, offset: int | None) -> bool:
        return offset is not None and (self.lo is None or offset >= self.lo) and (self.hi is None or offset <= self.hi)

    def opts(self, opts):
        kw = {}
        if self.lo is not None:
            kw["from_offset"] = self.lo
        if self.hi is not None:
            kw["to_offset"] = self.hi
        return opts.narrowed(**kw) if kw else opts


def split(ranges: list) -> tuple[list, list]:
    """(ranges of partitions held once, [(copies key, ranges)] of partitions held in several log directories)."""
    groups: dict = {}
    for r in ranges:
        groups.setdefault((r.cluster_id, r.topic, r.partition), []).append(r)
    single, multi = [], []
    for key, rs in groups.items():
        if len({r.log_dir for r in rs}) > 1 and key[2] is not None:
            multi.append((key, rs))
        else:
            single.extend(rs)
    single_set = {id(r) for r in single}
    return [r for r in ranges if id(r) in single_set], multi


def windows(rs: list, task_bytes: int) -> list[tuple[Window, tuple]]:
    """Windows of offsets over one partition's copies, cut at the segment bases of the copy with the most
    segments, each about ``task_bytes`` of that copy; with the ranges of every copy overlapping it."""
    by_dir: dict = {}
    for r in rs:
        by_dir.setdefault(r.log_dir, {}).setdefault(r.base_offset, []).append(r)
    ref = max(by_dir.values(), key=len)
    bases = sorted(ref)
    cuts = []
    size = 0
    for b in bases:
        seg = sum(r.size for r in ref[b])
        if cuts and size + seg > task_bytes:
            cuts.append(b)
            size = 0
        elif not cuts:
            cuts.append(b)
        size += seg
    bounds = [None] + cuts[1:] + [None]
    out = []
    for lo, hi_next in zip(bounds, bounds[1:]):
        w = Window(lo, None if hi_next is None else hi_next - 1)
        members = []
        for segs in (by_dir[d] for d in sorted(by_dir, key=lambda d: (d is None, d))):
            seg_bases = sorted(segs)
            for i, b in enumerate(seg_bases):
                nxt = seg_bases[i + 1] if i + 1 < len(seg_bases) else None
                if (w.hi is None or b <= w.hi) and (nxt is None or w.lo is None or nxt > w.lo):
                    members.extend(segs[b])
        out.append((w, tuple(members)))
    return out


# --- on the executors -----------------------------------------------------------------------------------

def run_window(spec, window: Window, ranges: tuple, sink, write) -> int:
    """Read one window of a partition's copies into ``write`` (rows of each offset once); returns rows."""
    from .rows import read_range
    segments: dict = {}
    for r in ranges:
        segments.setdefault(r.segment, []).append(r)
    order = sorted(segments, key=lambda s: (segments[s][0].log_dir or "", s))
    cands = []                    # (segment index, position, base, last, epoch, valid, count, size)
    for k, seg in enumerate(order):
        rs = segments[seg]
        first_window = _first_window(window, rs[0])
        if first_window and rs[0].first:
            for p in P.segment_problems(rs[0], spec.opts.max_decompressed_bytes):
                sink.problem(p)
        cands.extend((k,) + c for c in _headers(rs, window, sink, report=first_window))
    pieces = resolve(cands, window)
    # CRC failures: a warning when the other copies gave every offset of the batch
    by_cand: dict = {}
    for c, lo, hi in pieces:
        by_cand.setdefault(c, []).append((lo, hi))
    covered = _Coverage(pieces)
    for i, c in enumerate(cands):
        k, pos, base, last, _epoch, valid, count, size = c
        if valid or not window.contains(base):
            continue
        rng = segments[order[k]][0]
        from kafkalog_formats.message_set import BatchReader
        from ..engine.mapped import MappedFile
        with MappedFile(rng.segment) as mf:
            b = next(iter(BatchReader(mf.buf, pos)))
            p = P.crc_problem(b, rng.segment)
        if covered.covers(base, last, exclude_segment=k, cands=cands):
            p = p._replace(severity="warning", message=p.message + " (its offsets were exported from another copy)",
                           records=None, bytes=None)
        sink.problem(p)
    rows = 0
    for k, seg in enumerate(order):
        chosen = sorted((cands[c][1], cands[c][7], ivs) for c, ivs in by_cand.items() if cands[c][0] == k)
        if not chosen:
            continue
        rng0 = segments[seg][0]
        keep = {pos: ivs for pos, _size, ivs in chosen}
        for start, end in _runs(chosen):
            sub = replace(rng0, start=start, end=end, first=False)
            before = len(sink.problems)
            for batch in read_range(sub, window.opts(spec.opts), list(spec.columns), sink=sink):
                batch = _select(batch, keep)
                if batch is not None and batch.num_rows:
                    write(batch)
                    rows += batch.num_rows
            # a batch read in two windows reports its problems in the window holding its offset
            sink.problems[before:] = [p for p in sink.problems[before:] if p.offset is None or window.contains(p.offset)]
    return rows


def _first_window(window: Window, rng) -> bool:
    """Whether ``window`` is the first window overlapping the segment of ``rng`` (it reports the segment's
    own problems)."""
    return window.lo is None or rng.base_offset >= window.lo


def _headers(rs: list, window: Window, sink, report: bool) -> list:
    """(position, base, last, epoch, valid, count, size) of the batches of one copy's segment in the
    window: headers only, CRC checked; where Kafka's reader stops, go on as a plain read does."""
    from kafkalog_formats import columns as C
    from kafkalog_formats.message_set import BatchReader

    from ..engine.mapped import MappedFile
    rng = rs[0]
    start, end = min(r.start for r in rs), max(r.end for r in rs)
    out = []
    with MappedFile(rng.segment) as mf:
        buf = mf.buf
        n = len(buf)
        pos = start
        while pos is not None and pos < end:
            s = C.scan(buf, pos, n, records=False, headers=False, crc=True, lo=window.lo, hi=window.hi,
                       max_bytes=64 << 20, until=end)
            if s.n_batches:
                bt = s.numpy()[0]
                base = bt[:, C.B["base_offset"]]
                last = base + bt[:, C.B["last_offset_delta"]]
                for i in range(len(bt)):
                    out.append((int(bt[i, C.B["position"]]), int(base[i]), int(last[i]),
                                int(bt[i, C.B["partition_leader_epoch"]]), bool(bt[i, C.B["crc_valid"]]),
                                int(bt[i, C.B["count"]]), int(bt[i, C.B["size"]])))
            mf.release_behind(s.stop)
            if s.reason in (C.END, C.TO_OFFSET):
                break
            if s.reason == C.LIMIT:
                pos = s.stop
                continue
            reader = BatchReader(buf, s.stop, n)
            b = next(iter(reader), None)
            if b is None:
                stop = reader.stop
                resumed = None
                if any(memoryview(buf)[stop.position:]):
                    resumed = P.resume_position(buf, stop.position, rng.base_offset,
                                                _index_path(rng.segment))
                inside = resumed if resumed is not None and resumed < end else None
                said = resumed if resumed is not None and resumed <= end else None
                if report:
                    sink.problem(P.framing_problem(buf, stop, rng.segment, said, end if said is None else said))
                pos = inside
                continue
            pos = b.position + b.size          # a legacy entry: its offsets as the pure reader sees them
            try:
                base = b.base_offset
            except Exception:                  # noqa: BLE001 - a wrapper that does not decompress: last only
                base = b.last_offset
            last = b.last_offset
            if (window.lo is not None and last < window.lo) or (window.hi is not None and base > window.hi):
                continue
            out.append((b.position, base, last, -1, b.is_valid(), 1, b.size))
    return out


def _index_path(segment: str):
    from pathlib import Path
    return Path(segment).with_suffix(".index")


def resolve(cands: list, window: Window) -> list[tuple[int, int, int]]:
    """(candidate index, first offset, last offset) pieces: every offset of the window covered by a valid
    batch goes to the best batch covering it (higher leader epoch, then the first copy, then the first
    position), as a sweep over the batches' offset ranges."""
    valid = [i for i, c in enumerate(cands) if c[5] and c[3] >= c[2]]
    if not valid:
        return []
    lo_w = -(1 << 63) if window.lo is None else window.lo
    hi_w = (1 << 63) - 1 if window.hi is None else window.hi
    starts = sorted(valid, key=lambda i: max(cands[i][2], lo_w))
    points = sorted({max(cands[i][2], lo_w) for i in valid} | {min(cands[i][3], hi_w) + 1 for i in valid})
    heap: list = []
    out: list = []
    j = 0
    for p, q in zip(points, points[1:]):
        while j < len(starts) and max(cands[starts[j]][2], lo_w) <= p:
            i = starts[j]
            c = cands[i]
            heapq.heappush(heap, (-c[4], c[0], c[1], i))
            j += 1
        while heap and min(cands[heap[0][3]][3], hi_w) < p:
            heapq.heappop(heap)
        if not heap:
            continue
        i = heap[0][3]
        if out and out[-1][0] == i and out[-1][2] == p - 1:
            out[-1] = (i, out[-1][1], q - 1)
        else:
            out.append((i, p, q - 1))
    return out


class _Coverage:
    def __init__(self, pieces: list) -> None:
        self.pieces = sorted((lo, hi, c) for c, lo, hi in pieces)

    def covers(self, lo: int, hi: int, exclude_segment: int, cands: list) -> bool:
        """Whether pieces from other copies than segment ``exclude_segment`` cover [lo, hi]."""
        need = lo
        for a, b, c in self.pieces:
            if b < need or cands[c][0] == exclude_segment:
                continue
            if a > need:
                return False
            need = b + 1
            if need > hi:
                return True
        return need > hi


def _runs(chosen: list) -> list[tuple[int, int]]:
    """Byte ranges of consecutive chosen batches (position, size) of one segment."""
    out = []
    for pos, size, _ivs in chosen:
        if out and out[-1][1] == pos:
            out[-1] = (out[-1][0], pos + size)
        else:
            out.append((pos, pos + size))
    return out


def _select(batch, keep: dict):
    """The rows whose batch was chosen for their offset."""
    import pyarrow as pa
    positions = np.asarray(batch.column("batch_position"), dtype=np.int64)
    offsets = np.asarray(batch.column("offset"), dtype=np.int64)
    mask = np.zeros(len(positions), dtype=bool)
    uniq, first = np.unique(positions, return_index=True)
    for pos in uniq:
        ivs = keep.get(int(pos))
        if not ivs:
            continue
        rows = positions == pos
        sel = np.zeros(len(positions), dtype=bool)
        for lo, hi in ivs:
            sel |= (offsets >= lo) & (offsets <= hi)
        mask |= rows & sel
    if mask.all():
        return batch
    return batch.filter(pa.array(mask))
