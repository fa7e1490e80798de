"""Carry out a retention plan, crash-safely, the way the broker does (Kafka ``UnifiedLog.deleteSegments``,
``LogManager`` checkpoints, 2.x-4.0).

Before the first change (``check``): every input is read — the log-directory checkpoints retain reads or
rewrites, ``leader-epoch-checkpoint``, the framing of the active segment (the log end offset comes from a
full walk of it, never from an index), and, when a producer snapshot must be written, the snapshot and
batches its producer state is rebuilt from. A problem skips the partition; nothing of it changes.

Order of operations, each durable before the next (``fileops``):

1. if every segment goes, roll first as Kafka does (``deleteSegments`` → ``UnifiedLog.roll``): create the
   new empty active segment at the log end and, unless a producer snapshot at that offset exists, write one
   (``ProducerStateManager.takeSnapshot`` after ``updateMapEndOffset(newSegment.baseOffset)``);
2. with a backup directory: link or copy every file about to be removed there (complete before step 3, so a
   kill anywhere later, followed by any ``recover``, loses none of it);
3. rename every file of each deleted segment, and its producer snapshot, to ``<name>.deleted``
   (Kafka's asynchronous-deletion protocol: a broker, ``kafkalog recover`` or the next retain/compact deletes
   ``.deleted`` files, so a crash here leaves a directory that loads as if the deletion had finished);
4. rewrite ``log-start-offset-checkpoint`` atomically (only partitions whose log start is above their
   first segment's base offset are listed, as ``LogManager.checkpointLogStartOffsetsInDir`` writes it; a
   tiered topic — ``remoteLogEnabled`` — is always listed, KAFKA-16146, 3.8+), the old file copied to the
   backup first;
5. truncate ``leader-epoch-checkpoint`` from the start (entries at or below the new log start go, the
   last of them re-added at the new log start), atomically, the old file copied to the backup first; raise
   a recovery point below the new log start to it (``UnifiedLog.updateLogStartOffset``);
6. unlink the ``.deleted`` files (unless asked to keep them).

A tiered topic with remote copy enabled keeps its log start offset (the first offset in remote storage):
deleting uploaded local segments moves only the local log start offset (``UnifiedLog.incrementStartOffset``
→ ``maybeIncrementLocalLogStartOffset``, 3.6+), which is not stored anywhere — the broker derives it from
the first local segment when it loads the log (``UnifiedLog`` constructor: ``max(logStartOffset, first
segment base)``). So steps 4 and 5 are skipped for it: ``log-start-offset-checkpoint`` and
``leader-epoch-checkpoint`` stay as they are (the epochs still describe the remote data). Only delete-records
(``--log-start-offset``) moves its log start offset, as ``maybeIncrementLogStartOffset`` does.

A crash between any two steps loses no record at or above the new log start: deleted segments are only
ever below it, and a re-run (or recover) finishes what is left.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.checkpoint import (build_leader_epoch_checkpoint, build_offset_checkpoint,
                                         parse_leader_epoch_checkpoint, parse_offset_checkpoint)
from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES
from kafkalog_formats.message_set import BatchReader

from .. import fileops
from ..engine.mapped import MappedFile, parsed_once, read_regular
from ..layout import segment_file_name
from . import preflight as pf
from .retain_plan import Policy, RetainPlan, SegmentFacts, plan_retention


@dataclass
class RetainOutcome:
    renamed: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    created: list = field(default_factory=list)
    checkpoints: list = field(default_factory=list)     # (file, old, new)
    backups: list = field(default_factory=list)         # files written into the backup directory


@dataclass
class RetainReport:
    """What ``retain`` did (or would do) to one partition."""
    partition: str
    directory: Path
    dry_run: bool
    topic_status: str = "live"
    untouched: str | None = None          # left exactly as it is, and why
    settings: object = None               # topic_policy.RetentionSettings
    plan: RetainPlan | None = None
    outcome: RetainOutcome | None = None
    finished: list = field(default_factory=list)   # leftovers of an interrupted operation completed first
    backups: list = field(default_factory=list)

    @property
    def problem(self) -> bool:
        """Exit status 1: something the operator should look at (not the data removed as configured)."""
        from .topic_policy import NOT_LIVE
        if self.untouched is not None:
            return self.topic_status in NOT_LIVE
        p = self.plan
        return bool(self.finished or p is None or p.blocked or p.problems or p.held or p.notes)


def retain_partition(target, pc, settings, *, log_start_offset: int | None, high_watermark: int | None, now: int,
                     dry_run: bool, keep_deleted: bool, backup: Path | None,
                     hw_remedy: str = "give --high-watermark to proceed") -> RetainReport:
    """Plan and (unless ``dry_run``) execute retention for one ``_targets.Target`` with its configuration."""
    name = f"{pc.topic}-{pc.partition}" if pc is not None else target.directory.name
    rep = RetainReport(name, target.directory, dry_run, pc.status if pc is not None else "live",
                       target.untouched, settings, finished=target.finished, backups=list(target.backups))
    empty_at = getattr(target, "empty_at", None)
    if target.untouched is not None and empty_at is not None and log_start_offset is not None \
            and log_start_offset > empty_at:
        # no segment file: the broker loads the partition as an empty segment at its log start, which is then
        # its log end and high watermark too; DeleteRecords above it is OFFSET_OUT_OF_RANGE
        rep.untouched = None
        rep.plan = RetainPlan(old_log_start=empty_at, new_log_start=empty_at, high_watermark=empty_at,
                              log_end=empty_at, notes=[
                                  f"not advancing the log start offset to {log_start_offset}: the partition holds no "
                                  f"segment file, so the broker loads it empty at its log start offset {empty_at}, "
                                  f"its high watermark (Kafka's DeleteRecords refuses it too)"])
        return rep
    if target.untouched is not None:
        return rep
    state = target.state
    if state is None:
        rep.plan = RetainPlan(blocked=target.note)
        return rep
    plan, snapshot = plan_partition(state, settings, log_start_offset=log_start_offset,
                                    high_watermark=high_watermark, now=now,
                                    sole_replica=bool(pc is not None and pc.sole_replica), hw_remedy=hw_remedy)
    rep.plan = plan
    if not dry_run:
        rep.outcome = execute(state.directory, state.topic, state.partition, plan, state.logdir, keep_deleted, backup,
                              snapshot, remote_log_enabled=settings.remote_log_enabled)
        rep.backups += rep.outcome.backups
    return rep


def check(state, need_hw: bool) -> tuple[int, list]:
    """(log end offset from a full walk of the last non-empty segment, problems with the inputs)."""
    d = state.directory
    problems = []
    if state.logdir is not None:
        names = ["log-start-offset-checkpoint", "recovery-point-offset-checkpoint"] + (
            ["replication-offset-checkpoint"] if need_hw else [])
        problems += [p for p in (pf.checkpoint_problem(state.logdir / n, parse_offset_checkpoint) for n in names)
                     if p is not None]
        p = pf.topic_name_problem(state)
        if p is not None:
            problems.append(p)
    p = pf.checkpoint_problem(d / "leader-epoch-checkpoint", parse_leader_epoch_checkpoint,
                              "run kafkalog recover first (it rebuilds it from the batches)")
    if p is not None:
        problems.append(p)
    log_end = state.segments[-1].base_offset if state.segments else 0
    oversized = pf.segment_size_problems(state)
    if oversized:                                      # not read: the broker would not open them
        return log_end, problems + oversized
    for i in range(len(state.segments) - 1, -1, -1):
        base = state.segments[i].base_offset
        path = d / segment_file_name(base, "log")
        with MappedFile(path) as mf:
            reader = BatchReader(mf.buf)
            nxt = None
            for b in reader:
                nxt = b.last_offset + 1
            stop = pf.framing_problem(path, reader.stop, active=i == len(state.segments) - 1)
        if stop is not None:
            problems.append(stop)
        if nxt is not None:
            log_end = max(nxt, log_end)
            break
    return log_end, problems


def roll_snapshot(d: Path, segments: list, log_end: int, log_start: int) -> tuple[bytes | None, list]:
    """The producer snapshot Kafka's roll writes at ``log_end`` (None when a readable one is already
    there: ``takeSnapshot`` writes only past the last snapshot offset). The state is the newest readable
    snapshot at or below the log end, replayed forward over the batches after it (``ProducerStateManager``
    loading), or a replay of the whole log when there is none; producers are not expired (the broker drops
    expired ones when it loads the snapshot)."""
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.producer_snapshot import build_producer_snapshot, parse_producer_snapshot

    from ..engine.producer_state import ProducerState
    if (d / segment_file_name(log_end, "snapshot")).exists():
        return None, []                 # (an unreadable one is recover's business: the broker replaces it)
    offsets = sorted((int(p.name[:20]) for p in d.glob("*.snapshot") if p.name[:20].isdigit()), reverse=True)
    state = ProducerState()
    replay_from = log_start             # truncateAndReload: snapshots at or below the log start are dropped
    for off in offsets:
        if off > log_end or off <= log_start:
            continue
        try:
            data = parse_producer_snapshot(read_regular(d / segment_file_name(off, "snapshot"),
                                                        MAX_BINARY_SIDE_FILE_BYTES))
        except FormatError:
            continue                    # Kafka deletes a corrupt snapshot and tries the next older one
        state.load(data.entries, off)
        replay_from = off
        break
    for i, seg in enumerate(segments):
        path = d / segment_file_name(seg.base_offset, "log")
        with MappedFile(path) as mf:
            reader = BatchReader(mf.buf)
            for b in reader:
                if b.last_offset < replay_from:
                    continue
                if b.magic >= 2 and b.is_control and b.producer_id >= 0:
                    p = pf.batch_problem(path, b)
                    if p is not None:
                        return None, [p]
                state.update(b)
            p = pf.framing_problem(path, reader.stop, active=i == len(segments) - 1)
            if p is not None:
                return None, [p]
    return build_producer_snapshot(state.snapshot_entries()), []


def loaded_log_start(state, remote_log_enabled: bool) -> int:
    """The partition's log start offset as the broker loads it (``LogLoader.load``): the checkpoint's entry,
    or 0 without one, for a tiered topic (which may lie below the first local segment); otherwise at least
    the first segment's base offset."""
    if not remote_log_enabled or state.logdir is None:
        return state.log_start
    from ..engine.logdir import LogDir
    entries, _finding = LogDir(state.logdir).offset_checkpoint("log-start-offset-checkpoint")
    return entries.get((state.topic, state.partition), 0)


