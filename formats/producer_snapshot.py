"""Producer state snapshot, ``<offset>.snapshot`` (Kafka ``ProducerStateManager`` snapshot, message
``ProducerSnapshot`` schema version 1; the name's offset is the first offset *not* covered).

Big-endian::

    off size field
    0   2    version = 1         int16
    2   4    crc                 uint32  CRC-32C of bytes 6..end of file
    6   4    entry count         int32
    10  46×n entries

Entry (46 bytes)::

    0  8 producerId     8  2 producerEpoch    10 4 lastSequence     14 8 lastOffset (-1: none)
    22 4 offsetDelta    26 8 timestamp        34 4 coordinatorEpoch 38 8 currentTxnFirstOffset (-1: none)

``ProducerSnapshot`` is the declarative schema (its ``Checksum`` verifies on parse and computes on
build); ``parse_producer_snapshot``/``build_producer_snapshot`` are the struct fast paths with Kafka's
error messages. Checks run in Kafka's order: structure, then version, then CRC.
"""
from __future__ import annotations

import struct
from typing import Iterable, NamedTuple

from construct import (Checksum, Int16sb, Int32sb, Int32ub, Int64sb, Padding, Pointer, PrefixedArray,
                       RawCopy, Struct, Tell, this)

from .crc import crc32c
from .errors import FormatError

VERSION = 1
HEADER_SIZE = 10
CRC_START = 6
ENTRY_SIZE = 46

ProducerEntry = Struct(
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)

#: Build with ``dict(version=1, body=dict(value=dict(entries=[...])))``; the CRC is computed.
ProducerSnapshot = Struct(
    "version" / Int16sb,
    "_crc_at" / Tell,
    Padding(4),
    "body" / RawCopy(Struct("entries" / PrefixedArray(Int32sb, ProducerEntry))),
    "crc" / Pointer(this._crc_at, Checksum(Int32ub, crc32c, this.body.data)),
)

_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")


class ProducerStateEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


class ProducerSnapshotData(NamedTuple):
    version: int
    crc: int
    computed_crc: int
    entries: list[ProducerStateEntry]


def _schema_error(reason: str, position: int) -> FormatError:
    return FormatError(f"Snapshot failed schema validation: {reason}", position, "snapshot_schema")


def parse_producer_snapshot(buf, verify_crc: bool = True) -> ProducerSnapshotData:
    """Decode a snapshot the way ``ProducerStateManager.readSnapshot`` does.

    Raises FormatError "Snapshot failed schema validation: …" (kind ``snapshot_schema``) for a short
    buffer, negative count, or unknown version, and "Snapshot is corrupt (CRC is no longer valid)…"
    (kind ``snapshot_crc``) unless ``verify_crc`` is False, which lets a verifier still show the entries.
    Bytes after the last entry are ignored by the structure but covered by the CRC, as in Kafka. The
    unknown-version message is 4.0's (3.x says the same without the "failed schema validation" prefix).
    """
    view = memoryview(buf).cast("B")
    size = len(view)
    if size < 2:
        raise _schema_error("Error reading field 'version': java.nio.BufferUnderflowException", 0)
    if size < 6:
        raise _schema_error("Error reading field 'crc': java.nio.BufferUnderflowException", 2)
    if size < HEADER_SIZE:
        raise _schema_error("Error reading field 'producer_entries': java.nio.BufferUnderflowException", 6)
    version, crc, count = _HEADER.unpack_from(view, 0)
    if count < 0:
        raise _schema_error(f"Error reading field 'producer_entries': Array size {count} cannot be negative",
                            6)
    available = size - HEADER_SIZE
    if count > available:
        raise _schema_error(f"Error reading field 'producer_entries': Error reading array of size {count}, "
                            f"only {available} bytes available", 6)
    if count * ENTRY_SIZE > available:
        at = HEADER_SIZE + (available // ENTRY_SIZE) * ENTRY_SIZE
        raise _schema_error("Error reading field 'producer_entries': Error reading field "
                            f"'{_underflow_field(available % ENTRY_SIZE)}': java.nio.BufferUnderflowException",
                            at)
    if version != VERSION:
        raise _schema_error(f"Snapshot contained an unknown file version {version}", 0)
    computed = crc32c(view[CRC_START:])
    if verify_crc and crc != computed:
        raise FormatError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                          f"Computed crc: {computed}", 2, "snapshot_crc")
    end = HEADER_SIZE + count * ENTRY_SIZE
    entries = [ProducerStateEntry(*e) for e in _ENTRY.iter_unpack(view[HEADER_SIZE:end])]
    return ProducerSnapshotData(version, crc, computed, entries)


_ENTRY_FIELDS = ((8, "producer_id"), (10, "epoch"), (14, "last_sequence"), (22, "last_offset"),
                 (26, "offset_delta"), (34, "timestamp"), (38, "coordinator_epoch"),
                 (46, "current_txn_first_offset"))


def _underflow_field(partial: int) -> str:
    """Name (Kafka's 3.x schema names) of the entry field a truncated entry runs out in."""
    return next(name for end, name in _ENTRY_FIELDS if partial < end)


def build_producer_snapshot(entries: Iterable[ProducerStateEntry | tuple], version: int = VERSION) -> bytes:
    """Bytes of a snapshot holding ``entries`` (in the given order), CRC computed over bytes 6..end."""
    body = bytearray()
    n = 0
    for e in entries:
        try:
            body += _ENTRY.pack(*e)
        except struct.error as err:
            raise FormatError(f"producer entry {tuple(e)} cannot be encoded: {err}", None,
                              "snapshot_value_range") from None
        n += 1
    tail = struct.pack(">i", n) + bytes(body)
    try:
        return struct.pack(">hI", version, crc32c(tail)) + tail
    except struct.error as err:
        raise FormatError(f"snapshot version {version} cannot be encoded: {err}", None,
                          "snapshot_value_range") from None
