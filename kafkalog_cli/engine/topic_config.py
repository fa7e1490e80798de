"""Each topic's effective configuration, resolved from a broker's own files, every value with its source.

Precedence, lowest to highest (what a broker computes, then what the operator says on the command line):

1. Kafka's built-in default (``LogConfig.CONFIG`` / ``KafkaConfig`` defaults, ``config_keys``);
2. the broker's static configuration, ``server.properties`` (``KafkaConfig``; among the synonyms of a topic
   key the first one set wins: ``log.retention.ms`` > ``log.retention.minutes`` > ``log.retention.hours``);
3. the cluster-wide dynamic broker default (KRaft ``ConfigRecord`` for BROKER "", ZooKeeper
   ``/config/brokers/<default>``), then this broker's own dynamic configuration (BROKER "<node.id>").
   ``DynamicBrokerConfig.updateCurrentConfig`` merges static <- default <- per-broker key by key, and
   ``overrideProps`` removes a key's synonyms from the layers below (a dynamic ``log.retention.ms``
   hides a static ``log.retention.hours`` and the reverse); keys that may not be set dynamically and
   values of the wrong type are ignored (``fromPersistentProps``);
4. what the effective broker configuration gives each topic key (``KafkaConfig.extractLogConfigMap``);
5. for internal topics when no metadata is available: the overrides Kafka writes when it creates them
   (``GroupCoordinator.offsetsTopicConfigs``, ``TransactionStateManager.transactionTopicConfigs``);
6. the topic's own overrides (KRaft ``ConfigRecord`` for TOPIC <name>, or a ZooKeeper-era file the operator
   made with ``kafka-configs.sh``), combined as in ``LogConfig.fromProps(defaults, overrides)``;
7. command-line ``--config KEY=VALUE`` (every topic), then ``--config TOPIC:KEY=VALUE``.

``__cluster_metadata`` is configured by ``KafkaMetadataLog.apply`` alone (metadata.log.* settings,
retention off); it is marked ``managed_by_kraft`` and is never retained or cleaned by LogManager.

A topic is tiered (``UnifiedLog.isRemoteLogEnabled``) when the broker's ``remote.log.storage.system.enable``
is true, the topic's ``remote.storage.enable`` is true, and the topic is neither compacted nor internal
(nor ``__remote_log_metadata`` / ``__cluster_metadata``). When no server.properties is given the system
setting is unknown and a topic with ``remote.storage.enable=true`` is treated as tiered (the safe side).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import CannotRun

from .config_keys import (BROKER_KEYS, BROKER_SYNONYM_GROUPS, DYNAMIC_BROKER_KEYS, SYNONYMS, TOPIC_KEYS, BadValue,
                          KeyDef, format_value, parse_value)

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
METADATA_TOPIC = "__cluster_metadata"
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"


class Source(NamedTuple):
    """Where a value comes from. ``kind`` is one of: flag, topic, internal, described, broker,
    cluster_default, server_properties, kraft, kafka_default; ``detail`` says it in words."""
    kind: str
    detail: str

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class Setting:
    key: str
    value: Any
    source: Source

    @property
    def text(self) -> str:
        return format_value(self.value)


class ConfigProblem(NamedTuple):
    topic: str | None
    key: str
    value: str | None
    source: Source | str
    reason: str

    def __str__(self) -> str:
        where = f"topic {self.topic}: " if self.topic else ""
        shown = "(no value)" if self.value is None else repr(_abbreviated(self.value))
        return f"{where}{self.key}={shown} from {_abbreviated(str(self.source), 80)}: {self.reason}"


def _abbreviated(text: str, keep: int = 40) -> str:
    """A value as long as a screen or longer (5,000 digits, say) cut to its start, with its length."""
    return text if len(text) <= keep + 20 else f"{text[:keep]}... ({len(text):,} characters)"


class ConfigError(CannotRun):
    """Unknown or malformed configuration values; nothing may be changed while one is unresolved."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def typed(keydef: KeyDef, raw: str, topic: str | None, source: Source) -> Any:
    try:
        return parse_value(keydef, raw)
    except BadValue as e:
        raise ConfigError([ConfigProblem(topic, keydef.name, raw, source, str(e))]) from None


# --- the broker's effective configuration ---------------------------------------------------------

