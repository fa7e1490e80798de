"""``dump-log --from-time/--to-time``: a partition's offset range for a time range, found as ListOffsets finds
an offset for a timestamp (``lookup.lookup_time``: the first segment whose largest timestamp reaches it,
its time index, then a scan), the way kcat's ``-o s@TIME -o e@TIME`` asks the broker for both ends."""
from __future__ import annotations

from pathlib import Path


def offset_range(directory: Path, from_ts: int | None, to_ts: int | None) -> tuple[int | None, int | None] | None:
    """(first offset, last offset) to dump, either None for no bound; None when nothing is in range (no
    record at or after ``from_ts``, or the first at ``to_ts`` comes before it). The end is exclusive in time:
    records from the first one at or after ``to_ts`` on are left out (kcat ``-o e@TIME``)."""
    from kafkalog_formats.errors import FormatError
    from .lookup import LookupFailed, PartitionView, lookup_time
    try:
        view = PartitionView(directory)
    except LookupFailed:
        return None
    lo = hi = None
    try:
        if from_ts is not None:
            res = lookup_time(view, from_ts)
            res.close()
            lo = res.found_offset
        if to_ts is not None:
            res = lookup_time(view, to_ts)
            res.close()
            hi = res.found_offset - 1
    except LookupFailed as e:
        if e.kind != "timestamp_not_found":
            raise
        if from_ts is not None and lo is None:
            return None                     # nothing at or after --from-time
        hi = None                           # nothing at or after --to-time: up to the log end
    except FormatError:
        raise
    if lo is not None and hi is not None and hi < lo:
        return None
    return lo, hi


def last_offsets(directory: Path, n: int) -> int | None:
    """The first offset of the last ``n`` offsets before the partition's log end (kcat's ``-o -N``: the log
    end offset minus N, never below the log start); None when the partition holds no segment (nothing to
    count back from: every filter leaves it empty)."""
    from .lookup import LookupFailed, PartitionView
    try:
        view = PartitionView(directory)
    except LookupFailed:
        return None
    return max(view.log_end - n, view.log_start)
