"""kafkalog's own errors, one hierarchy mapped to exit statuses in one place (``app.main``): an error that
reaches it is written as one ``kafkalog: <message>`` line on stderr (after whatever the report already
printed) and the run ends with the error's ``status``. A command catches one of these only to add what it
alone knows (which partition it was working on, what it completed)."""
from __future__ import annotations

from .status import Status


class KafkalogError(Exception):
    """An error the user can act on; its message says what and what to do."""
    status: int = Status.CANNOT_RUN


class CannotRun(KafkalogError):
    """The command must not touch the directory, or cannot read what it needs before the first change (a
    held lock, a topic configuration Kafka would reject): nothing was changed. Exit status 3."""
    status = Status.CANNOT_RUN
