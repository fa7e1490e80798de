"""``kafkalog consumer-groups``: committed offsets from ``__consumer_offsets``, as the group coordinator
loads them."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from ..status import Status

HELP = """Show the committed offsets of consumer groups from the __consumer_offsets partitions on disk,
as the group coordinator loads them when it takes a partition over: offset commits in order, a
tombstone removing one, transactional commits applied at their COMMIT marker and dropped at their
ABORT, group metadata loaded (a tombstone deletes the group), then the offsets that its first
expiration run removes taken away (offsets.retention.minutes, 7 days by default, after the commit,
or after the group became empty; offsets of topics a stable group subscribes to never expire).

PATH may be a log directory, several, a folder holding log directories further down, or
__consumer_offsets-N directories. A group lives on partition abs(hashCode(group)) %
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
@click.option("--offsets-retention-ms", type=click.IntRange(min=0), default=None, metavar="MS",
              help="The broker's offsets retention (default: offsets.retention.minutes from "
                   "--server-properties, else 7 days).")
@click.option("--offsets-partitions", type=click.IntRange(min=1), default=None, metavar="N",
              help="offsets.topic.num.partitions, for the partition a group lives on (default: from the KRaft "
                   "metadata, --server-properties, else 50).")
@click.option("--server-properties", type=click.Path(exists=True, dir_okay=False), default=None, metavar="FILE",
              help="The broker's server.properties (offsets.retention.minutes, offsets.topic.num.partitions).")
def command(paths, groups, fmt, include_expired, now_text, offsets_retention_ms, offsets_partitions,
            server_properties) -> int:
    from ..engine import group_offsets as go
    from ._views import parse_now

    now = parse_now(now_text)
    if fmt == "csv":
        bad = [g for g in groups if "\n" in g or "\r" in g]
        if bad:
            raise click.UsageError("a group id with a line break cannot be written to the CSV file "
                                   "kafka-consumer-groups.sh reads (it splits the file at line breaks)")
    dirs = go.offsets_partition_dirs(paths)
    props = _server_properties(server_properties)
    retention = offsets_retention_ms
    if retention is None:
        minutes = props.get("offsets.retention.minutes")
        retention = int(minutes) * 60_000 if minutes and minutes.strip().isdigit() else go.DEFAULT_RETENTION_MS
    view = View(retention_ms=retention)
    view.partition_count, view.count_source = _partition_count(paths, props, offsets_partitions,
                                                               go.OFFSETS_TOPIC, "offsets.topic.num.partitions",
                                                               go.DEFAULT_OFFSETS_PARTITIONS)
    if not dirs:
        view.notes.append("no __consumer_offsets partition here")
    load = go.load_offsets(dirs, now, retention, _high_watermarks(dirs))
    view.partitions = load.partitions_read
    problems = bool(load.problems) or not dirs
    for p in load.problems:
        view.notes.append(f"{p.file}, byte {p.position}: {p.message}")
    for part, n in sorted(load.above_high_watermark.items()):
        view.notes.append(f"__consumer_offsets-{part}: {n} record(s) at or above its high watermark were loaded (a "
                          "3.x coordinator loads up to the log end; 4.x serves them once they are committed)")
    for why, n in sorted(load.skipped_records.items()):
        view.info.append(f"{n} record(s) skipped: {why}")
    wanted = set(groups)
    selected = [g for gid, g in sorted(load.groups.items()) if not wanted or gid in wanted]
    view.groups = selected
    view.removed = load.removed
    view.deleted = {g: p for g, p in load.removed.items() if g not in load.groups and (not wanted or g in wanted)}
    for g in selected:
        view.expected[g.group_id] = go.partition_for(g.group_id, view.partition_count)
    for gid in sorted(wanted - set(load.groups)):
        if gid in view.deleted:
            continue
        part = go.partition_for(gid, view.partition_count)
        here = part in load.partitions_read
        view.notes.append(f"group {gid}: not found; it lives on __consumer_offsets-{part} (of "
                          f"{view.partition_count}, {view.count_source}), which is "
                          + ("on this disk and holds nothing of it" if here else "not on this disk"))
        problems = True
    view.ends = _log_ends(dirs, selected)
    _render(fmt, view, selected, one_group=len(groups) == 1, include_expired=include_expired, retention=retention,
            now=now)
    return Status.PROBLEMS if problems else Status.OK


