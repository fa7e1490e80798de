"""Inputs shared by the native parity, fuzz and AddressSanitizer tests: every committed fixture and real
corpus segment, batches of every codec and magic built with the project's writers, and hypothesis
strategies for generated (and damaged) batches."""
from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from kafkalog_formats import codecs
from kafkalog_formats.legacy import build_message, build_wrapper
from kafkalog_formats.record_batch import RecordSpec, build_batch

from conftest import CORPUS, FIXTURES

INT_MAX = 2**31 - 1
DECOMPRESS = codecs.V2Decompressor(64 * 1024 * 1024)     # done in C by the compiled path where it can


def segment_files() -> list[Path]:
    """Every .log and KRaft .checkpoint under fixtures/ and the real corpus."""
    files = sorted(FIXTURES.rglob("*.log")) + sorted(FIXTURES.rglob("*.checkpoint"))
    if CORPUS.is_dir():
        files += sorted(CORPUS.rglob("*.log")) + sorted(p for p in CORPUS.rglob("*.checkpoint")
                                                        if p.name[0].isdigit())
    return [f for f in files if f.is_file()]


def _specs(n: int, ts: int = 1_700_000_000_000) -> list[RecordSpec]:
    return [RecordSpec(i, ts + i * 7, None if i % 5 == 4 else f"k{i}".encode(),
                       None if i % 7 == 6 else bytes(range(i % 40)) * 3,
                       ((b"h", b"v"), (b"\xff\xfe", None)) if i % 3 == 0 else ()) for i in range(n)]


def every_codec_and_magic() -> bytes:
    """A segment with v2 batches of every codec (CreateTime, LogAppendTime, transactional, a delete horizon,
    a control batch) and legacy v0/v1 messages and wrappers of every legacy codec."""
    from kafkalog_formats import control as ctl
    out = []
    offset = 0
    for codec in (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        for extra in ({}, {"log_append_time": True, "max_timestamp": 1_800_000_000_000},
                      {"is_transactional": True, "producer_id": 7, "producer_epoch": 1, "base_sequence": INT_MAX - 3},
                      {"delete_horizon_ms": 1_900_000_000_000}):
            out.append(build_batch(offset, _specs(9), codec=codec, partition_leader_epoch=3, **extra))
            offset += 9
    out.append(build_batch(offset, [RecordSpec(0, 1_700_000_000_000, ctl.build_control_key(ctl.COMMIT),
                                               ctl.build_end_txn_marker(5))],
                           is_control=True, is_transactional=True, producer_id=7, producer_epoch=1))
    offset += 1
    for magic in (0, 1):
        out.append(build_message(offset, b"k", b"v", magic=magic, timestamp=1_700_000_000_000 if magic else -1))
        offset += 1
        for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4):
            msgs = [(offset + i, b"k%d" % i, b"v" * i, 1_700_000_000_000 + i) for i in range(4)]
            out.append(build_wrapper(msgs, codec, magic=magic))
            offset += 4
    out.append(build_batch(offset, _specs(3)))        # v2 again after legacy entries
    return b"".join(out)


# --- hypothesis ---------------------------------------------------------------------------------------

_bytes = st.one_of(st.none(), st.binary(max_size=40),
                   st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
                                    b"caf\xc3\xa9", b"\x00\x1f\x7f\"\\/", "🙂\u2028".encode()]))
_header_key = st.one_of(st.binary(max_size=12), st.sampled_from([b"\xff", b"a,b", b"\xc0\x80", b"\n"]))
_ts = st.one_of(st.integers(-1, 2**41), st.sampled_from([-(2**63), 2**63 - 1, 0]))


@st.composite
def batches(draw, codecs_allowed=(0, 1, 2, 3, 4)) -> bytes:
    """One v2 batch with hypothesis-chosen fields and records (built by the project's writer)."""
    n = draw(st.integers(0, 6))
    base_ts = draw(st.integers(0, 2**41))
    deltas = sorted(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n, unique=True)))
    specs = [RecordSpec(d, base_ts + draw(st.integers(-1000, 10**6)), draw(_bytes), draw(_bytes),
                        tuple(draw(st.lists(st.tuples(_header_key, _bytes), max_size=3))))
             for d in deltas]
    codec = draw(st.sampled_from(codecs_allowed))
    kw = {}
    if draw(st.booleans()):
        kw["producer_id"] = draw(st.integers(0, 2**62))
        kw["producer_epoch"] = draw(st.integers(0, 2**15 - 1))
        kw["base_sequence"] = draw(st.integers(0, INT_MAX))
        kw["is_transactional"] = draw(st.booleans())
    if draw(st.booleans()):
        kw["log_append_time"] = True
        kw["max_timestamp"] = draw(_ts)
    if draw(st.booleans()):
        kw["delete_horizon_ms"] = draw(st.integers(0, 2**42))
    base = draw(st.one_of(st.integers(0, 2**40), st.sampled_from([2**63 - 60, 2**63 - 10])))  # -10: offsets overflow
    return build_batch(base, specs, codec=codec, partition_leader_epoch=draw(st.integers(-1, 100)), **kw)


@st.composite
def segments(draw, damaged: bool = True) -> bytes:
    """A few generated batches, maybe with bytes overwritten and the end cut off."""
    data = bytearray(b"".join(draw(st.lists(batches(), min_size=1, max_size=4))))
    if damaged and draw(st.booleans()):
        for _ in range(draw(st.integers(1, 4))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        if draw(st.booleans()):
            data = data[:draw(st.integers(0, len(data)))]
    return bytes(data)
