"""The coordinators' settings the state views need, each with its source, from the one configuration resolver
(``config_resolver.ConfigResolver``) that retain and compact use, with Kafka's types and validators.

* ``offsets.retention.minutes`` (``GroupCoordinatorConfig``, int, at least 1, default 10080 = 7 days; 3.x
  ``KafkaConfig.offsetsRetentionMs`` and 4.x ``GroupCoordinatorConfig.offsetsRetentionMs`` both multiply it by
  60,000): how long the group coordinator keeps an offset (``--offsets-retention-ms`` overrides it);
* ``offsets.topic.num.partitions`` / ``transaction.state.log.num.partitions`` (int, at least 1, default 50):
  the partition count a coordinator hashes a group or transactional id with. The KRaft metadata of a log
  directory holds the topic's real count and wins (the property only sizes a topic still to be created);
  ``--offsets-partitions`` overrides both.

A value Kafka refuses in server.properties stops the broker (``KafkaConfig`` validation); here it is a
``ConfigError`` (exit 3), never a silent default.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

MINUTE_MS = 60_000


@dataclass
class CoordinatorConfig:
    offsets_retention_ms: int
    retention_source: str
    partitions: dict = field(default_factory=dict)    # internal topic -> (count, source in words)
    notes: list = field(default_factory=list)         # KRaft metadata that could not be read, in words
    resolvers: dict = field(default_factory=dict)     # log directory (None: none given) -> its ConfigResolver

    def partition_count(self, topic: str) -> tuple[int, str]:
        return self.partitions[topic]


#: internal topic -> the broker property that sizes it
PARTITION_KEYS = {"__consumer_offsets": "offsets.topic.num.partitions",
                  "__transaction_state": "transaction.state.log.num.partitions"}


def coordinator_config(logdirs, *, server_properties: str | Path | None = None,
                       offsets_retention_ms: int | None = None,
                       offsets_partitions: int | None = None) -> CoordinatorConfig:
    """The coordinators' settings for the log directories ``logdirs`` (their KRaft metadata, the first that
    knows an internal topic giving its partition count), ``server_properties`` and the command's flags.
    Raises ``topic_config.ConfigError`` for a value Kafka refuses, OSError for a file that cannot be read."""
    from .config_resolver import ConfigResolver
    by_dir = {ld: ConfigResolver.open(ld, server_properties=server_properties, metadata_problems_as_notes=True,
                                      remote_storage=False) for ld in list(logdirs) or [None]}
    resolvers = list(by_dir.values())
    notes = [r.metadata_problem for r in resolvers if r.metadata_problem]
    first = resolvers[0]
    if offsets_retention_ms is not None:
        retention, source = offsets_retention_ms, "--offsets-retention-ms"
    else:
        st = first.broker_setting("offsets.retention.minutes")
        retention = st.value * MINUTE_MS
        source = _said(st, "offsets.retention.minutes")
    cc = CoordinatorConfig(retention, source, notes=notes, resolvers=by_dir)
    for topic, key in PARTITION_KEYS.items():
        if offsets_partitions is not None and topic == "__consumer_offsets":
            cc.partitions[topic] = (offsets_partitions, "--offsets-partitions")
            continue
        known = next((s for s in (r.internal_partitions(topic, key) for r in resolvers) if s is not None), None)
        st = known if known is not None else first.broker_setting(key)
        cc.partitions[topic] = (st.value, str(st.source) if known is not None else _said(st, key))
    return cc


def _said(st, key: str) -> str:
    """A broker property's source in words: ``offsets.retention.minutes=60 in server.properties``."""
    if st.source.kind == "kafka_default":
        return f"Kafka's default {key}={st.value}"
    return f"{key}={st.value} in {st.source.detail.split(' (')[0]}"
