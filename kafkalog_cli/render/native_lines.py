"""dump-log's text and JSON lines for a run of batches, written by the compiled record path.

The C renderers (formats/_native_c/render.c) write the bytes ``kafka_text.TextRenderer`` and
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


def render_text(scan, out, *, deep: bool, print_data: bool, skip_metadata: bool,
                key_decoder: str, value_decoder: str) -> None:
    """The lines of every batch of ``scan`` (a ``kafkalog_formats.columns.Scan``), appended to ``out`` (a
    bytearray) or written to it (a file descriptor)."""
    from kafkalog_formats.native import ext
    ext.render_text(scan.batches, scan.rows, scan.headers, scan.sources, out, deep, print_data, skip_metadata,
                    DECODER_CODES[key_decoder], DECODER_CODES[value_decoder])


def render_json(scan, out, *, file_json: bytes, deep: bool, print_data: bool, key_decoder: str,
                value_decoder: str) -> None:
    """The JSON lines of every batch of ``scan``, as ``render_text`` writes them; ``file_json`` is the file
    name as a JSON string."""
    from kafkalog_formats.native import ext
    ext.render_json(scan.batches, scan.rows, scan.headers, scan.sources, out, file_json, deep, print_data,
                    DECODER_CODES[key_decoder], DECODER_CODES[value_decoder])


def write_lines(out, render) -> None:
    """Run ``render(target)`` for the text stream ``out``: with its file descriptor when the stream would
    encode the text to these very bytes (UTF-8, no newline translation; its buffers flushed first, so the
    order of everything written stays), else with a bytearray written to the stream as text."""
    fd = _raw_fd(out)
    if fd is not None:
        render(fd)
    else:
        buf = bytearray()
        render(buf)
        out.write(buf.decode("utf-8"))


def _raw_fd(out) -> int | None:
    import codecs
    import os
    if getattr(out, "buffer", None) is None or os.linesep != "\n":
        return None
    try:
        if codecs.lookup(out.encoding).name != "utf-8":
            return None
        fd = out.fileno()
    except (AttributeError, LookupError, TypeError, OSError, ValueError):   # io.UnsupportedOperation too
        return None
    out.flush()
    return fd


def json_string(text: str) -> bytes:
    """A file name as the JSON lines encoder writes it (``names.json_name``)."""
    from ..names import json_name, json_text
    from .jsonl import _dumps
    return json_text(_dumps(json_name(text))).encode("utf-8")
