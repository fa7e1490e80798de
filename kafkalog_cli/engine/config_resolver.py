"""One entry point for commands that need each partition's configuration and tiered-storage facts.

``ConfigResolver.open(logdir, ...)`` reads, once, what the broker itself would read: ``meta.properties``
(this broker's node id), ``server.properties`` if given, the KRaft metadata (``metadata_replay``), or for a
ZooKeeper-era directory a file the operator made with ``kafka-configs.sh`` (``config_describe``) or a
directory of ``<topic>.properties`` files, the command-line ``--config`` flags, and the
``__remote_log_metadata`` partitions on the disk (``remote_storage``). Then ``partition(dir)`` answers, for
one partition directory: which topic it belongs to (by the topic id in ``partition.metadata``: a directory
whose id the metadata no longer knows is a deleted topic's leftover), its effective configuration
(``topic_config.resolve_topic``) with each value's source, whether it is tiered, and the highest offset
known to be in remote storage.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.checkpoint import java_int
from kafkalog_formats.errors import FormatError

from ..layout import METADATA_PARTITION, parse_partition_dir
from .mapped import read_regular
from .topic_config import (METADATA_TOPIC, BrokerConfig, ConfigError, ConfigProblem, Setting, Source, TopicConfig,
                           load_server_properties, resolve_topic)


@dataclass(frozen=True)
class RemoteOffset:
    """``highestOffsetInRemoteStorage`` of a partition: ``offset`` -1 = nothing uploaded, None = unknown
    (then no local segment may be deleted); ``source`` says how it was learnt."""
    offset: int | None
    source: str


@dataclass
class PartitionConfig:
    directory: Path
    topic: str
    partition: int
    topic_id: str | None
    status: str          # live | deleted_topic | unknown_topic | id_mismatch | no_topic_id | not_in_metadata_mode
    message: str
    config: TopicConfig
    remote: RemoteOffset | None = None        # only for tiered topics
    sole_replica: bool = False                # the KRaft metadata names this broker as the partition's only replica
    overrides_known: bool = True              # the KRaft metadata or --topic-configs lists every topic's overrides

    @property
    def tiered(self) -> bool:
        return self.config.tiered

    def rows(self, keys=None) -> list[tuple[str, str, str]]:
        """(key, value text, source text) for a dry-run listing; default: what retain and compact use."""
        return [(k, self.config[k].text, str(self.config[k].source)) for k in (keys or RETAIN_KEYS + CLEANER_KEYS)]


#: The topic keys retention uses (UnifiedLog.deleteOldSegments, local retention for tiered topics).
RETAIN_KEYS = ("cleanup.policy", "retention.ms", "retention.bytes", "local.retention.ms", "local.retention.bytes",
               "remote.storage.enable", "remote.log.copy.disable", "file.delete.delay.ms", "segment.ms")
#: The topic keys the log cleaner uses (LogCleanerManager, Cleaner).
CLEANER_KEYS = ("min.cleanable.dirty.ratio", "delete.retention.ms", "min.compaction.lag.ms",
                "max.compaction.lag.ms", "segment.bytes", "segment.index.bytes", "index.interval.bytes",
                "max.message.bytes")


def parse_config_flag(spec: str) -> tuple[str | None, str, str]:
    """``--config [TOPIC:]KEY=VALUE`` -> (topic or None for every topic, key, value text)."""
    key_part, sep, value = spec.partition("=")
    if not sep or not key_part:
        raise ValueError(f"'{spec}' is not of the form [TOPIC:]KEY=VALUE")
    topic, colon, key = key_part.rpartition(":")
    if colon and not topic:
        raise ValueError(f"'{spec}': the topic before ':' is empty")
    return (topic or None), key.strip(), value


def load_topic_configs(path: str | Path, node_id: int | None, topics=None):
    """A ZooKeeper-era source: a file of ``kafka-configs.sh --describe`` output, or a directory of
    ``<topic>.properties`` files. Returns (overrides {topic: {key: (raw, Source)}}, described {topic: ...},
    cluster default layer, per-broker layer). ``topics``: the topics to keep (those on the disk being
    read; None: every topic): the file is read a line at a time and only their entries kept, so its size
    is no bound on memory (``kafka-configs.sh --describe --all`` of a large cluster is tens of MB)."""
    from kafkalog_formats.config_describe import iter_config_describe, split_lines
    from kafkalog_formats.meta_properties import load_properties
    from .mapped import read_text_pieces
    path = Path(path)
    overrides: dict = {}
    described: dict = {}
    cluster_default: dict = {}
    per_broker: dict = {}
    if path.is_dir():
        for f in sorted(path.glob("*.properties")):
            if topics is not None and f.stem not in topics:
                continue
            props = load_properties(read_regular(f))
            overrides[f.stem] = {k: (v, Source("topic", f"{f.name} ({k})")) for k, v in props.items()}
        return overrides, described, cluster_default, per_broker
    for e in iter_config_describe(split_lines(read_text_pieces(path))):
        if e.value is None or (topics is not None and e.entity_type == "topic" and e.entity not in topics):
            continue
        src = f"{path.name} line {e.line}" + ("" if e.source == "ZOOKEEPER" else f", {e.source}")
        if e.entity_type == "topic":
            if e.source in ("DYNAMIC_TOPIC_CONFIG", "ZOOKEEPER"):
                overrides.setdefault(e.entity, {})[e.name] = (e.value, Source("topic", src))
            else:
                described.setdefault(e.entity, {})[e.name] = (e.value, Source("described", src))
        elif e.entity_type == "broker" and e.entity == "" and e.source in ("DYNAMIC_DEFAULT_BROKER_CONFIG",
                                                                           "ZOOKEEPER"):
            cluster_default[e.name] = (e.value, Source("cluster_default", src))
        elif e.entity_type == "broker" and node_id is not None and e.entity == str(node_id) and \
                e.source in ("DYNAMIC_BROKER_CONFIG", "ZOOKEEPER"):
            per_broker[e.name] = (e.value, Source("broker", src))
    return overrides, described, cluster_default, per_broker


def _flags(config_flags, remote_offsets) -> tuple[dict, dict, dict]:
    """(``--config`` for every topic, per topic, ``--remote-log-end-offset`` overrides); ConfigError."""
    from .remote_storage import parse_remote_offset_override
    problems, flags_all, flags_topic, remote_over = [], {}, {}, {}
    for spec in config_flags:
        try:
            topic, key, value = parse_config_flag(spec)
        except ValueError as e:
            problems.append(ConfigProblem(None, spec, None, "--config", str(e)))
            continue
        src = Source("flag", f"--config {spec}")
        (flags_topic.setdefault(topic, {}) if topic else flags_all)[key] = (value, src)
    for spec in remote_offsets:
        try:
            t, p, off = parse_remote_offset_override(spec)
            remote_over[(t, p)] = off
        except ValueError as e:
            problems.append(ConfigProblem(None, spec, None, "--remote-log-end-offset", str(e)))
    if problems:
        raise ConfigError(problems)
    return flags_all, flags_topic, remote_over


def _metadata_layer(entries: dict, kind: str, what: str) -> dict:
    return {k: (cv.value, Source(kind, f"{what} at {cv.origin}")) for k, cv in entries.items()}


@dataclass
class ConfigResolver:
    logdir: Path
    broker: BrokerConfig
    node_id: int | None = None
    metadata: object = None                  # metadata_replay.ClusterMetadata or None
    overrides: dict = field(default_factory=dict)
    described: dict = field(default_factory=dict)
    all_flags: dict = field(default_factory=dict)
    topic_flags: dict = field(default_factory=dict)
    remote_overrides: dict = field(default_factory=dict)     # (topic, partition) -> offset
    remote_metadata: object = None            # remote_storage.RemoteLogMetadata or None
    sources: list = field(default_factory=list)   # what was read, in words
    notes: list = field(default_factory=list)
    metadata_problem: str | None = None       # the metadata could not be read (metadata_problems_as_notes)
    _cache: dict = field(default_factory=dict)
    _every_topic: object = None               # the resolver keeping every topic, when one was needed

    @classmethod
    def open(cls, logdir: str | Path | None, *, server_properties: str | Path | None = None,
             topic_configs: str | Path | None = None, config_flags=(), remote_offsets=(),
             metadata_dir: str | Path | None = None, metadata_up_to: int | None = None,
             metadata_problems_as_notes: bool = False, remote_storage: bool = True,
             every_topic: bool = False) -> "ConfigResolver":
        """Read every source once. Raises ConfigError (bad values, bad flags), MetadataError (unreadable
        metadata; with ``metadata_problems_as_notes`` a note instead, as if there were none) or OSError.
        ``logdir`` None: partition directories given without their log directory (server.properties,
        flags and its ``metadata.log.dir`` only). ``remote_storage`` False: ``__remote_log_metadata`` is not
        read (commands that never ask for a remote offset). The metadata and ``--topic-configs`` are kept
        for the topics of ``logdir``'s partition directories only (``topics_on_disk``; ``every_topic``:
        all of them); a directory of another topic is resolved by a resolver that keeps every topic."""
        from .logdir import LogDir
        logdir = None if logdir is None else Path(logdir)
        sources = []
        meta = LogDir(logdir).meta_properties() \
            if logdir is not None and (logdir / "meta.properties").exists() else None
        node_id = meta.node_id if meta is not None else None
        static = {}
        if server_properties is not None:
            static = load_server_properties(server_properties)
            sources.append(f"broker configuration: {server_properties}")
            if node_id is None:
                for k in ("node.id", "broker.id"):
                    if k in static and java_int(static[k][0].strip()) is not None:
                        node_id = java_int(static[k][0].strip())
                        break
        flags_all, flags_topic, remote_over = _flags(config_flags, remote_offsets)

        mdir = Path(metadata_dir) if metadata_dir else _find_metadata_dir(logdir, static)
        cluster_default, per_broker, overrides, described = {}, {}, {}, {}
        on_disk = topics_on_disk(logdir) if logdir is not None and not every_topic else None
        md, unreadable = _replay(mdir, node_id, metadata_up_to, static, metadata_problems_as_notes, on_disk)
        if md is not None:
            what = f"snapshot {md.snapshot} and " if md.snapshot else ""
            sources.append(f"KRaft metadata: {what}log offsets up to {md.next_offset - 1} of {mdir}")
            cluster_default = _metadata_layer(md.cluster_default_configs(), "cluster_default",
                                              "cluster-wide dynamic broker default")
            per_broker = _metadata_layer(md.broker_configs(node_id), "broker", f"dynamic config of broker {node_id}")
            if md.uncertain_from is not None:
                sources.append(f"metadata records from offset {md.uncertain_from} on are not known to be "
                               "committed (the quorum has other voters)")
        if topic_configs is not None:
            overrides, described, cd, pb = load_topic_configs(topic_configs, node_id,
                                                              on_disk.names if on_disk is not None else None)
            cluster_default.update(cd)
            per_broker.update(pb)
            sources.append(f"topic configurations: {topic_configs}")
        if md is None and topic_configs is None:
            sources.append("no topic configuration source (no KRaft metadata in this log directory, no "
                           "--topic-configs): topics get the broker's defaults and --config flags only")
        broker = BrokerConfig(static, cluster_default, per_broker, static_known=server_properties is not None)
        if server_properties is not None:
            broker.validate_static()
        r = cls(logdir, broker, node_id, md, overrides, described, flags_all, flags_topic, remote_over,
                sources=sources, notes=list(broker.notes) + (list(md.notes) if md else []) +
                ([unreadable] if unreadable else []))
        r.metadata_problem = unreadable
        r.kept_topics = on_disk
        r._open_args = dict(logdir=logdir, server_properties=server_properties, topic_configs=topic_configs,
                            config_flags=config_flags, remote_offsets=remote_offsets, metadata_dir=metadata_dir,
                            metadata_up_to=metadata_up_to, metadata_problems_as_notes=metadata_problems_as_notes,
                            remote_storage=remote_storage)
        r.remote_metadata = _read_remote(logdir, r) if logdir is not None and remote_storage else None
        return r

    def broker_setting(self, name: str) -> Setting:
        """A broker property with Kafka's type, validator and default (``config_keys.BROKER_KEYS``) and its
        source; the coordinators' (offsets.retention.minutes, offsets.topic.num.partitions,
        transaction.state.log.num.partitions, producer.id.expiration.ms) included. Raises ConfigError."""
        return self.broker.setting(name)

    def internal_partitions(self, topic: str, key: str) -> Setting | None:
        """The partition count of an internal topic as the KRaft metadata of this log directory holds it
        (the count its coordinator hashes with); None when there is no metadata or it lacks the topic (then
        ``broker_setting(key)``: the number the broker would create the topic with)."""
        info = self.metadata.topics.get(topic) if self.metadata is not None else None
        if info is None or not info.partitions:
            return None
        return Setting(key, len(info.partitions), Source("kraft", f"the KRaft metadata in {self.metadata.directory}"))

    def _other(self, topic: str, topic_id: str | None = None) -> "ConfigResolver":
        """This resolver, or for a topic it did not keep (not on the disk read at open) one keeping every
        topic, opened once when first needed."""
        kept = getattr(self, "kept_topics", None)
        if kept is None or kept.keeps(topic, topic_id):
            return self
        if self._every_topic is None:
            self._every_topic = ConfigResolver.open(**self._open_args, every_topic=True)
        return self._every_topic

    def topic(self, name: str) -> TopicConfig:
        """The effective configuration of topic ``name`` (cached). Raises ConfigError."""
        if self._other(name) is not self:
            return self._other(name).topic(name)
        if name not in self._cache:
            overrides = dict(self.overrides.get(name, {}))
            if self.metadata is not None and name not in self.overrides:
                overrides = _metadata_layer(self.metadata.topic_configs(name), "topic", "topic override")
            no_source = self.metadata is None and name not in self.overrides and name not in self.described
            self._cache[name] = resolve_topic(name, self.broker, overrides, all_flags=self.all_flags,
                                              topic_flags=self.topic_flags.get(name),
                                              described=self.described.get(name),
                                              use_internal_defaults=no_source)
        return self._cache[name]

    def partition(self, directory: str | Path) -> PartitionConfig:
        """Topic, status, configuration and (tiered topics) remote offset of one partition directory."""
        from kafkalog_formats.partition_metadata import parse_partition_metadata
        directory = Path(directory)
        name = parse_partition_dir(directory.name)
        if name is None:
            raise ConfigError([ConfigProblem(None, "directory", directory.name, str(directory),
                                             "not a partition directory (TOPIC-PARTITION)")])
        topic_id, status, message = None, "live", ""
        pm = directory / "partition.metadata"
        if pm.exists():
            try:
                topic_id = parse_partition_metadata(read_regular(pm), str(pm)).topic_id
            except FormatError as e:
                message = f"partition.metadata unreadable: {e.reason}"
            except OSError as e:        # a FIFO, device or unreadable file: never read, never blocks
                message = f"partition.metadata unreadable: {e.strerror or e}"
        if self._other(name.topic, topic_id) is not self:
            return self._other(name.topic, topic_id).partition(directory)
        md = self.metadata
        if name.state is not None:
            status, message = name.state, f"a '-{name.state}' directory, not a live partition"
        elif md is None:
            status = "not_in_metadata_mode"
        elif name.topic == METADATA_TOPIC:
            status = "live"
        elif topic_id is not None and topic_id in md.topics_by_id:
            known = md.topics_by_id[topic_id].name
            if known != name.topic:
                status, message = "id_mismatch", f"topic id {topic_id} belongs to topic {known} in the metadata"
        elif topic_id is not None and topic_id in md.removed:
            gone, origin = md.removed[topic_id]
            now = md.topics.get(name.topic)
            status = "deleted_topic"
            message = (f"topic id {topic_id} was deleted at {origin}" +
                       (f"; topic {name.topic} now exists under id {now.topic_id}" if now else "") +
                       ": this directory is a deleted topic's leftover")
        elif topic_id is not None:
            status = "deleted_topic" if name.topic in md.topics else "unknown_topic"
            now = md.topics.get(name.topic)
            message = f"topic id {topic_id} is not in the metadata" + (
                f" (topic {name.topic} has id {now.topic_id}): a deleted topic's leftover" if now else "")
        elif name.topic in md.topics:
            status, message = "no_topic_id", "no partition.metadata: matched to the topic by name"
        else:
            status, message = "unknown_topic", f"topic {name.topic} is not in the metadata"
        pc = PartitionConfig(directory, name.topic, name.partition, topic_id, status, message,
                             self.topic(name.topic),
                             overrides_known=md is not None or self._open_args["topic_configs"] is not None)
        if md is not None and status in ("live", "no_topic_id") and self.node_id is not None:
            info = md.topics.get(name.topic)
            pc.sole_replica = info is not None and info.replicas.get(name.partition) == (self.node_id,)
        if pc.config.tiered:
            pc.remote = self.remote_offset(directory, name.topic, name.partition, topic_id)
        return pc

    def resolve_all(self, directories) -> list[PartitionConfig]:
        """``partition`` for every directory, collecting every problem into one ConfigError, so that a
        command can refuse before its first change."""
        out, problems = [], []
        for d in directories:
            try:
                out.append(self.partition(d))
            except ConfigError as e:
                problems.extend(p for p in e.problems if p not in problems)
        if problems:
            raise ConfigError(problems)
        return out

    def remote_offset(self, directory: Path, topic: str, partition: int, topic_id: str | None) -> RemoteOffset:
        """The highest offset known to be in remote storage for this partition."""
        if (topic, partition) in self.remote_overrides:
            return RemoteOffset(self.remote_overrides[(topic, partition)],
                                f"--remote-log-end-offset {topic}-{partition}")
        rlm = self.remote_metadata
        if rlm is None or not rlm.metadata_partitions:
            return RemoteOffset(None, "no readable __remote_log_metadata partition in this log directory")
        if topic_id is None:
            return RemoteOffset(None, "no partition.metadata, so no topic id to look up remote segments by")
        state = rlm.partition(topic_id, partition)
        if state is None:
            responsible = self._responsible_metadata_partition(topic_id, partition)
            if responsible is not None and responsible in rlm.metadata_partitions:
                return RemoteOffset(-1, f"__remote_log_metadata-{responsible} (below its high watermark "
                                        f"{rlm.metadata_partitions[responsible]}) has no uploaded segment")
            return RemoteOffset(None, "the __remote_log_metadata partition that tracks it is not on this disk")
        from kafkalog_formats.checkpoint import parse_leader_epoch_checkpoint
        from .lookup import PartitionView
        epochs_file = directory / "leader-epoch-checkpoint"
        try:
            epochs = parse_leader_epoch_checkpoint(read_regular(epochs_file), str(epochs_file)) \
                if epochs_file.exists() else []
        except (FormatError, OSError) as e:
            return RemoteOffset(None, f"{epochs_file.name} is unreadable ({getattr(e, 'reason', None) or e}): "
                                      "no leader epochs to match remote segments with")
        end = PartitionView(directory).log_end
        offset = state.highest_offset([(e.epoch, e.start_offset) for e in epochs], end)
        return RemoteOffset(offset, f"__remote_log_metadata ({state.origin or 'no finished upload'}), "
                                    "as RemoteLogManager.findHighestRemoteOffset")

    def _responsible_metadata_partition(self, topic_id: str, partition: int) -> int | None:
        from kafkalog_formats.partition_metadata import kafka_base64_to_uuid
        from .remote_storage import REMOTE_LOG_METADATA_TOPIC, metadata_partition_for
        count = None
        if self.metadata is not None and REMOTE_LOG_METADATA_TOPIC in self.metadata.topics:
            count = len(self.metadata.topics[REMOTE_LOG_METADATA_TOPIC].partitions) or None
        if count is None:
            raw = self.broker.merged.get("rlmm.config.remote.log.metadata.topic.num.partitions")
            count = java_int(raw[0].strip()) if raw else None
            count = count if count is not None and count > 0 else 50
        return metadata_partition_for(kafka_base64_to_uuid(topic_id), partition, count)


def topics_on_disk(logdir: Path):
    """``TopicFilter`` of the partition directories of ``logdir``: their topic names and the topic ids of
    their ``partition.metadata`` (an unreadable one names no id). What a resolver of this log directory is
    asked about; the metadata and ``--topic-configs`` keep only these topics."""
    from kafkalog_formats.partition_metadata import parse_partition_metadata
    from .metadata_replay import TopicFilter
    names, ids = set(), set()
    try:
        entries = list(os.scandir(logdir))
    except OSError:
        entries = []
    for entry in entries:
        name = parse_partition_dir(entry.name)
        if name is None:
            continue
        names.add(name.topic)
        pm = Path(entry.path) / "partition.metadata"
        try:
            ids.add(parse_partition_metadata(read_regular(pm), str(pm)).topic_id)
        except (OSError, FormatError):
            pass
    return TopicFilter(frozenset(names), frozenset(ids))


def _replay(mdir: Path | None, node_id: int | None, up_to: int | None, static: dict, as_note: bool, keep=None):
    """(ClusterMetadata or None, why it could not be read or None): the metadata replayed (``keep``: the
    topics kept, None: all); a MetadataError raised, or with ``as_note`` said in words."""
    from .metadata_replay import MetadataError, replay_metadata
    if mdir is None:
        return None, None
    try:
        return replay_metadata(mdir, node_id, up_to, _static_voters(static), keep), None
    except MetadataError as e:
        if not as_note:
            raise
        return None, f"the KRaft metadata in {mdir} cannot be read ({e}): not used"


def _find_metadata_dir(logdir: Path | None, static: dict) -> Path | None:
    """``__cluster_metadata-0`` in this log dir, else in ``metadata.log.dir`` / the first of ``log.dirs``
    (``KafkaConfig.metadataLogDir``) when server.properties names them."""
    candidates = [logdir] if logdir is not None else []
    for key in ("metadata.log.dir", "log.dirs", "log.dir"):
        if key in static:
            candidates.append(Path(static[key][0].split(",")[0].strip()))
            break
    for c in candidates:
        d = c / METADATA_PARTITION
        if d.is_dir():
            return d
    return None


def _static_voters(static: dict) -> tuple | None:
    raw = static.get("controller.quorum.voters")
    if not raw or not raw[0].strip():
        return None
    try:
        return tuple(int(v.split("@")[0]) for v in raw[0].split(","))
    except ValueError:
        return None


def _read_remote(logdir: Path, r: ConfigResolver):
    from .logdir import LogDir
    from .remote_storage import read_remote_log_metadata_dirs
    if not any(p.name.startswith("__remote_log_metadata-") for p in LogDir.open(logdir).partition_dirs):
        return None
    hws, finding = LogDir(logdir).offset_checkpoint("replication-offset-checkpoint")
    if finding is not None:
        r.notes.append(f"replication-offset-checkpoint: {finding.message}")
    rlm = read_remote_log_metadata_dirs(logdir, hws)
    r.notes.extend(rlm.notes)
    r.sources.append("tiered storage: __remote_log_metadata partition(s) " +
                     (", ".join(str(p) for p in sorted(rlm.metadata_partitions)) or "none readable"))
    return rlm
