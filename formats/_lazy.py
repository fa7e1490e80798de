"""numpy on first use: the index modules name it at the top, but a lookup reads a few index entries with
``struct`` and never needs it (importing numpy costs more than the whole lookup)."""
from __future__ import annotations

import sys


class _LazyNumpy:
    """Stands for the numpy module; the first attribute access imports it."""

    def __getattr__(self, name: str):
        import numpy
        return getattr(numpy, name)


np = _LazyNumpy()


def is_ndarray(x) -> bool:
    """isinstance(x, numpy.ndarray) without importing numpy (nothing is an array before it is imported)."""
    mod = sys.modules.get("numpy")
    return mod is not None and isinstance(x, mod.ndarray)
