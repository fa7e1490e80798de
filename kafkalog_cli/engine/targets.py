"""Turn command-line paths (files, partition directories, log directories) into files in offset order."""
from __future__ import annotations

from pathlib import Path

from .findings import Finding
from .logdir import LogDir, is_partition_dir
from .partition import PartitionLog


def expand_paths(paths: list[str]) -> tuple[list[str], list[Finding]]:
    """Files are kept as given; a partition directory yields its segments' files in offset order; a log
    directory yields every partition's (sorted by topic, partition) and its ``bootstrap.checkpoint``."""
    files: list[str] = []
    findings: list[Finding] = []
    for p in paths:
        path = Path(p)
        if not path.is_dir():
            files.append(p)
        elif is_partition_dir(path):
            log = PartitionLog.open(path)
            files.extend(_display(p, path, f) for f in log.files_in_offset_order())
            findings.extend(log.findings)
        else:
            d = LogDir.open(path)
            findings.extend(d.findings)
            boot = path / "bootstrap.checkpoint"
            for log in d.partitions():
                files.extend(_display(p, path, f) for f in log.files_in_offset_order())
                findings.extend(log.findings)
            if boot.is_file():
                files.append(_display(p, path, boot))
    return files, findings


def _display(given: str, root: Path, f: Path) -> str:
    """Show files under the directory as the user spelled it."""
    return str(Path(given) / f.relative_to(root))
