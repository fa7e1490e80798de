"""Codecs against real bytes: Java-exact headers, Kafka reader rules, independent decoders, fuzzing."""
from __future__ import annotations

import gzip
import io
import random
import struct
import tracemalloc
import types
import zlib

import cramjam
import lz4.frame
import pytest
import xxhash
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafka.codec as kc
from kafkalog_formats.codecs import (CODEC_NAMES, GZIP, LZ4, NONE, SNAPPY, ZSTD, codec_name,
                                     compress, decompress)
from kafkalog_formats.errors import FormatError

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
COMPRESSED = [GZIP, SNAPPY, LZ4, ZSTD]
XERIAL_HEADER = bytes.fromhex("82534e4150505900 00000001 00000001")
LZ4_EMPTY = bytes.fromhex("04224d18 604082 00000000")       # byte-samples.md
LZ4_EMPTY_V0 = bytes.fromhex("04224d18 60401a 00000000")
GZIP_JAVA_HEADER = bytes.fromhex("1f8b0800000000000000")
FUZZ = settings(max_examples=250, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


def payload(size: int, seed: int = 0) -> bytes:
    """Deterministic mix of incompressible and repetitive runs, like a batch of records."""
    rnd, out = random.Random(seed), bytearray()
    while len(out) < size:
        out += rnd.randbytes(rnd.randrange(1, 3000))
        out += b"key-%d value-%d " % (rnd.randrange(100), rnd.randrange(100)) * rnd.randrange(1, 200)
    return bytes(out[:size])


DATA = {"empty": b"", "one": b"x", "text": b"kafka record " * 100, "multi": payload(300_000)}


def fails(codec: int, blob, *, magic: int = 2, max_output=None, match: str | None = None) -> FormatError:
    with pytest.raises(FormatError, match=match) as info:
        decompress(codec, blob, magic=magic, max_output=max_output)
    return info.value


# -- ids, round trips -----------------------------------------------------------------------------

def test_codec_names_and_unknown_ids():
    assert [codec_name(i) for i in CODECS] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    for bad in (5, 6, 7, -1):
        with pytest.raises(FormatError, match=f"^Unknown compression type id: {bad}$") as info:
            codec_name(bad)
        assert info.value.kind == "codec"
        with pytest.raises(FormatError) as info:
            decompress(bad, b"\x00")
        assert info.value.kind == "codec"


@pytest.mark.parametrize("name", DATA)
@pytest.mark.parametrize("codec, magic", [(c, m) for c in CODECS for m in (0, 1, 2) if c != ZSTD or m == 2])
def test_round_trip(codec, magic, name):
    data = DATA[name]
    blob = compress(codec, data, magic=magic)
    assert decompress(codec, blob, magic=magic) == data
    assert decompress(codec, memoryview(blob), magic=magic, max_output=len(data)) == data
    if codec != NONE and len(data) > 1000:
        assert len(blob) < len(data)


@pytest.mark.parametrize("codec", CODECS)
def test_memoryview_slice_and_bytearray_input(codec):
    data = DATA["multi"]
    blob = compress(codec, data)
    backing = bytearray(b"\xff" * 61 + blob + b"\xee" * 9)
    view = memoryview(backing)[61:61 + len(blob)]
    assert decompress(codec, view) == data
    assert decompress(codec, bytearray(blob)) == data
    assert decompress(codec, view, max_output=len(data)) == data


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_refused_in_legacy_wrappers(magic):
    valid = compress(ZSTD, b"abc")
    for call in (lambda: compress(ZSTD, b"abc", magic=magic),
                 lambda: decompress(ZSTD, valid, magic=magic)):
        with pytest.raises(FormatError, match="zstd is not allowed in magic 0/1") as info:
            call()
        assert info.value.kind == "codec"


def test_none_codec_is_identity_but_bounded():
    assert decompress(NONE, memoryview(b"--abc--")[2:5]) == b"abc"
    assert fails(NONE, b"abcd", max_output=3, match="decompress to more than").kind == "decompressed_too_large"


# -- lz4 ------------------------------------------------------------------------------------------

def test_lz4_descriptor_checksums_follow_the_formula():
    assert (xxhash.xxh32_intdigest(b"\x60\x40") >> 8) & 0xFF == 0x82
    assert (xxhash.xxh32_intdigest(bytes.fromhex("04224d186040")) >> 8) & 0xFF == 0x1A


def test_lz4_empty_frame_matches_byte_sample():
    assert compress(LZ4, b"") == LZ4_EMPTY
    assert compress(LZ4, b"", magic=1) == LZ4_EMPTY
    for magic in (0, 1, 2):  # a v0 reader skips HC, so a correct HC is fine there too
        assert decompress(LZ4, LZ4_EMPTY, magic=magic) == b""
    assert lz4.frame.decompress(LZ4_EMPTY) == b""


def test_lz4_magic0_writes_the_historical_checksum_and_only_v0_accepts_it():
    assert compress(LZ4, b"", magic=0) == LZ4_EMPTY_V0
    blob = compress(LZ4, DATA["multi"], magic=0)
    assert blob[6] == 0x1A and blob[:6] == LZ4_EMPTY[:6]
    assert decompress(LZ4, blob, magic=0) == DATA["multi"]
    for magic in (1, 2):
        err = fails(LZ4, blob, magic=magic, match="Stream frame descriptor corrupted")
        assert err.kind == "decompress" and err.position == 6
    with pytest.raises(RuntimeError):  # liblz4 agrees the v0 header is not a valid frame
        lz4.frame.decompress(blob)


def lz4_blocks(blob: bytes):
    """(size, stored) of each block of a frame without content size or checksums."""
    pos, out = 7, []
    while True:
        word = struct.unpack_from("<I", blob, pos)[0]
        if word == 0:
            assert pos + 4 == len(blob)
            return out
        out.append((word & 0x7FFFFFFF, bool(word & 0x80000000)))
        pos += 4 + (word & 0x7FFFFFFF)


def test_lz4_multi_block_and_stored_blocks():
    data = DATA["multi"]
    blob = compress(LZ4, data)
    blocks = lz4_blocks(blob)
    assert len(blocks) == -(-len(data) // 65536) == 5
    assert lz4.frame.decompress(blob) == data  # liblz4's frame decoder, independent of our parser
    noise = random.Random(7).randbytes(70_000)
    blocks = lz4_blocks(compress(LZ4, noise))
    assert blocks == [(65536, True), (70_000 - 65536, True)]
    assert decompress(LZ4, compress(LZ4, noise)) == noise


@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX256KB,
                                        lz4.frame.BLOCKSIZE_MAX1MB, lz4.frame.BLOCKSIZE_MAX4MB])
