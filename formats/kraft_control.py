"""Values of the KRaft control records (Kafka ``ControlRecordUtils`` and the schemas
``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``, ``KRaftVersionRecord``,
``VotersRecord`` under ``clients/src/main/resources/common/message``).

Each value is a flexible message body read at schema version 0 (compact strings/arrays, tagged-field
trailers); its first field is an int16 ``version`` of its own, and DumpLogSegments prints the JSON of the
message written at that version. The control key (int16 version, int16 type) is in ``control.py``::

    type 2 LEADER_CHANGE    version int16, leaderId int32, voters [voterId int32 (+ voterDirectoryId
                            uuid at v1+)], grantingVoters [same]
    type 3 SNAPSHOT_HEADER  version int16, lastContainedLogTimestamp int64
    type 4 SNAPSHOT_FOOTER  version int16
    type 5 KRAFT_VERSION    version int16, kRaftVersion int16
    type 6 KRAFT_VOTERS     version int16, voters [voterId int32, voterDirectoryId uuid,
                            endpoints [name string, host string, port uint16],
                            kRaftVersionFeature {minSupportedVersion int16, maxSupportedVersion int16}]
"""
from __future__ import annotations

from .errors import FormatError
from .kafka_message import Message, field as F

READ_VERSION = 0                    # ControlRecordUtils.*_CURRENT_VERSION

_VOTER = (F("voterId", "int32"), F("voterDirectoryId", "uuid", "1+"))

MESSAGES: dict[int, Message] = {
    2: Message("LeaderChangeMessage", "0-1", "0+", [
        F("version", "int16"), F("leaderId", "int32"),
        F("voters", "[]struct", fields=_VOTER), F("grantingVoters", "[]struct", fields=_VOTER)]),
    3: Message("SnapshotHeaderRecord", "0", "0+", [F("version", "int16"), F("lastContainedLogTimestamp", "int64")]),
    4: Message("SnapshotFooterRecord", "0", "0+", [F("version", "int16")]),
    5: Message("KRaftVersionRecord", "0", "0+", [F("version", "int16"), F("kRaftVersion", "int16")]),
    6: Message("VotersRecord", "0", "0+", [
        F("version", "int16"),
        F("voters", "[]struct", fields=(
            F("voterId", "int32"),
            F("voterDirectoryId", "uuid"),
            F("endpoints", "[]struct", fields=(F("name", "string"), F("host", "string"), F("port", "uint16"))),
            F("kRaftVersionFeature", "struct", fields=(F("minSupportedVersion", "int16"),
                                                       F("maxSupportedVersion", "int16"))),
        ))]),
}

#: How DumpLogSegments labels each decoded value in its text output.
TEXT_LABELS = {2: "LeaderChange:", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}


def read_control_value(ctype: int, value: bytes | None) -> dict:
    """Decode the value of a KRaft control record at version 0 (the raw value, all fields)."""
    msg = MESSAGES[ctype]
    if value is None:
        raise FormatError(f"{msg.name} control record has a null value", None, "control_value")
    try:
        data, _end = msg.read(value, READ_VERSION)
    except FormatError as e:
        raise FormatError(e.reason, e.position, "control_value") from None
    return data


def control_value_json(ctype: int, data: dict) -> dict:
    """The JSON DumpLogSegments prints: the message written at the version its ``version`` field names."""
    msg = MESSAGES[ctype]
    v = data.get("version", READ_VERSION)
    return msg.to_json(data, v if msg.known(v) else READ_VERSION)


def build_control_value(ctype: int, data: dict) -> bytes:
    return MESSAGES[ctype].build(data, READ_VERSION)
