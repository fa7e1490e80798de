"""A SparkSession for ``--master``: what is needed first, quiet logs, and the project shipped to executors.

Recipe measured on this kind of machine (shared/docs/spark-findings.md):

* ``PYSPARK_PYTHON`` defaults to this interpreter (otherwise Spark starts ``python3`` from PATH, which may
  lack pyarrow); ``SPARK_LOCAL_IP=127.0.0.1`` for local masters (no hostname warning, loopback only);
* logging through a quiet log4j2 configuration written next to the shipped code, progress bars off (the
  command shows its own, per stage), the UI off unless ``--spark-conf spark.ui.enabled=true``;
* on any master other than ``local[...]`` the code of ``kafkalog_formats`` and ``kafkalog_cli`` is
  zipped and passed as ``spark.submit.pyFiles`` (executors and the driver-side data-source workers put
  it first on ``sys.path``). Its native dependencies (numpy, pyarrow, crc32c, cramjam, lz4, zstandard)
  must be installed on the nodes: the same virtual environment at the same path on every node, named
  with ``--spark-conf spark.pyspark.python=/path/bin/python`` when it is not this interpreter's path.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MIN_JAVA = 17

LOG4J2 = """\
# kafkalog: no messages of Spark's own (kafkalog says in one line what failed); KAFKALOG_SPARK_LOG_LEVEL=error
# shows Spark's errors again
rootLogger.level = ${env:KAFKALOG_SPARK_LOG_LEVEL:-off}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = ${env:KAFKALOG_SPARK_LOG_LEVEL:-off}
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = off
"""


#: configuration of every session kafkalog creates (``--spark-conf`` overrides)
SESSION_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # the kafkalog data source pushes filters on topic, partition, offset, timestamp, cluster_id and node_id
    # down to the reader (Spark 4.1+; off by default in Spark)
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.driver.memory": "1g",
}
LIGHT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


class SparkUnavailable(Exception):
    """PySpark, pyarrow or Java is missing; the message says what to install."""


def check_requirements() -> None:
    """Raise SparkUnavailable with a friendly message when pyspark, pyarrow or Java 17+ is missing."""
    missing = []
    for module in ("pyspark", "pyarrow"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise SparkUnavailable(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed; "
                               "install the Spark extra: pip install 'kafkalog[spark]' (in a checkout: "
                               "pip install -e '.[spark]')")
    import pyspark
    major = int(pyspark.__version__.split(".")[0])
    if major < 4:
        raise SparkUnavailable(f"pyspark {pyspark.__version__} is too old: the kafkalog data source needs "
                               "Spark 4's Python Data Source API (pip install 'pyspark>=4.0')")
    java = java_executable()
    if java is None:
        raise SparkUnavailable(f"Java is not installed: Spark needs Java {MIN_JAVA} or newer on PATH (or "
                               "JAVA_HOME), e.g. apt-get install openjdk-17-jre-headless")
    version = java_version(java)
    if version is not None and version < MIN_JAVA:
        raise SparkUnavailable(f"{java} is Java {version}; Spark 4 needs Java {MIN_JAVA} or newer "
                               "(put a newer java first on PATH or set JAVA_HOME)")


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def java_version(java: str) -> int | None:
    """The major version ``java -version`` reports (``17`` for "17.0.15", ``8`` for "1.8.0_392")."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


