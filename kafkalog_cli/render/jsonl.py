"""JSON lines: one object per event, lossless, field names documented in the README and man page."""
from __future__ import annotations

from functools import lru_cache

from kafkalog_formats.record import RecordHeaders

from ..engine import dump as ev
from ..names import json_name, json_text
from .dump_renderer import DumpRenderer
from .json_line import dumps as _dumps
from .payload import to_json
from .record_decoders import apply


class JsonRenderer(DumpRenderer):
    def __init__(self, out, key_decoder: str = "string", value_decoder: str = "string",
                 print_data: bool = False, skip_record_metadata: bool = False, record_decoding=None) -> None:
        super().__init__(out, key_decoder, value_decoder, print_data, skip_record_metadata, record_decoding)
        self.not_json: dict[str, int] = {}         # field -> values the json decoder wrote as base64
        self._pending: list[dict] = []
        self._file_json: tuple | None = None       # (file, its name as a JSON string) for native lines

    def write(self, obj: dict, many: RecordHeaders | None = None) -> None:
        """One JSON line; ``many``: the headers of the record object in ``obj``, which has them as an empty
        list (``record_object(..., headers=False)``), encoded and written a chunk at a time in their place."""
        f = obj.get("file")
        if f is not None:
            obj["file"] = json_name(f)
        text = json_text(_dumps(obj))
        if many is None:
            self.out.write(text + "\n")
            return
        head, tail = text.split('"headers":[]', 1)      # the first: a name holding it is escaped
        w = self.out.write
        w(head + '"headers":[')
        for i, chunk in enumerate(many.chunks()):
            w(("," if i else "") + json_text(_dumps([self._header(k, v) for k, v in chunk]))[1:-1])
        w("]" + tail + "\n")

    def emit(self, e) -> None:
        t = type(e)
        if t is ev.BatchItem:
            self.write(batch_object(e.file, e.batch))
            if e.records is not None:
                for item in e.records:
                    many = many_headers(item.record)
                    self.write(self.record_object(e.file, e.batch, item, headers=many is None), many)
                    if self._pending:
                        for problem in self._pending:
                            self.write(problem)
                        self._pending.clear()
        elif t is ev.RecordRun:
            self.emit_run(e)
        elif t is ev.FileStart:
            self.write({"type": "file", "file": e.file, "kind": e.kind, "header": e.header})
        elif t is ev.IndexEntry:
            self.write({"type": "index_entry", "file": e.file, "slot": e.slot, "offset": e.offset,
                        "position": e.position})
        elif t is ev.TimeIndexEntry:
            self.write({"type": "time_index_entry", "file": e.file, "slot": e.slot,
                        "timestamp": e.timestamp, "offset": e.offset})
        elif t is ev.SnapshotEntry:
            x = e.entry
            self.write({"type": "producer_snapshot_entry", "file": e.file, "producer_id": x.producer_id,
                        "producer_epoch": x.producer_epoch, "last_sequence": x.last_sequence,
                        "last_offset": x.last_offset, "offset_delta": x.offset_delta,
                        "timestamp": x.timestamp, "coordinator_epoch": x.coordinator_epoch,
                        "current_txn_first_offset": None if x.current_txn_first_offset < 0
                        else x.current_txn_first_offset})
        elif t is ev.TxnEntry:
            x = e.entry
            self.write({"type": "txn_index_entry", "file": e.file, "version": x.version,
                        "producer_id": x.producer_id, "first_offset": x.first_offset,
                        "last_offset": x.last_offset, "last_stable_offset": x.last_stable_offset})
        elif t is ev.Notice:
            self.write({"type": "notice", "file": e.file, "message": e.text})
        elif t is ev.TrailingBytes:
            self.write({"type": "problem", "file": e.file, "position": e.position, "kind": "trailing_bytes",
                        "message": f"Found {e.count} invalid bytes at the end", "offset": None,
                        "bytes": e.count})
        elif t is ev.Finding:
            self.write({"type": "problem", "file": e.file, "position": e.position, "kind": e.kind,
                        "message": e.message, "offset": e.offset})
        elif t is ev.Ignored:
            self.write({"type": "ignored", "file": e.file, "message": "Ignoring unknown file"})

    def native_render(self, e, nl):
        if not nl.json_supported(self.key_decoder, self.value_decoder):
            return None
        if self._file_json is None or self._file_json[0] != e.file:
            self._file_json = (e.file, file_fields_json(e.file))
        file_json = self._file_json[1]

        def render(target, batches=None, decoded=None):
            nl.render_json(e.scan, target, file_json=file_json, deep=e.deep, print_data=self.print_data,
                           key_decoder=self.key_decoder, value_decoder=self.value_decoder, batches=batches,
                           decoded=decoded)
        return render

    def record_object(self, file: str, batch, item, headers: bool = True) -> dict:
        """The record's JSON object; ``headers=False``: its headers an empty list (written by the caller)."""
        r = item.record
        topic, partition = json_partition(file)
        o = {"type": "record", "file": file, "topic": topic, "partition": partition,
             "batch_position": batch.position, "offset": r.offset,
             "timestamp": r.timestamp, "timestamp_type": batch.timestamp_type,
             "key_size": -1 if r.key is None else len(r.key),
             "value_size": -1 if r.value is None else len(r.value),
             "sequence": r.sequence}
        if batch.magic >= 2:
            o["headers"] = [self._header(k, v) for k, v in r.headers] if headers else []
        else:
            o["headers"] = []
            o["crc"] = r.crc
            o["crc_valid"] = r.valid
        if item.control is not None:
            o["control"] = item.control
        if self.print_data and not batch.is_control:
            chosen = None if self.record_decoding is None else self.record_decoding.for_file(file)
            if chosen is not None:
                self._decoded(o, chosen, file, batch, r)
            else:
                self._data(o, "key", self.key_decoder, r.key)
                self._data(o, "value", self.value_decoder, r.value)
        return o

    def _decoded(self, o: dict, chosen: tuple, file: str, batch, r) -> None:
        name, decoder = chosen
        d = apply(decoder, r, batch)
        o["decoder"] = name
        if d.raw:                                   # markers, not data: keep the bytes
            _repr(o, "key", r.key, r.key)
            _repr(o, "value", r.value, r.value)
        else:
            _repr(o, "key", r.key, d[0])
            _repr(o, "value", r.value, d[1])
        if d.warning:
            o["decode_warning"] = d.warning
        if d.error:
            o["decode_error"] = d.error
            self.problems += 1
            self._pending.append({"type": "problem", "file": file, "position": batch.position, "kind": "decode",
                                  "message": d.error, "offset": r.offset})

    def _header(self, k: bytes, v: bytes | None) -> dict:
        try:
            h = {"key": k.decode("utf-8")}
        except UnicodeDecodeError:
            h = {"key": k.decode("utf-8", errors="replace"), "key_hex": k.hex()}
        self._data(h, "value", self.value_decoder, v, "header value")
        return h

    def _data(self, o: dict, name: str, decoder: str, data: bytes | None, what: str | None = None) -> None:
        if decoder == "none":
            return
        if data is None:
            o[name] = None
            return
        value, enc = to_json(decoder, data)
        o[name] = value
        if enc:
            o[f"{name}_encoding"] = enc
            if decoder == "json":
                what = what or name
                self.not_json[what] = self.not_json.get(what, 0) + 1

    def fallback_note(self) -> str | None:
        """One line for the values ``--key-decoder``/``--value-decoder json`` could not read as JSON: they are
        written as base64 strings flagged ``<field>_encoding: "base64"`` (lossless), and counted here."""
        if not self.not_json:
            return None
        counts = [f"{n:,} {what}{'' if n == 1 else 's'}" for what, n in self.not_json.items()]
        counts = ", ".join(counts[:-1]) + " and " + counts[-1] if len(counts) > 1 else counts[0]
        total = sum(self.not_json.values())
        return (f"json decoder: {counts} {'is' if total == 1 else 'are'} not valid JSON, written as base64 "
                '(flagged "<field>_encoding":"base64")')

    def finish(self, report: "ev.DumpReport") -> None:
        for path, items in report.index_mismatches.items():
            for idx, log in items:
                self.write({"type": "index_mismatch", "file": path, "index_offset": idx, "log_offset": log})
        for path, items in report.timestamp_mismatches.items():
            for ts, log in items:
                self.write({"type": "timestamp_mismatch", "file": path, "index_timestamp": ts,
                            "log_timestamp": log})
        for path, items in report.out_of_order.items():
            for ts, prev in items:
                self.write({"type": "out_of_order_timestamp", "file": path, "index_timestamp": ts,
                            "previous_timestamp": prev})
        for path, items in report.not_found.items():
            for o, lo in items:
                self.write({"type": "offset_not_found", "file": path, "indexed_offset": o,
                            "found_log_offset": lo})
        for path, items in report.non_consecutive.items():
            for prev, nxt in items:
                self.write({"type": "non_consecutive_offsets", "file": path, "previous": prev, "next": nxt})


