"""Kafka's log cleaner for one partition, as pure functions over batches (docs/kafka-on-disk.md §9).

``choose`` computes the dirty range and ratio (``LogCleanerManager``; it lives in ``engine.cleaner_choice``),
``build_offset_map`` the key → latest offset map with Kafka's capacity limit, ``group_segments`` the groups
rewritten together, and ``clean_group`` the new segment bytes (``Cleaner.cleanInto``/``MemoryRecords.filterTo``):
latest record per key, keyless records dropped, tombstones kept until the delete horizon (v2: stamped in the
batch header on the first pass; legacy: the mtime rule), aborted transactional data removed, transaction
markers removed once their transaction is gone and their horizon has passed, the last batch of an active
producer and the last batch of the pass kept even when empty, batches rewritten with the same codec, base
offset, last offset delta, producer fields and leader epoch, and unchanged batches copied byte
for byte. Offsets never change. Files are read and written elsewhere (``compact_exec``).

This module is the reference and imports no compiled code: ``native_clean`` runs the same algorithms with
their per-batch and per-run steps in C where the native path is on (``native_clean.build_offset_map``,
``native_clean.clean_batches``), handing every batch the C code declines back to the functions here.
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

from kafkalog_formats import control as ctl
from kafkalog_formats.legacy import build_wrapper
from kafkalog_formats.record_batch import RecordSpec, build_batch, wrap64

# choose (LogCleanerManager) is read-side, in the engine; here it is part of the cleaner's surface
from ..engine.cleaner_choice import CleanerConfig, SegmentInfo, choose  # noqa: F401

INT_MAX = (1 << 31) - 1


# --- transactions ----------------------------------------------------------------------------------

class TxnTracker:
    """Kafka ``CleanedTransactionMetadata`` (LogCleaner.scala, 2.3–4.0): which data batches are aborted, which
    markers are discardable.

    One tracker serves the whole pass (``Cleaner.doClean`` creates one and hands it to every group since
    KAFKA-8351, 2.3.0), so a marker in a later group still sees its transaction's data in an earlier one.
    ``aborted`` must hold every AbortedTxn the pass may meet, sorted or not; an entry is queued once and
    becomes "ongoing" when a batch reaching its first offset is read (``consumeAbortedTxnsUpTo``, which
    keeps an ongoing entry rather than replacing it: ``getOrElseUpdate``). The AbortedTxn of an ABORT
    marker that is kept goes to the ``.txnindex`` of the group being written (``cleanedIndex``): call
    ``start_group`` before each group and collect ``retained_aborted`` after it.
    """

    def __init__(self, aborted: list) -> None:
        self.pending = sorted(aborted, key=lambda a: a.first_offset)
        self.ongoing_aborted: dict[int, dict] = {}     # producer id -> {"txn": AbortedTxn, "seen": bool}
        self.ongoing_committed: set[int] = set()
        self.retained_aborted: list = []                # AbortedTxn entries for the current group's .txnindex

    def start_group(self) -> None:
        self.retained_aborted = []

    def _consume_up_to(self, offset: int) -> None:
        """``consumeAbortedTxnsUpTo``."""
        while self.pending and self.pending[0].first_offset <= offset:
            a = self.pending.pop(0)
            self.ongoing_aborted.setdefault(a.producer_id, {"txn": a, "seen": False})

    def plain_batches(self, max_last_offset: int) -> None:
        """``onBatchRead`` for a run of non-transactional data batches whose greatest last offset is
        ``max_last_offset``: for each such batch it only consumes the aborted transactions up to its last
        offset (and says "not aborted"), so a run is the same as its batches one by one."""
        self._consume_up_to(max_last_offset)

    def data_batch(self, batch) -> bool:
        """``onBatchRead``: True when the batch belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        entry = self.ongoing_aborted.get(batch.producer_id)
        if entry is not None:
            entry["seen"] = True
            return True
        self.ongoing_committed.add(batch.producer_id)
        return False

    def control_batch(self, batch, first_record) -> bool:
        """``onControlBatchRead``: True when the marker may be discarded (its transaction's data is gone)."""
        self._consume_up_to(batch.last_offset)
        if first_record is None:
            return True                                  # an empty control batch
        ctype = ctl.parse_control_key(first_record.key).type     # validated before (preflight)
        pid = batch.producer_id
        if ctype == ctl.ABORT:
            entry = self.ongoing_aborted.pop(pid, None)
            if entry is not None and entry["seen"]:
                self.retained_aborted.append(entry["txn"])
                return False
            return True
        if ctype == ctl.COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False


# --- offset map ------------------------------------------------------------------------------------

