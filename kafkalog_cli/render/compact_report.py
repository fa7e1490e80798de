"""Text and JSON lines for ``compact``: per partition the configuration values used (and where each came
from), the dirty range and ratio, then a line per group.

Text: a few lines about the run (the time taken as "now", the configuration sources read), then a block
per partition. JSON lines: a ``partition`` object per partition, then a ``summary``.
"""
from __future__ import annotations

import json

from .. import units
from ..layout import segment_file_name
from .retain_report import write_run_text  # noqa: F401  (the same run header)


def report_object(rep) -> dict:
    c = rep.choice
    cs = rep.settings
    return {"type": "partition", "partition": rep.partition, "dry_run": rep.dry_run, "skipped": rep.skipped,
            "topic_status": rep.topic_status, "untouched": rep.untouched, "problem": rep.problem,
            "config": [u.as_dict() for u in cs.shown] if cs is not None else [],
            "first_dirty_offset": c.first_dirty if c else None,
            "first_uncleanable_offset": c.first_uncleanable if c else None,
            "clean_bytes": c.clean_bytes if c else None, "cleanable_bytes": c.cleanable_bytes if c else None,
            "dirty_ratio": round(c.ratio, 6) if c else None, "checkpoint_reset": c.reset_checkpoint if c else None,
            "end_offset": rep.end_offset, "offset_map_entries": rep.map_entries, "offset_map_full": rep.map_full,
            "groups": [{"segments": [segment_file_name(b, "log") for b in bases], **vars(stats)}
                       for bases, stats in rep.groups],
            "cleaner_checkpoint": None if rep.checkpoint is None else
            {"old": rep.checkpoint[0], "new": rep.checkpoint[1]},
            "problems": [p.as_dict() for p in rep.problems], "notes": list(rep.notes),
            "finished_interrupted": rep.finished,
            "backups": rep.backups}


def write_text(out, rep) -> None:
    w = out.write
    if rep.untouched is not None:
        w(f"{rep.partition}: left untouched: {rep.untouched}\n")
        return
    c = rep.choice
    head = f"{rep.partition}:"
    if c is not None:
        rng = (f"dirty {c.first_dirty}..{c.first_uncleanable - 1}" if c.first_uncleanable > c.first_dirty
               else f"no dirty offsets (cleaned up to {c.first_dirty})")
        head += f" {rng}, ratio {c.ratio:.3f} ({c.cleanable_bytes} of {c.clean_bytes + c.cleanable_bytes} bytes)"
    if rep.dry_run:
        head += " (dry run: nothing changed)"
    w(head + "\n")
    for f in rep.finished:
        w(f"  {'would first' if rep.dry_run else 'first'} finish an interrupted operation: {f}\n")
    if rep.settings is not None and rep.dry_run:          # JSON always has them
        for u in rep.settings.shown:
            w(f"  config: {u.describe()}\n")
    for n in rep.notes:
        w(f"  note: {n}\n")
    if c is not None and c.reset_checkpoint:
        w(f"  note: {c.reset_checkpoint}\n")
    for p in rep.problems:
        w(f"  problem: {p.describe()}\n")
    if rep.skipped:
        w(f"  skipped: {rep.skipped}\n")
        _backups(w, rep)
        return
    full = " (offset map full: the rest is cleaned by the next pass)" if rep.map_full else ""
    w(f"  offset map: {rep.map_entries} keys, cleaned up to offset {rep.end_offset - 1}{full}\n")
    for bases, st in rep.groups:
        names = ", ".join(segment_file_name(b, "log") for b in bases)
        w(f"  group [{names}]: {st.records_in} -> {st.records_out} records, {st.batches_in} -> {st.batches_out} "
          f"batches ({st.batches_copied} copied unchanged), {st.bytes_in} -> {st.bytes_out} bytes"
          f"{f', {st.tombstones_stamped} delete horizons set' if st.tombstones_stamped else ''}\n")
    if rep.checkpoint is not None:
        verb = "would set" if rep.dry_run else "set"
        old = "absent" if rep.checkpoint[0] is None else rep.checkpoint[0]
        w(f"  cleaner-offset-checkpoint: {verb} {old} -> {rep.checkpoint[1]}\n")
    _backups(w, rep)


def _backups(w, rep) -> None:
    if rep.backups:
        w(f"  backed up {len(rep.backups)} file(s): {', '.join(rep.backups)}\n")


def write_json(out, rep) -> None:
    out.write(json.dumps(report_object(rep), separators=(",", ":")) + "\n")


def write_summary(out, reports, now: int, now_given: bool, resolver, dry_run: bool, status: int) -> None:
    obj = {"type": "summary", "dry_run": dry_run, "now": now, "now_iso": units.iso(now),
           "now_from": "--now" if now_given else "current time",
           "configuration_sources": list(resolver.sources), "notes": list(resolver.notes),
           "partitions": len(reports), "untouched": sum(r.untouched is not None for r in reports),
           "cleaned": sum(bool(r.groups) for r in reports), "problems": sum(r.problem for r in reports),
           "exit_status": status}
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
