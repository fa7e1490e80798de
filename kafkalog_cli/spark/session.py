"""A SparkSession for ``--master``: what is needed first, quiet logs, and the project shipped to executors.

Recipe measured on this kind of machine (shared/docs/spark-findings.md):

* ``PYSPARK_PYTHON`` defaults to this interpreter (otherwise Spark starts ``python3`` from PATH, which may
  lack pyarrow); ``SPARK_LOCAL_IP=127.0.0.1`` for local masters (no hostname warning, loopback only);
* logging through a quiet log4j2 configuration written next to the shipped code, progress bars off (the
  command shows its own, per stage), the UI off unless ``--spark-conf spark.ui.enabled=true``;
* on any master other than ``local[...]`` the driver's kafkalog (its installed ``kafkalog_formats`` with the
  compiled extension, ``kafkalog_cli``, ``pyspark_kafkalog``) is shipped as an archive through
  ``spark.archives``; an executor uses it only where kafkalog is not installed in its own Python with the
  same sources (``bootstrap``), so an installed package is never hidden. ``PYSPARK_PYTHON`` is left to
  the cluster there (Spark's default ``python3`` on the executors' PATH, or ``spark.pyspark.python``):
  the driver's interpreter path means nothing on a YARN node or a Kubernetes pod;
* the warm-up runs ``bootstrap.probe`` on the executors: where one would run the pure-Python record path
  (or cannot import kafkalog), the session fails with one line naming the executor and the cause, unless
  ``allow_pure``.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import CannotRun
from . import bootstrap
from .calls import ExecutorProblem

MIN_JAVA = 17
MIN_PYSPARK = (3, 5)          # export and scan: plain Spark tasks; the data source needs 4.0

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


#: SparkConf keys the session sets for its jobs (read back by ``executor_settings``)
CONF_FINGERPRINT = "spark.kafkalog.fingerprint"
CONF_ALLOW_PURE = "spark.kafkalog.allowPureExecutors"


class SparkUnavailable(CannotRun):
    """PySpark, pyarrow or Java is missing; the message says what to install."""


def check_requirements() -> None:
    """Raise SparkUnavailable with a friendly message when pyspark, pyarrow or Java 17+ is missing."""
    check_modules()
    java = java_executable()
    if java is None:
        raise SparkUnavailable(f"Java is not installed: Spark needs Java {MIN_JAVA} or newer on PATH (or "
                               "JAVA_HOME), e.g. apt-get install openjdk-17-jre-headless")
    version = java_version(java)
    need = MIN_JAVA if spark_major() >= 4 else 8
    if version is not None and version < need:
        raise SparkUnavailable(f"{java} is Java {version}; Spark {spark_major()} needs Java {need} or newer "
                               "(put a newer java first on PATH or set JAVA_HOME)")


def spark_major() -> int:
    import pyspark
    return int(pyspark.__version__.split(".")[0])


def check_modules() -> None:
    """Raise SparkUnavailable naming the extra to install when pyspark or pyarrow cannot be imported (or
    pyspark is older than the jobs support). Java is not looked at."""
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
    version = tuple(int(x) for x in re.findall(r"\d+", pyspark.__version__)[:2])
    if version < MIN_PYSPARK:
        raise SparkUnavailable(f"pyspark {pyspark.__version__} is too old: kafkalog export and scan need Spark "
                               f"{MIN_PYSPARK[0]}.{MIN_PYSPARK[1]} or newer (pip install 'kafkalog[spark]')")


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
                 warm: bool = True, allow_pure: bool = False) -> None:
        self.master = master
        self.allow_pure = allow_pure
        self.conf = dict(conf or {})
        self.app_name = app_name
        self.warm = warm
        self.spark = None
        self.created = False
        self.workdir: str | None = None
        self.launched = _Launched()
        self.log_levels: dict = {}

    def __enter__(self):
        from pyspark.sql import SparkSession

        from .calls import _spark_errors
        active = SparkSession.getActiveSession()
        try:
            with _spark_errors():
                if active is not None:
                    self.spark = active
                else:
                    self._quiet_logs()
                    self.spark = self._build(SparkSession)
                    self.created = True
                if not self.created and spark_major() >= 4:
                    # a user's session: the data source by name too (Spark 4's Python Data Source API). Not in
                    # the sessions kafkalog starts for export and scan (plain Spark tasks): registering
                    # builds Spark SQL's session state, 3 s of the start here
                    from .datasource import register
                    register(self.spark)
                if self.warm and self.created:
                    warm_up(self.spark, self.allow_pure)
        except BaseException:            # no ``with`` body ran: stop what was started, remove the workdir
            self.__exit__(*sys.exc_info())
            raise
        return self.spark

    def _build(self, SparkSession):
        if is_local(self.master):
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        self.workdir = tempfile.mkdtemp(prefix="kafkalog-spark-")
        log4j = Path(self.workdir) / "log4j2.properties"
        log4j.write_text(LOG4J2)
        conf = dict(SESSION_CONF, **{"spark.app.name": self.app_name})
        conf.update(self.conf)
        conf[CONF_FINGERPRINT] = driver_fingerprint() or ""
        conf[CONF_ALLOW_PURE] = str(self.allow_pure).lower()
        java_opts = f"-Dlog4j2.configurationFile=file:{log4j}"
        if is_local(self.master):
            # Spark's scratch files (block manager, shipped files) inside the work directory: removed with it
            # even when the JVM is killed
            conf.setdefault("spark.local.dir", str(Path(self.workdir) / "local"))
            # the driver JVM only schedules tasks here (records never pass through it): C1 and the serial
            # collector halve its start-up CPU and memory (shared/docs/spark-findings.md §1)
            java_opts += " " + LIGHT_JVM
            java_opts += " " + class_data_sharing()
        conf["spark.driver.extraJavaOptions"] = " ".join(
            x for x in (java_opts, self.conf.get("spark.driver.extraJavaOptions")) if x)
        if not is_local(self.master):
            shipped = ship_project(Path(self.workdir))
            conf["spark.archives"] = ",".join(
                x for x in (f"{shipped}#{bootstrap.SHIPPED}", self.conf.get("spark.archives")) if x)
        builder = SparkSession.builder.master(self.master)
        for k, v in conf.items():
            builder = builder.config(k, v)
        with _FilteredStderr(), self.launched:
            spark = _get_or_create(builder, self.launched)
        _note_cds_writer(self.launched)
        spark.sparkContext.setLogLevel(os.environ.get("KAFKALOG_SPARK_LOG_LEVEL", "OFF").upper())
        return spark

    def __exit__(self, kind, value, tb) -> None:
        try:
            self._stop(kind)
        finally:
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None

    def _quiet_logs(self) -> None:
        """No log records of py4j's (nor of the root logger it also writes to) while kafkalog's session
        lives: a Ctrl-C in the middle of a call into the JVM makes py4j log tracebacks; kafkalog says in
        one line what happened. Restored on exit."""
        import logging
        for name in ("py4j", "py4j.java_gateway", "py4j.clientserver", ""):
            logger = logging.getLogger(name)
            self.log_levels[name] = logger.level
            logger.setLevel(logging.CRITICAL + 1)

    def _stop(self, kind) -> None:
        try:
            if self.created and self.spark is not None:
                if kind is not None and issubclass(kind, KeyboardInterrupt):
                    _mute_accumulator_server(self.spark)
                    self.launched.end()        # Spark's JVM (its shutdown hooks stop the context) and workers
                    _drop_cds_writer()         # an archive it may have been writing when killed is not kept
                    return
                try:
                    self.spark.stop()
                except KeyboardInterrupt:
                    self.launched.end()
                    raise
                except Exception:            # noqa: BLE001 - after a failed start the JVM may be gone
                    if kind is None:
                        raise
            elif self.launched.procs and kind is not None:
                self.launched.end()
        finally:
            import logging
            for name, level in self.log_levels.items():
                logging.getLogger(name).setLevel(level)
            self.log_levels.clear()


class _Launched:
    """The processes pyspark launches for this session (the JVM, through ``spark-submit``), each started
    in a process group of its own: Ctrl-C on a terminal does not reach them, and ``end`` ends the JVM and
    everything it started (executors' Python workers, a launcher script's children) by that group."""

    def __init__(self) -> None:
        self.procs: list = []

    def __enter__(self):
        import pyspark.java_gateway as jg
        self.module, self.real = jg, jg.Popen
        launched, real = self.procs, self.real

        def popen(*args, **kw):
            kw["process_group"] = 0
            p = real(*args, **kw)
            launched.append(p)
            return p
        jg.Popen = popen
        return self

    def __exit__(self, *exc) -> None:
        self.module.Popen = self.real

    def end(self, grace: float = 10.0) -> None:
        import signal
        import time
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in self.procs:
                try:
                    os.killpg(p.pid, sig)
                except OSError:
                    pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and any(_group_alive(p.pid) for p in self.procs):
                time.sleep(0.05)
            if not any(_group_alive(p.pid) for p in self.procs):
                break


def _group_alive(pgid: int) -> bool:
    """Some process of group ``pgid`` still runs (zombies do not count)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return False
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


