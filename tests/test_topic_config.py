"""Topic configuration resolution: Kafka's value parsing, broker-property precedence (server.properties and
dynamic broker configs), topic overrides, command-line flags, ZooKeeper-era kafka-configs output.

Expected values are Kafka's documented/implemented behaviour (KafkaConfig.logRetentionTimeMillis,
ServerTopicConfigSynonyms, DynamicBrokerConfig.overrideProps/fromPersistentProps, ConfigDef.parseType,
LogConfig validators, ConfigCommand output), worked out by hand here.
"""
from __future__ import annotations

import math

import pytest

from kafkalog_cli.engine.config_keys import BadValue, TOPIC_KEYS, parse_value
from kafkalog_cli.engine.config_resolver import ConfigResolver, load_topic_configs, parse_config_flag
from kafkalog_cli.engine.topic_config import BrokerConfig, ConfigError, Source, resolve_topic
from kafkalog_formats.config_describe import parse_config_describe

HOUR, MINUTE, WEEK = 3_600_000, 60_000, 7 * 24 * 3_600_000


def static(**props):
    return {k.replace("_", "."): (v, Source("server_properties", f"server.properties ({k.replace('_', '.')})"))
            for k, v in props.items()}


def layer(kind, props):
    return {k: (v, Source(kind, f"{kind} {k}")) for k, v in props.items()}


# --- ConfigDef.parseType and LogConfig validators ----------------------------------------------

@pytest.mark.parametrize("key,raw,expected", [
    ("retention.ms", " 1000 ", 1000),                 # String.trim
    ("retention.ms", "+5", 5),                        # Long.parseLong accepts a plus sign
    ("retention.ms", "-1", -1),
    ("retention.bytes", "-7", -7),                    # no validator: any long
    ("cleanup.policy", "compact, delete", ("compact", "delete")),
    ("cleanup.policy", "", ()),                       # an empty list is valid
    ("min.cleanable.dirty.ratio", "0.25", 0.25),
    ("min.cleanable.dirty.ratio", "1", 1.0),
    ("min.cleanable.dirty.ratio", ".5d", 0.5),        # Double.parseDouble: type suffix
    ("min.cleanable.dirty.ratio", "1e-1", 0.1),
    ("remote.storage.enable", "TRUE", True),          # equalsIgnoreCase
    ("segment.bytes", "14", 14),
    ("local.retention.ms", "-2", -2),
])
def test_values_kafka_accepts(key, raw, expected):
    assert parse_value(TOPIC_KEYS[key], raw) == expected


def test_nan_ratio_passes_the_range_check_as_in_kafka():
    # ConfigDef.Range compares with < and >: NaN is neither below 0 nor above 1
    assert math.isnan(parse_value(TOPIC_KEYS["min.cleanable.dirty.ratio"], "NaN"))


@pytest.mark.parametrize("key,raw", [
    ("retention.ms", "1_000"), ("retention.ms", "1e3"), ("retention.ms", "-2"), ("retention.ms", ""),
    ("retention.ms", "9223372036854775808"), ("segment.bytes", "13"), ("segment.bytes", "2147483648"),
    ("cleanup.policy", "Compact"), ("cleanup.policy", "compact,deleted"), ("min.cleanable.dirty.ratio", "1.5"),
    ("min.cleanable.dirty.ratio", "-0.1"), ("remote.storage.enable", "yes"), ("local.retention.bytes", "-3"),
    ("message.timestamp.type", "createtime"), ("max.compaction.lag.ms", "0"), ("delete.retention.ms", "-1"),
])
def test_values_kafka_rejects(key, raw):
    with pytest.raises(BadValue):
        parse_value(TOPIC_KEYS[key], raw)


# --- server.properties: log.retention.ms > .minutes > .hours ------------------------------------