@pytest.mark.parametrize("store_size", [False, True])
@pytest.mark.parametrize("checksums", [(False, False), (True, False), (False, True), (True, True)])
def test_lz4_reads_liblz4_frames(block_size, store_size, checksums):
    data = DATA["multi"]
    blob = lz4.frame.compress(data, block_size=block_size, block_linked=False, store_size=store_size,
                              block_checksum=checksums[0], content_checksum=checksums[1])
    assert decompress(LZ4, blob) == data
    assert decompress(LZ4, blob, max_output=len(data)) == data


def test_lz4_rejects_linked_blocks():
    blob = lz4.frame.compress(DATA["multi"], block_linked=True, store_size=False)
    assert blob[4] & 0x20 == 0
    fails(LZ4, blob, match="Dependent block stream is unsupported")


def lz4_header(flg: int, bd: int) -> bytes:
    """A header with a correct HC, so that only the field under test is wrong."""
    hc = (xxhash.xxh32_intdigest(bytes((flg, bd))) >> 8) & 0xFF
    return bytes.fromhex("04224d18") + bytes((flg, bd, hc))


@pytest.mark.parametrize("blob, message", [
    (b"", "Stream ended prematurely"),
    (LZ4_EMPTY[:5], "Stream ended prematurely"),
    (LZ4_EMPTY[:6], "Stream ended prematurely"),
    (LZ4_EMPTY[:7], "Stream ended prematurely"),
    (b"\x04\x22\x4d\x19" + LZ4_EMPTY[4:], r"Stream unsupported \(invalid magic bytes\)"),
    (lz4_header(0x61, 0x40) + bytes(4), "Reserved bits must be 0"),
    (lz4_header(0x40, 0x40) + bytes(4), "Dependent block stream is unsupported"),
    (lz4_header(0xA0, 0x40) + bytes(4), "Version 2 is unsupported"),
    (lz4_header(0x60, 0x41) + bytes(4), "Reserved2 field must be 0"),
    (lz4_header(0x60, 0x30) + bytes(4), "Block size value must be between 4 and 7"),
    (lz4_header(0x60, 0xC0) + bytes(4), "Reserved3 field must be 0"),
    (lz4_header(0x68, 0x40), "Stream ended prematurely"),  # content size announced, missing
    (lz4_header(0x64, 0x40) + bytes(4), "Stream ended prematurely"),  # content checksum missing
    (LZ4_EMPTY[:7] + struct.pack("<I", 65537) + bytes(65537), "Block size 65537 exceeded max: 65536"),
    (LZ4_EMPTY[:7] + struct.pack("<I", 10) + bytes(5), "Stream ended prematurely"),
    (LZ4_EMPTY[:7] + struct.pack("<I", 2) + b"\xff\xff" + bytes(4), "Decompression failed"),
])
def test_lz4_reader_rules(blob, message):
    assert fails(LZ4, blob, match=message).kind == "decompress"


