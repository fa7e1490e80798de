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

from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint

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
        for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                     "log-start-offset-checkpoint"):      # orders' entries beside __consumer_offsets-0's
            entries = dict(parse_offset_checkpoint((offs.logdir / name).read_bytes()))
            entries.update({tp: o for tp, o in parse_offset_checkpoint((FIXTURES / "logdir" / name).read_bytes()).items()
                            if tp[0] == "orders"})
            (offs.logdir / name).write_text(build_offset_checkpoint(entries))
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


FILE_FORMS = ["a file", "a partition directory", "a log directory", "several", "one broker's disk (two log.dirs)",
              "several brokers' disks", "a backup folder"]


def _file_form(f: Fleet, form: str) -> list[Path]:
    return {"a file": [f.d2 / "orders-0" / "00000000000000000025.log"],
            "a partition directory": [f.d2 / "orders-0"],
            "a log directory": [f.d2],
            "several": [f.d1, f.d2 / "orders-1"],
            "one broker's disk (two log.dirs)": [f.b1],
            "several brokers' disks": [f.b1, f.b2],
            "a backup folder": [f.root]}[form]


@pytest.mark.parametrize("form", FILE_FORMS)
def test_dump_log_and_verify_read_every_segment_in_every_form(fleet, form):
    given = _file_form(fleet, form)
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


# --- the commands that change files: one log directory at a time ---------------------------------

WRITERS = {"recover": ["recover", "--dry-run"],
           "retain": ["retain", "--dry-run", "--all", "--retention-ms", "0"],
           "compact": ["compact", "--dry-run", "--all"],
           "delete-records": ["delete-records", "--dry-run", "--offset", "orders-0=3", "--config",
                              "cleanup.policy=delete"]}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_writers_take_a_log_directory(fleet, command):
    r = run_cli(*WRITERS[command], "--format", "json", str(fleet.d2))
    assert r.code in (0, 1), r.err
    names = {o["partition"] for o in objs(r.out, "partition")}
    want = {"orders-0"} if command == "delete-records" else {"orders-0", "orders-1", "__consumer_offsets-0"}
    assert names == want, r.out


@pytest.mark.parametrize("command", ["recover", "retain", "compact"])
def test_a_folder_of_log_directories_is_refused_naming_each(fleet, command):
    """recover, retain and compact take one log directory's lock: a folder holding several (one broker's
    disk with two log.dirs, several brokers' disks) is a usage error naming the command for each."""
    for folder, held in ((fleet.b1, [fleet.d1, fleet.d2]), (fleet.root, [fleet.d1, fleet.d2, fleet.b2 / "d1"])):
        r = run_cli(*WRITERS[command], str(folder))
        assert r.code == 2, (command, r.out, r.err)
        assert f"holding {len(held)} log directories" in r.err
        for d in held:
            assert f"kafkalog {command} [OPTIONS] {d}" in r.err, r.err


def test_retain_and_compact_take_a_partition_directory_recover_does_not(fleet):
    part = fleet.d2 / "orders-0"
    for args in (["retain", "--dry-run", "--retention-ms", "0"], ["compact", "--dry-run"]):
        r = run_cli(*args, "--format", "json", str(part))
        assert r.code in (0, 1) and [o["partition"] for o in objs(r.out, "partition")] == ["orders-0"], r.err
    r = run_cli("recover", "--dry-run", str(part))
    assert r.code == 2 and f"kafkalog recover {fleet.d2.resolve()} --partition orders-0" in r.err
    r = run_cli("delete-records", "--dry-run", "--offset", "orders-0=3", str(part))
    assert r.code == 2 and "--offset orders-0=OFFSET" in r.err


def test_delete_records_takes_one_brokers_log_dirs_given_or_in_a_folder(fleet):
    """delete-records looks for each partition in every log directory of the broker: given one by one, or
    as the folder holding them (one broker's disk); a partition in two of them (two brokers' disks) is
    ambiguous."""
    for given in ([fleet.d1, fleet.d2], [fleet.b1]):
        r = run_cli("delete-records", "--dry-run", "--format", "json", "--offset", "orders-0=3", "--offset",
                    "pay-0=1", "--config", "cleanup.policy=delete", *map(str, given))
        assert r.code == 0, r.out + r.err
        assert {(o["partition"], o["log_start_offset"]["new"]) for o in objs(r.out, "partition")} == \
            {("orders-0", 3), ("pay-0", 1)}
    r = run_cli("delete-records", "--dry-run", "--offset", "pay-0=1", str(fleet.root))
    assert r.code == 2 and "pay-0 is in both" in r.err


