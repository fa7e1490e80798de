"""A problem (or notable fact) found while reading, located by file, byte position and offset."""
from __future__ import annotations

from typing import NamedTuple


#: Severity of the directory-scan findings of ``LogDir``/``PartitionLog`` (verify's module docstring says
#: why): what a broker's loader does with each; dump-log counts only those above info as problems.
SCAN_SEVERITY = {"unknown_directory": "error", "unknown_file": "info", "leftover_deleted": "info",
                 "leftover_cleaned": "warning", "leftover_swap": "warning", "leftover_part": "warning",
                 "orphan_index": "warning"}


class Finding(NamedTuple):
    kind: str                    # stable machine name, e.g. "crc_mismatch", "orphan_index"
    message: str
    file: str | None = None
    position: int | None = None
    offset: int | None = None
    severity: str = "error"      # "error" | "warning" | "info"

    def where(self) -> str:
        parts = [self.file or "?"]
        if self.position is not None:
            parts.append(f"position {self.position}")
        if self.offset is not None:
            parts.append(f"offset {self.offset}")
        return ", ".join(parts)
