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

import hashlib
from dataclasses import dataclass, field

from ..layout import OFFSET_CHECKPOINTS, classify_file, segment_file_name

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

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
#: What --mark-clean writes into a new .kafka_cleanshutdown: the JSON of Kafka 3.7+'s
#: CleanShutdownFileHandler (version 0) with broker epoch -1. The broker writes its current broker epoch,
#: which the controller compares with its registration to learn that the shutdown was clean (KIP-966);
#: offline the epoch of a broker that crashed is not known, and claiming one would let the controller
#: count on data a crash may have lost. Brokers before 3.7 only test that the file exists.
MARKER_UNKNOWN_EPOCH = b'{"version":0,"brokerEpoch":-1}'

# The Kafka class/method each action follows. Scala kafka.log.Log (2.x), kafka.log.LogLoader (3.0-3.9) and
# org.apache.kafka.storage.internals.log.LogLoader (trunk) implement the same load passes.
R_PASS1 = "LogLoader.removeTempFilesAndCollectSwapFiles"
R_PASS2 = "LogLoader.load: interrupted swap completed (segments the swap replaces deleted, .swap renamed)"
R_ORPHAN = "LogLoader.loadSegmentFiles: orphaned index file"
R_PASS3 = "LogLoader.loadSegmentFiles -> LogSegment.recover"
R_PASS3_TIMEINDEX = "LogLoader.loadSegmentFiles (Kafka creates the .timeindex empty)"
R_RECOVER = "LogLoader.recoverLog -> LogSegment.recover"
R_RECOVERLOG_DELETE = "LogLoader.recoverLog"
# Kafka 2.3+ (KAFKA-8306): Log.recoverLog / LogLoader.recoverLog, trunk deleteSegmentsIfLogStartGreaterThanLogEnd
R_START_BEYOND_END = "LogLoader.recoverLog: log end below the checkpointed log start (2.3+, KAFKA-8306)"
R_NAMES = "LogLoader / LogFileUtils.offsetFromFileName (Long.parseLong of the name's offset)"
R_TMP = "kafkalog: Kafka writes checkpoints and snapshots via .tmp + rename and ignores a leftover one"
R_SNAP_ABOVE = "ProducerStateManager.truncateAndReload"
R_SNAP_CORRUPT = "ProducerStateManager.loadFromSnapshot deletes a corrupt snapshot"
R_SNAP_WRITE = "UnifiedLog.rebuildProducerState -> ProducerStateManager.takeSnapshot"
R_EPOCHS = "LeaderEpochFileCache.assign (LogSegment.recover), truncateFromEnd (LogLoader.load)"
R_EPOCHS_REBUILT = "LeaderEpochFileCache.assign as LogSegment.recover applies it"
R_KRAFT = "KafkaMetadataLog.recoverSnapshots"
R_MARKER_REMOVE = "LogManager.loadLogs (Kafka 2.8+, KAFKA-10471)"
R_MARKER_WRITE = "CleanShutdownFileHandler / LogManager.shutdown"
R_MARKER_RESTORE = "LogManager.shutdown writes it when the directory had it at start-up"
R_MARK_CLEAN_RP = "LogManager.shutdown -> checkpointRecoveryOffsetsInDir (OffsetCheckpointFile format)"
_CHECKPOINT_RULES = {
    "recovery-point-offset-checkpoint": "LogLoader.recoverLog: recovery point = min(checkpoint, log end)",
    "replication-offset-checkpoint": "UnifiedLog.updateHighWatermark: the high watermark is at most the log end",
    "log-start-offset-checkpoint": "kafkalog: lowered to the log end (LogLoader.recoverLog would delete every "
                                   "segment)",
    CLEANER_CHECKPOINT: "LogCleanerManager.cleanableOffsets: above the log end, reset to the log start offset "
                        "(Kafka 2.4+, KAFKA-8724)",
}