@pytest.mark.parametrize("props,expected", [
    ({}, WEEK),                                                        # log.retention.hours default 168
    ({"log.retention.hours": "1"}, HOUR),
    ({"log.retention.minutes": "5", "log.retention.hours": "1"}, 5 * MINUTE),
    ({"log.retention.ms": "42", "log.retention.minutes": "5", "log.retention.hours": "1"}, 42),
    ({"log.retention.ms": "-5"}, -1),                                  # any negative means unlimited
    ({"log.retention.hours": "-1"}, -1),
])
def test_retention_ms_precedence_in_server_properties(props, expected):
    broker = BrokerConfig(static(**{k.replace(".", "_"): v for k, v in props.items()}), static_known=True)
    broker.validate_static()
    assert broker.topic_default("retention.ms").value == expected


def test_segment_ms_from_log_roll_hours_and_source_names_the_property():
    broker = BrokerConfig(static(log_roll_hours="2"), static_known=True)
    st = broker.topic_default("segment.ms")
    assert st.value == 2 * HOUR and st.source.kind == "server_properties" and "log.roll.hours" in str(st.source)
    assert BrokerConfig().topic_default("segment.ms").value == WEEK
    assert BrokerConfig(static(log_roll_ms="5", log_roll_hours="2")).topic_default("segment.ms").value == 5


def test_broker_property_behind_each_cleaner_and_segment_key():
    broker = BrokerConfig(static(log_cleanup_policy="compact", log_segment_bytes="1048576",
                                 log_cleaner_min_cleanable_ratio="0.1", log_cleaner_delete_retention_ms="10",
                                 log_cleaner_min_compaction_lag_ms="20", log_cleaner_max_compaction_lag_ms="30",
                                 log_index_interval_bytes="100", log_index_size_max_bytes="4096",
                                 log_segment_delete_delay_ms="0", log_retention_bytes="999",
                                 log_local_retention_ms="5"), static_known=True)
    expected = {"cleanup.policy": ("compact",), "segment.bytes": 1048576, "min.cleanable.dirty.ratio": 0.1,
                "delete.retention.ms": 10, "min.compaction.lag.ms": 20, "max.compaction.lag.ms": 30,
                "index.interval.bytes": 100, "segment.index.bytes": 4096, "file.delete.delay.ms": 0,
                "retention.bytes": 999, "local.retention.ms": 5}
    assert {k: broker.topic_default(k).value for k in expected} == expected
    assert all(broker.topic_default(k).source.kind == "server_properties" for k in expected)
    # topic keys without a broker property: LogConfig defaults
    assert broker.topic_default("remote.storage.enable").value is False


@pytest.mark.parametrize("props,key", [({"log_retention_hours": "abc"}, "log.retention.hours"),
                                       ({"log_retention_ms": "0"}, "log.retention.ms"),
                                       ({"log_cleanup_policy": "compact,none"}, "log.cleanup.policy"),
                                       ({"log_segment_bytes": "10"}, "log.segment.bytes")])
def test_bad_server_properties_is_an_error_naming_key_value_and_file(props, key):
    broker = BrokerConfig(static(**props), static_known=True)
    with pytest.raises(ConfigError) as e:
        broker.validate_static()
    p = e.value.problems[0]
    assert p.key == key and "server.properties" in str(p.source)


# --- dynamic broker configs (DynamicBrokerConfig) ----------------------------------------------

def test_dynamic_layers_override_static_with_synonyms_removed():
    st = static(log_retention_ms="1000")
    # a cluster-wide dynamic default beats server.properties
    b = BrokerConfig(st, layer("cluster_default", {"log.retention.ms": "2000"}))
    assert b.topic_default("retention.ms").value == 2000
    assert b.topic_default("retention.ms").source.kind == "cluster_default"
    # the broker's own dynamic config beats the cluster-wide default
    b = BrokerConfig(st, layer("cluster_default", {"log.retention.ms": "2000"}),
                     layer("broker", {"log.retention.ms": "3000"}))
    assert b.topic_default("retention.ms").value == 3000
    # log.retention.hours cannot be set dynamically (not in DynamicLogConfig.ReconfigurableConfigs): ignored
    b = BrokerConfig(st, layer("cluster_default", {"log.retention.hours": "1"}))
    assert b.topic_default("retention.ms").value == 1000
    assert any("log.retention.hours" in n for n in b.notes)
    # a dynamic value of the wrong type is ignored (removeInvalidConfigs), the static one stays
    b = BrokerConfig(st, layer("cluster_default", {"log.retention.ms": "soon"}))
    assert b.topic_default("retention.ms").value == 1000 and b.notes


