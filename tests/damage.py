"""Hostile damage for the fuzz tests: random bytes overwritten at relative positions, then maybe a cut."""
from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st


def edits(max_size: int):
    """(relative position in [0, 1), new byte value) pairs."""
    return st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1,
                    max_size=max_size)


CUT = st.one_of(st.none(), st.floats(0, 1))


def damage_file(path: Path, changes, cut) -> None:
    """Overwrite ``path`` with its bytes changed as ``changes`` says, then cut at ``cut`` of its length."""
    data = bytearray(path.read_bytes())
    for where, value in changes:
        data[int(where * len(data))] = value
    if cut is not None:
        data = data[:int(cut * len(data))]
    path.write_bytes(bytes(data))
