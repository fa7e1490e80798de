"""Open and hanging transactions: each partition's open transactions (``producer_view``) checked against the
transaction coordinator's state in ``__transaction_state`` when it is on the same disk, as
``kafka-transactions.sh find-hanging`` checks them against a live coordinator.

The coordinator's state: every ``__transaction_state-N`` partition replayed from its log start to its log
end, the latest value of each transactional id winning and a tombstone removing it (Kafka 3.x
``TransactionStateManager.loadTransactionMetadata``, 4.x the same in ``transaction-coordinator``).

A transaction open in a partition is *hanging* (``TransactionsCommand.FindHangingTransactionsCommand``,
3.0-4.x) when it has been open longer than the longest transaction timeout (``--max-transaction-timeout``,
15 minutes by default) and the coordinator either knows no transactional id for its producer id
(ListTransactions filtered by producer id) or its transaction no longer includes this partition (the
partitions of an Ongoing or Prepare* transaction, none for the Complete* and Empty states). Such a
transaction holds the partition's last stable offset back until ``kafka-transactions.sh abort`` writes
its ABORT marker (KIP-664). Where not every ``__transaction_state`` partition is on this disk, a producer
id that is not found is "unknown", not hanging: its coordinator partition may be elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalog_formats.errors import FormatError
from kafkalog_formats.message_set import BatchReader

from .findings import Finding
from .mapped import MappedFile

TXN_TOPIC = "__transaction_state"
DEFAULT_TXN_PARTITIONS = 50                # transaction.state.log.num.partitions
DEFAULT_MAX_TXN_TIMEOUT_MS = 15 * 60_000   # kafka-transactions.sh find-hanging --max-transaction-timeout
ACTIVE_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


@dataclass
class TxnMetadata:
    """The coordinator's latest record of a transactional id (``TransactionMetadata``)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    partitions: list                 # [(topic, partition)]
    start_timestamp: int
    last_update_timestamp: int
    log_partition: int
    record_offset: int


@dataclass
class CoordinatorState:
    by_id: dict = field(default_factory=dict)          # transactional id -> TxnMetadata
    partitions_read: dict = field(default_factory=dict)  # log partition -> (log start, log end)
    partition_count: int | None = None                 # of __transaction_state
    count_source: str = ""
    problems: list = field(default_factory=list)       # Findings: where the coordinator's load stops
    skipped: dict = field(default_factory=dict)        # why -> records the coordinator skips

    @property
    def complete(self) -> bool:
        """Every partition of __transaction_state is here (so an id not found does not exist)."""
        return self.partition_count is not None and len(self.partitions_read) >= self.partition_count and \
            set(range(self.partition_count)) <= set(self.partitions_read)

    def by_producer(self) -> dict:
        return {m.producer_id: m for m in self.by_id.values()}


def load_coordinator(directories, rules_for=None) -> CoordinatorState:
    """Replay every ``__transaction_state-N`` directory; ``rules_for(directory)`` gives the
    ``group_offsets.Rules`` of its Kafka release (default: 4.x's)."""
    from .coordinator_log import coordinator_partitions
    st = CoordinatorState()
    modern = {int(Path(d).name.rsplit("-", 1)[1]): (rules_for(d).modern if rules_for else True) for d in directories}
    for part, view in coordinator_partitions(directories, st.partitions_read):
        _replay(part, view, st, modern.get(part, True))
    return st


class _Stop(Exception):
    """The coordinator's load of the partition stops here (``loadTransactionMetadata`` catches every
    Throwable: what was loaded before is kept, nothing after it is read)."""


