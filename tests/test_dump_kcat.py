"""dump-log's kcat ergonomics on the bundled fixtures and on records written here: topic and partition in
JSON, --from-time/--to-time (against lookup-time, which is ListOffsets), --count, --format-string letters
(against the JSON objects of the same records), and the schema decoders (Avro, Protobuf, JSON Schema)
with and without the schema-registry framing."""
from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import pytest

from kafkalog_formats.record_batch import RecordSpec, build_batch
from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import FIXTURES, run_cli

LOGDIR = FIXTURES / "logdir"
ORDERS = LOGDIR / "orders-0"


def records(out: str) -> list[dict]:
    return [o for o in map(json.loads, out.splitlines()) if o["type"] == "record"]


def test_every_batch_and_record_names_its_topic_and_partition():
    r = run_cli("dump-log", "--format", "json", "--deep-iteration", str(LOGDIR))
    for o in map(json.loads, r.out.splitlines()):
        if o["type"] in ("batch", "record"):
            name = Path(o["file"]).parent.name
            if name == "logdir":          # bootstrap.checkpoint: no partition directory, no topic
                assert o["topic"] is None and o["partition"] is None
            else:
                assert f"{o['topic']}-{o['partition']}" == name


def test_time_range_is_what_list_offsets_gives():
    all_recs = records(run_cli("dump-log", "--format", "json", "--deep-iteration", str(ORDERS)).out)
    ts = sorted({o["timestamp"] for o in all_recs})
    lo_t, hi_t = ts[len(ts) // 4], ts[3 * len(ts) // 4]
    lo = json.loads(run_cli("lookup-time", "--format", "json", str(ORDERS), str(lo_t)).out)["found_offset"]
    hi = json.loads(run_cli("lookup-time", "--format", "json", str(ORDERS), str(hi_t)).out)["found_offset"]
    r = run_cli("dump-log", "--format", "json", "--deep-iteration", "--from-time", str(lo_t), "--to-time",
                str(hi_t), str(ORDERS))
    assert r.code == 0
    got = [o["offset"] for o in records(r.out)]
    assert got == [o["offset"] for o in all_recs if lo <= o["offset"] < hi]


def test_time_range_with_nothing_in_it_says_so():
    r = run_cli("dump-log", "--from-time", "2100-01-01T00:00:00", str(ORDERS))
    assert r.code == 1 and "--from-time/--to-time" in r.err


def test_count_stops_after_n_records_and_n_batches():
    r = run_cli("dump-log", "--format", "json", "--deep-iteration", "--count", "7", str(LOGDIR))
    recs = records(r.out)
    assert sum(1 for o in recs if "control" not in o) == 7 and "control" not in recs[-1]   # markers shown, not counted
    r = run_cli("dump-log", "--format", "json", "-c", "3", str(LOGDIR))
    assert sum(1 for o in map(json.loads, r.out.splitlines()) if o["type"] == "batch") == 3


def test_format_string_letters_match_the_json_records():
    fmt = r"%t|%p|%o|%T|%K|%S|%k|%s|%h\n"
    raw = run_cli("dump-log", "--format-string", fmt, str(ORDERS))
    assert raw.code == 0
    lines = raw.out.split("\n")[:-1]
    recs = records(run_cli("dump-log", "--format", "json", "--print-data-log", str(ORDERS)).out)
    assert len(lines) == len(recs)
    for line, o in zip(lines, recs):
        t, p, off, ts, ks, vs, key, rest = line.split("|", 7)
        assert (t, int(p), int(off), int(ts), int(ks), int(vs)) == (o["topic"], o["partition"], o["offset"],
                                                                      o["timestamp"], o["key_size"], o["value_size"])
        assert key == (o["key"] or "")
        if o["value"] is not None and "value_encoding" not in o:
            assert rest.startswith(o["value"] + "|")


def test_format_string_rejects_unknown_letters():
    r = run_cli("dump-log", "--format-string", "%z", str(ORDERS))
    assert r.code == 2 and "%z" in r.err


def _segment(tmp_path: Path, values: list[bytes]) -> Path:
    w = PartitionWriter(tmp_path / "schemas-0")
    w.append(build_batch(0, [RecordSpec(i, 1_700_000_000_000 + i, b"k", v) for i, v in enumerate(values)]))
    w.close()
    return tmp_path / "schemas-0" / "00000000000000000000.log"


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + struct.pack(">i", schema_id) + body


def test_avro_values_framed_and_plain(tmp_path):
    fastavro = pytest.importorskip("fastavro")
    schema = {"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
        {"name": "blob", "type": "bytes"}, {"name": "price", "type": ["null", "double"]}]}
    (tmp_path / "order.avsc").write_text(json.dumps(schema))
    parsed = fastavro.parse_schema(schema)
    values = [{"id": 1, "item": "pen", "blob": b"\x00\xff", "price": 1.5}, {"id": 2, "item": "ink", "blob": b"",
                                                                             "price": None}]

    def enc(v):
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed, v)
        return b.getvalue()
    log = _segment(tmp_path, [framed(7, enc(values[0])), enc(values[1]), b"\x02"])
    r = run_cli("dump-log", "--format", "json", "--value-schema", str(tmp_path / "order.avsc"), str(log))
    got = records(r.out)
    import base64
    assert got[0]["value"] == dict(values[0], blob=base64.b64encode(values[0]["blob"]).decode())
    assert got[1]["value"] == dict(values[1], blob="")
    assert "decode_error" in got[2] and r.code == 1


