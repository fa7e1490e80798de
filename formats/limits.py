"""Bounds on what decoding may cost, whatever the bytes claim (memory stays bounded on hostile input).

Kafka never materialises a whole decompressed batch: its readers stream records out of a decompression
stream (``DefaultRecordBatch.compressedIterator`` with a ``BufferSupplier``), so it needs no bound; the
sizes it does bound are on *append* (``max.message.bytes``, default 1048588, checked against the
compressed batch in ``UnifiedLog.analyzeAndValidateRecords``; 8 MiB batches for the KRaft metadata log,
``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``). kafkalog decodes a batch's records from one buffer, so it
bounds that buffer:

``max_decompressed_bytes`` (default 128 MiB, option ``--max-decompressed-bytes``)
    the largest records section one batch may decompress to, and the largest single record (key,
    value and headers) of an uncompressed batch. 128 times Kafka's default ``max.message.bytes``: a
    healthy producer batch is closed at ``batch.size`` of *compressed* bytes (16 KiB by default, rarely
    above a few MiB) and each record is at most ``max.request.size`` uncompressed, so real batches
    decompress to a few MiB and even extreme ones (a 1 MiB batch of text compressed 50:1) stay far
    below. A batch above the bound is reported as a problem at its file position and offset, never
    decoded; one decompression uses at most about the bound plus a few MiB.

``MAX_SIDE_FILE_BYTES`` (16 MiB)
    checkpoints, ``meta.properties``, ``quorum-state``, ``partition.metadata`` are read whole; Kafka's
    largest (an offset checkpoint) holds one ~40-byte line per partition of the log directory, so 16 MiB
    is some 400,000 partitions in one directory.

``MAX_BINARY_SIDE_FILE_BYTES`` (32 MiB)
    producer snapshots (about 46 bytes per producer: some 700,000 producers) and transaction indexes (34
    bytes per aborted transaction: about a million) are read and parsed whole.

The helpers below walk a large region of a memory map in windows and hand the pages back to the kernel
afterwards (``madvise(MADV_DONTNEED)`` on the read-only map), so checking the CRC of a 2 GiB batch, or
whether a 2 GiB tail is all zeros, does not grow the resident set by 2 GiB.
"""
from __future__ import annotations

import contextlib
import mmap as _mmap

DEFAULT_MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024
#: The largest segment Kafka opens (``FileRecords``: "The size of segment ... is larger than the maximum
#: allowed segment size of 2147483647", every version): a larger one is reported, never read.
MAX_SEGMENT_BYTES = 2**31 - 1
MAX_SIDE_FILE_BYTES = 16 * 1024 * 1024
MAX_BINARY_SIDE_FILE_BYTES = 32 * 1024 * 1024
#: Regions larger than this are walked window by window (and their pages released).
WINDOW = 8 * 1024 * 1024

_max_decompressed = DEFAULT_MAX_DECOMPRESSED_BYTES


def max_decompressed_bytes() -> int:
    """The bound in force (set once per command from ``--max-decompressed-bytes``)."""
    return _max_decompressed


def set_max_decompressed_bytes(n: int | None) -> None:
    """Set the bound for this process; None restores the default."""
    global _max_decompressed
    if n is not None and n < 1:
        raise ValueError("the decompression bound must be at least 1 byte")
    _max_decompressed = DEFAULT_MAX_DECOMPRESSED_BYTES if n is None else int(n)


@contextlib.contextmanager
def bound(n: int | None):
    """Run a block under the bound ``n`` (None: the bound in force), restoring the previous one after.
    Used where work arrives from elsewhere with its own bound: a Spark task on an executor process
    (``scan``'s segment checks, ``export``'s segment reader) carries the driver's
    ``--max-decompressed-bytes`` in its options."""
    global _max_decompressed
    if n is None:
        yield
        return
    before = _max_decompressed
    set_max_decompressed_bytes(n)
    try:
        yield
    finally:
        _max_decompressed = before


def _release(buf, start: int, end: int) -> None:
    """Drop the pages of ``buf[start:end]`` from this process (a read-only map re-reads them on demand)."""
    madvise = getattr(buf, "madvise", None)
    if madvise is None or end <= start:
        return
    lo = start - start % _mmap.PAGESIZE
    try:
        madvise(_mmap.MADV_DONTNEED, lo, end - lo)
    except (OSError, ValueError, AttributeError):
        pass


def release(buf, start: int, end: int) -> None:
    """Hand the pages of ``buf[start:end]`` back to the kernel when ``buf`` is a map (else nothing)."""
    _release(buf, start, end)


def windows(buf, start: int, end: int):
    """Memoryviews covering ``buf[start:end]`` in order, at most ``WINDOW`` bytes each; a map's pages
    are released after each window when the region is large."""
    mv = memoryview(buf)
    try:
        if end - start <= WINDOW:
            w = mv[start:end]
            try:
                yield w
            finally:
                w.release()
            return
        for lo in range(start, end, WINDOW):
            hi = min(end, lo + WINDOW)
            w = mv[lo:hi]
            try:
                yield w
            finally:
                w.release()
                _release(buf, lo, hi)
    finally:
        mv.release()


def data_in(buf, start: int, end: int) -> list[tuple[int, int]]:
    """The parts of ``buf[start:end]`` that may hold data: all of it, unless ``buf`` is a map of a sparse
    file that says where its data lies (``data_extents``, found with SEEK_DATA/SEEK_HOLE when it was
    mapped); a hole reads as zeros, so the rest is zeros without being read."""
    extents = getattr(buf, "data_extents", None)
    if extents is None:
        return [(start, end)] if end > start else []
    return [(max(a, start), min(b, end)) for a, b in extents if a < end and b > start]


def checksum(fn, buf, start: int, end: int, value: int = 0, zeros=None) -> int:
    """``fn(data, value)`` (crc32c / zlib.crc32 style) over ``buf[start:end]`` window by window; with
    ``zeros(value, n)`` (``crc.zeros``), the holes of a sparse file are accounted without being read."""
    parts = data_in(buf, start, end) if zeros is not None else [(start, end)]
    pos = start
    for lo, hi in parts:
        if lo > pos:
            value = zeros(value, lo - pos)
        for w in windows(buf, lo, hi):
            value = fn(w, value)
        pos = hi
    if pos < end:
        value = zeros(value, end - pos)
    return value


def all_zero(buf, start: int, end: int) -> bool:
    """True when every byte of ``buf[start:end]`` is zero (compared 64 KiB at a time, bounded memory; the
    holes of a sparse file are zeros without being read)."""
    zero = bytes(65536)
    for lo_, hi_ in data_in(buf, start, end):
        for w in windows(buf, lo_, hi_):
            for lo in range(0, len(w), 65536):
                chunk = w[lo:lo + 65536]
                if chunk != (zero if len(chunk) == 65536 else zero[:len(chunk)]):
                    return False
    return True