def segment_facts(state, problems: list) -> list[SegmentFacts]:
    """Each segment's size and largest timestamp as the broker reads them once it has loaded the log
    (``engine.segment_times``): a segment its next start recovers (no clean-shutdown marker) from its
    batches, after checking that recovery keeps them all (``preflight.recovery_problem``; a problem is
    appended otherwise); any other from its time index."""
    from ..engine.segment_times import largest_timestamp, log_max_timestamp
    load = state.load_plan()
    seen = {p.file for p in problems}
    facts = []
    for s in state.segments:
        log_max = None
        recovered = load.recovers(s.base_offset)
        if recovered:
            path = state.directory / segment_file_name(s.base_offset, "log")
            with MappedFile(path) as mf:
                p = pf.recovery_problem(path, mf.buf, s.base_offset)
                if p is not None and str(path) not in seen:
                    problems.append(p)
                log_max = log_max_timestamp(mf)
        lt = largest_timestamp(s.index_timestamp, log_max, s.mtime_ms, recovered=recovered)
        facts.append(SegmentFacts(s.base_offset, s.size, lt.value, lt.source, lt.note))
    return facts


def _checked_against_the_log(state, facts: list[SegmentFacts], plan: RetainPlan, checked: set) -> bool:
    """A time index never decides a deletion alone: for every segment the time pass deletes on its last
    time-index entry, read the batches' greatest timestamp; where it is newer, it replaces the entry (the
    segment goes later than on the broker, never earlier). True when a value changed (plan again)."""
    from ..engine.segment_times import TIME_INDEX, largest_timestamp, log_max_timestamp
    changed = False
    for i, d in enumerate(plan.decisions):
        f = facts[i]
        if not d.delete or d.cause != "time" or f.timestamp_source != TIME_INDEX or i in checked:
            continue
        checked.add(i)
        s = state.segments[i]
        with MappedFile(state.directory / segment_file_name(s.base_offset, "log")) as mf:
            lt = largest_timestamp(s.index_timestamp, log_max_timestamp(mf), s.mtime_ms, recovered=False)
        if lt.value != f.largest_timestamp:
            facts[i] = SegmentFacts(f.base_offset, f.size, lt.value, lt.source, lt.note)
            changed = True
    return changed


