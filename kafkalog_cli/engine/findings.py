"""A problem (or notable fact) found while reading, located by file, byte position and offset."""
from __future__ import annotations

from typing import NamedTuple


#: Severity of the directory-scan findings of ``LogDir``/``PartitionLog`` (verify's module docstring says
#: why): what a broker's loader does with each; dump-log counts only those above info as problems.
SCAN_SEVERITY = {"unknown_directory": "error", "unknown_file": "info", "leftover_deleted": "info",
                 "leftover_cleaned": "warning", "leftover_swap": "warning", "leftover_part": "warning",
                 "orphan_index": "warning"}


class Finding(NamedTuple):
    """kafkalog's one problem type: what is wrong (or notable), in Kafka's terms, and where (file, byte
    position, offset). The read side (verify, dump-log, lookups), the repair preflight (``repair/preflight``,
    skipped partitions of retain/compact), file names Kafka's loader misreads (``layout.name_problem``) and
    Spark reads (``spark/problems``: the ``_errors`` table) all report these; each renderer chooses what to
    print of it (verify's JSON and JUnit, the repair reports' problem objects, dump-log's kcat lines)."""
    kind: str                    # stable machine name, e.g. "crc_mismatch", "orphan_index"
    message: str
    file: str | None = None
    position: int | None = None
    offset: int | None = None
    severity: str = "error"      # "error" | "warning" | "info"
    records: int | None = None   # Spark reads: records not returned, as the batch header counts them
    bytes: int | None = None     # Spark reads: bytes of the segment not read as records

    def where(self) -> str:
        parts = [self.file or "?"]
        if self.position is not None:
            parts.append(f"position {self.position}")
        if self.offset is not None:
            parts.append(f"offset {self.offset}")
        return ", ".join(parts)
