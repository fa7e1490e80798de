"""The plan of ``recover``: from the scanned state of a log directory to typed actions (pure; no I/O).

Each action carries the reason it is needed and the Kafka class/method whose behaviour it reproduces
(the rules, with the Kafka versions they hold for, are tabled in docs/kafka-rules.md). The plan is
exactly what ``--dry-run`` prints and what ``recover_exec`` executes, in this order:

  log dir   1. remove ``.kafka_cleanshutdown``            LogManager.loadLogs deletes it first (2.8+, KAFKA-10471)
            2. lower the offset checkpoints               recovery point, high watermark, log start to the log
                                                          end; the cleaner's to the log start offset
  partition 3. producer snapshot at the new log end        UnifiedLog.rebuildProducerState's final snapshot
            4. passes 1-2: ``.deleted``, ``.cleaned``, ``.swap`` exactly as LogLoader.load
            5. pass 3: orphan index files; temporary files of interrupted writes
            6. ``leader-epoch-checkpoint`` entries at or above the log end (LeaderEpochFileCache.truncateFromEnd)
            7. producer snapshots above the log end or unreadable
            8. segments after a truncated one, last first   (LogLoader.recoverLog)
            9. per segment: truncate the ``.log``; write the rebuilt, trimmed ``.index``/``.timeindex``/
               ``.txnindex`` where they differ (LogSegment.recover)
           10. KRaft snapshots: partial, deleted, below the log start (KafkaMetadataLog.recoverSnapshots)
  log dir  11. ``--mark-clean``: fsync every partition file, recovery points = log end, write the marker;
               or restore the marker removed in step 1

A partition that Kafka's loader could not load, or could load only with a gap in its offsets, gets no
action (a problem says why) unless ``--truncate-at-damage`` asks for the cut. Why this order keeps every
intermediate state recoverable is argued in ``recover_exec``. Deliberate differences from the broker are
listed in ``DEVIATIONS``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..engine.findings import Finding
from ..layout import OFFSET_CHECKPOINTS, classify_file, segment_file_name
from .epoch_cache import EpochCache, truncated_from_start
from .leftovers import plan_leftovers
from .logdir_scan import LogDirFacts
from .recover_actions import (CLEANER_CHECKPOINT, R_EPOCHS, R_EPOCHS_REBUILT, R_KRAFT, R_MARK_CLEAN_RP,
                              R_MARKER_REMOVE, R_MARKER_RESTORE, R_MARKER_WRITE, R_NAMES, R_ORPHAN, R_PASS3,
                              R_PASS3_TIMEINDEX, R_RECOVER, R_RECOVERLOG_DELETE, R_SNAP_ABOVE, R_SNAP_CORRUPT,
                              R_SNAP_WRITE, R_START_BEYOND_END, R_TMP, _CHECKPOINT_RULES, Action, PartitionPlan,
                              RecoverPlan, RemoveFile, RemoveSegment, RenameFile, SyncPartition, TruncateLog,
                              WriteFile, _entries, digest, problem)
from .segment_recovery import PartitionFacts, SegmentFacts

DEVIATIONS = (
    "rebuilt indexes are written trimmed; Kafka re-extends the active segment's indexes itself",
    "a missing .timeindex is rebuilt from its segment, where Kafka creates an empty one: an empty time index "
    "makes time lookups and time retention fall back to the .log modification time",
    "a segment Kafka recovers at every start (missing .index, bad .txnindex) whose offsets go backwards, or "
    "whose cut would leave later segments behind a gap, is left alone with a problem unless "
    "--truncate-at-damage is given; Kafka's loader stops on the first and leaves the gap in the second",
    "a leader-epoch entry starting exactly at the log end is kept when recover does not move the log end (a "
    "leader writes it at election; Kafka drops it on every load and re-adds it at the next election)",
    "producer snapshots that are still valid are kept, and a missing one at the log end is written only when "
    "the log end changed; Kafka deletes and re-creates some while loading (same content)",
    "producers are not expired by producer.id.expiration.ms (the broker drops them when it loads the snapshot)",
    "a -delete directory gets only the part of Kafka's LogLoader.load before recoverLog: its leader-epoch "
    "checkpoint and producer snapshots are left as they are (Kafka empties and removes them just before it "
    "deletes the directory)",
    "a segment with offsets beyond base + 2^31-1 (legacy data) is reported, not split",
)

#: What --mark-clean writes into a new .kafka_cleanshutdown: the JSON of Kafka 3.7+'s
#: CleanShutdownFileHandler (version 0) with broker epoch -1. The broker writes its current broker epoch,
#: which the controller compares with its registration to learn that the shutdown was clean (KIP-966);
#: offline the epoch of a broker that crashed is not known, and claiming one would let the controller
#: count on data a crash may have lost. Brokers before 3.7 only test that the file exists.
MARKER_UNKNOWN_EPOCH = b'{"version":0,"brokerEpoch":-1}'



# --- one partition ---------------------------------------------------------------------------------
#
# plan_partition follows LogLoader.load (Scala kafka.log.Log 2.x, kafka.log.LogLoader 3.0-3.9, Java
# org.apache.kafka.storage.internals.log.LogLoader on trunk), one function per pass:
#   _leftovers         passes 1-2: .deleted/.cleaned/.swap (removeTempFilesAndCollectSwapFiles, swap completion)
#   _loaded_files      pass 3: orphaned index files and temporary files (loadSegmentFiles)
#   _log_end           pass 4's outcome: which segments stay and the log end (recoverLog)
#   _segment_repairs   pass 4 per segment: the cut and the rebuilt indexes (LogSegment.recover), the segments
#                      after a cut removed (recoverLog)
#   _producer_state    producer snapshots (UnifiedLog.rebuildProducerState, ProducerStateManager)
#   _leader_epochs     leader-epoch-checkpoint (LeaderEpochFileCache.truncateFromEnd/truncateFromStart)
#   _kraft_snapshots   the metadata log's snapshots (KafkaMetadataLog.recoverSnapshots)
#   _checkpoints       this partition's entries of the log directory's offset checkpoints

FULL = ("recovery", "missing_index", "txnindex")
_WHY = {
    "recovery": "recovered (at or after the recovery point)",
    "missing_index": "its .index is missing: Kafka recovers such a segment at every start, even after a clean "
                     "shutdown",
    "txnindex": "its .txnindex fails Kafka's sanity check: Kafka recovers such a segment at every start",
    "missing_timeindex": "its .timeindex is missing: rebuilt from the segment (Kafka would create it empty)",
}
_WHY["txnindex-only"] = "after a segment --salvage rewrites: the aborted transactions replayed again"
_WHY_TXN_SIZE = ("its .txnindex has more entries than the segment has batches, so entries no ABORT marker backs "
                 "(not read; beyond Kafka, whose sanity check reads every entry)")


def _why(s: SegmentFacts) -> str:
    return _WHY_TXN_SIZE if s.why == "txnindex" and s.txn_oversized else _WHY[s.why]


@dataclass
class Leftovers:
    """Passes 1-2, and the files moved aside because Kafka's loader misreads their names."""
    actions: list[Action]
    virtual: dict[str, str]           # final name -> current name, after the passes
    swap_done: bool                   # an interrupted swap is completed (the segments change)
    problems: list[Finding]


