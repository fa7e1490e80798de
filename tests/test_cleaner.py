"""Kafka's cleaner rules (docs/kafka-on-disk.md §9) on in-memory batches, against a brute-force model:
latest value per key, keyless records dropped, tombstones kept until the delete horizon, aborted
transactional data removed, offsets never changed, and a second pass over the output changes nothing."""
from __future__ import annotations

import random

from kafkalog_formats import control as ctl
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_formats.txn_index import AbortedTxn

from kafkalog_cli.engine.producer_state import ProducerState
from kafkalog_cli.repair.cleaner import (CleanerConfig, GroupStats, SegmentInfo, TxnTracker, active_producers,
                                         build_offset_map, choose, clean_batches, group_segments)

T0 = 1_700_000_000_000
DAY = 86_400_000


def make_log(seed: int):
    """Batches of keyed records, some tombstones, keyless records, a committed and an aborted transaction."""
    rng = random.Random(seed)
    out, offset, aborted = [], 0, []
    codecs = [0, 1, 2, 3, 4]
    for i in range(30):
        n = rng.randint(1, 4)
        recs = []
        for j in range(n):
            key = None if rng.random() < 0.05 else f"k{rng.randint(0, 9)}".encode()
            value = None if rng.random() < 0.15 else f"v{offset + j}".encode()
            recs.append(RecordSpec(j, T0 + offset + j, key, value))
        out.append(build_batch(offset, recs, codec=rng.choice(codecs)))
        offset += n
        if i == 10:                      # transactional producer 9: data then ABORT
            first = offset
            out.append(build_batch(offset, [RecordSpec(0, T0 + offset, b"k1", b"aborted-1"),
                                            RecordSpec(1, T0 + offset, b"k2", b"aborted-2")],
                                   is_transactional=True, producer_id=9, producer_epoch=0, base_sequence=0))
            offset += 2
            out.append(build_batch(offset, [RecordSpec(0, T0 + offset, ctl.build_control_key(ctl.ABORT),
                                                       ctl.build_end_txn_marker(1))],
                                   is_transactional=True, is_control=True, producer_id=9, producer_epoch=0))
            aborted.append(AbortedTxn(0, 9, first, offset, offset + 1))
            offset += 1
        if i == 20:                      # transactional producer 8: data then COMMIT
            out.append(build_batch(offset, [RecordSpec(0, T0 + offset, b"k3", b"committed")],
                                   is_transactional=True, producer_id=8, producer_epoch=0, base_sequence=0))
            offset += 1
            out.append(build_batch(offset, [RecordSpec(0, T0 + offset, ctl.build_control_key(ctl.COMMIT),
                                                       ctl.build_end_txn_marker(1))],
                                   is_transactional=True, is_control=True, producer_id=8, producer_epoch=0))
            offset += 1
    return b"".join(out), aborted, offset


def clean_pass(data: bytes, aborted: list, end: int, now: int, cfg=CleanerConfig()):
    batches = list(BatchReader(data))
    m = build_offset_map([(0, end, iter(batches))], 0, end, aborted, cfg)
    state = ProducerState()
    for b in batches:
        state.update(b)
    stats = GroupStats()
    out = b"".join(clean_batches(iter(batches), m, m.latest_offset + 1, TxnTracker(aborted),
                                 active_producers(state, now, cfg), cfg, now, True, stats))
    return out, stats, m


def records(data: bytes):
    return [(r.offset, r.key, r.value, b.delete_horizon_ms, b.is_control)
            for b in BatchReader(data) for r in b.records()]


def model(data: bytes, aborted: list, now: int):
    """Brute force: the latest non-aborted offset per key; keep it unless it is a tombstone whose
    horizon (stamped on this pass when absent) has passed; markers stay on the first pass."""
    aborted_offsets = set()
    for a in aborted:
        aborted_offsets.update(range(a.first_offset, a.last_offset))
    latest = {}
    for off, key, _v, _h, control in records(data):
        if key is not None and not control and off not in aborted_offsets:
            latest[key] = off
    keep = []
    for off, key, value, horizon, control in records(data):
        if control:
            keep.append(off)
        elif off in aborted_offsets or key is None or latest.get(key) != off:
            continue
        elif value is None and horizon is not None and horizon <= now:
            continue
        else:
            keep.append(off)
    return keep


