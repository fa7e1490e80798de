"""Record-stream compression: gzip, snappy (xerial), lz4 (Kafka frame) and zstd, bytes in, bytes out.

Kafka classes mirrored: ``org.apache.kafka.common.record.CompressionType`` (ids and names) and
``org.apache.kafka.common.compress.{Gzip,Snappy,Lz4,Zstd}Compression`` with ``Lz4BlockInputStream`` /
``Lz4BlockOutputStream``; snappy framing is xerial ``SnappyInputStream`` / ``SnappyOutputStream``.
The payload is a v2 batch's records section (offset 61 to the end) or a legacy wrapper's value.

gzip (RFC 1952; Java writes a fixed header)::

    1f 8b 08 00 | mtime 00000000 | xfl 00 | os 00 | raw deflate | crc32 LE | isize LE   [member ...]

snappy (xerial framing, NOT the official snappy framing format)::

    82 53 4e 41 50 50 59 00 | version int32 BE = 1 | min-compatible int32 BE = 1
    { length int32 BE | raw snappy block (uvarint size | ops) }*     32 KiB of input per block
    a length equal to 0x82534e41 (negative) starts another 16-byte header (concatenated streams);
    input shorter than 16 bytes or without the magic is one raw snappy block

lz4 (Kafka's subset of LZ4 frame v1.5.1)::

    04 22 4d 18 | FLG 0x60 | BD 0x40 | [content size 8] | HC = (xxh32(FLG BD [size]) >> 8) & 0xff
    { size uint32 LE (bit 31 set: stored) | data | [xxh32 of data if FLG bit 4] }*
    00 00 00 00 | [content checksum 4 if FLG bit 2, read and not verified]
    magic-0 wrappers carry the historical HC over magic FLG BD (0x1a), so v0 readers skip the check

zstd: standard frames from zstd-jni's streaming compressor, usually without a content size; zstd in a
magic 0/1 wrapper is invalid.

Every failure raises ``FormatError`` (kind ``codec`` for an id or magic that is not allowed, kind
``decompress`` for bad data, kind ``decompressed_too_large`` for output above ``max_output``); library
exceptions never escape. Decompression is always bounded: ``max_output`` defaults to
``kafkalog_formats.limits.max_decompressed_bytes()``, output is produced in windows of at most 1 MiB
(gzip), one block (lz4, snappy) or one zstd block (128 KiB) and appended to one growing buffer, so a
bomb stops after about ``max_output`` bytes and no result is ever held twice.
"""
from __future__ import annotations

import functools
import importlib
import struct
import threading
import zlib
from typing import TYPE_CHECKING

from .errors import FormatError
from .limits import max_decompressed_bytes

if TYPE_CHECKING:                     # imported when first used (_lib): not on every start
    import zstandard


@functools.cache
def _lib(name: str):
    """A codec library, imported when a batch first needs it: reading uncompressed data (and every
    lookup's start-up) never pays for the four of them. Cached: it is asked for per batch and per LZ4
    block, and ``import_module`` costs about seven times a cache hit."""
    return importlib.import_module(name)


NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

_GZIP_HEADER = bytes.fromhex("1f8b0800000000000000")
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEAD = struct.unpack(">i", _XERIAL_MAGIC[:4])[0]  # negative: never a real chunk length
_XERIAL_BLOCK = 32 * 1024
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG, _LZ4_BD, _LZ4_BLOCK = 0x60, 0x40, 64 * 1024
_LZ4_STORED = 0x80000000
_ZSTD_MAGIC, _ZSTD_SKIPPABLE = 0xFD2FB528, 0x184D2A50
_I32BE, _U32LE = struct.Struct(">i"), struct.Struct("<I")
_GZIP_IN, _GZIP_OUT = 64 * 1024, 1024 * 1024
#: Results up to this size are returned as ``bytes``; larger ones as the ``bytearray`` they were built
#: in (copying them would hold the output twice).
_BYTES_MAX = 8 * 1024 * 1024


def codec_name(codec_id: int) -> str:
    """The Kafka name of a compression id (attributes bits 0-2); ids 5-7 are not defined."""
    try:
        return CODEC_NAMES[codec_id]
    except (KeyError, TypeError):
        raise FormatError(f"Unknown compression type id: {codec_id}", kind="codec") from None


def _check_magic(codec_id: int, magic: int) -> str:
    name = codec_name(codec_id)
    if codec_id == ZSTD and magic < 2:
        raise FormatError("Invalid wrapper compressionType: zstd is not allowed in magic 0/1", kind="codec")
    return name