# --- the lookups: one partition ------------------------------------------------------------------

@pytest.mark.parametrize("command,target", [("lookup-offset", "5"), ("lookup-time", "0")])
def test_lookups_take_a_partition_directory_and_name_one_otherwise(fleet, command, target):
    r = run_cli(command, "--format", "json", str(fleet.d2 / "orders-0"), target)
    assert r.code == 0 and json.loads(r.out)["batch"], r.out + r.err
    for given in (fleet.d2, fleet.b1):
        r = run_cli(command, str(given), target)
        assert r.code == 2 and "orders-0" in r.err and f"kafkalog {command} " in r.err, r.err


# --- diff and export: replicas across brokers' disks, records of every form -----------------------

def test_diff_groups_the_replicas_of_several_brokers_disks(fleet):
    for given in ([fleet.b1, fleet.b2], [fleet.root], [fleet.d1, fleet.b2 / "d1"]):
        r = run_cli("diff", "--format", "json", *map(str, given))
        assert r.code == 0, r.out + r.err
        pairs = objs(r.out, "pair")
        assert {o["partition"] for o in pairs} == {"pay-0", "__transaction_state-0"}, r.out
        for o in pairs:
            assert {Path(x["directory"]).parent for x in o["replicas"]} == {fleet.d1, fleet.b2 / "d1"}
            assert o["agree"]
        (pay,) = [o for o in pairs if o["partition"] == "pay-0"]
        assert pay["identical_records"] == fleet.txn.log_ends[("pay", 0)]


@pytest.mark.parametrize("form", FILE_FORMS)
def test_export_plans_every_segment_in_every_form(fleet, form):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed: pip install -e '.[spark]'")
    given = _file_form(fleet, form)
    r = run_cli("export", "--dry-run", "--format", "json", *map(str, given))
    assert r.code == 0, r.err
    planned = {o["segment"] for o in objs(r.out, "range")}
    want = {str(p.resolve()) for p in given if p.is_file()}
    want |= {str(p.resolve()) for g in given if g.is_dir() for p in g.rglob("*.log") if p.stat().st_size}
    assert planned == want


def test_links_back_up_or_to_a_second_name_are_walked_once(tmp_path):
    """A backup folder with a link back up the tree and a second name for its log directory: every
    partition once, and the walk ends."""
    from kafkalog_cli.engine.targets import resolve
    disk = tmp_path / "disk"
    shutil.copytree(FIXTURES / "logdir", disk / "logdir")
    (disk / "up").symlink_to("..")
    (disk / "alias").symlink_to("logdir")
    found = resolve([str(tmp_path)])
    names = sorted(p.path.name for p in found.partitions)
    assert names == sorted(p.name for p in (FIXTURES / "logdir").iterdir() if p.is_dir())
    r = run_cli("describe", "--format", "json", str(tmp_path))
    assert r.code == 0 and len(objs(r.out, "partition")) == len(names)


# --- the same directory reached twice, deep trees, a folder that is also a partition (attack, round 5) ---

def test_a_directory_reached_twice_by_two_paths_is_read_once(fleet, tmp_path):
    """The same log directory given twice, through a link, or beside one of its partitions: each partition
    once (as du counts), no "2 copies found" of one directory, and delete-records does not call one
    directory two ("orders-0 is in both d2 and d2"); failed on main (describe: 5 + 5 + 1 partitions)."""
    alias = tmp_path / "alias"
    alias.symlink_to(fleet.d2)
    for given in ([fleet.d2, fleet.d2], [fleet.d2, alias], [fleet.d2, fleet.d2 / "orders-0"],
                  [fleet.d2 / "orders-0", alias]):
        r = run_cli("describe", "--format", "json", *map(str, given))
        assert r.code == 0, r.out + r.err
        names = sorted(o["topic"] + "-" + str(o["partition"]) for o in objs(r.out, "partition"))
        assert names == sorted(p.name for p in fleet.d2.iterdir() if p.is_dir()), (given, names)
        assert not objs(r.out, "note"), r.out
        r = run_cli("verify", "--format", "json", *map(str, given))
        assert r.code == 0 and json.loads(r.out.splitlines()[-1])["partitions"] == len(names), r.out
    r = run_cli("transactions", "--format", "json", "--now", NOW, str(fleet.d1), str(fleet.d1))
    assert not any("copies" in o["message"] for o in objs(r.out, "note")), r.out
    r = run_cli("delete-records", "--dry-run", "--offset", "orders-0=3", "--config", "orders:cleanup.policy=delete",
                str(fleet.d2), str(alias))
    assert r.code == 0, r.out + r.err


