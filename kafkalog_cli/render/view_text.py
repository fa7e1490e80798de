"""Plain-text building blocks of the state views (describe, consumer-groups, transactions): tables within
80 columns and wrapped note lines. Pure functions of values; names are shown with control characters
escaped, so a topic or group name cannot move the terminal's cursor."""
from __future__ import annotations

import textwrap

WIDTH = 80


def printable(text: str) -> str:
    """``text`` with control and other non-printable characters written as Python escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def elide(text: str, width: int) -> str:
    """``text`` cut in the middle with "…" when longer than ``width`` (the JSON output keeps it whole)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def table(headers: list[str], rows: list[list[str]], right: set[int], shrink: int = 0,
          width: int = WIDTH) -> list[str]:
    """Columns two spaces apart, each as wide as its widest cell; column ``shrink`` (a name) is elided so
    that every line fits ``width``."""
    cols = len(headers)
    widths = [max([len(headers[i])] + [len(r[i]) for r in rows]) for i in range(cols)]
    total = sum(widths) + 2 * (cols - 1)
    if total > width:
        widths[shrink] = max(len(headers[shrink]), widths[shrink] - (total - width))
    lines = []
    for r in [headers] + rows:
        cells = []
        for i, cell in enumerate(r):
            cell = elide(cell, widths[i])
            cells.append(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]))
        lines.append("  ".join(cells).rstrip())
    return lines


def wrapped(text: str, indent: str = "", width: int = WIDTH, hang: int = 2) -> list[str]:
    """``text`` as lines within ``width``, continuation lines indented ``hang`` more spaces."""
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + " " * hang,
                         break_long_words=True, break_on_hyphens=False) or [indent.rstrip()]


def number(n: int | None) -> str:
    return "-" if n is None else str(n)
