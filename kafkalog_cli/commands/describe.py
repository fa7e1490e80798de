"""``kafkalog describe``: per partition what a live cluster would report, from the files alone."""
from __future__ import annotations

import click

from ..status import Status
from ._targets import Directory
from ._times import Time

HELP = """Show, per partition, what kafka-log-dirs.sh --describe, kafka-get-offsets.sh and
kafka-transactions.sh describe-producers would report of a live broker, from the files alone: size,
segments, log start and log end offsets, high watermark, last stable offset, recovery point, first
and last timestamps, active producers and open transactions, cleaner checkpoint and dirty ratio
(compacted topics), topic id and the source of the topic's cleanup.policy. Then a summary per topic.

PATH may be a log directory, a partition directory, several, or a folder holding log directories
further down (one broker's disk with several log.dirs, several brokers' disks, a backup). Each value is the one the broker has once it has loaded the log: the high watermark is
replication-offset-checkpoint's clamped to the log, the last stable offset the first offset of the
earliest open transaction (else the high watermark), producers are loaded from the latest
producer snapshot and the batches after it, those idle for producer.id.expiration.ms (1 day)
without an open transaction dropped, as the broker drops them. Read-only: nothing is written.

\b
Examples:
  kafkalog describe /var/lib/kafka/data
  kafkalog describe --details /var/lib/kafka/data/orders-0
  kafkalog describe --topics /backups
  kafkalog describe --format json /var/lib/kafka/data \\
    | jq 'select(.type=="partition")'

\b
Exit status:
  0  described
  1  something could not be read (damaged bytes, an unreadable
     checkpoint: see the notes) or no partition was found
  2  usage error
  3  could not run (the report cannot be written)
"""


@click.command("describe", help=HELP, short_help="Show each partition's offsets, size, producers and state.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                type=Directory())
@click.option("--details", "-v", is_flag=True, help="Every value of every partition, one per line.")
@click.option("--topics", "topics_only", is_flag=True, help="Only the summary per topic (text output).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a table (whole names when piped; at a terminal, long names continue on the next "
                   "line) and the per-topic summary; json: one object per partition, "
                   "per topic and per note (see kafkalog-describe(1)).")
@click.option("--now", "now_text", type=Time(), default=None, metavar="TIME",
              help="The time producer expiration and transaction ages are judged at (epoch ms or ISO-8601; "
                   "default: now).")
def command(paths, details, topics_only, fmt, now_text) -> int:
    from ..engine.describe import describe_paths, topic_summary
    from ..render import describe_report as rr
    from ._views import parse_now, progress_bar

    now = parse_now(now_text)
    with progress_bar("describing") as tick:
        parts, notes = describe_paths(list(paths), now, tick)
    topics = topic_summary(parts)
    from ..output import stdout
    out = stdout()
    if fmt == "json":
        from ..render.json_line import dumps_shown
        rr.write_json(out, parts, topics, notes, lambda o: out.write(dumps_shown(o) + "\n"))
    else:
        from ._views import text_width
        rr.write_text(out, parts, topics, notes, details=details, topics_only=topics_only, now=now,
                      width=text_width())
    problems = not parts or bool(notes) or any(d.problems for d in parts)
    return Status.PROBLEMS if problems else Status.OK
