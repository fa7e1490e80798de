"""Key, value and header-value decoders (``--key-decoder``/``--value-decoder``).

Each decoder gives the text Kafka-style output prints and the value JSON output embeds. JSON output stays
lossless: bytes a decoder cannot represent (invalid UTF-8 for ``string``, invalid JSON for ``json``) are
emitted as base64 and flagged with ``<field>_encoding: "base64"``.
"""
from __future__ import annotations

import base64
import binascii
import json

DECODERS = ("string", "hex", "base64", "json", "none")


def to_text(decoder: str, data: bytes) -> str | None:
    """Text for Kafka-style lines; None means "do not print this part" (the ``none`` decoder)."""
    if decoder == "string" or decoder == "json":
        return data.decode("utf-8", errors="replace")
    if decoder == "hex":
        return binascii.hexlify(data).decode("ascii")
    if decoder == "base64":
        return base64.b64encode(data).decode("ascii")
    return None


def to_json(decoder: str, data: bytes) -> tuple[object, str | None]:
    """(value, encoding override) for JSON lines; the override is "base64" when we had to fall back."""
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
