"""What the write-side commands need to know of a partition before planning: its segments (size,
largest timestamp, mtime), log range, the log directory's checkpoints for it and whether the broker
shut down cleanly (which decides the segments its next start recovers before retention or cleaning)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .logdir import LogDir
from .lookup import PartitionView
from .segment_times import time_index_last
from .load_plan import LoadPlan, plan_for


#: findings of names Kafka's loader reads otherwise than they say (``layout.name_problem``)
MISREAD_KINDS = frozenset({"unparsable_file_name", "phantom_segment", "misnamed_file"})


@dataclass
class SegmentState:
    base_offset: int
    size: int
    mtime_ms: int
    index_timestamp: int | None = None   # last .timeindex entry (None: no entry)


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
    misread: list = field(default_factory=list)        # Findings: names Kafka's loader misreads (layout.name_problem)
    clean_shutdown: bool | None = None                 # .kafka_cleanshutdown in the log dir (None: no log dir)

    def load_plan(self) -> LoadPlan:
        """Which segments the broker's next start recovers (``LogLoader.recoverLog``) before it runs
        retention or cleaning on this log."""
        return plan_for([s.base_offset for s in self.segments], metadata_log=False, deleted=False,
                        clean_shutdown=self.clean_shutdown, recovery_point=self.recovery_point)


def bounded_high_watermark(checkpointed: int | None, log_start: int, log_end: int) -> int:
    """The high watermark a broker starts a loaded log with (``Partition.createLog`` → ``UnifiedLog.
    updateHighWatermark``, 2.x–4.x): the checkpointed one (0 when the partition has none), raised to the log
    start, else lowered to the log end. A checkpoint above the log end (an unflushed tail lost at a kill, a
    restored backup) therefore means the log end."""
    hw = 0 if checkpointed is None else checkpointed
    if hw < log_start:
        return log_start
    return min(hw, log_end)


def partition_state(directory: str | Path) -> PartitionState:
    directory = Path(directory)
    view = PartitionView(directory)
    name = view.log.name
    from .targets import logdir_of
    logdir = logdir_of(directory)          # a link in a log directory: that one (its lock, checkpoints)
    st = PartitionState(directory, name.topic if name else directory.name, name.partition if name else 0, logdir)
    st.log_start, st.log_end = view.log_start, view.log_end
    for base in view.bases:
        seg = view.log.segments[base]
        stat = seg.log_path.stat()
        st.segments.append(SegmentState(base, stat.st_size, stat.st_mtime_ns // 1_000_000,
                                        time_index_last(seg.timeindex_path)))
    st.leftovers = [f.file for f in view.log.findings if f.kind.startswith("leftover_")]
    st.misread = [f for f in view.log.findings if f.kind in MISREAD_KINDS]
    if logdir is not None and name is not None:
        d = LogDir(logdir)                   # its checkpoints only: no listing per partition
        st.clean_shutdown = d.has_clean_shutdown_marker
        tp = (name.topic, name.partition)
        st.high_watermark = d.offset_checkpoint("replication-offset-checkpoint")[0].get(tp)
        st.recovery_point = d.offset_checkpoint("recovery-point-offset-checkpoint")[0].get(tp)
        st.cleaner_checkpoint = d.offset_checkpoint("cleaner-offset-checkpoint")[0].get(tp)
    return st
