"""Kafka's spellings on dump-log and the lookups (issue 15, items 8 and 6): ``--key-decoder-class``/
``--value-decoder-class`` with Kafka's decoder classes (``DumpLogSegments.convertDeprecatedDecoderClass`` 3.8,
``org.apache.kafka.tools.api`` 3.8+) and plug-ins, ``dump-log --version``, the record decoders on
``lookup-offset``/``lookup-time``, Kafka's special timestamps (``ListOffsetsRequest``) and readable times.

Expected values are computed here from the bytes written (``int.from_bytes`` is what Java's
``ByteBuffer.getInt``/``getLong`` return: big-endian, signed), not copied from kafkalog's output."""
from __future__ import annotations

import json
import struct
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from kafkalog_formats.record_batch import RecordSpec, build_batch

from kafkalog_cli.repair.log_writer import PartitionWriter

from conftest import CORPUS, FIXTURES, needs_corpus, run_cli

T0 = 1700000000000
ORDERS = FIXTURES / "logdir" / "orders-0"
PACKAGES = ("kafka.serializer.", "org.apache.kafka.tools.api.", "")


def _partition(tmp_path: Path, records: list[tuple], name: str = "numbers-0") -> Path:
    d = tmp_path / name
    w = PartitionWriter(d)
    w.append(build_batch(0, [RecordSpec(i, T0 + i, k, v) for i, (k, v) in enumerate(records)]))
    w.close()
    return d


def _records(*args) -> tuple[int, list[dict]]:
    r = run_cli("dump-log", "--format", "json", *args)
    return r.code, [o for o in map(json.loads, r.out.splitlines()) if o["type"] == "record"]


def _data_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("| offset:")]


# --- --key-decoder-class / --value-decoder-class --------------------------------------------------------

@pytest.mark.parametrize("package", PACKAGES)
def test_integer_and_long_decoders_read_big_endian_signed_as_java(tmp_path, package):
    keys = [struct.pack(">i", v) for v in (0, 1, -1, 2**31 - 1, -2**31)]
    values = [struct.pack(">q", v) for v in (0, 42, -42, 2**63 - 1, -2**63)]
    d = _partition(tmp_path, list(zip(keys, values)))
    code, recs = _records(f"--key-decoder-class={package}IntegerDecoder",
                          f"--value-decoder-class={package}LongDecoder", str(d))
    assert code == 0
    assert [(o["key"], o["value"]) for o in recs] == [
        (int.from_bytes(k, "big", signed=True), int.from_bytes(v, "big", signed=True)) for k, v in zip(keys, values)]
    text = run_cli("dump-log", "--key-decoder-class", f"{package}IntegerDecoder", "--value-decoder-class",
                   f"{package}LongDecoder", str(d))
    assert _data_lines(text.out)[1].endswith(" key: 1 payload: 42")          # Integer.toString, Long.toString


def test_integer_decoder_reads_the_first_four_bytes_and_refuses_fewer(tmp_path):
    """getInt() on a longer array reads its first 4 bytes; on a shorter one Java throws (Kafka's tool dies):
    here an error marker, a problem naming the record, and exit status 1."""
    d = _partition(tmp_path, [(b"\x00\x00\x01\x00rest", b"v"), (b"\x01\x02", b"w")])
    r = run_cli("dump-log", "--key-decoder-class", "IntegerDecoder", str(d))
    lines = _data_lines(r.out)
    assert lines[0].endswith(" key: 256 payload: v")
    assert "Error at offset 1, skipping. key: IntegerDecoder needs 4 bytes, the field has 2" in lines[1]
    assert r.code == 1 and "offset 1: key: IntegerDecoder needs 4 bytes" in r.err


