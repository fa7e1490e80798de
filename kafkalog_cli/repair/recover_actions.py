"""What ``recover`` plans: typed actions, the plan that holds them, and the Kafka rule each follows.

Every action carries the reason it is needed and the Kafka class/method whose behaviour it reproduces (the
rules, with the Kafka versions they hold for, are tabled in docs/kafka-rules.md). The planners
(``leftovers``, ``recover_plan``) make them; ``recover_exec`` executes them through ``fileops``; the
renderers (``render/recover_report``) describe them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..engine.findings import Finding

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"

# The Kafka class/method each action follows. Scala kafka.log.Log (2.x), kafka.log.LogLoader (3.0-3.9) and
# org.apache.kafka.storage.internals.log.LogLoader (trunk) implement the same load passes.
R_PASS1 = "LogLoader.removeTempFilesAndCollectSwapFiles"
R_PASS2 = "LogLoader.load: interrupted swap completed (segments the swap replaces deleted, .swap renamed)"
R_ORPHAN = "LogLoader.loadSegmentFiles: orphaned index file"
R_PASS3 = "LogLoader.loadSegmentFiles -> LogSegment.recover"
R_PASS3_TIMEINDEX = "LogLoader.loadSegmentFiles (Kafka creates the .timeindex empty)"
R_RECOVER = "LogLoader.recoverLog -> LogSegment.recover"
R_RECOVERLOG_DELETE = "LogLoader.recoverLog"
# Kafka 2.3+ (KAFKA-8306): Log.recoverLog / LogLoader.recoverLog, trunk deleteSegmentsIfLogStartGreaterThanLogEnd
R_START_BEYOND_END = "LogLoader.recoverLog: log end below the checkpointed log start (2.3+, KAFKA-8306)"
R_NAMES = "LogLoader / LogFileUtils.offsetFromFileName (Long.parseLong of the name's offset)"
R_TMP = "kafkalog: Kafka writes checkpoints and snapshots via .tmp + rename and ignores a leftover one"
R_SNAP_ABOVE = "ProducerStateManager.truncateAndReload"
R_SNAP_CORRUPT = "ProducerStateManager.loadFromSnapshot deletes a corrupt snapshot"
R_SNAP_WRITE = "UnifiedLog.rebuildProducerState -> ProducerStateManager.takeSnapshot"
R_EPOCHS = "LeaderEpochFileCache.assign (LogSegment.recover), truncateFromEnd (LogLoader.load)"
R_EPOCHS_REBUILT = "LeaderEpochFileCache.assign as LogSegment.recover applies it"
R_KRAFT = "KafkaMetadataLog.recoverSnapshots"
R_MARKER_REMOVE = "LogManager.loadLogs (Kafka 2.8+, KAFKA-10471)"
R_MARKER_WRITE = "CleanShutdownFileHandler / LogManager.shutdown"
R_MARKER_RESTORE = "LogManager.shutdown writes it when the directory had it at start-up"
R_MARK_CLEAN_RP = "LogManager.shutdown -> checkpointRecoveryOffsetsInDir (OffsetCheckpointFile format)"
R_SALVAGE = ("kafkalog --salvage, beyond Kafka (LogSegment.recover would truncate at the first invalid batch); written "
             "through Kafka's swap protocol (LocalLog.replaceSegments: .cleaned, .swap, .deleted)")
R_SALVAGE_INDEXES = "LogSegment.recover over the batches salvage keeps"
R_SALVAGE_SNAP = ("kafkalog --salvage: a producer snapshot past the first salvaged segment describes batches that are "
                  "gone (ProducerStateManager reads the newest one at or below the recovery point)")
_CHECKPOINT_RULES = {
    "recovery-point-offset-checkpoint": "LogLoader.recoverLog: recovery point = min(checkpoint, log end)",
    "replication-offset-checkpoint": "UnifiedLog.updateHighWatermark: the high watermark is at most the log end",
    "log-start-offset-checkpoint": "kafkalog: lowered to the log end (LogLoader.recoverLog would delete every "
                                   "segment)",
    CLEANER_CHECKPOINT: "LogCleanerManager.cleanableOffsets: above the log end, reset to the log start offset "
                        "(Kafka 2.4+, KAFKA-8724)",
}


# --- actions -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Action:
    """One change. ``path`` is relative to the log directory."""
    path: str
    reason: str
    rule: str

    op = "action"

    def describe(self) -> str:
        return f"{self.op} {self.path}"


@dataclass(frozen=True)
class RemoveFile(Action):
    """Delete a file (moved into the backup directory when there is one)."""
    op = "remove"

    def describe(self) -> str:
        return f"remove {self.path}"


@dataclass(frozen=True)
class RenameFile(Action):
    """Rename ``path`` to ``target`` (completing an interrupted swap)."""
    target: str = ""
    op = "rename"

    def describe(self) -> str:
        return f"rename {self.path} -> {self.target}"


@dataclass(frozen=True)
class RemoveSegment(Action):
    """Delete a whole segment: each file renamed to ``.deleted`` (the ``.log`` first), then removed."""
    files: tuple = ()
    base_offset: int = 0
    size: int = 0
    op = "remove-segment"

    def describe(self) -> str:
        return f"remove segment {self.path} ({', '.join(f.rsplit('/', 1)[-1] for f in self.files)})"


@dataclass(frozen=True)
class TruncateLog(Action):
    """Cut a ``.log`` to ``new_size`` bytes; the bytes cut are saved to the backup first."""
    new_size: int = 0
    old_size: int = 0
    kind: str = ""
    detail: str = ""
    offset: int | None = None
    op = "truncate"

    def describe(self) -> str:
        return (f"truncate {self.path} at position {self.new_size} ({self.old_size - self.new_size} bytes cut: "
                f"{self.detail})")


@dataclass(frozen=True)
class SalvageSegment(Action):
    """Rewrite a segment as salvage keeps it: ``parts`` copied from the old ``.log`` (``("copy", start, end)``,
    ``("patch", start, end, ((offset in the batch, struct format, value), ...))``) or written (``("insert",
    bytes)``) into ``<base>.log.cleaned``, with its rebuilt ``indexes`` (suffix -> bytes, None: none), then
    swapped in as Kafka swaps a cleaned segment; ``files``: the segment's files it replaces (backed up
    first)."""
    parts: tuple = ()
    indexes: tuple = ()                # ((suffix, bytes or None), ...)
    files: tuple = ()
    old_size: int = 0
    new_size: int = 0
    mtime_ns: int | None = None
    detail: str = ""
    op = "salvage"

    def describe(self) -> str:
        return f"salvage {self.path} ({self.old_size} -> {self.new_size} bytes: {self.detail})"


@dataclass(frozen=True)
class WriteFile(Action):
    """Write a whole file atomically (temp file, fsync, rename, directory fsync); the old one is backed up."""
    data: bytes = field(default=b"", repr=False)
    what: str = ""            # index, timeindex, txnindex, snapshot, leader-epoch-checkpoint, checkpoint, marker
    old_size: int | None = None
    detail: str = ""
    changes: tuple = ()       # checkpoints: ((name, old, new), ...)
    mtime_ns: int | None = None
    op = "write"

    def describe(self) -> str:
        tail = f" ({self.detail})" if self.detail else ""
        return f"write {self.path}{tail}"


@dataclass(frozen=True)
class SyncPartition(Action):
    """fsync every file of a partition directory (before the clean-shutdown marker promises durability)."""
    op = "fsync"

    def describe(self) -> str:
        return f"fsync every file in {self.path}/"


# --- the plan --------------------------------------------------------------------------------------

@dataclass
class PartitionPlan:
    name: str
    kind: str
    topic: str | None = None
    partition: int | None = None
    recovery: str = ""
    segments: int = 0
    segments_scanned: int = 0
    bytes_validated: int = 0
    log_end_before: int | None = None
    log_end: int | None = None
    truncations: list = field(default_factory=list)   # dicts: file, position, bytes, kind, reason, offset
    removed: list = field(default_factory=list)       # paths
    rebuilt: list = field(default_factory=list)       # dicts: file, old_size, new_size
    checkpoints: list = field(default_factory=list)   # dicts: file, old, new
    actions: list = field(default_factory=list)
    problems: list = field(default_factory=list)      # Findings
    notes: list = field(default_factory=list)
    refused: bool = False                             # left alone: Kafka's loader would fail or leave a gap
    misread: bool = False                             # holds a file name Kafka's loader misreads, left in place
    owns_checkpoints: bool = False
    log_start: int | None = None                      # after the repair (when the checkpoint entries are its own)
    salvage: dict | None = None                       # recover --salvage: the loss report (render/recover_report)


@dataclass
class RecoverPlan:
    log_dir: str
    before: list = field(default_factory=list)        # log-dir actions before the partitions
    partitions: list = field(default_factory=list)
    after: list = field(default_factory=list)
    skipped: list = field(default_factory=list)       # (directory, reason)
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def actions(self) -> list[tuple[str | None, Action]]:
        out = [(None, a) for a in self.before]
        for p in self.partitions:
            out += [(p.name, a) for a in p.actions]
        out += [(None, a) for a in self.after]
        return out

    @property
    def has_changes(self) -> bool:
        return bool(self.before or self.after or any(p.actions for p in self.partitions))

    @property
    def has_problems(self) -> bool:
        return bool(self.problems or any(p.problems for p in self.partitions))


def _entries(size: int, entry: int) -> str:
    n = size // entry
    return f"{n} entr{'y' if n == 1 else 'ies'}, {size} bytes"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def problem(kind: str, message: str, file: str, position: int | None = None) -> Finding:
    """A problem recover reports and leaves alone (its file named from the log directory)."""
    return Finding(kind, message, file, position)
