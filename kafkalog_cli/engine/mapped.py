"""Opening files for reading: regular files only, never blocking, memory-mapped read-only or read whole
up to a bound. Every reader of the engine opens files here.

A FIFO, socket or device named like a segment or checkpoint would make ``open()`` block (a FIFO waits
for a writer) or read forever; Kafka's log loader skips anything that is not a regular file
(``LogLoader``: ``dir.listFiles`` filtered by ``File.isFile``, every version from 2.0 to trunk), and so
does ``PartitionLog.open``. A path given directly is opened with ``O_NONBLOCK`` and checked with
``fstat`` on the open descriptor (no race between the check and the open) and refused with
``NotRegularFile``, an ``OSError`` every command already reports as "cannot read".
"""
from __future__ import annotations

import errno
import mmap
import os
import stat
from pathlib import Path
from typing import Callable

from kafkalog_formats.limits import MAX_SIDE_FILE_BYTES

from ..errors import CannotRun

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


class NotRegularFile(CannotRun, OSError):
    """The path names something that is not a regular file (FIFO, socket, device, directory)."""


class FileTooLarge(CannotRun, OSError):
    """A file read whole is larger than any file of its kind Kafka writes."""


def describe_mode(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike) -> tuple[int, int]:
    """``(fd, size)`` of a regular file opened read-only; never blocks. Raises ``NotRegularFile``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({describe_mode(st.st_mode)})", str(path))
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


def is_regular(path: str | os.PathLike) -> bool:
    """True for a regular file (following symlinks, as Java's ``File.isFile``)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_regular(path: str | os.PathLike, limit: int = MAX_SIDE_FILE_BYTES) -> bytes:
    """The bytes of a small regular file (checkpoint, properties, snapshot); ``FileTooLarge`` above
    ``limit``, ``NotRegularFile`` for a FIFO or device. Never blocks, never reads more than ``limit``."""
    fd, size = open_regular(path)
    try:
        if size > limit:
            raise FileTooLarge(errno.EFBIG, f"file of {size} bytes is larger than the {limit}-byte limit "
                               "for this kind of file", str(path))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileTooLarge(errno.EFBIG, f"file is larger than the {limit}-byte limit for this kind "
                                   "of file", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_pieces(path: str | os.PathLike, piece: int = 1 << 20):
    """The text of a regular file of any size, decoded as UTF-8 (invalid bytes replaced, as
    ``bytes.decode("utf-8", "replace")`` of the whole) a piece at a time: for inputs read line by line,
    whose size is no bound on what is kept of them. ``NotRegularFile`` for a FIFO or device; never blocks."""
    import codecs
    fd, _size = open_regular(path)
    try:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            data = os.read(fd, piece)
            if not data:
                break
            yield decoder.decode(data)
        yield decoder.decode(b"", final=True)
    finally:
        os.close(fd)


#: parsed_once's results: (path, parser) -> (the file's identity when read, result or the error it raised)
_PARSED: dict = {}


def parsed_once(path: str | os.PathLike, parse: Callable):
    """``parse(read_regular(path), str(path))``, remembered while the file is the same one, unchanged
    (device, inode, size, modification and change times): a command over a log directory asks for its
    checkpoints once per partition, and reading and parsing a file of N entries N times made retain and
    compact over 10,000 partitions quadratic. An atomic rewrite (a new file renamed over it, as every
    writer here and Kafka's ``CheckpointFile`` do) is a new inode, so it is read again. The result is
    shared: callers must not change it. A parse that failed fails again with the same error."""
    st = os.stat(path)
    key = (os.fspath(path), parse)
    ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    hit = _PARSED.get(key)
    if hit is not None and hit[0] == ident:
        if isinstance(hit[1], Exception):
            raise hit[1].with_traceback(None)
        return hit[1]
    try:
        value = parse(read_regular(path), str(path))
    except Exception as e:           # FormatError, OSError: whatever the parser or the read raised
        _PARSED[key] = (ident, e)
        raise
    _PARSED[key] = (ident, value)
    return value


def forget_parsed() -> None:
    """Forget every ``parsed_once`` result (a new run in the same process reads its files afresh: a file
    rewritten in place within one clock tick keeps its size and times)."""
    _PARSED.clear()


class NamedMap(mmap.mmap):
    """A read-only map that knows its file (``name``), so decoding errors can say where they are, and where
    its data lies (``data_extents``: None, every byte may be data)."""

    name: str | None = None
    data_extents: list | None = None


#: a file of more data regions than this is read as if it had no holes (the list stays small)
MAX_EXTENTS = 4096


def data_extents(fd: int, size: int) -> list[tuple[int, int]] | None:
    """The regions of the open file that hold data, [(start, end)] in order (SEEK_DATA/SEEK_HOLE): between
    them are holes, which read as zeros. None when the system cannot say or the file has more than
    ``MAX_EXTENTS`` regions. A file without holes is one region (two system calls). Kafka's preallocated
    segments (``file.preallocate``) and a crash-extended tail are holes; reading them byte by byte took every
    command 35-85 s on a 4 GiB sparse segment (issue 39)."""
    out, pos = [], 0
    try:
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:           # nothing but a hole to the end
                    break
                return None
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            if end <= start:
                return None
            out.append((start, end))
            if len(out) > MAX_EXTENTS:
                return None
            pos = end
    except (OSError, AttributeError, ValueError):    # no SEEK_DATA here, or the file changed meanwhile
        return None
    return out


RELEASE_STEP = 32 * 1024 * 1024


class MappedFile:
    """A regular file mapped read-only; ``buf`` supports slicing, ``struct.unpack_from`` and memoryview.

    Empty files map to ``b""`` (mmap refuses length 0). Use as a context manager.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        fd, size = open_regular(self.path)
        try:
            self._mm = NamedMap(fd, size, access=mmap.ACCESS_READ) if size else None
            extents = data_extents(fd, size) if size else None
        finally:
            os.close(fd)
        if self._mm is not None:
            self._mm.name = str(self.path)
            self._mm.data_extents = extents
            try:
                self._mm.madvise(mmap.MADV_SEQUENTIAL)
            except (AttributeError, OSError):
                pass
        self.buf = self._mm if self._mm is not None else b""
        self._released = 0

    def release_behind(self, position: int) -> None:
        """Drop the mapped pages before ``position`` from this process's resident set, every
        ``RELEASE_STEP`` bytes of progress: a sequential reader then keeps resident memory bounded on any
        segment size. (MADV_DONTNEED on a read-only shared file mapping: the pages stay in the page cache,
        and touching them again reads them back, so nothing a caller still holds can change.)"""
        end = position - position % mmap.PAGESIZE
        if self._mm is None or end - self._released < RELEASE_STEP:
            return
        try:
            self._mm.madvise(mmap.MADV_DONTNEED, self._released, end - self._released)
        except (AttributeError, OSError, ValueError):
            return
        self._released = end

    def restart(self) -> None:
        """A new pass from the start of the file: ``release_behind`` releases from position 0 again."""
        self._released = 0

    def __len__(self) -> int:
        return len(self.buf)

    def close(self) -> None:
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass            # a memoryview still refers to it; the GC unmaps it later
            self._mm = None
            self.buf = b""

    def __enter__(self) -> "MappedFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
