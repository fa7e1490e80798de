"""Leaving the process without Python's teardown, once a run that started Spark is over.

Such a run has pyspark, pyarrow, pandas and numpy loaded, and Python's own finalization (clearing their
modules, collecting their objects) took 0.1 s of every export here after the command's work and report were
done. A command allows skipping it (``allow``) once its Spark session has stopped; the console script then
``leave``s: standard output and error flushed, the ``atexit`` callbacks run (pyspark's and logging's among
them), and the process exits with the command's status. Every file a command writes is closed and fsynced
by the file-operations layer before its report, so nothing is left for finalization to flush. Skipped, and
the normal exit taken, when any thread Python would wait for still runs or a stream cannot be flushed.
"""
from __future__ import annotations

import sys

_allowed = False


def allow() -> None:
    """This run's work is over and every file it wrote is closed: the process may leave without teardown."""
    global _allowed
    _allowed = True


def reset() -> None:
    global _allowed
    _allowed = False


def leave(code) -> None:
    """Exit now with ``code`` (an int, or None for 0) when allowed; return otherwise (the caller exits as usual)."""
    import atexit
    import os
    import threading
    if not _allowed or not (code is None or isinstance(code, int)):
        return
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    from . import output
    try:
        output.finish()                    # settled by the run already: whatever is still buffered
        sys.stderr.flush()
    except Exception:                      # noqa: BLE001 - a closed pipe, a full disk: the normal exit says it
        return
    atexit._run_exitfuncs()
    try:
        output.finish()
        sys.stderr.flush()
    except Exception:                      # noqa: BLE001 - the status stands; nothing is left to say it with
        pass
    os._exit(code or 0)
