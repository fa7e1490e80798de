"""Problems met while reading segments for Spark, and the ``_errors`` table they make. pyarrow, no Spark.

A read never drops anything silently: every batch it cannot return as good data, and every stretch of a
segment it cannot read, is a ``Finding`` (``engine/findings``) with the file, byte position and offset, described with the
kinds and messages ``kafkalog verify`` uses for the same bytes:

crc_mismatch      the batch's stored CRC does not match its bytes (``DefaultRecordBatch.isValid``,
                  ``LegacyRecord.isValid``): its rows are never returned as records (``quarantine`` keeps
                  what can be decoded of them apart)
framing           Kafka's reader stops there (``FileLogInputStream.nextBatch``: a size below the minimum,
                  a batch running past the end of the file, a v2 batch shorter than its header); kinds
                  ``corrupt_size``, ``trailing_bytes``, ``batch_too_small``, ``corrupt_message``,
                  ``zero_tail``. Kafka's reader and ``dump-log`` stop at the first; Spark reads go on at
                  the next offset-index entry whose batch is intact (or the first chain of intact
                  batches that leads to it), and the message says how many bytes were skipped. A
                  zero-filled tail (a preallocated segment) holds no records: a warning.
decoding          a CRC-valid batch whose records do not decode (decompression, record structure,
                  ``--max-decompressed-bytes``, a control record's key or marker): the records decoded
                  before the error are returned, as ``dump-log`` prints them
record_offset     a record offset outside its batch's range or not increasing (``DefaultRecordBatch``
                  iteration, verify's deep check): the records before it are returned

``segment_problems`` adds what ``verify --shallow`` finds in a segment's batch headers and indexes (the
findings about data the reader reports itself are left out, so nothing is counted twice). Problems do not
depend on how segments are split into tasks: each batch is judged on its own, and a read resumes after a
framing stop at an offset-index entry, which are the only places a segment is ever cut.
"""
from __future__ import annotations

import pyarrow as pa

from ..engine.findings import Finding
from ..errors import InputProblem

#: kinds the reader reports itself (``segment_problems`` leaves verify's findings of these kinds out)
READER_KINDS = frozenset({"crc_mismatch", "corrupt_size", "trailing_bytes", "batch_too_small", "corrupt_message",
                          "zero_tail", "record_offset", "record_count"})

ERROR_COLUMNS = {
    "cluster_id": pa.string(), "node_id": pa.int32(), "log_dir": pa.string(), "topic": pa.string(),
    "partition": pa.int32(), "file": pa.string(), "position": pa.int64(), "offset": pa.int64(),
    "kind": pa.string(), "severity": pa.string(), "message": pa.string(), "records": pa.int64(),
    "bytes": pa.int64(),
}
ERROR_SCHEMA = pa.schema(list(ERROR_COLUMNS.items()))
ERROR_DDL = ("cluster_id string, node_id int, log_dir string, topic string, partition int, file string, "
             "position long, offset long, kind string, severity string, message string, records long, bytes long")


class KafkaLogDataError(InputProblem):
    """A read with ``onError=fail`` met a problem; the message says where and what."""

    def __init__(self, problem: Finding) -> None:
        super().__init__(f"{_where(problem)}: {problem.message} ({problem.kind}); read past problems with "
                         "option onError=skip (kafkalog export: --on-error skip) and list them with option "
                         "table=errors")
        self.problem = problem


def _where(p: Finding) -> str:
    """FILE: position N: offset M (the parts known)."""
    parts = [p.file]
    if p.position is not None:
        parts.append(f"position {p.position}")
    if p.offset is not None:
        parts.append(f"offset {p.offset}")
    return ": ".join(parts)


class ReadSink:
    """Where a range's problems (and, for ``quarantine``, the rows of damaged batches) go."""

    def __init__(self, on_error: str = "skip") -> None:
        self.on_error = on_error
        self.problems: list[Finding] = []
        self.quarantined: list = []          # (kind, pa.RecordBatch)
        self.stopped_at: dict = {}           # (segment, range start) -> where the read of the range ended early

    @property
    def wants_quarantine(self) -> bool:
        return self.on_error == "quarantine"

    def problem(self, p: Finding) -> None:
        if self.on_error == "fail" and p.severity == "error":
            raise KafkaLogDataError(p)
        self.problems.append(p)

    def quarantine(self, kind: str, batch) -> None:
        if batch is not None and batch.num_rows:
            self.quarantined.append((kind, batch))

    @property
    def errors(self) -> int:
        return sum(p.severity == "error" for p in self.problems)


