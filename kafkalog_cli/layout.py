"""File and directory naming of a Kafka log directory (Kafka ``LogFileUtils``, ``UnifiedLog.parseTopicPartitionName``).

Segment files are ``<20-digit base offset>.<suffix>``; producer snapshots ``<20-digit offset>.snapshot``;
KRaft snapshots ``<20-digit end offset>-<10-digit epoch>.checkpoint``; transient files add ``.deleted``,
``.cleaned`` or ``.swap``; partition directories are ``<topic>-<partition>`` optionally followed by
``.<uuid32hex>-delete|-future|-stray``.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Collection, NamedTuple

from .engine.findings import Finding

SEGMENT_SUFFIXES = ("log", "index", "timeindex", "txnindex")
TRANSIENT_SUFFIXES = ("deleted", "cleaned", "swap")
PARTITION_FILES = {"leader-epoch-checkpoint", "partition.metadata", "quorum-state",
                   "leader-epoch-checkpoint.tmp", "partition.metadata.tmp", "quorum-state.tmp"}
OFFSET_CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                      "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
LOG_DIR_FILES = set(OFFSET_CHECKPOINTS) | {"meta.properties", ".lock", ".kafka_cleanshutdown",
                                           "bootstrap.checkpoint"}
METADATA_PARTITION = "__cluster_metadata-0"
JAVA_LONG_MAX = (1 << 63) - 1
SPECIAL_DIRS = {"remote-log-index-cache"}

# ASCII digits only and the whole name (``re.fullmatch``): ``\d`` would take any Unicode digit and ``$`` a
# trailing newline, names Kafka never writes (LogFileUtils.filenamePrefixFromOffset: 20 ASCII digits)
_OFFSET_FILE = re.compile(r"([0-9]{20})\.(log|index|timeindex|txnindex|snapshot)"
                          r"(?:\.(deleted|cleaned|swap))?")
_KRAFT_SNAPSHOT = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint(?:\.(deleted)|(\..*\.part|\.part))?",
                             re.DOTALL)
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
    """What a file is, by its name as Kafka writes it; a name Kafka would not write is "unknown" (see
    ``loader_name``/``name_problem`` for what Kafka's loader does with such a name)."""
    m = _OFFSET_FILE.fullmatch(name)
    if m and int(m.group(1)) <= JAVA_LONG_MAX:
        return FileName(m.group(2), int(m.group(1)), m.group(3))
    m = _KRAFT_SNAPSHOT.fullmatch(name)
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


# --- how Kafka's log loader reads a file name ---------------------------------------------------------

class LoaderName(NamedTuple):
    """How Kafka's log loader takes a file of a partition directory by its name alone.

    ``role``: "log", "index" (also .timeindex, .txnindex), "snapshot" (a producer snapshot), "cleaned",
    "swap" when the loader parses the name (``LogFileUtils.offsetFromFileName``), None when it never does
    (``.deleted`` files, KRaft snapshots, partition files, any other name). ``offset``: what
    ``Long.parseLong`` of the text before the first '.' gives, None when it throws NumberFormatException.
    ``canonical``: the name is Kafka's own spelling of that offset (``filenamePrefixFromOffset``).
    ``inner``: for a ".swap" file, the role of the name without ".swap" (what pass 3 renames it to)."""
    role: str | None
    offset: int | None = None
    canonical: bool = False
    inner: str | None = None


def java_parse_long(text: str) -> int | None:
    """``Long.parseLong(text)`` (radix 10), None where Java throws NumberFormatException: an optional '+' or
    '-', then one or more digits as ``Character.digit`` reads them (any Unicode decimal digit of the
    Basic Multilingual Plane, not only 0-9), the value within a signed 64-bit long."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or len(digits) > 4096:          # 4096: far past any long, bounds the work on a hostile name
        return None
    value = 0
    for ch in digits:
        if ord(ch) > 0xFFFF or unicodedata.category(ch) != "Nd":
            return None
        value = value * 10 + unicodedata.digit(ch)
    value = -value if text[:1] == "-" else value
    return value if -(1 << 63) <= value <= JAVA_LONG_MAX else None


def kafka_offset_prefix(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: at least 20 integer digits, a minus sign before them."""
    return f"{offset:020d}" if offset >= 0 else "-" + f"{-offset:020d}"


def _loader_role(name: str) -> str | None:
    if name.endswith(".log"):                     # LocalLog.isLogFile / LogFileUtils.isLogFile
        return "log"
    if name.endswith((".index", ".timeindex", ".txnindex")):    # isIndexFile
        return "index"
    if name.endswith(".snapshot"):                # ProducerStateManager.listSnapshotFiles
        return "snapshot"
    return None


def loader_name(name: str) -> LoaderName:
    """What Kafka's loader reads from ``name`` (a regular file in a partition directory), in its order:
    ``LogLoader.removeTempFilesAndCollectSwapFiles`` deletes "*.deleted" unparsed (3.0+: except
    "*.checkpoint.deleted", KRaft's) and parses "*.cleaned" and (3.0+) every "*.swap"; ``loadSegmentFiles``
    parses "*.index", "*.timeindex", "*.txnindex" and "*.log"; ``ProducerStateManager`` every "*.snapshot"
    (2.0 - trunk; Scala ``Log.offsetFromFileName`` before 3.0, Java ``LogFileUtils`` from 3.6)."""
    if name.endswith(".deleted"):
        return LoaderName(None)
    if name.endswith(".cleaned"):
        role, inner = "cleaned", None
    elif name.endswith(".swap"):
        role, inner = "swap", _loader_role(name[:-len(".swap")])
    else:
        role, inner = _loader_role(name), None
        if role is None:
            return LoaderName(None)
    dot = name.find(".")
    offset = java_parse_long(name[:dot])
    canonical = classify_file(name).kind in ("log", "index", "timeindex", "txnindex", "snapshot")
    return LoaderName(role, offset, canonical, inner)


def name_problem(name: str, names: Collection[str]) -> Finding | None:
    """What Kafka's loader does with the regular file ``name`` of a partition directory holding ``names``
    (every file name there, ``name`` included) when that is not what the name says: None for a name
    Kafka writes itself or never parses (see ``loader_name``). A ``Finding`` without a file (the caller
    knows the path): its kind ("unparsable_file_name", "phantom_segment", "misnamed_file"), its severity
    ("error": the broker will not start or will serve a wrong log; "warning": tolerated), the offset the
    loader reads from the name, and what the broker will do with it, in Kafka's terms.

    * the offset does not parse (``Long.parseLong`` throws): the log fails to load with a
      NumberFormatException, which ``LogManager.loadLogs`` rethrows: the broker does not start (error);
    * a ".log" (or a ".log.swap") name not in Kafka's 20-digit form, or a negative offset: the loader opens
      segment N as ``<20 digits of N>.log``, creating it empty when absent (``LogSegment.open``), and never
      reads this file: an empty segment at offset N (error; only a warning when that file exists, the
      name then merely ignored);
    * other names not in the 20-digit form: an index Kafka deletes as orphaned or never reads, a producer
      snapshot read as offset N's, a ".cleaned" file deleted (warning)."""
    ln = loader_name(name)
    if ln.role is None or ln.canonical:
        return None
    if ln.offset is None:
        prefix = name[:name.find(".")]
        return Finding("unparsable_file_name", severity="error", offset=None, message=(
            "Kafka's log loader reads an offset from the name of every .log, .index, .timeindex, .txnindex, "
            f".snapshot, .cleaned and .swap file (the text before the first '.'), and '{_quoted(prefix)}' is "
            "not a number a Java long holds: loading the partition fails (NumberFormatException) and the "
            "broker does not start"))
    n = ln.offset
    log_name = kafka_offset_prefix(n) + ".log"
    if ln.role == "log" or (ln.role == "swap" and ln.inner == "log"):
        swap = ln.role == "swap"
        target = log_name + (".swap" if swap else "")
        if target in names and not swap and n >= 0:
            return Finding("misnamed_file", severity="warning", offset=n, message=(
                f"Kafka's loader reads this name as segment {n} and opens {log_name}, which exists: this "
                "file is never read"))
        if n < 0:
            return Finding("phantom_segment", severity="error", offset=n, message=(
                f"Kafka's loader reads this name as a segment at offset {n} and opens {target}"
                f"{'' if target in names else ', creating it empty'}: no broker writes a negative base "
                "offset, the log would start below 0"))
        if swap:
            return Finding("phantom_segment", severity="error", offset=n, message=(
                f"Kafka's swap completion reads offset {n} from this name and swaps in {target} "
                f"({'which exists' if target in names else 'creating it empty'}) in place of {log_name}, "
                f"then renames this file to {name[:-len('.swap')]}: an empty or wrong segment at offset {n}"))
        return Finding("phantom_segment", severity="error", offset=n, message=(
            f"Kafka's loader reads this name as segment {n}, opens {log_name} instead, creating it empty, "
            f"and never reads this file: the log gets an empty segment at offset {n}"))
    if ln.role == "index" or (ln.role == "swap" and ln.inner == "index"):
        renamed = " once renamed without .swap" if ln.role == "swap" else ""
        segment_here = log_name in names or any(
            o != name and loader_name(o) == LoaderName("log", n, False) for o in names)
        fate = ("is never read (the segment opens its own 20-digit index files)" if segment_here else
                f"is deleted as an orphaned index (no {log_name})")
        return Finding("misnamed_file", severity="warning", offset=n, message=(
            f"Kafka's loader reads this name as an index of segment {n}: this file{renamed} {fate}"))
    if ln.role == "snapshot" or (ln.role == "swap" and ln.inner == "snapshot"):
        return Finding("misnamed_file", severity="warning", offset=n, message=(
            f"Kafka reads this file as the producer snapshot at offset {n}"
            + (" once renamed without .swap" if ln.role == "swap" else "")))
    if ln.role == "cleaned":
        return Finding("misnamed_file", severity="warning", offset=n, message=(
            f"Kafka's loader reads this name as cleaner output at offset {n} and deletes it"))
    return Finding("misnamed_file", severity="warning", offset=n, message=(      # a .swap of any other name (3.0+)
        f"Kafka's loader reads offset {n} from this name and renames the file without .swap"))


def _quoted(text: str) -> str:
    """A name's prefix for a one-line message: control characters escaped, long ones cut."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:60])
    return text + ("..." if len(text) >= 60 else "")