def many_headers(r) -> RecordHeaders | None:
    """The record's headers when it holds them as bytes (millions of them: ``JsonRenderer.write`` streams
    them), else None."""
    return r.headers if type(r.headers) is RecordHeaders else None


def _repr(o: dict, name: str, data: bytes | None, rep) -> None:
    """A record decoder's repr in a JSON record: structures as they are, bytes base64; a null key or value
    stays null whatever the decoder printed for it (``<DELETE>``)."""
    if data is None:
        o[name] = None
    elif isinstance(rep, (bytes, bytearray, memoryview)):
        import base64
        o[name] = base64.b64encode(bytes(rep)).decode("ascii")
        o[f"{name}_encoding"] = "base64"
    else:
        o[name] = rep


def batch_object(file: str, b) -> dict:
    legacy = b.magic < 2
    base = b.base_offset if not legacy else _legacy_base(b)
    topic, partition = json_partition(file)
    return {"type": "batch", "file": file, "topic": topic, "partition": partition, "position": b.position,
            "base_offset": base,
            "last_offset": b.last_offset, "count": b.count, "size": b.size, "magic": b.magic,
            "codec": b.codec_name, "crc": b.crc, "crc_valid": b.is_valid(), "attributes": b.attributes,
            "timestamp_type": b.timestamp_type,
            "base_timestamp": None if legacy else b.base_timestamp,
            "max_timestamp": b.max_timestamp, "producer_id": b.producer_id,
            "producer_epoch": b.producer_epoch, "base_sequence": b.base_sequence,
            "last_sequence": b.last_sequence, "partition_leader_epoch": b.partition_leader_epoch,
            "is_transactional": b.is_transactional, "is_control": b.is_control,
            "delete_horizon_ms": b.delete_horizon_ms}


