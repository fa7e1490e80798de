"""dump-log's text and JSON lines for a run of batches, written by the compiled line writers: the render
layer's seam to its extension ``kafkalog_cli.render._native_render`` (render/_native_c/render.c).

Which pure function each native one accelerates:

* ``render_text`` -> ``kafka_text.TextRenderer.emit`` (``batch_line``, ``record_line``) for a run of batches;
* ``render_json`` -> ``jsonl.JsonRenderer.emit`` (``batch_object``, ``record_object``, encoded by
  ``json_line.dumps``);
* ``decoded_texts`` (the format layer's ``coordinator_texts``) -> ``record_decoders``' coordinator decoders.

They write the bytes the pure renderers write for the same batches, for what is pure formatting: v2 data
batches (not control batches, whose records need decoding), key/value decoders string, hex, base64, none
(and json in text, where it prints as string), no record decoder other than the compiled coordinator ones.
Anything else stays with the pure renderers (``DumpRenderer.emit_run`` chooses), and so does everything when
this extension is not active (``text_supported``/``json_supported`` say no). tests/test_native_parity.py
compares both byte for byte.
"""
from __future__ import annotations

from kafkalog_formats import native

ext, reason = native.load("kafkalog_cli.render._native_render")
if ext is not None:
    if native.ext is None:             # the columns it writes from come from the format layer's extension
        ext, reason = None, native.reason
    else:
        from kafkalog_formats import columns as _columns
        assert (ext.NB, ext.NR, ext.NH) == (_columns.NB, _columns.NR, _columns.NH), "column layout differs from C's"

DECODER_CODES = {"string": 0, "hex": 1, "base64": 2, "none": 3, "json": 4}
TEXT_DECODERS = frozenset(DECODER_CODES)
JSON_DECODERS = frozenset(("string", "hex", "base64", "none"))


def text_supported(key_decoder: str, value_decoder: str) -> bool:
    return ext is not None and key_decoder in TEXT_DECODERS and value_decoder in TEXT_DECODERS


def json_supported(key_decoder: str, value_decoder: str) -> bool:
    return ext is not None and key_decoder in JSON_DECODERS and value_decoder in JSON_DECODERS


def render_text(scan, out, *, deep: bool, print_data: bool, skip_metadata: bool,
                key_decoder: str, value_decoder: str, batches=None, decoded=None) -> None:
    """The lines of every batch of ``scan`` (a ``kafkalog_formats.columns.Scan``), appended to ``out`` (a
    bytearray) or written to it (a file descriptor). ``batches``: a slice of the scan's batch table to
    write instead of all of it; ``decoded``: a record decoder's texts (``decoded_texts``)."""
    ext.render_text(scan.batches if batches is None else batches, scan.rows, scan.headers, scan.sources, out, deep,
                    print_data, skip_metadata, DECODER_CODES[key_decoder], DECODER_CODES[value_decoder], decoded)


def render_json(scan, out, *, file_json: bytes, deep: bool, print_data: bool, key_decoder: str,
                value_decoder: str, batches=None, decoded=None) -> None:
    """The JSON lines of every batch of ``scan``, as ``render_text`` writes them; ``file_json`` is the file
    name as a JSON string."""
    ext.render_json(scan.batches if batches is None else batches, scan.rows, scan.headers, scan.sources, out,
                    file_json, deep, print_data, DECODER_CODES[key_decoder], DECODER_CODES[value_decoder], decoded)


# --- record decoders compiled from the schema (formats/message_program.py) ----------------------------------

def compiled_decoder(decoder):
    """(key programs, value programs, value label) of a built-in coordinator decoder the compiled path
    prints (``record_decoders.offsets``, ``share_group_state``, ``transaction_log``), else None. Record types
    whose output is more than the message's JSON stay with the pure decoder: classic group metadata
    (consumer-protocol members decoded inside it)."""
    from . import record_decoders as rd
    for name in ("offsets", "share-group-state", "transaction-log"):
        if decoder is rd.BUILTIN[name]:
            return _programs(name)
    return None


_PROGRAMS: dict = {}


def _programs(name: str):
    hit = _PROGRAMS.get(name)
    if hit is None:
        from kafkalog_formats.message_program import coordinator_programs
        if name == "offsets":
            from kafkalog_formats import group_coordinator as gc
            hit = (*coordinator_programs(gc.KEYS, gc.VALUES, pure_types=(gc.GROUP_METADATA,)), "version")
        elif name == "transaction-log":     # one key type (0); the status byte by TransactionState's names
            from kafkalog_formats import transaction_log as tl
            names = tuple(tl.STATUS_NAMES[i] for i in range(len(tl.STATUS_NAMES)))
            hit = (*coordinator_programs({0: tl.Key}, {0: tl.Value},
                                         enums=(("transactionStatus", names),)), "version")
        else:
            from kafkalog_formats import share_group_state as sg
            hit = (*coordinator_programs(sg.KEYS, sg.VALUES), "type")
        _PROGRAMS[name] = hit
    return hit


def decoded_texts(scan, programs, decoder_name: str):
    """(the ``decoded`` argument of the renderers, the batch indexes holding a record the pure decoder must
    print): every record of ``scan`` decoded in C by ``programs``."""
    from kafkalog_formats import columns as C
    keys, values, label = programs
    texts, spans, declined = native.ext.coordinator_texts(scan.batches, scan.rows, scan.sources, keys, values, label)
    pure = set()
    if declined:
        import bisect
        bt = scan.batch_table()
        firsts = bt[C.B["first_row"]::C.NB].tolist()
        pure = {bisect.bisect_right(firsts, j) - 1 for j in declined}
    return (bytes(texts), bytes(spans), json_string(decoder_name)), pure


def batch_slices(scan, pure: set):
    """The scan's batches in order as ("native", batch table bytes) for runs the C renderer writes and
    ("pure", index) for each batch holding a record the pure decoder prints."""
    from kafkalog_formats import columns as C
    width = 8 * C.NB
    start = 0
    for i in sorted(pure):
        if i > start:
            yield "native", scan.batches[start * width:i * width]
        yield "pure", i
        start = i + 1
    if start < scan.n_batches:
        yield "native", scan.batches[start * width:scan.n_batches * width] if start else scan.batches


def write_lines(out, render) -> None:
    """Run ``render(target)`` for the text stream ``out``: an ``output.Output`` hands it its file descriptor
    (``write_native``: its buffers flushed first, so the order of everything written stays, and its errors
    mapped as for every other byte of the report); any other stream gets a bytearray written to it as text."""
    native = getattr(out, "write_native", None)
    if native is not None:
        native(render)
    else:
        buf = bytearray()
        render(buf)
        out.write(buf.decode("utf-8"))


def json_string(text: str) -> bytes:
    """A file name as the JSON lines encoder writes it (``names.json_name``)."""
    from ..names import json_name, json_text
    from .json_line import dumps
    return json_text(dumps(json_name(text))).encode("utf-8")