def test_first_pass_keeps_latest_per_key_and_stamps_tombstones():
    for seed in range(8):
        data, aborted, end = make_log(seed)
        now = T0 + 10 * DAY
        out, stats, m = clean_pass(data, aborted, end, now)
        got = [r[0] for r in records(out)]
        assert got == model(data, aborted, now), seed
        assert m.latest_offset == end - 1
        for off, key, value, horizon, control in records(out):
            if value is None and not control:
                assert horizon == now + DAY             # stamped on the first pass
        # offsets and batch boundaries never change: every output batch keeps its base and last offset
        src = {(b.base_offset, b.last_offset) for b in BatchReader(data)}
        assert {(b.base_offset, b.last_offset) for b in BatchReader(out)} <= src
        assert all(b.is_valid() for b in BatchReader(out))


def test_second_pass_after_horizon_drops_tombstones_and_then_nothing_changes():
    data, aborted, end = make_log(3)
    now = T0 + 10 * DAY
    first, _s, _m = clean_pass(data, aborted, end, now)
    later = now + 2 * DAY
    second, _s, _m = clean_pass(first, aborted, end, later)
    assert not any(v is None and not c for _o, _k, v, _h, c in records(second))
    assert [r[0] for r in records(second)] == [o for o in model(first, aborted, later)]
    third, stats, _m = clean_pass(second, aborted, end, later)         # again at the same time: a no-op
    assert third == second and stats.batches_copied == stats.batches_out
    settled, _s, _m = clean_pass(third, aborted, end, later + 2 * DAY)  # markers' horizons pass too
    again, stats, _m = clean_pass(settled, aborted, end, later + 3 * DAY)
    assert again == settled and stats.batches_copied == stats.batches_out


def test_aborted_data_goes_and_its_marker_goes_after_the_horizon():
    data, aborted, end = make_log(5)
    now = T0 + 10 * DAY
    first, _s, _m = clean_pass(data, aborted, end, now)
    values = [v for _o, _k, v, _h, _c in records(first)]
    assert b"aborted-1" not in values and b"aborted-2" not in values
    abort_marker = [b for b in BatchReader(first) if b.is_control and b.producer_id == 9]
    assert abort_marker and abort_marker[0].count == 1      # kept: its aborted data was seen this pass
    second, _s, _m = clean_pass(first, aborted, end, now)
    marker = [b for b in BatchReader(second) if b.is_control and b.producer_id == 9][0]
    assert marker.delete_horizon_ms == now + DAY             # data gone: horizon stamped on the marker
    third, _s, _m = clean_pass(second, aborted, end, now + 2 * DAY)
    assert not [b for b in BatchReader(third) if b.is_control and b.producer_id == 9 and b.count]


def test_offset_map_capacity_splits_the_work():
    data, aborted, end = make_log(1)
    cfg = CleanerConfig(dedupe_buffer_bytes=24 * 6)          # 6 slots, 5 keys at load factor 0.9
    batches = list(BatchReader(data))
    m = build_offset_map([(0, end, iter(batches))], 0, end, aborted, cfg)
    assert m.full and len(m) == 5 and m.latest_offset < end - 1


def test_choose_ratio_and_uncleanable():
    segs = [SegmentInfo(0, 1000, 1, 1, T0, T0, T0, 50), SegmentInfo(50, 1000, 1, 1, T0 + 5, T0 + 5, T0, 100),
            SegmentInfo(100, 500, 0, 0, T0 + 9, T0 + 9, T0, 120)]
    c = choose(segs, 0, 120, 50, 120, CleanerConfig(), T0 + DAY)
    assert (c.first_dirty, c.first_uncleanable, c.clean_bytes, c.cleanable_bytes) == (50, 100, 1000, 1000)
    assert c.ratio == 0.5 and not c.eligible                 # Kafka needs ratio > 0.5
    c = choose(segs, 0, 120, None, 120, CleanerConfig(), T0 + DAY)
    assert (c.first_dirty, c.ratio, c.eligible) == (0, 1.0, True)
    c = choose(segs, 0, 120, 500, 120, CleanerConfig(), T0 + DAY)       # beyond the log end: reset
    assert c.first_dirty == 0 and c.reset_checkpoint
    c = choose(segs, 0, 120, None, 60, CleanerConfig(), T0 + DAY)       # last stable offset inside segment 50
    assert c.first_uncleanable == 50
    c = choose(segs, 0, 120, None, 120, CleanerConfig(min_compaction_lag_ms=DAY), T0 + DAY + 3)
    assert c.first_uncleanable == 50                         # segment 50 is younger than the lag
    groups = group_segments(segs, 100, 100, CleanerConfig(segment_bytes=1500))
    assert [[s.base_offset for s in g] for g in groups] == [[0], [50]]
    groups = group_segments(segs, 100, 100, CleanerConfig())
    assert [[s.base_offset for s in g] for g in groups] == [[0, 50]]


