"""Text and JSON for ``retain``: every segment with its size, largest timestamp, age and the rule."""
from __future__ import annotations

import json

from ..layout import segment_file_name


def _name(target) -> str:
    s = target.state
    return f"{s.topic}-{s.partition}" if s is not None else target.directory.name


def partition_object(target, plan, outcome, dry_run: bool) -> dict:
    return {"type": "partition", "partition": _name(target), "dry_run": dry_run,
            "high_watermark": plan.high_watermark, "log_end_offset": plan.log_end,
            "log_start_offset": {"old": plan.old_log_start, "new": plan.new_log_start},
            "blocked": plan.blocked, "notes": plan.notes, "roll_at": plan.roll_at,
            "snapshot_at_roll": plan.snapshot_at_roll,
            "problems": [p.as_dict() for p in plan.problems], "finished_interrupted": target.finished,
            "segments": [{"segment": segment_file_name(d.base_offset, "log"), "base_offset": d.base_offset,
                          "size": d.size, "largest_timestamp": d.largest_timestamp,
                          "timestamp_source": d.timestamp_source, "age_ms": d.age_ms, "delete": d.delete,
                          "rule": d.rule} for d in plan.decisions],
            "files_renamed": outcome.renamed if outcome else [], "files_removed": outcome.removed if outcome else [],
            "files_created": outcome.created if outcome else [],
            "checkpoints": [{"file": f, "old": o, "new": n} for f, o, n in (outcome.checkpoints if outcome else [])],
            "backups": target.backups + (outcome.backups if outcome else [])}


def write_text(out, target, plan, outcome, dry_run: bool) -> None:
    w = out.write
    hw = "unknown" if plan.high_watermark is None else plan.high_watermark
    w(f"{_name(target)}: log start {plan.old_log_start} -> {plan.new_log_start}, high watermark {hw}, "
      f"log end {plan.log_end}{' (dry run: nothing changed)' if dry_run else ''}\n")
    for f in target.finished:
        w(f"  {'would first' if dry_run else 'first'} finish an interrupted operation: {f}\n")
    for p in plan.problems:
        w(f"  problem: {p.describe()}\n")
    if plan.blocked:
        w(f"  nothing deleted: {plan.blocked}\n")
    for note in plan.notes:
        w(f"  note: {note}\n")
    if plan.roll_at is not None and not plan.blocked:
        snap = " and a producer snapshot there" if plan.snapshot_at_roll else ""
        w(f"  every segment goes: {'would roll' if dry_run else 'rolled'} an empty active segment at "
          f"{plan.roll_at}{snap} first, as Kafka does\n")
    for d in plan.decisions:
        verb = "delete" if d.delete else "keep  "
        w(f"  {verb} {segment_file_name(d.base_offset, 'log')} {d.size:>12} B  largest timestamp "
          f"{d.largest_timestamp} ({d.timestamp_source})  age {d.age_ms} ms  {d.rule}\n")
    if outcome is not None:
        for f, o, n in outcome.checkpoints:
            w(f"  updated {f}: {_value(o)} -> {_value(n)}\n")
    backups = target.backups + (outcome.backups if outcome else [])
    if backups:
        w(f"  backed up {len(backups)} file(s): {', '.join(backups)}\n")


def _value(v) -> str:
    """A checkpoint value for people: an offset, "no entry", or leader epochs as "epoch E from offset O"."""
    if v is None:
        return "(no entry)"
    if isinstance(v, list):
        return ", ".join(f"epoch {e} from offset {o}" for e, o in v) or "(no entries)"
    return str(v)


def write_json(out, obj: dict) -> None:
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
