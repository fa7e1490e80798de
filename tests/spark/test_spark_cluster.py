"""``kafkalog export --master spark://...`` against a real standalone Spark cluster on 127.0.0.1.

The master and one worker are started from the installed pyspark (``bin/spark-class``; the pip package
has no ``sbin/start-master.sh``) on free loopback ports and stopped in teardown, even on failure. The
export runs as a separate process through the real entry point, from an empty working directory.

To show that the command ships the project itself, the Python that Spark starts on the executors (and
for the data source's planning on the driver) is this interpreter run with ``-S``: it sees the installed
dependencies but not the editable kafkalog install, so ``kafkalog_cli`` can only come from the zip the
command passes as ``spark.submit.pyFiles``. (Where kafkalog is installed as a regular package, which
``-S`` cannot hide, the test says so and still runs the export.)

About a minute on 2 cores (cluster start, three applications): selected only with
``python -m pytest -m spark_cluster tests/spark/test_spark_cluster.py`` (tests/spark/conftest.py).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_same_records, dump_log_records, java_missing_reason, table_records

pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster]

LOGDIR = FIXTURES / "logdir"
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """Stop a process we started, and its children (its own process group), by id."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = java_missing_reason()
    if reason:
        pytest.skip(reason)
    import pyspark
    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    tmp = tmp_path_factory.mktemp("cluster")
    port, ui = free_port(), free_port()
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="127.0.0.1",
               SPARK_DAEMON_JAVA_OPTS=FAST_JVM,
               SPARK_WORKER_DIR=str(tmp / "work"), SPARK_LOG_DIR=str(tmp / "logs"))
    logs = {name: open(tmp / f"{name}.out", "wb") for name in ("master", "worker")}
    procs = []
    try:
        procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(ui)], env=env, cwd=tmp, stdout=logs["master"], stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True))
        procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host",
             "127.0.0.1", "--cores", "2", "--memory", "2g", "--webui-port", str(free_port())], env=env, cwd=tmp,
            stdout=logs["worker"], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as resp:
                    if json.load(resp).get("aliveworkers", 0) >= 1:
                        break
            except OSError:
                pass
            for p in procs:
                assert p.poll() is None, (tmp / "master.out").read_text() + (tmp / "worker.out").read_text()
            assert time.monotonic() < deadline, "the standalone cluster did not come up in 120 s"
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}", tmp
    finally:
        for p in reversed(procs):
            stop(p)
        for f in logs.values():
            f.close()


def executor_python(tmp: Path) -> tuple[str, bool]:
    """A Python that sees the dependencies but not kafkalog (see the module docstring)."""
    wrapper = tmp / "python-without-kafkalog"
    site = os.pathsep.join(p for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    probe = subprocess.run([str(wrapper), "-c", "import numpy, pyarrow, kafkalog_cli"], cwd=tmp,
                           capture_output=True, text=True)
    if "No module named 'kafkalog_cli'" in probe.stderr:
        return str(wrapper), True
    return sys.executable, False


def test_export_on_a_standalone_cluster(cluster, tmp_path):
    master, ctmp = cluster
    python, hidden = executor_python(tmp_path)
    out = tmp_path / "out"
    workdir = tmp_path / "driver-cwd"
    workdir.mkdir()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=python)
    env.pop("PYTHONPATH", None)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "export", str(LOGDIR), "--master", master,
                        "--output", str(out), "--json", "--spark-conf", "spark.executor.memory=1g",
                        "--spark-conf", "spark.cores.max=2",
                        # C1 JIT and the serial GC: half the JVM start-up CPU for a small job (spark-findings §1)
                        "--spark-conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
                        "--spark-conf", f"spark.executor.extraJavaOptions={FAST_JVM}"],
                       cwd=workdir, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-5000:]
    print(f"export on the cluster: {time.monotonic() - t0:.1f} s (kafkalog hidden from executors: {hidden})")
    assert "Traceback" not in r.stderr
    want = dump_log_records(str(LOGDIR))
    assert json.loads(r.stdout.splitlines()[-1])["rows"] == len(want)
    apps = list((ctmp / "work").glob("app-*"))
    assert apps, "no application ran on the cluster's worker"
    if hidden:
        # the executors ran the wrapper: kafkalog came from the zip the command shipped
        assert any(apps[-1].rglob("kafkalog-project.zip"))
    else:
        print("kafkalog is installed where -S cannot hide it; shipping not isolated in this run")
    import pyarrow as pa
    import pyarrow.dataset as ds
    part = ds.partitioning(pa.schema([("topic", pa.string()), ("partition", pa.int32())]), flavor="hive")
    table = ds.dataset(str(out), format="parquet", partitioning=part).to_table()
    assert_same_records(table_records(table), want)


def test_scan_on_a_standalone_cluster(cluster, tmp_path):
    """scan's segment checks run on the cluster's executor (kafkalog only from the shipped zip); its
    findings are verify's."""
    master, _ctmp = cluster
    python, _hidden = executor_python(tmp_path)
    case = FIXTURES / "damaged" / "flipped-crc-byte"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=python)
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "kafkalog_cli", "scan", str(case), "--master", master, "--format", "json",
                        "--spark-conf", "spark.cores.max=2", "--spark-conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
                        "--spark-conf", f"spark.executor.extraJavaOptions={FAST_JVM}"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    v = subprocess.run([sys.executable, "-m", "kafkalog_cli", "verify", str(case), "--format", "json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == v.returncode == 1, r.stderr[-5000:]

    def findings(out: str) -> list:
        return sorted(line for line in out.splitlines() if json.loads(line)["type"] == "finding")
    assert findings(r.stdout) == findings(v.stdout) and findings(v.stdout)


DS_PROGRAM = """
import json, pathlib, sys, tempfile
from pyspark.sql import SparkSession
from kafkalog_cli.spark.session import ship_project
master, logdir, fast = sys.argv[1:4]
shipped = ship_project(pathlib.Path(tempfile.mkdtemp()))
spark = (SparkSession.builder.master(master).config("spark.submit.pyFiles", str(shipped))
         .config("spark.sql.python.filterPushdown.enabled", "true").config("spark.cores.max", "2")
         .config("spark.executor.memory", "1g").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", fast).config("spark.executor.extraJavaOptions", fast).getOrCreate())
spark.sparkContext.setLogLevel("OFF")
from kafkalog_cli.spark.datasource import register
register(spark)          # kafkalog reaches this cluster as a zip, not installed: the one documented line
q = spark.read.format("kafkalog").load(logdir).where("topic = 'orders' and offset >= 5").select("partition", "offset")
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


def test_data_source_with_pushdown_on_a_standalone_cluster(cluster, tmp_path):
    """A PySpark program of the user's against the cluster, kafkalog shipped as a zip (spark.submit.pyFiles)
    and registered with ``register(spark)``: the topic and offset conditions are pushed down (the scan
    produces only the matching rows) and the rows are dump-log's."""
    master, _ctmp = cluster
    python, _hidden = executor_python(tmp_path)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=python)
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-c", DS_PROGRAM, master, str(LOGDIR), FAST_JVM], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, "\n".join(ln for ln in r.stderr.splitlines() if not ln.lstrip().startswith("at "))[-5000:]
    got = json.loads(r.stdout.splitlines()[-1])
    want = sorted((int(Path(seg).parent.name.rsplit("-", 1)[1]), off)
                  for seg, off, _d in dump_log_records(str(LOGDIR / "orders-0"), str(LOGDIR / "orders-1")) if off >= 5)
    assert [tuple(x) for x in got["rows"]] == want and want
    assert got["produced"] == len(want)
