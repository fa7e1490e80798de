"""A segment: ``<base>.log`` plus its ``.index``, ``.timeindex`` and optional ``.txnindex`` (Kafka ``LogSegment``)."""
from __future__ import annotations

from pathlib import Path

from kafkalog_formats.message_set import BatchReader

from ..layout import segment_file_name
from .mapped import MappedFile


class Segment:
    """Paths of one segment; opening maps the ``.log`` read-only on demand."""

    def __init__(self, directory: Path, base_offset: int) -> None:
        self.directory = Path(directory)
        self.base_offset = base_offset

    def path(self, suffix: str) -> Path:
        return self.directory / segment_file_name(self.base_offset, suffix)

    log_path = property(lambda self: self.path("log"))
    index_path = property(lambda self: self.path("index"))
    timeindex_path = property(lambda self: self.path("timeindex"))
    txnindex_path = property(lambda self: self.path("txnindex"))

    def size(self) -> int:
        return self.log_path.stat().st_size

    def map_log(self) -> MappedFile:
        return MappedFile(self.log_path)

    def batches(self, mapped: MappedFile, start: int = 0, end: int | None = None) -> BatchReader:
        return BatchReader(mapped.buf, start, end)

    def __repr__(self) -> str:
        return f"Segment({str(self.directory)!r}, {self.base_offset})"
