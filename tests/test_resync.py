"""The resynchronisation scan (``kafkalog_formats.resync``): the pure reference and its compiled twin
(``_native.resync_find``) give the same answer on the same bytes, and the scan never names a position where
no batch was written: not in random bytes, not in shifted or overwritten batches, not at a batch stored
inside another batch's record (the neighbour rule, rule 4 of the module docstring)."""
from __future__ import annotations

import random

import pytest

from kafkalog_formats import native, resync
from kafkalog_formats.record_batch import RecordSpec, build_batch

T0 = 1_700_000_000_000
native_only = pytest.mark.skipif(native.ext is None, reason="the C extension is not built")


def _batch(base: int, n: int, rng: random.Random, *, inner: bytes | None = None, where: str = "value",
           codec: int = 0) -> bytes:
    """A batch of ``n`` records; with ``inner``, the last record carries those bytes as its value (or as
    the value of its last header, ``where="header"``) or in the middle of its value (``"middle"``)."""
    specs = [RecordSpec(i, T0 + i, b"k%d" % i, rng.randbytes(rng.randrange(0, 80))) for i in range(n)]
    if inner is not None:
        last = specs[-1]
        if where == "value":
            specs[-1] = last._replace(value=inner)
        elif where == "middle":
            specs[-1] = last._replace(value=b"ab" + inner + b"cd")
        else:
            specs[-1] = last._replace(headers=((b"h", b"x"), (b"blob", inner)))
    return build_batch(base, specs, codec=codec, partition_leader_epoch=3)


def _segment(rng: random.Random, batches: int, embed: float = 0.0):
    """(bytes, [(position, size)] of the written batches, [(position, size, container position)] of the
    batches stored inside records)."""
    out, written, inner_at = bytearray(), [], []
    offset = 0
    for _ in range(batches):
        n = rng.randrange(1, 6)
        inner = None
        if rng.random() < embed:
            inner = _batch(rng.choice((offset, 0, offset + 1)), rng.randrange(1, 4), rng)
        b = _batch(offset, n, rng, inner=inner, where=rng.choice(("value", "header", "middle")))
        if inner is not None:
            k = b.find(inner)
            assert k > 0
            inner_at.append((len(out) + k, len(inner), len(out)))
        written.append((len(out), len(b)))
        out += b
        offset += n
    return bytes(out), written, inner_at


def _both(buf, start, end, budget=resync.DEFAULT_CRC_BUDGET):
    pure = resync.find(buf, start, end, end, budget)
    if native.ext is not None:
        assert tuple(native.ext.resync_find(buf, start, end, end, budget)) == tuple(pure), (start, end)
    return pure


def test_a_written_batch_after_garbage_is_found_and_garbage_alone_is_not():
    rng = random.Random(1)
    a, b = _batch(0, 3, rng), _batch(3, 2, rng)
    garbage = b"\x02" * 100 + rng.randbytes(500)
    buf = garbage + a + b
    assert _both(buf, 0, len(buf)).position == len(garbage)
    assert _both(buf, len(garbage) + 1, len(buf)).position == len(garbage) + len(a)   # b ends the region
    assert _both(garbage, 0, len(garbage)).position == resync.NOT_FOUND


