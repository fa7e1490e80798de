"""``recover --salvage`` (issue 37): every intact batch kept after damage where Kafka's recovery would cut
and delete; the loss report; ``recover`` without it unchanged (Kafka's behaviour) but reporting batches a
consumer stops at; ``verify`` grading the records at stake as an error.

The logs are written by the project's writer (``repair.log_writer``, Kafka's layout) and damaged by hand,
byte by byte; the expected batches are the written ones, read by the tests' own reader
(``recover_helpers.brute_batches``)."""
from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest
from conftest import run_cli
from recover_helpers import brute_batches, segment_logs

from kafkalog_formats import control as ctl
from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_formats.txn_index import parse_txn_index

from kafkalog_cli.repair.log_writer import PartitionWriter

T0 = 1_700_000_000_000
TOPIC = "events"
IV = ("--index-interval-bytes", "256")      # the interval the writer used


def _write(root: Path, *, batches: int = 120, segment_bytes: int = 8000, txn: bool = False, seed: int = 3) -> Path:
    """A log directory with ``events-0``: ``batches`` batches of 1-4 records (an idempotent producer), some
    leader epochs, several segments; with ``txn`` a transactional producer whose transactions are committed
    and aborted among them. Returns the log directory; the written batches are in ``root / "written"``."""
    rng = random.Random(seed)
    (root / "meta.properties").parent.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=salvage\n")
    w = PartitionWriter(root / f"{TOPIC}-0", segment_bytes=segment_bytes, index_interval_bytes=256)
    offset, seq, tseq = 0, 0, 0
    open_txn = False
    written = []
    for i in range(batches):
        epoch = 1 + i // 50
        if txn and i % 7 == 3 and not open_txn:
            open_txn = True
        if txn and open_txn and i % 7 == 6:
            kind = ctl.ABORT if i % 14 == 6 else ctl.COMMIT
            b = build_batch(offset, [RecordSpec(0, T0 + offset, ctl.build_control_key(kind),
                                                ctl.build_end_txn_marker(3))],
                            partition_leader_epoch=epoch, is_transactional=True, is_control=True, producer_id=900,
                            producer_epoch=0)
            open_txn = False
            n = 1
        else:
            n = rng.randint(1, 4)
            specs = [RecordSpec(j, T0 + offset + j, b"k%d" % rng.randrange(30), rng.randbytes(rng.randint(20, 300)))
                     for j in range(n)]
            if open_txn:
                b = build_batch(offset, specs, partition_leader_epoch=epoch, producer_id=900, producer_epoch=0,
                                base_sequence=tseq, is_transactional=True)
                tseq += n
            else:
                b = build_batch(offset, specs, partition_leader_epoch=epoch, producer_id=800, producer_epoch=0,
                                base_sequence=seq)
                seq += n
        w.append(b)
        written.append(b)
        offset += n
    w.close()
    (root / "written").mkdir(exist_ok=True)
    for i, b in enumerate(written):
        (root / "written" / f"{i:05d}").write_bytes(b)
    return root


def _written(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((root / "written").iterdir())]


def _logdir(root: Path) -> Path:
    """The log directory without the test's own ``written`` copy (a directory Kafka would refuse)."""
    import shutil
    shutil.rmtree(root / "written", ignore_errors=True)
    return root


def _batches(part: Path) -> list[bytes]:
    out = []
    for log in segment_logs(part):
        batches, _end, why = brute_batches(log.read_bytes())
        assert why is None, (log, why)
        out += [b[3] for b in batches]
    return out


def _damage(part: Path, segment: int, change) -> tuple[Path, bytes]:
    log = segment_logs(part)[segment]
    data = bytearray(log.read_bytes())
    before = bytes(data)
    change(data)
    log.write_bytes(bytes(data))
    return log, before


