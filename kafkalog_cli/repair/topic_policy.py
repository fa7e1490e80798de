"""Which of Kafka's clean-ups applies to a partition, and with which values: from a partition's resolved
configuration (``engine/config_resolver``) to ``retain``'s retention policy and ``compact``'s cleaner
settings. Pure: no file is read here.

How the broker decides (Kafka 2.x-4.0, same in every version unless noted):

* ``LogManager.cleanupLogs`` calls ``UnifiedLog.deleteOldSegments`` for every log whose ``cleanup.policy``
  lacks ``compact`` (``LogCleanerManager.pauseCleaningForNonCompactedPartitions``); the log cleaner calls it
  after each round for every compacted log (``LogCleanerManager.deletableLogs``, "as they may have segments
  that precede the start offset"). ``deleteOldSegments`` always runs the log-start-offset pass and runs the
  ``retention.bytes`` and ``retention.ms`` passes only when ``cleanup.policy`` contains ``delete``
  (``LogConfig.delete``). So a ``compact`` topic loses only what lies below its log start offset, and a
  ``compact,delete`` topic gets both retention (``retain``) and cleaning (``compact``).
* ``LogCleanerManager.grabFilthiestCompactedLog`` cleans only logs whose ``cleanup.policy`` contains
  ``compact``.
* ``__cluster_metadata`` is not a ``LogManager`` log (``KafkaMetadataLog``: the Raft layer deletes by
  snapshots); neither command touches it.
* A tiered topic (``UnifiedLog.isRemoteLogEnabled``) with remote copy enabled (``remoteLogEnabledAndRemote
  CopyEnabled``, 3.9+; every tiered topic in 3.6-3.8) uses ``local.retention.ms/bytes``, deletes a local segment
  only once it is uploaded or below the log start offset (``deletableSegments.isSegmentEligibleForDeletion``),
  and then moves only the local log start offset (``incrementStartOffset`` ->
  ``maybeIncrementLocalLogStartOffset``); see ``retain_plan``.
* The offset map of a cleaner thread holds ``log.cleaner.dedupe.buffer.size / log.cleaner.threads`` bytes,
  at most 2^31-1 (``LogCleaner.CleanerThread``), filled to ``log.cleaner.io.buffer.load.factor``.

kafkalog's own rule: a time or size limit is applied only when something other than Kafka's built-in
default sets it (the broker's own files, the KRaft metadata, a flag); the others are left out of the
run and said so once (``RetentionSettings.drop_builtin_defaults``, ``builtin_default_message``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import units
from .cleaner import CleanerConfig

INT_MAX = (1 << 31) - 1

#: Directory statuses (``ConfigResolver.partition``) of directories no command may touch.
NOT_LIVE = ("deleted_topic", "unknown_topic", "id_mismatch")


@dataclass(frozen=True)
class Used:
    """One value a command used, with where it came from (for reports)."""
    key: str
    value: Any
    text: str
    source: str
    kind: str

    @property
    def readable(self) -> str | None:
        return units.setting(self.key, self.value)

    def describe(self) -> str:
        extra = self.readable
        return f"{self.key}={self.text}{f' ({extra})' if extra else ''} from {self.source}"

    def as_dict(self) -> dict:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        out = {"key": self.key, "value": value, "source": self.source, "source_kind": self.kind}
        if self.readable:
            out["readable"] = self.readable
        return out


def used(setting, key: str | None = None) -> Used:
    """A ``topic_config.Setting`` as used (``key`` renames it, e.g. local retention shown as such)."""
    return Used(key or setting.key, setting.value, setting.text, str(setting.source), setting.source.kind)


def untouchable(pc) -> str | None:
    """Why a partition directory must be left alone (None: it is a live partition of its topic). A KRaft
    broker (3.7+, ``LogManager.findStrayReplicas``) treats a log whose topic id the metadata does not hold
    as a stray; kafkalog never deletes or rewrites such data on its own."""
    if pc.status not in NOT_LIVE:
        return None
    return (f"{pc.message}: a broker would treat it as a stray log, not as part of topic {pc.topic} (remove "
            "or move it yourself once you are sure it is not needed)")


# --- retain ------------------------------------------------------------------------------------------

@dataclass
class RetentionSettings:
    """What ``deleteOldSegments`` applies to one partition."""
    delete: bool                         # cleanup.policy contains delete: the size and time passes run
    retention_ms: Used | None            # the limit used (local.retention.ms for tiered topics), None: no pass
    retention_bytes: Used | None
    tiered: bool = False                 # remote copy enabled: the upload gate, only the local log start moves
    remote_log_enabled: bool = False     # UnifiedLog.remoteLogEnabled: the log start checkpoint always has an entry
    remote_offset: int | None = None     # highest offset known to be in remote storage (None: unknown)
    remote_source: str = ""
    shown: list = field(default_factory=list)   # every value that decided something, for the report
    notes: list = field(default_factory=list)

    def builtin_defaults(self) -> list[Used]:
        """The limits that would delete something and come only from Kafka's built-in defaults."""
        return [u for u in (self.retention_ms, self.retention_bytes)
                if u is not None and u.value >= 0 and u.kind == "kafka_default"]

    def drop_builtin_defaults(self) -> list[Used]:
        """Leave out the limits only Kafka's built-in defaults set (the run applies every other rule); returns
        what was left out."""
        dropped = self.builtin_defaults()
        for u in dropped:
            setattr(self, "retention_ms" if u.key.endswith(".ms") else "retention_bytes", None)
        return dropped


