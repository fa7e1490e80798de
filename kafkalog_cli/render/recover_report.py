"""The report of ``kafkalog recover``: plain text or JSON lines (pure functions of the plan), and a rich
progress bar per partition on stderr when it is a terminal.

Text: a header, one block per partition (what was scanned, truncated, removed, rebuilt, which checkpoints
changed, then its numbered actions with the reason and the Kafka rule), log-directory actions, a summary.
JSON lines: ``partition`` objects, one ``action`` object per action, ``problem`` objects, ``skipped``
objects and a final ``summary`` (documented in kafkalog-recover(1)).
"""
from __future__ import annotations

import json


def _bytes(n: int) -> str:
    return f"{n} byte{'' if n == 1 else 's'}"


def _epochs(v) -> str:
    return "[" + ", ".join(f"{e} {s}" for e, s in v) + "]"


def _value(v) -> str:
    if v is None:
        return "absent"
    if isinstance(v, list):
        return _epochs(v)
    return str(v)


def render_text(outcome, out, backup_dir: str | None = None) -> None:
    plan = outcome.plan
    w = out.write
    w(f"kafkalog recover {plan.log_dir}\n")
    if not outcome.executed:
        w("dry run: nothing was changed; the actions below are the plan\n")
    n = 0
    for name, reason in plan.skipped:
        w(f"skipped {name}: {reason}\n")
    for note in plan.notes:
        w(f"note: {note}\n")
    before = [a for a in plan.before]
    if before:
        w("log directory (before the partitions):\n")
        for a in before:
            n += 1
            _action(w, n, a)
    for p in plan.partitions:
        w("\n" if (p.actions or p.problems) else "")
        head = f"{p.name}: {p.segments} segment{'' if p.segments == 1 else 's'}"
        if not p.actions and not p.problems:
            w(f"{head}, nothing to do ({p.recovery or 'no segment'})\n")
            continue
        w(f"{head}\n")
        if p.recovery:
            w(f"  recovery: {p.recovery}\n")
        if p.log_end is not None:
            end = (f"log end offset {p.log_end_before} -> {p.log_end}" if p.log_end_before not in (None, p.log_end)
                   else f"log end offset {p.log_end}")
            w(f"  scanned {p.segments_scanned} segment{'' if p.segments_scanned == 1 else 's'}, "
              f"{_bytes(p.bytes_validated)} validated; {end}\n")
        for t in p.truncations:
            at = f", offset {t['offset']}" if t.get("offset") is not None else ""
            w(f"  truncated {t['file']} at position {t['position']}{at}: {_bytes(t['bytes'])} cut ({t['kind']}: "
              f"{t['reason']})\n")
        if p.removed:
            w(f"  removed {len(p.removed)} file{'' if len(p.removed) == 1 else 's'}: {', '.join(p.removed)}\n")
        for r in p.rebuilt:
            old = "missing" if r["old_size"] is None else _bytes(r["old_size"])
            w(f"  rebuilt {r['file']} ({old} -> {_bytes(r['new_size'])})\n")
        for c in p.checkpoints:
            old = "unreadable" if c["old"] is None and c["file"].endswith("leader-epoch-checkpoint") \
                else _value(c["old"])
            w(f"  checkpoint {c['file']}: {old} -> {_value(c['new'])}\n")
        for note in p.notes:
            w(f"  note: {note}\n")
        for pr in p.problems:
            w(f"  problem: {_where(pr)}: {pr['message']}\n")
        for a in p.actions:
            n += 1
            _action(w, n, a)
    if plan.after:
        w("\nlog directory (after the partitions):\n")
        for a in plan.after:
            n += 1
            _action(w, n, a)
    for pr in plan.problems:
        w(f"problem: {_where(pr)}: {pr['message']}\n")
    w("\n")
    total = len(plan.actions())
    verb = "done" if outcome.executed else "planned"
    if total == 0:
        w("nothing to repair\n")
    else:
        if outcome.error is not None:
            verb = f"planned, {outcome.completed} done before an error stopped the run"
        w(f"{total} action{'' if total == 1 else 's'} {verb} in "
          f"{sum(1 for p in plan.partitions if p.actions)} partition(s)")
        if outcome.executed:
            w(f"; {outcome.operations} file operations")
            if backup_dir:
                w(f"; {len(outcome.backups)} file(s) saved in {backup_dir}")
        w("\n")
    if plan.has_problems:
        w("problems were found that recover does not repair (see above)\n")


def _where(pr: dict) -> str:
    return pr["file"] + (f": position {pr['position']}" if pr.get("position") is not None else "")


def _action(w, n: int, a) -> None:
    w(f"  {n:>3}. {a.describe()}\n")
    if a.reason:
        w(f"       because {a.reason}\n")
    w(f"       rule: {a.rule}\n")


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
        out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")

    for name, reason in plan.skipped:
        emit({"type": "skipped", "directory": name, "reason": reason})
    for p in plan.partitions:
        emit({"type": "partition", "partition": p.name, "kind": p.kind, "recovery": p.recovery,
              "segments": p.segments, "segments_scanned": p.segments_scanned,
              "bytes_validated": p.bytes_validated, "log_end_offset_before": p.log_end_before,
              "log_end_offset": p.log_end, "truncations": p.truncations, "removed": p.removed,
              "rebuilt": p.rebuilt, "checkpoints": p.checkpoints, "actions": len(p.actions),
              "left_unchanged": p.refused, "notes": p.notes})
        for pr in p.problems:
            emit({"type": "problem", "partition": p.name, **pr})
    for pr in plan.problems:
        emit({"type": "problem", "partition": None, **pr})
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
