"""Which record path runs: the compiled extension ``kafkalog_formats._native`` or the pure-Python reference.

The extension is built by ``pip install`` wherever a C compiler and Python's headers exist (setup.py
declares it optional, so the install succeeds without them). ``KAFKALOG_PURE_PYTHON=1`` forces the pure
path; ``kafkalog --version`` names the active one. The pure path is the reference: every native function
has a pure twin, and tests/test_native_parity.py runs both over the same bytes.

Importing this module never imports the extension's users (numpy, codecs): ``kafkalog --help`` does not
load it at all.
"""
from __future__ import annotations

import os

PURE_ENV = "KAFKALOG_PURE_PYTHON"

ext = None                 # the extension module when the native path is active
reason: str | None = None  # why the pure path is active

if os.environ.get(PURE_ENV, "").strip() not in ("", "0"):
    reason = f"{PURE_ENV} is set"
else:
    try:
        from . import _native as _ext
    except ImportError:                # not built here (no compiler at install time)
        reason = "the C extension is not built"
    else:
        if getattr(_ext, "__file__", None) is None:      # not the compiled module (a stray directory)
            reason = "the C extension is not built"
        elif getattr(_ext, "LAYOUT_VERSION", None) != 3:
            reason = "the C extension was built from another kafkalog version (reinstall)"
        else:
            ext = _ext

ACTIVE = "native" if ext is not None else "pure"


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
