"""``__remote_log_metadata`` records of tiered storage (Kafka ``RemoteLogMetadataSerde`` and the schemas
under ``storage/src/main/resources/message``, 3.6-4.0).

Values use the metadata-record frame (``metadata_records.py``): uvarint frame version 1, uvarint apiKey,
uvarint version, flexible body::

    0 RemoteLogSegmentMetadataRecord        remoteLogSegmentId {topicIdPartition {name, id, partition}, id},
                                            startOffset, endOffset, brokerId, maxTimestampMs,
                                            eventTimestampMs, segmentLeaderEpochs [leaderEpoch, offset],
                                            segmentSizeInBytes, customMetadata nullable bytes,
                                            remoteLogSegmentState int8
    1 RemoteLogSegmentMetadataUpdateRecord  remoteLogSegmentId, brokerId, eventTimestampMs, customMetadata,
                                            remoteLogSegmentState
    2 RemotePartitionDeleteMetadataRecord   topicIdPartition, brokerId, eventTimestampMs,
                                            remotePartitionDeleteState int8
    3 RemoteLogSegmentMetadataSnapshotRecord segmentId uuid, then as record 0 without the id struct

DumpLogSegments prints Kafka's ``toString`` of the objects; kafkalog prints the same JSON envelope as
for cluster metadata (documented difference).
"""
from __future__ import annotations

from construct import GreedyBytes, Struct, VarInt

from .errors import FormatError
from .kafka_message import Message, field as F
from .metadata_records import FRAME_VERSION, MetadataRecord, read_body, read_short_uvarint

_TIP = (F("name", "string"), F("id", "uuid"), F("partition", "int32"))
_SEGMENT_ID = (F("topicIdPartition", "struct", fields=_TIP), F("id", "uuid"))
_EPOCHS = (F("leaderEpoch", "int32"), F("offset", "int64"))

RECORDS: dict[int, Message] = {m.api_key: m for m in (
    Message("RemoteLogSegmentMetadataRecord", "0", "0+", [
        F("remoteLogSegmentId", "struct", fields=_SEGMENT_ID),
        F("startOffset", "int64"), F("endOffset", "int64"), F("brokerId", "int32"),
        F("maxTimestampMs", "int64"), F("eventTimestampMs", "int64"),
        F("segmentLeaderEpochs", "[]struct", fields=_EPOCHS), F("segmentSizeInBytes", "int32"),
        F("customMetadata", "bytes", nullable="0+", default=None), F("remoteLogSegmentState", "int8"),
    ], api_key=0),
    Message("RemoteLogSegmentMetadataUpdateRecord", "0", "0+", [
        F("remoteLogSegmentId", "struct", fields=_SEGMENT_ID), F("brokerId", "int32"),
        F("eventTimestampMs", "int64"), F("customMetadata", "bytes", nullable="0+", default=None),
        F("remoteLogSegmentState", "int8"),
    ], api_key=1),
    Message("RemotePartitionDeleteMetadataRecord", "0", "0+", [
        F("topicIdPartition", "struct", fields=_TIP), F("brokerId", "int32"), F("eventTimestampMs", "int64"),
        F("remotePartitionDeleteState", "int8"),
    ], api_key=2),
    Message("RemoteLogSegmentMetadataSnapshotRecord", "0", "0+", [
        F("segmentId", "uuid"), F("startOffset", "int64"), F("endOffset", "int64"), F("brokerId", "int32"),
        F("maxTimestampMs", "int64"), F("eventTimestampMs", "int64"),
        F("segmentLeaderEpochs", "[]struct", fields=_EPOCHS), F("segmentSizeInBytes", "int32"),
        F("customMetadata", "bytes", nullable="0+", default=None), F("remoteLogSegmentState", "int8"),
    ], api_key=3),
)}

Envelope = Struct("frame_version" / VarInt, "type" / VarInt, "version" / VarInt, "body" / GreedyBytes)


def read_remote_log_metadata(value: bytes) -> MetadataRecord:
    """Same rules as ``metadata_records.read_metadata_record``, with this family's record types."""
    if value is None:
        raise FormatError("remote log metadata record has a null value", None, "decode")
    frame, pos = read_short_uvarint(value, 0, "frame version")
    if frame != FRAME_VERSION:
        raise FormatError(f"unknown frame version {frame} (only frame version {FRAME_VERSION} is supported)",
                          0, "decode")
    api_key, pos = read_short_uvarint(value, pos, "type")
    version, pos = read_short_uvarint(value, pos, "version")
    return read_body(value, pos, api_key, version, RECORDS)


def build_remote_log_metadata(api_key: int, data: dict, version: int = 0) -> bytes:
    return Envelope.build(dict(frame_version=FRAME_VERSION, type=api_key, version=version,
                               body=RECORDS[api_key].build(data, version)))