def test_lz4_checksums_and_end_of_stream():
    data = DATA["text"]
    checked = bytearray(lz4.frame.compress(data, block_linked=False, store_size=False,
                                           block_checksum=True))
    checked[-5] ^= 1  # last byte of the block checksum, just before the end mark
    fails(LZ4, bytes(checked), match="Block checksum mismatch")
    summed = bytearray(lz4.frame.compress(data, block_linked=False, content_checksum=True))
    summed[-1] ^= 1  # the content checksum is read but, as in the spec, not verified
    assert decompress(LZ4, bytes(summed)) == data
    blob = compress(LZ4, data)
    fails(LZ4, blob[:-4], match="Stream ended prematurely")  # no end mark
    assert decompress(LZ4, blob + b"trailing") == data  # Kafka stops at the end mark
    assert decompress(LZ4, blob[:-4] + b"\x00\x00\x00\x80") == data  # masked size 0 is the end mark


# -- snappy ---------------------------------------------------------------------------------------

def xerial_chunks(blob: bytes) -> list[bytes]:
    assert blob[:16] == XERIAL_HEADER
    pos, out = 16, []
    while pos < len(blob):
        size = struct.unpack_from(">i", blob, pos)[0]
        out.append(blob[pos + 4:pos + 4 + size])
        pos += 4 + size
    assert pos == len(blob)
    return out


def test_snappy_xerial_header_and_blocks():
    assert compress(SNAPPY, b"abc")[:16] == XERIAL_HEADER
    assert compress(SNAPPY, b"") == XERIAL_HEADER  # snappy-java writes the header even for no data
    assert decompress(SNAPPY, XERIAL_HEADER) == b""
    data = payload(100_000, seed=3)
    chunks = xerial_chunks(compress(SNAPPY, data))
    raw = [bytes(cramjam.snappy.decompress_raw(c)) for c in chunks]
    assert [len(r) for r in raw] == [32768, 32768, 32768, 100_000 - 3 * 32768]
    assert b"".join(raw) == data


