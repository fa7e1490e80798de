"""What the state-view commands (describe, consumer-groups, transactions) share: the time they judge at,
and a progress line on a terminal."""
from __future__ import annotations

import sys
from contextlib import contextmanager

import click


def parse_now(value: int | None) -> int:
    """``--now`` (already a time: ``_times.Time``), else the current time."""
    from ._times import now_or_current
    return now_or_current(value)


@contextmanager
def progress_bar(what: str, total: int | None = None):
    """A transient progress line on stderr when it is a terminal; yields ``tick(name)`` (a no-op otherwise)."""
    from .. import ui
    if not ui.show_progress(sys.stderr):
        yield lambda name=None: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    bar = Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                   TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task("", total=total)
        yield lambda name=None: bar.update(task, advance=1, description=name or "")


@contextmanager
def view_config_error():
    """A broker setting Kafka refuses (``ConfigError`` from the configuration resolver): one line per problem
    and exit 3, as retain and compact say it; a broker with it does not start."""
    from ..engine.topic_config import ConfigError
    from ..errors import CannotRun
    try:
        yield
    except ConfigError as e:
        raise CannotRun("a broker configuration Kafka would refuse (a broker with it does not start):\n"
                        + "\n".join(str(p) for p in e.problems)) from None


def text_width() -> int | None:
    """The width a text report may use: the terminal's (``COLUMNS`` honoured) when stdout is one, else None
    (a file or a pipe gets whole lines, whatever their length)."""
    import shutil

    from ..output import stdout
    if not stdout().isatty():
        return None
    return max(shutil.get_terminal_size().columns, 40)


def kafka_version_option(text: str | None) -> str | None:
    """``--kafka-version``: MAJOR.MINOR[.PATCH], checked (a usage error otherwise)."""
    if text is None:
        return None
    from ..engine.coordinator_version import parse_kafka_version
    try:
        parse_kafka_version(text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="'--kafka-version'") from None
    return text.strip()
