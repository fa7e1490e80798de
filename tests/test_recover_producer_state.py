"""The producer snapshot ``recover`` writes, checked against Kafka's rules for producer state, not against
a model of our own.

Kafka (``ProducerAppendInfo.appendEndTxnMarker`` → ``ProducerStateEntry.update`` →
``maybeUpdateProducerEpoch``; 2.0 … 3.9 branches in the local mirror, apache/kafka trunk 2026 commit
074553555c60): a COMMIT/ABORT marker whose producer epoch differs from the entry's clears the entry's batch
metadata, so ``writeSnapshot`` writes last sequence -1, last offset -1, offset delta 0; a marker with the same
epoch (transaction versions 0/1) keeps the last batch. A broker loads a snapshot entry with a batch only
when its last offset is ≥ 0 (``ProducerStateManager.readSnapshot``) and accepts a client's write by
``ProducerAppendInfo.checkSequence``; ``broker_accepts`` below is those two rules, so the tests check what
matters: after ``recover --mark-clean`` (the broker trusts our snapshot and replays nothing), the
producer's next write is accepted.
"""
from __future__ import annotations

import pytest
from conftest import FIXTURES, run_cli
from recover_helpers import partition_batches

from kafkalog_formats import control as ctl
from kafkalog_formats.producer_snapshot import parse_producer_snapshot
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.engine.producer_state import ProducerState

T0 = 1_700_000_000_000
PID = 7000
COORD = 3


