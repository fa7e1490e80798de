"""Zig-zag varints as used inside v2 records (Kafka ``ByteUtils.readVarint``/``readVarlong``).

Encoding: zig-zag ``(n << 1) ^ (n >> 31)`` (63 for varlong), then little-endian base-128 groups with the
high bit as continuation. A varint may use at most 5 bytes, a varlong at most 10 ("Varint is too long").

The construct side uses ``construct.ZigZag`` (declarative schemas, building); the functions here are the
hot-path decoders, tested for parity against it.
"""
from __future__ import annotations

from .errors import FormatError


def read_varint(buf, pos: int, limit: int) -> tuple[int, int]:
    """Decode a zig-zag varint (≤ 5 bytes) at ``pos``; return (value, next position)."""
    if pos >= limit:
        raise FormatError("premature end of record payload while reading a varint", pos, "record")
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw = b & 0x7F
    shift = 7
    p = pos + 1
    while True:
        if p >= limit:
            raise FormatError("premature end of record payload while reading a varint", p, "record")
        b = buf[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise FormatError("Varint is too long, the most significant bit in the 5th byte is set",
                              pos, "record")
    raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), p


def read_varlong(buf, pos: int, limit: int) -> tuple[int, int]:
    """Decode a zig-zag varlong (≤ 10 bytes) at ``pos``; return (value, next position)."""
    if pos >= limit:
        raise FormatError("premature end of record payload while reading a varlong", pos, "record")
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw = b & 0x7F
    shift = 7
    p = pos + 1
    while True:
        if p >= limit:
            raise FormatError("premature end of record payload while reading a varlong", p, "record")
        b = buf[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise FormatError("Varlong is too long, the most significant bit in the 10th byte is set",
                              pos, "record")
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), p

def read_unsigned_varint(buf, pos: int, limit: int) -> tuple[int, int]:
    """Decode an unsigned varint (flexible message fields: compact lengths, tag counts)."""
    raw = 0
    shift = 0
    p = pos
    while True:
        if p >= limit:
            raise FormatError("premature end of data while reading an unsigned varint", p, "record")
        b = buf[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return raw, p
        shift += 7
        if shift > 28:
            raise FormatError("Varint is too long", pos, "record")
