"""``.kafka_cleanshutdown`` at the root of each log dir (Kafka ``CleanShutdownFileHandler``).

Its *presence* means the last shutdown was clean, so loading skips recovery; the content is
informational::

    ≤ 3.6   empty file
    3.7+    {"version":0,"brokerEpoch":<int64>}    (no trailing newline)

Kafka itself only logs a warning for unreadable content; here invalid content is a FormatError so a
verifier can report it, while the engine still treats the file as present.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .checkpoint import decode_text
from .errors import FormatError

CURRENT_VERSION = 0


@dataclass(frozen=True)
class CleanShutdown:
    version: int | None          # None: the empty (≤ 3.6) marker
    broker_epoch: int | None
    raw: dict[str, Any] | None = None


def _err(reason: str) -> FormatError:
    return FormatError(reason, None, "clean_shutdown")


def _int_or_none(data: dict, key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 63) <= value < (1 << 63):
        raise _err(f".kafka_cleanshutdown field '{key}' is not a 64-bit integer: {json.dumps(value)}")
    return value


def parse_clean_shutdown(text: str | bytes) -> CleanShutdown:
    """Empty ⇒ the legacy marker; otherwise the JSON object of 3.7+ (missing fields are None)."""
    content = decode_text(text, what=".kafka_cleanshutdown")
    if content == "":
        return CleanShutdown(None, None)
    try:
        data = json.loads(content)
    except json.JSONDecodeError as e:
        raise FormatError(f".kafka_cleanshutdown is not valid JSON: {e.msg}",
                          len(content[:e.pos].encode("utf-8", "surrogatepass")), "clean_shutdown") from None
    except RecursionError:
        raise _err(".kafka_cleanshutdown JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise _err(f".kafka_cleanshutdown holds {type(data).__name__} JSON, not an object")
    return CleanShutdown(_int_or_none(data, "version"), _int_or_none(data, "brokerEpoch"), data)


def build_clean_shutdown(broker_epoch: int | None = None) -> str:
    """The 3.7+ JSON for ``broker_epoch``, or the empty ≤ 3.6 marker when None."""
    if broker_epoch is None:
        return ""
    if isinstance(broker_epoch, bool) or not -(1 << 63) <= broker_epoch < (1 << 63):
        raise _err(f"broker epoch {broker_epoch} is not a 64-bit integer")
    return json.dumps({"version": CURRENT_VERSION, "brokerEpoch": broker_epoch}, separators=(",", ":"))
