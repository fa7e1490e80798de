"""``kafkalog export --master spark://...`` against a real standalone Spark cluster on 127.0.0.1.

The master and one worker are started from the installed pyspark (``bin/spark-class``; the pip package
has no ``sbin/start-master.sh``) on free loopback ports and stopped in teardown, even on failure. The
export runs as a separate process through the real entry point, from an empty working directory.

To show that the command ships the project itself, the Python that Spark starts on the executors (and
for the data source's planning on the driver) is this interpreter run with ``-S``: it sees the installed
dependencies but not the editable kafkalog install, so ``kafkalog_cli`` can only come from the zip the
command passes as ``spark.submit.pyFiles``. (Where kafkalog is installed as a regular package, which
``-S`` cannot hide, the test says so and still runs the export.)
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

pytestmark = pytest.mark.spark

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
