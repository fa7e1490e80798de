"""One replica of a partition as ``kafkalog diff`` compares it: its log range, high watermark, cleaned
prefix, topic id and leader-epoch cache as the broker would load them, and a lazy walk over its batches.

Inputs are matched into groups of replicas of one partition: every partition directory found under the
given paths (partition directories, log directories, folders of several brokers' log directories) is
keyed by topic name and partition; topic ids (``partition.metadata``) are compared per pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..findings import Finding
from ..logdir import LogDir
from ..mapped import MappedFile, read_regular
from .epochs import EpochCache, loaded_cache


@dataclass
class Replica:
    directory: Path
    label: str                          # how the user spelled its log directory (or partition directory)
    topic: str
    partition: int
    broker_id: int | None = None
    topic_id: str | None = None
    log_start: int = 0
    log_end: int = 0
    log_start_source: str = "first segment"
    high_watermark: int = 0
    hw_source: str = "replication-offset-checkpoint"
    cleaned_end: int | None = None      # cleaner-offset-checkpoint: offsets below it have been cleaned
    epochs_file: list = field(default_factory=list)   # entries as read (checkpoint or rebuilt)
    epoch_source: str = "leader-epoch-checkpoint"
    cache: EpochCache = field(default_factory=EpochCache)
    problems: list = field(default_factory=list)      # Findings
    notes: list = field(default_factory=list)         # str
    bases: list = field(default_factory=list)         # segment base offsets

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    short: str | None = None                          # a short name given by a text report (e.g. "broker 1")

    @property
    def who(self) -> str:
        if self.short is not None:
            return self.short
        return self.label if self.broker_id is None else f"{self.label} (broker {self.broker_id})"

    def segment_paths(self) -> list[Path]:
        from ...layout import segment_file_name
        return [self.directory / segment_file_name(b, "log") for b in self.bases]

    def batches(self, stop_sink=None):
        """Every batch from the log start on, in offset order across segments (each segment mapped while
        its batches are in use, its pages released behind the walk: two replicas of a 1 GiB segment held
        2 GiB resident). A walk that ends early (corrupt or trailing bytes) calls ``stop_sink(Finding)``
        and continues with the next segment, as verify would report it."""
        for path in self.segment_paths():
            try:
                mf = MappedFile(path)
            except OSError as e:
                if stop_sink:
                    stop_sink(Finding("io_error", f"cannot read: {e.strerror or e}", str(path)))
                continue
            try:
                from kafkalog_formats.message_set import BatchReader
                reader = BatchReader(mf.buf)
                for b in reader:
                    if b.last_offset < self.log_start:
                        continue
                    yield b
                    mf.release_behind(b.position)
                if reader.stop is not None and stop_sink:
                    s = reader.stop
                    stop_sink(Finding(s.kind, f"{s.reason}: the comparison skips the rest of this segment "
                                      "(run kafkalog verify)", str(path), s.position))
            finally:
                mf.close()


def open_replica(directory: Path, label: str, logdir: "_LogDirInfo | None") -> Replica:
    """Read what the broker's loader would know about this partition directory (nothing is written)."""
    from ..lookup import LookupFailed, PartitionView
    from ...layout import parse_partition_dir
    name = parse_partition_dir(directory.name)
    r = Replica(directory, label, name.topic if name else directory.name, name.partition if name else 0)
    if logdir is not None:
        r.broker_id = logdir.broker_id
    try:
        view = PartitionView(directory)
    except LookupFailed:
        r.notes.append("no segment files: an empty replica")
        view = None
    if view is not None:
        r.bases = list(view.bases)
        r.log_start, r.log_end = view.log_start, view.log_end
        r.log_start_source = "log-start-offset-checkpoint" if view.log_start != view.bases[0] else "first segment"
        r.problems.extend(f for f in view.log.findings if f.severity == "error")
    _topic_id(r)
    hw = None
    if logdir is not None:
        tp = (r.topic, r.partition)
        hw = logdir.checkpoint("replication-offset-checkpoint", r).get(tp)
        r.cleaned_end = logdir.checkpoint("cleaner-offset-checkpoint", r).get(tp)
    if hw is None:
        # Partition.createLog: "No checkpointed highwatermark is found" → 0, then updateHighWatermark
        # bounds it by the log start and log end offsets.
        r.hw_source = "none checkpointed: 0, raised to the log start as the broker does"
        hw = 0
    from ..partition_state import bounded_high_watermark
    r.high_watermark = bounded_high_watermark(hw, r.log_start, r.log_end)
    _epochs(r)
    return r


def _topic_id(r: Replica) -> None:
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.partition_metadata import parse_partition_metadata
    p = r.directory / "partition.metadata"
    if not p.is_file():
        return
    try:
        r.topic_id = parse_partition_metadata(read_regular(p), str(p)).topic_id
    except (FormatError, OSError) as e:
        r.problems.append(Finding("partition_metadata", f"unreadable: {getattr(e, 'reason', e)}", str(p)))


