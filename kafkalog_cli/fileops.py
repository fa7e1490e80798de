"""The only module that creates, writes, fsyncs, renames, truncates or unlinks files, and takes locks.

Every change is crash-safe: new content goes to a temporary file beside the target, is fsynced, renamed
over the target, and the directory is fsynced. Tests inject crashes here (``KAFKALOG_FAULT_AFTER=N``
kills the process at the Nth file operation; with ``KAFKALOG_FAULT_ERRNO=E`` every operation from the
Nth on fails with that errno instead, e.g. 28 for a full disk).

An ``OSError`` leaving this module always names the file it concerns (``write()``/``fsync()`` do not), and
a failed write leaves no temporary file. Backups (``backup_copy``, ``backup_move``, ``backup_keep``) never
overwrite an earlier one and fall back to copying when the kernel refuses a rename or link across mounts
(EXDEV, also between two bind mounts of one filesystem). ``.lock`` is never created through a symbolic link.
``KAFKALOG_PAUSE_AFTER=N`` makes the process wait before its (N+1)th operation, for signal tests.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from .errors import CannotRun

_ops = 0


def _step(path=None) -> None:
    """Count a file operation on ``path``; die here if a test asked for a crash at this step, or fail with
    the error a test asked for (``KAFKALOG_FAULT_ERRNO``, e.g. 28 for a full disk) instead."""
    global _ops
    _ops += 1
    limit = os.environ.get("KAFKALOG_FAULT_AFTER")
    if limit is not None and _ops > int(limit):
        err = os.environ.get("KAFKALOG_FAULT_ERRNO")
        if err:
            raise OSError(int(err), os.strerror(int(err)), None if path is None else str(path))
        os._exit(137)
    pause = os.environ.get("KAFKALOG_PAUSE_AFTER")      # tests: wait here for a signal (Ctrl-C tests)
    if pause is not None and _ops == int(pause) + 1:
        import sys
        import time
        sys.stderr.write("kafkalog: paused before a file operation (KAFKALOG_PAUSE_AFTER)\n")
        sys.stderr.flush()
        time.sleep(600)


class _about:
    """Give an ``OSError`` raised inside the block the file it concerns (``write()`` and ``fsync()`` raise
    ENOSPC/EIO without one, which left users with "kafkalog: : No space left on device")."""

    def __init__(self, path, system_words: bool = False) -> None:
        self.path = path
        self.system_words = system_words

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, e, _tb) -> bool:
        if isinstance(e, OSError) and not e.filename and e.errno is not None:
            words = os.strerror(e.errno) if self.system_words else e.strerror or os.strerror(e.errno)
            raise OSError(e.errno, words, str(self.path)) from e
        return False


def fsync_dir(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with _about(path):
            os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: str | os.PathLike) -> None:
    _step(path)
    Path(path).mkdir(parents=True, exist_ok=True)


def write_atomic(path: str | os.PathLike, data: bytes, mtime_ms: int | None = None) -> None:
    """Write ``data`` to ``path`` via ``path.tmp`` + fsync + rename + directory fsync."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    _step(tmp)
    try:
        with _about(tmp), open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mtime_ms is not None:
            os.utime(tmp, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        _step(path)
        os.replace(tmp, path)
    except OSError:
        _discard_quietly(tmp)           # a full disk must not leave the temporary file behind
        raise
    with _about(path.parent):
        fsync_dir(path.parent)


def _discard_quietly(path: Path) -> None:
    """Best-effort removal of a partial temporary file after a failed write (the original error wins)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def discard_output(path: str | os.PathLike) -> None:
    """Best-effort removal of a command's own unfinished output (a ``.cleaned`` file) after an error such
    as a full disk: not a counted step, never raises (the original error is what the user must see).
    Whatever is left is removed by the next run or by ``recover`` (Kafka deletes ``.cleaned`` files)."""
    _discard_quietly(Path(path))


# --- recover: locking, truncation, renames, deletions, backups ---------------------------------------
#
# Each function below is one counted step (``_step()`` before it changes anything), so
# ``KAFKALOG_FAULT_AFTER=N`` can stop a run between any two of them. Every change is durable before
# the function returns: file data is fsynced, and the directory is fsynced after a rename or unlink.


class LockHeld(CannotRun, OSError):
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
                try:
                    _step(self.path)
                    os.unlink(self.path)
                    fsync_dir(self.path.parent)
                except OSError:         # a .lock left behind is harmless (a broker leaves it too); an error
                    pass                # here must not hide the one that ended the run
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
    not conflict with the broker's POSIX lock on Linux (docs/kafka-on-disk.md §4.8).

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
        fd, created = _open_lock_file(path)
        mode = fcntl.LOCK_EX
    try:
        fcntl.lockf(fd, mode | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EACCES, errno.EAGAIN):
            raise LockHeld(e.errno, "the lock is held by another process", str(path)) from None
        raise
    return DirLock(path, fd, created)


class LockUnusable(CannotRun, OSError):
    """``.lock`` is a symbolic link to a missing file: taking it would create a file outside the log directory."""


def _open_lock_file(path: Path) -> tuple[int, bool]:
    """Open ``.lock`` for writing, creating it when absent; (fd, created).

    A new ``.lock`` is created with ``O_EXCL | O_NOFOLLOW``, so it is never created through a symbolic
    link. A link to an existing file is followed (a broker locks that same file: Java's ``FileChannel.open``
    follows links), and is never deleted afterwards. A dangling link is refused (``LockUnusable``):
    following it would create its target wherever it points, and no broker can hold a lock on a file that
    does not exist, so removing the link is the user's safe choice.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is None:
        _step(path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:        # created meanwhile (a broker starting?): lock what is there
            return _open_lock_file(path)
        fsync_dir(path.parent)
        return fd, True
    import stat as stat_
    if stat_.S_ISLNK(st.st_mode):
        try:
            os.stat(path)
        except FileNotFoundError:
            raise LockUnusable(errno.ENOENT, f"a symbolic link to the missing file {os.readlink(path)}; taking the "
                               "lock would create that file outside the log directory. No process can hold it: "
                               "remove the link and run again", str(path)) from None
    return os.open(path, os.O_RDWR), False


def fsync_file(path: str | os.PathLike) -> None:
    """Flush a file's data to disk (used before writing the clean-shutdown marker)."""
    _step(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def truncate_file(path: str | os.PathLike, size: int, keep_mtime: bool = True) -> None:
    """Cut ``path`` to ``size`` bytes and fsync it; the modification time is kept (docs/kafka-on-disk.md §10.5)."""
    _step(path)
    st = os.stat(path)
    fd = os.open(path, os.O_WRONLY)
    try:
        with _about(path):
            os.ftruncate(fd, size)
            os.fsync(fd)
    finally:
        os.close(fd)
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def rename(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Atomic rename within one directory, then fsync the directory."""
    _step(src)
    os.rename(src, dst)
    fsync_dir(Path(dst).parent)


def unlink(path: str | os.PathLike) -> None:
    """Remove a file (missing is fine: a re-run after a crash may find it gone), then fsync the directory."""
    _step(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(Path(path).parent)


def rmdir(path: str | os.PathLike) -> None:
    """Remove an empty directory (missing is fine), then fsync its parent."""
    _step(path)
    try:
        os.rmdir(path)
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
    _step(candidate)
    _copy_into(src, candidate, start, length, st)
    return candidate


def _data_extents(fd: int, start: int, end: int):
    """The ``(position, length)`` ranges of ``[start, end)`` that hold data (SEEK_DATA/SEEK_HOLE), holes
    left out; the whole range where the file system cannot tell. A sparse 10 GiB index is a few extents."""
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    if seek_data is None or start >= end:
        yield from ((start, end - start),) if start < end else ()
        return
    try:
        os.lseek(fd, start, seek_data)
    except OSError as e:
        if e.errno == errno.ENXIO:          # nothing but a hole from start to the end of the file
            return
        yield start, end - start            # EINVAL and the like: no hole information here
        return
    pos = start
    while pos < end:
        try:
            data = os.lseek(fd, pos, seek_data)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return
            raise
        if data >= end:
            return
        hole = os.lseek(fd, data, seek_hole)
        yield data, min(hole, end) - data
        pos = hole


def _copy_into(src, candidate: Path, start: int, length: int, st) -> None:
    """A durable copy of bytes ``[start, start + length)`` of ``src``: data extents copied, holes kept as
    holes (time and space follow the bytes on disk, not the apparent size)."""
    tmp = candidate.with_name(candidate.name + ".tmp")
    try:
        with _about(tmp), open(src, "rb") as f, open(tmp, "wb") as out:
            for pos, n in _data_extents(f.fileno(), start, start + length):
                f.seek(pos)
                out.seek(pos - start)
                while n:
                    chunk = f.read(min(n, 1 << 20))
                    if not chunk:
                        break
                    out.write(chunk)
                    n -= len(chunk)
            out.truncate(length)
            out.flush()
            os.fsync(out.fileno())
    except OSError:
        _discard_quietly(tmp)
        raise
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, candidate)
    with _about(candidate.parent):
        fsync_dir(candidate.parent)


# rename()/link() across mounts fail with EXDEV even when both paths are on one filesystem (bind mounts),
# so the device number cannot predict it: try, and copy when the kernel says no.
_CROSS = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EOPNOTSUPP}   # EPERM: no hard links there


def backup_move(src: str | os.PathLike, dst: str | os.PathLike) -> Path | None:
    """Move ``src`` into the backup at ``dst`` (a file being removed from the log directory).

    One atomic rename when the kernel allows it (both directories fsynced afterwards): the file is at
    any instant either in the log directory or in the backup. Otherwise (another filesystem or mount:
    EXDEV) ``backup_copy`` — copy, fsync — then ``unlink``. An existing different backup is never
    overwritten (``dst.N``).
    """
    src, dst = Path(src), Path(dst)
    size = src.stat().st_size
    candidate = _free_name(dst, src, 0, size) if dst.parent.exists() else dst
    if candidate is None:          # already backed up by an interrupted earlier run
        unlink(src)
        return None
    _make_durable_dirs(candidate.parent)
    _step(candidate)
    try:
        os.rename(src, candidate)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        _step(candidate)
        _copy_into(src, candidate, 0, size, os.stat(src))
        unlink(src)
        return candidate
    fsync_dir(candidate.parent)
    fsync_dir(src.parent)
    return candidate


def backup_keep(src: str | os.PathLike, dst: str | os.PathLike) -> Path | None:
    """Make the backup at ``dst`` hold ``src``'s bytes *before* ``src`` is removed (``src`` stays).

    A hard link when the kernel allows it (no data copied; the bytes live on once the log directory's
    name is gone), else a durable copy. Used by compact and retain, which then remove the file through
    Kafka's ``.deleted`` protocol: the backup is complete before the first rename, so a kill at any
    instant, followed by any ``recover``, loses none of it. Same naming rules as ``backup_copy``.
    """
    src, dst = Path(src), Path(dst)
    st = os.stat(src)
    candidate = _free_name(dst, src, 0, st.st_size) if dst.parent.exists() else dst
    if candidate is None:
        return None
    _make_durable_dirs(candidate.parent)
    _step(candidate)
    try:
        os.link(src, candidate, follow_symlinks=False)
    except OSError as e:
        if e.errno not in _CROSS:
            raise OSError(e.errno, e.strerror, str(candidate)) from e
        _copy_into(src, candidate, 0, st.st_size, st)
        return candidate
    with _about(candidate.parent):
        fsync_dir(candidate.parent)
    return candidate


def refuse_write_target(target: str | os.PathLike, inputs=(), what: str = "") -> str | None:
    """Why kafkalog must not write ``target`` (a file or directory an option names: ``--backup-dir``,
    ``-o``, ``--save-discarded``), or None. It must not be one of ``inputs`` (the log directories, partition
    directories or files the command reads or changes) or lie inside one, nor lie inside any Kafka directory:
    a log directory (Kafka refuses to load one holding other directories, and never reads a report left
    there) or a partition directory (Kafka deletes whatever is in it with the partition). Compared by device
    and inode of each existing directory above it, after resolving links and also as spelled, so an alias, a
    link into a partition directory or a bind mount is recognised. ``what`` names the option in the message."""
    from .layout import parse_partition_dir
    target = Path(target)
    ident = {}
    for p in inputs:
        try:
            st = os.stat(p)
        except OSError:
            continue
        ident[(st.st_dev, st.st_ino)] = str(p)
    lead = f"{what} {target}" if what else str(target)
    seen = set()
    for chain in ((target, *target.parents), (Path(os.path.abspath(target)), *Path(os.path.abspath(target)).parents),
                  (Path(os.path.realpath(target)), *Path(os.path.realpath(target)).parents)):
        for depth, q in enumerate(chain):
            try:
                st = os.stat(q)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            if key in ident:
                why = (" (Kafka refuses to load a log directory holding other directories)"
                       if _kafka_directory(Path(os.path.realpath(q)), parse_partition_dir) == "log directory" else "")
                return (f"{lead} must be outside {ident[key]}, which this command reads: it is {ident[key]} or lies "
                        f"inside it, maybe through a link or a bind mount{why}")
            if not os.path.isdir(q):
                continue
            # the target itself may hold what an earlier backup put there (checkpoints, <partition>/ copies):
            # only a broker's own log directory (meta.properties) is refused as the target itself
            kind = _kafka_directory(Path(os.path.realpath(q)), parse_partition_dir, itself=depth == 0)
            if kind is not None:
                why = ("Kafka deletes what it holds with the partition" if kind == "partition directory" else
                       "Kafka refuses to load a log directory holding other directories")
                where = "is" if depth == 0 else "lies inside"
                return f"{lead} must be outside Kafka's directories: it {where} the {kind} {q} ({why})"
    return None


def _kafka_directory(d: Path, parse_partition_dir, itself: bool = False) -> str | None:
    """"log directory" or "partition directory" when ``d`` is one (by what it holds), else None; with
    ``itself``, only a log directory a broker formatted (``meta.properties``)."""
    from .layout import LOG_DIR_FILES, classify_file
    try:
        names = os.listdir(d)
    except OSError:
        return None
    if itself:
        return "log directory" if "meta.properties" in names else None
    if any(n in LOG_DIR_FILES and n not in (".lock",) for n in names):
        return "log directory"
    if parse_partition_dir(d.name) is not None and any(
            classify_file(n).kind not in ("unknown", "tmp") or n in ("leader-epoch-checkpoint", "partition.metadata")
            for n in names):
        return "partition directory"
    return None


def check_backup_dir(backup: str | os.PathLike, log_dir: str | os.PathLike) -> str | None:
    """Why ``backup`` cannot be a backup directory for ``log_dir`` (None: it can): it must not be ``log_dir``,
    lie inside it or inside any other Kafka directory (``refuse_write_target``), nor be a file."""
    try:
        os.stat(log_dir)
    except OSError as e:
        return f"cannot read {log_dir}: {e.strerror}"
    why = refuse_write_target(backup, [log_dir])
    if why is not None:
        return why
    if os.path.exists(backup) and not os.path.isdir(backup):
        return f"{backup} exists and is not a directory"
    # it is created at the first file it keeps, in the middle of the run: what stops that is refused now
    for q in (Path(backup), *Path(backup).parents):
        if not os.path.lexists(q):
            continue
        if os.path.islink(q) and not os.path.exists(q):
            return f"cannot create {backup}: {q} is a symbolic link that leads nowhere (a loop, or its target is gone)"
        if not os.path.isdir(q):
            return f"cannot create {backup}: {q} is not a directory"
        if not os.access(q, os.W_OK | os.X_OK):
            return f"cannot create {backup}: {q} is not writable (read-only, or no permission)"
        return None
    return None


#: What to do about an error of the operating system, by errno (anything else: "fix the cause").
REMEDIES = {
    errno.ENOSPC: "free space on the file system",
    errno.EDQUOT: "free space or raise the disk quota",
    errno.EFBIG: "the file system or a limit (ulimit -f) caps the file size: write it elsewhere",
    errno.EMFILE: "raise the limit of open files (ulimit -n)",
    errno.ENFILE: "wait for the system's open files to drop (or raise fs.file-max)",
    errno.ENOMEM: "free memory",
    errno.EACCES: "give this user access to the file",
    errno.EPERM: "give this user access to the file",
    errno.EROFS: "remount the file system read-write",
    errno.EIO: "check the disk (an I/O error: see the kernel log)",
}


def remedy(err: int | None) -> str:
    return REMEDIES.get(err, "fix the cause")


class ReportFile:
    """A report the user names (``-o FILE``, checked first with ``refuse_write_target``), written beside its
    target under a temporary name and renamed into place once complete (fsynced before, the directory after):
    a reader (a CI step) finds the previous file or the whole new one, never half a report. ``abandon``
    removes the temporary file. A link is followed (the file it names is replaced, the link stays); a target
    that is not a regular file (/dev/null, a FIFO, /dev/stdout) is written in place, as there is nothing to
    rename.

    Not a counted step (``KAFKALOG_FAULT_AFTER`` counts the changes to log directories)."""

    def __init__(self, path: str | os.PathLike) -> None:
        import stat
        self.path = Path(path)
        self.final = Path(os.path.realpath(path))
        try:
            st = os.stat(self.final)
        except FileNotFoundError:
            st = None
        flags = os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
        if st is not None and not stat.S_ISREG(st.st_mode):
            self.tmp = None
            with _about(self.path):
                self.fd = os.open(self.final, flags | (os.O_TRUNC if not stat.S_ISDIR(st.st_mode) else 0))
            return
        self.tmp = self.final.with_name(f".{self.final.name}.{os.getpid()}.tmp")
        with _about(self.path):
            self.fd = os.open(self.tmp, flags | os.O_CREAT | os.O_EXCL, 0o666)
        if st is not None:
            try:
                os.chmod(self.fd, stat.S_IMODE(st.st_mode))    # the report keeps the mode the file had
            except OSError:
                pass

    def commit(self) -> None:
        """Make the written bytes the file: fsync, rename over the target, fsync the directory."""
        fd, self.fd = self.fd, -1
        try:
            with _about(self.path):
                if self.tmp is not None:
                    os.fsync(fd)
        finally:
            os.close(fd)
        if self.tmp is not None:
            with _about(self.path):
                os.replace(self.tmp, self.final)
                self.tmp = None
                fsync_dir(self.final.parent)

    def abandon(self) -> None:
        """Close and remove the temporary file (best effort: the error that ended the run is what counts)."""
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1
        if self.tmp is not None:
            _discard_quietly(self.tmp)
            self.tmp = None


def operations() -> int:
    """How many file operations this process has performed (what ``KAFKALOG_FAULT_AFTER`` counts)."""
    return _ops


class NewFile:
    """A new file written in chunks (bounded memory), e.g. a cleaner's ``.cleaned`` segment: Kafka's loader
    deletes ``.cleaned`` files, so a crash part-way leaves nothing that matters. ``close`` makes it durable
    (fsync, optional mtime, directory fsync); ``discard`` removes it. A writer with a file handle of its own
    may write it by ``path`` instead (``written_by_name``): ``close`` makes those bytes durable all the same
    (fsync flushes the file, whichever descriptor wrote it)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        _step(self.path)
        self._f = open(self.path, "wb")
        self.size = 0

    def write(self, data: bytes) -> int:
        with _about(self.path):
            self._f.write(data)
        self.size += len(data)
        return len(data)

    def written_by_name(self) -> _about:
        """Around the calls of a writer that writes this file through its own handle (pyarrow's native
        writers, no Python call per chunk): an ``OSError`` they raise names the file, in the system's words
        (pyarrow says ``Error writing bytes to file. Detail: [errno 28] No space left on device``)."""
        return _about(self.path, system_words=True)

    @property
    def closed(self) -> bool:
        return self._f.closed

    def close(self, mtime_ms: int | None = None) -> None:
        with _about(self.path):
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()
        if mtime_ms is not None:
            os.utime(self.path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
        fsync_dir(self.path.parent)

    def abandon(self) -> None:
        """Close and remove after an error (best effort, not a counted step: see ``discard_output``)."""
        try:
            self._f.close()
        except OSError:
            pass
        discard_output(self.path)

    def discard(self) -> None:
        try:
            self._f.close()
        except OSError:                 # the buffered tail could not be written (disk full): irrelevant now
            pass
        unlink(self.path)
