"""``diff --save-discarded``: copy the batches a follower would remove on truncation into segments of a
new directory, so nothing the broker throws away is lost without a copy.

The batches are written unchanged (same bytes, same offsets) by ``PartitionWriter``, which lays them out
as a broker does: ``<base offset>.log`` with its offset and time indexes (and ``.txnindex`` for aborted
transactions), rolling a new segment every ``segment_bytes`` (so memory stays bounded), and a
``leader-epoch-checkpoint``. ``dump-log``, ``verify`` and ``export`` read the result like any partition.
Layout: ``DIR/<follower>--with-leader--<leader>/<topic>-<partition>/``.
"""
from __future__ import annotations

import re
from pathlib import Path

from .log_writer import PartitionWriter

SEGMENT_BYTES = 64 << 20


def _safe(label: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._=-]+", "_", label).strip("._")
    return s or "replica"


class DiscardSaver:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.writers: dict = {}
        self.written: list = []          # (directory, batches, bytes)

    def target(self, follower_label: str, leader_label: str, partition: str) -> Path:
        return self.root / f"{_safe(follower_label)}--with-leader--{_safe(leader_label)}" / partition

    def add(self, key, directory: Path, raw: bytes) -> None:
        w = self.writers.get(key)
        if w is None:
            w = self.writers[key] = [PartitionWriter(directory, segment_bytes=SEGMENT_BYTES,
                                                     write_snapshots=False), 0, 0]
        w[0].append(raw)
        w[1] += 1
        w[2] += len(raw)

    def finish(self, key) -> None:
        w = self.writers.pop(key, None)
        if w is not None:
            w[0].close(snapshot=False)
            self.written.append((w[0].directory, w[1], w[2]))


def check_target(root: Path, inputs: list[str]) -> str | None:
    """Why ``root`` may not receive saved batches (None: it may): never one of the compared directories or
    inside one, nor inside any Kafka directory (``fileops.refuse_write_target``), and new or empty."""
    from ..fileops import refuse_write_target
    why = refuse_write_target(root, inputs)           # the caller names the option
    if why is not None:
        return why
    r = Path(root)
    if r.exists() and (not r.is_dir() or any(r.iterdir())):
        return f"{root} exists and is not an empty directory (saved batches never replace files)"
    return None