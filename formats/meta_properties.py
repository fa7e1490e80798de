"""``meta.properties`` at the root of each log dir (Kafka ``MetaProperties`` /
``MetaPropertiesVersion``, read with ``java.util.Properties.load``, written with ``Properties.store``).

Java Properties text (read as ISO-8859-1, ``\\uXXXX`` escapes for anything else)::

    #                                   (store's comment line, empty comment)
    #<Date.toString()>                  e.g. "#Wed Apr 22 11:14:59 CDT 2020"
    key=value                           one per property, in hash-table order

    version=0   ZooKeeper era: broker.id=<int> (optional), cluster.id (optional), directory.id (optional)
    version=1   KRaft: node.id=<int> and cluster.id mandatory, directory.id=<Uuid> (3.7+)
    no version key ⇒ 0; cluster.id is any string (Kafka does not check its form).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Mapping

from .checkpoint import decode_text, java_int
from .errors import FormatError
from .java_text import java_string_hash
from .partition_metadata import kafka_base64_to_uuid

VERSION, CLUSTER_ID, BROKER_ID, NODE_ID, DIRECTORY_ID = ("version", "cluster.id", "broker.id", "node.id",
                                                         "directory.id")
KNOWN_VERSIONS = (0, 1)

_NATURAL_LINE_END = re.compile(r"\r\n|\r|\n")
_PROP_WS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _err(reason: str) -> FormatError:
    return FormatError(reason, None, "meta_properties")


# --- java.util.Properties ----------------------------------------------------------------------

def _logical_lines(text: str) -> list[str]:
    """Properties.LineReader: skip blank and comment ('#', '!') lines, strip leading whitespace, join
    lines ending in an odd number of backslashes with the next one (whose leading whitespace goes)."""
    natural = _NATURAL_LINE_END.split(text)
    out, i = [], 0
    while i < len(natural):
        line = natural[i].lstrip(_PROP_WS)
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1]
            if i >= len(natural):
                break
            line += natural[i].lstrip(_PROP_WS)
            i += 1
        out.append(line)
    return out


def _unescape(s: str) -> str:
    """Properties.loadConvert: ``\\uXXXX``, ``\\t\\n\\r\\f``, and backslash-anything-else = that char."""
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        i += 1
        if c != "\\" or i >= len(s):
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i:i + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _err("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    text = "".join(out)
    try:  # Java strings are UTF-16: a \uD800\uDC00 pair is one character
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:  # a lone surrogate stays as Java would keep it
        return text


def load_properties(text: str | bytes) -> dict[str, str]:
    """``Properties.load``: keys end at the first unescaped '=', ':' or whitespace; later keys win."""
    text = decode_text(text, "iso-8859-1", "meta.properties")
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key_end, value_start, has_sep, backslash = len(line), len(line), False, False
        for k, c in enumerate(line):
            if not backslash and c in "=:":
                key_end, value_start, has_sep = k, k + 1, True
                break
            if not backslash and c in _PROP_WS:
                key_end, value_start = k, k + 1
                break
            backslash = (c == "\\") and not backslash
        while value_start < len(line):
            c = line[value_start]
            if c not in _PROP_WS:
                if not has_sep and c in "=:":
                    has_sep = True
                else:
                    break
            value_start += 1
        props[_unescape(line[:key_end])] = _unescape(line[value_start:])
    return props


def _escape(s: str, is_key: bool, escape_unicode: bool) -> str:
    """Properties.saveConvert."""
    out = []
    for i, c in enumerate(s):
        if c == " ":
            out.append("\\ " if i == 0 or is_key else " ")
        elif c in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[c])
        elif c in "=:#!\\":
            out.append("\\" + c)
        elif escape_unicode and (ord(c) < 0x20 or ord(c) > 0x7E):
            out.extend(f"\\u{unit:04X}" for unit in _utf16_units(c))
        else:
            out.append(c)
    return "".join(out)


def _utf16_units(c: str) -> list[int]:
    b = c.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2)]


def _bin(key: str, bins: int) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (bins - 1)


def property_order(keys: list[str], key_order: str = "java9") -> list[str]:
    """The order ``Properties.store`` writes ``keys`` (given in insertion order) on a JVM generation.

    * ``"java9"`` (9–17): ``ConcurrentHashMap`` bin order, e.g. node.id, directory.id, version, cluster.id;
    * ``"java8"``: ``Hashtable(11)`` enumeration, last bucket first, newest first within a bucket
      (exact up to 8 keys, before the table grows), e.g. cluster.id, version, broker.id;
    * ``"sorted"`` (18+): natural key order.
    """
    if key_order == "sorted":
        return sorted(keys)
    if key_order == "java9":
        bins = 16
        while len(keys) > bins * 3 // 4:
            bins *= 2
        return sorted(keys, key=lambda k: _bin(k, bins))  # stable: a bin keeps insertion order
    if key_order == "java8":
        buckets: list[list[str]] = [[] for _ in range(11)]
        for k in keys:
            buckets[(java_string_hash(k) & 0x7FFFFFFF) % 11].insert(0, k)
        return [k for bucket in reversed(buckets) for k in bucket]
    raise ValueError(f"key_order must be 'java8', 'java9' or 'sorted', not {key_order!r}")


def store_properties(props: Mapping[str, str], date: str, comments: str | None = "",
                     key_order: str = "java9", escape_unicode: bool = True) -> str:
    """``Properties.store`` text: ``#<comments>``, ``#<date>``, then ``key=value`` lines ending in ``\\n``.

    ``date`` is passed in (``java_date`` formats one) so the output is deterministic; ``key_order``
    picks the JVM whose hash order to reproduce (see ``property_order``). ``escape_unicode`` as
    ``store(OutputStream)``, readable by every Kafka version.
    """
    head = [] if comments is None else [f"#{comments}"]
    keys = property_order(list(props), key_order)
    body = [f"{_escape(k, True, escape_unicode)}={_escape(props[k], False, escape_unicode)}" for k in keys]
    return "".join(f"{line}\n" for line in [*head, f"#{date}", *body])


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def java_date(dt: datetime) -> str:
    """``Date.toString()`` form, e.g. ``Sat Feb 22 23:38:33 UTC 2025`` (English names, any locale)."""
    zone = dt.tzname() or "UTC"
    return (f"{_DAYS[dt.weekday()]} {_MONTHS[dt.month - 1]} {dt.day:02d} {dt.hour:02d}:{dt.minute:02d}:"
            f"{dt.second:02d} {zone} {dt.year}")


# --- MetaProperties ----------------------------------------------------------------------------

@dataclass(frozen=True)
class MetaProperties:
    version: int
    node_id: int | None          # broker.id in version 0, node.id in version 1 (Kafka's nodeId)
    cluster_id: str | None
    directory_id: str | None     # Kafka Uuid text
    raw: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def broker_id(self) -> int | None:
        """The ``broker.id`` of a version-0 file."""
        return self.node_id if self.version == 0 else None

    def to_properties(self) -> dict[str, str]:
        """Kafka ``MetaProperties.toProperties`` (unknown keys of ``raw`` are not carried over)."""
        props = {VERSION: str(self.version)}
        if self.cluster_id is not None:
            props[CLUSTER_ID] = self.cluster_id
        if self.node_id is not None:
            props[BROKER_ID if self.version == 0 else NODE_ID] = str(self.node_id)
        if self.directory_id is not None:
            props[DIRECTORY_ID] = self.directory_id
        return props


def _java_trim(s: str) -> str:
    """``String.trim``: strips every char ≤ U+0020, nothing else."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def _int_prop(props: Mapping[str, str], key: str) -> int:
    """``PropertiesUtils.loadRequiredIntProp`` for a present key."""
    number = java_int(props[key])
    if number is None:
        raise _err(f"Unable to read {key} as a base-10 number.")
    return number


