"""File and directory naming of a Kafka log directory (Kafka ``LogFileUtils``, ``UnifiedLog.parseTopicPartitionName``).

Segment files are ``<20-digit base offset>.<suffix>``; producer snapshots ``<20-digit offset>.snapshot``;
KRaft snapshots ``<20-digit end offset>-<10-digit epoch>.checkpoint``; transient files add ``.deleted``,
``.cleaned`` or ``.swap``; partition directories are ``<topic>-<partition>`` optionally followed by
``.<uuid32hex>-delete|-future|-stray``.
"""
from __future__ import annotations

import re
from typing import NamedTuple

SEGMENT_SUFFIXES = ("log", "index", "timeindex", "txnindex")
TRANSIENT_SUFFIXES = ("deleted", "cleaned", "swap")
PARTITION_FILES = {"leader-epoch-checkpoint", "partition.metadata", "quorum-state",
                   "leader-epoch-checkpoint.tmp", "partition.metadata.tmp", "quorum-state.tmp"}
OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
LOG_DIR_FILES = set(OFFSET_CHECKPOINTS) | {"meta.properties", ".lock", ".kafka_cleanshutdown",
                                           "bootstrap.checkpoint"}
METADATA_PARTITION = "__cluster_metadata-0"
SPECIAL_DIRS = {"remote-log-index-cache"}

_OFFSET_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)"
                          r"(?:\.(deleted|cleaned|swap))?$")
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(?:\.(deleted)|(\..*\.part|\.part))?$")
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)"
                            r"(?:\.(?P<uuid>[0-9a-f]{32})-(?P<state>delete|future|stray))?$")


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for (42, "log")."""
    return f"{base_offset:020d}.{suffix}"


def kraft_snapshot_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


class FileName(NamedTuple):
    """What a file in a partition directory is. ``kind`` is the file type, ``state`` a transient suffix."""
    kind: str                # log index timeindex txnindex snapshot kraft_snapshot partition_file tmp unknown
    offset: int | None = None
    state: str | None = None  # None, "deleted", "cleaned", "swap", "part"
    epoch: int | None = None


def classify_file(name: str) -> FileName:
    m = _OFFSET_FILE.match(name)
    if m:
        return FileName(m.group(2), int(m.group(1)), m.group(3))
    m = _KRAFT_SNAPSHOT.match(name)
    if m:
        state = "deleted" if m.group(3) else ("part" if m.group(4) else None)
        return FileName("kraft_snapshot", int(m.group(1)), state, int(m.group(2)))
    if name in PARTITION_FILES:
        return FileName("tmp" if name.endswith(".tmp") else "partition_file")
    if name.endswith(".tmp"):
        return FileName("tmp")
    return FileName("unknown")


class PartitionName(NamedTuple):
    topic: str
    partition: int
    state: str | None = None   # None, "delete", "future", "stray"
    uuid: str | None = None

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def parse_partition_dir(name: str) -> PartitionName | None:
    """Parse a partition directory name the way Kafka does; None if it is not one."""
    m = _PARTITION_DIR.match(name)
    if not m or not m.group("topic"):
        return None
    return PartitionName(m.group("topic"), int(m.group("partition")), m.group("state"), m.group("uuid"))


def parse_partition_spec(spec: str) -> tuple[str, int]:
    """``TOPIC-N`` from a command line; raises ValueError when malformed."""
    p = parse_partition_dir(spec)
    if p is None or p.state is not None:
        raise ValueError(f"'{spec}' is not of the form TOPIC-PARTITION")
    return p.topic, p.partition
