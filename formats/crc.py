"""Checksums: CRC-32C (v2 batches, producer snapshots) in hardware, CRC-32 (legacy messages).

Kafka classes: ``org.apache.kafka.common.utils.Crc32C`` and ``java.util.zip.CRC32``.
Check values: CRC-32C("123456789") = 0xE3069283, CRC-32("123456789") = 0xCBF43926.
"""
from __future__ import annotations

import zlib

from . import native as _native

if _native.ext is not None:          # the compiled record path's SSE4.2 CRC: the same value, no extra import
    _crc32c = _native.ext.crc32c
else:
    from crc32c import crc32c as _crc32c


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) as an unsigned int; hardware accelerated (the native extension, else the
    crc32c package)."""
    return _crc32c(data)


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE, zlib) as an unsigned int, used by magic 0/1 messages."""
    return zlib.crc32(data) & 0xFFFFFFFF


def crc32c_region(buf, start: int, end: int) -> int:
    """CRC-32C of ``buf[start:end]``, window by window (pages of a large mapped region are released)."""
    from .limits import checksum
    return checksum(_crc32c, buf, start, end)


def crc32_region(buf, start: int, end: int) -> int:
    """CRC-32 of ``buf[start:end]``, window by window (pages of a large mapped region are released)."""
    from .limits import checksum
    return checksum(zlib.crc32, buf, start, end) & 0xFFFFFFFF
