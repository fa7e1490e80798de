"""Which group coordinator's rules apply to a log directory's ``__consumer_offsets`` partitions: those of the
Kafka release that wrote them (``group_offsets.Rules``: 2.1-3.9's ``GroupMetadataManager`` or 4.x's
``group-coordinator``; where they differ: docs/kafka-rules.md S13-S16). How it is known, first answer wins:

1. ``--kafka-version`` (the operator knows);
2. ``meta.properties`` version 0: a ZooKeeper-mode broker, so Kafka 3.9 or older (4.0 runs KRaft only);
3. the log directory's KRaft metadata: the latest ``RegisterBrokerRecord`` of this broker (else of every
   broker) says up to which ``metadata.version`` level its software supports: at most 23 is 3.x (3.9's
   production level is 21, its unstable ones 22-23), 24 and above is 4.0 or newer; else a finalized
   ``metadata.version`` (``FeatureLevelRecord``) of 24 or more (only 4.x can finalize it);
4. a 3.x broker whose server.properties enables the new coordinator (3.7
   ``group.coordinator.new.enable=true``; 3.8-3.9 ``group.coordinator.rebalance.protocols`` with
   ``consumer``) ran ``group-coordinator``; so did one that wrote KIP-848 records (types 3-8) into the
   partition, which only it writes (``groups_view`` reloads such a partition with 4.x's rules);
5. otherwise unknown: 4.x's rules, said so (``--kafka-version`` sets it).
"""
from __future__ import annotations

import re
from pathlib import Path

from .group_offsets import Rules

FIRST_4X_ONLY_LEVEL = 24          # MetadataVersion IBP_4_0_IV2: no 3.x release supports it


def parse_kafka_version(text: str) -> tuple[int, int]:
    """``3.9``, ``3.9.2``, ``4.0`` -> (major, minor). Raises ValueError."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?(?:-\S+)?\s*", text or "")
    if not m:
        raise ValueError(f"'{text}' is not a Kafka version (MAJOR.MINOR, e.g. 3.9 or 4.0)")
    return int(m.group(1)), int(m.group(2))


def forced_rules(kafka_version: str) -> Rules:
    major, _minor = parse_kafka_version(kafka_version)
    return Rules(major >= 4, f"--kafka-version {kafka_version}")


def rules_for_logdir(logdir: Path | None, resolver) -> Rules:
    """The rules of the release that wrote ``logdir`` (``resolver``: its ``ConfigResolver``, or None)."""
    from .logdir import LogDir
    if logdir is not None and (logdir / "meta.properties").exists():
        from kafkalog_formats.errors import FormatError
        try:
            meta = LogDir(logdir).meta_properties()
        except (FormatError, OSError):      # an unreadable meta.properties says nothing about the release
            meta = None
        if meta is not None and meta.version == 0:
            return _maybe_new(resolver, Rules(False, "a ZooKeeper-mode log directory (meta.properties version 0): "
                                                     "Kafka 3.9 or older"))
    md = getattr(resolver, "metadata", None)
    if md is not None:
        found = _from_metadata(md, resolver.node_id)
        if found is not None:
            return found if found.modern else _maybe_new(resolver, found)
    return Rules(True, "the release that wrote it is not known from meta.properties or KRaft metadata, so "
                       "4.x's; --kafka-version sets it")


def _from_metadata(md, node_id: int | None) -> Rules | None:
    regs = md.registrations
    mine = regs.get(node_id) if node_id is not None else None
    levels = [mine["metadata.version"][1]] if mine and "metadata.version" in mine else \
        [r["metadata.version"][1] for r in regs.values() if "metadata.version" in r]
    who = f"broker {node_id}" if mine else "the brokers"
    if levels:
        top = max(levels)
        modern = top >= FIRST_4X_ONLY_LEVEL
        return Rules(modern, f"the KRaft metadata: {who} registered supporting metadata.version level up to {top} "
                             f"({'Kafka 4.0 or newer' if modern else 'Kafka 3.x'})")
    level = md.features.get("metadata.version")
    if level is not None and level >= FIRST_4X_ONLY_LEVEL:
        return Rules(True, f"the KRaft metadata: metadata.version level {level} is finalized (Kafka 4.0 or newer)")
    return None


def _maybe_new(resolver, rules: Rules) -> Rules:
    """A 3.x broker configured to run the new group coordinator (``KafkaConfig.isNewGroupCoordinatorEnabled``)."""
    merged = resolver.broker.merged if resolver is not None else {}
    enable = merged.get("group.coordinator.new.enable", ("", None))[0].strip().lower() == "true"
    protocols = [p.strip().lower() for p in merged.get("group.coordinator.rebalance.protocols", ("", None))[0].split(",")]
    if enable or "consumer" in protocols:
        key = "group.coordinator.new.enable" if enable else "group.coordinator.rebalance.protocols"
        return Rules(True, f"{rules.source}, with {key} set in server.properties: the new group coordinator")
    return rules


def kip848_rules(rules: Rules) -> Rules:
    """The rules for a partition holding KIP-848 records that auto-detection gave 3.x's."""
    return Rules(True, f"{rules.source}, but the partition holds KIP-848 records, which only the new group "
                       "coordinator writes (3.7-3.9 with it enabled, or 4.x)")