def retention_settings(pc) -> RetentionSettings:
    cfg = pc.config
    policy = used(cfg["cleanup.policy"])
    shown = [policy]
    rs = RetentionSettings(cfg.delete, None, None, tiered=cfg.remote_copy_enabled, remote_log_enabled=cfg.tiered)
    if cfg.tiered:
        shown.append(used(cfg["remote.storage.enable"]))
        rs.notes.append(f"tiered topic: {cfg.tiered_reason}")
        if not cfg.remote_copy_enabled:
            shown.append(used(cfg["remote.log.copy.disable"]))
            rs.notes.append("tiered topic with remote copy disabled: Kafka applies retention.ms/bytes and moves the "
                            "log start offset itself (UnifiedLog.remoteLogEnabledAndRemoteCopyEnabled, 3.9+)")
    if rs.delete:
        for which in ("ms", "bytes"):
            st = cfg.local_retention(which)
            name = f"local.retention.{which}" if rs.tiered else f"retention.{which}"
            u = used(st, name)
            setattr(rs, f"retention_{which}", u)
            shown.append(u)
    else:
        rs.notes.append(f"cleanup.policy={policy.text or '(empty)'} has no 'delete': Kafka applies only the log "
                        "start offset to it (retention.ms and retention.bytes need cleanup.policy=delete)")
    if rs.tiered:
        remote = pc.remote
        rs.remote_offset = remote.offset if remote is not None else None
        rs.remote_source = remote.source if remote is not None else "unknown"
    rs.shown = shown
    return rs


def refused_request(refusals: list) -> str | None:
    """The message refusing a whole request ((partition name, ``delete_records_refusal`` or None), ...), or
    None. Kafka answers each partition of a DeleteRecords request on its own; kafkalog refuses the whole
    request before it reads a log or changes a file: a request naming such a partition is a mistaken one (an
    offsets file for the wrong topics), and running the rest of it would leave it half-applied."""
    lines = [f"{name}: {why[1]}" for name, why in refusals if why is not None]
    if not lines:
        return None
    one = len(lines) == 1
    return (f"Kafka refuses DeleteRecords for {'this partition' if one else f'{len(lines)} partitions'}; nothing "
            f"was changed (remove {'it' if one else 'them'} from the request):\n" + "\n".join(lines))


def policy_unknown(pc) -> bool:
    """True when no source names the topic's cleanup.policy: no KRaft metadata, no --topic-configs (a topic
    absent from one has no override, so the broker default applies), no --config for it. A ZooKeeper-era
    directory given alone: its topics' overrides are in ZooKeeper, and a compacted topic looks like one of
    Kafka's default policy, delete."""
    return not pc.overrides_known and pc.config["cleanup.policy"].source.kind not in (
        "flag", "topic", "internal", "described")


