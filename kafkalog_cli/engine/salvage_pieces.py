"""The pieces of a segment as salvage sees it (``salvage.SegmentWalk`` makes them): one framed entry and what
it is (``classify``: the rules a consumer and Kafka's recovery apply to it), the runs kept as they are
(``Keep``), the batches kept with header fields outside the CRC rewritten (``Repair``), the damaged ranges
dropped (``Damage``), and a segment's ``Layout``; plus the batches a recovery keeps that a consumer stops at
(``unreadable_batches``, which plain ``recover`` reports)."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkalog_formats import native
from kafkalog_formats import control as ctl
from kafkalog_formats.errors import FormatError
from kafkalog_formats.framing import Stop, frame
from kafkalog_formats.message_set import BatchV2View, LegacyBatchView

#: bytes a compiled run reads before handing back (pages behind it are then released)
RUN_BYTES = 32 * 1024 * 1024

@dataclass
class Entry:
    """One entry framed at ``position`` and what it is. ``kind``: ``ok`` (a batch a consumer reads), or why
    not: ``framing`` (no batch can be framed here), ``crc``, ``magic``, ``codec``, ``offset_delta``,
    ``count``, ``records``, ``control``; ``base``/``last``: the offsets its header claims (None when none
    could be read)."""
    position: int
    size: int | None
    kind: str
    reason: str
    base: int | None = None
    last: int | None = None
    count: int = 0
    epoch: int = -1
    magic: int = 2

    @property
    def end(self) -> int | None:
        return None if self.size is None else self.position + self.size


@dataclass
class Keep:
    """Bytes ``[start, end)`` copied as they are: ``batches`` whole batches holding ``records`` records,
    offsets ``first``..``last``, the last one's partition leader epoch ``epoch``."""
    start: int
    end: int
    batches: int
    records: int
    first: int
    last: int
    epoch: int = -1


@dataclass
class Repair:
    """The batch ``[start, end)`` kept with header fields outside the CRC rewritten: ``fields`` holds
    (name, old value, new value) for ``base_offset`` (bytes 0-7), ``length`` (8-11) or
    ``partition_leader_epoch`` (12-15); ``reason`` says what proved each new value."""
    start: int
    end: int
    fields: tuple
    reason: str
    first: int
    last: int
    records: int
    epoch: int = -1

    def patch(self, data: bytearray, at: int = 0) -> None:
        """Write the new values into the batch's bytes at ``at`` of ``data``."""
        for name, _old, new in self.fields:
            fmt, where = _FIELDS[name]
            struct.pack_into(fmt, data, at + where, new)


_FIELDS = {"base_offset": (">q", 0), "length": (">i", 8), "partition_leader_epoch": (">i", 12)}


@dataclass
class Damage:
    """Bytes ``[start, end)`` dropped: the entries they held (``Entry``, their claimed offsets untrusted),
    how the walk found the next batch (``framing``, ``scan``, ``none``: nothing after it in the segment), and
    the kept offsets around it (``after``: the last before; ``before``: the first after, filled in by the
    caller when it lies in a later segment; None: none)."""
    start: int
    end: int
    entries: list = field(default_factory=list)
    found_by: str = "framing"
    after: int | None = None
    before: int | None = None
    note: str = ""

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def lost(self) -> tuple[int, int] | None:
        """The offsets lost (inclusive), when both neighbours are known."""
        if self.after is None or self.before is None or self.before - self.after < 2:
            return None
        return self.after + 1, self.before - 1


@dataclass
class Layout:
    """A segment as salvage keeps it: its pieces (``Keep``, ``Repair``, ``Damage``) in file order."""
    base: int
    size: int
    pieces: list = field(default_factory=list)
    last_epoch: int = -1            # the partition leader epoch of the last batch kept (-1: none)

    @property
    def damages(self) -> list:
        return [p for p in self.pieces if isinstance(p, Damage)]

    @property
    def repairs(self) -> list:
        return [p for p in self.pieces if isinstance(p, Repair)]

    @property
    def changed(self) -> bool:
        return any(not isinstance(p, Keep) for p in self.pieces)

    @property
    def last_offset(self) -> int | None:
        for p in reversed(self.pieces):
            if not isinstance(p, Damage):
                return p.last
        return None

    @property
    def first_offset(self) -> int | None:
        for p in self.pieces:
            if not isinstance(p, Damage):
                return p.first
        return None

    @property
    def new_size(self) -> int:
        return sum(p.end - p.start for p in self.pieces if not isinstance(p, Damage))

    def records_from(self, position: int) -> tuple[int, int | None, int | None]:
        """(records, first offset, last offset) of what is kept from byte ``position`` on: the pieces that
        start there or later (``position`` is where a broker's recovery cuts: a damaged entry's start)."""
        n, first, last = 0, None, None
        for p in self.pieces:
            if isinstance(p, Damage) or p.start < position:
                continue
            n += p.records
            first = p.first if first is None else first
            last = p.last
        return n, first, last


