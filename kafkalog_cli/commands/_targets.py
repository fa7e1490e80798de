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
