"""Compare two replicas of a partition in one streaming merge by offset, and say what the broker would
discard when either rejoins with the other as leader.

Both logs are walked batch by batch from their log start offsets (segment boundaries do not matter).
While the two walks stand at batches with the same first and last offset, the same stored CRC and the
same size, the batches hold the same records (the CRC covers every byte but the base offset, length,
partition leader epoch and magic: ``DefaultRecordBatch``), so identical replicas cost a shallow walk.
Anywhere else the records of the batches in question are decoded and compared offset by offset: the
walk is back in batch mode at the next batch both sides start at the same offset. Memory is one
decoded batch per side.

Every offset held by only one side is explained when it can be: below the other side's log start
(retention, delete-records), at or above its log end (it lags), or below its cleaner checkpoint
(compaction removed it). Records at the same offset that differ, and offsets missing without such an
explanation, are divergence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkalog_formats.record import RecordHeaders

from ..findings import Finding
from .epochs import Truncation, leader_cache, truncation_point
from .replica import Replica


@dataclass
class Direction:
    """``follower`` rejoins with ``leader`` (indexes 0/1 into the pair) as leader."""
    follower: int
    leader: int
    truncation: Truncation
    keep_below: int               # the follower keeps offsets below this
    full_reset: bool = False      # the truncation offset is below the leader's log start
    records: int = 0
    batches: int = 0
    refetched: int = 0            # identical on the leader at the same offset
    retention: int = 0            # below the leader's log start
    compacted: int = 0            # removed by compaction on the leader
    lost: int = 0                 # nowhere on the leader
    first_offset: int | None = None
    last_offset: int | None = None

    @property
    def discards(self) -> bool:
        return self.batches > 0


@dataclass
class PairResult:
    replicas: tuple
    directions: list = field(default_factory=list)
    problems: list = field(default_factory=list)      # Findings
    topic_ids_differ: bool = False
    identical_batches: int = 0
    identical_records: int = 0
    epoch_only_batches: int = 0                       # same records, written under different leader epochs
    differing_records: int = 0
    only: dict = field(default_factory=dict)          # (side, reason) -> record count
    only_ranges: dict = field(default_factory=dict)   # (side, reason) -> [first, last]
    first_difference: int | None = None
    first_difference_what: str = ""

    @property
    def diverged(self) -> bool:
        return (self.topic_ids_differ or self.differing_records > 0
                or any(r == "missing" for _, r in self.only))

    @property
    def agree(self) -> bool:
        return not self.diverged and not self.problems

    @property
    def common_start(self) -> int:
        return max(r.log_start for r in self.replicas)

    @property
    def common_end(self) -> int:
        return min(r.log_end for r in self.replicas)


#: how a follower's record held only by it is discarded, by why the other side lacks it ("lost" otherwise)
DISCARDED_AS = {"retention": "retention", "compaction": "compacted"}

REASONS = {
    "retention": "below the other's log start (retention or delete-records)",
    "beyond": "at or above the other's log end (it lags)",
    "compaction": "below the other's cleaner checkpoint (removed by compaction)",
    "missing": "missing on the other side (not explained by retention, lag or compaction)",
}


def directions_for(a: Replica, b: Replica, reference: int | None) -> list[Direction]:
    """Truncation when b rejoins with a as leader and (without a reference) a with b."""
    pairs = [(1, 0)] if reference == 0 else [(0, 1)] if reference == 1 else [(1, 0), (0, 1)]
    reps = (a, b)
    out = []
    for f, l in pairs:
        fol, lead = reps[f], reps[l]
        t = truncation_point(leader_cache(lead.cache, fol.cache, lead.log_end), lead.log_end, fol.cache,
                             fol.log_end, fol.high_watermark)
        keep = min(t.offset, fol.log_end)
        full = keep < lead.log_start and fol.log_end > keep
        d = Direction(f, l, t, fol.log_start if full else keep, full)
        out.append(d)
    return out


class _Side:
    """One replica's walk: the current batch, and its records once expanded."""

    def __init__(self, idx: int, replica: Replica, walk) -> None:
        self.idx = idx
        self.r = replica
        self.walk = walk
        self._gen = replica.batches(walk.stopped)
        self.batch = None
        self.start = 0
        self.partial = False
        self.recs = None          # iterator of records (record mode) or None (batch mode)
        self.rec = None           # pending record in record mode (None: this batch is done)
        self.prev_last = replica.log_start - 1
        self.advance()

    def advance(self) -> None:
        if self.batch is not None:
            self.walk.leaving(self)
            self.prev_last = self.batch.last_offset
        self.batch = next(self._gen, None)
        self.recs = self.rec = None
        if self.batch is not None:
            b = self.batch
            self.start = b.base_offset if b.magic >= 2 or b.codec == 0 else self.prev_last + 1
            self.partial = self.start < self.r.log_start

    def expand(self) -> None:
        if not self.batch.is_valid():
            self.walk.corrupt(self)
        low = self.r.log_start
        self.recs = (x for x in self.batch.records() if x.offset >= low)
        self.rec = next(self.recs, None)

    def next_record(self) -> None:
        self.rec = next(self.recs, None)