def unknown_policy_refusal(pcs: list, lead: str = "") -> str | None:
    """The message refusing a request that names a partition whose cleanup.policy is unknown
    (``policy_unknown``), or None. Kafka refuses DeleteRecords on a compacted topic (POLICY_VIOLATION,
    ``Partition.deleteRecordsOnLeader``): without the policy kafkalog cannot answer as Kafka would, and taking
    Kafka's built-in default (delete) could delete what the broker keeps, so it refuses until a source names
    it. ``lead``: the option the refusal is about (retain's --log-start-offset)."""
    import textwrap
    by_topic: dict[str, list[int]] = {}
    for pc in pcs:
        if policy_unknown(pc):
            by_topic.setdefault(pc.topic, []).append(pc.partition)
    if not by_topic:
        return None
    n = len(by_topic)
    lines = [f"{lead}no source names the cleanup.policy of {'this topic' if n == 1 else f'{n} topics'}:"]
    for topic in sorted(by_topic):
        parts = sorted(by_topic[topic])
        text = f"{topic} (partition{'s' if len(parts) > 1 else ''} {', '.join(map(str, parts))})"
        lines += textwrap.wrap(text, 72, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
    example = sorted(by_topic)[0] if n == 1 else "TOPIC"
    lines += [
        "There is no KRaft metadata in the log directory, no --topic-configs and no",
        "--config TOPIC:cleanup.policy=... (a ZooKeeper-mode cluster keeps topic",
        "overrides in ZooKeeper). Kafka refuses DeleteRecords on a compacted topic",
        "(POLICY_VIOLATION), so kafkalog does not assume Kafka's default, delete:",
        "nothing was changed. Confirm the policy with",
        "  --topic-configs FILE  the output of kafka-configs.sh --describe",
        "                        --entity-type topics (a topic absent from it has",
        "                        no override: the broker's default applies, from",
        "                        --server-properties if given), or",
        f"  --config {example}:cleanup.policy=delete" + ("" if n == 1 else "  (for each topic it is true of)")]
    return "\n".join(lines)


def delete_records_settings(pc) -> RetentionSettings:
    """What delete-records applies: only the log-start-offset pass (no time or size limit), with the
    tiered facts that decide how the log start offset is kept (``UnifiedLog.maybeIncrementLogStartOffset``)."""
    cfg = pc.config
    rs = RetentionSettings(False, None, None, tiered=cfg.remote_copy_enabled, remote_log_enabled=cfg.tiered)
    rs.notes.append("delete-records: only the log start offset moves; no retention by time or size runs")
    if rs.tiered:
        remote = pc.remote
        rs.remote_offset = remote.offset if remote is not None else None
        rs.remote_source = remote.source if remote is not None else "unknown"
    return rs


def delete_records_refusal_by_name(topic: str) -> tuple[str, str] | None:
    """(kind, why) when Kafka refuses DeleteRecords for every partition of ``topic`` by its name alone: an
    internal topic is answered INVALID_TOPIC_EXCEPTION before its configuration is looked at."""
    from ..engine.topic_config import INTERNAL_TOPICS, METADATA_TOPIC
    if topic in INTERNAL_TOPICS:           # Topic.isInternal (__share_group_state from 3.9)
        return ("internal_topic", f"{topic} is an internal topic: Kafka refuses to delete its records, whatever "
                "its cleanup.policy (INVALID_TOPIC_EXCEPTION, ReplicaManager.deleteRecordsOnLocalLog, 0.11–4.x)")
    if topic == METADATA_TOPIC:
        return ("internal_topic", "the KRaft metadata log is not a topic partition the broker serves: "
                "DeleteRecords cannot reach it (the Raft layer deletes it by snapshots)")
    return None


def delete_records_refusal(pc) -> tuple[str, str] | None:
    """(kind, why) when Kafka refuses DeleteRecords for this partition: by its topic's name
    (``delete_records_refusal_by_name``), or by its configuration (``Partition.deleteRecordsOnLeader``,
    0.11–4.x): POLICY_VIOLATION unless ``cleanup.policy`` contains
    ``delete``. Kafka 4.x (checked: 4.4.0) refuses only a topic that is compacted and not ``delete``: an empty
    cleanup.policy (infinite retention, 4.x) is accepted there and refused by 3.x; kafkalog refuses it, as
    the stricter versions do."""
    by_name = delete_records_refusal_by_name(pc.topic)
    cfg = pc.config
    if by_name is not None or cfg.delete:
        return by_name
    policy = used(cfg["cleanup.policy"])
    empty = "" if policy.text else ("; Kafka 4.x accepts an empty cleanup.policy, 3.x refuses it, and so does "
                                    "kafkalog")
    return ("policy_violation", f"cleanup.policy={policy.text or '(empty)'} (from {policy.source}) has no "
            f"'delete': Kafka refuses to delete records of this topic (POLICY_VIOLATION, "
            f"Partition.deleteRecordsOnLeader, 0.11–4.x){empty}")


# --- compact -----------------------------------------------------------------------------------------

#: Topic keys of the cleaner, with the CleanerConfig field each sets.
CLEANER_FIELDS = (("min.cleanable.dirty.ratio", "min_cleanable_ratio"),
                  ("delete.retention.ms", "delete_retention_ms"),
                  ("min.compaction.lag.ms", "min_compaction_lag_ms"),
                  ("max.compaction.lag.ms", "max_compaction_lag_ms"),
                  ("segment.bytes", "segment_bytes"), ("segment.index.bytes", "segment_index_bytes"),
                  ("index.interval.bytes", "index_interval_bytes"))


@dataclass
class CleaningSettings:
    compact: bool
    config: CleanerConfig
    shown: list = field(default_factory=list)
    why_not: str | None = None


def offset_map_memory(broker, flag: int | None) -> tuple[int, float, list[Used]]:
    """(bytes of one cleaner thread's offset map, load factor, the values used), as ``LogCleaner.CleanerThread``
    (0.9-4.x): ``min(log.cleaner.dedupe.buffer.size / log.cleaner.threads, Int.MaxValue)``. ``flag``
    (``--dedupe-buffer-bytes``) stands for ``log.cleaner.dedupe.buffer.size``, the cleaners' total."""
    load, threads = broker.setting("log.cleaner.io.buffer.load.factor"), broker.setting("log.cleaner.threads")
    if flag is not None:
        size = Used("log.cleaner.dedupe.buffer.size", flag, str(flag), f"--dedupe-buffer-bytes {flag}", "flag")
    else:
        size = used(broker.setting("log.cleaner.dedupe.buffer.size"))
    per_thread = min(size.value // max(threads.value, 1), INT_MAX)
    return per_thread, load.value, [size, used(threads), used(load)]


def offset_map_problem(memory: int, load: float) -> str | None:
    """Why a cleaner with this offset map cannot make progress: ``Cleaner`` requires ``slots * load factor > 1``
    ("offset map is too small to fit in even a single message": a ``require`` in LogCleaner.scala 0.9-3.9, a
    Java ``assert`` in Cleaner.java 4.x). A broker never gets there: ``KafkaConfig`` refuses to start below
    1 MiB per cleaner thread (every version); kafkalog takes smaller maps (down to two slots) to show a
    cleaning pass by pass."""
    slots = memory // 24
    if slots * load > 1:
        return None
    return (f"an offset map of {memory} bytes ({slots} slots of 24 bytes, load factor {load}) cannot hold a single "
            "key: Kafka's cleaner refuses to start with it; give a larger log.cleaner.dedupe.buffer.size "
            "(--dedupe-buffer-bytes) or fewer log.cleaner.threads")


def cleaning_settings(pc, broker, dedupe_flag: int | None) -> CleaningSettings:
    cfg = pc.config
    policy = used(cfg["cleanup.policy"])
    memory, load, map_rows = offset_map_memory(broker, dedupe_flag)
    values = {f: cfg.value(k) for k, f in CLEANER_FIELDS}
    cc = CleanerConfig(dedupe_buffer_bytes=memory, load_factor=load, **values)
    cs = CleaningSettings(cfg.compact, cc, [policy] + [used(cfg[k]) for k, _f in CLEANER_FIELDS] + map_rows)
    if not cfg.compact:
        cs.why_not = (f"cleanup.policy={policy.text or '(empty)'} from {policy.source}: Kafka's log cleaner only "
                      f"compacts topics whose cleanup.policy contains 'compact' (give --config "
                      f"{pc.topic}:cleanup.policy=compact to compact it anyway)")
    return cs


def builtin_default_message(cases: list[tuple[str, Used]]) -> str:
    """One line for the limits left out because only Kafka's built-in defaults set them: which values, for
    which topics, and how to apply them."""
    by_value: dict[tuple, list[str]] = {}
    for topic, u in cases:
        by_value.setdefault((u.key, u.text, u.readable), [])
        if topic not in by_value[(u.key, u.text, u.readable)]:
            by_value[(u.key, u.text, u.readable)].append(topic)
    parts = []
    for (key, text, readable), topics in by_value.items():
        shown = ", ".join(topics[:6]) + (f" and {len(topics) - 6} more" if len(topics) > 6 else "")
        parts.append(f"{key}={text}{f' ({readable})' if readable else ''} for {shown}")
    return ("not applied, only Kafka's built-in default sets it: " + "; ".join(parts) + " (--use-defaults "
            "applies it; --server-properties, --topic-configs or --config give the broker's own values)")
