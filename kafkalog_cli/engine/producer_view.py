"""The producer state a broker holds for a partition once it has loaded the log: its active producers and
open transactions, and the last stable offset they leave (what ``kafka-transactions.sh describe-producers``
and ``find-hanging`` ask a live broker for).

Kafka's load (``UnifiedLog.rebuildProducerState`` → ``ProducerStateManager.truncateAndReload``, 2.8-4.x):
snapshots outside [log start, log end] are deleted, the latest remaining one is loaded, its producers
whose last timestamp is ``producer.id.expiration.ms`` old and that have no open transaction dropped
(``isProducerExpired``), and the batches from the snapshot's offset to the log end are replayed
(``engine.producer_state``). Without a snapshot the replay starts at the log start offset. (After a clean
shutdown without any snapshot Kafka writes empty snapshots at the last two segments and replays only
those; that case, which needs a snapshot deleted by hand, is replayed from the log start here.) The
periodic expiration check (``producer.id.expiration.check.interval.ms``, 10 minutes) then drops the
producers replayed from the log that are as old: applied here at ``now``.

The last stable offset (``UnifiedLog.lastStableOffset``, ``ProducerStateManager.firstUnstableOffset``) is the
first offset of the earliest transaction still open, or of a transaction whose marker is at or above the
high watermark (``unreplicatedTxns``); else the high watermark.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkalog_formats import control as ctl
from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader

from .mapped import MappedFile, read_regular
from .producer_state import ProducerState

#: Kafka's default producer.id.expiration.ms (1 day, every version since 2.8; transactional.id.expiration.ms
#: before that)
PRODUCER_ID_EXPIRATION_MS = 86_400_000


@dataclass
class OpenTxn:
    """A transaction open in this partition (``ProducerStateEntry.currentTxnFirstOffset``)."""
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    first_offset: int
    last_offset: int             # the producer's last data batch
    last_timestamp: int          # its max timestamp (``ProducerStateEntry.lastTimestamp``)


@dataclass
class ProducerView:
    producers: int = 0                              # active producers (DescribeProducers' count)
    open_txns: list = field(default_factory=list)   # OpenTxn, by first offset
    unreplicated: list = field(default_factory=list)  # first offsets of completed txns with a marker >= HW
    snapshot: int | None = None                     # the snapshot the state was loaded from
    replayed_from: int = 0
    stop: tuple | None = None                       # where Kafka's loader would stop (engine.producer_state)
    last_timestamp: int | None = None               # max timestamp of the log's last batch (when replayed)
    problem: str | None = None                      # why the state may be incomplete
    entries: list = field(default_factory=list)     # the active producers' ProducerStateEntry, by producer id

    def last_stable_offset(self, high_watermark: int | None) -> int | None:
        firsts = [t.first_offset for t in self.open_txns] + self.unreplicated
        if high_watermark is None:
            return min(firsts) if firsts else None
        return min([high_watermark] + firsts)


def producer_view(log, log_start: int, log_end: int, high_watermark: int | None, now: int,
                  expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> ProducerView:
    """The producer state of ``log`` (a ``PartitionLog``) at ``log_end``, loaded as the broker loads it."""
    from kafkalog_formats.producer_snapshot import parse_producer_snapshot
    view = ProducerView()
    state = ProducerState()
    snaps = sorted((o for o in log.producer_snapshots if log_start <= o <= log_end), reverse=True)
    for off in snaps:                 # a corrupt snapshot is deleted and the next older one tried
        try:
            snap = parse_producer_snapshot(read_regular(log.directory / f"{off:020d}.snapshot"))
        except (FormatError, OSError):
            continue
        live = [e for e in snap.entries if e.current_txn_first_offset >= 0 or now - e.timestamp < expiration_ms]
        state.load(live, off)
        view.snapshot = off
        break
    start = state.map_end_offset if view.snapshot is not None else log_start
    view.replayed_from = start
    hw = high_watermark if high_watermark is not None else log_end
    try:
        _replay(log, state, start, hw, view)
    except FormatError as e:
        view.problem = f"{e.reason} at byte {e.position} of {e.file}: the producer state stops there"
    except OSError as e:
        view.problem = f"cannot read {e.filename}: {e.strerror or e}"
    view.stop = state.stop
    active = {pid: e for pid, e in state.entries.items()
              if e.current_txn_first_offset >= 0 or now - e.timestamp < expiration_ms}
    view.producers = len(active)
    view.entries = [active[pid] for pid in sorted(active)]
    view.open_txns = sorted((OpenTxn(pid, e.producer_epoch, e.coordinator_epoch, e.current_txn_first_offset,
                                     e.last_offset, e.timestamp)
                             for pid, e in active.items() if e.current_txn_first_offset >= 0),
                            key=lambda t: (t.first_offset, t.producer_id))
    return view


def _replay(log, state: ProducerState, start: int, hw: int, view: ProducerView) -> None:
    bases = list(log.segments)
    i = max(0, _floor(bases, start))
    for base in bases[i:]:
        seg = log.segments[base]
        with MappedFile(seg.log_path) as mf:
            pos = _start_position(seg, mf, start) if base == bases[i] else 0
            reader = BatchReader(mf.buf, pos)
            for b in reader:
                mf.release_behind(b.position)
                if b.last_offset < start:
                    continue
                view.last_timestamp = b.max_timestamp
                if b.magic >= 2 and b.producer_id >= 0:
                    old = state.entries.get(b.producer_id)
                    first = old.current_txn_first_offset if old is not None else -1
                    if b.is_control and first >= 0 and b.last_offset >= hw and _is_marker(b):
                        view.unreplicated.append(first)
                    try:
                        state.update(b)
                    except FormatError as e:        # a bad control record key: located at its batch
                        raise FormatError(e.reason, b.position, e.kind, str(seg.log_path), b.base_offset) from None
                else:
                    state.map_end_offset = b.last_offset + 1
            stop = reader.stop
            if stop is not None and stop.kind != "trailing_bytes" and not _zero_tail(mf.buf, stop.position):
                view.problem = (f"{stop.reason} at byte {stop.position} of {seg.log_path}: the producer state "
                                "stops there (Kafka's recovery would truncate the segment)")
                return


def _is_marker(b) -> bool:
    if not b.count:
        return False
    try:
        return ctl.parse_control_key(next(iter(b.records())).key).type in (ctl.ABORT, ctl.COMMIT)
    except FormatError:
        return False


def _zero_tail(buf, pos: int) -> bool:
    from kafkalog_formats.limits import all_zero
    return all_zero(buf, pos, len(buf))


def _floor(bases: list[int], offset: int) -> int:
    import bisect
    return bisect.bisect_right(bases, offset) - 1


def _start_position(seg, mf: MappedFile, offset: int) -> int:
    """Where to start reading for ``offset``: the offset index's floor entry, checked against the segment
    (a corrupt index: the start of the segment)."""
    from kafkalog_formats import offset_index as oi
    from .mapped import is_regular
    if not is_regular(seg.index_path):
        return 0
    with MappedFile(seg.index_path) as ix:
        from .lookup import _entry_count
        n = _entry_count(ix.buf, 8, 0)
        if not n:
            return 0
        _slot, _entry, pos, problem = oi.checked_lookup(ix.buf, mf.buf, seg.base_offset, offset, n)
    return 0 if problem else pos

