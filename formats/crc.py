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


CRC32C_POLY, CRC32_POLY = 0x82F63B78, 0xEDB88320      # reflected polynomials


def _times(mat: list, vec: int) -> int:
    out, i = 0, 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec >>= 1
        i += 1
    return out


def zeros(crc: int, n: int, poly: int = CRC32C_POLY) -> int:
    """The CRC (reflected, ``poly``) of what ``crc`` covered followed by ``n`` zero bytes, computed without
    the bytes (the operator of one zero bit squared to 2, 4, 8... bits: O(log n)): a region over a hole of a
    sparse file is checked without reading its gigabytes of zeros."""
    if n <= 0:
        return crc
    op = [poly] + [1 << i for i in range(31)]               # one zero bit
    for _ in range(3):                                      # ... squared three times: one zero byte
        op = [_times(op, v) for v in op]
    state = crc ^ 0xFFFFFFFF
    while True:
        if n & 1:
            state = _times(op, state)
        n >>= 1
        if not n:
            return state ^ 0xFFFFFFFF
        op = [_times(op, v) for v in op]


def crc32c_region(buf, start: int, end: int) -> int:
    """CRC-32C of ``buf[start:end]``, window by window (pages of a large mapped region are released; the
    holes of a sparse file are not read)."""
    from .limits import checksum
    return checksum(_crc32c, buf, start, end, zeros=zeros)


def crc32_region(buf, start: int, end: int) -> int:
    """CRC-32 of ``buf[start:end]``, window by window (pages of a large mapped region are released; the
    holes of a sparse file are not read)."""
    from .limits import checksum
    return checksum(zlib.crc32, buf, start, end, zeros=lambda c, n: zeros(c, n, CRC32_POLY)) & 0xFFFFFFFF