def test_dynamic_log_roll_ms_hides_static_log_roll_hours_and_keeps_priority():
    # overrideProps removes the synonyms of the dynamic key from the static layer
    b = BrokerConfig(static(log_roll_hours="5"), layer("cluster_default", {"log.roll.ms": "77"}))
    assert b.topic_default("segment.ms").value == 77
    b = BrokerConfig(static(log_retention_hours="5", log_retention_minutes="7"),
                     layer("cluster_default", {"log.retention.ms": "-3"}))
    assert b.topic_default("retention.ms").value == -1


# --- topic overrides and flags -------------------------------------------------------------------

def test_precedence_topic_override_then_flags():
    broker = BrokerConfig(static(log_retention_hours="1", log_cleanup_policy="delete"), static_known=True)
    over = layer("topic", {"retention.ms": "5000", "cleanup.policy": "compact"})
    tc = resolve_topic("orders", broker, over)
    assert tc.value("retention.ms") == 5000 and tc.compact and not tc.delete
    tc = resolve_topic("orders", broker, over, all_flags=layer("flag", {"retention.ms": "6000"}))
    assert tc.value("retention.ms") == 6000 and tc["retention.ms"].source.kind == "flag"
    tc = resolve_topic("orders", broker, over, all_flags=layer("flag", {"retention.ms": "6000"}),
                       topic_flags=layer("flag", {"retention.ms": "7000"}))
    assert tc.value("retention.ms") == 7000
    assert tc["segment.bytes"].value == 1 << 30 and tc["segment.bytes"].source.kind == "kafka_default"


def test_malformed_topic_value_names_topic_key_value_and_source():
    with pytest.raises(ConfigError) as e:
        resolve_topic("orders", BrokerConfig(), layer("topic", {"cleanup.policy": "compact,archive",
                                                                "retention.ms": "x"}))
    problems = {p.key: p for p in e.value.problems}
    assert set(problems) == {"cleanup.policy", "retention.ms"}
    assert problems["cleanup.policy"].topic == "orders" and problems["cleanup.policy"].value == "compact,archive"
    assert "topic cleanup.policy" in str(problems["cleanup.policy"].source)
    assert "orders" in str(e.value) and "'compact,archive'" in str(e.value)


def test_unknown_key_is_an_error_from_a_flag_but_a_note_from_metadata():
    with pytest.raises(ConfigError):
        resolve_topic("t", BrokerConfig(), {}, topic_flags=layer("flag", {"retention.msec": "1"}))
    tc = resolve_topic("t", BrokerConfig(), layer("topic", {"some.future.key": "1"}))
    assert tc.notes and "some.future.key" in tc.notes[0]


@pytest.mark.parametrize("spec,expected", [("retention.ms=5", (None, "retention.ms", "5")),
                                           ("orders:retention.ms=5", ("orders", "retention.ms", "5")),
                                           ("orders:cleanup.policy=compact,delete",
                                            ("orders", "cleanup.policy", "compact,delete"))])
def test_config_flag_forms(spec, expected):
    assert parse_config_flag(spec) == expected


