"""``kafkalog export``/``scan`` and the data source against a real standalone Spark cluster on 127.0.0.1
whose worker runs **another Python environment than the driver**: Debian's CPython 3.11 in its own virtual
environment with kafkalog's dependencies and without kafkalog (tests/spark/worker_env.py), where the driver
is this interpreter with kafkalog installed. The worker is started with that environment first on PATH
and nothing names the driver's interpreter, so the executors run the worker's ``python3``; kafkalog reaches
them only as the archive the command ships (``spark.archives``), compiled extension included.

What is proved: every task of the export ran on the worker's Python with the native record path and
kafkalog from the shipped archive (the tasks' own reports), the rows are dump-log's records, an executor
forced onto the pure-Python path makes the export fail with one line (and pass with
--allow-pure-executors), scan's findings are verify's, and a PySpark program's data source read works
with kafkalog shipped the documented way.

Slow (worker environment built once under .venvs/, cluster start, four applications: about 2 minutes on 2
cores): selected only with ``python -m pytest -m spark_cluster tests/spark/test_spark_cluster.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_same_records, dump_log_records, java_missing_reason, table_records
from standalone import FAST_JVM, standalone
from worker_env import worker_env

pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster]

LOGDIR = FIXTURES / "logdir"
JVM_CONF = ["--spark-conf", "spark.cores.max=2", "--spark-conf", "spark.executor.memory=1g",
            # C1 JIT and the serial GC: half the JVM start-up CPU for a small job (spark-findings §1)
            "--spark-conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
            "--spark-conf", f"spark.executor.extraJavaOptions={FAST_JVM}"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = java_missing_reason()
    if reason:
        pytest.skip(reason)
    bindir, why = worker_env()
    if bindir is None:
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("cluster")
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(bindir.parent)}
    with standalone(tmp, [{"cores": 2, "env": env}]) as master:
        yield master, tmp, bindir


def driver_env() -> dict:
    """The driver's environment: no PYSPARK_PYTHON, no PYTHONPATH (nothing tells the executors which Python
    to run or where kafkalog is)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYTHONPATH")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def kafkalog(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], cwd=cwd, env=driver_env(),
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def read_export(out: Path):
    import pyarrow.dataset as ds
    return ds.dataset(str(out), format="parquet", partitioning="hive", ignore_prefixes=["_", "."]).to_table()


def test_export_on_a_worker_with_another_python(cluster, tmp_path):
    master, ctmp, bindir = cluster
    out = tmp_path / "out"
    t0 = time.monotonic()
    r = kafkalog("export", str(LOGDIR), "--master", master, "--output", str(out), "--format", "json",
                 "--schema", "kafkalog", *JVM_CONF, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-5000:]
    print(f"export on the cluster: {time.monotonic() - t0:.1f} s")
    assert "Traceback" not in r.stderr
    result = json.loads(r.stdout.splitlines()[0])
    executors = result["executors"]
    assert executors, "the tasks reported no executor"
    for e in executors:
        assert e["path"] == "native", e
        assert e["source"] == "shipped", e
        assert Path(e["python"]).parent == bindir, e          # the worker's environment, not the driver's
        assert e["package"].endswith("kafkalog-dist/kafkalog_formats"), e
    assert os.path.realpath(executors[0]["python"]) != os.path.realpath(sys.executable)
    want = dump_log_records(str(LOGDIR))
    assert result["rows"] == len(want)
    assert_same_records(table_records(read_export(out)), want)


