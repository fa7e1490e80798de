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


#: kinds of FormatError ``subscription_topics_v0`` raises: Kafka's SchemaException (a fixed-size field cut
#: short: the coordinator catches it and does not know the subscribed topics) and a RuntimeException of the
#: generated reader (a negative or overlong length: nothing catches it, the partition's load fails)
SCHEMA, LOAD_FAILS = "subscription_schema", "subscription_length"


def subscription_topics_v0(data: bytes) -> list[str]:
    """The topics of a subscription read as its version-0 prefix, whatever version it says, as both group
    coordinators read a classic consumer group's members (3.x ``GroupMetadata.computeSubscribedTopics``, 4.x
    ``ClassicGroup.computeSubscribedTopics``: ``deserializeVersion``, then the fields of version 0; bytes
    after them are ignored). Names are decoded as Java's ``new String(bytes, UTF_8)`` (invalid bytes
    replaced). Raises FormatError of kind ``SCHEMA`` or ``LOAD_FAILS`` (see above)."""
    import struct
    from .errors import FormatError
    mv = memoryview(data)
    pos = 0

    def fixed(fmt: str, what: str):
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(mv):
            raise FormatError(f"subscription cut short in {what} (Kafka: SchemaException, buffer underflow)",
                              pos, SCHEMA)
        (v,) = struct.unpack_from(fmt, mv, pos)
        pos += size
        return v

    fixed(">h", "the version")
    count = fixed(">i", "the topic count")
    if count < 0:
        raise FormatError("subscription topics serialized as null (a non-nullable field)", pos - 4, LOAD_FAILS)
    if count > len(mv) - pos:
        raise FormatError(f"subscription of {count} topics in {len(mv) - pos} byte(s)", pos - 4, LOAD_FAILS)
    topics = []
    for _ in range(count):
        n = fixed(">h", "a topic name's length")
        if n < 0 or pos + n > len(mv):
            raise FormatError(f"subscription topic name of length {n} with {len(mv) - pos} byte(s) left", pos - 2,
                              LOAD_FAILS)
        topics.append(bytes(mv[pos:pos + n]).decode("utf-8", "replace"))
        pos += n
    n = fixed(">i", "the user data's length")
    if n > len(mv) - pos:
        raise FormatError(f"subscription user data of {n} byte(s) with {len(mv) - pos} left", pos - 4, LOAD_FAILS)
    return topics
