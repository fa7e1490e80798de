"""Input partitions of a read: which byte range of which segment each Spark task reads. No Spark here.

One range per non-empty segment. A segment larger than ``split_bytes`` is cut at offset-index entries:
an entry's position is where a batch starts (docs/kafka-on-disk.md §3.1, also for a follower's multi-batch
entries), the same place a broker's fetch starts reading (§3.5 lookup). Every cut is checked before it is
used: a whole batch with a valid CRC must start there, its offsets within the segment and not above the
entry's offset; cuts that fail (a corrupt or stale index) are dropped, so a bad index costs
parallelism, never records. A task owns the batches that *start* in its range.

``fromOffset`` skips segments and, inside the first segment read, starts at the index entry at or below
the offset (the broker's lookup). With ``read_committed`` each range carries its partition's aborted
transactions, read from every ``.txnindex`` (§4.1), and its last stable offset (LSO): the first offset
of the earliest transaction still open at the end of the log, found as a broker does on load (§7.4:
newest readable producer snapshot, then the batches after it).
"""
from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import Iterator

from kafkalog_formats.limits import MAX_BINARY_SIDE_FILE_BYTES

from ..engine.findings import Finding
from ..errors import InputProblem
from ..engine.logdir import LogDir
from ..engine.mapped import MappedFile, read_regular
from ..engine.partition import PartitionLog
from ..layout import classify_file
from .options import ReadOptions
from .ranges import PartitionTxns, Plan, SegmentRange, _batch_starts_at, _index_entries, segment_cuts


class PlanError(InputProblem):
    """Input that cannot be read the way asked (a transaction index Kafka would refuse)."""

    def __init__(self, file: str, position: int | None, reason: str) -> None:
        super().__init__(f"{file}: position {position}: {reason}" if position is not None else f"{file}: {reason}")
        self.file, self.position, self.reason = file, position, reason


def plan_ranges(paths: list[str], opts: ReadOptions) -> Plan:
    from . import storage
    remote = [p for p in paths if storage.is_remote(p)]
    if remote:                         # object storage (pyarrow.fs): listed and cut by ranged reads
        storage.check_supported(opts)
        plan = storage.plan_remote(remote, opts)
        local = plan_ranges([p for p in paths if not storage.is_remote(p)], opts) if len(remote) < len(paths) \
            else Plan([], findings=[])
        return Plan(local.ranges + plan.ranges, local.segments + plan.segments, local.bytes + plan.bytes,
                    (local.findings or []) + (plan.findings or []))
    plan = Plan([], findings=[])
    if opts.empty():
        return plan
    metas: dict = {}
    contexts: dict = {}
    for log_dir, log, only in iter_partitions(paths, plan.findings):
        name = log.name
        topic = name.topic if name else log.directory.name
        partition = name.partition if name else None
        if (not opts.wants_topic(topic) or not opts.wants_partition(partition)
                or not opts.wants_assigned(topic, partition)):
            continue
        if log_dir not in metas:
            metas[log_dir] = log_dir_identity(log_dir, plan.findings)
        cluster_id, node_id = metas[log_dir]
        if not opts.wants_log_dir(cluster_id, node_id):
            continue
        popts = opts.for_partition(topic, partition)
        if opts.starting_timestamp is not None:
            first = offset_for_time(log, opts.starting_timestamp)
            if first is None:
                continue              # no record at or after the time: nothing from this partition
            popts = popts.narrowed(from_offset=first)
        if popts.empty():
            continue
        bounds = None if popts is opts else (popts.from_offset, popts.to_offset)
        txns = partition_txns(log) if opts.read_committed else None
        load = _load_plan(log, log_dir, contexts)
        bases = list(log.segments)
        for i, base in enumerate(bases):
            if only is not None and base not in only:
                continue
            nxt = bases[i + 1] if i + 1 < len(bases) else None
            if popts.from_offset is not None and nxt is not None and nxt <= popts.from_offset:
                continue              # every offset of this segment is below the next base (Kafka's floor lookup)
            if popts.to_offset is not None and base > popts.to_offset:
                continue
            if txns is not None and txns.last_stable_offset is not None and base >= txns.last_stable_offset:
                continue
            seg = log.segments[base]
            size = seg.size()
            if size == 0:
                continue
            cuts = segment_cuts(seg.log_path, seg.index_path, base, size, popts)
            if len(cuts) < 2:
                continue
            plan.segments += 1
            log_path = os.path.abspath(seg.log_path)
            seg_txns = None if txns is None else _txns_for_segment(txns, base, nxt)
            for k, (start, end) in enumerate(zip(cuts, cuts[1:])):
                plan.ranges.append(SegmentRange(log_dir, topic, partition, log_path, base, start, end, size,
                                                seg_txns, cluster_id, node_id, k == 0, nxt is None,
                                                load.recovers(base), bounds))
                plan.bytes += end - start
    return plan


