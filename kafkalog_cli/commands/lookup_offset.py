"""``kafkalog lookup-offset``: find a record by offset the way the broker does, showing each step."""
from __future__ import annotations

import click

from ._targets import Directory
from .lookup_common import DECODING, EXIT, PARTITION, check_partition_dir, lookup_options, run_lookup

HELP = f"""Find the record at OFFSET in a partition directory exactly as a Kafka broker does, and show how.

The steps: the segment whose base offset is the greatest at or below OFFSET; the offset relative to it;
the last offset-index entry at or below it (none: start at position 0); a forward scan of the .log from
that position to the first batch whose last offset reaches OFFSET; the record. An offset removed by
compaction gives the next offset present. Index files are searched in place (binary search on the
mapped file), so a lookup reads only a few pages even of a 1 GiB segment.

\b
Examples:
  kafkalog lookup-offset /var/lib/kafka/data/orders-0 123456
  kafkalog lookup-offset --print-data-log --value-decoder json orders-0 5
  kafkalog lookup-offset --format json orders-0 42 | jq .record

{PARTITION}

{DECODING}

{EXIT}
"""


@click.command("lookup-offset", help=HELP, short_help="Find a record by offset, showing the broker's steps.")
@click.argument("partition_dir", metavar="PARTITION_DIR", type=Directory())
@click.argument("offset", type=click.IntRange(min=0))
@lookup_options
def command(partition_dir, offset, print_data_log, fmt, **decoders) -> int:
    from ..engine.lookup import lookup_offset
    check_partition_dir(partition_dir, str(offset), "lookup-offset")
    return run_lookup("offset", lookup_offset, partition_dir, offset, print_data_log, fmt, decoders)
