"""Carry out a retention plan, crash-safely, the way the broker does (kafka-on-disk.md §8, §4.10).

Order of operations, each durable before the next (``fileops``):

1. if every segment goes, create the new empty active segment at the log end first (Kafka rolls first);
2. rename every file of each deleted segment, and its producer snapshot, to ``<name>.deleted``
   (Kafka's asynchronous-deletion protocol: a broker, or ``kafkalog recover``, deletes ``.deleted`` files
   on load, so a crash here leaves a directory that loads as if the deletion had finished);
3. rewrite ``log-start-offset-checkpoint`` atomically (only partitions whose log start is above their
   first segment's base offset are listed, as Kafka writes it);
4. truncate ``leader-epoch-checkpoint`` from the start (entries at or below the new log start go, the
   last of them re-added at the new log start), atomically;
5. unlink the ``.deleted`` files (unless asked to keep them).

A crash between any two steps loses no record at or above the new log start: deleted segments are only
ever below it, and a re-run (or recover) finishes what is left.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.checkpoint import (build_leader_epoch_checkpoint, build_offset_checkpoint,
                                         parse_leader_epoch_checkpoint)

from .. import fileops
from ..engine.mapped import read_regular
from ..layout import segment_file_name
from .retain_plan import RetainPlan


@dataclass
class RetainOutcome:
    renamed: list = field(default_factory=list)
    removed: list = field(default_factory=list)
    created: list = field(default_factory=list)
    checkpoints: list = field(default_factory=list)     # (file, old, new)


def execute(partition_dir: Path, topic: str, partition: int, plan: RetainPlan, logdir: Path | None,
            keep_deleted: bool = False) -> RetainOutcome:
    out = RetainOutcome()
    doomed = plan.deleted
    if not doomed and plan.new_log_start == plan.old_log_start:
        return out
    if plan.roll_at is not None:
        for suffix in ("log", "index", "timeindex"):
            p = partition_dir / segment_file_name(plan.roll_at, suffix)
            if not p.exists():
                fileops.write_atomic(p, b"")
                out.created.append(str(p))
    deleted_files = []
    for d in doomed:
        for suffix in ("log", "index", "timeindex", "txnindex", "snapshot"):
            p = partition_dir / segment_file_name(d.base_offset, suffix)
            if p.exists():
                target = p.with_name(p.name + ".deleted")
                fileops.rename(p, target)
                out.renamed.append(str(p))
                deleted_files.append(target)
    remaining = sorted(int(p.name[:20]) for p in partition_dir.glob("*.log") if p.name[:20].isdigit())
    first_base = remaining[0] if remaining else plan.new_log_start
    if logdir is not None:
        _update_log_start_checkpoint(logdir, (topic, partition), plan.new_log_start, first_base, out)
    _truncate_leader_epochs(partition_dir / "leader-epoch-checkpoint", plan.new_log_start, out)
    if not keep_deleted:
        for p in deleted_files:
            fileops.unlink(p)
            out.removed.append(str(p))
    return out


def _update_log_start_checkpoint(logdir: Path, tp: tuple[str, int], new_start: int, first_base: int,
                                 out: RetainOutcome) -> None:
    from kafkalog_formats.checkpoint import parse_offset_checkpoint
    path = logdir / "log-start-offset-checkpoint"
    current = parse_offset_checkpoint(read_regular(path), str(path)) if path.exists() else {}
    old = current.get(tp)
    updated = dict(current)
    if new_start > first_base:
        updated[tp] = new_start
    else:
        updated.pop(tp, None)
    if updated != current:
        fileops.write_atomic(path, build_offset_checkpoint(updated).encode())
        out.checkpoints.append((str(path), old, updated.get(tp)))


def _truncate_leader_epochs(path: Path, new_start: int, out: RetainOutcome) -> None:
    """Kafka ``LeaderEpochFileCache.truncateFromStart``."""
    if not path.exists():
        return
    entries = parse_leader_epoch_checkpoint(read_regular(path), str(path))
    removed = [e for e in entries if e.start_offset <= new_start]
    if not removed or (len(removed) == 1 and removed[0].start_offset == new_start):
        return
    kept = [(removed[-1].epoch, new_start)] + [(e.epoch, e.start_offset) for e in entries if e.start_offset > new_start]
    fileops.write_atomic(path, build_leader_epoch_checkpoint(kept).encode())
    out.checkpoints.append((str(path), [tuple(e) for e in entries], kept))
