"""Bytes as Java turns them into text: ``new String(bytes, StandardCharsets.UTF_8)``; and that text's
``String.hashCode`` (``java_string_hash``), which orders Java's and Scala's hash maps.

Kafka's tools print keys, values, header keys and the string fields of its message schemas through Java's
UTF-8 decoder (``Utils.utf8``, ``ByteBufferAccessor.readString``). Valid UTF-8 decodes the same in Java and
Python, but the two replace malformed input differently: Python emits U+FFFD for each maximal subpart
(Unicode's recommended practice), Java's decoder (JDK 8 to 25 alike, checked on 446,200 byte sequences)
sometimes swallows more or fewer bytes into one U+FFFD:

* an encoded surrogate (``ED A0..BF xx``) is one U+FFFD for all three bytes (Python: three);
* a three- or four-byte sequence cut short by the end of the input is one U+FFFD for the rest of the input,
  whatever the bytes (Python: one per maximal subpart);
* a four-byte sequence that is complete but out of range or overlong (``F0 80..8F``, ``F4 90..``) is
  replaced one byte at a time only when its second byte is already impossible, else by its valid prefix
  length (1, 2 or 3 bytes).

``java_utf8`` reproduces those lengths so that ``dump-log``'s text output equals ``kafka-dump-log.sh``'s byte
for byte; JSON output stays lossless (base64 for invalid UTF-8). The compiled record path does the same in
``_native_c/render.c`` (``put_java_utf8``); the tests compare both with a JVM.
"""
from __future__ import annotations

REPLACEMENT = "\ufffd"


def _continuation(b: int) -> bool:
    return b & 0xC0 == 0x80


def _bad_second_of_three(b1: int, b2: int) -> bool:
    return (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _continuation(b2)


def _bad_second_of_four(b1: int, b2: int) -> bool:
    return (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
            or not _continuation(b2))


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + c`` over the UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_utf8(data: bytes | bytearray | memoryview) -> str:
    """``data`` decoded as Java's ``new String(data, UTF_8)`` decodes it."""
    data = bytes(data)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _replaced(data)


def _replaced(data: bytes) -> str:
    out: list[str] = []
    n, i = len(data), 0
    while i < n:
        b1 = data[i]
        if b1 < 0x80:
            out.append(chr(b1))
            i += 1
        elif 0xC2 <= b1 <= 0xDF:                       # two bytes
            if i + 1 >= n:
                out.append(REPLACEMENT)
                break
            if _continuation(data[i + 1]):
                out.append(data[i:i + 2].decode())
                i += 2
            else:
                out.append(REPLACEMENT)
                i += 1
        elif 0xE0 <= b1 <= 0xEF:                       # three bytes
            if i + 2 < n:
                b2, b3 = data[i + 1], data[i + 2]
                if _bad_second_of_three(b1, b2):
                    out.append(REPLACEMENT)
                    i += 1
                elif not _continuation(b3):
                    out.append(REPLACEMENT)
                    i += 2
                else:
                    cp = (b1 & 0x0F) << 12 | (b2 & 0x3F) << 6 | b3 & 0x3F
                    out.append(REPLACEMENT if 0xD800 <= cp <= 0xDFFF else chr(cp))
                    i += 3
            elif i + 1 < n and _bad_second_of_three(b1, data[i + 1]):
                out.append(REPLACEMENT)
                i += 1
            else:                                      # cut short: the rest is one replacement
                out.append(REPLACEMENT)
                break
        elif 0xF0 <= b1 <= 0xF7:                       # four bytes
            if i + 3 < n:
                b2, b3, b4 = data[i + 1], data[i + 2], data[i + 3]
                cp = (b1 & 0x07) << 18 | (b2 & 0x3F) << 12 | (b3 & 0x3F) << 6 | b4 & 0x3F
                if _continuation(b2) and _continuation(b3) and _continuation(b4) and 0x10000 <= cp <= 0x10FFFF:
                    out.append(chr(cp))
                    i += 4
                else:
                    out.append(REPLACEMENT)
                    i += 1 if _bad_second_of_four(b1, b2) else 2 if not _continuation(b3) else 3
            elif b1 > 0xF4 or (i + 1 < n and _bad_second_of_four(b1, data[i + 1])):
                out.append(REPLACEMENT)
                i += 1
            else:                                      # cut short
                out.append(REPLACEMENT)
                i += 2
                if i < n and not _continuation(data[i]):
                    continue
                break
        else:                                          # 80..C1, F8..FF
            out.append(REPLACEMENT)
            i += 1
    return "".join(out)
