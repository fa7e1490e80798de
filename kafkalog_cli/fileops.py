"""The only module that creates, writes, fsyncs, renames, truncates or unlinks files, and takes locks.

Every change is crash-safe: new content goes to a temporary file beside the target, is fsynced, renamed
over the target, and the directory is fsynced. Tests inject crashes here (``KAFKALOG_FAULT_AFTER=N``
kills the process at the Nth file operation).
"""
from __future__ import annotations

import os
from pathlib import Path

_ops = 0


def _step() -> None:
    """Count a file operation; die here if a test asked for a crash at this step."""
    global _ops
    _ops += 1
    limit = os.environ.get("KAFKALOG_FAULT_AFTER")
    if limit is not None and _ops > int(limit):
        os._exit(137)


def fsync_dir(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: str | os.PathLike) -> None:
    _step()
    Path(path).mkdir(parents=True, exist_ok=True)


def write_atomic(path: str | os.PathLike, data: bytes, mtime_ms: int | None = None) -> None:
    """Write ``data`` to ``path`` via ``path.tmp`` + fsync + rename + directory fsync."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    _step()
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if mtime_ms is not None:
        os.utime(tmp, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    _step()
    os.replace(tmp, path)
    fsync_dir(path.parent)