def test_local_retention_minus_two_means_the_topic_retention_when_tiered():
    over = layer("topic", {"remote.storage.enable": "true", "retention.ms": "1000", "retention.bytes": "500"})
    tc = resolve_topic("t", BrokerConfig(static(remote_log_storage_system_enable="true"), static_known=True), over)
    assert tc.tiered and tc.remote_copy_enabled
    assert tc.local_retention("ms").value == 1000 and "local.retention.ms=-2" in str(tc.local_retention("ms").source)
    over["local.retention.ms"] = ("100", Source("topic", "x"))
    tc = resolve_topic("t", BrokerConfig(static(remote_log_storage_system_enable="true"), static_known=True), over)
    assert tc.local_retention("ms").value == 100 and tc.local_retention("bytes").value == 500
    # remote.log.copy.disable=true: UnifiedLog uses retention.ms/bytes themselves
    over["remote.log.copy.disable"] = ("true", Source("topic", "x"))
    tc = resolve_topic("t", BrokerConfig(static(remote_log_storage_system_enable="true"), static_known=True), over)
    assert tc.tiered and not tc.remote_copy_enabled and tc.local_retention("ms").value == 1000


@pytest.mark.parametrize("topic,props,static_props,tiered", [
    ("t", {"remote.storage.enable": "true"}, {"remote_log_storage_system_enable": "true"}, True),
    ("t", {"remote.storage.enable": "true"}, {}, False),                       # system default false
    ("t", {"remote.storage.enable": "true", "cleanup.policy": "compact"},
     {"remote_log_storage_system_enable": "true"}, False),                     # compacted: never tiered
    ("__consumer_offsets", {"remote.storage.enable": "true"}, {"remote_log_storage_system_enable": "true"}, False),
    ("t", {}, {"remote_log_storage_system_enable": "true"}, False),
])
def test_tiered_detection(topic, props, static_props, tiered):
    tc = resolve_topic(topic, BrokerConfig(static(**static_props), static_known=True), layer("topic", props))
    assert tc.tiered is tiered, tc.tiered_reason


def test_tiered_assumed_when_the_broker_setting_is_unknown():
    tc = resolve_topic("t", BrokerConfig(), layer("topic", {"remote.storage.enable": "true"}))
    assert tc.tiered and "unknown" in tc.tiered_reason


def test_internal_topic_creation_settings_only_without_metadata():
    broker = BrokerConfig(static(offsets_topic_segment_bytes="1048576", transaction_state_log_segment_bytes="2097152"),
                          static_known=True)
    co = resolve_topic("__consumer_offsets", broker, {}, use_internal_defaults=True)
    assert co.compact and not co.delete and co.value("segment.bytes") == 1048576
    ts = resolve_topic("__transaction_state", broker, {}, use_internal_defaults=True)
    assert ts.compact and ts.value("segment.bytes") == 2097152 and ts.value("min.insync.replicas") == 2
    assert resolve_topic("__consumer_offsets", broker, {}).delete     # metadata without overrides: broker's



def test_remote_log_metadata_is_created_to_be_kept_forever_unless_the_rlmm_says_otherwise():
    """TopicBasedRemoteLogMetadataManager.createRemoteLogMetadataTopicRequest (3.6-4.x): retention.ms from
    remote.log.metadata.topic.retention.ms (default -1) under the RLMM prefix, cleanup.policy=delete; a
    retain run without metadata must not apply the broker's 7-day default to it."""
    broker = BrokerConfig(static(log_retention_hours="1"), static_known=True)
    rl = resolve_topic("__remote_log_metadata", broker, {}, use_internal_defaults=True)
    assert rl.value("retention.ms") == -1 and rl.delete and not rl.compact
    assert resolve_topic("__remote_log_metadata", broker, {}).value("retention.ms") == 3600000
    props = {"rlmm.config.remote.log.metadata.topic.retention.ms": ("86400000", Source("server_properties", "x"))}
    assert resolve_topic("__remote_log_metadata", BrokerConfig(props, static_known=True), {},
                         use_internal_defaults=True).value("retention.ms") == 86400000
    props = {"remote.log.metadata.manager.impl.prefix": ("rl.", Source("server_properties", "x")),
             "rl.remote.log.metadata.topic.retention.ms": ("5000", Source("server_properties", "x"))}
    assert resolve_topic("__remote_log_metadata", BrokerConfig(props, static_known=True), {},
                         use_internal_defaults=True).value("retention.ms") == 5000

