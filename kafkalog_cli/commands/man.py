"""``kafkalog man [COMMAND]``: the manual page, for machines where ``man kafkalog`` finds nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click

HELP = """Show the manual page of kafkalog, or of one of its commands.

Uses man(1) when it is installed, and otherwise prints the page as plain text, so it works in
containers and virtual environments where "man kafkalog" finds nothing. A regular "pip install ."
also installs the pages where man(1) finds them (PREFIX/share/man/man1; a virtual environment's
bin/ on PATH is enough); an editable install does not, and then this command is the way in.

\b
Examples:
  kafkalog man                 the overview: commands, exit statuses
  kafkalog man recover         the manual of kafkalog recover
  kafkalog man --path verify   where the page file is (MANPATH, man -l)
"""


def page_path(command: str | None) -> Path | None:
    """The installed page (PREFIX/share/man/man1), else the source tree's man/ (editable installs)."""
    name = ("kafkalog" if command is None else f"kafkalog-{command}") + ".1"
    here = Path(__file__).resolve().parents[2] / "man"
    for folder in (Path(sys.prefix) / "share" / "man" / "man1", here):
        if (folder / name).is_file():
            return folder / name
    return None


@click.command("man", help=HELP, short_help="Show the manual of kafkalog or one of its commands.")
@click.argument("command_name", metavar="[COMMAND]", required=False)
@click.option("--path", "show_path", is_flag=True, help="Print the page file's path instead of the page.")
def command(command_name: str | None, show_path: bool) -> int:
    from . import COMMANDS
    if command_name is not None and command_name not in COMMANDS:
        raise click.BadParameter(f"no command {command_name!r}; commands: {', '.join(sorted(COMMANDS))}",
                                 param_hint="'COMMAND'")
    path = page_path(command_name)
    if path is None:
        from ..errors import CannotRun
        raise CannotRun("the manual pages are not installed with this copy of kafkalog; "
                        f"run \"kafkalog {command_name + ' ' if command_name else ''}--help\"")
    from ..output import stdout
    out = stdout()
    if show_path:
        out.write(f"{path}\n")
        return 0
    man = shutil.which("man")
    if man and out.isatty():
        out.flush()
        return subprocess.call([man, "-l", str(path)])
    nroff = shutil.which("nroff")
    if nroff:
        width = shutil.get_terminal_size((80, 24)).columns if out.isatty() else 80
        page = subprocess.run([nroff, "-man", "-Tutf8", f"-rLL={width}n", str(path)], capture_output=True,
                              env=dict(os.environ, GROFF_NO_SGR="1"))
        if page.returncode == 0:
            from ..render.man_text import strip_overstrike
            out.write(strip_overstrike(page.stdout.decode("utf-8", "replace")))
            return 0
    from ..render.man_text import roff_to_text
    out.write(roff_to_text(path.read_text(encoding="utf-8")))
    return 0
