"""Options and output shared by ``lookup-offset`` and ``lookup-time``."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..status import Status
from ._decoders import decoder_options, resolve_decoders
from ._decode import decode_limit_option

PARTITION = """PARTITION_DIR is one partition directory, as a broker answers for one partition: a log
directory, or a folder holding log directories, is refused with partition directories to give."""

EXIT = """\b
Exit status:
  0  found
  1  not found (out of range, nothing at or after the timestamp) or the
     record does not decode
  2  usage error (also a log directory instead of one of its partitions)
  3  could not run (no segment files, unreadable files, or damaged bytes
     where the offset would be: the file, byte position and reason are
     named, as verify reports them)"""

DECODING = """Records print with dump-log's decoders: by default --decoder auto, so a record of an internal
topic (__consumer_offsets, __transaction_state, __cluster_metadata, ...) shows decoded, others as
UTF-8 text; --key-decoder/--value-decoder, Kafka's --key-decoder-class/--value-decoder-class and its
--offsets-decoder-style flags choose otherwise, as in dump-log."""


def lookup_options(f):
    f = decoder_options(auto_default=True)(f)
    for opt in reversed([
        click.option("--print-data-log", is_flag=True, help="Also print the record's key and value."),
        click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                     help="text: one line per step; json: one object with the steps, batch and record."),
    ]):
        f = opt(f)
    return decode_limit_option(f)


def check_partition_dir(directory: str, target: str, command: str) -> None:
    """The lookups answer in one partition, as the broker does: a log directory, or a folder holding log
    directories, given instead is a usage error naming partition directories to use (as ``recover`` does
    the other way round); a directory that cannot be read: the lookup could not run."""
    from ..engine.targets import resolve
    targets = resolve([directory])
    if targets.kinds[directory] == "partition":
        return
    for n in targets.notes:
        if n.unreadable:
            raise n.cannot_run()
    names = sorted({str(p.path) if targets.kinds[directory] == "folder" else p.path.name
                    for p in targets.partitions if p.topic_partition is not None})
    what = "a log directory" if targets.kinds[directory] == "logdir" else "a folder holding log directories"
    if not names:
        raise click.UsageError(f"{directory} is {what} with no partition directory in it; give a partition "
                               "directory (topic-N)")
    first = next((n for n in names if not n.rsplit("/", 1)[-1].startswith("__")), names[0])
    example = first if targets.kinds[directory] == "folder" else str(Path(directory) / first)
    more = f", and {len(names) - 5} more" if len(names) > 5 else ""
    raise click.UsageError(f"{directory} is {what}; give one of its partition directories, e.g. "
                           f"kafkalog {command} {example} {target}\n(partitions here: "
                           f"{', '.join(names[:5])}{more})")


def run_lookup(by: str, fn, directory: str, target: int, print_data_log: bool, fmt: str, decoders: dict) -> int:
    from kafkalog_formats.errors import FormatError
    from ..engine.lookup import LookupFailed
    from ..errors import Reported
    from ..output import stdout
    from ..render import lookup_report
    decoding = resolve_decoders(decoders, auto_default=True)
    print_data = print_data_log or decoding.implies_print
    kd, vd, rd = decoding.key_decoder, decoding.value_decoder, decoding.record_decoding
    try:
        res = fn(directory, target)
    except FormatError as e:
        if fmt != "json":
            raise                     # one line "kafkalog: cannot read: FILE: byte N: reason", exit 3
        from ..names import json_safe
        from ..render.json_line import dumps_shown
        stdout().write(dumps_shown(json_safe({"type": "lookup", "by": by, "target": target, "error": e.kind,
                                              "file": e.file, "position": e.position, "message": e.reason}))
                       + "\n")
        raise Reported(Status.CANNOT_RUN) from None
    except LookupFailed as e:
        if fmt == "json":
            from ..names import json_safe
            from ..render.json_line import dumps_shown
            stdout().write(dumps_shown(json_safe({"type": "lookup", "by": by, "target": target, "error": e.kind,
                                                  "message": str(e)})) + "\n")
            raise Reported(e.status) from None
        from ..names import shown     # the directory looked in, as a terminal may show it
        raise LookupFailed(shown(f"{directory}: {e}"), e.kind) from None
    out = stdout()
    try:
        if fmt == "json":
            from ..render.jsonl import JsonRenderer
            renderer = JsonRenderer(out, kd, vd, print_data, record_decoding=rd)
            lookup_report.write_json(out, res, by, renderer)
        else:
            from ..render.kafka_text import TextRenderer
            renderer = TextRenderer(out, sys.stderr, kd, vd, print_data, record_decoding=rd)
            lookup_report.write_text(out, res, by, renderer)
    finally:
        res.close()
    return Status.PROBLEMS if renderer.problems else Status.OK
