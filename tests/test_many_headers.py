"""A record of millions of headers (issue 24, the exception the README named): ten million two-byte headers
fit a 2 KB zstd batch, 20 MB decompressed, inside the decompression bound. Held as a tuple of pairs they took
some 70 bytes each, as rows of the columns scan 32: dump-log --deep-iteration 707 MiB at 20 M headers,
1,156 MiB with --format json, export's reader 1,074 MiB.

Now a record of more than ``HEADERS_INLINE`` headers carries them as their bytes (``RecordHeaders``), on the
pure and the compiled decoder alike; the columns scan leaves a batch of more than ``MAX_HEADERS`` header rows
to the pure path; dump-log writes such a line as it walks the headers; export refuses a record whose headers
as one row would take more than the decompression bound. Each is checked here against the tuples it stands
for: same values, same errors, same output bytes.
"""
from __future__ import annotations

import pickle
import sys

import pytest

from kafkalog_formats import codecs, native, record, record_batch
from kafkalog_formats.record import HEADERS_INLINE, RecordHeaders
from kafkalog_formats.record_batch import RecordSpec, build_batch, iter_records, schema

from conftest import REPO, run_cli

T0 = 1_700_000_000_000


def headers(n: int) -> tuple:
    """``n`` headers of every shape: empty and 200-byte keys (two-byte varints), null, empty and long values."""
    shapes = [(b"", None), (b"k", b""), (b"key-%d", b"v"), (b"x" * 200, b"y" * 300), (b"\xff\xfe", None)]
    out = []
    for i in range(n):
        k, v = shapes[i % len(shapes)]
        out.append((k.replace(b"%d", str(i).encode()) if b"%d" in k else k, v))
    return tuple(out)


MANY = headers(HEADERS_INLINE + 3)


def section(hs: tuple) -> bytes:
    """A records section of three records: few headers, ``hs``, none."""
    out = bytearray()
    for i, h in enumerate([MANY[:4], hs, ()]):
        record_batch.encode_record(RecordSpec(i, T0 + i, b"key%d" % i, b"value", h), T0, out)
    return bytes(out)


def test_record_headers_behave_as_the_tuple_they_stand_for():
    data = section(MANY)
    recs = list(iter_records(data, 3, 0, T0, -1))
    hs = recs[1].headers
    assert type(hs) is RecordHeaders and type(recs[0].headers) is tuple
    assert hs == MANY and MANY == hs and tuple(hs) == MANY and len(hs) == len(MANY)
    assert hs[0] == MANY[0] and hs[-1] == MANY[-1] and hs[3] == MANY[3] and hs[5:9] == MANY[5:9]
    assert hash(hs) == hash(MANY) and bool(hs)
    assert hs != MANY[:-1] and hs != MANY[:-1] + ((b"other", None),)
    assert pickle.loads(pickle.dumps(hs)) == MANY
    with pytest.raises(IndexError):
        hs[len(MANY)]
    # the declarative schema, the source of truth, reads the same headers
    rec = schema("RecordV2").parse(data[_second_record_start(data):])
    assert tuple((h.key, h.value) for h in rec.headers) == MANY


def _second_record_start(data: bytes) -> int:
    from kafkalog_formats.varint import read_varint
    length, pos = read_varint(data, 0, len(data))
    return pos + length


@pytest.mark.skipif(native.ext is None, reason=f"native path not active: {native.reason}")
def test_the_compiled_decoder_gives_the_same_record_headers():
    data = section(MANY)
    pure = list(iter_records(data, 3, 0, T0, -1))
    fast = native.records(data, 3, 0, T0, -1, None)
    assert [type(r.headers) for r in fast] == [tuple, RecordHeaders, tuple]
    assert fast == pure and fast[1].headers.section == pure[1].headers.section
    batch = build_batch(0, [RecordSpec(i, T0 + i, b"key%d" % i, b"value", h) for i, h in enumerate([(), MANY, ()])],
                        codec=codecs.ZSTD)
    from kafkalog_formats.message_set import BatchReader
    [b] = list(BatchReader(batch))
    assert [r.headers for r in b.records()] == [(), MANY, ()]
    assert type(list(b.records())[1].headers) is RecordHeaders


