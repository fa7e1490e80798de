"""Issue 11, item by item: hostile input gives a one-line error (file, position, offset), a documented
exit status and bounded memory, in every command that reads it. Each run that could allocate or block
goes through the fuzz harness's child runner (fork, RLIMIT_AS, wall-time limit, peak RSS from wait4)."""
from __future__ import annotations

import os
import shutil
import struct
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, run_cli
from damage import GIB, Assets, fix_crc, make_batch, tiny_records, v2_batches

sys.path.insert(0, str(REPO / "tools"))
from fuzz_harness import run_one  # noqa: E402

from kafkalog_formats import codecs  # noqa: E402
from kafkalog_formats.checkpoint import java_int, json_int, parse_offset_checkpoint  # noqa: E402
from kafkalog_formats.errors import FormatError  # noqa: E402

RSS_BOUND_MIB = 400
#: compact cleans only topics whose cleanup.policy contains compact (orders-0's is delete)
COMPACT = ("--config", "cleanup.policy=compact")
HUGE = "9" * 5000


@pytest.fixture
def logdir(tmp_path) -> Path:
    d = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", d)
    return d


@pytest.fixture(scope="session")
def assets(tmp_path_factory) -> Assets:
    shm = Path("/dev/shm")
    return Assets((shm if shm.is_dir() else tmp_path_factory.getbasetemp()) / "kafkalog-fuzz-assets")


def isolated(tmp_path: Path, *argv: str, timeout: float = 120) -> dict:
    """Run ``kafkalog ARGV`` in a fresh interpreter with the harness's limits; its result with stdout/stderr.
    (Not a fork of the test process: a forked child's peak RSS would count the pages it shares with a
    test process grown by earlier tests.)"""
    out = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"
    out.mkdir()
    res = run_one(list(argv), out, timeout, 6 << 30, fresh=True)
    res["stdout"] = (out / "stdout").read_text(errors="replace")
    res["stderr"] = (out / "stderr").read_text(errors="replace")
    assert not res["timed_out"], (argv, res)
    assert not res["traceback"], res["stderr"]
    assert res["code"] in (0, 1, 2, 3), (argv, res)
    assert res["rss_mib"] < RSS_BOUND_MIB, (argv, res["rss_mib"])
    return res


# --- 1. numbers longer than 4,300 digits in text files ---------------------------------------------

def test_java_int_counts_digits_before_converting():
    assert java_int(HUGE, 64) is None and java_int("-" + HUGE) is None
    assert java_int("0" * 6000 + "7") == 7                       # Java accepts leading zeros
    assert java_int("9223372036854775807", 64) == (1 << 63) - 1
    assert java_int("9223372036854775808", 64) is None
    assert java_int("2147483648") is None and java_int("-2147483648") == -(1 << 31)
    with pytest.raises(ValueError):
        json_int(HUGE)
    with pytest.raises(FormatError, match="Malformed line"):
        parse_offset_checkpoint(f"0\n{HUGE}\n")


TEXT_EDITS = {
    "recovery-point-offset-checkpoint": lambda t: t.replace("orders 0 91", f"orders 0 {HUGE}"),
    "replication-offset-checkpoint": lambda t: f"0\n{HUGE}\n",
    "log-start-offset-checkpoint": lambda t: f"{HUGE}\n",
    "cleaner-offset-checkpoint": lambda t: t.replace("compacted 0", f"compacted {HUGE}"),
    "meta.properties": lambda t: t.replace("node.id=1", f"node.id={HUGE}"),
    "orders-0/leader-epoch-checkpoint": lambda t: t.replace("1 39", f"1 {HUGE}"),
    "__cluster_metadata-0/quorum-state": lambda t: t.replace('"leaderEpoch":1', f'"leaderEpoch":{HUGE}'),
    "orders-0/partition.metadata": lambda t: t.replace("version: 0", f"version: {HUGE}"),
}