def record_count(batch) -> int:
    if batch.magic >= 2:
        return batch.count
    return 1 if batch.codec == 0 else sum(1 for _ in batch.records())


def _same_batch(x, y) -> bool:
    """Same last offset, stored CRC, size and magic, then the same bytes (a stored CRC that no longer
    matches its bytes must not pass for agreement); the partition leader epoch (bytes 12-15 of a v2
    batch) is left out: the CRC does not cover it either."""
    if not (x.last_offset == y.last_offset and x.crc == y.crc and x.size == y.size and x.magic == y.magic):
        return False
    px, py, n = x.position, y.position, x.size
    if x.magic >= 2:
        return x.buf[px:px + 12] == y.buf[py:py + 12] and x.buf[px + 16:px + n] == y.buf[py + 16:py + n]
    return x.buf[px:px + n] == y.buf[py:py + n]


def _fields(batch, rec) -> tuple:
    hs = rec.headers if type(rec.headers) is RecordHeaders else tuple(rec.headers)     # compared as they walk
    return (rec.timestamp, rec.key, rec.value, hs, rec.sequence, batch.producer_id,
            batch.producer_epoch, batch.is_transactional, batch.is_control, batch.magic)


_FIELD_NAMES = ("timestamp", "key", "value", "headers", "sequence", "producer id", "producer epoch",
                "transactional flag", "control flag", "magic")


def discarded_events(ev: dict):
    """The "discarded" events (one per record) of a "discarded_records" event (records of one batch)."""
    d, why = ev["direction"], ev["why"]
    pid, pe, ple, txn = ev["producer_id"], ev["producer_epoch"], ev["partition_leader_epoch"], ev["is_transactional"]
    for offset, ts, seq, klen, vlen in ev["rows"]:
        yield {"offset": offset, "timestamp": ts, "producer_id": pid, "producer_epoch": pe, "sequence": seq,
               "partition_leader_epoch": ple, "is_transactional": txn, "is_control": False, "on_leader": False,
               "why": why, "key_size": klen, "value_size": vlen, "direction": d}


