"""Partition directories named by a write command's PATH (a partition directory or a log directory)."""
from __future__ import annotations

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
    """The command must not touch the directory (lock held, leftovers of an interrupted operation)."""


def locked_states(dirs: list[Path], lock_root: Path, dry_run: bool):
    """Hold the log directory's ``.lock`` while yielding each partition's state (what retain and compact
    need); a partition left mid-operation stops the run, since only ``recover`` may finish it."""
    import sys

    from .. import fileops
    from ..engine.lookup import LookupError_
    from ..engine.partition_state import partition_state
    try:
        lock = fileops.lock_dir(lock_root, shared=dry_run)
    except fileops.LockHeld:
        raise CannotRun(f"{lock_root}: the log directory is locked by another process (a running broker?); "
                        "stop it first") from None
    with lock:
        for d in dirs:
            try:
                state = partition_state(d)
            except LookupError_ as e:
                sys.stderr.write(f"kafkalog: {d}: {e}\n")
                continue
            if state.leftovers:
                names = ", ".join(Path(f).name for f in state.leftovers)
                raise CannotRun(f"{d}: files of an interrupted operation are present ({names}): run kafkalog "
                                "recover first")
            yield state
