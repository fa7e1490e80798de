"""``describe``: per partition what a live cluster tells through ``kafka-log-dirs.sh --describe`` (size),
``kafka-get-offsets.sh`` / ListOffsets (log start, high watermark, last stable offset) and
``kafka-transactions.sh describe-producers`` (producers, open transactions), from the files alone.

Each value is the one the broker would have once it loaded the log (Kafka ``UnifiedLog``, 3.x-4.x):

* size: the sum of the segments' ``.log`` sizes (``UnifiedLog.size``, what DescribeLogDirs reports);
* log start: ``log-start-offset-checkpoint`` when above the first segment's base offset, else that base
  (``LogLoader``); log end: the offset after the last readable batch;
* high watermark: ``replication-offset-checkpoint`` (0 when absent, ``Partition.createLogIfNotExists``)
  clamped to [log start, log end] (``UnifiedLog.updateHighWatermark`` on load);
* recovery point and cleaner checkpoint: their checkpoint files, as written;
* producers, open transactions, last stable offset: ``producer_view``;
* first timestamp: the first record at the log start offset; last timestamp: the max timestamp of the
  log's last batch;
* dirty ratio (compacted topics): ``LogCleanerManager``'s, by ``cleaner_choice.choose``, with the last stable
  offset above and the topic's ``min.compaction.lag.ms``;
* topic id (``partition.metadata``), and the topic's cleanup.policy with where it comes from
  (``config_resolver``: the KRaft metadata of the log directory, else Kafka's defaults).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.errors import FormatError

from ..layout import METADATA_PARTITION, OFFSET_CHECKPOINTS, parse_partition_dir
from .logdir import LogDir
from .producer_view import PRODUCER_ID_EXPIRATION_MS, OpenTxn, producer_view
from .verify import INTERNAL_COMPACT


@dataclass
class PartitionDescription:
    topic: str
    partition: int
    directory: str
    log_dir: str | None
    state: str | None = None                 # None (live) or delete / future / stray
    size: int = 0
    segments: int = 0
    log_start: int | None = None
    log_end: int | None = None
    high_watermark: int | None = None
    high_watermark_checkpoint: int | None = None
    recovery_point: int | None = None
    last_stable_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    producers: int | None = None
    producer_states: list = field(default_factory=list)     # ProducerStateEntry of each active producer
    open_transactions: list = field(default_factory=list)      # OpenTxn
    cleaner_checkpoint: int | None = None
    dirty_ratio: float | None = None
    cleanable_bytes: int | None = None
    cleanup_policy: str | None = None
    config_source: str | None = None
    topic_id: str | None = None
    topic_status: str | None = None          # config_resolver's: live, deleted_topic, unknown_topic, ...
    notes: list = field(default_factory=list)      # facts worth knowing (topic status, configuration)
    problems: list = field(default_factory=list)   # what could not be read, in words (exit status 1)

    @property
    def name(self) -> str:
        """TOPIC-N; a directory not named as a partition (segments copied alone) by its own name: its topic is
        that name and its partition unknown (-1 in JSON), never shown as 'seg--1'."""
        return self.topic if self.partition < 0 else f"{self.topic}-{self.partition}"


class LogDirContext:
    """A log directory's checkpoints, clean-shutdown marker and configuration, read once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        d = LogDir(path)
        self.checkpoints: dict[str, dict] = {}
        self.notes: list[str] = []
        for name in OFFSET_CHECKPOINTS:
            values, problem = d.offset_checkpoint(name)
            self.checkpoints[name] = values
            if problem is not None:
                self.notes.append(f"{name}: {problem.message} (Kafka reads it as empty)")
        self._resolver = None
        self.resolver_problem: str | None = None

    def resolver(self):
        if self._resolver is None and self.resolver_problem is None:
            from .config_resolver import ConfigResolver
            from .metadata_replay import MetadataError
            from ..errors import said
            from .topic_config import ConfigError
            try:
                self._resolver = ConfigResolver.open(self.path)
            except (ConfigError, MetadataError, FormatError, OSError) as e:
                self.resolver_problem = f"the topic configuration could not be read ({said(e)})"
        return self._resolver

    def value(self, name: str, tp: tuple[str, int]) -> int | None:
        return self.checkpoints[name].get(tp)


