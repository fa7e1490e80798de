"""``kafkalog verify``'s text report for people (issue 15, item 5): the verdict first, then the findings by
partition, one line per partition with findings and a count of the clean ones, every line within 80
columns, names never cut, ``--details`` for every partition and segment; JSON and JUnit untouched.

Expected values come from verify's JSON output (the machine form of the same run) and from the files on
disk, never from the text being tested."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path


from conftest import CORPUS, FIXTURES, REPO, needs_corpus, run_cli

DAMAGED = FIXTURES / "damaged"
YASHASVI = CORPUS / "Yashasvi960__kafka-service"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _json(*args) -> list[dict]:
    r = run_cli("verify", "--format", "json", *args)
    return [json.loads(line) for line in r.out.splitlines()]


def _partition_dirs_with_problems(objs: list[dict]) -> set[str]:
    """Partition directories holding a warning or error (a file's directory, or the partition unit)."""
    out = set()
    for o in objs:
        if o["type"] == "finding" and o["severity"] != "info":
            out.add(o["unit"] if o["unit_kind"] == "partition" else str(Path(o["unit"]).parent))
    return out


def _check_layout(text: str, width: int = 80) -> list[str]:
    lines = text.splitlines()
    too_long = [line for line in lines if len(line) > width]
    assert not too_long, too_long
    return lines


@needs_corpus
def test_real_directory_report_leads_with_the_verdict_and_fits_80_columns():
    """The 55-partition directory of the corpus: the verdict, then only the partitions with findings (each
    with one line, its findings under it), a count of the clean ones, and the totals last."""
    objs = _json(str(YASHASVI))
    summary = objs[-1]
    problem_dirs = _partition_dirs_with_problems(objs)
    partitions = summary["partitions"]
    r = run_cli("verify", str(YASHASVI))
    lines = _check_layout(r.out)
    # its partitions whose .log files the corpus lacks have recovery points beyond their log end: warnings
    assert summary["errors"] == 0 and summary["warnings"] and r.code == 0
    assert lines[0] == (f"verify: passed, {summary['warnings']} warnings in {partitions} partitions "
                        "(--fail-on warning would fail)")
    assert len(problem_dirs) < partitions
    for d in problem_dirs:                          # each partition with findings, labelled below PATH
        label = str(Path(d).relative_to(YASHASVI))
        assert label in r.out.replace("/\n    ", "/"), label
    assert f"{partitions - len(problem_dirs)} other partitions: no problems" in r.out
    assert lines[-1].startswith(f"verified {summary['segments']} segments, ")
    assert lines[-1].endswith(" s")
    assert not [line for line in lines if re.match(r"  \d{20}\.log ", line)]   # no segment tables (--details)


@needs_corpus
def test_findings_of_one_kind_in_one_file_are_summarised_unless_details():
    objs = _json(str(YASHASVI))
    per_file = Counter((o["file"], o["kind"]) for o in objs
                       if o["type"] == "finding" and o["severity"] != "info")
    (file, kind), n = per_file.most_common(1)[0]
    assert n > 3                                   # leader epochs beyond the (missing) log end
    short = run_cli("verify", str(YASHASVI)).out
    assert f"... and {n - 2} more {kind} in {Path(file).name}" in " ".join(short.split())
    full = run_cli("verify", "--details", str(YASHASVI)).out
    assert "more " + kind not in full
    assert full.count(f"{kind}:") == sum(c for (f, k), c in per_file.items() if k == kind)


def test_findings_name_files_in_full_with_position_and_offset():
    objs = _json(str(DAMAGED / "flipped-crc-byte"))
    crc = next(o for o in objs if o["type"] == "finding" and o["kind"] == "crc_mismatch")
    r = run_cli("verify", str(DAMAGED / "flipped-crc-byte"))
    lines = _check_layout(r.out)
    head = next(i for i, line in enumerate(lines) if line.startswith("  error"))
    assert lines[head].split() == ["error", f"{Path(crc['file']).name},", "position", f"{crc['position']},",
                                   "offset", str(crc["offset"])]
    assert lines[head + 1].strip().startswith("crc_mismatch: Record is corrupt")
    assert lines[head - 1].startswith("orders-0: 2 errors")         # the partition's line heads them
    assert lines[head + 3].split()[:2] == ["error", f"{Path(crc['file']).name},"]   # the records it puts at risk
    assert lines[head + 4].strip().startswith("intact_records_at_risk: Kafka's recovery truncates this segment")


def test_details_lists_every_partition_and_segment_in_full():
    path = DAMAGED
    objs = _json(str(path))
    segments = [o for o in objs if o["type"] == "segment"]
    r = run_cli("verify", "-v", str(path))
    lines = _check_layout(r.out)
    rows = [line.split() for line in lines if re.match(r"  \d{20}\.log ", line)]
    assert sorted(row[0] for row in rows) == sorted(Path(o["file"]).name for o in segments)
    for o in segments:                              # status, batches, records, offsets of each segment
        label = str(Path(o["file"]).parent.relative_to(path))
        block = r.out.split(f"\n{label}: ")[-1]
        row = next(line.split() for line in block.splitlines() if line.startswith("  " + Path(o["file"]).name))
        status = "ok" if o["status"] == "info" else o["status"]
        offsets = "-" if o["first_offset"] is None else f"{o['first_offset']}..{o['last_offset']}"
        assert (row[1], row[-3], row[-2], row[-1]) == (status, f"{o['batches']:,}", f"{o['records']:,}", offsets)
    assert "other partitions" not in r.out


def test_clean_partitions_are_counted_and_clean_runs_take_two_lines():
    r = run_cli("verify", str(FIXTURES / "logdir"))
    assert r.code == 0 and len(r.out.splitlines()) == 2
    r = run_cli("verify", str(DAMAGED))
    objs = _json(str(DAMAGED))
    clean = objs[-1]["partitions"] - len(_partition_dirs_with_problems(objs))
    assert f"\n{clean} other partitions: no problems (--details lists every partition)\n" in r.out


def test_warnings_pass_by_default_and_the_verdict_says_what_fail_on_would_do():
    r = run_cli("verify", str(DAMAGED / "zero-tail"))
    assert r.code == 0
    assert r.out.splitlines()[0] == "verify: passed, 1 warning in 1 partition (--fail-on warning would fail)"
    r = run_cli("verify", "--fail-on", "warning", str(DAMAGED / "zero-tail"))
    assert r.code == 1 and r.out.startswith("verify: FAILED, 1 warning in 1 partition\n")


def test_several_paths_label_partitions_with_the_path_given():
    """Two log directories with an ``orders-0`` each: the labels tell them apart."""
    a, b = DAMAGED / "zero-tail", DAMAGED / "orphan-index"
    r = run_cli("verify", str(a), str(b))
    assert f"\n{a}/orders-0: 1 warning" in r.out and f"\n{b}/orders-0: 1 warning" in r.out


def test_long_names_break_only_after_a_slash(tmp_path):
    """A partition whose name is longer than the line (Kafka allows 249 characters): never cut inside a
    name, broken after the '/' of its path, the name whole on its own line."""
    import shutil
    topic = "my-kafka-streams-app-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
    src = DAMAGED / "zero-tail" / "orders-0"
    d = tmp_path / "disk" / "kafka-data" / f"{topic}-0"
    shutil.copytree(src, d)
    r = run_cli("verify", str(tmp_path / "disk"))
    lines = _check_layout(r.out)
    assert "kafka-data/" in lines
    assert any(line.strip().startswith(f"{topic}-0:") for line in lines)
    assert all(topic[:20] not in line or f"{topic}-0" in line for line in lines)


def test_timestamps_in_messages_get_their_iso_time():
    objs = _json("--show-info", str(DAMAGED / "non-monotonic-offsets"))
    msg = next(o["message"] for o in objs if o["type"] == "finding" and o["kind"] == "time_index_offset_mismatch")
    ms = int(re.search(r"timestamp (\d{13})", msg).group(1))
    iso = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    r = run_cli("verify", "--show-info", str(DAMAGED / "non-monotonic-offsets"))
    assert f"timestamp {ms} ({iso})" in " ".join(r.out.split())
    assert f"timestamp {ms} ({iso})" not in msg                       # JSON keeps the message as it was


def test_json_and_junit_are_unchanged_by_the_text_options(tmp_path):
    def strip_time(text: str) -> str:
        return re.sub(r'"seconds":[0-9.]+|time="[0-9.]+"', "", text)
    for fmt in ("json", "junit"):
        plain = run_cli("verify", "--format", fmt, str(DAMAGED))
        detailed = run_cli("verify", "--format", fmt, "--details", "--show-info", str(DAMAGED))
        assert strip_time(plain.out) == strip_time(detailed.out) and plain.code == detailed.code == 1


def _stdout_on_a_terminal(args: list[str], columns: int = 80) -> tuple[int, str]:
    """Run kafkalog with stdout on a pseudo-terminal of ``columns`` columns (stderr a pipe)."""
    import fcntl
    import select
    import struct
    import termios
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = dict(os.environ, COLUMNS=str(columns), TERM="xterm")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", *args], cwd=REPO, stdout=slave,
                            stderr=subprocess.PIPE, env=env)
    os.close(slave)
    drawn = b""
    while True:
        ready = select.select([master], [], [], 60)[0]
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:                            # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    code = proc.wait(timeout=120)
    proc.stderr.close()
    os.close(master)
    return code, drawn.decode("utf-8", "replace").replace("\r\n", "\n")