def _render(fmt: str, view: "View", selected: list, *, one_group: bool, include_expired: bool, retention: int,
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
           "offsets_partition_count_source": view.count_source, "retention_ms": retention, "now": now})
    else:
        from ..render.groups_report import write_text
        write_text(sys.stdout, view, include_expired=include_expired, now=now)


@dataclass
class View:
    retention_ms: int
    groups: list = field(default_factory=list)
    deleted: dict = field(default_factory=dict)
    expected: dict = field(default_factory=dict)
    ends: dict = field(default_factory=dict)
    partitions: dict = field(default_factory=dict)
    partition_count: int = 50
    count_source: str = ""
    notes: list = field(default_factory=list)       # problems and answers (stderr with --format csv)
    info: list = field(default_factory=list)        # facts (text and JSON only)
    removed: dict = field(default_factory=dict)     # group -> partition: group metadata tombstones


def _server_properties(path) -> dict:
    if path is None:
        return {}
    from kafkalog_formats.meta_properties import load_properties
    from ..engine.mapped import read_regular
    return load_properties(read_regular(Path(path)))


def _logdirs(paths) -> list[Path]:
    from ..engine.describe import partition_targets
    targets, _notes = partition_targets(paths)
    return sorted({ld for _p, ld in targets if ld is not None})


def _partition_count(paths, props: dict, flag: int | None, topic: str, key: str, default: int) -> tuple[int, str]:
    """The internal topic's partition count and where it comes from: the flag, the KRaft metadata of a log
    directory, server.properties, Kafka's default."""
    if flag is not None:
        return flag, f"--{'offsets' if topic.startswith('__consumer') else 'transaction'}-partitions"
    from ..engine.config_resolver import _find_metadata_dir
    from ..engine.metadata_replay import MetadataError, replay_metadata
    for logdir in _logdirs(paths):
        mdir = _find_metadata_dir(logdir, {})
        if mdir is None:
            continue
        try:
            md = replay_metadata(mdir, None, None, None)
        except (MetadataError, OSError, Exception):      # unreadable metadata: the next source
            continue
        info = md.topics.get(topic)
        if info is not None and info.partitions:
            return len(info.partitions), f"the KRaft metadata in {mdir}"
    raw = props.get(key)
    if raw and raw.strip().isdigit() and int(raw) > 0:
        return int(raw), f"{key} in server.properties"
    return default, f"Kafka's default {key}={default}"


def _high_watermarks(dirs: list[Path]) -> dict:
    """{partition: high watermark checkpoint} of the __consumer_offsets partitions."""
    from ..engine.logdir import LogDir, dir_kind
    out = {}
    for d in dirs:
        parent = d.parent
        if dir_kind(parent) != "logdir":
            continue
        cp, _ = LogDir(parent).offset_checkpoint("replication-offset-checkpoint")
        n = int(d.name.rsplit("-", 1)[1])
        if ("__consumer_offsets", n) in cp:
            out[n] = cp[("__consumer_offsets", n)]
    return out


def _log_ends(dirs: list[Path], groups) -> dict:
    """{(topic, partition): high watermark} of the partitions the groups committed to, where they are on the
    same disk (a log directory holding __consumer_offsets): what kafka-consumer-groups.sh shows as
    LOG-END-OFFSET (ListOffsets latest)."""
    from ..engine.describe import LogDirContext, describe_partition
    wanted = {(co.topic, co.partition) for g in groups for co in list(g.offsets.values()) + list(g.expired.values())}
    out: dict = {}
    contexts: dict = {}
    for d in dirs:
        logdir = d.parent
        for tp in sorted(wanted - set(out)):
            pdir = logdir / f"{tp[0]}-{tp[1]}"
            if not pdir.is_dir():
                continue
            ctx = contexts.get(logdir) or contexts.setdefault(logdir, LogDirContext(logdir))
            desc = describe_partition(pdir, ctx, with_config=False)
            end = desc.high_watermark if desc.high_watermark is not None else desc.log_end
            if end is not None:
                out[tp] = end
    return out
