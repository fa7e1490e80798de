"""A standalone Spark master and workers on 127.0.0.1, started from the installed pyspark
(``bin/spark-class``; the pip package has no ``sbin/start-master.sh``) on free loopback ports, each in its
own process group, stopped by id when the ``with`` block ends, also on failure. Used by the cluster tests
and by tools/bench_spark.py (``--masters standalone:2x1``).
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

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


@contextlib.contextmanager
def standalone(tmp: Path, workers: list[dict], memory: str = "2g", timeout: float = 120):
    """Yield the master URL. ``workers``: one dict per worker, ``cores`` and ``env`` (variables added to the
    worker's environment: a PATH whose ``python3`` is the workers' Python, for instance)."""
    import pyspark
    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    port, ui = free_port(), free_port()
    base = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYTHONPATH", "VIRTUAL_ENV")}
    base.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="127.0.0.1",
                SPARK_DAEMON_JAVA_OPTS=FAST_JVM, SPARK_LOG_DIR=str(tmp / "logs"))
    procs, logs = [], []
    try:
        log = open(tmp / "master.out", "wb")
        logs.append(log)
        procs.append(subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(ui)], env=base, cwd=tmp, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True))
        for i, w in enumerate(workers):
            env = dict(base, SPARK_WORKER_DIR=str(tmp / f"work{i}"), **w.get("env", {}))
            log = open(tmp / f"worker{i}.out", "wb")
            logs.append(log)
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host",
                 "127.0.0.1", "--cores", str(w.get("cores", 1)), "--memory", memory, "--webui-port",
                 str(free_port())], env=env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True))
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as resp:
                    if json.load(resp).get("aliveworkers", 0) >= len(workers):
                        break
            except OSError:
                pass
            for p in procs:
                if p.poll() is not None:
                    raise RuntimeError("a Spark daemon exited: " + "".join(
                        f.read_text()[-2000:] for f in sorted(tmp.glob("*.out"))))
            if time.monotonic() > deadline:
                raise RuntimeError(f"the standalone cluster did not come up in {timeout:.0f} s")
            time.sleep(0.5)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            stop(p)
        for f in logs:
            f.close()