class BrokerConfig:
    """Static, cluster-default and per-broker layers merged as ``DynamicBrokerConfig`` does.

    Each layer is {property: (raw text, Source)}."""

    def __init__(self, static: dict | None = None, cluster_default: dict | None = None,
                 per_broker: dict | None = None, *, static_known: bool = False) -> None:
        self.static_known = static_known       # a server.properties was read
        self.notes: list[str] = []
        merged: dict[str, tuple[str, Source]] = dict(static or {})
        for layer in (cluster_default or {}, per_broker or {}):
            for name, (raw, source) in layer.items():
                if name not in DYNAMIC_BROKER_KEYS:
                    if name in BROKER_KEYS:
                        self.notes.append(f"{name}={raw} from {source} ignored: Kafka does not apply it "
                                          "dynamically")
                    continue
                try:
                    parse_value(BROKER_KEYS[name]._replace(check=None), raw)
                except BadValue as e:          # removeInvalidConfigs: wrong type -> ignored, logged
                    self.notes.append(f"{name}={raw} from {source} ignored as the broker does: {e}")
                    continue
                for synonym in BROKER_SYNONYM_GROUPS.get(name, (name,)):
                    merged.pop(synonym, None)
                merged[name] = (raw, source)
        self.merged = merged

    def setting(self, name: str) -> Setting | None:
        """A broker property's typed value (Kafka's default when unset; None for unset, default-less ones)."""
        keydef = BROKER_KEYS[name]
        if name in self.merged:
            raw, source = self.merged[name]
            return Setting(name, typed(keydef, raw, None, source), source)
        if keydef.default is None:
            return None
        return Setting(name, keydef.default, Source("kafka_default", f"Kafka's default for {name}"))

    def topic_default(self, key: str) -> Setting:
        """The value a topic without an override gets for ``key`` (``KafkaConfig.extractLogConfigMap``)."""
        synonyms = SYNONYMS.get(key)
        if not synonyms:
            return Setting(key, TOPIC_KEYS[key].default, Source("kafka_default", f"Kafka's default for {key}"))
        chosen = next((s for s in synonyms if s.name in self.merged), None)
        if chosen is None:
            chosen = next(s for s in synonyms if BROKER_KEYS[s.name].default is not None)
        st = self.setting(chosen.name)
        value = st.value
        if chosen.factor != 1:
            value = value * chosen.factor
        if key == "retention.ms" and value < 0:          # KafkaConfig.logRetentionTimeMillis
            value = -1
        shown = f"{chosen.name}={format_value(st.value)}"
        detail = st.source.detail
        if chosen.name not in self.merged:
            detail = f"Kafka's default ({shown})"
        elif f"({chosen.name})" in detail:                 # "server.properties (log.retention.hours=1)"
            detail = detail.replace(f"({chosen.name})", f"({shown})")
        elif chosen.name != key and shown not in detail:
            detail = f"{detail} ({shown})"
        return Setting(key, value, Source(st.source.kind, detail))

    def validate_static(self) -> None:
        """What ``KafkaConfig`` checks at startup for the properties kafkalog uses (a broker with a bad
        server.properties does not start)."""
        problems = []
        for name, (raw, source) in self.merged.items():
            if name in BROKER_KEYS and source.kind == "server_properties":
                try:
                    parse_value(BROKER_KEYS[name], raw)
                except BadValue as e:
                    problems.append(ConfigProblem(None, name, raw, source, str(e)))
        if not problems:
            retention = self.topic_default("retention.ms")
            if retention.value == 0:
                problems.append(ConfigProblem(None, "log.retention.ms", "0", retention.source,
                                              "log.retention.ms must be unlimited (-1) or, greater than or "
                                              "equal to 1"))
        if problems:
            raise ConfigError(problems)

    @property
    def remote_storage_system_enable(self) -> bool | None:
        """``remote.log.storage.system.enable`` (static only); None when no server.properties was read."""
        if "remote.log.storage.system.enable" not in self.merged and not self.static_known:
            return None
        return self.setting("remote.log.storage.system.enable").value