class _Fail(Exception):
    """Internal: a decoding problem with an optional position, turned into FormatError once."""

    def __init__(self, what: str, position: int | None = None, kind: str = "decompress") -> None:
        super().__init__(what)
        self.what, self.position, self.kind = what, position, kind


def _over(max_output: int) -> _Fail:
    return _Fail(f"the records decompress to more than {max_output} bytes, the limit (raise "
                 "--max-decompressed-bytes if the batch is genuine)", None, "decompressed_too_large")


def _result(out: bytearray):
    return bytes(out) if len(out) <= _BYTES_MAX else out


# -- gzip ---------------------------------------------------------------------------------------

def _gzip_member_at(mv: memoryview, pos: int) -> bool:
    """True if a complete gzip header starts at ``pos``, as ``GZIPInputStream.readHeader`` accepts it."""
    n = len(mv)
    if n - pos < 10 or mv[pos] != 0x1F or mv[pos + 1] != 0x8B or mv[pos + 2] != 8:
        return False
    flg, p = mv[pos + 3], pos + 10
    if flg & 4:  # FEXTRA
        if p + 2 > n:
            return False
        p += 2 + mv[p] + (mv[p + 1] << 8)
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flg & bit:
            end = bytes(mv[p:]).find(b"\x00") if p < n else -1
            if end < 0:
                return False
            p += end + 1
    if flg & 2:  # FHCRC: low 16 bits of the header's CRC-32
        if p + 2 > n or (zlib.crc32(mv[pos:p]) & 0xFFFF) != mv[p] | (mv[p + 1] << 8):
            return False
        p += 2
    return p <= n


def _gunzip(mv: memoryview, max_output: int) -> bytes:
    """Members until the input ends; trailing bytes that are not a gzip header are ignored like Java does.

    Input is fed 64 KiB at a time and output taken 1 MiB at a time, so neither is ever copied whole.
    """
    if not mv:
        raise _Fail("empty input")
    out, pos, n = bytearray(), 0, len(mv)
    while True:
        d = zlib.decompressobj(31)
        p = pos
        try:
            while not d.eof:
                data = d.unconsumed_tail
                if not data and p < n:
                    data = mv[p:p + _GZIP_IN]
                    p += len(data)
                chunk = d.decompress(data, _GZIP_OUT)
                if not chunk and not data:
                    raise _Fail("truncated gzip member", pos)
                out += chunk
                if len(out) > max_output:
                    raise _over(max_output)
        except zlib.error as e:
            raise _Fail(str(e), pos) from None
        pos = p - len(d.unused_data)
        if pos >= n or not _gzip_member_at(mv, pos):
            return _result(out)


def _gzip(mv: memoryview) -> bytes:
    """java.util.zip.GZIPOutputStream: fixed header (OS 0), default level, CRC-32 and size trailer."""
    body = zlib.compress(mv, -1, -15)
    return b"".join((_GZIP_HEADER, body, struct.pack("<II", zlib.crc32(mv), len(mv) & 0xFFFFFFFF)))


# -- snappy -------------------------------------------------------------------------------------

def _snappy_block(block: memoryview, pos: int, max_output: int, total: int = 0):
    """One raw snappy block; its uvarint length is checked before anything is allocated."""
    size, shift, i = 0, 0, 0
    while i < min(len(block), 5):
        b = block[i]
        size |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            break
        shift += 7
    # a 3-byte copy op yields at most 64 bytes: anything claiming more cannot be valid snappy
    if size > (len(block) - i) * 64 // 3 + 64:
        raise _Fail(f"block claims {size} bytes from {len(block)} compressed bytes", pos)
    if total + size > max_output:
        raise _over(max_output)
    try:
        return _lib("cramjam").snappy.decompress_raw(block)
    except Exception as e:  # cramjam.DecompressionError, or anything else from the binding
        raise _Fail(str(e), pos) from None


def _unsnappy(mv: memoryview, max_output: int) -> bytes:
    """snappy-java ``SnappyInputStream``: xerial chunks, or the whole input as one raw block."""
    n = len(mv)
    if not n:
        raise _Fail("empty input")
    if n < 16 or mv[:8] != _XERIAL_MAGIC:
        block = _snappy_block(mv, 0, max_output)
        return bytes(block) if len(block) <= _BYTES_MAX else memoryview(block)
    out, pos = bytearray(), 16  # the first header's version fields are not checked (snappy-java)
    while n - pos >= 4:  # 1-3 trailing bytes end the stream, as in snappy-java
        size = _I32BE.unpack_from(mv, pos)[0]
        if size == _XERIAL_HEAD:
            if n - pos < 16:
                raise _Fail("insufficient header size in a concatenated block", pos)
            if mv[pos:pos + 8] != _XERIAL_MAGIC:
                break  # snappy-java stops reading here
            if _I32BE.unpack_from(mv, pos + 8)[0] < 1:
                raise _Fail("compressed with an incompatible codec version", pos)
            pos += 16
            continue
        if size < 0:
            raise _Fail(f"negative chunk size {size}", pos)
        if size > n - pos - 4:
            raise _Fail(f"chunk of {size} bytes runs past the end of the input", pos)
        out += _snappy_block(mv[pos + 4:pos + 4 + size], pos + 4, max_output, len(out))
        if len(out) > max_output:
            raise _over(max_output)
        pos += 4 + size
    return _result(out)