def _replay(part: int, view, st: CoordinatorState, modern: bool) -> None:
    """``TransactionStateManager.loadTransactionMetadata`` (3.x ``TransactionLog.readTxnRecordKey`` /
    ``readTxnRecordValue``; 4.4.0 ``TransactionLog.read``): a key version other than 0 is skipped; a value
    version outside 0-1 stops the load (3.x: IllegalStateException) or is skipped with a warning (4.x:
    UnknownValueVersion); a record without a key, an undecodable one or an unknown state stops it."""
    for base in view.bases:
        seg = view.log.segments[base]
        with MappedFile(seg.log_path) as mf:
            for b in BatchReader(mf.buf):
                mf.release_behind(b.position)
                if b.last_offset < view.log_start or b.is_control:
                    continue
                try:
                    for rec in b.records():
                        _record(part, rec, st, modern)
                except (FormatError, _Stop) as e:
                    why = e.reason if isinstance(e, FormatError) else str(e)
                    st.problems.append(Finding(getattr(e, "kind", "coordinator_load"),
                                               f"{why} (batch at offset {b.base_offset}: the transaction "
                                               f"coordinator's load of __transaction_state-{part} stops here; "
                                               "transactional ids after it are not known to it)",
                                               str(seg.log_path), b.position))
                    return


def _record(part: int, rec, st: CoordinatorState, modern: bool) -> None:
    from kafkalog_formats import transaction_log as tl
    if rec.key is None:
        raise _Stop("a record without a key ('Transaction state log's key should not be null')")
    k = tl.read_key(rec.key)
    if k.message is None:
        why = f"key version {k.version} (the coordinator skips it, with a warning)"
        st.skipped[why] = st.skipped.get(why, 0) + 1
        return
    tid = k.data["transactionalId"]
    if rec.value is None:
        st.by_id.pop(tid, None)
        return
    value = tl.read_value(rec.value)
    if not 0 <= value.version <= 1:
        if not modern:
            raise _Stop(f"TransactionLogValue version {value.version} of {tid} at offset {rec.offset}: 'Unknown "
                        "version from the transaction log message value' (Kafka 3.x)")
        why = f"value version {value.version} (a 4.x coordinator skips it, with a warning)"
        st.skipped[why] = st.skipped.get(why, 0) + 1
        return
    v = value.data
    state = tl.STATUS_NAMES.get(v["transactionStatus"])
    if state is None:
        raise _Stop(f"unknown transaction state id {v['transactionStatus']} at offset {rec.offset}")
    parts = [] if state == "Empty" else [(t["topic"], p) for t in (v.get("transactionPartitions") or [])
                                         for p in t["partitionIds"]]
    st.by_id[tid] = TxnMetadata(tid, v["producerId"], v["producerEpoch"], state, v["transactionTimeoutMs"], parts,
                                v["transactionStartTimestampMs"], v["transactionLastUpdateTimestampMs"], part,
                                rec.offset)


@dataclass
class TxnFinding:
    """One open transaction of one partition, judged."""
    topic: str
    partition: int
    txn: object                     # producer_view.OpenTxn
    age_ms: int                     # now - the producer's last timestamp (find-hanging's duration)
    holds_back: int                 # offsets between its first offset and the high watermark
    status: str                     # open | hanging | unknown
    transactional_id: str | None = None
    coordinator_state: str | None = None
    reason: str = ""


def judge(topic: str, partition: int, txn, high_watermark: int | None, now: int, coord: CoordinatorState | None,
          max_timeout_ms: int = DEFAULT_MAX_TXN_TIMEOUT_MS) -> TxnFinding:
    age = now - txn.last_timestamp
    hw = high_watermark if high_watermark is not None else txn.last_offset + 1
    f = TxnFinding(topic, partition, txn, age, max(hw - txn.first_offset, 0), "open")
    meta = coord.by_producer().get(txn.producer_id) if coord is not None else None
    if meta is not None:
        f.transactional_id, f.coordinator_state = meta.transactional_id, meta.state
    if coord is None or not coord.partitions_read:
        f.status, f.reason = "unknown", "no __transaction_state partition on this disk to check with"
    elif meta is None and coord.complete:
        f.status, f.reason = "hanging", "the transaction coordinator knows no transactional id for this producer id"
    elif meta is None:
        f.status, f.reason = "unknown", ("no transactional id for this producer id in the __transaction_state "
                                         "partitions on this disk (its coordinator partition may be elsewhere)")
    elif meta.state in ACTIVE_STATES and (topic, partition) in meta.partitions:
        f.reason = (f"{meta.transactional_id} is {meta.state} with this partition: the coordinator will "
                    + ("write the marker" if meta.state.startswith("Prepare") else
                       f"abort it once its timeout ({meta.timeout_ms} ms) passes"))
    else:
        f.status = "hanging"
        f.reason = f"{meta.transactional_id} is {meta.state} without this partition: no marker will come"
    if f.status != "open" and age <= max_timeout_ms:
        f.status = "open"
        f.reason += (f"; open for no more than {max_timeout_ms // 60_000} minutes (find-hanging's "
                     "--max-transaction-timeout), so not called hanging yet")
    return f