def _leftovers(f: PartitionFacts, d: str, move_aside: bool) -> Leftovers:
    """``LogLoader.removeTempFilesAndCollectSwapFiles`` and the swap completion (``leftovers.plan_leftovers``);
    before them, a file whose name Kafka's loader misreads (``layout.name_problem``) is moved into the backup
    directory when there is one (``move_aside``), reported otherwise."""
    aside: list[Action] = []
    problems = []
    for name, pr in f.misread:
        if move_aside:
            aside.append(RemoveFile(d + name, f"moved aside into the backup: {pr.message}", R_NAMES))
        else:
            problems.append(problem(pr.kind, f"{pr.message} (left in place: give --backup-dir DIR to move it aside)",
                                    d + name))
    actions, virtual = plan_leftovers(f.names, f.swap_extents, d)
    return Leftovers(aside + actions, virtual, any(isinstance(a, RenameFile) for a in actions), problems)


def _loaded_files(f: PartitionFacts, d: str, virtual: dict[str, str], loaded: bool) -> tuple[list[Action], list[Finding]]:
    """Pass 3 (``LogLoader.loadSegmentFiles``): orphaned index files removed, temporary files of interrupted
    writes removed; what the scan found and recover leaves alone reported."""
    actions: list[Action] = []
    seg_bases = {classify_file(n).offset for n in virtual if classify_file(n).kind == "log"
                 and classify_file(n).state is None}
    for name in sorted(virtual):
        fn = classify_file(name)
        if fn.kind in ("index", "timeindex", "txnindex") and fn.state is None and fn.offset not in seg_bases:
            actions.append(RemoveFile(d + name, f"orphaned index file: no {segment_file_name(fn.offset, 'log')}",
                                      R_ORPHAN))
        elif name.endswith(".tmp"):
            actions.append(RemoveFile(d + name, "temporary file of an interrupted write (Kafka ignores it)", R_TMP))
    problems = [problem("unknown_directory", f"unexpected directory {sub} (left alone)", d + sub) for sub in f.subdirs]
    problems += [pr._replace(file=d + pr.file) for pr in f.problems]
    if f.epochs_problem and f.epochs_rebuilt is None and loaded:
        problems.append(problem("leader_epoch_checkpoint", f.epochs_problem + " (left alone)",
                                d + "leader-epoch-checkpoint"))
    return actions, problems


@dataclass
class LogEnd:
    """Pass 4's outcome for the partition: the segments kept, those removed, the new log end."""
    kept: list[SegmentFacts]
    removed: list[SegmentFacts]
    leo: int
    log_start_checkpoint: int | None  # this partition's log-start-offset-checkpoint entry (own entries only)
    start_beyond_end: bool            # the log ends below the checkpointed log start: every segment goes
    notes: list[str]
    refusal: Finding | None = None    # a problem: the partition is left unchanged


