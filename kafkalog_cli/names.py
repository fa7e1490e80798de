"""File and directory names as every renderer writes them: a name is bytes on disk, and may not be UTF-8 or
may hold control characters (issue 24: ``t\\xff\\xfe-0`` crashed the JSON renderer, an escape sequence in a
directory name reached the terminal raw, JUnit XML carried characters XML forbids).

Python holds a byte that is not UTF-8 as a lone surrogate (``os.fsdecode``, PEP 383: byte 0xHH is
U+DCHH). The escapes, documented in kafkalog(1) and the README:

* JSON (``json_name``, for the fields that hold names: ``file``, ``unit``, ``group``, ``partition`` ...):
  every byte that is not UTF-8 is written ``\\xHH`` and a backslash ``\\\\``; everything else is the name
  itself (control characters are JSON-escaped as usual, DEL and C1 too by ``json_text``). So the output
  is valid UTF-8 and the name's bytes come back exactly: undo ``\\\\`` and ``\\xHH``. Free text (messages) gets the ``\\xHH`` only
  (``clean``), never a crash.
* Terminals, text reports and XML (``shown``): bytes that are not UTF-8, control characters (C0, DEL,
  C1) as ``\\xHH``, invisible format characters (bidirectional overrides, zero-width ones) as ``\\uHHHH``;
  nothing raw reaches the screen, and nothing XML 1.0 forbids reaches a JUnit file.
"""
from __future__ import annotations

import re
from functools import lru_cache

_SURROGATE = re.compile("[\udc80-\udcff]")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\udc80-\udcff\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
                     "\u2060-\u2069\ufeff\ufff9-\ufffb]")


def _byte(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c - 0xDC00 if 0xDC80 <= c <= 0xDCFF else c:02x}"


@lru_cache(maxsize=4096)
def json_name(name: str) -> str:
    """A name for a JSON field: reversible (``\\\\`` for a backslash, ``\\xHH`` for a byte that is not UTF-8)."""
    if "\\" not in name and not _SURROGATE.search(name):
        return name
    return _SURROGATE.sub(_byte, name.replace("\\", "\\\\"))


def _visible(m: re.Match) -> str:
    c = ord(m.group(0))
    if 0xDC80 <= c <= 0xDCFF or c <= 0xFF:
        return _byte(m)
    return f"\\u{c:04x}"


@lru_cache(maxsize=4096)
def shown(text: str) -> str:
    """``text`` for a terminal, a text report or XML: nothing unprintable or invisible stays raw."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_visible, text)


def clean(obj):
    """``obj`` (a JSON value) with every byte that is not UTF-8 in its strings as ``\\xHH``: the encoders'
    safety net for free text that quotes a name."""
    if isinstance(obj, str):
        return _SURROGATE.sub(_byte, obj) if _SURROGATE.search(obj) else obj
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


#: The JSON fields that hold a file, directory or partition name (``json_safe`` writes them with ``json_name``).
NAME_FIELDS = frozenset({"file", "files", "topic", "partition", "directory", "unit", "group", "segment", "removed",
                         "files_renamed", "files_removed", "files_created", "backups", "target", "log_dir",
                         "finished_interrupted"})


def json_safe(obj, name: bool = False):
    """``obj`` for a JSON line: the names in ``NAME_FIELDS`` reversibly escaped (``json_name``), every other
    string ``clean``."""
    if isinstance(obj, str):
        return json_name(obj) if name else clean(obj)
    if isinstance(obj, dict):
        return {k: json_safe(v, k in NAME_FIELDS) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v, name) for v in obj]
    return obj


_INVISIBLE = re.compile("[\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]")


def json_text(line: str) -> str:
    """A JSON text with DEL and the C1 control characters (which JSON leaves raw: issue 34) and the invisible
    format characters (bidirectional overrides, zero-width ones) written as JSON's own ``\\uHHHH`` escapes:
    the same values to a parser, nothing raw that a terminal acts on. Every JSON lines writer ends with it;
    the compiled ones do the same (render/_native_c/render.c, ``escape_shown``)."""
    if not _INVISIBLE.search(line):
        return line
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", line)
