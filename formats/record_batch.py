"""Record batch, magic 2 (Kafka ``DefaultRecordBatch`` / ``DefaultRecord``).

Batch header, 61 bytes, big-endian::

    off size field                     off size field
    0   8    baseOffset                35  8    maxTimestamp
    8   4    length (= total - 12)     43  8    producerId
    12  4    partitionLeaderEpoch      51  2    producerEpoch
    16  1    magic = 2                 53  4    baseSequence
    17  4    crc (CRC-32C of 21..end)  57  4    recordsCount
    21  2    attributes                61  ...  records (maybe compressed)
    23  4    lastOffsetDelta
    27  8    baseTimestamp (delete horizon when attributes bit 6)

Attributes: bits 0-2 codec, 3 timestamp type (LogAppendTime), 4 transactional, 5 control, 6 delete horizon.

Record: varint length | int8 attributes | varlong timestampDelta | varint offsetDelta | varint keyLength |
key | varint valueLength | value | varint headersCount | headers (varint keyLen, key, varint valLen, val).

``RecordBatchV2``/``RecordV2`` are the declarative schemas (parse and build); ``HEADER`` and
``iter_records`` are the hot path, tested for parity against them.
"""
from __future__ import annotations

import struct
from typing import Generator, Iterator, NamedTuple

from ._lazy import lazy_attributes
from .errors import FormatError
from .limits import max_decompressed_bytes
from .record import HEADERS_INLINE, Record, RecordHeaders
from .varint import read_varint, read_varlong

RECORD_BATCH_OVERHEAD = 61
CRC_START = 21
NO_TIMESTAMP = -1
INT_MAX = 0x7FFFFFFF
_COPY_MAX = 8 * 1024 * 1024     # records sections up to this size are decoded from one bytes copy
_PIECE = 1 << 20                # build_batch compresses a records section a piece of this size at a time

ATTR_CODEC_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}

# --- declarative schemas -------------------------------------------------------------------------

def _schemas() -> dict:
    """``BatchAttributes``, ``NullableVarBytes``, ``RecordHeader``, ``RecordV2`` and ``RecordBatchV2``
    (built on first use: readers that go through the hot path never import construct)."""
    from construct import (Adapter, BitsInteger, BitStruct, Bytes, Const, Flag, GreedyBytes, If, Int8sb,
                           Int16sb, Int32sb, Int32ub, Int64sb, Prefixed, PrefixedArray, Struct, ZigZag, this)

    BatchAttributes = BitStruct(
        "unused_high" / BitsInteger(8),
        "unused_bit7" / Flag,
        "has_delete_horizon" / Flag,
        "is_control" / Flag,
        "is_transactional" / Flag,
        "log_append_time" / Flag,
        "codec" / BitsInteger(3),
    )

    class NullableVarBytesAdapter(Adapter):
        """Zig-zag-varint length-prefixed bytes where length -1 means null (keys, values, header values)."""

        def _decode(self, obj, context, path):
            return obj.data

        def _encode(self, obj, context, path):
            return {"length": -1, "data": None} if obj is None else {"length": len(obj), "data": obj}

    NullableVarBytes = NullableVarBytesAdapter(
        Struct("length" / ZigZag, "data" / If(this.length >= 0, Bytes(this.length))))

    RecordHeader = Struct(
        "key" / Prefixed(ZigZag, GreedyBytes),
        "value" / NullableVarBytes,
    )
    RecordV2 = Prefixed(ZigZag, Struct(
        "attributes" / Int8sb,
        "timestamp_delta" / ZigZag,
        "offset_delta" / ZigZag,
        "key" / NullableVarBytes,
        "value" / NullableVarBytes,
        "headers" / PrefixedArray(ZigZag, RecordHeader),
    ))

    RecordBatchV2 = Struct(
        "base_offset" / Int64sb,
        "length" / Int32sb,
        "partition_leader_epoch" / Int32sb,
        "magic" / Const(2, Int8sb),
        "crc" / Int32ub,
        "attributes" / BatchAttributes,
        "last_offset_delta" / Int32sb,
        "base_timestamp" / Int64sb,
        "max_timestamp" / Int64sb,
        "producer_id" / Int64sb,
        "producer_epoch" / Int16sb,
        "base_sequence" / Int32sb,
        "records_count" / Int32sb,
        "records" / Bytes(this.length - (RECORD_BATCH_OVERHEAD - 12)),
    )

    return {"BatchAttributes": BatchAttributes, "NullableVarBytesAdapter": NullableVarBytesAdapter,
            "NullableVarBytes": NullableVarBytes, "RecordHeader": RecordHeader, "RecordV2": RecordV2,
            "RecordBatchV2": RecordBatchV2}