def test_a_tree_deeper_than_pythons_stack_is_walked(tmp_path):
    """A partition 1,100 directories down (a restored backup's long path): found, not a RecursionError
    traceback (main: every reader crashed)."""
    import os
    from kafkalog_cli.engine.targets import resolve
    deep = tmp_path / "deep"
    levels = [str(deep)]
    for _ in range(1100):                   # one by one: pathlib's mkdir(parents=True) recurses too
        levels.append(levels[-1] + "/a")
    for d in levels:
        os.mkdir(d)
    try:
        shutil.copytree(FIXTURES / "logdir" / "orders-0", levels[-1] + "/orders-0")
        assert [p.path.name for p in resolve([str(deep)]).partitions] == ["orders-0"]
        r = run_cli("verify", "--format", "json", str(deep))
        assert r.code == 0 and json.loads(r.out.splitlines()[-1])["partitions"] == 1, r.out + r.err
    finally:                                # shutil.rmtree recurses as deep as the tree: pytest's cleanup would fail
        shutil.rmtree(levels[-1] + "/orders-0", ignore_errors=True)
        for d in reversed(levels):
            os.rmdir(d)


def test_a_folder_with_loose_segments_and_a_log_directory_reads_both(tmp_path):
    """A folder not named as a partition holding segment files (a partition copied alone) and a log
    directory below it: both are read. On main the folder was taken as one partition and the log directory
    below silently skipped: verify passed on 1 partition of 10."""
    mix = tmp_path / "mix"
    shutil.copytree(FIXTURES / "logdir", mix / "ld")
    for f in (FIXTURES / "logdir" / "orders-0").glob("00000000000000000000.*"):
        shutil.copy(f, mix / f.name)
    inside = sorted(p.name for p in (FIXTURES / "logdir").iterdir() if p.is_dir())
    r = run_cli("describe", "--format", "json", str(mix))
    assert r.code == 0, r.out + r.err
    assert sorted(o["directory"] for o in objs(r.out, "partition")) == sorted(
        [str(mix)] + [str(mix / "ld" / n) for n in inside])
    r = run_cli("verify", "--format", "json", str(mix))
    assert json.loads(r.out.splitlines()[-1])["partitions"] == len(inside) + 1, r.out
    # below a directory named as a partition Kafka reads files only: a directory there stays unread
    part = tmp_path / "orders-0"
    shutil.copytree(FIXTURES / "logdir" / "orders-0", part)
    shutil.copytree(FIXTURES / "logdir", part / "old")
    r = run_cli("describe", "--format", "json", str(part))
    assert [o["directory"] for o in objs(r.out, "partition")] == [str(part)]


DIRECTORY_COMMANDS = {"describe": [], "consumer-groups": [], "transactions": [], "diff": [str(FIXTURES / "logdir")],
                      "recover": ["--dry-run"], "retain": ["--dry-run", "--all"], "compact": ["--dry-run", "--all"],
                      "delete-records": ["--dry-run", "--offset", "orders-0=1"], "lookup-offset": [],
                      "lookup-time": []}


@pytest.mark.parametrize("command", sorted(DIRECTORY_COMMANDS))
def test_a_fifo_or_a_device_given_for_a_directory_is_a_usage_error(tmp_path, command):
    """click.Path(file_okay=False) refuses regular files only: on main a FIFO or /dev/null given as the
    directory crashed recover and delete-records with a traceback, retain and compact said 'Not a directory
    (fifo/.lock)' (exit 3), the lookups called it 'a folder holding log directories', the views 'no Kafka
    partition directory here' (exit 1)."""
    import os
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in ((fifo, "a FIFO"), (Path("/dev/null"), "a device")):
        args = [*DIRECTORY_COMMANDS[command], str(path)] + (["1"] if command.startswith("lookup") else [])
        r = run_cli(command, *args)
        assert r.code == 2 and f"is {what}, not a directory" in r.err, (command, path, r.code, r.err)


def test_segments_copied_alone_are_named_by_their_directory(tmp_path):
    """A directory not named as a partition (a partition's files copied into 'seg'): describe names it 'seg',
    in the table and --details (main: 'seg--1', the unknown partition shown as -1)."""
    seg = tmp_path / "seg"
    shutil.copytree(FIXTURES / "logdir" / "orders-0", seg)
    for args in ((), ("--details",)):
        r = run_cli("describe", *args, str(seg))
        assert r.code == 0 and "--1" not in r.out and any(line.split()[:1] == ["seg"] for line in r.out.splitlines())
