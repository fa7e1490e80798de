"""Kafka's generated-message encoding, with message schemas written as data (Kafka ``Readable``/``Writable``,
the message generator's ``MessageDataGenerator`` and ``JsonConverterGenerator``).

A schema is a ``Message``: a name, its valid and flexible versions and a list of ``field``s, each with the
versions it exists in. Encoding of one field at version v (all integers big-endian)::

    type       non-flexible version              flexible version
    int8..64   1/2/4/8 bytes, signed             same
    uint16/32  2/4 bytes, unsigned               same
    float64    8 bytes IEEE 754                  same
    bool       1 byte, 0 = false                 same
    uuid       16 bytes                          same
    string     int16 length (-1 = null) + UTF-8  uvarint(length + 1) (0 = null) + UTF-8
    bytes      int32 length (-1 = null) + bytes  uvarint(length + 1) (0 = null) + bytes
    []T        int32 count (-1 = null) + items   uvarint(count + 1) (0 = null) + items
    struct     the fields in order (nullable: int8 marker, -1 = null), each struct of a flexible version
               ending in its own tagged-field section
    tagged     uvarint count, then per field: uvarint tag, uvarint size, value (ascending tags)

A field is *tagged* at the versions of its ``tagged`` range: it then lives in the tagged section, is written
only when it differs from its default, and reads as its default when absent. Fields whose range ends
(``"0"``, ``"0-1"``) are absent from later versions. As in Kafka, a message read at a version above its
valid range is read with the fields of the open ranges (``"3+"``): newer writers append fields, so older
readers decode the known prefix.

Two implementations share each schema: ``Message.read`` (the hot path: plain ``struct`` over the buffer)
and ``Message.struct(v)``, a declarative construct schema used to build bytes (``Message.build``) and to
check the hot path (parity tests). Both give the same *value*: a dict keyed by the camelCase field names
in schema order, with every field of that version (absent tagged fields at their defaults), UUIDs in
Kafka's base64 text form, ``bytes`` fields as bytes, unknown tagged fields (kept raw, for rebuilding)
under ``_unknownTaggedFields``. ``Message.to_json`` gives what Kafka's JSON converters print.
"""
from __future__ import annotations

import base64
import struct
from functools import lru_cache
from typing import NamedTuple

from construct import (Adapter, Array, Bytes, ConstructError, Flag, Float64b, GreedyBytes, If, Int8sb, Int16sb,
                       Int16ub, Int32sb, Int32ub, Int64sb, Prefixed, PrefixedArray, Struct, VarInt, this)

from .errors import FormatError
from .java_text import java_utf8
from .partition_metadata import kafka_base64_to_uuid
from .varint import read_unsigned_varint

MAX_VERSION = 0x7FFF
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
UNKNOWN_TAGS = "_unknownTaggedFields"
_MISSING = object()


class Versions(NamedTuple):
    """An inclusive version range; ``"3+"`` is open-ended, ``"none"`` is empty."""
    lo: int
    hi: int

    def __contains__(self, v: object) -> bool:
        return isinstance(v, int) and self.lo <= v <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


def versions(text: str | None) -> Versions:
    if text is None or text == "none":
        return Versions(1, 0)
    if text.endswith("+"):
        return Versions(int(text[:-1]), MAX_VERSION)
    lo, _, hi = text.partition("-")
    return Versions(int(lo), int(hi or lo))


class Field(NamedTuple):
    name: str                  # camelCase, as Kafka's JSON converters name it
    type: str                  # int8 int16 int32 int64 uint16 uint32 float64 bool uuid string bytes struct []<T>
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: object            # _MISSING: the type's default
    fields: tuple              # for struct and []struct

    @property
    def elem(self) -> str | None:
        return self.type[2:] if self.type.startswith("[]") else None


