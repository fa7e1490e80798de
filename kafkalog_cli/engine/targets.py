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
    root = root or path
    if not path.is_dir():
        files.append(given if path == root else _display(given, root, path))
        return
    kind = dir_kind(path)
    if kind == "partition":
        log = PartitionLog.open(path)
        files.extend(_display(given, root, f) for f in log.files_in_offset_order())
        findings.extend(log.findings)
    elif kind == "logdir":
        d = LogDir.open(path)
        findings.extend(d.findings)
        for log in d.partitions():
            files.extend(_display(given, root, f) for f in log.files_in_offset_order())
            findings.extend(log.findings)
        boot = path / "bootstrap.checkpoint"
        if boot.is_file():
            files.append(_display(given, root, boot))
    else:   # a folder of log directories (a backup, several brokers' disks): look below
        for child in sorted(c for c in path.iterdir() if c.is_dir()):
            _expand(given, child, files, findings, root)


def _display(given: str, root: Path, f: Path) -> str:
    """Show files under the directory as the user spelled it."""
    return str(Path(given) / f.relative_to(root))