def _log_end(f: PartitionFacts, checkpoints: dict, loaded: bool, trust_checkpoints: bool) -> LogEnd:
    """``LogLoader.recoverLog``: the segments after the one whose recovery truncated are deleted; no segment at
    all means an empty log at the checkpointed log start offset; a log end below the checkpointed log start
    (Kafka 2.3+, KAFKA-8306; trunk ``deleteSegmentsIfLogStartGreaterThanLogEnd``) deletes every segment, the
    leader-epoch cache and the producer state restarting at the log start, where an empty segment is created.
    Not for the KRaft metadata log (no log-start checkpoint)."""
    kept, removed, notes = [], [], []
    for s in f.segments:
        (removed if f.stopped_at is not None and s.base > f.stopped_at else kept).append(s)
    if kept:
        last = kept[-1]
        leo = last.next_offset if last.next_offset is not None else last.base
    elif loaded:
        leo = f.log_start or 0
        notes.append(f"no segment file: the broker creates an empty segment at the log start offset {leo}")
    else:
        leo = 0
        notes.append("no segment file: the broker creates an empty segment at offset 0 (-delete directory)")
    ls_cp = checkpoints.get("log-start-offset-checkpoint") if f.own_checkpoints else None
    start_beyond_end = bool(loaded and f.kind != "metadata" and kept and ls_cp is not None and leo < ls_cp)
    end = LogEnd(kept, removed, leo, ls_cp, start_beyond_end, notes)
    if start_beyond_end and not trust_checkpoints:
        # Offline, a log start beyond the log end cannot be told from a damaged checkpoint (a broker writes
        # one only for a follower far behind its leader): nothing of the partition changes unless asked.
        end.refusal = problem("log_start_beyond_log_end", (
            f"log-start-offset-checkpoint says the log starts at {ls_cp}, beyond the log end {leo}: a broker "
            f"deletes every record of the partition when it loads it (KAFKA-8306). Offline this cannot be told "
            f"from a damaged checkpoint, so the partition was left unchanged: if the entry is wrong, correct it "
            f"(at most {leo}); if the records are really to go, run recover --trust-checkpoints --backup-dir "
            "DIR"), "log-start-offset-checkpoint")
    elif start_beyond_end:
        notes.append(f"the log end {leo} is below the log start offset {ls_cp} in "
                     "log-start-offset-checkpoint (segment files deleted from the file system?): the broker "
                     "deletes every segment and starts an empty log at the log start offset")
        end.removed, end.kept, end.leo = kept + removed, [], ls_cp
    return end


@dataclass
class SegmentRepairs:
    """Pass 4 per segment: cuts and rebuilt indexes of the kept segments, the removed segments."""
    actions: list[Action] = field(default_factory=list)      # TruncateLog and WriteFile, per segment
    removals: list[Action] = field(default_factory=list)     # RemoveSegment, last first; the empty segment
    truncations: list[dict] = field(default_factory=list)
    rebuilt: list[dict] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)         # paths


def _segment_repairs(f: PartitionFacts, d: str, end: LogEnd, cut_asked: bool) -> SegmentRepairs:
    """``LogSegment.recover`` for every segment recovered (from the recovery point on, and any segment pass 3
    recovers): the ``.log`` cut at its first invalid batch, the ``.index``/``.timeindex``/``.txnindex`` rebuilt
    with Kafka's per-batch rule where they differ; ``LogLoader.recoverLog``: every later segment deleted.
    ``cut_asked``: --truncate-at-damage allowed the cut Kafka's loader refuses."""
    out = SegmentRepairs()
    for s in end.kept:
        res = s.result
        if res is None:
            continue
        log_path = d + segment_file_name(s.base, "log")
        rule = R_RECOVER if s.why == "recovery" else (R_PASS3 if s.why in FULL else R_PASS3_TIMEINDEX)
        if s.why in FULL and res.truncation is not None and res.truncation.size > 0:
            t = res.truncation
            if t.kind == "invalid_offset":
                why = ("offsets go backwards (InvalidOffsetException, KAFKA-3919): the segment is emptied, as "
                       "LogLoader.recoverLog does")
            else:
                why = f"first invalid bytes of the segment ({t.kind})"
            if cut_asked and s.base == f.stopped_at:
                why += "; --truncate-at-damage: Kafka's loader " + (
                    "stops on this segment" if t.kind == "invalid_offset" else "would keep the later segments")
            out.actions.append(TruncateLog(log_path, f"{why}; {_why(s)}", rule, new_size=res.valid_bytes,
                                           old_size=s.log.size, kind=t.kind, detail=t.reason, offset=t.offset))
            out.truncations.append({"file": log_path, "position": res.valid_bytes, "bytes": s.log.size -
                                    res.valid_bytes, "kind": t.kind, "reason": t.reason, "offset": t.offset,
                                    "log_end": res.next_offset})
        out.actions += _rebuilt_indexes(s, d, rule, out.rebuilt)
    for s in reversed(end.removed):
        files = [d + segment_file_name(s.base, "log")]
        files += [d + segment_file_name(s.base, sfx) for sfx in ("index", "timeindex", "txnindex") if sfx in s.indexes]
        if end.start_beyond_end:
            why = (f"every record is below the log start offset {end.leo} (log-start-offset-checkpoint) and the log "
                   "ends before it: the broker deletes every segment")
            rule = R_START_BEYOND_END
        else:
            why = (f"after the truncated segment {segment_file_name(f.stopped_at, 'log')}: every later segment of "
                   "the partition is deleted")
            if cut_asked:
                why += " (--truncate-at-damage; the log keeps no gap)"
            rule = R_RECOVERLOG_DELETE
        out.removals.append(RemoveSegment(files[0], why, rule, files=tuple(files), base_offset=s.base,
                                          size=s.log.size))
        out.removed += files
    if end.start_beyond_end:
        out.actions = []              # nothing of the deleted segments is rebuilt
        for suffix in ("log", "index", "timeindex"):
            out.removals.append(WriteFile(d + segment_file_name(end.leo, suffix), f"the empty segment the broker "
                                          f"creates at the log start offset {end.leo}", R_START_BEYOND_END, data=b"",
                                          what=suffix, detail="empty"))
    return out