# --- describing what the reader meets ------------------------------------------------------------------

def crc_problem(b, file: str) -> Finding:
    """verify's ``crc_mismatch`` for a batch whose CRC fails."""
    count = b.count if getattr(b, "count", None) is not None and b.count >= 0 else (None if b.magic >= 2 else 1)
    return Finding("crc_mismatch", f"Record is corrupt (stored crc = {b.crc}, computed crc = {b.computed_crc()})",
                   file, b.position, b.offset_field, "error", records=count, bytes=b.size)


def framing_problem(buf, stop, file: str, resumed: int | None, read_to: int) -> Finding:
    """verify's description of where Kafka's reader stops (``_report_stop``), with what the read skipped:
    ``resumed`` is where it goes on (None: nowhere before ``read_to``, the end of what this read covers)."""
    from ..engine.verify_segment import SegmentResult, _report_stop
    res = SegmentResult(file, 0)
    kind = _report_stop(res, stop, buf)
    f = res.findings[0]
    message = f.message
    if kind == "zero_tail":
        return Finding(kind, message, file, stop.position, severity="warning")
    if resumed is not None:
        skipped = resumed - stop.position
        message = (f"{stop.reason}: Kafka's reader stops here and its recovery would truncate the segment; "
                   f"{skipped} bytes skipped, reading resumed at position {resumed} (an intact batch)")
    else:
        skipped = read_to - stop.position
        message += f"; the {skipped} bytes from here on could not be read"
    return Finding(kind, message, file, stop.position, severity="error", bytes=skipped)


def decode_problem(e, b, file: str, returned: int) -> Finding:
    """verify's finding for a batch whose records do not decode (FormatError kind and reason)."""
    count = b.count if getattr(b, "count", None) is not None and b.count >= 0 else None
    lost = None if count is None else max(count - returned, 0)
    note = f" ({returned} records decoded before it were read)" if returned else ""
    return Finding(e.kind, f"{e.reason}{note}", file, b.position, _base(b), "error", records=lost)


#: What a row of the export holds per header beyond the header's bytes (Arrow: key and value offsets, list
#: and validity entries, with room for the arrays being joined), counted against --max-decompressed-bytes.
ROW_BYTES_PER_HEADER = 16


def headers_problem(rec, b, file: str, returned: int, bound: int) -> Finding:
    """A record whose headers, as one row, would take more than the decompression bound: not exported
    (it and the rest of its batch), as a record larger than the bound is not read."""
    count = b.count if getattr(b, "count", None) is not None and b.count >= 0 else None
    lost = None if count is None else max(count - returned, 0)
    return Finding("record_too_large", f"the record at offset {rec.offset} carries {len(rec.headers):,} headers; "
                   f"as one row they take more than the {bound:,} bytes --max-decompressed-bytes allows "
                   f"({ROW_BYTES_PER_HEADER} bytes a header): raise it if the record is genuine", file, b.position,
                   rec.offset, "error", records=lost)


def record_offset_problem(offset: int, base: int, last: int, position: int, file: str) -> Finding:
    """verify's deep ``record_offset``; the records from this one to the end of the batch are not read."""
    return Finding("record_offset", f"record offset {offset} is outside the batch range {base}..{last} or not "
                   "increasing", file, position, offset, "error")


def _base(b) -> int:
    try:
        return b.base_offset if b.magic >= 2 or b.codec == 0 else b.offset_field
    except Exception:               # noqa: BLE001 - a legacy wrapper whose first offset needs decompression
        return b.offset_field


# --- resuming after a framing stop ---------------------------------------------------------------------