# --- ZooKeeper-era input: kafka-configs.sh output and .properties files ------------------------

ALL_OUTPUT = """\
All configs for topic orders are:
  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}
  retention.ms=3600000 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.hours=1, DEFAULT_CONFIG:log.retention.hours=168}
  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}
Dynamic configs for topic payments are:
  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}
Default configs for brokers in the cluster are:
  log.retention.bytes=5000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=5000}
"""
ZK_OUTPUT = "Configs for topic 'legacy' are cleanup.policy=compact,delete,min.compaction.lag.ms=100\n" \
            "Configs for topic 'plain' are \n"


def test_parse_admin_client_describe_output():
    entries = parse_config_describe(ALL_OUTPUT)
    assert [(e.entity, e.name, e.value, e.source) for e in entries] == [
        ("orders", "cleanup.policy", "compact,delete", "DYNAMIC_TOPIC_CONFIG"),
        ("orders", "retention.ms", "3600000", "STATIC_BROKER_CONFIG"),
        ("orders", "segment.bytes", "1073741824", "DEFAULT_CONFIG"),
        ("payments", "retention.ms", "1000", "DYNAMIC_TOPIC_CONFIG"),
        ("", "log.retention.bytes", "5000", "DYNAMIC_DEFAULT_BROKER_CONFIG")]


def test_parse_zookeeper_describe_output_with_commas_in_values():
    entries = parse_config_describe(ZK_OUTPUT)
    assert [(e.entity, e.name, e.value) for e in entries] == [
        ("legacy", "cleanup.policy", "compact,delete"), ("legacy", "min.compaction.lag.ms", "100")]


def zk_logdir(tmp_path, text, name="configs.txt"):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    (logdir / "orders-0").mkdir()
    (logdir / "meta.properties").write_text("version=0\nbroker.id=1\n")
    f = tmp_path / name
    f.write_text(text)
    return logdir, f


def test_zookeeper_era_directory_with_kafka_configs_output(tmp_path):
    logdir, f = zk_logdir(tmp_path, ALL_OUTPUT + ZK_OUTPUT)
    r = ConfigResolver.open(logdir, topic_configs=f)
    assert r.metadata is None and any("configs.txt" in s for s in r.sources)
    pc = r.partition(logdir / "orders-0")
    assert pc.status == "not_in_metadata_mode"
    assert pc.config.compact and pc.config.delete
    assert pc.config.value("retention.ms") == 3600000 and pc.config["retention.ms"].source.kind == "described"
    assert "configs.txt line 2" in str(pc.config["cleanup.policy"].source)
    assert r.topic("payments").value("retention.ms") == 1000
    assert r.topic("payments").value("retention.bytes") == 5000          # the cluster-wide dynamic default
    assert r.topic("legacy").value("min.compaction.lag.ms") == 100


def test_zookeeper_era_properties_directory(tmp_path):
    d = tmp_path / "topics"
    d.mkdir()
    (d / "orders.properties").write_text("cleanup.policy=compact\nmin.cleanable.dirty.ratio=0.1\n")
    overrides, described, cd, pb = load_topic_configs(d, 1)
    assert overrides["orders"]["cleanup.policy"][0] == "compact"
    tc = resolve_topic("orders", BrokerConfig(), overrides["orders"])
    assert tc.compact and tc.value("min.cleanable.dirty.ratio") == 0.1
    assert "orders.properties" in str(tc["cleanup.policy"].source)


def test_no_source_at_all_says_so(tmp_path):
    logdir, _ = zk_logdir(tmp_path, "")
    r = ConfigResolver.open(logdir, config_flags=["orders:retention.ms=10"])
    assert any("no topic configuration source" in s for s in r.sources)
    tc = r.partition(logdir / "orders-0").config
    assert tc.value("retention.ms") == 10 and tc["retention.ms"].source.kind == "flag"
    assert r.topic("other").value("retention.ms") == WEEK


