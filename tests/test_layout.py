"""File and directory names of docs/kafka-on-disk.md §4.10 and §5: each is recognised, odd ones reported."""
from __future__ import annotations

import pytest

from kafkalog_cli.engine.logdir import LogDir, dir_kind
from kafkalog_cli.engine.partition import PartitionLog
from kafkalog_cli.layout import (FileName, LoaderName, PartitionName, classify_file, java_parse_long,
                                 kafka_offset_prefix, kraft_snapshot_name, loader_name, name_problem,
                                 parse_partition_dir, segment_file_name)


@pytest.mark.parametrize("name, expected", [
    ("00000000000000000000.log", FileName("log", 0)),
    ("00000000000000001234.index", FileName("index", 1234)),
    ("00000000000000001234.timeindex", FileName("timeindex", 1234)),
    ("00000000000000001234.txnindex", FileName("txnindex", 1234)),
    ("00000000000000001234.snapshot", FileName("snapshot", 1234)),
    ("00000000000000001234.log.deleted", FileName("log", 1234, "deleted")),
    ("00000000000000001234.index.cleaned", FileName("index", 1234, "cleaned")),
    ("00000000000000001234.timeindex.swap", FileName("timeindex", 1234, "swap")),
    ("00000000000000001234.snapshot.deleted", FileName("snapshot", 1234, "deleted")),
    ("00000000000000016435-0000000008.checkpoint", FileName("kraft_snapshot", 16435, None, 8)),
    ("00000000000000016435-0000000008.checkpoint.deleted", FileName("kraft_snapshot", 16435, "deleted", 8)),
    ("00000000000000016435-0000000008.checkpoint.1b2c3d.part",
     FileName("kraft_snapshot", 16435, "part", 8)),
    ("leader-epoch-checkpoint", FileName("partition_file")),
    ("partition.metadata", FileName("partition_file")),
    ("quorum-state", FileName("partition_file")),
    ("leader-epoch-checkpoint.tmp", FileName("tmp")),
    ("1234.log", FileName("unknown")),
    ("notes.txt", FileName("unknown")),
    ("00000000000000001234", FileName("unknown")),
    # names Kafka never writes: a trailing newline, Unicode digits, 20 digits beyond a Java long
    ("00000000000000000000.log\n", FileName("unknown")),
    ("\u0660" * 20 + ".log", FileName("unknown")),
    ("99999999999999999999.log", FileName("unknown")),
    ("09223372036854775807.log", FileName("log", 2 ** 63 - 1)),
])
def test_classify_file(name, expected):
    assert classify_file(name) == expected


@pytest.mark.parametrize("name, expected", [
    ("orders-0", PartitionName("orders", 0)),
    ("my-topic-with-dashes-12", PartitionName("my-topic-with-dashes", 12)),
    ("__consumer_offsets-49", PartitionName("__consumer_offsets", 49)),
    ("vehicle.avg.speed-0", PartitionName("vehicle.avg.speed", 0)),
    ("orders-3.0123456789abcdef0123456789abcdef-delete",
     PartitionName("orders", 3, "delete", "0123456789abcdef0123456789abcdef")),
    ("orders-3.0123456789abcdef0123456789abcdef-future",
     PartitionName("orders", 3, "future", "0123456789abcdef0123456789abcdef")),
    ("orders-3.0123456789abcdef0123456789abcdef-stray",
     PartitionName("orders", 3, "stray", "0123456789abcdef0123456789abcdef")),
    ("kafka-logs", None), ("orders", None), ("-0", None), ("orders-x", None),
])
def test_parse_partition_dir(name, expected):
    assert parse_partition_dir(name) == expected


def test_names_are_20_and_10_digits():
    assert segment_file_name(42, "log") == "00000000000000000042.log"
    assert kraft_snapshot_name(16435, 8) == "00000000000000016435-0000000008.checkpoint"


def test_partition_scan_reports_odd_files(tmp_path):
    p = tmp_path / "t-0"
    p.mkdir()
    for name in ["00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
                 "00000000000000000010.log", "00000000000000000010.snapshot", "00000000000000000005.index",
                 "00000000000000000000.log.swap", "00000000000000000010.txnindex.cleaned",
                 "00000000000000000003.log.deleted", "leader-epoch-checkpoint", "core.1234"]:
        (p / name).write_bytes(b"")
    (p / "subdir").mkdir()
    log = PartitionLog.open(p)
    assert list(log.segments) == [0, 10]
    assert log.floor_segment(9).base_offset == 0 and log.floor_segment(10).base_offset == 10
    assert log.floor_segment(-1) is None and log.active_segment.base_offset == 10
    kinds = sorted((f.kind, f.file.rsplit("/", 1)[1]) for f in log.findings)
    assert kinds == [("leftover_cleaned", "00000000000000000010.txnindex.cleaned"),
                     ("leftover_deleted", "00000000000000000003.log.deleted"),
                     ("leftover_swap", "00000000000000000000.log.swap"),
                     ("orphan_index", "00000000000000000005.index"),
                     ("unknown_directory", "subdir"),
                     ("unknown_file", "core.1234")]
    assert [f.name for f in log.files_in_offset_order()] == [
        "00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex",
        "00000000000000000010.log", "00000000000000000010.snapshot"]


