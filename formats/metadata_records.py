"""KRaft metadata records: the values of ``__cluster_metadata`` batches and KRaft snapshots (Kafka
``MetadataRecordSerde`` / ``AbstractApiMessageSerde``, ``MetadataRecordType`` and the schemas under
``metadata/src/main/resources/common/metadata``, 4.0; the additions of 4.4 read from that release's classes).

Record value (records have no key)::

    uvarint  frame version   always 1 (0 was the 2.8 preview format and is refused)
    uvarint  record type     the apiKey below
    uvarint  record version
    ...      the record, flexible encoding (compact strings/arrays, tagged fields) at every version

Nothing may follow the record ("Found N byte(s) of garbage after ..."). DumpLogSegments names a type by
the UPPER_SNAKE form of its message name (``TOPIC_RECORD``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from construct import GreedyBytes, Struct, VarInt

from .errors import FormatError
from .kafka_message import Message, field as F
from .varint import read_unsigned_varint

FRAME_VERSION = 1

_ENDPOINT = (F("name", "string"), F("host", "string"), F("port", "uint16"), F("securityProtocol", "int16"))
_FEATURE = (F("name", "string"), F("minSupportedVersion", "int16"), F("maxSupportedVersion", "int16"))

RECORDS: dict[int, Message] = {m.api_key: m for m in (
    Message("RegisterBrokerRecord", "0-4", "0+", [
        F("brokerId", "int32"),
        F("isMigratingZkBroker", "bool", "2+"),
        F("incarnationId", "uuid"),
        F("brokerEpoch", "int64"),
        F("endPoints", "[]struct", fields=_ENDPOINT),
        F("features", "[]struct", fields=_FEATURE),
        F("rack", "string", nullable="0+"),
        F("fenced", "bool", default=True),
        F("inControlledShutdown", "bool", "1+"),
        F("logDirs", "[]uuid", tagged="3+", tag=0),
        # 4.4: log directories cordoned off (read from the 4.4.0 classes' schemas; a broker test reads them)
        F("cordonedLogDirs", "[]uuid", nullable="4+", tagged="4+", tag=1, default=None),
    ], api_key=0),
    Message("UnregisterBrokerRecord", "0", "0+", [F("brokerId", "int32"), F("brokerEpoch", "int64")], api_key=1),
    Message("TopicRecord", "0", "0+", [F("name", "string"), F("topicId", "uuid")], api_key=2),
    Message("PartitionRecord", "0-2", "0+", [
        F("partitionId", "int32", default=-1),
        F("topicId", "uuid"),
        F("replicas", "[]int32"),
        F("isr", "[]int32"),
        F("removingReplicas", "[]int32"),
        F("addingReplicas", "[]int32"),
        F("leader", "int32", default=-1),
        F("leaderRecoveryState", "int8", tagged="0+", tag=0),
        F("leaderEpoch", "int32", default=-1),
        F("partitionEpoch", "int32", default=-1),
        F("directories", "[]uuid", "1+"),
        F("eligibleLeaderReplicas", "[]int32", nullable="2+", tagged="2+", tag=1, default=None),
        F("lastKnownElr", "[]int32", nullable="2+", tagged="2+", tag=2, default=None),
    ], api_key=3),
    Message("ConfigRecord", "0", "0+", [
        F("resourceType", "int8"), F("resourceName", "string"), F("name", "string"),
        F("value", "string", nullable="0+"),
    ], api_key=4),
    Message("PartitionChangeRecord", "0-2", "0+", [
        F("partitionId", "int32", default=-1),
        F("topicId", "uuid"),
        F("isr", "[]int32", nullable="0+", tagged="0+", tag=0, default=None),
        F("leader", "int32", tagged="0+", tag=1, default=-2),
        F("replicas", "[]int32", nullable="0+", tagged="0+", tag=2, default=None),
        F("removingReplicas", "[]int32", nullable="0+", tagged="0+", tag=3, default=None),
        F("addingReplicas", "[]int32", nullable="0+", tagged="0+", tag=4, default=None),
        F("leaderRecoveryState", "int8", tagged="0+", tag=5, default=-1),
        F("directories", "[]uuid", nullable="1+", tagged="1+", tag=8, default=None),
        F("eligibleLeaderReplicas", "[]int32", nullable="2+", tagged="2+", tag=6, default=None),
        F("lastKnownElr", "[]int32", nullable="2+", tagged="2+", tag=7, default=None),
    ], api_key=5),
    Message("FenceBrokerRecord", "0", "0+", [F("id", "int32"), F("epoch", "int64")], api_key=7),
    Message("UnfenceBrokerRecord", "0", "0+", [F("id", "int32"), F("epoch", "int64")], api_key=8),
    Message("RemoveTopicRecord", "0", "0+", [F("topicId", "uuid")], api_key=9),
    Message("DelegationTokenRecord", "0", "0+", [
        F("owner", "string"), F("requester", "string"), F("renewers", "[]string"),
        F("issueTimestamp", "int64"), F("maxTimestamp", "int64"), F("expirationTimestamp", "int64"),
        F("tokenId", "string"),
    ], api_key=10),
    Message("UserScramCredentialRecord", "0", "0+", [
        F("name", "string"), F("mechanism", "int8"), F("salt", "bytes"), F("storedKey", "bytes"),
        F("serverKey", "bytes"), F("iterations", "int32"),
    ], api_key=11),
    Message("FeatureLevelRecord", "0", "0+", [F("name", "string"), F("featureLevel", "int16")], api_key=12),
    Message("ClientQuotaRecord", "0", "0+", [
        F("entity", "[]struct", fields=(F("entityType", "string"), F("entityName", "string", nullable="0+"))),
        F("key", "string"), F("value", "float64"), F("remove", "bool"),
    ], api_key=14),
    Message("ProducerIdsRecord", "0", "0+", [
        F("brokerId", "int32"), F("brokerEpoch", "int64", default=-1), F("nextProducerId", "int64"),
    ], api_key=15),
    Message("BrokerRegistrationChangeRecord", "0-3", "0+", [
        F("brokerId", "int32"),
        F("brokerEpoch", "int64"),
        F("fenced", "int8", tagged="0+", tag=0),
        F("inControlledShutdown", "int8", tagged="1+", tag=1),
        F("logDirs", "[]uuid", tagged="2+", tag=2),
        F("cordonedLogDirs", "[]uuid", nullable="3+", tagged="3+", tag=3, default=None),    # 4.4
    ], api_key=17),
    Message("AccessControlEntryRecord", "0", "0+", [
        F("id", "uuid"), F("resourceType", "int8"), F("resourceName", "string"), F("patternType", "int8"),
        F("principal", "string"), F("host", "string"), F("operation", "int8"), F("permissionType", "int8"),
    ], api_key=18),
    Message("RemoveAccessControlEntryRecord", "0", "0+", [F("id", "uuid")], api_key=19),
    Message("NoOpRecord", "0", "0+", [], api_key=20),
    Message("ZkMigrationStateRecord", "0", "0+", [F("zkMigrationState", "int8")], api_key=21),
    Message("RemoveUserScramCredentialRecord", "0", "0+", [F("name", "string"), F("mechanism", "int8")],
            api_key=22),
    Message("BeginTransactionRecord", "0", "0+", [
        F("name", "string", nullable="0+", tagged="0+", tag=0, default=None)], api_key=23),
    Message("EndTransactionRecord", "0", "0+", [], api_key=24),
    Message("AbortTransactionRecord", "0", "0+", [
        F("reason", "string", nullable="0+", tagged="0+", tag=0, default=None)], api_key=25),
    Message("RemoveDelegationTokenRecord", "0", "0+", [F("tokenId", "string")], api_key=26),
    Message("RegisterControllerRecord", "0", "0+", [
        F("controllerId", "int32"),
        F("incarnationId", "uuid"),
        F("zkMigrationReady", "bool"),
        F("endPoints", "[]struct", fields=_ENDPOINT),
        F("features", "[]struct", fields=_FEATURE),
    ], api_key=27),
    # 4.x: ELR cleared for a topic (or every topic when null) and a controller removed from the quorum
    Message("ClearElrRecord", "0", "0+", [F("topicName", "string")], api_key=28),
    Message("UnregisterControllerRecord", "0", "0+", [F("controllerId", "int32")], api_key=29),
)}


@lru_cache(maxsize=None)
def type_name(message_name: str) -> str:
    """``TopicRecord`` → ``TOPIC_RECORD`` (Kafka ``MessageGenerator.toSnakeCase``, upper-cased)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", message_name).upper()


