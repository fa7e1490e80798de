"""``kafkalog compact`` against Kafka's own cleaner behaviour, rule by rule, on partitions written by the
project's writer. Each test names the Kafka class/method (and, where there is one, the Kafka unit test) its
expectation comes from; expectations are worked out from Kafka's algorithm, not from our output.

Also the reproductions of issue 10: bit rot is never laundered into a fresh CRC, undecodable batches are a
clean problem, and a transaction spanning segment groups keeps its marker as long as its data stays.
"""
from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest

from kafkalog_formats import control as ctl
from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.crc import crc32c
from kafkalog_formats.legacy import build_message
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_formats.txn_index import parse_txn_index

from kafkalog_cli.engine.producer_state import ProducerState
from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import flat, copy_logdir, dry_as_real, json_partition, run_cli

T0 = 1_700_000_000_000
DAY = 86_400_000
LATER = T0 + 30 * DAY           # every producer has expired (producer.id.expiration.ms is one day)


class Log:
    """A partition in a log directory, written batch by batch; offsets are handed out in order."""

    def __init__(self, root: Path, name: str = "t-0", **opts) -> None:
        self.root = root
        self.dir = root / name
        self.w = PartitionWriter(self.dir, **opts)
        self.next = 0

    def data(self, records: list, mtime: int = T0, **kw) -> int:
        """records: (key, value); returns the batch's base offset."""
        base = self.next
        specs = [RecordSpec(i, T0 + base + i, k, v) for i, (k, v) in enumerate(records)]
        self.w.append(build_batch(base, specs, **kw), mtime)
        self.next += len(records)
        return base

    def marker(self, ctype: int, pid: int, mtime: int = T0) -> int:
        base = self.next
        spec = RecordSpec(0, T0 + base, ctl.build_control_key(ctype), ctl.build_end_txn_marker(5))
        self.w.append(build_batch(base, [spec], is_transactional=True, is_control=True, producer_id=pid,
                                  producer_epoch=0), mtime)
        self.next += 1
        return base

    def legacy(self, key: bytes | None, value: bytes | None, mtime: int = T0) -> None:
        self.w.append(build_message(self.next, key, value, magic=1, timestamp=T0 + self.next), mtime)
        self.next += 1

    def roll(self) -> None:
        self.w.roll()

    def close(self, cleaner_checkpoint: int | None = None) -> Path:
        self.w.close()
        tp = ("t", 0)
        (self.root / "replication-offset-checkpoint").write_text(build_offset_checkpoint({tp: self.next}))
        if cleaner_checkpoint is not None:
            (self.root / "cleaner-offset-checkpoint").write_text(build_offset_checkpoint({tp: cleaner_checkpoint}))
        (self.root / "meta.properties").write_text("version=0\nbroker.id=1\n")
        return self.dir


def set_checkpoint(pdir: Path, offset: int) -> None:
    (pdir.parent / "cleaner-offset-checkpoint").write_text(build_offset_checkpoint({("t", 0): offset}))


def batches(pdir: Path) -> list:
    return [b for log in sorted(pdir.glob("*.log")) for b in BatchReader(log.read_bytes())]


def records(pdir: Path) -> list:
    """(offset, key, value) of every record, control records included."""
    return [(r.offset, r.key, r.value) for b in batches(pdir) for r in b.records()]


