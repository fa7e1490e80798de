"""DEL (0x7f) in a name or a value is written ``\\u007f`` by every JSON lines writer (issue 34, list 10): JSON
leaves it raw and a terminal acts on it. The Python writers end with ``names.json_text``, the compiled ones
with ``escape_del`` (render/_native_c/render.c); both give the same bytes, and a parser reads the same
value back. Kafka-compatible text output keeps Kafka's bytes (DumpLogSegments prints DEL as it is).

Each test fails on the code before the fix: the group id, the key, the value, the header and the
partition directory's name reached the JSON lines with a raw DEL byte.
"""
from __future__ import annotations

import io
import json
import shutil

import pytest

from kafkalog_formats import group_coordinator as gc
from kafkalog_formats import native
from kafkalog_formats.record_batch import RecordSpec, build_batch

from conftest import FIXTURES, run_cli
from views_data import NOW, T0, Partition, _checkpoints

DEL = "\x7f"


def _no_raw_del(out: str) -> list[dict]:
    assert DEL not in out and "\\u007f" in out
    return [json.loads(x) for x in out.splitlines()]


def _offsets_logdir(root):
    logdir = root / "logdir"
    logdir.mkdir(parents=True)
    shutil.copy(FIXTURES / "logdir" / "meta.properties", logdir)
    p = Partition(logdir, "__consumer_offsets", 0)
    key = gc.build_key(1, {"group": f"g{DEL}x", "topic": f"t{DEL}", "partition": 0})
    value = gc.build_value(1, {"offset": 5, "leaderEpoch": 0, "metadata": f"m{DEL}", "commitTimestamp": T0}, 3)
    p.records([(T0, key, value)])
    p.close()
    _checkpoints(logdir, {("__consumer_offsets", 0): p.next}, None)
    return logdir


def test_consumer_groups_json_escapes_del_in_a_group_id(tmp_path):
    logdir = _offsets_logdir(tmp_path)
    r = run_cli("consumer-groups", "--format", "json", "--now", str(NOW), str(logdir))
    assert r.code == 0, r.err
    objs = _no_raw_del(r.out)
    assert {o["group"] for o in objs if o["type"] == "group"} == {f"g{DEL}x"}
    (off,) = [o for o in objs if o["type"] == "offset"]
    assert off["topic"] == f"t{DEL}" and off["metadata"] == f"m{DEL}"


def test_dump_log_json_of_a_coordinator_record_escapes_del(tmp_path):
    """The compiled coordinator decoder (``--decoder offsets``): its texts go into the JSON lines as they are."""
    logdir = _offsets_logdir(tmp_path)
    seg = logdir / "__consumer_offsets-0" / "00000000000000000000.log"
    r = run_cli("dump-log", "--decoder", "offsets", "--print-data-log", "--format", "json", str(seg))
    assert r.code == 0, r.err
    (rec,) = [o for o in _no_raw_del(r.out) if o["type"] == "record"]
    assert f"g{DEL}x" in json.dumps(rec, ensure_ascii=False)


def _segment_with_del() -> bytes:
    """DEL, and the other characters ``names.json_text`` escapes (C1, invisible format characters), in every
    field a JSON line writes from the bytes: key, value, header key and value."""
    return build_batch(0, [RecordSpec(0, T0, f"k{DEL}".encode(), f"v{DEL}w".encode(), ((f"h{DEL}".encode(),
                                                                                        f"{DEL}".encode()),)),
                           RecordSpec(1, T0 + 1, None, DEL.encode() * 9, ()),
                           RecordSpec(2, T0 + 2, "a\u0085\u009f\u00ad\u061c\u180e é\u00a0\u2010\ufffd".encode(),
                                      "\u200b\u202e\u2066\ufeff\ufffb".encode(),
                                      (("\u200f".encode(), "x\u0080".encode()),))])


