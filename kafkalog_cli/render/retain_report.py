"""Text and JSON lines for ``retain``: per partition the configuration values used (and where each came
from), then every segment with its size, largest timestamp, age and the rule that deletes or keeps it.

Text: a few lines about the run (the time taken as "now", the configuration sources read), then a block
per partition. JSON lines: a ``partition`` object per partition, then a ``summary``. Timestamps are shown
as ISO-8601 next to their epoch milliseconds; JSON keeps every number numeric and adds readable fields
beside (``largest_timestamp_iso``, ``age``).
"""
from __future__ import annotations

import json

from .. import units
from ..layout import segment_file_name


def write_run_text(out, now: int, now_given: bool, resolver, skipped: str | None = None) -> None:
    out.write(f"now: {units.timestamp(now)}, {'from --now' if now_given else 'the current time'}\n")
    for s in resolver.sources:
        out.write(f"configuration: {s}\n")
    for n in resolver.notes:
        out.write(f"note: {n}\n")
    if skipped:
        out.write(f"{skipped}\n")


def _log_start_words(plan) -> str:
    if plan.tiered:
        moved = (f"{plan.old_log_start} -> {plan.new_log_start} (delete-records)"
                 if plan.new_log_start != plan.old_log_start else f"{plan.old_log_start} (unchanged: tiered topic)")
        return f"log start offset {moved}, local log start offset {plan.local_log_start}"
    if plan.new_log_start == plan.old_log_start:
        return f"log start offset {plan.old_log_start} (unchanged)"
    return f"log start offset {plan.old_log_start} -> {plan.new_log_start}"


def write_text(out, rep) -> None:
    w = out.write
    dry = " (dry run: nothing changed)" if rep.dry_run else ""
    if rep.untouched is not None:
        w(f"{rep.partition}: left untouched: {rep.untouched}\n")
        return
    plan = rep.plan
    hw = "unknown" if plan.high_watermark is None else plan.high_watermark
    w(f"{rep.partition}: {_log_start_words(plan)}, high watermark {hw}, log end offset {plan.log_end}{dry}\n")
    for f in rep.finished:
        w(f"  {'would first' if rep.dry_run else 'first'} finish an interrupted operation: {f}\n")
    s = rep.settings
    if s is not None:
        for u in s.shown if rep.dry_run else ():         # JSON always has them
            w(f"  config: {u.describe()}\n")
        if s.tiered:
            w(f"  remote storage: {_remote(s.remote_offset)} ({s.remote_source})\n")
        for note in s.notes:
            w(f"  note: {note}\n")
    for p in plan.problems:
        w(f"  problem: {p.describe()}\n")
    if plan.blocked:
        w(f"  nothing deleted: {plan.blocked}\n")
    for note in plan.notes_info:
        w(f"  note: {note}\n")
    for note in plan.notes:
        w(f"  problem: {note}\n")
    for base, rule in plan.held:
        w(f"  problem: {segment_file_name(base, 'log')} would go ({rule}) but is not known to be uploaded to remote "
          "storage: kept (Kafka deletes a tiered segment only once it is uploaded)\n")
    if plan.roll_at is not None and not plan.blocked:
        snap = " and a producer snapshot there" if plan.snapshot_at_roll else ""
        w(f"  every segment goes: {'would roll' if rep.dry_run else 'rolled'} an empty active segment at "
          f"{plan.roll_at}{snap} first, as Kafka does\n")
    for d in plan.decisions:
        verb = "delete" if d.delete else "keep  "
        w(f"  {verb} {segment_file_name(d.base_offset, 'log')} {d.size:>12} B  largest timestamp "
          f"{units.iso(d.largest_timestamp)} ({d.largest_timestamp}, {d.timestamp_source})  "
          f"age {units.duration(d.age_ms)}  {d.rule}\n")
        if d.note:
            w(f"    note: {d.note}\n")
    if rep.outcome is not None:
        for f, o, n in rep.outcome.checkpoints:
            w(f"  updated {f}: {_value(o)} -> {_value(n)}\n")
    if rep.backups:
        w(f"  backed up {len(rep.backups)} file(s): {', '.join(rep.backups)}\n")


def _remote(offset) -> str:
    if offset is None:
        return "the highest offset uploaded is unknown: no local segment may be deleted by retention"
    if offset < 0:
        return "nothing is known to be uploaded"
    return f"offsets up to {offset} are known to be uploaded"


def _value(v) -> str:
    """A checkpoint value for people: an offset, "absent", or leader epochs as "epoch E from offset O"."""
    if v is None:
        return "absent"
    if isinstance(v, list):
        return ", ".join(f"epoch {e} from offset {o}" for e, o in v) or "no entries"
    return str(v)


def partition_object(rep) -> dict:
    obj = {"type": "partition", "partition": rep.partition, "dry_run": rep.dry_run, "topic_status": rep.topic_status,
           "untouched": rep.untouched, "problem": rep.problem}
    s = rep.settings
    obj["config"] = [u.as_dict() for u in s.shown] if s is not None else []
    obj["notes"] = list(s.notes) if s is not None else []
    obj["tiered"] = ({"remote_log_end_offset": s.remote_offset, "source": s.remote_source}
                     if s is not None and s.tiered else None)
    plan = rep.plan
    if plan is None:
        return obj
    out = rep.outcome
    obj.update({
        "high_watermark": plan.high_watermark, "log_end_offset": plan.log_end,
        "log_start_offset": {"old": plan.old_log_start, "new": plan.new_log_start},
        "local_log_start_offset": plan.local_log_start if plan.tiered else None,
        "blocked": plan.blocked, "problems": [p.as_dict() for p in plan.problems] + [
            {"kind": "log_start_offset", "message": n} for n in plan.notes] + [
            {"kind": "not_uploaded", "message": f"would go ({rule}) but not known to be uploaded",
             "file": segment_file_name(b, "log"), "base_offset": b} for b, rule in plan.held],
        "roll_at": plan.roll_at, "snapshot_at_roll": plan.snapshot_at_roll,
        "finished_interrupted": rep.finished,
        "segments": [{"segment": segment_file_name(d.base_offset, "log"), "base_offset": d.base_offset,
                      "size": d.size, "largest_timestamp": d.largest_timestamp,
                      "largest_timestamp_iso": units.iso(d.largest_timestamp),
                      "timestamp_source": d.timestamp_source, "timestamp_note": d.note, "age_ms": d.age_ms, "age": units.duration(d.age_ms),
                      "delete": d.delete, "rule": d.rule} for d in plan.decisions],
        "files_renamed": out.renamed if out else [], "files_removed": out.removed if out else [],
        "files_created": out.created if out else [],
        "checkpoints": [{"file": f, "old": o, "new": n} for f, o, n in (out.checkpoints if out else [])],
        "backups": rep.backups})
    return obj


def summary_object(reports, now: int, now_given: bool, resolver, dry_run: bool, status: int,
                   skipped: str | None = None) -> dict:
    return {"type": "summary", "dry_run": dry_run, "now": now, "now_iso": units.iso(now),
            "now_from": "--now" if now_given else "current time",
            "configuration_sources": list(resolver.sources), "notes": list(resolver.notes),
            "builtin_defaults_not_applied": skipped,
            "partitions": len(reports), "untouched": sum(r.untouched is not None for r in reports),
            "segments_deleted": sum(len(r.plan.deleted) for r in reports if r.plan is not None and not r.plan.blocked),
            "problems": sum(r.problem for r in reports), "exit_status": status}


def write_json(out, obj: dict) -> None:
    out.write(json.dumps(obj, separators=(",", ":")) + "\n")
