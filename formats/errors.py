"""The one error type of the schema layer.

Every decoder failure (construct errors, struct errors, codec errors) is translated here into a
``FormatError`` carrying the byte position and a human reason; the engine adds the file name.
"""
from __future__ import annotations


import re

MAX_REASON = 400
#: control characters and Unicode line/paragraph separators (what would break or garble one line)
_BREAKS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str, limit: int = MAX_REASON) -> str:
    """``text`` as one printable line: control characters escaped (a quoted line of a damaged file may
    hold CR, LF or NUL), and cut to ``limit`` characters (it may quote a 5,000-digit number)."""
    if len(text) <= limit and not _BREAKS.search(text):
        return text
    out = _BREAKS.sub(lambda m: repr(m.group())[1:-1], text[:limit + 1])
    return out if len(out) <= limit else out[:limit - 3] + "..."


class FormatError(Exception):
    """Bytes that do not follow a Kafka on-disk format.

    ``position`` is a byte offset inside the buffer given to the decoder (the engine rebases it to a
    file position); ``kind`` is a stable machine-readable name used in JSON output and by ``verify``.
    """

    def __init__(self, reason: str, position: int | None = None, kind: str = "format",
                 file: str | None = None, offset: int | None = None) -> None:
        reason = one_line(reason)
        super().__init__(reason)
        self.reason = reason
        self.position = position
        self.kind = kind
        self.file = file
        self.offset = offset          # the Kafka offset concerned (a batch's base offset), when known

    def at(self, file: str | None = None, base: int = 0, offset: int | None = None) -> "FormatError":
        """Return a copy located in ``file`` with the position shifted by ``base``."""
        pos = None if self.position is None else self.position + base
        return FormatError(self.reason, pos, self.kind, file or self.file,
                           self.offset if offset is None else offset)

    def __str__(self) -> str:
        """One line: ``file: byte N (offset M): reason`` with the parts that are known."""
        where = []
        if self.file:
            where.append(self.file)
        if self.position is not None:
            where.append(f"byte {self.position}" + (f" (offset {self.offset})" if self.offset is not None else ""))
        elif self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{': '.join(where)}: {self.reason}" if where else self.reason
