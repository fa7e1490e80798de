"""LogLoader's passes 1 and 2 over the file names of a partition directory: leftovers of interrupted
deletions, cleanings and splits removed, interrupted swaps completed (``LogLoader.removeTempFilesAndCollectSwapFiles``
and the swap completion of ``LogLoader.load``; Scala ``kafka.log.Log`` 2.x and ``LogLoader`` 3.0-trunk).

Pure: names in, actions out. ``segment_recovery.scan_partition`` applies the result virtually (the segments it
scans are the ones the directory holds after these passes), ``recover_plan`` plans it and ``interrupted``
completes an interrupted writer with it.
"""
from __future__ import annotations

from .recover_actions import R_PASS1, R_PASS2, Action, RemoveFile, RenameFile


def _numeric_prefix(name: str) -> int | None:
    """Kafka's ``offsetFromFile``: the text before the first '.' as a long, None when not a number."""
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def plan_leftovers(names: list[str], swap_extents: dict[int, int], prefix: str = "") \
        -> tuple[list[Action], dict[str, str]]:
    """Kafka's passes 1 and 2 over the regular files of a partition directory (``LogLoader.load``).

    ``swap_extents`` maps the base offset of each ``<base>.log.swap`` to the offset after its last batch.
    Returns the actions and the *virtual* directory afterwards: final name → the current name holding
    that content (a ``.swap`` name for a file the swap will rename).
    """
    actions: list[Action] = []
    remaining = set(names)
    cleaned, swaps = [], []
    rule1 = R_PASS1
    for name in sorted(names):
        if name.endswith(".deleted") and not name.endswith(".checkpoint.deleted"):
            actions.append(RemoveFile(prefix + name, "file scheduled for deletion (*.deleted)", rule1))
            remaining.discard(name)
        elif name.endswith(".cleaned"):
            cleaned.append(name)
        elif name.endswith(".swap"):
            swaps.append(name)
    offsets = [o for o in (_numeric_prefix(n) for n in cleaned) if o is not None]
    min_cleaned = min(offsets) if offsets else None
    valid_swaps = []
    for name in swaps:
        off = _numeric_prefix(name)
        if min_cleaned is not None and off is not None and off >= min_cleaned:
            actions.append(RemoveFile(prefix + name, f"swap file at or above the smallest .cleaned offset "
                                      f"{min_cleaned}: part of an incomplete segment split (KAFKA-6264)", rule1))
            remaining.discard(name)
        else:
            valid_swaps.append(name)
    for name in cleaned:
        actions.append(RemoveFile(prefix + name, "cleaner output that was never swapped in (*.cleaned)", rule1))
        remaining.discard(name)
    rule2 = R_PASS2
    log_swaps = [n for n in valid_swaps if n.endswith(".log.swap")]
    if log_swaps:
        lo = min(_numeric_prefix(n) for n in log_swaps)
        hi = max(swap_extents.get(_numeric_prefix(n), _numeric_prefix(n)) for n in log_swaps)
        for name in sorted(remaining):
            if name.endswith(".swap"):
                continue
            off = _numeric_prefix(name)
            if off is not None and lo <= off < hi:
                actions.append(RemoveFile(prefix + name, f"replaced by the swap segment(s) covering offsets "
                                          f"[{lo}, {hi})", rule2))
                remaining.discard(name)
    virtual = {n: n for n in remaining if not n.endswith(".swap")}
    for name in sorted(valid_swaps):
        final = name[:-len(".swap")]
        if final in virtual:      # rename replaces it: back it up explicitly first
            actions.append(RemoveFile(prefix + final, f"overwritten by {name}", rule2))
        actions.append(RenameFile(prefix + name, "complete the interrupted swap", rule2, target=prefix + final))
        virtual[final] = name
    return actions, virtual