def field(name: str, type: str, v: str = "0+", *, nullable: str | None = None, tag: int | None = None,
          tagged: str | None = None, default: object = _MISSING, fields: tuple | list = ()) -> Field:
    """One field. ``v`` is its version range; ``tagged`` the versions at which it is a tagged field (its
    version range defaults to that, as in Kafka); ``default=None`` means a null default."""
    tv = versions(tagged)
    fv = versions(v) if (v != "0+" or tagged is None) else tv
    return Field(name, type, fv, versions(nullable), tv, tag, default, tuple(fields))


class Message:
    """A Kafka message schema (one JSON file under ``common/message`` or ``common/metadata``)."""

    def __init__(self, name: str, valid: str, flexible: str, fields: list[Field], api_key: int | None = None):
        self.name = name
        self.valid = versions(valid)
        self.flexible = versions(flexible)
        self.fields = tuple(fields)
        self.api_key = api_key
        self._has_float: bool | None = None
        self._plans: dict[int, _Plan] = {}           # version -> read plan (hashing the fields per call is slow)
        self._json_plans: dict[int, tuple] = {}

    def __repr__(self) -> str:
        return f"Message({self.name}, {self.valid})"

    def known(self, version: int) -> bool:
        return version in self.valid

    @property
    def has_float(self) -> bool:
        """Whether the schema holds a float64 (its JSON text then needs Java's double formatting)."""
        if self._has_float is None:
            self._has_float = has_float(self.fields)
        return self._has_float

    # hot path ------------------------------------------------------------------------------------

    def read(self, buf, version: int, pos: int = 0, end: int | None = None) -> tuple[dict, int]:
        """Decode the message at ``pos``; return (value, position after it). Raises ``FormatError``."""
        end = len(buf) if end is None else end
        plan = self._plans.get(version)
        if plan is None:
            plan = self._plans[version] = _plan(self.fields, version, version in self.flexible)
        try:
            return plan.read(buf, pos, end)
        except FormatError as e:
            raise FormatError(f"{self.name} v{version}: {e.reason}", e.position, "decode") from None

    # declarative schema ---------------------------------------------------------------------------

    def struct(self, version: int):
        """The construct schema of this message at ``version`` (built on first use, then cached)."""
        return _construct_struct(self.fields, version, version in self.flexible)

    def build(self, value: dict, version: int) -> bytes:
        """Encode ``value`` (missing fields take their defaults)."""
        return self.struct(version).build(value)

    def parse(self, data: bytes, version: int) -> dict:
        """Decode with the construct schema (the reference implementation of ``read``)."""
        try:
            return self.struct(version).parse(data)
        except ConstructError as e:
            raise FormatError(f"{self.name} v{version}: {e}", None, "decode") from None

    # JSON ---------------------------------------------------------------------------------------

    def to_json(self, value: dict, version: int) -> dict:
        """What Kafka's ``<Name>JsonConverter.write(message, version)`` gives: tagged fields only when not
        default, bytes as base64, unknown tagged fields left out."""
        plan = self._json_plans.get(version)
        if plan is None:
            plan = self._json_plans[version] = _json_plan(self.fields, version)
        return _to_json(plan, value)


# --- defaults ----------------------------------------------------------------------------------------

_INT_TYPES = {"int8", "int16", "int32", "int64", "uint16", "uint32"}


def default_of(f: Field):
    d = f.default
    if d is None:
        return None
    t = f.type
    if t in _INT_TYPES:
        return 0 if d is _MISSING else int(d)
    if t == "bool":
        return False if d is _MISSING else bool(d)
    if t == "float64":
        return 0.0 if d is _MISSING else float(d)
    if t == "string":
        return "" if d is _MISSING else d
    if t == "uuid":
        return ZERO_UUID if d is _MISSING else d
    if t == "bytes":
        return b""
    if f.elem is not None:
        return []
    return {x.name: default_of(x) for x in f.fields}       # non-nullable struct


def is_default(f: Field, value) -> bool:
    """Kafka's non-default check, used for tagged fields (writing and JSON)."""
    d = default_of(f)
    if d is None:
        return value is None
    if value is None:
        return False
    if f.elem is not None or f.type == "bytes":
        return len(value) == 0
    return value == d