def test_log_dir_scan(tmp_path):
    d = tmp_path / "kafka-logs-0"          # looks like a partition name, but holds meta.properties
    d.mkdir()
    (d / "meta.properties").write_text("version=0\nbroker.id=0\n")
    (d / ".lock").write_bytes(b"")
    for name in ["b-1", "b-0", "a-10", "a-2", "a-2.0123456789abcdef0123456789abcdef-delete",
                 "remote-log-index-cache", "not_a_partition"]:
        (d / name).mkdir()
    (d / "b-0" / "00000000000000000000.log").write_bytes(b"")
    (d / "stray.bin").write_bytes(b"")
    assert dir_kind(d) == "logdir" and dir_kind(d / "b-0") == "partition" and dir_kind(tmp_path) == "container"
    ld = LogDir.open(d)
    assert [p.name for p in ld.partition_dirs] == [
        "a-2", "a-2.0123456789abcdef0123456789abcdef-delete", "a-10", "b-0", "b-1"]
    assert sorted(f.kind for f in ld.findings) == ["unknown_directory", "unknown_file"]


@pytest.mark.parametrize("text, value", [
    # Long.parseLong (java.lang.Long, radix 10): an optional sign, Character.digit digits, 64-bit range
    ("12", 12), ("+12", 12), ("-12", -12), ("00000000000000000012", 12), ("0", 0),
    ("9223372036854775807", 2 ** 63 - 1), ("-9223372036854775808", -2 ** 63),
    ("\u0661\u0662", 12),                   # ARABIC-INDIC digits: Character.digit reads them
    ("\uff11\uff12", 12),                   # FULLWIDTH digits
    ("9223372036854775808", None), ("99999999999999999999", None), ("", None), ("+", None), ("-", None),
    ("notes", None), ("1_000", None), (" 12", None), ("12 ", None), ("0x12", None), ("1e3", None),
    ("\U0001d7ce", None),                    # MATHEMATICAL BOLD DIGIT ZERO: a surrogate pair to Java's charAt
])
def test_java_parse_long(text, value):
    assert java_parse_long(text) == value


def test_kafka_offset_prefix_is_number_format_with_20_integer_digits():
    """LogFileUtils.filenamePrefixFromOffset: NumberFormat, minimum 20 integer digits, no grouping."""
    assert kafka_offset_prefix(42) == "00000000000000000042"
    assert kafka_offset_prefix(2 ** 63 - 1) == "09223372036854775807"
    assert kafka_offset_prefix(-5) == "-00000000000000000005"


@pytest.mark.parametrize("name, expected", [
    # LogLoader.removeTempFilesAndCollectSwapFiles: *.deleted deleted without parsing
    ("notes.log.deleted", LoaderName(None)),
    ("notes.cleaned", LoaderName("cleaned", None)),
    ("00000000000000000007.log.cleaned", LoaderName("cleaned", 7, True)),
    ("x.swap", LoaderName("swap", None)),                       # 3.0+: every .swap is parsed
    ("12.log.swap", LoaderName("swap", 12, False, "log")),
    ("00000000000000000012.index.swap", LoaderName("swap", 12, True, "index")),
    # loadSegmentFiles: isIndexFile / isLogFile (the text before the *first* '.')
    ("notes.timeindex", LoaderName("index", None)),
    ("12.5.log", LoaderName("log", 12)),
    ("00000000000000000000.log.bak.log", LoaderName("log", 0)),
    # ProducerStateManager.listSnapshotFiles → SnapshotFile → offsetFromFileName
    ("old.snapshot", LoaderName("snapshot", None)),
    ("00000000000000000025.snapshot", LoaderName("snapshot", 25, True)),
    # never parsed
    ("notes.txt", LoaderName(None)), ("leader-epoch-checkpoint", LoaderName(None)),
    ("00000000000000000010-0000000001.checkpoint", LoaderName(None)),
    ("00000000000000000000.log\n", LoaderName(None)),          # does not end with ".log"
])
def test_loader_name(name, expected):
    assert loader_name(name) == expected


def test_name_problems_in_kafkas_terms():
    """What LogLoader / ProducerStateManager do with each name (3.7.0 core/.../LogLoader.scala, 3.9.2 and
    4.3.1 storage/.../LogLoader.java; Scala Log.scala 2.0-2.8): an unparsable offset fails the load
    (NumberFormatException → LogManager.loadLogs rethrows, the broker stops); a .log of offset N not in the
    20-digit form opens LogSegment.open(dir, N), which creates an empty 000...N.log."""
    names = {"00000000000000000000.log", "00000000000000000030.log", "notes.log", "12.log", "30.log",
             "12.index", "7.timeindex", "5.snapshot", "x.cleaned", "3.cleaned", "y.swap", "12.log.swap"}
    got = {n: name_problem(n, names) for n in names}

    def _kso(p):
        return p.kind, p.severity, p.offset

    assert got["00000000000000000000.log"] is None and got["00000000000000000030.log"] is None
    for n in ("notes.log", "x.cleaned", "y.swap"):
        assert got[n].kind == "unparsable_file_name" and got[n].severity == "error"
        assert "NumberFormatException" in got[n].message and "broker does not start" in got[n].message
    assert _kso(got["12.log"]) == ("phantom_segment", "error", 12)
    assert "00000000000000000012.log" in got["12.log"].message and "empty" in got["12.log"].message
    assert _kso(got["30.log"]) == ("misnamed_file", "warning", 30)            # opens the existing segment 30
    assert _kso(got["12.index"]) == ("misnamed_file", "warning", 12)          # a .log of 12 is opened: kept, unread
    assert "orphaned" in got["7.timeindex"].message                         # no segment 7: deleted
    assert _kso(got["5.snapshot"]) == ("misnamed_file", "warning", 5)
    assert _kso(got["3.cleaned"]) == ("misnamed_file", "warning", 3)
    assert _kso(got["12.log.swap"])[:2] == ("phantom_segment", "error")
    assert _kso(name_problem("-00000000000000000005.log", set()))[:2] == ("phantom_segment", "error")
    assert name_problem("99999999999999999999.log", set()).kind == "unparsable_file_name"
