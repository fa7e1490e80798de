"""Message schemas compiled once into programs for the compiled record path (formats/_native_c/coordinator.c):
the C interpreter reads a record's key or value as ``Message.read`` does and writes the JSON text of
``Message.to_json``, with no Python object per record.

A program covers one message at one version, the fields present at it: not compiled (None) are messages
holding a float64 (Java's double formatting stays in Python) and versions outside the valid range (the pure
decoder warns about them). Tagged fields are not in the program: when one is present in the bytes the
interpreter declines the record and the pure decoder prints it, as it does for every record whose output
is more than formatting (unknown record types, bytes after the known fields, text that is not strict
UTF-8, any decoding error).

Layout (little-endian)::

    struct  u8 field count, u8 flexible, the fields, and when flexible: u8 known tag count, u32 tags
    field   u8 name length, the name as JSON text with its colon ("\\"offset\\":"), the type
    type    u8 op; STRING, BYTES, ARRAY, STRUCT: u8 nullable; ARRAY, STRUCT: u32 length, then the element
            type or the struct; ENUM8: u8 name count, each name as u8 length + JSON string
"""
from __future__ import annotations

import json
import struct
from functools import lru_cache

from .kafka_message import Field, Message, versions

OPS = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint16": 5, "uint32": 6, "bool": 7, "uuid": 8,
       "string": 9, "bytes": 10}
ARRAY, STRUCT, ENUM8 = 11, 12, 13


def _type(f: Field, version: int, flexible: bool, enums: dict | None = None) -> bytes:
    t = f.type
    nullable = 1 if version in f.nullable else 0
    names = (enums or {}).get(f.name)
    if names is not None and t == "int8":            # an int8 printed by name (0..n-1; another value: pure)
        out = bytearray([ENUM8, len(names)])
        for n in names:
            text = json.dumps(n, ensure_ascii=False).encode("utf-8")
            out += bytes([len(text)]) + text
        return bytes(out)
    if t in OPS:
        return bytes([OPS[t]]) + (bytes([nullable]) if t in ("string", "bytes") else b"")
    if t.startswith("[]"):
        elem = _type(f._replace(type=f.elem, nullable=versions(None), tagged=versions(None)), version, flexible)
        return bytes([ARRAY, nullable]) + struct.pack("<I", len(elem)) + elem
    if t == "struct":
        body = _struct(f.fields, version, flexible)
        return bytes([STRUCT, nullable]) + struct.pack("<I", len(body)) + body
    raise ValueError(f"no program for field type {t}")


def _struct(fields: tuple, version: int, flexible: bool, enums: dict | None = None) -> bytes:
    present = [f for f in fields if version in f.versions]
    untagged = [f for f in present if not (flexible and version in f.tagged)]
    tags = sorted(f.tag for f in present if flexible and version in f.tagged)
    if len(untagged) > 255 or len(tags) > 255:
        raise ValueError("too many fields for a program")
    out = bytearray([len(untagged), 1 if flexible else 0])
    for f in untagged:
        name = (json.dumps(f.name, ensure_ascii=False) + ":").encode("utf-8")
        out += bytes([len(name)]) + name + _type(f, version, flexible, enums)
    if flexible:
        out += bytes([len(tags)]) + b"".join(struct.pack("<I", t) for t in tags)
    return bytes(out)


@lru_cache(maxsize=None)
def compile_message(message: Message, version: int, enums: tuple = ()) -> bytes | None:
    """The program of ``message`` at ``version``, or None where only the pure decoder may print it.
    ``enums``: (field name, (name of 0, name of 1, ...)) for int8 fields printed by name (the transaction
    log's status, ``record_decoders._status_names``)."""
    if message.has_float or version not in message.valid:
        return None
    return _struct(message.fields, version, version in message.flexible, dict(enums))


def coordinator_programs(keys: dict, values: dict, pure_types=(), enums: tuple = ()) -> tuple[tuple, tuple]:
    """(key programs by record type, value programs by record type and version) for a coordinator topic's
    keys and values by record type (group_coordinator, share_group_state, transaction_log); record types in
    ``pure_types`` are left to the pure decoder (their output is more than the message's JSON)."""
    top = max(keys) + 1 if keys else 0
    key_progs, value_progs = [], []
    for t in range(top):
        k, v = keys.get(t), values.get(t)
        if k is None or v is None or t in pure_types:
            key_progs.append(None)
            value_progs.append(None)
            continue
        key_progs.append(compile_message(k, t))
        hi = v.valid.hi if not v.valid.empty else -1
        value_progs.append(tuple(compile_message(v, ver, enums) for ver in range(hi + 1)))
    return tuple(key_progs), tuple(value_progs)
