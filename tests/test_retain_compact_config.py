"""``retain`` and ``compact`` with each topic's own configuration (issue 14), through the real CLI.

Which clean-up applies follows the broker: ``LogManager.cleanupLogs`` / ``LogCleanerManager.deletableLogs`` run
``UnifiedLog.deleteOldSegments`` on every log, and it applies ``retention.bytes``/``retention.ms`` only when
``cleanup.policy`` contains ``delete`` (the log-start-offset pass always); ``LogCleanerManager.
grabFilthiestCompactedLog`` cleans only logs whose policy contains ``compact``. Values are resolved as
``KafkaConfig``/``DynamicBrokerConfig``/``LogConfig.fromProps`` do (lowest to highest: Kafka's default,
server.properties, the dynamic cluster-wide then per-broker configuration, the topic's overrides, then our
``--config`` flags). Expected deletions are computed here from the records written and Kafka's rule
(``now - largestTimestamp > retention.ms``, sizes from the files), never copied from our output.

Covered: a synthetic KRaft metadata log with configuration changes and deletions over time, server.properties
precedence and ZooKeeper-era ``--topic-configs``, Kafka's built-in defaults needing ``--use-defaults``, bad
values (a clear error, nothing changed), the exit statuses (issue 15.10) and the wording of the reports
(issue 15.6).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kafkalog_cli.repair.log_writer import PartitionWriter
from kafkalog_formats.checkpoint import build_offset_checkpoint
from kafkalog_formats.message_set import BatchReader
from kafkalog_formats.partition_metadata import build_partition_metadata
from kafkalog_formats.record_batch import RecordSpec, build_batch

from conftest import flat, copy_logdir, json_objects, json_partition, run_cli
from test_topic_config_metadata import config, part, quorum_state, remove, topic, write_log, write_snapshot

T0 = 1_700_000_000_000
HOUR = 3_600_000
ID_EVENTS, ID_TABLE, ID_GONE = "EEEEEEEEEEEEEEEEEEEEEQ", "TTTTTTTTTTTTTTTTTTTTTQ", "GGGGGGGGGGGGGGGGGGGGGA"
ID_ORDERS_OLD, ID_ORDERS, ID_PLAIN = "AAAAAAAAAAAAAAAAAAAAAQ", "BBBBBBBBBBBBBBBBBBBBBA", "PPPPPPPPPPPPPPPPPPPPPQ"


def tree(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


def bases(pdir: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in pdir.glob("*.log"))


def write_partition(ld: Path, name: str, topic_id: str, segments: int = 4, per: int = 10, keys: int = 3) -> Path:
    """``segments`` segments of ``per`` one-record batches; record N has key k{N % keys} and timestamp
    T0 + N hours (so segment i's largest timestamp is T0 + (per*i + per-1) hours)."""
    d = ld / name
    w = PartitionWriter(d)
    n = 0
    for s in range(segments):
        if s:
            w.roll()
        for _ in range(per):
            w.append(build_batch(n, [RecordSpec(0, T0 + n * HOUR, f"k{n % keys}".encode(), b"v%d" % n)]),
                     T0 + n * HOUR)
            n += 1
    w.close()
    (d / "partition.metadata").write_text(build_partition_metadata(topic_id))
    return d


def set_high_watermarks(ld: Path) -> None:
    """Every partition fully replicated: replication-offset-checkpoint = each log end."""
    hws = {}
    for d in ld.iterdir():
        if d.is_dir() and d.name[-1].isdigit() and not d.name.startswith("__cluster_metadata"):
            end = 0
            for log in d.glob("*.log"):
                for b in BatchReader(log.read_bytes()):
                    end = max(end, b.last_offset + 1)
            topic_name, _, p = d.name.rpartition("-")
            hws[(topic_name, int(p))] = end
    (ld / "replication-offset-checkpoint").write_text(build_offset_checkpoint(hws))


# --- a synthetic KRaft metadata log: configuration changes and deletions over time -------------------------

@pytest.fixture
def kraft(tmp_path) -> Path:
    """A KRaft broker's log directory (node 1, a single-voter quorum, so the whole log is committed)."""
    ld = tmp_path / "logs"
    ld.mkdir()
    (ld / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    for name, tid in (("events-0", ID_EVENTS), ("table-0", ID_TABLE), ("gone-0", ID_GONE),
                      ("orders-0", ID_ORDERS), ("orders-1", ID_ORDERS_OLD), ("plain-0", ID_PLAIN)):
        write_partition(ld, name, tid)
    set_high_watermarks(ld)
    orders = ld / "orders-0"
    sizes = [(orders / f"{b:020d}.log").stat().st_size for b in bases(orders)]
    keep_bytes = sum(sizes) - sizes[0]          # retention.bytes that deletes exactly the oldest segment
    md = ld / "__cluster_metadata-0"
    md.mkdir()
    write_snapshot(md, 6, 1, [
        topic("events", ID_EVENTS), part(ID_EVENTS), config("events", "retention.ms", "1000"),
        topic("table", ID_TABLE), part(ID_TABLE), config("table", "cleanup.policy", "delete")])
    write_log(md, 6, [
        config("events", "retention.ms", None),                        # 6: the override deleted ...
        config("events", "retention.ms", str(15 * HOUR)),              # 7: ... then set again
        config("table", "cleanup.policy", "compact"),                  # 8: delete -> compact
        topic("gone", ID_GONE), part(ID_GONE), remove(ID_GONE),        # 9-11: created, then deleted
        topic("orders", ID_ORDERS_OLD), part(ID_ORDERS_OLD, 1),        # 12-13: orders, first incarnation
        config("orders", "retention.ms", "1"),                         # 14
        remove(ID_ORDERS_OLD),                                         # 15: deleted with its configs
        topic("orders", ID_ORDERS), part(ID_ORDERS),                   # 16-17: recreated
        config("orders", "retention.ms", "-1"),                        # 18
        config("orders", "retention.bytes", str(keep_bytes)),          # 19
        topic("plain", ID_PLAIN), part(ID_PLAIN),                      # 20-21: no override at all
        config("", "log.retention.ms", str(2 * HOUR), rtype=4),        # 22: cluster-wide dynamic default
    ])
    quorum_state(md, [1])
    return ld


def test_retain_all_applies_each_topics_final_configuration(kraft):
    """now = 40 h after the first record; segment i's newest record is 10i + 9 h old -> ages 31, 21, 11, 1 h."""
    now = T0 + 40 * HOUR
    before = {d: tree(kraft / d) for d in ("gone-0", "orders-1")}
    r = run_cli("retain", "--all", "--now", str(now), "--format", "json", str(kraft))
    objs = {o["partition"]: o for o in json_objects(r.out)}
    # events: the snapshot's 1 s override was deleted, then 15 h set: segments 0 and 1 go (31 h, 21 h > 15 h)
    assert bases(kraft / "events-0") == [20, 30]
    ms = {c["key"]: c for c in objs["events-0"]["config"]}["retention.ms"]
    assert ms["value"] == 15 * HOUR and ms["source_kind"] == "topic" and "metadata log offset 7" in ms["source"]
    # plain: no override; the cluster-wide dynamic default (2 h) applies: everything but the active segment
    assert bases(kraft / "plain-0") == [30]
    ms = {c["key"]: c for c in objs["plain-0"]["config"]}["retention.ms"]
    assert ms["source_kind"] == "cluster_default" and ms["value"] == 2 * HOUR
    # table: now compacted, so only the log start offset applies, although its data is older than 2 h
    assert bases(kraft / "table-0") == [0, 10, 20, 30]
    assert any("only the log start offset" in n for n in objs["table-0"]["notes"])
    # orders, recreated: its own retention.bytes (the oldest segment) and retention.ms=-1; the first
    # incarnation's retention.ms=1 went with it
    assert bases(kraft / "orders-0") == [10, 20, 30]
    # the deleted topic's directory and the first incarnation's are left exactly as they are: exit 1
    assert {d: tree(kraft / d) for d in before} == before
    assert objs["gone-0"]["topic_status"] == "deleted_topic" and objs["gone-0"]["problem"]
    assert objs["orders-1"]["topic_status"] == "deleted_topic" and "recreated" not in objs["orders-1"]["untouched"]
    assert ID_ORDERS in objs["orders-1"]["untouched"]
    assert objs["__cluster_metadata-0"]["untouched"] and not objs["__cluster_metadata-0"]["problem"]
    assert r.code == 1
    for d in ("events-0", "plain-0", "table-0", "orders-0"):
        assert run_cli("verify", str(kraft / d)).code == 0, d


def test_compact_all_cleans_only_the_compacted_topic(kraft):
    before = tree(kraft)
    dry = run_cli("compact", "--all", "--dry-run", "--force", "--now", str(T0 + 40 * HOUR), str(kraft))
    assert tree(kraft) == before
    assert "table-0: dirty 0..29" in dry.out
    assert "3 not compacted (cleanup.policy without compact)" in flat(dry.out)      # counted, one line
    dry = run_cli("compact", "--all", "--dry-run", "--details", "--force", "--now", str(T0 + 40 * HOUR), str(kraft))
    assert "  config: cleanup.policy=compact from topic override at metadata log offset 8" in dry.out
    for name in ("events-0", "plain-0", "orders-0"):
        assert f"{name}: left untouched: cleanup.policy=delete from Kafka's default" in flat(dry.out)
    r = run_cli("compact", "--all", "--force", "--now", str(T0 + 40 * HOUR), str(kraft))
    assert r.code == 1                                   # the two deleted topics' directories
    kept = [rec.offset for log in sorted((kraft / "table-0").glob("*.log"))
            for b in BatchReader(log.read_bytes()) for rec in b.records()]
    assert kept == [27, 28, 29] + list(range(30, 40))   # the latest of k0, k1, k2 below the active segment
    assert {k: v for k, v in tree(kraft).items() if not k.startswith(("table-0", "cleaner-offset"))} == \
        {k: v for k, v in before.items() if not k.startswith(("table-0", "cleaner-offset"))}


def test_a_config_flag_beats_the_metadata_per_topic(kraft):
    now = T0 + 40 * HOUR
    r = run_cli("retain", "--all", "--now", str(now), "--retention-ms", str(25 * HOUR),
                "--config", "plain:retention.ms=-1", "--dry-run", "--format", "json", str(kraft))
    objs = {o["partition"]: o for o in json_objects(r.out)}
    deleted = {p: [s["base_offset"] for s in o["segments"] if s["delete"]] for p, o in objs.items() if "segments" in o}
    assert deleted["events-0"] == [0]                    # 31 h > 25 h (the flag beats the topic's 15 h)
    assert deleted["plain-0"] == []                      # the per-topic flag beats the flag for all
    src = {c["key"]: c["source"] for c in objs["plain-0"]["config"]}
    assert src["retention.ms"] == "--config plain:retention.ms=-1"
    assert {c["key"]: c["source"] for c in objs["events-0"]["config"]}["retention.ms"] == f"--retention-ms {25 * HOUR}"


# --- server.properties precedence, ZooKeeper-era topic configurations ----------------------------------------

NOW = 1_700_000_050_000         # the fixtures' orders-0: largest timestamps 12 s, 25 s, 38 s, 45 s after T0
LATER = NOW + 100_000           # ages 138 s, 125 s, 112 s, 105 s


def deleted_by(logdir: Path, *args: str) -> tuple[list[int], dict]:
    r = run_cli("retain", "--dry-run", "--format", "json", "--now", str(LATER), *args, str(logdir / "orders-0"))
    assert r.code == 0, r.out + r.err
    obj = json_partition(r.out)
    return [s["base_offset"] for s in obj["segments"] if s["delete"]], {c["key"]: c for c in obj["config"]}


def test_server_properties_precedence_then_topic_overrides_then_flags(tmp_path):
    ld = copy_logdir(tmp_path / "logdir")
    sp = tmp_path / "server.properties"
    sp.write_text("log.retention.hours=1\n")
    gone, cfg = deleted_by(ld, "--server-properties", str(sp))
    assert gone == [] and cfg["retention.ms"]["value"] == HOUR
    assert cfg["retention.ms"]["source"] == "server.properties (log.retention.hours=1)"
    sp.write_text("log.retention.hours=1\nlog.retention.minutes=2\n")          # minutes before hours
    gone, cfg = deleted_by(ld, "--server-properties", str(sp))
    assert gone == [0, 25] and cfg["retention.ms"]["value"] == 120_000
    sp.write_text("log.retention.hours=1\nlog.retention.minutes=2\nlog.retention.ms=110000\n")   # ms first
    gone, cfg = deleted_by(ld, "--server-properties", str(sp))
    assert gone == [0, 25, 51] and cfg["retention.ms"]["source"] == "server.properties (log.retention.ms=110000)"
    topics = tmp_path / "topics"                    # a topic override beats the broker's setting
    topics.mkdir()
    (topics / "orders.properties").write_text("retention.ms=130000\n")
    gone, cfg = deleted_by(ld, "--server-properties", str(sp), "--topic-configs", str(topics))
    assert gone == [0] and cfg["retention.ms"]["source"] == "orders.properties (retention.ms)"
    gone, cfg = deleted_by(ld, "--server-properties", str(sp), "--topic-configs", str(topics),
                           "--retention-ms", "123000")              # a flag for every topic beats both
    assert gone == [0, 25]
    gone, cfg = deleted_by(ld, "--server-properties", str(sp), "--topic-configs", str(topics),
                           "--retention-ms", "123000", "--config", "orders:retention.ms=200000")
    assert gone == [] and cfg["retention.ms"]["source"] == "--config orders:retention.ms=200000"
    # a negative log.retention.hours means unlimited (KafkaConfig.logRetentionTimeMillis)
    sp.write_text("log.retention.hours=-1\n")
    gone, cfg = deleted_by(ld, "--server-properties", str(sp))
    assert gone == [] and cfg["retention.ms"]["value"] == -1 and cfg["retention.ms"]["readable"] == "unlimited"


def test_kafka_configs_describe_output_as_topic_configs(tmp_path):
    ld = copy_logdir(tmp_path / "logdir")
    f = tmp_path / "configs.txt"
    f.write_text("Dynamic configs for topic orders are:\n"
                 "  retention.ms=130000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=130000}\n"
                 "Configs for topic 'payments' are cleanup.policy=compact,delete\n")
    gone, cfg = deleted_by(ld, "--topic-configs", str(f))
    assert gone == [0] and cfg["retention.ms"]["source"] == "configs.txt line 2, DYNAMIC_TOPIC_CONFIG"
    dry = run_cli("compact", "--dry-run", "--force", "--now", str(NOW), "--topic-configs", str(f),
                  "--topic", "payments", "--topic", "orders", str(ld))
    assert "2 not compacted (cleanup.policy without compact)" in flat(dry.out)      # orders-0 and orders-1
    assert "payments-0: dirty 0..12" in dry.out and dry.code == 0
    dry = run_cli("compact", "--dry-run", "--details", "--force", "--now", str(NOW), "--topic-configs", str(f),
                  "--topic", "payments", "--topic", "orders", str(ld))
    assert "orders-0: left untouched: cleanup.policy=delete" in dry.out


def test_broker_cleaner_settings_size_the_offset_map(tmp_path):
    """``LogCleaner.CleanerThread``: one thread's map is log.cleaner.dedupe.buffer.size / log.cleaner.threads
    bytes, 24 per slot, filled to log.cleaner.io.buffer.load.factor: 2400 / 10 = 240 bytes = 10 slots, 9 keys."""
    ld = copy_logdir(tmp_path / "logdir")
    sp = tmp_path / "server.properties"
    sp.write_text("log.cleaner.dedupe.buffer.size=2400\nlog.cleaner.threads=10\n")
    r = run_cli("compact", "--dry-run", "--force", "--format", "json", "--now", str(NOW), "--server-properties",
                str(sp), "--config", "cleanup.policy=compact", str(ld / "orders-0"))
    obj = json_partition(r.out)
    assert obj["offset_map_entries"] == 9 and obj["offset_map_full"]
    r = run_cli("compact", "--dry-run", "--force", "--format", "json", "--now", str(NOW), "--server-properties",
                str(sp), "--config", "cleanup.policy=compact", "--dedupe-buffer-bytes", "4800", str(ld / "orders-0"))
    assert json_partition(r.out)["offset_map_entries"] == 17          # 20 slots: every key of the range
    # --dedupe-buffer-bytes is log.cleaner.dedupe.buffer.size: shared by the log.cleaner.threads
    r = run_cli("compact", "--dry-run", "--force", "--format", "json", "--now", str(NOW), "--server-properties",
                str(sp), "--config", "cleanup.policy=compact", "--dedupe-buffer-bytes", "2400", str(ld / "orders-0"))
    obj = json_partition(r.out)
    assert obj["offset_map_entries"] == 9 and obj["offset_map_full"]
    # one slot per thread: Cleaner requires slots * load factor > 1, the thread would never start
    r = run_cli("compact", "--dry-run", "--force", "--now", str(NOW), "--server-properties", str(sp),
                "--config", "cleanup.policy=compact", "--dedupe-buffer-bytes", "479", str(ld / "orders-0"))
    assert r.code == 2 and "cannot hold a single key" in r.err and "1 slots" in r.err, r.err


def test_server_properties_cleanup_policy_compact_switches_both_commands(tmp_path):
    ld = copy_logdir(tmp_path / "logdir")
    sp = tmp_path / "server.properties"
    sp.write_text("log.cleanup.policy=compact\nlog.retention.ms=1\n")
    r = run_cli("retain", "--dry-run", "--format", "json", "--now", str(LATER), "--server-properties", str(sp),
                str(ld / "orders-0"))
    assert not [s for s in json_partition(r.out)["segments"] if s["delete"]]   # compact: no time retention
    r = run_cli("compact", "--dry-run", "--details", "--force", "--now", str(NOW), "--server-properties", str(sp),
                str(ld / "orders-0"))
    assert "orders-0: dirty 0..77" in r.out and "cleanup.policy=compact from server.properties" in r.out


# --- Kafka's built-in defaults are never applied by accident ---------------------------------------------

def test_builtin_retention_defaults_need_use_defaults(tmp_path):
    """A backup restored months later, no broker configuration at hand: Kafka's default retention.ms (7 days)
    would delete everything. retain leaves that rule out (one line names the topics and what to give) and
    runs every rule whose value is known (issue 21, item 10: it used to refuse the whole run)."""
    ld = copy_logdir(tmp_path / "logdir")
    before = tree(ld)
    for extra in ([], ["--dry-run"]):
        r = run_cli("retain", "--all", "--now", str(NOW + 8 * 86_400_000), *extra, str(ld))
        assert r.code == 0 and tree(ld) == before, r.out + r.err
        said = flat(r.out)
        assert said.count("not applied, only Kafka's built-in default sets it") == 1       # once for the run
        assert "retention.ms=604800000 (7 days) for compacted, customers, legacy, orders, payments" in said
        assert "(--use-defaults applies it; --server-properties" in said
    r = run_cli("retain", "--all", "--use-defaults", "--now", str(NOW + 8 * 86_400_000), "--format", "json", str(ld))
    assert r.code == 0
    objs = {o["partition"]: o for o in json_objects(r.out)}
    assert [s["base_offset"] for s in objs["orders-0"]["segments"] if s["delete"]] == [0, 25, 51, 78]
    assert objs["__consumer_offsets-0"]["notes"] and not objs["__consumer_offsets-0"]["segments"][0]["delete"]


def test_a_known_limit_runs_while_a_builtin_default_is_left_out(tmp_path):
    """``--retention-bytes N`` given for a partition whose retention.ms would be the built-in 7 days: the size
    rule runs, the time rule is left out (said once), exit 0."""
    ld = copy_logdir(tmp_path / "logdir")
    r = run_cli("retain", "--retention-bytes", "3000", "--now", str(NOW + 10**10), "--format", "json",
                str(ld / "orders-0"))
    assert r.code == 0, r.out + r.err
    summary = json_objects(r.out, "summary")[0]
    assert "retention.ms=604800000" in summary["builtin_defaults_not_applied"]
    assert bases(ld / "orders-0") == [51, 78]


def test_delete_records_alone_does_not_apply_builtin_defaults(tmp_path):
    ld = copy_logdir(tmp_path / "logdir")
    r = run_cli("retain", "--log-start-offset", "30", "--config", "orders:cleanup.policy=delete", "--now",
                str(NOW + 10**10), str(ld / "orders-0"))
    assert r.code == 0 and bases(ld / "orders-0") == [25, 51, 78]
    assert "not applied, only Kafka's built-in default sets it: retention.ms=604800000 (7 days)" in flat(r.out)


# --- bad values: a clear error, nothing changed ----------------------------------------------------------

@pytest.mark.parametrize("setup, args, code, words", [
    (None, ["--config", "orders:retention.ms=soon"], 2,
     "topic orders: retention.ms='soon' from --config orders:retention.ms=soon: not a 64-bit integer"),
    (None, ["--config", "orders:segment.bytes=10"], 2,
     "topic orders: segment.bytes='10' from --config orders:segment.bytes=10: Value must be at least 14"),
    (None, ["--config", "orders:retention.milliseconds=5"], 2, "unknown topic configuration"),
    (None, ["--config", "nosuch:retention.ms=5"], 2, "no partition of topic nosuch is in this run"),
    (None, ["--config", "retention.ms"], 2, "'retention.ms' is not of the form [TOPIC:]KEY=VALUE"),
    ("server.properties", [], 3, "log.retention.ms='ages' from server.properties (log.retention.ms): not a 64-bit"),
    ("topics", [], 3, "topic orders: cleanup.policy='compact,archive' from orders.properties (cleanup.policy): "
                      "Invalid value archive"),
])
def test_a_value_kafka_would_reject_stops_the_run_before_any_change(tmp_path, setup, args, code, words):
    """Both commands, dry run or not: the message names topic, key, value and source; exit 2 for our own
    flags (a usage error), 3 for the broker's files (the run cannot be done as the broker would)."""
    ld = copy_logdir(tmp_path / "logdir")
    extra = list(args)
    if setup == "server.properties":
        (tmp_path / "server.properties").write_text("log.retention.ms=ages\n")
        extra += ["--server-properties", str(tmp_path / "server.properties")]
    elif setup == "topics":
        (tmp_path / "topics").mkdir()
        (tmp_path / "topics" / "orders.properties").write_text("cleanup.policy=compact,archive\n")
        extra += ["--topic-configs", str(tmp_path / "topics")]
    before = tree(ld)
    for command in ("retain", "compact"):
        for dry in ([], ["--dry-run"]):
            r = run_cli(command, "--partition", "orders-0", "--retention-ms" if command == "retain" else "--force",
                        *(["1"] if command == "retain" else []), *dry, *extra, "--now", str(NOW), str(ld))
            assert r.code == code and words in r.err, (command, r.err)
            assert "Traceback" not in r.err and tree(ld) == before


# --- exit statuses (issue 15.10) and the reports' words (issue 15.6) -----------------------------------

def test_exit_status_zero_when_the_job_ran_one_for_problems(tmp_path):
    ld = copy_logdir(tmp_path / "logdir")
    args = ["--retention-ms", "20000", "--now", str(NOW)]
    assert run_cli("retain", "--dry-run", *args, str(ld / "orders-0")).code == 0     # would delete: still 0
    assert run_cli("retain", *args, str(ld / "orders-0")).code == 0                  # deleted: 0
    assert run_cli("retain", *args, str(ld / "orders-0")).code == 0                  # nothing left to delete: 0
    assert run_cli("compact", "--force", "--config", "cleanup.policy=compact", "--now", str(NOW),
                   str(ld / "payments-0")).code == 0                                 # cleaned: 0
    (ld / "payments-0" / "00000000000000000013.log.deleted").write_bytes(b"")       # an interrupted run's file
    assert run_cli("retain", *args, str(ld / "payments-0")).code == 1
    (ld / "replication-offset-checkpoint").write_text("0\n0\n")                     # high watermarks unknown
    assert run_cli("retain", *args, str(ld / "orders-1")).code == 1
    assert run_cli("compact", "--force", "--config", "cleanup.policy=compact", "--now", str(NOW),
                   str(ld / "orders-1")).code == 1


def test_reports_speak_kafka_and_people(tmp_path):
    """No spec section numbers, no Python None; times as ISO next to epoch ms; durations readable."""
    ld = copy_logdir(tmp_path / "logdir")
    outs = []
    for fmt in ("text", "json"):
        for args in (["retain", "--dry-run", "--all", "--use-defaults", "--log-start-offset", "30",
                      "--partition", "orders-0"],
                     ["retain", "--dry-run", "--all", "--retention-ms", "20000"],
                     ["compact", "--dry-run", "--all", "--force"],
                     ["compact", "--dry-run", "--all", "--config", "cleanup.policy=compact"]):
            for details in ([], ["--details"]) if fmt == "text" else ([],):
                r = run_cli(*args, *details, "--format", fmt, "--now", str(NOW), str(ld))
                outs.append(r.out + r.err)
    (ld / "replication-offset-checkpoint").write_text("0\n0\n")
    outs.append(run_cli("retain", "--retention-ms", "0", "--partition", "orders-0", str(ld)).out)
    text = "\n".join(outs)
    assert "§" not in text and "None" not in text and "kafka-on-disk" not in text
    said = flat(text)
    assert "delete 00000000000000000000.log 1.89 KiB 2023-11-14T22:13:32.000Z" in said
    assert "largest timestamp 1700000012000 (time index), age 38 s" in said            # --details
    assert '"largest_timestamp":1700000012000,"largest_timestamp_iso":"2023-11-14T22:13:32.000Z"' in text
    assert "now 2023-11-14T22:14:10.000Z (1700000050000), from --now" in said
    assert "cleaner-offset-checkpoint: would set absent -> 78" in text
    assert "high watermark unknown" in text


def test_retention_ms_shorthand_is_checked_as_kafka_checks_retention_ms(tmp_path):
    """``LogConfig``: retention.ms ≥ -1 (2.4+); the shorthand goes through the same check as --config."""
    ld = copy_logdir(tmp_path / "logdir")
    r = run_cli("retain", "--retention-ms", "-5", str(ld / "orders-0"))
    assert r.code == 2 and "retention.ms='-5' from --retention-ms -5: Value must be at least -1" in r.err


# --- tiered storage -------------------------------------------------------------------------------------------

from test_topic_config_remote import RLM_RECORDS, build  # noqa: E402

SYSTEM_ON = "remote.log.storage.system.enable=true\n"
TIERED_NOW = T0 + 10_000        # every record is older than local.retention.ms=1000 (retention.ms=-1)


def tiered(tmp_path, rlm_high_watermark=9, **kw) -> tuple[Path, Path | None]:
    """``tiered-0`` and ``tiered-1``: local segments 0-99, 100-199, 200-249 (active; leader epoch 1 from 150),
    ``remote.storage.enable=true``, ``local.retention.ms=1000``, ``retention.ms=-1``; ``__remote_log_metadata-0``
    says (test_topic_config_remote): tiered-0 uploaded 0-99 and 100-199, tiered-1 0-49, below its high watermark."""
    ld, sp = build(tmp_path, hw=rlm_high_watermark, **kw)
    hws = {("tiered", 0): 250, ("tiered", 1): 250}
    if (ld / "__remote_log_metadata-0").exists():
        hws[("__remote_log_metadata", 0)] = rlm_high_watermark
    (ld / "replication-offset-checkpoint").write_text(build_offset_checkpoint(hws))
    assert len(RLM_RECORDS) == 9
    return ld, sp


def side_files(ld: Path) -> dict:
    return {p: (ld / p).read_bytes() if (ld / p).exists() else None
            for p in ("log-start-offset-checkpoint", "tiered-0/leader-epoch-checkpoint",
                      "tiered-1/leader-epoch-checkpoint")}


def test_tiered_segments_not_known_to_be_uploaded_survive_and_the_log_start_stays(tmp_path):
    """``UnifiedLog.deletableSegments``: a tiered segment goes only when upperBound - 1 ≤
    highestOffsetInRemoteStorage; ``incrementStartOffset`` then moves only the local log start offset
    (``maybeIncrementLocalLogStartOffset``): log-start-offset-checkpoint and the leader epochs stay."""
    ld, sp = tiered(tmp_path, server_props=SYSTEM_ON)
    (ld / "log-start-offset-checkpoint").write_text(build_offset_checkpoint({("tiered", 0): 0, ("tiered", 1): 0}))
    before = side_files(ld)
    r = run_cli("retain", "--topic", "tiered", "--server-properties", str(sp), "--now", str(TIERED_NOW),
                "--format", "json", str(ld))
    objs = {o["partition"]: o for o in json_objects(r.out)}
    # tiered-0: 0-99 and 100-199 are uploaded (highest offset 199); the active segment stays
    assert bases(ld / "tiered-0") == [200]
    assert objs["tiered-0"]["tiered"]["remote_log_end_offset"] == 199
    assert objs["tiered-0"]["log_start_offset"] == {"old": 0, "new": 0}
    assert objs["tiered-0"]["local_log_start_offset"] == 200
    ms = {c["key"]: c for c in objs["tiered-0"]["config"]}["local.retention.ms"]
    assert ms["value"] == 1000 and ms["source_kind"] == "topic"
    # tiered-1: only 0-49 is uploaded, so segment 0 (0-99) may not go, and deletion stops there
    assert bases(ld / "tiered-1") == [0, 100, 200]
    assert objs["tiered-1"]["problem"] and [p["kind"] for p in objs["tiered-1"]["problems"]] == ["not_uploaded"]
    assert side_files(ld) == before                 # the log start offset (the remote one) and epochs unchanged
    assert r.code == 1
    text = run_cli("retain", "--topic", "tiered", "--dry-run", "--details", "--server-properties", str(sp), "--now",
                   str(TIERED_NOW), str(ld)).out
    assert ("problem: 00000000000000000000.log would go (older than local.retention.ms=1000 (1 s)) but is not "
            "known to be uploaded to remote storage: kept") in flat(text)
    assert "tiered-0: no segment goes; log start offset 0 (unchanged: tiered topic), local log start offset " \
           "200" in flat(text)                  # what the real run above left
    for p in ("tiered-0", "tiered-1"):
        assert run_cli("verify", str(ld / p)).code == 0


def test_tiered_uploads_seen_only_below_the_metadata_high_watermark(tmp_path):
    """The COPY_SEGMENT_FINISHED of 100-199 is at offset 8 of __remote_log_metadata-0: with its high
    watermark at 8 it is not committed, so 100-199 is not known to be uploaded and stays."""
    ld, sp = tiered(tmp_path, rlm_high_watermark=8, server_props=SYSTEM_ON)
    r = run_cli("retain", "--partition", "tiered-0", "--server-properties", str(sp), "--now", str(TIERED_NOW), str(ld))
    assert bases(ld / "tiered-0") == [100, 200] and r.code == 1
    assert "remote storage: offsets up to 99 are known to be uploaded (__remote_log_metadata" in flat(r.out)
    assert "problem: 00000000000000000100.log would go" in flat(r.out)


def test_tiered_without_upload_facts_deletes_nothing(tmp_path):
    ld, _sp = tiered(tmp_path, remote_dir=False)          # no __remote_log_metadata, no server.properties
    before = tree(ld)
    r = run_cli("retain", "--topic", "tiered", "--dry-run", "--now", str(TIERED_NOW), str(ld))
    assert "the highest offset uploaded is unknown" in flat(r.out) and r.code == 1
    assert "remote.log.storage.system.enable unknown without --server-properties, assumed true" in flat(r.out)
    r = run_cli("retain", "--topic", "tiered", "--now", str(TIERED_NOW), str(ld))
    assert r.code == 1 and tree(ld) == before
    # the operator knows better: --remote-log-end-offset
    r = run_cli("retain", "--topic", "tiered", "--now", str(TIERED_NOW), "--remote-log-end-offset", "tiered-1:99",
                str(ld))
    assert bases(ld / "tiered-1") == [100, 200] and bases(ld / "tiered-0") == [0, 100, 200]


def test_local_retention_applies_only_to_tiered_topics(tmp_path):
    """With the broker's tiered storage off, the topic is not tiered (``UnifiedLog.isRemoteLogEnabled``):
    retention.ms=-1 applies, local.retention.ms does not."""
    ld, sp = tiered(tmp_path, server_props="remote.log.storage.system.enable=false\n")
    r = run_cli("retain", "--topic", "tiered", "--server-properties", str(sp), "--now", str(TIERED_NOW), str(ld))
    assert r.code == 0 and bases(ld / "tiered-0") == [0, 100, 200]


def test_delete_records_on_a_tiered_topic_moves_the_log_start(tmp_path):
    """DeleteRecords: ``maybeIncrementLogStartOffset`` raises the log start offset (written to the checkpoint:
    a tiered topic is always listed, KAFKA-16146) and truncates the leader epochs; a segment below it goes
    even when not uploaded (``allowDeletionDueToLogStartOffsetIncremented``, 3.7+)."""
    ld, sp = tiered(tmp_path, server_props=SYSTEM_ON)
    r = run_cli("retain", "--partition", "tiered-1", "--log-start-offset", "150", "--server-properties", str(sp),
                "--now", str(TIERED_NOW), str(ld))
    assert bases(ld / "tiered-1") == [100, 200]
    assert "tiered 1 150" in (ld / "log-start-offset-checkpoint").read_text()
    assert (ld / "tiered-1" / "leader-epoch-checkpoint").read_text().splitlines()[2:] == ["1 150"]
    assert r.code == 1                      # 100-199 breaches local retention but is not uploaded


def _tiered_state(d: Path) -> list:
    out = [(log.parent.name, b.base_offset, b.last_offset, b.crc) for log in sorted(d.rglob("tiered-*/*.log"))
           for b in BatchReader(log.read_bytes())]
    return out + [side_files(d)]


def test_kill_at_every_file_operation_on_the_tiered_path(tmp_path):
    """Kill retain at every file operation of a tiered run, then recover and re-run (and, separately, just
    re-run): the same segments survive and the log start offset and epochs never move."""
    from crash_harness import kill_at_every_operation
    ld, sp = tiered(tmp_path / "src", server_props=SYSTEM_ON)
    args = ["retain", "--topic", "tiered", "--server-properties", str(sp), "--now", str(TIERED_NOW),
            "--remote-log-end-offset", "tiered-1:99"]
    for recover_first in (True, False):
        kill_at_every_operation(tmp_path / f"run-{recover_first}", ld, args, _tiered_state, backup=recover_first,
                                recover_first=recover_first)


# --- a real KRaft broker's metadata (../shared/corpus/real) ---------------------------------------------------

import os  # noqa: E402
import shutil  # noqa: E402

from conftest import CORPUS, needs_corpus  # noqa: E402
from kafkalog_formats.checkpoint import parse_offset_checkpoint  # noqa: E402
from test_compact import model  # noqa: E402

YASHASVI = CORPUS / "Yashasvi960__kafka-service" / "kafka-data"
DONALD = CORPUS / "DonaldY__kafka-2.7.1" / "kafka-logs"
CHANGELOG = "my-kafka-streams-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog-0"
MINUTE = 60_000


def _writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.chmod(dst, 0o755)
    return dst


def _newest_timestamp(pdir: Path) -> int:
    return max(b.max_timestamp for log in pdir.glob("*.log") for b in BatchReader(log.read_bytes()))


@pytest.fixture
def real_kraft(tmp_path):
    """A copy of a real 3.x KRaft broker's log directory (its metadata: snapshot + log), with data where the
    corpus has none or a single segment: three ``__consumer_offsets`` partitions get the segments a 2.7 broker
    wrote for the same partitions (DonaldY), and the Kafka Streams changelog (``cleanup.policy=compact,delete``,
    ``retention.ms=86430000`` in the metadata) 900 records in 9 segments, one every 10 minutes, 20 keys.
    Returns (log dir, "now": 2 days after the newest record of vehicle.avg.speed-0)."""
    ld = _writable_copy(YASHASVI, tmp_path / "kafka-data")
    for n in (17, 28, 39):
        d = ld / f"__consumer_offsets-{n}"
        for f in d.iterdir():
            if f.name != "partition.metadata":
                f.unlink()
        for f in (DONALD / f"__consumer_offsets-{n}").iterdir():
            shutil.copy(f, d / f.name)
            os.chmod(d / f.name, 0o644)
    speed = ld / "vehicle.avg.speed-0"             # the corpus has no .timeindex: Kafka falls back to the mtime
    newest = _newest_timestamp(speed)
    for log in speed.glob("*.log"):
        os.utime(log, ns=(newest * 1_000_000, newest * 1_000_000))
    now = newest + 2 * 86_400_000
    start = now - 900 * 10 * MINUTE
    w = PartitionWriter(ld / CHANGELOG, segment_bytes=1 << 30)
    for n in range(900):
        if n and n % 100 == 0:
            w.roll()
        w.append(build_batch(n, [RecordSpec(0, start + n * 10 * MINUTE, b"key-%d" % (n % 20), b"count %d" % n)]),
                 start + n * 10 * MINUTE)
    w.close()
    path = ld / "replication-offset-checkpoint"
    hws = parse_offset_checkpoint(path.read_bytes(), str(path))
    for n in (17, 28, 39):
        hws[("__consumer_offsets", n)] = max(b.last_offset + 1 for log in (ld / f"__consumer_offsets-{n}").glob("*.log")
                                             for b in BatchReader(log.read_bytes()))
    assert hws[(CHANGELOG.rsplit("-", 1)[0], 0)] == 900          # the broker's own high watermark
    path.write_text(build_offset_checkpoint(hws))
    return ld, now


@needs_corpus
def test_real_metadata_compact_all_cleans_the_compacted_topics_it_names(real_kraft):
    """The metadata says __consumer_offsets is cleanup.policy=compact (as GroupCoordinator creates it) and the
    changelog compact,delete; every other topic has no override (delete): only the first two are cleaned."""
    ld, now = real_kraft
    expected = {name: model(ld / name, int(sorted((ld / name).glob("*.log"))[-1].name[:20]), now)
                for name in ("__consumer_offsets-17", "__consumer_offsets-28", "__consumer_offsets-39", CHANGELOG)}
    others = {d.name: tree(d) for d in ld.iterdir() if d.is_dir() and d.name.startswith(("vehicle", "__cluster"))}
    r = run_cli("compact", "--all", "--force", "--now", str(now), "--format", "json", str(ld))
    objs = {o["partition"]: o for o in json_objects(r.out)}
    for name, keep in expected.items():
        assert [rec.offset for log in sorted((ld / name).glob("*.log")) for b in BatchReader(log.read_bytes())
                for rec in b.records()] == keep, name
        policy = {c["key"]: c for c in objs[name]["config"]}["cleanup.policy"]
        assert policy["source_kind"] == "topic" and "metadata snapshot 00000000000000010830-0000000003" in \
            policy["source"]
        assert run_cli("verify", str(ld / name)).code == 0
    assert len(expected[CHANGELOG]) < 900 and objs[CHANGELOG]["groups"]
    assert {c["key"]: c["value"] for c in objs["__consumer_offsets-17"]["config"]}["segment.bytes"] == 100 << 20
    assert "cleanup.policy=delete" in objs["vehicle.avg.speed-0"]["untouched"]
    assert "KRaft metadata log" in objs["__cluster_metadata-0"]["untouched"]
    assert {d: tree(ld / d) for d in others} == others
    assert r.code == 0, r.out


@needs_corpus
def test_real_metadata_retain_all_applies_the_topics_own_retention(real_kraft, tmp_path):
    """server.properties says 30 days; the changelog's own retention.ms (1 day + 30 s) deletes its segments
    whose newest record is older than that; __consumer_offsets (compact) keeps records years older than 30
    days: Kafka applies only the log start offset to a compacted topic."""
    ld, now = real_kraft
    sp = tmp_path / "server.properties"
    sp.write_text("log.retention.hours=720\n")
    offsets_before = {n: tree(ld / f"__consumer_offsets-{n}") for n in (17, 28, 39)}
    speed_before = bases(ld / "vehicle.avg.speed-0")
    start = now - 900 * 10 * MINUTE
    newest = [start + (100 * i + 99) * 10 * MINUTE for i in range(9)]
    gone = [100 * i for i in range(8) if now - newest[i] > 86_430_000]      # never the active segment (800)
    assert gone == [0, 100, 200, 300, 400, 500, 600]
    r = run_cli("retain", "--all", "--server-properties", str(sp), "--now", str(now), "--format", "json", str(ld))
    objs = {o["partition"]: o for o in json_objects(r.out)}
    assert bases(ld / CHANGELOG) == [b for b in range(0, 900, 100) if b not in gone]
    ms = {c["key"]: c for c in objs[CHANGELOG]["config"]}["retention.ms"]
    assert ms["value"] == 86_430_000 and ms["source_kind"] == "topic"
    assert {n: tree(ld / f"__consumer_offsets-{n}") for n in (17, 28, 39)} == offsets_before
    assert bases(ld / "vehicle.avg.speed-0") == speed_before
    ms = {c["key"]: c for c in objs["vehicle.avg.speed-0"]["config"]}["retention.ms"]
    assert ms["value"] == 720 * HOUR and ms["source"] == "server.properties (log.retention.hours=720)"
    assert "only the log start offset" in " ".join(objs["__consumer_offsets-17"]["notes"])
    assert run_cli("verify", str(ld / CHANGELOG)).code == 0
    # without the broker's server.properties the built-in 7 days would decide vehicle.avg.speed: left out
    r = run_cli("retain", "--all", "--dry-run", "--now", str(now), str(ld))
    said = flat(r.out)
    assert r.code == 0 and "not applied, only Kafka's built-in default sets it: retention.ms=604800000 (7 days) " \
        "for telemetry, vehicle.avg.speed, vehicle.telemetry" in said


@needs_corpus
def test_real_metadata_deleted_and_recreated_topic_leftover_is_left_alone(tmp_path):
    """vehicle.telemetry was deleted (RemoveTopicRecord at offset 5676, before the latest snapshot, so the
    metadata the broker loads no longer knows its first id) and recreated under a new id: a directory still
    carrying the first incarnation's id is a stray to the broker (LogManager.findStrayReplicas); neither
    command touches it, and both say so (exit 1)."""
    ld = _writable_copy(YASHASVI, tmp_path / "kafka-data")
    stray = ld / "vehicle.telemetry-1"
    stray.mkdir()
    for f in (ld / "vehicle.avg.speed-0").glob("0*"):
        shutil.copy(f, stray / f.name)
    (stray / "partition.metadata").write_text(build_partition_metadata("1DWgupWVSRykljwZzLYBVQ"))
    before = tree(stray)
    sp = tmp_path / "server.properties"
    sp.write_text("log.retention.ms=1\n")
    for argv in (["retain", "--all", "--server-properties", str(sp)], ["compact", "--all", "--force"]):
        r = run_cli(*argv, "--config", "vehicle.telemetry:cleanup.policy=compact,delete", "--format", "json",
                    str(ld))
        (obj,) = [o for o in json_objects(r.out) if o["partition"] == "vehicle.telemetry-1"]
        assert obj["topic_status"] == "deleted_topic" and obj["problem"]
        assert "topic id 1DWgupWVSRykljwZzLYBVQ is not in the metadata" in obj["untouched"]
        assert "5RxlknBbTbWdXzza5ANNpQ" in obj["untouched"]          # the id of the topic as it is now
        assert r.code == 1 and tree(stray) == before


def test_a_stray_log_is_named_once_as_left_untouched(tmp_path):
    """A partition directory whose topic id the metadata does not hold is a stray log to a KRaft broker
    (LogManager.findStrayReplicas, 3.7+): the report names it once, in its own block, as left untouched,
    and the run exits 1."""
    d = copy_logdir(tmp_path / "logdir", metadata=True)
    (d / "payments-0" / "partition.metadata").write_text(build_partition_metadata("1DWgupWVSRykljwZzLYBVQ"))
    for cmd in ("retain", "compact"):
        r = run_cli(cmd, "--all", "--dry-run", str(d))
        said = flat(r.out)
        assert r.code == 1 and said.startswith(f"{cmd} --dry-run: ") and "1 partition with problems" in said
        assert said.count("payments-0: left untouched:") == 1 and "would treat it as a stray log" in said, r.out
        assert said.count("payments-0") == 1


def test_compact_says_when_the_broker_has_its_cleaner_off(tmp_path):
    """LogManager.startup creates the LogCleaner only when log.cleaner.enable (0.9-4.0): compact still
    does what it is asked, and says the broker itself would not."""
    d = copy_logdir(tmp_path / "logdir")
    props = tmp_path / "server.properties"
    props.write_text("log.cleaner.enable=false\n")
    r = run_cli("compact", "--dry-run", "--server-properties", str(props), "--force", str(d / "compacted-0"))
    assert "note: log.cleaner.enable=false (server.properties" in flat(r.out)
    assert "this broker never compacts" in flat(r.out)
    props.write_text("log.cleaner.enable=true\n")
    r = run_cli("compact", "--dry-run", "--server-properties", str(props), "--force", str(d / "compacted-0"))
    assert "log.cleaner.enable" not in r.out


@pytest.mark.parametrize("command", ["retain", "compact"])
@pytest.mark.parametrize("where", ["flag", "server.properties", "topic-configs"])
def test_an_integer_of_thousands_of_digits_is_out_of_range_not_a_crash(tmp_path, command, where):
    """Issue 24, item 6: Python refuses int() on more than 4,300 digits (ValueError and a traceback); Java's
    Long.parseLong calls it out of range, and so does kafkalog: a usage error from a flag (exit 2), a
    configuration Kafka would reject from the broker's files (exit 3), the value shortened in the message."""
    ld = copy_logdir(tmp_path / "logdir")
    big = "9" * 5000
    args = {"flag": ["--config", f"retention.ms={big}"]}.get(where, [])
    if where == "server.properties":
        (tmp_path / "server.properties").write_text(f"log.retention.ms={big}\n")
        args = ["--server-properties", str(tmp_path / "server.properties")]
    elif where == "topic-configs":
        (tmp_path / "configs").mkdir()
        (tmp_path / "configs" / "orders.properties").write_text(f"retention.ms={big}\n")
        args = ["--topic-configs", str(tmp_path / "configs")]
    extra = ["--force", "--config", "cleanup.policy=compact"] if command == "compact" else []
    before = tree(ld)
    r = run_cli(command, "--dry-run", *extra, *args, str(ld / "orders-0"))
    assert r.code == (2 if where == "flag" else 3), r.out + r.err
    assert "out of range for a 64-bit integer" in r.err and "(5,000 characters)" in r.err
    assert len(r.err) < 600 and tree(ld) == before