ENTRY_BYTES = 24                 # SkimpyOffsetMap.bytesPerEntry with MD5: 16-byte digest + 8-byte offset
_EMPTY = bytes(ENTRY_BYTES)


class OffsetMap:
    """Kafka's ``SkimpyOffsetMap`` (storage/.../log/SkimpyOffsetMap.java 3.5-4.x, core/.../log/OffsetMap.scala
    2.x-3.4, same layout and probing in all): one fixed table of ``slots`` entries of 24 bytes (MD5 of the
    key, offset as a big-endian long), ``slots`` = memory / 24. The table is anonymous mapped memory: only
    the pages entries land in become resident, and it never grows, whatever the keys.

    Probing (``positionOf``): the i-th probe reads the big-endian int at byte min(i, 12) of the digest, adds
    max(0, i - 12) (Java int arithmetic), and takes ``Utils.abs`` of it modulo ``slots``; an all-zero entry
    is empty (``isEmpty``); ``get`` gives up after ``slots + 12`` probes. The compiled map
    (formats/_native_c/offset_map.c) writes the same bytes: tests compare the two tables.

    The capacity rule is the cleaner's (``Cleaner.buildOffsetMapForSegment``, 2.x-4.x): a put is refused once
    the map holds ``(int)(slots * load factor)`` entries (``maxDesiredMapSize``), checked before every put,
    even of a key already present. ``latest_offset`` follows ``SkimpyOffsetMap``: every ``put`` sets it to the
    offset put, and ``updateLatestOffset`` (after each batch, after each segment) sets it outright.
    """

    def __init__(self, slots: int, load_factor: float = 0.9) -> None:
        import mmap
        if not 1 <= slots <= INT_MAX // ENTRY_BYTES:
            raise ValueError(f"slots must be between 1 and {INT_MAX // ENTRY_BYTES}")
        if not load_factor > 0:
            raise ValueError("load_factor must be positive")
        self.slots = slots
        self.load_factor = load_factor
        self.max_entries = int(slots * load_factor)
        self.table = mmap.mmap(-1, slots * ENTRY_BYTES)
        self.count = 0
        self.latest_offset = -1
        self.full = False

    def __len__(self) -> int:
        return self.count

    def _slot(self, digest: bytes, attempt: int) -> int:
        at = min(attempt, 12)
        probe = (int.from_bytes(digest[at:at + 4], "big") + max(0, attempt - 12)) & 0xFFFFFFFF
        if probe >= 1 << 31:
            probe -= 1 << 32
        return (0 if probe == -(1 << 31) else abs(probe)) % self.slots

    def get(self, key: bytes) -> int:
        digest, t = hashlib.md5(key).digest(), self.table
        for attempt in range(self.slots + 12):
            pos = ENTRY_BYTES * self._slot(digest, attempt)
            entry = t[pos:pos + ENTRY_BYTES]
            if entry == _EMPTY:
                return -1
            if entry[:16] == digest:
                return int.from_bytes(entry[16:], "big", signed=True)
        return -1

    def put(self, key: bytes, offset: int) -> bool:
        """``buildOffsetMapForSegment``: put only while ``map.size < maxDesiredMapSize``; False (and ``full``)
        when the map is full. (A load factor above 1 would fill every slot: Kafka's ``put`` then throws.)"""
        if self.count >= self.max_entries or self.count >= self.slots:
            self.full = True
            return False
        digest, t = hashlib.md5(key).digest(), self.table
        value = (offset & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "big")      # a Java long
        attempt = 0
        while True:
            pos = ENTRY_BYTES * self._slot(digest, attempt)
            entry = t[pos:pos + ENTRY_BYTES]
            if entry == _EMPTY:
                t[pos:pos + ENTRY_BYTES] = digest + value
                self.count += 1
                break
            if entry[:16] == digest:
                t[pos + 16:pos + ENTRY_BYTES] = value
                break
            attempt += 1
        self.latest_offset = offset
        return True


class MapEnd(enum.Enum):
    """Why the loop over one segment's batches stopped (``buildOffsetMapForSegment``)."""
    SEGMENT = "the segment's batches ended"
    UNCLEANABLE = "a batch starts at or above the first uncleanable offset (the segment ends there)"
    FULL = "the map is full (the whole build ends)"


def put_records(m: OffsetMap, b, first_dirty: int) -> bool:
    """Every keyed record of data batch ``b`` at or above ``first_dirty`` into ``m``: False when the map
    filled up (the build ends)."""
    for r in b.records():
        if r.key is not None and r.offset >= first_dirty:
            if not m.put(r.key, r.offset):
                return False
    return True