CDS_ENV = "KAFKALOG_SPARK_CDS"


def class_data_sharing() -> str:
    """JVM options for a class-data-sharing archive of Spark's classes (Java 13+'s dynamic CDS): the
    first local run writes one at its JVM's exit into the cache directory, later runs map it instead of
    loading and verifying some 10,000 classes from Spark's jars, about 40 % of the driver JVM's start-up
    CPU here. Keyed by the Java runtime, pyspark's version and its jars; JVM logging off (CDS warnings
    would go to standard output). ``KAFKALOG_SPARK_CDS=0`` turns it off. '' when it cannot be used."""
    import hashlib
    if os.environ.get(CDS_ENV, "1").strip() in ("0", "false", "no"):
        return ""
    java = java_executable()
    try:
        import pyspark
        jars = Path(pyspark.__file__).parent / "jars"
        listing = sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar"))
        home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafkalog" / "spark-cds"
        home.mkdir(parents=True, exist_ok=True)
        real_java = os.path.realpath(java) if java else ""
        key = hashlib.sha256("\n".join([real_java, str(os.stat(real_java).st_mtime_ns) if real_java else "",
                                         pyspark.__version__, LIGHT_JVM, *listing]).encode()).hexdigest()[:16]
    except (OSError, ImportError):
        return ""
    final = home / f"{key}.jsa"
    quiet = "-Xlog:disable -Xshare:auto"
    for jvm in home.glob(f"{key}.*.jvm"):      # archives being written by earlier runs' JVMs (pid inside)
        tmp = jvm.with_suffix(".jsa")
        try:
            pid = jvm.read_text().strip()
        except OSError:
            continue
        if pid.isdigit() and Path(f"/proc/{pid}").exists():
            continue                               # still running (it writes the archive as it exits)
        try:
            if tmp.exists() and tmp.stat().st_size > 0 and not final.exists():
                os.replace(tmp, final)
            jvm.unlink()
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    if final.exists():
        return f"{quiet} -XX:SharedArchiveFile={final}"
    if any(home.glob(f"{key}.*.jvm")):
        return ""                                  # another run writes it now
    _CDS_PENDING[:] = [home / f"{key}.{os.getpid()}.jvm"]
    return f"{quiet} -XX:ArchiveClassesAtExit={home}/{key}.{os.getpid()}.jsa"