def test_pure_executors_are_refused_in_one_line(cluster, tmp_path):
    master, _ctmp, _bindir = cluster
    out = tmp_path / "out"
    pure = ["--spark-conf", "spark.executorEnv.KAFKALOG_PURE_PYTHON=1"]
    r = kafkalog("export", str(LOGDIR), "--master", master, "--output", str(out), *pure, *JVM_CONF, cwd=tmp_path)
    assert r.returncode == 3, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if not ln.startswith("kafkalog: starting Spark")]
    assert len(lines) == 1, r.stderr
    assert "pure-Python record path (KAFKALOG_PURE_PYTHON is set)" in lines[0] and "--allow-pure-executors" in lines[0]
    assert not out.exists()
    r = kafkalog("export", str(LOGDIR / "orders-0"), "--master", master, "--output", str(out), "--format", "json",
                 "--allow-pure-executors", *pure, *JVM_CONF, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(r.stdout.splitlines()[0])
    assert {e["path"] for e in result["executors"]} == {"pure"}
    assert result["rows"] == len(dump_log_records(str(LOGDIR / "orders-0")))


def test_spark_pyspark_python_names_the_executors_python(cluster, tmp_path):
    """``--spark-conf spark.pyspark.python=...`` is the Python the executors run (the README's cluster recipes
    rely on it; pyspark reads only PYSPARK_PYTHON when it makes the SparkContext, so the setting was ignored
    and the executors ran the worker's python3). Pointed at an empty environment of the workers' CPython, the
    export stops with one line naming that interpreter and what it lacks."""
    from worker_env import other_python
    master, _ctmp, bindir = cluster
    empty = tmp_path / "empty"
    subprocess.run([other_python(), "-m", "venv", "--without-pip", str(empty)], check=True, capture_output=True)
    out = tmp_path / "out"
    r = kafkalog("export", str(LOGDIR), "--master", master, "--output", str(out),
                 "--spark-conf", f"spark.pyspark.python={empty}/bin/python", *JVM_CONF, cwd=tmp_path)
    assert r.returncode == 3, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if not ln.startswith("kafkalog: starting Spark")]
    assert len(lines) == 1, r.stderr[-3000:]
    assert f"{empty}/bin/python" in lines[0] and "kafkalog cannot be imported" in lines[0], lines[0]
    assert not out.exists()
    # the workers' own environment named the same way: the export runs there
    r = kafkalog("export", str(LOGDIR / "orders-0"), "--master", master, "--output", str(out), "--format", "json",
                 "--spark-conf", f"spark.pyspark.python={bindir}/python", *JVM_CONF, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert {e["python"] for e in json.loads(r.stdout.splitlines()[0])["executors"]} == {f"{bindir}/python"}


def test_scan_on_a_worker_with_another_python(cluster, tmp_path):
    """scan's segment checks run on the worker's Python (kafkalog shipped); its findings are verify's."""
    master, _ctmp, _bindir = cluster
    case = FIXTURES / "damaged" / "flipped-crc-byte"
    r = kafkalog("scan", str(case), "--master", master, "--format", "json", *JVM_CONF, cwd=tmp_path)
    v = kafkalog("verify", str(case), "--format", "json", cwd=tmp_path)
    assert r.returncode == v.returncode == 1, r.stderr[-5000:]

    def findings(out: str) -> list:
        return sorted(line for line in out.splitlines() if json.loads(line)["type"] == "finding")
    assert findings(r.stdout) == findings(v.stdout) and findings(v.stdout)


DS_PROGRAM = """
import json, pathlib, sys, tempfile
from pyspark.sql import SparkSession
from kafkalog_cli.spark.session import ship_project
master, logdir, fast = sys.argv[1:4]
shipped = ship_project(pathlib.Path(tempfile.mkdtemp()))       # README: the data source on a cluster
spark = (SparkSession.builder.master(master)
         .config("spark.archives", f"{shipped}#kafkalog-dist").config("spark.executorEnv.PYTHONPATH", "kafkalog-dist")
         .config("spark.sql.python.filterPushdown.enabled", "true").config("spark.cores.max", "2")
         .config("spark.executor.memory", "1g").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", fast).config("spark.executor.extraJavaOptions", fast).getOrCreate())
spark.sparkContext.setLogLevel("OFF")
from kafkalog_cli.spark.datasource import register
register(spark)
q = (spark.read.format("kafkalog").option("subscribe", "orders").option("startingOffsets", "earliest").load(logdir)
     .where("offset >= 5").select("partition", "offset"))
rows = sorted(map(tuple, q.collect()))
plan = q._jdf.queryExecution().executedPlan()
todo, produced = [plan], None
while todo:
    p = todo.pop()
    if "kafkalog" in p.nodeName():
        produced = p.metrics().apply("numOutputRows").value()
    ch = p.children()
    todo.extend(ch.apply(i) for i in range(ch.size()))
print(json.dumps({"rows": rows, "produced": produced}))
spark.stop()
"""


def test_data_source_on_a_worker_with_another_python(cluster, tmp_path):
    """A PySpark program of the user's against the cluster, kafkalog shipped as the README says for
    executors without it (spark.archives + spark.executorEnv.PYTHONPATH): the topic (``subscribe``) and
    offset conditions are pushed down and the rows are dump-log's."""
    master, _ctmp, _bindir = cluster
    r = subprocess.run([sys.executable, "-c", DS_PROGRAM, master, str(LOGDIR), FAST_JVM], cwd=tmp_path,
                       env=driver_env(), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, "\n".join(ln for ln in r.stderr.splitlines() if not ln.lstrip().startswith("at "))[-5000:]
    got = json.loads(r.stdout.splitlines()[-1])
    want = sorted((int(Path(seg).parent.name.rsplit("-", 1)[1]), off)
                  for seg, off, _d in dump_log_records(str(LOGDIR / "orders-0"), str(LOGDIR / "orders-1")) if off >= 5)
    assert [tuple(x) for x in got["rows"]] == want and want
    assert got["produced"] == len(want)
