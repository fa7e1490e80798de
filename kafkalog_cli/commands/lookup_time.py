"""``kafkalog lookup-time``: find the first record at or after a timestamp, the broker's way."""
from __future__ import annotations

import click

from ._targets import Directory
from ._times import Time
from .lookup_common import DECODING, EXIT, PARTITION, check_partition_dir, lookup_options, run_lookup

HELP = f"""Find the first record whose timestamp is at or after TIMESTAMP, as a Kafka broker answers
ListOffsets, and show how.

TIMESTAMP is epoch milliseconds, an ISO-8601 time (UTC unless it says otherwise), or one of Kafka's
special values: earliest (-2, the log start offset), latest (-1, the log end offset), max-timestamp (-3,
the record with the largest timestamp). Other negative values are refused (-4 earliest-local and -5
latest-tiered ask about tiered storage, which local files cannot answer).

The steps: the first segment whose largest timestamp (its last time-index entry, or the .log file's
modification time when the time index has none; for a segment the broker recovers when it starts, as
after a crash without .kafka_cleanshutdown, its batches' greatest timestamp, as the rebuilt index gives
it) reaches TIMESTAMP; the last time-index entry at or below TIMESTAMP; the offset-index entry for that offset; a scan from there for the first record with
a timestamp at or after TIMESTAMP. Like Kafka, only that one segment is searched.

\b
Examples:
  kafkalog lookup-time /var/lib/kafka/data/orders-0 2024-03-01T12:00:00Z
  kafkalog lookup-time orders-0 1709294400000 --print-data-log
  kafkalog lookup-time orders-0 max-timestamp --format json

{PARTITION}

{DECODING}

{EXIT}
"""


@click.command("lookup-time", help=HELP, short_help="Find the first record at or after a timestamp.",
               context_settings={"ignore_unknown_options": True})      # so that -1/-2/-3 are values
@click.argument("partition_dir", metavar="PARTITION_DIR", type=Directory())
@click.argument("timestamp", type=Time(specials=True), metavar="TIMESTAMP")
@lookup_options
def command(partition_dir, timestamp, print_data_log, fmt, **decoders) -> int:
    from ..engine.lookup import lookup_time
    check_partition_dir(partition_dir, str(timestamp), "lookup-time")
    return run_lookup("timestamp", lookup_time, partition_dir, timestamp, print_data_log, fmt, decoders)