def _snappy(mv: memoryview) -> bytes:
    """snappy-java ``SnappyOutputStream``: header, then one raw block per 32 KiB of input."""
    parts = [_XERIAL_HEADER]
    for i in range(0, len(mv), _XERIAL_BLOCK):
        block = _lib("cramjam").snappy.compress_raw(mv[i:i + _XERIAL_BLOCK])
        parts += (_I32BE.pack(len(block)), block)
    return b"".join(parts)


# -- lz4 ----------------------------------------------------------------------------------------

def _unlz4(mv: memoryview, magic: int, max_output: int) -> bytes:
    """Kafka ``Lz4BlockInputStream``; the descriptor checksum is ignored for magic 0 wrappers."""
    n = len(mv)
    if n < 6:
        raise _Fail("Stream ended prematurely", n)
    if mv[:4] != _LZ4_MAGIC:
        raise _Fail("Stream unsupported (invalid magic bytes)", 0)
    flg, bd = mv[4], mv[5]
    if flg & 3:
        raise _Fail("Reserved bits must be 0", 4)
    if not flg & 0x20:
        raise _Fail("Dependent block stream is unsupported", 4)
    if flg >> 6 != 1:
        raise _Fail(f"Version {flg >> 6} is unsupported", 4)
    if bd & 0x0F:
        raise _Fail("Reserved2 field must be 0", 5)
    if not 4 <= (bd >> 4) & 7 <= 7:
        raise _Fail("Block size value must be between 4 and 7", 5)
    if bd & 0x80:
        raise _Fail("Reserved3 field must be 0", 5)
    max_block = 1 << (2 * ((bd >> 4) & 7) + 8)
    pos = 6 + (8 if flg & 0x08 else 0)
    if pos >= n:
        raise _Fail("Stream ended prematurely", n)
    if magic != 0 and mv[pos] != (_lib("xxhash").xxh32_intdigest(mv[4:pos]) >> 8) & 0xFF:
        raise _Fail("Stream frame descriptor corrupted", pos)
    pos += 1
    checked = flg & 0x10
    out = bytearray()
    while True:
        if n - pos < 4:
            raise _Fail("Stream ended prematurely", pos)
        size = _U32LE.unpack_from(mv, pos)[0]
        stored, size = size & _LZ4_STORED, size & ~_LZ4_STORED
        if size == 0:  # end mark (also with the stored bit, as Kafka reads it)
            if flg & 0x04 and n - pos - 4 < 4:
                raise _Fail("Stream ended prematurely", pos + 4)
            return _result(out)
        if size > max_block:
            raise _Fail(f"Block size {size} exceeded max: {max_block}", pos)
        start = pos + 4
        if n - start < size + (4 if checked else 0):
            raise _Fail("Stream ended prematurely", pos)
        block = mv[start:start + size]
        if checked and _lib("xxhash").xxh32_intdigest(block) != _U32LE.unpack_from(mv, start + size)[0]:
            raise _Fail("Block checksum mismatch", start + size)
        if stored:
            if len(out) + size > max_output:
                raise _over(max_output)
            out += block
        else:
            try:
                out += _lib("lz4.block").decompress(block, uncompressed_size=max_block)
            except Exception as e:  # LZ4BlockError
                raise _Fail(str(e), start) from None
        if len(out) > max_output:
            raise _over(max_output)
        pos = start + size + (4 if checked else 0)


def _lz4(mv: memoryview, magic: int) -> bytes:
    """Kafka ``Lz4BlockOutputStream``: 64 KiB independent blocks, stored when compression does not help."""
    header = _LZ4_MAGIC + bytes((_LZ4_FLG, _LZ4_BD))
    hc = (_lib("xxhash").xxh32_intdigest(header if magic == 0 else header[4:]) >> 8) & 0xFF
    parts = [header, bytes((hc,))]
    for i in range(0, len(mv), _LZ4_BLOCK):
        chunk = mv[i:i + _LZ4_BLOCK]
        block = _lib("lz4.block").compress(chunk, store_size=False)
        if len(block) >= len(chunk):
            parts += (_U32LE.pack(len(chunk) | _LZ4_STORED), chunk)
        else:
            parts += (_U32LE.pack(len(block)), block)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