def resume_position(buf, stop_position: int, base: int, index_path, max_candidates: int = 65536) -> int | None:
    """Where a read goes on after Kafka's reader stopped at ``stop_position``: the first offset-index entry
    after it whose batch is whole, CRC-valid and fits the entry (``ranges._batch_starts_at``, the test every
    cut between tasks passes), or, earlier, the first position from which a chain of CRC-valid batches
    lands exactly on that entry (or on the end of the file when no entry follows). None: nothing intact."""
    from .ranges import _batch_starts_at, _index_entries
    offsets, positions = _index_entries(index_path, base)
    import bisect
    target = None
    for i in range(bisect.bisect_right(positions, stop_position), len(positions)):
        if _batch_starts_at(buf, positions[i], base, offsets[i]):
            target = positions[i]
            break
    goal = len(buf) if target is None else target
    chain = _chain_start(buf, stop_position + 1, goal, max_candidates)
    return chain if chain is not None else target


def _chain_start(buf, start: int, goal: int, max_candidates: int, crc_budget: int = 1 << 30) -> int | None:
    """The first position in [start, goal) from which CRC-valid v2 batches follow each other up to ``goal``.

    Bounded as verify's search for an intact batch (``batch_search``, shared with
    ``verify_segment._intact_batch_after``): candidates window by window with the mapped pages released
    behind, at most ``max_candidates`` batches and ``crc_budget`` bytes of CRC tried, chains included (a
    1 GiB torn region claimed by one batch made the whole of it resident before)."""
    from kafkalog_formats.batch_search import CrcBudget, intact_batches, valid_batch_end
    budget = CrcBudget(max_candidates, crc_budget)
    for at, q in intact_batches(buf, start, goal, budget):
        while q < goal and (nxt := valid_batch_end(buf, q, goal, budget)) is not None:
            q = nxt
        if budget.exhausted:
            return None
        if q == goal:
            return at
    return None


# --- segment checks ------------------------------------------------------------------------------------

def segment_problems(rng, max_decompressed_bytes: int) -> list[Finding]:
    """What ``verify --shallow`` finds in the segment of ``rng`` (batch headers, indexes, transaction
    index), without the findings about data the reader reports itself and without notes (info)."""
    from ..engine.verify_segment import SegmentOptions, verify_segment
    res = verify_segment(rng.segment, rng.base_offset, active=rng.active, previous_last_offset=None,
                         options=SegmentOptions(deep=False, max_decompressed_bytes=max_decompressed_bytes))
    # severities as verify gives them (``verify_policy``): a segment Kafka's next start recovers has its
    # indexes rebuilt, so their findings are information there
    from ..engine import verify_policy
    findings = verify_policy.apply(res, verify_policy.LoadPlan(rng.base_offset if getattr(rng, "recovers", False)
                                                               else None))
    # verify stops at the first framing error; where intact batches follow (the reader goes on there), its
    # index checks past that point only say that verify could not see those batches: left out
    blind = res.damage_from is not None and not res.damage_is_tail
    seen = -1 if res.last_offset is None else res.last_offset
    out = []
    for f in findings:
        if f.kind in READER_KINDS or f.severity == "info":
            continue
        if blind and not f.file.endswith(".log") and (f.kind == "time_index_missing_final_entry"
                                                     or (f.offset is not None and f.offset > seen)):
            continue
        out.append(Finding(f.kind, f.message, f.file, f.position, f.offset, f.severity))
    return out


def errors_batch(rng, problems: list) -> pa.RecordBatch:
    """The ``_errors`` rows of ``problems`` met in ``rng``."""
    n = len(problems)
    cols = {
        "cluster_id": [rng.cluster_id] * n, "node_id": [rng.node_id] * n, "log_dir": [rng.log_dir] * n,
        "topic": [rng.topic] * n, "partition": [rng.partition] * n,
        "file": [p.file for p in problems], "position": [p.position for p in problems],
        "offset": [_clamp(p.offset) for p in problems], "kind": [p.kind for p in problems],
        "severity": [p.severity for p in problems], "message": [p.message for p in problems],
        "records": [p.records for p in problems], "bytes": [p.bytes for p in problems],
    }
    return pa.RecordBatch.from_arrays([pa.array(cols[c], t) for c, t in ERROR_COLUMNS.items()], schema=ERROR_SCHEMA)


def _clamp(offset):
    """Offsets of damaged headers can lie outside int64 after Java-like wrapping is undone; keep the column valid."""
    if offset is None or -(1 << 63) <= offset < (1 << 63):
        return offset
    return None