def _json(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def logdir(tmp_path):
    root = _write(tmp_path / "logdir")
    written = _written(root)
    return _logdir(root), written


def _positions(part: Path, segment: int) -> list[int]:
    batches, _end, _why = brute_batches(segment_logs(part)[segment].read_bytes())
    pos, at = [], 0
    for b in batches:
        pos.append(at)
        at += len(b[3])
    return pos


def test_a_zero_page_keeps_every_intact_batch_with_a_loss_report(logdir, tmp_path):
    """The issue's first case: a page of zeros in the middle of a segment. Kafka's recovery (recover without
    --salvage, the same plan) cuts the segment there and deletes every later segment; salvage drops only the
    batches the page touched and reports them, the records it keeps that Kafka would delete, and where the
    bytes are."""
    root, written = logdir
    part = root / f"{TOPIC}-0"
    assert len(segment_logs(part)) >= 4
    at = _positions(part, 1)[5] + 40
    log, original = _damage(part, 1, lambda d: d.__setitem__(slice(at, at + 512), bytes(512)))
    damaged = log.read_bytes()
    kafka = _json(run_cli("recover", *IV, "--dry-run", "--format", "json", str(root)).out)
    removed = [a for a in kafka if a["type"] == "action" and a["action"] == "remove-segment"]
    assert len(removed) == len(segment_logs(part)) - 2              # Kafka deletes every later segment
    v = run_cli("verify", "--format", "json", str(root))
    assert v.code == 1
    at_risk = [f for f in map(json.loads, v.out.splitlines()) if f.get("kind") == "intact_records_at_risk"]
    assert len(at_risk) == 1 and at_risk[0]["severity"] == "error"

    plan = _json(run_cli("recover", *IV, "--dry-run", "--salvage", "--format", "json", str(root)).out)
    sv = next(o for o in plan if o["type"] == "partition")["salvage"]
    (dm,) = sv["damages"]
    assert dm["file"] == f"{TOPIC}-0/{log.name}" and dm["start"] <= at < at + 512 <= dm["end"]
    assert dm["offsets_lost"] is not None and not dm["tail"]
    assert sv["kafka"]["segments_deleted"] == len(segment_logs(part)) - 2
    assert str(sv["kafka"]["records_kept"]) in at_risk[0]["message"].replace(",", "")

    backup = tmp_path / "backup"
    r = run_cli("recover", *IV, "--salvage", "--backup-dir", str(backup), str(root))
    assert r.code == 1, r.out + r.err
    kept = _batches(part)
    lost = [b for b in written if b not in kept]
    assert kept == [b for b in written if b in kept]                # the written batches, in order
    assert lost and all(original.find(b) < 0 or dm["start"] <= original.find(b) < dm["end"] for b in lost)
    first, last = dm["offsets_lost"]
    assert [struct.unpack(">q", b[:8])[0] for b in lost] == [o for o in range(first, last + 1)
                                                              if o in {struct.unpack(">q", w[:8])[0] for w in lost}]
    assert (backup / f"{TOPIC}-0" / log.name).read_bytes() == damaged       # whole, at the same positions
    assert run_cli("verify", str(root)).code == 0
    again = run_cli("recover", *IV, "--dry-run", "--salvage", str(root))
    assert again.code == 0, again.out
    assert "salvage: keeps" in r.out and "damage: " in r.out
    assert all(len(line) <= 80 for line in r.out.splitlines())


@pytest.mark.parametrize("where,byte,mask", [("low bit", 7, 0x01), ("high bit", 2, 0x20)])
def test_a_flipped_base_offset_is_repaired_where_kafka_empties_the_segment_or_refuses(logdir, tmp_path, where, byte,
                                                                                       mask):
    """The issue's second and third cases: one flipped bit in a batch's base offset (outside the CRC). Kafka's
    loader empties the segment (offsets going backwards: InvalidOffsetException) or refuses the partition
    (an offset beyond the segment's range); salvage repairs the offset from its neighbours: every record
    kept, byte for byte."""
    root, written = logdir
    part = root / f"{TOPIC}-0"
    at = _positions(part, 0)[9]
    _damage(part, 0, lambda d: d.__setitem__(at + byte, d[at + byte] ^ mask))
    kafka = run_cli("recover", *IV, "--dry-run", "--format", "json", str(root))
    assert kafka.code == 1
    r = run_cli("recover", *IV, "--salvage", "--backup-dir", str(tmp_path / "b"), "--format", "json", str(root))
    assert r.code == 1, r.err
    sv = next(o for o in _json(r.out) if o["type"] == "partition")["salvage"]
    assert sv["damages"] == [] and len(sv["repairs"]) == 1
    assert sv["repairs"][0]["fields"][0]["field"] == "base_offset"
    assert _batches(part) == written
    assert run_cli("verify", str(root)).code == 0


def test_a_magic_byte_of_3_is_reported_by_recover_and_moved_to_the_backup_by_salvage(logdir, tmp_path):
    """A magic byte outside the CRC set to 3: Kafka's recovery keeps the batch (size and CRC pass), every
    consumer stops at it. recover reports it (and changes nothing for it); --salvage moves it to the backup
    and leaves a gap."""
    root, written = logdir
    part = root / f"{TOPIC}-0"
    segs = segment_logs(part)
    at = _positions(part, len(segs) - 1)[2]
    _damage(part, len(segs) - 1, lambda d: d.__setitem__(at + 16, 3))
    plain = run_cli("recover", *IV, "--format", "json", str(root))
    problems = [o for o in _json(plain.out) if o["type"] == "problem" and o["kind"] == "consumer_stops"]
    assert len(problems) == 1 and problems[0]["position"] == at and "magic byte 3" in problems[0]["message"]
    assert plain.code == 1
    r = run_cli("recover", *IV, "--salvage", "--backup-dir", str(tmp_path / "b"), "--format", "json", str(root))
    sv = next(o for o in _json(r.out) if o["type"] == "partition")["salvage"]
    (dm,) = sv["damages"]
    assert [e["kind"] for e in dm["entries"]] == ["magic"] and dm["found_by"] == "framing"
    kept = _batches(part)
    assert len(kept) == len(written) - 1
    assert run_cli("verify", str(root)).code == 0
    assert not [o for o in _json(run_cli("recover", *IV, "--format", "json", str(root)).out) if o["type"] == "problem"]


def test_a_transaction_left_open_by_damage_is_ended_by_an_abort_marker(tmp_path):
    """Damage that takes a transaction's marker: salvage ends the transaction with an ABORT marker of its own
    in the gap (an aborted transaction never becomes committed by the producer's next marker), indexed in the
    .txnindex, and the report names it."""
    root = _write(tmp_path / "logdir", txn=True)
    written = _written(root)
    root = _logdir(root)
    part = root / f"{TOPIC}-0"
    seg = next(i for i, log in enumerate(segment_logs(part))
               if any(b[3][22] & 0x20 for b in brute_batches(log.read_bytes())[0]))
    batches = brute_batches(segment_logs(part)[seg].read_bytes())[0]
    pos = _positions(part, seg)
    k = next(i for i, b in enumerate(batches) if b[3][22] & 0x20 and 0 < i < len(batches) - 1)   # a marker
    at = pos[k]
    _damage(part, seg, lambda d: d.__setitem__(slice(at + 30, at + 40), bytes(10)))
    text = run_cli("recover", *IV, "--dry-run", "--salvage", str(root)).out
    assert "aborted: the transaction of producer 900 open from offset" in " ".join(text.split())
    r = run_cli("recover", *IV, "--salvage", "--backup-dir", str(tmp_path / "b"), "--format", "json", str(root))
    assert r.code == 1, r.err
    sv = next(o for o in _json(r.out) if o["type"] == "partition")["salvage"]
    (m,) = sv["markers"]
    assert m["producer_id"] == 900
    assert m["offset"] == batches[k][0]                       # the first free offset of the gap: the lost marker's
    kept = _batches(part)
    assert [b for b in kept if b in written] == [b for b in written if b in kept]
    (extra,) = [b for b in kept if b not in written]          # the one batch salvage wrote: an ABORT marker
    assert extra[22] & 0x30 == 0x30 and struct.unpack(">q", extra[43:51])[0] == 900
    txn = parse_txn_index((part / segment_logs(part)[seg].name.replace(".log", ".txnindex")).read_bytes())
    assert any(e.producer_id == 900 and e.last_offset == m["offset"] for e in txn)
    assert run_cli("verify", str(root)).code == 0
    assert run_cli("recover", *IV, "--dry-run", "--salvage", str(root)).code == 0


def test_salvage_needs_a_backup_and_excludes_the_cut(logdir):
    root, _written = logdir
    r = run_cli("recover", *IV, "--salvage", str(root))
    assert r.code == 2 and "--backup-dir" in r.err
    r = run_cli("recover", *IV, "--salvage", "--truncate-at-damage", "--dry-run", str(root))
    assert r.code == 2


def test_without_damage_salvage_plans_what_recover_plans(logdir):
    root, _written = logdir
    plain = _json(run_cli("recover", *IV, "--dry-run", "--format", "json", str(root)).out)
    salvage = _json(run_cli("recover", *IV, "--dry-run", "--salvage", "--format", "json", str(root)).out)
    strip = [{k: v for k, v in o.items() if k not in ("file_operations",)} for o in plain]
    assert [{k: v for k, v in o.items() if k not in ("file_operations",)} for o in salvage] == strip


def test_dump_log_salvage_reads_what_recover_salvage_keeps_and_reports_each_skipped_range(logdir, tmp_path):
    """The read side: dump-log --salvage prints the batches recover --salvage keeps, reports the range it
    drops (stderr, exit 1), and changes nothing; plain dump-log stops at the damage as Kafka's tool does."""
    root, _written = logdir
    part = root / f"{TOPIC}-0"
    at = _positions(part, 1)[4]                    # a batch header zeroed: Kafka's framing stops there
    log, _original = _damage(part, 1, lambda d: d.__setitem__(slice(at, at + 300), bytes(300)))
    damaged = log.read_bytes()
    plain = run_cli("dump-log", "--format", "json", str(log))
    read = run_cli("dump-log", "--salvage", "--format", "json", str(log))
    assert read.code == 1 and "salvage_skipped" in read.out + read.err
    offsets = [o["base_offset"] for o in map(json.loads, read.out.splitlines()) if o["type"] == "batch"]
    assert len(offsets) > len([o for o in map(json.loads, plain.out.splitlines()) if o["type"] == "batch"])
    assert log.read_bytes() == damaged
    run_cli("recover", *IV, "--salvage", "--backup-dir", str(tmp_path / "b"), str(root))
    assert offsets == [b[0] for b in brute_batches(log.read_bytes())[0]]


def test_export_reader_salvage_returns_what_recover_salvage_keeps(logdir, tmp_path):
    """The export and data-source reader (``spark.rows.read_range``, no Spark needed) with the ``salvage``
    option: the rows of the batches recover --salvage keeps, a ``salvage_skipped`` problem per dropped
    stretch; without it, the rows Kafka's framing reaches plus what the reader's own resumption finds."""
    pytest.importorskip("pyarrow")
    from kafkalog_cli.spark import problems as P
    from kafkalog_cli.spark.options import ReadOptions
    from kafkalog_cli.spark.ranges import SegmentRange
    from kafkalog_cli.spark.rows import read_range
    root, _written = logdir
    part = root / f"{TOPIC}-0"
    at = _positions(part, 1)[4]
    log, _original = _damage(part, 1, lambda d: d.__setitem__(slice(at, at + 300), bytes(300)))
    base = int(log.name[:20])
    rng = SegmentRange(str(root), TOPIC, 0, str(log), base, 0, log.stat().st_size, log.stat().st_size)
    sink = P.ReadSink("skip")
    opts = ReadOptions.from_options({"salvage": "true", "onError": "skip"})
    rows = [o for b in read_range(rng, opts, ["offset"], sink=sink) for o in b.column("offset").to_pylist()]
    assert [p.kind for p in sink.problems] == ["salvage_skipped"]
    run_cli("recover", *IV, "--salvage", "--backup-dir", str(tmp_path / "b"), str(root))
    from kafkalog_formats.message_set import BatchReader
    data = log.read_bytes()
    assert rows == [r.offset for b in BatchReader(data) for r in b.records()]


def test_scan_salvage_reports_each_stretch_salvage_would_skip(logdir):
    """scan --salvage (its checks are verify's, run here without Spark: ``VerifyOptions(salvage=True)``, what
    its executors run per segment): each stretch recover --salvage would skip, with where reading resumes."""
    from kafkalog_cli.engine.verify import Verifier, VerifyOptions
    root, _written = logdir
    part = root / f"{TOPIC}-0"
    at = _positions(part, 1)[4]
    log, _original = _damage(part, 1, lambda d: d.__setitem__(slice(at, at + 300), bytes(300)))
    plain = [f.kind for f in Verifier(VerifyOptions()).run([str(root)]).findings()]
    found = [f for f in Verifier(VerifyOptions(salvage=True)).run([str(root)]).findings()
             if f.kind == "salvage_skipped"]
    assert "salvage_skipped" not in plain
    assert len(found) == 1 and found[0].position == at and "reading resumes at byte" in found[0].message


@pytest.mark.parametrize("seed", range(24))
def test_fuzz_recover_salvage_end_to_end(tmp_path, seed):
    """Seeded random damage (bit flips anywhere and in header fields, zero pages, random bytes, cut ranges)
    on a partition with transactions, then recover --salvage for real: verify passes, a second salvage finds
    nothing, every batch in the log was written (or is an ABORT marker salvage wrote), in order."""
    rng = random.Random(seed)
    root = _write(tmp_path / "logdir", batches=rng.randrange(60, 160), txn=True, seed=seed)
    written = _written(root)
    root = _logdir(root)
    part = root / f"{TOPIC}-0"
    logs = segment_logs(part)
    for _ in range(rng.randrange(1, 4)):
        log = rng.choice(logs)
        data = bytearray(log.read_bytes())
        at = rng.randrange(len(data))
        kind = rng.choice(("flip", "header", "zero", "random", "cut"))
        if kind == "flip":
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "header":
            starts = _positions(part, logs.index(log)) or [0]
            p = rng.choice(starts) + rng.choice((1, 6, 7, 10, 11, 13, 15, 16))
            if p < len(data):
                data[p] ^= 1 << rng.randrange(8)
        elif kind == "zero":
            data[at:at + 4096] = bytes(len(data[at:at + 4096]))
        elif kind == "random":
            data[at:at + 200] = rng.randbytes(len(data[at:at + 200]))
        else:
            del data[at:at + rng.randrange(1, 3000)]
        log.write_bytes(bytes(data))
    r = run_cli("recover", *IV, "--salvage", "--backup-dir", str(tmp_path / "b"), "--format", "json", str(root))
    assert r.code in (0, 1), r.err
    assert not [o for o in _json(r.out) if o["type"] == "problem"], r.out
    assert run_cli("verify", str(root)).code == 0
    assert run_cli("recover", *IV, "--dry-run", "--salvage", str(root)).code == 0
    kept = _batches(part)
    if kept and kept[-1] not in written and written[-1][8:12] + written[-1][16:] == kept[-1][8:12] + kept[-1][16:] \
            and kept[-1][:8] >= written[-1][:8] and kept[-1][12:16] >= written[-1][12:16]:
        kept[-1] = written[-1]      # the last batch of the log, base offset or epoch raised: nothing shows it
    extra = [k for k in kept if k not in written]
    assert all(k[22] & 0x30 == 0x30 for k in extra), seed
    order = [written.index(k) for k in kept if k in written]
    assert order == sorted(order)


def _rewrite(raw: bytearray, fn) -> None:
    """Change a batch's CRC-covered bytes and fix its CRC: damage Kafka's recovery cannot see."""
    from kafkalog_formats.crc import crc32c
    fn(raw)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))