# --- hot path: a plan per (fields, version, flexible) -------------------------------------------------

def _short(pos: int, need: int, end: int, what: str) -> FormatError:
    return FormatError(f"field '{what}' needs {need} bytes, {max(end - pos, 0)} left", pos, "decode")


def _fixed(fmt: str, what: str):
    s = struct.Struct(fmt)
    size, unpack = s.size, s.unpack_from

    def read(buf, pos, end):
        if pos + size > end:
            raise _short(pos, size, end, what)
        return unpack(buf, pos)[0], pos + size
    return read


def _bool(what: str):
    def read(buf, pos, end):
        if pos >= end:
            raise _short(pos, 1, end, what)
        return buf[pos] != 0, pos + 1
    return read


def _uuid(what: str):
    enc = base64.urlsafe_b64encode

    def read(buf, pos, end):
        if pos + 16 > end:
            raise _short(pos, 16, end, what)
        return enc(bytes(buf[pos:pos + 16]))[:22].decode("ascii"), pos + 16
    return read


def _uvarint(buf, pos, end):
    b = buf[pos] if pos < end else None
    if b is not None and b < 0x80:
        return b, pos + 1
    if b is None:
        raise FormatError("premature end of data while reading an unsigned varint", pos, "decode")
    return read_unsigned_varint(buf, pos, end)


def _length_reader(flexible: bool, wide: bool):
    """(count, pos) readers: uvarint(n + 1) when flexible, else int16 (strings) / int32 (bytes, arrays)."""
    if flexible:
        def read(buf, pos, end):
            n, pos = _uvarint(buf, pos, end)
            return n - 1, pos
        return read
    return _fixed(">i" if wide else ">h", "length")


def _null_or_fail(f: Field, version: int, pos: int):
    if version in f.nullable:
        return None
    raise FormatError(f"non-nullable field {f.name} was serialized as null", pos, "decode")


def _string(f: Field, version: int, flexible: bool):
    length = _length_reader(flexible, False)

    def read(buf, pos, end):
        n, pos = length(buf, pos, end)
        if n < 0:
            return _null_or_fail(f, version, pos), pos
        if n > 0x7FFF:
            raise FormatError(f"string field {f.name} had invalid length {n}", pos, "decode")
        if pos + n > end:
            raise _short(pos, n, end, f.name)
        return java_utf8(buf[pos:pos + n]), pos + n   # ByteBufferAccessor.readString: Java's String
    return read


def _bytes(f: Field, version: int, flexible: bool):
    length = _length_reader(flexible, True)

    def read(buf, pos, end):
        n, pos = length(buf, pos, end)
        if n < 0:
            return _null_or_fail(f, version, pos), pos
        if pos + n > end:
            raise _short(pos, n, end, f.name)
        return bytes(buf[pos:pos + n]), pos + n
    return read


def _array(f: Field, version: int, flexible: bool):
    length = _length_reader(flexible, True)
    elem = _reader(f._replace(type=f.elem, nullable=versions(None), tagged=versions(None)), version, flexible,
                   tagged=False)

    def read(buf, pos, end):
        n, pos = length(buf, pos, end)
        if n < 0:
            return _null_or_fail(f, version, pos), pos
        if n > end - pos:
            raise FormatError(f"Tried to allocate a collection of size {n}, but there are only {end - pos} bytes "
                              f"remaining (field {f.name})", pos, "decode")
        out = []
        append = out.append
        for _ in range(n):
            v, pos = elem(buf, pos, end)
            append(v)
        return out, pos
    return read


def _struct(f: Field, version: int, flexible: bool, tagged: bool):
    plan = _plan(f.fields, version, flexible)
    if version not in f.nullable:
        return plan.read

    def read(buf, pos, end):
        if tagged:
            marker, pos = _uvarint(buf, pos, end)
            present = marker > 0
        else:
            if pos >= end:
                raise _short(pos, 1, end, f.name)
            present = buf[pos] < 0x80
            pos += 1
        return plan.read(buf, pos, end) if present else (None, pos)
    return read


