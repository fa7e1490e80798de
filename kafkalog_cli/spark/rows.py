"""One range of a segment -> Arrow record batches with the ``kafkalog`` schema. pyarrow, no Spark.

Records are those ``dump-log --deep-iteration`` prints for the same bytes, with what the read cannot return
as good data reported to a ``problems.ReadSink`` instead of being dropped without a word: a batch whose
CRC fails gives no rows (``quarantine`` keeps what decodes of it apart), a batch that cannot be decoded
gives the records before the error, a corrupt control key ends its batch, and where Kafka's reader stops
(a broken size, a torn tail) the read resumes at the next intact offset-index entry (``problems``).

Per batch the reader decides what a consumer would, in this order on the batch header: the last stable
offset (``read_committed``: stop), ``fromOffset`` (skip batches ending below it), ``toOffset`` (stop at a
v2 batch starting above it); then the CRC; then ``fromTimestamp`` (skip batches whose max timestamp is
below it), control batches (dropped unless ``includeControl``) and, under ``read_committed``,
transactional batches of aborted transactions (a batch of producer P whose last offset lies in
[firstOffset, ABORT marker) of one of P's aborted transactions: the condition Kafka's consumer evaluates
with the fetch response's aborted-transaction list, docs/kafka-on-disk.md §4.1). Records outside the offset
and time window are masked.

Two implementations with the same rows and problems (tests/test_native_commands.py): the compiled record
path (``rows_native``: columns built from the scan's buffers, no Python object per record) and its pure
reference (``rows_pure``), which also reads every batch the compiled scan hands over (control batches,
legacy entries, bad CRCs, decoding errors). Only the requested columns are built (schema pruning).
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from kafkalog_formats.limits import bound

from . import problems as P
from .options import ReadOptions
from .ranges import SegmentRange
from .rows_pure import read_pure
from .schema import COLUMNS, DECODED_COLUMNS, ROWS_PER_BATCH, schema_for


def read_range(rng: SegmentRange, opts: ReadOptions, columns: list[str] | None = None,
               rows_per_batch: int = ROWS_PER_BATCH, sink: P.ReadSink | None = None) -> Iterator[pa.RecordBatch]:
    """Record batches (at most ``rows_per_batch`` rows) of the records in batches starting in the range.
    Problems go to ``sink`` (default: one with ``opts.on_error``, which raises on the first with ``fail``).
    Records are decoded under the bound of the read options (``kafkalog_formats.limits.bound``: on an
    executor, the driver's ``--max-decompressed-bytes``), on both record paths."""
    if rng.bounds is not None:                # this partition's own offsets (startingOffsets ... JSON)
        opts = opts.narrowed(from_offset=rng.bounds[0], to_offset=rng.bounds[1])
    with bound(opts.max_decompressed_bytes):
        if opts.salvage:
            yield from _read_salvaged(rng, opts, columns, rows_per_batch, sink)
        else:
            yield from _read_range(rng, opts, columns, rows_per_batch, sink)


def _read_salvaged(rng, opts, columns, rows_per_batch, sink) -> Iterator[pa.RecordBatch]:
    """The ``salvage`` option: the batches of the range that ``recover --salvage`` keeps (``engine/salvage``),
    each read as any range is; each stretch it would drop a problem (``salvage_skipped``: the bytes, what they
    held, the offsets lost), each batch it would repair one too (``salvage_repairable``: its rows are not
    returned, its stored header being wrong; read them after ``recover --salvage``)."""
    from dataclasses import replace

    from ..engine.findings import Finding
    from ..engine.mapped import MappedFile
    from ..engine.salvage import Damage, Keep, walk_segment
    sink = P.ReadSink(opts.on_error) if sink is None else sink
    with MappedFile(rng.segment) as mf:
        layout = walk_segment(mf.buf, rng.base_offset, None, None, release=mf.release_behind, start=rng.start,
                              stop=rng.end)
    plain = replace(opts, salvage=False)
    for piece in layout.pieces:
        if piece.start >= rng.end:
            break
        if isinstance(piece, Keep):
            yield from _read_range(replace(rng, start=piece.start, end=min(piece.end, rng.end), limit=piece.end),
                                   plain, columns, rows_per_batch, sink)
        elif isinstance(piece, Damage):
            held = "; ".join(f"{e.kind} at byte {e.position}: {e.reason}" for e in piece.entries[:3])
            lost = f"; offsets {piece.lost[0]}..{piece.lost[1]} lost" if piece.lost else ""
            sink.problem(Finding("salvage_skipped", f"bytes {piece.start}..{piece.end - 1} ({piece.size} bytes) "
                                 f"skipped ({held}){lost}", rng.segment, piece.start,
                                 None if piece.after is None else piece.after + 1))
        else:
            fields = ", ".join(f"{n.replace('_', ' ')} {o} -> {v}" for n, o, v in piece.fields)
            sink.problem(Finding("salvage_repairable", f"the batch at byte {piece.start} holds offsets "
                                 f"{piece.first}..{piece.last} once repaired ({fields}: {piece.reason}); its rows are "
                                 "not returned as stored: read them after kafkalog recover --salvage", rng.segment,
                                 piece.start, piece.first, records=piece.records))


def _read_range(rng, opts, columns, rows_per_batch, sink) -> Iterator[pa.RecordBatch]:
    columns = list(COLUMNS) if columns is None else list(columns)
    sink = P.ReadSink(opts.on_error) if sink is None else sink
    decoded = [c for c in columns if c in DECODED_COLUMNS]
    build = columns
    if decoded:                               # the decoders read these; dropped again when not asked for
        build = list(dict.fromkeys([c for c in columns if c not in DECODED_COLUMNS]
                                   + ["offset", "timestamp", "key", "value", "headers", "is_control", "batch_position"]))
    schema = schema_for(build)
    from kafkalog_formats import native
    if native.ext is not None:                # the compiled record path: columns built from buffers
        from . import rows_native
        batches = rows_native.read_range(rng, opts, build, schema, rows_per_batch, sink)
    else:
        batches = read_pure(rng, opts, build, schema, rows_per_batch, sink)
    if not decoded:
        yield from batches
        return
    from .decode import Decoders
    dec = Decoders(opts, rng)
    for b in batches:
        yield dec.add(b, columns, sink)
