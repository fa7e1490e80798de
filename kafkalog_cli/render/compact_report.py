"""Text and JSON lines for ``compact``.

Text (``render.repair_text``'s shape): the verdict, the run's context once, a block per partition that is
cleaned or has a problem (dirty range and ratio, the offset map, each group of segments with what it
keeps, the checkpoint), the other partitions counted by why nothing is cleaned there, the totals.
``--details`` adds every partition with the values it used and where each came from. JSON lines: a
``partition`` object per partition (every value, always), then a ``summary``.
"""
from __future__ import annotations

import json
from collections import Counter

from .. import units
from ..names import json_safe, json_text
from ..layout import segment_file_name
from .repair_text import (INDENT, Line, Run, blank, context_lines, others_line, para, plural, problem_object,
                          problem_text, some_of, verdict_line)


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
            "problems": [problem_object(p) for p in rep.problems], "notes": list(rep.notes),
            "finished_interrupted": rep.finished,
            "backups": rep.backups}


def _why_nothing(rep) -> str | None:
    """Why a partition without a problem is not cleaned, read after a count; None: it gets a block."""
    if rep.problem:
        return None
    if rep.untouched is not None:
        if rep.untouched.startswith("cleanup.policy="):
            return "not compacted (cleanup.policy without compact)"
        return f"left untouched ({rep.untouched.split(':')[0]})"
    if rep.groups or rep.checkpoint is not None:
        return None
    c = rep.choice
    if c is not None and c.first_uncleanable <= c.first_dirty:
        return "with nothing cleanable (the dirty range is empty)"
    if c is not None:
        return "below min.cleanable.dirty.ratio"
    return "not cleaned"


def _head(rep) -> str:
    c = rep.choice
    head = f"{rep.partition}:"
    if c is not None:
        rng = (f"dirty {c.first_dirty}..{c.first_uncleanable - 1}" if c.first_uncleanable > c.first_dirty
               else f"no dirty offsets (cleaned up to {c.first_dirty})")
        head += f" {rng}, ratio {c.ratio:.3f} ({c.cleanable_bytes} of {c.clean_bytes + c.cleanable_bytes} bytes)"
    return head


def _block(rep, run: Run) -> list[Line]:
    w = run.width
    if rep.untouched is not None:
        return para(f"{rep.partition}: left untouched: {rep.untouched}", "bold red" if rep.problem else "bold",
                    rest=INDENT * 2, width=w)
    out = para(_head(rep), "bold red" if rep.problem else "bold", rest=INDENT * 2, width=w)
    for f in rep.finished:
        out += para(f"{'would first' if rep.dry_run else 'first'} finish an interrupted operation: {f}", "yellow",
                    first=INDENT, width=w)
    if rep.settings is not None and run.details:
        for u in rep.settings.shown:
            out += para(f"config: {u.describe()}", "dim", first=INDENT, width=w)
    for n in rep.notes:
        out += para(f"note: {n}", "dim", first=INDENT, width=w)
    c = rep.choice
    if c is not None and c.reset_checkpoint:
        out += para(f"note: {c.reset_checkpoint}", "dim", first=INDENT, width=w)
    for p in rep.problems:
        out += para(f"problem: {problem_text(p, rep.partition)}", "red", first=INDENT, width=w)
    if rep.skipped:
        out += para(f"skipped: {rep.skipped}", "red" if rep.blocked else None, first=INDENT, width=w)
        return out + _backups(rep, run)
    full = " (offset map full: the rest is cleaned by the next pass)" if rep.map_full else ""
    out += para(f"offset map: {plural(rep.map_entries, 'key')}, cleaned up to offset {rep.end_offset - 1}{full}",
                first=INDENT, width=w)
    for bases, st in rep.groups:
        if len(bases) <= 2 or run.details:
            names = ", ".join(segment_file_name(b, "log") for b in bases)
        else:
            names = f"{segment_file_name(bases[0], 'log')} .. {segment_file_name(bases[-1], 'log')} " \
                    f"({len(bases)} segments)"
        out += para(f"group [{names}]:", first=INDENT, width=w)
        stamped = f", {plural(st.tombstones_stamped, 'delete horizon')} set" if st.tombstones_stamped else ""
        out += para(f"{st.records_in} -> {st.records_out} records, {st.batches_in} -> {st.batches_out} batches "
                    f"({st.batches_copied} copied unchanged), {st.bytes_in} -> {st.bytes_out} bytes{stamped}",
                    first=INDENT * 2, width=w)
    if rep.checkpoint is not None:
        verb = "would set" if rep.dry_run else "set"
        old = "absent" if rep.checkpoint[0] is None else rep.checkpoint[0]
        out += para(f"cleaner-offset-checkpoint: {verb} {old} -> {rep.checkpoint[1]}", first=INDENT, width=w)
    return out + _backups(rep, run)