_FIXED = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H", "uint32": ">I",
          "float64": ">d"}


def _reader(f: Field, version: int, flexible: bool, tagged: bool):
    t = f.type
    if t in _FIXED:
        return _fixed(_FIXED[t], f.name)
    if t == "bool":
        return _bool(f.name)
    if t == "uuid":
        return _uuid(f.name)
    if t == "string":
        return _string(f, version, flexible)
    if t == "bytes":
        return _bytes(f, version, flexible)
    if t.startswith("[]"):
        return _array(f, version, flexible)
    if t == "struct":
        return _struct(f, version, flexible, tagged)
    raise ValueError(f"unknown field type {t}")


class _Plan:
    __slots__ = ("template", "steps", "tagged", "fresh", "flexible")

    def read(self, buf, pos: int, end: int) -> tuple[dict, int]:
        out = self.template.copy()
        for name, rd in self.steps:
            out[name], pos = rd(buf, pos, end)
        if self.flexible:
            count, pos = _uvarint(buf, pos, end)
            for _ in range(count):
                tag, pos = _uvarint(buf, pos, end)
                size, pos = _uvarint(buf, pos, end)
                stop = pos + size
                if stop > end:
                    raise FormatError(f"tagged field {tag} of {size} bytes runs past the end ({end - pos} bytes "
                                      "left)", pos, "decode")
                known = self.tagged.get(tag)
                if known is None:
                    out.setdefault(UNKNOWN_TAGS, []).append([tag, bytes(buf[pos:stop])])
                else:
                    value, p = known[1](buf, pos, stop)
                    if p != stop:
                        raise FormatError(f"tagged field {known[0]} (tag {tag}) declares {size} bytes but its "
                                          f"value has {p - pos}", pos, "decode")
                    out[known[0]] = value
                pos = stop
        for f in self.fresh:               # mutable defaults are never shared between values
            if out[f.name] is _MISSING:
                out[f.name] = default_of(f)
        return out, pos


@lru_cache(maxsize=None)
def _plan(fields: tuple, version: int, flexible: bool) -> _Plan:
    p = _Plan()
    p.template, p.steps, p.tagged, p.fresh, p.flexible = {}, [], {}, [], flexible
    for f in fields:
        if version not in f.versions:
            continue
        if flexible and version in f.tagged:
            d = default_of(f)
            if isinstance(d, (list, dict)):
                d = _MISSING
                p.fresh.append(f)
            p.template[f.name] = d
            p.tagged[f.tag] = (f.name, _reader(f, version, flexible, tagged=True))
        else:
            p.template[f.name] = None
            p.steps.append((f.name, _reader(f, version, flexible, tagged=False)))
    p.steps = tuple(p.steps)
    return p


# --- JSON (Kafka's generated JsonConverter) ------------------------------------------------------------

def _b64(v: bytes) -> str:
    return base64.b64encode(v).decode("ascii")


def _json_conv(f: Field, version: int):
    """How a decoded field value becomes JSON (None: as it is)."""
    t = f.type
    if t == "bytes":
        return lambda v: None if v is None else _b64(v)
    if t == "struct":
        sub = _json_plan(f.fields, version)
        return lambda v: None if v is None else _to_json(sub, v)
    if t == "[]struct":
        sub = _json_plan(f.fields, version)
        return lambda v: None if v is None else [_to_json(sub, x) for x in v]
    if t == "[]bytes":
        return lambda v: None if v is None else [_b64(x) for x in v]
    if t.startswith("[]"):
        return lambda v: None if v is None else list(v)
    return None


@lru_cache(maxsize=None)
def _json_plan(fields: tuple, version: int) -> tuple:
    """(name, field, tagged?, converter) for the fields present at ``version``."""
    return tuple((f.name, f, version in f.tagged, _json_conv(f, version)) for f in fields if version in f.versions)


def _to_json(plan: tuple, value: dict) -> dict:
    out = {}
    get = value.get
    for name, f, tagged, conv in plan:
        v = get(name, _MISSING)
        if v is _MISSING:
            v = default_of(f)
        if tagged and is_default(f, v):
            continue
        out[name] = v if conv is None else conv(v)
    return out