#: the sidecar file naming the JVM that writes a new archive at its exit (set once the JVM runs)
_CDS_PENDING: list = []


def _drop_cds_writer() -> None:
    for path in _CDS_WRITING:
        for f in (path, path.with_suffix(".jsa")):
            try:
                f.unlink()
            except OSError:
                pass
    _CDS_WRITING.clear()


_CDS_WRITING: list = []


def _note_cds_writer(launched: "_Launched") -> None:
    if _CDS_PENDING and launched.procs:
        try:
            _CDS_PENDING[0].write_text(str(launched.procs[0].pid))
            _CDS_WRITING.append(_CDS_PENDING[0])
        except OSError:
            pass
        _CDS_PENDING.clear()


def _get_or_create(builder, launched: "_Launched"):
    """``builder.getOrCreate()`` in a thread, waited for here: Ctrl-C while Spark starts (the JVM launching,
    the SparkContext being made) then ends the JVM and whatever it started (pyspark would leave a JVM
    still launching running after this process exits, its py4j server waiting for a connection forever),
    and is raised again with nothing printed by py4j."""
    import threading
    out: dict = {}
    done = threading.Event()       # not Thread.is_alive: a join interrupted by Ctrl-C can leave it False

    def target() -> None:
        try:
            out["spark"] = builder.getOrCreate()
        except BaseException as e:        # noqa: BLE001 - handed to the waiting thread
            out["error"] = e
        finally:
            done.set()

    t = threading.Thread(target=target, name="kafkalog-spark-start", daemon=True)
    t.start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        from .calls import quiet_py4j
        quiet_py4j()
        stop_starting(done, launched)
        raise
    if "error" in out:
        launched.end()
        raise out["error"]
    return out["spark"]


