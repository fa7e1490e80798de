"""``kafkalog delete-records`` (issue 21, item 4): Kafka's DeleteRecords and nothing else.

Kafka (``UnifiedLog.deleteRecords`` → ``maybeIncrementLogStartOffset``, 2.x–4.x): the log start offset moves
to the offset asked for (-1: the high watermark); above the high watermark is OffsetOutOfRange; below the
current log start nothing changes. The segments below it go at the next ``deleteOldSegments``, whose
log-start pass deletes a segment when the next one starts at or below the log start offset; the size and
time passes are retention, not DeleteRecords. ``kafka-delete-records.sh --offset-json-file`` reads
``{"partitions": [{"topic", "partition", "offset"}], "version": 1}`` (``DeleteRecordsCommand.parseJsonData``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalog_formats.checkpoint import parse_offset_checkpoint

from conftest import flat, copy_logdir, json_objects, run_cli

NOW_FAR = 1_700_000_000_000 + 10 ** 11          # every record of the fixture far older than 7 days


def bases(pdir: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in pdir.glob("*.log"))


def log_start(ld: Path, tp: tuple[str, int]) -> int | None:
    p = ld / "log-start-offset-checkpoint"
    return parse_offset_checkpoint(p.read_bytes(), str(p)).get(tp) if p.exists() else None


def offsets_file(tmp_path: Path, entries: list[dict], version: int | None = 1) -> Path:
    f = tmp_path / "offsets.json"
    obj = {"partitions": entries}
    if version is not None:
        obj["version"] = version
    f.write_text(json.dumps(obj))
    return f


def test_only_the_log_start_pass_runs_where_retain_would_delete_everything(tmp_path):
    """The fixture's orders topic has retention.ms = 7 days in its metadata and records years old: retain
    would delete all four segments. delete-records moves the log start to 30 and removes only segment 0
    (the next segment, 25, starts at or below 30)."""
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    f = offsets_file(tmp_path, [{"topic": "orders", "partition": 0, "offset": 30}])
    r = run_cli("delete-records", "--offset-json-file", str(f), str(ld))
    assert r.code == 0, r.out + r.err
    assert bases(ld / "orders-0") == [25, 51, 78]
    assert log_start(ld, ("orders", 0)) == 30
    assert run_cli("verify", str(ld / "orders-0")).code == 0


def test_minus_one_means_the_high_watermark(tmp_path):
    """``DeleteRecordsRequest.HIGH_WATERMARK``: every segment wholly below the high watermark 91 goes; the
    segment holding it stays (the log start is set to 91 and the active segment keeps the offsets below it
    that are no longer served)."""
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    r = run_cli("delete-records", "--offset", "orders-0=-1", "--format", "json", str(ld))
    assert r.code == 0, r.out
    (obj,) = json_objects(r.out)
    assert obj["log_start_offset"] == {"old": 0, "new": 91}
    assert bases(ld / "orders-0") == [78]
    assert log_start(ld, ("orders", 0)) == 91


def test_above_the_high_watermark_is_refused(tmp_path):
    """OffsetOutOfRange in Kafka: nothing changes, a problem (exit 1)."""
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    before = bases(ld / "orders-0")
    r = run_cli("delete-records", "--offset", "orders-0=500", str(ld))
    assert r.code == 1 and "above the high watermark 91" in flat(r.out)
    assert bases(ld / "orders-0") == before and log_start(ld, ("orders", 0)) is None


def test_a_partition_in_none_of_the_log_dirs_is_a_problem_and_the_others_still_run(tmp_path):
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    f = offsets_file(tmp_path, [{"topic": "orders", "partition": 0, "offset": 30},
                                {"topic": "orders", "partition": 7, "offset": 3}], version=None)
    r = run_cli("delete-records", "--offset-json-file", str(f), str(ld))
    assert r.code == 1 and "orders-7: not in" in r.out
    assert bases(ld / "orders-0") == [25, 51, 78]


def test_dry_run_changes_nothing(tmp_path):
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    r = run_cli("delete-records", "--dry-run", "--offset", "orders-0=30", str(ld))
    assert r.code == 0 and r.out.startswith("delete-records --dry-run: would move the log start offset of 1 partition")
    assert "delete 00000000000000000000.log" in r.out and "below the log start offset 30" in r.out
    assert bases(ld / "orders-0") == [0, 25, 51, 78]


@pytest.mark.parametrize("content, words", [
    ('{"version": 1}', "Missing partitions field"),
    ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
    ('not json', "not valid JSON"),
    ('{"partitions": [{"topic": "orders", "partition": 0, "offset": 1},'
     ' {"topic": "orders", "partition": 0, "offset": 2}]}', "duplicate topic partitions: orders-0"),
    ('{"partitions": [{"topic": "orders", "partition": 0, "offset": 9223372036854775808}]}', "64-bit integer"),
    ('{"partitions": [{"topic": "orders", "partition": 0}]}', "topic, partition and offset"),
])
def test_a_malformed_offset_file_is_a_usage_error(tmp_path, content, words):
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    f = tmp_path / "offsets.json"
    f.write_text(content)
    r = run_cli("delete-records", "--offset-json-file", str(f), str(ld))
    assert r.code == 2 and words in r.err, r.err
    assert bases(ld / "orders-0") == [0, 25, 51, 78]


def test_retain_log_start_offset_says_that_retention_runs_too(tmp_path):
    """retain --log-start-offset moves the log start and then applies the topic's own retention (here the
    metadata's 7 days on years-old records): the whole log goes, as the help says."""
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    r = run_cli("retain", "--log-start-offset", "30", "--now", str(NOW_FAR), str(ld / "orders-0"))
    assert r.code == 0
    assert bases(ld / "orders-0") == [91]
    from kafkalog_cli.commands.retain import HELP
    assert "use kafkalog delete-records" in " ".join(HELP.split())