def _rebuilt_indexes(s: SegmentFacts, d: str, rule: str, rebuilt: list[dict]) -> list[Action]:
    """The index files of one recovered segment that differ from the rebuilt ones (``LogSegment.recover``
    rebuilds all three; a missing ``.timeindex`` alone is rebuilt beyond Kafka, which creates it empty)."""
    res = s.result
    wanted = []
    if s.why in FULL:
        wanted = [("index", res.index), ("timeindex", res.timeindex), ("txnindex", res.txnindex)]
    elif s.why == "txnindex-only":               # salvage_plan: a segment it does not rewrite
        wanted = [("txnindex", res.txnindex)]
    elif s.why == "missing_timeindex":
        wanted = [("timeindex", res.timeindex)]
    actions: list[Action] = []
    for suffix, data in wanted:
        existing = s.indexes.get(suffix)
        if suffix == "txnindex" and existing is None and not data:
            continue              # never created for a segment without aborted transactions
        if existing is not None and existing.digest == digest(data):
            continue
        path = d + segment_file_name(s.base, suffix)
        entry = {"index": 8, "timeindex": 12, "txnindex": 34}[suffix]
        old = _entries(existing.size, entry) if existing else "missing"
        detail = f"{old} -> {_entries(len(data), entry)}"
        reason = (f"{_why(s)}; rebuilt with Kafka's per-batch index rule" if suffix != "txnindex"
                  else f"{_why(s)}; aborted transactions replayed from the producer state")
        actions.append(WriteFile(path, reason, rule, data=data, what=suffix,
                                 old_size=existing.size if existing else None, detail=detail, mtime_ns=s.mtime_ns))
        rebuilt.append({"file": path, "old_size": existing.size if existing else None, "new_size": len(data)})
    return actions


@dataclass
class ProducerSnapshots:
    """Producer snapshots removed (above the log end, unreadable, or all of them when the log restarts at
    its log start) and the one written at the new log end."""
    removals: list[Action]
    write: list[Action]
    notes: list[str]


def _producer_state(f: PartitionFacts, d: str, end: LogEnd, loaded: bool, log_changed: bool,
                    mark_clean: bool) -> ProducerSnapshots:
    """``ProducerStateManager.truncateAndReload`` (snapshots above the log end), ``loadFromSnapshot`` (a corrupt
    one deleted), ``truncateFullyAndStartAt`` (the log restarts at its log start) and
    ``UnifiedLog.rebuildProducerState``'s final snapshot at the log end. ``log_changed``: the repair moves
    the log end or the segments, so the snapshot at the log end must be rewritten."""
    leo = end.leo
    removals: list[Action] = []
    valid_at_leo = False
    for snap in (f.snapshots if loaded else ()):
        if end.start_beyond_end:
            removals.append(RemoveFile(d + snap.name, f"the producer state restarts at the log start offset "
                                       f"{leo} (ProducerStateManager.truncateFullyAndStartAt)", R_START_BEYOND_END))
        elif snap.offset > leo:
            removals.append(RemoveFile(d + snap.name, f"producer snapshot above the log end offset {leo}",
                                       R_SNAP_ABOVE))
        elif snap.problem:
            removals.append(RemoveFile(d + snap.name, f"unreadable producer snapshot: {snap.problem}",
                                       R_SNAP_CORRUPT))
        elif snap.offset == leo:
            valid_at_leo = True
    write: list[Action] = []
    notes: list[str] = []
    # With a clean-shutdown marker and no snapshot file the broker does not replay the log: it starts the
    # producer state empty (UnifiedLog.rebuildProducerState, the upgrade shortcut, 2.x-4.x); a broker's own
    # clean shutdown always leaves one at the log end (UnifiedLog.close -> ProducerStateManager.takeSnapshot).
    needs_snapshot = log_changed or bool(removals) or (mark_clean and f.kind in ("normal", "future"))
    if loaded and needs_snapshot and not valid_at_leo and end.kept and not end.start_beyond_end:
        if f.state_end == leo:
            from kafkalog_formats.producer_snapshot import build_producer_snapshot
            data = build_producer_snapshot(f.state_entries or [])
            src = (f"replayed from snapshot {f.replay_from}" if f.replay_from is not None
                   else "replayed from the start of the log")
            write.append(WriteFile(d + segment_file_name(leo, "snapshot"),
                                   f"producer state at the new log end offset {leo} ({src}, "
                                   f"{len(f.state_entries or [])} producers)", R_SNAP_WRITE, data=data,
                                   what="snapshot"))
        elif f.state_end is None:
            notes.append(f"no producer snapshot written at the log end {leo}: the partition has no snapshot "
                         "file after a clean shutdown, so the broker starts its producer state there")
        else:
            notes.append(f"no producer snapshot written: the replayed state ends at {f.state_end}, not at "
                         f"the log end {leo} (the broker rebuilds it)")
    return ProducerSnapshots(removals, write, notes)


