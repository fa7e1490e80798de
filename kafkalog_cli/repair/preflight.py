"""What ``compact`` and ``retain`` check before their first change: every input they will read.

A write command that finds a problem here skips the partition (reported, exit status 1) and changes
nothing of it, in a real run exactly as in ``--dry-run``. Checked, each with file, position and offset:

* framing of every segment the command reads (``FileLogInputStream`` rules): a non-active segment that
  ends in trailing bytes would lose them when rewritten, a torn tail is recover's job;
* every batch of the cleanable range (everything ``compact`` may rewrite): its CRC (CRC-32C for v2, CRC-32
  of each outer and inner message for magic 0/1), then its records decoded — record count, varints,
  lengths, headers, codec, decompression bounded by ``--max-decompressed-bytes`` — and a control batch's
  key and end-transaction marker. **Stricter than the broker**: Kafka's ``Cleaner.cleanInto`` /
  ``MemoryRecords.filterTo`` (2.x–4.0) never checks CRCs, so it would copy a damaged record into a new batch
  with a fresh, valid CRC and the damage would be served as data ever after;
* after an unclean shutdown (no ``.kafka_cleanshutdown``), every segment the broker's next start recovers
  first (``LogLoader.recoverLog`` → ``LogSegment.recover``): its batches must pass that recovery unchanged
  (``recovery_problem``), or the broker would cut data the command's plan counts on;
* the side files: ``.txnindex`` (whole entries, known version, ``TransactionIndex.sanityCheck``), the offset
  index entry ``buildOffsetMapForSegment`` starts from (it must point at a batch), and the checkpoints the
  command reads or rewrites (done by the callers with ``checkpoint_problem``).
"""
from __future__ import annotations

from pathlib import Path

from kafkalog_formats import control as ctl
from kafkalog_formats.errors import FormatError
from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES

from ..engine.findings import Finding
from ..engine.mapped import parsed_once, read_regular

NEVER_REWRITE = ("kafkalog never rewrites a record it cannot validate (Kafka's cleaner would copy it under a "
                 "fresh CRC): restore the segment from a healthy replica")


def framing_problem(path: Path, stop, active: bool) -> Finding | None:
    """A ``BatchReader.stop`` after a full walk of a segment, as a problem (None: the file ended cleanly)."""
    if stop is None:
        return None
    what = ("the active segment ends in a partial or corrupt batch (an unclean shutdown?): run kafkalog "
            "recover first" if active else
            "the segment ends in bytes that are not a whole batch; rewriting it would drop them: run "
            "kafkalog recover first")
    return Finding(stop.kind, f"{stop.reason}; {what}", str(path), stop.position)


def misread_problems(state) -> list[Finding]:
    """A partition holding a file whose name Kafka's loader misreads (``layout.name_problem``): the broker
    would not start or would see other segments than these; nothing of it is changed until ``kafkalog
    recover --backup-dir`` has moved the file aside."""
    return [Finding(f.kind, f"{f.message}: run kafkalog recover --backup-dir DIR first (it moves the file aside)",
                    f.file) for f in state.misread]


def segment_size_problems(state) -> list[Finding]:
    """Segments larger than Kafka opens (``FileRecords``: over 2147483647 bytes the broker does not start):
    the partition is left as it is, and such a segment is not read (a sparse one could be terabytes)."""
    from kafkalog_formats.limits import MAX_SEGMENT_BYTES
    from ..layout import segment_file_name
    return [Finding("segment_too_large", f"segment of {s.size} bytes exceeds Kafka's limit of {MAX_SEGMENT_BYTES} "
                    "(FileRecords refuses to open it, and the broker does not start): nothing of this partition "
                    "is changed", str(state.directory / segment_file_name(s.base_offset, "log")))
            for s in state.segments if s.size > MAX_SEGMENT_BYTES]


def topic_name_problem(state) -> Finding | None:
    """A partition whose topic name no checkpoint line can hold (``checkpoint_topic_problem``): retain and
    compact record what they did in the log directory's checkpoints, so they refuse it before their first
    change (beyond Kafka: its topic names are ASCII, ``Topic.validate``, and no broker creates such a
    directory)."""
    from kafkalog_formats.checkpoint import checkpoint_topic_problem
    why = checkpoint_topic_problem(state.topic)
    if why is None:
        return None
    from ..names import shown
    return Finding("topic_name", f"the topic name {shown(state.topic)} cannot be written to the log directory's "
                   f"checkpoints ({why}); nothing of this partition is changed: rename the directory to the "
                   "topic's real name", str(state.directory))


