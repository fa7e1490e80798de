"""Payload decoders from schema files (``--key-schema`` / ``--value-schema``), without a schema registry.

The kind of schema is told by the file's suffix:

  .avsc                    Avro schema (JSON): fastavro's schemaless reader
  .desc .pb .protoset      Protobuf FileDescriptorSet (``protoc --include_imports --descriptor_set_out``)
  .proto                   Protobuf source, compiled with grpcio-tools' protoc when it is installed
  .json                    JSON Schema: the payload is JSON, validated with jsonschema

A Protobuf file names the message type after ``#`` (``orders.desc#shop.Order``); without it the first
message of the last file in the set is taken. Bytes in the schema-registry framing (magic byte 0, a
4-byte schema id: ``payload.schema_registry``; for Protobuf also the message-index list, zig-zag varints,
a single 0 meaning the first message) are decoded past the framing: the schema id itself is not checked
against anything (there is no registry). Other bytes are decoded whole.

The libraries are an optional extra (``pip install 'kafkalog[schemas]'``); a missing one is named in one line.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path

from ..errors import UsageProblem

AVRO = (".avsc",)
PROTO_SETS = (".desc", ".pb", ".protoset")
EXTRA = "pip install 'kafkalog[schemas]'"


class SchemaError(UsageProblem, ValueError):
    """A schema file that cannot be used (a usage error: exit status 2)."""


def schema_decoder(spec: str):
    """A function of the payload bytes giving a JSON-able value, from ``spec`` (FILE or FILE#MESSAGE)."""
    path_text, _sep, message = spec.partition("#")
    path = Path(path_text)
    if not path.is_file():
        raise SchemaError(f"{path_text}: no such file")
    suffix = path.suffix.lower()
    if suffix in AVRO:
        return _avro(path)
    if suffix in PROTO_SETS or suffix == ".proto":
        return _protobuf(path, message or None)
    if suffix == ".json":
        return _json_schema(path)
    raise SchemaError(f"{path_text}: the suffix says which kind of schema it is: .avsc (Avro), .desc/.pb/"
                      ".protoset or .proto (Protobuf), .json (JSON Schema)")


def _need(module: str, what: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise SchemaError(f"{what} needs the Python package {module.split('.')[0]}: {EXTRA}") from None


def _framed(data: bytes) -> bytes | None:
    """The payload after the schema-registry framing, or None when ``data`` is not framed."""
    from .payload import schema_registry
    return data[5:] if schema_registry(data) is not None else None


def _jsonable(v):
    """Avro and Protobuf values as JSON: bytes base64, decimals and times as text."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return str(v)


def _avro(path: Path):
    fastavro = _need("fastavro", "an Avro schema")
    try:
        schema = fastavro.parse_schema(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError, KeyError) as e:
        raise SchemaError(f"{path}: not an Avro schema: {e}") from None
    import io

    def decode(data: bytes):
        body = _framed(data)
        buf = io.BytesIO(data if body is None else body)
        value = fastavro.schemaless_reader(buf, schema)
        left = len(buf.getbuffer()) - buf.tell()
        if left:
            raise ValueError(f"{left} byte(s) left after the Avro value ({path.name})")
        return _jsonable(value)
    return decode


def _json_schema(path: Path):
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise SchemaError(f"{path}: not JSON: {e}") from None
    jsonschema = _need("jsonschema", "a JSON Schema")
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise SchemaError(f"{path}: not a valid JSON Schema: {e.message}") from None

    def decode(data: bytes):
        body = _framed(data)
        value = json.loads(data if body is None else body)
        error = next(iter(validator.iter_errors(value)), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "the value"
            raise ValueError(f"does not match {path.name} at {where}: {error.message}")
        return value
    return decode


def _protobuf(path: Path, message: str | None):
    _need("google.protobuf", "a Protobuf schema")
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
    if path.suffix.lower() == ".proto":
        fds = _compile_proto(path)
    else:
        fds = descriptor_pb2.FileDescriptorSet()
        try:
            fds.ParseFromString(path.read_bytes())
        except Exception as e:            # noqa: BLE001 - protobuf's DecodeError and friends
            raise SchemaError(f"{path}: not a Protobuf FileDescriptorSet ({e}); make one with protoc "
                              "--include_imports --descriptor_set_out=FILE.desc FILE.proto") from None
    pool = descriptor_pool.DescriptorPool()
    try:
        for f in fds.file:
            pool.Add(f)
    except Exception as e:                # noqa: BLE001 - a set missing imports
        raise SchemaError(f"{path}: {e} (was it made with protoc --include_imports?)") from None
    if not fds.file:
        raise SchemaError(f"{path}: holds no .proto file")
    last = pool.FindFileByName(fds.file[-1].name)
    messages = list(last.message_types_by_name.values())
    if message is None:
        if not messages:
            raise SchemaError(f"{path}: its last file declares no message; name one: {path}#package.Message")
        default = messages[0]
    else:
        try:
            default = pool.FindMessageTypeByName(message)
        except KeyError:
            raise SchemaError(f"{path}: no message {message}") from None
    file_messages = list(default.file.message_types_by_name.values())

    def cls_for(desc):
        return message_factory.GetMessageClass(desc)

    def decode(data: bytes):
        body = _framed(data)
        desc = default
        if body is not None:
            indexes, body = _message_indexes(body)
            desc = _nested(file_messages, indexes or [0])
        msg = cls_for(desc)()
        msg.ParseFromString(bytes(data if body is None else body))
        return _jsonable(json_format.MessageToDict(msg, preserving_proto_field_name=True))
    return decode


def _message_indexes(body: bytes) -> tuple[list[int], bytes]:
    """Confluent's Protobuf framing after the schema id: a zig-zag varint count and as many zig-zag varint
    indexes (the message's path among the file's messages); a count of 0 means the first message."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while True:
            if pos >= len(body):
                raise ValueError("the Protobuf message-index list is cut short")
            b = body[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return (value >> 1) ^ -(value & 1)
            shift += 7
            if shift > 63:
                raise ValueError("a message index is not a varint")
    count = varint()
    if count < 0 or count > 100:
        raise ValueError(f"{count} is not a message-index count")
    indexes = [varint() for _ in range(count)]
    return indexes, body[pos:]


def _nested(messages: list, indexes: list[int]):
    desc = None
    level = messages
    for i in indexes:
        if i < 0 or i >= len(level):
            raise ValueError(f"message index {i} is not in the schema")
        desc = level[i]
        level = list(desc.nested_types)
    return desc


def _compile_proto(path: Path):
    """A .proto compiled with grpcio-tools' protoc (its directory on the import path)."""
    import tempfile
    try:
        from grpc_tools import protoc
    except ImportError:
        raise SchemaError(f"{path}: a .proto file needs grpcio-tools to be compiled (pip install grpcio-tools), "
                          "or give a descriptor set: protoc --include_imports --descriptor_set_out=FILE.desc "
                          "FILE.proto") from None
    from google.protobuf import descriptor_pb2
    import importlib.resources
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory(prefix="kafkalog-proto-") as tmp:
        out = Path(tmp, "set.desc")
        code = protoc.main(["protoc", f"-I{path.parent}", f"-I{include}", "--include_imports",
                            f"--descriptor_set_out={out}", str(path)])
        if code != 0 or not out.is_file():
            raise SchemaError(f"{path}: protoc could not compile it (exit status {code})")
        fds = descriptor_pb2.FileDescriptorSet()
        fds.ParseFromString(out.read_bytes())
    return fds
