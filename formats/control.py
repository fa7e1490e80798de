"""Control records (Kafka ``ControlRecordType``, ``EndTransactionMarker`` and the KRaft control values).

Control key (≥ 4 bytes): int16 version (negative ⇒ corrupt; higher parsed as v0) | int16 type.
End-txn marker value (COMMIT/ABORT, ≥ 6 bytes): int16 version (≥ 0) | int32 coordinatorEpoch.
KRaft control values (types 2-6) are flexible messages parsed at version 0 whose first field is an int16
``Version``; their schemas are in ``kraft_control.py``.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from ._lazy import lazy_attributes
from .errors import FormatError


def _schemas() -> dict:
    """``ControlRecordKey`` and ``EndTxnMarker``, the declarative schemas (built on first use)."""
    from construct import Int16sb, Int32sb, Struct
    return {"ControlRecordKey": Struct("version" / Int16sb, "type" / Int16sb),
            "EndTxnMarker": Struct("version" / Int16sb, "coordinator_epoch" / Int32sb)}


schema = lazy_attributes(schemas=(("ControlRecordKey", "EndTxnMarker"), _schemas))
__getattr__ = schema

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = range(7)
CONTROL_TYPE_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                      4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlKey(NamedTuple):
    version: int
    type: int

    @property
    def name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type, "UNKNOWN")


def parse_control_key(key: bytes | None) -> ControlKey:
    """Kafka's ``ControlRecordType.parse``: short or negative-version keys are corruption."""
    if key is None or len(key) < 4:
        size = -1 if key is None else len(key)
        raise FormatError(f"Invalid value size found for end control record key. Must have at least 4 "
                          f"bytes, but found only {size}", None, "control_key")
    version, ctype = _KEY.unpack_from(key, 0)
    if version < 0:
        raise FormatError(f"Invalid version found for control record: {version}. May indicate data "
                          "corruption", None, "control_key")
    return ControlKey(version, ctype)


def parse_end_txn_marker(value: bytes | None) -> tuple[int, int]:
    """Return (version, coordinatorEpoch) of a COMMIT/ABORT value; extra bytes are ignored."""
    if value is None or len(value) < 6:
        size = -1 if value is None else len(value)
        raise FormatError("Invalid value size found for end transaction marker. Must have at least 6 "
                          f"bytes, but found only {size}", None, "control_value")
    version, epoch = _MARKER.unpack_from(value, 0)
    if version < 0:
        raise FormatError(f"Invalid version found for end transaction marker: {version}. May indicate "
                          "data corruption", None, "control_value")
    return version, epoch


def build_control_key(ctype: int, version: int = 0) -> bytes:
    return schema("ControlRecordKey").build(dict(version=version, type=ctype))


def build_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    return schema("EndTxnMarker").build(dict(version=version, coordinator_epoch=coordinator_epoch))


def decode_kraft_control(ctype: int, value: bytes | None) -> dict | None:
    """Decode a KRaft control value into the JSON object DumpLogSegments prints (``kraft_control.py``:
    LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion, KRaftVoters); None for other types."""
    from . import kraft_control
    if ctype not in kraft_control.MESSAGES:
        return None
    return kraft_control.control_value_json(ctype, kraft_control.read_control_value(ctype, value))