@pytest.mark.parametrize("name", sorted(TEXT_EDITS))
def test_huge_number_in_a_text_file_is_a_malformed_file(logdir, name):
    f = logdir / name
    if not f.exists():                 # the fixture has no such file yet: write a well-formed one first
        f.write_text("0\n1\ncompacted 0 5\n")
    f.write_text(TEXT_EDITS[name](f.read_text()))
    part = str(logdir / "orders-0")
    v = run_cli("verify", str(logdir))
    assert v.code == 1 and f.name in v.out
    for argv in (("recover", "--dry-run", str(logdir)), ("recover", str(logdir)),
                 ("lookup-offset", part, "30"), ("lookup-time", part, "earliest"),
                 ("compact", *COMPACT, "--dry-run", "--force", str(logdir / "compacted-0")),
                 ("compact", *COMPACT, "--force", "--high-watermark", "11", str(logdir / "compacted-0")),
                 ("retain", "--dry-run", "--all", "--retention-bytes", "0", str(logdir))):
        r = run_cli(*argv)                                         # asserts: no traceback
        assert r.code in (0, 1, 3), (argv, r)
        if r.code == 3:
            assert f.name in r.err and "\n" == r.err[-1] and r.err.count("\n") == 1, r.err


# --- 2. decompression bombs ----------------------------------------------------------------------

@pytest.mark.parametrize("codec", [codecs.ZSTD, codecs.GZIP, codecs.LZ4, codecs.SNAPPY])
def test_bombs_are_refused_by_every_reader_with_bounded_memory(tmp_path, logdir, assets, codec):
    """A batch with a valid CRC whose records expand to 2 GiB (snappy 512 MiB), appended to the active
    segment and written as a KRaft snapshot: each reader reports it (file, position, offset), bounded."""
    seg = logdir / "orders-0" / "00000000000000000078.log"
    size = seg.stat().st_size
    bomb = make_batch(91, assets.bomb(codec), 1000, codec)
    seg.write_bytes(seg.read_bytes() + bomb)
    snap = logdir / "__cluster_metadata-0" / "00000000000000000003-0000000001.checkpoint"
    snap.write_bytes(snap.read_bytes() + make_batch(3, assets.bomb(codec), 1, codec))
    part = str(logdir / "orders-0")
    r = isolated(tmp_path, "lookup-offset", part, "91")
    assert r["code"] == 3 and f"{seg}: byte {size} (offset 91): " in r["stderr"]
    assert "more than 134217728 bytes" in r["stderr"] and r["stderr"].count("\n") == 1
    r = isolated(tmp_path, "lookup-time", part, "max-timestamp")          # skips the undecodable batch
    assert r["code"] == 0
    r = isolated(tmp_path, "verify", "--format", "json", str(snap))
    assert r["code"] == 1 and '"decompressed_too_large"' in r["stdout"]
    r = isolated(tmp_path, "verify", "--format", "json", part)
    assert r["code"] == 1 and '"decompressed_too_large"' in r["stdout"] and f'"position":{size}' in r["stdout"]
    r = isolated(tmp_path, "dump-log", "--deep-iteration", str(seg))
    assert r["code"] == 1 and "more than 134217728 bytes" in r["stdout"] + r["stderr"]
    (logdir / "orders-0" / "00000000000000000092.log").touch()   # roll: the bomb's segment becomes cleanable
    r = isolated(tmp_path, "compact", *COMPACT, "--dry-run", "--force", "--high-watermark", "100000", part)
    said = " ".join(r["stdout"].split())                         # the report wraps at 80 columns
    assert r["code"] == 1 and f"problem: {seg.name} position {size} (offset 91)" in said, r
    assert "more than 134217728 bytes" in r["stdout"]


def test_the_bound_is_an_option(tmp_path, logdir):
    """--max-decompressed-bytes lowers (or raises) the bound for every reader of the command."""
    seg = logdir / "orders-1" / "00000000000000000000.log"          # every codec, small batches
    assert run_cli("verify", str(logdir / "orders-1")).code == 0
    r = run_cli("verify", "--max-decompressed-bytes", "1024", "--format", "json", str(logdir / "orders-1"))
    assert r.code == 1 and "decompressed_too_large" in r.out
    r = run_cli("dump-log", "--max-decompressed-bytes", "1024", "--deep-iteration", str(seg))
    assert r.code == 1 and "--max-decompressed-bytes" in r.out + r.err
    assert run_cli("verify", str(logdir / "orders-1")).code == 0        # the next run starts from the default


