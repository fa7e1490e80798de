"""Helpers of the recover tests: writable copies, file hashes, and a brute-force reader of ``.log`` files
that shares no code with kafkalog (struct + crc32c/zlib only), used as the independent oracle."""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import zlib
from pathlib import Path

import crc32c

LOG_SUFFIX = ".log"

# index.interval.bytes each fixture topic was written with (tools/make_fixtures.py)
FIXTURE_INTERVALS = {"orders-0": 256, "orders-1": 512, "payments-0": 128, "legacy-0": 64}


def writable_copy(src: Path, dst: Path) -> Path:
    """Copy a tree and make it writable (the shared corpus is read-only)."""
    shutil.copytree(src, dst, symlinks=False)
    for root, dirs, files in os.walk(dst):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return dst


def tree_state(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every file (directories as 'dir'), for before/after comparisons."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def brute_batches(data: bytes) -> tuple[list[tuple[int, int, int, bytes]], int, str | None]:
    """Batches of a ``.log`` as (base offset, last offset, crc, raw bytes), the position where valid data
    ends and why it ends there (None: at the end of the file). Framing and CRC as Kafka's FileLogInputStream
    and ensureValid (docs/kafka-on-disk.md §1.1, §7.2), written independently of kafkalog."""
    out = []
    pos = 0
    n = len(data)
    while True:
        if n - pos <= 17:
            return out, pos, None if pos == n else "trailing bytes"
        base, length = struct.unpack_from(">qi", data, pos)
        magic = data[pos + 16]
        if length < 14:
            return out, pos, "size below 14"
        if pos + 12 + length > n:
            return out, pos, "partial batch"
        raw = data[pos:pos + 12 + length]
        if magic >= 2:
            if 12 + length < 61:
                return out, pos, "batch too small"
            crc = struct.unpack_from(">I", raw, 17)[0]
            if crc32c.crc32c(raw[21:]) != crc:
                return out, pos, "crc"
            last = base + struct.unpack_from(">i", raw, 23)[0]
        else:
            crc = struct.unpack_from(">I", raw, 12)[0]
            if zlib.crc32(raw[16:]) & 0xFFFFFFFF != crc:
                return out, pos, "crc"
            last = base
        out.append((base, last, crc, raw))
        pos += 12 + length


def segment_logs(pdir: Path) -> list[Path]:
    return sorted(p for p in pdir.iterdir() if p.name.endswith(LOG_SUFFIX) and p.name[:20].isdigit()
                  and len(p.name) == 24)


def partition_batches(pdir: Path) -> list[tuple[int, int, int, bytes]]:
    """Every batch of every segment, in order; asserts that each segment is wholly valid."""
    out = []
    for log in segment_logs(pdir):
        batches, end, why = brute_batches(log.read_bytes())
        assert why is None, f"{log}: invalid data at position {end}: {why}"
        out += batches
    return out


def expected_survivors(pdir: Path) -> tuple[list, dict]:
    """What Kafka's recovery keeps of a partition recovered from its first segment (no recovery point):
    every batch before the first invalid byte; when offsets go backwards inside a segment (Kafka's
    InvalidOffsetException) that whole segment goes (docs/kafka-on-disk.md §7.1 pass 4). Also returns, per
    segment name, the position it is cut at (absent: kept whole; later segments: None = removed)."""
    kept, cuts = [], {}
    last = None
    stopped = False
    for log in segment_logs(pdir):
        if stopped:
            cuts[log.name] = None
            continue
        data = log.read_bytes()
        batches, end, why = brute_batches(data)
        seg_kept = []
        backwards = False
        for b in batches:
            if last is not None and b[1] <= last:
                backwards = True
                break
            seg_kept.append(b)
            last = b[1]
        if backwards:
            cuts[log.name] = 0
            stopped = True
            continue
        kept += seg_kept
        if why is not None:
            cuts[log.name] = end
            stopped = True
    return kept, cuts


def kafka_index_append_fails(data: bytes, base: int, interval: int) -> bool:
    """Would ``LogSegment.recover`` throw InvalidOffsetException on this segment? Written from Kafka's
    code, not from kafkalog's: at every batch whose position is more than ``index.interval.bytes`` past
    the last indexed one, ``OffsetIndex.append(batch.lastOffset, position)`` requires an offset above the
    last entry's, then ``TimeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestamp)`` requires an offset
    not below the last entry's (and appends only a larger timestamp); after the loop the final
    ``maybeAppend`` makes the same offset check. (LogSegment.recover, OffsetIndex.append,
    TimeIndex.maybeAppend: Scala 2.x-3.x and Java trunk alike.)"""
    batches, _end, _why = brute_batches(data)
    pos = last_indexed = 0
    offset_entries, time_entries = [], []
    max_ts, off_of_max = -1, base
    for first, last, _crc, raw in batches:
        ts = struct.unpack_from(">q", raw, 35)[0] if raw[16] >= 2 else (
            struct.unpack_from(">q", raw, 18)[0] if raw[16] == 1 else -1)
        if ts > max_ts:
            max_ts, off_of_max = ts, last
        if pos - last_indexed > interval:
            if offset_entries and last <= offset_entries[-1]:
                return True
            offset_entries.append(last)
            if time_entries and off_of_max < time_entries[-1][1]:
                return True
            if max_ts > (time_entries[-1][0] if time_entries else -1):
                time_entries.append((max_ts, off_of_max))
            last_indexed = pos
        pos += len(raw)
    return bool(time_entries) and off_of_max < time_entries[-1][1]
