"""``_kafkalog_manifest.json``: what an export holds, so that ``--mode append`` exports only what is new.

One entry per segment file exported: the byte position the export has read through (the end of the last
whole batch), the file's size then, a SHA-256 of the 4 KiB before that position, and the segment's
partition and log directory. A later ``--mode append`` run reads each segment from that position on
(an active segment that grew, a new segment), skips segments with nothing new, and reports a segment whose
bytes before that position changed (a recovery truncated it, the cleaner or a restore replaced it) as a
warning, without reading it again: its records up to then are in the export already, and reading it again
would duplicate them. Runs of the same input are therefore idempotent: a second run adds nothing.

Publishing new files is crash-safe: the run first writes ``_kafkalog_manifest.pending.json`` (the staged
files and the manifest to install), then moves the files into place, then installs the manifest; a run
that finds a pending manifest completes it first (files still staged are moved, the manifest installed).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

from .. import fileops
from ..errors import CannotRun

MANIFEST = "_kafkalog_manifest.json"
PENDING = "_kafkalog_manifest.pending.json"
VERSION = 1
HASH_WINDOW = 4096


class ManifestError(CannotRun):
    """An output whose manifest cannot be appended to (missing, unreadable, other format or layout)."""


def load(output: Path) -> dict | None:
    path = output / MANIFEST
    if not path.exists():
        return None
    try:
        m = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: cannot be read ({e}); kafkalog cannot tell what this export holds") from None
    if not isinstance(m, dict) or m.get("version") != VERSION or not isinstance(m.get("segments"), dict):
        raise ManifestError(f"{path}: not a kafkalog export manifest (version {VERSION})")
    return m


def tail_hash(path: str, through: int) -> str | None:
    try:
        with open(path, "rb") as f:
            start = max(0, through - HASH_WINDOW)
            f.seek(start)
            data = f.read(through - start)
    except OSError:
        return None
    if len(data) != through - max(0, through - HASH_WINDOW):
        return None
    return hashlib.sha256(data).hexdigest()


def check_compatible(m: dict, fmt: str, partition_by: tuple, columns: tuple) -> None:
    for key, value in (("format", fmt), ("partition_by", list(partition_by)), ("columns", list(columns))):
        if m.get(key) != value:
            raise ManifestError(f"the export was written with {key} {m.get(key)!r}, this run asks for {value!r}; "
                                "an append must use the same layout")


def in_files(m: dict) -> tuple:
    """The directory columns an export also holds inside its files (an append keeps its layout). Exports
    made before the manifest recorded it held topic and partition inside the files with Spark's Kafka
    columns (``timestampType``)."""
    if "in_files" in m:
        return tuple(m["in_files"])
    if "timestampType" in m.get("columns", ()):
        return tuple(c for c in m.get("partition_by", ()) if c in ("topic", "partition"))
    return ()


def plan_append(ranges: list, m: dict) -> tuple[list, list, int]:
    """(ranges still to read, warnings for changed segments, segments with nothing new)."""
    from ..engine.findings import Finding
    states = m["segments"]
    out, warnings = [], []
    unchanged = 0
    by_segment: dict = {}
    for r in ranges:
        by_segment.setdefault(r.segment, []).append(r)
    for segment, rs in by_segment.items():
        st = states.get(segment)
        if st is None:
            out.extend(rs)
            continue
        through = st["through"]
        size = rs[-1].file_size
        if size < through or tail_hash(segment, through) != st["hash"]:
            warnings.append(Finding("segment_changed",
                                    f"the first {through} bytes of this segment changed since it was exported "
                                    f"({'it is now ' + str(size) + ' bytes' if size < through else 'their content differs'}: "
                                    "a recovery, the log cleaner or a restore rewrote it); not exported again "
                                    "(its records up to then are in the export)", segment, severity="warning"))
            continue
        if size <= through:
            unchanged += 1
            continue
        first = True
        for r in rs:
            if r.end <= through:
                continue
            out.append(replace(r, start=max(r.start, through), first=False) if first else replace(r, first=False))
            first = False
    return out, warnings, unchanged


def updated(m: dict | None, spec, ranges: list, summaries: list[dict], run: str, rows: int, files: list) -> dict:
    """The manifest after this run: every segment read, read through where its last range ended."""
    new = {"version": VERSION, "format": spec.fmt, "partition_by": list(spec.partition_by),
           "columns": list(spec.columns), "in_files": list(spec.in_files), "segments": {}, "runs": []}
    if m is not None:
        new["segments"].update(m["segments"])
        new["runs"] = list(m.get("runs", []))
    stopped = {}
    for s in summaries:
        for segment, start, _end, stop in s["ranges"]:
            if stop is not None:
                stopped[(segment, start)] = stop
    for r in ranges:
        through = stopped.get((r.segment, r.start), r.end)
        prev = new["segments"].get(r.segment)
        if prev is not None and prev["through"] > through and r.start < prev["through"]:
            continue
        new["segments"][r.segment] = {"through": through, "size": r.file_size, "hash": tail_hash(r.segment, through),
                                      "topic": r.topic, "partition": r.partition, "base_offset": r.base_offset,
                                      "log_dir": r.log_dir, "cluster_id": r.cluster_id, "node_id": r.node_id}
    new["runs"].append({"run": run, "rows": rows, "files": len(files)})
    return new


def write(output: Path, m: dict) -> None:
    fileops.write_atomic(output / MANIFEST, (json.dumps(m, indent=1, sort_keys=True) + "\n").encode())


# --- appending: pending manifest, then files, then manifest ----------------------------------------------

def publish_append(output: Path, staging: Path, files: list[str], m: dict) -> None:
    pending = {"staging": str(staging), "files": files, "manifest": m}
    fileops.write_atomic(output / PENDING, json.dumps(pending).encode())
    _complete(output, pending)


def complete_pending(output: Path) -> bool:
    """Finish an append a crash interrupted (True when there was one)."""
    path = output / PENDING
    if not path.exists():
        return False
    try:
        pending = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: an interrupted append left this file and it cannot be read ({e})") from None
    _complete(output, pending)
    return True


def _complete(output: Path, pending: dict) -> None:
    staging = Path(pending["staging"])
    for rel in pending["files"]:
        src, dst = staging / rel, output / rel
        if src.exists():
            fileops.make_dirs(dst.parent)
            fileops.rename(src, dst)
    write(output, pending["manifest"])
    fileops.unlink(output / PENDING)
    remove_tree(staging)


def remove_tree(path: Path, quietly: bool = False) -> None:
    """Remove a staging directory (ours: written by this or an interrupted run); ``quietly`` after a
    failure or Ctrl-C, when cancelled tasks may still be writing into it (what they leave is only ever a
    hidden directory, never part of the export)."""
    if not path.exists():
        return
    try:
        for root, dirs, names in os.walk(path, topdown=False):
            for n in names:
                fileops.unlink(os.path.join(root, n))
            for d in dirs:
                fileops.rmdir(os.path.join(root, d))
        fileops.rmdir(path)
    except OSError:
        if not quietly:
            raise
