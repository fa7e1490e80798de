"""A partition directory: segments keyed by base offset (Kafka ``LocalLog``), snapshots and side files.

Scanning never fails on an odd file: unknown names, orphan indexes and leftovers of interrupted
operations (``.deleted``, ``.cleaned``, ``.swap``) become Findings, as Kafka's loader would act on them;
so do names Kafka's loader parses as offsets but does not read as they say (``layout.name_problem``).
Entries that are not regular files (FIFOs, sockets, devices, dangling symlinks) are skipped with a
warning, as ``LogLoader`` skips them (``File.isFile``, every version).
"""
from __future__ import annotations

from pathlib import Path

from sortedcontainers import SortedDict

from ..layout import PartitionName, classify_file, name_problem, parse_partition_dir
from .findings import Finding
from .mapped import is_regular
from .segment import Segment


class PartitionLog:
    def __init__(self, directory: Path, name: PartitionName | None) -> None:
        self.directory = Path(directory)
        self.name = name
        self.segments: SortedDict = SortedDict()        # base offset -> Segment
        self.producer_snapshots: list[int] = []          # offsets of <offset>.snapshot
        self.kraft_snapshots: list[tuple[int, int]] = []  # (end offset, epoch)
        self.side_files: list[Path] = []                  # leader-epoch-checkpoint, partition.metadata, ...
        self.findings: list[Finding] = []

    @classmethod
    def open(cls, directory: str | Path) -> "PartitionLog":
        directory = Path(directory)
        log = cls(directory, parse_partition_dir(directory.name))
        index_bases: dict[int, list[str]] = {}
        entries = sorted(directory.iterdir(), key=lambda p: p.name)
        names = {e.name for e in entries}
        for entry in entries:
            if entry.is_dir():
                log.findings.append(Finding("unknown_directory", f"unexpected directory {entry.name}",
                                            str(entry), severity="warning"))
                continue
            if not is_regular(entry):
                log.findings.append(Finding("not_regular_file", f"{entry.name} is not a regular file (Kafka's "
                                            "log loader ignores it)", str(entry), severity="warning"))
                continue
            fn = classify_file(entry.name)
            if fn.state in ("deleted", "cleaned", "swap"):
                log.findings.append(Finding(f"leftover_{fn.state}", _LEFTOVER[fn.state], str(entry)))
            elif fn.kind == "log":
                log.segments[fn.offset] = Segment(directory, fn.offset)
            elif fn.kind in ("index", "timeindex", "txnindex"):
                index_bases.setdefault(fn.offset, []).append(entry.name)
            elif fn.kind == "snapshot":
                log.producer_snapshots.append(fn.offset)
            elif fn.kind == "kraft_snapshot":
                if fn.state is None:
                    log.kraft_snapshots.append((fn.offset, fn.epoch))
                else:
                    log.findings.append(Finding(f"leftover_{fn.state}", "KRaft snapshot left over from an "
                                                "interrupted write or deletion", str(entry), severity="warning"))
            elif fn.kind in ("partition_file", "tmp"):
                log.side_files.append(entry)
            elif entry.name.endswith(".deleted") and not entry.name.endswith(".checkpoint.deleted"):
                # LogLoader.removeTempFilesAndCollectSwapFiles deletes any *.deleted file, named as it may be
                log.findings.append(Finding("leftover_deleted", _LEFTOVER["deleted"], str(entry)))
            elif (problem := name_problem(entry.name, names)) is not None:
                # a name Kafka's loader parses but does not read as it says (LogFileUtils.offsetFromFileName)
                log.findings.append(problem._replace(file=str(entry)))
            else:
                log.findings.append(Finding("unknown_file", f"unknown file {entry.name}", str(entry),
                                            severity="warning"))
        for base, names in sorted(index_bases.items()):
            if base not in log.segments:
                for n in names:
                    log.findings.append(Finding("orphan_index", "index file without its .log segment "
                                                "(Kafka's loader deletes it)", str(directory / n)))
        return log

    def floor_segment(self, offset: int) -> Segment | None:
        """The segment whose base offset is the greatest ≤ ``offset`` (Kafka ``floorEntry``)."""
        i = self.segments.bisect_right(offset)
        return None if i == 0 else self.segments.peekitem(i - 1)[1]

    @property
    def active_segment(self) -> Segment | None:
        return self.segments.peekitem(-1)[1] if self.segments else None

    def files_in_offset_order(self) -> list[Path]:
        """Every dumpable file: per segment .log, .index, .timeindex, .txnindex; then snapshots."""
        out: list[Path] = []
        for seg in self.segments.values():
            for suffix in ("log", "index", "timeindex", "txnindex"):
                p = seg.path(suffix)
                if p.exists():          # dump-log reports a companion that is not a regular file
                    out.append(p)
        for off in sorted(self.producer_snapshots):
            out.append(self.directory / f"{off:020d}.snapshot")
        for end, epoch in sorted(self.kraft_snapshots):
            out.append(self.directory / f"{end:020d}-{epoch:010d}.checkpoint")
        return out


_LEFTOVER = {
    "deleted": "file scheduled for deletion (Kafka's loader deletes it)",
    "cleaned": "cleaner output not yet swapped in (Kafka's loader deletes it)",
    "swap": "replacement segment of an interrupted swap (Kafka's loader completes the swap)",
}