class Session:
    """``with Session(master, conf) as spark:`` — reuses an active session (inside a PySpark program or
    the test suite) and stops only a session it started."""

    def __init__(self, master: str = "local[*]", conf: dict | None = None, app_name: str = "kafkalog",
                 warm: bool = True) -> None:
        self.master = master
        self.conf = dict(conf or {})
        self.app_name = app_name
        self.warm = warm
        self.spark = None
        self.created = False
        self.workdir: str | None = None

    def __enter__(self):
        from pyspark.sql import SparkSession

        from .datasource import register
        from .jobs import _spark_errors
        active = SparkSession.getActiveSession()
        try:
            with _spark_errors():
                if active is not None:
                    self.spark = active
                else:
                    self.spark = self._build(SparkSession)
                    self.created = True
                register(self.spark)
                if self.warm and self.created:
                    warm_up(self.spark)
        except BaseException:            # no ``with`` body ran: stop what was started, remove the workdir
            self.__exit__(*sys.exc_info())
            raise
        return self.spark

    def _build(self, SparkSession):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if is_local(self.master):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        self.workdir = tempfile.mkdtemp(prefix="kafkalog-spark-")
        log4j = Path(self.workdir) / "log4j2.properties"
        log4j.write_text(LOG4J2)
        conf = dict(SESSION_CONF, **{"spark.app.name": self.app_name})
        conf.update(self.conf)
        java_opts = f"-Dlog4j2.configurationFile=file:{log4j}"
        if is_local(self.master):
            # the driver JVM only schedules tasks here (records never pass through it): C1 and the serial
            # collector halve its start-up CPU and memory (shared/docs/spark-findings.md §1)
            java_opts += " " + LIGHT_JVM
        conf["spark.driver.extraJavaOptions"] = " ".join(
            x for x in (java_opts, self.conf.get("spark.driver.extraJavaOptions")) if x)
        if not is_local(self.master):
            shipped = ship_project(Path(self.workdir))
            conf["spark.submit.pyFiles"] = ",".join(
                x for x in (str(shipped), self.conf.get("spark.submit.pyFiles")) if x)
        builder = SparkSession.builder.master(self.master)
        for k, v in conf.items():
            builder = builder.config(k, v)
        with _FilteredStderr():
            spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("KAFKALOG_SPARK_LOG_LEVEL", "OFF").upper())
        return spark

    def __exit__(self, kind, value, tb) -> None:
        try:
            self._stop(kind)
        finally:
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None

    def _stop(self, kind) -> None:
        if self.created and self.spark is not None:
            if kind is not None and issubclass(kind, KeyboardInterrupt):
                from .jobs import quiet_py4j
                quiet_py4j()
            try:
                self.spark.stop()
            except Exception:            # noqa: BLE001 - after Ctrl-C or a failed start the JVM may be gone
                if kind is None:
                    raise


def ship_project(directory: Path) -> Path:
    """Zip this installation's ``kafkalog_formats`` and ``kafkalog_cli`` (Python sources only) for
    ``spark.submit.pyFiles``; importable from the zip on any node with the dependencies installed (a
    PySpark program of the user's can pass the same zip, then call ``datasource.register(spark)``)."""
    import kafkalog_cli
    import kafkalog_formats
    out = directory / "kafkalog-project.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in (kafkalog_formats, kafkalog_cli):
            root = Path(pkg.__file__).resolve().parent
            for f in sorted(root.rglob("*.py")):
                if "__pycache__" in f.parts:
                    continue
                z.write(f, f"{pkg.__name__}/{f.relative_to(root).as_posix()}")
    return out


def _warm(_index: int) -> bool:
    """On an executor: import what export and scan tasks run (pyarrow, numpy, the record path)."""
    import pyarrow.parquet  # noqa: F401

    import kafkalog_cli.engine.verify_segment  # noqa: F401
    import kafkalog_cli.spark.export  # noqa: F401
    import kafkalog_cli.spark.rows  # noqa: F401
    import kafkalog_cli.spark.writer  # noqa: F401
    from kafkalog_formats import native
    try:                              # pyarrow imports pandas the first time it converts numpy arrays
        import pandas  # noqa: F401
    except ImportError:
        pass
    return native.ext is not None


def warm_up(spark) -> None:
    """Start the executors' Python workers and import kafkalog there, as part of starting Spark: the
    first job of a session otherwise pays it (about 2 s here), which belongs to the fixed cost of a run,
    not to the time its data takes (README, benchmark)."""
    from .jobs import run_cancellable
    n = max(1, spark.sparkContext.defaultParallelism)
    run_cancellable(spark, spark.sparkContext.parallelize(range(n), n).map(_warm).collect)


#: lines the JVM prints that say nothing to a kafkalog user (Spark 4's launcher always adds the incubating
#: vector module, and Java announces it; it cannot be turned off: shared/docs/spark-findings.md §5)
NOISE = (b"WARNING: Using incubator modules",)


class _FilteredStderr:
    """While the JVM starts, give it a pipe as standard error and copy that pipe to ours (for the JVM's
    whole life, from a daemon thread) without the lines in ``NOISE``. Spark's own errors still show."""

    def __enter__(self):
        import threading
        try:
            sys.stderr.flush()
            self.saved = os.dup(2)
            r, w = os.pipe()
        except OSError:
            self.saved = None
            return self
        os.dup2(w, 2)
        os.close(w)
        threading.Thread(target=_copy_filtered, args=(r, os.dup(self.saved)), name="kafkalog-jvm-stderr",
                         daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self.saved is not None:
            os.dup2(self.saved, 2)
            os.close(self.saved)


def _copy_filtered(r: int, out: int) -> None:
    with os.fdopen(r, "rb", buffering=0) as src:
        pending = b""
        while True:
            try:
                chunk = src.read(65536)
            except OSError:
                return
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not line.startswith(NOISE):
                    _write_all(out, line + b"\n")
        if pending and not pending.startswith(NOISE):
            _write_all(out, pending)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass
