"""File and directory names of kafka-on-disk.md §4.10 and §5: each is recognised, odd ones reported."""
from __future__ import annotations

import pytest

from kafkalog_cli.engine.logdir import LogDir, dir_kind
from kafkalog_cli.engine.partition import PartitionLog
from kafkalog_cli.layout import (FileName, PartitionName, classify_file, kraft_snapshot_name,
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