def has_float(fields: tuple) -> bool:
    """Whether a schema holds a float64 anywhere (its JSON then needs Java's double formatting)."""
    return any(f.type in ("float64", "[]float64") or has_float(f.fields) for f in fields)


# --- declarative construct schemas ---------------------------------------------------------------------

class _Uuid(Adapter):
    """16 bytes ↔ Kafka's base64 text (``Uuid.toString``)."""

    def _decode(self, obj, context, path):
        return base64.urlsafe_b64encode(obj)[:22].decode("ascii")

    def _encode(self, obj, context, path):
        return kafka_base64_to_uuid(obj)


class _Sized(Adapter):
    """A length (stored as n + ``offset``; below ``offset`` means null) followed by n bytes or items."""

    def __init__(self, length, offset: int, body, kind: str, f: Field, version: int):
        super().__init__(Struct("n" / length, "v" / If(this.n >= offset, body(this.n - offset))))
        self.offset, self.kind, self.field, self.version = offset, kind, f, version

    def _decode(self, obj, context, path):
        if obj.n < self.offset:
            return _null_or_fail(self.field, self.version, None)
        if self.kind == "string":
            if obj.n - self.offset > 0x7FFF:
                raise FormatError(f"string field {self.field.name} had invalid length {obj.n - self.offset}",
                                  None, "decode")
            return java_utf8(obj.v)
        return bytes(obj.v) if self.kind == "bytes" else list(obj.v)

    def _encode(self, obj, context, path):
        if obj is None:
            _null_or_fail(self.field, self.version, None)
            return {"n": self.offset - 1, "v": None}
        if self.kind == "string":
            obj = obj.encode("utf-8")
        return {"n": len(obj) + self.offset, "v": obj}


class _Nullable(Adapter):
    """A nullable struct: an int8 marker (-1 null) before it, or a uvarint (0 null) when tagged."""

    def __init__(self, inner, tagged: bool):
        marker, present = (VarInt, this.present > 0) if tagged else (Int8sb, this.present >= 0)
        super().__init__(Struct("present" / marker, "v" / If(present, inner)))
        self.null_marker = 0 if tagged else -1

    def _decode(self, obj, context, path):
        return obj.v

    def _encode(self, obj, context, path):
        return {"present": self.null_marker if obj is None else 1, "v": obj}


class _TaggedSection(Adapter):
    """The tagged-field section: known tags decoded with their field's schema, others kept raw."""

    def __init__(self, known: dict):
        super().__init__(PrefixedArray(VarInt, Struct("tag" / VarInt, "data" / Prefixed(VarInt, GreedyBytes))))
        self.known = known                  # tag -> (Field, construct)

    def _decode(self, obj, context, path):
        values, unknown = {}, []
        for entry in obj:
            k = self.known.get(entry.tag)
            if k is None:
                unknown.append([entry.tag, bytes(entry.data)])
            else:
                values[k[0].name] = k[1].parse(entry.data)
        return {"values": values, "unknown": unknown}

    def _encode(self, obj, context, path):
        entries = [(tag, con.build(obj["values"][f.name])) for tag, (f, con) in self.known.items()
                   if not is_default(f, obj["values"][f.name])]
        entries += [(tag, bytes(data)) for tag, data in obj["unknown"]]
        return [{"tag": t, "data": d} for t, d in sorted(entries, key=lambda e: e[0])]