# --- classification of one entry -----------------------------------------------------------------------

def classify(buf, pos: int, end: int, deep: bool = True) -> Entry | None:
    """What the entry framed at ``pos`` is (None at the exact end of the bytes)."""
    fr = frame(buf, pos, end)
    if fr is None:
        return None
    if isinstance(fr, Stop):
        return Entry(pos, None, "framing", fr.reason)
    magic, size = fr
    if magic < 2:
        try:
            b = LegacyBatchView(buf, pos)
            if not b.is_valid():
                return Entry(pos, size, "crc", f"Message is corrupt (stored crc = {b.crc}, computed crc = "
                             f"{b.computed_crc()})", b.offset_field, b.offset_field, 1, -1, magic)
            last = b.last_offset
            first = b.base_offset if deep or b.codec == 0 else last
        except FormatError as e:               # no CRC proves this entry: damage to resynchronise from
            return Entry(pos, size, "crc", e.reason, magic=magic)
        return Entry(pos, size, "ok", "", first, last, 1, -1, magic)
    b = BatchV2View(buf, pos)
    base, delta = b.base_offset, b.last_offset_delta
    claimed = dict(base=base, last=b.last_offset, count=max(b.count, 0), epoch=b.partition_leader_epoch, magic=magic)
    if not b.is_valid():
        return Entry(pos, size, "crc", f"Record is corrupt (stored crc = {b.crc}, computed crc = {b.computed_crc()})",
                     **claimed)
    if magic != 2:
        return Entry(pos, size, "magic", f"magic byte {magic} outside the CRC: consumers stop at it (Invalid magic "
                     "found in record)", **claimed)
    if b.codec > 4:
        return Entry(pos, size, "codec", f"unknown compression codec {b.codec}: consumers stop at it", **claimed)
    if delta < 0:
        return Entry(pos, size, "offset_delta", f"last offset delta {delta} is negative: consumers stop at it",
                     **claimed)
    if b.count < 0:
        return Entry(pos, size, "count", f"record count {b.count} is negative: consumers stop at it", **claimed)
    if deep or b.is_control:
        why = _records_problem(b)
        if why is not None:
            return Entry(pos, size, "control" if b.is_control else "records", why, **claimed)
    return Entry(pos, size, "ok", "", **claimed)


def _records_problem(b) -> str | None:
    """Why a consumer cannot read the records of the CRC-valid batch ``b`` (None: it can)."""
    try:
        n = 0
        first = None
        for r in b.records():
            if n == 0:
                first = r
            n += 1
        if n != b.count:
            return f"the batch declares {b.count} records but holds {n}: consumers stop at it"
        if b.is_control and first is not None:
            key = ctl.parse_control_key(first.key)
            if key.type in (ctl.ABORT, ctl.COMMIT):
                ctl.parse_end_txn_marker(first.value)
    except FormatError as e:
        return f"its records cannot be read ({e.reason}): consumers stop at it"
    return None


def first_epoch(buf) -> int:
    """The partition leader epoch of the first batch of a segment when it frames as a v2 batch with a valid
    CRC (the evidence a walk of the segment before takes for its last batch), else -1."""
    e = classify(buf, 0, len(buf), False) if len(buf) else None
    return e.epoch if e is not None and e.kind == "ok" and e.magic >= 2 else -1


#: kinds of a CRC-valid batch a consumer stops at (Kafka's recovery keeps it: it checks size and CRC only)
UNREADABLE = frozenset({"magic", "codec", "offset_delta", "count", "records", "control"})


def unreadable_batches(buf, end: int, base: int, release=None):
    """The CRC-valid batches of ``buf[:end]`` (the bytes a recovery keeps) that a consumer cannot read
    (``UNREADABLE``), as ``Entry``s, in order; the walk ends at the first entry without a valid CRC."""
    import functools

    from kafkalog_formats import codecs
    decompress = functools.partial(codecs.decompress, magic=2)
    pos, epoch = 0, -1
    while pos < end:
        if native.ext is not None:
            pos, _reason, _n, _records, _last, epoch, _tail = native.ext.salvage_walk(
                buf, pos, end, -(1 << 63), None, epoch, None, True, decompress, RUN_BYTES)
            if release is not None:
                release(pos)
            if pos >= end:
                return
        e = classify(buf, pos, end, True)
        if e is None or e.kind in ("crc", "framing"):
            return
        if e.kind in UNREADABLE:
            yield e
        elif e.magic >= 2 and e.epoch >= 0:
            epoch = e.epoch
        pos = e.end