@pytest.mark.skipif(native.ext is None, reason=f"native path not active: {native.reason}")
@pytest.mark.parametrize("value_decoder", ["string", "hex", "base64"])
def test_compiled_and_pure_json_lines_escape_del_alike(value_decoder):
    """The parity of the two JSON lines writers on a key, a value, a header and a file name holding DEL."""
    from kafkalog_formats import columns as C
    from kafkalog_formats.message_set import BatchReader

    from kafkalog_cli.engine.dump import BatchItem, RecordItem
    from kafkalog_cli.render import jsonl
    from kafkalog_cli.render import native_lines as nl
    data = _segment_with_del()
    f = f"/tmp/d{DEL}/00000000000000000000.log"
    s = C.scan(data, 0, None, stop_bad_crc=True, stop_control=True)
    o = io.StringIO()
    jr = jsonl.JsonRenderer(o, "string", value_decoder, True)
    for b in BatchReader(data, 0, s.stop):
        jr.emit(BatchItem(f, b, [RecordItem(r, None) for r in b.records()]))
    out = bytearray(b"before\x7f")              # what the bytearray held stays as it was
    nl.render_json(s, out, file_json=jsonl.file_fields_json(f), deep=True, print_data=True,
                   key_decoder="string", value_decoder=value_decoder)
    assert out[:7] == b"before\x7f"
    assert out[7:].decode("utf-8") == o.getvalue()
    objs = _no_raw_del(o.getvalue())
    recs = [x for x in objs if x["type"] == "record"]
    assert recs[0]["key"] == f"k{DEL}" and recs[0]["headers"][0]["key"] == f"h{DEL}"
    assert recs[2]["key"] == "a\u0085\u009f\u00ad\u061c\u180e é\u00a0\u2010\ufffd"
    assert recs[2]["headers"][0]["key"] == "\u200f"
    assert objs[0]["file"] == f
    # the C1 and invisible characters escaped, the printable ones around them (é, U+00A0, U+2010, U+FFFD) kept
    assert '"a\\u0085\\u009f\\u00ad\\u061c\\u180e é\u00a0\u2010\ufffd"' in o.getvalue()


def test_dump_log_json_through_the_file_descriptor_escapes_del(tmp_path):
    """End to end through the compiled writer on the descriptor (a subprocess), flushed in its 1 MiB chunks."""
    import subprocess
    import sys

    from conftest import REPO
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(_segment_with_del())
    done = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump-log", "--print-data-log", "--format", "json",
                           str(d / "00000000000000000000.log")], capture_output=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    objs = _no_raw_del(done.stdout.decode())
    assert [o["value"] for o in objs if o["type"] == "record"] == [f"v{DEL}w", DEL * 9, "\u200b\u202e\u2066\ufeff\ufffb"]
    text = subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump-log", "--print-data-log",
                           str(d / "00000000000000000000.log")], capture_output=True, cwd=REPO, timeout=120)
    assert f"payload: v{DEL}w".encode() in text.stdout          # Kafka's text: its own bytes


def test_report_writers_escape_del_in_a_partition_name(tmp_path):
    """verify, describe and retain name a partition directory ``a<DEL>b-0``: escaped, read back exactly."""
    from conftest import copy_logdir
    logdir = copy_logdir(tmp_path / "logdir")
    (logdir / "orders-0").rename(logdir / f"a{DEL}b-0")
    v = run_cli("verify", "--format", "json", str(logdir))
    assert any(o.get("group", "").endswith(f"a{DEL}b-0") for o in _no_raw_del(v.out))
    d = run_cli("describe", "--format", "json", str(logdir))
    assert f"a{DEL}b" in {o.get("topic") for o in _no_raw_del(d.out)}
    r = run_cli("retain", "--dry-run", "--format", "json", "--partition", f"a{DEL}b-0", str(logdir))
    assert any(o.get("partition") == f"a{DEL}b-0" for o in _no_raw_del(r.out)), r.err
