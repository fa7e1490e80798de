"""Finish what an interrupted compact or retain (a kill, a full disk) left in a partition directory, as
``kafkalog recover`` and Kafka's ``LogLoader`` do, so the next run need not be told to run recover first.

The actions are recover's own (``leftovers.plan_leftovers``: LogLoader passes 1 and 2 — ``.deleted`` and
``.cleaned`` files removed, an interrupted ``.swap`` completed or, when part of an incomplete split,
discarded), plus recover's pass-3 clean-up of what those leave: index files without their ``.log`` (a
segment whose ``.log`` was already renamed ``.deleted``) and temporary ``.tmp`` files. They are executed
by recover's executor, so removed files go to the backup directory when one is given.
"""
from __future__ import annotations

from pathlib import Path

from ..layout import classify_file


def plan(directory: Path) -> tuple[list, bool]:
    """(recover actions for this partition, whether a swap is completed — which changes the segments)."""
    from kafkalog_formats.message_set import BatchReader

    from ..engine.mapped import MappedFile
    from .leftovers import plan_leftovers
    from .recover_actions import RemoveFile, RenameFile
    from ..layout import name_problem
    regular = sorted(p.name for p in directory.iterdir() if p.is_file())
    # a name Kafka's loader misreads is not a leftover of ours: never completed, never removed here
    names = [n for n in regular if name_problem(n, regular) is None]
    extents = {}
    for name in names:
        fn = classify_file(name)
        if fn.kind == "log" and fn.state == "swap":
            nxt = fn.offset
            with MappedFile(directory / name) as mf:
                for b in BatchReader(mf.buf):
                    nxt = b.last_offset + 1
            extents[fn.offset] = nxt
    prefix = directory.name + "/"
    actions, virtual = plan_leftovers(names, extents, prefix)
    if not actions and not any(n.endswith(".tmp") for n in names):
        return [], False
    swapping = any(isinstance(a, RenameFile) for a in actions)
    logs = {classify_file(n).offset for n in virtual if classify_file(n).kind == "log"
            and classify_file(n).state is None}
    for name in sorted(virtual):
        fn = classify_file(name)
        if fn.kind in ("index", "timeindex", "txnindex") and fn.state is None and fn.offset not in logs:
            actions.append(RemoveFile(prefix + name, "index file without its .log (its segment was being deleted)",
                                      "LogLoader.loadSegmentFiles"))
        elif name.endswith(".tmp"):
            actions.append(RemoveFile(prefix + name, "temporary file of an interrupted write", "kafkalog"))
    return actions, swapping


def finish(directory: Path, actions: list, backup: Path | None) -> list[str]:
    """Execute ``actions`` (from ``plan``); returns the files written into the backup directory."""
    from .recover_exec import apply
    saved = []
    for a in actions:
        saved += apply(directory.parent, a, backup)
    return saved


def describe(action) -> str:
    return f"{action.describe()}: {action.reason}"