class _MessageStruct(Adapter):
    """A whole struct: untagged fields in order, then (flexible versions) the tagged section; values are
    plain dicts in schema order, as ``Message.read`` gives them."""

    def __init__(self, fields: tuple, version: int, flexible: bool):
        self.present, known, members = [], {}, []
        for f in fields:
            if version not in f.versions:
                continue
            is_tagged = flexible and version in f.tagged
            self.present.append((f, is_tagged))
            con = _field_construct(f, version, flexible, is_tagged)
            if is_tagged:
                known[f.tag] = (f, con)
            else:
                members.append(f.name / con)
        if flexible:
            members.append("tagged_fields_" / _TaggedSection(dict(sorted(known.items()))))
        self.flexible = flexible
        super().__init__(Struct(*members))

    def _decode(self, obj, context, path):
        tagged = obj["tagged_fields_"] if self.flexible else {"values": {}, "unknown": []}
        out = {}
        for f, is_tagged in self.present:
            out[f.name] = tagged["values"].get(f.name, default_of(f)) if is_tagged else obj[f.name]
        if tagged["unknown"]:
            out[UNKNOWN_TAGS] = tagged["unknown"]
        return out

    def _encode(self, obj, context, path):
        built, values = {}, {}
        for f, is_tagged in self.present:
            v = obj.get(f.name, _MISSING)
            v = default_of(f) if v is _MISSING else v
            (values if is_tagged else built)[f.name] = v
        if self.flexible:
            built["tagged_fields_"] = {"values": values, "unknown": obj.get(UNKNOWN_TAGS, [])}
        return built


_CONSTRUCT_FIXED = {"int8": Int8sb, "int16": Int16sb, "int32": Int32sb, "int64": Int64sb, "uint16": Int16ub,
                    "uint32": Int32ub, "float64": Float64b, "bool": Flag}


def _field_construct(f: Field, version: int, flexible: bool, tagged: bool):
    t = f.type
    if t in _CONSTRUCT_FIXED:
        return _CONSTRUCT_FIXED[t]
    if t == "uuid":
        return _Uuid(Bytes(16))
    off = 1 if flexible else 0
    if t == "string":
        return _Sized(VarInt if flexible else Int16sb, off, Bytes, "string", f, version)
    if t == "bytes":
        return _Sized(VarInt if flexible else Int32sb, off, Bytes, "bytes", f, version)
    if t == "struct":
        inner = _MessageStruct(f.fields, version, flexible)
        return _Nullable(inner, tagged) if version in f.nullable else inner
    if t.startswith("[]"):
        elem = _field_construct(f._replace(type=f.elem, nullable=versions(None)), version, flexible, False)
        return _Sized(VarInt if flexible else Int32sb, off, lambda n: Array(n, elem), "array", f, version)
    raise ValueError(f"unknown field type {t}")


@lru_cache(maxsize=None)
def _construct_struct(fields: tuple, version: int, flexible: bool):
    return _MessageStruct(fields, version, flexible)



# --- envelopes shared by the record families ------------------------------------------------------------

class Decoded(NamedTuple):
    """One decoded message with its envelope facts."""
    version: int               # the version it was read at (the int16/uvarint prefix)
    message: Message | None    # None: the record type is unknown
    data: dict | None          # None when the type is unknown
    unparsed: int              # bytes left after the known fields (0 for a complete decode)

    @property
    def known_version(self) -> bool:
        return self.message is not None and self.message.known(self.version)


def read_version_prefixed(data, messages: dict, version_for=None) -> Decoded:
    """int16 prefix + message body: Kafka ``MessageUtil.toVersionPrefixedBytes``.

    ``messages`` maps the prefix to the schema (coordinator keys: the prefix is the record type, read at
    that version); ``version_for`` overrides which schema reads a value (coordinator values: chosen by the
    key's record type, the prefix being the value's version).
    """
    if data is None or len(data) < 2:
        n = -1 if data is None else len(data)
        raise FormatError(f"needs a 2-byte version prefix, found {n} bytes", 0, "decode")
    (prefix,) = struct.unpack_from(">h", data, 0)
    msg = messages.get(prefix) if version_for is None else version_for
    if msg is None:
        return Decoded(prefix, None, None, len(data) - 2)
    value, pos = msg.read(data, prefix, 2)
    return Decoded(prefix, msg, value, len(data) - pos)


def build_version_prefixed(msg: Message, version: int, value: dict) -> bytes:
    return struct.pack(">h", version) + msg.build(value, version)
