"""How a session kafkalog starts on a local master saves time, each case checked for what it must still give:

* Spark's Python daemon imports the task modules while the JVM starts (``daemon``): the daemon Spark launches
  hands its place to the process that made the imports early, and the workers are forked from that one.
  Where that process is missing or was made for another interpreter, the launched daemon imports on its
  own, as before; either way no process of the session outlives it.
* The session is a SparkContext (``session.ContextSession``); Spark SQL's SparkSession is made only when
  something asks for it (scan's report table), with the session's settings.

Each case runs a session of its own in a fresh Python process (the test process's shared session reuses an
active SparkContext, with no daemon of its own).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import carrying, java_missing_reason, pyspark_missing_reason

pytestmark = pytest.mark.spark

SESSION = r"""
import json, os, sys
from kafkalog_cli.spark import daemon, session

def whose(_i):
    import os
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        parent = f.read().split(b"\0")
    import sys
    return {"parent": [a.decode() for a in parent if a], "imported": "kafkalog_cli.spark.export" in sys.modules,
            "hashseed": os.environ.get("PYTHONHASHSEED"), "argv": sys.argv}

mode = sys.argv[1]
if mode == "launch":
    s = session.Session("local[2]", warm=False)
    with s as spark:
        pid = s.launched.jvm.pid
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0")[:-1]]
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(x.decode().split("=", 1) for x in f.read().split(b"\0") if b"=" in x)
        out = {"used": bool(s.launched.cache and s.launched.cache.used), "workdir": s.workdir, "token": s.launched.token, "argv": argv,
               "env": env, "n": spark.sparkContext.parallelize(range(3), 1).count()}
    print(json.dumps(out))
    sys.exit(0)
if mode == "missing":
    daemon.start_early = lambda path, env: None
elif mode == "another-seed":
    real = daemon.start_early
    daemon.start_early = lambda path, env: real(path, dict(env, PYTHONHASHSEED="7"))
warm = mode != "no-job"
with session.Session("local[2]", warm=warm) as spark:
    out = [] if not warm else spark.sparkContext.parallelize(range(2), 2).map(whose).collect()
    if mode == "sql":
        from pyspark.sql import SparkSession
        before = SparkSession._instantiatedSession is not None
        rows = spark.createDataFrame([(1, "a")], "n long, s string").collect()
        out = {"before": before, "rows": [list(r) for r in rows], "tz": spark.conf.get("spark.sql.session.timeZone"),
               "same_context": spark.session.sparkContext is spark.sparkContext}
print(json.dumps(out))
"""


def run_session(mode: str, **extra_env) -> tuple[list, list]:
    """(what each task saw, processes of the run still alive when the session's process returned)."""
    for reason in (java_missing_reason(), pyspark_missing_reason()):
        if reason:
            pytest.skip(reason)
    mark = extra_env.pop("KAFKALOG_TEST_MARK", None) or uuid.uuid4().hex
    env = dict(os.environ, KAFKALOG_TEST_MARK=mark, **extra_env)
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYTHONHASHSEED", None)
    p = subprocess.run([sys.executable, "-c", SESSION, mode], env=env, capture_output=True, text=True, timeout=600,
                       stdin=subprocess.DEVNULL)
    left = carrying(mark)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), left


def test_workers_are_forked_from_the_process_that_imported_early():
    seen, left = run_session("early")
    assert len(seen) == 2 and left == []
    for s in seen:
        assert "--early" in s["parent"], s            # the early process is the daemon the workers came from
        assert s["imported"] and s["hashseed"] == "0"   # the task modules were imported before the fork
        assert s["argv"][1:] == ["pyspark.worker"], s  # the launched daemon's arguments, taken over


@pytest.mark.parametrize("mode", ["missing", "another-seed"])
def test_without_a_usable_early_process_the_launched_daemon_imports_itself(mode):
    """No early process, or one whose hash seed is not the one Spark gives its workers: the launched daemon
    is the workers' parent, and the tasks run as before."""
    seen, left = run_session(mode)
    assert len(seen) == 2 and left == []
    for s in seen:
        assert "--early" not in s["parent"] and "pyspark.worker" in s["parent"], s
        assert s["imported"] and s["hashseed"] == "0"


def test_an_unclaimed_early_process_ends_with_the_session():
    """A session that never ran a Python task: the early process was never claimed, and it has exited when
    the session's process returns."""
    seen, left = run_session("no-job")
    assert seen == [] and left == []


def test_spark_sql_is_started_only_when_asked_for():
    """No SparkSession after the start; asked for (createDataFrame, as scan's report does), one is made on the
    session's SparkContext with the session's settings (UTC)."""
    seen, left = run_session("sql")
    assert left == []
    assert seen == {"before": False, "rows": [[1, "a"]], "tz": "UTC", "same_context": True}


