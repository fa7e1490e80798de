"""Read-only memory maps of segment files (readers never modify a file)."""
from __future__ import annotations

import mmap
import os
from pathlib import Path


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
