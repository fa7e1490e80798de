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
        elif getattr(_ext, "LAYOUT_VERSION", None) != 2:
            reason = "the C extension was built from another kafkalog version (reinstall)"
        else:
            ext = _ext

ACTIVE = "native" if ext is not None else "pure"


def describe() -> str:
    """One line for ``kafkalog --version``."""
    if ext is not None:
        return f"record path: native C extension, CRC-32C {ext.crc32c_impl()}"
    return f"record path: pure Python, {reason}"


def records(data, count: int, base_offset: int, base_timestamp: int, base_sequence: int,
            log_append_time: int | None):
    """The Records of one v2 records section as a list, decoded in C; None when the section is invalid
    or a value does not fit 64 bits (the caller then runs ``record_batch.iter_records``, which raises the
    FormatError the pure path reports, after yielding the same records before it)."""
    from .record_batch import Record
    return ext.records(data, count, base_offset, base_timestamp, base_sequence, log_append_time, Record)
