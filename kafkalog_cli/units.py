"""Times, durations, sizes and configuration values as people read them, for reports.

Every report that shows a timestamp shows the ISO-8601 time (UTC) next to the epoch milliseconds Kafka
stores; durations are written in days, hours, minutes and seconds; a value Kafka reads as "no limit"
(``retention.ms=-1``) says so. Used by the renderers and by the plans' reasons; imports nothing of ours.
"""
from __future__ import annotations

from datetime import datetime, timezone

LONG_MAX = (1 << 63) - 1
_UNITS = (("year", 365 * 86_400_000), ("day", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000))


def iso(ms: int | None) -> str:
    """``2024-03-01T00:00:00.000Z`` for epoch milliseconds; "no timestamp" for Kafka's -1 (and any negative)."""
    if ms is None or ms < 0:
        return "no timestamp"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms after the epoch"


def timestamp(ms: int | None) -> str:
    """ISO time with the epoch milliseconds beside it: ``2024-03-01T00:00:00.000Z (1709251200000)``."""
    if ms is None or ms < 0:
        return "no timestamp" if ms is None else f"no timestamp ({ms})"
    return f"{iso(ms)} ({ms})"


def duration(ms: int) -> str:
    """``7 days``, ``1 day 6 h``, ``5 h 12 min``, ``20 s``, ``1.5 s``, ``250 ms``; negative: "-" prefixed."""
    if ms < 0:
        return "-" + duration(-ms)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.3f}".rstrip("0").rstrip(".") + " s"
    parts = []
    rest = ms
    for name, size in _UNITS:
        n, rest = divmod(rest, size)
        if n:
            parts.append(f"{n} {name}" + ("s" if n > 1 and name in ("year", "day") else ""))
        elif parts:
            break                      # only adjacent units: "1 day 6 h", never "1 day 0 h 3 min"
        if len(parts) == 2:
            break
    return " ".join(parts)


def size(n: int) -> str:
    """``1 GiB``, ``100 MiB``, ``4 KiB``, ``1.5 MiB``, ``812 B``."""
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{n} B"


def setting(key: str, value) -> str | None:
    """What a topic setting's value means, where the number alone is hard to read (None: nothing to add)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if key in ("retention.ms", "retention.bytes") and value < 0:
        return "unlimited"
    if key.startswith("local.retention.") and value == -2:
        return "the topic's " + key[len("local."):]
    if key.startswith("local.retention.") and value == -1:
        return "unlimited"
    if key == "max.compaction.lag.ms" and value == LONG_MAX:
        return "no maximum"
    if key.endswith(".ms"):
        return duration(value) if value else None
    if key.endswith(".bytes") or key.endswith(".size"):
        return size(value) if value >= 1024 else None
    return None
