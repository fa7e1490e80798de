"""What a damaged segment still holds: every batch that proves it was written there, the damage between
them, and the batches whose base offset can be repaired from their neighbours (the read half of
``recover --salvage``, of verify's count of the records a broker's recovery would delete, and of the
readers' ``--salvage``). Kafka has no such walk: ``LogSegment.recover`` truncates at the first invalid
batch and ``LogLoader.recoverLog`` deletes every later segment (docs/kafka-rules.md, "Salvage").

A segment is walked batch by batch as ``FileLogInputStream`` frames it. Each entry is

* **kept** when it is a whole v2 batch a consumer reads: CRC-32C good, magic 2, codec 0-4, last offset
  delta >= 0, its records decode (deep walks; a control batch's key and marker too), and its offsets fit
  between its neighbours: above the last kept offset, below the base offset of the next CRC-valid batch, at
  or above the segment's base, within base + 2^31-1 and below the next segment's base;
* **repaired** when it is such a batch but its base offset (bytes 0-7, outside the CRC) does not fit, and
  the evidence fixes it: the last kept offset + 1 is the only base at which its last offset delta ends
  exactly before the next kept batch (a dense run of offsets) — or, at a framing or CRC stop, when the
  bytes up to the next resynchronisation point pass the stored CRC: its length field (outside the CRC too)
  was damaged;
* **dropped** otherwise (the bytes go to the backup; the offsets between the neighbours are lost).

Where a neighbour conflict leaves two readings (is this batch's base too high, or the next one's too low?)
the one in which the odd batch can be repaired wins; when both or neither can be, both are dropped: a batch
is never kept at offsets it was not written at.

After bytes that do not frame a batch, or a batch whose CRC fails, the walk resynchronises: first along the
damaged entries' own length fields (up to ``HOPS`` of them: the next batch as Kafka's framing would find it,
never looking inside a damaged batch), then by ``resync.scan`` (byte by byte, in C). A point found by the
scan is taken only when its batch fits its neighbours' offsets as it is (never repaired: the scan might have
found a batch stored inside a record, ``resync``'s docstring). Nothing found: the rest of the segment is
damage (at the end of the log, a torn write, which Kafka cuts too).

Runs of batches that are kept as they are go through ``_native.salvage_walk``; every other entry is
classified here (``classify``), so reasons and offsets are this module's.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkalog_formats import native, resync
from kafkalog_formats.message_set import BatchV2View

from .salvage_pieces import (RUN_BYTES, UNREADABLE, Damage, Entry, Keep, Layout, Repair, classify,  # noqa: F401
                             first_epoch, unreadable_batches)

INT32_MAX = 0x7FFFFFFF
#: damaged entries whose length fields the resynchronisation follows before it scans
HOPS = 8
#: the largest batch whose length field a repair rewrites (it is copied once to be checked)
MAX_LENGTH_REPAIR = 64 * 1024 * 1024


@dataclass
class _Tail:
    """The last batch kept, the last offset and epoch kept before it, and whether a batch after it confirmed
    its offsets."""
    entry: Entry
    before: int | None
    before_epoch: int
    confirmed: bool

    @property
    def position(self) -> int:
        return self.entry.position

    @property
    def end(self) -> int:
        return self.entry.end


# --- the walk --------------------------------------------------------------------------------------------

class SegmentWalk:
    """One segment's walk (see the module docstring). ``previous``: the last kept offset before the segment
    (None: none), ``previous_epoch`` its batch's partition leader epoch; ``next_base``: the next segment's
    base offset (None: the last segment)."""

    def __init__(self, buf, base: int, previous: int | None, next_base: int | None, *, deep: bool = True,
                 release=None, previous_epoch: int = -1, next_epoch: int = -1) -> None:
        self.buf, self.base, self.next_base, self.deep = buf, base, next_base, deep
        self.end = len(buf)
        self.prev = previous
        self.prev_epoch = previous_epoch      # the last kept batch's partition leader epoch (-1: none)
        self.next_epoch = next_epoch          # the next segment's first batch's (-1: unknown)
        self.release = release
        self.layout = Layout(base, self.end)
        self.damage: Damage | None = None
        self.drop_at: int | None = None       # a batch already judged odd (two readings, neither repairable)
        self.tail: _Tail | None = None        # the last batch kept, while no batch after it confirmed its offsets
        self.stop = self.end

    # -- offsets -------------------------------------------------------------------------------------------

    def fits(self, e: Entry, lo: int | None, hi: int | None) -> bool:
        """``e``'s offsets fit after ``lo`` and before ``hi`` (exclusive; None: unbounded) and in the segment."""
        if e.base is None or e.last is None or e.base > e.last or e.base < self.base:
            return False
        if e.last - self.base > INT32_MAX or (self.next_base is not None and e.last >= self.next_base):
            return False
        return (lo is None or e.base > lo) and (hi is None or e.last < hi)

    def repaired_base(self, e: Entry, lo: int | None, hi: int | None) -> int | None:
        """The only base offset at which ``e`` fills the offsets between ``lo`` and ``hi`` exactly (None: no
        such evidence). Without a batch before, the segment's base is the evidence for the first one."""
        if hi is None or e.last is None or e.base is None:
            return None
        lo = self.base - 1 if lo is None else lo
        delta = e.last - e.base
        new = lo + 1
        if new + delta != hi - 1 or new == e.base:
            return None
        probe = Entry(e.position, e.size, "ok", "", new, new + delta)
        return new if self.fits(probe, lo, hi) else None

    def _next_ok(self, e: Entry) -> Entry | None:
        """The entry framed right after ``e`` when its CRC holds (its offsets are evidence even when a
        consumer could not read its records: it is dropped on its own turn)."""
        if e.end is None or e.end >= self.end:
            return None
        n = classify(self.buf, e.end, self.end, self.deep)
        return n if n is not None and n.kind not in ("crc", "framing") and n.base is not None else None

    def _limit_after(self, e: Entry) -> int | None:
        """The offset before which ``e`` must end: the next batch's base, or the next segment's at the end."""
        n = self._next_ok(e)
        if n is not None:
            return n.base
        return self.next_base if e.end == self.end else None

    def judge(self, x: Entry) -> tuple[str, dict]:
        """("keep" | "repair" | "drop", the header fields to rewrite) for the readable batch ``x`` at a
        boundary."""
        if self.drop_at != x.position and self._odd_tail(x, self._next_ok(x)):
            self._unkeep_tail(x)
        verdict, base = self._judge_offsets(x)
        if verdict == "drop":
            return verdict, {}
        fields = {} if base is None else {"base_offset": base}
        n = self._next_ok(x)
        epoch = self._judge_epoch(x, n)
        if epoch is False:
            return "drop", {}
        if epoch is not None:
            fields["partition_leader_epoch"] = epoch
        return ("repair" if fields else "keep"), fields

    def _judge_epoch(self, x: Entry, n: Entry | None):
        """None: ``x``'s partition leader epoch fits (not below the last kept one, not above the next one that
        fits: epochs never go down along a log); an int: the epoch it must have had; False: it does not fit
        and the evidence does not say which it was. The evidence: both neighbours agree, or exactly one of
        them differs from the stored value by a single bit (a flipped bit)."""
        lo = self.prev_epoch
        hi = self._epoch_ahead(n, lo)
        if x.magic < 2 or (x.epoch < 0 and lo < 0 and hi < 0):
            return None                        # no epochs here (legacy entries, or a log written without them)
        if x.epoch >= 0 and (lo < 0 or x.epoch >= lo) and (hi < 0 or x.epoch <= hi):
            return None
        if 0 <= x.epoch < lo and hi < 0 and n is not None:
            return None                        # the batches after it go on at its epoch: the one before is odd
        if lo >= 0 and lo == hi:
            return lo
        single = [v for v in {lo, hi} if v >= 0 and bin(v ^ x.epoch).count("1") == 1]
        return single[0] if len(single) == 1 else False

    def _below_ahead(self, x: Entry, n: Entry | None) -> bool:
        """``x`` ends below the offsets the log goes on at: the median base of the next three CRC-valid batches
        above the last kept offset (two of them when there are only two). One odd batch after ``x`` cannot
        vouch for it: two batches damaged the same way in a row would."""
        bases = []
        while n is not None and len(bases) < 3:
            if self.prev is None or n.base > self.prev:
                bases.append(n.base)
            n = self._next_ok(n)
        if len(bases) < 2:
            return True
        bases.sort()
        return x.last < bases[len(bases) // 2] if len(bases) == 3 else x.last < bases[1]

    def _epoch_ahead(self, n: Entry | None, lo: int) -> int:
        """The epoch the batches after a batch go on at: the median of the next three CRC-valid batches' epochs
        that are in order (not below ``lo``), else the highest of those there are; -1 when none says."""
        seen = []
        for _ in range(3):
            if n is None:
                break
            if n.magic >= 2 and n.epoch >= max(lo, 0):
                seen.append(n.epoch)
            last, n = n, self._next_ok(n)
            if n is None and last.end == self.end and self.next_epoch >= max(lo, 0):
                seen.append(self.next_epoch)          # the next segment goes on from here
        if n is None and not seen and self.next_epoch >= max(lo, 0):
            seen.append(self.next_epoch)
        seen.sort()
        if len(seen) == 3:
            return seen[1]
        return seen[-1] if seen else -1          # two: a batch above both of them is out of order

    def _judge_offsets(self, x: Entry) -> tuple[str, int | None]:
        """("keep" | "repair" | "drop", the repaired base offset) for ``x``'s offsets."""
        if self.drop_at == x.position:
            self.drop_at = None
            return "drop", None
        n = self._next_ok(x)
        hi = n.base if n is not None else (self.next_base if x.end == self.end else None)
        if self.fits(x, self.prev, hi if n is not None else None):
            if self._below_ahead(x, n):
                return "keep", None
            return "drop", None                # the batch after it agrees with it, the ones after that do not
        if n is None or not self.fits(x, self.prev, None):
            fixed = self.repaired_base(x, self.prev, hi if n is None or self.fits(n, self.prev, None) else None)
            return ("repair", fixed) if fixed is not None else ("drop", None)
        # x fits after the previous batch but not before the next one: which of the two is odd?
        nn = self._next_ok(n)
        if not self.fits(n, self.prev, nn.base if nn is not None else None):
            return "keep", None                # the next one is odd (judged on its turn)
        fixed_x = self.repaired_base(x, self.prev, n.base)
        fixed_n = self.repaired_base(n, x.last, self._limit_after(n))
        if fixed_n is not None and fixed_x is None:
            return "keep", None
        if fixed_x is not None and fixed_n is None:
            return "repair", fixed_x
        self.drop_at = n.position              # two readings: neither is kept at offsets it may not have
        return "drop", None

    # -- the last batch kept, until a later one confirms it ---------------------------------------------------

    def _odd_tail(self, x: Entry, n: Entry | None) -> bool:
        """The last batch kept had nothing after it to check it against (damage followed it) and it is the
        odd one: ``x`` conflicts with it (offsets not above it, or an epoch below it) but, without it, fits
        the batch before it."""
        t = self.tail
        if t is None or t.confirmed or x.position < t.end or x.base is None:
            return False
        conflict = (self.prev is not None and x.base <= self.prev) or 0 <= x.epoch < self.prev_epoch
        if not conflict or not self.fits(x, t.before, n.base if n is not None else None):
            return False
        return x.epoch < 0 or t.before_epoch < 0 or x.epoch >= t.before_epoch

    def _unkeep_tail(self, x: Entry) -> None:
        """Take the unconfirmed last batch back out of the layout: repaired when the batch before it and
        ``x`` after it fix its fields (``judge``'s evidence), else dropped (merged with the damage after it)."""
        t, pieces = self.tail, self.layout.pieces
        self.tail = None
        i = max(k for k, p in enumerate(pieces) if not isinstance(p, Damage))
        piece = pieces[i]
        after = pieces[i + 1:]
        del pieces[i:]
        if isinstance(piece, Keep) and piece.start < t.position:
            pieces.append(Keep(piece.start, t.position, piece.batches - 1, piece.records - t.entry.count,
                               piece.first, t.before, t.before_epoch))
        self.prev, self.prev_epoch, self.damage = t.before, t.before_epoch, None
        e = t.entry
        fields = {}
        if not self.fits(e, t.before, x.base):
            fixed = self.repaired_base(e, t.before, x.base)
            fields = {} if fixed is None else {"base_offset": fixed}
            ok = fixed is not None
        else:
            ok = True
        epoch = self._judge_epoch(e, x) if ok else False
        if epoch is False:
            ok = False
        elif epoch is not None:
            fields["partition_leader_epoch"] = epoch
        if ok and fields:
            self._repair(e, fields)
        elif ok:
            self._keep(e.position, e.end, 1, e.count, e.base, e.last, e.epoch)
        else:
            e.kind, e.reason = "offsets", (f"its header (offsets {e.base}..{e.last}, leader epoch {e.epoch}; outside "
                                           "the CRC) does not fit the batches after the damage that follows it, and "
                                           "its neighbours cannot repair it")
            self._drop(e, e.end)
        for d in after:                        # the damage that followed it
            if self.damage is not None and self.damage.end == d.start:
                self.damage.end = d.end
                self.damage.entries += d.entries
                self.damage.found_by, self.damage.note = d.found_by, d.note
            else:
                d.after = self.prev
                pieces.append(d)
                self.damage = d
        self.tail = None

    def _set_tail(self, position: int, before: int | None, before_epoch: int, confirmed: bool | None) -> None:
        """The batch just kept at ``position``; ``confirmed`` None: whether a CRC-valid batch follows it."""
        e = classify(self.buf, position, self.end, False)
        if e is None or e.size is None:
            self.tail = None
            return
        if confirmed is None:
            confirmed = self._next_ok(e) is not None
        self.tail = _Tail(e, before, before_epoch, confirmed)

    # -- pieces --------------------------------------------------------------------------------------------

    def _keep(self, start: int, end: int, batches: int, records: int, first: int, last: int, epoch: int) -> None:
        self._close_damage(first)
        pieces = self.layout.pieces
        if pieces and isinstance(pieces[-1], Keep) and pieces[-1].end == start:
            k = pieces[-1]
            k.end, k.batches, k.records, k.last = end, k.batches + batches, k.records + records, last
            k.epoch = epoch if epoch >= 0 else k.epoch
        else:
            pieces.append(Keep(start, end, batches, records, first, last, epoch))
        self.prev = last
        if epoch >= 0:
            self.prev_epoch = epoch

    def _close_damage(self, first: int | None) -> None:
        if self.damage is not None:
            self.damage.before = first
            self.damage = None

    def _drop(self, e: Entry, end: int, found_by: str = "framing") -> None:
        if self.damage is None or self.damage.end != e.position:
            self.damage = Damage(e.position, end, after=self.prev)
            self.layout.pieces.append(self.damage)
        self.damage.end = end
        self.damage.entries.append(e)
        self.damage.found_by = found_by

    # -- the walk ------------------------------------------------------------------------------------------

    def run(self, start: int = 0, stop: int | None = None) -> Layout:
        """Walk from byte ``start`` (a batch boundary; ``previous`` the last offset before it) until a batch
        starts at or after ``stop`` (None: the end)."""
        buf, end = self.buf, self.end
        self.stop = end if stop is None else stop
        pos = start
        while pos < min(end, self.stop):
            if native.ext is not None and self.drop_at is None and -(1 << 63) <= self.base <= (1 << 63) - 1:
                pos = self._native_run(pos)
                if pos >= min(end, self.stop):
                    break
            e = classify(buf, pos, end, self.deep)
            if e is None:
                break
            if e.kind == "ok":
                verdict, fields = self.judge(e)
                before, before_epoch = self.prev, self.prev_epoch
                if verdict == "keep":
                    self._keep(e.position, e.end, 1, e.count, e.base, e.last, e.epoch)
                elif verdict == "repair":
                    self._repair(e, fields)
                if verdict != "drop":
                    self._set_tail(e.position, before, before_epoch, self._next_ok(e) is not None)
                else:
                    e.kind, e.reason = "offsets", self._offsets_reason(e)
                    self._drop(e, e.end)
                pos = e.end
            elif e.kind != "crc" and e.kind != "framing":
                self._drop(e, e.end)            # CRC-valid: its length is right, the next entry starts at its end
                pos = e.end
            else:
                pos = self._resync(e)
            if self.release is not None:
                self.release(pos)
        self.layout.last_epoch = self.prev_epoch
        return self.layout

    def _native_run(self, pos: int) -> int:
        import functools

        from kafkalog_formats import codecs
        decompress = functools.partial(codecs.decompress, magic=2)
        while True:
            new, reason, n, records, last, epoch, tail = native.ext.salvage_walk(
                self.buf, pos, self.end, self.base, self.prev, self.prev_epoch, self.next_base, self.deep,
                decompress, RUN_BYTES)
            if n:
                first = BatchV2View(self.buf, pos).base_offset
                self._keep(pos, new, n, records, first, last, epoch)
                self._set_tail(tail[0], tail[1], tail[2], None)
            pos = new
            if self.release is not None:
                self.release(pos)
            if reason != "limit" or pos >= self.stop:
                return pos

    def _offsets_reason(self, e: Entry) -> str:
        lo = "the start" if self.prev is None else f"offset {self.prev}"
        return (f"its offsets {e.base}..{e.last} (base offset outside the CRC) do not fit between its neighbours "
                f"(after {lo}) and cannot be repaired from them")

    def _repair(self, e: Entry, fields: dict) -> None:
        base = fields.get("base_offset", e.base)
        last = base + (e.last - e.base)
        epoch = fields.get("partition_leader_epoch", e.epoch)
        why = []
        if "base_offset" in fields:
            why.append(f"its base offset {e.base} (outside the CRC) does not fit between its neighbours; {base} is "
                       f"the only base at which its {e.last - e.base + 1} offsets fill the gap between them exactly")
        if "partition_leader_epoch" in fields:
            why.append(f"its partition leader epoch {e.epoch} (outside the CRC) breaks the order of its neighbours' "
                       f"epochs; {epoch} is the neighbours' epoch it differs from by what one flipped bit makes")
        old = {"base_offset": e.base, "partition_leader_epoch": e.epoch}
        self._close_damage(base)
        self.layout.pieces.append(Repair(e.position, e.end, tuple((k, old[k], v) for k, v in fields.items()),
                                         "; ".join(why), base, last, e.count, epoch))
        self.prev = last
        if epoch >= 0:
            self.prev_epoch = epoch

    def _resync(self, e: Entry) -> int:
        """The next batch after the damaged entry ``e`` (see the module docstring); returns where the walk
        goes on (the end of the segment when nothing follows). The damaged entries' own length fields give a
        landing (a proven batch, or the end of the segment); the scan looks before it first, from the byte
        after ``e`` (a cut inside the damaged batches leaves whole batches inside their claimed extent, and a
        damaged length may send the hops past intact batches)."""
        buf, end = self.buf, self.end
        q = e.position
        hops = []
        landing = None
        for _ in range(HOPS):
            r = resync.plausible(buf, q, end)
            if r < 0:
                break
            hops.append((q, r))
            if r == end:                       # the damaged batches' own lengths reach the end
                landing = end
                break
            q = r
            if resync.find(buf, q, q + 1, end, resync.DEFAULT_CRC_BUDGET).position == q:
                landing = q                    # a boundary: judged (maybe repaired) next
                break
        claimed = None
        for h in [e.position] + [r for _q, r in hops]:
            c = self._claimed_last(h, claimed)
            if c is None:
                break
            claimed = c
        start = e.position + 1
        while True:
            found = resync.scan(buf, start, end, release=self.release, limit=landing)
            if found.position < 0:
                break
            fit = self._fits_here(e.position, found.position, claimed)
            if fit:
                if fit == "without the last batch kept":
                    self._unkeep_tail(classify(buf, found.position, end, False))
                return self._damaged_up_to(e, found.position, "scan", hops)
            start = found.position + 1
        if landing is not None and landing < end:
            return self._damaged_up_to(e, landing, "framing", hops)
        if landing == end:
            self._damaged_up_to(e, end, "framing", hops)
            self.damage.note = "the damaged batches' own length fields reach the end of the segment"
            return end
        self._drop(e, end, "none")
        self.damage.note = ("no batch after it in the segment proves itself"
                            + (" (the resynchronisation scan spent its CRC budget)" if found.position ==
                               resync.BUDGET_SPENT else ""))
        return end

    def _claimed_last(self, pos: int, before: int | None) -> int | None:
        """The last offset the damaged header at ``pos`` claims, when it reads as a batch's own header: magic
        2, one offset per record (last offset delta + 1 = record count, as every batch not yet compacted has
        it) and a base offset that continues the offsets exactly (the last kept offset, or ``before``, the
        previous damaged header's claim, + 1); None otherwise."""
        if pos < 0 or pos + resync.HEADER > self.end or self.buf[pos + 16] != 2:
            return None
        base, = struct.unpack_from(">q", self.buf, pos)
        delta, = struct.unpack_from(">i", self.buf, pos + 23)
        count, = struct.unpack_from(">i", self.buf, pos + 57)
        lo = before if before is not None else (self.base - 1 if self.prev is None else self.prev)
        if count < 1 or delta + 1 != count or base != lo + 1:
            return None
        return base + delta

    def _fits_here(self, d0: int, p: int, claimed: int | None = None) -> bool:
        """A point the scan found after the damage starting at ``d0`` is taken only when its batch fits its
        neighbours as it is, with at least one offset lost before it (the damaged bytes held a batch, and
        every batch holds an offset) and above the offsets the damaged batches' own headers claim
        (``claimed``: a batch stored in a record of a damaged batch claims that batch's offsets), and when
        it is not the end of a record framed in the damaged bytes (``resync.inside_record``)."""
        x = classify(self.buf, p, self.end, False)
        if x is None or x.base is None or x.size is None:
            return False
        n = classify(self.buf, x.end, self.end, False) if x.end < self.end else None
        hi = n.base if n is not None and n.kind == "ok" else None
        if claimed is not None and x.base <= claimed or resync.inside_record(self.buf, d0, p, x.end):
            return False
        lo = self.base - 1 if self.prev is None else self.prev
        epoch_fits = x.epoch < 0 or ((self.prev_epoch < 0 or x.epoch >= self.prev_epoch) and (
            n is None or n.kind != "ok" or n.epoch < 0 or x.epoch <= n.epoch))
        if x.base >= lo + 2 and epoch_fits and self.fits(x, self.prev, hi):
            return True
        if self._odd_tail(x, n if hi is not None else None):
            return "without the last batch kept"
        return False

    def _damaged_up_to(self, e: Entry, p: int, how: str, hops: list) -> int:
        """The damaged bytes ``[e.position, p)``: the entry's length repaired when the stored CRC proves the
        batch ends at ``p``, else dropped (with the entries its framing showed)."""
        fixed = self._length_repair(e, p)
        if fixed is not None:
            self._close_damage(fixed.first)
            before, before_epoch = self.prev, self.prev_epoch
            self.layout.pieces.append(fixed)
            self.prev = fixed.last
            if fixed.epoch >= 0:
                self.prev_epoch = fixed.epoch
            self._set_tail(fixed.start, before, before_epoch, True)
            return p
        self._drop(e, p, how)
        for q, r in hops[1:]:
            x = classify(self.buf, q, r, self.deep)
            if x is not None:
                self.damage.entries.append(x)
        return p

    def _length_repair(self, e: Entry, p: int) -> Repair | None:
        buf, s = self.buf, e.position
        if p - s < resync.HEADER or p - s > MAX_LENGTH_REPAIR or buf[s + 16] != 2:
            return None
        if not resync.crc_ok(buf, s, p):
            return None
        old = struct.unpack_from(">i", buf, s + 8)[0]
        new = p - s - 12
        if old == new:
            return None
        patched = bytearray(buf[s:p])
        struct.pack_into(">i", patched, 8, new)
        x = classify(bytes(patched), 0, len(patched), self.deep)
        if x is None or x.kind != "ok":
            return None
        x.position = s
        nxt = classify(buf, p, self.end, False) if p < self.end else None
        nxt = nxt if nxt is not None and nxt.kind == "ok" else None
        if not self.fits(x, self.prev, nxt.base if nxt is not None else None):
            return None
        epoch = self._judge_epoch(x, nxt)
        if epoch is False:
            return None
        fields = (("length", old, new),) + ((("partition_leader_epoch", x.epoch, epoch),) if epoch is not None else ())
        why = f"its length field {old} (outside the CRC) does not frame it; the stored CRC proves the batch ends at byte {p}"
        if epoch is not None:
            why += f"; its partition leader epoch {x.epoch} (outside the CRC) breaks its neighbours' order: {epoch}"
        return Repair(s, p, fields, why, x.base, x.last, x.count, x.epoch if epoch is None else epoch)


def walk_segment(buf, base: int, previous: int | None, next_base: int | None, *, deep: bool = True,
                 release=None, previous_epoch: int = -1, start: int = 0, stop: int | None = None,
                 next_epoch: int = -1) -> Layout:
    """The ``Layout`` of one segment (see ``SegmentWalk``), from byte ``start`` to the first batch starting at
    or after ``stop``."""
    return SegmentWalk(buf, base, previous, next_base, deep=deep, release=release, previous_epoch=previous_epoch,
                       next_epoch=next_epoch).run(start, stop)
