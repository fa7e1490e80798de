"""The classic consumer protocol's subscription and assignment (Kafka ``ConsumerProtocol``,
``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` schemas, versions 0-3, never flexible).

They travel as opaque bytes inside ``GroupMetadataValue`` members (``__consumer_offsets``), each with an
int16 version prefix::

    subscription  int16 version | topics [string] | userData nullable bytes
                  | ownedPartitions [topic string, partitions [int32]] (v1+) | generationId int32 (v2+, -1)
                  | rackId nullable string (v3+)
    assignment    int16 version | assignedPartitions [topic string, partitions [int32]]
                  | userData nullable bytes

A newer version is read with the fields known here; bytes after them are ignored, as Kafka does.
"""
from __future__ import annotations

from .kafka_message import Decoded, Message, build_version_prefixed, field as F, read_version_prefixed

PROTOCOL_TYPE = "consumer"

_TOPIC_PARTITION = (F("topic", "string"), F("partitions", "[]int32"))

Subscription = Message("ConsumerProtocolSubscription", "0-3", "none", [
    F("topics", "[]string"),
    F("userData", "bytes", nullable="0+", default=None),
    F("ownedPartitions", "[]struct", "1+", fields=_TOPIC_PARTITION),
    F("generationId", "int32", "2+", default=-1),
    F("rackId", "string", "3+", nullable="3+", default=None),
])

Assignment = Message("ConsumerProtocolAssignment", "0-3", "none", [
    F("assignedPartitions", "[]struct", fields=_TOPIC_PARTITION),
    F("userData", "bytes", nullable="0+", default=None),
])


def read_subscription(data: bytes) -> Decoded:
    return read_version_prefixed(data, {}, Subscription)


def read_assignment(data: bytes) -> Decoded:
    return read_version_prefixed(data, {}, Assignment)


def build_subscription(value: dict, version: int = 3) -> bytes:
    return build_version_prefixed(Subscription, version, value)


def build_assignment(value: dict, version: int = 3) -> bytes:
    return build_version_prefixed(Assignment, version, value)