def data(base: int, n: int, epoch: int, seq: int, transactional: bool = True, pid: int = PID) -> bytes:
    return build_batch(base, [RecordSpec(i, T0 + base + i, b"k%d" % (base + i), b"v") for i in range(n)],
                       is_transactional=transactional, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def marker(offset: int, kind: int, epoch: int, ts: int | None = None, pid: int = PID) -> bytes:
    ts = T0 + 50_000 + offset if ts is None else ts
    return build_batch(offset, [RecordSpec(0, ts, ctl.build_control_key(kind), ctl.build_end_txn_marker(COORD))],
                       is_transactional=True, is_control=True, producer_id=pid, producer_epoch=epoch)


def broker_accepts(entry, epoch: int, first_seq: int) -> bool:
    """Would a broker that loaded ``entry`` from a snapshot accept a client batch (``epoch``, ``first_seq``)?
    ``readSnapshot``: batch metadata only when lastOffset >= 0; ``checkSequence`` (CLIENT origin): a new
    epoch must start at sequence 0; the same epoch must continue the last sequence (any sequence when the
    entry has no epoch)."""
    last_seq = entry.last_sequence if entry.last_offset >= 0 else -1
    if epoch != entry.producer_epoch:
        return first_seq == 0 or entry.producer_epoch == -1
    return entry.producer_epoch == -1 or first_seq == last_seq + 1 or (first_seq == 0 and last_seq == 0x7FFFFFFF)


def _replay(*batches: bytes) -> ProducerState:
    from kafkalog_formats.message_set import BatchReader
    st = ProducerState()
    for raw in batches:
        for b in BatchReader(raw):
            st.update(b)
    return st


def test_marker_with_a_new_epoch_clears_the_last_batch():
    """Transaction version 2 (Kafka 4.x): the COMMIT carries epoch + 1."""
    st = _replay(data(0, 10, 5, 0), marker(10, ctl.COMMIT, 6))
    (e,) = st.snapshot_entries()
    assert (e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta) == (6, -1, -1, 0)
    assert (e.coordinator_epoch, e.current_txn_first_offset, e.timestamp) == (COORD, -1, T0 + 50_010)
    assert broker_accepts(e, 6, 0) and not broker_accepts(e, 6, 10)


def test_marker_with_the_same_epoch_keeps_the_last_batch():
    """Transaction versions 0/1: the marker has the transaction's epoch."""
    st = _replay(data(0, 10, 5, 0), marker(10, ctl.COMMIT, 5))
    (e,) = st.snapshot_entries()
    assert (e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta) == (5, 9, 9, 9)
    assert (e.coordinator_epoch, e.current_txn_first_offset, e.timestamp) == (COORD, -1, T0 + 50_010)
    assert broker_accepts(e, 5, 10) and not broker_accepts(e, 5, 0)


def test_abort_with_a_new_epoch_indexes_the_transaction_and_clears_the_batch():
    st = ProducerState()
    from kafkalog_formats.message_set import BatchReader
    got = [st.update(b) for raw in (data(0, 4, 2, 0), marker(4, ctl.ABORT, 3)) for b in BatchReader(raw)]
    assert got[0] is None and tuple(got[1]) == (0, PID, 0, 4, 5)      # LSO: marker + 1, no other open txn
    (e,) = st.snapshot_entries()
    assert (e.producer_epoch, e.last_sequence, e.last_offset) == (3, -1, -1)


def test_data_after_a_bumped_marker_starts_a_new_last_batch():
    st = _replay(data(0, 10, 5, 0), marker(10, ctl.COMMIT, 6), data(11, 3, 6, 0))
    (e,) = st.snapshot_entries()
    assert (e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.current_txn_first_offset) == \
        (6, 2, 13, 2, 11)


def test_non_transactional_write_inside_an_open_transaction_stops_kafkas_loader():
    """``appendDataBatch``: InvalidTxnStateException, which no loader path catches."""
    st = _replay(data(0, 2, 1, 0), data(2, 1, 1, 2, transactional=False))
    assert st.stop is not None and st.stop[0] == 2 and "InvalidTxnStateException" in st.stop[1]


def _logdir(tmp_path, batches: list[bytes], tail: bytes = b"") -> tuple:
    d = tmp_path / "logdir"
    p = d / "txn-0"
    p.mkdir(parents=True)
    (d / "meta.properties").write_bytes((FIXTURES / "logdir" / "meta.properties").read_bytes())
    (p / "00000000000000000000.log").write_bytes(b"".join(batches) + tail)
    return d, p


@pytest.mark.parametrize("marker_epoch,next_write", [(6, (6, 0)), (5, (5, 10))], ids=["tv2-bumped", "tv1-same"])
def test_recover_mark_clean_snapshot_lets_the_producer_continue(tmp_path, marker_epoch, next_write):
    """The reproduction of the issue: a torn tail after a COMMIT; recover --mark-clean writes the snapshot
    at the new log end, which the broker then trusts without replaying the log."""
    other = data(11, 2, 0, 0, transactional=False, pid=PID + 1)     # an idempotent producer, untouched
    d, p = _logdir(tmp_path, [data(0, 10, 5, 0), marker(10, ctl.COMMIT, marker_epoch), other], tail=b"\x00" * 40)
    res = run_cli("recover", "--mark-clean", str(d))
    assert res.code == 1, res.out
    leo = partition_batches(p)[-1][1] + 1
    assert leo == 13
    snap = parse_producer_snapshot((p / f"{leo:020d}.snapshot").read_bytes())
    by_pid = {e.producer_id: e for e in snap.entries}
    e = by_pid[PID]
    assert e.producer_epoch == marker_epoch and e.current_txn_first_offset == -1
    assert broker_accepts(e, *next_write)
    if marker_epoch == 6:
        assert (e.last_sequence, e.last_offset, e.offset_delta) == (-1, -1, 0)
        assert not broker_accepts(e, 6, 10)          # what a snapshot keeping the old batch would demand
    else:
        assert (e.last_sequence, e.last_offset, e.offset_delta) == (9, 9, 9)
    o = by_pid[PID + 1]
    assert (o.producer_epoch, o.last_sequence, o.last_offset, o.offset_delta) == (0, 1, 12, 1)
    assert (d / ".kafka_cleanshutdown").exists()
    assert run_cli("recover", str(d)).code == 0


def _corpus_snapshots():
    from conftest import CORPUS
    if not CORPUS.is_dir():
        return []
    out = []
    for snap in sorted(CORPUS.rglob("*.snapshot")):
        logs = sorted(snap.parent.glob("*.log"))
        if logs and logs[0].name == "00000000000000000000.log":      # the whole history is there
            out.append(snap)
    return out


@pytest.mark.parametrize("snap", _corpus_snapshots(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_replay_reproduces_the_brokers_snapshots(snap):
    """Real broker data: replaying the log up to a snapshot's offset gives the entries the broker wrote
    there (Kafka writes them in hash-map order; compared as sets)."""
    from kafkalog_formats.message_set import BatchReader
    offset = int(snap.name[:20])
    st = ProducerState()
    for log in sorted(snap.parent.glob("*.log")):
        for b in BatchReader(log.read_bytes()):
            if b.last_offset >= offset:
                break
            st.update(b)
    theirs = parse_producer_snapshot(snap.read_bytes()).entries
    assert sorted(map(tuple, st.snapshot_entries())) == sorted(map(tuple, theirs))
    assert st.stop is None


def test_mark_clean_writes_a_snapshot_even_where_nothing_was_repaired(tmp_path):
    """Issue 21, item 3. A kill -9 before the first roll: no snapshot file, nothing to repair. With a
    clean-shutdown marker and no snapshot the broker does not replay the log but starts the producer state
    empty (``UnifiedLog.rebuildProducerState``'s upgrade shortcut, 2.x–4.x): the open transaction would be
    missing from the last stable offset and its later ABORT would index nothing. A broker's own clean
    shutdown always leaves a snapshot at the log end (``UnifiedLog.close`` → ``takeSnapshot``), so
    ``--mark-clean`` writes one for every partition."""
    committed = [data(0, 3, 5, 0), marker(3, ctl.COMMIT, 5)]
    open_txn = data(4, 2, 5, 3)                                       # still open at the kill
    idem = data(6, 2, 0, 0, transactional=False, pid=PID + 1)
    d, p = _logdir(tmp_path, committed + [open_txn, idem])
    assert run_cli("recover", str(d)).code == 1                       # the indexes written, nothing else
    assert not list(p.glob("*.snapshot"))
    assert run_cli("recover", "--dry-run", str(d)).code == 0          # nothing left to repair
    res = run_cli("recover", "--mark-clean", str(d))
    assert res.code == 1, res.out
    snap = parse_producer_snapshot((p / f"{8:020d}.snapshot").read_bytes())
    by_pid = {e.producer_id: e for e in snap.entries}
    assert by_pid[PID].current_txn_first_offset == 4 and by_pid[PID].last_offset == 5
    assert (by_pid[PID + 1].last_sequence, by_pid[PID + 1].last_offset) == (1, 7)
    assert (d / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    assert "brokerEpoch" in res.out
    again = run_cli("recover", "--mark-clean", str(d))
    assert again.code == 0, again.out                                 # a second run finds nothing to do


def test_mark_clean_keeps_the_markers_own_content(tmp_path):
    """A directory that already had a marker (written by the broker with its epoch, 3.7+) keeps its bytes."""
    d, p = _logdir(tmp_path, [data(0, 3, 5, 0), marker(3, ctl.COMMIT, 5)])
    (d / ".kafka_cleanshutdown").write_bytes(b'{"version":0,"brokerEpoch":42}')
    res = run_cli("recover", "--mark-clean", str(d))
    assert res.code == 1, res.out
    assert (p / f"{4:020d}.snapshot").exists()
    assert (d / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":42}'