def loaded_high_watermark(state, log_start: int, log_end: int, sole_replica: bool,
                          given: int | None = None) -> tuple[int | None, str | None]:
    """The high watermark retention, the cleaner and DeleteRecords see once the broker has loaded the log and
    leads the partition; (value, how it was found), (None, None) when unknown. One rule for retain, compact
    and delete-records:

    * the checkpointed value (``replication-offset-checkpoint``) or the one ``given``, raised to the log start
      and lowered to the log end (``UnifiedLog.updateHighWatermark`` on load, 2.x–4.x): an entry above the log
      end (an unflushed tail lost at a kill, a restored backup) means the log end, never more;
    * for a partition whose only replica is this broker (KRaft metadata), the log end whatever the checkpoint
      says: leading it with itself as the whole ISR, the broker raises the high watermark to its log end as it
      starts (``Partition.makeLeader`` → ``maybeIncrementLeaderHW``, 2.x–4.x); after a kill the checkpoint
      lags it (written every ``replica.high.watermark.checkpoint.interval.ms``) or lacks the partition;
    * otherwise a partition missing from the checkpoint has an unknown high watermark: the broker starts it at
      the log start and deletes nothing until its followers catch up."""
    from ..engine.partition_state import bounded_high_watermark
    cp = state.high_watermark if given is None else given
    where = "replication-offset-checkpoint" if given is None else "--high-watermark"
    if sole_replica and given is None:
        if cp == log_end:
            return log_end, None
        said = "has no entry for it" if cp is None else f"says {cp}"
        lag = (" (the log directory has no .kafka_cleanshutdown: the checkpoint lagged when the broker stopped)"
               if cp is not None and cp < log_end and state.clean_shutdown is False else "")
        return log_end, (f"high watermark {log_end}, the log end: {where} {said}{lag}, but the KRaft metadata "
                         "names this broker as the partition's only replica, so it raises the high watermark to "
                         "its log end when it leads the partition at start-up")
    if cp is None:
        return None, None
    hw = bounded_high_watermark(cp, log_start, log_end)
    if hw < cp:
        return hw, (f"high watermark {hw}, the log end: {where} says {cp}, beyond the log end (a tail lost "
                    "unflushed, or a restored backup); the broker lowers it to the log end when it loads the log")
    if hw > cp:
        return hw, f"high watermark {hw}, the log start offset: {where} says {cp}, below it"
    if hw < log_end and state.clean_shutdown is False and given is None:
        return hw, (f"high watermark {hw} from {where}, below the log end {log_end}; the log directory has no "
                    ".kafka_cleanshutdown, so the broker may have had a higher one when it stopped (its "
                    "followers decide it after a restart)")
    return hw, None