def test_snappy_raw_fallback():
    data = DATA["multi"]
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert raw[:8] != XERIAL_HEADER[:8]
    assert decompress(SNAPPY, raw) == data
    short = bytes(cramjam.snappy.compress_raw(b"hi"))
    assert len(short) < 16 and decompress(SNAPPY, short) == b"hi"
    # the magic alone, shorter than a header, is also read as a raw block (and is not valid snappy)
    fails(SNAPPY, XERIAL_HEADER[:12], match="snappy record stream")


def test_snappy_concatenated_streams():
    a, b = payload(40_000, seed=1), DATA["text"]
    assert decompress(SNAPPY, compress(SNAPPY, a) + compress(SNAPPY, b)) == a + b
    assert decompress(SNAPPY, compress(SNAPPY, a) + XERIAL_HEADER + compress(SNAPPY, b)) == a + b


@pytest.mark.parametrize("blob, message", [
    (b"", "empty input"),
    (XERIAL_HEADER + b"\xff\xff\xff\xfe" + bytes(8), "negative chunk size -2"),
    (XERIAL_HEADER + b"\x00\x00\x10\x00" + bytes(8), "runs past the end"),
    (XERIAL_HEADER + XERIAL_HEADER[:12], "insufficient header size"),
    (XERIAL_HEADER + XERIAL_HEADER[:8] + bytes(8), "incompatible codec version"),
    (XERIAL_HEADER + b"\x00\x00\x00\x00", "snappy record stream"),  # empty raw block
    (XERIAL_HEADER + b"\x00\x00\x00\x03" + b"\x05\x10h", "snappy record stream"),
    (b"\xff\xff\xff\xff\x0f\x00", "claims 4294967295 bytes"),
])
def test_snappy_errors(blob, message):
    err = fails(SNAPPY, blob, match=message)
    assert err.kind == "decompress"


def test_snappy_error_position_and_java_leniency():
    blob = compress(SNAPPY, b"abc")
    assert fails(SNAPPY, blob + b"\x80\x00\x00\x00").position == len(blob)
    assert decompress(SNAPPY, blob + b"\x00\x01") == b"abc"  # < 4 trailing bytes end the stream
    not_magic = b"\x82SNAxxxx" + bytes(8)  # a concatenated "header" without the magic ends it too
    assert decompress(SNAPPY, blob + not_magic) == b"abc"


# -- gzip -----------------------------------------------------------------------------------------

def test_gzip_layout_is_javas():
    data = DATA["multi"]
    blob = compress(GZIP, data)
    assert blob[:10] == GZIP_JAVA_HEADER
    assert compress(GZIP, b"")[:10] == GZIP_JAVA_HEADER
    assert zlib.decompress(blob[10:-8], -15) == data
    assert blob[10:-8] == zlib.compress(data, 6, -15)  # Deflater.DEFAULT_COMPRESSION is zlib level 6
    assert struct.unpack("<II", blob[-8:]) == (zlib.crc32(data), len(data))
    assert gzip.decompress(blob) == data


def test_gzip_multi_member():
    a, b = DATA["text"], payload(50_000, seed=9)
    named = io.BytesIO()
    with gzip.GzipFile(filename="records.bin", mode="wb", fileobj=named, mtime=1) as f:
        f.write(b)
    assert named.getvalue()[3] & 0x08  # FNAME header, a different header shape
    blob = compress(GZIP, a) + named.getvalue() + gzip.compress(b"")
    assert decompress(GZIP, blob) == a + b
    assert decompress(GZIP, blob, max_output=len(a + b)) == a + b
    fails(GZIP, blob, max_output=len(a + b) - 1, match="decompress to more than")


