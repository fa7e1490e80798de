"""Kafka ``DumpLogSegments`` text lines (Kafka 3.2+ / 4.0 Scala tool, field for field).

Deliberate differences, documented in the README: no stray ``}`` after legacy record CRCs, no trailing
space after a producer-snapshot entry without batch metadata, and problems Kafka would crash on are
printed to stderr as ``kafkalog: <file>: ...`` while the run goes on.

Decoded structures (internal-topic decoders, KRaft control records) are printed as compact JSON the way
Kafka's Jackson nodes print (``json_text``: Java's ``Double.toString`` for floats).
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator

from kafkalog_formats.java_text import java_utf8
from kafkalog_formats.record import RecordHeaders

from ..engine import dump as ev
from ..names import shown
from .dump_renderer import DumpRenderer
from .jvm_map_order import in_kafka_order
from .payload import to_text
from .record_decoders import apply


#: Decoder warnings (and errors) printed per file and kind; the rest are counted in one line.
NOTES_SHOWN = 5
#: Where a record's header keys go in its parts when it holds them as bytes (``record_pieces`` writes them).
_HEADER_KEYS = object()


class TextRenderer(DumpRenderer):
    def __init__(self, out, err, key_decoder: str = "string", value_decoder: str = "string",
                 print_data: bool = False, skip_record_metadata: bool = False, record_decoding=None) -> None:
        super().__init__(out, key_decoder, value_decoder, print_data, skip_record_metadata, record_decoding)
        self.err = err
        self._notes: list[str] = []
        self._note_counts: dict[tuple, int] = {}   # (file, "warning"|"error") -> notes of the file so far

    def emit(self, e) -> None:
        w = self.out.write
        t = type(e)
        if t is ev.BatchItem:
            w(batch_line(e.batch) + "\n")
            if e.records is not None:
                for item in e.records:
                    if type(item.record.headers) is RecordHeaders:      # written as its headers are walked
                        for piece in self.record_pieces(e.batch, item, e.file):
                            w(piece)
                        w("\n")
                    else:
                        w(self.record_line(e.batch, item, e.file) + "\n")
                    if self._notes:
                        self._flush_notes()
        elif t is ev.RecordRun:
            self.emit_run(e)
        elif t is ev.FileStart:
            self._summarize_notes()
            w(f"Dumping {shown(e.file)}\n")
            if e.header:
                w(e.header + "\n")
        elif t is ev.IndexEntry:
            w(f"offset: {e.offset} position: {e.position}\n")
        elif t is ev.TimeIndexEntry:
            w(f"timestamp: {e.timestamp} offset: {e.offset}\n")
        elif t is ev.SnapshotEntry:
            w(snapshot_line(e.entry) + "\n")
        elif t is ev.TxnEntry:
            x = e.entry
            w(f"version: {x.version} producerId: {x.producer_id} firstOffset: {x.first_offset} "
              f"lastOffset: {x.last_offset} lastStableOffset: {x.last_stable_offset}\n")
        elif t is ev.Notice:
            w(shown(e.text) + "\n")                # notices quote file names ("... is empty.")
        elif t is ev.TrailingBytes:
            name = e.file.replace("\\", "/").rsplit("/", 1)[-1]
            w(f"Found {e.count} invalid bytes at the end of {shown(name)}\n")
        elif t is ev.Finding:
            self.out.flush()
            where = f" position {e.position}:" if e.position is not None else ""
            self.err.write(shown(f"kafkalog: {e.file}:{where} {e.message}") + "\n")
        elif t is ev.Ignored:
            w(f"Dumping {shown(e.file)}\n")
            self.out.flush()
            self.err.write(f"Ignoring unknown file {shown(e.file)}\n")

    def native_render(self, e, nl):
        if not nl.text_supported(self.key_decoder, self.value_decoder):
            return None

        def render(target, batches=None, decoded=None):
            nl.render_text(e.scan, target, deep=e.deep, print_data=self.print_data,
                           skip_metadata=self.skip_metadata, key_decoder=self.key_decoder,
                           value_decoder=self.value_decoder, batches=batches, decoded=decoded)
        return render

    def record_line(self, batch, item, file: str | None = None) -> str:
        if type(item.record.headers) is RecordHeaders:
            return "".join(self.record_pieces(batch, item, file))
        return "".join(self._record_parts(batch, item, file))

    def record_pieces(self, batch, item, file: str | None = None) -> Iterator[str]:
        """The record's line in pieces, without its newline: the header keys of a record holding them as
        bytes (``RecordHeaders``, millions of them) written a chunk at a time, never one string."""
        for p in self._record_parts(batch, item, file):
            if p is not _HEADER_KEYS:
                yield p
                continue
            for i, chunk in enumerate(item.record.headers.chunks()):
                yield ("," if i else "") + ",".join(java_utf8(k) for k, _v in chunk)

    def _record_parts(self, batch, item, file: str | None) -> list:
        r = item.record
        parts = []
        if not self.skip_metadata:
            parts.append(f"| offset: {r.offset} {batch.timestamp_type}: {r.timestamp} "
                         f"keySize: {-1 if r.key is None else len(r.key)} "
                         f"valueSize: {-1 if r.value is None else len(r.value)}")
            if batch.magic >= 2 and type(r.headers) is RecordHeaders:
                parts += (f" sequence: {r.sequence} headerKeys: [", _HEADER_KEYS, "]")
            elif batch.magic >= 2:
                keys = ",".join(java_utf8(k) for k, _v in r.headers)
                parts.append(f" sequence: {r.sequence} headerKeys: [{keys}]")
            else:
                parts.append(f" isValid: {_b(r.valid)} crc: {r.crc}")
            if item.control is not None:
                parts.append(control_text(item.control))
        if self.print_data and not batch.is_control:
            chosen = None if self.record_decoding is None else self.record_decoding.for_file(file or "")
            if chosen is not None:
                k, v = self._decoded(chosen[1], r, batch, file)
            else:
                k = None if r.key is None else to_text(self.key_decoder, r.key)
                v = None if r.value is None else to_text(self.value_decoder, r.value)
            if k is not None:
                parts.append(f"{'| ' if self.skip_metadata else ' '}key: {k}")
            if v is not None:
                parts.append(f" payload: {v}")
        return parts

    def _decoded(self, decoder, r, batch, file) -> tuple[str | None, str | None]:
        d = apply(decoder, r, batch)
        where = f"kafkalog: {file}: position {batch.position}: offset {r.offset}:"
        if d.error:
            self.problems += 1
            self._note(file, "error", f"{where} {d.error}")
        if d.warning:
            self._note(file, "warning", f"{where} warning: {d.warning}")
        return _repr_text(d[0], d.floats), _repr_text(d[1], d.floats)

    def _note(self, file, kind: str, text: str) -> None:
        """A decoder's warning or error for stderr: the first ``NOTES_SHOWN`` of each kind in a file, then
        only counted (a batch of millions of records must not print millions of lines)."""
        n = self._note_counts.get((file, kind), 0) + 1
        self._note_counts[(file, kind)] = n
        if n <= NOTES_SHOWN:
            self._notes.append(text)

    def _flush_notes(self) -> None:
        self.out.flush()
        for n in self._notes:
            self.err.write(shown(n) + "\n")
        self._notes.clear()

    def _summarize_notes(self) -> None:
        """How many decoder warnings and errors of the files so far were not printed."""
        for (file, kind), n in self._note_counts.items():
            if n > NOTES_SHOWN:
                self.out.flush()
                self.err.write(f"kafkalog: {file}: {n - NOTES_SHOWN} more decoder {kind}s not shown "
                               f"({n} in all)\n")
        self._note_counts.clear()

    def finish(self, report: "ev.DumpReport") -> None:
        """End-of-run reports to stderr in DumpLogSegments' order (``main``/``TimeIndexDumpErrors.printErrors``,
        3.x and 4.0): the files of each report in its hash map's order (``jvm_map_order``), offset-index
        mismatches and non-consecutive offsets newest first (Scala lists built by prepending), time-index
        mismatches and out-of-order timestamps oldest first (appended to buffers), and the not-found header
        once per time-index file."""
        self._summarize_notes()
        self.out.flush()
        w = self.err.write
        for path, items in in_kafka_order(report.index_mismatches):
            w(f"Mismatches in :{shown(path)}\n")
            for idx, log in reversed(items):
                w(f"  Index offset: {idx}, log offset: {log}\n")
        for path, items in in_kafka_order(report.timestamp_mismatches):
            w(f"Found timestamp mismatch in :{shown(path)}\n")
            for ts, log in items:
                w(f"  Index timestamp: {ts}, log timestamp: {log}\n")
        for path, items in in_kafka_order(report.out_of_order):
            w(f"Found out of order timestamp in :{shown(path)}\n")
            for ts, prev in items:
                w(f"  Index timestamp: {ts}, Previously indexed timestamp: {prev}\n")
        for _path, items in in_kafka_order(report.not_found):
            w("The following indexed offsets are not found in the log.\n")
            for o, lo in items:
                w(f"Indexed offset: {o}, found log offset: {lo}\n")
        for path, items in in_kafka_order(report.non_consecutive):
            w(f"Non-consecutive offsets in {shown(path)}\n")
            for prev, nxt in reversed(items):
                w(f"  {prev} is followed by {nxt}\n")


def _b(v: bool) -> str:
    return "true" if v else "false"


def _repr_text(v, floats: bool | None = None) -> str | None:
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        import base64
        return base64.b64encode(bytes(v)).decode("ascii")
    if floats is False:                   # no double to format the Java way: the C encoder gives the same text
        try:
            return _fast_json(v)
        except TypeError:
            pass
    return json_text(v)


def java_double(x: float) -> str:
    """Java's ``Double.toString`` (what Jackson prints for a double): plain notation in [1e-3, 1e7),
    otherwise ``d.dddE±n``; always a fractional part."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    a = abs(x)
    if 1e-3 <= a < 1e7:
        r = repr(x)
        return r if "." in r else r + ".0"
    from decimal import Decimal
    t = Decimal(repr(a)).normalize().as_tuple()      # shortest digits, as Java 19+ chooses them
    digits = "".join(map(str, t.digits))
    return f"{'-' if x < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{len(digits) - 1 + t.exponent}"