class PairWalk:
    """Run with ``run()``; ``sink(kind, event)`` receives each difference and each discarded record
    (kinds "difference", "discarded", and "discarded_records": records of one data batch discarded for
    one reason, ``discarded_events`` gives them one by one); ``on_discarded_batch(direction, batch)``
    each batch a follower would remove (the view is valid only during the call). ``listed``: how many
    discarded records per direction the sink lists (None: all); the walk builds no more events."""

    #: a data batch held by one side only, in a discard zone and for one reason, counted per batch from
    #: its record columns (False: every record through ``_only``, the reference the tests compare with)
    whole_batches = True

    def __init__(self, a: Replica, b: Replica, reference: int | None = None, sink=None,
                 on_discarded_batch=None, listed: int | None = None) -> None:
        self.reps = (a, b)
        self.listed = listed              # discarded records the sink lists per direction (None: all)
        self.listed_so_far: dict = {}
        self.res = PairResult((a, b))
        self.sink = sink or (lambda kind, ev: None)
        self.on_batch = on_discarded_batch
        self.res.problems.extend(p for r in (a, b) for p in r.problems)
        if a.topic_id and b.topic_id and a.topic_id != b.topic_id:
            self.res.topic_ids_differ = True
        self.res.directions = [] if self.res.topic_ids_differ else directions_for(a, b, reference)
        self.zone: dict = {d.follower: d for d in self.res.directions}

    # --- callbacks from the sides --------------------------------------------------------------------

    def stopped(self, finding: Finding) -> None:
        self.res.problems.append(finding)

    def corrupt(self, side: _Side) -> None:
        b = side.batch
        self.res.problems.append(Finding("crc_mismatch", f"batch at offset {b.last_offset if b.magic < 2 else b.base_offset}"
                                         f" fails its CRC check: a difference here may be corruption, not "
                                         "replication (run kafkalog verify)", str(side.r.directory), b.position))

    def leaving(self, side: _Side) -> None:
        d = self.zone.get(side.idx)
        if d is not None and side.batch.last_offset >= d.keep_below:
            d.batches += 1
            if self.on_batch is not None:
                self.on_batch(d, side.batch)

    # --- outcomes ----------------------------------------------------------------------------------

    def _difference(self, offset: int, what: str, event: dict) -> None:
        if self.res.first_difference is None or offset < self.res.first_difference:
            self.res.first_difference = offset
            self.res.first_difference_what = what
        self.sink("difference", event)

    def _count_only(self, key: tuple, n: int, first: int, last: int) -> None:
        """``n`` records of offsets ``first``..``last`` held by one side only, for one reason (``key``)."""
        self.res.only[key] = self.res.only.get(key, 0) + n
        rng = self.res.only_ranges.setdefault(key, [first, last])
        rng[0], rng[1] = min(rng[0], first), max(rng[1], last)

    @staticmethod
    def _count_discard(d: Direction, how: str, n: int, first: int, last: int) -> None:
        """``n`` records of offsets ``first``..``last`` the follower of ``d`` would discard, ``how``."""
        d.records += n
        setattr(d, how, getattr(d, how) + n)
        d.first_offset = first if d.first_offset is None else min(d.first_offset, first)
        d.last_offset = last if d.last_offset is None else max(d.last_offset, last)

    def _discard(self, side: _Side, rec, how: str) -> None:
        d = self.zone.get(side.idx)
        if d is None or side.batch.last_offset < d.keep_below:
            return
        self._count_discard(d, how, 1, rec.offset, rec.offset)
        b = side.batch
        ev = {"offset": rec.offset, "timestamp": rec.timestamp, "producer_id": b.producer_id,
              "producer_epoch": b.producer_epoch, "sequence": rec.sequence,
              "partition_leader_epoch": b.partition_leader_epoch, "is_transactional": b.is_transactional,
              "is_control": b.is_control, "on_leader": how == "refetched", "why": how,
              "key_size": -1 if rec.key is None else len(rec.key),
              "value_size": -1 if rec.value is None else len(rec.value), "direction": d}
        if b.is_control:
            ev["marker"] = _marker(rec)
        self.sink("discarded", ev)

    def _missing_reason(self, other: Replica, offset: int) -> str:
        if offset < other.log_start:
            return "retention"
        if offset >= other.log_end:
            return "beyond"
        if other.cleaned_end is not None and offset < other.cleaned_end:
            return "compaction"
        return "missing"

    def _only(self, side: _Side, rec) -> None:
        other = self.reps[1 - side.idx]
        reason = self._missing_reason(other, rec.offset)
        self._count_only((side.idx, reason), 1, rec.offset, rec.offset)
        if reason == "missing":
            self._difference(rec.offset, "missing", {"offset": rec.offset, "what": "missing", "on": side.idx,
                                                      "leader_epoch": side.batch.partition_leader_epoch})
        self._discard(side, rec, DISCARDED_AS.get(reason, "lost"))

    def _only_batch(self, side: _Side) -> None:
        """A whole batch lies where the other side has nothing: decoded only when needed."""
        b = side.batch
        other = self.reps[1 - side.idx]
        d = self.zone.get(side.idx)
        in_zone = d is not None and b.last_offset >= d.keep_below
        lo, hi = max(side.start, side.r.log_start), b.last_offset
        r_lo, r_hi = self._missing_reason(other, lo), self._missing_reason(other, hi)
        if (self.whole_batches and in_zone and r_lo == r_hi != "missing" and not side.partial
                and not b.is_control):
            self._only_rows(side, d, r_lo, _record_rows(b, side.r.log_start))
            return
        if in_zone or r_lo != r_hi or r_lo == "missing" or side.partial:
            side.expand()
            while side.rec is not None:
                self._only(side, side.rec)
                side.next_record()
            return
        n = record_count(b)
        if n:
            self._count_only((side.idx, r_lo), n, lo, hi)

    def _only_rows(self, side: _Side, d: Direction, reason: str, chunks) -> None:
        """``_only`` for every record of a data batch at once (the same reason holds for its whole range,
        and it lies in ``d``'s discard zone): counts per chunk of records, an event per record only while
        the sink lists them (a text report lists the first few; a batch of millions cost a minute)."""
        if not side.batch.is_valid():
            self.corrupt(side)
        how = DISCARDED_AS.get(reason, "lost")
        b = side.batch
        pid, pe, ple, txn = b.producer_id, b.producer_epoch, b.partition_leader_epoch, b.is_transactional
        for rows in chunks:
            n = len(rows)
            if not n:
                continue
            first, last = min(r[0] for r in rows), max(r[0] for r in rows)
            self._count_only((side.idx, reason), n, first, last)
            self._count_discard(d, how, n, first, last)
            done = self.listed_so_far.get(id(d), 0)
            wanted = n if self.listed is None else max(0, min(n, self.listed - done))
            self.listed_so_far[id(d)] = done + wanted
            if wanted:
                self.sink("discarded_records", {"rows": rows[:wanted], "producer_id": pid, "producer_epoch": pe,
                                                "partition_leader_epoch": ple, "is_transactional": txn,
                                                "why": how, "direction": d})

    def _identical_batch(self, sa: _Side, sb: _Side) -> None:
        self.res.identical_batches += 1
        if sa.batch.partition_leader_epoch != sb.batch.partition_leader_epoch:
            self.res.epoch_only_batches += 1
        zone = [s for s in (sa, sb) if s.idx in self.zone and s.batch.last_offset >= self.zone[s.idx].keep_below]
        if not zone:
            self.res.identical_records += record_count(sa.batch)
            return
        for s in zone:
            s.expand()
            n = 0
            while s.rec is not None:
                self._discard(s, s.rec, "refetched")
                n += 1
                s.next_record()
        self.res.identical_records += n

    def _compare_records(self, sa: _Side, sb: _Side) -> None:
        ra, rb = sa.rec, sb.rec
        fa, fb = _fields(sa.batch, ra), _fields(sb.batch, rb)
        if fa == fb:
            self.res.identical_records += 1
            self._discard(sa, ra, "refetched")
            self._discard(sb, rb, "refetched")
            return
        self.res.differing_records += 1
        fields = [n for n, x, y in zip(_FIELD_NAMES, fa, fb) if x != y]
        ev = {"offset": ra.offset, "what": "content", "fields": fields,
              "leader_epochs": [sa.batch.partition_leader_epoch, sb.batch.partition_leader_epoch],
              "timestamps": [ra.timestamp, rb.timestamp],
              "producers": [sa.batch.producer_id, sb.batch.producer_id]}
        if sa.batch.is_control or sb.batch.is_control:
            ev["markers"] = [_marker(ra) if sa.batch.is_control else None,
                             _marker(rb) if sb.batch.is_control else None]
        self._difference(ra.offset, "content", ev)
        self._discard(sa, ra, "lost")
        self._discard(sb, rb, "lost")

    # --- the merge ---------------------------------------------------------------------------------

    def run(self) -> PairResult:
        if self.res.topic_ids_differ:
            return self.res
        sa, sb = _Side(0, self.reps[0], self), _Side(1, self.reps[1], self)
        try:
            self._merge(sa, sb)
        except Exception as e:          # FormatError from a record that cannot be decoded
            from kafkalog_formats.errors import FormatError
            if not isinstance(e, FormatError):
                raise
            side = sa if sa.batch is not None else sb
            self.res.problems.append(Finding(e.kind, f"{e.reason}: the comparison stops here (run kafkalog "
                                             "verify)", str(side.r.directory), e.position))
        return self.res

    def _merge(self, sa: _Side, sb: _Side) -> None:
        while sa.batch is not None and sb.batch is not None:
            for s in (sa, sb):
                if s.recs is not None and s.rec is None:
                    s.advance()
            if sa.batch is None or sb.batch is None:
                break
            if sa.recs is None and sb.recs is None:
                if (not sa.partial and not sb.partial and sa.start == sb.start
                        and _same_batch(sa.batch, sb.batch)):
                    self._identical_batch(sa, sb)
                    sa.advance()
                    sb.advance()
                    continue
                if sa.batch.last_offset < sb.start:
                    self._only_batch(sa)
                    sa.advance()
                    continue
                if sb.batch.last_offset < sa.start:
                    self._only_batch(sb)
                    sb.advance()
                    continue
                sa.expand()
                sb.expand()
                continue
            # at least one side is inside a batch's records
            for s, o in ((sa, sb), (sb, sa)):
                if s.recs is None:
                    if s.batch.last_offset < o.rec.offset:
                        self._only_batch(s)
                        s.advance()
                    elif s.start > o.rec.offset:
                        self._only(o, o.rec)
                        o.next_record()
                    else:
                        s.expand()
                    break
            else:
                ra, rb = sa.rec, sb.rec
                if ra.offset == rb.offset:
                    self._compare_records(sa, sb)
                    sa.next_record()
                    sb.next_record()
                elif ra.offset < rb.offset:
                    self._only(sa, ra)
                    sa.next_record()
                else:
                    self._only(sb, rb)
                    sb.next_record()
        for s in (sa, sb):
            while s.batch is not None:
                if s.recs is not None:
                    while s.rec is not None:
                        self._only(s, s.rec)
                        s.next_record()
                else:
                    self._only_batch(s)
                s.advance()


