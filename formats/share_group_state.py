"""``__share_group_state`` records of the share coordinator (Kafka ``ShareCoordinatorRecordSerde`` and the
``ShareSnapshot*``/``ShareUpdate*`` schemas under ``share-coordinator/src/main/resources/common/message``,
4.0-dev; KIP-932 marked these schemas as still subject to incompatible change).

Same framing as ``__consumer_offsets``: key = int16 record type (0 snapshot, 1 update) + key struct read at
that version; value = int16 value version + value struct (flexible)::

    key     groupId string | topicId uuid | partition int32
    value   snapshotEpoch uint16 (v0) | stateEpoch int32 (snapshot only) | leaderEpoch int32
            | startOffset int64 (v0) | stateBatches [firstOffset int64, lastOffset int64,
              deliveryState int8, deliveryCount int16] (v0)

Kafka 4.0-dev writes update values at version 1, where only ``leaderEpoch`` is defined; the rest of such a
value is reported as unparsed bytes.
"""
from __future__ import annotations

from .kafka_message import Decoded, Message, build_version_prefixed, field as F, read_version_prefixed

_BATCH = (F("firstOffset", "int64", "0"), F("lastOffset", "int64", "0"), F("deliveryState", "int8", "0"),
          F("deliveryCount", "int16", "0"))

KEYS: dict[int, Message] = {
    0: Message("ShareSnapshotKey", "0", "none", [
        F("groupId", "string", "0"), F("topicId", "uuid", "0"), F("partition", "int32", "0")]),
    1: Message("ShareUpdateKey", "1", "none", [
        F("groupId", "string", "1"), F("topicId", "uuid", "1"), F("partition", "int32", "1")]),
}

VALUES: dict[int, Message] = {
    0: Message("ShareSnapshotValue", "0", "0+", [
        F("snapshotEpoch", "uint16", "0"), F("stateEpoch", "int32"), F("leaderEpoch", "int32"),
        F("startOffset", "int64", "0"), F("stateBatches", "[]struct", "0", fields=_BATCH)]),
    1: Message("ShareUpdateValue", "0", "0+", [
        F("snapshotEpoch", "uint16", "0"), F("leaderEpoch", "int32"),
        F("startOffset", "int64", "0"), F("stateBatches", "[]struct", "0", fields=_BATCH)]),
}


def read_key(key: bytes) -> Decoded:
    return read_version_prefixed(key, KEYS)


def read_value(record_type: int, value: bytes) -> Decoded:
    return read_version_prefixed(value, {}, VALUES[record_type])


def build_key(record_type: int, data: dict) -> bytes:
    return build_version_prefixed(KEYS[record_type], record_type, data)


def build_value(record_type: int, data: dict, version: int = 0) -> bytes:
    return build_version_prefixed(VALUES[record_type], version, data)
