"""dump-log's exit status by verify's grading (``verify_policy``): what DumpLogSegments reports is checked
by its own rules, which are stricter than what a broker needs (a compacted topic's offset and time indexes
name offsets inside batches, ``Cleaner.cleanInto``; a torn tail is cut by the next start). Kafka's tool
prints those reports and exits 0; dump-log prints the same and exits 1 only where ``kafkalog verify``, run
on the files concerned, finds an error.

Problems that are not about the data but about the reading (a file that could not be read, an index
whose segment is not there, a file name Kafka cannot parse) are not graded: they always fail the run. So
does a problem in an index read without its segment (``--index-sanity-check`` on a backed-up index): verify
has no segment to grade it by.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..layout import classify_file

#: dump-log problems about what could not be read or verified (exit status 1 whatever verify says)
UNGRADED = frozenset({"io_error", "missing_file", "missing_companion", "bad_file_name"})

_RANK = {"info": 0, "warning": 1, "error": 2}


def without_segment(file: str) -> bool:
    """An index file (offset, time or transaction index) whose segment ``.log`` is not beside it."""
    p = Path(file)
    fn = classify_file(p.name)
    return (fn.kind in ("index", "timeindex", "txnindex") and fn.state is None
            and not p.with_name(f"{fn.offset:020d}.log").exists())


def worst_severity(files: Iterable[str]) -> str | None:
    """verify's worst severity over ``files``, each verified as ``kafkalog verify FILE`` verifies it: a
    segment's file with its whole segment, under the load plan and topic rules of its partition and log
    directory. None when verify finds nothing."""
    from .verify import Verifier
    chosen: dict = {}
    for f in files:
        p = Path(f)
        fn = classify_file(p.name)
        segment = fn.kind in ("log", "index", "timeindex", "txnindex") and fn.state is None
        key = (p.parent.resolve(), fn.offset) if segment else p.resolve()
        chosen.setdefault(key, str(p))
    if not chosen:
        return None
    report = Verifier().run(list(chosen.values()))
    return max((f.severity for f in report.findings()), key=_RANK.__getitem__, default=None)
