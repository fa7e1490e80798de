"""What ``consumer-groups`` shows, gathered: the groups loaded from the ``__consumer_offsets`` partitions under
some paths (``group_offsets``), each with the partition ``abs(hashCode) % offsets.topic.num.partitions`` gives,
the log end of every partition a group committed to on the same disk (what ``kafka-consumer-groups.sh``
shows as LOG-END-OFFSET), the coordinator's settings (``coordinator_config``) and notes in words.
The command renders it; nothing here writes."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class GroupsView:
    retention_ms: int
    retention_source: str = ""
    groups: list = field(default_factory=list)        # the selected group_offsets.Group, by id
    deleted: dict = field(default_factory=dict)       # group id -> log partition: deleted by a tombstone
    expected: dict = field(default_factory=dict)      # group id -> the partition its id hashes to
    ends: dict = field(default_factory=dict)          # (topic, partition) -> log end offset (high watermark)
    partitions: dict = field(default_factory=dict)    # __consumer_offsets partition -> (log start, log end)
    partition_count: int = 50
    count_source: str = ""
    notes: list = field(default_factory=list)         # problems and answers (stderr with --format csv)
    info: list = field(default_factory=list)          # facts (text and JSON only)
    removed: dict = field(default_factory=dict)       # group -> partition: group metadata tombstones
    problems: bool = False                            # exit status 1
    rules: dict = field(default_factory=dict)         # __consumer_offsets partition -> group_offsets.Rules
    unloadable: dict = field(default_factory=dict)    # __consumer_offsets partition -> why its load fails


def groups_view(paths, *, groups=(), now: int, server_properties=None, offsets_retention_ms: int | None = None,
                offsets_partitions: int | None = None, kafka_version: str | None = None) -> GroupsView:
    """Load, expire and select. Raises ``topic_config.ConfigError`` for a broker setting Kafka refuses."""
    from . import group_offsets as go
    from .coordinator_config import coordinator_config
    from .targets import one_copy_each, resolve
    targets = resolve(paths)
    chosen, copies = one_copy_each(targets.replicas(go.OFFSETS_TOPIC))
    dirs = [p.path for p in chosen]
    cc = coordinator_config(sorted(targets.logdir_paths()), server_properties=server_properties,
                            offsets_retention_ms=offsets_retention_ms, offsets_partitions=offsets_partitions)
    view = GroupsView(retention_ms=cc.offsets_retention_ms, retention_source=cc.retention_source)
    view.partition_count, view.count_source = cc.partition_count(go.OFFSETS_TOPIC)
    view.info.extend(cc.notes)
    view.info.extend(copies)
    view.notes.extend(targets.unreadable_notes())
    if not dirs:
        view.notes.append("no __consumer_offsets partition here")
    load = _load(chosen, now, view.retention_ms, cc.resolvers, kafka_version)
    view.partitions, view.rules, view.unloadable = load.partitions_read, load.rules, load.unloadable
    view.problems = bool(load.problems) or not dirs or bool(targets.unreadable_notes())
    for p in load.problems:
        view.notes.append(f"{p.file}, byte {p.position}: {p.message}")
    for part in sorted(load.unloadable):
        view.notes.append(f"__consumer_offsets-{part}: a broker cannot load this partition (the {load.rules[part].name} "
                          "fails on the record noted above): its groups are shown as far as kafkalog could read "
                          "them, but the broker serves none of them")
    by_rules: dict = {}
    for part, rules in sorted(load.rules.items()):
        by_rules.setdefault((rules.name, rules.source), []).append(part)
    for (name, source), parts in sorted(by_rules.items()):
        view.info.append(f"{_partitions(parts)}: loaded and expired by the rules of the {name}: {source}")
    for part, n in sorted(load.above_high_watermark.items()):
        view.notes.append(f"__consumer_offsets-{part}: {n} record(s) at or above its high watermark were loaded (a "
                          "3.x coordinator loads up to the log end; 4.x serves them once they are committed)")
    for why, n in sorted(load.skipped_records.items()):
        view.info.append(f"{n} record(s) skipped: {why}")
    wanted = set(groups)
    view.groups = [g for gid, g in sorted(load.groups.items()) if not wanted or gid in wanted]
    view.removed = load.removed
    view.deleted = {g: p for g, p in load.removed.items() if g not in load.groups and (not wanted or g in wanted)}
    for g in view.groups:
        view.expected[g.group_id] = go.partition_for(g.group_id, view.partition_count)
    for gid in sorted(wanted - set(load.groups)):
        if gid in view.deleted:
            continue
        part = go.partition_for(gid, view.partition_count)
        here = part in load.partitions_read
        view.notes.append(f"group {gid}: not found; it lives on __consumer_offsets-{part} (of "
                          f"{view.partition_count}, {view.count_source}), which is "
                          + ("on this disk and holds nothing of it" if here else "not on this disk"))
        view.problems = True
    view.ends = log_ends(targets, view.groups)
    return view


def _load(chosen, now: int, retention_ms: int, resolvers: dict, kafka_version: str | None):
    """``group_offsets.load_offsets`` of the partitions ``chosen`` (``targets.PartitionDir``) with each one's
    rules (``coordinator_version``, by its log directory); a partition whose KIP-848 records 3.x's rules would
    skip is loaded again with 4.x's, unless ``--kafka-version`` says 3.x."""
    from . import group_offsets as go
    from .coordinator_version import forced_rules, kip848_rules, rules_for_logdir
    dirs = [p.path for p in chosen]
    hws = high_watermarks(chosen)
    if kafka_version is not None:
        forced = forced_rules(kafka_version)
        return go.load_offsets(dirs, now, retention_ms, hws, lambda d: forced)
    logdir_of = {p.path: p.logdir for p in chosen}
    found: dict = {}

    def rules_for(d: Path):
        ld = logdir_of.get(d)
        ld = ld if ld in resolvers else None
        if ld not in found:
            found[ld] = rules_for_logdir(ld, resolvers.get(ld, next(iter(resolvers.values()), None)))
        return found[ld]
    load = go.load_offsets(dirs, now, retention_ms, hws, rules_for)
    if not load.kip848:
        return load
    redo = {p.path for p in chosen if p.topic_partition[1] in load.kip848}
    return go.load_offsets(dirs, now, retention_ms, hws,
                           lambda d: kip848_rules(rules_for(d)) if d in redo else rules_for(d))