def load_server_properties(path: str | Path) -> dict[str, tuple[str, Source]]:
    """``server.properties`` read as ``java.util.Properties`` (as ``Kafka.getPropsFromArgs``), up to the one
    size limit of every text input (``mapped.read_regular``: 16 MiB; a broker's is a few KB)."""
    from kafkalog_formats.meta_properties import load_properties
    from .mapped import read_regular
    path = Path(path)
    props = load_properties(read_regular(path))
    return {k: (v, Source("server_properties", f"{path.name} ({k})")) for k, v in props.items()}


# --- one topic ----------------------------------------------------------------------------------

@dataclass
class TopicConfig:
    topic: str
    settings: dict = field(default_factory=dict)    # key -> Setting
    tiered: bool = False
    tiered_reason: str = ""
    managed_by_kraft: bool = False
    notes: list = field(default_factory=list)

    def __getitem__(self, key: str) -> Setting:
        return self.settings[key]

    def value(self, key: str) -> Any:
        return self.settings[key].value

    internal = property(lambda self: self.topic in INTERNAL_TOPICS)
    # LogConfig: compact/delete from the lower-cased cleanup.policy list
    compact = property(lambda self: "compact" in [p.lower() for p in self.value("cleanup.policy")])
    delete = property(lambda self: "delete" in [p.lower() for p in self.value("cleanup.policy")])

    @property
    def remote_copy_enabled(self) -> bool:
        """``remoteLogEnabledAndRemoteCopyEnabled``: retention waits for uploads and moves the local log
        start only."""
        return self.tiered and not self.value("remote.log.copy.disable")

    def local_retention(self, which: str) -> Setting:
        """``LogConfig.localRetentionMs/Bytes`` (-2 = the topic's retention.ms/bytes), as used by
        ``UnifiedLog.localRetentionMs/Size`` when the topic is tiered with copy enabled, else retention.*."""
        full = self.settings[f"retention.{which}"]
        if not self.remote_copy_enabled:
            return full
        local = self.settings[f"local.retention.{which}"]
        if local.value == -2:
            return Setting(f"local.retention.{which}", full.value,
                           Source(full.source.kind, f"retention.{which} from {full.source} "
                                                     f"(local.retention.{which}=-2)"))
        return local


def _internal_creation_overrides(topic: str, broker: BrokerConfig) -> dict:
    """The overrides Kafka writes when it creates an internal topic (only used without metadata)."""
    def from_broker(name):
        st = broker.setting(name)
        return format_value(st.value), Source("internal", f"{topic} is created with it ({name}="
                                                          f"{format_value(st.value)}, {st.source})")

    fixed = lambda v, why: (v, Source("internal", f"{topic} is created with it ({why})"))   # noqa: E731
    if topic == "__consumer_offsets":        # GroupCoordinator.offsetsTopicConfigs
        return {"cleanup.policy": fixed("compact", "GroupCoordinator"),
                "segment.bytes": from_broker("offsets.topic.segment.bytes"),
                "compression.type": fixed("producer", "GroupCoordinator")}
    if topic == "__transaction_state":       # TransactionStateManager.transactionTopicConfigs
        return {"cleanup.policy": fixed("compact", "TransactionStateManager"),
                "segment.bytes": from_broker("transaction.state.log.segment.bytes"),
                "min.insync.replicas": from_broker("transaction.state.log.min.isr"),
                "unclean.leader.election.enable": fixed("false", "TransactionStateManager"),
                "compression.type": fixed("uncompressed", "TransactionStateManager")}
    if topic == "__remote_log_metadata":
        # TopicBasedRemoteLogMetadataManager.createRemoteLogMetadataTopicRequest (3.6+; remote.storage.enable
        # =false added in 3.7): retention.ms from remote.log.metadata.topic.retention.ms (default -1, kept
        # forever), read with the RLMM's prefix (remote.log.metadata.manager.impl.prefix, default rlmm.config.)
        prefix = broker.merged.get("remote.log.metadata.manager.impl.prefix", ("rlmm.config.", None))[0]
        name = f"{prefix}remote.log.metadata.topic.retention.ms"
        raw, source = broker.merged.get(name, ("-1", None))
        where = f"{name}={raw}, {source}" if source else f"{name} unset, -1"
        return {"retention.ms": (raw, Source("internal", f"{topic} is created with it ({where})")),
                "cleanup.policy": fixed("delete", "TopicBasedRemoteLogMetadataManager"),
                "remote.storage.enable": fixed("false", "TopicBasedRemoteLogMetadataManager")}
    if topic == "__share_group_state":       # ShareCoordinatorService.shareGroupStateTopicConfigs (4.0)
        return {"cleanup.policy": fixed("delete", "ShareCoordinatorService"),
                "segment.bytes": from_broker("share.coordinator.state.topic.segment.bytes"),
                "compression.type": fixed("producer", "ShareCoordinatorService")}
    return {}


