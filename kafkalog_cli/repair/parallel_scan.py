"""``recover -j``: the read-only scan of each partition (``segment_recovery.scan_partition``) in worker
processes, as the broker loads the logs of a log directory on ``num.recovery.threads.per.data.dir``
threads (``LogManager.loadLogs``). The facts come back in partition order, so the plan and the report
are the ones a single process makes; the plan is then executed in this process, one action at a time,
as before (its crash-safe order does not change)."""
from __future__ import annotations

from pathlib import Path


def _scan(task):
    """A worker's task: scan some partitions; [(facts, .log bytes)]."""
    from .salvage_recovery import scan as scan_partition
    from .segment_recovery import ScanOptions
    items, scan_opts = task
    out = []
    for directory, kind, recovery_point, log_start, own in items:
        directory = Path(directory)
        total = sum(e.stat().st_size for e in directory.iterdir() if e.is_file() and e.name.endswith(".log"))
        facts = scan_partition(directory, kind, recovery_point=recovery_point, log_start=log_start,
                               options=ScanOptions(**scan_opts), own_checkpoints=own)
        out.append((facts, total))
    return out


def scan_partitions(tasks: list, scan_opts: dict, jobs: int, progress) -> list:
    """The facts of every partition of ``tasks`` ((directory, kind, recovery point, log start, own)), in
    order; ``progress`` hears of each partition as it finishes."""
    from ..engine import parallel
    groups = parallel.chunks([t[0] for t in tasks])
    work = [([tasks[i] for i in g], scan_opts) for g in groups]

    def done(results):
        for facts, total in results:
            progress.start(facts.dir_name, total)
            progress.advance(total)
            progress.finish()

    out = []
    for results in parallel.ordered_map(_scan, work, jobs, done):
        out.extend(f for f, _total in results)
    return out
