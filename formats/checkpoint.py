"""Checkpoint text files (Kafka ``CheckpointFile`` with ``OffsetCheckpointFile`` and
``LeaderEpochCheckpointFile`` formatters).

UTF-8 text, ``\\n`` line endings (Java ``BufferedWriter.newLine`` on Unix)::

    line 1      <version int>                    0 for all files below
    line 2      <entry count int>
    lines 3..   one entry per line, fields split on whitespace (Java ``\\s+``)

    recovery-point- / replication- / log-start- / cleaner-offset-checkpoint:  "<topic> <partition> <offset>"
    leader-epoch-checkpoint (per partition):                                  "<epoch> <startOffset>"

Reading follows ``CheckpointReadBuffer.read``: an empty file (or one holding only the version line) has
no entries; a wrong version, an unparsable line (checked line by line, before the count) and a count
mismatch fail with Kafka's messages. Topic names may contain '.', '-' and '_', never whitespace.
"""
from __future__ import annotations

import re
from typing import Callable, Iterable, Mapping, NamedTuple, TypeVar

from .errors import FormatError

T = TypeVar("T")

OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0

# Java's \s is ASCII-only; Python's would also split on e.g. U+00A0.
JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_JAVA_LINE_END = re.compile(r"\r\n|\r|\n")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


# --- helpers shared by the text formats ----------------------------------------------------------

def decode_text(data: str | bytes | bytearray | memoryview, encoding: str = "utf-8",
                what: str = "file") -> str:
    """Text of a file's bytes (a str passes through); undecodable bytes raise FormatError, never
    UnicodeDecodeError. Kafka reads these files as UTF-8 (meta.properties as ISO-8859-1)."""
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode(encoding)
    except UnicodeDecodeError as e:
        raise FormatError(f"{what} is not valid {encoding}: {e.reason}", e.start, "text_encoding") from None


def java_int(text: str, bits: int = 32) -> int | None:
    """``Integer.parseInt`` (bits=32) / ``Long.parseLong`` (bits=64): optional sign, ASCII digits, in
    range, nothing else (no spaces, no underscores, unlike Python's ``int``). None when Java would throw.

    The one checked integer parser of every text file kafkalog reads (checkpoints, meta.properties,
    partition.metadata; quorum-state's JSON numbers go through ``json_int``): the digits are counted
    before converting, so a number of any length (Python refuses to convert more than 4,300 digits)
    is simply out of range, as Java's ``NumberFormatException`` makes it. Leading zeros are allowed,
    as Java allows them.
    """
    if not _JAVA_INT.fullmatch(text):
        return None
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19:                   # Long.MAX_VALUE has 19 digits
        return None
    value = -int(digits or "0") if text[0] == "-" else int(digits or "0")
    limit = 1 << (bits - 1)
    return value if -limit <= value < limit else None


def json_int(text: str) -> int:
    """``json.loads(parse_int=...)`` hook: JSON integers beyond 64 bits are refused before conversion
    (Jackson reads them as BigInteger and Kafka's generated readers reject them for int32/int64 fields)."""
    value = java_int(text, 64)
    if value is None:
        raise ValueError(f"number {text[:24]}{'...' if len(text) > 24 else ''} does not fit a 64-bit integer")
    return value


def java_split(pattern: re.Pattern, line: str) -> list[str]:
    """Java ``Pattern.split(line)``: a leading empty field is kept, trailing empty fields are dropped."""
    parts = pattern.split(line)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_lines(text: str) -> list[tuple[int, str]]:
    """``BufferedReader.readLine`` over ``text``: (character offset, line) pairs; a final terminator
    does not start another line."""
    out: list[tuple[int, str]] = []
    start = 0
    for m in _JAVA_LINE_END.finditer(text):
        out.append((start, text[start:m.start()]))
        start = m.end()
    if start < len(text):
        out.append((start, text[start:]))
    return out


def _byte_pos(text: str, char_pos: int) -> int:
    return len(text[:char_pos].encode("utf-8", "surrogatepass"))


# --- the generic format ------------------------------------------------------------------------

def parse_checkpoint(text: str | bytes, path: str = "", expected_version: int = 0,
                     parse_entry: Callable[[str], T | None] | None = None) -> tuple[int | None, list]:
    """``(version, entries)`` of a checkpoint file; version is None for an empty file.

    ``parse_entry`` turns one entry line into a value, returning None (or raising ValueError) when
    the line is malformed; without it the raw lines are returned.
    """
    text = decode_text(text, what="checkpoint file")
    lines = java_lines(text)
    if not lines:
        return None, []

    def malformed(at: int, line: str) -> FormatError:
        return FormatError(f"Malformed line in checkpoint file [{path}]: {line}", _byte_pos(text, at),
                           "checkpoint_malformed")

    at, line = lines[0]
    version = java_int(line)
    if version is None:
        raise malformed(at, line)
    if version != expected_version:
        raise FormatError(f"Unrecognised version:{version}, expected version: {expected_version} in "
                          f"checkpoint file at: {path}", 0, "checkpoint_version")
    if len(lines) == 1:
        return version, []
    at, line = lines[1]
    expected = java_int(line)
    if expected is None:
        raise malformed(at, line)
    entries = []
    for at, line in lines[2:]:
        if parse_entry is None:
            entries.append(line)
            continue
        try:
            entry = parse_entry(line)
        except ValueError:
            entry = None
        if entry is None:
            raise malformed(at, line)
        entries.append(entry)
    if len(entries) != expected:
        raise FormatError(f"Expected [{expected}] entries in checkpoint file [{path}], but found only "
                          f"[{len(entries)}]", None, "checkpoint_count")
    return version, entries