def _metadata_log_config(broker: BrokerConfig) -> dict:
    """``KafkaMetadataLog.apply``: the only overrides of ``__cluster_metadata``'s LogConfig."""
    seg_bytes, seg_ms = broker.setting("metadata.log.segment.bytes"), broker.setting("metadata.log.segment.ms")
    kraft = lambda v, why: (v, Source("kraft", f"KafkaMetadataLog ({why})"))    # noqa: E731
    return {"segment.bytes": kraft(format_value(seg_bytes.value), f"metadata.log.segment.bytes, {seg_bytes.source}"),
            "segment.ms": kraft(format_value(seg_ms.value), f"metadata.log.segment.ms, {seg_ms.source}"),
            "retention.ms": kraft("-1", "retention is by snapshots"),
            "retention.bytes": kraft("-1", "retention is by snapshots"),
            "file.delete.delay.ms": kraft("60000", "log.segment.delete.delay.ms default")}


def resolve_topic(topic: str, broker: BrokerConfig, overrides: dict | None, *, all_flags: dict | None = None,
                  topic_flags: dict | None = None, described: dict | None = None,
                  use_internal_defaults: bool = False) -> TopicConfig:
    """The effective configuration of ``topic``. ``overrides``, ``described``, ``all_flags`` and
    ``topic_flags`` map key -> (raw text, Source). Raises ConfigError for every malformed value and for
    flags naming keys Kafka does not know."""
    tc = TopicConfig(topic)
    problems: list[ConfigProblem] = []
    layers: list[dict] = []
    if topic == METADATA_TOPIC:
        tc.managed_by_kraft = True
        base = {k: Setting(k, d.default, Source("kafka_default", f"Kafka's default for {k}"))
                for k, d in TOPIC_KEYS.items()}
        layers.append(_metadata_log_config(broker))
    else:
        base = {}
        for key in TOPIC_KEYS:
            try:
                base[key] = broker.topic_default(key)
            except ConfigError as e:
                problems.extend(e.problems)
        if described:
            layers.append(described)
        if use_internal_defaults:
            layers.append(_internal_creation_overrides(topic, broker))
        layers.append(overrides or {})
    layers += [all_flags or {}, topic_flags or {}]
    for layer in layers:
        for key, (raw, source) in layer.items():
            keydef = TOPIC_KEYS.get(key)
            if keydef is None:
                if source.kind == "flag":
                    problems.append(ConfigProblem(topic, key, raw, source, "unknown topic configuration"))
                else:
                    tc.notes.append(f"{key}={raw} from {source}: not a topic configuration kafkalog knows "
                                    "(a newer Kafka's?); ignored, as the broker ignores unknown keys")
                continue
            if raw is None:
                continue
            try:
                base[key] = Setting(key, parse_value(keydef, raw), source)
            except BadValue as e:
                problems.append(ConfigProblem(topic, key, raw, source, str(e)))
    if problems:
        raise ConfigError(problems)
    tc.settings = base
    _decide_tiered(tc, broker)
    return tc


def _decide_tiered(tc: TopicConfig, broker: BrokerConfig) -> None:
    if not tc.value("remote.storage.enable"):
        tc.tiered_reason = "remote.storage.enable=false"
        return
    special = tc.internal or tc.topic in (REMOTE_LOG_METADATA_TOPIC, METADATA_TOPIC)
    if tc.compact or special:
        tc.tiered_reason = ("internal topic" if special else "compacted topic") + \
                           ": Kafka never tiers it (UnifiedLog.isRemoteLogEnabled)"
        return
    system = broker.remote_storage_system_enable
    if system is False:
        tc.tiered_reason = "remote.log.storage.system.enable=false on this broker"
        return
    tc.tiered = True
    tc.tiered_reason = f"remote.storage.enable=true ({tc['remote.storage.enable'].source})" + (
        "" if system else "; remote.log.storage.system.enable unknown without --server-properties, "
                          "assumed true (the safe side)")
