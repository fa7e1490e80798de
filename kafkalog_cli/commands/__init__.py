"""Thin click commands: parse options, one engine call, one renderer, return a Status.

The table of commands lives here, below the app (``app.py`` builds the ``kafkalog`` group from it), so
that a command needing the list (``man``) or the version option (``dump-log``) imports nothing above it.
"""
from __future__ import annotations

import click

from .. import __version__

# name -> (module, short help); modules are imported lazily so `kafkalog --help` starts fast.
COMMANDS = {
    "compact": ("kafkalog_cli.commands.compact", "Compact a partition with Kafka's log cleaner rules."),
    "consumer-groups": ("kafkalog_cli.commands.consumer_groups", "Committed offsets of consumer groups, from __consumer_offsets."),
    "delete-records": ("kafkalog_cli.commands.delete_records", "Move log start offsets forward (Kafka's DeleteRecords)."),
    "describe": ("kafkalog_cli.commands.describe", "Show each partition's offsets, size, producers and state."),
    "diff": ("kafkalog_cli.commands.diff", "Show where replicas of a partition diverge and what truncation discards."),
    "dump-log": ("kafkalog_cli.commands.dump_log", "Print the contents of segment, index and snapshot files."),
    "export": ("kafkalog_cli.commands.export", "Export records to Parquet or JSON lines with Spark."),
    "lookup-offset": ("kafkalog_cli.commands.lookup_offset", "Find a record by offset, showing the broker's steps."),
    "lookup-time": ("kafkalog_cli.commands.lookup_time", "Find the first record at or after a timestamp."),
    "recover": ("kafkalog_cli.commands.recover", "Repair a log directory after an unclean shutdown (crash-safe)."),
    "scan": ("kafkalog_cli.commands.scan", "Verify many log directories on Spark; findings as a table."),
    "retain": ("kafkalog_cli.commands.retain", "Delete old segments by Kafka's retention rules."),
    "transactions": ("kafkalog_cli.commands.transactions", "Open and hanging transactions, checked with __transaction_state."),
    "verify": ("kafkalog_cli.commands.verify", "Check segments, indexes and checkpoints for corruption."),
    "man": ("kafkalog_cli.commands.man", "Show the manual of kafkalog or one of its commands."),
    "completion": ("kafkalog_cli.commands.completion", "Print the shell completion script (bash, zsh, fish)."),
}

#: the environment variable click's completion scripts set (``kafkalog completion``)
COMPLETE_VAR = "_KAFKALOG_COMPLETE"


def show_version(ctx: click.Context, _param, value: bool) -> None:
    """``--version``: the version and, for each layer's compiled extension, whether it is active (the record
    path, dump-log's line writers, compact's offset map) or why the pure Python path runs instead."""
    if not value or ctx.resilient_parsing:
        return
    from kafkalog_formats import native
    from ..output import stdout
    from ..render import native_lines
    from ..repair import native_clean
    out = stdout()
    out.write(f"kafkalog, version {__version__} ({native.describe()})\n")
    for what, seam in (("dump-log line writers", native_lines), ("compact offset map", native_clean)):
        out.write(f"{what}: " + ("native C extension" if seam.ext is not None else f"pure Python, {seam.reason}")
                  + "\n")
    ctx.exit()