def recovery_problem(path: Path, buf, base_offset: int) -> Finding | None:
    """What ``LogSegment.recover`` (Kafka 2.x–4.x) would change in a segment the broker recovers at its next
    start: a cut at the first invalid batch, an emptied segment (offsets going backwards), a split (offset
    overflow). None: recovery keeps every byte (it only rebuilds the indexes)."""
    from .segment_recovery import recover_segment
    res = recover_segment(buf, base_offset, path=str(path))
    if res.overflow is not None:
        return Finding("offset_overflow", f"{res.overflow}; run kafkalog recover first", str(path))
    t = res.truncation
    if t is None:
        return None
    return Finding("unclean_shutdown", f"the broker did not shut down cleanly (no .kafka_cleanshutdown), and its "
                   f"recovery of this segment cuts it at byte {t.position} ({t.reason}): run kafkalog recover "
                   "first", str(path), t.position, t.offset)


def batch_problem(path: Path, b) -> Finding | None:
    """Validate one batch completely (CRC, then every record); None when it is sound."""
    offset = b.offset_field if b.magic < 2 else b.base_offset
    if not b.is_valid():
        return Finding("crc", f"the batch fails its CRC (stored {b.crc}, computed {b.computed_crc()}); "
                       + NEVER_REWRITE, str(path), b.position, offset)
    try:
        n = 0
        first = None
        for r in b.records():
            if r.valid is False:        # an inner message of a legacy wrapper
                return Finding("crc", f"message at offset {r.offset} inside the compressed wrapper fails its CRC; "
                               + NEVER_REWRITE, str(path), b.position, r.offset)
            if n == 0:
                first = r
            n += 1
        if b.magic >= 2 and b.is_control and first is not None:
            key = ctl.parse_control_key(first.key)
            if key.type in (ctl.ABORT, ctl.COMMIT):
                ctl.parse_end_txn_marker(first.value)
    except FormatError as e:
        return Finding(e.kind or "record", f"the batch's records cannot be decoded ({e.reason}); " + NEVER_REWRITE,
                       str(path), b.position, offset)
    return None


def txn_index_problem(path: Path, base_offset: int, log_size: int) -> tuple[list, Finding | None]:
    """The aborted transactions of a ``.txnindex`` and, when it is unusable, why. One larger than its segment
    (of ``log_size`` bytes) could need is unusable by its size, never read."""
    from kafkalog_formats.txn_index import ENTRY_SIZE, parse_txn_index, txn_index_sanity

    from .segment_recovery import oversized_index_message, rebuilt_index_bound
    size = path.stat().st_size
    if size > rebuilt_index_bound(log_size, "txnindex"):
        return [], Finding("txn_index", oversized_index_message(size, log_size, "txnindex") + "; run kafkalog "
                           "recover first (it rebuilds the index)", str(path))
    data = read_regular(path, MAX_BINARY_SIDE_FILE_BYTES)
    try:
        entries = parse_txn_index(data, str(path))
    except FormatError as e:
        return [], Finding("txn_index", e.reason + "; run kafkalog recover first (it rebuilds the index)", str(path),
                           e.position)
    if len(data) % ENTRY_SIZE:
        whole = len(data) - len(data) % ENTRY_SIZE
        return entries, Finding("txn_index", f"{len(data) - whole} bytes after the last whole entry; run "
                                "kafkalog recover first (it rebuilds the index)", str(path), whole)
    why = txn_index_sanity(entries, base_offset, str(path))
    if why:
        return entries, Finding("txn_index", why + "; run kafkalog recover first (it rebuilds the index)", str(path))
    return entries, None


def checkpoint_problem(path: Path, parser, remedy: str = "fix or remove it (kafkalog recover reports it)") \
        -> Finding | None:
    """Can ``parser`` read the checkpoint at ``path``? (A missing file is fine: Kafka starts it empty.)
    Kafka's ``CheckpointFileWithFailureHandler.read`` turns a malformed one into a KafkaStorageException and
    takes the log directory offline."""
    if not path.exists():
        return None
    try:
        parsed_once(path, parser)                  # asked once per partition of the log directory
    except FormatError as e:
        return Finding("checkpoint", f"{e.reason}; a broker takes the log directory offline when it cannot read "
                       f"this file: {remedy}", str(path), e.position)
    except OSError as e:
        return Finding("io_error", f"cannot read: {e.strerror or e}", str(path))
    return None
