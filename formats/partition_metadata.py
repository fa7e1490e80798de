"""``partition.metadata`` in each partition directory (Kafka ``PartitionMetadataFile`` /
``PartitionMetadataReadBuffer``), plus Kafka's ``Uuid`` text form.

UTF-8 text, exactly two lines, no final newline as Kafka writes it::

    version: 0
    topic_id: <22-char URL-safe base64, no padding, of the 16-byte topic UUID>

Each line is split on ``":\\s+"`` into exactly two parts (the key text itself is not checked); the
version must be ≥ 0 (downgrade compatibility) and the all-zero UUID is rejected.
"""
from __future__ import annotations

import base64
import re
from dataclasses import dataclass

from .checkpoint import decode_text, java_int, java_lines, java_split
from .errors import FormatError

CURRENT_VERSION = 0
ZERO_UUID = bytes(16)
#: ``Uuid.METADATA_TOPIC_ID`` (0…01): the topic id of ``__cluster_metadata``.
METADATA_TOPIC_ID = bytes(15) + b"\x01"

_SEPARATOR = re.compile(r":[ \t\n\x0b\f\r]+")
_B64URL = re.compile(r"[A-Za-z0-9_-]")


def uuid_to_kafka_base64(raw: bytes) -> str:
    """Kafka ``Uuid.toString``: URL-safe base64 without padding (22 characters)."""
    if len(raw) != 16:
        raise FormatError(f"a Uuid has 16 bytes, not {len(raw)}", None, "uuid")
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode("ascii")


def kafka_base64_to_uuid(text: str) -> bytes:
    """Kafka ``Uuid.fromString`` (Java's URL-safe base64 decoder, padding optional), with its messages."""
    if len(text) > 24:
        raise FormatError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID",
                          None, "uuid")
    body = text.rstrip("=")
    pad = len(text) - len(body)
    illegal = next((ch for ch in body if not _B64URL.fullmatch(ch)), None)
    if illegal is not None:
        raise FormatError(f"Illegal base64 character {ord(illegal):x}", None, "uuid")
    if pad and pad != (-len(body)) % 4:
        raise FormatError("Input byte array has wrong 4-byte ending unit", None, "uuid")
    if len(body) % 4 == 1:
        raise FormatError("Last unit does not have enough valid bits", None, "uuid")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    if len(raw) != 16:
        raise FormatError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the "
                          "expected 16 bytes of a base64-encoded UUID", None, "uuid")
    return raw


@dataclass(frozen=True)
class PartitionMetadata:
    version: int
    topic_id: str          # as written (Kafka base64)

    @property
    def topic_uuid(self) -> bytes:
        return kafka_base64_to_uuid(self.topic_id)


def parse_partition_metadata(text: str | bytes, path: str = "") -> PartitionMetadata:
    """Decode ``partition.metadata``; failures raise FormatError (kind ``partition_metadata``) with
    Kafka's messages."""
    content = decode_text(text, what="partition.metadata")
    lines = [line for _, line in java_lines(content)]

    def malformed(line: str) -> FormatError:
        return FormatError(f"Malformed line in checkpoint file ({path}): '{line}'", None, "partition_metadata")

    if len(lines) != 2:
        raise malformed(content)
    version_arr = java_split(_SEPARATOR, lines[0])
    if len(version_arr) != 2:
        raise malformed(lines[0])
    version = java_int(version_arr[1])
    if version is None:
        raise malformed(lines[0])
    if version < CURRENT_VERSION:
        raise FormatError(f"Unrecognized version of partition metadata file ({path}): {version}", None,
                          "partition_metadata")
    topic_arr = java_split(_SEPARATOR, lines[1])
    if len(topic_arr) != 2:
        raise malformed(lines[1])
    try:
        raw = kafka_base64_to_uuid(topic_arr[1])
    except FormatError as e:
        raise FormatError(e.reason, None, "partition_metadata") from None
    if raw == ZERO_UUID:
        raise FormatError(f"Invalid topic ID in partition metadata file ({path})", None, "partition_metadata")
    return PartitionMetadata(version, topic_arr[1])


def build_partition_metadata(topic_id: str | bytes, version: int = CURRENT_VERSION) -> str:
    """File text as Kafka writes it (two lines, no trailing newline); ``topic_id`` as base64 or 16 bytes."""
    raw = kafka_base64_to_uuid(topic_id) if isinstance(topic_id, str) else bytes(topic_id)
    if raw == ZERO_UUID:
        raise FormatError("Invalid topic ID: the zero UUID is reserved", None, "partition_metadata")
    return f"version: {version}\ntopic_id: {uuid_to_kafka_base64(raw)}"
