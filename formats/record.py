"""The logical record every decoder yields, whatever the magic (Kafka's ``Record`` interface).

A module of its own so that the pure decoders (``record_batch``, ``legacy``) and the compiled record path
(``native``, which hands this type to the C decoder) share it without importing each other.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import NamedTuple

from .errors import FormatError
from .varint import read_varint


class Record(NamedTuple):
    """One logical record of any magic; ``crc``/``valid`` are set for legacy records only."""
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple                  # or a RecordHeaders, beyond HEADERS_INLINE of them
    sequence: int
    attributes: int = 0
    crc: int | None = None
    valid: bool | None = None


#: Records with more headers than this carry them as a ``RecordHeaders`` (their bytes) instead of a
#: tuple of pairs: a 2-byte header costs some 70 bytes as Python objects and 32 as a row of the columns
#: scan, so a record of ten million headers (20 MB, a 2 KB zstd batch) would take 700 MB that way.
HEADERS_INLINE = 65_536


class RecordHeaders(Sequence):
    """The headers of a record with more than ``HEADERS_INLINE`` of them, kept as the bytes they were read
    from (``varint keyLength, key, varint valueLength, value`` each, as ``DefaultRecord`` writes them) and
    decoded each time they are iterated: memory stays the record's own size whatever the count. Behaves as
    the tuple of ``(key, value)`` pairs it stands for (length, iteration, indexing, equality with such a
    tuple). Made by the record decoders once they checked ``section``; walking it checks the lengths
    again (one unpickled from elsewhere raises ValueError, never reads past its bytes)."""

    __slots__ = ("section", "n")

    def __init__(self, section: bytes, n: int) -> None:
        self.section = section
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0

    def __iter__(self) -> Iterator[tuple[bytes, bytes | None]]:
        for chunk in self.chunks():
            yield from chunk

    def _walk(self) -> Iterator[tuple[bytes, bytes | None]]:
        """The pairs, decoded in Python (the reference ``_native.header_pairs`` is tested against); a length
        running past the bytes (a section that did not come from a decoder) is a ValueError, as in C."""
        data, pos = self.section, 0
        end = len(data)
        try:
            for _ in range(self.n):
                b = data[pos] if pos < end else 0x80
                if b < 0x80:
                    klen = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    klen, pos = read_varint(data, pos, end)
                if klen < 0 or pos + klen > end:
                    raise ValueError
                key = data[pos:pos + klen]
                pos += klen
                b = data[pos] if pos < end else 0x80
                if b < 0x80:
                    vlen = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    vlen, pos = read_varint(data, pos, end)
                if vlen < 0:
                    yield key, None
                elif pos + vlen > end:
                    raise ValueError
                else:
                    yield key, data[pos:pos + vlen]
                    pos += vlen
        except (ValueError, FormatError):
            raise ValueError("record headers: a length runs past their bytes") from None

    #: ``(section, position, count) -> (pairs, next position)`` in C, set by ``native`` when the compiled
    #: record path is active (``_native.header_pairs``); None: ``_walk``
    compiled_pairs = None

    def chunks(self, size: int = 65_536) -> Iterator[list]:
        """The pairs in lists of at most ``size``: what a writer streams a long line from."""
        pairs = RecordHeaders.compiled_pairs
        if pairs is None:
            it = self._walk()
            while chunk := list(islice(it, size)):
                yield chunk
            return
        pos, left = 0, self.n
        while left:
            chunk, pos = pairs(self.section, pos, min(size, left))
            left -= len(chunk)
            yield chunk

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self)[i]
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError("record header index out of range")
        return next(islice(self, i, None))

    def __eq__(self, other) -> bool:
        if isinstance(other, RecordHeaders):
            same = self.section == other.section
            return self.n == other.n and (same or all(a == b for a, b in zip(self, other)))
        if isinstance(other, tuple):
            return self.n == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"RecordHeaders({self.n} headers, {len(self.section)} bytes)"

    def __reduce__(self):
        return RecordHeaders, (self.section, self.n)