@dataclass
class LeaderEpochs:
    """The rewritten leader-epoch-checkpoint, if any, and its change for the report."""
    actions: list[Action] = field(default_factory=list)
    checkpoints: list[dict] = field(default_factory=list)


def _leader_epochs(f: PartitionFacts, d: str, end: LogEnd, loaded: bool, end_moved: bool) -> LeaderEpochs:
    """``LogLoader.load`` after recovery: ``LeaderEpochFileCache.truncateFromEnd`` at the log end, then
    ``truncateFromStart`` at the checkpointed log start ("the earliest leader epoch may not be flushed during a
    hard failure", 3.0-4.x; Log.scala 2.x likewise); the epochs ``LogSegment.recover`` assigned included.
    Every segment deleted empties the cache (``clearAndFlush``); an unreadable checkpoint is rebuilt from the
    batches (beyond Kafka, whose broker refuses to start on it)."""
    from kafkalog_formats.checkpoint import build_leader_epoch_checkpoint
    leo = end.leo
    out = LeaderEpochs()
    if end.start_beyond_end and (f.epochs_file or f.epochs_problem):
        out.actions.append(WriteFile(d + "leader-epoch-checkpoint", "every segment is deleted: the broker empties "
                                     "the leader-epoch cache (LeaderEpochFileCache.clearAndFlush)",
                                     R_START_BEYOND_END, data=build_leader_epoch_checkpoint([]).encode(),
                                     what="leader-epoch-checkpoint", detail="no epochs"))
        out.checkpoints.append({"file": d + "leader-epoch-checkpoint", "partition": f.dir_name,
                                "old": [list(e) for e in (f.epochs_file or [])], "new": []})
    elif loaded and f.epochs_file is not None and f.epochs_problem is None:
        cache = EpochCache(f.epochs_after if f.epochs_after is not None else f.epochs_file)
        # Kafka drops entries starting at or after the log end on every load (truncateFromEnd). An entry
        # starting exactly at an unchanged log end is what a leader writes at election before its first
        # append; it is kept unless this repair moves the log end (then Kafka's rule applies as is).
        new = cache.truncated_from_end(leo if end_moved else leo + 1)
        if f.own_checkpoints and end.log_start_checkpoint is not None:
            new = truncated_from_start(new, end.log_start_checkpoint)
        old = [tuple(e) for e in f.epochs_file]
        if new != old:
            dropped = [e for e in old if e not in new]
            added = [e for e in new if e not in old]
            parts = []
            if dropped:
                parts.append("removed " + ", ".join(f"epoch {e} from {s}" for e, s in dropped))
            if added:
                parts.append("added " + ", ".join(f"epoch {e} from {s}" for e, s in added) + " (seen in "
                             "recovered batches)")
            reason = (f"entries {'at or ' if end_moved else ''}above the log end offset {leo} are dropped; "
                      "epochs of recovered batches are assigned")
            out.actions.append(WriteFile(d + "leader-epoch-checkpoint", reason, R_EPOCHS,
                                         data=build_leader_epoch_checkpoint(new).encode(),
                                         what="leader-epoch-checkpoint", detail="; ".join(parts)))
            out.checkpoints.append({"file": d + "leader-epoch-checkpoint", "partition": f.dir_name,
                                    "old": [list(e) for e in old], "new": [list(e) for e in new]})
    if loaded and f.epochs_problem and f.epochs_rebuilt is not None and not end.start_beyond_end:
        new = [e for e in f.epochs_rebuilt if e[1] < leo]
        out.actions.append(WriteFile(
            d + "leader-epoch-checkpoint", f"unreadable ({f.epochs_problem}): rebuilt from the partition leader "
            "epochs of the batches (beyond Kafka, whose broker refuses to start on it)", R_EPOCHS_REBUILT,
            data=build_leader_epoch_checkpoint(new).encode(), what="leader-epoch-checkpoint",
            detail=", ".join(f"epoch {e} from {s}" for e, s in new) or "no epochs"))
        out.checkpoints.append({"file": d + "leader-epoch-checkpoint", "partition": f.dir_name,
                                "old": None, "new": [list(e) for e in new]})
    return out