def describe_partition(directory: Path, ctx: LogDirContext | None, now: int | None = None,
                       with_config: bool = True) -> PartitionDescription:
    """Everything ``describe`` shows of one partition directory (read-only; never raises for bad data:
    what cannot be read is said in ``notes``)."""
    from .lookup import LookupFailed, PartitionView, lookup_offset
    now = int(time.time() * 1000) if now is None else now
    directory = Path(directory)
    name = parse_partition_dir(directory.name)
    topic, part = (name.topic, name.partition) if name else (directory.name, -1)
    d = PartitionDescription(topic, part, str(directory), str(ctx.path) if ctx else None,
                             state=name.state if name else None)
    tp = (topic, part)
    if ctx is not None and name is not None:
        d.high_watermark_checkpoint = ctx.value("replication-offset-checkpoint", tp)
        d.recovery_point = ctx.value("recovery-point-offset-checkpoint", tp)
        d.cleaner_checkpoint = ctx.value("cleaner-offset-checkpoint", tp)
    try:
        view = PartitionView(directory, ctx.checkpoints["log-start-offset-checkpoint"] if ctx is not None else None)
    except LookupFailed:
        d.notes.append("no segment file (the broker creates an empty segment at the log start offset)")
        return d
    except (OSError, FormatError) as e:
        d.problems.append(f"cannot read: {_why(e)}")
        return d
    log = view.log
    d.segments = len(view.bases)
    for seg in log.segments.values():
        try:
            d.size += seg.size()
        except OSError:
            pass
    d.log_start, d.log_end = view.log_start, view.log_end
    if view.damage is not None:
        d.problems.append(f"damaged bytes at byte {view.damage.position} of {view.damage.file}: the log end is "
                       "where reading stopped (Kafka's recovery truncates there; kafkalog verify tells more)")
    if ctx is not None and name is not None and name.state is None and str(name) != METADATA_PARTITION:
        from .partition_state import bounded_high_watermark
        d.high_watermark = bounded_high_watermark(d.high_watermark_checkpoint, d.log_start, d.log_end)
    if d.log_end > d.log_start:
        try:
            found = lookup_offset(view, d.log_start)
            d.first_timestamp = found.found_timestamp
            found.close()
        except (LookupFailed, FormatError, OSError):
            pass
    config = None
    if with_config and ctx is not None and name is not None and name.state is None:
        config = _config(d, ctx, directory)
    expiration = PRODUCER_ID_EXPIRATION_MS
    if config is not None:
        from .topic_config import ConfigError
        try:        # the dynamic broker configuration may set it (DynamicProducerStateManagerConfig, 3.5+)
            expiration = ctx.resolver().broker_setting("producer.id.expiration.ms").value
        except ConfigError as e:
            d.notes.append(f"producer.id.expiration.ms: {e}; Kafka's default used")
    if f"{topic}-{part}" != METADATA_PARTITION:
        pv = producer_view(log, d.log_start, d.log_end, d.high_watermark, now, expiration)
        d.producers = pv.producers
        d.producer_states = pv.entries
        d.open_transactions = pv.open_txns
        d.last_stable_offset = pv.last_stable_offset(d.high_watermark)
        d.last_timestamp = pv.last_timestamp if pv.last_timestamp is not None else _last_timestamp(view)
        if pv.problem:
            d.problems.append(pv.problem)
        if pv.stop:
            d.problems.append(f"Kafka's loader stops at offset {pv.stop[0]}: {pv.stop[1]}")
    else:
        d.last_timestamp = _last_timestamp(view)
    compact = config is not None and (config.compact or d.cleanup_policy == "compact")
    if compact and d.log_end is not None:
        _dirty_ratio(d, view, config, now)
    return d


def _why(e: Exception) -> str:
    if isinstance(e, FormatError):
        return f"{e.reason} ({e.file}, byte {e.position})"
    return f"{getattr(e, 'strerror', None) or e}"


def _config(d: PartitionDescription, ctx: LogDirContext, directory: Path):
    """Topic id, status and cleanup.policy with its source; the topic's configuration (or None)."""
    resolver = ctx.resolver()
    if resolver is None:
        d.notes.append(ctx.resolver_problem or "no topic configuration")
        return None
    try:
        pc = resolver.partition(directory)
    except Exception as e:           # ConfigError: a value Kafka would reject
        d.notes.append(f"topic configuration: {e}")
        return None
    d.topic_id, d.topic_status = pc.topic_id, pc.status
    if pc.message and pc.status not in ("live", "not_in_metadata_mode"):
        d.notes.append(pc.message)
    policy = pc.config["cleanup.policy"]
    d.cleanup_policy = ",".join(policy.value)
    d.config_source = str(policy.source)
    creator = INTERNAL_COMPACT.get(d.topic)
    if creator and policy.source.kind == "kafka_default":        # as verify: the creation config applies
        d.cleanup_policy, d.config_source = "compact", f"Kafka creates {d.topic} with it ({creator})"
    return pc.config


