"""``quorum-state`` of the KRaft metadata log (Kafka ``FileQuorumStateStore`` /
``QuorumStateData`` JSON plus ``data_version``).

One line of JSON, no final newline as Kafka writes it; fields in schema order, ``data_version`` last::

    v0: {"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,
         "currentVoters":[{"voterId":1}],"data_version":0}
    v1 (KIP-853, 3.9+): {"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"<Uuid>",
         "data_version":1}

Every field of the file's version is mandatory (the generated JSON converter's rule); fields of other
versions and unknown keys are ignored on read.
"""
from __future__ import annotations

import json
from typing import Any

from .checkpoint import decode_text, json_int
from .errors import FormatError
from .partition_metadata import kafka_base64_to_uuid

DATA_VERSION = "data_version"
LOWEST_VERSION, HIGHEST_VERSION = 0, 1

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)

# field -> (type, versions); schema order is the write order
_FIELDS: dict[str, tuple[str, tuple[int, ...]]] = {
    "clusterId": ("string", (0,)),
    "leaderId": ("int32", (0, 1)),
    "leaderEpoch": ("int32", (0, 1)),
    "votedId": ("int32", (0, 1)),
    "votedDirectoryId": ("uuid", (1,)),
    "appliedOffset": ("int64", (0,)),
    "currentVoters": ("voters", (0,)),
}


def _err(reason: str) -> FormatError:
    return FormatError(reason, None, "quorum_state")


def _check_int(value: Any, name: str, bounds: tuple[int, int], kind: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise _err(f"QuorumStateData: field '{name}' expected an {kind} value, but got {json.dumps(value)}")


def _check_field(name: str, kind: str, value: Any) -> None:
    if kind == "string":
        if not isinstance(value, str):
            raise _err(f"QuorumStateData: field '{name}' expected a string, but got {json.dumps(value)}")
    elif kind == "int32":
        _check_int(value, name, _INT32, "int32")
    elif kind == "int64":
        _check_int(value, name, _INT64, "int64")
    elif kind == "uuid":
        if not isinstance(value, str):
            raise _err(f"QuorumStateData: field '{name}' expected a JSON string type, but got "
                       f"{json.dumps(value)}")
        try:
            kafka_base64_to_uuid(value)
        except FormatError as e:
            raise _err(f"QuorumStateData: field '{name}': {e.reason}") from None
    elif value is not None:  # voters: nullable array of {"voterId": int32}
        if not isinstance(value, list):
            raise _err(f"QuorumStateData: field '{name}' expected a JSON array, but got {json.dumps(value)}")
        for voter in value:
            if not isinstance(voter, dict) or "voterId" not in voter:
                raise _err("Voter: unable to locate field 'voterId', which is mandatory in version 0")
            _check_int(voter["voterId"], "voterId", _INT32, "int32")


def validate_quorum_state(data: Any, text: str = "") -> int:
    """Check ``data`` like ``FileQuorumStateStore.readElectionStateFromFile``; returns data_version."""
    if not isinstance(data, dict):
        raise _err(f"Deserialized node {text or json.dumps(data)} is not an object node")
    if DATA_VERSION not in data:
        raise _err(f"Deserialized node {text or json.dumps(data)} does not have {DATA_VERSION} field")
    version = data[DATA_VERSION]
    if isinstance(version, bool) or not isinstance(version, int):
        raise _err(f"{DATA_VERSION} is not an integer: {json.dumps(version)}")
    if not LOWEST_VERSION <= version <= HIGHEST_VERSION:
        raise _err(f"data_version ({version}) is not within the min ({LOWEST_VERSION}) and max "
                   f"({HIGHEST_VERSION}) supported version")
    for name, (kind, versions) in _FIELDS.items():
        if version not in versions:
            continue
        if name not in data:
            raise _err(f"QuorumStateData: unable to locate field '{name}', which is mandatory in version "
                       f"{version}")
        _check_field(name, kind, data[name])
    return version


def parse_quorum_state(text: str | bytes) -> dict[str, Any]:
    """The JSON object of a quorum-state file, validated for its ``data_version`` (0 or 1)."""
    content = decode_text(text, what="quorum-state")
    try:
        data = json.loads(content, parse_int=json_int)
    except json.JSONDecodeError as e:
        raise FormatError(f"quorum-state is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}",
                          len(content[:e.pos].encode("utf-8", "surrogatepass")), "quorum_state") from None
    except ValueError as e:                 # json_int: a number out of range
        raise FormatError(f"quorum-state is malformed: {e}", None, "quorum_state") from None
    except RecursionError:
        raise FormatError("quorum-state JSON is nested too deeply", None, "quorum_state") from None
    validate_quorum_state(data, content.strip())
    return data


def build_quorum_state(data: dict[str, Any]) -> str:
    """Compact JSON as Kafka writes it: the version's fields in schema order, other keys after them,
    ``data_version`` last, no trailing newline."""
    version = validate_quorum_state(data)
    ordered = {k: data[k] for k, (_, versions) in _FIELDS.items() if version in versions}
    ordered.update((k, v) for k, v in data.items() if k not in ordered and k != DATA_VERSION)
    ordered[DATA_VERSION] = version
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False)
