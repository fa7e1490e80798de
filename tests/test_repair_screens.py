"""The text reports of the commands that change files (recover, retain, compact, delete-records) have
verify's shape (issue 23): the verdict first, what changes grouped by partition, the partitions where
nothing happens counted in one line, the totals last, every line within 80 columns; one screen when
nothing happens on a real 50-partition directory."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import CORPUS, FIXTURES, copy_logdir, flat, needs_corpus, run_cli

NOW = "1700000050000"
VERDICT = re.compile(r"^(recover|retain|compact|delete-records)( --dry-run)?: .+")


def _shape(out: str, command: str, dry: bool) -> list[str]:
    """Check the shape every report has; its lines."""
    lines = out.rstrip("\n").split("\n")
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert VERDICT.match(lines[0]) and lines[0].startswith(f"{command}{' --dry-run' if dry else ''}: "), lines[0]
    verdict = flat(out.split("\n\n")[0])
    assert re.search(r"\(exit [0-3]\)", verdict), verdict
    totals = flat(out.rstrip("\n").split("\n\n")[-1])
    assert re.match(r"\d[\d,]* partitions?[ ,;]", totals) and re.search(r" in \d+\.\d\d s$", totals), totals
    assert "\n\n\n" not in out
    return lines


@pytest.mark.parametrize("args", [
    ["retain", "--all"], ["retain", "--all", "--use-defaults"], ["compact", "--all"],
    ["compact", "--all", "--force", "--config", "cleanup.policy=compact"], ["recover"],
    ["delete-records", "--offset", "orders-0=30", "--offset", "payments-0=-1"]],
    ids=["retain", "retain-defaults", "compact", "compact-everything", "recover", "delete-records"])
@pytest.mark.parametrize("details", [False, True], ids=["", "details"])
def test_every_report_has_the_shape_dry_and_real(tmp_path, args, details):
    d = copy_logdir(tmp_path / "logdir", metadata=True)
    cmd = [*args, *(["--details"] if details else []), *(["--now", NOW] if args[0] in ("retain", "compact") else [])]
    dry = run_cli(*cmd, "--dry-run", str(d))
    _shape(dry.out, args[0], True)
    assert f"(exit {dry.code})" in flat(dry.out.split("\n\n")[0])
    real = run_cli(*cmd, str(d))
    assert real.code == dry.code
    _shape(real.out, args[0], False)
    names = sorted(p.name for p in d.iterdir() if p.is_dir())
    if details and args[0] != "delete-records":       # every partition has its block
        for name in names:
            assert re.search(rf"^{re.escape(name)}:", dry.out, re.M) or name in flat(dry.out), name


def test_what_happens_is_grouped_and_the_rest_counted():
    """The bundled directory: retain --dry-run names the three partitions that lose segments and counts
    the six others by why nothing happens there; --details shows all nine and the values each used."""
    d = str(FIXTURES / "logdir")
    r = run_cli("retain", "--dry-run", "--all", "--now", NOW, d)
    assert r.code == 0
    assert r.out.startswith("retain --dry-run: would delete 1 segment (982 B) in 1 of 9 partitions (exit 0)")
    heads = re.findall(r"^(\S+-\d+): ", r.out, re.M)
    assert heads == ["payments-0"] or len(heads) == len(set(heads))
    said = flat(r.out)
    m = re.search(r"(\d+) other partitions: (.*?) \(--details lists each\)", said)
    assert m and int(m.group(1)) + len(heads) == 9, said
    assert sum(int(n) for n in re.findall(r"(?:^|; )(\d+) ", m.group(2))) == int(m.group(1))
    assert "config:" not in r.out and said.count("configuration: KRaft metadata") == 1
    full = run_cli("retain", "--dry-run", "--all", "--details", "--now", NOW, d)
    assert len(re.findall(r"^\S+-\d+: ", full.out, re.M)) == 9
    assert "config: retention.ms=604800000 (7 days) from topic override at metadata snapshot" in flat(full.out)


def test_a_long_run_of_segments_under_one_rule_is_shortened(tmp_path):
    """Consecutive segments deleted by the same rule share it; a run longer than five is shortened to the
    first two, a count and the last (--details: every one)."""
    from kafkalog_cli.repair.log_writer import PartitionWriter
    from kafkalog_formats.record_batch import RecordSpec, build_batch
    d = tmp_path / "logdir"
    w = PartitionWriter(d / "t-0", segment_bytes=200)
    for i in range(12):
        w.append(build_batch(i, [RecordSpec(0, 1700000000000 + i, b"k", b"v" * 100)]), 1700000000000)
    w.close()
    (d / "replication-offset-checkpoint").write_text("0\n1\nt 0 12\n")
    (d / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c\n")
    r = run_cli("retain", "--dry-run", "--retention-ms", "1000", "--now", NOW, str(d / "t-0"))
    assert r.code == 0
    deletes = [line for line in r.out.splitlines() if line.startswith("  delete ")]
    assert len(deletes) == 3 and "... 9 more segments" in r.out
    assert flat(r.out).count("older than retention.ms=1000 (1 s)") == 1
    r = run_cli("retain", "--dry-run", "--details", "--retention-ms", "1000", "--now", NOW, str(d / "t-0"))
    assert len([line for line in r.out.splitlines() if line.startswith("  delete ")]) == 12


def test_partition_names_are_listed_as_ranges():
    from kafkalog_cli.render.repair_text import names_text
    names = [f"__consumer_offsets-{n}" for n in (*range(0, 9), *range(10, 50))] + ["telemetry-0", "x"]
    assert names_text(names) == "__consumer_offsets-{0..8,10..49}, telemetry-0, x"
    assert names_text([f"t{n}-0" for n in range(9)]) == "t0-0, t1-0, t2-0, t3-0, t4-0, t5-0, 3 more"


# --- a real broker's 50-partition directory ---------------------------------------------------------


@pytest.fixture
def real_logdir(tmp_path) -> Path:
    src = CORPUS / "Yashasvi960__kafka-service" / "kafka-data"
    if not src.is_dir():
        pytest.skip(f"{src} is absent")
    d = tmp_path / "kafka-data"
    shutil.copytree(src, d)
    for p in [d, *d.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return d


@needs_corpus
def test_nothing_to_do_fits_one_screen_on_a_real_50_partition_directory(real_logdir):
    """compact --dry-run --topic __consumer_offsets printed 652 lines (13 configuration lines per partition);
    recover --dry-run one line per partition, 67 of them wider than 80 columns."""
    d = str(real_logdir)
    r = run_cli("compact", "--dry-run", "--topic", "__consumer_offsets", d)
    lines = _shape(r.out, "compact", True)
    assert r.code == 0 and len(lines) <= 15, r.out
    assert lines[0] == "compact --dry-run: nothing to clean in 50 partitions (exit 0)"
    r = run_cli("retain", "--dry-run", "--all", d)
    assert r.code == 0 and len(_shape(r.out, "retain", True)) <= 15, r.out
    # the corpus lacks index files: recover rebuilds them, partitions with the same repairs share a block
    r = run_cli("recover", "--dry-run", d)
    lines = _shape(r.out, "recover", True)
    assert r.code == 1 and lines[0].startswith("recover --dry-run: would make 108 repairs in 54 of 54 partitions")
    assert re.search(r"^\d+ partitions, __consumer_offsets-\{[0-9.,]+\}", r.out, re.M) and len(lines) < 80
    assert run_cli("recover", d).code == 1
    r = run_cli("recover", "--dry-run", d)
    lines = _shape(r.out, "recover", True)
    assert r.code == 0 and len(lines) <= 15 and lines[0] == "recover --dry-run: nothing to repair in 54 partitions " \
                                                             "(exit 0)", r.out