def _kraft_snapshots(f: PartitionFacts, d: str, end: LogEnd) -> tuple[list[Action], list[Finding]]:
    """``KafkaMetadataLog.recoverSnapshots``: partial and deleted snapshots removed, and those ending below the
    log start offset; none removed when no snapshot reaches the log start (the Raft layer throws first)."""
    if f.kind != "metadata":
        return [], []
    log_start = end.kept[0].base if end.kept else end.leo
    actions: list[Action] = []
    retained = []
    for name, end_offset, _epoch, state in sorted(f.kraft_snapshots):
        if state in ("part", "deleted"):
            actions.append(RemoveFile(d + name, f"{'partial' if state == 'part' else 'deleted'} KRaft snapshot",
                                      R_KRAFT))
        elif end_offset < log_start:
            actions.append(RemoveFile(d + name, f"KRaft snapshot ending below the log start offset {log_start}",
                                      R_KRAFT))
        else:
            retained.append(end_offset)
    if log_start > 0 and not any(e >= log_start for e in retained):
        return [], [problem("kraft_snapshot_missing", "Inconsistent snapshot state: there must be a snapshot at an "
                            f"offset larger then the current log start offset {log_start} (the Raft layer refuses "
                            "to start; no snapshot file was removed)", f.dir_name)]
    return actions, []


def _checkpoints(f: PartitionFacts, end: LogEnd, checkpoints: dict) -> tuple[int, list[dict]]:
    """This partition's entries of the log directory's offset checkpoints above the log end: lowered to it
    (``LogLoader.recoverLog``: recovery point; ``UnifiedLog.updateHighWatermark``: high watermark), the
    cleaner's reset to the log start offset (``LogCleanerManager.cleanableOffsets``, 2.4+). The log start
    offset itself is never above the log end here: when it was, every segment went and the log end is the log
    start (``_log_end``). Returns (log start after the repair, changes)."""
    leo, ls_cp = end.leo, end.log_start_checkpoint
    log_start = max(min(ls_cp, leo) if ls_cp is not None else 0, end.kept[0].base if end.kept else leo)
    changes = []
    for name in OFFSET_CHECKPOINTS:
        old = checkpoints.get(name)
        if old is not None and old > leo:
            new = log_start if name == CLEANER_CHECKPOINT else leo
            changes.append({"file": name, "partition": f.dir_name, "old": old, "new": new})
    return log_start, changes


def plan_partition(f: PartitionFacts, checkpoints: dict, *, truncate_at_damage: bool = False,
                   mark_clean: bool = False, trust_checkpoints: bool = False,
                   move_aside: bool = False) -> PartitionPlan:
    """Actions for one partition from its ``segment_recovery.PartitionFacts``, pass by pass as ``LogLoader.load``.

    ``checkpoints`` maps each offset-checkpoint file name to this partition's value (None when absent).
    The log-directory checkpoint changes are recorded in ``plan.checkpoints`` and written by ``plan_logdir``.
    A partition Kafka's loader could not load, or could load only with a gap in its offsets
    (``f.refusal``), gets no action at all unless ``truncate_at_damage`` allows the cut. ``mark_clean``:
    the directory will carry a clean-shutdown marker, so the partition gets a producer snapshot at its log
    end whatever else changes (see ``plan_logdir``). A log start offset beyond the log end (the broker would
    delete every record) is followed only with ``trust_checkpoints``; otherwise the partition is left
    unchanged with a problem. A file whose name Kafka's loader misreads (``layout.name_problem``: the broker
    would not start, or would open an empty segment) is moved into the backup directory when there is one
    (``move_aside``), reported otherwise; the rest of the plan treats it as gone (Kafka's reading of it is
    not something recover reproduces).
    """
    d = f.dir_name + "/"
    plan = PartitionPlan(f.dir_name, f.kind, f.topic, f.partition, recovery=f.recovery_reason,
                         segments=len(f.segments))
    plan.owns_checkpoints = f.own_checkpoints
    refusal = f.refusal
    if refusal is not None and not (f.overridable and truncate_at_damage):
        plan.refused = True
        plan.problems.append(refusal._replace(file=d + refusal.file))
        return plan
    loaded = f.kind != "delete"       # a -delete directory gets passes 1-3 only (LogLoader.load)
    left = _leftovers(f, d, move_aside)
    plan.misread = bool(left.problems)
    plan.problems += left.problems
    pass3, problems = _loaded_files(f, d, left.virtual, loaded)
    plan.problems += problems
    if any(p.kind == "offset_overflow" for p in f.problems):
        plan.notes.append("segments not repaired: an offset overflow needs Kafka's segment split")
        plan.actions = left.actions + pass3
        return plan

    end = _log_end(f, checkpoints, loaded, trust_checkpoints)
    plan.notes += end.notes
    if end.refusal is not None:
        plan.refused = True
        plan.problems.append(end.refusal)
        return plan
    plan.log_end, plan.log_end_before = end.leo, f.log_end_before
    plan.segments_scanned = sum(1 for s in f.segments if s.why in FULL and s.result is not None)
    plan.bytes_validated = f.bytes_scanned

    segs = _segment_repairs(f, d, end, cut_asked=refusal is not None)
    plan.truncations, plan.rebuilt = segs.truncations, segs.rebuilt
    truncated = any(isinstance(a, TruncateLog) for a in segs.actions)
    snaps = _producer_state(f, d, end, loaded, bool(segs.removals or left.swap_done or truncated), mark_clean)
    plan.notes += snaps.notes
    epochs = _leader_epochs(f, d, end, loaded, end_moved=bool(segs.removals or truncated))
    plan.checkpoints += epochs.checkpoints
    kraft, problems = _kraft_snapshots(f, d, end)
    plan.problems += problems

    plan.actions = (snaps.write + left.actions + pass3 + epochs.actions + snaps.removals + segs.removals
                    + segs.actions + kraft)
    plan.removed = [a.path for a in left.actions + pass3 + snaps.removals + kraft if isinstance(a, RemoveFile)] \
        + segs.removed
    if f.own_checkpoints:
        plan.log_start, changes = _checkpoints(f, end, checkpoints)
        plan.checkpoints += changes
    return plan


