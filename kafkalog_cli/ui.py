"""How this invocation talks to the terminal: quiet, progress bars, colour (the global options).

Set once by the ``kafkalog`` group from ``--quiet``, ``--no-progress``, ``--color`` and the environment
(``NO_COLOR``, https://no-color.org; ``FORCE_COLOR``); read by every command and renderer that would
draw a progress bar, print an informational line on stderr or colour its output. Data on stdout is
never affected: these settings only change what is drawn for a person.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass
class Terminal:
    quiet: bool = False          # no progress, no informational lines on stderr (errors still print)
    progress: bool = True        # progress bars on stderr when it is a terminal
    color: str = "auto"          # auto | always | never


SETTINGS = Terminal()


def configure(quiet: bool = False, progress: bool = True, color: str = "auto") -> None:
    """Called by the group callback; ``color`` 'auto' honours NO_COLOR and FORCE_COLOR."""
    if color == "auto":
        if os.environ.get("NO_COLOR"):
            color = "never"
        elif os.environ.get("FORCE_COLOR"):
            color = "always"
    SETTINGS.quiet, SETTINGS.progress, SETTINGS.color = quiet, progress and not quiet, color


def show_progress(stream=None) -> bool:
    """Draw a progress bar on ``stream`` (stderr by default)? Only for a person at a terminal."""
    stream = sys.stderr if stream is None else stream
    return SETTINGS.progress and _isatty(stream)


def show_info() -> bool:
    """Print informational lines (not errors, not data) on stderr?"""
    return not SETTINGS.quiet


def use_color(stream=None) -> bool:
    """Colour on ``stream`` (the report on standard output by default)?"""
    if stream is None:
        from .output import stdout
        stream = stdout()
    if SETTINGS.color == "always":
        return True
    if SETTINGS.color == "never":
        return False
    return _isatty(stream)


def console(stream=None, **kwargs):
    """A rich Console on ``stream`` (the report on standard output by default) that follows the colour setting."""
    from rich.console import Console
    if stream is None:
        from .output import stdout
        stream = stdout()
    color = use_color(stream)
    return Console(file=stream, no_color=not color, force_terminal=True if SETTINGS.color == "always" else None,
                   color_system="auto" if color else None, **kwargs)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