CHUNK = 65536


def _record_rows(batch, log_start: int):
    """The records of a data batch at or above ``log_start`` (as ``_Side.expand`` keeps them), in lists
    of at most ``CHUNK`` tuples (offset, timestamp, sequence, key size, value size; -1 for a null):
    from the compiled record path's columns when it reads the batch, else from the decoded records (a
    batch above its record bound, a legacy entry; their errors are the pure path's own)."""
    from kafkalog_formats import columns, native
    if native.ext is not None and batch.magic >= 2:
        from kafkalog_formats.message_set import _decompress_v2
        s = columns.scan(batch.buf, batch.position, batch.position + batch.size, headers=False, crc=False,
                         decompress=_decompress_v2)
        if s.reason == columns.END and s.n_batches == 1:
            t = s.row_table()
            for lo in range(0, s.n_rows, CHUNK):
                at = lo * columns.NR
                yield [r for r in zip(t[at:(lo + CHUNK) * columns.NR:columns.NR], t[at + 1::columns.NR],
                                      t[at + 8::columns.NR], t[at + 3::columns.NR], t[at + 5::columns.NR])
                       if r[0] >= log_start]
            return
    rows = []
    for x in batch.records():
        if x.offset >= log_start:
            rows.append((x.offset, x.timestamp, x.sequence, -1 if x.key is None else len(x.key),
                         -1 if x.value is None else len(x.value)))
            if len(rows) == CHUNK:
                yield rows
                rows = []
    yield rows


def _marker(rec) -> str:
    from kafkalog_formats.control import parse_control_key
    from kafkalog_formats.errors import FormatError
    try:
        return parse_control_key(rec.key).name
    except FormatError:
        return "UNKNOWN"
