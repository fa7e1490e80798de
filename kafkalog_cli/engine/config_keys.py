"""Kafka's topic-level configuration keys and the broker properties that back them: types, defaults and
validators, and Kafka's rules for turning the text of a value into a typed value.

Mirrors (trunk 2024-10 = 4.0 development; 3.x alike unless a row says otherwise):

* ``LogConfig.CONFIG`` (``storage/.../internals/log/LogConfig.java``; ``core/.../kafka/log/LogConfig.scala``
  before 3.5) — each topic key's type, default and validator;
* ``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS`` — the broker properties behind each topic key,
  in priority order, with their unit conversion (``log.retention.ms`` > ``.minutes`` > ``.hours``);
* ``KafkaConfig`` / ``LogConfig.SERVER_CONFIG_DEF`` / ``CleanerConfig.CONFIG_DEF`` /
  ``RemoteLogManagerConfig`` — the broker properties' own types, defaults and validators;
* ``DynamicLogConfig.ReconfigurableConfigs`` and ``LogCleaner.ReconfigurableConfigs`` — the broker
  properties a dynamic broker configuration may set (others are ignored by ``fromPersistentProps``);
* ``ConfigDef.parseType`` — how a value's text is parsed (trimmed of Java whitespace; ``Long.parseLong``,
  ``Integer.parseInt``, ``Double.parseDouble``, ``true``/``false`` in any case, lists split on commas).
"""
from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

from ..errors import KafkalogError

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
HOUR_MS, MINUTE_MS = 3_600_000, 60_000

_JAVA_INT = re.compile(r"[+-]?\d+\Z")
# java.lang.Double.valueOf grammar (FloatingDecimal.readJavaFormatString), decimal and hexadecimal forms
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+)[fFdD]?)\Z")
_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*")


class BadValue(KafkalogError, ValueError):
    """A value Kafka's ``ConfigDef`` would reject; ``reason`` is Kafka's wording where it has one."""


