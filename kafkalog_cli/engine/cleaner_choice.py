"""Which part of a compacted log Kafka's cleaner would clean, and whether it is due (``LogCleanerManager``:
``cleanableOffsets``, ``cleanBytes``, the dirty ratio, ``needCompactionNow``; docs/kafka-on-disk.md §9.1).

Read side: ``engine.describe`` reports the dirty ratio from it, ``repair.cleaner`` and ``compact_exec`` plan
a cleaning pass with it. Pure: segment summaries in, a ``Choice`` out.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

LONG_MAX = (1 << 63) - 1


@dataclass
class CleanerConfig:
    min_cleanable_ratio: float = 0.5
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    dedupe_buffer_bytes: int = 128 * 1024 * 1024
    load_factor: float = 0.9
    producer_id_expiration_ms: int = 86_400_000


@dataclass
class SegmentInfo:
    """What the cleaner needs to know of a segment without reading its records."""
    base_offset: int
    size: int
    index_entries: int
    time_index_entries: int
    largest_timestamp: int
    first_batch_max_timestamp: int
    mtime_ms: int
    next_offset: int | None          # last offset + 1 (None: empty)


@dataclass
class Choice:
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    ratio: float
    need_compaction_now: bool
    eligible: bool
    reset_checkpoint: str | None = None


def choose(segments: list[SegmentInfo], log_start: int, log_end: int, checkpoint: int | None,
           last_stable_offset: int, cfg: CleanerConfig, now: int) -> Choice:
    """LogCleanerManager: first dirty offset (with Kafka's reset rules), first uncleanable offset rounded down
    to a segment boundary, dirty ratio and eligibility."""
    first_dirty = log_start if checkpoint is None else checkpoint
    reset = None
    if checkpoint is not None and (checkpoint < log_start or checkpoint > log_end):
        reset = (f"cleaner checkpoint {checkpoint} is outside the log [{log_start}, {log_end}]: resetting to the "
                 f"log start offset {log_start}")
        first_dirty = log_start
    bases = [s.base_offset for s in segments]
    dirty_from = max(_floor_index(bases, first_dirty), 0)
    dirty_non_active = segments[dirty_from:-1]
    candidates = [last_stable_offset, bases[-1]]
    if cfg.min_compaction_lag_ms > 0:
        young = next((s for s in dirty_non_active if s.largest_timestamp > now - cfg.min_compaction_lag_ms), None)
        if young is not None:
            candidates.append(young.base_offset)
    uncleanable = max(first_dirty, min(candidates))
    first_uncleanable = bases[max(_floor_index(bases, uncleanable), 0)]
    clean = sum(s.size for s in segments if s.base_offset < first_dirty)
    cleanable = sum(s.size for s in segments[dirty_from:] if s.base_offset < first_uncleanable)
    total = clean + cleanable
    ratio = cleanable / total if total else 0.0
    need_now = False
    if cfg.max_compaction_lag_ms < LONG_MAX:
        firsts = [s.first_batch_max_timestamp for s in dirty_non_active if s.first_batch_max_timestamp > 0]
        need_now = bool(firsts) and min(firsts) < now - cfg.max_compaction_lag_ms
    eligible = total > 0 and ((need_now and cleanable > 0) or ratio > cfg.min_cleanable_ratio)
    return Choice(first_dirty, first_uncleanable, clean, cleanable, ratio, need_now, eligible, reset)


def _floor_index(bases: list[int], offset: int) -> int:
    return bisect.bisect_right(bases, offset) - 1
