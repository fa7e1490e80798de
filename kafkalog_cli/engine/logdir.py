"""A log directory (one entry of ``log.dirs``): partition directories, checkpoints and markers."""
from __future__ import annotations

from pathlib import Path

from ..layout import LOG_DIR_FILES, SPECIAL_DIRS, parse_partition_dir
from .findings import Finding
from .mapped import is_regular, parsed_once, read_regular
from .partition import PartitionLog


class LogDir:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.partition_dirs: list[Path] = []
        self.special_dirs: list[Path] = []    # directories Kafka's loader skips (layout.SPECIAL_DIRS)
        self.files: list[Path] = []           # checkpoints, meta.properties, markers
        self.findings: list[Finding] = []

    @classmethod
    def open(cls, path: str | Path) -> "LogDir":
        d = cls(Path(path))
        for entry in sorted(d.path.iterdir(), key=lambda p: p.name):
            if entry.is_dir():
                if entry.name in SPECIAL_DIRS:
                    d.special_dirs.append(entry)
                    continue
                if parse_partition_dir(entry.name) is None:
                    d.findings.append(Finding("unknown_directory", f"'{entry.name}' is not in the form of "
                                              "topic-partition or topic-partition.uniqueId-delete",
                                              str(entry), severity="warning"))
                else:
                    d.partition_dirs.append(entry)
            elif not is_regular(entry):
                d.findings.append(Finding("not_regular_file", f"{entry.name} is not a regular file (Kafka "
                                          "cannot read it)", str(entry), severity="warning"))
            elif entry.name in LOG_DIR_FILES or entry.name.endswith(".tmp"):
                d.files.append(entry)
            else:
                d.findings.append(Finding("unknown_file", f"unknown file {entry.name}", str(entry),
                                          severity="warning"))
        d.partition_dirs.sort(key=_partition_sort_key)
        return d

    def partitions(self):
        for p in self.partition_dirs:
            yield PartitionLog.open(p)

    def offset_checkpoint(self, name: str) -> tuple[dict, Finding | None]:
        """One of the four offset checkpoints as {(topic, partition): offset}.

        A missing file is an empty map (as for Kafka); an unreadable one is an empty map plus a Finding
        (Kafka logs a warning and carries on with an empty map).
        """
        from types import MappingProxyType

        from kafkalog_formats.checkpoint import parse_offset_checkpoint
        from kafkalog_formats.errors import FormatError
        path = self.path / name
        if not path.exists():
            return {}, None
        try:        # read once per run while unchanged (asked for once per partition); read-only
            return MappingProxyType(parsed_once(path, parse_offset_checkpoint)), None
        except FormatError as e:
            return {}, Finding(e.kind, e.reason, str(path), e.position)
        except OSError as e:
            return {}, Finding("io_error", f"cannot read: {e.strerror or e}", str(path))

    def meta_properties(self):
        """The parsed ``meta.properties`` (None when absent); FormatError when it is malformed."""
        from kafkalog_formats.errors import FormatError
        from kafkalog_formats.meta_properties import parse_meta_properties
        path = self.path / "meta.properties"
        if not path.exists():
            return None
        try:
            return parse_meta_properties(read_regular(path))
        except FormatError as e:
            raise e.at(str(path)) from None

    @property
    def has_clean_shutdown_marker(self) -> bool:
        return (self.path / ".kafka_cleanshutdown").exists()


def _partition_sort_key(p: Path):
    n = parse_partition_dir(p.name)
    return (n.topic, n.partition, n.state or "") if n else (p.name, 0, "")


def is_partition_dir(path: Path) -> bool:
    """A directory that holds segment, snapshot or partition files (as opposed to a log directory)."""
    from ..layout import classify_file
    try:
        if any((path / f).exists() for f in LOG_DIR_FILES if f != "bootstrap.checkpoint"):
            return False
        for child in path.iterdir():
            if child.is_file() and classify_file(child.name).kind not in ("unknown", "tmp"):
                return True
        return parse_partition_dir(path.name) is not None and not any(c.is_dir() for c in path.iterdir())
    except OSError:          # cannot be listed (permissions): a partition directory if named like one
        return parse_partition_dir(path.name) is not None


def dir_kind(path: Path) -> str:
    """"logdir", "partition" or "container" (a folder that holds log directories further down). Raises
    OSError when ``path`` cannot be listed and is not named like a partition directory."""
    try:
        if any((path / f).exists() for f in LOG_DIR_FILES):
            return "logdir"
    except OSError:
        if parse_partition_dir(path.name) is not None:
            return "partition"       # that cannot be read: its reader reports why
        raise
    if is_partition_dir(path):
        return "partition"
    for c in path.iterdir():
        if c.is_dir() and parse_partition_dir(c.name) is not None and is_partition_dir(c):
            return "logdir"
    return "container"