def build_checkpoint(version: int, lines: Iterable[str]) -> str:
    """Checkpoint text as Kafka writes it: version, count, one line per entry, each ending in ``\\n``."""
    lines = list(lines)
    for line in lines:
        if _JAVA_LINE_END.search(line):
            raise FormatError(f"checkpoint entry {line!r} contains a line break", None, "checkpoint_value")
    return "".join(f"{x}\n" for x in [str(version), str(len(lines)), *lines])


# --- offset checkpoints (OffsetCheckpointFile) ---------------------------------------------------

class TopicPartitionOffset(NamedTuple):
    topic: str
    partition: int
    offset: int


def parse_offset_line(line: str) -> TopicPartitionOffset | None:
    """``"<topic> <partition> <offset>"`` split on whitespace into exactly 3 parts, else None."""
    parts = java_split(JAVA_WHITESPACE, line)
    if len(parts) != 3:
        return None
    partition, offset = java_int(parts[1], 32), java_int(parts[2], 64)
    if partition is None or offset is None:
        return None
    return TopicPartitionOffset(parts[0], partition, offset)


def parse_offset_checkpoint(text: str | bytes, path: str = "") -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` of an offset checkpoint (a repeated partition: last one wins,
    as in Kafka's map). Commands over a log directory ask for its checkpoints once per partition: they
    read them through ``kafkalog_cli.engine.mapped.parsed_once``, which parses a file once while it is
    unchanged."""
    _, entries = parse_checkpoint(text, path, OFFSET_CHECKPOINT_VERSION, parse_offset_line)
    return {(e.topic, e.partition): e.offset for e in entries}


def checkpoint_topic_problem(topic: str) -> str | None:
    """Why ``topic`` cannot be an entry of an offset checkpoint (None: it can). The reader splits a line on
    whitespace (``CheckpointFile``), and the file is UTF-8 text: a partition directory whose name is not
    UTF-8 (decoded here with surrogate escapes) has no line the broker would read back as that directory."""
    if not topic or JAVA_WHITESPACE.search(topic):
        return "empty or holding whitespace, which splits a checkpoint line"
    try:
        topic.encode("utf-8")
    except UnicodeEncodeError:
        return "its bytes are not UTF-8 text, and a checkpoint is UTF-8 text"
    return None


def build_offset_checkpoint(offsets: Mapping[tuple[str, int], int]) -> str:
    """Offset checkpoint text, entries sorted by topic then partition for stable output."""
    lines = []
    for (topic, partition), offset in sorted(offsets.items()):
        why = checkpoint_topic_problem(topic)
        if why is not None:
            raise FormatError(f"topic name {topic!r} cannot be written to a checkpoint: {why}", None,
                              "checkpoint_value")
        if java_int(str(partition), 32) is None or java_int(str(offset), 64) is None:
            raise FormatError(f"{topic}-{partition} offset {offset} does not fit the checkpoint's types",
                              None, "checkpoint_value")
        lines.append(f"{topic} {partition} {offset}")
    return build_checkpoint(OFFSET_CHECKPOINT_VERSION, lines)


# --- leader-epoch-checkpoint (LeaderEpochCheckpointFile) ------------------------------------------

class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def parse_epoch_line(line: str) -> EpochEntry | None:
    """``"<epoch> <startOffset>"`` split on whitespace into exactly 2 parts, else None."""
    parts = java_split(JAVA_WHITESPACE, line)
    if len(parts) != 2:
        return None
    epoch, start = java_int(parts[0], 32), java_int(parts[1], 64)
    if epoch is None or start is None:
        return None
    return EpochEntry(epoch, start)


def parse_leader_epoch_checkpoint(text: str | bytes, path: str = "") -> list[EpochEntry]:
    """Entries in file order. Not checked for monotonicity: Kafka repairs that on load, a verifier
    reports it."""
    _, entries = parse_checkpoint(text, path, LEADER_EPOCH_CHECKPOINT_VERSION, parse_epoch_line)
    return entries


def build_leader_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> str:
    """leader-epoch-checkpoint text with the entries in the given order."""
    lines = []
    for epoch, start in entries:
        if java_int(str(epoch), 32) is None or java_int(str(start), 64) is None:
            raise FormatError(f"epoch entry ({epoch}, {start}) does not fit the checkpoint's types", None,
                              "checkpoint_value")
        lines.append(f"{epoch} {start}")
    return build_checkpoint(LEADER_EPOCH_CHECKPOINT_VERSION, lines)