def test_group_estimate_uses_the_list_below_the_end_offset():
    """Kafka ``Cleaner.groupSegmentsBySize`` runs over ``logSegments(0, endOffset)``; ``lastOffsetForFirstSegment``
    estimates a candidate's last offset from the next segment *in that list*, and from the first uncleanable
    offset for the last one (LogCleaner.scala 2.x–4.0). When the offset map ends inside segment 100, segment
    100 is the last of the list: its estimate is 2^31 + 99 (first uncleanable − 1), too far from base 0, so it
    starts its own group even though the segment after it (base 200) would have allowed grouping."""
    segs = [SegmentInfo(0, 100, 0, 0, T0, T0, T0, 100), SegmentInfo(100, 100, 0, 0, T0, T0, T0, 200),
            SegmentInfo(200, 100, 0, 0, T0, T0, T0, 300), SegmentInfo(2**31 + 100, 0, 0, 0, T0, T0, T0, None)]
    groups = group_segments(segs, 150, 2**31 + 100, CleanerConfig())
    assert [[s.base_offset for s in g] for g in groups] == [[0], [100]]
    groups = group_segments(segs, 2**31 + 100, 2**31 + 100, CleanerConfig())     # the map reached the end
    assert [[s.base_offset for s in g] for g in groups] == [[0, 100], [200]]



def test_offset_map_lays_entries_out_as_kafkas_skimpy_offset_map():
    """``SkimpyOffsetMap`` (3.7.0 storage/.../log/SkimpyOffsetMap.java; OffsetMap.scala before 3.5): entry i
    of the table is bytes 24i..24i+24, MD5 then the offset as a big-endian long; ``positionOf(hash,
    attempt)`` = Utils.abs(readIntBE(hash, min(attempt, 12)) + max(0, attempt - 12)) % slots. Two keys whose
    first probes meet: the second takes its second probe (the int at byte 1 of its digest). The compiled map
    holds the same bytes."""
    import hashlib
    import struct

    from kafkalog_cli.repair import native_clean
    from kafkalog_cli.repair.cleaner import OffsetMap
    slots = 7

    def probe(d, attempt):
        v = struct.unpack_from(">i", d, min(attempt, 12))[0] + max(0, attempt - 12)
        v = (v + 2**31) % 2**32 - 2**31
        return (0 if v == -2**31 else abs(v)) % slots

    keys = [b"k%d" % i for i in range(100)]
    digests = {k: hashlib.md5(k).digest() for k in keys}
    a = keys[0]
    b = next(k for k in keys[1:] if probe(digests[k], 0) == probe(digests[a], 0)
             and probe(digests[k], 1) != probe(digests[a], 0))
    maps = [OffsetMap(slots, 0.9)] + ([native_clean.ext.OffsetMap(slots, 0.9)] if native_clean.ext else [])
    for m in maps:
        assert m.put(a, 5) and m.put(b, 2**40 + 3) and m.put(a, 6)
        table = bytes(m.table if isinstance(m, OffsetMap) else memoryview(m))
        assert len(table) == slots * 24 and len(m) == 2 and m.latest_offset == 6
        at, bt = 24 * probe(digests[a], 0), 24 * probe(digests[b], 1)
        assert table[at:at + 24] == digests[a] + (6).to_bytes(8, "big")
        assert table[bt:bt + 24] == digests[b] + (2**40 + 3).to_bytes(8, "big")
        rest = bytearray(table)
        rest[at:at + 24] = rest[bt:bt + 24] = bytes(24)
        assert not any(rest)                                  # every other entry empty (all zero)
        assert (m.get(a), m.get(b), m.get(b"absent")) == (6, 2**40 + 3, -1)
    # maxDesiredMapSize = (int)(7 * 0.9) = 6: the 7th distinct key is refused, the map is full
    for m in maps:
        for k in keys[2:]:
            if not m.put(k, 1):
                break
        assert len(m) == 6 and m.full
