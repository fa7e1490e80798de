"""Transaction index, ``<base>.txnindex`` (Kafka ``TransactionIndex`` / ``AbortedTxn``).

One 34-byte big-endian entry per aborted transaction whose ABORT marker lies in the segment::

    off size field
    0   2    version           int16  (0; anything greater is rejected)
    2   8    producerId        int64
    10  8    firstOffset       int64  (may lie in an earlier segment)
    18  8    lastOffset        int64  (offset of the ABORT marker)
    26  8    lastStableOffset  int64  (LSO when the abort completed)

Not preallocated; a trailing partial entry is ignored like Kafka does. ``AbortedTxnEntry``/``TxnIndex``
are the declarative schemas, ``parse_txn_index``/``txn_index_array`` the fast paths.
"""
from __future__ import annotations

import struct
from typing import Iterable, NamedTuple

from ._lazy import lazy_attributes
from .errors import FormatError

ENTRY_SIZE = 34
CURRENT_VERSION = 0


def _schemas() -> dict:
    """The declarative schemas (construct), built on first use: verify and recover read entries through
    the struct fast path and never pay construct's import."""
    from construct import GreedyRange, Int16sb, Int64sb, Struct
    entry = Struct(
        "version" / Int16sb,
        "producer_id" / Int64sb,
        "first_offset" / Int64sb,
        "last_offset" / Int64sb,
        "last_stable_offset" / Int64sb,
    )
    return {"AbortedTxnEntry": entry, "TxnIndex": GreedyRange(entry)}    # TxnIndex: whole entries only


__getattr__ = lazy_attributes(schemas=(("AbortedTxnEntry", "TxnIndex"), _schemas))

#: numpy's fields of an entry (``txn_index_array``; numpy is imported on first use, so the commands that
#: read or write entries do not pay its start-up).
TXN_INDEX_FIELDS = [("version", ">i2"), ("producer_id", ">i8"), ("first_offset", ">i8"),
                    ("last_offset", ">i8"), ("last_stable_offset", ">i8")]
_ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def __str__(self) -> str:
        """Kafka's ``AbortedTxn.toString`` (used inside its sanity-check message)."""
        return (f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
                f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
                f"lastStableOffset={self.last_stable_offset})")


def txn_index_array(buf):
    """Zero-copy structured numpy view of the whole entries (no version check: that is ``parse_txn_index``)."""
    import numpy as np
    return np.frombuffer(buf, dtype=np.dtype(TXN_INDEX_FIELDS), count=memoryview(buf).nbytes // ENTRY_SIZE)


def parse_txn_index(buf, path: str = "") -> list[AbortedTxn]:
    """Every complete entry, in file order; a version above 0 raises Kafka's KafkaException message."""
    view = memoryview(buf).cast("B")
    whole = len(view) - len(view) % ENTRY_SIZE
    out = []
    for i, fields in enumerate(_ENTRY.iter_unpack(view[:whole])):
        txn = AbortedTxn(*fields)
        if txn.version > CURRENT_VERSION:
            raise FormatError(f"Unexpected aborted transaction version {txn.version} in transaction index "
                              f"{path}, current version is {CURRENT_VERSION}", i * ENTRY_SIZE,
                              "txn_index_version")
        out.append(txn)
    return out


def txn_index_sanity(entries: Iterable[AbortedTxn], base_offset: int, path: str) -> str | None:
    """Kafka ``TransactionIndex.sanityCheck``: message for the first entry ending before the segment."""
    for txn in entries:
        if txn.last_offset < base_offset:
            return (f"Last offset of aborted transaction {txn} in index {path} is less than start offset "
                    f"{base_offset}")
    return None


def build_txn_index(entries: Iterable[AbortedTxn | tuple[int, int, int, int, int]]) -> bytes:
    """Bytes of a transaction index; tuples are (version, producerId, first, last, lastStable)."""
    out = bytearray()
    for e in entries:
        try:
            out += _ENTRY.pack(*e)
        except struct.error as err:
            raise FormatError(f"aborted transaction {tuple(e)} cannot be encoded: {err}", len(out),
                              "txn_index_value_range") from None
    return bytes(out)