def _normalized(run: dict) -> tuple[list, dict]:
    """The JVM's arguments and environment with the run's own parts (work directory, token, pyspark's
    connection file) taken out."""
    def norm(v: str) -> str:
        return v.replace(run["workdir"], "WORKDIR").replace(run["token"], "TOKEN")
    env = {k: norm(v) for k, v in run["env"].items() if k != "_PYSPARK_DRIVER_CONN_INFO_PATH"}
    return [norm(a) for a in run["argv"]], env


def test_a_later_start_runs_the_java_command_spark_submit_ran(tmp_path):
    """The first start goes through spark-submit and remembers the JVM it ran; the next runs that JVM directly,
    with the same arguments and environment (the run's own parts aside), and its session works. A
    remembered command that no longer starts a gateway is dropped and the start goes through spark-submit."""
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "KAFKALOG_SPARK_CDS": "0",
             "KAFKALOG_TEST_MARK": uuid.uuid4().hex}         # the environment is part of the key: the same
    first, left = run_session("launch", **dict(cache))
    assert left == [] and first["used"] is False and first["n"] == 3
    assert Path(first["argv"][0]).name == "java" and "org.apache.spark.deploy.SparkSubmit" in first["argv"]
    second, left = run_session("launch", **dict(cache))
    assert left == [] and second["used"] is True and second["n"] == 3
    assert _normalized(second) == _normalized(first)
    [entry] = (tmp_path / "cache" / "kafkalog" / "spark-launch").glob("*.json")
    stale = json.loads(entry.read_text())
    main = stale["argv"].index("org.apache.spark.deploy.SparkSubmit")
    stale["argv"][main] = "org.apache.spark.deploy.NoSuchMainClass"         # as after an upgrade in place
    entry.write_text(json.dumps(stale))
    third, left = run_session("launch", **dict(cache))
    assert left == [] and third["used"] is False and third["n"] == 3
    assert _normalized(third) == _normalized(first)
    assert "NoSuchMainClass" not in entry.read_text()        # remembered again, as spark-submit ran it
    other, left = run_session("launch", KAFKALOG_SPARK_LAUNCH_CACHE="0", **dict(cache))
    other["env"].pop("KAFKALOG_SPARK_LAUNCH_CACHE")
    assert other["used"] is False and _normalized(other) == _normalized(first)


def test_the_launch_cache_keeps_its_newest_entries(tmp_path, monkeypatch):
    """Each environment is an entry of its own: the directory keeps the newest ``KEEP`` (an entry in use is
    touched when used)."""
    import time

    from kafkalog_cli.spark import launch
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = launch.cache_dir()
    d.mkdir(parents=True)
    for i in range(launch.KEEP + 5):
        p = d / f"{i:04d}.json"
        p.write_text("{}")
        os.utime(p, ns=(i * 10**9, i * 10**9))
    os.utime(d / "0000.json", ns=(time.time_ns(), time.time_ns()))          # the oldest, just used
    launch._prune(d)
    kept = sorted(p.name for p in d.glob("*.json"))
    assert len(kept) == launch.KEEP and "0000.json" in kept and "0001.json" not in kept


LEAVE = r"""
import atexit, os, sys
marks = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
atexit.register(lambda: os.write(marks, b"atexit\n"))

class Teardown:                # collected when Python clears __main__ at its finalization
    def __del__(self):
        os.write(marks, b"teardown\n")

kept = Teardown()
sys.argv = ["kafkalog", *sys.argv[2:]]
from kafkalog_cli.entry import main
main()
"""


@pytest.mark.parametrize("command", ["export", "dump-log"])
def test_a_run_that_started_spark_leaves_without_pythons_teardown(tmp_path, command):
    """The console script after export (a Spark session started and stopped): the atexit callbacks run,
    Python's finalization does not, and the report and output are whole (``teardown``). dump-log (no Spark)
    exits as Python does."""
    for reason in (java_missing_reason(), pyspark_missing_reason()):
        if reason:
            pytest.skip(reason)
    from conftest import FIXTURES
    marks = tmp_path / "marks"
    marks.write_text("")
    out = tmp_path / "out"
    args = (["export", str(FIXTURES / "logdir"), "-o", str(out), "--master", "local[2]"] if command == "export" else
            ["dump-log", "--files", str(next((FIXTURES / "logdir").rglob("*.log")))])
    env = dict(os.environ)
    env.pop("PYSPARK_PYTHON", None)
    p = subprocess.run([sys.executable, "-c", LEAVE, str(marks), *args], env=env, capture_output=True, text=True,
                       timeout=600, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr[-3000:]
    if command == "export":
        assert p.stdout.startswith("exported ") and p.stdout.endswith("\n")
        assert (out / "_SUCCESS").is_file() and json.loads((out / "_kafkalog_manifest.json").read_text())
        assert marks.read_text() == "atexit\n"
    else:
        assert "baseOffset" in p.stdout or "offset" in p.stdout
        assert marks.read_text() == "atexit\nteardown\n"