def _backups(rep, run: Run) -> list[Line]:
    if not rep.backups:
        return []
    names = f": {', '.join(rep.backups)}" if run.details else ""
    return para(f"backed up {plural(len(rep.backups), 'file')}{names}", "dim", first=INDENT, width=run.width)


def text_lines(reports: list, run: Run) -> list[Line]:
    """The whole report of a compact run."""
    n = len(reports)
    cleaned = [r for r in reports if r.groups]
    stats = [st for r in cleaned for _b, st in r.groups]
    rec_in, rec_out = sum(s.records_in for s in stats), sum(s.records_out for s in stats)
    b_in, b_out = sum(s.bytes_in for s in stats), sum(s.bytes_out for s in stats)
    if cleaned:
        what = (f"{'would clean' if run.dry_run else 'cleaned'} {some_of(len(cleaned), n)} "
                f"({rec_in:,} -> {rec_out:,} records)")
    else:
        what = f"nothing to clean in {plural(n, 'partition')}"
    bad = sum(1 for r in reports if r.problem)
    out = verdict_line(run, what, f"{plural(bad, 'partition')} with problems (below)" if bad else None)
    out += context_lines(run)
    counts: Counter = Counter()
    shown = 0
    for rep in reports:
        why = None if run.details else _why_nothing(rep)
        if why is not None:
            counts[why] += 1
            continue
        blank(out)
        out += _block(rep, run)
        shown += 1
    if counts:
        blank(out)
        out += others_line(counts, run, shown)
    blank(out)
    if cleaned:
        totals = (f"{plural(n, 'partition')} read; {'would clean' if run.dry_run else 'cleaned'} {len(cleaned)}: "
                  f"{rec_in:,} -> {rec_out:,} records, {units.size(b_in)} -> {units.size(b_out)} in "
                  f"{run.seconds:.2f} s")
    else:
        totals = f"{plural(n, 'partition')} read, nothing cleaned in {run.seconds:.2f} s"
    out += para(totals, "dim", rest=INDENT, width=run.width)
    return out


def write_json(out, rep) -> None:
    out.write(json_text(json.dumps(json_safe(report_object(rep)), ensure_ascii=False, separators=(",", ":")))
              + "\n")


def write_summary(out, reports, now: int, now_given: bool, resolver, dry_run: bool, status: int) -> None:
    obj = {"type": "summary", "dry_run": dry_run, "now": now, "now_iso": units.iso(now),
           "now_from": "--now" if now_given else "current time",
           "configuration_sources": list(resolver.sources), "notes": list(resolver.notes),
           "partitions": len(reports), "untouched": sum(r.untouched is not None for r in reports),
           "cleaned": sum(bool(r.groups) for r in reports), "problems": sum(r.problem for r in reports),
           "exit_status": status}
    out.write(json_text(json.dumps(json_safe(obj), ensure_ascii=False, separators=(",", ":"))) + "\n")