# -- zstd ---------------------------------------------------------------------------------------

_local = threading.local()


def _dctx() -> zstandard.ZstdDecompressor:
    """A decompressor per thread: zstandard contexts must not be shared between threads."""
    d = getattr(_local, "zstd", None)
    if d is None:
        d = _local.zstd = _lib("zstandard").ZstdDecompressor()
    return d


def _zstd_cuts(mv: memoryview, pos: int):
    """Ends of the blocks of the frame at ``pos`` (each block yields at most 128 KiB); then len(mv).

    Only used to feed the decoder one block at a time when output is bounded; zstd itself validates.
    """
    n = len(mv)
    if n - pos >= 8:
        magic = _U32LE.unpack_from(mv, pos)[0]
        if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE:
            yield min(n, pos + 8 + _U32LE.unpack_from(mv, pos + 4)[0])
        elif magic == _ZSTD_MAGIC:
            fhd = mv[pos + 4]
            single = (fhd >> 5) & 1
            p = pos + 5 + (1 - single) + (0, 1, 2, 4)[fhd & 3] + (single, 2, 4, 8)[fhd >> 6]
            while p + 3 <= n:
                head = mv[p] | (mv[p + 1] << 8) | (mv[p + 2] << 16)
                kind, size = (head >> 1) & 3, head >> 3
                if kind == 3:
                    break
                p += 3 + (1 if kind == 1 else size)
                if head & 1:  # last block, then the optional content checksum
                    yield min(n, p + (4 if fhd & 4 else 0))
                    return
                if p >= n:
                    break
                yield p
    yield n


def _unzstd(mv: memoryview, max_output: int) -> bytes:
    """Concatenated (and skippable) frames via one streaming object per frame; no content size needed.

    The input is fed one block at a time (a block yields at most 128 KiB), so a bomb is stopped after at
    most one block beyond ``max_output``.
    """
    n = len(mv)
    if not n:
        raise _Fail("empty input")
    out, pos, dctx = bytearray(), 0, _dctx()
    while pos < n:
        obj = dctx.decompressobj()
        end = pos
        try:
            for cut in _zstd_cuts(mv, pos):
                out += obj.decompress(mv[end:cut])
                end = cut
                if len(out) > max_output:
                    raise _over(max_output)
                if obj.eof:
                    break
        except _lib("zstandard").ZstdError as e:
            raise _Fail(str(e), pos) from None
        if not obj.eof:
            raise _Fail("truncated zstd frame", pos)
        pos = end - len(obj.unused_data)
    return _result(out)


def _zstd(mv: memoryview) -> bytes:
    """zstd-jni ``ZstdOutputStream`` at level 3: one streamed frame, no content size, no checksum."""
    c = _lib("zstandard").ZstdCompressor(level=3, write_content_size=False).compressobj()
    return c.compress(mv) + c.flush()


# -- public -------------------------------------------------------------------------------------

def _view(data: bytes | bytearray | memoryview) -> memoryview:
    mv = data if isinstance(data, memoryview) else memoryview(data)
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def decompress(codec_id: int, data: bytes | memoryview, *, magic: int = 2,
               max_output: int | None = None) -> bytes:
    """Decompress a records section or wrapper value, never to more than ``max_output`` bytes (default:
    ``limits.max_decompressed_bytes()``); the one bounded path every reader goes through.

    The result is ``bytes``, or for results above 8 MiB the ``bytearray``/memoryview it was built in.
    """
    name = _check_magic(codec_id, magic)
    if max_output is None:
        max_output = max_decompressed_bytes()
    try:
        mv = _view(data)
        if codec_id == NONE:
            if len(mv) > max_output:
                raise _over(max_output)
            return data if type(data) is bytes else mv.tobytes()
        if codec_id == GZIP:
            return _gunzip(mv, max_output)
        if codec_id == SNAPPY:
            return _unsnappy(mv, max_output)
        if codec_id == LZ4:
            return _unlz4(mv, magic, max_output)
        return _unzstd(mv, max_output)
    except _Fail as e:
        raise FormatError(f"Failed to decompress {name} record stream: {e.what}", e.position,
                          kind=e.kind) from None
    except FormatError:
        raise
    except Exception as e:  # anything a binding raises (MemoryError, TypeError on odd buffers, ...)
        raise FormatError(f"Failed to decompress {name} record stream: {type(e).__name__}: {e}",
                          kind="decompress") from e