def _epochs(r: Replica) -> None:
    """The leader-epoch cache from ``leader-epoch-checkpoint``; rebuilt from the batches' partition leader
    epochs when the file is missing or unreadable (beyond Kafka, which starts with an empty cache or
    refuses the file), saying so."""
    from kafkalog_formats.checkpoint import parse_leader_epoch_checkpoint
    from kafkalog_formats.errors import FormatError
    p = r.directory / "leader-epoch-checkpoint"
    why = None
    if p.is_file():
        try:
            r.epochs_file = [tuple(e) for e in parse_leader_epoch_checkpoint(read_regular(p), str(p))]
        except FormatError as e:
            why = f"leader-epoch-checkpoint is unreadable ({e.reason})"
            r.problems.append(Finding(e.kind, e.reason, str(p), e.position))
        except OSError as e:
            why = f"leader-epoch-checkpoint cannot be read ({e.strerror or e})"
            r.problems.append(Finding("io_error", f"cannot read: {e.strerror or e}", str(p)))
    elif r.bases:
        why = "no leader-epoch-checkpoint"
    if why is not None:
        rebuilt = EpochCache()
        for b in r.batches():
            if b.magic >= 2:
                rebuilt.assign_from_batch(b.partition_leader_epoch, b.base_offset)
        r.epochs_file = list(rebuilt.entries)
        r.epoch_source = f"the batches' partition leader epochs ({why})"
        r.notes.append(f"{why}: leader epochs taken from the batches")
    r.cache = loaded_cache(r.epochs_file, r.log_start, r.log_end)
    dropped = [e for e in EpochCache(r.epochs_file).entries if e[1] >= r.log_end]
    if dropped and r.bases:
        r.notes.append("leader-epoch-checkpoint also has " + ", ".join(f"epoch {e} from {s}" for e, s in dropped)
                       + f", at or past the log end {r.log_end}: the broker drops it when it loads the log "
                       "(truncateFromEnd; no record was written in that epoch)")


class _LogDirInfo:
    """A log directory's checkpoints, read once for all its partitions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.logdir = LogDir.open(path)
        self._checkpoints: dict = {}
        self.broker_id = None
        try:
            meta = self.logdir.meta_properties()
            self.broker_id = meta.node_id if meta is not None else None
        except Exception:          # FormatError: meta.properties is verify's business, not ours
            self.broker_id = None

    def checkpoint(self, name: str, r: Replica) -> dict:
        if name not in self._checkpoints:
            self._checkpoints[name] = self.logdir.offset_checkpoint(name)
        values, problem = self._checkpoints[name]
        if problem is not None and problem not in r.problems:
            r.problems.append(problem)
        return values


@dataclass
class Inputs:
    groups: dict = field(default_factory=dict)        # (topic, partition) -> [Replica]
    single: list = field(default_factory=list)        # partitions found in one place only: (name, label)
    skipped: list = field(default_factory=list)       # (path, why)
    explicit_pair: bool = False                       # two partition directories given: compare by position


def collect(paths: list[str], wanted: set | None = None) -> Inputs:
    """Find every replica under ``paths`` and group them by (topic, partition)."""
    from ...layout import METADATA_PARTITION, parse_partition_dir
    from ..targets import LogDirFound, Note, PartitionDir, resolve, shown
    out = Inputs()
    found: list[tuple[Path, str, _LogDirInfo | None]] = []
    seen: set = set()

    def add(pdir: Path, label: str, info) -> None:
        key = pdir.resolve()
        if key in seen:
            return
        seen.add(key)
        n = parse_partition_dir(pdir.name)
        if n is not None and n.state is not None:
            out.skipped.append((label, f"{pdir.name}: a partition directory marked -{n.state}"))
            return
        if pdir.name == METADATA_PARTITION:
            out.skipped.append((label, f"{pdir.name}: the KRaft metadata log (replicated by Raft, not by the "
                                "leader-epoch protocol)"))
            return
        if wanted and (n is None or (n.topic, n.partition) not in wanted):
            return
        found.append((pdir, label, info))

    targets = resolve(paths)
    infos: dict = {}

    def info_of(logdir: Path | None):
        if logdir is None:
            return None
        if logdir not in infos:
            infos[logdir] = _LogDirInfo(logdir)
        return infos[logdir]

    for item in targets.items:
        if isinstance(item, Note):
            if item.unreadable:           # a directory that cannot be listed: a replica that cannot be compared
                raise item.cannot_run()
            continue
        if isinstance(item, LogDirFound):
            for p in item.partitions:
                add(p.path, shown(item.path, item.given), info_of(item.path))
        elif isinstance(item, PartitionDir):
            add(item.path, shown(item.path, item.given), info_of(item.logdir))
    kinds = list(targets.kinds.values())
    explicit = len(paths) == 2 and kinds[:1] == ["partition"] and len(kinds) == 2 and kinds[1] == "partition"
    out.explicit_pair = explicit and len(found) == 2
    groups: dict = {}
    for pdir, label, info in found:
        r = open_replica(pdir, label, info)
        key = ("", 0) if out.explicit_pair else (r.topic, r.partition)
        groups.setdefault(key, []).append(r)
    for key, reps in sorted(groups.items()):
        if len(reps) < 2:
            out.single.append((reps[0].name, reps[0].who))
        else:
            _unique_labels(reps)
            out.groups[key] = reps
    return out


def _unique_labels(reps: list[Replica]) -> None:
    """Two replicas shown under the same label (a directory given twice under different names is
    already merged) get their partition directory as label."""
    counts: dict = {}
    for r in reps:
        counts[r.label] = counts.get(r.label, 0) + 1
    for r in reps:
        if counts[r.label] > 1:
            r.label = str(r.directory)
