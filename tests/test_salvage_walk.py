"""The salvage walk of one segment (``engine/salvage.py``): what it keeps, repairs and drops after each kind
of damage, and a seeded fuzz with an oracle: every batch it keeps (repaired ones after their repair) is,
byte for byte, a batch that was written there, at the offsets it was written at; and every written batch
whose bytes survived with both neighbours is kept."""
from __future__ import annotations

import random
import struct

import pytest

from kafkalog_formats import codecs, native
from kafkalog_formats import control as ctl
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.engine.salvage import Damage, Keep, Repair, walk_segment

T0 = 1_700_000_000_000
HOLES: list = []          # the documented hole, when a fuzz case meets it (counted, see _stored_in_destroyed_record)


def _records(rng: random.Random, n: int, inner: bytes | None = None) -> list:
    specs = [RecordSpec(i, T0 + i, b"k%d" % rng.randrange(20), rng.randbytes(rng.randrange(0, 120)))
             for i in range(n)]
    if inner is not None:
        where = rng.choice(("value", "header", "middle"))
        last = specs[-1]
        specs[-1] = (last._replace(value=inner) if where == "value" else
                     last._replace(value=b"x" + inner + b"y") if where == "middle" else
                     last._replace(headers=((b"h", b"1"), (b"blob", inner))))
    return specs


def build_segment(rng: random.Random, batches: int, base: int = 0, embed: float = 0.2, gaps: bool = True):
    """A segment as a broker writes it: data batches of several codecs, idempotent and transactional ones
    with their markers, leader epochs that rise now and then, some records storing a whole batch, offset gaps
    as compaction leaves them (``gaps``). Returns
    (bytes, [written batch bytes])."""
    out, written = [], []
    offset, epoch = base, 5
    open_txn = False
    for _ in range(batches):
        if rng.random() < 0.05:
            epoch += rng.randrange(1, 3)
        if open_txn and rng.random() < 0.3:
            rec = RecordSpec(0, T0, ctl.build_control_key(rng.choice((ctl.ABORT, ctl.COMMIT))),
                             ctl.build_end_txn_marker(7))
            b = build_batch(offset, [rec], partition_leader_epoch=epoch, is_transactional=True, is_control=True,
                            producer_id=42, producer_epoch=1)
            open_txn = False
            n = 1
        else:
            n = rng.randrange(1, 6)
            inner = None
            if rng.random() < embed:
                inner = build_batch(rng.choice((offset, offset + 1, 0)), _records(rng, rng.randrange(1, 3)),
                                    partition_leader_epoch=epoch)
            txn = rng.random() < 0.3
            codec = 0 if inner is not None else rng.choice((0, 0, codecs.GZIP, codecs.LZ4))
            b = build_batch(offset, _records(rng, n, inner), codec=codec, partition_leader_epoch=epoch,
                            producer_id=42 if txn else rng.choice((-1, 7)),
                            producer_epoch=1 if txn else 0, base_sequence=offset if txn else -1,
                            is_transactional=txn)
            open_txn = open_txn or txn
        written.append(b)
        out.append(b)
        offset += n + (gaps and rng.random() < 0.1) * rng.randrange(1, 4)     # compaction gaps now and then
    return b"".join(out), written


def _kept(buf: bytes, layout) -> list[bytes]:
    """Every batch the layout keeps, as it will be written (repairs applied)."""
    out = []
    for p in layout.pieces:
        if isinstance(p, Keep):
            out += [bytes(buf[b.position:b.position + b.size]) for b in BatchReader(buf, p.start, p.end)]
        elif isinstance(p, Repair):
            data = bytearray(buf[p.start:p.end])
            p.patch(data)
            out.append(bytes(data))
    return out


def _positions(written: list[bytes]) -> list[int]:
    pos, at = [], 0
    for b in written:
        pos.append(at)
        at += len(b)
    return pos


@pytest.fixture(scope="module")
def segment():
    return build_segment(random.Random(11), 60, embed=0.0, gaps=False)


def test_a_clean_segment_is_one_piece_kept(segment):
    buf, written = segment
    layout = walk_segment(buf, 0, None, None)
    assert [type(p) for p in layout.pieces] == [Keep]
    assert _kept(buf, layout) == written


def _one_damage(buf, written, i, change):
    pos = _positions(written)
    data = bytearray(buf)
    change(data, pos[i])
    return bytes(data), walk_segment(bytes(data), 0, None, None)


@pytest.mark.parametrize("where,byte,mask", [("base offset, low bit", 7, 0x02), ("base offset, high bit", 1, 0x40),
                                             ("length, low bit", 11, 0x04), ("length, sign", 8, 0x80),
                                             ("leader epoch, high bit", 12, 0x01)])
