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

max-timestamp's answer depends on the release (KAFKA-16310): from Kafka 3.8 the first record holding the
largest timestamp; in 3.0-3.7 the offset the segment with the largest timestamp recorded for it (its
last time-index entry, or for a segment the broker recovers at start its first batch reaching that
timestamp), which for the batches 3.7 writes is the batch's last offset. The release is the one
--kafka-version names, else the one that wrote the log directory when its KRaft metadata says (the
metadata.version level its broker registered: 19 or below is 3.7 or older), else 3.8's (a ZooKeeper-mode
directory does not say); the steps say which rule was used and why.

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
@click.option("--kafka-version", default=None, metavar="VERSION",
              help="The Kafka release (3.0 or newer) whose max-timestamp (-3) answer to give: 3.0-3.7's (the offset recorded for "
                   "the largest timestamp, a batch's last offset) or 3.8+'s (the first record holding it). "
                   "Default: the release that wrote the log directory, from its KRaft metadata, else 3.8+'s.")
@lookup_options
def command(partition_dir, timestamp, kafka_version, print_data_log, fmt, **decoders) -> int:
    from ..engine.coordinator_version import parse_kafka_version
    from ..engine.lookup import MAX_TIMESTAMP, lookup_time
    from ._views import kafka_version_option
    kafka_version = kafka_version_option(kafka_version)
    check_partition_dir(partition_dir, str(timestamp), "lookup-time")
    if timestamp == MAX_TIMESTAMP and kafka_version is not None and parse_kafka_version(kafka_version) < (3, 0):
        raise click.BadParameter(f"Kafka {kafka_version} has no max-timestamp (-3) lookup: ListOffsets gained it "
                                 "in 3.0 (KIP-734)", param_hint="'--kafka-version'")
    rule = _max_timestamp_rule(partition_dir, kafka_version) if timestamp == MAX_TIMESTAMP else None
    return run_lookup("timestamp", lambda d, t: lookup_time(d, t, rule), partition_dir, timestamp, print_data_log,
                      fmt, decoders)


def _max_timestamp_rule(partition_dir: str, kafka_version: str | None):
    """The release whose max-timestamp answer is given: --kafka-version, else the one that wrote the log
    directory (``coordinator_version.max_timestamp_rule``)."""
    from pathlib import Path

    from ..engine.coordinator_version import forced_max_timestamp_rule, max_timestamp_rule
    from ..engine.targets import logdir_of
    if kafka_version is not None:
        return forced_max_timestamp_rule(kafka_version)
    return max_timestamp_rule(logdir_of(Path(partition_dir)))
