"""Legacy message format, magic 0 and 1 (Kafka ``LegacyRecord`` / ``AbstractLegacyRecordBatch``).

Entry = offset int64 | size int32 | message::

    field        v0 off  v1 off  type
    crc          0       0       uint32 CRC-32 (zlib) of magic..end (size - 4 bytes)
    magic        4       4       int8
    attributes   5       5       int8: bits 0-2 codec, bit 3 LogAppendTime (v1)
    timestamp    -       6       int64 (v1 only)
    keyLength    6       14      int32, -1 = null
    key, valueLength int32, value

A compressed message is a *wrapper*: null key, value = compressed inner message set. v0 inner offsets are
absolute; v1 inner offsets are relative and the wrapper carries the last absolute offset.
"""
from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from ._lazy import lazy_attributes
from .crc import crc32, crc32_region
from .errors import FormatError
from .limits import max_decompressed_bytes
from .record_batch import Record

_COPY_MAX = 8 * 1024 * 1024

RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
LOG_OVERHEAD = 12



def _schemas() -> dict:
    """``NullableBytes32`` and ``LegacyMessage``, the declarative schemas (built on first use)."""
    from construct import Bytes, If, Int8sb, Int32sb, Int32ub, Int64sb, Struct, this
    nullable_bytes32 = Struct("length" / Int32sb, "data" / If(this.length >= 0, Bytes(this.length)))
    legacy_message = Struct(
        "offset" / Int64sb,
        "size" / Int32sb,
        "crc" / Int32ub,
        "magic" / Int8sb,
        "attributes" / Int8sb,
        "timestamp" / If(this.magic >= 1, Int64sb),
        "key" / nullable_bytes32,
        "value" / nullable_bytes32,
    )
    return {"NullableBytes32": nullable_bytes32, "LegacyMessage": legacy_message}


schema = lazy_attributes(schemas=(("NullableBytes32", "LegacyMessage"), _schemas))
__getattr__ = schema

_PREFIX = struct.Struct(">qiIbb")   # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class LegacyMessageView(NamedTuple):
    """A decoded legacy message (outer entry or inner message of a wrapper)."""
    offset: int
    size: int          # message size (the entry is 12 + size bytes)
    crc: int
    magic: int
    attributes: int
    timestamp: int     # -1 for v0
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> int:
        return self.attributes & 0x07

    @property
    def log_append_time(self) -> bool:
        return self.magic >= 1 and bool(self.attributes & 0x08)


def message_crc(buf, pos: int, size: int) -> int:
    """CRC-32 over magic..end of the message of the entry at ``pos``."""
    return crc32_region(buf, pos + 16, pos + LOG_OVERHEAD + size)


def parse_message(buf, pos: int, end: int | None = None) -> LegacyMessageView:
    """Decode the entry at ``pos``; the caller has checked that 12 + size bytes are present."""
    offset, size, crc, magic, attributes = _PREFIX.unpack_from(buf, pos)
    stop = pos + LOG_OVERHEAD + size
    if end is not None and stop > end:
        raise FormatError("legacy message extends past the end of its message set", pos, "record")
    p = pos + 18
    if magic >= 1:
        if size < RECORD_OVERHEAD_V1:
            raise FormatError(f"Invalid record size {size} for magic v1 (minimum {RECORD_OVERHEAD_V1})",
                              pos, "record")
        (timestamp,) = _I64.unpack_from(buf, p)
        p += 8
    else:
        timestamp = -1
    key, p = _nullable(buf, p, stop, pos)
    value, p = _nullable(buf, p, stop, pos)
    if p != stop:
        raise FormatError(f"legacy message has {stop - p} unexpected bytes after its value", pos, "record")
    return LegacyMessageView(offset, size, crc, magic, attributes, timestamp, key, value)


def _nullable(buf, p: int, stop: int, entry_pos: int) -> tuple[bytes | None, int]:
    if p + 4 > stop:
        raise FormatError("legacy message too short for its key/value length", entry_pos, "record")
    (n,) = _I32.unpack_from(buf, p)
    p += 4
    if n < 0:
        return None, p
    if n > _COPY_MAX and n > max_decompressed_bytes():
        raise FormatError(f"legacy message key/value of {n} bytes is larger than the limit of "
                          f"{max_decompressed_bytes()} bytes (raise --max-decompressed-bytes if it is genuine)",
                          entry_pos, "record_too_large")
    if p + n > stop:
        raise FormatError(f"legacy message key/value length {n} extends past the message", entry_pos,
                          "record")
    return bytes(buf[p:p + n]), p + n


