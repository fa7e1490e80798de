"""Turn command-line paths (files, partition directories, log directories) into files in offset order."""
from __future__ import annotations

from pathlib import Path

from .findings import Finding
from .logdir import LogDir, dir_kind
from .partition import PartitionLog


def expand_paths(paths: list[str]) -> tuple[list[str], list[Finding]]:
    """Files are kept as given; a partition directory yields its segments' files in offset order; a log
    directory yields every partition's (sorted by topic, partition) and its ``bootstrap.checkpoint``."""
    files: list[str] = []
    findings: list[Finding] = []
    for p in paths:
        _expand(p, Path(p), files, findings)
    return files, findings


def _expand(given: str, path: Path, files: list[str], findings: list[Finding], root: Path | None = None) -> None:
    """A directory that cannot be listed becomes a Finding (``io_error``) and the others are still expanded,
    as an unreadable file is a problem of its own and not the end of the run."""
    root = root or path
    if not path.is_dir():
        files.append(given if path == root else _display(given, root, path))
        return
    try:
        kind = dir_kind(path)
        if kind == "partition":
            _partition(given, root, path, files, findings)
        elif kind == "logdir":
            d = LogDir.open(path)
            findings.extend(d.findings)
            for p in d.partition_dirs:
                _partition(given, root, p, files, findings)
            boot = path / "bootstrap.checkpoint"
            if boot.is_file():
                files.append(_display(given, root, boot))
        else:   # a folder of log directories (a backup, several brokers' disks): look below
            for child in sorted(c for c in path.iterdir() if c.is_dir()):
                _expand(given, child, files, findings, root)
    except OSError as e:
        findings.append(_unreadable(given, root, path, e))


def _partition(given: str, root: Path, path: Path, files: list[str], findings: list[Finding]) -> None:
    try:
        log = PartitionLog.open(path)
    except OSError as e:
        findings.append(_unreadable(given, root, path, e))
        return
    files.extend(_display(given, root, f) for f in log.files_in_offset_order())
    findings.extend(log.findings)


def _unreadable(given: str, root: Path, path: Path, e: OSError) -> Finding:
    return Finding("io_error", f"cannot read: {e.strerror or e}: nothing in it was read", _display(given, root, path))


def _display(given: str, root: Path, f: Path) -> str:
    """Show files under the directory as the user spelled it."""
    return str(Path(given) / f.relative_to(root))
