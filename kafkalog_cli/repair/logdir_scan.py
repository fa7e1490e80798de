"""The read-only scan of a whole log directory for ``recover`` (``LogManager.loadLogs``): the clean-shutdown
marker, the offset checkpoints, which partition directories are loaded (``select_partitions``), and each one's
``segment_recovery.PartitionFacts``, in worker processes with ``-j`` (``parallel_scan``). Nothing here writes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..engine.mapped import read_regular
from .recover_actions import problem
from .salvage_recovery import scan as scan_partition
from .segment_recovery import ScanOptions


@dataclass
class LogDirFacts:
    path: str
    marker_present: bool = False
    marker_bytes: bytes | None = None
    checkpoints: dict = field(default_factory=dict)          # name -> {(topic, partition): offset}
    checkpoint_problems: dict = field(default_factory=dict)  # name -> message (Kafka reads it as empty)
    partitions: list = field(default_factory=list)           # PartitionFacts
    skipped: list = field(default_factory=list)              # (directory, reason)
    problems: list = field(default_factory=list)             # dicts: kind, message, file, position
    notes: list = field(default_factory=list)
    root_tmp: list = field(default_factory=list)


class _NoProgress:
    def start(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


def select_partitions(d, selected: set[str] | None, include_metadata: bool):
    """Partition directories of a log dir (``engine.logdir.LogDir``, opened) to recover, as (directory, kind),
    plus (name, reason) skipped and problems, each in name order. ``selected`` holds ``topic-N`` names
    (None: all)."""
    from ..layout import METADATA_PARTITION, parse_partition_dir
    chosen, problems = [], []
    skipped = [(e.name, "tiered-storage index cache: Kafka's log loading skips it") for e in d.special_dirs]
    for f in d.findings:
        if f.kind == "unknown_directory":
            name = Path(f.file).name
            problems.append(problem("unknown_directory", f"'{name}' is not in the form of topic-partition or "
                                    "topic-partition.uniqueId-delete: Kafka refuses to load this log directory "
                                    "until it is moved away (left alone)", name))
    for entry in sorted(d.partition_dirs, key=lambda p: p.name):
        pname = parse_partition_dir(entry.name)
        if selected is not None and str(pname) not in selected:
            continue
        if entry.name == METADATA_PARTITION:
            if include_metadata:
                chosen.append((entry, "metadata"))
            else:
                skipped.append((entry.name, "KRaft metadata log: recovered only with --include-metadata-log "
                                "(the Raft layer recovers it fully on every start)"))
            continue
        chosen.append((entry, pname.state or "normal"))
    return chosen, sorted(skipped), problems


def scan_logdir(path: str | Path, *, selected: set[str] | None = None, include_metadata: bool = False,
                force: bool = False, index_interval_bytes: int = 4096, progress=None,
                all_segments: bool = False, producer_state: bool = False, jobs: int = 1,
                salvage: bool = False) -> LogDirFacts:
    """Everything ``recover_plan.plan_logdir`` needs about one log directory (read-only). ``producer_state``:
    every partition's producer state is replayed to its log end (``--mark-clean`` writes it); ``jobs``:
    partitions scanned at once in worker processes."""
    from ..engine.logdir import LogDir
    from ..layout import LOG_DIR_FILES, OFFSET_CHECKPOINTS
    path = Path(path)
    progress = progress or _NoProgress()
    facts = LogDirFacts(str(path))
    marker = path / ".kafka_cleanshutdown"
    if marker.is_file():
        facts.marker_present = True
        facts.marker_bytes = read_regular(marker)
    d = LogDir(path)
    for name in OFFSET_CHECKPOINTS:
        values, problem = d.offset_checkpoint(name)
        facts.checkpoints[name] = values
        if problem is not None:
            facts.checkpoint_problems[name] = problem.message
            facts.notes.append(f"{name} cannot be read ({problem.message}); Kafka reads it as empty")
    facts.root_tmp = sorted(e.name for e in path.iterdir()
                            if e.is_file() and e.name.endswith(".tmp") and e.name[:-4] in LOG_DIR_FILES)
    listing = LogDir.open(path)
    chosen, facts.skipped, facts.problems = select_partitions(listing, selected, include_metadata)
    rp = facts.checkpoints.get("recovery-point-offset-checkpoint", {})
    ls = facts.checkpoints.get("log-start-offset-checkpoint", {})
    from ..layout import parse_partition_dir
    current = {(n.topic, n.partition) for n in map(parse_partition_dir, (e.name for e in listing.partition_dirs))
               if n.state is None}
    tasks = []
    for directory, kind in chosen:
        pname = parse_partition_dir(directory.name)
        tp = (pname.topic, pname.partition)
        # LogManager.loadLog reads the entries of the log dir's checkpoints for the topic-partition, whatever the
        # directory's suffix; the log dir's checkpoints hold its current and future logs (logsByDir). A -future or
        # -stray directory beside the current log of its partition would share the current log's entries, so it
        # is recovered from its first segment instead; a -delete directory is not recovered.
        own = kind == "normal" or (kind in ("future", "stray") and tp not in current)
        tasks.append((directory, kind, rp.get(tp) if own else None, ls.get(tp) if own else None, own))
    scan_opts = dict(index_interval_bytes=index_interval_bytes, clean_shutdown=facts.marker_present, force=force,
                     all_segments=all_segments, producer_state=producer_state, salvage=salvage)
    if jobs > 1:                   # partitions scanned in worker processes, facts in the same order (parallel_scan)
        from .parallel_scan import scan_partitions
        facts.partitions.extend(scan_partitions(tasks, scan_opts, jobs, progress))
        return facts
    for directory, kind, recovery_point, log_start, own in tasks:
        total = sum(e.stat().st_size for e in directory.iterdir() if e.is_file() and e.name.endswith(".log"))
        progress.start(directory.name, total)
        opts = ScanOptions(progress=progress.advance, **scan_opts)
        try:
            facts.partitions.append(scan_partition(directory, kind, recovery_point=recovery_point,
                                                   log_start=log_start, options=opts, own_checkpoints=own))
        finally:
            progress.finish()
    return facts
