"""dump-log on the generated fixtures: every record read back equals what an independent reader
(kafka-python) sees in the same bytes; JSON objects carry the documented fields; every damaged copy
gives the documented problem kinds, positions and exit status, never a traceback."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli

LOGDIR = FIXTURES / "logdir"
DAMAGED = FIXTURES / "damaged"

BATCH_FIELDS = {"type", "file", "topic", "partition", "position", "base_offset", "last_offset", "count", "size", "magic", "codec",
                "crc", "crc_valid", "attributes", "timestamp_type", "base_timestamp", "max_timestamp",
                "producer_id", "producer_epoch", "base_sequence", "last_sequence", "partition_leader_epoch",
                "is_transactional", "is_control", "delete_horizon_ms"}
RECORD_FIELDS = {"type", "topic", "partition", "offset", "timestamp", "key_size", "value_size", "sequence", "headers"}


def _json(*args) -> tuple[int, list[dict]]:
    r = run_cli("dump-log", "--format", "json", *args)
    return r.code, [json.loads(line) for line in r.out.splitlines()]


def _verify_code(path) -> int:
    return run_cli("verify", str(path)).code


def _kafka_python_records(log: Path) -> list[tuple]:
    from kafka.record.memory_records import MemoryRecords
    mr = MemoryRecords(log.read_bytes())
    out = []
    while (batch := mr.next_batch()) is not None:
        for rec in batch:
            if getattr(batch, "is_control_batch", False):
                continue
            headers = [(k, v) for k, v in rec.headers] if hasattr(rec, "headers") else []
            ts = -1 if rec.timestamp is None else rec.timestamp     # kafka-python: None for magic 0
            out.append((rec.offset, ts, rec.key, rec.value, headers))
    return out


@pytest.fixture(scope="module")
def logdir_dump():
    code, objs = _json("--print-data-log", "--key-decoder", "base64", "--value-decoder", "base64", str(LOGDIR))
    return code, objs


def test_fixture_logdir_dumps_without_problem(logdir_dump):
    code, objs = logdir_dump
    assert [o for o in objs if o["type"] == "problem"] == []
    assert code == 0


def test_fixture_covers_what_the_issue_asks_for(logdir_dump):
    _code, objs = logdir_dump
    batches = [o for o in objs if o["type"] == "batch"]
    records = [o for o in objs if o["type"] == "record"]
    assert {b["codec"] for b in batches} == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert {b["magic"] for b in batches} == {0, 1, 2}
    assert {(b["magic"], b["codec"]) for b in batches if b["magic"] < 2} >= {(0, "gzip"), (1, "lz4"), (0, "snappy")}
    assert any(r["headers"] for r in records)
    data = [r for r in records if "control" not in r]
    assert any(r["value"] is None and r["key"] is not None for r in data)          # tombstones
    controls = {r["control"]["type"] for r in records if "control" in r}
    assert {"COMMIT", "ABORT", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"} <= controls
    assert any(b["delete_horizon_ms"] is not None for b in batches)
    assert any(b["count"] == 0 for b in batches)                                 # empty batch
    assert any(b["timestamp_type"] == "LogAppendTime" for b in batches)
    files = {Path(o["file"]).name for o in objs if o["type"] == "file"}
    assert any(f.endswith(".txnindex") for f in files) and any(f.endswith(".checkpoint") for f in files)
    assert sum(1 for o in objs if o["type"] == "file" and o["file"].endswith(".log")
               and "orders-0" in o["file"]) >= 3


def test_json_objects_carry_the_documented_fields(logdir_dump):
    _code, objs = logdir_dump
    for o in objs:
        if o["type"] == "batch":
            assert set(o) == BATCH_FIELDS
            assert o["codec"] in {"none", "gzip", "snappy", "lz4", "zstd"}
            assert o["timestamp_type"] in {"CreateTime", "LogAppendTime", "NoTimestampType"}
            assert 0 <= o["crc"] < 2 ** 32
            assert (o["count"] is None) == (o["magic"] < 2)
        elif o["type"] == "record":
            assert RECORD_FIELDS <= set(o)
            assert ("key" in o and "value" in o) != ("control" in o)
            for h in o["headers"]:
                assert set(h) >= {"key", "value"}


@pytest.mark.parametrize("log", sorted(LOGDIR.glob("*/*.log")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_records_equal_an_independent_reader(log, logdir_dump):
    _code, objs = logdir_dump
    ours = [(o["offset"], o["timestamp"], o["key"], o["value"],
             [(h["key"], h["value"]) for h in o["headers"]])
            for o in objs if o["type"] == "record" and o["file"] == str(log) and "control" not in o]
    b64 = lambda v: None if v is None else base64.b64encode(v).decode()
    theirs = [(off, ts, b64(k), b64(v), [(hk, b64(hv)) for hk, hv in hs])
              for off, ts, k, v, hs in _kafka_python_records(log)]
    assert ours == theirs
    assert ours or log.stat().st_size == 0 or "__cluster_metadata" in str(log) or "compacted" in str(log)


def test_text_and_json_agree_on_batches(logdir_dump):
    _code, objs = logdir_dump
    r = run_cli("dump-log", str(LOGDIR))
    text_batches = [ln for ln in r.out.splitlines()
                    if ln.startswith(("baseOffset: ", "offset: ")) and " magic: " in ln]
    assert len(text_batches) == sum(1 for o in objs if o["type"] == "batch")


def test_value_decoders(tmp_path):
    f = LOGDIR / "orders-0" / "00000000000000000000.log"
    code, objs = _json("--print-data-log", "--value-decoder", "json", "--key-decoder", "hex", str(f))
    rec = next(o for o in objs if o["type"] == "record" and o["value"] is not None)
    assert isinstance(rec["value"], dict) and set(rec["value"]) == {"id", "amount"}
    assert bytes.fromhex(rec["key"]).startswith(b"order-")
    # binary header values are not valid UTF-8: JSON output stays lossless through base64
    code, objs = _json("--print-data-log", str(f))
    trace = [h for o in objs if o["type"] == "record" for h in o["headers"] if h["key"] == "trace"]
    assert trace and all(("value_encoding" in h) or isinstance(h["value"], str) for h in trace)
    r = run_cli("dump-log", "--print-data-log", "--value-decoder", "none", str(f))
    assert "payload:" not in r.out and "key: order-" in r.out


def test_offset_range(tmp_path):
    code, objs = _json("--deep-iteration", "--from-offset", "30", "--to-offset", "40", str(LOGDIR / "orders-0"))
    offsets = [o["offset"] for o in objs if o["type"] == "record"]
    assert offsets == list(range(30, 41))


# --- damaged fixtures -----------------------------------------------------------------------------

def _problems(objs):
    return [(Path(o["file"]).name, o["kind"], o["position"]) for o in objs if o["type"] == "problem"]


def test_truncated_last_batch():
    code, objs = _json(str(DAMAGED / "truncated-last-batch"))
    probs = _problems(objs)
    assert ("00000000000000000078.log", "trailing_bytes", 925) in probs
    # the active segment of a log directory without a clean-shutdown marker: Kafka's next start cuts the
    # torn tail (verify: a warning), and Kafka's tool prints the same and exits 0
    assert code == 0 == _verify_code(DAMAGED / "truncated-last-batch")


def test_flipped_crc_byte():
    code, objs = _json(str(DAMAGED / "flipped-crc-byte"))
    assert ("00000000000000000000.log", "crc_mismatch", 271) in _problems(objs)
    bad = [o for o in objs if o["type"] == "batch" and not o["crc_valid"]]
    assert [(Path(b["file"]).name, b["position"]) for b in bad] == [("00000000000000000000.log", 271)]
    assert code == 1


def test_zero_tail():
    code, objs = _json(str(DAMAGED / "zero-tail"))
    assert ("00000000000000000078.log", "corrupt_size", 1046) in _problems(objs)
    assert code == 0 == _verify_code(DAMAGED / "zero-tail")           # a tail Kafka's next start cuts


def test_untrimmed_indexes_are_normal_for_the_dump_tool():
    code, objs = _json(str(DAMAGED / "untrimmed-indexes"))
    assert _problems(objs) == [] and code == 0
    entries = [o for o in objs if o["type"] == "index_entry" and o["file"].endswith("78.index")]
    assert 0 < len(entries) < 1024 // 8      # stops at the zero tail


def test_orphan_index():
    code, objs = _json(str(DAMAGED / "orphan-index"))
    assert ("00000000000000099999.index", "orphan_index", None) in _problems(objs)
    assert code == 0 == _verify_code(DAMAGED / "orphan-index")        # Kafka's loader deletes it: a warning


def test_leftover_files():
    code, objs = _json(str(DAMAGED / "leftover-files"))
    kinds = {k for _f, k, _p in _problems(objs)}
    assert {"leftover_cleaned", "leftover_swap", "leftover_deleted"} <= kinds
    assert code == 0 == _verify_code(DAMAGED / "leftover-files")      # completed or removed on load: warnings


def test_bad_indexes_are_reported_as_kafka_does():
    r = run_cli("dump-log", str(DAMAGED / "bad-indexes" / "orders-0"))
    assert "Mismatches in :" in r.err and "Found timestamp mismatch in :" in r.err
    # entries a lookup still finds its way by (verify: information): Kafka's tool exits 0 on them too
    assert r.code == 0 == _verify_code(DAMAGED / "bad-indexes" / "orders-0")
    assert r.err.endswith("kafkalog: not an error by verify's grading (healthy brokers write this): exit 0\n")
    code, objs = _json(str(DAMAGED / "bad-indexes"))
    assert any(o["type"] == "index_mismatch" for o in objs)
    assert any(o["type"] == "timestamp_mismatch" for o in objs)


def test_truncated_files_of_every_kind_never_crash(tmp_path):
    """Cut every fixture file at several points: the dump reports, it never raises."""
    import shutil
    for src in sorted((LOGDIR / "payments-0").iterdir()) + sorted((LOGDIR / "legacy-0").glob("*.log")):
        data = src.read_bytes()
        for cut in {1, 7, 17, 18, 60, 61, len(data) // 2, len(data) - 1}:
            if cut >= len(data):
                continue
            d = tmp_path / f"{src.parent.name}-{src.name}-{cut}"
            d.mkdir()
            for comp in src.parent.iterdir():
                shutil.copy(comp, d / comp.name)
            (d / src.name).write_bytes(data[:cut])
            r = run_cli("dump-log", "--deep-iteration", str(d / src.name))
            assert r.code in (0, 1)


def test_json_lines_encoder_falls_back_for_what_orjson_refuses():
    from kafkalog_cli.render.json_line import dumps as _dumps
    obj = {"offset": 5, "value": {"n": 2 ** 70, "s": "é"}, "key": None}
    assert json.loads(_dumps(obj)) == obj and "é" in _dumps(obj)
    assert _dumps({"a": [1, 2]}) == '{"a":[1,2]}'


def _entries(path: Path, fmt: str) -> list[tuple]:
    return list(__import__("struct").iter_unpack(fmt, path.read_bytes()))


def test_end_of_run_reports_in_dumplogsegments_order(tmp_path):
    """DumpLogSegments.main / TimeIndexDumpErrors.printErrors (3.x, 4.0): offset-index mismatches newest
    first (a Scala List built by prepending), timestamp mismatches and out-of-order timestamps oldest first
    (ArrayBuffers appended to), and "The following indexed offsets are not found in the log." once for
    every time index that has such entries."""
    import shutil
    import struct
    from kafkalog_formats.message_set import BatchReader
    p = tmp_path / "orders-0"
    shutil.copytree(LOGDIR / "orders-0", p)
    seg0, seg25, seg51 = (p / f"{b:020d}.timeindex" for b in (0, 25, 51))
    # two timestamp mismatches and one out-of-order entry in segment 0
    e = _entries(seg0, ">qi")
    assert len(e) >= 3
    raw = bytearray(seg0.read_bytes())
    struct.pack_into(">qi", raw, 0, e[0][0] + 1, e[0][1])
    struct.pack_into(">qi", raw, 12, e[1][0] + 2, e[1][1])
    struct.pack_into(">qi", raw, 24, e[0][0] - 5, e[2][1])          # below slot 1's timestamp
    seg0.write_bytes(bytes(raw))
    # an offset that is not a batch's last offset in two other time indexes
    for f in (seg25, seg51):
        ts, _rel = _entries(f, ">qi")[0]
        inside = next(b for b in BatchReader(f.with_suffix(".log").read_bytes()) if b.last_offset > b.base_offset)
        raw = bytearray(f.read_bytes())
        struct.pack_into(">qi", raw, 0, ts, inside.base_offset - int(f.stem))
        f.write_bytes(bytes(raw))
    # two offset-index mismatches in segment 0
    idx = p / f"{0:020d}.index"
    oe = _entries(idx, ">ii")
    raw = bytearray(idx.read_bytes())
    for slot in (0, 1):
        struct.pack_into(">ii", raw, slot * 8, oe[slot][0] - 1, oe[slot][1])
    idx.write_bytes(bytes(raw))
    r = run_cli("dump-log", "--verify-index-only", str(idx), str(seg0), str(seg25), str(seg51))
    lines = r.err.splitlines()
    assert lines[:3] == [f"Mismatches in :{idx.resolve()}", f"  Index offset: {oe[1][0] - 1}, log offset: {oe[1][0]}",
                         f"  Index offset: {oe[0][0] - 1}, log offset: {oe[0][0]}"]
    log_max = {}
    for b in BatchReader((p / f"{0:020d}.log").read_bytes()):
        log_max[b.last_offset] = max(rec.timestamp for rec in b.records())
    assert lines[3:6] == [f"Found timestamp mismatch in :{seg0.resolve()}",
                          f"  Index timestamp: {e[0][0] + 1}, log timestamp: {log_max[e[0][1]]}",
                          f"  Index timestamp: {e[1][0] + 2}, log timestamp: {log_max[e[1][1]]}"]
    assert f"  Index timestamp: {e[0][0] - 5}, Previously indexed timestamp: {e[1][0] + 2}" in lines
    assert lines.index(f"Found out of order timestamp in :{seg0.resolve()}") > 5
    assert lines.count("The following indexed offsets are not found in the log.") == 2


def test_offset_index_sanity_message_is_the_java_one(tmp_path):
    """OffsetIndex.sanityCheck of 3.5+ (Java): the path without parentheses, no full stop."""
    import shutil
    import struct
    p = tmp_path / "orders-0"
    shutil.copytree(LOGDIR / "orders-0", p)
    idx = p / f"{25:020d}.index"
    idx.write_bytes(idx.read_bytes() + struct.pack(">ii", -3, 9))
    r = run_cli("dump-log", "--index-sanity-check", str(idx))
    assert (f"Corrupt index found, index file {idx.resolve()} has non-zero size but the last offset is 22 "
            "which is less than the base offset 25") in r.err