def _dirty_ratio(d: PartitionDescription, view, config, now: int) -> None:
    """``LogCleanerManager``'s dirty ratio (``cleaner_choice.choose``) from each segment's size and largest
    timestamp, with the last stable offset bounding the cleanable range."""
    from . import cleaner_choice as cl
    from .lookup import segment_largest_timestamp
    infos = []
    for base in view.bases:
        seg = view.log.segments[base]
        try:
            largest, _src = segment_largest_timestamp(seg, view.load.recovers(base))
            infos.append(cl.SegmentInfo(base, seg.size(), 0, 0, largest, _first_max_timestamp(seg), 0, None))
        except (OSError, FormatError):
            return
    cfg = cl.CleanerConfig(min_cleanable_ratio=config.value("min.cleanable.dirty.ratio"),
                           min_compaction_lag_ms=config.value("min.compaction.lag.ms"),
                           max_compaction_lag_ms=config.value("max.compaction.lag.ms"))
    lso = d.last_stable_offset if d.last_stable_offset is not None else d.log_end
    choice = cl.choose(infos, d.log_start, d.log_end, d.cleaner_checkpoint, lso, cfg, now)
    d.dirty_ratio = round(choice.ratio, 4)
    d.cleanable_bytes = choice.cleanable_bytes


def _first_max_timestamp(seg) -> int:
    from .mapped import MappedFile
    from kafkalog_formats.message_set import BatchReader
    with MappedFile(seg.log_path) as mf:
        b = next(iter(BatchReader(mf.buf)), None)
        return b.max_timestamp if b is not None else -1


def _last_timestamp(view) -> int | None:
    """The max timestamp of the log's last batch (the last non-empty segment, read from its last offset
    index entry)."""
    from kafkalog_formats.message_set import BatchReader
    from .mapped import MappedFile
    from .producer_view import _start_position
    for base in reversed(view.bases):
        seg = view.log.segments[base]
        try:
            with MappedFile(seg.log_path) as mf:
                last = None
                for b in BatchReader(mf.buf, _start_position(seg, mf, (1 << 63) - 1)):
                    last = b.max_timestamp
                    mf.release_behind(b.position)
        except (OSError, FormatError):
            return None
        if last is not None:
            return last
    return None


def describe_paths(paths, now: int | None = None, progress=None):
    """``PartitionDescription`` of every partition under ``paths``, in order; and the notes of the paths
    and log directories (unreadable checkpoints, paths without partitions)."""
    from .targets import resolve
    targets = resolve(paths)
    notes = targets.partition_notes()
    contexts: dict[Path, LogDirContext] = {}
    out = []
    for p in targets.partitions:
        ctx = None
        if p.logdir is not None:
            ctx = contexts.get(p.logdir)
            if ctx is None:
                ctx = contexts[p.logdir] = LogDirContext(p.logdir)
                notes.extend(f"{p.logdir}: {n}" for n in ctx.notes)
        out.append(describe_partition(p.path, ctx, now))
        if progress is not None:
            progress(p.path.name)
    return out, notes


def topic_summary(parts: list[PartitionDescription]) -> list[dict]:
    """One row per topic: partitions, size, segments, records between log start and high watermark (offsets,
    an upper bound under compaction), open transactions."""
    by: dict[str, dict] = {}
    for p in parts:
        if p.state is not None:
            continue
        t = by.setdefault(p.topic, {"topic": p.topic, "partitions": 0, "size": 0, "segments": 0, "offsets": 0,
                                    "open_transactions": 0, "producers": 0})
        t["partitions"] += 1
        t["size"] += p.size
        t["segments"] += p.segments
        end = p.high_watermark if p.high_watermark is not None else p.log_end
        if end is not None and p.log_start is not None:
            t["offsets"] += max(end - p.log_start, 0)
        t["open_transactions"] += len(p.open_transactions)
        t["producers"] += p.producers or 0
    return [by[k] for k in sorted(by)]


__all__ = ["OpenTxn", "PartitionDescription", "LogDirContext", "describe_partition", "describe_paths",
           "topic_summary"]
