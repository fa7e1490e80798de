"""``kafkalog recover`` on copies of every damaged fixture and of the clean log directory.

Oracle: ``recover_helpers.brute_batches``, a reader of ``.log`` bytes that shares no code with kafkalog.
Kafka rules checked are cited by section of docs/kafka-on-disk.md.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import flat, FIXTURES, REPO, run_cli
from recover_helpers import (FIXTURE_INTERVALS, brute_batches, expected_survivors, partition_batches,
                             segment_logs, tree_state, writable_copy)

DAMAGED = sorted(p.name for p in (FIXTURES / "damaged").iterdir() if p.is_dir())
CASES = DAMAGED + ["logdir"]
# what each of our cases must come to (cases added by other issues only get the generic checks)
EXPECTED_EXIT = {"logdir": 0, "bad-indexes": 1, "flipped-crc-byte": 1, "leftover-files": 1, "orphan-index": 1,
                 "truncated-last-batch": 1, "untrimmed-indexes": 1, "zero-tail": 1, "interrupted-swap": 1,
                 "stale-checkpoints": 1, "missing-index-clean": 1, "non-monotonic-offsets": 1,
                 "torn-transaction-segment": 1}


def _src(case: str) -> Path:
    return FIXTURES / "logdir" if case == "logdir" else FIXTURES / "damaged" / case


def _interval(logdir: Path) -> list[str]:
    """The index.interval.bytes the case's partitions were written with (one topic per damaged case)."""
    parts = [p.name for p in logdir.iterdir() if p.is_dir()]
    values = {FIXTURE_INTERVALS.get(p, 4096) for p in parts}
    return ["--index-interval-bytes", str(values.pop())] if len(values) == 1 else []


