"""The state views on hand-made log directories (tests/views_data.py): describe, transactions (a transaction
whose coordinator entry is gone, one whose transaction moved on, one still known), consumer-groups
(expired offsets, a deleted group, transactional commits, the reset CSV), and Java's String.hashCode
against a real JVM. Expectations come from what the builders wrote, never from a previous output."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import views_data as vd
from conftest import run_cli

NOW = str(vd.NOW)


def objs(out: str, kind: str) -> list[dict]:
    return [o for o in map(json.loads, out.splitlines()) if o.get("type") == kind]


def test_describe_reports_what_was_written(tmp_path):
    w = vd.logdir_with_transactions(tmp_path)
    r = run_cli("describe", "--format", "json", "--now", NOW, str(w.logdir))
    assert r.code == 0, r.out + r.err
    parts = {(p["topic"], p["partition"]): p for p in objs(r.out, "partition")}
    pay = parts[("pay", 0)]
    assert pay["log_end_offset"] == w.log_ends[("pay", 0)] == pay["high_watermark"]
    firsts = w.open_txns[("pay", 0)]
    assert {t["producer_id"]: t["first_offset"] for t in pay["open_transactions"]} == firsts
    assert pay["last_stable_offset"] == min(firsts.values())
    # two days on, producers 100 and 101 (their transactions ended) have been idle longer than
    # producer.id.expiration.ms: only 102-104, whose transactions are open, remain; an hour on, all five
    assert pay["producers"] == 3
    assert {e["producer_id"]: e["current_transaction_start_offset"] for e in pay["producer_states"]} == firsts
    assert {e["producer_id"]: e["producer_epoch"] for e in pay["producer_states"]} == {102: 3, 103: 1, 104: 0}
    soon = run_cli("describe", "--format", "json", "--now", str(vd.T0 + vd.HOUR), str(w.logdir / "pay-0"))
    assert objs(soon.out, "partition")[0]["producers"] == 5
    assert pay["size"] == sum(f.stat().st_size for f in (w.logdir / "pay-0").glob("*.log"))
    topics = {t["topic"]: t for t in objs(r.out, "topic")}
    assert topics["pay"]["open_transactions"] == 3


def test_describe_clamps_the_high_watermark_and_drops_idle_producers(tmp_path):
    w = vd.logdir_with_transactions(tmp_path, high_watermarks={("pay", 0): 10_000})
    later = str(vd.T0 + 30 * vd.DAY)
    r = run_cli("describe", "--format", "json", "--now", later, str(w.logdir / "pay-0"))
    pay = objs(r.out, "partition")[0]
    assert pay["high_watermark_checkpoint"] == 10_000
    assert pay["high_watermark"] == pay["log_end_offset"]          # UnifiedLog.updateHighWatermark on load
    # a month later still the three with an open transaction: they never expire
    assert pay["producers"] == 3


def test_describe_text_fits_80_columns(tmp_path):
    w = vd.logdir_with_transactions(tmp_path)
    for args in ((), ("--details",), ("--topics",)):
        r = run_cli("describe", *args, "--now", NOW, str(w.logdir))
        assert r.code == 0
        assert max(map(len, r.out.splitlines())) <= 80, r.out
    assert "pay-0" in run_cli("describe", "--now", NOW, str(w.logdir)).out


def test_transactions_find_the_hanging_ones(tmp_path):
    w = vd.logdir_with_transactions(tmp_path)
    props = str(tmp_path / "server.properties")
    r = run_cli("transactions", "--format", "json", "--server-properties", props, "--now", NOW, str(w.logdir))
    assert r.code == 1
    found = objs(r.out, "open_transaction")
    assert {(o["topic"], o["partition"], o["producer_id"]) for o in found if o["status"] == "hanging"} == \
        w.expected_hanging
    for o in found:
        assert o["first_offset"] == w.open_txns[(o["topic"], o["partition"])][o["producer_id"]]
        if o["status"] == "hanging":
            assert o["abort_command"].endswith(f"--start-offset {o['first_offset']}")
            assert f"--producer-id {o['producer_id']}" in o["abort_command_before_3_0"]
    text = run_cli("transactions", "--list", "--server-properties", props, "--now", NOW, str(w.logdir)).out
    assert max(map(len, text.splitlines())) <= 80
    assert "app-102" in text and "gone" not in text.split("TRANSACTIONAL ID")[1]


def test_young_transactions_are_not_called_hanging(tmp_path):
    w = vd.logdir_with_transactions(tmp_path)
    r = run_cli("transactions", "--format", "json", "--max-transaction-timeout", str(10 * 24 * 60),
                "--server-properties", str(tmp_path / "server.properties"), "--now", NOW, str(w.logdir))
    assert r.code == 0
    assert {o["status"] for o in objs(r.out, "open_transaction")} == {"open"}


def test_without_the_coordinator_partition_nothing_is_called_hanging(tmp_path):
    w = vd.logdir_with_transactions(tmp_path)
    shutil.rmtree(w.logdir / "__transaction_state-0")
    r = run_cli("transactions", "--format", "json", "--now", NOW, str(w.logdir))
    assert {o["status"] for o in objs(r.out, "open_transaction")} == {"unknown"}
    assert r.code == 0


def test_consumer_groups_apply_tombstones_markers_and_expiration(tmp_path):
    w = vd.logdir_with_offsets(tmp_path)
    r = run_cli("consumer-groups", "--format", "json", "--now", NOW, str(w.logdir))
    assert r.code == 0, r.out + r.err
    got: dict = {}
    for o in objs(r.out, "offset"):
        got.setdefault(o["group"], {})[(o["topic"], o["partition"])] = o["offset"]
    assert got == w.groups
    assert {o["group"] for o in objs(r.out, "deleted_group")} == w.deleted_groups
    groups = {g["group"]: g for g in objs(r.out, "group")}
    assert groups["txn"]["pending_transactional_offsets"] == 1
    assert groups["simple"]["expired_offsets"] == len(w.expired["simple"])
    r = run_cli("consumer-groups", "--format", "json", "--include-expired", "--now", NOW, str(w.logdir))
    expired = {(o["group"], o["topic"], o["partition"]) for o in objs(r.out, "offset") if o["expired"]}
    assert expired == {(g, *tp) for g, tps in w.expired.items() for tp in tps}


def test_a_month_later_only_the_subscribed_offsets_remain(tmp_path):
    w = vd.logdir_with_offsets(tmp_path)
    later = str(vd.T0 + 30 * vd.DAY)
    r = run_cli("consumer-groups", "--format", "json", "--now", later, str(w.logdir))
    got = {(o["group"], o["topic"], o["partition"]) for o in objs(r.out, "offset")}
    # "live" is Stable and subscribes to orders: that offset never expires; "txn" orders-1 has a pending
    # transactional commit, which keeps it under 4.x's rules (OffsetMetadataManager.cleanupExpiredOffsets:
    # hasPendingTransactionalOffsets; the directory does not say its release: 4.x's rules); the rest expired
    assert got == {("live", "orders", 0), ("txn", "orders", 1)}
    groups = {g["group"]: g for g in objs(r.out, "group")}
    deleted = {d["group"]: d["reason"] for d in objs(r.out, "deleted_group")}
    assert deleted == {"simple": "expiration", "gone": "tombstone"}
    assert groups["txn"]["pending_transactional_offsets"] == 1 and "simple" not in groups
    assert objs(r.out, "summary")[0]["coordinator_rules"] == {"0": "4.x"}


def test_reset_csv_is_kafka_consumer_groups_from_file_format(tmp_path):
    w = vd.logdir_with_offsets(tmp_path)
    one = run_cli("consumer-groups", "--format", "csv", "--group", "live", "--now", NOW, str(w.logdir))
    assert one.code == 0
    assert sorted(one.out.splitlines()) == sorted(f"{t},{p},{o}" for (t, p), o in w.groups["live"].items())
    many = run_cli("consumer-groups", "--format", "csv", "--now", NOW, str(w.logdir))
    assert sorted(many.out.splitlines()) == sorted(f"{g},{t},{p},{o}" for g, tps in w.groups.items()
                                                   for (t, p), o in tps.items())


def test_a_missing_group_says_where_it_would_live(tmp_path):
    from kafkalog_cli.engine.group_offsets import partition_for
    w = vd.logdir_with_offsets(tmp_path)
    r = run_cli("consumer-groups", "--group", "nobody", "--now", NOW, str(w.logdir))
    assert r.code == 1
    assert f"__consumer_offsets-{partition_for('nobody', 50)}" in r.out


def test_csv_quotes_group_ids_as_jackson(tmp_path):
    from kafkalog_cli.render.groups_report import csv_field
    assert csv_field("plain") == "plain"
    assert csv_field('a,"b"') == '"a,""b"""'