schema = lazy_attributes(schemas=(("BatchAttributes", "NullableVarBytesAdapter", "NullableVarBytes",
                                            "RecordHeader", "RecordV2", "RecordBatchV2"), _schemas))
__getattr__ = schema


# --- hot path ------------------------------------------------------------------------------------

HEADER = struct.Struct(">qiibIhiqqqhii")
assert HEADER.size == RECORD_BATCH_OVERHEAD


class BatchHeaderV2(NamedTuple):
    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


def parse_header(buf, pos: int = 0) -> BatchHeaderV2:
    """Fast decode of the 61-byte header at ``pos`` (caller guarantees 61 bytes are there)."""
    return BatchHeaderV2._make(HEADER.unpack_from(buf, pos))


_SAFE_HI = (1 << 63) - 1 - (1 << 32)
_SAFE_LO = -_SAFE_HI


def wrap64(n: int) -> int:
    """``n`` as a Java ``long`` sum gives it: wrapped into the signed 64-bit range."""
    return ((n + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def sequence_at(base_sequence: int, delta: int) -> int:
    """Producer sequence of ``baseSequence + delta`` with Kafka's wrap past Int.MAX to 0."""
    if base_sequence < 0:
        return -1
    if base_sequence > INT_MAX - delta:
        return delta - (INT_MAX - base_sequence) - 1
    return base_sequence + delta


def iter_records(data, count: int, base_offset: int, base_timestamp: int, base_sequence: int,
                 log_append_time: int | None = None, compressed: bool = False) -> Iterator[Record]:
    """Decode ``count`` records from ``data`` (uncompressed record bytes), Kafka's validation rules
    (``DefaultRecordBatch.RecordIterator`` over ``DefaultRecord.readFrom``, 0.11-4.x): each record framed by
    its length and read whole (``_read_record``), then no byte may remain.

    ``log_append_time``: the batch max timestamp when the batch uses LogAppendTime (every record then
    carries it). Positions in raised errors are relative to ``data``. One-byte varints (the common case)
    and two-byte lengths are decoded inline; longer ones go through ``read_varint``.

    Memory: a records section up to 8 MiB is copied once (slicing bytes is cheaper than memoryview plus
    bytes); a larger one (a map of a huge batch, or a large decompressed buffer) is read through a
    memoryview and only each key, value and header is copied, a record longer than
    ``limits.max_decompressed_bytes()`` being an error instead.
    """
    if count < 0:
        raise FormatError(f"Found invalid record count {count} in magic v2 batch", 0, "record")
    data, view, max_record = _records_buffer(data)
    end = len(data)
    # offsets and timestamps near the int64 limits can leave them (base + delta): Kafka's long sums wrap
    edge = not (_SAFE_LO <= base_offset <= _SAFE_HI and _SAFE_LO <= base_timestamp <= _SAFE_HI)
    pos = yield from _read_records(data, count, end, base_offset, base_timestamp, base_sequence, log_append_time,
                                   compressed, view, max_record, edge)
    if pos != end:
        raise FormatError("Incorrect declared batch size, records still remaining in file", pos, "record")


def _records_buffer(data) -> tuple:
    """(the records section as bytes or a byte memoryview, whether it is a view, the largest record a view
    may hold): see ``iter_records``' memory note."""
    if isinstance(data, bytes):
        return data, False, 0
    if memoryview(data).nbytes <= _COPY_MAX:
        return bytes(data), False, 0
    if not isinstance(data, memoryview) or data.format != "B":
        data = memoryview(data).cast("B")
    return data, True, max_decompressed_bytes()


def _read_records(data, count: int, end: int, base_offset: int, base_timestamp: int, base_sequence: int,
                  log_append_time: int | None, compressed: bool, view: bool, max_record: int,
                  edge: bool) -> Generator[Record, None, int]:
    """The ``count`` records from the start of ``data``, each as ``DefaultRecord.readFrom`` reads it: varint
    length, then within that body attributes, timestamp delta, offset delta, key, value and headers, which
    must fill it exactly; returns the position after the last. ``edge``: the batch's base offset or timestamp
    is near the int64 limits (sums wrap). One loop, its varints inline: the hot pure path (a function call per
    record or per field costs 5-13% of ``iter_records``)."""
    pos = 0
    for _ in range(count):
        if pos >= end:
            raise FormatError("Incorrect declared batch size, premature EOF reached", pos, "record")
        start = pos
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < end and data[pos + 1] < 0x80:
            z = (b & 0x7F) | (data[pos + 1] << 7)
            length = (z >> 1) ^ -(z & 1)
            pos += 2
        else:
            length, pos = read_varint(data, pos, end)
        body_end = pos + length
        if length < 0 or body_end > end:
            tail = ("but the record payload reached EOF." if compressed
                    else f"but instead the buffer has only {end - pos} remaining bytes.")
            raise FormatError(f"Invalid record size: expected {length} bytes in record payload, {tail}",
                              start, "record")
        if length < 6:
            raise FormatError(f"Found invalid record structure: record length {length} is too short",
                              start, "record")
        if view and length > max_record:
            raise FormatError(f"record of {length} bytes is larger than the limit of {max_record} bytes "
                              "(raise --max-decompressed-bytes if it is genuine)", start, "record_too_large")
        attributes = data[pos]
        b = data[pos + 1]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 2
            wide = edge
        else:
            ts_delta, pos = read_varlong(data, pos + 1, body_end)
            wide = True
        if pos >= body_end:         # the timestamp delta used the whole body (maybe up to the data's end)
            raise FormatError("Found invalid record structure: record ends before its offset delta", start,
                              "record")
        b = data[pos]
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            off_delta, pos = read_varint(data, pos, body_end)
        # the key and the value: a varint length (-1: null) then the bytes, decoded inline (the hot path)
        if pos >= body_end:
            raise FormatError("Found invalid record structure: record ends before its key", start, "record")
        b = data[pos]
        if b < 0x80:
            klen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < body_end and data[pos + 1] < 0x80:
            z = (b & 0x7F) | (data[pos + 1] << 7)
            klen = (z >> 1) ^ -(z & 1)
            pos += 2
        else:
            klen, pos = read_varint(data, pos, body_end)
        if klen >= 0:
            if pos + klen > body_end:
                raise FormatError("Found invalid record structure: key extends past the record", start, "record")
            key = data[pos:pos + klen] if not view else bytes(data[pos:pos + klen])
            pos += klen
        else:
            key = None
        if pos >= body_end:
            raise FormatError("Found invalid record structure: record ends before its value", start, "record")
        b = data[pos]
        if b < 0x80:
            vlen = (b >> 1) ^ -(b & 1)
            pos += 1
        elif pos + 1 < body_end and data[pos + 1] < 0x80:
            z = (b & 0x7F) | (data[pos + 1] << 7)
            vlen = (z >> 1) ^ -(z & 1)
            pos += 2
        else:
            vlen, pos = read_varint(data, pos, body_end)
        if vlen >= 0:
            if pos + vlen > body_end:
                raise FormatError("Found invalid record structure: value extends past the record", start, "record")
            value = data[pos:pos + vlen] if not view else bytes(data[pos:pos + vlen])
            pos += vlen
        else:
            value = None
        if pos >= body_end:
            raise FormatError("Found invalid record structure: record ends before its headers", start, "record")
        b = data[pos]
        if b < 0x80:
            nheaders = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            nheaders, pos = read_varint(data, pos, body_end)
        if nheaders:
            if nheaders < 0 or nheaders > body_end - pos:
                raise FormatError(f"Found invalid number of record headers {nheaders}", start, "record")
            headers, pos = _read_headers(data, pos, body_end, nheaders, start, view)
        else:
            headers = ()
        if pos != body_end:
            raise FormatError(f"Invalid record size: expected to read {length} bytes in record payload, "
                              f"but instead read {pos - (body_end - length)}", start, "record")
        if base_sequence < 0:
            seq = -1
        else:
            seq = base_sequence + off_delta        # Kafka wraps past Int.MAX to 0
            if seq > INT_MAX:
                seq -= INT_MAX + 1
        off = base_offset + off_delta
        ts = log_append_time if log_append_time is not None else base_timestamp + ts_delta
        if wide:                                   # Java long arithmetic wraps; keep the values int64
            off, ts = wrap64(off), wrap64(ts)
        yield _make((off, ts, key, value, headers, seq, attributes, None, None))
    return pos


_make = Record._make


def _read_headers(data, pos: int, body_end: int, n: int, start: int, view: bool = False) -> tuple:
    """(the ``n`` headers from ``pos``, the position after them), each checked as ``DefaultRecord.readFrom``
    does: a tuple of (key, value) pairs, or beyond ``HEADERS_INLINE`` of them a ``RecordHeaders`` holding a
    copy of their bytes (the same checks, no object per header)."""
    keep = n <= HEADERS_INLINE
    hs = []
    first = pos
    for _h in range(n):
        b = data[pos] if pos < body_end else 0x80
        if b < 0x80:
            hklen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hklen, pos = read_varint(data, pos, body_end)
        if hklen < 0:
            raise FormatError(f"Invalid negative header key size {hklen}", start, "record")
        kend = pos + hklen
        if kend >= body_end:
            raise FormatError("Found invalid record structure: header extends past the record",
                              start, "record")
        if keep:
            hkey = data[pos:kend] if not view else bytes(data[pos:kend])
        b = data[kend]
        if b < 0x80:
            hvlen = (b >> 1) ^ -(b & 1)
            pos = kend + 1
        else:
            hvlen, pos = read_varint(data, kend, body_end)
        if hvlen >= 0:
            if pos + hvlen > body_end:
                raise FormatError("Found invalid record structure: header value extends past the record",
                                  start, "record")
            if keep:
                hs.append((hkey, data[pos:pos + hvlen] if not view else bytes(data[pos:pos + hvlen])))
            pos += hvlen
        elif keep:
            hs.append((hkey, None))
    if not keep:
        return RecordHeaders(bytes(data[first:pos]), n), pos
    return tuple(hs), pos


# --- builder (fixtures, and later recover/compact) ---------------------------------------------

class RecordSpec(NamedTuple):
    """What a writer supplies for one record of a v2 batch."""
    offset_delta: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


def build_records(records: list[RecordSpec], base_timestamp: int) -> bytes:
    """Serialise records with the declarative ``RecordV2`` schema (the reference for ``encode_record``)."""
    return b"".join(
        schema("RecordV2").build(dict(attributes=0, timestamp_delta=wrap64(r.timestamp - base_timestamp),
                                      offset_delta=r.offset_delta, key=r.key, value=r.value,
                                      headers=[dict(key=k, value=v) for k, v in r.headers]))
        for r in records)


_I64_LO, _I64_HI = -(1 << 63), (1 << 63) - 1


def _zigzag(out: bytearray, n: int) -> None:
    z = (n << 1) ^ (n >> 63)
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def _nullable(out: bytearray, data) -> None:
    if data is None:
        out.append(1)                          # zig-zag -1
    else:
        _zigzag(out, len(data))
        out += data


def encode_record(r: RecordSpec, base_timestamp: int, out: bytearray) -> None:
    """Append record ``r`` to ``out`` as ``build_records`` lays it out (``MemoryRecordsBuilder`` /
    ``DefaultRecord.writeTo``: length, attributes 0, timestamp and offset deltas, key, value, headers), the
    hot path of rebuilding a batch (tests/test_record_formats.py: byte for byte the schema's output).
    The timestamp delta is a long difference in Kafka (``MemoryRecordsBuilder``): it wraps, as it does for a
    record later than a delete horizon that wrapped below zero. Other values outside the 64-bit range, which
    only a test writer asks for, go through the schema."""
    ts_delta = wrap64(r.timestamp - base_timestamp)
    if not (_I64_LO <= ts_delta <= _I64_HI and _I64_LO <= r.offset_delta <= _I64_HI):
        out += build_records([r], base_timestamp)
        return
    body = bytearray(b"\x00")
    _zigzag(body, ts_delta)
    _zigzag(body, r.offset_delta)
    _nullable(body, r.key)
    _nullable(body, r.value)
    _zigzag(body, len(r.headers))
    for k, v in r.headers:
        _zigzag(body, len(k))
        body += k
        _nullable(body, v)
    _zigzag(out, len(body))
    out += body


def build_batch(base_offset: int, records, *, codec: int = 0,
                partition_leader_epoch: int = 0, log_append_time: bool = False,
                is_transactional: bool = False, is_control: bool = False, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, last_offset_delta: int | None = None,
                base_timestamp: int | None = None, max_timestamp: int | None = None,
                delete_horizon_ms: int | None = None, compressor=None) -> bytes:
    """Build one magic-2 batch the way Kafka's ``MemoryRecordsBuilder`` lays it out, CRC included.

    ``records`` (RecordSpecs) may be any iterable and is read once, encoded as it comes: rebuilding a
    batch of millions of records never lists them (compact), and a compressed one is compressed as it is
    encoded (``codecs.StreamCompressor``, a piece of ``_PIECE`` bytes at a time: the same bytes as
    compressing it whole), so only its compressed form is ever whole. ``compressor(codec, raw) -> bytes``
    (default: that) compresses the whole records section at once instead.
    """
    if not 0 <= codec <= 7:
        raise ValueError(f"codec {codec} does not fit the 3 codec bits")
    it = iter(records)
    first = next(it, None)
    if base_timestamp is None:
        first_ts = first.timestamp if first is not None else NO_TIMESTAMP
        base_timestamp = first_ts if delete_horizon_ms is None else delete_horizon_ms
    out = bytearray(RECORD_BATCH_OVERHEAD)              # the header is written last, over these bytes
    stream = None
    if codec and compressor is None:
        from .codecs import StreamCompressor
        stream = StreamCompressor(codec, magic=2)
    raw = bytearray()
    count, max_ts, last_delta = 0, NO_TIMESTAMP, 0
    if first is not None:
        max_ts = first.timestamp
        r = first
        while True:
            encode_record(r, base_timestamp, raw)
            count += 1
            if r.timestamp > max_ts:
                max_ts = r.timestamp
            last_delta = r.offset_delta
            if stream is not None and len(raw) >= _PIECE:
                out += stream.update(raw)
                raw.clear()
            r = next(it, None)
            if r is None:
                break
    if max_timestamp is None:
        max_timestamp = max_ts
    if last_offset_delta is None:
        last_offset_delta = last_delta
    if stream is not None:
        out += stream.update(raw)
        out += stream.finish()
    else:
        out += compressor(codec, raw, magic=2) if codec else raw
    del raw
    attributes = ((delete_horizon_ms is not None) << 6 | is_control << 5 | is_transactional << 4
                  | log_append_time << 3 | codec)
    HEADER.pack_into(out, 0, base_offset, len(out) - 12, partition_leader_epoch, 2, 0,
                     attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                     base_sequence, count)
    from .crc import crc32c
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)