def test_a_record_bomb_within_the_bound_is_decoded_lazily(tmp_path, logdir, assets):
    """3 million valid records in one zstd batch (25 MiB decompressed): lookups and verify stream them."""
    seg = logdir / "orders-0" / "00000000000000000078.log"
    seg.write_bytes(seg.read_bytes() + make_batch(91, assets.record_bomb(), 3_000_000, codecs.ZSTD))
    r = isolated(tmp_path, "lookup-offset", str(logdir / "orders-0"), "2500000")
    assert r["code"] == 0 and "found:           offset 2500000," in r["stdout"]
    r = isolated(tmp_path, "verify", str(logdir / "orders-0"))
    assert r["code"] in (0, 1)


# --- 3. valid CRC, undecodable records -------------------------------------------------------------

def _undecodable(data: bytes, how: str) -> bytes:
    """The last v2 batch of ``data`` made undecodable in one of Kafka's ways, its CRC recomputed."""
    pos, size = v2_batches(data)[-1]
    buf = bytearray(data[pos:pos + size])
    codec = buf[22] & 7
    records = bytearray(codecs.decompress(codec, bytes(buf[61:])) if codec else buf[61:])
    if how == "count":
        struct.pack_into(">i", buf, 57, struct.unpack_from(">i", buf, 57)[0] + 5)
    elif how == "varint":
        records[0:1] = b"\xff\xff\xff\xff\xff\x01"
    elif how == "codec":
        buf[22] = (buf[22] & 0xF8) | 6
    elif how == "eof":
        del records[len(records) // 2:]
    if how in ("varint", "eof"):
        body = codecs.compress(codec, bytes(records)) if codec else bytes(records)
        buf = buf[:61] + body
        struct.pack_into(">i", buf, 8, len(buf) - 12)
    fix_crc(buf, 0)
    return data[:pos] + bytes(buf)


@pytest.mark.parametrize("how", ["count", "varint", "codec", "eof"])
def test_undecodable_batch_is_one_line_with_file_position_offset(logdir, how):
    seg = logdir / "orders-0" / "00000000000000000078.log"
    data = seg.read_bytes()
    pos = v2_batches(data)[-1][0]
    base = struct.unpack_from(">q", data, pos)[0]
    seg.write_bytes(_undecodable(data, how))
    part = str(logdir / "orders-0")
    r = run_cli("lookup-offset", part, str(base))
    if how == "count":      # the record is found before the missing ones are reached (lazily, as Kafka)
        assert r.code == 0
    else:
        assert r.code == 3 and r.err.startswith(f"kafkalog: cannot read: {seg}: byte ") and f"(offset {base})" in r.err
        assert r.err.count("\n") == 1
    r = run_cli("lookup-time", part, "1699999999999")
    assert r.code in (0, 3)
    v = run_cli("verify", "--format", "json", part)
    assert v.code == 1 and f'"offset":{base}' in v.out
    d = run_cli("dump-log", "--deep-iteration", str(seg))
    assert d.code == 1
    for dry in (("--dry-run",), ()):       # compact validates before writing (the compact helper's rule)
        r = run_cli("compact", *COMPACT, *dry, "--force", "--high-watermark", "100000", part)
        assert r.code in (0, 1, 3), r


# --- 4. index entries outside the segment ---------------------------------------------------------

@pytest.mark.parametrize("position", [-0x7FFFFFF0, -8, 1 << 30, 7])
def test_corrupt_index_entry_falls_back_to_a_scan_and_says_so(logdir, position):
    """Segment 78's index holds (83, 278), (86, 569), (90, 925); the entry a lookup of 84 or 85 starts
    from is pointed elsewhere (negative: Python would read from the end; past the end: Kafka would find
    nothing; 7: inside the first batch). The answer is the record, and the step says why it scanned."""
    part = logdir / "orders-0"
    ix = part / "00000000000000000078.index"
    data = bytearray(ix.read_bytes())
    assert struct.unpack_from(">ii", data, 0) == (5, 278)
    struct.pack_into(">i", data, 4, position)
    ix.write_bytes(bytes(data))
    for target in (83, 84, 85):
        r = run_cli("lookup-offset", "--format", "json", str(part), str(target))
        assert r.code == 0 and f'"found_offset":{target}' in r.out and "corrupt offset index" in r.out
    r = run_cli("lookup-offset", str(part), "90")                  # its own entry is intact
    assert r.code == 0 and "corrupt offset index" not in r.out and "offset 90" in r.out
    assert run_cli("lookup-time", str(part), "latest").code == 0
    assert run_cli("compact", *COMPACT, "--dry-run", "--force", "--high-watermark", "91", str(part)).code in (0, 1)
    assert run_cli("retain", "--dry-run", "--retention-bytes", "0", str(part)).code in (0, 1)


# --- 5. a huge batch claimed over a hole ------------------------------------------------------------

def _claim_a_huge_batch(logdir: Path, assets) -> Path:
    """Append to orders-0's last segment a batch header claiming 2 GiB, with a valid CRC over the hole
    the file is then extended by (sparse: no disk, no memory)."""
    seg = logdir / "orders-0" / "00000000000000000078.log"
    end = seg.stat().st_size
    size = 2 * GIB - 64
    head = bytearray(struct.pack(">qiibIhiqqqhii", 91, size - 12, 0, 2, 0, 0, 0, 1_700_000_000_000,
                                 1_700_000_000_000, -1, -1, -1, 1))
    struct.pack_into(">I", head, 17, assets.huge_zero_batch_crc(size))
    with open(seg, "r+b") as f:
        f.seek(end)
        f.write(bytes(head))
        f.truncate(end + size)
    return seg


def test_sparse_huge_batch_is_read_with_bounded_memory(tmp_path, logdir, assets):
    """2 GiB hole, header claiming it all with a valid CRC: CRC and records read from the map in windows."""
    seg = _claim_a_huge_batch(logdir, assets)
    part = str(logdir / "orders-0")
    for argv in (("lookup-offset", part, "91"), ("verify", part), ("dump-log", "--deep-iteration", str(seg)),
                 ("lookup-time", part, "max-timestamp"), ("retain", "--dry-run", "--retention-bytes", "0", part),
                 ("compact", *COMPACT, "--dry-run", "--force", "--high-watermark", "92", part)):
        r = isolated(tmp_path, *argv, timeout=180)
        assert r["code"] in (0, 1, 3), (argv, r)
    r = isolated(tmp_path, "lookup-offset", part, "91")
    assert r["code"] == 3 and "(offset 91)" in r["stderr"]



def test_sparse_huge_indexes_beside_a_huge_batch_claim_read_only_their_entries(tmp_path, logdir, assets):
    """Found by the fuzz run on the merged code: beside a segment claiming 2 GiB (so it could justify 82
    million index entries) a 1 GiB sparse .timeindex/.index, zero after its entries, cost verify 2.3 GB:
    every slot up to that cap was compared and copied. Only the entries before the zero tail are read."""
    seg = _claim_a_huge_batch(logdir, assets)
    for suffix in ("index", "timeindex"):
        with open(seg.with_suffix("." + suffix), "r+b") as f:
            f.truncate(GIB)
    part = str(logdir / "orders-0")
    for argv in (("verify", part), ("verify", "--format", "json", "--shallow", part), ("lookup-offset", part, "85"),
                 ("lookup-time", part, "1700000041000")):
        r = isolated(tmp_path, *argv, timeout=180)
        assert r["code"] in (0, 1, 3), (argv, r)


def test_export_reader_searches_a_torn_huge_batch_with_bounded_memory(tmp_path, logdir, assets):
    """Found by a reader-only fuzz run after the Spark merge: a batch claiming 2 GiB cut to 1 GiB (a torn
    write) made export's reader look for a chain of intact batches with one find() and one CRC over the
    whole region (1.1 GB resident). The search is windowed with the pages released, as verify's is."""
    seg = _claim_a_huge_batch(logdir, assets)
    with open(seg, "r+b") as f:
        f.truncate(seg.stat().st_size - GIB)
    r = isolated(tmp_path, "<export-reader>", str(logdir / "orders-0"), timeout=180)
    assert r["code"] == 1

@pytest.mark.slow
def test_huge_damaged_tail_is_searched_with_bounded_memory_and_time(tmp_path, logdir):
    """Found by the harness (merge of main's verify): after damage, verify looks for an intact batch further
    on (is the damage only a torn tail?) with ``find`` over the rest of the map, which made a 2 GiB zero tail
    resident (2 GiB RSS), and tried up to 4096 candidates with a CRC each over up to the whole file. Now the
    search is windowed, an all-zero tail is not searched, and the CRCs tried are budgeted. The segment ends at
    Kafka's limit (2 GiB - 1; a larger one is refused unread: segment_too_large)."""
    from kafkalog_formats.limits import MAX_SEGMENT_BYTES
    seg = logdir / "orders-0" / "00000000000000000078.log"
    end, size = seg.stat().st_size, MAX_SEGMENT_BYTES
    part = str(logdir / "orders-0")
    with open(seg, "r+b") as f:                            # a zero tail of almost 2 GiB
        f.truncate(size)
    r = isolated(tmp_path, "verify", "--format", "json", part, timeout=180)
    assert r["code"] == 1 and '"zero_tail"' in r["stdout"]
    # found by the fuzz run after the Spark merge: export's reader checked the tail with any() over one
    # memoryview of the map (2.1 GB resident, 15 s); now windowed with the pages released
    r = isolated(tmp_path, "<export-reader>", part, timeout=180)
    assert r["code"] in (0, 1)
    with open(seg, "r+b") as f:                            # corrupt bytes, then a fake batch every 64 MiB
        f.seek(end)
        f.write(struct.pack(">qi", 91, 3))                 # size 3 < 14: Kafka's reader stops here
        for at in range(end + (64 << 20), size - (64 << 20), 64 << 20):
            f.seek(at)                                     # claims the rest of the file, CRC wrong
            f.write(struct.pack(">qiib", 100, size - at - 12, 0, 2))
    r = isolated(tmp_path, "verify", "--format", "json", part, timeout=180)
    assert r["code"] == 1 and r["seconds"] < 120


# --- 6. FIFOs and other non-regular files ----------------------------------------------------------

@pytest.mark.parametrize("name", ["00000000000000000091.log", "00000000000000000078.index",
                                  "00000000000000000078.timeindex", "leader-epoch-checkpoint",
                                  "partition.metadata", "../__cluster_metadata-0/quorum-state"])
def test_fifo_named_like_a_kafka_file_never_blocks(tmp_path, logdir, name):
    """partition.metadata and quorum-state: found by the fuzz run on the merged code (retain and compact
    read them through the configuration resolver and blocked on a FIFO)."""
    part = logdir / "orders-0"
    f = part / name
    if f.exists():
        f.unlink()
    os.mkfifo(f)
    for argv in (("verify", str(logdir)), ("lookup-offset", str(part), "80"), ("lookup-time", str(part), "0"),
                 ("compact", *COMPACT, "--dry-run", "--force", "--high-watermark", "91", str(part)),
                 ("retain", "--dry-run", "--retention-bytes", "0", str(part)), ("dump-log", str(part)),
                 ("recover", "--dry-run", str(logdir)), ("verify", str(f))):
        r = isolated(tmp_path, *argv, timeout=30)
        assert r["seconds"] < 25
    r = isolated(tmp_path, "verify", "--format", "json", str(logdir))
    assert "not a regular file" in r["stdout"]


def test_a_fifo_for_meta_properties_is_said_in_the_systems_words(tmp_path, logdir):
    """describe and verify say why a topic configuration could not be read as the system names it (FILE:
    reason): main printed Python's '[Errno 22] not a regular file (a FIFO): 'ff/meta.properties'' on every
    partition of describe."""
    f = logdir / "meta.properties"
    f.unlink()
    os.mkfifo(f)
    for argv in (("describe", str(logdir)), ("describe", "--format", "json", str(logdir)),
                 ("verify", "--show-info", str(logdir)), ("verify", "--format", "json", str(logdir))):
        r = isolated(tmp_path, *argv, timeout=30)
        assert r["code"] in (0, 1) and "Errno" not in r["stdout"] + r["stderr"], (argv, r["stdout"])
    r = isolated(tmp_path, "describe", str(logdir), timeout=30)
    assert "meta.properties: not a regular file (a FIFO)" in " ".join(r["stdout"].split())


def test_symlink_to_a_device_is_refused_not_read(tmp_path, logdir):
    f = logdir / "replication-offset-checkpoint"
    f.unlink()
    os.symlink("/dev/zero", f)
    r = isolated(tmp_path, "verify", str(logdir), timeout=30)
    assert r["code"] == 1
    r = isolated(tmp_path, "verify", "--format", "json", str(f), timeout=30)
    assert "not a regular file" in r["stdout"] + r["stderr"]


def test_record_section_is_read_through_views_not_copies():
    """A records section above 8 MiB is decoded through a memoryview: keys and values are bytes, and a
    record longer than the bound is an error, not an allocation."""
    from kafkalog_formats.limits import set_max_decompressed_bytes
    from kafkalog_formats.record_batch import iter_records
    raw = tiny_records(2_000_000)
    assert len(raw) > 8 << 20
    recs = iter_records(bytearray(raw), 2_000_000, 0, 0, -1)
    first = next(recs)
    assert first.key is None and first.offset == 0
    big = bytearray(9 << 20)
    big[0:5] = b"\xfe\xff\xff\xff\x0f"             # a record claiming 2^31-1 bytes
    set_max_decompressed_bytes(1 << 20)
    try:
        with pytest.raises(FormatError) as e:
            next(iter_records(big, 1, 0, 0, -1))
        assert e.value.kind in ("record", "record_too_large")
    finally:
        set_max_decompressed_bytes(None)


@pytest.mark.parametrize("suffix", ["index", "timeindex"])
def test_sparse_huge_index_is_read_only_as_far_as_the_segment_justifies(tmp_path, logdir, suffix):
    """A 1 GiB sparse index whose last slot is non-zero (so Kafka's zero-tail heuristic counts 134 million
    entries) beside a 1 KiB segment: no reader touches more than the segment can justify."""
    ix = logdir / "orders-0" / f"00000000000000000078.{suffix}"
    with open(ix, "r+b") as f:
        f.truncate(GIB)
        f.seek(GIB - 24)
        f.write(struct.pack(">qiiqi", 5, 7, 9, 11, 13)[:24])
    part = str(logdir / "orders-0")
    for argv in (("verify", "--format", "json", part), ("dump-log", str(ix)), ("dump-log", "--verify-index-only", str(ix)),
                 ("lookup-offset", part, "85"), ("lookup-time", part, "1700000041000"),
                 ("retain", "--dry-run", "--retention-bytes", "0", part)):
        r = isolated(tmp_path, *argv, timeout=120)
        assert r["code"] in (0, 1), (argv, r)
    r = isolated(tmp_path, "verify", "--format", "json", part)
    assert "index_too_many_entries" in r["stdout"]


def test_offsets_near_long_max_wrap_as_in_java(tmp_path, logdir):
    """Found by the harness: a batch whose base offset is Long.MAX (CRC fixed) made lastOffset leave the
    int64 range (an OverflowError in verify and export). Kafka's ``DefaultRecordBatch.lastOffset`` is a
    long sum, so it wraps: the batch is reported, never a traceback."""
    from kafkalog_formats.message_set import BatchReader
    seg = logdir / "orders-0" / "00000000000000000078.log"
    data = bytearray(seg.read_bytes())
    pos, _size = v2_batches(bytes(data))[-1]
    struct.pack_into(">q", data, pos, (1 << 63) - 1)
    struct.pack_into(">i", data, pos + 23, 5)               # lastOffsetDelta (inside the CRC)
    fix_crc(data, pos)
    seg.write_bytes(bytes(data))
    last = [b for b in BatchReader(bytes(data))][-1]
    assert last.last_offset == -(1 << 63) + last.last_offset_delta - 1
    assert all(-(1 << 63) <= r.offset < (1 << 63) for r in last.records())
    r = run_cli("verify", "--format", "json", str(logdir / "orders-0"))
    assert r.code == 1 and "negative_offset_delta" in r.out
    for argv in (("dump-log", "--deep-iteration", str(seg)), ("lookup-offset", str(logdir / "orders-0"), "89"),
                 ("recover", "--dry-run", str(logdir))):
        assert run_cli(*argv).code in (0, 1, 3)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["native", pytest.param("pure", marks=pytest.mark.fuzz)])
