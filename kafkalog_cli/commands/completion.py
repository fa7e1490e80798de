"""``kafkalog completion SHELL``: the shell completion script (click's, for bash, zsh and fish)."""
from __future__ import annotations

import click

HELP = """Print the script that makes your shell complete kafkalog's commands, options and paths.

\b
Set-up (once):
  bash   add to ~/.bashrc:  eval "$(kafkalog completion bash)"
  zsh    add to ~/.zshrc:   eval "$(kafkalog completion zsh)"
  fish   run once:          kafkalog completion fish \\
                              > ~/.config/fish/completions/kafkalog.fish

The script calls kafkalog itself (with the _KAFKALOG_COMPLETE environment variable set) to list
completions, so it always matches the installed version.
"""


@click.command("completion", help=HELP, short_help="Print the shell completion script (bash, zsh, fish).")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def command(shell: str) -> int:
    from click.shell_completion import get_completion_class

    from . import COMPLETE_VAR
    root = click.get_current_context().find_root().command      # the kafkalog group
    cls = get_completion_class(shell)
    from ..output import stdout
    stdout().write(cls(root, {}, "kafkalog", COMPLETE_VAR).source() + "\n")
    return 0
