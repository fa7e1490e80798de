"""Framing of a ``.log`` (or KRaft ``.checkpoint``) region and one view over batches of every magic.

Mirrors Kafka's ``FileLogInputStream`` (the reader used by recovery, the cleaner and DumpLogSegments); its
framing rules (what ends a walk, how long an entry is) are ``framing.frame``'s, the one walk step this reader
and ``columns._scan_pure`` share.

``BatchV2View`` and ``LegacyBatchView`` expose the same attributes (those DumpLogSegments prints) so the
engine and renderers need not care about the magic.

Every reader shares one reporting path for a batch that cannot be decoded: ``records()`` raises
``FormatError`` carrying the file (the ``name`` attribute of the buffer, set by the engine's maps), the
batch's file position and its offset; decompression is bounded (``kafkalog_formats.limits``); records
are read from the map through memoryviews, never from a copy of a huge batch, and CRCs of huge
batches are computed window by window.
"""
from __future__ import annotations

from typing import Iterator

from . import legacy, native
from .codecs import V2, codec_name
from .crc import crc32c_region
from .errors import FormatError
# the framing constants and ``Stop`` are framing's, imported from here by readers of the batch views too
from .framing import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, PREFIX, RECORD_OVERHEAD_V0, Stop, frame  # noqa: F401
from .record_batch import (ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL,
                           CRC_START, HEADER, RECORD_BATCH_OVERHEAD, Record, iter_records, sequence_at, wrap64)

class _BatchV2:
    """What a magic ≥ 2 batch view offers beyond its header fields (``PureBatchV2View`` reads those with
    struct, the compiled ``_native.BatchBase`` in C)."""

    __slots__ = ()

    offset_field = property(lambda self: self.base_offset)
    #: ``baseOffset + lastOffsetDelta`` as Kafka's ``DefaultRecordBatch.lastOffset`` computes it (a long sum:
    #: a hostile base offset near Long.MAX wraps, it never leaves the int64 range)
    last_offset = property(lambda self: wrap64(self.base_offset + self.last_offset_delta))
    codec = property(lambda self: self.attributes & 0x07)
    is_transactional = property(lambda self: bool(self.attributes & ATTR_TRANSACTIONAL))
    is_control = property(lambda self: bool(self.attributes & ATTR_CONTROL))
    log_append_time = property(lambda self: bool(self.attributes & ATTR_TIMESTAMP_TYPE))

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & ATTR_TIMESTAMP_TYPE else "CreateTime"

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        return sequence_at(self.base_sequence, self.last_offset_delta)

    @property
    def codec_name(self) -> str:
        return _codec_label(self.codec)

    def computed_crc(self) -> int:
        return crc32c_region(self.buf, self.position + CRC_START, self.position + self.size)

    def is_valid(self) -> bool:
        return self.size >= RECORD_BATCH_OVERHEAD and self.computed_crc() == self.crc

    def raw(self) -> bytes:
        return bytes(self.buf[self.position:self.position + self.size])

    def records(self, max_output: int | None = None):
        """Decode the records (decompressing, bounded by ``max_output`` or the process limit): an iterator.

        A FormatError names the file (when the buffer has a ``name``), the file position (the record's
        for an uncompressed batch, the batch's otherwise) and the batch's base offset. On the compiled
        path (``BatchV2View.records`` is ``_native.BatchBase.records``) a batch of up to 8,192 records is
        decoded in one C call; anything else, and every error, is this generator's.
        """
        return self._records(max_output)

    def _records(self, max_output: int | None):
        start = self.position + RECORD_BATCH_OVERHEAD
        end = self.position + self.size
        lat = self.max_timestamp if self.attributes & ATTR_TIMESTAMP_TYPE else None
        codec = self.attributes & 0x07
        if codec:
            from .codecs import decompress
            try:
                data = decompress(codec, memoryview(self.buf)[start:end], magic=self.magic,
                                  max_output=max_output)
            except FormatError as e:
                raise _located(e, self.buf, self.position, self.base_offset) from None
            base = self.position
        else:
            data = memoryview(self.buf)[start:end]
            base = start
        if native.ext is not None:           # the compiled decoder; None: the pure one reports the error
            records = native.records(data, self.count, self.base_offset, self.base_timestamp,
                                     self.base_sequence, lat)
            if records is not None:
                yield from records
                return
        try:
            yield from iter_records(data, self.count, self.base_offset, self.base_timestamp,
                                    self.base_sequence, lat, compressed=bool(codec))
        except FormatError as e:
            raise _located(e, self.buf, base + (e.position or 0) if not codec else base,
                           self.base_offset) from None