def plan_partition(state, settings, *, log_start_offset: int | None, high_watermark: int | None,
                   now: int, sole_replica: bool = False,
                   hw_remedy: str = "give --high-watermark to proceed") -> tuple[RetainPlan, bytes | None]:
    """Check every input, then plan (``plan_retention``) with the partition's own settings
    (``topic_policy.RetentionSettings``); (plan, the producer snapshot a roll writes)."""
    log_end, problems = check(state, need_hw=high_watermark is None)
    problems += pf.misread_problems(state)
    facts = segment_facts(state, problems)
    start = loaded_log_start(state, settings.remote_log_enabled)
    hw, hw_note = loaded_high_watermark(state, start, log_end, sole_replica, given=high_watermark)
    ms, by = settings.retention_ms, settings.retention_bytes
    policy = Policy(ms.value if ms is not None else -1, by.value if by is not None else -1, log_start_offset,
                    tiered=settings.tiered, remote_offset=settings.remote_offset,
                    ms_key=ms.key if ms is not None else "retention.ms",
                    bytes_key=by.key if by is not None else "retention.bytes", hw_remedy=hw_remedy)
    plan = plan_retention(facts, log_end, hw, start, policy, now, problems)
    checked: set = set()
    while _checked_against_the_log(state, facts, plan, checked):
        plan = plan_retention(facts, log_end, hw, start, policy, now, problems)
    snapshot = None
    if plan.roll_at is not None:
        snapshot, problems = roll_snapshot(state.directory, state.segments, log_end, state.log_start)
        if problems:
            plan = plan_retention(facts, log_end, hw, start, policy, now, problems)
        plan.snapshot_at_roll = snapshot is not None
    if hw_note:
        plan.notes_info.insert(0, hw_note)
    return plan, snapshot