def map_batch(m: OffsetMap, b, txn: TxnTracker, first_dirty: int, first_uncleanable: int,
              put: Callable[[OffsetMap, object, int], bool] = put_records) -> MapEnd | None:
    """One batch of ``buildOffsetMapForSegment``: None to go on, else why the segment's loop stops. The
    transaction tracker sees every batch; the keys of a data batch that is not aborted go into the map
    (``put``)."""
    if b.magic >= 2 and b.base_offset >= first_uncleanable:
        return MapEnd.UNCLEANABLE
    if b.is_control:
        txn.control_batch(b, next(iter(b.records()), None))
    elif not txn.data_batch(b) and not put(m, b, first_dirty):
        return MapEnd.FULL
    if b.last_offset >= first_dirty:
        m.latest_offset = b.last_offset
    return None


def map_segment(m: OffsetMap, batches, txn: TxnTracker, first_dirty: int, first_uncleanable: int) -> MapEnd:
    """Kafka ``Cleaner.buildOffsetMapForSegment`` (LogCleaner.scala, 2.x–4.0): one segment's batches into the
    map, in order."""
    for b in batches:
        end = map_batch(m, b, txn, first_dirty, first_uncleanable)
        if end is not None:
            return end
    return MapEnd.SEGMENT


def build_offset_map(segment_batches, first_dirty: int, first_uncleanable: int, aborted: list,
                     cfg: CleanerConfig, *, new_map: Callable[[int, float], OffsetMap] = OffsetMap,
                     segment_pass: Callable[..., MapEnd] = map_segment) -> OffsetMap:
    """Kafka ``Cleaner.buildOffsetMap`` (LogCleaner.scala, 2.x–4.0).

    ``segment_batches``: (segment base, next segment base — the first uncleanable offset for the last —,
    batches from the offset-index position of the first dirty offset) for each segment overlapping
    [first_dirty, first_uncleanable). ``aborted``: the AbortedTxn entries ``collectAbortedTransactions``
    finds from the first dirty segment on. When the map fills inside a batch, its latest offset is the
    last offset put (the pass ends just after it), not the previous batch's last offset.

    ``new_map`` and ``segment_pass`` (``OffsetMap`` and ``map_segment`` here) are where ``native_clean``
    puts its compiled map and walk; the algorithm is this one either way.
    """
    slots = min(max(1, cfg.dedupe_buffer_bytes // ENTRY_BYTES), INT_MAX // ENTRY_BYTES)
    m = new_map(slots, cfg.load_factor)
    txn = TxnTracker(aborted)
    for _base, next_base, batches in segment_batches:
        if segment_pass(m, batches, txn, first_dirty, first_uncleanable) is MapEnd.FULL:
            return m
        if next_base is not None:
            m.latest_offset = next_base - 1                # fast-forward over an offset gap
    return m


# --- grouping --------------------------------------------------------------------------------------

def group_segments(segments: list[SegmentInfo], end_offset: int, first_uncleanable: int,
                   cfg: CleanerConfig) -> list[list[SegmentInfo]]:
    """Kafka ``Cleaner.groupSegmentsBySize`` (LogCleaner.scala, 2.x–4.0) over ``logSegments(0, endOffset)``.

    The estimated last offset of a candidate (``lastOffsetForFirstSegment``) is the next segment's base − 1
    *within that list*, and the first uncleanable offset − 1 for its last segment.
    """
    todo = [s for s in segments if s.base_offset < end_offset]
    groups = []
    while todo:
        group = [todo.pop(0)]
        size, idx, tidx = group[0].size, group[0].index_entries * 8, group[0].time_index_entries * 12
        while todo:
            c = todo[0]
            est_last = (todo[1].base_offset - 1) if len(todo) > 1 else first_uncleanable - 1
            if (size + c.size > cfg.segment_bytes or idx + c.index_entries * 8 > cfg.segment_index_bytes
                    or tidx + c.time_index_entries * 12 > cfg.segment_index_bytes
                    or (c.size > 0 and est_last - group[0].base_offset > INT_MAX)):
                break
            group.append(todo.pop(0))
            size += c.size
            idx += c.index_entries * 8
            tidx += c.time_index_entries * 12
        groups.append(group)
    return groups


# --- cleaning --------------------------------------------------------------------------------------

@dataclass
class GroupStats:
    batches_in: int = 0
    batches_out: int = 0
    batches_copied: int = 0
    records_in: int = 0
    records_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    tombstones_stamped: int = 0


class Survivors(NamedTuple):
    """What the cleaning keeps of one data batch: ``_keep_record`` over its records."""
    records: int                                   # records in the batch
    kept: int                                      # records kept
    kept_tombstone: bool                           # a kept record has a null value
    kept_records: Callable[[], Iterator] | None    # the kept records, decoded anew (None: all of them)


def survivors(b, offset_map: OffsetMap, now: int, retain_legacy_deletes: bool, discard: bool) -> Survivors:
    """``_keep_record`` for every record of data batch ``b``, counted in one pass (nothing is kept of a
    batch whose transaction was aborted: ``discard``)."""
    keep = _ByRule(b, offset_map, now, retain_legacy_deletes)
    n, kept, tombstone = _count_kept(b, None if discard else keep)
    return Survivors(n, kept, tombstone, keep)


def clean_batches(batches, offset_map: OffsetMap, upper_bound: int, txn: TxnTracker, active_producers: dict,
                  cfg: CleanerConfig, now: int, retain_legacy_deletes: bool, stats: GroupStats,
                  decide: Callable[..., Survivors] = survivors) -> Iterator[bytes]:
    """Yield the output bytes for each input batch that survives (one segment's batches, in order):
    Kafka ``Cleaner.cleanInto``'s ``RecordFilter`` with ``MemoryRecords.filterTo``, batch by batch
    (``clean_batch``). ``decide`` (``survivors`` here) is where ``native_clean`` puts its compiled keep
    decisions.

    Memory is bounded by one record, not one batch: a batch's records are decoded once to count and decide,
    and a batch that must be rebuilt is decoded again and re-encoded as its kept records come. (Kafka's
    ``filterBatch`` reads through ``streamingIterator`` but collects the retained records in a list,
    2.x–4.0; the broker's heap and ``max.message.bytes`` bound that, nothing bounds a hostile batch here
    but streaming.)
    """
    for b in batches:
        out = clean_batch(b, offset_map, upper_bound, txn, active_producers, cfg, now, retain_legacy_deletes, stats,
                          decide)
        if out is not None:
            yield out


def clean_batch(b, offset_map: OffsetMap, upper_bound: int, txn: TxnTracker, active_producers: dict,
                cfg: CleanerConfig, now: int, retain_legacy_deletes: bool, stats: GroupStats,
                decide: Callable[..., Survivors] = survivors) -> bytes | None:
    """The bytes batch ``b`` becomes (itself, rebuilt with its kept records, or emptied), None when it is
    dropped; ``stats`` counts it. ``filterTo``'s ``RecordFilter`` (``Cleaner.cleanInto``): the transaction
    tracker decides whether an aborted batch's records or a marker may go, ``_keep_record`` each record.

    ``upper_bound`` is ``upperBoundOffsetOfCleaningRound``, the first uncleanable offset: the batch ending
    just below it is kept even when empty (KAFKA-17076, 4.0; earlier versions drop it when nothing in it
    survives, which loses no record), as is the last batch of a producer Kafka still tracks. A legacy batch
    can never be kept empty: Kafka 4.0 fails the cleaning there (IllegalStateException); we drop it as 3.x
    does.
    """
    stats.batches_in += 1
    stats.bytes_in += b.size
    if b.is_control:                  # a marker is kept whole or not at all
        n, first = _count_first(b)
        can_discard = txn.control_batch(b, first)
        horizon = b.delete_horizon_ms
        n_kept = 0 if can_discard and horizon is not None and horizon <= now else n
        kept_tombstone, kept_records = False, None
    else:
        can_discard = txn.data_batch(b)
        n, n_kept, kept_tombstone, kept_records = decide(b, offset_map, now, retain_legacy_deletes, can_discard)
    stats.records_in += n
    if not n_kept:
        if b.magic >= 2 and _retain_empty(b, active_producers, upper_bound):
            out = _empty_batch(b)
            stats.batches_out += 1
            stats.bytes_out += len(out)
            return out
        return None
    needs_horizon = (b.magic >= 2 and b.delete_horizon_ms is None and
                     (kept_tombstone if not b.is_control else can_discard))
    if n_kept == n and not needs_horizon:
        out = b.raw()
        stats.batches_copied += 1
    else:
        # a long sum in Kafka (MemoryRecords.filterTo, 3.x/4.x), and MemoryRecordsBuilder stamps only a horizon
        # >= 0 (hasDeleteHorizonMs): with delete.retention.ms near Long.MAX (valid: atLeast(0)) the sum wraps
        # below zero and the batch is rebuilt without one, so its tombstones are kept for ever
        horizon = wrap64(now + cfg.delete_retention_ms) if needs_horizon else b.delete_horizon_ms
        if horizon is not None and horizon < 0:
            horizon = None
        elif needs_horizon:
            stats.tombstones_stamped += 1
        out = _rebuild(b, b.records() if kept_records is None else kept_records(), horizon)
    stats.batches_out += 1
    stats.records_out += n_kept
    stats.bytes_out += len(out)
    return out


def _count_first(b) -> tuple[int, object]:
    """(number of records, the first one or None), decoding the batch once without keeping it."""
    n, first = 0, None
    for r in b.records():
        if n == 0:
            first = r
        n += 1
    return n, first


class _ByRule:
    """The kept records of ``b`` by ``_keep_record`` (a pure function of the record and the map), decoded
    anew each time they are asked for."""

    def __init__(self, b, offset_map, now: int, retain_legacy_deletes: bool) -> None:
        self.b, self.map, self.now, self.rld = b, offset_map, now, retain_legacy_deletes

    def test(self, r) -> bool:
        return _keep_record(r, self.b, self.map, self.now, self.rld)

    def __call__(self):
        return (r for r in self.b.records() if self.test(r))


def _count_kept(b, keep: _ByRule | None) -> tuple[int, int, bool]:
    """(records, kept records, whether a kept record is a tombstone) in one pass; nothing kept when
    ``keep`` is None (the batch is discarded)."""
    n = kept = 0
    tombstone = False
    for r in b.records():
        n += 1
        if keep is not None and keep.test(r):
            kept += 1
            tombstone = tombstone or r.value is None
    return n, kept, tombstone


def _retain_empty(b, active: dict, upper_bound: int) -> bool:
    """A v2 batch kept (emptied) when nothing of it survives: the last batch of a producer Kafka still
    tracks (its state needs the offsets), and the batch ending just below the first uncleanable offset."""
    return (b.producer_id >= 0 and _is_last_of_active_producer(b, active)) or b.last_offset + 1 == upper_bound


def _is_last_of_active_producer(b, active: dict) -> bool:
    entry = active.get(b.producer_id)
    if entry is None:
        return False
    if entry.last_offset >= 0:
        return b.last_offset == entry.last_offset
    return b.is_control and b.producer_epoch == entry.producer_epoch


def _keep_record(r, b, m: OffsetMap, now: int, retain_legacy_deletes: bool) -> bool:
    if r.offset > m.latest_offset:
        return True
    if r.key is None:
        return False
    if r.offset < m.get(r.key):
        return False
    if r.value is not None:
        return True
    if b.magic >= 2:
        horizon = b.delete_horizon_ms
        return horizon is None or now < horizon
    return retain_legacy_deletes


def _empty_batch(b) -> bytes:
    """§1.5: header only, codec none, baseTimestamp −1, no delete horizon, offsets and producer fields kept."""
    return build_batch(b.base_offset, [], codec=0, partition_leader_epoch=b.partition_leader_epoch,
                       log_append_time=b.log_append_time, is_transactional=b.is_transactional,
                       is_control=b.is_control, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                       base_sequence=b.base_sequence, last_offset_delta=b.last_offset_delta,
                       base_timestamp=-1, max_timestamp=b.max_timestamp)


def _rebuild(b, kept, horizon: int | None) -> bytes:
    """The batch ``b`` holding only ``kept`` (an iterator of its records, read once and never listed for
    a v2 batch; a legacy wrapper's inner messages are a list already)."""
    if b.magic >= 2:
        base = b.base_offset
        specs = (RecordSpec(r.offset - base, r.timestamp, r.key, r.value, r.headers) for r in kept)
        max_ts = b.max_timestamp if b.log_append_time else None
        return build_batch(b.base_offset, specs, codec=b.codec, partition_leader_epoch=b.partition_leader_epoch,
                           log_append_time=b.log_append_time, is_transactional=b.is_transactional,
                           is_control=b.is_control, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                           base_sequence=b.base_sequence, last_offset_delta=b.last_offset_delta,
                           max_timestamp=max_ts, delete_horizon_ms=horizon)
    m = b.message
    if m.codec == 0:
        return b.raw()
    lat = m.timestamp if m.log_append_time else None
    return build_wrapper([(r.offset, r.key, r.value, r.timestamp) for r in kept], m.codec, magic=m.magic,
                         log_append_time=lat)


def active_producers(state, now: int, cfg: CleanerConfig) -> dict:
    """Producers Kafka still tracks: those with an open transaction or not yet expired."""
    return {pid: e for pid, e in state.entries.items()
            if e.current_txn_first_offset >= 0 or now - e.timestamp < cfg.producer_id_expiration_ms}

