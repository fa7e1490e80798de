"""Text and JSON for ``retain``: every segment with its size, largest timestamp, age and the rule."""
from __future__ import annotations

import json

from ..layout import segment_file_name


def partition_object(state, plan, outcome, dry_run: bool) -> dict:
    return {"type": "partition", "partition": f"{state.topic}-{state.partition}", "dry_run": dry_run,
            "high_watermark": plan.high_watermark, "log_end_offset": plan.log_end,
            "log_start_offset": {"old": plan.old_log_start, "new": plan.new_log_start},
            "blocked": plan.blocked, "notes": plan.notes, "roll_at": plan.roll_at,
            "segments": [{"segment": segment_file_name(d.base_offset, "log"), "base_offset": d.base_offset,
                          "size": d.size, "largest_timestamp": d.largest_timestamp,
                          "timestamp_source": d.timestamp_source, "age_ms": d.age_ms, "delete": d.delete,
                          "rule": d.rule} for d in plan.decisions],
            "files_renamed": outcome.renamed if outcome else [], "files_removed": outcome.removed if outcome else [],
            "files_created": outcome.created if outcome else [],
            "checkpoints": [{"file": f, "old": o, "new": n} for f, o, n in (outcome.checkpoints if outcome else [])]}


def write_text(out, state, plan, outcome, dry_run: bool) -> None:
    w = out.write
    name = f"{state.topic}-{state.partition}"
    hw = "unknown" if plan.high_watermark is None else plan.high_watermark
    w(f"{name}: log start {plan.old_log_start} -> {plan.new_log_start}, high watermark {hw}, "
      f"log end {plan.log_end}{' (dry run: nothing changed)' if dry_run else ''}\n")
    if plan.blocked:
        w(f"  nothing deleted: {plan.blocked}\n")
    for note in plan.notes:
        w(f"  note: {note}\n")
    if plan.roll_at is not None:
        w(f"  every segment goes: {'would roll' if dry_run else 'rolled'} an empty active segment at "
          f"{plan.roll_at} first, as Kafka does\n")
    for d in plan.decisions:
        verb = "delete" if d.delete else "keep  "
        w(f"  {verb} {segment_file_name(d.base_offset, 'log')} {d.size:>12} B  largest timestamp "
          f"{d.largest_timestamp} ({d.timestamp_source})  age {d.age_ms} ms  {d.rule}\n")
    if outcome is not None:
        for f, o, n in outcome.checkpoints:
            w(f"  updated {f}: {o} -> {n}\n")


def write_json(out, obj: dict) -> None:
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