def offset_for_time(log: PartitionLog, timestamp: int) -> int | None:
    """The earliest offset whose record timestamp is at or after ``timestamp`` (ms), as a broker answers a
    ListOffsets request by time (Kafka's ``LogSegment.findOffsetByTimestamp``, 3.x-4.x: the first batch
    whose max timestamp reaches it, then its first record that does); None when no record does."""
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.message_set import BatchReader
    for base in log.segments:
        seg = log.segments[base]
        try:
            with MappedFile(seg.log_path) as mf:
                for b in BatchReader(mf.buf, 0, len(mf.buf)):
                    if b.max_timestamp < timestamp:
                        continue
                    try:
                        for rec in b.records():
                            if rec.timestamp >= timestamp:
                                return rec.offset
                    except FormatError:
                        continue
        except (OSError, FormatError):
            continue
    return None


def _load_plan(log: PartitionLog, log_dir: str | None, contexts: dict):
    """What Kafka's next start does with the partition's segments (verify's ``_load_plan``: recovery point,
    clean-shutdown marker, KRaft metadata log), so the export reports a segment's findings with verify's
    severities."""
    from ..engine.verify import _LogDirContext, _load_plan as load_plan
    if log_dir not in contexts:
        try:
            contexts[log_dir] = None if log_dir is None else _LogDirContext(LogDir.open(Path(log_dir)))
        except OSError:
            contexts[log_dir] = None
    return load_plan(log, contexts[log_dir])


def log_dir_identity(log_dir: str | None, findings: list) -> tuple[str | None, int | None]:
    """(cluster id, node id) from a log directory's ``meta.properties`` (Kafka's ``MetaProperties``, 3.7+
    ``org.apache.kafka.metadata.properties``; ``BrokerMetadataCheckpoint`` before: ``broker.id`` in version
    0, with ``cluster.id`` from 2.4 on; ``node.id`` and ``cluster.id`` in version 1, KRaft), read
    leniently: a file Kafka would refuse still names what it can, with a warning; no file (a partition or
    a backup copied alone) gives (None, None)."""
    if log_dir is None:
        return None, None
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.meta_properties import load_properties, parse_meta_properties
    path = Path(log_dir) / "meta.properties"
    try:
        if not path.is_file():
            return None, None
        raw = path.read_bytes()[:1 << 20]
    except OSError as e:
        findings.append(Finding("io_error", f"cannot read: {e.strerror or e}", str(path), severity="warning"))
        return None, None
    try:
        meta = parse_meta_properties(raw)
        return meta.cluster_id, meta.node_id
    except FormatError as e:
        findings.append(Finding(e.kind, f"{e.reason} (cluster_id and node_id taken from what can be read)",
                                str(path), severity="warning"))
    try:
        props = load_properties(raw)
    except FormatError:
        return None, None
    node = props.get("node.id", props.get("broker.id"))
    try:
        node_id = int(node.strip()) if node is not None else None
    except ValueError:
        node_id = None
    return props.get("cluster.id"), node_id


