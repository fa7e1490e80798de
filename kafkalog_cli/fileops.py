"""The only module that creates, writes, fsyncs, renames, truncates or unlinks files, and takes locks.

Every change is crash-safe: new content goes to a temporary file beside the target, is fsynced, renamed
over the target, and the directory is fsynced. Tests inject crashes here (``KAFKALOG_FAULT_AFTER=N``
kills the process at the Nth file operation; ``KAFKALOG_PAUSE_AFTER=N`` waits there for a signal).
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
    pause = os.environ.get("KAFKALOG_PAUSE_AFTER")      # tests: wait here for a signal (Ctrl-C tests)
    if pause is not None and _ops == int(pause) + 1:
        import sys
        import time
        sys.stderr.write("kafkalog: paused before a file operation (KAFKALOG_PAUSE_AFTER)\n")
        sys.stderr.flush()
        time.sleep(600)


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


# --- recover: locking, truncation, renames, deletions, backups ---------------------------------------
#
# Each function below is one counted step (``_step()`` before it changes anything), so
# ``KAFKALOG_FAULT_AFTER=N`` can stop a run between any two of them. Every change is durable before
# the function returns: file data is fsynced, and the directory is fsynced after a rename or unlink.


class LockHeld(OSError):
    """Another process (a running broker) holds the log directory's ``.lock``."""