def test_compact_streams_a_batch_of_millions_of_records(tmp_path, logdir, assets, monkeypatch, path):
    """Found by the harness: one valid zstd batch of 3,000,000 minimal keyless records (25 MiB
    decompressed, within the bound) at offsets 0.. in an inactive segment. compact listed every record
    (1.5 GiB, 100 s); it streams them, deciding in one pass and re-encoding in a second. Kafka's
    ``shouldRetainRecord`` keeps every record past the offset map's latest offset (77: the active
    segment starts at 78) and drops keyless ones below it, so the rebuilt batch holds 3,000,000 - 78."""
    from kafkalog_formats import native
    if path == "native" and native.ext is None:
        pytest.skip("native path not built")
    if path == "pure":
        monkeypatch.setenv(native.PURE_ENV, "1")
    part = logdir / "orders-0"
    seg = part / "00000000000000000025.log"
    seg.write_bytes(make_batch(0, assets.record_bomb(), 3_000_000, codecs.ZSTD) + seg.read_bytes())
    argv = ["compact", *COMPACT, "--force", "--now", "1800000000000", "--high-watermark", "100000", str(part)]
    for extra in (["--dry-run"], []):
        out = tmp_path / f"run{len(extra)}"
        out.mkdir()
        res = run_one(argv[:1] + extra + argv[1:], out, 300, 6 << 30, fresh=True)
        assert not res["traceback"] and res["code"] == 0, (out / "stderr").read_text()
        assert res["rss_mib"] < RSS_BOUND_MIB, res["rss_mib"]
    from kafkalog_formats.message_set import BatchReader
    big = [b for b in BatchReader((part / "00000000000000000000.log").read_bytes()) if b.base_offset == 0
           and b.count > 1000]
    assert len(big) == 1 and big[0].count == 3_000_000 - 78 and big[0].codec == codecs.ZSTD
    first = next(iter(big[0].records()))
    assert (first.offset, first.key, first.value) == (78, None, None)