@lru_cache(maxsize=256)
def file_partition(file: str) -> tuple[str | None, int | None]:
    """The topic and partition of a file in a partition directory (``orders-0/…``), else (None, None): every
    batch and record object names them, as kcat's JSON envelope does."""
    from pathlib import Path
    from ..layout import parse_partition_dir
    name = parse_partition_dir(Path(file).parent.name) if file not in ("", "-") else None
    return (name.topic, name.partition) if name is not None else (None, None)


@lru_cache(maxsize=256)
def json_partition(file: str) -> tuple[str | None, int | None]:
    """``file_partition`` with the topic as a JSON name field (``names.json_name``): a topic of bytes that
    are not UTF-8 sent every record of its partition through the slow standard encoder (4x the time)."""
    topic, partition = file_partition(file)
    return (None if topic is None else json_name(topic)), partition


def file_fields_json(file: str) -> bytes:
    """The JSON text that follows ``"file":`` in a batch or record line: the file name, then its topic and
    partition (what the compiled renderer writes verbatim after the key, as ``batch_object`` orders them)."""
    topic, partition = json_partition(file)
    text = (_dumps(json_name(file)) + ',"topic":' + _dumps(topic) + ',"partition":' +
            ("null" if partition is None else str(partition)))
    return json_text(text).encode("utf-8")


def _legacy_base(b):
    from kafkalog_formats.errors import FormatError
    try:
        return b.base_offset
    except FormatError:
        return None