def test_a_flipped_bit_outside_the_crc_is_repaired_from_the_evidence(segment, where, byte, mask):
    buf, written = segment
    data, layout = _one_damage(buf, written, 30, lambda d, p: d.__setitem__(p + byte, d[p + byte] ^ mask))
    assert not layout.damages, where
    (repair,) = layout.repairs
    assert _kept(data, layout) == written           # the original bytes, every one of them


@pytest.mark.parametrize("what", ["crc", "records", "magic 3", "zero page", "cut middle"])
def test_damage_loses_only_the_batches_it_touched(segment, what):
    buf, written = segment

    def change(d, p):
        if what == "crc":
            d[p + 18] ^= 0x10
        elif what == "records":
            d[p + 70] ^= 0x01
        elif what == "magic 3":
            d[p + 16] = 3
        elif what == "zero page":
            d[p + 30:p + 30 + 4096] = bytes(4096)
        else:
            del d[p + 30:p + 3000]
    data, layout = _one_damage(buf, written, 20, change)
    kept = _kept(data, layout)
    (damage,) = layout.damages
    lost = [b for b in written if b not in kept]
    assert lost[0] == written[20]
    assert all(damage.start <= data.find(b) < damage.end or data.find(b) < 0 for b in lost)
    assert damage.after == struct.unpack(">q", written[19][:8])[0] + struct.unpack(">i", written[19][23:27])[0]
    assert damage.before == struct.unpack(">q", kept[20][:8])[0]
    if what in ("crc", "records", "magic 3"):
        assert lost == [written[20]] and damage.found_by == "framing"


def test_nothing_after_the_damage_is_a_tail(segment):
    buf, written = segment
    for data, how in ((buf + bytes(4096), "none"), (buf[:len(buf) - 100] + bytes(100), "framing")):
        layout = walk_segment(data, 0, None, None)
        assert isinstance(layout.pieces[-1], Damage) and layout.pieces[-1].end == len(data)
        assert layout.pieces[-1].before is None and layout.pieces[-1].found_by == how


def test_offsets_must_fit_the_segment_and_its_neighbours(segment):
    buf, written = segment
    first_next = struct.unpack(">q", written[40][:8])[0]
    layout = walk_segment(buf, 0, None, first_next)        # a next segment starting inside this one
    assert len(_kept(buf, layout)) == 40
    layout = walk_segment(buf, 0, 10**6, None)             # everything below the previous segment's end
    assert _kept(buf, layout) == []