def test_rule_4_a_batch_must_end_where_another_whole_batch_starts_or_the_region_ends():
    rng = random.Random(2)
    a, b = _batch(0, 3, rng), _batch(3, 2, rng)
    torn = bytearray(b)
    torn[len(torn) // 2] ^= 0x40                      # the next batch fails its CRC: a is not proven
    buf = b"\x00" * 64 + a + bytes(torn)
    assert _both(buf, 0, len(buf)).position == resync.NOT_FOUND
    buf = b"\x00" * 64 + a + b"\x00" * 70 + b        # a zero page after a: only b is proven
    assert _both(buf, 0, len(buf)).position == 64 + len(a) + 70


@pytest.mark.parametrize("where", ["value", "middle", "header"])
def test_a_batch_stored_inside_a_record_is_never_a_resynchronisation_point_when_the_batch_around_it_is_framed(where):
    """The uncompressed batch that stores a whole batch in a record is CRC-valid, and so is the stored batch.
    Scanning from inside the outer batch (its header destroyed), rule 4 refuses the stored one wherever a
    record's bytes follow it; stored as the very last bytes of the outer batch (the last header value) it
    ends where the next written batch starts: the one shape left to the offset rules."""
    rng = random.Random(3)
    inner = _batch(500, 2, rng)
    outer = _batch(10, 3, rng, inner=inner, where=where)
    nxt = _batch(13, 2, rng)
    buf = _batch(0, 10, rng) + outer + nxt
    start = buf.find(outer) + 1                      # the outer batch's header is damaged: scan from inside it
    found = _both(buf, start, len(buf)).position
    k = buf.find(inner)
    if where == "header":
        assert found == k and k + len(inner) == buf.find(nxt)
    else:
        assert found == buf.find(nxt)


def test_budget_is_spent_and_said():
    rng = random.Random(4)
    bs = [_batch(i * 5, 5, rng) for i in range(4)]
    buf = b"\x00\x02" * 10 + b"".join(bs)
    assert _both(buf, 1, len(buf), budget=10).position == resync.BUDGET_SPENT
    assert _both(buf, 1, len(buf)).position == 20


def _damaged(rng: random.Random, buf: bytes):
    """Overwrite or cut the bytes (zero pages, random bytes, bit flips, a cut middle): the new bytes, the
    damaged spans (in the new coordinates) and where each original position went (None: cut out)."""
    data = bytearray(buf)
    spans: list = []
    cuts: list = []                           # (at, n) in the order applied
    for _ in range(rng.randrange(1, 4)):
        kind = rng.choice(("zero", "random", "flip", "cut"))
        at = rng.randrange(len(data))
        n = rng.choice((1, 8, 61, 4096, rng.randrange(1, 20000)))
        if kind == "zero":
            data[at:at + n] = bytes(len(data[at:at + n]))
        elif kind == "random":
            data[at:at + n] = rng.randbytes(len(data[at:at + n]))
        elif kind == "flip":
            data[at] ^= 1 << rng.randrange(8)
            n = 1
        else:
            del data[at:at + n]
            spans = [(a if a < at else max(at, a - n), b if b < at else max(at, b - n)) for a, b in spans]
            spans.append((at, at))
            cuts.append((at, n))
            continue
        spans.append((at, at + n))

    def moved(pos: int):
        for at, n in cuts:
            if pos >= at + n:
                pos -= n
            elif pos >= at:
                return None
        return pos
    return bytes(data), spans, moved


def _intact(buf: bytes, data: bytes, p: int, s: int, moved, spans) -> int | None:
    """Where the written batch ``buf[p:p+s]`` now is, whole; None otherwise. Its base offset and partition
    leader epoch (bytes 0-7 and 12-15, outside the CRC) may be damaged: it is still the batch written there."""
    q, r = moved(p), moved(p + s - 1)
    if q is None or r is None or r != q + s - 1 or data[q + 8:q + 12] != buf[p + 8:p + 12] \
            or data[q + 16:q + s] != buf[p + 16:p + s]:
        return None
    return q


@pytest.mark.parametrize("seed", range(40))
def test_fuzz_every_point_found_is_a_written_batch_and_both_paths_agree(seed):
    """Random segments (some records storing whole batches), random damage; the scan run from every damaged
    position and from random ones: each point found is the start of a whole written batch, or a stored batch
    in the one shape rule 4 cannot refuse (it ends exactly where its container ends); pure and C agree."""
    rng = random.Random(seed)
    buf, written, inner = _segment(rng, rng.randrange(5, 60), embed=0.3)
    data, spans, moved = _damaged(rng, buf)
    starts = {q for q in (_intact(buf, data, p, s, moved, spans) for p, s in written) if q is not None}
    sizes = dict(written)
    tails = {q for q in (_intact(buf, data, p, s, moved, spans) for p, s, c in inner if p + s == c + sizes[c])
             if q is not None}
    probes = {a for a, _b in spans} | {rng.randrange(len(data)) for _ in range(30)} | {0}
    for start in sorted(probes):
        found = _both(data, start, len(data)).position
        if found >= 0:
            assert found in starts or found in tails, (seed, start, found)


@native_only
def test_the_compiled_scan_of_a_large_random_region_finds_what_the_pure_one_finds():
    """8 MiB of random bytes (about 32,000 positions with byte 16 at 2) before two batches: both paths, and
    the windowed ``scan`` (pages released between windows), find the first batch."""
    rng = random.Random(7)
    garbage = rng.randbytes(8 << 20)
    tail = _batch(0, 3, rng) + _batch(3, 3, rng)
    buf = garbage + tail
    assert native.ext.resync_find(buf, 0, len(buf), len(buf), resync.DEFAULT_CRC_BUDGET)[0] == len(garbage)
    assert resync.find(buf, 0, len(buf), len(buf), resync.DEFAULT_CRC_BUDGET).position == len(garbage)
    assert resync.scan(buf, 0, len(buf)).position == len(garbage)