def test_gzip_errors_and_trailing_bytes():
    data = DATA["text"]
    blob = compress(GZIP, data)
    fails(GZIP, b"", match="empty input")
    fails(GZIP, blob[:-1], match="truncated gzip member")
    fails(GZIP, blob[:-12], match="truncated gzip member")
    bad_crc = bytearray(blob)
    bad_crc[-6] ^= 0xFF
    fails(GZIP, bytes(bad_crc), match="incorrect data check")
    fails(GZIP, b"\x1f\x8c" + blob[2:], match="incorrect header check")
    # java.util.zip.GZIPInputStream ignores what follows a member unless it is a gzip header
    assert decompress(GZIP, blob + b"\x00\x00garbage") == data
    assert decompress(GZIP, blob + GZIP_JAVA_HEADER[:9]) == data
    fails(GZIP, blob + blob[:20], match="truncated gzip member")  # a header, then a torn member


# -- zstd -----------------------------------------------------------------------------------------

def test_zstd_frames_without_content_size():
    data = DATA["multi"]
    blob = compress(ZSTD, data)
    params = zstandard.get_frame_parameters(blob)
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN and not params.has_checksum
    assert blob[:4] == bytes.fromhex("28b52ffd") and blob[4] >> 6 == 0 and not blob[4] & 0x20
    assert decompress(ZSTD, blob) == data
    assert decompress(ZSTD, blob, max_output=len(data)) == data
    assert zstandard.ZstdDecompressor().decompressobj().decompress(blob) == data  # independent


def test_zstd_concatenated_skippable_and_sized_frames():
    a, b = payload(200_000, seed=4), DATA["text"]
    sized = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(b)
    skippable = struct.pack("<II", 0x184D2A53, 5) + b"12345"
    blob = compress(ZSTD, a) + skippable + sized + compress(ZSTD, b"")
    for bound in (None, len(a + b)):
        assert decompress(ZSTD, blob, max_output=bound) == a + b
    fails(ZSTD, blob, max_output=len(a + b) - 1, match="decompress to more than")
    corrupt = bytearray(sized)
    corrupt[-1] ^= 1  # content checksum
    fails(ZSTD, bytes(corrupt), match="zstd record stream")


