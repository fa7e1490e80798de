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

The same registration decides ``lookup-time max-timestamp``'s answer (``max_timestamp_rule``: 3.0-3.7's
or 3.8+'s, KAFKA-16310).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

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
    if logdir is not None and _zookeeper_mode(logdir):
        return _maybe_new(resolver, Rules(False, "a ZooKeeper-mode log directory (meta.properties version 0): "
                                                 "Kafka 3.9 or older"))
    md = getattr(resolver, "metadata", None)
    if md is not None:
        found = _from_metadata(md, resolver.node_id)
        if found is not None:
            return found if found.modern else _maybe_new(resolver, found)
    return Rules(True, "the release that wrote it is not known from meta.properties or KRaft metadata, so "
                       "4.x's; --kafka-version sets it")


def registered_level(md, node_id: int | None) -> tuple[int | None, str]:
    """(the highest ``metadata.version`` level the latest ``RegisterBrokerRecord`` of this broker, else of any
    broker, says its software supports, whose registration it is); (None, ...) without one. A broker
    registers its release's production level (``BrokerFeatures.createDefault``: ``latestProduction``, or
    ``latestTesting`` with unstable.metadata.versions.enable)."""
    regs = md.registrations
    mine = regs.get(node_id) if node_id is not None else None
    levels = [mine["metadata.version"][1]] if mine and "metadata.version" in mine else \
        [r["metadata.version"][1] for r in regs.values() if "metadata.version" in r]
    return (max(levels) if levels else None), (f"broker {node_id}" if mine else "the brokers")


def _from_metadata(md, node_id: int | None) -> Rules | None:
    top, who = registered_level(md, node_id)
    if top is not None:
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


# --- ListOffsets max-timestamp (-3): before and after KAFKA-16310 ----------------------------------------

#: MetadataVersion IBP_3_8_IV0: the production level of 3.8 (3.7.x's is IBP_3_7_IV4, 19; 3.7 offers 20 only
#: with unstable.metadata.versions.enable)
FIRST_3_8_LEVEL = 20


class MaxTimestampRule(NamedTuple):
    """Which answer ListOffsets MAX_TIMESTAMP (-3) gets (``UnifiedLog.fetchOffsetByTimestamp``). ``recorded``:
    Kafka 3.0-3.7's, the offset the segment with the largest timestamp recorded for it (its
    ``maxTimestampAndOffsetSoFar``: a batch's last offset for every batch 3.7 writes); else 3.8+'s, the first
    record holding the largest timestamp (KAFKA-16310, commit 9a6760f, first in 3.8.0; not in 3.7.1 nor the
    3.7 branch). ``source`` says how it was decided."""
    recorded: bool
    source: str


def forced_max_timestamp_rule(kafka_version: str) -> MaxTimestampRule:
    major, minor = parse_kafka_version(kafka_version)
    return MaxTimestampRule((major, minor) < (3, 8), f"--kafka-version {kafka_version}")


def max_timestamp_rule(logdir: Path | None) -> MaxTimestampRule:
    """The rule of the release that wrote ``logdir`` when its KRaft metadata says (the level its broker
    registered: below 20 is 3.7 or older, 20 and above 3.8 or newer; else a finalized level of 20 or more),
    otherwise 3.8+'s, said so (a ZooKeeper-mode directory is 3.9 or older, which does not decide it). Not told
    apart: a 3.7 broker with unstable.metadata.versions.enable registers level 20 (``latestTesting``,
    IBP_3_8_IV0) and is taken for 3.8; --kafka-version sets it."""
    unknown = ("the release that wrote it is not known from its KRaft metadata, so Kafka 3.8+'s; "
               "--kafka-version 3.7 gives 3.0-3.7's")
    if logdir is None:
        return MaxTimestampRule(False, "a partition directory outside a log directory: " + unknown)
    if _zookeeper_mode(logdir):
        return MaxTimestampRule(False, "a ZooKeeper-mode log directory (meta.properties version 0) was written by "
                                       "Kafka 3.9 or older, which does not say whether before 3.8, so Kafka 3.8+'s; "
                                       "--kafka-version 3.7 gives 3.0-3.7's")
    md, node_id = _metadata(logdir)
    if md is None:
        return MaxTimestampRule(False, unknown)
    top, who = registered_level(md, node_id)
    if top is not None:
        old = top < FIRST_3_8_LEVEL
        return MaxTimestampRule(old, f"the KRaft metadata: {who} registered supporting metadata.version level up "
                                     f"to {top} (Kafka {'3.7 or older' if old else '3.8 or newer'})")
    level = md.features.get("metadata.version")
    if level is not None and level >= FIRST_3_8_LEVEL:
        return MaxTimestampRule(False, f"the KRaft metadata: metadata.version level {level} is finalized "
                                       "(Kafka 3.8 or newer)")
    return MaxTimestampRule(False, unknown)


def _zookeeper_mode(logdir: Path) -> bool:
    """``meta.properties`` version 0: a ZooKeeper-mode broker wrote ``logdir`` (an unreadable one says nothing
    about the release)."""
    from kafkalog_formats.errors import FormatError

    from .logdir import LogDir
    if not (logdir / "meta.properties").exists():
        return False
    try:
        meta = LogDir(logdir).meta_properties()
    except (FormatError, OSError):
        return False
    return meta is not None and meta.version == 0


def _metadata(logdir: Path):
    """(the KRaft metadata of ``logdir`` or None, this broker's node id): read as the views read it; a
    metadata log that cannot be read decides nothing."""
    from kafkalog_formats.errors import FormatError

    from ..errors import KafkalogError
    from .config_resolver import ConfigResolver
    try:
        r = ConfigResolver.open(logdir, metadata_problems_as_notes=True, remote_storage=False)
    except (KafkalogError, FormatError, OSError, ValueError):
        return None, None
    return r.metadata, r.node_id
