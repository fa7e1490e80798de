"""The ranges a read is made of (``SegmentRange``: bytes of one ``.log`` that one Spark task reads) and how a
segment is cut into them at offset-index entries (``segment_cuts``, each cut checked: a whole CRC-valid batch
starts there). The planners build them (``plan`` for local files, ``storage`` for object storage); the
readers (``rows``, ``export``) take them. No Spark here; a module of its own so that both planners share it
without importing each other.
"""
from __future__ import annotations

import bisect
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ..engine.mapped import MappedFile
from .options import ReadOptions

MIN_RANGE_BYTES = 1024 * 1024      # never cut closer than this (or half of splitBytes) to the previous cut


@dataclass(frozen=True)
class PartitionTxns:
    """What ``read_committed`` needs of a partition: aborted transactions and the last stable offset."""
    aborted: tuple = ()            # ((producer_id, first_offset, marker_offset), ...) sorted
    last_stable_offset: int | None = None


@dataclass(frozen=True)
class SegmentRange:
    """Bytes ``[start, end)`` of one ``.log``: the batches that start there are one task's input."""
    log_dir: str | None            # absolute path of the log directory holding the partition (None: unknown)
    topic: str
    partition: int | None
    segment: str                   # absolute path of the .log
    base_offset: int
    start: int
    end: int
    file_size: int
    txns: PartitionTxns | None = None
    cluster_id: str | None = None  # meta.properties of the log directory (None: unknown)
    node_id: int | None = None     # broker.id (ZooKeeper-era brokers) or node.id (KRaft)
    first: bool = True             # the first range of this segment in the plan: it also checks the segment
    active: bool = False           # the partition's last segment (the one a broker appends to)
    recovers: bool = False         # Kafka's next start recovers this segment (verify_policy): its indexes are
                                   # rebuilt, so their findings are information, as verify reports them
    bounds: tuple | None = None    # (from, to) offsets of this partition alone (startingOffsets/endingOffsets
                                   # JSON, startingTimestamp), narrowing the read options'
    source: str | None = None      # the object-storage URI of ``segment`` when that is a task's local copy
    limit: int | None = None       # nothing at or after this byte is framed (a piece --salvage keeps)

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass
class Plan:
    ranges: list
    segments: int = 0              # segments read (some split into several ranges)
    bytes: int = 0
    findings: list | None = None   # oddities met while listing (unknown files ...), for the caller to show


# --- cutting a segment at offset-index entries --------------------------------------------------

def segment_cuts(log_path: Path, index_path: Path, base: int, size: int, opts: ReadOptions,
                 before_check=None) -> list[int]:
    """Byte positions ``[start, cut1, ..., size]``; each inner cut is a checked batch start.
    ``before_check(position)`` runs before a candidate is checked (object storage fetches the batch)."""
    check = _batch_starts_at if before_check is None else \
        (lambda buf, p, b, o: (before_check(p), _batch_starts_at(buf, p, b, o))[1])
    start = 0
    need_start = opts.from_offset is not None and opts.from_offset > base
    if size <= opts.split_bytes and not need_start:
        return [0, size]
    entries = _index_entries(index_path, base)
    if not entries[0]:
        return [0, size]
    offsets, positions = entries
    with MappedFile(log_path) as mf:
        buf = mf.buf
        if before_check is not None:
            # a sparse local copy filled as candidates are fetched: the holes it had when mapped are not holes
            # at the positions checked (the map would read the fetched batches as zeros)
            buf.data_extents = None
        if need_start:
            # Kafka's lookup: the last entry whose offset is <= the target (§3.5), then read forward
            i = bisect.bisect_right(offsets, opts.from_offset) - 1
            while i >= 0 and not check(buf, positions[i], base, offsets[i]):
                i -= 1
            if i >= 0:
                start = positions[i]
        cuts = [start]
        if size - start > opts.split_bytes:
            gap = min(MIN_RANGE_BYTES, opts.split_bytes // 2)
            k = 1
            while True:
                target = start + k * opts.split_bytes
                if target >= size:
                    break
                j = bisect.bisect_right(positions, target) - 1
                while j >= 0 and positions[j] > cuts[-1] + gap:
                    if check(buf, positions[j], base, offsets[j]):
                        cuts.append(positions[j])
                        break
                    j -= 1
                k += 1
    cuts.append(size)
    return cuts


def _index_entries(index_path: Path, base: int) -> tuple[list, list]:
    """(absolute offsets, positions) of the real entries, only where both strictly increase."""
    if not index_path.exists():
        return [], []
    from kafkalog_formats import offset_index as oi
    try:
        with MappedFile(index_path) as mf:
            arr = oi.offset_index_array(mf.buf)
            cap = oi.max_plausible_entries(index_path.with_suffix(".log").stat().st_size)
            n = min(oi.real_entry_count(arr[:cap + 1]), cap)
            rel = arr["rel"][:n].tolist()
            pos = arr["pos"][:n].tolist()
    except OSError:
        return [], []
    offsets, positions = [], []
    for r, p in zip(rel, pos):
        o = base + r
        if p > 0 and (not positions or (p > positions[-1] and o > offsets[-1])):
            offsets.append(o)
            positions.append(p)
    return offsets, positions


def _batch_starts_at(buf, position: int, base: int, entry_offset: int) -> bool:
    """Is there a whole, CRC-valid batch at ``position`` whose offsets fit the index entry?"""
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.message_set import BatchReader
    if position <= 0 or position >= len(buf):
        return False
    try:
        b = next(iter(BatchReader(buf, position)), None)
        return (b is not None and b.is_valid() and base <= b.offset_field
                and b.last_offset <= entry_offset)
    except FormatError:
        return False


# --- plans travel to the data source as JSON (the CLI plans once, shows it, and Spark reads it) ---

def ranges_to_json(ranges: list) -> str:
    return json.dumps([asdict(r) for r in ranges], separators=(",", ":"))


def ranges_from_json(text: str) -> list:
    out = []
    for d in json.loads(text):
        t = d.pop("txns")
        txns = None if t is None else PartitionTxns(tuple(tuple(x) for x in t["aborted"]), t["last_stable_offset"])
        out.append(SegmentRange(**d, txns=txns))
    return out