class V2Decompressor:
    """``decompress(codec, data, magic=2)`` of a v2 batch's records section under one bound (``max_output``;
    None: the bound in force, read at each call), as a callable the compiled walks are given. Where the
    compiled path is active they decompress in C what this would decompress (formats/_native_c/codecs.c:
    the same bytes, the same bound) and call it for everything else, which it decodes or reports; any other
    callable they always call."""

    __slots__ = ("max_output",)

    def __init__(self, max_output: int | None = None) -> None:
        if max_output is not None and max_output < 0:
            raise ValueError("max_output must be at least 0")
        self.max_output = max_output

    def __call__(self, codec_id: int, data) -> bytes:
        return decompress(codec_id, data, magic=2, max_output=self.max_output)

    def __repr__(self) -> str:
        return f"V2Decompressor(max_output={self.max_output!r})"


#: the one for the bound in force
V2 = V2Decompressor()


def compress(codec_id: int, data: bytes, *, magic: int = 2) -> bytes:
    """Compress as the Java producer would (framing and headers byte-exact; blocks library-made)."""
    _check_magic(codec_id, magic)
    mv = _view(data)
    if codec_id == NONE:
        return data if type(data) is bytes else mv.tobytes()
    if codec_id == GZIP:
        return _gzip(mv)
    if codec_id == SNAPPY:
        return _snappy(mv)
    if codec_id == LZ4:
        return _lz4(mv, magic)
    return _zstd(mv)


class StreamCompressor:
    """``compress(codec_id, data, magic=magic)`` given its data in pieces (``update``), its output as it is
    made: the same bytes as one call on the whole data (gzip and zstd streams do not depend on where their
    input is cut; snappy's 32 KiB and LZ4's 64 KiB blocks are cut where ``compress`` cuts them). A batch
    rebuilt from millions of records is never held uncompressed whole (compact)."""

    def __init__(self, codec_id: int, *, magic: int = 2) -> None:
        _check_magic(codec_id, magic)
        self.codec, self.magic = codec_id, magic
        self._pending = bytearray()             # snappy, LZ4: the start of a block not yet full
        self._first = True
        self._crc = self._size = 0
        if codec_id == GZIP:
            self._z = zlib.compressobj(-1, zlib.DEFLATED, -15)
        elif codec_id == ZSTD:
            self._z = _lib("zstandard").ZstdCompressor(level=3, write_content_size=False).compressobj()

    def _head(self) -> bytes:
        if not self._first:
            return b""
        self._first = False
        if self.codec == GZIP:
            return _GZIP_HEADER
        if self.codec == SNAPPY:
            return _XERIAL_HEADER
        if self.codec == LZ4:
            return self._lz4_descriptor()
        return b""

    def update(self, data) -> bytes:
        mv = _view(data)
        if self.codec == NONE:
            return mv.tobytes()
        head = self._head()
        if self.codec == GZIP:
            self._crc = zlib.crc32(mv, self._crc)
            self._size += len(mv)
            return head + self._z.compress(mv)
        if self.codec == ZSTD:
            return head + self._z.compress(mv)
        block = _XERIAL_BLOCK if self.codec == SNAPPY else _LZ4_BLOCK
        self._pending += mv
        whole = len(self._pending) - len(self._pending) % block
        if not whole:
            return head
        out = self._blocks(memoryview(self._pending)[:whole])
        del self._pending[:whole]
        return head + out

    def _blocks(self, mv: memoryview) -> bytes:
        """Whole blocks (the last may be short), framed as ``_snappy``/``_lz4`` frame them."""
        if self.codec == SNAPPY:
            return _snappy(mv)[len(_XERIAL_HEADER):]
        return _lz4(mv, self.magic)[len(self._lz4_descriptor()):-4]

    def _lz4_descriptor(self) -> bytes:
        return _lz4(memoryview(b""), self.magic)[:-4]         # the frame descriptor, without the end mark

    def finish(self) -> bytes:
        if self.codec == NONE:
            return b""
        head = self._head()
        if self.codec == GZIP:
            return head + self._z.flush() + struct.pack("<II", self._crc, self._size & 0xFFFFFFFF)
        if self.codec == ZSTD:
            return head + self._z.flush()
        out = self._blocks(memoryview(self._pending)) if self._pending else b""
        self._pending = bytearray()
        return head + out + (b"\x00\x00\x00\x00" if self.codec == LZ4 else b"")