def tree(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


def compact(pdir: Path, now: int, *extra: str):
    return run_cli("compact", "--force", "--now", str(now), "--config", "cleanup.policy=compact", *extra, str(pdir))


# --- issue 10, item 1: never launder a damaged record ------------------------------------------------

def _flip_value_byte(log: Path, needle: bytes) -> tuple[int, int]:
    """Flip one byte inside a record value; returns (position, base offset) of the batch holding it."""
    data = bytearray(log.read_bytes())
    at = data.find(needle)
    assert at > 0
    data[at + 2] ^= 0x01
    log.write_bytes(bytes(data))
    for b in BatchReader(bytes(data)):
        if b.position <= at < b.position + b.size:
            return b.position, b.base_offset
    raise AssertionError("no batch holds the byte")


def test_bit_rot_in_an_old_segment_is_never_laundered(tmp_path):
    """Kafka's Cleaner.cleanInto/MemoryRecords.filterTo (2.x–4.0) never check CRCs: the broker would copy
    the damaged record into a new batch with a valid CRC. compact refuses: the partition is skipped with a
    problem naming file, position and offset, nothing changes, and verify still sees the damage."""
    root = copy_logdir(tmp_path / "logdir")
    pdir = root / "orders-0"
    log = pdir / "00000000000000000025.log"
    position, offset = _flip_value_byte(log, b'"amount":')
    before = tree(root)
    dry = compact(pdir, T0 + 50_000, "--dry-run")
    real = compact(pdir, T0 + 50_000)
    assert real.code == 1 and dry.code == 1
    assert f"problem: {log.name} position {position} (offset {offset}): the batch fails its CRC" in flat(real.out)
    assert dry_as_real(dry.out) == dry_as_real(real.out)      # the dry run shows the same
    assert tree(root) == before
    obj = json_partition(compact(pdir, T0 + 50_000, "--format", "json").out)
    assert obj["problems"][0]["kind"] == "crc" and obj["problems"][0]["position"] == position
    assert obj["problems"][0]["offset"] == offset and obj["groups"] == []
    v = run_cli("verify", str(root))
    assert v.code == 1 and "00000000000000000025.log" in v.out


def _patch(log: Path, index: int, mutate) -> int:
    """Apply ``mutate(bytearray of the batch)`` to the index-th batch of ``log`` and give it a valid
    CRC-32C again (over attributes .. end, as DefaultRecordBatch computes it); returns its position."""
    data = bytearray(log.read_bytes())
    b = list(BatchReader(bytes(data)))[index]
    raw = bytearray(data[b.position:b.position + b.size])
    mutate(raw)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    data[b.position:b.position + b.size] = raw
    log.write_bytes(bytes(data))
    return b.position


def _count_plus_one(raw: bytearray) -> None:
    struct.pack_into(">i", raw, 57, struct.unpack_from(">i", raw, 57)[0] + 1)


def _bad_varint(raw: bytearray) -> None:
    raw[61:66] = b"\xff\xff\xff\xff\xff"           # the first record's length: a varint that never ends


def _unknown_codec(raw: bytearray) -> None:
    raw[22] = (raw[22] & ~0x07) | 0x06              # attributes: compression type 6 does not exist


def _count_minus_one(raw: bytearray) -> None:       # more record bytes than the count declares
    struct.pack_into(">i", raw, 57, struct.unpack_from(">i", raw, 57)[0] - 1)


@pytest.mark.parametrize("mutate, reason", [(_count_plus_one, "premature EOF"), (_bad_varint, "varint"),
                                            (_unknown_codec, "compression"), (_count_minus_one, "remaining")])
def test_a_batch_with_a_valid_crc_whose_records_cannot_be_decoded_is_a_clean_problem(tmp_path, mutate, reason):
    """Kafka's cleaner would fail on such a batch (DefaultRecordBatch iterator: InvalidRecordException /
    KafkaException) and mark the partition uncleanable; compact reports it and changes nothing."""
    t = Log(tmp_path / "logdir")
    for i in range(4):
        t.data([(b"k%d" % (i % 2), b"value-%d" % i), (b"j", b"x")])
    t.roll()
    t.data([(b"k0", b"last")])
    pdir = t.close()
    log = pdir / "00000000000000000000.log"
    position = _patch(log, 2, mutate)
    before = tree(t.root)
    for extra in (["--dry-run"], []):
        r = compact(pdir, LATER, *extra)
        assert r.code == 1, r.out
        assert f"problem: {log.name} position {position} (offset 4): the batch's records cannot be decoded" \
            in flat(r.out)
        assert reason in r.out.lower() or reason in r.out
        assert tree(t.root) == before


def test_decompression_beyond_the_bound_is_a_clean_problem(tmp_path):
    """Decompression goes through the one bounded path: a batch inflating past --max-decompressed-bytes is
    reported, never decompressed into memory (here the bound is lowered to 1 MiB)."""
    t = Log(tmp_path / "logdir")
    t.data([(b"a", b"1")])
    t.data([(b"bomb", bytes(3 << 20))], codec=1)          # gzip: 3 MiB of zeros in a few KiB
    t.roll()
    t.data([(b"a", b"2")])
    pdir = t.close()
    before = tree(t.root)
    for extra in (["--dry-run"], []):
        r = compact(pdir, LATER, "--max-decompressed-bytes", str(1 << 20), *extra)
        assert r.code == 1 and f"decompress to more than {1 << 20} bytes" in r.out and "(offset 1)" in r.out
        assert tree(t.root) == before


# --- issue 10, item 2: one transaction tracker per pass (KAFKA-8351) ------------------------------------

def _groups_of_one(pdir: Path) -> str:
    """A --segment-bytes below any two segments together: every segment is a group of its own."""
    return str(max(p.stat().st_size for p in pdir.glob("*.log")))


def _open_transactions(pdir: Path) -> dict:
    """What a broker rebuilding producer state (ProducerStateManager) finds open after the last batch."""
    state = ProducerState()
    for b in batches(pdir):
        state.update(b)
    return {pid: e.current_txn_first_offset for pid, e in state.entries.items() if e.current_txn_first_offset >= 0}


def test_commit_marker_of_a_transaction_spanning_groups_stays_while_its_data_stays(tmp_path):
    """Kafka ``Cleaner.doClean`` hands one ``CleanedTransactionMetadata`` to every group (2.3+, KAFKA-8351;
    LogCleanerTest.testCommittedTransactionSpanningSegments): a COMMIT marker in a later group still sees its
    data in an earlier group, so it is not discardable and gets no delete horizon. Two passes, the second
    past delete.retention.ms: the marker stays as long as its data does; a broker replaying the result finds
    no open transaction."""
    t = Log(tmp_path / "logdir")
    t.data([(b"k1", b"v1"), (b"k2", b"v2")], is_transactional=True, producer_id=1, producer_epoch=0,
           base_sequence=0)
    t.roll()
    marker = t.marker(ctl.COMMIT, 1)
    t.data([(b"other", b"x")])
    t.roll()
    t.data([(b"tail", b"y")])
    pdir = t.close()
    groups = _groups_of_one(pdir)
    for now in (LATER, LATER + 2 * DAY):            # the second pass is past delete.retention.ms (one day)
        set_checkpoint(pdir, 0)
        r = compact(pdir, now, "--segment-bytes", groups)
        assert r.code == 0, r.out
        assert [o for o, *_ in records(pdir)][:3] == [0, 1, marker]
        m = [b for b in batches(pdir) if b.is_control][0]
        assert m.count == 1 and m.delete_horizon_ms is None
        assert _open_transactions(pdir) == {}
        assert run_cli("verify", str(t.root)).code == 0


def test_commit_marker_goes_once_its_data_is_gone_and_its_horizon_passed(tmp_path):
    """The same rules when the data is superseded: pass 1 drops the records but the data batch is still read
    (``onBatchRead``), so the marker stays unstamped; pass 2 finds no data, the marker is discardable and gets
    ``deleteHorizonMs = now + delete.retention.ms`` (``containsMarkerForEmptyTxn``); a pass after the horizon
    removes it (``discardBatchRecords``)."""
    t = Log(tmp_path / "logdir")
    t.data([(b"k1", b"old")], is_transactional=True, producer_id=1, producer_epoch=0, base_sequence=0)
    t.roll()
    marker = t.marker(ctl.COMMIT, 1)
    t.data([(b"k1", b"new")])
    t.data([(b"pad", b"p")])
    t.roll()
    t.data([(b"tail", b"y")])
    pdir = t.close()
    groups = _groups_of_one(pdir)

    def marker_batch():
        return [b for b in batches(pdir) if b.is_control and b.base_offset == marker]

    set_checkpoint(pdir, 0)
    compact(pdir, LATER, "--segment-bytes", groups)
    assert 0 not in [o for o, *_ in records(pdir)]
    assert marker_batch()[0].delete_horizon_ms is None
    set_checkpoint(pdir, 0)
    compact(pdir, LATER + DAY, "--segment-bytes", groups)
    assert marker_batch()[0].delete_horizon_ms == LATER + 2 * DAY
    set_checkpoint(pdir, 0)
    compact(pdir, LATER + 3 * DAY, "--segment-bytes", groups)
    assert marker_batch() == []
    assert _open_transactions(pdir) == {}


def test_abort_marker_and_its_index_entry_survive_a_pass_that_still_sees_the_aborted_data(tmp_path):
    """``CleanedTransactionMetadata.onControlBatchRead`` (2.3+; LogCleanerTest.testAbortedTransactionSpanning
    Segments): the ABORT marker in a later group is kept while this pass saw its transaction's data, and its
    AbortedTxn is appended to the cleaned segment's ``.txnindex`` (``cleanedIndex``). The next pass finds no
    data: the marker gets a delete horizon and its entry is not carried over; after the horizon it goes."""
    t = Log(tmp_path / "logdir")
    t.data([(b"k1", b"aborted")], is_transactional=True, producer_id=2, producer_epoch=0, base_sequence=0)
    t.roll()
    marker = t.marker(ctl.ABORT, 2)
    t.data([(b"pad", b"p")])
    t.roll()
    t.data([(b"tail", b"y")])
    pdir = t.close()
    groups = _groups_of_one(pdir)
    seg1 = pdir / f"{1:020d}.txnindex"
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in parse_txn_index(seg1.read_bytes())] == \
        [(2, 0, marker)]

    def marker_batch():
        return [b for b in batches(pdir) if b.is_control and b.base_offset == marker]

    set_checkpoint(pdir, 0)
    compact(pdir, LATER, "--segment-bytes", groups)
    assert [o for o, *_ in records(pdir)][0] == marker                  # the aborted data is gone
    assert marker_batch()[0].delete_horizon_ms is None
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in parse_txn_index(seg1.read_bytes())] == \
        [(2, 0, marker)]
    set_checkpoint(pdir, 0)
    compact(pdir, LATER + DAY, "--segment-bytes", groups)
    assert marker_batch()[0].delete_horizon_ms == LATER + 2 * DAY
    assert not seg1.exists() or parse_txn_index(seg1.read_bytes()) == []
    set_checkpoint(pdir, 0)
    compact(pdir, LATER + 3 * DAY, "--segment-bytes", groups)
    assert marker_batch() == []
    assert run_cli("verify", str(t.root)).code == 0