def execute(partition_dir: Path, topic: str, partition: int, plan: RetainPlan, logdir: Path | None,
            keep_deleted: bool = False, backup: Path | None = None, snapshot: bytes | None = None,
            remote_log_enabled: bool = False) -> RetainOutcome:
    out = RetainOutcome()
    doomed = plan.deleted
    if plan.blocked or (not doomed and plan.new_log_start == plan.old_log_start):
        return out
    if plan.roll_at is not None:
        for suffix in ("log", "index", "timeindex"):
            p = partition_dir / segment_file_name(plan.roll_at, suffix)
            if not p.exists():
                fileops.write_atomic(p, b"")
                out.created.append(str(p))
        p = partition_dir / segment_file_name(plan.roll_at, "snapshot")
        if snapshot is not None and not p.exists():
            fileops.write_atomic(p, snapshot)
            out.created.append(str(p))
    files = []
    for d in doomed:
        for suffix in ("log", "index", "timeindex", "txnindex", "snapshot"):
            p = partition_dir / segment_file_name(d.base_offset, suffix)
            if p.exists():
                files.append(p)
    if backup is not None:
        for p in files:
            _keep(out, fileops.backup_keep(p, backup / partition_dir.name / p.name))
    deleted_files = []
    for p in files:
        target = p.with_name(p.name + ".deleted")
        fileops.rename(p, target)
        out.renamed.append(str(p))
        deleted_files.append(target)
    remaining = sorted(int(p.name[:20]) for p in partition_dir.glob("*.log") if p.name[:20].isdigit())
    first_base = remaining[0] if remaining else plan.new_log_start
    moved = plan.new_log_start != plan.old_log_start
    if logdir is not None and (moved or not plan.tiered):
        _update_log_start_checkpoint(logdir, (topic, partition), plan.new_log_start, first_base, out, backup,
                                     always=remote_log_enabled)
    if moved or not plan.tiered:                      # tiered: maybeIncrementLocalLogStartOffset keeps the epochs
        _truncate_leader_epochs(partition_dir / "leader-epoch-checkpoint", plan.new_log_start, out, backup)
    if moved and logdir is not None:
        _raise_recovery_point(logdir, (topic, partition), plan.new_log_start, out, backup)
    if not keep_deleted:
        for p in deleted_files:
            fileops.unlink(p)
            out.removed.append(str(p))
    return out


def _keep(out: RetainOutcome, kept) -> None:
    if kept is not None:
        out.backups.append(str(kept))


def _update_log_start_checkpoint(logdir: Path, tp: tuple[str, int], new_start: int, first_base: int,
                                 out: RetainOutcome, backup: Path | None, always: bool = False) -> None:
    path = logdir / "log-start-offset-checkpoint"
    current = dict(parsed_once(path, parse_offset_checkpoint)) if path.exists() else {}
    old = current.get(tp)
    updated = dict(current)
    if new_start > first_base or always:
        updated[tp] = new_start
    else:
        updated.pop(tp, None)
    if updated != current:
        if backup is not None and path.exists():
            _keep(out, fileops.backup_copy(path, backup / path.name))
        fileops.write_atomic(path, build_offset_checkpoint(updated).encode())
        out.checkpoints.append((str(path), old, updated.get(tp)))


def _raise_recovery_point(logdir: Path, tp: tuple[str, int], new_start: int, out: RetainOutcome,
                          backup: Path | None) -> None:
    """``UnifiedLog.updateLogStartOffset`` (2.x–4.x) raises a recovery point below the new log start offset,
    which the broker's next checkpoint of the recovery points then writes."""
    path = logdir / "recovery-point-offset-checkpoint"
    if not path.exists():
        return
    current = dict(parsed_once(path, parse_offset_checkpoint))
    old = current.get(tp)
    if old is None or old >= new_start:
        return
    current[tp] = new_start
    if backup is not None:
        _keep(out, fileops.backup_copy(path, backup / path.name))
    fileops.write_atomic(path, build_offset_checkpoint(current).encode())
    out.checkpoints.append((str(path), old, new_start))


def _truncate_leader_epochs(path: Path, new_start: int, out: RetainOutcome, backup: Path | None) -> None:
    """Kafka ``LeaderEpochFileCache.truncateFromStart`` (2.x–4.0): entries are removed from the start while
    their start offset is ≤ the new log start (``removeWhileMatching``), the last removed one re-added at it."""
    if not path.exists():
        return
    entries = parse_leader_epoch_checkpoint(read_regular(path), str(path))
    n = 0
    while n < len(entries) and entries[n].start_offset <= new_start:
        n += 1
    removed = entries[:n]
    if not removed or (len(removed) == 1 and removed[0].start_offset == new_start):
        return
    kept = [(removed[-1].epoch, new_start)] + [(e.epoch, e.start_offset) for e in entries[n:]]
    if backup is not None:
        _keep(out, fileops.backup_copy(path, backup / path.parent.name / path.name))
    fileops.write_atomic(path, build_leader_epoch_checkpoint(kept).encode())
    out.checkpoints.append((str(path), [tuple(e) for e in entries], kept))