@pytest.mark.skipif(native.ext is None, reason=f"native path not active: {native.reason}")
def test_the_compiled_header_walk_matches_the_pure_one_on_any_bytes():
    """``_native.header_pairs`` (RecordHeaders.chunks) against ``RecordHeaders._walk``: the same pairs, or a
    ValueError from both, on valid sections, cut ones and random bytes (a section may come from a pickle)."""
    import random
    rng = random.Random(24)
    valid = bytearray()
    for k, v in MANY[:300]:
        record_batch._nullable(valid, k)
        record_batch._nullable(valid, v)
    cases = [(bytes(valid), 300), (bytes(valid), 299), (bytes(valid), 301), (bytes(valid[:-7]), 300), (b"", 0),
             (b"", 1), (b"\x01\x01", 1), (b"\xff\xff\xff\xff\x7f\x00", 1), (b"\x03\x00", 1)]
    cases += [(bytes(rng.randrange(256) for _ in range(rng.randrange(40))), rng.randrange(6)) for _ in range(3000)]
    for data, n in cases:
        results = []
        for walk in (lambda h: [p for c in h.chunks(size=7) for p in c], lambda h: list(h._walk())):
            try:
                results.append(walk(RecordHeaders(data, n)))
            except ValueError as e:
                results.append(str(e))
        assert results[0] == results[1], (data, n)


@pytest.mark.parametrize("damage", ["value past the record", "key past the record", "negative key size"])
def test_a_damaged_header_among_many_is_the_error_it_is_among_few(monkeypatch, damage):
    """The walk that keeps headers as bytes checks them as the one that makes tuples does: same FormatError."""
    hs = list(MANY)
    if damage == "negative key size":
        bad = bytearray(section(tuple(hs)))
        # the last header of the second record: (b"\\xff\\xfe", None) -> key length -3
        i = bad.rindex(b"\x04\xff\xfe\x01")
        bad[i] = 0x05
    else:
        hs[-1] = (b"z", b"w" * 3) if damage == "value past the record" else (b"z" * 3, None)
        bad = bytearray(section(tuple(hs)))
        tail = b"\x02z\x06www" if damage == "value past the record" else b"\x06zzz\x01"
        i = bad.rindex(tail)
        bad[i + (2 if damage == "value past the record" else 0)] = 0x7e         # claims 63 bytes
    errors = []
    for inline in (HEADERS_INLINE, 10 ** 9):
        monkeypatch.setattr(record_batch, "HEADERS_INLINE", inline)
        with pytest.raises(record_batch.FormatError) as e:
            list(iter_records(bytes(bad), 3, 0, T0, -1))
        errors.append((e.value.reason, e.value.position, e.value.kind))
    assert errors[0] == errors[1]


def _segment(tmp_path, n: int, tiny: bool = False):
    """A partition: an ordinary batch, one zstd batch whose second record has ``n`` headers (``tiny``: two
    bytes each), another batch."""
    d = tmp_path / "many-0"
    d.mkdir()
    many = ((b"", None),) * n if tiny else headers(n)
    before = build_batch(0, [RecordSpec(i, T0 + i, b"a%d" % i, b"x", MANY[:2]) for i in range(3)])
    big = build_batch(3, [RecordSpec(0, T0, b"k", b"v", ()), RecordSpec(1, T0 + 100, None, b"w", many)],
                      codec=codecs.ZSTD)
    after = build_batch(5, [RecordSpec(0, T0 + 9, b"z", None, ((b"h", b"v"),))], codec=codecs.LZ4)
    (d / "00000000000000000000.log").write_bytes(before + big + after)
    return d


def _tuples_everywhere(monkeypatch):
    """Headers as tuples on both decoders, whatever their count: the output the lazy headers must match."""
    monkeypatch.setattr(record_batch, "HEADERS_INLINE", 10 ** 9)
    if native.ext is not None:
        native.ext.set_record_headers(RecordHeaders, 10 ** 9)
        monkeypatch.setattr(record, "HEADERS_INLINE", 10 ** 9)


@pytest.fixture
def restore_headers_type():
    yield
    if native.ext is not None:
        native.ext.set_record_headers(RecordHeaders, HEADERS_INLINE)


