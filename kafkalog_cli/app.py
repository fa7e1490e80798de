"""The ``kafkalog`` command: a click group that imports each subcommand only when it runs."""
from __future__ import annotations

import importlib
import sys

import click

from . import __version__

# name -> (module, short help); modules are imported lazily so `kafkalog --help` starts fast.
COMMANDS = {
    "compact": ("kafkalog_cli.commands.compact", "Compact a partition with Kafka's log cleaner rules."),
    "dump-log": ("kafkalog_cli.commands.dump_log", "Print the contents of segment, index and snapshot files."),
    "export": ("kafkalog_cli.commands.export", "Export records to Parquet or JSON lines with Spark."),
    "lookup-offset": ("kafkalog_cli.commands.lookup_offset", "Find a record by offset, showing the broker's steps."),
    "lookup-time": ("kafkalog_cli.commands.lookup_time", "Find the first record at or after a timestamp."),
    "recover": ("kafkalog_cli.commands.recover", "Repair a log directory after an unclean shutdown (crash-safe)."),
    "scan": ("kafkalog_cli.commands.scan", "Verify many log directories on Spark; findings as a table."),
    "retain": ("kafkalog_cli.commands.retain", "Delete old segments by Kafka's retention rules."),
    "verify": ("kafkalog_cli.commands.verify", "Check segments, indexes and checkpoints for corruption."),
}

EPILOG = """\b
Exit status (every command):
  0  all good
  1  problems found (or repairs made / planned)
  2  usage error
  3  could not run (lock held, I/O error, input that cannot be decoded: one line
     names the file, byte position and offset)
"""


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        return importlib.import_module(COMMANDS[name][0]).command

    def format_commands(self, ctx, formatter):
        rows = [(n, COMMANDS[n][1]) for n in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"],
                                                              "max_content_width": 100})
@click.version_option(__version__, prog_name="kafkalog")
def cli() -> None:
    """Read, verify and repair Apache Kafka log directories offline, straight from the files on disk.

    Stop the broker before running a command that changes files (recover, retain, compact): they take the
    log directory's .lock as the broker does and refuse to run while it is held. Each has --dry-run.

    \b
    Typical tasks:
      look inside a segment        kafkalog dump-log --print-data-log DIR/orders-0
      prove a directory is intact  kafkalog verify --format junit -o verify.xml DIR
      find a record                kafkalog lookup-offset DIR/orders-0 12345
      repair after a crash         kafkalog recover --dry-run DIR, then with --backup-dir
      retention / compaction       kafkalog retain --dry-run --retention-ms 604800000 DIR
      many log directories         kafkalog scan /backups  (Spark)

    Run "kafkalog COMMAND --help" for a command's options; man pages are in the man/ directory.
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the command, map its result and errors to the documented exit statuses."""
    from .status import Status
    limits = sys.modules.get("kafkalog_formats.limits")
    if limits is not None:                     # an earlier in-process run may have changed the bound
        limits.set_max_decompressed_bytes(None)
    try:
        rv = cli.main(args=argv, prog_name="kafkalog", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(Status.USAGE if isinstance(e, click.UsageError) else e.exit_code)
    except click.exceptions.Abort:
        sys.stderr.write("Aborted.\n")
        sys.exit(Status.CANNOT_RUN)
    except BrokenPipeError:
        _quiet_broken_pipe()
        sys.exit(Status.OK)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        sys.stderr.write(f"kafkalog: {where}{e.strerror or e}\n")
        sys.exit(Status.CANNOT_RUN)
    except _corrupt_input() as e:
        sys.stderr.write(f"kafkalog: {_one_line(e)}\n")
        sys.exit(Status.CANNOT_RUN)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    sys.exit(int(rv) if isinstance(rv, int) else Status.OK)


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
    import os
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