# --- actions -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Action:
    """One change. ``path`` is relative to the log directory."""
    path: str
    reason: str
    rule: str

    op = "action"

    def describe(self) -> str:
        return f"{self.op} {self.path}"


@dataclass(frozen=True)
class RemoveFile(Action):
    """Delete a file (moved into the backup directory when there is one)."""
    op = "remove"

    def describe(self) -> str:
        return f"remove {self.path}"


@dataclass(frozen=True)
class RenameFile(Action):
    """Rename ``path`` to ``target`` (completing an interrupted swap)."""
    target: str = ""
    op = "rename"

    def describe(self) -> str:
        return f"rename {self.path} -> {self.target}"


@dataclass(frozen=True)
class RemoveSegment(Action):
    """Delete a whole segment: each file renamed to ``.deleted`` (the ``.log`` first), then removed."""
    files: tuple = ()
    base_offset: int = 0
    size: int = 0
    op = "remove-segment"

    def describe(self) -> str:
        return f"remove segment {self.path} ({', '.join(f.rsplit('/', 1)[-1] for f in self.files)})"


@dataclass(frozen=True)
class TruncateLog(Action):
    """Cut a ``.log`` to ``new_size`` bytes; the bytes cut are saved to the backup first."""
    new_size: int = 0
    old_size: int = 0
    kind: str = ""
    detail: str = ""
    offset: int | None = None
    op = "truncate"

    def describe(self) -> str:
        return (f"truncate {self.path} at position {self.new_size} ({self.old_size - self.new_size} bytes cut: "
                f"{self.detail})")


@dataclass(frozen=True)
class WriteFile(Action):
    """Write a whole file atomically (temp file, fsync, rename, directory fsync); the old one is backed up."""
    data: bytes = field(default=b"", repr=False)
    what: str = ""            # index, timeindex, txnindex, snapshot, leader-epoch-checkpoint, checkpoint, marker
    old_size: int | None = None
    detail: str = ""
    changes: tuple = ()       # checkpoints: ((name, old, new), ...)
    mtime_ns: int | None = None
    op = "write"

    def describe(self) -> str:
        tail = f" ({self.detail})" if self.detail else ""
        return f"write {self.path}{tail}"


@dataclass(frozen=True)
class SyncPartition(Action):
    """fsync every file of a partition directory (before the clean-shutdown marker promises durability)."""
    op = "fsync"

    def describe(self) -> str:
        return f"fsync every file in {self.path}/"


# --- the plan --------------------------------------------------------------------------------------

@dataclass
class PartitionPlan:
    name: str
    kind: str
    topic: str | None = None
    partition: int | None = None
    recovery: str = ""
    segments: int = 0
    segments_scanned: int = 0
    bytes_validated: int = 0
    log_end_before: int | None = None
    log_end: int | None = None
    truncations: list = field(default_factory=list)   # dicts: file, position, bytes, kind, reason, offset
    removed: list = field(default_factory=list)       # paths
    rebuilt: list = field(default_factory=list)       # dicts: file, old_size, new_size
    checkpoints: list = field(default_factory=list)   # dicts: file, old, new
    actions: list = field(default_factory=list)
    problems: list = field(default_factory=list)      # dicts: kind, message, file, position
    notes: list = field(default_factory=list)
    refused: bool = False                             # left alone: Kafka's loader would fail or leave a gap
    misread: bool = False                             # holds a file name Kafka's loader misreads, left in place
    owns_checkpoints: bool = False
    log_start: int | None = None                      # after the repair (when the checkpoint entries are its own)


@dataclass
class RecoverPlan:
    log_dir: str
    before: list = field(default_factory=list)        # log-dir actions before the partitions
    partitions: list = field(default_factory=list)
    after: list = field(default_factory=list)
    skipped: list = field(default_factory=list)       # (directory, reason)
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def actions(self) -> list[tuple[str | None, Action]]:
        out = [(None, a) for a in self.before]
        for p in self.partitions:
            out += [(p.name, a) for a in p.actions]
        out += [(None, a) for a in self.after]
        return out

    @property
    def has_changes(self) -> bool:
        return bool(self.before or self.after or any(p.actions for p in self.partitions))

    @property
    def has_problems(self) -> bool:
        return bool(self.problems or any(p.problems for p in self.partitions))


