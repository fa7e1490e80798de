"""Text and JSON lines for ``retain`` and ``delete-records``.

Text (``render.repair_text``'s shape): the verdict, the run's context once (the time taken as now, the
configuration sources), a block per partition where something is deleted, moved or wrong (its segments with
size, largest timestamp and the rule that deletes or keeps them; consecutive segments under one rule share
it, long runs shortened), the other partitions counted by why nothing happens there, the totals.
``--details`` adds every partition, the values each used and where each came from, and every segment's
rule, timestamp source and age. JSON lines: a ``partition`` object per partition, then a ``summary`` (every
value, always). Timestamps are shown as ISO-8601; JSON keeps every number numeric and adds readable fields
beside (``largest_timestamp_iso``, ``age``).
"""
from __future__ import annotations

import json
from collections import Counter

from .. import units
from ..names import json_safe, json_text
from ..layout import segment_file_name
from .repair_text import (INDENT, Line, Run, blank, context_lines, others_line, para, plural, problem_object,
                          problem_text, relative, some_of, verdict_line)

RULE = " " * 9                         # where a segment's rule is written, under its file name
RUN_SHOWN = 5                          # segments of one rule listed before a run is shortened (--details: all)


def _log_start_words(plan) -> str:
    if plan.tiered:
        moved = (f"{plan.old_log_start} -> {plan.new_log_start} (delete-records)"
                 if plan.new_log_start != plan.old_log_start else f"{plan.old_log_start} (unchanged: tiered topic)")
        return f"log start offset {moved}, local log start offset {plan.local_log_start}"
    if plan.new_log_start == plan.old_log_start:
        return f"log start offset {plan.old_log_start} (unchanged)"
    return f"log start offset {plan.old_log_start} -> {plan.new_log_start}"


def _changes(rep) -> bool:
    plan = rep.plan
    return bool(plan is not None and not plan.blocked and (plan.deleted or plan.roll_at is not None
                                                           or plan.new_log_start != plan.old_log_start
                                                           or (rep.outcome is not None and rep.outcome.checkpoints)))


def _why_nothing(rep, command: str) -> str | None:
    """Why nothing happens to a partition without a problem, read after a count ("4 compacted, ..."); None:
    the partition gets a block."""
    if rep.problem:
        return None
    if rep.untouched is not None:
        return f"left untouched ({rep.untouched.split(':')[0]})"
    if _changes(rep):
        return None
    if command == "delete-records":
        return "already at or above the offset asked for"
    s = rep.settings
    if s is not None and not s.delete:
        return "compacted, nothing below the log start offset"
    if s is None or all(u is None or u.value < 0 for u in (s.retention_ms, s.retention_bytes)):
        return "with no time or size limit"
    return "within their limits"


def _segment_line(d, verb: str) -> str:
    return f"{INDENT}{verb:<6} {segment_file_name(d.base_offset, 'log')}  {units.size(d.size):>10}  " \
           f"{units.iso(d.largest_timestamp)}"


def _decisions(rep, run: Run) -> list[Line]:
    """Every segment's fate; consecutive segments under the same rule share it (--details: one each)."""
    out: list[Line] = []
    decisions = rep.plan.decisions
    runs: list[list] = []
    for d in decisions:
        if runs and not run.details and (runs[-1][0].delete, runs[-1][0].rule) == (d.delete, d.rule):
            runs[-1].append(d)
        else:
            runs.append([d])
    for group in runs:
        verb = "delete" if group[0].delete else "keep"
        style = "yellow" if group[0].delete else None
        shown = group if run.details or len(group) <= RUN_SHOWN else group[:2] + [None] + group[-1:]
        for d in shown:
            if d is None:
                hidden = group[2:-1]
                out.append(Line(f"{INDENT}{'':<6} ... {plural(len(hidden), 'more segment')} "
                                f"({units.size(sum(x.size for x in hidden))})", "dim"))
                continue
            out.append(Line(_segment_line(d, verb), style))
        out += para(group[0].rule, first=RULE, rest=RULE, width=run.width)
        if run.details:
            d = group[0]
            out += para(f"largest timestamp {d.largest_timestamp} ({d.timestamp_source}), age "
                        f"{units.duration(d.age_ms)}" + (f"; {d.note}" if d.note else ""), "dim", first=RULE,
                        rest=RULE, width=run.width)
    return out