JAVA_HASH = r"""
public class Hash {
    public static void main(String[] args) throws Exception {
        java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = r.readLine()) != null) {
            String s = new String(java.util.Base64.getDecoder().decode(line), "UTF-8");
            int h = s.hashCode();
            int abs = h == Integer.MIN_VALUE ? 0 : Math.abs(h);
            System.out.println(h + " " + (abs % 50));
        }
    }
}
"""


def test_group_partition_matches_java(tmp_path):
    """Java's String.hashCode and Kafka's Utils.abs(hash) % 50, run by a JVM on names with non-BMP
    characters and the string whose hash is Integer.MIN_VALUE."""
    import base64
    from kafkalog_cli.engine.group_offsets import java_string_hash, partition_for
    java = shutil.which("java")
    if java is None:
        pytest.skip("needs Java on PATH")
    names = ["", "billing", "polygenelubricants", "grüppe", "emoji-\U0001F600-group", "a" * 300,
             "connect-cluster", "x\u0000y", "ΣΩ"] + [f"group-{i}" for i in range(200)]
    src = tmp_path / "Hash.java"
    src.write_text(JAVA_HASH)
    stdin = "\n".join(base64.b64encode(n.encode("utf-8")).decode() for n in names) + "\n"
    res = subprocess.run([java, str(src)], input=stdin, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    for name, line in zip(names, res.stdout.splitlines(), strict=True):
        h, p = map(int, line.split())
        assert java_string_hash(name) == h, name
        assert partition_for(name, 50) == p, name
