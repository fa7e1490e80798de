"""``__consumer_offsets`` records of the group coordinator (Kafka ``GroupCoordinatorRecordSerde`` /
``CoordinatorRecordSerde`` and the schemas under ``group-coordinator/src/main/resources/common/message``,
4.0).

Key: int16 record type, then the key struct read *at that version* (each key schema's fields exist only
at its own type number). Value: int16 value version, then the value struct of the key's record type;
a null value is a tombstone. Keys are never flexible; values are flexible from the version noted::

    type key                                         value (versions; flexible from)
    0,1  OffsetCommitKey group, topic, partition      OffsetCommitValue 0-4 (4+): offset, leaderEpoch (3+),
                                                      metadata, commitTimestamp, expireTimestamp (1 only)
    2    GroupMetadataKey group                       GroupMetadataValue 0-4 (4+): classic group and members
                                                      (subscription/assignment: consumer_protocol.py)
    3-8  ConsumerGroup{Metadata, PartitionMetadata, MemberMetadata, TargetAssignmentMetadata,
         TargetAssignmentMember, CurrentMemberAssignment} (KIP-848; values 0, flexible)
    9-15 ShareGroup{PartitionMetadata, MemberMetadata, Metadata, TargetAssignmentMetadata,
         TargetAssignmentMember, CurrentMemberAssignment, StatePartitionMetadata} (KIP-932)

Record types above 15 (streams groups and later additions) are unknown here: reported, never fatal.
"""
from __future__ import annotations

from .kafka_message import Decoded, Message, build_version_prefixed, field as F, read_version_prefixed


def _key(name: str, rtype: int, *names: str) -> Message:
    v = str(rtype)
    fields = [F(n, "int32" if n == "partition" else "string", v) for n in names]
    return Message(name, v, "none", fields)


_TOPIC_PARTITIONS = (F("topicId", "uuid"), F("partitions", "[]int32"))
_TOPIC_METADATA = (
    F("topicId", "uuid"), F("topicName", "string"), F("numPartitions", "int32"),
    F("partitionMetadata", "[]struct", fields=(F("partition", "int32"), F("racks", "[]string"))),
)

KEYS: dict[int, Message] = {
    0: Message("OffsetCommitKey", "0-1", "none",
               [F("group", "string", "0-1"), F("topic", "string", "0-1"), F("partition", "int32", "0-1")]),
    2: _key("GroupMetadataKey", 2, "group"),
    3: _key("ConsumerGroupMetadataKey", 3, "groupId"),
    4: _key("ConsumerGroupPartitionMetadataKey", 4, "groupId"),
    5: _key("ConsumerGroupMemberMetadataKey", 5, "groupId", "memberId"),
    6: _key("ConsumerGroupTargetAssignmentMetadataKey", 6, "groupId"),
    7: _key("ConsumerGroupTargetAssignmentMemberKey", 7, "groupId", "memberId"),
    8: _key("ConsumerGroupCurrentMemberAssignmentKey", 8, "groupId", "memberId"),
    9: _key("ShareGroupPartitionMetadataKey", 9, "groupId"),
    10: _key("ShareGroupMemberMetadataKey", 10, "groupId", "memberId"),
    11: _key("ShareGroupMetadataKey", 11, "groupId"),
    12: _key("ShareGroupTargetAssignmentMetadataKey", 12, "groupId"),
    13: _key("ShareGroupTargetAssignmentMemberKey", 13, "groupId", "memberId"),
    14: _key("ShareGroupCurrentMemberAssignmentKey", 14, "groupId", "memberId"),
    15: _key("ShareGroupStatePartitionMetadataKey", 15, "groupId"),
}
KEYS[1] = KEYS[0]

