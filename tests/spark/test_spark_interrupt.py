"""Ctrl-C at any moment of ``kafkalog export``: real SIGINTs sent to the command's process group (what a
terminal does) while Spark's JVM launches, while the SparkContext is made, during the warm-up and the job.
(A SIGINT inside the first few hundred milliseconds, while Python imports the CLI before its entry point
runs, is the interpreter's own default handling, outside the Spark code.) Each time: exit status 130,
``kafkalog: interrupted`` as the only line after the start notice, nothing left behind (no output, no staging
directory, no temporary directory, no JVM or Python worker running). The fixtures' export is over in about
3 s on an idle machine (its job in a fraction of a second): the job is interrupted on a generated fleet, at
a point a first export of it measured.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import FIXTURES, ctrl_c_default, java_missing_reason, live_processes, pyspark_missing_reason

pytestmark = pytest.mark.spark


def processes_mentioning(text: str) -> list[str]:
    return [f"{pid}: {cmd[:200]}" for pid, cmd, _env in live_processes() if text in cmd]


@pytest.mark.parametrize("after", [1.0, 2.0, pytest.param(1.5, marks=pytest.mark.slow),
                                   pytest.param(2.5, marks=pytest.mark.slow)])
def test_ctrl_c_at_any_moment_prints_one_line_and_leaves_nothing(after, tmp_path):
    interrupt(FIXTURES / "logdir", after, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.2, 0.6])
def test_ctrl_c_during_the_export_job_prints_one_line_and_leaves_nothing(fraction, tmp_path):
    """A fleet whose export job takes a second or more: a first export measures when its job starts and how
    long it takes; a second is interrupted that far into its job (the fixtures' export is over in about 3 s,
    its job in a fraction of a second)."""
    import json

    from fleet import make_fleet
    for reason in (java_missing_reason(), pyspark_missing_reason()):
        if reason:
            pytest.skip(reason)
    make_fleet(tmp_path / "fleet", brokers=2, partitions_per_broker=4, records_per_partition=100_000,
               segment_bytes=8 << 20)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "export", str(tmp_path / "fleet"), "-o",
                        str(tmp_path / "reference"), "--format", "json"], capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout)
    job_starts = wall - result["seconds"] + result["startup_seconds"]
    run = tmp_path / "run"
    run.mkdir()
    interrupt(tmp_path / "fleet", job_starts + fraction * result["job_seconds"], run)


def interrupt(data, after: float, tmp_path) -> None:
    """Export ``data``, Ctrl-C ``after`` seconds in: one line, status 130, nothing left behind."""
    for reason in (java_missing_reason(), pyspark_missing_reason()):
        if reason:
            pytest.skip(reason)
    tmp = tmp_path / "tmp"                  # Spark's and pyspark's temporary files go here (TMPDIR)
    tmp.mkdir()
    out = tmp_path / "out"
    env = dict(os.environ, TMPDIR=str(tmp))
    env.pop("PYSPARK_PYTHON", None)
    p = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "export", str(data), "-o", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                         start_new_session=True, cwd=tmp_path, preexec_fn=ctrl_c_default)
    time.sleep(after)
    finished_first = p.poll() is not None
    if not finished_first:
        os.killpg(p.pid, signal.SIGINT)
    try:
        _out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    if finished_first:
        pytest.skip(f"the export finished in under {after} s: nothing to interrupt")
    lines = [ln for ln in err.decode().splitlines() if ln.strip() and not ln.startswith("kafkalog: starting Spark")]
    if p.returncode == 0:
        pytest.skip("the export completed before the signal arrived")
    assert p.returncode == 130, err.decode()[-3000:]
    assert lines == ["kafkalog: interrupted"], err.decode()[-3000:]
    time.sleep(0.5)
    assert processes_mentioning(str(tmp)) == []          # the JVM (its command line names TMPDIR) is gone
    assert sorted(str(x.relative_to(tmp)) for x in tmp.rglob("*")) == []
    assert sorted(x.name for x in tmp_path.iterdir()) == ["tmp"]
