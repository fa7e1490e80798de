"""``dump-log`` when nothing is read, and ``-`` (standard input) (issue 15, item 7): a directory without Kafka
files, an impossible or empty offset range and a file it does not know are not "all good"; one segment,
index or snapshot piped in is dumped as the file itself is, named ``-``. Standard input is exercised through
real pipes (subprocesses); expected output is the same command's output on the file itself."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, run_cli

ORDERS = FIXTURES / "logdir" / "orders-0"
KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def _piped(args: list[str], data: bytes | Path) -> subprocess.CompletedProcess:
    """``kafkalog ARGS < file`` (or ``printf DATA | kafkalog ARGS``) in a subprocess."""
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    if isinstance(data, Path):
        with open(data, "rb") as f:
            return subprocess.run(KAFKALOG + args, cwd=REPO, stdin=f, capture_output=True, env=env, timeout=120)
    return subprocess.run(KAFKALOG + args, cwd=REPO, input=data, capture_output=True, env=env, timeout=120)


def _as_stdin(out: str, path: Path) -> str:
    """The output for the same bytes on standard input: no file name, and no topic or partition (the
    name of the partition directory is what tells them)."""
    topic, _, part = path.parent.name.rpartition("-")
    return (out.replace(str(path), "-")
            .replace(f'"topic":"{topic}","partition":{part}', '"topic":null,"partition":null'))


# --- nothing read ----------------------------------------------------------------------------------------

def test_a_directory_without_kafka_files_is_exit_1_with_the_reason(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not kafka")
    r = run_cli("dump-log", str(tmp_path))
    assert r.code == 1 and r.out == ""
    assert r.err == (f"kafkalog: {tmp_path}: no Kafka log files here or in the directories below (segments, "
                     "indexes, snapshots, checkpoints): nothing dumped\n")
    j = run_cli("dump-log", "--format", "json", str(tmp_path))
    assert j.code == 1 and json.loads(j.out)["kind"] == "no_kafka_files"


def test_an_empty_directory_next_to_a_real_one_still_reports(tmp_path):
    r = run_cli("dump-log", str(ORDERS / "00000000000000000025.log"), str(tmp_path))
    assert r.code == 1 and "Log starting offset: 25" in r.out and "no Kafka log files here" in r.err


def test_from_offset_after_to_offset_is_a_usage_error():
    r = run_cli("dump-log", "--from-offset", "100", "--to-offset", "5", str(ORDERS))
    assert r.code == 2 and r.out == ""
    assert "--from-offset 100 is after --to-offset 5" in r.err


def test_an_offset_range_no_batch_reaches_is_exit_1():
    objs = [json.loads(x) for x in run_cli("dump-log", "--format", "json", str(ORDERS)).out.splitlines()]
    end = max(o["last_offset"] for o in objs if o["type"] == "batch")
    r = run_cli("dump-log", "--from-offset", str(end + 1), str(ORDERS))
    assert r.code == 1 and "baseOffset" not in r.out
    assert f"no batch holds an offset in {end + 1}.. (--from-offset/--to-offset)" in r.err
    inside = run_cli("dump-log", "--from-offset", str(end), str(ORDERS))
    assert inside.code == 0 and f"lastOffset: {end} " in inside.out


def test_dev_stdin_and_unknown_files_are_nothing_dumped(tmp_path):
    done = _piped(["dump-log", "/dev/stdin"], ORDERS / "00000000000000000000.log")
    assert done.returncode == 1
    err = done.stderr.decode()
    assert "Ignoring unknown file /dev/stdin" in err                      # Kafka's line, kept
    assert "nothing dumped" in err and "give -" in err
    (tmp_path / "x.txt").write_text("x")
    assert run_cli("dump-log", str(tmp_path / "x.txt")).code == 1
    # an unknown file next to real ones is Kafka's "Ignoring" line only
    mixed = run_cli("dump-log", str(tmp_path / "x.txt"), str(ORDERS / "00000000000000000025.log"))
    assert mixed.code == 0 and "nothing dumped" not in mixed.err


def test_directory_notes_are_shown_but_not_problems(tmp_path):
    """A .deleted file pending removal and a file Kafka ignores are notes (verify: info): dump-log still names
    them, and they alone do not make exit status 1; nor does a leftover .cleaned (verify: a warning, Kafka's
    loader removes it); a directory Kafka cannot parse as a partition (verify: an error) does."""
    import shutil
    d = tmp_path / "orders-0"
    shutil.copytree(ORDERS, d)
    (d / "00000000000000000000.log.deleted").write_bytes(b"")
    (d / "notes.txt").write_text("x")
    r = run_cli("dump-log", str(d))
    assert r.code == 0, r.err
    assert "file scheduled for deletion" in r.err and "unknown file notes.txt" in r.err
    (d / "00000000000000000025.log.cleaned").write_bytes(b"")
    r = run_cli("dump-log", str(d))
    assert r.code == 0 and "verify's grading (Kafka's next start repairs them)" in r.err
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    shutil.move(d, logdir / "orders-0")
    (logdir / "not-a-partition").mkdir()
    assert run_cli("dump-log", str(logdir)).code == 1 == run_cli("verify", str(logdir)).code


def test_json_decoder_says_once_how_many_values_it_wrote_as_base64():
    """--value-decoder json on values that are not JSON: each is base64, flagged (lossless), and one line on
    stderr counts them (issue 23: the fallback was silent); text output prints them as strings, no note."""
    import json
    r = run_cli("dump-log", "--format", "json", "--key-decoder", "json", "--value-decoder", "json",
                str(REPO / "fixtures" / "logdir" / "payments-0"))
    records = [o for o in map(json.loads, r.out.splitlines()) if o["type"] == "record" and "control" not in o]
    keys = sum(o.get("key_encoding") == "base64" for o in records)
    values = sum(o.get("value_encoding") == "base64" for o in records)
    assert r.code == 0 and keys and values
    assert r.err.splitlines() == [f"kafkalog: json decoder: {keys} keys and {values} values are not valid JSON, "
                                  'written as base64 (flagged "<field>_encoding":"base64")']
    assert run_cli("--quiet", "dump-log", "--format", "json", "--value-decoder", "json",
                   str(REPO / "fixtures" / "logdir" / "payments-0")).err == ""
    assert run_cli("dump-log", "--value-decoder", "json", str(REPO / "fixtures" / "logdir" / "payments-0")).err == ""


# --- standard input ------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [[], ["--deep-iteration", "--print-data-log"], ["--format", "json", "--deep-iteration"]],
                         ids=["shallow", "data", "json"])
def test_a_segment_on_stdin_dumps_as_the_file_does(args):
    seg = ORDERS / "00000000000000000025.log"
    done = _piped(["dump-log", "--type", "log", "--base-offset", "25", *args, "-"], seg)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == _as_stdin(run_cli("dump-log", *args, str(seg)).out, seg)


def test_a_segment_is_recognised_without_type_and_says_so():
    seg = ORDERS / "00000000000000000025.log"
    done = _piped(["dump-log", "-"], seg)
    assert done.returncode == 0
    expected = _as_stdin(run_cli("dump-log", str(seg)).out, seg).replace("Log starting offset: 25\n", "")
    assert done.stdout.decode() == expected                 # no base offset without a name or --base-offset
    assert done.stderr.decode() == ("kafkalog: -: read as a log segment: its first batch has magic 2 and a "
                                    "valid CRC (--type chooses)\n")
    assert _piped(["--quiet", "dump-log", "-"], seg).stderr == b""


def test_positions_are_those_of_standard_input_and_a_torn_tail_is_reported():
    seg = (ORDERS / "00000000000000000025.log").read_bytes()
    done = _piped(["dump-log", "--format", "json", "--type", "log", "-"], seg[:500])
    objs = [json.loads(x) for x in done.stdout.splitlines()]
    positions = [o["position"] for o in objs if o["type"] == "batch"]
    whole = [json.loads(x) for x in run_cli("dump-log", "--format", "json", str(ORDERS / "00000000000000000025.log"))
             .out.splitlines()]
    assert positions == [o["position"] for o in whole if o["type"] == "batch" and o["position"] + o["size"] <= 500]
    trailing = [o for o in objs if o["type"] == "problem"]
    assert [(t["file"], t["kind"], t["position"] + t["bytes"]) for t in trailing] == [("-", "trailing_bytes", 500)]
    # graded as verify grades the segment alone: without its indexes Kafka recovers it, cutting the tail
    assert done.returncode == 0 and b"warnings by verify's grading" in done.stderr
    flipped = bytearray(seg)
    flipped[100] ^= 1                     # inside the first batch, intact batches after it: an error
    bad = _piped(["dump-log", "--type", "log", "-"], bytes(flipped))
    assert bad.returncode == 1 and b"Record is corrupt" in bad.stderr


@pytest.mark.parametrize("name,kind", [("00000000000000000025.index", "index"),
                                       ("00000000000000000025.timeindex", "timeindex")])
def test_an_index_needs_its_type_and_base_offset_and_prints_its_entries(name, kind):
    f = ORDERS / name
    refused = _piped(["dump-log", "-"], f)
    assert refused.returncode == 2 and b"give --type" in refused.stderr
    no_base = _piped(["dump-log", "--type", kind, "-"], f)
    assert no_base.returncode == 2 and b"--base-offset" in no_base.stderr
    done = _piped(["dump-log", "--type", kind, "--base-offset", "25", "-"], f)
    assert done.returncode == 0
    assert done.stdout.decode() == _as_stdin(run_cli("dump-log", str(f)).out, f)
    assert b"not verified" in done.stderr
    only = _piped(["dump-log", "--type", kind, "--base-offset", "25", "--verify-index-only", "-"], f)
    assert only.returncode == 2


def test_a_producer_snapshot_and_a_kraft_snapshot_are_recognised():
    snap = ORDERS / "00000000000000000025.snapshot"
    done = _piped(["dump-log", "-"], snap)
    assert done.returncode == 0 and b"producer snapshot" in done.stderr
    assert done.stdout.decode() == _as_stdin(run_cli("dump-log", str(snap)).out, snap)
    ck = FIXTURES / "logdir" / "__cluster_metadata-0" / "00000000000000000003-0000000001.checkpoint"
    done = _piped(["dump-log", "--deep-iteration", "-"], ck)
    assert done.returncode == 0 and b"KRaft snapshot" in done.stderr
    expected = _as_stdin(run_cli("dump-log", "--deep-iteration", str(ck)).out, ck)
    assert done.stdout.decode() == expected.replace("Snapshot end offset: 3, epoch: 1\n", "")


def test_stdin_usage_errors_and_empty_input():
    """An empty standard input is "nothing read" (exit 1, one line) whatever --type says (issue 23: with
    --type it dumped an empty file, exit 0); usage errors come first."""
    for args in (["dump-log", "-"], ["dump-log", "--type", "log", "-"], ["dump-log", "--format", "json", "-"],
                 ["dump-log", "--type", "timeindex", "--base-offset", "0", "-"]):
        done = _piped(args, b"")
        assert done.returncode == 1, args
        assert b"standard input is empty: nothing dumped" in done.stdout + done.stderr and b"Dumping" not in done.stdout
    for kind, article in (("index", "an offset"), ("timeindex", "a time")):             # --base-offset missing
        done = _piped(["dump-log", "--type", kind, "-"], b"")
        assert done.returncode == 2 and f"{article} index read from standard input".encode() in done.stderr
    assert _piped(["dump-log", "-", str(ORDERS)], b"x").returncode == 2
    assert run_cli("dump-log", "--type", "log", str(ORDERS)).code == 2
    noise = _piped(["dump-log", "-"], os.urandom(64))
    assert noise.returncode == 2 and b"cannot tell what standard input holds" in noise.stderr


def _peak_rss(args: list[str], stdin: Path, tmpdir: Path) -> tuple[int, int]:
    """(exit status, peak resident set in bytes) of ``kafkalog ARGS < stdin`` in a fresh child."""
    code = ("import os, resource, subprocess, sys; "
            "p = subprocess.run(sys.argv[3:], stdin=open(sys.argv[1], 'rb'), stdout=subprocess.DEVNULL, "
            "env=dict(os.environ, TMPDIR=sys.argv[2])); "
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, str(stdin), str(tmpdir), *KAFKALOG, *args], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    status, kib = map(int, out.stdout.split())
    return status, kib * 1024


def test_stdin_memory_stays_bounded(tmp_path):
    """A 96 MiB segment through a pipe is copied to a temporary file in chunks, never held in memory: the
    peak resident set is that of dumping the file itself (plus a few MiB; a copy held in memory would add
    96 MiB), and the temporary file is gone afterwards."""
    seg = (ORDERS / "00000000000000000025.log").read_bytes()
    big = tmp_path / "00000000000000000025.log"
    with open(big, "wb") as f:
        for _ in range((96 << 20) // len(seg)):
            f.write(seg)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    status, piped = _peak_rss(["dump-log", "--type", "log", "-"], big, scratch)
    assert status == 0
    status, direct = _peak_rss(["dump-log", str(big)], Path(os.devnull), scratch)
    assert status == 0
    assert piped < direct + (16 << 20), (piped, direct)
    print(f"peak RSS: piped {piped >> 20} MiB, the file itself {direct >> 20} MiB")
    assert list(scratch.iterdir()) == []


def test_dump_log_version_is_kafkalogs():
    assert run_cli("dump-log", "--version").out == run_cli("--version").out
    assert run_cli("dump-log", "--version").code == 0


def test_stdin_into_a_closed_pipe_ends_with_141_and_leaves_no_temporary_file(tmp_path):
    """``cat segment | kafkalog dump-log - | head -1``: status 141 as for a file, and the private copy of
    standard input is removed."""
    seg = ORDERS / "00000000000000000025.log"
    big = tmp_path / "big.log"
    big.write_bytes(seg.read_bytes() * 400)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    with open(big, "rb") as f:
        proc = subprocess.Popen(KAFKALOG + ["dump-log", "--print-data-log", "-"], cwd=REPO, stdin=f,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout.readline() == b"Dumping -\n"
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in err
    assert list(scratch.iterdir()) == []


def test_stdin_on_a_terminal_is_refused_instead_of_waiting():
    master, slave = os.openpty()
    try:
        done = subprocess.run(KAFKALOG + ["dump-log", "-"], cwd=REPO, stdin=slave, capture_output=True,
                              timeout=60)
    finally:
        os.close(slave)
        os.close(master)
    assert done.returncode == 2 and b"standard input, which is a terminal" in done.stderr
