"""``kafkalog delete-records`` (issue 21, item 4): Kafka's DeleteRecords and nothing else.

Kafka (``ReplicaManager.deleteRecordsOnLocalLog`` → ``Partition.deleteRecordsOnLeader`` →
``UnifiedLog.maybeIncrementLogStartOffset``, 0.11–4.x): an internal topic is INVALID_TOPIC_EXCEPTION, a topic
whose cleanup.policy has no ``delete`` POLICY_VIOLATION (issue 34 item 2); the log start offset moves to the
offset asked for (-1: the high watermark, never above the log end: issue 34 item 3); above the high watermark
is OffsetOutOfRange; below the current log start nothing changes. The segments below it go at the next ``deleteOldSegments``, whose
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


def test_above_the_log_start_of_a_partition_without_segments_is_refused(tmp_path):
    """A partition directory holding no segment file: the broker loads it as one empty segment at its log
    start offset (LogLoader.recoverLog), which is then its log end and high watermark, so DeleteRecords above
    it is OffsetOutOfRange. On main the partition was 'left untouched (no segment file)' and the run exited 0,
    'every log start offset asked for was set'; -1 and the log start itself change nothing, exit 0."""
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    for f in (ld / "orders-1").glob("0*"):
        f.unlink()
    for cmd, code in ((("delete-records", "--offset", "orders-1=41"), 1), (("delete-records", "--offset",
                                                                             "orders-1=-1"), 0),
                      (("retain", "--partition", "orders-1", "--log-start-offset", "5", "--retention-ms", "-1"), 1)):
        r = run_cli(*cmd, str(ld))
        assert r.code == code, (cmd, r.out + r.err)
        if code:
            assert "holds no segment file" in flat(r.out) and "refuses it too" in flat(r.out), r.out
    assert not list((ld / "orders-1").glob("0*")) and log_start(ld, ("orders", 1)) is None


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


# --- issue 34 item 2: what Kafka refuses by the topic (broker: tests/kafka/test_broker_delete_records.py) ---

def _unchanged(ld: Path, fixture: Path) -> bool:
    """Every file of every partition directory and checkpoint as in the fixture (names and bytes)."""
    def files(root):
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != ".lock"}
    return files(ld) == files(fixture)


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__transaction_state"])
def test_an_internal_topic_refuses_the_whole_request(tmp_path, topic):
    """INVALID_TOPIC_EXCEPTION for an internal topic, whatever its cleanup.policy (even one a --config says is
    delete); the other partition of the request is not touched either (exit 2, nothing changed). Before the
    fix: exit 0 and the log start of __consumer_offsets-0 moved to its high watermark, hiding every commit."""
    ld = copy_logdir(tmp_path / "logdir")
    ref = copy_logdir(tmp_path / "ref")
    r = run_cli("delete-records", "--offset", f"{topic}-0=-1", "--offset", "orders-0=30",
                "--config", f"{topic}:cleanup.policy=delete", str(ld))
    assert r.code == 2, r.out + r.err
    assert "INVALID_TOPIC_EXCEPTION" in flat(r.err) and f"{topic}-0: {topic} is an internal topic" in flat(r.err)
    assert _unchanged(ld, ref)


def _compacted_by(tmp_path: Path, how: str) -> list[str]:
    """The options that make topic ``compacted`` compact-only, from each configuration source."""
    if how == "config":
        return ["--config", "compacted:cleanup.policy=compact"]
    if how == "topic-configs":
        d = tmp_path / "topics"
        d.mkdir()
        (d / "compacted.properties").write_text("cleanup.policy=compact\n")
        return ["--topic-configs", str(d)]
    sp = tmp_path / "server.properties"          # the broker's default for every topic
    sp.write_text("log.cleanup.policy=compact\n")
    return ["--server-properties", str(sp)]


@pytest.mark.parametrize("how", ["config", "topic-configs", "server-properties"])
def test_a_compacted_topic_refuses_the_whole_request(tmp_path, how):
    """POLICY_VIOLATION (``Partition.deleteRecordsOnLeader``: cleanup.policy without delete), the policy read
    from each source retain and compact read; nothing of any partition changes. Before the fix: exit 0,
    the log start of compacted-0 moved and segment 0 deleted."""
    ld = copy_logdir(tmp_path / "logdir")
    ref = copy_logdir(tmp_path / "ref")
    r = run_cli("delete-records", "--offset", "compacted-0=5", "--offset", "customers-0=10",
                *_compacted_by(tmp_path, how), str(ld))
    assert r.code == 2, r.out + r.err
    assert "compacted-0: cleanup.policy=compact" in flat(r.err) and "POLICY_VIOLATION" in r.err
    assert ("customers-0" in r.err) == (how == "server-properties")     # compact too, by the broker's default
    assert _unchanged(ld, ref)


def test_compact_and_delete_is_deleted_from_and_an_empty_policy_is_refused(tmp_path):
    """``cleanup.policy=compact,delete`` has delete: DeleteRecords runs. An empty cleanup.policy: 3.x refuses it
    (no delete), 4.x accepts it (only compact without delete is refused, checked on 4.4.0): kafkalog refuses."""
    ld = copy_logdir(tmp_path / "logdir")
    r = run_cli("delete-records", "--offset", "compacted-0=5", "--config", "compacted:cleanup.policy=compact,delete",
                str(ld))
    assert r.code == 0, r.out + r.err
    assert log_start(ld, ("compacted", 0)) == 5
    r = run_cli("delete-records", "--offset", "customers-0=10", "--config", "customers:cleanup.policy=", str(ld))
    assert r.code == 2 and "cleanup.policy=(empty)" in flat(r.err) and "3.x refuses it" in flat(r.err), r.err


def test_retain_log_start_offset_is_refused_where_delete_records_is(tmp_path):
    """``retain --log-start-offset`` moves the log start as DeleteRecords does: refused for a compacted topic."""
    ld = copy_logdir(tmp_path / "logdir")
    before = bases(ld / "compacted-0"), log_start(ld, ("compacted", 0))
    r = run_cli("retain", "--log-start-offset", "5", "--config", "cleanup.policy=compact", "--partition",
                "compacted-0", str(ld))
    assert r.code == 2 and "--log-start-offset: Kafka refuses DeleteRecords" in flat(r.err), r.err
    assert (bases(ld / "compacted-0"), log_start(ld, ("compacted", 0))) == before


def _unchanged_files(ld: Path) -> dict:
    return {str(f.relative_to(ld)): f.read_bytes() for f in sorted(ld.rglob("*")) if f.is_file()}


def test_a_policy_no_source_names_is_refused_and_the_remedies_said(tmp_path):
    """A ZooKeeper-era directory given alone (no KRaft metadata, no --topic-configs, no --config for the topic):
    its topics' cleanup.policy is in ZooKeeper, and a compacted topic looks like Kafka's default, delete.
    Kafka refuses DeleteRecords on a compacted topic (POLICY_VIOLATION), so delete-records and retain
    --log-start-offset refuse (exit 2, nothing changed, also without --dry-run) and say how to confirm it.
    Before the fix: exit 0, a note, customers-0's segment 0 deleted (as the ZooKeeper-mode scenario
    zk_delete_records_on_a_compacted_topic found on a compacted topic at 2.8.2)."""
    ld = copy_logdir(tmp_path / "logdir")
    before = _unchanged_files(ld)
    for args in (["delete-records", "--offset", "customers-0=10", "--offset", "orders-0=30"],
                 ["delete-records", "--dry-run", "--offset", "customers-0=10"],
                 ["retain", "--log-start-offset", "10", "--partition", "customers-0"]):
        r = run_cli(*args, str(ld))
        assert r.code == 2, (args, r.out, r.err)
        err = flat(r.err)
        assert "no source names the cleanup.policy of" in err and "nothing was changed" in err, err
        assert "--topic-configs FILE" in err and "kafka-configs.sh --describe" in err, err
        assert "cleanup.policy=delete" in err and r.out == ""
        assert _unchanged_files(ld) == before
    r = run_cli("delete-records", "--offset", "customers-0=10", "--offset", "orders-0=30", str(ld))
    assert "2 topics:" in r.err and "customers (partition 0)" in r.err and "orders (partition 0)" in r.err
    assert "--config TOPIC:cleanup.policy=delete" in r.err
    r = run_cli("retain", "--log-start-offset", "10", "--partition", "customers-0", str(ld))
    assert r.err.count("--log-start-offset: no source names") == 1 and "--config customers:cleanup.policy=delete" in r.err
    for line in r.err.splitlines():         # within 80 columns with click's "Error: "
        assert len(line) <= 80, line


@pytest.mark.parametrize("how", ["config", "config-every-topic", "topic-configs-without-it", "topic-configs-dir",
                                 "metadata"])
def test_a_policy_a_source_names_lets_delete_records_run(tmp_path, how):
    """Each way of naming the policy: --config TOPIC:cleanup.policy=delete (or for every topic); a
    kafka-configs.sh --describe file where the topic has no entry (no override: the broker's default
    applies, and is then known), a directory of <topic>.properties without the topic's file; the KRaft
    metadata (orders)."""
    ld = copy_logdir(tmp_path / "logdir", metadata=how == "metadata")
    topic = "orders" if how == "metadata" else "customers"
    extra = []
    if how == "config":
        extra = ["--config", f"{topic}:cleanup.policy=delete"]
    elif how == "config-every-topic":
        extra = ["--config", "cleanup.policy=delete"]
    elif how == "topic-configs-without-it":
        f = tmp_path / "configs.txt"
        f.write_text("Dynamic configs for topic payments are:\n  retention.ms=86400000 sensitive=false "
                     "synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}\n"
                     f"Dynamic configs for topic {topic} are:\n")
        extra = ["--topic-configs", str(f)]
    elif how == "topic-configs-dir":
        d = tmp_path / "topics"
        d.mkdir()
        (d / "compacted.properties").write_text("cleanup.policy=compact\n")
        extra = ["--topic-configs", str(d)]
    r = run_cli("delete-records", "--offset", f"{topic}-0=10", *extra, str(ld))
    assert r.code == 0, r.out + r.err
    assert log_start(ld, (topic, 0)) == 10


# --- issue 34 item 3: the high watermark the broker loads -------------------------------------------------

def _set_hw(ld: Path, topic: str, partition: int, offset: int) -> None:
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    p = ld / "replication-offset-checkpoint"
    entries = dict(parse_offset_checkpoint(p.read_bytes()))
    entries[(topic, partition)] = offset
    p.write_text(build_offset_checkpoint(entries))


def test_a_high_watermark_checkpoint_beyond_the_log_end_means_the_log_end(tmp_path):
    """``UnifiedLog.updateHighWatermark`` on load lowers a checkpoint beyond the log end (91) to it: -1 is 91,
    not 1000, and 95 is refused (OFFSET_OUT_OF_RANGE). Before the fix -1 set the log start to 1000 on a log
    ending at 91 (exit 0), which the broker answers by deleting every segment (KAFKA-8306)."""
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    _set_hw(ld, "orders", 0, 1000)
    r = run_cli("delete-records", "--offset", "orders-0=95", str(ld))
    assert r.code == 1 and "above the high watermark 91" in flat(r.out), r.out
    assert log_start(ld, ("orders", 0)) is None
    r = run_cli("delete-records", "--format", "json", "--offset", "orders-0=-1", str(ld))
    assert r.code == 0, r.out + r.err
    (obj,) = json_objects(r.out)
    assert obj["high_watermark"] == 91 and obj["log_start_offset"] == {"old": 0, "new": 91}
    assert log_start(ld, ("orders", 0)) == 91 and bases(ld / "orders-0") == [78]
    assert run_cli("verify", str(ld / "orders-0")).code == 0


def test_retain_log_start_offset_bounds_the_high_watermark_too(tmp_path):
    """The same rule for ``retain --log-start-offset`` (and ``--high-watermark``): 95 on a log ending at 91."""
    ld = copy_logdir(tmp_path / "logdir", metadata=True)
    _set_hw(ld, "orders", 0, 1000)
    r = run_cli("retain", "--log-start-offset", "95", "--retention-ms", "-1", "--retention-bytes", "-1",
                str(ld / "orders-0"))
    assert r.code == 1 and "above the high watermark 91" in flat(r.out), r.out
    assert log_start(ld, ("orders", 0)) is None and bases(ld / "orders-0") == [0, 25, 51, 78]
    r = run_cli("retain", "--log-start-offset", "95", "--high-watermark", "1000", "--retention-ms", "-1",
                "--retention-bytes", "-1", str(ld / "orders-0"))
    assert r.code == 1 and "above the high watermark 91" in flat(r.out), r.out


def _lagging(tmp_path: Path, replicas: list[int]) -> Path:
    """A partition of N records after a kill (no clean-shutdown marker) whose checkpointed high watermark lags
    15 behind the log end, beside KRaft metadata naming ``replicas`` (this broker is node 1)."""
    from test_unclean_retention import N, _single_replica_logdir
    pdir = _single_replica_logdir(tmp_path, replicas)
    (pdir.parent / ".kafka_cleanshutdown").unlink()
    _set_hw(pdir.parent, "slow", 0, N - 15)
    return pdir


def test_minus_one_on_a_sole_replica_after_a_kill_is_the_log_end(tmp_path):
    """The broker restarted as the partition's only replica leads it with itself as the ISR and raises the high
    watermark to the log end (``Partition.makeLeader`` → ``maybeIncrementLeaderHW``): DeleteRecords -1 goes up
    to the log end, not to the lagging checkpoint, and the report says why. Before the fix: the checkpoint's
    45, 15 records kept, nothing said. With a second replica the checkpoint stands, and the missing
    clean-shutdown marker is said."""
    from test_unclean_retention import N
    pdir = _lagging(tmp_path, [1])
    r = run_cli("delete-records", "--format", "json", "--offset", "slow-0=-1", str(pdir.parent))
    assert r.code == 0, r.out + r.err
    (obj,) = json_objects(r.out)
    assert obj["high_watermark"] == N and obj["log_start_offset"]["new"] == N
    assert log_start(pdir.parent, ("slow", 0)) == N        # (the active segment stays: no next segment)
    r = run_cli("delete-records", "--dry-run", "--offset", "slow-0=-1", str(_lagging(tmp_path / "two", [1, 2]).parent))
    assert r.code == 0, r.out + r.err
    assert f"log start offset 0 -> {N - 15}" in flat(r.out) and "no .kafka_cleanshutdown" in flat(r.out)
