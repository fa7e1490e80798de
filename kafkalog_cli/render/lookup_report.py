"""Text and JSON for ``lookup-offset`` / ``lookup-time``: each step of the broker's search, then the record."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import units
from ..engine.dump import RecordItem

if TYPE_CHECKING:   # each writer imports its own renderer: a text lookup never loads the JSON one
    from .jsonl import JsonRenderer
    from .kafka_text import TextRenderer


def _record_item(res) -> RecordItem:
    from kafkalog_formats.errors import FormatError

    from ..engine.dump import decode_control
    control = None
    if res.batch is not None and res.batch.is_control:
        try:
            control = decode_control(res.record)
        except FormatError as e:
            control = {"type": "INVALID", "error": e.reason}
    return RecordItem(res.record, control)


WIDTH = 80
LABEL = 17              # "relative offset: ": the column the steps' values start at


class _Steps(list):
    """The step lines, each wrapped within ``WIDTH`` columns under its value's column (the batch and record
    lines, Kafka's own, stay whole)."""

    def append(self, line: str) -> None:
        from .wrap import wrap
        self.extend(wrap(line[LABEL:], WIDTH, line[:LABEL], " " * LABEL))


def step_lines(res, by: str) -> list[str]:
    lines = _Steps()
    for s in res.steps:
        if not s.segment:
            lines.append(f"step:            {s.note}")
            continue
        name = Path(s.segment).name
        if s.index_file and s.index_file.endswith(".timeindex"):
            entry = ("slot -1 (before the first entry): offset " + str(s.base_offset) if s.slot < 0
                     else f"slot {s.slot}: timestamp {units.timestamp(s.entry[0])}, offset {s.entry[1]}")
            lines.append(f"segment:         {name} (base offset {s.base_offset}; {s.note})")
            lines.append(f"time index:      {Path(s.index_file).name}, {s.index_entries} entries; {entry}")
            continue
        if s.index_file is None and not s.batches_scanned and s.note:
            lines.append(f"segment:         {name} (base offset {s.base_offset}; {s.note})")
            continue
        lines.append(f"segment:         {name} (base offset {s.base_offset})")
        if by == "offset" and s is res.steps[0]:
            lines.append(f"relative offset: {res.target - s.base_offset}")
        if s.index_file:
            entry = ("slot -1 (before the first entry): position 0" if s.slot < 0
                     else f"slot {s.slot}: offset {s.entry[0]} at position {s.entry[1]}")
            lines.append(f"offset index:    {Path(s.index_file).name}, {s.index_entries} entries; {entry}")
        elif s.note:
            lines.append(f"offset index:    {s.note}")
        lines.append(f"scan:            from position {s.start_position}: {s.batches_scanned} batch"
                     f"{'es' * (s.batches_scanned != 1)}, {s.bytes_scanned} bytes")
    return list(lines)


SPECIALS = {-2: "earliest (-2): the log start offset", -1: "latest (-1): the log end offset",
            -3: "max-timestamp (-3): the first record with the largest timestamp"}
RECORDED = "max-timestamp (-3): the offset recorded for the largest timestamp (Kafka 3.0-3.7)"


def log_range(res) -> str:
    start, end = res.log_start_offset, res.log_end_offset
    if end <= start:
        return f"empty (log start {start}, log end {end})"
    return f"offsets {start} to {end - 1} (log end {end})"


def write_text(out, res, by: str, renderer: TextRenderer) -> None:
    from .kafka_text import batch_line
    w = out.write
    head = _Steps()
    if by == "timestamp":
        special = RECORDED if res.recorded else SPECIALS.get(res.target)
        head.append(f"timestamp:       {special or units.timestamp(res.target)}")
    head.append(f"log range:       {log_range(res)}")
    for line in head + step_lines(res, by):
        w(line + "\n")
    if res.batch is not None:
        w("batch:           " + batch_line(res.batch) + "\n")
        w("record:          " + renderer.record_line(res.batch, _record_item(res), res.steps[-1].segment) + "\n")
        renderer._flush_notes()                      # a decoder's warning or error, on stderr
    tail = _Steps()
    if by == "offset" and not res.exact:
        from .wrap import wrap
        tail.extend(wrap(f"offset {res.target} is not in the log (removed by compaction); the next offset "
                         f"present is {res.found_offset}", WIDTH, "", " " * LABEL))
    tail.append(f"found:           offset {res.found_offset}" + _found_timestamp(res.found_timestamp))
    for line in tail:
        w(line + "\n")


def _found_timestamp(ts: int | None) -> str:
    if ts is None:
        return ""
    return f", no timestamp ({ts})" if ts < 0 else f", timestamp {units.timestamp(ts)}"


def write_json(out, res, by: str, renderer: JsonRenderer) -> None:
    from .jsonl import batch_object, many_headers
    obj = {"type": "lookup", "by": by, "target": res.target, "log_start_offset": res.log_start_offset,
           "log_end_offset": res.log_end_offset, "found_offset": res.found_offset,
           "found_timestamp": res.found_timestamp, "exact": res.exact,
           "steps": [{"segment": s.segment or None, "base_offset": s.base_offset, "index_file": s.index_file,
                      "index_entries": s.index_entries, "slot": s.slot,
                      "entry": list(s.entry) if s.entry else None, "start_position": s.start_position,
                      "bytes_scanned": s.bytes_scanned, "batches_scanned": s.batches_scanned, "note": s.note}
                     for s in res.steps],
           "batch": None, "record": None}
    many = None
    if res.batch is not None:
        seg = res.steps[-1].segment
        item = _record_item(res)
        many = many_headers(item.record)
        obj["batch"] = batch_object(seg, res.batch)
        obj["record"] = renderer.record_object(seg, res.batch, item, headers=many is None)
    renderer.write(obj, many)