def _entries(size: int, entry: int) -> str:
    n = size // entry
    return f"{n} entr{'y' if n == 1 else 'ies'}, {size} bytes"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# --- passes 1-2 (LogLoader.removeTempFilesAndCollectSwapFiles + the swap completion) -----------------

def _numeric_prefix(name: str) -> int | None:
    """Kafka's ``offsetFromFile``: the text before the first '.' as a long, None when not a number."""
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def plan_leftovers(names: list[str], swap_extents: dict[int, int], prefix: str = "") \
        -> tuple[list[Action], dict[str, str]]:
    """Kafka's passes 1 and 2 over the regular files of a partition directory (``LogLoader.load``).

    ``swap_extents`` maps the base offset of each ``<base>.log.swap`` to the offset after its last batch.
    Returns the actions and the *virtual* directory afterwards: final name → the current name holding
    that content (a ``.swap`` name for a file the swap will rename).
    """
    actions: list[Action] = []
    remaining = set(names)
    cleaned, swaps = [], []
    rule1 = R_PASS1
    for name in sorted(names):
        if name.endswith(".deleted") and not name.endswith(".checkpoint.deleted"):
            actions.append(RemoveFile(prefix + name, "file scheduled for deletion (*.deleted)", rule1))
            remaining.discard(name)
        elif name.endswith(".cleaned"):
            cleaned.append(name)
        elif name.endswith(".swap"):
            swaps.append(name)
    offsets = [o for o in (_numeric_prefix(n) for n in cleaned) if o is not None]
    min_cleaned = min(offsets) if offsets else None
    valid_swaps = []
    for name in swaps:
        off = _numeric_prefix(name)
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            actions.append(RemoveFile(prefix + name, f"swap file at or above the smallest .cleaned offset "
                                      f"{min_cleaned}: part of an incomplete segment split (KAFKA-6264)", rule1))
            remaining.discard(name)
        else:
            valid_swaps.append(name)
    for name in cleaned:
        actions.append(RemoveFile(prefix + name, "cleaner output that was never swapped in (*.cleaned)", rule1))
        remaining.discard(name)
    rule2 = R_PASS2
    log_swaps = [n for n in valid_swaps if n.endswith(".log.swap")]
    if log_swaps:
        lo = min(_numeric_prefix(n) for n in log_swaps)
        hi = max(swap_extents.get(_numeric_prefix(n), _numeric_prefix(n)) for n in log_swaps)
        for name in sorted(remaining):
            if name.endswith(".swap"):
                continue
            off = _numeric_prefix(name)
            if off is not None and lo <= off < hi:
                actions.append(RemoveFile(prefix + name, f"replaced by the swap segment(s) covering offsets "
                                          f"[{lo}, {hi})", rule2))
                remaining.discard(name)
    virtual = {n: n for n in remaining if not n.endswith(".swap")}
    for name in sorted(valid_swaps):
        final = name[:-len(".swap")]
        if final in virtual:      # rename replaces it: back it up explicitly first
            actions.append(RemoveFile(prefix + final, f"overwritten by {name}", rule2))
        actions.append(RenameFile(prefix + name, "complete the interrupted swap", rule2, target=prefix + final))
        virtual[final] = name
    return actions, virtual


# --- one partition ---------------------------------------------------------------------------------

FULL = ("recovery", "missing_index", "txnindex")
_WHY = {
    "recovery": "recovered (at or after the recovery point)",
    "missing_index": "its .index is missing: Kafka recovers such a segment at every start, even after a clean "
                     "shutdown",
    "txnindex": "its .txnindex fails Kafka's sanity check: Kafka recovers such a segment at every start",
    "missing_timeindex": "its .timeindex is missing: rebuilt from the segment (Kafka would create it empty)",
}
_WHY_TXN_SIZE = ("its .txnindex has more entries than the segment has batches, so entries no ABORT marker backs "
                 "(not read; beyond Kafka, whose sanity check reads every entry)")