@dataclass
class TransactionsView:
    """What ``transactions`` shows: each open transaction judged, the coordinator's state, notes."""
    findings: list = field(default_factory=list)      # (describe.PartitionDescription, TxnFinding)
    coordinator: CoordinatorState = field(default_factory=CoordinatorState)
    notes: list = field(default_factory=list)
    partitions: int = 0                                # partitions read
    problems: bool = False                             # something could not be read

    @property
    def hanging(self) -> int:
        return sum(1 for _d, f in self.findings if f.status == "hanging")


def transactions_view(paths, *, now: int, max_timeout_ms: int = DEFAULT_MAX_TXN_TIMEOUT_MS,
                      server_properties=None, progress=None, kafka_version: str | None = None) -> TransactionsView:
    """Every partition under ``paths`` described (its open transactions), judged against the coordinator
    state of the ``__transaction_state`` partitions among them. Raises ``topic_config.ConfigError`` for a
    broker setting Kafka refuses."""
    from .coordinator_config import coordinator_config
    from .coordinator_version import forced_rules, rules_for_logdir
    from .describe import LogDirContext, describe_partition
    from .targets import one_copy_each, resolve
    targets = resolve(paths)
    notes = targets.partition_notes()
    parts = targets.partitions
    cc = coordinator_config(sorted(targets.logdir_paths()), server_properties=server_properties)
    coord_dirs, copies = one_copy_each(targets.replicas(TXN_TOPIC))
    logdir_of = {p.path: p.logdir for p in coord_dirs}
    found: dict = {}

    def rules_for(d: Path):
        if kafka_version is not None:
            return forced_rules(kafka_version)
        ld = logdir_of.get(d)
        ld = ld if ld in cc.resolvers else None
        if ld not in found:
            found[ld] = rules_for_logdir(ld, cc.resolvers.get(ld, next(iter(cc.resolvers.values()), None)))
        return found[ld]
    view = TransactionsView(coordinator=load_coordinator([p.path for p in coord_dirs], rules_for), notes=notes,
                            partitions=len(parts))
    coord = view.coordinator
    coord.partition_count, coord.count_source = cc.partition_count(TXN_TOPIC)
    notes.extend(cc.notes)
    notes.extend(copies)
    for p in coord.problems:
        notes.append(f"{p.file}, byte {p.position}: {p.message}")
    for why, n in sorted(coord.skipped.items()):
        notes.append(f"__transaction_state: {n} record(s) skipped: {why}")
    # a path without partitions, or one that cannot be read, is a problem, as for describe
    view.problems = bool(coord.problems) or bool(targets.partition_notes())
    contexts: dict = {}
    for part in parts:
        ctx = None
        if part.logdir is not None:
            ctx = contexts.get(part.logdir) or contexts.setdefault(part.logdir, LogDirContext(part.logdir))
        d = describe_partition(part.path, ctx, now, with_config=False)
        if progress is not None:
            progress(part.path.name)
        for p in d.problems:
            notes.append(f"{d.name}: {p}")
            view.problems = True
        for t in d.open_transactions:
            view.findings.append((d, judge(d.topic, d.partition, t, d.high_watermark, now, coord, max_timeout_ms)))
    return view
