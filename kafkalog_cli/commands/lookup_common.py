"""Options and output shared by ``lookup-offset`` and ``lookup-time``."""
from __future__ import annotations

import sys

import click

from ..status import Status
from ._decode import decode_limit_option

DECODERS = click.Choice(["string", "hex", "base64", "json", "none"])

EXIT = """\b
Exit status: 0 found; 1 not found (out of range, nothing at or after the timestamp);
2 usage error; 3 could not run (no segment files, unreadable files)."""


def lookup_options(f):
    for opt in reversed([
        click.option("--print-data-log", is_flag=True, help="Also print the record's key and value."),
        click.option("--key-decoder", type=DECODERS, default=None,
                     help="How to print the key (default string). Implies --print-data-log."),
        click.option("--value-decoder", type=DECODERS, default=None,
                     help="How to print the value and header values (default string). Implies --print-data-log."),
        click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                     help="text: one line per step; json: one object with the steps, batch and record."),
    ]):
        f = opt(f)
    return decode_limit_option(f)


def run_lookup(by: str, fn, directory: str, target: int, print_data_log: bool, key_decoder, value_decoder,
               fmt: str) -> int:
    from ..engine.lookup import LookupError_
    from ..render import lookup_report
    print_data = print_data_log or key_decoder is not None or value_decoder is not None
    kd, vd = key_decoder or "string", value_decoder or "string"
    try:
        res = fn(directory, target)
    except LookupError_ as e:
        if fmt == "json":
            import json
            sys.stdout.write(json.dumps({"type": "lookup", "by": by, "target": target, "error": e.kind,
                                         "message": str(e)}) + "\n")
        else:
            sys.stderr.write(f"kafkalog: {directory}: {e}\n")
        return Status.CANNOT_RUN if e.kind == "no_segments" else Status.PROBLEMS
    try:
        if fmt == "json":
            from ..render.jsonl import JsonRenderer
            lookup_report.write_json(sys.stdout, res, by, JsonRenderer(sys.stdout, kd, vd, print_data))
        else:
            from ..render.kafka_text import TextRenderer
            lookup_report.write_text(sys.stdout, res, by, TextRenderer(sys.stdout, sys.stderr, kd, vd, print_data))
    finally:
        res.close()
    return Status.OK
