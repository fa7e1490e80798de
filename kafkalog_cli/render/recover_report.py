"""The report of ``kafkalog recover``: plain text or JSON lines (pure functions of the plan), and a rich
progress bar per partition on stderr when it is a terminal.

Text (``render.repair_text``'s shape): the verdict (what was repaired, or would be, and the exit status),
the partitions skipped, then the repairs grouped by partition: partitions whose repairs read the same
(the same files rebuilt in each, say) share one block that names them; the log directory's own writes
come first; the partitions with nothing to repair are counted in one line; the totals come last. Each
repair is one line (file names relative to the partition directory); ``--details`` adds every partition,
how it is recovered, and under each repair why and which Kafka rule it follows.
JSON lines: ``partition`` objects, one ``action`` object per action, ``problem`` objects, ``skipped``
objects and a final ``summary`` (documented in kafkalog-recover(1)).
"""
from __future__ import annotations

import json
from collections import Counter

from .. import units
from ..engine.findings import Finding
from ..names import json_safe, json_text
from .repair_text import INDENT, Line, Run, blank, names_text, para, plural, some_of, verdict_line


def _bytes(n: int) -> str:
    return f"{n} byte{'' if n == 1 else 's'}"


def _where(pr: Finding, prefix: str = "") -> str:
    f = pr.file
    if prefix and f.startswith(prefix):
        f = f[len(prefix):]
    return f + (f": position {pr.position}" if pr.position is not None else "")


def _problem(pr: Finding) -> dict:
    """A problem recover leaves alone, as its JSON lines give it (file named from the log directory)."""
    return {"kind": pr.kind, "message": pr.message, "file": pr.file, "position": pr.position}


def _action_lines(a, prefix: str, run: Run, why: bool = False) -> list[Line]:
    """A repair in one line; ``why`` (the log directory's few) or --details: its reason under it, and with
    --details the Kafka rule it follows."""
    text = a.describe()
    if prefix:
        text = text.replace(prefix, "")
    out = para(text, first=INDENT, width=run.width)
    if (run.details or why) and a.reason:
        out += para(f"why: {a.reason}", "dim", first=INDENT * 3, width=run.width)      # reasons are phrases
    if run.details:
        out += para(f"rule: {a.rule}", "dim", first=INDENT * 3, width=run.width)
    return out


def _partition_key(p, run: Run) -> tuple:
    """What a partition's block says, without its name: partitions with the same key share a block."""
    prefix = p.name + "/"
    return (tuple(a.describe().replace(prefix, "") for a in p.actions),
            tuple(f"{pr.kind}|{_where(pr, prefix)}|{pr.message}" for pr in p.problems),
            tuple(p.notes) if run.details or p.actions or p.problems else ())


def _block(ps: list, run: Run) -> list[Line]:
    """One block for partitions whose repairs read the same (one partition: its head says more)."""
    w = run.width
    p = ps[0]
    prefix = p.name + "/"
    bad = bool(p.problems)
    if len(ps) == 1:
        head = f"{p.name}: {plural(p.segments, 'segment')}"
        if p.log_end is not None:
            end = (f"log end offset {p.log_end_before} -> {p.log_end}"
                   if p.log_end_before not in (None, p.log_end) else f"log end offset {p.log_end}")
            head += f", {end}"
        if p.refused:
            head += ", left unchanged"
    else:
        head = f"{len(ps)} partitions, {names_text([q.name for q in ps])}"
    out = para(head + ":", "bold red" if bad else "bold", rest=INDENT * 2, width=w)
    if len(ps) == 1 and p.recovery and (run.details or p.truncations or p.problems or p.refused):
        out += para(f"recovery: {p.recovery}", "dim", first=INDENT, width=w)
    if run.details and len(ps) == 1 and p.log_end is not None:
        out += para(f"scanned {plural(p.segments_scanned, 'segment')}, {_bytes(p.bytes_validated)} validated",
                    "dim", first=INDENT, width=w)
    for note in (p.notes if (run.details or p.actions or p.problems) else ()):
        out += para(f"note: {note}", "dim", first=INDENT, width=w)
    if len(ps) == 1 and p.salvage is not None:
        out += salvage_lines(p.salvage, prefix, run.backup_dir, w)
    for pr in p.problems:
        out += para(f"problem: {_where(pr, prefix)}: {pr.message}", "red", first=INDENT, width=w)
    for a in p.actions:
        out += _action_lines(a, prefix, run)
    return out


def _offsets(pair) -> str:
    a, b = pair
    return f"offset {a}" if a == b else f"offsets {a}..{b}"