# --- issue 10, item 7 ------------------------------------------------------------------------------

def _checkpoint(pdir: Path) -> int:
    line = (pdir.parent / "cleaner-offset-checkpoint").read_text().splitlines()[2]
    return int(line.split()[2])


def test_offset_map_filling_inside_a_batch_ends_the_pass_after_the_last_record_put(tmp_path):
    """``SkimpyOffsetMap.put`` sets ``latestOffset`` to the offset put, and ``buildOffsetMapForSegment`` stops
    at the first put that finds ``map.size >= maxDesiredMapSize`` (2.x–4.0; cf. LogCleanerTest.
    testPartialSegmentClean with one record per batch). With room for one key (48 bytes: 2 slots × 0.9) and
    the batch [k0@0 k1@1 k0@2 k1@3] then [k0@4], worked by hand from those two methods:
    pass 1 (dirty from 0) puts k0@0 and stops at k1@1: end 1, nothing removed;
    pass 2 (from 1) puts k1@1, stops at k0@2: end 2;  pass 3 (from 2) puts k0@2: end 3, k0@0 goes;
    pass 4 (from 3) puts k1@3: end 4, k1@1 goes;  pass 5 (from 4) puts k0@4, fast-forwards to the active
    segment: end 5, k0@2 goes. (Ending at the previous batch, as before, never made progress.)"""
    t = Log(tmp_path / "logdir")
    t.data([(b"k0", b"a"), (b"k1", b"b"), (b"k0", b"c"), (b"k1", b"d")])
    t.data([(b"k0", b"e")])
    t.roll()
    t.data([(b"z", b"tail")])
    pdir = t.close()
    survivors = []
    for _ in range(5):
        compact(pdir, LATER, "--dedupe-buffer-bytes", "48")
        survivors.append((_checkpoint(pdir), [o for o, *_ in records(pdir) if o < 5]))
    assert survivors == [(1, [0, 1, 2, 3, 4]), (2, [0, 1, 2, 3, 4]), (3, [1, 2, 3, 4]), (4, [2, 3, 4]),
                         (5, [3, 4])]
    assert run_cli("verify", str(t.root)).code == 0


