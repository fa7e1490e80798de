"""Bounded search for intact v2 batches inside damaged bytes: where does valid data resume?

verify asks whether a CRC-valid batch starts anywhere after a framing stop (damage inside the data, not a
torn end); the Spark reader asks from where CRC-valid batches follow each other up to a known position.
Both look at the same candidates (positions whose magic byte is 2 and whose length fits) and check them
by CRC-32C, so both search here, with one bound whatever the bytes claim: the region is walked window by
window with the mapped pages released behind (a 2 GiB tail never becomes resident), and a ``CrcBudget``
caps the candidates and the bytes of CRC tried (a crafted tail of thousands of huge claimed batches would
otherwise cost hours).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .crc import crc32c_region
from .limits import WINDOW, release

_MIN_LENGTH = 49          # the smallest length field of a v2 batch (61-byte header less the 12-byte prefix)
_HEADER = 61


@dataclass
class CrcBudget:
    """At most ``max_candidates`` batches and ``max_bytes`` bytes of CRC-32C; spent once ``exhausted``."""
    max_candidates: int
    max_bytes: int
    tried: int = 0
    spent: int = 0

    @property
    def exhausted(self) -> bool:
        return self.tried > self.max_candidates or self.spent > self.max_bytes

    def take(self, size: int) -> bool:
        self.tried += 1
        self.spent += size
        return not self.exhausted


def valid_batch_end(buf, at: int, limit: int, budget: CrcBudget) -> int | None:
    """The end of the CRC-valid magic-2 batch framed at ``at`` and ending at or before ``limit``; None when
    none is there or the budget is spent (``budget.exhausted`` tells)."""
    if at < 0 or at + _HEADER > limit or buf[at + 16] != 2:
        return None
    length = int.from_bytes(buf[at + 8:at + 12], "big", signed=True)
    end = at + 12 + length
    if length < _MIN_LENGTH or end > limit or not budget.take(end - at):
        return None
    return end if crc32c_region(buf, at + 21, end) == int.from_bytes(buf[at + 17:at + 21], "big") else None


def intact_batches(buf, first: int, limit: int, budget: CrcBudget) -> Iterator[tuple[int, int]]:
    """(start, end) of every CRC-valid v2 batch starting at or after ``first`` and ending at or before
    ``limit``, in order, until the budget is spent."""
    for lo in range(first + 16, limit, WINDOW):
        hi = min(limit, lo + WINDOW)
        pos = buf.find(b"\x02", lo, hi)
        while pos != -1:
            end = valid_batch_end(buf, pos - 16, limit, budget)
            if end is not None:
                yield pos - 16, end
            if budget.exhausted:
                return
            pos = buf.find(b"\x02", pos + 1, hi)
        release(buf, lo, hi)
