"""The console script's entry point: ``app.main`` behind a guard for the first tenth of a second.

Importing the click application (click, the command table) takes some 100 ms; a Ctrl-C in that window
would otherwise reach Python's top level as a KeyboardInterrupt traceback before ``app.main`` could map it
to exit status 130. Nothing is imported here before the guard, so only the interpreter's own start-up
(before any kafkalog code runs) is left outside it.
"""
from __future__ import annotations

import sys


def main() -> None:
    """Import the application and run it; a Ctrl-C during the import ends like one during the command."""
    try:
        from .app import main as run
    except KeyboardInterrupt:
        try:
            sys.stderr.write("kafkalog: interrupted\n")
            sys.stderr.flush()
        except OSError:
            pass
        from .status import Status
        sys.exit(Status.INTERRUPTED)
    run()
