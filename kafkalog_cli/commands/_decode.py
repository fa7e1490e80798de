"""``--max-decompressed-bytes``, the one option bounding record decoding, shared by every command that
decodes records (the bound itself lives in ``kafkalog_formats.limits``)."""
from __future__ import annotations

import click


def _set(ctx, param, value):
    from kafkalog_formats.limits import set_max_decompressed_bytes
    set_max_decompressed_bytes(value)
    return value


def decode_limit_option(f):
    """Add ``--max-decompressed-bytes`` (default 128 MiB); it takes effect as soon as it is parsed."""
    return click.option(
        "--max-decompressed-bytes", type=click.IntRange(min=1024), default=128 * 1024 * 1024,
        show_default=True, metavar="BYTES", expose_value=False, is_eager=True, callback=_set,
        help="Largest size a batch's records may decompress to (and largest single record) that is "
             "decoded; a batch above it is reported as a problem with its file, position and offset. "
             "Bounds memory on hostile input; raise it only for genuine huge batches.")(f)


def current_decode_limit() -> int:
    """The bound in force (``--max-decompressed-bytes`` once parsed), to hand to work done elsewhere
    (Spark executors receive it in their options)."""
    from kafkalog_formats.limits import max_decompressed_bytes
    return max_decompressed_bytes()
