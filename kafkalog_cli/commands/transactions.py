"""``kafkalog transactions``: open and hanging transactions per partition, and the transaction coordinator's
state, from the files alone."""
from __future__ import annotations

import click

from ..status import Status
from ._targets import Directory
from ._times import Time

HELP = """Show the transactions open in each partition (producer id and epoch, coordinator epoch, first
offset, age, how far they hold the last stable offset back), checked against the transaction
coordinator's state in __transaction_state when its partitions are on the same disk, as
kafka-transactions.sh find-hanging checks them against a live cluster: a transaction open for
longer than --max-transaction-timeout whose producer id the coordinator does not know, or whose
transaction no longer includes the partition, is hanging. It holds read_committed consumers back
until kafka-transactions.sh abort writes its ABORT marker; for each one the command to run is
printed (brokers 3.0 and newer need --start-offset; older ones the producer id, epoch and
coordinator epoch, also printed).

With --list, the transactional ids the coordinator holds (kafka-transactions.sh list and
describe): state, producer id and epoch, timeout, start time and partitions.

PATH may be a log directory, a partition directory, several, or a folder holding log directories
further down (one broker's disk with several log.dirs, several brokers' disks, a backup); of several
copies of a __transaction_state partition the one with the highest high watermark is read.
Read-only: nothing is written.

\b
Examples:
  kafkalog transactions /var/lib/kafka/data
  kafkalog transactions --list /var/lib/kafka/data
  kafkalog transactions --format json /var/lib/kafka/data \\
    | jq 'select(.status=="hanging")'

\b
Exit status:
  0  no hanging transaction
  1  a transaction is hanging, something could not be read, or no
     partition was found
  2  usage error
  3  could not run (the report cannot be written)
"""


@click.command("transactions", help=HELP,
               short_help="Open and hanging transactions, checked with __transaction_state.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                type=Directory())
@click.option("--list", "list_ids", is_flag=True,
              help="Also list the transactional ids in __transaction_state (kafka-transactions.sh list/describe).")
@click.option("--max-transaction-timeout", "max_minutes", type=click.IntRange(min=0), default=15,
              show_default=True, metavar="MINUTES",
              help="A transaction open for longer than this is checked with the coordinator's state "
                   "(find-hanging's option).")
@click.option("--now", "now_text", type=Time(), default=None, metavar="TIME",
              help="The time ages are judged at (epoch ms or ISO-8601; default: now).")
@click.option("--server-properties", type=click.Path(exists=True, dir_okay=False), default=None, metavar="FILE",
              help="The broker's server.properties (transaction.state.log.num.partitions; default: from the "
                   "KRaft metadata, else 50).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a table (whole names) and the abort commands; json: one object per open "
                   "transaction, transactional id and note.")
@click.option("--kafka-version", default=None, metavar="VERSION",
              help="The Kafka release whose transaction coordinator rules apply (3.x stops loading a "
                   "__transaction_state partition at a value of unknown version, 4.x skips it). Default: the "
                   "release that wrote the log directory, from meta.properties and the KRaft metadata.")
def command(paths, list_ids, max_minutes, now_text, server_properties, fmt, kafka_version) -> int:
    from ..engine.transactions import transactions_view
    from ..render import txn_report as rr
    from ._views import kafka_version_option, parse_now, progress_bar, view_config_error

    now = parse_now(now_text)
    kafka_version = kafka_version_option(kafka_version)
    with progress_bar("reading producer state") as tick, view_config_error():
        view = transactions_view(paths, now=now, max_timeout_ms=max_minutes * 60_000,
                                 server_properties=server_properties, progress=tick, kafka_version=kafka_version)
    from ..output import stdout
    out = stdout()
    if fmt == "json":
        from ..render.json_line import dumps_shown
        rr.write_json(lambda o: out.write(dumps_shown(o) + "\n"), view.findings, view.coordinator,
                      view.notes, list_ids)
    else:
        from ._views import text_width
        rr.write_text(out, view.findings, view.coordinator, view.notes, list_ids, now, view.partitions,
                      width=text_width())
    return Status.PROBLEMS if (view.hanging or view.problems) else Status.OK
