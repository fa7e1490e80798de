"""The ``kafkalog`` command: a click group that imports each subcommand only when it runs."""
from __future__ import annotations

import importlib
import sys

import click

from . import output
from .commands import COMMANDS, COMPLETE_VAR, show_version
from .errors import KafkalogError, Reported, UsageProblem
from .status import Status


# commands that change files: an interrupted run is completed (or rolled back) by a rerun or `recover`
WRITERS = {"compact", "delete-records", "recover", "retain"}

EPILOG = """\b
Exit status (every command):
  0    all good
  1    problems found (recover: or repairs made / planned; retain and
       compact: only problems, never the data they removed as configured)
  2    usage error (also an -o/--output in a Kafka directory or inside a
       path the command reads: nothing is written)
  3    could not run (lock held, I/O error, input that cannot be decoded:
       one line names the file, byte position and offset; a report that
       cannot be written whole: a full disk on stdout or -o)
  130  interrupted (Ctrl-C)
  141  standard output closed early (e.g. piped into head)
"""


HELP_WIDTH = 80             # --help never wider than 80 columns, whatever the terminal
_HYPHEN = "\ue000"          # stands for "-" while click wraps (a private-use character: never in our text)


class HelpFormatter(click.HelpFormatter):
    """click's formatter, except that a line is never broken at a hyphen: textwrap splits
    ``--log-start-offset`` into ``--log-start-`` and ``offset``, which a reader cannot type."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(prog.replace("-", _HYPHEN), args.replace("-", _HYPHEN), prefix)

    def write_text(self, text: str) -> None:
        super().write_text(text.replace("-", _HYPHEN))

    def write_dl(self, rows, col_max: int = 30, col_spacing: int = 2) -> None:
        super().write_dl([(a.replace("-", _HYPHEN), b.replace("-", _HYPHEN)) for a, b in rows], col_max,
                         col_spacing)

    def getvalue(self) -> str:
        return super().getvalue().replace(_HYPHEN, "-")


class Context(click.Context):
    formatter_class = HelpFormatter

    def invoke(self, callback, /, *args, **kwargs):
        """Run a command: a ``UsageProblem`` it raises (an offsets file that is not JSON, an output that
        exists) is shown as click shows its own usage errors, with this command's usage line, exit status 2."""
        try:
            return super().invoke(callback, *args, **kwargs)
        except UsageProblem as e:
            raise click.UsageError(str(e), ctx=self) from None


class LazyGroup(click.Group):
    context_class = Context

    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        command = importlib.import_module(COMMANDS[name][0]).command
        command.context_class = Context
        return command

    def format_commands(self, ctx, formatter):
        rows = [(n, COMMANDS[n][1]) for n in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"],
                                                              "max_content_width": HELP_WIDTH})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=show_version,
              help="Show the version and exit.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress bars and no informational lines on stderr (errors still print).")
