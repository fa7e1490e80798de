"""``kafkalog consumer-groups``: committed offsets from ``__consumer_offsets``, as the group coordinator
loads them."""
from __future__ import annotations

import sys

import click

from ..status import Status
from ._targets import Directory
from ._times import Time

HELP = """Show the committed offsets of consumer groups from the __consumer_offsets partitions on disk,
as the group coordinator loads them when it takes a partition over: offset commits in order, a
tombstone removing one, transactional commits applied at their COMMIT marker and dropped at their
ABORT, group metadata loaded (a tombstone deletes the group), then what its first cleanup removes
taken away: offsets past offsets.retention.minutes (7 days by default) after the commit, or after
the group became empty (offsets of topics a stable group subscribes to never expire), and empty
groups left with no offset. LAG is the log end minus the committed offset (negative: the log was
truncated below it).

Kafka 3.x's GroupMetadataManager and 4.x's group coordinator differ on transactional offset
commits and on records they cannot read; kafkalog applies the rules of the release that wrote the
log directory (meta.properties, its KRaft metadata; else 4.x's, said) or of --kafka-version.

PATH may be a log directory, several, a folder holding log directories further down (one
broker's disk with several log.dirs, several brokers' disks, a backup), or __consumer_offsets-N
directories; of several copies of a partition (replicas on several brokers' disks) the one with
the highest high watermark is read, and the report says so. A group lives on partition abs(hashCode(group)) %
offsets.topic.num.partitions (taken from the KRaft metadata of the log directory, else
--server-properties, else Kafka's default 50); with --group, kafkalog says which partition that
is and whether it is on this disk.

--format csv writes the file kafka-consumer-groups.sh --reset-offsets --from-file reads, to
restore the groups' positions on another cluster (one --group: topic,partition,offset; otherwise
group,topic,partition,offset, used with --all-groups or the same --group options there):

\b
  kafkalog consumer-groups --group billing --format csv DIR > billing.csv
  kafka-consumer-groups.sh --bootstrap-server HOST:9092 --group billing \\
      --reset-offsets --from-file billing.csv --execute

\b
Examples:
  kafkalog consumer-groups /var/lib/kafka/data
  kafkalog consumer-groups --group billing --now 2024-03-01T00:00:00 \\
    /backups/broker-1
  kafkalog consumer-groups --format json DIR \\
    | jq 'select(.type=="offset")'

\b
Exit status:
  0  read
  1  a __consumer_offsets record or file could not be read (a broker
     cannot load that partition), a --group was not found, a row could
     not be written to the CSV, or no __consumer_offsets partition was found
  2  usage error
  3  could not run (the report cannot be written)
"""


@click.command("consumer-groups", help=HELP,
               short_help="Committed offsets of consumer groups, from __consumer_offsets.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                type=Directory())
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="Only this group (repeatable).")
@click.option("--details", "-v", is_flag=True,
              help="Every value of every group, one per line: members, subscribed topics, and each offset's "
                   "leader epoch, metadata, commit and expiry times and where it is in __consumer_offsets.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True,
              help="text: a table per group (kafka-consumer-groups.sh --describe --offsets); json: one object "
                   "per group, offset and note; csv: the --reset-offsets --from-file file.")
@click.option("--include-expired", is_flag=True,
              help="Keep the offsets the coordinator's first expiration run would remove (also in the CSV).")
@click.option("--now", "now_text", type=Time(), default=None, metavar="TIME",
              help="The time expiration is judged at (epoch ms or ISO-8601; default: now).")
@click.option("--offsets-retention-ms", type=click.IntRange(min=1), default=None, metavar="MS",
              help="The broker's offsets retention (default: offsets.retention.minutes from "
                   "--server-properties, else 7 days).")
@click.option("--offsets-partitions", type=click.IntRange(min=1), default=None, metavar="N",
              help="offsets.topic.num.partitions, for the partition a group lives on (default: from the KRaft "
                   "metadata, --server-properties, else 50).")
@click.option("--server-properties", type=click.Path(exists=True, dir_okay=False), default=None, metavar="FILE",
              help="The broker's server.properties (offsets.retention.minutes, offsets.topic.num.partitions), "
                   "validated as Kafka validates it.")
@click.option("--kafka-version", default=None, metavar="VERSION",
              help="The Kafka release whose group coordinator rules apply (3.x: GroupMetadataManager; 4.x: "
                   "group-coordinator). Default: the release that wrote the log directory, from meta.properties "
                   "and the KRaft metadata.")
def command(paths, groups, fmt, details, include_expired, now_text, offsets_retention_ms, offsets_partitions,
            server_properties, kafka_version) -> int:
    from ..engine.groups_view import groups_view
    from ._views import kafka_version_option, parse_now, view_config_error

    now = parse_now(now_text)
    if fmt == "csv":
        bad = [g for g in groups if "\n" in g or "\r" in g]
        if bad:
            raise click.UsageError("a group id with a line break cannot be written to the CSV file "
                                   "kafka-consumer-groups.sh reads (it splits the file at line breaks)")
    kafka_version = kafka_version_option(kafka_version)
    with view_config_error():
        view = groups_view(paths, groups=groups, now=now, server_properties=server_properties,
                           offsets_retention_ms=offsets_retention_ms, offsets_partitions=offsets_partitions,
                           kafka_version=kafka_version)
    problems = _render(fmt, view, one_group=len(groups) == 1, include_expired=include_expired, now=now,
                       details=details)
    return Status.PROBLEMS if view.problems or problems else Status.OK


def _render(fmt: str, view, *, one_group: bool, include_expired: bool, now: int, details: bool) -> bool:
    """The report: kafka-consumer-groups.sh's CSV (notes on stderr), JSON lines, or text. True when a row
    could not be written to the CSV."""
    from ..output import stdout
    from ..render import groups_report as rr
    out = stdout()
    if fmt == "csv":
        rows = [co for g in view.groups for co in rr.shown_offsets(g, include_expired)]
        from ._views import text_width
        lines, left_out = rr.csv_lines(rows, one_group, terminal=text_width() is not None)
        out.write("".join(lines))
        for co in left_out:
            view.notes.append(f"group {co.group}, {co.topic}-{co.partition}: not written to the CSV file (a line "
                              "break in its group id or topic: kafka-consumer-groups.sh splits the file at line "
                              "breaks and would read something else)")
        from ..names import shown
        for n in view.notes:
            sys.stderr.write(f"kafkalog: {shown(n)}\n")
        return bool(left_out)
    if fmt == "json":
        from ..render.json_line import dumps_shown
        rr.write_json(lambda o: out.write(dumps_shown(o) + "\n"), view, include_expired=include_expired,
                      now=now)
    else:
        from ._views import text_width
        rr.write_text(out, view, include_expired=include_expired, now=now, width=text_width(),
                      details=details)
    return False
