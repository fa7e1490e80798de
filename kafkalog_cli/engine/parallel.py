"""Per-partition work in worker processes, results in the order of the tasks (``-j/--jobs``).

The broker loads the logs of a log directory on ``num.recovery.threads.per.data.dir`` threads, one
partition per task (``LogManager.loadLogs``); verify and recover read partitions the same way, in
processes (the work is Python, one interpreter lock per process). Results come back in task order, so a
report is the one ``-j1`` writes, byte for byte; ``on_done`` is called as each task finishes, in
completion order, for a progress bar across partitions.

Workers are forked from this process when it runs no other thread (the cheapest start: kafkalog is
imported already), else started from a fork server (a clean process: a thread of the caller, such as a
progress bar's, holding a lock at the fork would leave that lock held in the worker forever). Partitions are grouped into tasks of a
few megabytes, so that thousands of small partitions do not cost a round trip each.
"""
from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CannotRun

#: a task holds partitions up to this many bytes of .log files, or this many partitions
TASK_BYTES = 8 << 20
TASK_PARTITIONS = 64


def default_jobs() -> int:
    """``-j 0``: the CPUs this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:                 # not Linux
        return os.cpu_count() or 1


def log_bytes(directory: Path) -> int:
    try:
        return sum(e.stat().st_size for e in os.scandir(directory) if e.name.endswith(".log") and e.is_file())
    except OSError:
        return 0


def chunks(dirs: list[Path], sizes: list[int] | None = None) -> list[list[int]]:
    """Indexes of ``dirs`` grouped into tasks of consecutive partitions (order kept)."""
    sizes = sizes if sizes is not None else [log_bytes(d) for d in dirs]
    out: list[list[int]] = []
    cur: list[int] = []
    total = 0
    for i, n in enumerate(sizes):
        if cur and (total + n > TASK_BYTES or len(cur) >= TASK_PARTITIONS):
            out.append(cur)
            cur, total = [], 0
        cur.append(i)
        total += n
    if cur:
        out.append(cur)
    return out


class WorkerDied(CannotRun):
    """A worker process of ``-j`` died (SIGKILL from the kernel's out-of-memory killer, most often): the run
    cannot complete; one line says which signal and what to do (exit status 3). The workers only read, so
    nothing was changed."""

    def __init__(self, jobs: int, processes) -> None:
        import signal
        # the pool stops the other workers with SIGTERM once one has died: the dead one ended otherwise
        codes = [p.exitcode for p in processes if p.exitcode not in (None, 0, -signal.SIGTERM)]
        how = "died"
        if codes and codes[0] < 0:
            name = signal.Signals(-codes[0]).name
            how = f"was killed by {name}" + (" (as the kernel's out-of-memory killer does)" if name == "SIGKILL"
                                               else "")
        elif codes:
            how = f"exited with status {codes[0]}"
        super().__init__(f"a worker process of -j {jobs} {how}; the run stopped and nothing was changed: run it "
                         "again, with fewer jobs (-j) or more memory if the system ran short")


def ordered_map(fn: Callable, tasks: list, jobs: int, on_done: Callable | None = None) -> Iterator:
    """``fn(task)`` for every task, in ``jobs`` processes (in this one when ``jobs`` is 1 or there is one
    task); yields the results in task order."""
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            r = fn(t)
            if on_done is not None:
                on_done(r)
            yield r
        return
    import multiprocessing as mp
    import threading
    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        ctx = mp.get_context("fork")
    else:
        ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
        if "forkserver" in methods:
            ctx.set_forkserver_preload([fn.__module__])
    ahead = jobs * 2
    workers: dict = {}                     # pid -> multiprocessing.Process, for the exit status of a dead one
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx) as pool:
        pending: dict = {}
        done: dict = {}
        nxt_submit = nxt_yield = 0
        try:
            while nxt_yield < len(tasks):
                while nxt_submit < len(tasks) and nxt_submit - nxt_yield < ahead:
                    pending[pool.submit(fn, tasks[nxt_submit])] = nxt_submit
                    nxt_submit += 1
                workers.update(getattr(pool, "_processes", None) or {})
                while nxt_yield not in done:
                    finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                    for f in finished:
                        i = pending.pop(f)
                        done[i] = f.result()
                        if on_done is not None:
                            on_done(done[i])
                yield done.pop(nxt_yield)
                nxt_yield += 1
        except BrokenProcessPool:
            # a worker killed right after the pool started breaks the very first submit, before the loop
            # above has seen any worker: take them from the pool before its shutdown forgets them
            workers.update(getattr(pool, "_processes", None) or {})
            pool.shutdown(wait=True, cancel_futures=True)
            raise WorkerDied(jobs, workers.values()) from None
        except BaseException:
            for f in pending:
                f.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            raise

