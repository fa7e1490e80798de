"""Partition directories named by a write command's PATH (a partition directory or a log directory)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import click


def partition_dirs(path: Path, wanted: set) -> tuple[list[Path], Path]:
    """(partition directories to work on, directory whose .lock to take)."""
    from ..engine.logdir import LogDir, dir_kind
    from ..layout import parse_partition_dir
    kind = dir_kind(path)
    if kind == "partition":
        return [path], path.resolve().parent
    if kind != "logdir":
        raise click.UsageError(f"{path} is neither a partition directory nor a log directory")
    dirs = []
    for p in LogDir.open(path).partition_dirs:
        n = parse_partition_dir(p.name)
        if n is None or n.state is not None:
            continue
        if not wanted or (n.topic, n.partition) in wanted:
            dirs.append(p)
    if wanted and len(dirs) != len(wanted):
        found = {(parse_partition_dir(p.name).topic, parse_partition_dir(p.name).partition) for p in dirs}
        missing = ", ".join(f"{t}-{p}" for t, p in sorted(wanted - found))
        raise click.UsageError(f"no such partition in {path}: {missing}")
    return dirs, path


class CannotRun(Exception):
    """The command must not touch the directory (lock held, unusable backup directory)."""


@dataclass
class Target:
    """One partition to work on, after what an interrupted run left in it was finished."""
    directory: Path
    state: object | None = None                  # PartitionState; None when it could not be read (see note)
    finished: list = field(default_factory=list)  # what was completed first (--dry-run: what would be)
    backups: list = field(default_factory=list)   # files moved into the backup directory meanwhile
    note: str | None = None                       # why there is no state


def backup_dir(backup: str | None, lock_root: Path) -> Path | None:
    """``--backup-dir`` checked against the log directory (device and inode, so aliases are caught)."""
    if backup is None:
        return None
    from .. import fileops
    why = fileops.check_backup_dir(backup, lock_root)
    if why:
        raise click.UsageError(f"--backup-dir: {why}")
    return Path(backup)


def locked_states(dirs: list[Path], lock_root: Path, dry_run: bool, backup: Path | None = None):
    """Hold the log directory's ``.lock`` while yielding a ``Target`` per partition (what retain and
    compact need). Files an interrupted run left (``.cleaned``, ``.swap``, ``.deleted``, temporary files) are
    first completed or rolled back exactly as ``kafkalog recover`` and Kafka's loader do (removed files go
    to ``backup``); with ``--dry-run`` they are listed, and a pending swap leaves the partition unplanned
    (its segments change once it is completed)."""
    import sys

    from .. import fileops
    from ..engine.lookup import LookupError_
    from ..engine.partition_state import partition_state
    from ..repair import interrupted
    try:
        lock = fileops.lock_dir(lock_root, shared=dry_run)
    except fileops.LockHeld:
        raise CannotRun(f"{lock_root}: the log directory is locked by another process (a running broker?); "
                        "stop it first") from None
    with lock:
        for d in dirs:
            t = Target(d)
            actions, swapping = interrupted.plan(d)
            t.finished = [interrupted.describe(a) for a in actions]
            if actions and dry_run and swapping:
                t.note = ("files of an interrupted operation are present: a real run first completes the "
                          "interrupted swap (as kafkalog recover does), then plans this partition")
                yield t
                continue
            if actions and not dry_run:
                t.backups = interrupted.finish(d, actions, backup)
            try:
                t.state = partition_state(d)
            except LookupError_ as e:
                if not t.finished:
                    sys.stderr.write(f"kafkalog: {d}: {e}\n")
                    continue
                t.note = str(e)
            yield t


def stopped_message(command: str, directory: Path | None, lock_root: Path, e: OSError, backup: Path | None) -> str:
    """What to tell a user whose run stopped on an I/O error (a full disk, most often): which file, which
    partition, what state it is in and what to run next."""
    what = e.strerror or str(e)
    where = f" ({e.filename})" if e.filename else ""
    part = f"{directory.name}: " if directory is not None else ""
    kept = f" Every file removed so far is in {backup}." if backup is not None else ""
    return (f"kafkalog: {part}{what}{where}.\nkafkalog: {command} stopped; the partition may hold files of the "
            f"interrupted operation, which lose nothing: fix the cause (free space), then run the same kafkalog "
            f"{command} again, which first completes or rolls them back as kafkalog recover {lock_root} does.{kept}\n")