@pytest.mark.parametrize("package", PACKAGES)
def test_string_and_default_decoders_are_the_string_and_hex_decoders(package):
    seg = str(ORDERS / "00000000000000000025.log")
    assert (run_cli("dump-log", f"--key-decoder-class={package}StringDecoder", seg).out
            == run_cli("dump-log", "--key-decoder", "string", seg).out)
    assert (run_cli("dump-log", f"--value-decoder-class={package}DefaultDecoder", seg).out
            == run_cli("dump-log", "--value-decoder", "hex", seg).out)


def test_a_bare_decoder_class_option_is_kafkas_string_decoder():
    """Kafka declares both options withOptionalArg, defaulting to StringDecoder; either one given implies
    --print-data-log (DumpLogSegmentsOptions.shouldPrintDataLog)."""
    seg = str(ORDERS / "00000000000000000025.log")
    bare = run_cli("dump-log", seg, "--value-decoder-class")
    assert bare.code == 0 and bare.out == run_cli("dump-log", "--print-data-log", seg).out


def test_unknown_java_classes_and_swallowed_paths_are_clear_usage_errors():
    seg = str(ORDERS / "00000000000000000025.log")
    r = run_cli("dump-log", "--value-decoder-class", "io.confluent.kafka.serializers.KafkaAvroDecoder", seg)
    assert r.code == 2 and "is a Java class kafkalog cannot load" in r.err and "MODULE:FUNCTION" in r.err
    r = run_cli("dump-log", "--value-decoder-class", seg)              # the path was taken as the class
    assert r.code == 2 and "is a file, not a decoder class" in r.err
    r = run_cli("dump-log", "--key-decoder", "hex", "--key-decoder-class", "StringDecoder", seg)
    assert r.code == 2 and "give one" in r.err