def json_text(v) -> str:
    """Compact JSON as Jackson's ``JsonNode.toString`` writes it (no spaces, UTF-8 kept, Java doubles)."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{_json_str(k)}:{json_text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(json_text(x) for x in v) + "]"
    if isinstance(v, str):
        return _json_str(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, float):
        return java_double(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        import base64
        return _json_str(base64.b64encode(bytes(v)).decode("ascii"))
    return _json_str(str(v))


_json_str = json.encoder.encode_basestring
_fast_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def batch_line(b) -> str:
    if b.magic >= 2:
        dh = b.delete_horizon_ms
        return (f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.count} "
                f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} "
                f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
                f"partitionLeaderEpoch: {b.partition_leader_epoch} isTransactional: {_b(b.is_transactional)} "
                f"isControl: {_b(b.is_control)} deleteHorizonMs: "
                f"{'OptionalLong.empty' if dh is None else f'OptionalLong[{dh}]'} position: {b.position} "
                f"{b.timestamp_type}: {b.max_timestamp} size: {b.size} magic: {b.magic} "
                f"compresscodec: {b.codec_name} crc: {b.crc} isvalid: {_b(b.is_valid())}")
    return (f"offset: {b.offset_field} position: {b.position} {b.timestamp_type}: {b.max_timestamp} "
            f"size: {b.size} magic: {b.magic} compresscodec: {b.codec_name} crc: {b.crc} "
            f"isvalid: {_b(b.is_valid())}")


# How DumpLogSegments labels decoded KRaft control values (LeaderChange: 4.1+ and the Java tool)
_CONTROL_JSON_NAMES = {"LEADER_CHANGE": "LeaderChange:", "SNAPSHOT_HEADER": "SnapshotHeader",
                       "SNAPSHOT_FOOTER": "SnapshotFooter", "KRAFT_VERSION": "KRaftVersion",
                       "KRAFT_VOTERS": "KRaftVoters"}
_CONTROL_IDS = {"ABORT": 0, "COMMIT": 1, "LEADER_CHANGE": 2, "SNAPSHOT_HEADER": 3, "SNAPSHOT_FOOTER": 4,
                "KRAFT_VERSION": 5, "KRAFT_VOTERS": 6}


def control_text(c: dict) -> str:
    t = c["type"]
    if t in ("ABORT", "COMMIT"):
        return f" endTxnMarker: {t} coordinatorEpoch: {c['coordinator_epoch']}"
    if t in _CONTROL_JSON_NAMES and c.get("data") is not None:
        return f" {_CONTROL_JSON_NAMES[t]} {json_text(c['data'])}"
    if t == "INVALID":
        return f" controlType: INVALID ({c.get('error')})"
    return f" controlType: {t}({c.get('id', _CONTROL_IDS.get(t, -1))})"


def snapshot_line(x) -> str:
    txn = "OptionalLong.empty" if x.current_txn_first_offset < 0 else f"OptionalLong[{x.current_txn_first_offset}]"
    line = (f"producerId: {x.producer_id} producerEpoch: {x.producer_epoch} coordinatorEpoch: "
            f"{x.coordinator_epoch} currentTxnFirstOffset: {txn} lastTimestamp: {x.timestamp}")
    if x.last_offset >= 0:
        first = x.last_sequence - x.offset_delta
        if first < 0 and x.last_sequence >= 0:
            first += 0x7FFFFFFF + 1
        line += (f" firstSequence: {first} lastSequence: {x.last_sequence} lastOffset: {x.last_offset} "
                 f"offsetDelta: {x.offset_delta} timestamp: {x.timestamp}")
    return line