def test_bad_flag_is_refused_before_anything(tmp_path):
    logdir, _ = zk_logdir(tmp_path, "")
    with pytest.raises(ConfigError):
        ConfigResolver.open(logdir, config_flags=["retention.ms"])
    r = ConfigResolver.open(logdir, config_flags=["orders:retention.ms=soon"])
    with pytest.raises(ConfigError) as e:
        r.topic("orders")
    assert "--config orders:retention.ms=soon" in str(e.value)


def test_server_properties_file_is_read_as_java_properties(tmp_path):
    logdir, _ = zk_logdir(tmp_path, "")
    sp = tmp_path / "server.properties"
    sp.write_text("# comment\nlog.retention.minutes = 30\nlog.cleanup.policy=compact,\\\n  delete\n")
    r = ConfigResolver.open(logdir, server_properties=sp)
    tc = r.topic("orders")
    assert tc.value("retention.ms") == 30 * MINUTE and "server.properties" in str(tc["retention.ms"].source)
    assert tc.compact and tc.delete


def test_resolve_all_reports_every_problem_at_once(tmp_path):
    logdir, f = zk_logdir(tmp_path, "Configs for topic 'orders' are retention.ms=soon\n"
                                    "Configs for topic 'payments' are cleanup.policy=archive\n")
    (logdir / "payments-0").mkdir()
    (logdir / "fine-0").mkdir()
    r = ConfigResolver.open(logdir, topic_configs=f)
    with pytest.raises(ConfigError) as e:
        r.resolve_all([logdir / "fine-0", logdir / "orders-0", logdir / "payments-0"])
    assert sorted((p.topic, p.key, p.value) for p in e.value.problems) == [
        ("orders", "retention.ms", "soon"), ("payments", "cleanup.policy", "archive")]
    assert "configs.txt line 1" in str(e.value)
    rows = dict((k, (v, s)) for k, v, s in r.partition(logdir / "fine-0").rows())
    assert rows["retention.ms"][0] == str(WEEK) and rows["cleanup.policy"][0] == "delete"


def test_a_describe_file_read_in_pieces_gives_the_lines_read_whole():
    """``split_lines`` (the --topic-configs file read a piece at a time, issue 39): the lines, and so the line
    numbers a source names, of ``str.splitlines`` of the whole text, however the pieces cut it ("\\r\\n" across
    two pieces included)."""
    import random
    from kafkalog_formats.config_describe import split_lines
    rnd = random.Random(39)
    alphabet = "ab= \r\n\x0b\x0c\x1c\x85\u2028"
    for _ in range(5000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(40)))
        cuts = sorted(rnd.sample(range(len(text) + 1), min(len(text) + 1, rnd.randrange(5))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        assert list(split_lines(pieces)) == text.splitlines(), (text, pieces)


def test_topic_configs_keep_only_the_topics_asked_for(tmp_path):
    """``load_topic_configs(..., topics)``: the entries of other topics are not kept (a describe file of a
    whole cluster, a directory of every topic's file), broker entries always are."""
    f = tmp_path / "describe.txt"
    f.write_text("Dynamic configs for topic orders are:\n"
                 "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}\n"
                 "Dynamic configs for topic other are:\n"
                 "  retention.ms=2000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=2000}\n"
                 "Default configs for brokers in the cluster are:\n"
                 "  log.retention.ms=5 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5}\n")
    overrides, _described, default, _per_broker = load_topic_configs(f, 1, frozenset({"orders"}))
    assert set(overrides) == {"orders"} and overrides["orders"]["retention.ms"][0] == "1000"
    assert "line 2" in str(overrides["orders"]["retention.ms"][1]) and default["log.retention.ms"][0] == "5"
    assert set(load_topic_configs(f, 1)[0]) == {"orders", "other"}
    d = tmp_path / "dir"
    d.mkdir()
    (d / "orders.properties").write_text("retention.ms=1\n")
    (d / "other.properties").write_text("retention.ms=2\n")
    assert set(load_topic_configs(d, 1, frozenset({"orders"}))[0]) == {"orders"}