def _mute_accumulator_server(spark) -> None:
    """pyspark's accumulator server is a socketserver in this process: when the JVM dies in the middle of
    a request (kafkalog ends it on Ctrl-C), it prints "Exception occurred during processing of request"
    and a traceback on stderr, after kafkalog's one line (a flaky failure of the Ctrl-C test). Its error
    handler is silenced before the JVM is ended; reading ``_sc`` does not call into the JVM."""
    server = getattr(getattr(spark, "_sc", None), "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, client_address: None


def stop_starting(done, launched: "_Launched", timeout: float = 60.0) -> None:
    """End what the start thread launched, again while it goes on (it may launch the JVM only now), until
    it gives up (``done``): pyspark's own ``finally`` then removes its connection-file directory."""
    import time
    deadline = time.monotonic() + timeout
    while not done.is_set() and time.monotonic() < deadline:
        launched.end(grace=5.0)
        done.wait(0.3)
    launched.end(grace=5.0)


def ship_project(directory: Path) -> Path:
    """A zip of this installation's kafkalog as executors import it: ``kafkalog_formats`` (Python sources
    and the compiled extension), ``kafkalog_cli`` and ``pyspark_kafkalog.py``, the layout of the wheel's
    site-packages. Shipped with ``spark.archives=ZIP#kafkalog-dist``; ``bootstrap`` puts it on the path of
    executors that do not have the same kafkalog installed."""
    import kafkalog_formats
    out = directory / "kafkalog-dist.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, path in bootstrap.source_files():
            z.write(path, name)
        root = Path(kafkalog_formats.__file__).resolve().parent
        for f in sorted(root.glob("_native*.so")) + sorted(root.glob("_native*.pyd")):
            z.write(f, f"kafkalog_formats/{f.name}")
    return out


_FINGERPRINT: list = []


def driver_fingerprint() -> str | None:
    """The fingerprint of this process's kafkalog sources (computed once)."""
    if not _FINGERPRINT:
        _FINGERPRINT.append(bootstrap.fingerprint())
    return _FINGERPRINT[0]


def executor_settings(spark) -> tuple[str | None, bool]:
    """(fingerprint the executors' kafkalog must have, whether the pure path is allowed) for this session's
    jobs: as the session kafkalog started set them, else this process's fingerprint and not allowed; no
    fingerprint on a local master (its executors run this installation)."""
    conf = spark.sparkContext.getConf()
    want = conf.get(CONF_FINGERPRINT, None)
    allow = (conf.get(CONF_ALLOW_PURE, "false") or "false").lower() == "true"
    if is_local(spark.sparkContext.master):
        return None, allow        # the executors are this installation: nothing to compare, nothing shipped
    return (want or driver_fingerprint()), allow


def warm_up(spark, allow_pure: bool = False) -> list[dict]:
    """Start the executors' Python workers, find and import kafkalog there, as part of starting Spark
    (the first job of a session otherwise pays it, about 2 s here, which belongs to the fixed cost of a
    run), and check which record path each executor runs: the reports, one per executor seen. Two tasks
    per core reach every executor that is up; tasks check again on executors that join later."""
    from .calls import run_cancellable
    sc = spark.sparkContext
    bootstrap.by_value()
    want, _allow = executor_settings(spark)
    n = max(1, sc.defaultParallelism) * (1 if is_local(sc.master) else 2)
    reports = run_cancellable(spark, sc.parallelize(range(n), n).map(
        functools.partial(bootstrap.probe, want)).collect)
    seen = {}
    for r in reports:
        seen.setdefault((r.get("host"), r.get("cwd"), r.get("python")), r)
    for r in seen.values():
        line = bootstrap.problem(r, allow_pure)
        if line is not None:
            raise ExecutorProblem(line)
    return list(seen.values())


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