def java_trim(text: str) -> str:
    """``String.trim``: strips code points up to U+0020 (space and control characters) at both ends."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def _parse_int(text: str, lo: int, hi: int, kind: str) -> int:
    if not _JAVA_INT.match(text):
        raise BadValue(f"not a {kind}")
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 19:                            # beyond any long (and Python's 4,300-digit int() limit)
        raise BadValue(f"out of range for a {kind}")
    value = -int(digits) if text.startswith("-") else int(digits)   # leading zeros past int()'s limit too
    if not lo <= value <= hi:
        raise BadValue(f"out of range for a {kind}")
    return value


def _parse_double(text: str) -> float:
    if not _JAVA_DOUBLE.match(text):
        raise BadValue("not a number")
    body = text.rstrip("fFdD") if not text.endswith(("NaN", "Infinity")) else text
    if "x" in body.lower() and "p" in body.lower():
        return float.fromhex(body)
    return float(body.replace("Infinity", "inf"))


def parse_typed(kind: str, raw: str) -> Any:
    """``ConfigDef.parseType`` for a value given as text (the form of every source kafkalog reads)."""
    text = java_trim(raw)
    if kind == "int":
        return _parse_int(text, INT_MIN, INT_MAX, "32-bit integer")
    if kind == "long":
        return _parse_int(text, LONG_MIN, LONG_MAX, "64-bit integer")
    if kind == "double":
        return _parse_double(text)
    if kind == "boolean":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise BadValue("Expected value to be either true or false")
    if kind == "list":
        return () if not text else tuple(_COMMA_WITH_WHITESPACE.split(text))
    return text                                            # string


# --- validators (ConfigDef.Range / ValidString / ValidList and Kafka's own) ------------------------

def at_least(lo) -> Callable[[Any], str | None]:
    return lambda v: None if v >= lo else f"Value must be at least {lo}"


def between(lo, hi) -> Callable[[Any], str | None]:
    # Range.ensureValid compares with < and >, so NaN passes (as in Kafka)
    return lambda v: f"Value must be no more than {hi}" if v > hi else (
        f"Value must be at least {lo}" if v < lo else None)


def one_of(*allowed: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in allowed else f"String must be one of: {', '.join(allowed)}"


def list_of(*allowed: str) -> Callable[[Any], str | None]:
    def check(values):
        bad = [x for x in values if x not in allowed]
        return f"Invalid value {bad[0]} for configuration: String must be one of: {', '.join(allowed)}" \
            if bad else None
    return check


def _gzip_level(v: int) -> str | None:
    return None if v == -1 or 1 <= v <= 9 else "Value must be between 1 and 9 or equal to -1"


_THROTTLED = re.compile(r"(\*|\d+:\d+)\Z")


def _throttled_replicas(values) -> str | None:
    """``ThrottledReplicaListValidator``: ``*`` alone, or ``partition:broker`` pairs."""
    items = [java_trim(v) for v in values]
    if items == ["*"] or all(re.fullmatch(r"\d+:\d+", i) for i in items):
        return None
    return "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],..."


class KeyDef(NamedTuple):
    name: str
    kind: str                 # int long double boolean list string
    default: Any
    check: Callable[[Any], str | None] | None = None


class Synonym(NamedTuple):
    name: str
    factor: int = 1           # ConfigSynonym.HOURS_TO_MILLISECONDS etc.


def _k(name, kind, default, check=None):
    return KeyDef(name, kind, default, check)


#: LogConfig.CONFIG (trunk 2024-10). retention.ms ≥ -1 holds from 2.4 (before: any long, negative = none).
TOPIC_KEYS: dict[str, KeyDef] = {k.name: k for k in (
    _k("segment.bytes", "int", 1 << 30, at_least(14)),
    _k("segment.ms", "long", 7 * 24 * HOUR_MS, at_least(1)),
    _k("segment.jitter.ms", "long", 0, at_least(0)),
    _k("segment.index.bytes", "int", 10 * 1024 * 1024, at_least(4)),
    _k("flush.messages", "long", LONG_MAX, at_least(1)),
    _k("flush.ms", "long", LONG_MAX, at_least(0)),
    _k("retention.bytes", "long", -1),
    _k("retention.ms", "long", 7 * 24 * HOUR_MS, at_least(-1)),
    _k("max.message.bytes", "int", 1024 * 1024 + 12, at_least(0)),
    _k("index.interval.bytes", "int", 4096, at_least(0)),
    _k("delete.retention.ms", "long", 24 * HOUR_MS, at_least(0)),
    _k("min.compaction.lag.ms", "long", 0, at_least(0)),
    _k("max.compaction.lag.ms", "long", LONG_MAX, at_least(1)),
    _k("file.delete.delay.ms", "long", 60_000, at_least(0)),
    _k("min.cleanable.dirty.ratio", "double", 0.5, between(0, 1)),
    _k("cleanup.policy", "list", ("delete",), list_of("compact", "delete")),
    _k("unclean.leader.election.enable", "boolean", False),
    _k("min.insync.replicas", "int", 1, at_least(1)),
    _k("compression.type", "string", "producer",
       one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _k("compression.gzip.level", "int", -1, _gzip_level),
    _k("compression.lz4.level", "int", 9, between(1, 17)),
    _k("compression.zstd.level", "int", 3, between(-131072, 22)),
    _k("preallocate", "boolean", False),
    _k("message.format.version", "string", "3.0-IV1"),
    _k("message.timestamp.type", "string", "CreateTime", one_of("CreateTime", "LogAppendTime")),
    _k("message.timestamp.difference.max.ms", "long", LONG_MAX, at_least(0)),
    _k("message.timestamp.before.max.ms", "long", LONG_MAX, at_least(0)),
    _k("message.timestamp.after.max.ms", "long", LONG_MAX, at_least(0)),
    _k("leader.replication.throttled.replicas", "list", (), _throttled_replicas),
    _k("follower.replication.throttled.replicas", "list", (), _throttled_replicas),
    _k("message.downconversion.enable", "boolean", True),
    _k("remote.storage.enable", "boolean", False),
    _k("local.retention.ms", "long", -2, at_least(-2)),
    _k("local.retention.bytes", "long", -2, at_least(-2)),
    _k("remote.log.copy.disable", "boolean", False),
    _k("remote.log.delete.on.disable", "boolean", False),
)}


def _log(*names: str) -> tuple[Synonym, ...]:
    return tuple(Synonym("log." + n) for n in names)


#: ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS: topic key -> broker properties, highest priority first.
SYNONYMS: dict[str, tuple[Synonym, ...]] = {
    "segment.bytes": _log("segment.bytes"),
    "segment.ms": (Synonym("log.roll.ms"), Synonym("log.roll.hours", HOUR_MS)),
    "segment.jitter.ms": (Synonym("log.roll.jitter.ms"), Synonym("log.roll.jitter.hours", HOUR_MS)),
    "segment.index.bytes": _log("index.size.max.bytes"),
    "flush.messages": _log("flush.interval.messages"),
    "flush.ms": _log("flush.interval.ms", "flush.scheduler.interval.ms"),
    "retention.bytes": _log("retention.bytes"),
    "retention.ms": (Synonym("log.retention.ms"), Synonym("log.retention.minutes", MINUTE_MS),
                     Synonym("log.retention.hours", HOUR_MS)),
    "max.message.bytes": (Synonym("message.max.bytes"),),
    "index.interval.bytes": _log("index.interval.bytes"),
    "delete.retention.ms": _log("cleaner.delete.retention.ms"),
    "min.compaction.lag.ms": _log("cleaner.min.compaction.lag.ms"),
    "max.compaction.lag.ms": _log("cleaner.max.compaction.lag.ms"),
    "file.delete.delay.ms": _log("segment.delete.delay.ms"),
    "min.cleanable.dirty.ratio": _log("cleaner.min.cleanable.ratio"),
    "cleanup.policy": _log("cleanup.policy"),
    "unclean.leader.election.enable": (Synonym("unclean.leader.election.enable"),),
    "min.insync.replicas": (Synonym("min.insync.replicas"),),
    "compression.type": (Synonym("compression.type"),),
    "compression.gzip.level": (Synonym("compression.gzip.level"),),
    "compression.lz4.level": (Synonym("compression.lz4.level"),),
    "compression.zstd.level": (Synonym("compression.zstd.level"),),
    "preallocate": _log("preallocate"),
    "message.format.version": _log("message.format.version"),
    "message.timestamp.type": _log("message.timestamp.type"),
    "message.timestamp.difference.max.ms": _log("message.timestamp.difference.max.ms"),
    "message.timestamp.before.max.ms": _log("message.timestamp.before.max.ms"),
    "message.timestamp.after.max.ms": _log("message.timestamp.after.max.ms"),
    "message.downconversion.enable": _log("message.downconversion.enable"),
    "local.retention.ms": _log("local.retention.ms"),
    "local.retention.bytes": _log("local.retention.bytes"),
}

def _twin(topic_key: str) -> KeyDef:
    """The broker property a topic key falls back to (its first synonym), where Kafka defines the two alike:
    same type, default and validator (LogConfig.CONFIG and KafkaConfig / ServerLogConfigs)."""
    k = TOPIC_KEYS[topic_key]
    return KeyDef(SYNONYMS[topic_key][0].name, k.kind, k.default, k.check)


#: Broker properties (KafkaConfig and the config classes it includes) kafkalog reads: type, default, check.
#: Those of the time-based topic keys differ from their topic key (no default, or hours/minutes).
BROKER_KEYS: dict[str, KeyDef] = {k.name: k for k in (
    _twin("segment.bytes"),
    _k("log.roll.ms", "long", None),
    _k("log.roll.hours", "int", 168, at_least(1)),
    _k("log.roll.jitter.ms", "long", None),
    _k("log.roll.jitter.hours", "int", 0, at_least(0)),
    _twin("segment.index.bytes"),
    _twin("flush.messages"),
    _k("log.flush.interval.ms", "long", None),
    _k("log.flush.scheduler.interval.ms", "long", LONG_MAX),
    _twin("retention.bytes"),
    _k("log.retention.ms", "long", None),
    _k("log.retention.minutes", "int", None),
    _k("log.retention.hours", "int", 168),
    *(_twin(k) for k in ("max.message.bytes", "index.interval.bytes", "delete.retention.ms", "min.compaction.lag.ms",
                         "max.compaction.lag.ms", "file.delete.delay.ms", "min.cleanable.dirty.ratio",
                         "cleanup.policy", "unclean.leader.election.enable", "min.insync.replicas",
                         "compression.type", "compression.gzip.level", "compression.lz4.level",
                         "compression.zstd.level", "preallocate", "message.format.version",
                         "message.timestamp.type", "message.timestamp.difference.max.ms",
                         "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
                         "message.downconversion.enable", "local.retention.ms", "local.retention.bytes")),
    # CleanerConfig.CONFIG_DEF (the key of the load factor really is "log.cleaner.io.buffer.load.factor")
    _k("log.cleaner.enable", "boolean", True),
    _k("log.cleaner.threads", "int", 1, at_least(0)),
    _k("log.cleaner.dedupe.buffer.size", "long", 128 * 1024 * 1024),
    _k("log.cleaner.io.buffer.size", "int", 512 * 1024, at_least(0)),
    _k("log.cleaner.io.buffer.load.factor", "double", 0.9),
    # RemoteLogManagerConfig; GroupCoordinatorConfig; TransactionLogConfig; KRaftConfigs
    _k("remote.log.storage.system.enable", "boolean", False),
    # the coordinators' own (GroupCoordinatorConfig, TransactionLogConfig(s), 3.x and 4.x alike): the group
    # coordinator's offsets retention and the internal topics' partition counts, the producer-state expiry
    _k("offsets.retention.minutes", "int", 7 * 24 * 60, at_least(1)),
    _k("offsets.topic.num.partitions", "int", 50, at_least(1)),
    _k("transaction.state.log.num.partitions", "int", 50, at_least(1)),
    _k("producer.id.expiration.ms", "int", 24 * HOUR_MS, at_least(1)),
    _k("offsets.topic.segment.bytes", "int", 100 * 1024 * 1024, at_least(1)),
    _k("transaction.state.log.segment.bytes", "int", 100 * 1024 * 1024, at_least(1)),
    _k("transaction.state.log.min.isr", "int", 2, at_least(1)),
    _k("share.coordinator.state.topic.segment.bytes", "int", 100 * 1024 * 1024, at_least(1)),
    _k("metadata.log.segment.bytes", "int", 1 << 30, at_least(12)),
    _k("metadata.log.segment.ms", "long", 7 * 24 * HOUR_MS),
)}

#: DynamicBrokerConfig.brokerConfigSynonyms: setting one of these removes the others of its group from the
#: layers below (``overrideProps``), so a dynamic ``log.retention.hours`` beats a static ``log.retention.ms``.
BROKER_SYNONYM_GROUPS: dict[str, tuple[str, ...]] = {}
for _group in (("log.roll.ms", "log.roll.hours"), ("log.roll.jitter.ms", "log.roll.jitter.hours"),
               ("log.retention.ms", "log.retention.minutes", "log.retention.hours")):
    for _name in _group:
        BROKER_SYNONYM_GROUPS[_name] = _group
BROKER_SYNONYM_GROUPS["log.flush.interval.ms"] = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")

#: Broker properties a dynamic (KRaft ConfigRecord / ZooKeeper /config/brokers) configuration may set, among
#: those kafkalog reads: the first synonym of every topic key except message.format.version
#: (DynamicLogConfig.ReconfigurableConfigs), the cleaner's (LogCleaner.ReconfigurableConfigs) and the
#: producer-state expiry.
DYNAMIC_BROKER_KEYS = frozenset(
    [syns[0].name for key, syns in SYNONYMS.items() if key != "message.format.version"]
    + ["log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.size",
       "log.cleaner.io.buffer.load.factor",
       "producer.id.expiration.ms"])          # DynamicBrokerConfig.DynamicProducerStateManagerConfig (3.5+)


def parse_value(keydef: KeyDef, raw: str) -> Any:
    """Typed and validated value of ``raw`` for ``keydef``; ``BadValue`` with the reason otherwise."""
    value = parse_typed(keydef.kind, raw)
    if keydef.check is not None:
        problem = keydef.check(value)
        if problem:
            raise BadValue(problem)
    return value


def format_value(value: Any) -> str:
    """A typed value as Kafka would print it (lists comma-separated, booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)