@needs_corpus
def test_on_an_80_column_terminal_the_report_is_coloured_and_fits():
    code, drawn = _stdout_on_a_terminal(["verify", str(YASHASVI)])
    assert code == 0
    assert "\x1b[" in drawn                                            # coloured on a terminal
    text = ANSI.sub("", drawn)
    lines = _check_layout(text)
    assert lines[0].startswith("verify: passed, 16 warnings in ")
    piped = run_cli("verify", str(YASHASVI)).out.splitlines()
    assert lines[:-1] == piped[:-1]                                    # the same lines as in a pipe
    assert lines[-1].split(" in ")[0] == piped[-1].split(" in ")[0]


def test_a_narrow_terminal_narrows_the_report():
    code, drawn = _stdout_on_a_terminal(["--color=never", "verify", str(DAMAGED / "stale-checkpoints")], 60)
    assert code == 1 and "\x1b[1" not in drawn
    _check_layout(ANSI.sub("", drawn), 60)


def test_the_readme_example_is_what_verify_prints():
    """House style 11: the example report of verify's page (docs/commands/verify.md) is the command's output
    (its "..." elides lines)."""
    readme = (REPO / "docs" / "commands" / "verify.md").read_text()
    block = readme.split("$ kafkalog verify fixtures/damaged/stale-checkpoints\n", 1)[1].split("```", 1)[0]
    shown = block.splitlines()
    cut = shown.index("  ...")
    out = run_cli("verify", str(DAMAGED / "stale-checkpoints")).out.replace(str(DAMAGED / "stale-checkpoints"),
                                                                             "fixtures/damaged/stale-checkpoints")
    real = out.splitlines()
    assert real[:cut] == shown[:cut]
    assert real[-1].split(" in ")[0] == shown[-1].split(" in ")[0]
