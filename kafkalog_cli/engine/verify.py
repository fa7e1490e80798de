"""``verify``: every check of a log directory, partition directory or single file, as units of findings.

A *unit* is what a CI report shows as one test case: a segment (its ``.log`` with its indexes), a
producer snapshot, a KRaft snapshot, a checkpoint or metadata file, or a partition's directory-level
facts (orphan indexes, leftovers, how its checkpoints relate to its log). Segment checks live in
``verify_segment``; ``verify_policy`` sets their severity from what Kafka's next start does with each
segment (recover it or trust it). This module adds the partition and log-directory rules, each from the
broker's own loading code (``LogManager.loadLogs``, ``LogLoader``, ``LeaderEpochFileCache``,
``ProducerStateManager``, ``CheckpointFileWithFailureHandler``); docs/kafka-rules.md tables them:

* producer snapshots parse with a valid CRC-32C (Kafka deletes a corrupt one and falls back: warning) and
  do not lie above the log end (Kafka deletes them: warning);
* ``leader-epoch-checkpoint`` parses (Kafka takes the log directory offline otherwise), holds no negative
  epoch or offset (the cache refuses them and the log fails to load); epochs increase and start offsets
  do not decrease (Kafka's cache drops conflicting entries on load: warning; equal start offsets were
  written by 0.11-2.0 brokers), none beyond the log end (truncated on load: warning);
* the four offset checkpoints parse (an unreadable one takes the log directory offline); recovery point
  ≤ log end (flushed data missing, or an interrupted follower truncation: lowered on load, warning); high
  watermark, log start and cleaner offset within the log (clamped or reset on load, normal after a power
  loss: warning); a clean-shutdown marker with a recovery point behind the log end (warning);
* ``meta.properties``, ``partition.metadata``, ``quorum-state`` parse; ``.kafka_cleanshutdown`` content
  (Kafka only logs a warning);
* directories Kafka cannot parse as partitions (the broker refuses the log directory: error), orphan
  indexes and leftover ``.swap``/``.cleaned`` files (completed or deleted on load: warning), ``.deleted``
  files (pending deletion, normal on a running broker: info), unknown files (ignored by Kafka: info),
  file names Kafka's loader parses as offsets but cannot read as they say (``layout.name_problem``);
* a segment's largest timestamp (its last time-index entry) below its records', or a zero slot there, is
  graded by the rules its topic runs (``verify_policy.grade_by_topic``, the topic's configuration from
  the log directory's KRaft metadata, Kafka's defaults and the internal topics' creation configs).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES, max_decompressed_bytes
from kafkalog_formats.message_set import BatchReader

from ..layout import (METADATA_PARTITION, OFFSET_CHECKPOINTS, classify_file, name_problem, parse_partition_dir,
                      segment_file_name)
from .findings import SCAN_SEVERITY, Finding
from .logdir import LogDir
from .mapped import MappedFile, is_regular, read_regular
from . import verify_policy
from .partition import PartitionLog
from .verify_segment import DEFAULT_MAX_MESSAGE_BYTES, SegmentOptions, SegmentResult, verify_segment

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}

#: The finding of a directory in which nothing Kafka writes was found (verify's verdict names it).
NOT_A_LOG_DIR = ("not a Kafka log directory: no partition directory, segment, index, snapshot or checkpoint was "
                 "found in it or below")


@dataclass
class Unit:
    """One test case of the report."""
    name: str                 # file path (or partition directory for partition-level facts)
    kind: str                 # segment, producer_snapshot, kraft_snapshot, checkpoint, metadata, partition
    group: str                # partition ("topic-N") or log directory the unit belongs to
    findings: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0

    def worst(self) -> str | None:
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__, default=None)


@dataclass
class VerifyReport:
    units: list = field(default_factory=list)
    partitions: int = 0
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int = 0
    seconds: float = 0.0

    def findings(self):
        for u in self.units:
            yield from u.findings

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings() if f.severity == severity)


@dataclass
class VerifyOptions:
    deep: bool = True
    max_message_bytes: int | None = None      # None: Kafka's default, larger batches only noted (info)
    jobs: int = 1                             # partitions verified at once, in worker processes (engine.parallel)
    salvage: bool = False                     # scan --salvage: what recover --salvage would skip, reported

#: findings that stop the broker's load of a partition even when it only deletes it (a -delete directory)
LOAD_STOPPERS = frozenset({"unparsable_file_name"})


class Verifier:
    """Walk the given paths; ``progress(advance_bytes, description)`` is called as segments finish."""

    def __init__(self, options: VerifyOptions | None = None,
                 progress: Callable[[int, str], None] | None = None) -> None:
        self.opts = options or VerifyOptions()
        given = self.opts.max_message_bytes is not None
        self.seg_opts = SegmentOptions(deep=self.opts.deep, max_message_bytes_given=given,
                                       max_message_bytes=self.opts.max_message_bytes if given
                                       else DEFAULT_MAX_MESSAGE_BYTES,
                                       max_decompressed_bytes=max_decompressed_bytes(),   # carried to scan's executors
                                       salvage=self.opts.salvage)
        self.progress = progress or (lambda n, d: None)
        self.report = VerifyReport()
        self._plan = verify_policy.UNKNOWN      # what Kafka's next start does with the partition being walked
        self._topic: tuple = (None, None)       # (PartitionName, _LogDirContext) of the partition being walked
        self._rules: verify_policy.TopicRules | None = None      # its topic's rules, read when first needed

    def run(self, paths, targets=None) -> VerifyReport:
        """Verify what ``paths`` name (``engine/targets``), or ``targets`` already resolved (and maybe narrowed
        to some partitions)."""
        from .targets import FileGiven, LogDirFound, Note, PartitionDir, resolve, shown
        t0 = time.perf_counter()
        targets = resolve(paths) if targets is None else targets
        for item in targets.items:
            if isinstance(item, Note) and item.unreadable:
                # a directory that cannot be listed: reported, the others still run
                name = shown(item.path, item.given)
                self.report.units.append(Unit(name, "file", name, [_unreadable(name, item.error)]))
            elif isinstance(item, (FileGiven, LogDirFound, PartitionDir)):
                try:
                    self._item(item)
                except OSError as e:
                    name = shown(item.path, item.given)
                    self.report.units.append(Unit(name, "file", name, [_unreadable(name, e)]))
            else:
                self.report.units.append(Unit(item.given, "file", item.given,
                                              [Finding("nothing_verified", NOT_A_LOG_DIR, item.given)]))
        self.report.seconds = time.perf_counter() - t0
        return self.report

    # --- dispatch --------------------------------------------------------------------------------

    def _item(self, item) -> None:
        from .targets import FileGiven, LogDirFound
        if isinstance(item, FileGiven):
            self._single_file(item.path)
        elif isinstance(item, LogDirFound):
            self._logdir(item)
        else:
            self._partition(item.path, _LogDirContext(LogDir.open(item.logdir)) if item.logdir else None)

    def _logdir(self, found) -> None:
        """A log directory (``targets.LogDirFound``): its own files, then its partitions (those selected)."""
        path, d = found.path, found.dir
        ctx = _LogDirContext(d)
        group = str(path)
        unit = Unit(str(path), "logdir", group)
        unit.findings.extend(_scan_severity(f) for f in d.findings)
        meta = path / "meta.properties"
        if not meta.exists():
            unit.findings.append(Finding("missing_meta_properties", "no meta.properties: a KRaft broker refuses "
                                         "an unformatted directory", str(meta), severity="warning"))
        self.report.units.append(unit)
        if meta.exists():
            self._metadata_file(meta, group)
        for name in OFFSET_CHECKPOINTS:
            cp = path / name
            if cp.exists():
                u = Unit(str(cp), "checkpoint", group)
                if ctx.errors.get(name):
                    u.findings.append(ctx.errors[name])
                self.report.units.append(u)
        boot = path / "bootstrap.checkpoint"
        if boot.exists() and not found.selected:
            self._kraft_snapshot(boot, group)
        self._partitions([p.path for p in found.partitions], ctx)
        present = {(n.topic, n.partition) for n in map(lambda p: parse_partition_dir(p.name), d.partition_dirs)
                   if n and n.state is None}
        for name in OFFSET_CHECKPOINTS:
            for tp in sorted(set(ctx.checkpoints[name]) - present):
                unit.findings.append(Finding("checkpoint_unknown_partition", f"{name} names {tp[0]}-{tp[1]}, "
                                             "which has no directory here (Kafka ignores it)", str(path / name),
                                             severity="info"))

    def _single_file(self, path: Path) -> None:
        name = path.name
        fn = classify_file(name)
        group = path.parent.name
        if fn.state is not None and fn.kind != "kraft_snapshot":
            self.report.units.append(Unit(str(path), "file", group, [_scan_severity(Finding(
                f"leftover_{fn.state}", "file left over from an interrupted operation", str(path)))]))
        elif fn.kind in ("log", "index", "timeindex", "txnindex"):
            log = PartitionLog.open(path.parent)
            later = [b for b in log.segments if b > fn.offset]
            prev = log.segments.bisect_left(fn.offset)
            prev_last = None
            if prev > 0:
                prev_seg = log.segments.peekitem(prev - 1)[1]
                prev_last = _last_offset_of(prev_seg.log_path)
            log_path = path.with_name(f"{fn.offset:020d}.log")
            if not log_path.exists():
                self.report.units.append(Unit(str(path), "segment", group, [_scan_severity(Finding(
                    "orphan_index", "index file without its .log segment (Kafka's loader deletes it)", str(path)))]))
                return
            from .targets import logdir_of
            parent = logdir_of(path.parent)
            ctx = _LogDirContext(LogDir.open(parent)) if parent is not None else None
            self._plan = _load_plan(log, ctx)
            self._topic, self._rules = (log.name, ctx), None
            self._segment(log_path, fn.offset, not later, prev_last, group)
        elif fn.kind == "snapshot":
            self._producer_snapshot(path, group, None)
        elif fn.kind == "kraft_snapshot" or name == "bootstrap.checkpoint":
            self._kraft_snapshot(path, group)
        elif name in OFFSET_CHECKPOINTS:
            ctx = _LogDirContext(LogDir.open(path.parent))
            self.report.units.append(Unit(str(path), "checkpoint", group,
                                          [ctx.errors[name]] if ctx.errors.get(name) else []))
        elif name in ("meta.properties", "partition.metadata", "quorum-state", "leader-epoch-checkpoint",
                      ".kafka_cleanshutdown"):
            self._metadata_file(path, group, None)
        elif (problem := _name_problem_of(path)) is not None:
            self.report.units.append(Unit(str(path), "file", group, [problem._replace(file=str(path))]))
        else:
            self.report.units.append(Unit(str(path), "file", group, [Finding(
                "unknown_file", f"verify does not know what {name} is (not a Kafka log file)", str(path))]))

    # --- partitions ------------------------------------------------------------------------------

    def _partition(self, pdir: Path, ctx: "_LogDirContext | None") -> None:
        self.report.partitions += 1
        try:
            log = PartitionLog.open(pdir)
        except OSError as e:
            # as for an unreadable file: reported, and the rest of the log directory is still verified
            name = parse_partition_dir(pdir.name)
            self.report.units.append(Unit(str(pdir), "partition", str(name) if name else pdir.name,
                                          [_unreadable(pdir, e)]))
            return
        name = log.name
        group = str(name) if name else pdir.name
        unit = Unit(str(pdir), "partition", group)
        self._plan = plan = _load_plan(log, ctx)
        self._topic, self._rules = (name, ctx), None
        for f in log.findings:
            f = _scan_severity(f, partition_dir=True)
            # a -delete directory is loaded too (LogManager.loadLogs): a name the loader cannot parse still stops it
            unit.findings.append(f._replace(severity="info") if plan.deleted and f.kind not in LOAD_STOPPERS else f)
        prev_last = None
        bases = list(log.segments)
        if not bases:
            unit.findings.append(Finding("no_segments", "the partition directory holds no segment file (Kafka "
                                         "creates an empty segment at the log start offset)", str(pdir),
                                         severity="info" if plan.deleted else "warning"))
        first_result = last_result = None
        last_offsets: dict[int, int | None] = {}
        segments = []
        for i, base in enumerate(bases):
            seg = log.segments[base]
            res = self._segment(seg.log_path, base, i == len(bases) - 1, prev_last, group)
            segments.append((base, res, self.report.units[-1]))
            if res.last_offset is not None:
                prev_last = res.last_offset
            last_offsets[base] = res.last_offset
            first_result = first_result or res
            last_result = res
        if not plan.deleted:
            self._records_at_stake(segments)
        log_end = _log_end(bases, log, last_result)
        if log_end is None:
            unit.findings.append(Finding("log_end_unknown", f"the last segment {last_result.log_path} cannot be "
                                         "read, so the log end offset is unknown: the checkpoints, producer "
                                         "snapshots and leader epochs were not compared with it", str(pdir),
                                         severity="info"))
        unit.findings = [_phantom_consequence(f, last_offsets, log_end) if f.kind == "phantom_segment" else f
                         for f in unit.findings]
        log_start_base = bases[0] if bases else 0
        for off in sorted(log.producer_snapshots):
            self._producer_snapshot(pdir / f"{off:020d}.snapshot", group, log_end)
        for end, epoch in sorted(log.kraft_snapshots):
            self._kraft_snapshot(pdir / f"{end:020d}-{epoch:010d}.checkpoint", group)
        for side in log.side_files:
            if side.name in ("partition.metadata", "quorum-state"):
                self._metadata_file(side, group)
            elif side.name == "leader-epoch-checkpoint":
                self._leader_epochs(side, group, log_end)
        if (ctx is not None and name is not None and name.state is None and str(name) != METADATA_PARTITION
                and log_end is not None):
            _checkpoint_rules(unit, ctx, (name.topic, name.partition), log_start_base, log_end)
        unit.stats = {"segments": len(bases), "log_start_offset": log_start_base, "log_end_offset": log_end}
        self.report.units.append(unit)

    def _partitions(self, dirs: list[Path], ctx: "_LogDirContext | None") -> None:
        """``_partition`` for each directory, in worker processes with ``jobs`` > 1; the units come back in
        directory order, so the report is the one a single process writes."""
        if self.opts.jobs <= 1 or len(dirs) <= 1:
            for pdir in dirs:
                self._partition(pdir, ctx)
            return
        from . import parallel
        groups = parallel.chunks(dirs)
        logdir = str(ctx.dir.path) if ctx is not None else None
        tasks = [([str(dirs[i]) for i in g], logdir, self.opts, self.seg_opts) for g in groups]

        def done(result):
            for u in result[0]:
                if u.kind == "segment":
                    self.progress(u.stats.get("bytes", 0), Path(u.name).parent.name)

        for units, counts in parallel.ordered_map(_verify_partitions, tasks, self.opts.jobs, done):
            self.report.units.extend(units)
            r = self.report
            r.partitions, r.segments, r.bytes, r.batches, r.records = (
                a + b for a, b in zip((r.partitions, r.segments, r.bytes, r.batches, r.records), counts))

    def _segment(self, log_path: Path, base: int, active: bool, prev_last: int | None,
                 group: str) -> SegmentResult:
        t0 = time.perf_counter()
        res = verify_segment(log_path, base, active=active, previous_last_offset=prev_last, options=self.seg_opts)
        return self._record_segment(log_path, group, res, active, time.perf_counter() - t0)

    def _record_segment(self, log_path: Path, group: str, res: SegmentResult, active: bool,
                        seconds: float) -> SegmentResult:
        """Add a verified segment to the report (also used by the Spark scan with executor results)."""
        res.raw_findings = list(res.findings)
        self._grade(res)
        unit = Unit(str(log_path), "segment", group, res.findings, seconds=seconds)
        unit.stats = {"bytes": res.size, "batches": res.batches, "records": res.records,
                      "first_offset": res.first_offset, "last_offset": res.last_offset,
                      "first_timestamp": res.first_timestamp, "max_timestamp": res.max_timestamp,
                      "codecs": dict(sorted(res.codecs.items())), "active": active}
        self.report.units.append(unit)
        self.report.segments += 1
        self.report.bytes += res.size
        self.report.batches += res.batches
        self.report.records += res.records
        self.progress(res.size, Path(log_path).parent.name)
        return res

    def _grade(self, res: SegmentResult) -> None:
        """``res.findings`` graded by what Kafka's next start does (``verify_policy``) and by the topic's rules."""
        res.findings = list(res.raw_findings)
        res.findings = verify_policy.apply(res, self._plan)
        if any(f.kind in verify_policy.TOPIC_KINDS for f in res.findings):
            if self._rules is None:
                self._rules = _topic_rules(*self._topic)
            res.findings = verify_policy.grade_by_topic(res.findings, res, self._rules)

    def _records_at_stake(self, segments: list) -> None:
        """The first damage of a partition (where Kafka's recovery would cut it, or consumers stop) followed by
        intact batches, in its segment or in later ones: an error that says how many intact records a broker's
        recovery would delete (or consumers cannot reach) and that ``recover --salvage`` keeps them; its own
        findings are not lowered to a torn tail's warnings. A torn tail (nothing intact after it) is left as
        it is. Counted by the salvage walk (``engine/salvage``) from the damage on; later segments by their
        records (walked too where they are damaged themselves)."""
        from . import salvage
        at = next((i for i, (_b, r, _u) in enumerate(segments) if r.damage_from is not None), None)
        if at is None:
            return
        base, res, unit = segments[at]
        nxt = segments[at + 1][0] if at + 1 < len(segments) else None
        try:
            with MappedFile(res.log_path) as mf:
                lay = salvage.walk_segment(mf.buf, base, res.last_before_damage, nxt, deep=self.seg_opts.deep,
                                           release=mf.release_behind, start=res.damage_from)
            n, first, last = lay.records_from(res.damage_from)
            for i in range(at + 1, len(segments)):
                b, r, _u = segments[i]
                if r.damage_from is None:
                    n += r.records
                    first = r.first_offset if first is None else first
                    last = r.last_offset if r.last_offset is not None else last
                    continue
                nb = segments[i + 1][0] if i + 1 < len(segments) else None
                with MappedFile(r.log_path) as mf:
                    m, a, z = salvage.walk_segment(mf.buf, b, last, nb, deep=self.seg_opts.deep,
                                                   release=mf.release_behind).records_from(0)
                n += m
                first = a if first is None else first
                last = z if z is not None else last
        except OSError:
            return
        if n == 0:
            return
        later = len(segments) - at - 1
        offsets = f" (offsets {first}..{last})" if first is not None else ""
        if self._plan.recovers(base) or any(f.kind in ("missing_index", "txn_index_sanity") for f in res.raw_findings):
            what = (f"Kafka's recovery truncates this segment at byte {res.damage_from}"
                    + (f" and deletes the {later} later segment{'' if later == 1 else 's'}" if later else "")
                    + f": {n:,} intact record{'' if n == 1 else 's'}{offsets} after the damage would be lost")
        else:
            what = (f"consumers stop at byte {res.damage_from} of this segment (the broker serves it as it is): "
                    f"{n:,} intact record{'' if n == 1 else 's'}{offsets} after the damage cannot be read past it")
        res.damage_is_tail = False
        res.raw_findings = [f for f in res.raw_findings if f.kind != "truncation_point"]     # said below, in full
        self._grade(res)
        res.findings.append(Finding("intact_records_at_risk", f"{what}; kafkalog recover --salvage --backup-dir DIR "
                                    "keeps them", str(res.log_path), res.damage_from, offset=first))
        unit.findings = res.findings

    # --- side files ------------------------------------------------------------------------------

    def _producer_snapshot(self, path: Path, group: str, log_end: int | None) -> None:
        from kafkalog_formats.producer_snapshot import parse_producer_snapshot
        unit = Unit(str(path), "producer_snapshot", group)
        try:
            snap = parse_producer_snapshot(read_regular(path, MAX_BINARY_SIDE_FILE_BYTES))
            unit.stats = {"producers": len(snap.entries)}
        except FormatError as e:
            unit.findings.append(Finding("snapshot_corrupt", f"{e.reason} (Kafka deletes a corrupt snapshot and "
                                         "rebuilds the producer state from an older one or the log)", str(path),
                                         e.position, severity="warning"))
        except OSError as e:
            unit.findings.append(Finding("io_error", f"cannot read: {e.strerror or e}", str(path)))
        off = classify_file(path.name).offset
        if log_end is not None and off is not None and off > log_end:
            unit.findings.append(Finding("snapshot_above_log_end", f"snapshot at offset {off} is above the log end "
                                         f"{log_end} (Kafka deletes it on load)", str(path), offset=off,
                                         severity="warning"))
        self.report.units.append(unit)

    def _kraft_snapshot(self, path: Path, group: str) -> None:
        """A KRaft snapshot is a run of v2 batches: framing, CRC and (deep) records, no indexes."""
        res = SegmentResult(str(path), 0)
        try:
            with MappedFile(path) as mf:
                reader = BatchReader(mf.buf)
                for b in reader:
                    res.batches += 1
                    if not b.is_valid():
                        res.add("crc_mismatch", f"Record is corrupt (stored crc = {b.crc}, computed crc = "
                                f"{b.computed_crc()})", position=b.position, offset=b.offset_field)
                    elif self.opts.deep:
                        try:
                            res.records += sum(1 for _ in b.records())
                        except FormatError as e:
                            res.add(e.kind, e.reason, position=b.position, offset=b.offset_field)
                if reader.stop is not None:
                    res.add(reader.stop.kind, reader.stop.reason, position=reader.stop.position)
        except OSError as e:
            res.add("io_error", f"cannot read: {e.strerror or e}")
        self.report.units.append(Unit(str(path), "kraft_snapshot", group, res.findings,
                                      {"batches": res.batches, "records": res.records}))

    def _metadata_file(self, path: Path, group: str, _unused=None) -> None:
        from kafkalog_formats import clean_shutdown, meta_properties, partition_metadata, quorum_state
        parsers = {"meta.properties": meta_properties.parse_meta_properties,
                   "partition.metadata": lambda b: partition_metadata.parse_partition_metadata(b, str(path)),
                   "quorum-state": quorum_state.parse_quorum_state,
                   ".kafka_cleanshutdown": clean_shutdown.parse_clean_shutdown}
        if path.name == "leader-epoch-checkpoint":
            self._leader_epochs(path, group, None)
            return
        unit = Unit(str(path), "metadata", group)
        try:
            parsers[path.name](read_regular(path))
        except FormatError as e:
            # CleanShutdownFileHandler.read only logs a warning: the marker's presence is what counts
            unit.findings.append(Finding(e.kind, e.reason, str(path), e.position,
                                         severity="warning" if path.name == ".kafka_cleanshutdown" else "error"))
        except OSError as e:
            unit.findings.append(Finding("io_error", f"cannot read: {e.strerror or e}", str(path)))
        self.report.units.append(unit)

    def _leader_epochs(self, path: Path, group: str, log_end: int | None) -> None:
        from kafkalog_formats.checkpoint import parse_leader_epoch_checkpoint
        unit = Unit(str(path), "checkpoint", group)
        try:
            entries = parse_leader_epoch_checkpoint(read_regular(path), str(path))
        except FormatError as e:
            unit.findings.append(Finding(e.kind, e.reason, str(path), e.position))
            entries = []
        except OSError as e:
            unit.findings.append(Finding("io_error", f"cannot read: {e.strerror or e}", str(path)))
            entries = []
        for e in entries:
            if e.epoch < 0 or e.start_offset < 0:
                unit.findings.append(Finding("leader_epoch_invalid", f"entry ({e.epoch}, {e.start_offset}): Kafka's "
                                             "leader epoch cache refuses negative epochs and offsets and the log "
                                             "fails to load", str(path), offset=e.start_offset))
        for prev, cur in zip(entries, entries[1:]):
            if cur.epoch <= prev.epoch or cur.start_offset < prev.start_offset:
                unit.findings.append(Finding("leader_epoch_not_increasing", f"entry ({cur.epoch}, {cur.start_offset}) "
                                             f"does not follow ({prev.epoch}, {prev.start_offset}): Kafka's leader "
                                             "epoch cache drops the conflicting entries on load", str(path),
                                             offset=cur.start_offset, severity="warning"))
        if log_end is not None:
            for e in entries:
                if e.start_offset > log_end:
                    unit.findings.append(Finding("leader_epoch_beyond_log_end", f"epoch {e.epoch} starts at offset "
                                                 f"{e.start_offset}, beyond the log end {log_end} (Kafka truncates "
                                                 "it on load)", str(path), offset=e.start_offset, severity="warning"))
        self.report.units.append(unit)


_WORKER_CONTEXTS: dict = {}      # a worker process's log directory contexts, read once per log directory


def _verify_partitions(task) -> tuple[list, tuple]:
    """A worker's task: verify some partitions of one log directory; (units, counters)."""
    dirs, logdir, options, seg_opts = task
    ctx = None
    if logdir is not None:
        ctx = _WORKER_CONTEXTS.get(logdir)
        if ctx is None:
            ctx = _WORKER_CONTEXTS[logdir] = _LogDirContext(LogDir.open(Path(logdir)))
    v = Verifier(options)
    v.seg_opts = seg_opts
    for d in dirs:
        v._partition(Path(d), ctx)
    r = v.report
    return r.units, (r.partitions, r.segments, r.bytes, r.batches, r.records)


class _LogDirContext:
    """The log directory's checkpoints, read once; its topics' configuration when first needed."""

    def __init__(self, d: LogDir) -> None:
        self.dir = d
        self.checkpoints: dict[str, dict] = {}
        self.errors: dict[str, Finding] = {}
        for name in OFFSET_CHECKPOINTS:
            values, err = d.offset_checkpoint(name)
            self.checkpoints[name] = values
            if err is not None:
                self.errors[name] = err
        self.clean_marker = d.has_clean_shutdown_marker
        self._resolver = None
        self.resolver_problem: str | None = None

    def resolver(self):
        """The ConfigResolver of this log directory (its KRaft metadata, Kafka's creation configs of the
        internal topics), or None with ``resolver_problem`` saying why (verify reads no server.properties)."""
        if self._resolver is None and self.resolver_problem is None:
            from .config_resolver import ConfigResolver
            from .metadata_replay import MetadataError
            from ..errors import said
            from .topic_config import ConfigError
            try:
                self._resolver = ConfigResolver.open(self.dir.path)
            except (ConfigError, MetadataError, FormatError, OSError) as e:
                self.resolver_problem = f"the topic configuration could not be read ({said(e)})"
        return self._resolver


#: internal topics Kafka creates compacted (GroupCoordinator.offsetsTopicConfigs,
#: TransactionStateManager.transactionTopicConfigs; every version)
INTERNAL_COMPACT = {"__consumer_offsets": "GroupCoordinator", "__transaction_state": "TransactionStateManager"}


def _topic_rules(name, ctx: "_LogDirContext | None") -> "verify_policy.TopicRules":
    """What the topic of partition ``name`` runs that reads segment timestamps (``verify_policy.TopicRules``),
    from the log directory's configuration sources: its KRaft metadata, else Kafka's defaults and the
    internal topics' creation configs. Unknown without a log directory or a readable source."""
    from dataclasses import replace
    TopicRules = verify_policy.TopicRules
    if name is None or name.state is not None:
        return verify_policy.UNKNOWN_TOPIC
    if str(name) == METADATA_PARTITION:
        return TopicRules(False, "the KRaft metadata log: KafkaMetadataLog sets retention.ms=-1 and trims it by "
                                 "snapshots")
    tp = (name.topic, name.partition)
    cleaned = ctx.checkpoints["cleaner-offset-checkpoint"].get(tp) if ctx is not None else None
    resolver = ctx.resolver() if ctx is not None else None
    creator = INTERNAL_COMPACT.get(name.topic)
    if resolver is None:
        if creator:
            return TopicRules(False, f"cleanup.policy=compact: Kafka creates {name.topic} with it ({creator})",
                              0, cleaned)
        why = "no log directory given" if ctx is None else ctx.resolver_problem
        return replace(verify_policy.UNKNOWN_TOPIC, cleaner_checkpoint=cleaned,
                       policy=f"cleanup.policy unknown: {why}; Kafka's default is delete")
    try:
        tc = resolver.topic(name.topic)
    except Exception as e:            # ConfigError: a value Kafka would reject; the policy stays unknown
        return replace(verify_policy.UNKNOWN_TOPIC, cleaner_checkpoint=cleaned,
                       policy=f"cleanup.policy unknown: {e}; Kafka's default is delete")
    policy = tc["cleanup.policy"]
    if policy.source.kind == "kafka_default" and creator:
        return TopicRules(False, f"cleanup.policy=compact: Kafka creates {name.topic} with it ({creator})", 0,
                          cleaned)
    text = f"cleanup.policy={','.join(policy.value)}, {policy.source}"
    if policy.source.kind == "kafka_default":
        text += ", unless log.cleanup.policy in server.properties (not read by verify) says otherwise"
    retention = tc.local_retention("ms") if tc.tiered else tc["retention.ms"]
    if tc.delete:
        text += f"; retention.ms={retention.value}, {retention.source}"
    lag = tc.value("min.compaction.lag.ms") if tc.compact else 0
    if lag:
        text += f"; min.compaction.lag.ms={lag}, {tc['min.compaction.lag.ms'].source}"
    return TopicRules(tc.delete and retention.value >= 0, text, lag, cleaned)


def _checkpoint_rules(unit: Unit, ctx: _LogDirContext, tp: tuple[str, int], first_base: int, log_end: int) -> None:
    cps = ctx.checkpoints
    root = ctx.dir.path
    rp = cps["recovery-point-offset-checkpoint"].get(tp)
    hw = cps["replication-offset-checkpoint"].get(tp)
    ls = cps["log-start-offset-checkpoint"].get(tp)
    cl = cps["cleaner-offset-checkpoint"].get(tp)
    log_start = max(ls, first_base) if ls is not None else first_base

    def add(kind, msg, name, offset, severity="error"):
        unit.findings.append(Finding(kind, msg, str(root / name), None, offset, severity))

    if rp is not None and rp > log_end:
        # LogManager.truncateTo truncates a follower's log, then checkpoints the recovery points: a crash in
        # between leaves this with nothing missing; LogLoader.recoverLog lowers it to the log end on load
        add("recovery_point_beyond_log_end", f"recovery point {rp} is beyond the log end {log_end}: records "
            f"{log_end} to {rp - 1} were flushed and are gone, unless a follower's truncation was interrupted "
            "before its checkpoint (LogManager.truncateTo), which leaves this with nothing missing; Kafka lowers "
            "the recovery point to the log end on load", "recovery-point-offset-checkpoint", rp, "warning")
    if hw is not None and hw > log_end:
        add("high_watermark_beyond_log_end", f"high watermark {hw} is beyond the log end {log_end}: records the "
            "cluster committed are not here (normal after a power loss lost unflushed data; Kafka lowers the "
            "high watermark and a follower fetches them again)", "replication-offset-checkpoint", hw, "warning")
    if ls is not None and ls > log_end:
        add("log_start_beyond_log_end", f"log start offset {ls} is beyond the log end {log_end}: the broker "
            "deletes every record of this partition when it loads it (KAFKA-8306). A broker writes such an entry "
            "only for a follower far behind its leader; a damaged checkpoint looks the same (kafkalog recover "
            "leaves the partition unchanged unless --trust-checkpoints)", "log-start-offset-checkpoint", ls)
    elif hw is not None and log_start > hw:
        add("log_start_beyond_high_watermark", f"log start offset {log_start} is above the high watermark {hw} "
            "(the checkpoints are written at different times; Kafka raises the high watermark on load)",
            "log-start-offset-checkpoint", log_start, "info")
    if cl is not None and cl > log_end:
        add("cleaner_checkpoint_beyond_log_end", f"cleaner checkpoint {cl} is beyond the log end {log_end} "
            "(Kafka resets it)", "cleaner-offset-checkpoint", cl, "warning")
    if ctx.clean_marker and (rp if rp is not None else 0) < log_end:
        add("clean_shutdown_with_unflushed_data", f"a clean-shutdown marker is present but the recovery point "
            f"({rp if rp is not None else 'missing, i.e. 0'}) is behind the log end {log_end}: the broker will "
            "skip recovering data it never flushed", ".kafka_cleanshutdown", rp, "warning")


def _unreadable(path, e: OSError) -> Finding:
    """A directory or file verify cannot read (permissions, I/O error): a broker that cannot read it
    either fails to load the log with an IOException, and ``LogManager.loadLogs`` takes the whole log
    directory offline."""
    return Finding("io_error", f"cannot read: {e.strerror or e}: not verified (a broker that cannot read it "
                   "either takes its log directory offline)", str(path))


def _name_problem_of(path: Path):
    """``layout.name_problem`` for a file given by name, judged among the files of its directory."""
    try:
        names = {p.name for p in path.parent.iterdir()}
    except OSError:
        names = {path.name}
    return name_problem(path.name, names) if is_regular(path) else None


def _phantom_consequence(f: Finding, last_offsets: dict, log_end: int | None) -> Finding:
    """What an empty segment at offset N (``LogSegment.open`` for a misnamed .log) does to this log:
    ``LocalLog.read`` serves offset N on from the segment with the greatest base ≤ N, so the records of
    the segment below from N on are unreachable; as the last segment it sets the log end offset."""
    n = f.offset
    if n is None or n < 0 or (f.file or "").endswith(".swap"):
        return f
    parts = []
    below = [b for b in last_offsets if b < n]
    if below:
        last = last_offsets[max(below)]
        if last is not None and last >= n:
            parts.append(f"records {n} to {last} of {segment_file_name(max(below), 'log')} can no longer be "
                         f"fetched (reads from offset {n} on start in the empty segment)")
    if not any(b > n for b in last_offsets):
        tail = "it becomes the active segment and the log end offset becomes " + str(n)
        if log_end is not None and log_end > n:
            tail += f": new records get offsets {n} to {log_end - 1} again"
        elif log_end is not None and log_end < n:
            tail += f": offsets {log_end} to {n - 1} are skipped"
        parts.append(tail)
    return f._replace(message=f.message + "; " + "; ".join(parts)) if parts else f


def _log_end(bases: list[int], log: PartitionLog, last: SegmentResult | None) -> int | None:
    """Next offset after the last batch (the last segment's base offset when it is empty); None when the
    last segment's .log cannot be read (an unreadable file is not an empty one)."""
    if last is not None and not last.readable:
        return None
    if last is not None and last.next_offset is not None:
        return last.next_offset
    return bases[-1] if bases else 0


def _last_offset_of(log_path: Path) -> int | None:
    """The previous segment's last offset (None when it holds none or cannot be read: not compared)."""
    last = None
    try:
        with MappedFile(log_path) as mf:
            for b in BatchReader(mf.buf):
                last = b.last_offset
    except OSError:
        return None
    return last


def _scan_severity(f: Finding, partition_dir: bool = False) -> Finding:
    """Directory-scan findings: a directory Kafka cannot parse inside a *partition* directory is ignored
    (the loader lists regular files only), inside a log directory it stops the broker."""
    if f.kind == "unknown_directory" and partition_dir:
        return f._replace(severity="info")
    return f._replace(severity=SCAN_SEVERITY.get(f.kind, f.severity))


def _load_plan(log: PartitionLog, ctx: "_LogDirContext | None") -> "verify_policy.LoadPlan":
    name = log.name
    bases = list(log.segments)
    metadata_log = name is not None and str(name) == METADATA_PARTITION
    deleted = name is not None and name.state == "delete"
    rp = None
    if ctx is not None and name is not None:
        rp = ctx.checkpoints["recovery-point-offset-checkpoint"].get((name.topic, name.partition))
    return verify_policy.plan_for(bases, metadata_log=metadata_log, deleted=deleted,
                                  clean_shutdown=None if ctx is None else ctx.clean_marker, recovery_point=rp)