DUMPS = [["--deep-iteration"], ["--print-data-log"], ["--deep-iteration", "--format", "json"],
         ["--print-data-log", "--format", "json", "--value-decoder", "hex"],
         ["--print-data-log", "--format-string", "%o %h\\n"]]


@pytest.mark.parametrize("n", [HEADERS_INLINE + 1, "scan"])
@pytest.mark.parametrize("args", DUMPS, ids=" ".join)
def test_dump_log_writes_a_record_of_many_headers_as_with_tuples(tmp_path, monkeypatch, restore_headers_type, n, args):
    """Above ``HEADERS_INLINE`` the record's line is written as its headers are walked; above the scan's
    ``MAX_HEADERS`` (1,048,576) the batch goes to the pure path: the same bytes as with tuples everywhere, on
    both record paths."""
    tiny = n == "scan"                  # two bytes a header: a 2 MB record, not 100 MB
    if tiny:
        if native.ext is None:
            pytest.skip(f"native path not active: {native.reason}")
        n = native.ext.MAX_HEADERS + 1
    seg = str(_segment(tmp_path, n, tiny) / "00000000000000000000.log")
    outs = []
    for pure in (False, True):
        with monkeypatch.context() as m:
            if pure:
                m.setattr(native, "ext", None)
            outs.append(run_cli("dump-log", *args, seg))
    with monkeypatch.context() as m:
        _tuples_everywhere(m)
        outs.append(run_cli("dump-log", *args, seg))
    assert outs[0].code == 0 and not outs[0].err
    assert outs[0].out.count(",") >= n - 1                   # every header written, a comma between two
    assert outs[0] == outs[1] == outs[2]


@pytest.mark.parametrize("args", [["lookup-offset", "4"], ["lookup-offset", "--format", "json", "4"],
                                  ["lookup-time", "--format", "json", str(T0 + 50)]], ids=" ".join)
def test_a_lookup_prints_a_record_of_many_headers_as_with_tuples(tmp_path, monkeypatch, restore_headers_type, args):
    """The found record in a lookup's report (its JSON object spliced with its headers a chunk at a time:
    lookup-time --format json on a record of 3 M headers took 980 MiB, now 53)."""
    part = str(_segment(tmp_path, HEADERS_INLINE + 1))
    lazy = run_cli(*args[:-1], part, args[-1])
    with monkeypatch.context() as m:
        _tuples_everywhere(m)
        tuples = run_cli(*args[:-1], part, args[-1])
    assert lazy.code == 0 and lazy.out.count(",") >= HEADERS_INLINE
    assert lazy == tuples


def test_export_refuses_a_record_whose_headers_outgrow_the_bound(tmp_path, monkeypatch, restore_headers_type):
    """Export's rows hold a record's headers in Arrow (some 16 bytes a header beyond their bytes): a record whose
    headers take more than --max-decompressed-bytes that way is a record_too_large problem (it and the rest of
    its batch not exported, as with a record larger than the bound); under a bound that fits them, the row
    holds every header, as with tuples."""
    pytest.importorskip("pyarrow")
    from kafkalog_cli.spark.options import ReadOptions
    from kafkalog_cli.spark.plan import plan_ranges
    from kafkalog_cli.spark.problems import ReadSink
    from kafkalog_cli.spark.rows import read_range
    part = _segment(tmp_path, HEADERS_INLINE + 1, tiny=True)

    def rows(bound: int):
        opts = ReadOptions.from_options({"maxDecompressedBytes": str(bound)})
        sink = ReadSink("skip")
        out = [b.to_pylist() for r in plan_ranges([str(part)], opts).ranges for b in read_range(r, opts, sink=sink)]
        return [row for b in out for row in b], sink.problems

    small, problems = rows(1 << 20)             # 65,537 headers x 16 bytes > 1 MiB
    assert [p.kind for p in problems] == ["record_too_large"] and problems[0].offset == 4
    assert "65,537 headers" in problems[0].message and "--max-decompressed-bytes" in problems[0].message
    assert [r["offset"] for r in small] == [0, 1, 2, 3, 5]
    fits, problems = rows(2 << 20)
    assert problems == []
    with monkeypatch.context() as m:
        _tuples_everywhere(m)
        tuples, _ = rows(2 << 20)
    assert fits == tuples and len(fits[4]["headers"]) == HEADERS_INLINE + 1