_OFFSET_COMMIT = Message("OffsetCommitValue", "0-4", "4+", [
    F("offset", "int64"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commitTimestamp", "int64"),
    F("expireTimestamp", "int64", "1", default=-1),
    F("topicId", "uuid", tagged="4+", tag=0),      # 4.x (read from the 4.4.0 classes; a broker test prints it)
])

_GROUP_METADATA = Message("GroupMetadataValue", "0-4", "4+", [
    F("protocolType", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", "[]struct", fields=(
        F("memberId", "string"),
        F("groupInstanceId", "string", "3+", nullable="3+", default=None),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("rebalanceTimeout", "int32", "1+", default=-1),
        F("sessionTimeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    )),
])

VALUES: dict[int, Message] = {
    0: _OFFSET_COMMIT,
    1: _OFFSET_COMMIT,
    2: _GROUP_METADATA,
    3: Message("ConsumerGroupMetadataValue", "0", "0+", [F("epoch", "int32")]),
    4: Message("ConsumerGroupPartitionMetadataValue", "0", "0+", [
        F("topics", "[]struct", fields=_TOPIC_METADATA)]),
    5: Message("ConsumerGroupMemberMetadataValue", "0", "0+", [
        F("instanceId", "string", nullable="0+"),
        F("rackId", "string", nullable="0+"),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("subscribedTopicNames", "[]string"),
        F("subscribedTopicRegex", "string", nullable="0+"),
        F("rebalanceTimeoutMs", "int32", default=-1),
        F("serverAssignor", "string", nullable="0+"),
        F("classicMemberMetadata", "struct", nullable="0+", tagged="0+", tag=0, default=None, fields=(
            F("sessionTimeoutMs", "int32"),
            F("supportedProtocols", "[]struct", fields=(F("name", "string"), F("metadata", "bytes"))),
        )),
    ]),
    6: Message("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", [F("assignmentEpoch", "int32")]),
    7: Message("ConsumerGroupTargetAssignmentMemberValue", "0", "0+", [
        F("topicPartitions", "[]struct", fields=_TOPIC_PARTITIONS)]),
    8: Message("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+", [
        F("memberEpoch", "int32"), F("previousMemberEpoch", "int32"), F("state", "int8"),
        F("assignedPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
        F("partitionsPendingRevocation", "[]struct", fields=_TOPIC_PARTITIONS)]),
    9: Message("ShareGroupPartitionMetadataValue", "0", "0+", [
        F("topics", "[]struct", fields=_TOPIC_METADATA)]),
    10: Message("ShareGroupMemberMetadataValue", "0", "0+", [
        F("rackId", "string", nullable="0+"), F("clientId", "string"), F("clientHost", "string"),
        F("subscribedTopicNames", "[]string")]),
    11: Message("ShareGroupMetadataValue", "0", "0+", [F("epoch", "int32")]),
    12: Message("ShareGroupTargetAssignmentMetadataValue", "0", "0+", [F("assignmentEpoch", "int32")]),
    13: Message("ShareGroupTargetAssignmentMemberValue", "0", "0+", [
        F("topicPartitions", "[]struct", fields=_TOPIC_PARTITIONS)]),
    14: Message("ShareGroupCurrentMemberAssignmentValue", "0", "0+", [
        F("memberEpoch", "int32"), F("previousMemberEpoch", "int32"), F("state", "int8"),
        F("assignedPartitions", "[]struct", fields=_TOPIC_PARTITIONS)]),
    15: Message("ShareGroupStatePartitionMetadataValue", "0", "0+", [
        F("initializedTopics", "[]struct", fields=(F("topicId", "uuid"), F("topicName", "string"),
                                                   F("partitions", "[]int32"))),
        F("deletingTopics", "[]struct", fields=(F("topicId", "uuid"), F("topicName", "string")))]),
}

OFFSET_COMMIT, GROUP_METADATA = 1, 2


def read_key(key: bytes) -> Decoded:
    """Decode a record key; ``message`` is None for a record type not in ``KEYS``."""
    return read_version_prefixed(key, KEYS)


def read_value(record_type: int, value: bytes) -> Decoded:
    """Decode the value of a record whose key has ``record_type`` (which must be in ``VALUES``)."""
    return read_version_prefixed(value, {}, VALUES[record_type])


def build_key(record_type: int, data: dict) -> bytes:
    return build_version_prefixed(KEYS[record_type], record_type, data)


def build_value(record_type: int, data: dict, version: int) -> bytes:
    return build_version_prefixed(VALUES[record_type], version, data)
