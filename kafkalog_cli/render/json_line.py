"""One JSON value as compact text: the encoder of every JSON lines writer (dump-log's ``jsonl``, the
compiled path's ``native_lines``, the views' reports). A module of its own so that those writers share it
without importing each other or the read engine."""
from __future__ import annotations

import json

from ..names import clean, json_text

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


def dumps_shown(obj) -> str:
    """``dumps``, then DEL, the C1 control characters and the invisible format characters escaped
    (``names.json_text``; JSON leaves them raw): the state views' lines, whose names come from the bytes on
    disk, carry no raw control character to a terminal that ``jq -r`` prints them on."""
    return json_text(dumps(obj))