def test_only_the_batch_ending_at_the_first_uncleanable_offset_is_kept_empty(tmp_path):
    """``cleanInto``'s ``checkBatchRetention`` keeps a batch empty when ``batch.nextOffset ==
    upperBoundOffsetOfCleaningRound``, the first uncleanable offset passed down from ``doClean`` (KAFKA-17076,
    4.0; LogCleanerTest.testCleanSegmentsRetainingLastEmptyBatch), not the offset map's end. Map room for one
    key: it ends after the keyless batch 1..2 (end offset 3); that batch loses every record and is dropped,
    while the batch ending at the active segment's base keeps its records (beyond the map)."""
    t = Log(tmp_path / "logdir")
    t.data([(b"k0", b"a")])
    t.data([(None, b"keyless"), (None, b"keyless")])
    t.data([(b"k1", b"b"), (b"k2", b"c")])
    t.roll()
    t.data([(b"z", b"tail")])
    pdir = t.close()
    compact(pdir, LATER, "--dedupe-buffer-bytes", "48")
    assert _checkpoint(pdir) == 3
    assert [(b.base_offset, b.last_offset, b.count) for b in batches(pdir)] == [(0, 0, 1), (3, 4, 2), (5, 5, 1)]


@pytest.mark.parametrize("first_dirty, tombstone_kept", [(3, False), (2, True)])
def test_legacy_tombstone_horizon_comes_from_the_segment_holding_the_first_dirty_offset(tmp_path, first_dirty,
                                                                                       tombstone_kept):
    """``Cleaner.doClean``: legacyDeleteHorizonMs = lastModified of ``logSegments(0, firstDirtyOffset).lastOption``
    − delete.retention.ms (0.9–4.0) — the segment *holding* the first dirty offset when it lies inside one, the
    one before when it is a segment's base. A magic-1 tombstone in segment 0 (mtime M0) is kept iff
    M0 > horizon; segment 1 (offsets 2..3) has mtime M0 + 2 days."""
    m0 = T0
    t = Log(tmp_path / "logdir")
    t.legacy(b"a", b"1", m0)
    t.legacy(b"gone", None, m0)                       # a tombstone, the latest for its key
    t.roll()
    t.legacy(b"c", b"3", m0 + 2 * DAY)
    t.legacy(b"d", b"4", m0 + 2 * DAY)
    t.roll()
    t.legacy(b"e", b"5", m0 + 2 * DAY)
    pdir = t.close(cleaner_checkpoint=first_dirty)
    r = compact(pdir, LATER, "--delete-retention-ms", str(DAY))
    assert r.code == 0, r.out
    assert ((1, b"gone", None) in records(pdir)) is tombstone_kept


