"""``dump-log -``: one Kafka file read from standard input.

Standard input has no name, and kafka-dump-log.sh (``DumpLogSegments``) knows a file only by its name: the
suffix picks the dumper, the number before it is the segment's base offset. Here the kind comes from
``--type`` or, when it is not given, from the content when it proves itself (a batch or a producer
snapshot whose checksum is valid); indexes are arrays of numbers that nothing identifies, so they need
``--type``. The base offset comes from ``--base-offset`` (required for indexes, whose entries are stored
relative to it).

The bytes are copied in chunks to a private temporary file (memory stays bounded whatever the size) and
dumped from there under the name ``-``; positions are byte positions in standard input. An index read this
way cannot be checked against its segment, which is not there: its entries are printed unverified.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from . import dump as ev
from .mapped import MappedFile

NAME = "-"
CHUNK = 1 << 20
#: --type -> the suffix a file of that kind carries
TYPES = {"log": ".log", "index": ".index", "timeindex": ".timeindex", "snapshot": ".snapshot",
         "txnindex": ".txnindex", "checkpoint": ".checkpoint"}
NEEDS_BASE = ("index", "timeindex")


class StdinInput:
    """Standard input copied to ``directory/<base>.<suffix>`` (call ``close`` to remove it)."""

    def __init__(self, stream, kind: str | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="kafkalog-stdin-")
        self.raw = Path(self._dir.name) / "stdin"
        with open(self.raw, "wb") as out:
            shutil.copyfileobj(stream, out, CHUNK)
        self.size = self.raw.stat().st_size
        self.kind = kind
        self.path: Path | None = None

    def identify(self) -> tuple[str | None, str]:
        """(kind, why) from the content: a log segment or KRaft snapshot whose first batch has a valid
        checksum, or a producer snapshot whose CRC-32C matches; (None, why not) otherwise."""
        from kafkalog_formats.errors import FormatError
        from kafkalog_formats.message_set import BatchReader
        from kafkalog_formats.producer_snapshot import parse_producer_snapshot
        with MappedFile(self.raw) as mf:
            buf = mf.buf
            if not buf:
                return None, "standard input is empty"
            try:
                batch = next(iter(BatchReader(buf)), None)
                if batch is not None and batch.is_valid():
                    if batch.magic >= 2 and batch.is_control and _snapshot_header(batch):
                        return "checkpoint", "its first batch (valid CRC) starts with a KRaft SnapshotHeader"
                    return "log", f"its first batch has magic {batch.magic} and a valid CRC"
            except (FormatError, ValueError):
                pass
            try:
                snap = parse_producer_snapshot(bytes(buf[:16 << 20]))
                n = len(snap.entries)
                return "snapshot", f"its CRC-32C is valid ({n} producer{'' if n == 1 else 's'})"
            except (FormatError, ValueError):
                pass
        return None, "it is neither a log segment, a KRaft snapshot nor a producer snapshot with a valid checksum"

    def place(self, kind: str, base_offset: int | None) -> Path:
        """Name the copy as Kafka would name such a file, so the name rules apply to it."""
        self.kind = kind
        if kind == "checkpoint":
            name = f"{base_offset or 0:020d}-{0:010d}.checkpoint"
        else:
            name = f"{base_offset or 0:020d}{TYPES[kind]}"
        self.path = self.raw.rename(self.raw.with_name(name))
        return self.path

    def close(self) -> None:
        self._dir.cleanup()


def _snapshot_header(batch) -> bool:
    from kafkalog_formats import control as ctl
    try:
        first = next(iter(batch.records()), None)
        return first is not None and ctl.parse_control_key(first.key).type == ctl.SNAPSHOT_HEADER
    except Exception:                        # noqa: BLE001 - any doubt: not identified as a snapshot
        return False


def renamed(events, real: str, base_known: bool) -> Iterator:
    """The dumper's events with the private copy's name replaced by ``-``; Kafka's header lines that
    come from the file name are left out unless ``--base-offset`` gave the number."""
    for e in events:
        if getattr(e, "file", None) == real:
            e = e._replace(file=NAME)
            t = type(e)
            if t is ev.FileStart and not base_known:
                e = e._replace(header=None)
            elif t is ev.Finding:
                e = e._replace(message=e.message.replace(real, NAME))
            elif t is ev.Notice:
                e = e._replace(text=e.text.replace(real, NAME))
        yield e


def rename_report(report: "ev.DumpReport", real: str) -> None:
    """End-of-run reports keyed by the copy's absolute path are keyed by ``-``."""
    absolute = str(Path(real).resolve())
    for table in (report.index_mismatches, report.timestamp_mismatches, report.out_of_order, report.not_found,
                  report.non_consecutive):
        if absolute in table:
            table[NAME] = table.pop(absolute)


def index_events(path: Path, kind: str, base_offset: int, sanity_only: bool) -> Iterator:
    """An offset or time index without its segment: Kafka's entry lines (or its sanity check), unverified."""
    from kafkalog_formats import offset_index as oi
    from kafkalog_formats import time_index as ti
    yield ev.FileStart(NAME, kind, None)
    with MappedFile(path) as mf:
        arr = (oi.offset_index_array if kind == "index" else ti.time_index_array)(mf.buf)
        if sanity_only:
            if kind == "index":
                msg = oi.offset_index_sanity(len(mf.buf), base_offset, int(arr["rel"][-1]) if len(arr) else None,
                                             NAME)
            else:
                msg = ti.time_index_sanity(len(mf.buf), base_offset, int(arr["ts"][0]) if len(arr) else 0,
                                           int(arr["ts"][-1]) if len(arr) else 0,
                                           int(arr["rel"][-1]) if len(arr) else 0, NAME) \
                    if len(arr) or len(mf.buf) % 12 else None
            yield ev.Finding("index_sanity", msg, NAME) if msg else ev.Notice(NAME, f"{NAME} passed sanity check.")
            return
        if not len(arr):
            yield ev.Notice(NAME, f"{NAME} is empty.")
            return
        count = oi.real_entry_count(arr)
        if kind == "index":
            for slot, (rel, pos) in enumerate(zip(arr["rel"][:count].tolist(), arr["pos"][:count].tolist())):
                yield ev.IndexEntry(NAME, slot, base_offset + rel, pos)
        else:
            for slot, (ts, rel) in enumerate(zip(arr["ts"][:count].tolist(), arr["rel"][:count].tolist())):
                yield ev.TimeIndexEntry(NAME, slot, ts, base_offset + rel)