def test_json_schema_validates(tmp_path):
    pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    (tmp_path / "v.json").write_text(json.dumps(schema))
    log = _segment(tmp_path, [framed(3, b'{"n": 5}'), b'{"n": "x"}'])
    r = run_cli("dump-log", "--format", "json", "--value-schema", str(tmp_path / "v.json"), str(log))
    got = records(r.out)
    assert got[0]["value"] == {"n": 5}
    assert "does not match" in got[1]["decode_error"] and r.code == 1


def test_protobuf_descriptor_set_with_message_indexes(tmp_path):
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fd = descriptor_pb2.FileDescriptorProto(name="shop.proto", package="shop", syntax="proto3")
    order = fd.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    other = fd.message_type.add(name="Refund")
    other.field.add(name="amount", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    fds = descriptor_pb2.FileDescriptorSet(file=[fd])
    (tmp_path / "shop.desc").write_bytes(fds.SerializeToString())
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    cls = lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
    o = cls("shop.Order")(id=42).SerializeToString()
    ln = cls("shop.Order.Line")(sku="A-1").SerializeToString()
    rf = cls("shop.Refund")(amount=-3).SerializeToString()
    # message indexes (zig-zag varints): [] = first message; [1] = Refund; [0, 0] = Order.Line
    values = [framed(1, b"\x00" + o), framed(1, b"\x02\x02" + rf), framed(1, b"\x04\x00\x00" + ln), o]
    log = _segment(tmp_path, values)
    r = run_cli("dump-log", "--format", "json", "--value-schema", str(tmp_path / "shop.desc"), str(log))
    assert [x["value"] for x in records(r.out)] == [{"id": "42"}, {"amount": -3}, {"sku": "A-1"}, {"id": "42"}]
    r = run_cli("dump-log", "--format", "json", "--value-schema", f"{tmp_path / 'shop.desc'}#shop.Refund",
                str(_segment(tmp_path / "b", [rf])))
    assert records(r.out)[0]["value"] == {"amount": -3}


def test_schema_file_problems_are_usage_errors(tmp_path):
    (tmp_path / "x.txt").write_text("{}")
    r = run_cli("dump-log", "--value-schema", str(tmp_path / "x.txt"), str(ORDERS))
    assert r.code == 2 and ".avsc" in r.err
    r = run_cli("dump-log", "--value-schema", str(tmp_path / "missing.avsc"), str(ORDERS))
    assert r.code == 2 and "no such file" in r.err