READER = """
import sys
from kafkalog_cli.spark.options import ReadOptions
from kafkalog_cli.spark.plan import plan_ranges
from kafkalog_cli.spark.problems import ReadSink
from kafkalog_cli.spark.rows import read_range
opts, sink = ReadOptions.from_options({}), ReadSink("skip")
rows = sum(b.num_rows for r in plan_ranges([sys.argv[1]], opts).ranges for b in read_range(r, opts, sink=sink))
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]   # this process's own peak
print(rows, [p.kind for p in sink.problems], int(hwm.split()[1]) // 1024)
"""


def headers_probe(key, value, record, batch):
    """A record decoder plug-in that prints what it got of the record's headers."""
    hs = record.headers
    return None, f"{len(hs)} {tuple(hs[:2])} {hs[-1] if hs else None} {hash(tuple(hs))}"


def test_export_gives_a_record_decoder_the_headers_of_a_row_of_many(tmp_path, monkeypatch):
    """A plug-in decoder of export gets a row's many headers as a sequence converted as it is read (the
    whole column as Python objects would be gigabytes at millions of headers): the same values as a tuple."""
    pytest.importorskip("pyarrow")
    from kafkalog_cli.spark.options import ReadOptions
    from kafkalog_cli.spark.plan import plan_ranges
    from kafkalog_cli.spark.problems import ReadSink
    from kafkalog_cli.spark.rows import read_range
    monkeypatch.syspath_prepend(str(REPO / "tests"))
    part = _segment(tmp_path, HEADERS_INLINE + 1)
    opts = ReadOptions.from_options({"decoder": "test_many_headers:headers_probe"})

    def decoded() -> list:
        sink = ReadSink("skip")
        rows = [row["value_decoded"] for r in plan_ranges([str(part)], opts).ranges
                for b in read_range(r, opts, columns=["value_decoded"], sink=sink) for row in b.to_pylist()]
        assert sink.problems == []
        return rows
    lazy = decoded()
    with monkeypatch.context() as m:
        m.setattr(record, "HEADERS_INLINE", 10 ** 9)       # the whole column as tuples, as before
        tuples = decoded()
    assert lazy == tuples and lazy[4].startswith(f"{HEADERS_INLINE + 1} ((b'', None), (b'k', b''))")


@pytest.mark.slow
def test_ten_million_headers_stay_within_the_memory_bound(tmp_path):
    """The fuzz case behind the README's former exception (dump-log 365-590 MiB, export's reader 596 MiB at
    ten million headers), as subprocesses: the commands that printed or exported the headers now stay under
    200 MiB; export's reader refuses the record (160 MB of Arrow beyond the 128 MiB bound)."""
    import subprocess
    sys.path.insert(0, str(REPO / "tools"))
    from fuzz_harness import run_one
    d = tmp_path / "hdr-0"
    d.mkdir()
    rec = RecordSpec(0, T0, b"k", b"v", ((b"", None),) * 10_000_000)
    (d / "00000000000000000000.log").write_bytes(build_batch(0, [rec], codec=codecs.ZSTD))
    seg = str(d / "00000000000000000000.log")
    out = tmp_path / "run"
    out.mkdir()
    for args in (["dump-log", "--deep-iteration", seg], ["dump-log", "--deep-iteration", "--format", "json", seg],
                 ["dump-log", "--print-data-log", "--format-string", "%h\\n", seg], ["verify", str(d)]):
        res = run_one(args, out, 600, 8 << 30, fresh=True)
        assert res["code"] == 0 and not res["traceback"], (args, res["stderr_tail"])
        assert res["rss_mib"] < 200, (args, res["rss_mib"])
    r = subprocess.run([sys.executable, "-c", READER, str(d)], capture_output=True, text=True, timeout=600)
    rows, kinds, rss_mib = r.stdout.split(" ", 1)[0], r.stdout[r.stdout.index("["):r.stdout.index("]") + 1], \
        int(r.stdout.rsplit(" ", 1)[1])      # (ru_maxrss would count the forking pytest process's pages)
    assert (rows, kinds) == ("0", "['record_too_large']") and rss_mib < 200, r.stdout + r.stderr
