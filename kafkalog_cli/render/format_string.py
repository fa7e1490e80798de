"""``dump-log --format-string``: one line per record laid out by kcat's format letters (kcat ``-f``).

  %s  value (payload)          %S  value size in bytes (-1 for null)
  %R  value size as a 4-byte big-endian signed integer (binary, as kcat)
  %k  key                      %K  key size in bytes (-1 for null)
  %T  timestamp (epoch ms)     %h  headers as name=value,name=value
  %t  topic                    %p  partition (-1 when the file is not in a partition directory)
  %o  offset                   %%  a percent sign
  \\n \\r \\t \\\\ and \\xHH    newline, carriage return, tab, backslash, the byte HH

Keys and values are written as their bytes (kcat's way; a null one as nothing), or as a decoder's text
when --key-decoder/--value-decoder, a schema (--key-schema/--value-schema) or a record decoder is given
(structures as compact JSON). Control records (transaction markers) are not records a consumer sees and
are left out, as kcat never receives them. Problems go to standard error.
"""
from __future__ import annotations

import json

from kafkalog_formats.record import RecordHeaders

from ..engine import dump as ev
from ..errors import UsageProblem
from .jsonl import file_partition

LETTERS = "sSRkKThtpo%"


class BadFormatString(UsageProblem, ValueError):
    """A format string kafkalog cannot read (a usage error)."""


def compile_format(text: str) -> list:
    """``text`` as a list of literal bytes and letters (one-character str)."""
    parts: list = []
    lit = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%":
            if i + 1 >= len(text):
                raise BadFormatString("the format string ends with a lone %")
            t = text[i + 1]
            if t not in LETTERS:
                raise BadFormatString(f"%{t} is not one of kcat's format letters: " + " ".join("%" + x for x in LETTERS))
            if t == "%":
                lit += b"%"
            else:
                if lit:
                    parts.append(bytes(lit))
                    lit = bytearray()
                parts.append(t)
            i += 2
        elif c == "\\" and i + 1 < len(text):
            t = text[i + 1]
            simple = {"n": b"\n", "r": b"\r", "t": b"\t", "\\": b"\\"}
            if t in simple:
                lit += simple[t]
                i += 2
            elif t == "x" and i + 3 < len(text) + 1 and _hex(text[i + 2:i + 4]):
                lit.append(int(text[i + 2:i + 4], 16))
                i += 4
            else:
                lit += c.encode()
                i += 1
        else:
            lit += c.encode("utf-8")
            i += 1
    if lit:
        parts.append(bytes(lit))
    return parts


def _hex(s: str) -> bool:
    return len(s) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in s)


class FormatRenderer:
    """Writes each record through the compiled format to a binary stream."""

    def __init__(self, out, err, parts: list, key_decoder: str = "string", value_decoder: str = "string",
                 raw_key: bool = True, raw_value: bool = True, record_decoding=None) -> None:
        self.out, self.err, self.parts = out, err, parts
        self.key_decoder, self.value_decoder = key_decoder, value_decoder
        self.raw_key, self.raw_value = raw_key, raw_value
        self.record_decoding = record_decoding
        self.problems = 0

    def emit(self, e) -> None:
        t = type(e)
        if t is ev.BatchItem:
            if e.records is None or e.batch.is_control:
                if e.records is not None:
                    for _ in e.records:
                        pass
                return
            topic, partition = file_partition(e.file)
            for item in e.records:
                self._record(e.file, e.batch, item.record, topic, partition)
        elif t is ev.RecordRun:
            for item in e.items():
                self.emit(item)
        elif t is ev.Finding:
            self._problem(e.file, e.position, e.message)
        elif t is ev.TrailingBytes:
            self._problem(e.file, e.position, f"Found {e.count} invalid bytes at the end")

    def _problem(self, file: str, position, message: str) -> None:
        self.out.flush()
        where = f"{file}: position {position}: " if position is not None else f"{file}: "
        self.err.write(f"kafkalog: {where}{message}\n")
        self.err.flush()

    def _record(self, file: str, batch, r, topic, partition) -> None:
        key, value = r.key, r.value
        kt = vt = None
        chosen = None if self.record_decoding is None else self.record_decoding.for_file(file)
        if chosen is not None and ("k" in self.parts or "s" in self.parts):
            from .record_decoders import apply
            d = apply(chosen[1], r, batch)
            if d.error:
                self.problems += 1
                self._problem(file, batch.position, f"offset {r.offset}: {d.error}")
            kt, vt = _text(d[0]), _text(d[1])
        out = bytearray()
        for p in self.parts:
            if isinstance(p, bytes):
                out += p
            elif p == "s":
                out += vt if vt is not None else self._field(value, self.value_decoder, self.raw_value)
            elif p == "k":
                out += kt if kt is not None else self._field(key, self.key_decoder, self.raw_key)
            elif p == "S":
                out += str(-1 if value is None else len(value)).encode()
            elif p == "K":
                out += str(-1 if key is None else len(key)).encode()
            elif p == "R":
                out += (-1 if value is None else len(value)).to_bytes(4, "big", signed=True)
            elif p == "T":
                out += str(r.timestamp).encode()
            elif p == "o":
                out += str(r.offset).encode()
            elif p == "t":
                out += (topic or "").encode("utf-8")
            elif p == "p":
                out += str(-1 if partition is None else partition).encode()
            elif p == "h":
                hs = r.headers.chunks() if type(r.headers) is RecordHeaders else (r.headers,)
                for i, chunk in enumerate(hs):      # millions of headers: written a chunk at a time
                    if i:
                        self.out.write(out)
                        out = bytearray(b",")
                    out += b",".join(k + b"=" + (v if v is not None else b"") for k, v in chunk)
        self.out.write(out)

    @staticmethod
    def _field(data, decoder: str, raw: bool) -> bytes:
        if data is None:
            return b""
        if raw:
            return bytes(data)
        from .payload import to_text
        text = to_text(decoder, bytes(data))
        return b"" if text is None else text.encode("utf-8")

    def finish(self, report) -> None:
        self.out.flush()


def _text(rep) -> bytes | None:
    """A record decoder's repr as bytes for the line (None: not decoded, the field's own bytes are used)."""
    if rep is None:
        return None
    if isinstance(rep, (bytes, bytearray, memoryview)):
        return bytes(rep)
    if isinstance(rep, str):
        return rep.encode("utf-8")
    return json.dumps(rep, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