class DirLock:
    """A POSIX record lock on ``<logdir>/.lock`` (what Kafka's ``FileChannel.tryLock`` takes on Linux)."""

    def __init__(self, path: Path, fd: int | None, created: bool) -> None:
        self.path = path
        self.fd = fd
        self.created = created

    def release(self, remove_if_created: bool = True) -> None:
        """Unlock; delete ``.lock`` again when this process created it (as a broker does on clean shutdown)."""
        if self.fd is None:
            return
        import fcntl
        try:
            if remove_if_created and self.created:
                _step()
                os.unlink(self.path)
                fsync_dir(self.path.parent)
            fcntl.lockf(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "DirLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lock_dir(logdir: str | os.PathLike, shared: bool = False) -> DirLock:
    """Take ``<logdir>/.lock`` with ``fcntl.lockf`` (exclusive, non-blocking) — NOT ``flock``, which does
    not conflict with the broker's POSIX lock on Linux (kafka-on-disk.md §4.8).

    ``shared=True`` (for ``--dry-run``) changes nothing: it takes a read lock on an existing ``.lock``
    (which still conflicts with a broker's exclusive lock) and creates no file when there is none.
    Raises ``LockHeld`` when another process holds the lock.
    """
    import errno
    import fcntl
    path = Path(logdir) / ".lock"
    if shared:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return DirLock(path, None, False)
        mode = fcntl.LOCK_SH
        created = False
    else:
        created = not path.exists()
        if created:
            _step()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if created:
            fsync_dir(path.parent)
        mode = fcntl.LOCK_EX
    try:
        fcntl.lockf(fd, mode | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EACCES, errno.EAGAIN):
            raise LockHeld(e.errno, "the lock is held by another process", str(path)) from None
        raise
    return DirLock(path, fd, created)


def fsync_file(path: str | os.PathLike) -> None:
    """Flush a file's data to disk (used before writing the clean-shutdown marker)."""
    _step()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def truncate_file(path: str | os.PathLike, size: int, keep_mtime: bool = True) -> None:
    """Cut ``path`` to ``size`` bytes and fsync it; the modification time is kept (kafka-on-disk.md §10.5)."""
    _step()
    st = os.stat(path)
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def rename(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Atomic rename within one directory, then fsync the directory."""
    _step()
    os.rename(src, dst)
    fsync_dir(Path(dst).parent)


def unlink(path: str | os.PathLike) -> None:
    """Remove a file (missing is fine: a re-run after a crash may find it gone), then fsync the directory."""
    _step()
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(Path(path).parent)


def _make_durable_dirs(path: Path) -> None:
    """``make_dirs`` plus an fsync of the parent of every directory it created (so a backup survives a
    power loss together with the directory entries leading to it)."""
    missing = []
    p = Path(path)
    while not p.is_dir():
        missing.append(p)
        p = p.parent
    if missing:
        make_dirs(path)
        for d in reversed(missing):
            fsync_dir(d.parent)


def _same_bytes(path: Path, src, start: int, length: int) -> bool:
    """Does ``path`` hold exactly ``length`` bytes equal to ``src[start:start+length]``?"""
    if path.stat().st_size != length:
        return False
    with open(path, "rb") as a, open(src, "rb") as b:
        b.seek(start)
        left = length
        while left:
            n = min(left, 1 << 20)
            if a.read(n) != b.read(n):
                return False
            left -= n
    return True


def _free_name(dst: Path, src, start: int, length: int) -> Path | None:
    """``dst`` or the first free ``dst.N``; None when one of them already holds these very bytes."""
    candidate, n = dst, 0
    while candidate.exists():
        if _same_bytes(candidate, src, start, length):
            return None
        n += 1
        candidate = dst.with_name(f"{dst.name}.{n}")
    return candidate


def backup_copy(src: str | os.PathLike, dst: str | os.PathLike, start: int = 0, end: int | None = None) -> Path | None:
    """Copy bytes ``[start, end)`` of ``src`` to ``dst`` durably (temp file, fsync, rename, directory fsync).

    When ``dst`` already holds exactly these bytes (a re-run after a crash) nothing is written and None
    is returned; when it holds something else, ``dst.1``, ``dst.2``, … is used, so no earlier backup is
    ever overwritten. The modification time of ``src`` is kept on the copy.
    """
    dst = Path(dst)
    st = os.stat(src)
    end = st.st_size if end is None else min(end, st.st_size)
    length = max(0, end - start)
    candidate = _free_name(dst, src, start, length) if dst.parent.exists() else dst
    if candidate is None:
        return None
    _make_durable_dirs(candidate.parent)
    _step()
    tmp = candidate.with_name(candidate.name + ".tmp")
    with open(src, "rb") as f, open(tmp, "wb") as out:
        f.seek(start)
        left = length
        while left:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            out.write(chunk)
            left -= len(chunk)
        out.flush()
        os.fsync(out.fileno())
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, candidate)
    fsync_dir(candidate.parent)
    return candidate


def backup_move(src: str | os.PathLike, dst: str | os.PathLike) -> Path | None:
    """Move ``src`` into the backup at ``dst`` (a file being removed from the log directory).

    On the same filesystem this is one atomic rename (both directories fsynced afterwards): the file is
    at any instant either in the log directory or in the backup. Across filesystems it is
    ``backup_copy`` followed by ``unlink``. An existing different backup is never overwritten (``dst.N``).
    """
    src, dst = Path(src), Path(dst)
    size = src.stat().st_size
    candidate = _free_name(dst, src, 0, size) if dst.parent.exists() else dst
    if candidate is None:          # already backed up by an interrupted earlier run
        unlink(src)
        return None
    _make_durable_dirs(candidate.parent)
    if os.stat(src.parent).st_dev == os.stat(candidate.parent).st_dev:
        _step()
        os.rename(src, candidate)
        fsync_dir(candidate.parent)
        fsync_dir(src.parent)
        return candidate
    written = backup_copy(src, candidate)
    unlink(src)
    return written


def operations() -> int:
    """How many file operations this process has performed (what ``KAFKALOG_FAULT_AFTER`` counts)."""
    return _ops


class NewFile:
    """A new file written in chunks (bounded memory), e.g. a cleaner's ``.cleaned`` segment: Kafka's loader
    deletes ``.cleaned`` files, so a crash part-way leaves nothing that matters. ``close`` makes it durable
    (fsync, optional mtime, directory fsync); ``discard`` removes it."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        _step()
        self._f = open(self.path, "wb")
        self.size = 0

    def write(self, data: bytes) -> None:
        self._f.write(data)
        self.size += len(data)

    def close(self, mtime_ms: int | None = None) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        if mtime_ms is not None:
            os.utime(self.path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        fsync_dir(self.path.parent)

    def discard(self) -> None:
        self._f.close()
        unlink(self.path)