# --- issue 21, item 2: the transaction index is checked against the markers ---------------------------

def _txn_log(tmp_path: Path) -> tuple[Log, Path, dict]:
    """Producer 7 commits a transaction (k-c, offsets 0-1, COMMIT at 2), then aborts one (k-a at 3, ABORT
    at 4); a later non-transactional write of every key makes everything before it cleanable. The
    ``.txnindex`` says (7, 3, 4)."""
    t = Log(tmp_path / "logdir")
    t.data([(b"c1", b"committed-1"), (b"c2", b"committed-2")], is_transactional=True, producer_id=7,
           producer_epoch=0, base_sequence=0)
    commit = t.marker(ctl.COMMIT, 7)
    aborted = t.data([(b"c1", b"aborted")], is_transactional=True, producer_id=7, producer_epoch=0, base_sequence=2)
    abort = t.marker(ctl.ABORT, 7)
    t.data([(b"x", b"pad")])
    t.roll()
    t.data([(b"tail", b"y")])
    pdir = t.close()
    idx = pdir / f"{0:020d}.txnindex"
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in parse_txn_index(idx.read_bytes())] == \
        [(7, aborted, abort)]
    return t, pdir, {"commit": commit, "aborted": aborted, "abort": abort}


def _rewrite_entry(idx: Path, *, first: int | None = None, last: int | None = None) -> None:
    """AbortedTxn: version int16, producerId int64, firstOffset int64, lastOffset int64, lastStable int64."""
    data = bytearray(idx.read_bytes())
    if first is not None:
        struct.pack_into(">q", data, 10, first)
    if last is not None:
        struct.pack_into(">q", data, 18, last)
    idx.write_bytes(bytes(data))


