"""The one click type for a point in time, shared by every command option that takes one (``--now`` of
retain, compact and the state views, dump-log's and export's ``--from-time``/``--to-time``, lookup-time's
TIMESTAMP), so that each accepts and refuses the same values with the same words.

A time is epoch milliseconds (0 or more, at most Java's ``Long.MAX_VALUE``, as a record timestamp is) or an
ISO-8601 time (one without a zone is UTC) at or after 1970-01-01T00:00:00Z. lookup-time also takes Kafka's
special ListOffsets values (``Time(specials=True)``): earliest (-2), latest (-1), max-timestamp (-3).
"""
from __future__ import annotations

import time

import click

JAVA_LONG_MAX = (1 << 63) - 1

#: ListOffsetsRequest's special timestamps a broker's local files cannot answer (tiered storage)
TIERED_SPECIALS = {-4: "earliest-local, Kafka 3.5+", -5: "latest-tiered, Kafka 3.9+"}


class Time(click.ParamType):
    """A point in time as epoch milliseconds (see the module); ``specials``: Kafka's -1/-2/-3 too."""
    name = "TIME"

    def __init__(self, specials: bool = False) -> None:
        self.specials = specials
        if specials:
            self.name = "TIMESTAMP"       # lookup-time's argument: a time or a special value

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        from ..engine.lookup import EARLIEST, LATEST, MAX_TIMESTAMP, parse_timestamp
        text = str(value)
        try:
            ts = parse_timestamp(text)
        except ValueError:
            self.fail(f"'{text}' is neither epoch milliseconds nor an ISO-8601 time such as 2024-03-01T12:00:00Z"
                      + (", nor one of earliest, latest, max-timestamp" if self.specials else ""), param, ctx)
        if ts > JAVA_LONG_MAX:
            self.fail(f"'{text}' is beyond the largest timestamp Kafka stores ({JAVA_LONG_MAX})", param, ctx)
        if ts >= 0:
            return ts
        if self.specials and ts in (EARLIEST, LATEST, MAX_TIMESTAMP) and _spelled_as_number_or_name(text):
            return ts               # not an ISO time a few milliseconds before 1970, which is no special value
        self.fail(negative_message(text, ts, self.specials), param, ctx)


def _spelled_as_number_or_name(text: str) -> bool:
    t = text.strip().lower()
    if t in ("earliest", "latest", "max-timestamp"):
        return True
    try:
        int(t)
    except ValueError:
        return False
    return True


def negative_message(text: str, ts: int, specials: bool) -> str:
    """Why a value before 1970 is refused. Kafka's ListOffsetsRequest gives meaning to -1 (latest), -2
    (earliest), -3 (max timestamp, 3.0+), -4 (earliest local, 3.5+) and -5 (latest tiered, 3.9+): only
    lookup-time asks that question; everywhere else a time is a timestamp, never negative."""
    if not text.strip().lstrip("-").isdigit():
        if text.strip().lower() in ("earliest", "latest", "max-timestamp"):
            return f"'{text}' is one of Kafka's special ListOffsets values, not a time"
        return (f"'{text}' is before 1970-01-01T00:00:00Z: times are epoch milliseconds, never negative")
    if not specials:
        return f"'{text}' is not a time: times are epoch milliseconds, never negative"
    why = (f"{ts} ({TIERED_SPECIALS[ts]}) asks where tiered storage begins or ends, which the broker's local "
           "files cannot tell" if ts in TIERED_SPECIALS else f"{ts} is not a timestamp")
    return (f"{why}: a negative TIMESTAMP must be one of Kafka's special values -2 (earliest), -1 (latest) or "
            "-3 (max-timestamp)")


def now_or_current(value: int | None) -> int:
    """``--now`` as given, else the current time in epoch milliseconds."""
    return int(time.time() * 1000) if value is None else value
