"""``kafkalog lookup-time``: find the first record at or after a timestamp, the broker's way."""
from __future__ import annotations

import click

from .lookup_common import DECODING, EXIT, PARTITION, check_partition_dir, lookup_options, run_lookup

HELP = f"""Find the first record whose timestamp is at or after TIMESTAMP, as a Kafka broker answers
ListOffsets, and show how.

TIMESTAMP is epoch milliseconds, an ISO-8601 time (UTC unless it says otherwise), or one of Kafka's
special values: earliest (-2, the log start offset), latest (-1, the log end offset), max-timestamp (-3,
the record with the largest timestamp). Other negative values are refused (-4 earliest-local and -5
latest-tiered ask about tiered storage, which local files cannot answer).

The steps: the first segment whose largest timestamp (its last time-index entry, or the .log file's
modification time when the time index has none) reaches TIMESTAMP; the last time-index entry at or
below TIMESTAMP; the offset-index entry for that offset; a scan from there for the first record with
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


class _Timestamp(click.ParamType):
    name = "TIMESTAMP"

    def convert(self, value, param, ctx):
        from ..engine.lookup import EARLIEST, LATEST, MAX_TIMESTAMP, parse_timestamp
        if isinstance(value, int):
            return value
        try:
            ts = parse_timestamp(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if ts < 0 and ts not in (EARLIEST, LATEST, MAX_TIMESTAMP):
            self.fail(negative_message(value, ts), param, ctx)
        return ts


#: ListOffsetsRequest's special timestamps a broker's local files cannot answer (tiered storage)
TIERED_SPECIALS = {-4: "earliest-local, Kafka 3.5+", -5: "latest-tiered, Kafka 3.9+"}


def negative_message(text: str, ts: int) -> str:
    """Why a negative TIMESTAMP is refused. Kafka's ListOffsetsRequest gives meaning to -1 (latest), -2
    (earliest), -3 (max timestamp, 3.0+), -4 (earliest local, 3.5+) and -5 (latest tiered, 3.9+); other
    negative values are no timestamp at all (a broker would treat them as "before every record")."""
    if not text.strip().lstrip("-").isdigit():
        return (f"'{text}' is before 1970-01-01T00:00:00Z: record timestamps are epoch milliseconds, never "
                "negative")
    why = (f"{ts} ({TIERED_SPECIALS[ts]}) asks where tiered storage begins or ends, which the broker's local "
           "files cannot tell" if ts in TIERED_SPECIALS else f"{ts} is not a timestamp")
    return (f"{why}: a negative TIMESTAMP must be one of Kafka's special values -2 (earliest), -1 (latest) or "
            "-3 (max-timestamp)")


@click.command("lookup-time", help=HELP, short_help="Find the first record at or after a timestamp.",
               context_settings={"ignore_unknown_options": True})      # so that -1/-2/-3 are values
@click.argument("partition_dir", metavar="PARTITION_DIR", type=click.Path(exists=True, readable=False, file_okay=False))
@click.argument("timestamp", type=_Timestamp())
@lookup_options
def command(partition_dir, timestamp, print_data_log, fmt, **decoders) -> int:
    from ..engine.lookup import lookup_time
    check_partition_dir(partition_dir, str(timestamp), "lookup-time")
    return run_lookup("timestamp", lookup_time, partition_dir, timestamp, print_data_log, fmt, decoders)
