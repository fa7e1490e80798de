"""Run ``recover``: lock, scan, plan, and execute the plan through ``fileops`` in a crash-safe order.

Crash safety
============
Every primitive is durable and atomic on its own (``fileops``): a whole-file write is temp file +
fsync + rename + directory fsync; a truncation is ftruncate + fsync; a rename or unlink is followed by
a directory fsync; a backup copy is fsynced before the change it protects. So a kill (SIGKILL, power
loss) leaves the directory between two primitives. The plan's order (``recover_plan``) makes every such
state one that a second ``kafkalog recover`` — and a Kafka broker — completes to the same records:

1. **The clean-shutdown marker goes first** (as Kafka deletes it first thing on load, KAFKA-10471). After
   a kill the directory counts as unclean, so the re-run (and a broker) recover from the recovery point
   instead of trusting a half-repaired directory. The marker comes back only as the very last step.
2. **Checkpoints are lowered before any data changes.** The recovery point is lowered to the new log
   end before a segment is truncated or later segments are removed, so the segment holding the damage
   is always at or after the recovery point the re-run (or broker) starts from; if the recovery
   point were left above it and the later segments were already gone, nobody would recover it. Lowering
   the high watermark, log start and cleaner offsets early only states what the finished repair
   implies. (With ``--mark-clean`` the recovery points are *raised* to the log end only at the end,
   after every partition file has been fsynced.)
3. **Derived state before the data it derives from.** The producer snapshot at the new log end describes
   the records below it, which the repair does not touch, so it is written before the truncation; a
   re-run finds it and does not need the truncation to have happened. Snapshots above the new log end
   are removed after it, as Kafka's ``truncateAndReload`` would remove them.
4. **Later segments are removed before the damaged one is truncated, last segment first**, each by
   renaming its ``.log`` to ``.log.deleted`` first (Kafka's ``changeFileSuffixes``; pass 1 deletes such
   files on any re-run or broker start) and then its indexes. A kill in the middle leaves a prefix of
   the log whose last segment still holds the damage, which the re-run recovers again; a kill after
   the ``.log`` rename leaves index files without a ``.log``, which pass 3 deletes as orphans.
   Truncating first would be wrong: the truncated segment would then look valid and the later
   segments would survive the re-run, resurrecting records after the damage and leaving a gap.
5. **Bytes are saved before they are cut.** The tail of a truncated ``.log`` is copied to the backup
   directory and fsynced before the truncation; removed files are moved there (an atomic rename on the
   same filesystem); an overwritten file is hard-linked there (copied, holes kept, across file systems)
   before the new one is renamed over it.
   A backup that already exists with the same bytes (a re-run) is not written again; a different one is
   never overwritten (``name.1``, ``name.2``, …).
6. **Rebuilt indexes are new files renamed over the old ones** after the ``.log`` has its final length,
   so an index never describes bytes that are not there; a kill before the rename leaves the old index,
   which the re-run compares with its rebuild and replaces.
7. **Swap completion follows Kafka's own re-entrant algorithm** (pass 2 deletes what the swap replaces,
   then renames ``.swap`` files); a re-run or broker repeats whatever is left of it.
8. Leftover ``*.tmp`` files of an interrupted write are ignored by Kafka and removed by the re-run.
10. **A segment rewritten by ``--salvage``** goes through Kafka's own swap protocol (``LocalLog.replaceSegments``,
   as ``compact`` does): the kept bytes and markers, then the rebuilt indexes, are written beside as
   ``.cleaned`` files and fsynced, the old files are kept in the backup (hard links), the ``.cleaned`` files
   become ``.swap`` (the ``.log`` first), the old files ``.deleted``, the ``.swap`` files their final names.
   A kill before the first ``.swap`` leaves ``.cleaned`` files, which pass 1 deletes (the old segment is
   whole); after it, pass 2 completes the swap (whatever is in the swap's offset range goes, the ``.swap``
   files are renamed). Either way the segment is the old one or the new one, with its own indexes. Producer
   snapshots past the first rewritten segment go before any segment changes; the snapshot at the log end is
   written last.
9. **A cut asked for with ``--truncate-at-damage``** (a segment Kafka recovers in load pass 3 whose
   offsets go backwards, or whose cut would leave later segments behind a gap) is planned exactly like a
   cut of pass 4: checkpoints lowered first, later segments removed last first, then the segment cut. At
   every instant the segments left are a prefix of the log; a kill leaves the damaged segment as the last
   one, which a re-run with the option cuts again (without it, the partition is reported and left alone,
   as before the run). A partition recover refuses gets no action at all.

Idempotence: every action is planned only when the directory differs from its repaired form (indexes
are compared byte for byte with their rebuild, checkpoints only ever lowered to the log end), so a
second run on a recovered directory plans nothing and exits 0.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .. import fileops
from ..errors import CannotRun
from .logdir_scan import scan_logdir
from .recover_actions import (RecoverPlan, RemoveFile, RemoveSegment, RenameFile, SalvageSegment, SyncPartition,
                              TruncateLog, WriteFile)
from .recover_plan import hidden_damage, plan_logdir


@dataclass
class RecoverOptions:
    log_dir: str
    partitions: tuple = ()
    dry_run: bool = False
    backup_dir: str | None = None
    mark_clean: bool = False
    force: bool = False
    include_metadata: bool = False
    index_interval_bytes: int = 4096
    all_segments: bool = False
    truncate_at_damage: bool = False
    trust_checkpoints: bool = False
    jobs: int = 1                     # partitions scanned at once (worker processes)
    salvage: bool = False             # keep every batch that proves itself past damage (beyond Kafka)


@dataclass
class RecoverOutcome:
    plan: RecoverPlan
    executed: bool
    operations: int = 0                              # counted file operations (fileops steps)
    backups: list = field(default_factory=list)      # paths written into the backup directory
    completed: int = 0                               # actions done
    error: str | None = None                         # why execution stopped early (an I/O error)


class ExecutionStopped(CannotRun):
    """An action failed (I/O error); ``outcome`` says how far the run got. Re-running completes it."""

    def __init__(self, outcome: RecoverOutcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome


def recover(options: RecoverOptions, progress=None, on_action=None) -> RecoverOutcome:
    """Lock the log directory, scan it, plan, and (unless ``dry_run``) execute. Raises
    ``fileops.LockHeld`` when a broker holds the directory."""
    root = Path(options.log_dir)
    start_ops = fileops.operations()
    lock = fileops.lock_dir(root, shared=options.dry_run)
    try:
        # with the clean-shutdown marker the scan reads no segment: the progress is that of the scan as --force
        hidden = not options.force and not options.salvage and (root / ".kafka_cleanshutdown").is_file()
        facts = scan_logdir(root, selected=set(options.partitions) or None,
                            include_metadata=options.include_metadata, force=options.force,
                            index_interval_bytes=options.index_interval_bytes, progress=None if hidden else progress,
                            all_segments=options.all_segments, producer_state=options.mark_clean,
                            jobs=options.jobs, salvage=options.salvage)
        planned = dict(truncate_at_damage=options.truncate_at_damage, trust_checkpoints=options.trust_checkpoints,
                       move_aside=options.backup_dir is not None)
        from . import salvage_plan
        plan = plan_logdir(facts, mark_clean=options.mark_clean,
                           partition_planner=salvage_plan.plan_partition if options.salvage else None, **planned)
        if hidden and facts.marker_present:               # what the marker hides: scanned as --force would
            forced = scan_logdir(root, selected=set(options.partitions) or None,
                                 include_metadata=options.include_metadata, force=True,
                                 index_interval_bytes=options.index_interval_bytes, progress=progress,
                                 jobs=options.jobs)
            hidden_damage(plan, plan_logdir(forced, **planned))
        outcome = RecoverOutcome(plan, executed=not options.dry_run)
        if not options.dry_run:
            backup = Path(options.backup_dir) if options.backup_dir else None
            for partition, action in plan.actions():
                try:
                    outcome.backups += apply(root, action, backup)
                except OSError as e:
                    outcome.error = f"{action.describe()}: {e.strerror or e}" + (f" ({e.filename})" if
                                                                                  e.filename else "")
                    break
                outcome.completed += 1
                if on_action is not None:
                    on_action(partition, action)
    finally:
        lock.release()
    outcome.operations = fileops.operations() - start_ops
    if outcome.error is not None:
        raise ExecutionStopped(outcome)
    return outcome


def apply(root: Path, action, backup: Path | None) -> list[str]:
    """Execute one action; returns the backup files written."""
    saved: list[str] = []

    def keep(p):
        if p is not None:
            saved.append(str(p))

    src = root / action.path
    if isinstance(action, RemoveFile):
        if not src.exists():
            return saved
        if backup is not None:
            keep(fileops.backup_move(src, backup / action.path))
        else:
            fileops.unlink(src)
    elif isinstance(action, RenameFile):
        fileops.rename(src, root / action.target)
    elif isinstance(action, RemoveSegment):
        marked = []
        for f in action.files:               # the .log first: the segment leaves the log atomically
            p = root / f
            if p.exists():
                fileops.rename(p, p.with_name(p.name + ".deleted"))
                marked.append((f, p.with_name(p.name + ".deleted")))
        for f, p in marked:
            if backup is not None:
                keep(fileops.backup_move(p, backup / f))
            else:
                fileops.unlink(p)
    elif isinstance(action, TruncateLog):
        size = src.stat().st_size
        if size != action.old_size:
            raise OSError(f"{src} changed since it was scanned ({action.old_size} bytes, now {size}); "
                          "nothing was cut, run recover again")
        if backup is not None:
            keep(fileops.backup_copy(src, backup / f"{action.path}.truncated-at-{action.new_size}",
                                     start=action.new_size))
        fileops.truncate_file(src, action.new_size)
    elif isinstance(action, WriteFile):
        if backup is not None and src.exists():       # replaced by a rename: the old file lives on as a link
            keep(fileops.backup_keep(src, backup / action.path))
        mtime_ms = action.mtime_ns // 1_000_000 if action.mtime_ns is not None else None
        fileops.write_atomic(src, action.data, mtime_ms)
    elif isinstance(action, SalvageSegment):
        saved += _salvage(root, action, backup)
    elif isinstance(action, SyncPartition):
        for p in sorted(src.iterdir()):
            if p.is_file():
                fileops.fsync_file(p)
        fileops.fsync_dir(src)
    else:                                    # pragma: no cover - a new action type without an executor
        raise TypeError(f"no executor for {type(action).__name__}")
    return saved


def _salvage(root: Path, action: SalvageSegment, backup: Path | None) -> list[str]:
    """Kafka's swap protocol for one salvaged segment (see point 10 of the module docstring)."""
    saved: list[str] = []
    src = root / action.path
    size = src.stat().st_size
    if size != action.old_size:
        raise OSError(f"{src} changed since it was scanned ({action.old_size} bytes, now {size}); nothing was "
                      "rewritten, run recover again")
    d = src.parent
    base_name = src.name[:-len(".log")]
    mtime_ms = action.mtime_ns // 1_000_000 if action.mtime_ns is not None else None
    cleaned = d / (src.name + ".cleaned")
    out = fileops.NewFile(cleaned)
    written = []
    try:
        with open(src, "rb") as f:
            for part in action.parts:
                if part[0] == "insert":
                    out.write(part[1])
                    continue
                start, end = part[1], part[2]
                head = b""
                if part[0] == "patch":
                    head = bytearray(os.pread(f.fileno(), min(61, end - start), start))
                    for at, fmt, value in part[3]:
                        struct.pack_into(fmt, head, at, value)
                    out.write(bytes(head))
                pos = start + len(head)
                while pos < end:
                    chunk = os.pread(f.fileno(), min(1 << 20, end - pos), pos)
                    if not chunk:
                        raise OSError(f"{src} ended at byte {pos}, before byte {end}; nothing was rewritten")
                    out.write(chunk)
                    pos += len(chunk)
        if out.size != action.new_size:
            raise OSError(f"salvaging {src} wrote {out.size} bytes, not {action.new_size}; nothing was rewritten")
        out.close(mtime_ms)
        written.append("log")
        for suffix, data in action.indexes:
            if data is not None:
                fileops.write_atomic(d / f"{base_name}.{suffix}.cleaned", data, mtime_ms)
                written.append(suffix)
        if backup is not None:             # before the first rename: a kill anywhere later loses none of it
            for rel in action.files:
                kept = fileops.backup_keep(root / rel, backup / rel)
                if kept is not None:
                    saved.append(str(kept))
    except BaseException:
        if not out.closed:
            out.abandon()
        for suffix in written:
            fileops.discard_output(d / f"{base_name}.{suffix}.cleaned")
        raise
    for suffix in written:                   # .log first, then the indexes, as Kafka renames them
        fileops.rename(d / f"{base_name}.{suffix}.cleaned", d / f"{base_name}.{suffix}.swap")
    deleted = []
    for rel in action.files:
        p = root / rel
        if p.exists():
            target = p.with_name(p.name + ".deleted")
            fileops.rename(p, target)
            deleted.append(target)
    for suffix in written:
        fileops.rename(d / f"{base_name}.{suffix}.swap", d / f"{base_name}.{suffix}")
    for p in deleted:
        fileops.unlink(p)
    return saved
