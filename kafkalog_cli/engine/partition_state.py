"""What the write-side commands need to know of a partition before planning: its segments (size,
largest timestamp, mtime), log range and the log directory's checkpoints for it."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .logdir import LogDir, dir_kind
from .lookup import PartitionView, segment_largest_timestamp


@dataclass
class SegmentState:
    base_offset: int
    size: int
    largest_timestamp: int
    timestamp_source: str
    mtime_ms: int


@dataclass
class PartitionState:
    directory: Path
    topic: str
    partition: int
    logdir: Path | None
    segments: list = field(default_factory=list)
    log_start: int = 0
    log_end: int = 0
    high_watermark: int | None = None
    recovery_point: int | None = None
    cleaner_checkpoint: int | None = None
    leftovers: list = field(default_factory=list)      # .swap/.cleaned/.deleted files: run recover first


def partition_state(directory: str | Path) -> PartitionState:
    directory = Path(directory)
    view = PartitionView(directory)
    name = view.log.name
    parent = directory.resolve().parent
    logdir = parent if dir_kind(parent) == "logdir" else None
    st = PartitionState(directory, name.topic if name else directory.name, name.partition if name else 0, logdir)
    st.log_start, st.log_end = view.log_start, view.log_end
    for base in view.bases:
        seg = view.log.segments[base]
        stat = seg.log_path.stat()
        largest, source = segment_largest_timestamp(seg)
        st.segments.append(SegmentState(base, stat.st_size, largest, source, stat.st_mtime_ns // 1_000_000))
    st.leftovers = [f.file for f in view.log.findings if f.kind.startswith("leftover_")]
    if logdir is not None and name is not None:
        d = LogDir.open(logdir)
        tp = (name.topic, name.partition)
        st.high_watermark = d.offset_checkpoint("replication-offset-checkpoint")[0].get(tp)
        st.recovery_point = d.offset_checkpoint("recovery-point-offset-checkpoint")[0].get(tp)
        st.cleaner_checkpoint = d.offset_checkpoint("cleaner-offset-checkpoint")[0].get(tp)
    return st
