"""``-j/--jobs``, shared by verify and recover: how many partitions are read at once (``engine.parallel``)."""
from __future__ import annotations

import click


def _jobs(ctx, param, value):
    if value == 0:
        from ..engine.parallel import default_jobs
        return default_jobs()
    return value


#: -j/--jobs of verify and recover: partitions read at once, as the broker's num.recovery.threads.per.data.dir
jobs_option = click.option(
    "--jobs", "-j", type=click.IntRange(min=0), default=1, show_default=True, metavar="N", callback=_jobs,
    help="Read N partitions at once in worker processes (0: one per CPU), as the broker loads logs on "
         "num.recovery.threads.per.data.dir threads; the report is the same, in the same order. A worker "
         "that dies (the out-of-memory killer's SIGKILL) stops the run: one line, exit 3.")
