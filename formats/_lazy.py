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


def lazy_attributes(**groups):
    """A module ``__getattr__`` serving names built on first use. Each keyword is a group:
    ``(names, build)`` where ``build()`` returns a dict holding those names (e.g. the module's construct
    schemas, or a numpy dtype); asking for one name builds its group once, any other name is an
    AttributeError at once (the import system probes modules for ``__path__`` and the like).

    construct costs about 15 ms to import, more than a whole lookup: the schema layer's declarative
    schemas stay the source of truth, but a command that only reads through the struct fast paths never
    builds them. ``from kafkalog_formats.record_batch import RecordV2`` and ``module.RecordV2`` work as
    before (PEP 562); code inside the module asks for them through the returned function."""
    owner = {name: build for names, build in groups.values() for name in names}
    built: dict = {}

    def __getattr__(name: str):
        if name not in built:
            build = owner.get(name)
            if build is None:
                raise AttributeError(f"module has no attribute {name!r}")
            built.update(build())
        return built[name]
    return __getattr__