def parse_meta_properties(text: str | bytes) -> MetaProperties:
    """Decode and validate like ``new MetaProperties.Builder(props).build()``.

    Failures raise FormatError (kind ``meta_properties``): "Invalid meta.properties version string 'x'",
    "Unknown meta.properties version number N", "node.id was not found.", "Unable to read <key> as a
    base-10 number.", "Unable to read directory.id as a Uuid: …", "cluster.id was not found.".
    (Kafka 3.7+'s loader words a missing node.id as "Failed to find node.id"; the spec's build()
    wording is used here.)
    """
    props = load_properties(text)
    raw_version = props.get(VERSION, "0")
    version = java_int(_java_trim(raw_version))
    if version is None:
        raise _err(f"Invalid meta.properties version string '{raw_version}'")
    if version not in KNOWN_VERSIONS:
        raise _err(f"Unknown meta.properties version number {version}")
    if version == 0:
        node_id = _int_prop(props, BROKER_ID) if BROKER_ID in props else None
    elif NODE_ID not in props:
        raise _err("node.id was not found.")
    else:
        node_id = _int_prop(props, NODE_ID)
    directory_id = props.get(DIRECTORY_ID)
    if directory_id is not None:
        try:
            kafka_base64_to_uuid(directory_id)
        except FormatError as e:
            raise _err(f"Unable to read {DIRECTORY_ID} as a Uuid: {e.reason}") from None
    cluster_id = props.get(CLUSTER_ID)
    if version != 0 and cluster_id is None:
        raise _err("cluster.id was not found.")
    return MetaProperties(version, node_id, cluster_id, directory_id, props)


def build_meta_properties(meta: MetaProperties, date: str, key_order: str = "java9") -> str:
    """``meta.properties`` text for ``meta`` as Kafka's ``writePropertiesFile`` (validated by reading
    it back)."""
    text = store_properties(meta.to_properties(), date, key_order=key_order)
    parse_meta_properties(text)
    return text
