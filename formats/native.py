"""Which record path runs: the compiled extension ``kafkalog_formats._native`` or the pure-Python reference;
the format layer's seam, and the rule (``load``) every layer's extension is loaded by.

The extensions are built by ``pip install`` wherever a C compiler and Python's headers exist (setup.py
declares each optional, so the install succeeds without them). ``KAFKALOG_PURE_PYTHON=1`` forces the pure
path everywhere; ``kafkalog --version`` names the active one. The pure path is the reference: every native
function has a pure twin, and tests/test_native_parity.py runs both over the same bytes.

One compiled module per layer, each with one seam saying which pure function each native one accelerates:

* here, ``_native`` (formats/_native_c), over bytes and nothing above them:
  ``scan`` -> ``columns._scan_pure``; ``records``, ``BatchBase.records``, ``batch_iter`` ->
  ``record_batch.iter_records`` and ``message_set.BatchReader``; ``header_pairs`` ->
  ``record.RecordHeaders._walk``; ``crc32c`` -> the crc32c package (``crc``); ``fast_decompress``
  (and every walk given a ``codecs.V2Decompressor``), ``xxh32`` -> ``codecs.decompress`` (gzip, snappy,
  LZ4, zstd; decoders built in: formats/_native_c/vendor); ``coordinator_texts`` ->
  ``kafka_message.Message.read``/``to_json`` by programs of ``message_program``; ``gather`` -> the Arrow
  columns of ``spark.rows_pure``; the walks its callers name: ``verify_walk``/``table_add`` (the per-batch
  checks of ``engine.verify_segment._walk_pure``), ``recover_run``/``header_walk``
  (``repair.segment_recovery``'s header walks), ``batch_sound`` (a batch ``preflight.batch_problem`` passes), ``resync_find``, ``resync_inside_record`` -> ``resync.find``, ``resync._inside_record``;
* ``kafkalog_cli.render.native_lines`` for ``_native_render`` (dump-log's text and JSON lines);
* ``kafkalog_cli.repair.native_clean`` for ``_native_clean`` (the cleaner's offset map and passes).

Importing this module never imports the extension's users (numpy, codecs): ``kafkalog --help`` does not
load it at all.
"""
from __future__ import annotations

import os

PURE_ENV = "KAFKALOG_PURE_PYTHON"
#: the calling conventions of the compiled modules (native.h's KL_LAYOUT_VERSION); a module built from
#: another kafkalog version says another number and is not used
LAYOUT_VERSION = 4


def load(name: str):
    """(the compiled module ``name``, None) when its native path may run, else (None, why not). The one
    rule for every layer's extension (this layer's ``_native``, ``kafkalog_cli.render._native_render``,
    ``kafkalog_cli.repair._native_clean``): ``KAFKALOG_PURE_PYTHON`` turns them all off, a module that is
    not built or was built from another version is not used."""
    import importlib
    if os.environ.get(PURE_ENV, "").strip() not in ("", "0"):
        return None, f"{PURE_ENV} is set"
    try:
        module = importlib.import_module(name)
    except ImportError:                # not built here (no compiler at install time)
        return None, "the C extension is not built"
    if getattr(module, "__file__", None) is None:      # not the compiled module (a stray directory)
        return None, "the C extension is not built"
    if getattr(module, "LAYOUT_VERSION", None) != LAYOUT_VERSION:
        return None, "the C extension was built from another kafkalog version (reinstall)"
    return module, None


ext, reason = load(f"{__package__}._native")   # ext: the extension when the native path is active

ACTIVE = "native" if ext is not None else "pure"

if ext is not None:        # records beyond HEADERS_INLINE headers carry them as their bytes, as on the pure path
    from .record import HEADERS_INLINE, RecordHeaders
    ext.set_record_headers(RecordHeaders, HEADERS_INLINE)
    RecordHeaders.compiled_pairs = ext.header_pairs


def describe() -> str:
    """One line for ``kafkalog --version``."""
    if ext is not None:
        return f"record path: native C extension, CRC-32C {ext.crc32c_impl()}"
    return f"record path: pure Python, {reason}"


#: Records made per call of the C decoder: a batch holding more is decoded in chunks of this many, so
#: one batch of millions of records never becomes a list of millions of objects.
RECORDS_CHUNK = 8192


def records(data, count: int, base_offset: int, base_timestamp: int, base_sequence: int,
            log_append_time: int | None):
    """The Records of one v2 records section, decoded in C: a list (an iterator of chunks for a batch
    of more than ``RECORDS_CHUNK`` records); None when the section is invalid or a value does not fit 64
    bits (the caller then runs ``record_batch.iter_records``, which raises the FormatError the pure path
    reports, after yielding the same records before it). The whole section is validated before the first
    record is made, in both cases."""
    from .record import Record
    if count <= RECORDS_CHUNK:
        return ext.records(data, count, base_offset, base_timestamp, base_sequence, log_append_time, Record)
    first = ext.records(data, count, base_offset, base_timestamp, base_sequence, log_append_time, Record,
                        0, -1, RECORDS_CHUNK, True)
    if first is None:
        return None
    return _chunks(first, data, count, base_offset, base_timestamp, base_sequence, log_append_time, Record)


def _chunks(first, data, count, base_offset, base_timestamp, base_sequence, log_append_time, record_type):
    chunk, pos, remaining = first
    while True:
        yield from chunk
        if remaining <= 0:
            return
        chunk, pos, remaining = ext.records(data, count, base_offset, base_timestamp, base_sequence,
                                            log_append_time, record_type, pos, remaining, RECORDS_CHUNK, False)