@pytest.mark.parametrize("what", ["codec", "offset_delta", "records"])
def test_every_kind_of_batch_a_consumer_stops_at_is_reported_and_salvaged(logdir, tmp_path, what):
    """A CRC-valid batch with an unknown codec (5), a negative last offset delta, or records that do not
    decode (a record length beyond the batch): Kafka's recovery keeps it (the negative delta here makes it
    see offsets going backwards at an index entry: InvalidOffsetException, the segment emptied, as recover
    without --salvage does); recover reports what it keeps (consumer_stops), --salvage drops only that
    batch into the backup."""
    root, written = logdir
    part = root / f"{TOPIC}-0"
    segs = segment_logs(part)
    at = _positions(part, len(segs) - 1)[2]

    def change(d):
        size = struct.unpack_from(">i", d, at + 8)[0] + 12
        raw = bytearray(d[at:at + size])
        _rewrite(raw, {"codec": lambda r: r.__setitem__(22, (r[22] & 0xF8) | 5),
                       "offset_delta": lambda r: struct.pack_into(">i", r, 23, -2),
                       "records": lambda r: r.__setitem__(61, 0x7E)}[what])
        d[at:at + size] = raw
    _damage(part, len(segs) - 1, change)
    r = run_cli("recover", *IV, "--dry-run", "--salvage", "--format", "json", str(root))
    sv = next(o for o in _json(r.out) if o["type"] == "partition")["salvage"]
    (dm,) = sv["damages"]
    assert [e["kind"] for e in dm["entries"]] == [what] and dm["start"] == at
    plain = run_cli("recover", *IV, "--format", "json", str(root))
    problems = [o for o in _json(plain.out) if o["type"] == "problem" and o["kind"] == "consumer_stops"]
    if what == "offset_delta":
        cut = next(o for o in _json(plain.out) if o["type"] == "partition")["truncations"]
        assert [t["kind"] for t in cut] == ["invalid_offset"] and not problems, plain.out
        return
    assert [p["position"] for p in problems] == [at], plain.out
    r = run_cli("recover", *IV, "--salvage", "--backup-dir", str(tmp_path / "b"), "--format", "json", str(root))
    assert r.code == 1
    assert len(_batches(part)) == len(written) - 1
    assert run_cli("verify", str(root)).code == 0
