"""Every path form the README names, on every command where it makes sense (engine/targets.resolve is the
one resolver): a file, a partition directory, a log directory, several, a folder holding log directories
further down (one broker's disk with two log.dirs, a backup folder), several brokers' disks. Each case
asserts what was found, against what the builders wrote, not only the exit status.

The fleet (built per test in tmp_path with tests/views_data.py's builders, kafkalog's own writer):

    fleet/broker-1/d1   pay-0 (open transactions), __transaction_state-0
    fleet/broker-1/d2   __consumer_offsets-0, orders-0 and orders-1 (fixtures/logdir's)
    fleet/broker-2/d1   a copy of broker-1/d1 (a replica: the same partitions on another broker)
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import views_data as vd
from conftest import FIXTURES, run_cli

NOW = str(vd.NOW)


class Fleet:
    def __init__(self, root: Path) -> None:
        self.root = root / "fleet"
        self.b1, self.b2 = self.root / "broker-1", self.root / "broker-2"
        tx = vd.logdir_with_transactions(root / "tx")
        self.txn = tx
        self.b1.mkdir(parents=True)
        shutil.move(str(tx.logdir), self.b1 / "d1")
        self.props = root / "tx" / "server.properties"
        offs = vd.logdir_with_offsets(root / "offs")
        self.offsets = offs
        for p in ("orders-0", "orders-1"):
            shutil.copytree(FIXTURES / "logdir" / p, offs.logdir / p)
        shutil.move(str(offs.logdir), self.b1 / "d2")
        shutil.copytree(self.b1 / "d1", self.b2 / "d1")
        self.d1, self.d2 = self.b1 / "d1", self.b1 / "d2"


@pytest.fixture
def fleet(tmp_path) -> Fleet:
    return Fleet(tmp_path)


def objs(out: str, kind: str) -> list[dict]:
    return [o for o in map(json.loads, out.splitlines()) if o.get("type") == kind]


def _offsets(out: str) -> dict:
    got: dict = {}
    for o in objs(out, "offset"):
        got.setdefault(o["group"], {})[(o["topic"], o["partition"])] = o["offset"]
    return got


# --- the state views -------------------------------------------------------------------------------

def _forms(f: Fleet) -> dict:
    """name -> the paths given: every form that holds __consumer_offsets-0 (d2) and pay-0 with
    __transaction_state-0 (d1)."""
    return {
        "log directories": [f.d1, f.d2],
        "partition directories": [f.d1 / "pay-0", f.d1 / "__transaction_state-0", f.d2 / "__consumer_offsets-0"],
        "one broker's disk (two log.dirs)": [f.b1],
        "several brokers' disks": [f.b1, f.b2],
        "a backup folder holding them further down": [f.root],
    }


FORMS = ["log directories", "partition directories", "one broker's disk (two log.dirs)", "several brokers' disks",
         "a backup folder holding them further down"]


@pytest.mark.parametrize("form", FORMS)
def test_consumer_groups_finds_the_offsets_in_every_form(fleet, form):
    paths = [str(p) for p in _forms(fleet)[form]]
    r = run_cli("consumer-groups", "--format", "json", "--now", NOW, *paths)
    assert r.code == 0, r.out + r.err
    assert _offsets(r.out) == fleet.offsets.groups
    (summary,) = objs(r.out, "summary")
    assert summary["offsets_partitions_read"] == [0]


@pytest.mark.parametrize("form", FORMS)
def test_transactions_finds_the_coordinator_in_every_form(fleet, form):
    paths = [str(p) for p in _forms(fleet)[form]]
    r = run_cli("transactions", "--format", "json", "--server-properties", str(fleet.props), "--now", NOW, *paths)
    assert r.code == 1, r.out + r.err                      # hanging transactions: a finding
    found = [o for o in objs(r.out, "open_transaction") if o["topic"] == "pay"]
    hanging = {(o["topic"], o["partition"], o["producer_id"]) for o in found if o["status"] == "hanging"}
    assert hanging == fleet.txn.expected_hanging
    assert "unknown" not in {o["status"] for o in found}
    copies = 2 if form in ("several brokers' disks", "a backup folder holding them further down") else 1
    assert len(found) == copies * len(fleet.txn.open_txns[("pay", 0)])     # pay-0 on each broker that holds it


@pytest.mark.parametrize("form", FORMS)
def test_describe_lists_every_partition_in_every_form(fleet, form):
    given = _forms(fleet)[form]
    r = run_cli("describe", "--format", "json", "--now", NOW, *map(str, given))
    assert r.code == 0, r.out + r.err
    got = sorted((o["log_dir"], o["topic"], o["partition"]) for o in objs(r.out, "partition"))
    want = []
    for d in (fleet.d1, fleet.d2, fleet.b2 / "d1"):
        for p in sorted(d.iterdir()):
            if p.is_dir() and any(p == g or g in p.parents for g in given):
                topic, _, n = p.name.rpartition("-")
                want.append((str(d), topic, int(n)))
    assert got == sorted(want) and want


def test_two_copies_of_an_internal_partition_are_read_once(fleet):
    """Several brokers' disks hold replicas of __transaction_state-0: the coordinator's state is read from
    one copy (the highest high watermark) and the report says which."""
    r = run_cli("transactions", "--format", "json", "--server-properties", str(fleet.props), "--now", NOW,
                str(fleet.root))
    notes = [o["message"] for o in objs(r.out, "note")]
    assert any("__transaction_state-0: 2 copies found" in n for n in notes), notes


@pytest.mark.parametrize("command", ["describe", "consumer-groups", "transactions"])
def test_a_path_with_nothing_of_kafka_is_a_finding_for_every_view(tmp_path, command):
    empty = tmp_path / "empty" / "below"
    empty.mkdir(parents=True)
    r = run_cli(command, "--format", "json", "--now", NOW, str(tmp_path / "empty"))
    assert r.code == 1, (command, r.out, r.err)
    assert any("no Kafka partition directory here" in o["message"] or "no __consumer_offsets" in o["message"]
               for o in objs(r.out, "note")), r.out


@pytest.mark.parametrize("command", ["describe", "consumer-groups", "transactions"])
def test_a_file_is_refused_by_the_views(command):
    r = run_cli(command, str(FIXTURES / "logdir" / "orders-0" / "00000000000000000000.log"))
    assert r.code == 2 and "is a file" in r.err


# --- the readers of files: dump-log and verify ------------------------------------------------------

def _dumped(out: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("Dumping ")]


def _segments_under(*dirs: Path) -> set[str]:
    return {str(p) for d in dirs for p in d.rglob("*.log")}


@pytest.mark.parametrize("form", ["a file", "a partition directory", "a log directory", "several",
                                  "one broker's disk (two log.dirs)", "several brokers' disks", "a backup folder"])
def test_dump_log_and_verify_read_every_segment_in_every_form(fleet, form):
    f = fleet
    given = {"a file": [f.d2 / "orders-0" / "00000000000000000025.log"],
             "a partition directory": [f.d2 / "orders-0"],
             "a log directory": [f.d2],
             "several": [f.d1, f.d2 / "orders-1"],
             "one broker's disk (two log.dirs)": [f.b1],
             "several brokers' disks": [f.b1, f.b2],
             "a backup folder": [f.root]}[form]
    want = {str(p) for p in given if p.is_file()} | _segments_under(*(p for p in given if p.is_dir()))
    r = run_cli("dump-log", *map(str, given))
    assert r.code == 0, r.err
    assert {d for d in _dumped(r.out) if d.endswith(".log")} == want
    v = run_cli("verify", "--format", "json", *map(str, given))
    assert v.code == 0, v.out
    assert {o["file"] for o in objs(v.out, "segment")} == want


def test_topic_and_partition_filters_choose_partitions_under_a_folder(fleet):
    f = fleet
    r = run_cli("dump-log", "--topic", "orders", str(f.root))
    assert r.code == 0, r.err
    assert {d for d in _dumped(r.out) if d.endswith(".log")} == _segments_under(f.d2 / "orders-0", f.d2 / "orders-1")
    r = run_cli("dump-log", "--partition", "orders-1", "--partition", "pay-0", str(f.root))
    assert {d for d in _dumped(r.out) if d.endswith(".log")} == _segments_under(f.d2 / "orders-1", f.d1 / "pay-0",
                                                                                 f.b2 / "d1" / "pay-0")
    assert "bootstrap.checkpoint" not in r.out
    v = run_cli("verify", "--format", "json", "--partition", "orders-1", str(f.b1))
    assert v.code == 0, v.out
    assert {o["file"] for o in objs(v.out, "segment")} == _segments_under(f.d2 / "orders-1")
    (summary,) = objs(v.out, "summary")
    assert summary["partitions"] == 1
    for cmd in ("dump-log", "verify"):
        r = run_cli(cmd, "--topic", "nowhere", "--partition", "orders-9", str(f.root))
        assert r.code == 2 and "nowhere" in r.err and "orders-9" in r.err, r.err


def test_from_offset_minus_n_dumps_the_last_n_offsets_of_each_partition(fleet):
    """kcat -o -N: the offsets from N before each partition's log end."""
    from kafkalog_cli.engine.lookup import PartitionView
    f = fleet
    r = run_cli("dump-log", "--format", "json", "--deep-iteration", "--from-offset", "-3", "--topic", "orders",
                str(f.d2))
    assert r.code == 0, r.err
    got: dict = {}
    for o in objs(r.out, "record"):
        got.setdefault(Path(o["file"]).parent.name, []).append(o["offset"])
    for p in ("orders-0", "orders-1"):
        end = PartitionView(f.d2 / p).log_end
        assert got[p] == [end - 3, end - 2, end - 1], p
    r = run_cli("dump-log", "--from-offset=-3", "-")
    assert r.code == 2 and "standard input" in r.err