# --- the log directory -----------------------------------------------------------------------------

def plan_logdir(facts: LogDirFacts, *, mark_clean: bool = False, truncate_at_damage: bool = False,
                trust_checkpoints: bool = False, move_aside: bool = False, partition_planner=None) -> RecoverPlan:
    """The whole plan from ``segment_recovery.LogDirFacts``: each partition's (``partition_planner``, default
    ``plan_partition``; ``salvage_plan.plan_partition`` for ``--salvage``), then the log directory's
    checkpoints lowered to the new log ends, the clean-shutdown marker removed first (Kafka deletes it on
    load) and, after the repairs, restored or written (``--mark-clean``)."""
    planner = partition_planner or plan_partition
    plan = RecoverPlan(facts.path)
    plan.skipped = list(facts.skipped)
    plan.problems = list(facts.problems)
    plan.notes = list(facts.notes)
    for p in facts.partitions:
        cps = {name: facts.checkpoints.get(name, {}).get((p.topic, p.partition)) for name in OFFSET_CHECKPOINTS}
        plan.partitions.append(planner(p, cps, truncate_at_damage=truncate_at_damage, mark_clean=mark_clean,
                                       trust_checkpoints=trust_checkpoints, move_aside=move_aside))
    checkpoint_writes = _checkpoint_writes(plan, facts)
    root_tmp = [RemoveFile(n, "temporary file of an interrupted checkpoint write (Kafka ignores it)", R_TMP)
                for n in facts.root_tmp]
    changed = bool(checkpoint_writes or root_tmp or any(p.actions for p in plan.partitions))
    if facts.marker_present and changed:
        plan.before.append(RemoveFile(".kafka_cleanshutdown", "Kafka deletes the clean-shutdown marker first "
                                      "thing on load, so that a crash during the repair counts as unclean",
                                      R_MARKER_REMOVE))
    plan.before += root_tmp + checkpoint_writes
    refused = [p.name for p in plan.partitions if p.refused or p.misread]
    if mark_clean and refused:
        plan.problems.append(problem("not_marked_clean", "--mark-clean: .kafka_cleanshutdown was not written, "
                                     f"because {', '.join(refused)} {'was' if len(refused) == 1 else 'were'} left "
                                     "unrepaired (the broker must not skip its own recovery)", ".kafka_cleanshutdown"))
    if mark_clean and not refused:
        _mark_clean(plan, facts, changed)
    elif facts.marker_present and changed:
        plan.after.append(WriteFile(".kafka_cleanshutdown", "the directory was cleanly shut down and every "
                                    "repair is now on disk: the marker removed at the start is put back",
                                    R_MARKER_RESTORE, data=facts.marker_bytes or b"", what="marker"))
    return plan


