"""No process of ``kafkalog export`` outlives the command: when it returns, the JVM, Spark's Python daemon and
its workers have all exited. Each run carries a marker of its own in its environment, which every process it
starts inherits (the Python daemon puts itself in a process group of its own, so the environment is what
finds it); the check is made at once when the command returns.

The first run on a machine writes the class-data archive of Spark's classes: in the foreground, with a line
saying so, and the archive is in place when the command returns (a first run used to leave its JVM writing
a 116 MB archive for up to two minutes after the command had exited).
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import FIXTURES, carrying, java_missing_reason, pyspark_missing_reason

pytestmark = pytest.mark.spark


def export(tmp_path: Path, **env) -> tuple[subprocess.CompletedProcess, list[str]]:
    for reason in (java_missing_reason(), pyspark_missing_reason()):
        if reason:
            pytest.skip(reason)
    mark = uuid.uuid4().hex
    full = dict(os.environ, KAFKALOG_TEST_MARK=mark, **env)
    full.pop("PYSPARK_PYTHON", None)
    # standard output and error go to files, not pipes: a shell returns when the command exits, whatever its
    # children still hold open (reading pipes to their end would wait for a JVM that outlives the command)
    with open(tmp_path / "stdout", "w+") as out, open(tmp_path / "stderr", "w+") as err:
        p = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "export", str(FIXTURES / "logdir"), "-o",
                              str(tmp_path / "out")], env=full, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             cwd=tmp_path)
        try:
            p.wait(timeout=900)
        finally:
            left = carrying(mark)
            if p.poll() is None:
                p.kill()
        out.seek(0)
        err.seek(0)
        r = subprocess.CompletedProcess(p.args, p.returncode, out.read(), err.read())
    return r, left


def test_no_process_outlives_an_export(tmp_path):
    r, left = export(tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert left == [], "still running after the command returned:\n" + "\n".join(left)


@pytest.mark.slow        # a JVM writing the 116 MB archive: 30 s
def test_a_first_run_writes_the_class_data_archive_in_the_foreground(tmp_path):
    cache = tmp_path / "cache"
    r, left = export(tmp_path, XDG_CACHE_HOME=str(cache))
    assert r.returncode == 0, r.stderr[-3000:]
    assert left == [], "still running after the command returned:\n" + "\n".join(left)
    archives = sorted(p.name for p in (cache / "kafkalog" / "spark-cds").iterdir())
    assert len(archives) == 1 and archives[0].endswith(".jsa"), archives      # in place, no temporary left
    assert "saving a class-data archive of Spark's classes" in r.stderr
    # the next run maps it and writes nothing
    again = tmp_path / "again"
    again.mkdir()
    r, left = export(again, XDG_CACHE_HOME=str(cache))
    assert r.returncode == 0, r.stderr[-3000:]
    assert left == []
    assert "class-data archive" not in r.stderr
    assert sorted(p.name for p in (cache / "kafkalog" / "spark-cds").iterdir()) == archives