#: Declarative envelope: the three uvarints, then the record body (read with ``RECORDS[type]``).
MetadataRecordEnvelope = Struct("frame_version" / VarInt, "type" / VarInt, "version" / VarInt,
                                "body" / GreedyBytes)


class MetadataRecord(NamedTuple):
    api_key: int
    version: int
    message: Message | None        # None: a record type this table does not know
    data: dict | None
    unparsed: int                  # bytes after the known fields (only for versions above the known range)

    @property
    def name(self) -> str | None:
        return None if self.message is None else type_name(self.message.name)

    @property
    def known_version(self) -> bool:
        return self.message is not None and self.message.known(self.version)


def read_short_uvarint(buf, pos: int, what: str) -> tuple[int, int]:
    v, p = read_unsigned_varint(buf, pos, len(buf))
    if v > 0x7FFF:
        raise FormatError(f"Value for {what} was too large: {v}", pos, "decode")
    return v, p


def read_metadata_record(value: bytes) -> MetadataRecord:
    """Decode one metadata record value. Raises ``FormatError`` with Kafka's reasons for a bad frame,
    truncated fields and garbage after a record of a known version; a version above the known range is
    decoded as far as its known fields go (``unparsed`` counts the rest)."""
    if value is None:
        raise FormatError("metadata record has a null value", None, "decode")
    try:
        frame, pos = read_short_uvarint(value, 0, "frame version")
        if frame == 0:
            raise FormatError("Could not deserialize metadata record with frame version 0. Note that upgrades "
                              "from the preview release of KRaft in 2.8 to newer versions are not supported.",
                              0, "decode")
        if frame != FRAME_VERSION:
            raise FormatError(f"Could not deserialize metadata record due to unknown frame version {frame}"
                              f"(only frame version {FRAME_VERSION} is supported)", 0, "decode")
        api_key, pos = read_short_uvarint(value, pos, "type")
        version, pos = read_short_uvarint(value, pos, "version")
    except FormatError as e:
        raise FormatError(e.reason, e.position, "decode") from None
    return read_body(value, pos, api_key, version, RECORDS)


