"""Plain-text building blocks of the state views (describe, consumer-groups, transactions): tables and wrapped
note lines. Pure functions of values. Every cell and every line is shown with ``names.shown`` (control
characters, bytes that are not UTF-8 and invisible format characters escaped), so nothing read from the
disk can move the terminal's cursor; and no name is ever cut: two different names never look alike.

``width``: the terminal's width when the report goes to a terminal, else None (a file or a pipe: whole
lines, as ``kafka-consumer-groups.sh`` prints them). A table wider than a terminal narrows its name column
and continues a longer name on the next lines; prose wraps at the terminal's width, or at 80 columns."""
from __future__ import annotations

import re

from ..names import shown
from .wrap import wrap

WIDTH = 80
MIN_NAME = 12               # a wrapped name column is never narrower


def printable(text: str) -> str:
    """``text`` for a terminal: control and invisible characters escaped (``names.shown``)."""
    return shown(text)


def table(headers: list[str], rows: list[list[str]], right: set[int], width: int | None = None,
          wrap: int = 0) -> list[str]:
    """Columns two spaces apart, each as wide as its widest cell. With ``width`` and lines longer than it,
    column ``wrap`` (a name) is narrowed to fit (not below its header or ``MIN_NAME``) and a longer cell
    continues on the following lines, broken after a ``-``, ``.``, ``_`` or ``/`` where one falls near the
    edge: every character of every name is shown."""
    rows = [[shown(c) for c in r] for r in rows]
    cols = len(headers)
    widths = [max([len(headers[i])] + [len(r[i]) for r in rows]) for i in range(cols)]
    total = sum(widths) + 2 * (cols - 1)
    if width is not None and total > width:
        widths[wrap] = max(len(headers[wrap]), MIN_NAME, widths[wrap] - (total - width))
    lines = []
    for r in [headers] + rows:
        pieces = _pieces(r[wrap], widths[wrap])
        for k, piece in enumerate(pieces):
            cells = []
            for i, cell in enumerate(r):
                cell = piece if i == wrap else (cell if k == 0 else "")
                cells.append(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]))
            lines.append("  ".join(cells).rstrip())
    return lines


_BREAK = re.compile(r"[-._/]")


def _pieces(cell: str, room: int) -> list[str]:
    """``cell`` in pieces of at most ``room`` characters, each broken after a separator in its last third
    when there is one."""
    out = []
    while len(cell) > room:
        cut = room
        seps = [m.end() for m in _BREAK.finditer(cell, 0, room)]
        if seps and seps[-1] >= room * 2 // 3:
            cut = seps[-1]
        out.append(cell[:cut])
        cell = cell[cut:]
    out.append(cell)
    return out


def wrapped(text: str, indent: str = "", width: int | None = WIDTH, hang: int = 2) -> list[str]:
    """``text`` (escaped) as lines within ``width`` (80 when None), continuation lines indented ``hang`` more
    spaces (``render.wrap``: a path longer than the line is broken after a ``/``; another word longer than
    the line, a long name, is never cut: it overflows)."""
    lines = wrap(text, width or WIDTH, indent, indent + " " * hang)
    return [ln.rstrip() for ln in lines] if any(ln.strip() for ln in lines) else [indent.rstrip()]


def number(n: int | None) -> str:
    return "-" if n is None else str(n)


def labelled(label: str, text: str, width: int | None = WIDTH, indent: str = "  ", column: int = 17) -> list[str]:
    """A ``--details`` line: ``label`` in a column of its own, ``text`` wrapped beside it."""
    return [ln.rstrip() for ln in wrap(text, width or WIDTH, f"{indent}{label:<{column}}", " " * (len(indent) + column))]
