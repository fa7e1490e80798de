"""Small real filesystems for tests: a tmpfs of a given size (a full disk for real) and bind mounts (one
filesystem seen through two mounts: rename and link fail with EXDEV between them). Tests using them are
skipped where ``mount`` is not allowed (not root, no CAP_SYS_ADMIN)."""
from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    r = subprocess.run(["mount", *args], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount here ({r.stderr.strip() or r.returncode})")


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@contextlib.contextmanager
def bind(src: Path, alias: Path):
    alias.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(src), str(alias))
    try:
        yield alias
    finally:
        subprocess.run(["umount", "-l", str(alias)], check=False)


def fill(directory: Path) -> Path:
    """Write a file until the filesystem is full; returns it (delete it to free the space)."""
    p = directory / "filler"
    with open(p, "wb", buffering=0) as f:
        try:
            while f.write(b"\0" * 4096):
                pass
        except OSError:
            pass
    return p
