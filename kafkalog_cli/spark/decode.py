"""``key_decoded`` and ``value_decoded``: the text ``dump-log`` shows for a record's key and value.

Decoders are ``dump-log``'s: ``keyDecoder``/``valueDecoder`` are payload decoders (``string``, ``hex``,
``base64``, ``json``, ``schema-registry``, ``schema-registry-hex``, ``none``; the text of ``dump-log``'s
text output), ``decoder`` is a payload decoder for both, ``auto`` (Kafka's internal topics decoded by
their topic, the rest by the payload decoders), an internal-topic decoder (``offsets``,
``transaction-log``, ``cluster-metadata``, ``remote-log-metadata``, ``share-group-state``) or a plug-in
(``MODULE:FUNCTION`` or a ``kafkalog.decoders`` entry point). Structured results (the JSON envelopes of
internal topics) are JSON text; bytes are base64; a null key or value stays null. A control record's
``value_decoded`` is its decoded marker as JSON (``{"type":"COMMIT","version":0,...}``).

A record decoder that reports an error gives a ``decode`` problem (the record itself is still returned).
Plug-ins get a record with ``offset``, ``timestamp``, ``key``, ``value``, ``headers`` and ``sequence``, and
no batch (``None``). This is a per-record Python step, taken only when a decoder is asked for.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute

from ..engine.findings import Finding
from .options import PAYLOAD_DECODERS


class _Record(NamedTuple):
    offset: int
    timestamp: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple
    sequence: int | None = None


def _row_headers(column: pa.ListArray):
    """``i -> `` the headers of row ``i`` as a record decoder gets them: a tuple of (key bytes, value) pairs,
    or for a row of more than ``HEADERS_INLINE`` a sequence converting them as they are read (a row may hold
    millions: the whole column as Python objects would be gigabytes)."""
    from kafkalog_formats.record import HEADERS_INLINE
    lengths = column.value_lengths().fill_null(0)
    if len(column) == 0 or pa.compute.max(lengths).as_py() <= HEADERS_INLINE:
        rows = column.to_pylist()
        return lambda i: tuple((h["key"].encode(), h["value"]) for h in rows[i] or ())
    return lambda i: (_ArrowHeaders(column[i].values) if lengths[i].as_py() > HEADERS_INLINE
                      else tuple((h["key"].encode(), h["value"]) for h in column[i].as_py() or ()))


class _ArrowHeaders(Sequence):
    """A row's many headers for a record decoder: (key bytes, value) pairs converted as they are read."""

    def __init__(self, structs: pa.StructArray) -> None:
        self.keys, self.values = structs.field("key"), structs.field("value")

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        return self.keys[i].as_py().encode(), self.values[i].as_py()

    def __iter__(self):
        for start in range(0, len(self), 65_536):
            keys = self.keys.slice(start, 65_536).to_pylist()
            values = self.values.slice(start, 65_536).to_pylist()
            yield from zip((k.encode() for k in keys), values)


def _json(obj) -> str:
    try:
        from orjson import dumps
        return dumps(obj).decode("utf-8")
    except (ImportError, TypeError, ValueError):
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _text(rep) -> str | None:
    if rep is None:
        return None
    if isinstance(rep, str):
        return rep
    if isinstance(rep, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(rep)).decode("ascii")
    return _json(rep)


class Decoders:
    """The decoders that apply to the records of one range (``auto`` chooses by the range's topic)."""

    def __init__(self, opts, rng) -> None:
        self.rng = rng
        name = opts.decoder
        payload = name if name in PAYLOAD_DECODERS else None
        self.key_decoder = opts.key_decoder or payload or "string"
        self.value_decoder = opts.value_decoder or payload or "string"
        self.record = None
        if name is not None and payload is None:
            from ..render.record_decoders import RecordDecoding
            self.record = RecordDecoding.named(name).for_file(rng.segment)

    def add(self, batch: pa.RecordBatch, columns: list[str], sink) -> pa.RecordBatch:
        """``batch`` with ``key_decoded``/``value_decoded`` and only ``columns``, in that order."""
        from ..engine.dump import decode_control
        from ..render.payload import to_text
        from kafkalog_formats.errors import FormatError
        cols = {name: batch.column(name) for name in batch.schema.names}
        keys = cols["key"].to_pylist()
        values = cols["value"].to_pylist()
        control = cols["is_control"].to_pylist()
        n = batch.num_rows
        kd: list = [None] * n
        vd: list = [None] * n
        if self.record is not None:
            name, fn = self.record
            offsets = cols["offset"].to_pylist()
            ts = cols["timestamp"].cast(pa.int64()).to_pylist()
            headers = _row_headers(cols["headers"])
            positions = cols["batch_position"].to_pylist() if "batch_position" in cols else [None] * n
            from ..render.record_decoders import apply
        for i in range(n):
            k, v = keys[i], values[i]
            if control[i]:
                try:
                    vd[i] = _json(decode_control(_Record(0, None, k, v, ())))
                except FormatError:
                    vd[i] = None
                continue
            if self.record is not None:
                rec = _Record(offsets[i], None if ts[i] is None else ts[i] // 1000, k, v, headers(i))
                d = apply(fn, rec, None)
                if d.error:
                    sink.problem(Finding("decode", d.error, self.rng.segment, positions[i], offsets[i]))
                if not d.raw:
                    kd[i] = None if k is None else _text(d[0])
                    vd[i] = None if v is None else _text(d[1])
                continue
            kd[i] = None if k is None or self.key_decoder == "none" else to_text(self.key_decoder, k)
            vd[i] = None if v is None or self.value_decoder == "none" else to_text(self.value_decoder, v)
        cols["key_decoded"] = pa.array(kd, pa.string())
        cols["value_decoded"] = pa.array(vd, pa.string())
        from .schema import schema_for
        return pa.RecordBatch.from_arrays([cols[c] for c in columns], schema=schema_for(columns))
