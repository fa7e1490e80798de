"""kafkalog's own errors, one hierarchy mapped to exit statuses in one place (``app.main``): an error that
reaches it is written as one ``kafkalog: <message>`` line on stderr (after whatever the report already
printed) and the run ends with the error's ``status``. A command catches one of these only to add what it
alone knows (which partition it was working on, what it completed).

::

    KafkalogError                  status 3 unless a subclass says otherwise
    ├── UsageProblem               2: the command line asks for what cannot be done (shown as click shows a
    │                                 usage error: the command's usage line, then "Error: <message>")
    ├── CannotRun                  3: nothing was done, or the run stopped (lock held, I/O error, Spark failed)
    ├── InputProblem               1: the input holds a problem that ends this reading before any output
    └── Reported                   the command already wrote the error into its report (a JSON error
                                      object): nothing more is printed; ends with the status it carries

Classes that callers catch as ``OSError`` or ``ValueError`` stay those too (``fileops.LockHeld(CannotRun,
OSError)``): ``app.main`` names an ``OSError`` as the operating system does (``FILE: reason``). The format
layer's ``kafkalog_formats.errors.FormatError`` cannot import this package: it stays that layer's own base,
mapped to status 3 beside these in ``app.main``.
"""
from __future__ import annotations

from .status import Status


class KafkalogError(Exception):
    """An error the user can act on; its message says what and what to do."""
    status: int = Status.CANNOT_RUN


class UsageProblem(KafkalogError):
    """What the command line asks for cannot be done (an option's value, an output that exists): nothing was
    read or changed. Exit status 2."""
    status = Status.USAGE


class CannotRun(KafkalogError):
    """The command must not touch the directory, or cannot read what it needs before the first change (a
    held lock, a topic configuration Kafka would reject), or stopped on an error of the system: nothing was
    changed, or what was is consistent and a rerun completes it. Exit status 3."""
    status = Status.CANNOT_RUN


class InputProblem(KafkalogError):
    """The input holds a problem that ends this reading before it produced anything (a transaction index
    Kafka would refuse): reported as a problem found. Exit status 1."""
    status = Status.PROBLEMS


class Reported(KafkalogError):
    """The command has written the error into its report already (``--format json``: an error object on
    stdout, for scripts): ``app.main`` adds no line and ends with ``status``."""

    def __init__(self, status: int) -> None:
        super().__init__("")
        self.status = status


def said(e: BaseException) -> str:
    """An error as a report says it: an ``OSError`` as the operating system names it (``FILE: reason``), never
    Python's ``[Errno 22] reason: 'FILE'``; any other error its own message."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e)