def test_a_python_function_is_a_decoder_class(tmp_path, monkeypatch):
    (tmp_path / "kl_bytes_plugin.py").write_text(
        "def reverse(data):\n    return data[::-1].decode()\n\n"
        "def broken(data):\n    raise RuntimeError('no schema for ' + data.decode())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    d = _partition(tmp_path, [(b"abc", b"xyz")])
    code, recs = _records("--value-decoder-class", "kl_bytes_plugin:reverse", str(d))
    assert code == 0 and (recs[0]["key"], recs[0]["value"]) == ("abc", "zyx")
    r = run_cli("dump-log", "--value-decoder-class", "kl_bytes_plugin:broken", str(d))
    assert r.code == 1 and "value: RuntimeError: no schema for xyz" in r.err
    sys.modules.pop("kl_bytes_plugin", None)


def test_internal_topic_flags_take_precedence_over_decoder_classes_and_auto_keeps_them_for_other_topics(tmp_path):
    """DumpLogSegmentsOptions.messageParser: the internal-topic flags first, then the classes; with
    --decoder auto the classes decode the topics that are not internal."""
    d = _partition(tmp_path, [(struct.pack(">i", 7), b"v")])
    code, recs = _records("--decoder", "auto", "--key-decoder-class", "IntegerDecoder", str(d))
    assert code == 0 and recs[0]["key"] == 7
    offsets = FIXTURES / "logdir" / "__consumer_offsets-0"
    a = run_cli("dump-log", "--offsets-decoder", "--key-decoder-class", "IntegerDecoder", str(offsets))
    assert a.out == run_cli("dump-log", "--offsets-decoder", str(offsets)).out


def test_dump_log_version():
    r = run_cli("dump-log", "--version")
    assert r.code == 0 and r.out == run_cli("--version").out and r.out.startswith("kafkalog, version ")


# --- lookups: decoders, special timestamps, log directories ----------------------------------------------

def test_lookups_decode_internal_topics_by_default():
    """A __consumer_offsets record is printed decoded (as dump-log --decoder auto prints it), never as
    raw control bytes on the terminal; --decoder string gives the raw text back."""
    part = FIXTURES / "logdir" / "__consumer_offsets-0"
    dumped = run_cli("dump-log", "--decoder", "auto", "--format", "json", str(part)).out
    rec = next(o for o in map(json.loads, dumped.splitlines()) if o["type"] == "record" and "control" not in o)
    r = run_cli("lookup-offset", "--print-data-log", "--format", "json", str(part), str(rec["offset"]))
    got = json.loads(r.out)["record"]
    assert r.code == 0 and (got["decoder"], got["key"], got["value"]) == ("offsets", rec["key"], rec["value"])
    text = run_cli("lookup-offset", "--print-data-log", str(part), str(rec["offset"])).out
    assert not any(ord(c) < 32 for c in text.replace("\n", ""))
    raw = run_cli("lookup-offset", "--print-data-log", "--decoder", "string", str(part), str(rec["offset"])).out
    assert any(ord(c) < 32 for c in raw.replace("\n", ""))


def test_lookups_take_the_kafka_decoder_flags_and_classes():
    part = FIXTURES / "logdir" / "__consumer_offsets-0"
    flags = run_cli("lookup-offset", "--offsets-decoder", str(part), "0")
    assert flags.code == 0 and '"data":' in flags.out                    # the flag implies --print-data-log
    r = run_cli("lookup-offset", "--value-decoder-class", "DefaultDecoder", str(ORDERS), "60")
    value = next(o for o in map(json.loads, run_cli("dump-log", "--format", "json", "--deep-iteration",
                                                    "--value-decoder", "hex", str(ORDERS)).out.splitlines())
                 if o["type"] == "record" and o["offset"] == 60)["value"]
    assert f" payload: {value}" in r.out


@pytest.mark.parametrize("value", ["-4", "-5", "-7", "-100"])
def test_lookup_time_refuses_negative_values_other_than_kafkas_specials(value):
    r = run_cli("lookup-time", str(ORDERS), value)
    assert r.code == 2
    assert "-2 (earliest), -1 (latest) or -3 (max-timestamp)" in r.err
    if value in ("-4", "-5"):
        assert "tiered storage" in r.err


def test_lookup_time_refuses_times_before_1970_and_accepts_the_specials():
    r = run_cli("lookup-time", str(ORDERS), "1969-12-31T23:59:59Z")
    assert r.code == 2 and "before 1970-01-01" in r.err
    for special in ("-1", "-2", "-3", "latest", "earliest", "max-timestamp"):
        assert run_cli("lookup-time", str(ORDERS), special).code == 0, special


def test_lookup_on_a_log_directory_names_a_partition_to_use():
    logdir = FIXTURES / "logdir"
    for cmd, arg in (("lookup-offset", "3"), ("lookup-time", "earliest")):
        r = run_cli(cmd, str(logdir), arg)
        assert r.code == 2 and f"{logdir} is a log directory" in r.err
        suggestion = r.err.split("e.g. ")[1].split("\n")[0].split()
        assert suggestion[:2] == ["kafkalog", cmd] and Path(suggestion[2]).parent == logdir
        assert run_cli(*suggestion[1:]).code in (0, 1)                   # the suggestion runs


def test_lookup_times_are_readable():
    ms = T0 + 300
    iso = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    r = run_cli("lookup-time", str(FIXTURES / "logdir" / "payments-0"), iso)
    assert r.out.splitlines()[0] == f"timestamp:       {iso} ({ms})"
    assert f"found:           offset 4, timestamp {iso} ({ms})" in r.out
    assert "None" not in r.out
    late = run_cli("lookup-time", str(FIXTURES / "logdir" / "payments-0"), "2030-01-01")
    assert late.code == 1 and "2030-01-01T00:00:00.000Z (1893456000000)" in late.err


@needs_corpus
def test_lookup_on_the_real_offsets_topic_prints_no_control_bytes():
    part = CORPUS / "VolodymyrZee__kafka" / "__consumer_offsets-32"
    r = run_cli("lookup-offset", "--print-data-log", str(part), "3")
    assert r.code == 0 and '"group":"my-firstd-application"' in r.out
    assert not any(ord(c) < 32 for c in r.out.replace("\n", ""))