@pytest.mark.parametrize("section", [b"\x14\x00" + b"\x80" * 8 + b"\x01", b"\x0c\x00\x80\x80\x80\x80\x01",
                                     b"\x0c\x00\x80\x80\x80\x80\x01\x02"])
def test_timestamp_delta_ending_at_the_end_of_the_data_is_a_format_error(section):
    """A record whose timestamp varlong ends exactly at the end of the records (no byte left for the offset
    delta) raised IndexError in the pure decoder; Kafka's ``DefaultRecord.readFrom`` fails such a record with
    InvalidRecordException ("Found invalid record structure"), and so does kafkalog, at the record."""
    from kafkalog_formats.record_batch import iter_records
    with pytest.raises(FormatError, match="Found invalid record structure") as e:
        list(iter_records(section, 1, 100, 1000, 5, None))
    assert e.value.position == 0 and e.value.kind == "record"


def test_index_entry_past_a_segment_without_a_readable_batch_is_named_plainly(tmp_path):
    """Found by the fuzz harness on the merged code: a segment whose only batch fails its CRC has no last
    offset, and verify printed Python's None in "beyond the segment's last offset None"."""
    part = tmp_path / "t-0"
    part.mkdir()
    batch = bytearray(make_batch(0, tiny_records(1), 1))
    batch[-1] ^= 0xFF                                   # a record byte: the stored CRC no longer matches
    (part / "00000000000000000000.log").write_bytes(bytes(batch))
    (part / "00000000000000000000.index").write_bytes(b"")
    (part / "00000000000000000000.timeindex").write_bytes(struct.pack(">qi", 1_700_000_000_000, 10))
    r = run_cli("verify", "--format", "json", str(part))
    assert r.code == 0, r.err    # a torn last segment: warnings (Kafka's recovery truncates it), the entry info
    assert "None" not in r.out and "None" not in r.err
    assert "offset 10 is beyond the log: the segment holds no readable batch" in r.out
