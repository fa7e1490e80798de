"""The console script's entry point: ``app.main`` behind a guard that is up from kafkalog's first statement.

Importing the click application (click, the command table) takes some 100 ms, and ``app.main`` runs a few
lines before its own handler is in place; a Ctrl-C in either window would otherwise reach Python's top level
as a KeyboardInterrupt traceback (and a death by SIGINT) instead of exit status 130 and one line. Nothing is
imported here before the guard, so only the interpreter's own start-up (before any kafkalog code runs) is
left outside it.
"""
from __future__ import annotations

import sys


def main() -> None:
    """Import the application and run it; a Ctrl-C that ``app.main`` did not catch ends as one it did."""
    run = None
    try:
        from .app import main as run
        run()
    except SystemExit as e:
        from . import teardown
        teardown.leave(e.code)                # returns unless the command allowed it (a Spark run, over)
        raise
    except KeyboardInterrupt:
        if run is not None:                   # the application is there: its exit status and line (work done?)
            from .app import _interrupted
            _interrupted(None)
        try:
            sys.stderr.write("kafkalog: interrupted\n")
            sys.stderr.flush()
        except OSError:
            pass
        from .status import Status
        sys.exit(Status.INTERRUPTED)
