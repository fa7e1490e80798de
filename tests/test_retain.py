"""``kafkalog retain`` on copies of the fixtures: exactly the segments a brute-force model of Kafka's
retention selects are deleted (§8), the directory stays loadable, and a kill at any file operation
followed by ``recover`` and a re-run loses nothing that should stay."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kafkalog_formats.message_set import BatchReader

from kafkalog_cli.repair.retain_plan import Policy, SegmentFacts

from conftest import FIXTURES, copy_logdir, json_partition, lock_held_by_another_process, run_cli
from crash_harness import kill_at_every_operation
from test_retain_plan import model

NOW = 1_700_000_050_000


@pytest.fixture
def logdir(tmp_path) -> Path:
    return copy_logdir(tmp_path / "logdir")


def segment_facts(pdir: Path) -> tuple[list, int]:
    """Independent of the command: sizes, largest timestamps from the last time-index entry, log end."""
    import struct
    facts, end = [], 0
    for log in sorted(pdir.glob("*.log")):
        tix = log.with_suffix(".timeindex").read_bytes()
        ts = struct.unpack_from(">q", tix, len(tix) - 12)[0] if len(tix) >= 12 else int(log.stat().st_mtime * 1000)
        facts.append(SegmentFacts(int(log.name[:20]), log.stat().st_size, ts, "t"))
        for b in BatchReader(log.read_bytes()):
            end = b.last_offset + 1
    return facts, end


def tree_hash(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(d)).encode() + p.read_bytes())
    return h.hexdigest()


CASES = [  # (now, retention.ms, retention.bytes, log start offset, high watermark)
    (NOW, 20_000, -1, None, 91), (NOW, 20_000, -1, None, 50), (NOW, -1, 4000, None, 91),
    (NOW, -1, -1, 30, 91), (NOW, -1, -1, 60, 91), (NOW, 0, -1, None, 91), (NOW, -1, 0, None, 91),
    (NOW, 40_000, 2500, 10, 91), (NOW + 10**9, 1, -1, None, 77), (NOW, -1, -1, 95, 91),
]


@pytest.mark.parametrize("now, ms, by, start, hw", CASES)
def test_deletes_exactly_what_the_model_selects(logdir, now, ms, by, start, hw):
    pdir = logdir / "orders-0"
    facts, end = segment_facts(pdir)
    k = model(facts, end, hw, 0, Policy(ms, by, start), now)
    args = ["retain", "--format", "json", "--now", str(now), "--retention-ms", str(ms), "--retention-bytes", str(by),
            "--high-watermark", str(hw)] + (["--log-start-offset", str(start), "--config", "cleanup.policy=delete"]
                                            if start is not None else [])
    args.append(str(pdir))
    r = run_cli(*args)
    obj = json_partition(r.out)
    assert [s["base_offset"] for s in obj["segments"] if s["delete"]] == [f.base_offset for f in facts[:k]]
    remaining = sorted(int(p.name[:20]) for p in pdir.glob("*.log"))
    expected = [f.base_offset for f in facts[k:]] or [end]
    assert remaining == expected
    assert not list(pdir.glob("*.deleted"))
    for f in facts[:k]:
        assert not (pdir / f"{f.base_offset:020d}.snapshot").exists()
    # exit 0: the job ran as configured, whatever it deleted; 1 only for a log start offset it could not set
    assert r.code == (1 if start is not None and start > hw else 0)
    assert run_cli("verify", str(logdir)).code == 0


def test_dry_run_changes_nothing_and_explains(logdir):
    before = tree_hash(logdir)
    r = run_cli("retain", "--dry-run", "--retention-ms", "20000", "--now", str(NOW), str(logdir / "orders-0"))
    assert tree_hash(logdir) == before and r.code == 0
    assert "delete 00000000000000000000.log" in r.out and "older than retention.ms=20000 (20 s)" in r.out
    assert "keep   00000000000000000078.log" in r.out and "deletion stops at the first surviving segment" in r.out
    assert r.out.startswith("retain --dry-run: would delete 2 segments (3.8 KiB) in 1 partition (exit 0)\n")
    assert "config:" not in r.out                      # the values used: --details, per partition
    r = run_cli("retain", "--dry-run", "--details", "--retention-ms", "20000", "--now", str(NOW), str(logdir / "orders-0"))
    assert "  config: retention.ms=20000 (20 s) from --retention-ms 20000" in r.out


def test_checkpoints_and_keep_deleted(logdir):
    r = run_cli("retain", "--keep-deleted", "--log-start-offset", "60", "--config", "cleanup.policy=delete",
                str(logdir / "orders-0"))
    assert r.code == 0
    p = logdir / "orders-0"
    assert sorted(x.name for x in p.glob("*.deleted")) == sorted(
        f"{b:020d}.{s}.deleted" for b in (0, 25) for s in ("log", "index", "timeindex", "snapshot")
        if (FIXTURES / "logdir" / "orders-0" / f"{b:020d}.{s}").exists())
    assert "orders 0 60" in (logdir / "log-start-offset-checkpoint").read_text()
    assert (p / "leader-epoch-checkpoint").read_text().splitlines()[2:] == ["1 60"]
    lo = json.loads(run_cli("lookup-offset", "--format", "json", str(p), "59").out)
    assert lo["error"] == "offset_out_of_range"


def test_unknown_high_watermark_refuses_and_says_why(logdir):
    (logdir / "replication-offset-checkpoint").write_text("0\n0\n")
    r = run_cli("retain", "--retention-ms", "0", str(logdir / "orders-0"))
    assert "high watermark is unknown" in r.out and r.code == 1
    assert len(list((logdir / "orders-0").glob("*.log"))) == 4


def test_everything_old_rolls_an_empty_active_segment(logdir):
    r = run_cli("retain", "--retention-ms", "0", "--now", str(NOW + 10**6), str(logdir / "payments-0"))
    assert r.code == 0 and "rolled an empty active segment at 23" in r.out
    assert sorted(p.name for p in (logdir / "payments-0").glob("*.log")) == ["00000000000000000023.log"]
    assert run_cli("verify", str(logdir)).code == 0


def test_lock_held_by_another_process(logdir):
    with lock_held_by_another_process(logdir / ".lock"):
        r = run_cli("retain", "--all", "--retention-ms", "0", str(logdir))
        assert r.code == 3 and "locked by another process" in r.err


def test_a_partition_linked_into_a_locked_log_directory_is_its_partition(logdir, tmp_path):
    """A partition directory that is a link inside a log directory (moved to another disk by hand): Kafka's
    LogManager loads it as that log directory's, under its lock and with its checkpoints. retain and compact
    given the link take that lock: on main they took the lock of the directory the link leads to, and retain
    --retention-ms 0 deleted every segment while a broker held the log directory (and read no checkpoint:
    its high watermark was unknown)."""
    elsewhere = tmp_path / "other-disk"
    elsewhere.mkdir()
    (logdir / "payments-0").rename(elsewhere / "payments-0")
    (logdir / "payments-0").symlink_to(elsewhere / "payments-0")
    r = run_cli("describe", "--format", "json", str(logdir / "payments-0"))
    assert json.loads(r.out.splitlines()[0])["high_watermark"] == 23, r.out        # the log directory's checkpoint
    with lock_held_by_another_process(logdir / ".lock"):
        before = sorted(p.name for p in (elsewhere / "payments-0").iterdir())
        for argv in (("retain", "--retention-ms", "0", "--high-watermark", "23"),
                     ("compact", "--config", "cleanup.policy=compact", "--force", "--high-watermark", "23")):
            r = run_cli(*argv, str(logdir / "payments-0"))
            assert r.code == 3 and "locked by another process" in r.err, (argv, r.out + r.err)
        assert sorted(p.name for p in (elsewhere / "payments-0").iterdir()) == before


def _records(d: Path) -> list:
    out = []
    for log in sorted(d.rglob("*.log")):
        for b in BatchReader(log.read_bytes()):
            out.append((log.parent.name, b.base_offset, b.last_offset, b.crc))
    return out


def test_kill_at_every_file_operation_then_recover_and_rerun(tmp_path):
    """A kill at any file operation, then ``recover`` and ``retain`` again: the result equals an
    undisturbed run and no record at or above the new log start is lost."""
    args = ["retain", "--retention-ms", "20000", "--now", str(NOW), "--partition", "orders-0",
            "--partition", "payments-0"]
    kill_at_every_operation(tmp_path, FIXTURES / "logdir", args, _records, backup=True,
                            partitions=["orders-0", "payments-0"])


def test_kill_at_every_file_operation_then_just_rerun(tmp_path):
    """No recover in between: the next retain removes the .deleted files and orphaned indexes itself, and
    the roll (every segment goes, with a producer snapshot written) is redone or completed."""
    args = ["retain", "--retention-ms", "0", "--now", str(NOW + 10**6), "--partition", "payments-0"]
    kill_at_every_operation(tmp_path, FIXTURES / "logdir", args, _records, recover_first=False,
                            partitions=["payments-0"])


@pytest.mark.parametrize("args", [["--retention-ms", "20000"], ["--retention-ms", "0"],
                                  ["--log-start-offset", "60", "--config", "cleanup.policy=delete"]])
def test_dry_run_plans_exactly_what_the_real_run_does(logdir, args):
    pdir = logdir / "orders-0"
    dry = json_partition(run_cli("retain", "--format", "json", "--dry-run", "--now", str(NOW), *args, str(pdir)).out)
    real = json_partition(run_cli("retain", "--format", "json", "--now", str(NOW), *args, str(pdir)).out)
    for key in ("segments", "log_start_offset", "roll_at", "snapshot_at_roll", "blocked", "problems"):
        assert dry[key] == real[key], key
    assert [s["segment"] for s in real["segments"] if s["delete"]] == \
        sorted({Path(f).name.replace(".deleted", "")[:20] + ".log" for f in real["files_renamed"]})