def read_body(value: bytes, pos: int, api_key: int, version: int, records: dict) -> MetadataRecord:
    """The record body after the envelope (AbstractApiMessageSerde), for any family's ``records`` table:
    unknown types are returned undecoded; garbage after a known version is an error."""
    msg = records.get(api_key)
    if msg is None:
        return MetadataRecord(api_key, version, None, None, len(value) - pos)
    data, end = msg.read(value, version, pos)
    left = len(value) - end
    if left and msg.known(version):
        raise FormatError(f"Found {left} byte(s) of garbage after {api_key}", end, "decode")
    return MetadataRecord(api_key, version, msg, data, left)


def build_metadata_record(api_key: int, data: dict, version: int = 0) -> bytes:
    """The value bytes of a metadata record (frame version 1), from the declarative schema."""
    body = RECORDS[api_key].build(data, version)
    return MetadataRecordEnvelope.build(dict(frame_version=FRAME_VERSION, type=api_key, version=version,
                                             body=body))


def by_name(name: str) -> Message:
    """``RECORDS`` entry by message name (``"TopicRecord"``) or DumpLogSegments name (``"TOPIC_RECORD"``)."""
    for m in RECORDS.values():
        if name in (m.name, type_name(m.name)):
            return m
    raise KeyError(name)
