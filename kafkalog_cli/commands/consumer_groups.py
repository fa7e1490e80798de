"""``kafkalog consumer-groups``: committed offsets from ``__consumer_offsets``, as the group coordinator
loads them."""
from __future__ import annotations

import sys

import click

from ..status import Status

HELP = """Show the committed offsets of consumer groups from the __consumer_offsets partitions on disk,
as the group coordinator loads them when it takes a partition over: offset commits in order, a
tombstone removing one, transactional commits applied at their COMMIT marker and dropped at their
ABORT, group metadata loaded (a tombstone deletes the group), then the offsets that its first
expiration run removes taken away (offsets.retention.minutes, 7 days by default, after the commit,
or after the group became empty; offsets of topics a stable group subscribes to never expire).

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
  1  a __consumer_offsets record or file could not be read, a --group was
     not found, or no __consumer_offsets partition was found
  2  usage error
  3  could not run (the report cannot be written)
"""


@click.command("consumer-groups", help=HELP,
               short_help="Committed offsets of consumer groups, from __consumer_offsets.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                type=click.Path(exists=True, file_okay=False, dir_okay=True))
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="Only this group (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "csv"]), default="text", show_default=True,
              help="text: a table per group (kafka-consumer-groups.sh --describe --offsets); json: one object "
                   "per group, offset and note; csv: the --reset-offsets --from-file file.")
@click.option("--include-expired", is_flag=True,
              help="Keep the offsets the coordinator's first expiration run would remove (also in the CSV).")
@click.option("--now", "now_text", default=None, metavar="TIME",
              help="The time expiration is judged at (epoch ms or ISO-8601; default: now).")
@click.option("--offsets-retention-ms", type=click.IntRange(min=1), default=None, metavar="MS",
              help="The broker's offsets retention (default: offsets.retention.minutes from "
                   "--server-properties, else 7 days).")
@click.option("--offsets-partitions", type=click.IntRange(min=1), default=None, metavar="N",
              help="offsets.topic.num.partitions, for the partition a group lives on (default: from the KRaft "
                   "metadata, --server-properties, else 50).")
@click.option("--server-properties", type=click.Path(exists=True, dir_okay=False), default=None, metavar="FILE",
              help="The broker's server.properties (offsets.retention.minutes, offsets.topic.num.partitions).")
def command(paths, groups, fmt, include_expired, now_text, offsets_retention_ms, offsets_partitions,
            server_properties) -> int:
    from ..engine.groups_view import groups_view
    from ._views import parse_now, view_config_error

    now = parse_now(now_text)
    if fmt == "csv":
        bad = [g for g in groups if "\n" in g or "\r" in g]
        if bad:
            raise click.UsageError("a group id with a line break cannot be written to the CSV file "
                                   "kafka-consumer-groups.sh reads (it splits the file at line breaks)")
    with view_config_error():
        view = groups_view(paths, groups=groups, now=now, server_properties=server_properties,
                           offsets_retention_ms=offsets_retention_ms, offsets_partitions=offsets_partitions)
    _render(fmt, view, view.groups, one_group=len(groups) == 1, include_expired=include_expired,
            retention=view.retention_ms, now=now)
    return Status.PROBLEMS if view.problems else Status.OK


def _render(fmt: str, view, selected: list, *, one_group: bool, include_expired: bool, retention: int,
            now: int) -> None:
    """The report: kafka-consumer-groups.sh's CSV (notes on stderr), JSON lines, or text."""
    if fmt == "csv":
        from ..render.groups_report import write_csv
        rows = []
        for g in selected:
            shown = list(g.offsets.values()) + (list(g.expired.values()) if include_expired else [])
            rows += sorted(shown, key=lambda c: (c.topic, c.partition))
        write_csv(sys.stdout, rows, one_group=one_group)
        for n in view.notes:
            sys.stderr.write(f"kafkalog: {n}\n")
    elif fmt == "json":
        from ..render import groups_report as rr
        from ..render.json_line import dumps
        w = lambda o: sys.stdout.write(dumps(o) + "\n")
        for g in selected:
            w(rr.group_object(g, view.expected.get(g.group_id)))
            for co in sorted(g.offsets.values(), key=lambda c: (c.topic, c.partition)):
                w(rr.offset_object(co, view.ends.get((co.topic, co.partition)), False))
            if include_expired:
                for co in sorted(g.expired.values(), key=lambda c: (c.topic, c.partition)):
                    w(rr.offset_object(co, view.ends.get((co.topic, co.partition)), True))
        for gid, part in sorted(view.deleted.items()):
            w({"type": "deleted_group", "group": gid, "offsets_partition": part})
        for n in view.notes + view.info:
            w({"type": "note", "message": n})
        w({"type": "summary", "groups": len(selected), "offsets": sum(len(g.offsets) for g in selected),
           "offsets_partitions_read": sorted(view.partitions), "offsets_partition_count": view.partition_count,
           "offsets_partition_count_source": view.count_source, "retention_ms": retention,
           "retention_source": view.retention_source, "now": now})
    else:
        from ..render.groups_report import write_text
        write_text(sys.stdout, view, include_expired=include_expired, now=now)
