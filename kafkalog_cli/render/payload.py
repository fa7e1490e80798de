"""Key, value and header-value decoders (``--key-decoder``/``--value-decoder``).

Each decoder gives the text Kafka-style output prints and the value JSON output embeds. JSON output stays
lossless: bytes a decoder cannot represent (invalid UTF-8 for ``string``, invalid JSON for ``json``) are
emitted as base64 and flagged with ``<field>_encoding: "base64"``.

``schema-registry`` recognises the Confluent Schema Registry wire format (magic byte 0, a big-endian int32
schema id, then the serialized payload) and gives ``{"schemaId": <id>, "payload": "<base64>"}``
(``schema-registry-hex``: the payload in hex); bytes without that framing are decoded as ``string``.
"""
from __future__ import annotations

import base64
import binascii
import json

from kafkalog_formats.java_text import java_utf8

DECODERS = ("string", "hex", "base64", "json", "schema-registry", "schema-registry-hex", "none")
SCHEMA_REGISTRY_MAGIC = 0


def schema_registry(data: bytes, hex_payload: bool = False) -> dict | None:
    """``{"schemaId", "payload"}`` when ``data`` has the schema-registry framing, else None."""
    if len(data) < 5 or data[0] != SCHEMA_REGISTRY_MAGIC:
        return None
    payload = data[5:]
    return {"schemaId": int.from_bytes(data[1:5], "big", signed=True),
            "payload": payload.hex() if hex_payload else base64.b64encode(payload).decode("ascii")}


def to_text(decoder: str, data: bytes) -> str | None:
    """Text for Kafka-style lines; None means "do not print this part" (the ``none`` decoder)."""
    if decoder.startswith("schema-registry"):
        framed = schema_registry(data, decoder.endswith("-hex"))
        if framed is None:
            return java_utf8(data)
        return json.dumps(framed, separators=(",", ":"))
    if decoder == "string" or decoder == "json":
        return java_utf8(data)     # Kafka's Utils.utf8: Java's replacement of malformed bytes
    if decoder == "hex":
        return binascii.hexlify(data).decode("ascii")
    if decoder == "base64":
        return base64.b64encode(data).decode("ascii")
    return None


def to_json(decoder: str, data: bytes) -> tuple[object, str | None]:
    """(value, encoding override) for JSON lines; the override is "base64" when we had to fall back."""
    if decoder.startswith("schema-registry"):
        framed = schema_registry(data, decoder.endswith("-hex"))
        if framed is not None:
            return framed, None
        decoder = "string"
    if decoder == "string":
        try:
            return data.decode("utf-8"), None
        except UnicodeDecodeError:
            return base64.b64encode(data).decode("ascii"), "base64"
    if decoder == "json":
        try:
            return json.loads(data), None
        except (UnicodeDecodeError, ValueError, RecursionError):
            return base64.b64encode(data).decode("ascii"), "base64"
    if decoder == "hex":
        return binascii.hexlify(data).decode("ascii"), None
    if decoder == "base64":
        return base64.b64encode(data).decode("ascii"), None
    return None, None