def hidden_damage(plan: RecoverPlan, forced: RecoverPlan) -> None:
    """After a clean shutdown Kafka does not recover a log (``LogLoader.recoverLog`` runs only without
    ``.kafka_cleanshutdown``), and neither does recover without ``--force``: damage in it stays, and the
    broker loads it as it is. ``forced`` is the plan of the same directory scanned as ``--force`` scans it;
    each partition where it cuts the log where ``plan`` does not gets a problem here saying where and what
    recovers it (issue 34 item 7: the report said "nothing to repair", exit 0, where verify failed on a CRC
    error)."""
    by_name = {p.name: p for p in forced.partitions}
    for p in plan.partitions:
        if p.salvage is not None:                     # recover --salvage rewrote what the cut would remove
            continue
        f = by_name.get(p.name)
        done = {(t["file"], t["position"]) for t in p.truncations}
        cuts = [t for t in (f.truncations if f is not None and not p.refused else ())
                if (t["file"], t["position"]) not in done]
        if not cuts:
            continue
        t, more = cuts[0], len(cuts) - 1
        p.problems.append(problem(
            "damage_skipped_after_clean_shutdown",
            f"damaged ({t['reason']}): recovering the log cuts {t['bytes']} bytes here"
            + (f", and {more} more cut{'s' if more > 1 else ''}" if more else "")
            + ". The clean-shutdown marker makes Kafka skip recovery (and recover without --force), so the broker "
              "would load the damage as it is: kafkalog recover --force recovers it", t["file"], t["position"]))


def _checkpoint_writes(plan: RecoverPlan, facts: LogDirFacts) -> list:
    """A rewrite of each of the log directory's offset checkpoints with an entry above its partition's new
    log end (lowered; the cleaner's reset to the log start); an unreadable checkpoint is left alone, a
    problem."""
    writes = []
    for name in OFFSET_CHECKPOINTS:
        if name in facts.checkpoint_problems:        # whether or not an entry of it needed lowering
            plan.problems.append(problem("checkpoint", facts.checkpoint_problems[name] +
                                         " (left alone: Kafka reads it as empty or takes the log dir offline)", name))
            continue
        changes = [(p, c) for p in plan.partitions for c in p.checkpoints if c["file"] == name]
        if not changes:
            continue
        values = dict(facts.checkpoints.get(name, {}))
        for p, c in changes:
            values[(p.topic, p.partition)] = c["new"]
        n = len(changes)
        what = "reset to the log start offset" if name == CLEANER_CHECKPOINT else "lowered to it"
        writes.append(_checkpoint_write(
            name, values, [(p.name, c["old"], c["new"]) for p, c in changes],
            f"{n} entr{'y' if n == 1 else 'ies'} above the new log end {what}",
            _CHECKPOINT_RULES[name]))
    return writes


def _mark_clean(plan: RecoverPlan, facts: LogDirFacts, changed: bool) -> None:
    """--mark-clean, as a broker's clean shutdown leaves a log directory: everything flushed, recovery
    points at the log end, then the marker. LogManager checkpoints the recovery points of the current and
    future logs of each log dir."""
    rp_name = "recovery-point-offset-checkpoint"
    values = dict(facts.checkpoints.get(rp_name, {}))
    for p in plan.partitions:
        for c in p.checkpoints:
            if c["file"] == rp_name:
                values[(p.topic, p.partition)] = c["new"]
    raised = []
    for p in plan.partitions:
        if p.kind in ("normal", "future") and p.owns_checkpoints and p.log_end is not None \
                and values.get((p.topic, p.partition)) != p.log_end:
            raised.append((p.name, values.get((p.topic, p.partition)), p.log_end))
            values[(p.topic, p.partition)] = p.log_end
    if not (changed or raised or not facts.marker_present):
        return
    for p in plan.partitions:
        plan.after.append(SyncPartition(p.name, "recovered data must be on disk before the marker and "
                                        "the recovery points say so", "--mark-clean"))
    if raised:
        if rp_name in facts.checkpoint_problems:
            plan.problems.append(problem("checkpoint", facts.checkpoint_problems[rp_name] + " (not rewritten)",
                                         rp_name))
        else:
            plan.after.append(_checkpoint_write(rp_name, values, raised, "--mark-clean: recovery points "
                                                "at the log end, as a clean shutdown leaves them",
                                                R_MARK_CLEAN_RP))
    if facts.marker_present:
        data, what = facts.marker_bytes or b"", "the marker's former content"
    else:
        data, what = MARKER_UNKNOWN_EPOCH, f"{MARKER_UNKNOWN_EPOCH.decode()}: broker epoch unknown"
    plan.after.append(WriteFile(".kafka_cleanshutdown", "--mark-clean: the broker will skip its own "
                                f"recovery of this log directory ({what}; a 3.7+ broker reports it to "
                                "the controller, for which -1 means no clean shutdown: eligible leader "
                                "replicas, KIP-966, do not count on this broker)", R_MARKER_WRITE,
                                data=data, what="marker"))


def _checkpoint_write(name: str, values: dict, changes: list, reason: str, rule: str) -> WriteFile:
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    return WriteFile(name, reason, rule, data=build_offset_checkpoint(values).encode(), what="checkpoint",
                     changes=tuple(changes),
                     detail=", ".join(f"{n}: {'absent' if o is None else o} -> {v}" for n, o, v in changes))