def salvage_lines(sv: dict, prefix: str, backup_dir: str | None, width: int) -> list[Line]:
    """The loss report of ``recover --salvage`` for one partition (``salvage_plan.loss_report``): what Kafka's
    recovery would have deleted that salvage keeps, then each damaged range (its bytes, the offsets lost or the
    range they lie in, what it held, where the bytes are kept), each repair and each ABORT marker written."""
    out: list[Line] = []

    def rel(name: str) -> str:
        return name[len(prefix):] if name.startswith(prefix) else name
    k = sv.get("kafka")
    if k is not None and k.get("refused"):
        out += para(f"salvage: Kafka's loader would not load this partition as it is ({k['refused']})", first=INDENT,
                    width=width)
    elif k is not None and k.get("unchecked"):
        out += para("salvage: Kafka's loader would not read the damaged segments (recovery: "
                    f"{k['recovery']}): consumers would stop at the damage", first=INDENT, width=width)
    elif k is not None:
        later = k["segments_deleted"]
        kept = f"keeps {plural(k['records_kept'], 'record')}"
        if k.get("offsets_kept"):
            kept += f" ({_offsets(k['offsets_kept'])})"
        out += para(f"salvage: {kept} that Kafka's recovery would delete (it cuts {rel(k['file'])} at byte "
                    f"{k['position']:,}" + (f" and deletes {plural(later, 'later segment')})" if later else ")"),
                    first=INDENT, width=width)
    for dm in sv["damages"]:
        if dm["offsets_lost"]:
            lost = f"{_offsets(dm['offsets_lost'])} lost"
        elif dm["offsets_after"] is not None and dm["offsets_before"] is not None:
            lost = "no offset lost"
        elif dm["tail"]:
            lost = (f"the end of the log: offsets from {dm['offsets_after'] + 1} on lost" if dm["offsets_after"] is not None
                    else "the end of the log")
        else:
            lost = f"offsets before {dm['offsets_before']} lost"
        held = "; ".join(_entry_text(e) for e in dm["entries"][:3])
        if len(dm["entries"]) > 3:
            held += f"; {len(dm['entries']) - 3} more"
        where = f"{backup_dir.rstrip('/')}/{dm['backup']}" if backup_dir else dm["backup"]
        out += para(f"damage: {rel(dm['file'])} bytes {dm['start']:,}..{dm['end'] - 1:,} ({plural(dm['bytes'], 'byte')}): "
                    f"{lost}; held {held}" + (f"; {dm['note']}" if dm["note"] else "")
                    + f" (the bytes are kept whole in {where})", "red", first=INDENT, width=width)
    for r in sv["repairs"]:
        fields = ", ".join(f"{x['field'].replace('_', ' ')} {x['old']} -> {x['new']}" for x in r["fields"])
        out += para(f"repaired: {rel(r['file'])} batch at byte {r['position']:,} ({_offsets(r['offsets'])}): {fields}: "
                    f"{r['reason']}", first=INDENT, width=width)
    for m in sv["markers"]:
        out += para(f"aborted: the transaction of producer {m['producer_id']} open from offset "
                    f"{m['transaction_first_offset']} at the damage, ended by an ABORT marker at offset {m['offset']} "
                    "(its end may be in the damaged bytes; if it was committed, READ_COMMITTED consumers no longer "
                    "see it; its records stay for READ_UNCOMMITTED ones)", first=INDENT, width=width)
    return out


def _entry_text(e: dict) -> str:
    claimed = f", offsets {e['claimed_offsets'][0]}..{e['claimed_offsets'][1]} claimed" if e["claimed_offsets"] else ""
    size = f"{e['size']:,} bytes" if e["size"] is not None else "no batch framed"
    return f"{e['kind']} at byte {e['position']:,} ({size}{claimed}): {e['reason']}"


def render_text(outcome, out, backup_dir: str | None = None, details: bool = False, seconds: float = 0.0) -> None:
    from .repair_text import emit
    emit(out, text_lines(outcome, backup_dir, details, seconds))