class PureBatchV2View(_BatchV2):
    """A magic ≥ 2 batch inside ``buf`` at ``position`` (header decoded, records on demand)."""

    __slots__ = ("buf", "position", "size", "base_offset", "partition_leader_epoch", "magic", "crc",
                 "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                 "producer_epoch", "base_sequence", "count")

    def __init__(self, buf, position: int) -> None:
        (self.base_offset, length, self.partition_leader_epoch, self.magic, self.crc, self.attributes,
         self.last_offset_delta, self.base_timestamp, self.max_timestamp, self.producer_id,
         self.producer_epoch, self.base_sequence, self.count) = HEADER.unpack_from(buf, position)
        self.buf = buf
        self.position = position
        self.size = LOG_OVERHEAD + length


#: ``codecs.decompress`` of a v2 records section (the bound in force read at each call), done in C by the
#: compiled record path where it can be
_decompress_v2 = V2


if native.ext is not None:
    # the compiled view is a static C type (no GC a batch): _BatchV2's properties and methods put on it,
    # its ``records`` the C one (which falls back on ``_records``)
    native.ext.adopt(native.ext.BatchBase, {k: v for k, v in vars(_BatchV2).items() if k != "records"})
    native.ext.set_batch_support(Record, _decompress_v2, native)
    BatchV2View = native.ext.BatchBase
else:
    BatchV2View = PureBatchV2View


class LegacyBatchView:
    """A magic 0/1 entry (one outer message, maybe a compressed wrapper) at ``position``."""

    __slots__ = ("buf", "position", "size", "message", "_inner")

    partition_leader_epoch = -1
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1
    is_transactional = False
    is_control = False
    delete_horizon_ms = None
    count = None

    def __init__(self, buf, position: int) -> None:
        self.buf = buf
        self.position = position
        self.message = legacy.parse_message(buf, position)
        self.size = LOG_OVERHEAD + self.message.size
        self._inner = None

    magic = property(lambda self: self.message.magic)
    crc = property(lambda self: self.message.crc)
    attributes = property(lambda self: self.message.attributes)
    offset_field = property(lambda self: self.message.offset)
    last_offset = property(lambda self: self.message.offset)
    max_timestamp = property(lambda self: self.message.timestamp)
    codec = property(lambda self: self.message.codec)
    log_append_time = property(lambda self: self.message.log_append_time)

    @property
    def codec_name(self) -> str:
        return _codec_label(self.codec)

    @property
    def timestamp_type(self) -> str:
        if self.message.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.message.attributes & 0x08 else "CreateTime"

    @property
    def base_offset(self) -> int:
        """First inner offset: needs decompression for wrappers (as in Kafka)."""
        if self.codec == 0:
            return self.message.offset
        return next(iter(self.records())).offset

    def computed_crc(self) -> int:
        return legacy.message_crc(self.buf, self.position, self.message.size)

    def is_valid(self) -> bool:
        return self.size >= LOG_OVERHEAD + RECORD_OVERHEAD_V0 and self.computed_crc() == self.crc

    def raw(self) -> bytes:
        return bytes(self.buf[self.position:self.position + self.size])

    def records(self, max_output: int | None = None):
        if self._inner is None:
            try:
                self._inner = list(legacy.to_records(self.message, self.is_valid(), max_output=max_output))
            except FormatError as e:
                raise _located(e, self.buf, self.position, self.message.offset) from None
        return iter(self._inner)


def buffer_name(buf) -> str | None:
    """The file a buffer was mapped from, when the engine said (``MappedFile`` maps carry ``name``)."""
    name = getattr(buf, "name", None)
    return name if isinstance(name, str) else None


def _located(e: FormatError, buf, position: int, offset: int) -> FormatError:
    return FormatError(e.reason, position, e.kind, buffer_name(buf) or e.file, offset)


def _codec_label(codec: int) -> str:
    """Kafka's codec name, or ``unknown(N)`` for ids 5-7 (decoding such a batch fails later, reported)."""
    try:
        return codec_name(codec)
    except FormatError:
        return f"unknown({codec})"


class BatchReader:
    """Iterate the batches of ``buf[start:end]``; after the loop ``stop`` says why it ended (or None)."""

    def __init__(self, buf, start: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.start = start
        self.end = len(buf) if end is None else min(end, len(buf))
        self.stop: Stop | None = None
        self.position = start

    def __iter__(self) -> Iterator[BatchV2View | LegacyBatchView]:
        if native.ext is not None and BatchV2View is not PureBatchV2View:
            # whole v2 batches walked in C, every other step (legacy entries, the end) by ``_step``
            return native.ext.batch_iter(self.buf, self.start, self.end, BatchV2View, self._step)
        return self._walk()

    def _walk(self) -> Iterator[BatchV2View | LegacyBatchView]:
        pos = self.start
        while (step := self._step(pos)) is not None:
            yield step[0]
            pos = step[1]

    def _step(self, pos: int):
        """The entry at ``pos`` and the position after it, or None where the walk ends (``stop`` says why,
        or None at the end of the region)."""
        buf = self.buf
        self.position = pos
        f = frame(buf, pos, self.end)
        if f is None:
            return None
        if f.__class__ is Stop:
            self.stop = f
            return None
        magic, size = f
        if magic >= 2:
            return BatchV2View(buf, pos), pos + size
        try:
            return LegacyBatchView(buf, pos), pos + size
        except FormatError as e:
            self.stop = Stop(pos, "corrupt_message", e.reason, self.end - pos)
            return None