def inner_messages(outer: LegacyMessageView, decompressor=None,
                   max_output: int | None = None) -> list[LegacyMessageView]:
    """Decompress a wrapper and return its inner messages with **absolute** offsets.

    Kafka rules: inner messages must not be compressed, the inner set must not be empty, v1 inner offsets
    are relative to ``wrapperOffset - lastInnerRelative`` (wrapper offset 0 ⇒ base 0).
    """
    if outer.value is None:
        raise FormatError("Found invalid compressed record set with null value", None, "record")
    if outer.codec == 4:
        raise FormatError("Invalid wrapper compressionType: zstd is not allowed in magic 0/1", None, "codec")
    if decompressor is None:
        from .codecs import decompress as decompressor
    data = decompressor(outer.codec, outer.value, magic=outer.magic, max_output=max_output)
    inner = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < LOG_OVERHEAD + RECORD_OVERHEAD_V0:
            raise FormatError("truncated inner message in compressed wrapper", pos, "record")
        (size,) = _I32.unpack_from(data, pos + 8)
        if size < RECORD_OVERHEAD_V0:
            raise FormatError(f"Found record size {size} smaller than minimum record overhead (14) "
                              "inside a compressed wrapper", pos, "record")
        if pos + LOG_OVERHEAD + size > end:
            raise FormatError("truncated inner message in compressed wrapper", pos, "record")
        msg = parse_message(data, pos)
        if msg.codec != 0:
            raise FormatError("Inner messages must not be compressed", pos, "record")
        crc_ok = message_crc(data, pos, size) == msg.crc
        inner.append((msg, crc_ok))
        pos += LOG_OVERHEAD + size
    if not inner:
        raise FormatError("Found invalid compressed record set with no inner records", None, "record")
    if outer.magic >= 1:
        last_rel = inner[-1][0].offset
        if outer.offset == 0:
            base = 0
        elif outer.offset < last_rel:
            raise FormatError(f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                              f"'{outer.offset}' is less than the last inner message offset '{last_rel}' "
                              "and it is not zero.", None, "record")
        else:
            base = outer.offset - last_rel
        inner = [(m._replace(offset=base + m.offset), ok) for m, ok in inner]
    return inner


def to_records(outer: LegacyMessageView, outer_crc_ok: bool, decompressor=None,
               max_output: int | None = None) -> Iterator[Record]:
    """The logical records of an entry: itself when uncompressed, else its inner messages."""
    if outer.codec == 0:
        yield Record(outer.offset, outer.timestamp, outer.key, outer.value, (), -1, outer.attributes,
                     outer.crc, outer_crc_ok)
        return
    lat = outer.log_append_time
    for m, ok in inner_messages(outer, decompressor, max_output):
        ts = outer.timestamp if lat else m.timestamp
        yield Record(m.offset, ts, m.key, m.value, (), -1, m.attributes, m.crc, ok)


def build_message(offset: int, key: bytes | None, value: bytes | None, *, magic: int = 1,
                  timestamp: int = -1, attributes: int = 0) -> bytes:
    """Build one legacy entry with the declarative schema and a correct CRC-32."""
    body = schema("LegacyMessage").build(dict(
        offset=offset, size=0, crc=0, magic=magic, attributes=attributes,
        timestamp=timestamp if magic >= 1 else None,
        key=dict(length=-1 if key is None else len(key), data=key),
        value=dict(length=-1 if value is None else len(value), data=value)))
    out = bytearray(body)
    struct.pack_into(">i", out, 8, len(out) - LOG_OVERHEAD)
    struct.pack_into(">I", out, 12, crc32(memoryview(out)[16:]))
    return bytes(out)


def build_wrapper(messages: list[tuple[int, bytes | None, bytes | None, int]], codec: int, *,
                  magic: int = 1, log_append_time: int | None = None, compressor=None) -> bytes:
    """Build a compressed wrapper around (absolute offset, key, value, timestamp) messages.

    v1 wrappers store relative inner offsets and the last absolute offset on the wrapper, as Kafka does.
    """
    if compressor is None:
        from .codecs import compress as compressor
    first = messages[0][0]
    inner = b"".join(build_message(off - first if magic >= 1 else off, k, v, magic=magic, timestamp=ts)
                     for off, k, v, ts in messages)
    attrs = codec | (0x08 if (magic >= 1 and log_append_time is not None) else 0)
    wrapper_ts = log_append_time if log_append_time is not None else max(m[3] for m in messages)
    return build_message(messages[-1][0], None, compressor(codec, inner, magic=magic), magic=magic,
                         timestamp=wrapper_ts, attributes=attrs)