def _json(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _recover(logdir: Path, *args: str):
    return run_cli("recover", *_interval(logdir), *args, str(logdir))


def _log_start_entry(logdir: Path, partition_dir: str) -> int | None:
    from kafkalog_formats.checkpoint import parse_offset_checkpoint
    path = logdir / "log-start-offset-checkpoint"
    if not path.exists():
        return None
    topic, part = partition_dir.rsplit("-", 1)
    return parse_offset_checkpoint(path.read_bytes()).get((topic, int(part)))


@pytest.mark.parametrize("case", CASES)
def test_recover_repairs_and_keeps_every_valid_record(case, tmp_path):
    d = writable_copy(_src(case), tmp_path / "logdir")
    original = writable_copy(d, tmp_path / "original")
    backup = tmp_path / "backup"
    marker_before = (d / ".kafka_cleanshutdown").read_bytes() if (d / ".kafka_cleanshutdown").exists() else None

    res = _recover(d, "--backup-dir", str(backup), "--format", "json")
    objs = _json(res.out)
    if case in EXPECTED_EXIT:
        assert res.code == EXPECTED_EXIT[case], res.out
    else:
        assert res.code in (0, 1), res.out
    summary = objs[-1]
    assert summary["type"] == "summary" and summary["dry_run"] is False
    assert (res.code == 1) == (summary["actions"] > 0 or summary["problems"])

    clean = marker_before is not None
    left_alone = False
    for pdir in sorted(p for p in original.iterdir() if p.is_dir()):
        if pdir.name == "__cluster_metadata-0":
            continue
        survivors, cuts = expected_survivors(pdir)
        log_start = _log_start_entry(original, pdir.name)
        if not clean and survivors and log_start is not None and survivors[-1][1] + 1 < log_start:
            # the log ends below the checkpointed log start: Kafka 2.3+ deletes every segment (LogLoader
            # .recoverLog, KAFKA-8306); offline that cannot be told from a damaged checkpoint, so without
            # --trust-checkpoints the partition is left exactly as it was, with a problem (issue 21, item 5)
            assert tree_state(d / pdir.name) == tree_state(pdir)
            assert any(o["type"] == "problem" and o["kind"] == "log_start_beyond_log_end" for o in objs), objs
            left_alone = True
            continue
        after = partition_batches(d / pdir.name)               # every remaining segment wholly valid
        if clean:                                               # no recovery after a clean shutdown (§7.0)
            before = [b for log in segment_logs(pdir) for b in brute_batches(log.read_bytes())[0]]
            assert [b[3] for b in after] == [b[3] for b in before]
            continue
        # every batch before the first damaged byte is still there, byte for byte, same offsets (§7.2)
        assert [b[3] for b in after] == [b[3] for b in survivors]
        for name, cut in cuts.items():
            data = (pdir / name).read_bytes()
            if cut is None:                                     # later segments removed, kept in the backup
                assert not (d / pdir.name / name).exists()
                assert (backup / pdir.name / name).read_bytes() == data
            elif cut < len(data):                               # the cut tail is in the backup, byte for byte
                assert (d / pdir.name / name).stat().st_size == cut
                tail = backup / pdir.name / f"{name}.truncated-at-{cut}"
                assert tail.read_bytes() == data[cut:]

    if left_alone:                                              # still damaged, as it was: nothing more to check
        return
    # the result reads cleanly and verifies
    dump = run_cli("dump-log", "--deep-iteration", str(d))
    assert dump.code == 0, dump.err
    verify = run_cli("verify", str(d))
    assert verify.code == 0, verify.out + verify.err
    # idempotent: a second run has nothing to do (exit 0)
    again = _recover(d)
    assert again.code == 0, again.out
    assert "nothing to repair" in again.out
    # the clean-shutdown marker is restored as it was (a broker rewrites it at clean shutdown, §4.7)
    if marker_before is not None:
        assert (d / ".kafka_cleanshutdown").read_bytes() == marker_before
    # every file that left the log directory is in the backup with the same bytes
    state_before, state_after = tree_state(original), tree_state(d)
    backed = {str(p.relative_to(backup)): p.read_bytes() for p in backup.rglob("*") if p.is_file()} \
        if backup.exists() else {}
    for rel, digest in state_before.items():
        if digest == "dir" or rel in state_after or rel == ".lock":
            continue
        if digest in state_after.values():                      # renamed (a completed swap), not removed
            continue
        assert rel in backed or rel + ".deleted" in backed, f"{rel} removed without a backup"
        assert (backed.get(rel) or backed[rel + ".deleted"]) == (original / rel).read_bytes()


@pytest.mark.parametrize("case", CASES)
def test_dry_run_changes_nothing_and_prints_the_whole_plan(case, tmp_path):
    d = writable_copy(_src(case), tmp_path / "dry")
    before = tree_state(d)
    res = _recover(d, "--dry-run", "--format", "json")
    assert tree_state(d) == before                       # not one byte, not one file (.lock included)
    plan = [o for o in _json(res.out.replace(str(d), "<dir>")) if o["type"] == "action"]
    if case in EXPECTED_EXIT:
        assert res.code == EXPECTED_EXIT[case]
    assert (res.code == 1) == bool(plan) or _json(res.out)[-1]["problems"]
    # the plan is exactly what a real run then does
    real = writable_copy(_src(case), tmp_path / "real")
    done = [o for o in _json(_recover(real, "--format", "json").out.replace(str(real), "<dir>"))
            if o["type"] == "action"]
    assert plan == done
    text = _recover(writable_copy(_src(case), tmp_path / "text"), "--dry-run", "--details")
    assert text.code == res.code
    if plan:
        assert text.out.startswith(f"recover --dry-run: would make {len(plan)} repair")
        said = flat(text.out)
        for o in plan:             # each repair, its file (relative to its partition) and, with --details, its rule
            assert o["file"].split("/")[-1] in said and flat(o["rule"]) in said


def test_text_report_names_positions_offsets_reasons_and_checkpoints(tmp_path):
    d = writable_copy(FIXTURES / "damaged" / "stale-checkpoints", tmp_path / "d")
    # a log start at or below the new log end (above it, Kafka deletes every segment: test_recover_load_rules)
    (d / "log-start-offset-checkpoint").write_text("0\n1\norders 0 60\n")
    res = run_cli("recover", "--index-interval-bytes", "256", str(d))
    assert res.code == 1
    out = flat(res.out)
    assert res.out.startswith("recover: made 9 repairs in 1 partition and the log directory (exit 1)")
    assert "truncate 00000000000000000078.log at position 569 (30 bytes cut: Found 30 invalid bytes" in out
    for line in ("write recovery-point-offset-checkpoint (orders-0: 91 -> 85)",
                 "write replication-offset-checkpoint (orders-0: 91 -> 85)",
                 "write cleaner-offset-checkpoint (orders-0: 91 -> 60)",   # reset to the log start
                 # truncateFromEnd(85), then truncateFromStart(60) as LogLoader.load does
                 "write leader-epoch-checkpoint (removed epoch 0 from 0, epoch 1 from 39, epoch 2 from 89; added "
                 "epoch 1 from 60",
                 "remove 00000000000000000091.snapshot"):
        assert line in out, line
    # checkpoints in Kafka's format (§4.4); an entry of a partition not in this directory is left alone
    assert (d / "replication-offset-checkpoint").read_text() == "0\n2\norders 0 85\norders 1 41\n"
    assert (d / "orders-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n1 60\n"
    assert (d / "orders-0" / "00000000000000000085.snapshot").is_file()
    assert not (d / "orders-0" / "00000000000000000091.snapshot").exists()


def test_producer_snapshot_and_txnindex_replayed(tmp_path):
    """The .txnindex of a torn segment keeps only the aborted transaction whose ABORT marker survived,
    with the LSO the producer state gives (§4.1, §7.2), and a snapshot is written at the new log end."""
    from kafkalog_formats.producer_snapshot import parse_producer_snapshot
    from kafkalog_formats.txn_index import parse_txn_index
    src = FIXTURES / "damaged" / "torn-transaction-segment"
    d = writable_copy(src, tmp_path / "d")
    assert run_cli("recover", "--index-interval-bytes", "128", str(d)).code == 1
    full = parse_txn_index((FIXTURES / "logdir" / "payments-0" / "00000000000000000013.txnindex").read_bytes())
    after = parse_txn_index((d / "payments-0" / "00000000000000000013.txnindex").read_bytes())
    survivors = partition_batches(d / "payments-0")
    leo = survivors[-1][1] + 1
    assert after == [t for t in full if t.last_offset < leo] and len(after) == len(full) - 1
    snap = parse_producer_snapshot((d / "payments-0" / f"{leo:020d}.snapshot").read_bytes())
    # the fixture's clean snapshot at the old end lists the same producers
    old = parse_producer_snapshot((FIXTURES / "logdir" / "payments-0" / "00000000000000000023.snapshot").read_bytes())
    assert {e.producer_id for e in snap.entries} == {e.producer_id for e in old.entries}
    assert all(e.last_offset < leo for e in snap.entries)


def test_clean_shutdown_skips_recovery_unless_forced(tmp_path):
    """With the marker, damage above the recovery point is left for --force (§7.0, §7.1 pass 4), and said
    (issue 34 item 7: a problem, exit 1, where verify fails)."""
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    before = tree_state(d)
    res = run_cli("recover", "--index-interval-bytes", "256", str(d))
    assert res.code == 1 and res.out.startswith("recover: nothing to repair in 1 partition; 1 problem it does not")
    assert "kafkalog recover --force recovers it" in flat(res.out)
    details = run_cli("recover", "--details", "--index-interval-bytes", "256", str(d))
    assert "clean-shutdown marker present" in flat(details.out)
    assert tree_state(d) == before
    res = run_cli("recover", "--index-interval-bytes", "256", "--force", str(d))
    assert res.code == 1 and "truncate 00000000000000000078.log at position 1046" in flat(res.out)
    assert (d / ".kafka_cleanshutdown").read_bytes() == b""          # removed first, restored last
    assert run_cli("recover", "--index-interval-bytes", "256", "--force", str(d)).code == 0
    assert run_cli("recover", "--index-interval-bytes", "256", str(d)).code == 0   # nothing hidden any more


def test_damage_a_clean_shutdown_marker_hides_is_reported_with_its_remedy(tmp_path):
    """Issue 34 item 7: verify fails on a CRC error; with .kafka_cleanshutdown the broker (and recover) skip
    recovery. The default report (not --details) says where the damage is and that --force recovers it, exit
    1, in text and JSON, and nothing changes; before the fix: "nothing to repair ... (exit 0)"."""
    d = writable_copy(FIXTURES / "damaged" / "flipped-crc-byte", tmp_path / "d")
    (d / ".kafka_cleanshutdown").write_bytes(b"")
    assert run_cli("verify", str(d)).code == 1
    before = tree_state(d)
    for args in (["--dry-run"], []):
        res = run_cli("recover", *args, str(d))
        assert res.code == 1, res.out
        text = flat(res.out)
        assert "1 problem it does not repair" in text.split("\n")[0]
        assert "00000000000000000000.log: position 271: damaged (Record is corrupt" in text
        assert "kafkalog recover --force recovers it" in text
        assert tree_state(d) == before
    objs = _json(run_cli("recover", "--dry-run", "--format", "json", str(d)).out)
    (pr,) = [o for o in objs if o["type"] == "problem"]
    assert pr["kind"] == "damage_skipped_after_clean_shutdown" and pr["position"] == 271
    assert pr["file"] == "orders-0/00000000000000000000.log"
    res = run_cli("recover", "--force", "--backup-dir", str(tmp_path / "b"), str(d))
    assert res.code == 1 and "truncate 00000000000000000000.log at position 271" in flat(res.out)
    assert run_cli("recover", str(d)).code == 0 and run_cli("verify", str(d)).code == 0


def test_missing_index_rebuilt_even_after_clean_shutdown(tmp_path):
    """Pass 3: a missing .index recovers the segment; a missing .timeindex is rebuilt (Kafka: empty)."""
    d = writable_copy(FIXTURES / "damaged" / "missing-index-clean", tmp_path / "d")
    res = run_cli("recover", "--index-interval-bytes", "256", str(d))
    assert res.code == 1
    for name in ("00000000000000000025.index", "00000000000000000051.timeindex"):
        assert (d / "orders-0" / name).read_bytes() == (FIXTURES / "logdir" / "orders-0" / name).read_bytes()
    assert (d / ".kafka_cleanshutdown").exists()


def test_interrupted_swap_completed(tmp_path):
    """Pass 2: files in [minSwap, maxSwap) deleted (snapshot 25 included), .swap renamed (§7.1)."""
    d = writable_copy(FIXTURES / "damaged" / "interrupted-swap", tmp_path / "d")
    res = run_cli("recover", "--index-interval-bytes", "256", str(d))
    assert res.code == 1
    names = sorted(p.name for p in (d / "orders-0").iterdir())
    assert not any(n.endswith(".swap") for n in names)
    assert "00000000000000000025.log" not in names and "00000000000000000025.snapshot" not in names
    assert [b[3] for b in partition_batches(d / "orders-0")] == \
        [b[3] for b in partition_batches(FIXTURES / "logdir" / "orders-0")]


def test_non_monotonic_offsets_empty_the_segment(tmp_path):
    """InvalidOffsetException during recovery: the segment is truncated to its base, later ones go (§7.1)."""
    d = writable_copy(FIXTURES / "damaged" / "non-monotonic-offsets", tmp_path / "d")
    res = run_cli("recover", "--index-interval-bytes", "256", "--format", "json", str(d))
    part = next(o for o in _json(res.out) if o["type"] == "partition")
    assert part["log_end_offset"] == 51
    assert part["truncations"][0]["kind"] == "invalid_offset" and part["truncations"][0]["position"] == 0
    assert "no larger than the last offset appended" in part["truncations"][0]["reason"]
    assert (d / "orders-0" / "00000000000000000051.log").stat().st_size == 0
    assert not (d / "orders-0" / "00000000000000000078.log").exists()


def test_partition_filter(tmp_path):
    d = writable_copy(FIXTURES / "logdir", tmp_path / "d")
    for name in ("orders-0", "payments-0"):
        log = segment_logs(d / name)[-1]
        log.write_bytes(log.read_bytes() + bytes(100))
    (d / ".kafka_cleanshutdown").unlink()
    res = run_cli("recover", "--index-interval-bytes", "256", "--partition", "orders-0", "--format", "json", str(d))
    assert res.code == 1
    touched = {o["partition"] for o in _json(res.out) if o["type"] == "action"}
    assert touched == {"orders-0"}
    assert segment_logs(d / "payments-0")[-1].read_bytes().endswith(bytes(100))


def test_metadata_log_only_when_asked(tmp_path):
    """__cluster_metadata-0: skipped by default; with --include-metadata-log recovered fully, partial and
    deleted KRaft snapshots removed (§7.5, §10.5)."""
    d = writable_copy(FIXTURES / "logdir", tmp_path / "d")
    meta = d / "__cluster_metadata-0"
    log = segment_logs(meta)[-1]
    good = log.read_bytes()
    log.write_bytes(good + bytes(64))
    (meta / "00000000000000000002-0000000001.checkpoint.part").write_bytes(b"partial")
    res = run_cli("recover", str(d))
    assert res.code == 0 and "KRaft metadata log: recovered only with --include-metadata-log" in flat(res.out)
    assert log.read_bytes().endswith(bytes(64))
    bad = run_cli("recover", "--partition", "__cluster_metadata-0", str(d))
    assert bad.code == 2 and "--include-metadata-log" in bad.err
    res = run_cli("recover", "--include-metadata-log", str(d))      # marker present: still fully recovered
    assert res.code == 1
    assert log.read_bytes() == good
    assert not (meta / "00000000000000000002-0000000001.checkpoint.part").exists()
    assert run_cli("recover", "--include-metadata-log", str(d)).code == 0


def test_mark_clean(tmp_path):
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    res = run_cli("recover", "--index-interval-bytes", "256", "--mark-clean", str(d))
    assert res.code == 1
    assert (d / ".kafka_cleanshutdown").exists()
    leo = partition_batches(d / "orders-0")[-1][1] + 1
    # a clean shutdown leaves the recovery point at the log end (§4.4, §7.1 "Result")
    assert (d / "recovery-point-offset-checkpoint").read_text() == f"0\n1\norders 0 {leo}\n"
    verify = run_cli("verify", "--fail-on", "warning", str(d))
    assert verify.code == 0, verify.out
    assert run_cli("recover", "--index-interval-bytes", "256", "--mark-clean", str(d)).code == 0
    assert run_cli("recover", "--index-interval-bytes", "256", "--force", str(d)).code == 0
    assert run_cli("recover", "--index-interval-bytes", "256", str(d)).code == 0   # nothing hidden any more


@pytest.mark.parametrize("args,message", [
    (["--partition", "orders-9"], "no partition directory orders-9"),
    (["--partition", "orders"], "is not of the form TOPIC-PARTITION"),
    (["--partition", "orders-0", "--mark-clean"], "cannot be combined with --partition"),
])
def test_usage_errors(tmp_path, args, message):
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    res = run_cli("recover", *args, str(d))
    assert res.code == 2 and message in res.err


def test_usage_errors_for_paths(tmp_path):
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    res = run_cli("recover", str(d / "orders-0"))
    assert res.code == 2 and "--partition orders-0" in res.err
    res = run_cli("recover", "--backup-dir", str(d / "backup"), str(d))
    assert res.code == 2 and "must be outside" in res.err
    res = run_cli("recover", str(tmp_path / "missing"))
    assert res.code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli("recover", str(empty)).code == 2


LOCK_HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX)      # a POSIX record lock, as the broker's FileChannel.tryLock (§4.8)
    print("locked", flush=True)
    time.sleep(60)
""")


def test_lock_held_by_another_process(tmp_path):
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(d / ".lock")], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = tree_state(d)
        for extra in ([], ["--dry-run"]):
            res = run_cli("recover", *extra, str(d))
            assert res.code == 3
            assert "cannot lock" in res.err and ".lock" in res.err and "another process" in res.err
            assert res.out == ""
        assert tree_state(d) == before
    finally:
        holder.kill()
        holder.wait()
    assert run_cli("recover", "--index-interval-bytes", "256", str(d)).code == 1


def test_lock_is_posix_record_lock_not_flock(tmp_path):
    """While recover holds the directory, a POSIX lock attempt by another process fails (what a broker
    starting at that moment would see); the .lock it created is removed again afterwards."""
    from kafkalog_cli import fileops
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    probe = textwrap.dedent("""
        import fcntl, os, sys
        fd = os.open(sys.argv[1], os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("acquired")
        except OSError:
            print("refused")
    """)
    with fileops.lock_dir(d):
        out = subprocess.run([sys.executable, "-c", probe, str(d / ".lock")], capture_output=True, text=True)
        assert out.stdout.strip() == "refused"
    assert not (d / ".lock").exists()


def test_help_and_lazy_imports():
    res = run_cli("recover", "--help")
    assert res.code == 0
    for word in ("--dry-run", "--backup-dir", "--mark-clean", "--include-metadata-log", "Exit status"):
        assert word in res.out
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code = ("import sys, kafkalog_cli.app as a\n"
            "try:\n    a.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy','construct','rich','kafkalog_formats') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_progress_only_on_a_terminal(tmp_path):
    """No progress output when stderr is not a TTY (pipes, CI); on a pseudo-terminal a bar appears."""
    import pty
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    res = run_cli("recover", "--dry-run", str(d))
    assert res.err == ""
    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="100")
    proc = subprocess.run([sys.executable, "-m", "kafkalog_cli", "recover", "--dry-run", str(d)],
                          stdout=subprocess.PIPE, stderr=slave, env=env, cwd=REPO, timeout=60)
    os.close(slave)
    chunks = []
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.returncode == 1
    assert b"orders-0" in b"".join(chunks)


def test_json_objects_and_actions_are_documented():
    """Every JSON object type and action kind recover writes is described in kafkalog-recover(1)."""
    import importlib.util
    import re
    from kafkalog_cli.repair import recover_actions
    spec = importlib.util.spec_from_file_location("make_man", REPO / "tools" / "make_man.py")
    make_man = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_man)
    section = dict(make_man.EXTRA_SECTIONS["recover"])["JSON OUTPUT"]
    source = (REPO / "kafkalog_cli" / "render" / "recover_report.py").read_text()
    types = set(re.findall(r'"type":\s*"([a-z_]+)"', source))
    assert types == {"skipped", "partition", "problem", "action", "summary"}
    documented = set(re.findall(r"^\.SS (\S+)$", section, re.M)) | \
        {m.replace("\\-", "-") for m in re.findall(r"^\.B (\S+)$", section, re.M)}
    ops = {c.op for c in vars(recover_actions).values() if isinstance(c, type)
           and issubclass(c, recover_actions.Action) and c is not recover_actions.Action}
    assert types | ops <= documented


def test_partition_without_segments(tmp_path):
    """No segment at all: Kafka starts an empty log at the checkpointed log start offset, so checkpoints and
    leader epochs beyond it are lowered (§7.1 pass 4)."""
    from kafkalog_formats.checkpoint import build_offset_checkpoint
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    empty = d / "empty-0"
    empty.mkdir()
    (empty / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 70\n")
    (d / "replication-offset-checkpoint").write_text(build_offset_checkpoint({("empty", 0): 70}))
    res = run_cli("recover", "--partition", "empty-0", str(d))
    assert res.code == 1
    assert "creates an empty segment at the log start offset 0" in flat(res.out)
    assert (d / "replication-offset-checkpoint").read_text() == "0\n1\nempty 0 0\n"
    assert (empty / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert run_cli("recover", "--partition", "empty-0", str(d)).code == 0


def test_io_error_mid_run_stops_cleanly_and_a_rerun_completes(tmp_path):
    """An action that fails (here: the temp file of an index rewrite cannot be created) stops the run with
    exit 3, a report of what was done, and no traceback; once the cause is gone a re-run completes."""
    d = writable_copy(FIXTURES / "damaged" / "zero-tail", tmp_path / "d")
    blocker = d / "orders-0" / "00000000000000000078.timeindex.tmp"
    blocker.mkdir()
    args = ["recover", "--index-interval-bytes", "256", "--force", str(d)]
    (d / "orders-0" / "00000000000000000078.timeindex").write_bytes(b"")     # differs from its rebuild
    res = run_cli(*args)
    assert res.code == 3
    assert "stopped after" in res.err and "00000000000000000078.timeindex" in res.err
    assert res.out.startswith("recover: stopped after ") and "(exit 3)" in flat(res.out)
    blocker.rmdir()
    assert run_cli(*args).code == 1
    assert run_cli(*args).code == 0
    assert [b[3] for b in partition_batches(d / "orders-0")] == \
        [b[3] for b in partition_batches(FIXTURES / "logdir" / "orders-0")]