def _fuzz_damage(rng: random.Random, data: bytearray) -> str:
    kinds = []
    for _ in range(rng.randrange(1, 4)):
        kind = rng.choice(("flip", "flip", "flip-header", "zero", "random", "cut", "magic"))
        at = rng.randrange(len(data))
        if kind == "flip":
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "flip-header":               # a bit of a header field outside the CRC
            starts = [b.position for b in BatchReader(bytes(data))] or [0]
            p = rng.choice(starts) + rng.choice((0, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
            if p < len(data):
                data[p] ^= 1 << rng.randrange(8)
        elif kind == "magic":
            starts = [b.position for b in BatchReader(bytes(data))] or [0]
            p = rng.choice(starts) + 16
            if p < len(data):
                data[p] = rng.choice((0, 1, 3, 6, 0x42))
        elif kind == "zero":
            n = rng.choice((64, 512, 4096))
            data[at:at + n] = bytes(len(data[at:at + n]))
        elif kind == "random":
            n = rng.randrange(1, 300)
            data[at:at + n] = rng.randbytes(len(data[at:at + n]))
        else:
            del data[at:at + rng.randrange(1, 3000)]
        kinds.append(kind)
    return "+".join(kinds)


def _fields(b: bytes) -> tuple[int, int, int]:
    """(base offset, last offset, partition leader epoch) of a batch's header."""
    base, = struct.unpack(">q", b[:8])
    return base, base + struct.unpack(">i", b[23:27])[0], struct.unpack(">i", b[12:16])[0]


def _stored_in_destroyed_record(k: bytes, written: list[bytes], data: bytes) -> bool:
    """``k`` is a batch a producer stored at the very end of a record of a written batch, and the bytes of
    that batch before it (its header, its record's start) are no longer in front of it: the one shape no rule
    can tell from a written batch (resync's rule 5 and the walk's offset rules say what they see)."""
    at = data.find(k)
    for w in written:
        j = w.find(k)
        if j > 0 and j + len(k) == len(w) and at >= 0 and data[max(0, at - j):at] != w[:j]:
            return True
    return False


def check_kept(written: list[bytes], kept: list[bytes], dense: bool, data: bytes = b"") -> None:
    """The oracle. Every batch kept was written as a batch, in order: its bytes but the base offset and
    the leader epoch (outside the CRC) are a written batch's, never bytes stored inside a record. Those two
    fields are the written ones, except where damage left them consistent with every neighbour (no evidence
    can show it: a value moved inside a compaction gap or between two epochs, or into the offsets of damaged
    batches after it, or raised on the last batch of the log, which Kafka keeps too); with ``dense`` offsets
    (no gap) a batch kept with the batch written after it keeps its written base offset."""
    index, at = [], 0
    for k in kept:
        i = next((j for j in range(at, len(written)) if written[j] == k), None)     # markers repeat but their base
        if i is None:
            i = next((j for j in range(at, len(written)) if written[j][8:12] + written[j][16:] == k[8:12] + k[16:]),
                     None)
        if i is None and _stored_in_destroyed_record(k, written, data):
            HOLES.append(_fields(k))
            continue
        assert i is not None, f"kept batch at offset {_fields(k)[0]} was not written"
        index.append(i)
        at = i + 1
    kept = [k for k in kept if k in written or not _stored_in_destroyed_record(k, written, data)]
    for n, (k, i) in enumerate(zip(kept, index)):
        if k == written[i]:
            continue
        twin = [m for m in (n - 1, n + 1) if 0 <= m < len(kept) and kept[m][12:16] == k[12:16]
                and kept[m][12:16] != written[index[m]][12:16]]
        if k[12:16] != written[i][12:16] and twin:
            continue       # the same wrong epoch on consecutive batches reads as a leader's: nothing tells
        base, last, epoch = _fields(k)
        prev = _fields(kept[n - 1]) if n else None
        nxt = _fields(kept[n + 1]) if n + 1 < len(kept) else None
        assert prev is None or (base > prev[1] and (epoch >= prev[2] or prev[2] < 0)), n
        assert nxt is None or (last < nxt[0] and (epoch <= nxt[2] or nxt[2] < 0)), n
        if dense and n + 1 < len(kept) and index[n + 1] == i + 1:     # its written neighbour is the evidence
            assert base == _fields(written[i])[0], f"batch {i} kept at base {base}, written at {_fields(written[i])[0]}"


def _surviving(written: list[bytes], data: bytes) -> list[int]:
    """The written batches whose bytes survived whole with both neighbours (or the segment's ends)."""
    where = [data.find(b) for b in written]
    out = []
    for i, b in enumerate(written):
        before = i == 0 or where[i - 1] >= 0 and where[i - 1] + len(written[i - 1]) == where[i]
        after = (i + 1 == len(written) and where[i] + len(b) == len(data)
                 or i + 1 < len(written) and where[i + 1] == where[i] + len(b))
        if where[i] >= 0 and before and after:
            out.append(i)
    return out


def fuzz_case(seed: int, dense: bool) -> None:
    rng = random.Random(seed)
    buf, written = build_segment(rng, rng.randrange(10, 80), base=1000, embed=0.25, gaps=not dense)
    data = bytearray(buf)
    what = _fuzz_damage(rng, data)
    data = bytes(data)
    layout = walk_segment(data, 1000, 999, None)
    kept = _kept(data, layout)
    try:
        check_kept(written, kept, dense, data)
    except AssertionError as e:
        raise AssertionError(f"seed {seed} ({what}): {e}") from None
    for i in _surviving(written, data):
        assert written[i] in kept, f"seed {seed} ({what}): batch {i} survived but was not kept"


@pytest.mark.parametrize("seed", range(150))
def test_fuzz_salvage_never_keeps_a_batch_that_was_not_written_there(seed):
    """Seeded random damage (bit flips anywhere and in the header fields outside the CRC, zero pages, random
    bytes, a changed magic byte, cut middles, up to three at once) on segments where some records store
    whole batches; the oracle ``check_kept``, and the loss bound of ``_surviving``."""
    fuzz_case(seed, dense=seed % 2 == 0)


@pytest.mark.skipif(native.ext is None, reason="the C extension is not built")
@pytest.mark.parametrize("seed", range(60))
def test_the_compiled_runs_and_the_pure_walk_make_the_same_layout(seed, monkeypatch):
    """``_native.salvage_walk`` (runs of batches kept as they are) and ``_native.resync_find`` against the
    pure walk (``KAFKALOG_PURE_PYTHON``'s path): the same pieces, entries and reasons on damaged segments."""
    rng = random.Random(seed)
    buf, _written = build_segment(rng, rng.randrange(10, 80), base=1000, embed=0.25, gaps=seed % 2 == 1)
    data = bytearray(buf)
    _fuzz_damage(rng, data)
    data = bytes(data)
    compiled = walk_segment(data, 1000, 999, None)
    monkeypatch.setattr(native, "ext", None)
    assert walk_segment(data, 1000, 999, None) == compiled