def text_lines(outcome, backup_dir: str | None = None, details: bool = False, seconds: float = 0.0) -> list[Line]:
    plan = outcome.plan
    dry = not outcome.executed
    total = len(plan.actions())
    problems = len(plan.problems) + sum(len(p.problems) for p in plan.partitions)
    status = 1 if (plan.has_changes or plan.has_problems) else 0
    if outcome.error is not None:
        status = 3
    run = Run("recover", dry, details, seconds, status)
    run.backup_dir = backup_dir
    n = len(plan.partitions)
    repaired = sum(1 for p in plan.partitions if p.actions)
    if outcome.error is not None:
        what = f"stopped after {outcome.completed} of {plural(total, 'repair')}: {outcome.error}"
    elif total:
        where = f"in {some_of(repaired, n)}" if repaired else "in the log directory"
        if repaired and (plan.before or plan.after):
            where += " and the log directory"
        what = f"{'would make' if dry else 'made'} {plural(total, 'repair')} {where}"
    else:
        what = f"nothing to repair in {plural(n, 'partition')}"
    lines = verdict_line(run, what, f"{plural(problems, 'problem')} it does not repair (below)" if problems else None)
    for note in plan.notes:
        lines += para(f"note: {note}", "dim", rest=INDENT, width=run.width)
    counts: Counter = Counter()
    skipped: dict[str, list] = {}          # not among the partitions counted: named, by reason
    for name, reason in plan.skipped:
        skipped.setdefault(reason, []).append(name)
    for reason, names in skipped.items():
        lines += para(f"skipped {names_text(names)}: {reason}", "dim", rest=INDENT, width=run.width)
    if plan.before:
        blank(lines)
        lines.append(Line("log directory, before the partitions:", "bold"))
        for a in plan.before:
            lines += _action_lines(a, "", run, why=True)
    groups: dict[tuple, list] = {}
    for p in plan.partitions:
        if not details and not p.actions and not p.problems:
            counts["with nothing to repair"] += 1
            continue
        key = (p.name,) if details or p.problems or p.truncations or p.refused or p.salvage else _partition_key(p, run)
        groups.setdefault(key, []).append(p)
    for ps in groups.values():
        blank(lines)
        lines += _block(ps, run)
    if plan.after:
        blank(lines)
        lines.append(Line("log directory, after the partitions:", "bold"))
        for a in plan.after:
            lines += _action_lines(a, "", run, why=True)
    for pr in plan.problems:
        blank(lines)
        lines += para(f"problem: {_where(pr)}: {pr.message}", "bold red", rest=INDENT, width=run.width)
    if counts:
        blank(lines)
        quiet = counts["with nothing to repair"]
        lines += para(f"{plural(quiet, 'other partition' if groups else 'partition')} with nothing to repair "
                      "(--details lists each)", "green", rest=INDENT, width=run.width)
    blank(lines)
    scanned = sum(p.segments_scanned for p in plan.partitions)
    validated = sum(p.bytes_validated for p in plan.partitions)
    totals = (f"{plural(n, 'partition')}, {plural(scanned, 'segment')} scanned, {units.size(validated)} validated; "
              f"{plural(total, 'repair')} {'planned' if dry else 'made'}")
    if outcome.executed:
        totals += f", {plural(outcome.operations, 'file operation')}"
        if backup_dir:
            totals += f", {plural(len(outcome.backups), 'file')} saved in {backup_dir}"
    totals += f" in {seconds:.2f} s"
    lines += para(totals, "dim", rest=INDENT, width=run.width)
    return lines


def action_object(partition: str | None, n: int, a) -> dict:
    obj = {"type": "action", "seq": n, "partition": partition, "action": a.op, "file": a.path,
           "reason": a.reason, "rule": a.rule}
    for attr in ("target", "files", "new_size", "old_size", "kind", "detail", "offset", "what", "size",
                 "base_offset"):
        if hasattr(a, attr):
            v = getattr(a, attr)
            obj[attr] = list(v) if isinstance(v, tuple) else v
    if hasattr(a, "data"):
        obj["bytes"] = len(a.data)
    if getattr(a, "changes", None):
        obj["changes"] = [{"partition": p, "old": o, "new": v} for p, o, v in a.changes]
    return obj


def render_json(outcome, out, backup_dir: str | None = None) -> None:
    plan = outcome.plan

    def emit(obj) -> None:
        out.write(json_text(json.dumps(json_safe(obj), ensure_ascii=False, separators=(",", ":"))) + "\n")

    for name, reason in plan.skipped:
        emit({"type": "skipped", "directory": name, "reason": reason})
    for p in plan.partitions:
        emit({"type": "partition", "partition": p.name, "kind": p.kind, "recovery": p.recovery,
              "segments": p.segments, "segments_scanned": p.segments_scanned,
              "bytes_validated": p.bytes_validated, "log_end_offset_before": p.log_end_before,
              "log_end_offset": p.log_end, "truncations": p.truncations, "removed": p.removed,
              "rebuilt": p.rebuilt, "checkpoints": p.checkpoints, "actions": len(p.actions),
              "left_unchanged": p.refused, "notes": p.notes,
              **({"salvage": p.salvage} if p.salvage is not None else {})})
        for pr in p.problems:
            emit({"type": "problem", "partition": p.name, **_problem(pr)})
    for pr in plan.problems:
        emit({"type": "problem", "partition": None, **_problem(pr)})
    for n, (partition, a) in enumerate(plan.actions(), 1):
        emit(action_object(partition, n, a))
    emit({"type": "summary", "log_dir": plan.log_dir, "dry_run": not outcome.executed,
          "partitions": len(plan.partitions), "partitions_repaired": sum(1 for p in plan.partitions if p.actions),
          "actions": len(plan.actions()), "problems": plan.has_problems, "notes": plan.notes,
          "file_operations": outcome.operations, "backup_dir": backup_dir, "backups": outcome.backups,
          "completed": outcome.completed, "error": outcome.error})


class PartitionProgress:
    """A rich progress bar per partition (bytes scanned) on stderr, only when stderr is a terminal."""

    def __init__(self, stream) -> None:
        self._progress = None
        self._task = None
        from ..ui import show_progress
        if show_progress(stream):
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                      console=Console(file=stream), transient=False)

    def __enter__(self) -> "PartitionProgress":
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def start(self, name: str, total: int) -> None:
        if self._progress is not None:
            self._task = self._progress.add_task(name, total=max(total, 1))

    def advance(self, n: int) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)

    def finish(self) -> None:
        if self._progress is not None and self._task is not None:
            task = self._progress.tasks[-1]
            self._progress.update(self._task, completed=task.total)
            self._task = None
