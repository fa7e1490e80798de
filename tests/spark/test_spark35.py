"""``kafkalog export`` and ``scan`` on Spark 3.5 (EMR 7.x, Databricks before DBR 17): plain Spark tasks,
no Python data source. A virtual environment with pyspark 3.5 and this checkout installed (built once under
.venvs/, git-ignored; a first build downloads pyspark 3.5, about two minutes) runs the real command as its
own process; the rows are dump-log's records and scan's findings are verify's.

Selected only with ``python -m pytest -m spark35 tests/spark/test_spark35.py`` (.ci/run does).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, assert_same_records, dump_log_records, java_missing_reason, table_records
from worker_env import venv_lock

pytestmark = [pytest.mark.spark, pytest.mark.spark35]

#: the README's Spark 3.5 recipe, with this checkout for the package: pip install 'kafkalog[spark]' 'pyspark==3.5.*'
#: (pyspark 3.5's sql extra pins numpy<2, beside which pyarrow 26 does not import; the spark extra asks for
#: pyspark without it, so numpy 2 is resolved)
SPARK35 = ("pyspark==3.5.*",)
VENVS = Path(os.environ.get("KAFKALOG_TEST_VENVS", REPO / ".venvs"))


def spark_extra() -> list[str]:
    import tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["spark"]


@pytest.fixture(scope="module")
def python35():
    reason = java_missing_reason()
    if reason:
        pytest.skip(reason)
    key = hashlib.sha256(("\n".join([*SPARK35, *spark_extra()]) + sys.version).encode()).hexdigest()[:12]
    env = VENVS / f"pyspark35-{key}"
    python = env / "bin" / "python"
    ready = env / ".kafkalog-ready"
    with venv_lock(env):
        if not ready.exists():
            base = getattr(sys, "_base_executable", sys.executable)
            subprocess.run([base, "-m", "venv", "--clear", str(env)], check=True, capture_output=True)
            ready.unlink(missing_ok=True)
        # this checkout, as it is now (editable: the compiled extension is the one built in the checkout), with
        # the spark extra and pyspark 3.5, as the README's recipe installs them
        r = subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", f"{REPO}[spark]", *SPARK35],
                           capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, r.stderr[-3000:]
        ready.write_text("\n".join(SPARK35) + "\n")
    # the recipe's environment imports what export needs together (numpy and pyarrow were not: issue 34)
    r = subprocess.run([str(python), "-c", "import numpy, pyarrow, pandas, pyspark; print(numpy.__version__)"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    version = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"], capture_output=True,
                             text=True, check=True).stdout.strip()
    assert version.startswith("3.5."), version
    return python


def run(python: Path, *args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(python), "-m", "kafkalog_cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_export_on_spark_35(python35, tmp_path):
    out = tmp_path / "out"
    r = run(python35, "export", str(FIXTURES / "logdir"), "-o", str(out), "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.splitlines()[0])
    assert {e["path"] for e in result["executors"]} == {"native"}
    import pyarrow.dataset as ds
    table = ds.dataset(str(out), format="parquet", partitioning="hive", ignore_prefixes=["_", "."]).to_table()
    assert_same_records(table_records(table), dump_log_records(str(FIXTURES / "logdir")))


def test_scan_on_spark_35(python35, tmp_path):
    case = FIXTURES / "damaged" / "flipped-crc-byte"
    r = run(python35, "scan", str(case), "--format", "json", cwd=tmp_path)
    v = run(python35, "verify", str(case), "--format", "json", cwd=tmp_path)
    assert r.returncode == v.returncode == 1, r.stderr[-3000:]

    def findings(out: str) -> list:
        return sorted(line for line in out.splitlines() if json.loads(line)["type"] == "finding")
    assert findings(r.stdout) == findings(v.stdout) and findings(v.stdout)