def _partitions(parts: list[int]) -> str:
    """``__consumer_offsets-3`` or ``__consumer_offsets partitions 0-13, 15-49``."""
    if len(parts) == 1:
        return f"__consumer_offsets-{parts[0]}"
    runs: list[list[int]] = []
    for p in sorted(parts):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return "__consumer_offsets partitions " + ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def high_watermarks(dirs) -> dict:
    """{partition: high watermark checkpoint} of the __consumer_offsets partitions (``targets.PartitionDir``)."""
    from .logdir import LogDir
    out = {}
    for d in dirs:
        if d.logdir is None:
            continue
        cp, _ = LogDir(d.logdir).offset_checkpoint("replication-offset-checkpoint")
        if d.topic_partition in cp:
            out[d.topic_partition[1]] = cp[d.topic_partition]
    return out


def log_ends(targets, groups) -> dict:
    """{(topic, partition): high watermark} of the partitions the groups committed to, where they are under
    the paths given (of several copies, the one ``targets.one_copy_each`` picks): what
    kafka-consumer-groups.sh shows as LOG-END-OFFSET (ListOffsets latest). The partitions are those found
    on disk, matched by name, so a name from the bytes never becomes a path."""
    from .describe import LogDirContext, describe_partition
    from .targets import one_copy_each
    wanted = {(co.topic, co.partition) for g in groups for co in list(g.offsets.values()) + list(g.expired.values())}
    chosen, _notes = one_copy_each({tp: c for tp, c in targets.replicas().items() if tp in wanted})
    out: dict = {}
    contexts: dict = {}
    for p in chosen:
        ctx = None
        if p.logdir is not None:
            ctx = contexts.get(p.logdir) or contexts.setdefault(p.logdir, LogDirContext(p.logdir))
        desc = describe_partition(p.path, ctx, with_config=False)
        end = desc.high_watermark if desc.high_watermark is not None else desc.log_end
        if end is not None:
            out[p.topic_partition] = end
    return out