def test_an_aborted_entry_reaching_back_over_a_committed_transaction_stops_compact(tmp_path):
    """``CleanedTransactionMetadata`` keeps a producer aborted from the entry's first offset until an ABORT
    marker (a COMMIT does not end it), so an entry whose first offset reaches back over the committed
    transaction (one bit: 3 -> 1) would make compact delete committed record 1. kafkalog checks every entry
    the pass uses against the markers and leaves the partition unchanged (exit 1)."""
    _t, pdir, o = _txn_log(tmp_path)
    _rewrite_entry(pdir / f"{0:020d}.txnindex", first=o["aborted"] ^ 0b10)
    before = tree(pdir)
    r = compact(pdir, LATER, "--format", "json")
    assert r.code == 1, r.out
    obj = json_partition(r.out)
    assert any(p["kind"] == "txn_index_mismatch" and "earlier transaction ending at offset 2" in p["message"]
               for p in obj["problems"]), obj["problems"]
    assert tree(pdir) == before


def test_an_entry_on_a_commit_marker_stops_compact(tmp_path):
    """An entry whose last offset names a COMMIT marker (a committed transaction the index calls aborted)."""
    _t, pdir, o = _txn_log(tmp_path)
    _rewrite_entry(pdir / f"{0:020d}.txnindex", first=0, last=o["commit"])
    before = tree(pdir)
    r = compact(pdir, LATER, "--format", "json")
    assert r.code == 1
    assert any("a COMMIT marker of producer 7 at offset 2" in p["message"] for p in json_partition(r.out)["problems"])
    assert tree(pdir) == before


def test_an_aborted_transaction_missing_from_the_index_stops_compact(tmp_path):
    """Without its entry the aborted record would be kept as committed, and its key (c1) would displace the
    committed c1 at offset 0 from the offset map."""
    _t, pdir, o = _txn_log(tmp_path)
    (pdir / f"{0:020d}.txnindex").write_bytes(b"")
    before = tree(pdir)
    r = compact(pdir, LATER, "--format", "json")
    assert r.code == 1
    assert any(p["kind"] == "txn_index_missing" for p in json_partition(r.out)["problems"])
    assert tree(pdir) == before


def test_a_sound_index_cleans_the_aborted_data_and_keeps_the_committed(tmp_path):
    """The same log with its index as the broker wrote it: the aborted record goes, both committed stay;
    and ``kafkalog recover --all-segments`` (the remedy the problem names) rebuilds a damaged index into
    this one."""
    _t, pdir, o = _txn_log(tmp_path)
    idx = pdir / f"{0:020d}.txnindex"
    good = idx.read_bytes()
    _rewrite_entry(idx, first=o["aborted"] ^ 0b10)
    r = run_cli("recover", "--all-segments", str(pdir.parent))
    assert r.code == 1 and idx.read_bytes() == good, r.out
    r = compact(pdir, LATER)
    assert r.code == 0, r.out
    kept = {(off, v) for off, _k, v in records(pdir)}
    assert (0, b"committed-1") in kept and (1, b"committed-2") in kept
    assert (o["aborted"], b"aborted") not in kept


def test_verify_reports_an_entry_reaching_back_over_a_committed_transaction(tmp_path):
    """The same damage seen by verify: READ_COMMITTED consumers skip a producer's batches from the entry's
    first offset until an ABORT of it (a COMMIT does not end it), so the committed transaction 0-1 would be
    served as aborted: txn_index_mismatch, an error (exit 1). The sound index verifies (exit 0)."""
    t, pdir, o = _txn_log(tmp_path)
    (t.root / ".kafka_cleanshutdown").write_bytes(b"")                 # nothing recovered: the index is read
    (t.root / "recovery-point-offset-checkpoint").write_text(build_offset_checkpoint({("t", 0): t.next}))
    assert run_cli("verify", str(t.root)).code == 0
    _rewrite_entry(pdir / f"{0:020d}.txnindex", first=o["aborted"] ^ 0b10)
    r = run_cli("verify", "--format", "json", str(t.root))
    assert r.code == 1
    found = [json.loads(x) for x in r.out.splitlines()]
    assert any(f.get("kind") == "txn_index_mismatch" and "COMMIT marker at offset 2" in f["message"]
               for f in found), r.out
