"""Lines of text within a width for people's reports (verify's, the repair commands', diff's): words are never
cut; a path longer than the line is broken after a ``/``; only a single name longer than the whole line may
exceed it. Light on purpose: the repair commands import it without the read engine."""
from __future__ import annotations

import re
from typing import NamedTuple

from ..names import shown


class Line(NamedTuple):
    text: str
    style: str | None = None             # rich style of the whole line ...
    head: int = 0                        # ... or, when > 0, of its first ``head`` characters only


def _tokens(text: str, room: int) -> list[tuple[str, bool]]:
    """Words as (text, glued): ``glued`` words join the previous one without a space (pieces of a path
    broken after a ``/`` because it is longer than ``room``)."""
    out: list[tuple[str, bool]] = []
    for word in text.split(" "):
        if not word:
            continue
        if len(word) <= room or "/" not in word:
            out.append((word, False))
            continue
        pieces = re.findall(r"[^/]*/|[^/]+$", word)
        first = True
        chunk = ""
        for p in pieces:
            if chunk and len(chunk) + len(p) > room:
                out.append((chunk, not first))
                first, chunk = False, ""
            chunk += p
        if chunk:
            out.append((chunk, not first))
    return out


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` columns, the first starting with ``first``, the others with
    ``rest`` (default: spaces as wide as ``first``); words are never cut."""
    rest = " " * len(first) if rest is None else rest
    text = shown(text)                 # escaped before it is measured: nothing unprintable reaches a screen
    lines: list[str] = []
    line, room_start = first, len(first)
    for word, glued in _tokens(text, max(width - len(rest), 1)):
        sep = "" if glued or len(line) == room_start else " "
        if len(line) + len(sep) + len(word) > width and len(line) > room_start:
            lines.append(line)
            line, room_start, sep = rest, len(rest), ""
        line += sep + word
    lines.append(line)
    return lines