def _why(s) -> str:
    return _WHY_TXN_SIZE if s.why == "txnindex" and s.txn_oversized else _WHY[s.why]


def plan_partition(f, checkpoints: dict, *, truncate_at_damage: bool = False, mark_clean: bool = False,
                   trust_checkpoints: bool = False, move_aside: bool = False) -> PartitionPlan:
    """Actions for one partition from its ``segment_recovery.PartitionFacts``.

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
    if refusal is not None and not (refusal["overridable"] and truncate_at_damage):
        plan.refused = True
        plan.problems.append({"kind": refusal["kind"], "message": refusal["message"], "file": d + refusal["file"],
                              "position": refusal["position"]})
        return plan
    loaded = f.kind != "delete"       # a -delete directory gets passes 1-3 only (LogLoader.load)
    aside: list[Action] = []
    for name, pr in f.misread:
        if move_aside:
            aside.append(RemoveFile(d + name, f"moved aside into the backup: {pr.message}", R_NAMES))
        else:
            plan.misread = True
            plan.problems.append({"kind": pr.kind, "message": f"{pr.message} (left in place: give --backup-dir DIR to "
                                  "move it aside)", "file": d + name, "position": None})
    leftovers, virtual = plan_leftovers(f.names, f.swap_extents, d)
    leftovers = aside + leftovers
    swap_done = any(isinstance(a, RenameFile) for a in leftovers)

    # pass 3: orphan indexes, temporary files
    pass3: list[Action] = []
    seg_bases = {classify_file(n).offset for n in virtual if classify_file(n).kind == "log"
                 and classify_file(n).state is None}
    for name in sorted(virtual):
        fn = classify_file(name)
        if fn.kind in ("index", "timeindex", "txnindex") and fn.state is None and fn.offset not in seg_bases:
            pass3.append(RemoveFile(d + name, f"orphaned index file: no {segment_file_name(fn.offset, 'log')}",
                                    R_ORPHAN))
        elif name.endswith(".tmp"):
            pass3.append(RemoveFile(d + name, "temporary file of an interrupted write (Kafka ignores it)", R_TMP))
    for sub in f.subdirs:
        plan.problems.append({"kind": "unknown_directory", "message": f"unexpected directory {sub} (left alone)",
                              "file": d + sub, "position": None})
    for kind, message, file, position in f.problems:
        plan.problems.append({"kind": kind, "message": message, "file": d + file, "position": position})
    if f.epochs_problem and f.epochs_rebuilt is None and loaded:
        plan.problems.append({"kind": "leader_epoch_checkpoint", "message": f.epochs_problem + " (left alone)",
                              "file": d + "leader-epoch-checkpoint", "position": None})

    segs = f.segments
    if f.problems and any(p[0] == "offset_overflow" for p in f.problems):
        plan.notes.append("segments not repaired: an offset overflow needs Kafka's segment split")
        plan.actions = leftovers + pass3
        return plan

    # which segments stay, the new log end
    kept, removed = [], []
    for s in segs:
        (removed if f.stopped_at is not None and s.base > f.stopped_at else kept).append(s)
    if kept:
        last = kept[-1]
        leo = last.next_offset if last.next_offset is not None else last.base
    elif loaded:
        # recoverLog: no segment at all -> an empty log at the checkpointed log start offset
        leo = f.log_start or 0
        plan.notes.append(f"no segment file: the broker creates an empty segment at the log start offset {leo}")
    else:
        leo = 0
        plan.notes.append("no segment file: the broker creates an empty segment at offset 0 (-delete directory)")
    # Kafka 2.3+ (KAFKA-8306; trunk LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd): when the log end is
    # below the checkpointed log start offset, every segment is deleted (their records are all below the log
    # start, i.e. already deleted), the leader-epoch cache emptied, the producer state restarted at the log
    # start, and an empty segment created there. Not for the KRaft metadata log (no log-start checkpoint).
    ls_cp = checkpoints.get("log-start-offset-checkpoint") if f.own_checkpoints else None
    start_beyond_end = (loaded and f.kind != "metadata" and kept and ls_cp is not None and leo < ls_cp)
    if start_beyond_end and not trust_checkpoints:
        # Offline, a log start beyond the log end cannot be told from a damaged checkpoint (a broker writes
        # one only for a follower far behind its leader): nothing of the partition changes unless asked.
        plan.refused = True
        plan.problems.append({"kind": "log_start_beyond_log_end", "message": (
            f"log-start-offset-checkpoint says the log starts at {ls_cp}, beyond the log end {leo}: a broker "
            f"deletes every record of the partition when it loads it (KAFKA-8306). Offline this cannot be told "
            f"from a damaged checkpoint, so the partition was left unchanged: if the entry is wrong, correct it "
            f"(at most {leo}); if the records are really to go, run recover --trust-checkpoints --backup-dir "
            "DIR"), "file": "log-start-offset-checkpoint", "position": None})
        return plan
    if start_beyond_end:
        plan.notes.append(f"the log end {leo} is below the log start offset {ls_cp} in "
                          "log-start-offset-checkpoint (segment files deleted from the file system?): the broker "
                          "deletes every segment and starts an empty log at the log start offset")
        removed, kept, leo = kept + removed, [], ls_cp
    plan.log_end, plan.log_end_before = leo, f.log_end_before
    plan.segments_scanned = sum(1 for s in segs if s.why in FULL and s.result is not None)
    plan.bytes_validated = f.bytes_scanned
    cut_asked = refusal is not None      # --truncate-at-damage allowed the cut Kafka's loader refuses

    seg_actions: list[Action] = []
    for s in kept:
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
            seg_actions.append(TruncateLog(log_path, f"{why}; {_why(s)}", rule, new_size=res.valid_bytes,
                                           old_size=s.log.size, kind=t.kind, detail=t.reason, offset=t.offset))
            plan.truncations.append({"file": log_path, "position": res.valid_bytes, "bytes": s.log.size -
                                     res.valid_bytes, "kind": t.kind, "reason": t.reason, "offset": t.offset,
                                     "log_end": res.next_offset})
        wanted = []
        if s.why in FULL:
            wanted = [("index", res.index), ("timeindex", res.timeindex), ("txnindex", res.txnindex)]
        elif s.why == "missing_timeindex":
            wanted = [("timeindex", res.timeindex)]
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
            seg_actions.append(WriteFile(path, reason, rule, data=data, what=suffix,
                                         old_size=existing.size if existing else None,
                                         detail=detail, mtime_ns=s.mtime_ns))
            plan.rebuilt.append({"file": path, "old_size": existing.size if existing else None,
                                 "new_size": len(data)})
    removals: list[Action] = []
    for s in reversed(removed):
        files = [d + segment_file_name(s.base, "log")]
        files += [d + segment_file_name(s.base, sfx) for sfx in ("index", "timeindex", "txnindex") if sfx in s.indexes]
        if start_beyond_end:
            why = (f"every record is below the log start offset {leo} (log-start-offset-checkpoint) and the log "
                   "ends before it: the broker deletes every segment")
            rule = R_START_BEYOND_END
        else:
            why = (f"after the truncated segment {segment_file_name(f.stopped_at, 'log')}: every later segment of "
                   "the partition is deleted")
            if cut_asked:
                why += " (--truncate-at-damage; the log keeps no gap)"
            rule = R_RECOVERLOG_DELETE
        removals.append(RemoveSegment(files[0], why, rule, files=tuple(files), base_offset=s.base, size=s.log.size))
        plan.removed += files
    if start_beyond_end:
        seg_actions = []              # nothing of the deleted segments is rebuilt
        for suffix in ("log", "index", "timeindex"):
            removals.append(WriteFile(d + segment_file_name(leo, suffix), f"the empty segment the broker creates at "
                                      f"the log start offset {leo}", R_START_BEYOND_END, data=b"", what=suffix,
                                      detail="empty"))

    # producer snapshots
    snap_removals: list[Action] = []
    valid_at_leo = False
    for snap in (f.snapshots if loaded else ()):
        if start_beyond_end:
            snap_removals.append(RemoveFile(d + snap.name, f"the producer state restarts at the log start offset "
                                            f"{leo} (ProducerStateManager.truncateFullyAndStartAt)",
                                            R_START_BEYOND_END))
        elif snap.offset > leo:
            snap_removals.append(RemoveFile(d + snap.name, f"producer snapshot above the log end offset {leo}",
                                            R_SNAP_ABOVE))
        elif snap.problem:
            snap_removals.append(RemoveFile(d + snap.name, f"unreadable producer snapshot: {snap.problem}",
                                            R_SNAP_CORRUPT))
        elif snap.offset == leo:
            valid_at_leo = True
    log_changed = bool(removals or snap_removals or swap_done
                       or any(isinstance(a, TruncateLog) for a in seg_actions))
    snap_write: list[Action] = []
    # With a clean-shutdown marker and no snapshot file the broker does not replay the log: it starts the
    # producer state empty (UnifiedLog.rebuildProducerState, the upgrade shortcut, 2.x-4.x); a broker's own
    # clean shutdown always leaves one at the log end (UnifiedLog.close -> ProducerStateManager.takeSnapshot).
    needs_snapshot = log_changed or (mark_clean and f.kind in ("normal", "future"))
    if loaded and needs_snapshot and not valid_at_leo and kept and not start_beyond_end:
        if f.state_end == leo:
            from kafkalog_formats.producer_snapshot import build_producer_snapshot
            data = build_producer_snapshot(f.state_entries or [])
            src = (f"replayed from snapshot {f.replay_from}" if f.replay_from is not None
                   else "replayed from the start of the log")
            snap_write.append(WriteFile(d + segment_file_name(leo, "snapshot"),
                                        f"producer state at the new log end offset {leo} ({src}, "
                                        f"{len(f.state_entries or [])} producers)",
                                        R_SNAP_WRITE, data=data, what="snapshot"))
        elif f.state_end is None:
            plan.notes.append(f"no producer snapshot written at the log end {leo}: the partition has no snapshot "
                              "file after a clean shutdown, so the broker starts its producer state there")
        else:
            plan.notes.append(f"no producer snapshot written: the replayed state ends at {f.state_end}, not at "
                              f"the log end {leo} (the broker rebuilds it)")

    end_moved = bool(removals or any(isinstance(a, TruncateLog) for a in seg_actions))
    # leader-epoch-checkpoint (LogLoader.load: truncateFromEnd after recovery)
    epoch_actions: list[Action] = []
    if start_beyond_end and (f.epochs_file or f.epochs_problem):
        from kafkalog_formats.checkpoint import build_leader_epoch_checkpoint
        epoch_actions.append(WriteFile(d + "leader-epoch-checkpoint", "every segment is deleted: the broker empties "
                                       "the leader-epoch cache (LeaderEpochFileCache.clearAndFlush)",
                                       R_START_BEYOND_END, data=build_leader_epoch_checkpoint([]).encode(),
                                       what="leader-epoch-checkpoint", detail="no epochs"))
        plan.checkpoints.append({"file": d + "leader-epoch-checkpoint", "partition": f.dir_name,
                                 "old": [list(e) for e in (f.epochs_file or [])], "new": []})
    elif loaded and f.epochs_file is not None and f.epochs_problem is None:
        from kafkalog_formats.checkpoint import build_leader_epoch_checkpoint
        from .segment_recovery import EpochCache
        cache = EpochCache(f.epochs_after if f.epochs_after is not None else f.epochs_file)
        # Kafka drops entries starting at or after the log end on every load (truncateFromEnd). An entry
        # starting exactly at an unchanged log end is what a leader writes at election before its first
        # append; it is kept unless this repair moves the log end (then Kafka's rule applies as is).
        new = cache.truncated_from_end(leo if end_moved else leo + 1)
        # then LogLoader.load: truncateFromStart(the log-start checkpoint's value), "the earliest leader
        # epoch may not be flushed during a hard failure" (3.0-4.x; Log.scala 2.x likewise)
        from .segment_recovery import truncated_from_start
        if f.own_checkpoints and ls_cp is not None:
            new = truncated_from_start(new, ls_cp)
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
            epoch_actions.append(WriteFile(d + "leader-epoch-checkpoint", reason, R_EPOCHS,
                                           data=build_leader_epoch_checkpoint(new).encode(),
                                           what="leader-epoch-checkpoint", detail="; ".join(parts)))
            plan.checkpoints.append({"file": d + "leader-epoch-checkpoint", "partition": f.dir_name,
                                     "old": [list(e) for e in old], "new": [list(e) for e in new]})

    if loaded and f.epochs_problem and f.epochs_rebuilt is not None and not start_beyond_end:
        from kafkalog_formats.checkpoint import build_leader_epoch_checkpoint
        new = [e for e in f.epochs_rebuilt if e[1] < leo]
        epoch_actions.append(WriteFile(
            d + "leader-epoch-checkpoint", f"unreadable ({f.epochs_problem}): rebuilt from the partition leader "
            "epochs of the batches (beyond Kafka, whose broker refuses to start on it)", R_EPOCHS_REBUILT,
            data=build_leader_epoch_checkpoint(new).encode(), what="leader-epoch-checkpoint",
            detail=", ".join(f"epoch {e} from {s}" for e, s in new) or "no epochs"))
        plan.checkpoints.append({"file": d + "leader-epoch-checkpoint", "partition": f.dir_name,
                                 "old": None, "new": [list(e) for e in new]})

    # KRaft snapshots
    kraft: list[Action] = []
    if f.kind == "metadata":
        log_start = kept[0].base if kept else leo
        retained = []
        for name, end, _epoch, state in sorted(f.kraft_snapshots):
            if state in ("part", "deleted"):
                kraft.append(RemoveFile(d + name, f"{'partial' if state == 'part' else 'deleted'} KRaft snapshot",
                                        R_KRAFT))
            elif end < log_start:
                kraft.append(RemoveFile(d + name, f"KRaft snapshot ending below the log start offset {log_start}",
                                        R_KRAFT))
            else:
                retained.append(end)
        if log_start > 0 and not any(e >= log_start for e in retained):
            plan.problems.append({"kind": "kraft_snapshot_missing", "message": "Inconsistent snapshot state: there "
                                  "must be a snapshot at an offset larger then the current log start offset "
                                  f"{log_start} (the Raft layer refuses to start; no snapshot file was removed)",
                                  "file": f.dir_name, "position": None})
            kraft = []                # KafkaMetadataLog.recoverSnapshots throws before deleting any

    plan.actions = snap_write + leftovers + pass3 + epoch_actions + snap_removals + removals + seg_actions + kraft
    plan.removed = [a.path for a in leftovers + pass3 + snap_removals + kraft if isinstance(a, RemoveFile)] \
        + plan.removed

    # log-directory checkpoints: lowered to the log end (LogLoader.recoverLog: recovery point; Partition /
    # UnifiedLog.updateHighWatermark: high watermark), the cleaner's to the log start offset
    # (LogCleanerManager.cleanableOffsets, 2.4+). The log start offset itself is never above the log end here:
    # when it was, every segment went and the log end is the log start (above).
    if f.own_checkpoints:
        log_start = max(min(ls_cp, leo) if ls_cp is not None else 0, kept[0].base if kept else leo)
        plan.log_start = log_start
        for name in OFFSET_CHECKPOINTS:
            old = checkpoints.get(name)
            if old is not None and old > leo:
                new = log_start if name == CLEANER_CHECKPOINT else leo
                plan.checkpoints.append({"file": name, "partition": f.dir_name, "old": old, "new": new})
    return plan


# --- the log directory -----------------------------------------------------------------------------

def plan_logdir(facts, *, mark_clean: bool = False, truncate_at_damage: bool = False,
                trust_checkpoints: bool = False, move_aside: bool = False) -> RecoverPlan:
    """The whole plan from ``segment_recovery.LogDirFacts``."""
    plan = RecoverPlan(facts.path)
    plan.skipped = list(facts.skipped)
    plan.problems = list(facts.problems)
    plan.notes = list(facts.notes)
    for p in facts.partitions:
        cps = {name: facts.checkpoints.get(name, {}).get((p.topic, p.partition)) for name in OFFSET_CHECKPOINTS}
        plan.partitions.append(plan_partition(p, cps, truncate_at_damage=truncate_at_damage, mark_clean=mark_clean,
                                              trust_checkpoints=trust_checkpoints, move_aside=move_aside))

    checkpoint_writes = []
    for name in OFFSET_CHECKPOINTS:
        if name in facts.checkpoint_problems:        # whether or not an entry of it needed lowering
            plan.problems.append({"kind": "checkpoint", "message": facts.checkpoint_problems[name] +
                                  " (left alone: Kafka reads it as empty or takes the log dir offline)",
                                  "file": name, "position": None})
            continue
        changes = [(p, c) for p in plan.partitions for c in p.checkpoints if c["file"] == name]
        if not changes:
            continue
        values = dict(facts.checkpoints.get(name, {}))
        for p, c in changes:
            values[(p.topic, p.partition)] = c["new"]
        n = len(changes)
        what = "reset to the log start offset" if name == CLEANER_CHECKPOINT else "lowered to it"
        checkpoint_writes.append(_checkpoint_write(
            name, values, [(p.name, c["old"], c["new"]) for p, c in changes],
            f"{n} entr{'y' if n == 1 else 'ies'} above the new log end {what}",
            _CHECKPOINT_RULES[name]))

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
        plan.problems.append({"kind": "not_marked_clean", "message": "--mark-clean: .kafka_cleanshutdown was not "
                              f"written, because {', '.join(refused)} {'was' if len(refused) == 1 else 'were'} left "
                              "unrepaired (the broker must not skip its own recovery)",
                              "file": ".kafka_cleanshutdown", "position": None})
    if mark_clean and not refused:
        # a broker's clean shutdown: everything flushed, recovery points at the log end, then the marker.
        # LogManager checkpoints the recovery points of the current and future logs of each log dir.
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
        if changed or raised or not facts.marker_present:
            for p in plan.partitions:
                plan.after.append(SyncPartition(p.name, "recovered data must be on disk before the marker and "
                                                "the recovery points say so", "--mark-clean"))
            if raised:
                if rp_name in facts.checkpoint_problems:
                    plan.problems.append({"kind": "checkpoint", "message": facts.checkpoint_problems[rp_name] +
                                          " (not rewritten)", "file": rp_name, "position": None})
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
    elif facts.marker_present and changed:
        plan.after.append(WriteFile(".kafka_cleanshutdown", "restore the marker removed at the start: the "
                                    "directory was cleanly shut down and every repair is now on disk",
                                    R_MARKER_RESTORE, data=facts.marker_bytes or b"", what="marker"))
    return plan


def _checkpoint_write(name: str, values: dict, changes: list, reason: str, rule: str) -> WriteFile:
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    return WriteFile(name, reason, rule, data=build_offset_checkpoint(values).encode(), what="checkpoint",
                     changes=tuple(changes),
                     detail=", ".join(f"{n}: {'absent' if o is None else o} -> {v}" for n, o, v in changes))