def iter_partitions(paths: list[str], findings: list) -> Iterator[tuple[str | None, PartitionLog, set | None]]:
    """(log directory, partition, only these segment bases or None) for files, partition directories,
    log directories and folders of log directories (``engine/targets.resolve``), sorted as ``dump-log``
    expands them. A directory that cannot be read stops the plan (OSError): an export is whole or not made."""
    from ..engine.targets import FileGiven, LogDirFound, Note, logdir_of, resolve
    for p in paths:
        if not os.path.lexists(p):
            raise FileNotFoundError(2, "No such file or directory", str(p))
    for item in resolve(paths).items:
        if isinstance(item, Note):
            if item.unreadable:
                raise item.cannot_run("; nothing was exported")
        elif isinstance(item, FileGiven):
            fn = classify_file(item.path.name)
            if fn.kind != "log" or fn.state is not None or not item.path.is_file():
                findings.append(Finding("not_a_segment", "only segment files (.log) hold records; ignored",
                                        str(item.path), severity="warning"))
                continue
            yield _abs(logdir_of(item.path.parent)), PartitionLog.open(item.path.parent), {fn.offset}
        elif isinstance(item, LogDirFound):
            findings.extend(item.dir.findings)
            for part in item.partitions:
                log = PartitionLog.open(part.path)
                findings.extend(log.findings)
                yield os.path.abspath(item.path), log, None
        else:
            log = PartitionLog.open(item.path)
            findings.extend(log.findings)
            yield _abs(item.logdir), log, None


def _abs(logdir) -> str | None:
    return os.path.abspath(logdir) if logdir is not None else None


# --- read_committed: aborted transactions and the last stable offset ------------------------------

def partition_txns(log: PartitionLog) -> PartitionTxns:
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.txn_index import parse_txn_index
    aborted = []
    for seg in log.segments.values():
        p = seg.txnindex_path
        if not p.exists():
            continue
        try:
            entries = parse_txn_index(read_regular(p, MAX_BINARY_SIDE_FILE_BYTES), str(p))
        except FormatError as e:
            raise PlanError(str(p), e.position, e.reason) from None
        aborted.extend((t.producer_id, t.first_offset, t.last_offset) for t in entries)
    return PartitionTxns(tuple(sorted(set(aborted))), last_stable_offset(log))


def _txns_for_segment(txns: PartitionTxns, base: int, next_base: int | None) -> PartitionTxns:
    """Only the aborted transactions that can cover a batch of this segment (offsets from ``base`` up to
    the next segment's base): each range carries its own short list, not the partition's whole history."""
    return PartitionTxns(tuple(t for t in txns.aborted if t[2] >= base and (next_base is None or t[1] < next_base)),
                         txns.last_stable_offset)


def last_stable_offset(log: PartitionLog) -> int | None:
    """First offset of the earliest transaction still open at the log end (None: no open transaction).

    Producer state is rebuilt as the broker does on load (docs/kafka-on-disk.md §7.4): the newest producer
    snapshot that parses (a corrupt one falls back to the next older), then the v2 batches after it.
    """
    from kafkalog_formats.errors import FormatError
    from kafkalog_formats.message_set import BatchReader
    from kafkalog_formats.producer_snapshot import parse_producer_snapshot

    from ..engine.producer_state import ProducerState

    state = ProducerState()
    start = 0
    bases = list(log.segments)
    for off in sorted(log.producer_snapshots, reverse=True):
        try:
            snap = parse_producer_snapshot(read_regular(log.directory / f"{off:020d}.snapshot", MAX_BINARY_SIDE_FILE_BYTES))
        except (FormatError, OSError):
            continue
        state.load(snap.entries, off)
        start = off
        break
    for i, base in enumerate(bases):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if nxt is not None and nxt <= start:
            continue
        seg = log.segments[base]
        with MappedFile(seg.log_path) as mf:
            pos = 0
            if start > base:
                offsets, positions = _index_entries(seg.index_path, base)
                j = bisect.bisect_right(offsets, start - 1) - 1
                while j >= 0 and not _batch_starts_at(mf.buf, positions[j], base, offsets[j]):
                    j -= 1
                pos = positions[j] if j >= 0 else 0
            for b in BatchReader(mf.buf, pos):
                if b.magic < 2 or b.last_offset < start:
                    continue
                try:
                    state.update(b)
                except FormatError:
                    continue
    open_firsts = [e.current_txn_first_offset for e in state.entries.values() if e.current_txn_first_offset >= 0]
    return min(open_firsts) if open_firsts else None