@click.option("--no-progress", is_flag=True, help="No progress bars (also off when stderr is not a terminal).")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour in terminal output; auto honours NO_COLOR and FORCE_COLOR.")
def cli(quiet: bool, no_progress: bool, color: str) -> None:
    """Read, verify and repair Apache Kafka log directories offline, straight from the files on disk.

    Stop the broker before running a command that changes files (recover, retain, compact): they take the
    log directory's .lock as the broker does and refuse to run while it is held. Each has --dry-run.

    \b
    Typical tasks:
      look inside a segment   kafkalog dump-log --print-data-log DIR/orders-0
      prove it is intact      kafkalog verify --format junit -o v.xml DIR
      find a record           kafkalog lookup-offset DIR/orders-0 12345
      repair after a crash    kafkalog recover --dry-run DIR
                              (then again with --backup-dir BACKUP)
      retention               kafkalog retain --dry-run --all DIR
      compaction              kafkalog compact --dry-run --all DIR
      many log directories    kafkalog scan /backups  (Spark)

    Run "kafkalog COMMAND --help" for a command's options and "kafkalog man COMMAND" (or
    "man kafkalog-COMMAND") for its manual. Shell completion: "kafkalog completion --help".
    """
    from . import ui
    ui.configure(quiet=quiet, progress=not no_progress, color=color)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the command, map its result and errors to the documented exit statuses.

    Click's own ``main`` is bypassed on purpose: it turns Ctrl-C into "Aborted." and a closed pipe
    into exit status 1, both of which would read as "problems found".
    """
    import os
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")      # numpy's BLAS threads would spin for nothing: kafkalog does no linear algebra
    limits = sys.modules.get("kafkalog_formats.limits")
    if limits is not None:                     # an earlier in-process run may have changed the bound
        limits.set_max_decompressed_bytes(None)
    mapped = sys.modules.get("kafkalog_cli.engine.mapped")
    if mapped is not None:                     # files read once per run: not remembered across runs
        mapped.forget_parsed()
    teardown = sys.modules.get("kafkalog_cli.teardown")
    if teardown is not None:                   # an earlier in-process run's Spark session is not this run's
        teardown.reset()
    args = sys.argv[1:] if argv is None else list(argv)
    if os.environ.get(COMPLETE_VAR):
        from click.shell_completion import shell_complete
        sys.exit(shell_complete(cli, {}, "kafkalog", COMPLETE_VAR, os.environ[COMPLETE_VAR]))
    command = next((a for a in args if a in COMMANDS), None)
    output.begin()
    try:
        with cli.make_context("kafkalog", args) as ctx:
            rv = cli.invoke(ctx)
        output.finish()
    except click.exceptions.Exit as e:
        _exit(e.exit_code)
    except click.ClickException as e:
        lost = _flush_quietly()
        e.message = _shown_lines(e.message)     # a name or path it quotes may hold bytes that are not UTF-8
        e.show()
        _exit(Status.USAGE if isinstance(e, click.UsageError) else e.exit_code, lost)
    except (KeyboardInterrupt, click.exceptions.Abort):
        _interrupted(command)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except OSError as e:          # also the KafkalogErrors that are OSErrors (a held lock, a FIFO)
        _failed(e)
    except KafkalogError as e:
        _failed(e)
    except _corrupt_input() as e:
        _failed(e)
    sys.exit(int(rv) if isinstance(rv, int) else Status.OK)


def _interrupted(command: str | None) -> None:
    """Ctrl-C: one line, exit 130 (128 + SIGINT, the shell's convention). What the report had not written
    yet is dropped: exit must not block on a full pipe, nor write after the line. A command that had
    completed its work (``output.work_done``) was not interrupted: only its report was, so the run ends with
    the status of its work and says so."""
    done = output.done_status()
    output.abandon()
    status, what = Status.INTERRUPTED, "interrupted"
    if done is not None:
        status = done
        what = (f"interrupted while writing the report: {command} had completed its work, every change is made "
                f"(exit status {done}, as without the interrupt; only the report is incomplete)")
    elif command in WRITERS:
        what += ("; every step is crash-safe: run the same command again, it completes or rolls back the "
                 "interrupted work first (as kafkalog recover does)")
    # on a terminal, past the "^C" it echoed; in a pipe or file, no blank line before the one line
    lead = "\n" if sys.stderr.isatty() else ""
    try:
        from .render.wrap import wrap            # within 80 columns, continued two columns in
        sys.stderr.write(lead + "\n".join(wrap(f"kafkalog: {what}", 80, "", "  ")) + "\n")
        sys.stderr.flush()
    except OSError:
        pass
    sys.exit(status)


def _flush_quietly():
    """The report so far, before the line of the error that ended the run: a broken pipe ends the run quietly
    (141); a report that could not be written is returned (``OutputFailed``: its line follows the error's)."""
    problem = output.settle()
    if isinstance(problem, BrokenPipeError):
        _quiet_broken_pipe()
    return problem


def _exit(status: int, lost=None) -> None:
    """Exit with ``status``, or with 3 and one more line when the report could not be written whole."""
    lost = lost if lost is not None else _flush_quietly()
    if lost is not None:
        sys.stderr.write(_shown_lines(f"kafkalog: {lost}") + "\n")
        sys.exit(Status.CANNOT_RUN)
    sys.exit(status)


def _failed(e: BaseException) -> None:
    """The one place an error becomes a line on stderr and an exit status (README, "Exit status")."""
    if isinstance(e, output.OutputFailed):      # the report itself: nothing more of it is written
        output.abandon()
        lost = None
    else:
        lost = _flush_quietly()
    if isinstance(e, OSError):                  # named as the operating system names it: FILE: reason
        from .names import shown
        where = f"{e.filename}: " if e.filename else ""
        sys.stderr.write(shown(f"kafkalog: {where}{e.strerror or e}") + "\n")
        _exit(Status.CANNOT_RUN, lost)
    if isinstance(e, Reported):                 # the report holds it already (a JSON error object)
        _exit(e.status, lost)
    if isinstance(e, KafkalogError):
        sys.stderr.write(_shown_lines(f"kafkalog: {e}") + "\n")
        _exit(e.status, lost)
    from .names import shown                    # input that cannot be decoded, or memory it claimed
    sys.stderr.write(shown(f"kafkalog: {_one_line(e)}") + "\n")
    _exit(Status.CANNOT_RUN, lost)


def _shown_lines(text: str) -> str:
    """``names.shown`` line by line: a message's line breaks stay, anything else unprintable (control
    characters, bytes that are not UTF-8 in a partition or file name) becomes a visible escape."""
    from .names import shown
    return "\n".join(shown(line) for line in str(text).split("\n"))


def _corrupt_input() -> tuple:
    """The exception classes of bad input (evaluated only when an exception reaches the handler)."""
    from kafkalog_formats.errors import FormatError
    return (FormatError, MemoryError)


def _one_line(e: BaseException) -> str:
    """The message of bad input: a FormatError says file, byte position and offset; running out of
    memory names the bound that would have prevented it."""
    if isinstance(e, MemoryError):
        return ("out of memory while decoding (a batch or file claims more than this process may allocate; "
                "see --max-decompressed-bytes)")
    text = str(e).replace("\n", " ")
    return f"cannot read: {text}"


def _quiet_broken_pipe() -> None:
    """The reader of our stdout went away (``| head``): not a problem with the data. Exit quietly with
    141 (128 + SIGPIPE), the status of a Unix tool killed by SIGPIPE (git, grep, cat)."""
    output.silence()
    sys.exit(Status.BROKEN_PIPE)