def _block(rep, run: Run) -> list[Line]:
    """A partition's lines: what goes, what moves, and what is wrong."""
    w = run.width
    dry = rep.dry_run
    if rep.untouched is not None:
        style = "bold red" if rep.problem else "bold"
        return para(f"{rep.partition}: left untouched: {rep.untouched}", style, rest=INDENT * 2, width=w)
    plan = rep.plan
    if plan.blocked or not plan.decisions:
        head = f"{rep.partition}: nothing deleted"
    else:
        gone = plan.deleted
        head = (f"{rep.partition}: {len(gone)} of {plural(len(plan.decisions), 'segment')} "
                f"{'would go' if dry else 'deleted'} ({units.size(sum(d.size for d in gone))}); "
                if gone else f"{rep.partition}: no segment goes; ")
        head += _log_start_words(plan)
    out = para(head, "bold red" if rep.problem else "bold", rest=INDENT * 2, width=w)
    if run.details:
        hw = "unknown" if plan.high_watermark is None else plan.high_watermark
        out += para(f"high watermark {hw}, log end offset {plan.log_end}", first=INDENT, width=w)
    for f in rep.finished:
        out += para(f"{'would first' if dry else 'first'} finish an interrupted operation: {f}", "yellow",
                    first=INDENT, width=w)
    s = rep.settings
    if s is not None:
        if run.details:
            for u in s.shown:
                out += para(f"config: {u.describe()}", "dim", first=INDENT, width=w)
        if s.tiered:
            out += para(f"remote storage: {_remote(s.remote_offset)} ({s.remote_source})", first=INDENT, width=w)
        for note in s.notes:      # what every partition of the run shares (delete-records, compact topics): --details
            if run.details or (s.delete or s.tiered) and not note.startswith("delete-records:"):
                out += para(f"note: {note}", "dim", first=INDENT, width=w)
    for p in plan.problems:
        out += para(f"problem: {problem_text(p, rep.directory.name)}", "red", first=INDENT, width=w)
    if plan.blocked:
        out += para(f"nothing deleted: {plan.blocked}", "red", first=INDENT, width=w)
    for note in plan.notes_info:
        out += para(f"note: {note}", "dim", first=INDENT, width=w)
    for note in plan.notes:
        out += para(f"problem: {note}", "red", first=INDENT, width=w)
    for base, rule in plan.held:
        out += para(f"problem: {segment_file_name(base, 'log')} would go ({rule}) but is not known to be uploaded "
                    "to remote storage: kept (Kafka deletes a tiered segment only once it is uploaded)", "red",
                    first=INDENT, width=w)
    if plan.roll_at is not None and not plan.blocked:
        snap = " and a producer snapshot there" if plan.snapshot_at_roll else ""
        out += para(f"{'would roll' if dry else 'rolled'} an empty active segment at {plan.roll_at}{snap} first, "
                    "as Kafka does", first=INDENT, width=w)
    out += _decisions(rep, run)
    if rep.outcome is not None:
        logdir = str(rep.directory.parent)
        for f, o, n in rep.outcome.checkpoints:
            name = relative(f, str(rep.directory), logdir)
            out += para(f"updated {name}: {_value(o)} -> {_value(n)}", first=INDENT, width=w)
    if rep.backups:
        names = f": {', '.join(rep.backups)}" if run.details else ""
        out += para(f"backed up {plural(len(rep.backups), 'file')}{names}", "dim", first=INDENT, width=w)
    return out


def text_lines(reports: list, run: Run, not_found: list[str] = ()) -> list[Line]:
    """The whole report of a retain or delete-records run (``not_found``: partitions asked for that no LOG_DIR
    holds, delete-records)."""
    n = len(reports)
    live = [r for r in reports if r.plan is not None and not r.plan.blocked]
    gone = [d for r in live for d in r.plan.deleted]
    size = units.size(sum(d.size for d in gone))
    touched = sum(1 for r in live if r.plan.deleted)
    moved = sum(1 for r in live if r.plan.new_log_start != r.plan.old_log_start)
    would = run.dry_run
    if run.command == "delete-records":
        what = (f"{'would move' if would else 'moved'} the log start offset of {some_of(moved, n)}"
                + (f", {'deleting' if would else 'deleted'} "
                                               f"{plural(len(gone), 'segment')} ({size})" if gone else "")
                if moved else f"no log start offset to move in {plural(n, 'partition')}")
    elif gone:
        what = f"{'would delete' if would else 'deleted'} {plural(len(gone), 'segment')} ({size}) in " \
               f"{some_of(touched, n)}"
    elif moved:
        what = f"{'would move' if would else 'moved'} the log start offset of {some_of(moved, n)}"
    else:
        what = f"nothing to delete in {plural(n, 'partition')}"
    bad = sum(1 for r in reports if r.problem) + len(not_found)
    problems = f"{plural(bad, 'partition')} with problems (below)" if bad else None
    out = verdict_line(run, what, problems)
    out += context_lines(run)
    counts: dict = {}
    shown = 0
    for rep in reports:
        why = None if run.details else _why_nothing(rep, run.command)
        if why is not None:
            counts[why] = counts.get(why, 0) + 1
            continue
        blank(out)
        out += _block(rep, run)
        shown += 1
    for p in not_found:
        blank(out)
        out += para(f"problem: {p}", "bold red", rest=INDENT * 2, width=run.width)
    if counts:
        blank(out)
        out += others_line(Counter(counts), run, shown)
    blank(out)
    segments = sum(len(r.plan.decisions) for r in reports if r.plan is not None)
    totals = (f"{plural(n, 'partition')}, {plural(segments, 'segment')} read; "
              f"{'would delete' if would else 'deleted'} {plural(len(gone), 'segment')} ({size}) in "
              f"{run.seconds:.2f} s")
    out += para(totals, "dim", rest=INDENT, width=run.width)
    return out


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
        "blocked": plan.blocked, "problems": [problem_object(p) for p in plan.problems] + [
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
    out.write(json_text(json.dumps(json_safe(obj), ensure_ascii=False, separators=(",", ":"))) + "\n")
