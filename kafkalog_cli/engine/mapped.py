"""Read-only memory maps of segment files (readers never modify a file)."""
from __future__ import annotations

import mmap
import os
from pathlib import Path


RELEASE_STEP = 32 * 1024 * 1024


class MappedFile:
    """A file mapped read-only; ``buf`` supports slicing, ``struct.unpack_from`` and memoryview.

    Empty files map to ``b""`` (mmap refuses length 0). Use as a context manager.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            self._mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else None
        finally:
            os.close(fd)
        if self._mm is not None:
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
