"""One JSON value as compact text: the encoder of every JSON lines writer (dump-log's ``jsonl``, the
compiled path's ``native_lines``, the views' reports). A module of its own so that those writers share it
without importing each other or the read engine."""
from __future__ import annotations

import json
import re

from ..names import clean

_json_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

try:
    from orjson import dumps as _orjson_dumps
except ImportError:                       # a dependency; keep working without it
    _orjson_dumps = None


def dumps(obj) -> str:
    """orjson (about 5x faster per record); the standard encoder for what orjson refuses (integers beyond
    64 bits, e.g. in a JSON payload decoded with --value-decoder json, or a name that is not UTF-8 quoted
    in a message: ``names.clean``). Same compact form either way, always valid UTF-8."""
    if _orjson_dumps is not None:
        try:
            return _orjson_dumps(obj).decode("utf-8")
        except (TypeError, ValueError):
            pass
    return _json_dumps(clean(obj))


_RAW_CONTROL = re.compile("[\x7f-\x9f]")


def dumps_shown(obj) -> str:
    """``dumps``, with DEL and the C1 control characters escaped too (``\\u007f``; JSON leaves them raw): the
    state views' lines, whose names come from the bytes on disk, carry no raw control character to a
    terminal that ``jq -r`` prints them on."""
    text = dumps(obj)
    return _RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _RAW_CONTROL.search(text) else text
