"""dump-log's text and JSON lines for a run of batches, written by the compiled record path.

The C renderers (formats/_native/render.c) write the bytes ``kafka_text.TextRenderer`` and
``jsonl.JsonRenderer`` write for the same batches, for what is pure formatting: v2 data batches (not
control batches, whose records need decoding), key/value decoders string, hex, base64, none (and json in
text, where it prints as string), no record decoder. Anything else stays with the pure renderers;
tests/test_native_parity.py compares both byte for byte.
"""
from __future__ import annotations

DECODER_CODES = {"string": 0, "hex": 1, "base64": 2, "none": 3, "json": 4}
TEXT_DECODERS = frozenset(DECODER_CODES)
JSON_DECODERS = frozenset(("string", "hex", "base64", "none"))


def text_supported(key_decoder: str, value_decoder: str) -> bool:
    return key_decoder in TEXT_DECODERS and value_decoder in TEXT_DECODERS


def json_supported(key_decoder: str, value_decoder: str) -> bool:
    return key_decoder in JSON_DECODERS and value_decoder in JSON_DECODERS


def render_text(scan, out: bytearray, *, deep: bool, print_data: bool, skip_metadata: bool,
                key_decoder: str, value_decoder: str) -> None:
    """Append the lines of every batch of ``scan`` (a ``kafkalog_formats.columns.Scan``) to ``out``."""
    from kafkalog_formats.native import ext
    ext.render_text(scan.batches, scan.rows, scan.headers, scan.sources, out, deep, print_data, skip_metadata,
                    DECODER_CODES[key_decoder], DECODER_CODES[value_decoder])


def render_json(scan, out: bytearray, *, file_json: bytes, deep: bool, print_data: bool, key_decoder: str,
                value_decoder: str) -> None:
    """Append the JSON lines of every batch of ``scan``; ``file_json`` is the file name as a JSON string."""
    from kafkalog_formats.native import ext
    ext.render_json(scan.batches, scan.rows, scan.headers, scan.sources, out, file_json, deep, print_data,
                    DECODER_CODES[key_decoder], DECODER_CODES[value_decoder])


def json_string(text: str) -> bytes:
    """``text`` as the JSON lines encoder writes a string value."""
    from .jsonl import _dumps
    return _dumps(text).encode("utf-8")