@pytest.mark.parametrize("bound", [None, 10**9])
def test_zstd_truncation_and_garbage_are_errors(bound):
    data = DATA["multi"]
    blob = compress(ZSTD, data)
    # zstandard's stream_reader returns a short result for these without complaint; we must not
    for cut in (1, 4, 6, 20, len(blob) // 2, len(blob) - 1):
        fails(ZSTD, blob[:cut], max_output=bound, match="zstd record stream")
    fails(ZSTD, blob + b"\x00", max_output=bound, match="zstd record stream")
    fails(ZSTD, blob + b"garbage!", max_output=bound, match="Unknown frame descriptor")
    fails(ZSTD, b"", max_output=bound, match="empty input")


# -- output bound ---------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", COMPRESSED)
def test_max_output_boundary(codec):
    data = DATA["multi"]
    blob = compress(codec, data)
    assert decompress(codec, blob, max_output=len(data)) == data
    err = fails(codec, blob, max_output=len(data) - 1, match="decompress to more than")
    assert err.kind == "decompressed_too_large"
    fails(codec, blob, max_output=0, match="decompress to more than")


@pytest.fixture(scope="module")
def bombs():
    zeros = bytes(32 << 20)
    return {codec: compress(codec, zeros) for codec in COMPRESSED}


@pytest.mark.parametrize("codec", COMPRESSED)
def test_bombs_are_refused_without_inflating(codec, bombs):
    blob = bombs[codec]
    assert len(blob) < (2 << 20)
    tracemalloc.start()
    try:
        fails(codec, blob, max_output=1 << 20, match="decompress to more than")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < (6 << 20)


# -- fuzzing --------------------------------------------------------------------------------------

PREFIXES = [b"", GZIP_JAVA_HEADER, XERIAL_HEADER, LZ4_EMPTY[:7], LZ4_EMPTY_V0[:7],
            bytes.fromhex("28b52ffd"), struct.pack("<I", 0x184D2A50)]


@FUZZ
@given(codec=st.sampled_from(CODECS), magic=st.sampled_from([0, 1, 2]),
       prefix=st.sampled_from(PREFIXES), tail=st.binary(max_size=200),
       bound=st.none() | st.integers(0, 1 << 16))
def test_random_bytes_raise_only_format_error(codec, magic, prefix, tail, bound):
    try:
        out = decompress(codec, prefix + tail, magic=magic, max_output=bound)
    except FormatError:
        return
    assert isinstance(out, bytes) and (bound is None or len(out) <= bound)


SAMPLES = {codec: compress(codec, payload(3000, seed=codec) + b"abc" * 300) for codec in COMPRESSED}


@FUZZ
@given(codec=st.sampled_from(COMPRESSED), data=st.data())
def test_damaged_streams_raise_only_format_error(codec, data):
    blob = bytearray(SAMPLES[codec])
    for _ in range(data.draw(st.integers(0, 4))):
        blob[data.draw(st.integers(0, len(blob) - 1))] ^= data.draw(st.integers(1, 255))
    blob = blob[:data.draw(st.integers(0, len(blob)))] + data.draw(st.binary(max_size=8))
    bound = data.draw(st.none() | st.integers(0, 20_000))
    try:
        out = decompress(codec, memoryview(blob), max_output=bound)
    except FormatError:
        return
    assert bound is None or len(out) <= bound


# -- independent implementation: kafka-python ----------------------------------------------------

CROSS = [b"", b"x", DATA["text"], payload(150_000, seed=5)]


@pytest.mark.parametrize("data", CROSS, ids=len)
def test_kafka_python_gzip(data):
    assert decompress(GZIP, kc.gzip_encode(data)) == data
    assert kc.gzip_decode(compress(GZIP, data)) == data


@pytest.mark.parametrize("data", CROSS, ids=len)
def test_kafka_python_lz4(data):
    assert decompress(LZ4, kc.lz4_encode(data)) == data
    assert kc.lz4_decode(compress(LZ4, data)) == data
    old = kc.lz4_encode_old_kafka(data)  # 0.8/0.9 clients: the broken descriptor checksum
    assert decompress(LZ4, old, magic=0) == data
    fails(LZ4, old, magic=1, match="Stream frame descriptor corrupted")
    assert kc.lz4_decode_old_kafka(compress(LZ4, data, magic=0)) == data


@pytest.mark.parametrize("data", CROSS, ids=len)
def test_kafka_python_zstd(data):
    assert decompress(ZSTD, kc.zstd_encode(data)) == data
    assert kc.zstd_decode(compress(ZSTD, data)) == data


def _python_snappy():
    try:
        import snappy  # noqa: F401  (python-snappy, kafka-python's snappy dependency)
    except ImportError:
        pytest.skip("python-snappy is not installed; the cramjam-backed variant covers the framing")
    return snappy


CRAMJAM_BLOCKS = types.SimpleNamespace(compress=lambda b: bytes(cramjam.snappy.compress_raw(b)),
                                       decompress=lambda b: bytes(cramjam.snappy.decompress_raw(b)))


@pytest.mark.parametrize("backend", ["python-snappy", "cramjam-blocks"])
@pytest.mark.parametrize("data", CROSS, ids=len)
def test_kafka_python_snappy(backend, data, monkeypatch):
    """kafka-python's own xerial framing; with cramjam raw blocks when python-snappy is missing."""
    monkeypatch.setattr(kc, "snappy", _python_snappy() if backend == "python-snappy" else CRAMJAM_BLOCKS)
    theirs = kc.snappy_encode(data, xerial_compatible=True)
    assert theirs[:16] == XERIAL_HEADER
    assert decompress(SNAPPY, theirs) == data
    if data:  # kafka-python wants > 16 bytes to see a xerial stream; snappy-java reads the bare header
        assert kc.snappy_decode(compress(SNAPPY, data)) == data
    else:
        assert decompress(SNAPPY, compress(SNAPPY, data)) == b""
    if data:  # raw (non-xerial) snappy, as some non-Java clients send it
        assert decompress(SNAPPY, kc.snappy_encode(data, xerial_compatible=False)) == data
