"""A SparkSession for ``--master``: what is needed first, quiet logs, and the project shipped to executors.

Recipe measured on this kind of machine (shared/docs/spark-findings.md):

* the executors' Python is ``--spark-conf spark.pyspark.python`` when given (pyspark reads only the
  environment's ``PYSPARK_PYTHON`` when it makes the SparkContext, so the setting is put there, as
  spark-submit does), else ``PYSPARK_PYTHON``, else on a local master this interpreter (otherwise Spark
  starts ``python3`` from PATH, which may lack pyarrow); ``SPARK_LOCAL_IP=127.0.0.1`` for local masters (no
  hostname warning, loopback only);
* logging through a quiet log4j2 configuration written next to the shipped code, progress bars off (the
  command shows its own, per stage), the UI off unless ``--spark-conf spark.ui.enabled=true``;
* on any master other than ``local[...]`` the driver's kafkalog (its installed ``kafkalog_formats`` with the
  compiled extension, ``kafkalog_cli``, ``pyspark_kafkalog``) is shipped as an archive through
  ``spark.archives``; an executor uses it only where kafkalog is not installed in its own Python with the
  same sources (``bootstrap``), so an installed package is never hidden. Without ``spark.pyspark.python``
  or ``PYSPARK_PYTHON`` the executors run ``python3`` from their PATH there: the driver's interpreter path
  means nothing on a YARN node or a Kubernetes pod;
* the warm-up runs ``bootstrap.probe`` on the executors: where one would run the pure-Python record path
  (or cannot import kafkalog), the session fails with one line naming the executor and the cause, unless
  ``allow_pure``;
* a session kafkalog starts ends with its JVM and every process it started (``jvm``): none outlives the
  command; the local driver JVM maps a class-data archive of Spark's classes, which the first run writes in
  the foreground.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from ..errors import CannotRun
from . import bootstrap, jvm
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
    java = java_executable()
    version = release_version(java)
    asked = _ask_java_version(java) if version is None else None   # answered while pyspark is imported
    try:
        check_modules()
    finally:
        if asked is not None:
            version = java_version(java, asked)
    if java is None:
        raise SparkUnavailable(f"Java is not installed: Spark needs Java {MIN_JAVA} or newer on PATH (or "
                               "JAVA_HOME), e.g. apt-get install openjdk-17-jre-headless")
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
        except ImportError as e:
            if isinstance(e, ModuleNotFoundError) and (e.name or "").split(".")[0] == module:
                missing.append(module)
                continue
            # installed, but it does not import here: say why (pyarrow 26 with numpy 1.26, which pyspark 3.5's
            # sql extra pins, says "pyarrow requires NumPy 2.0 or newer, found 1.26.4")
            raise SparkUnavailable(f"{module} is installed but cannot be imported: {_first_line(e)}; install "
                                   "versions that work together, e.g. pip install 'kafkalog[spark]' (with "
                                   "'pyspark==3.5.*' for Spark 3.5)") from None
    if missing:
        raise SparkUnavailable(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed; "
                               "install the Spark extra: pip install 'kafkalog[spark]' (in a checkout: "
                               "pip install -e '.[spark]')")
    import pyspark
    version = tuple(int(x) for x in re.findall(r"\d+", pyspark.__version__)[:2])
    if version < MIN_PYSPARK:
        raise SparkUnavailable(f"pyspark {pyspark.__version__} is too old: kafkalog export and scan need Spark "
                               f"{MIN_PYSPARK[0]}.{MIN_PYSPARK[1]} or newer (pip install 'kafkalog[spark]')")


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def release_version(java: str | None) -> int | None:
    """The major version in the ``release`` file of the runtime ``java`` belongs to (``JAVA_VERSION="17.0.15"``
    beside its ``bin``; every JDK and JRE image since Java 9 has one, as have most 8s), or None without one:
    no JVM started (``java -version`` took 60 ms of every Spark start here)."""
    if java is None:
        return None
    try:
        home = Path(os.path.realpath(java)).parent.parent
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r'^JAVA_VERSION="(\d+)(?:\.(\d+))?', text, re.M)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def _ask_java_version(java: str | None):
    """``java -version`` started (its Popen), or None."""
    if java is None:
        return None
    try:
        return subprocess.Popen([java, "-version"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    except OSError:
        return None


def java_version(java: str, asked=None) -> int | None:
    """The major version ``java -version`` reports (``17`` for "17.0.15", ``8`` for "1.8.0_392"); ``asked``:
    that command already started (``_ask_java_version``)."""
    try:
        proc = asked or _ask_java_version(java)
        if proc is None:
            return None
        try:
            out = proc.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return None
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
                 warm: bool = True, allow_pure: bool = False, notice=None) -> None:
        self.master = master
        self.allow_pure = allow_pure
        self.conf = dict(conf or {})
        self.app_name = app_name
        self.warm = warm
        self.notice = notice or (lambda line: None)     # an informational line for the user (stderr)
        self.spark = None
        self.created = False
        self.workdir: str | None = None
        self.launched = jvm.Launched()
        self.class_data = jvm.ClassData(LIGHT_JVM)
        self.log_levels: dict = {}
        self.saved_env: dict = {}
        self.early = None                 # the daemon's imports started early (``daemon.start_early``)

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
                    self.spark = self._build()
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

    def _build(self):
        python = self.conf.get("spark.pyspark.python")
        if python:
            # the executors' Python: pyspark reads it from PYSPARK_PYTHON when it makes the SparkContext (the
            # setting itself is read only by spark-submit), so --spark-conf spark.pyspark.python=... is put
            # there, as spark-submit would, in place of the environment's
            self._set_env("PYSPARK_PYTHON", python)
        elif is_local(self.master) and not os.environ.get("PYSPARK_PYTHON"):
            self._set_env("PYSPARK_PYTHON", sys.executable)
        if is_local(self.master) and not os.environ.get("SPARK_LOCAL_IP"):
            self._set_env("SPARK_LOCAL_IP", "127.0.0.1")
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
            java_opts += " " + self.class_data.options(java_executable())
            if os.path.realpath(os.environ.get("PYSPARK_PYTHON", "")) == os.path.realpath(sys.executable):
                # the executors are this installation: their workers are forked from a daemon that imported
                # the task modules once (``daemon``)
                conf.setdefault("spark.python.daemon.module", "kafkalog_cli.spark.daemon")
                if conf["spark.python.daemon.module"] == "kafkalog_cli.spark.daemon":
                    self._start_early_daemon()
        conf["spark.driver.extraJavaOptions"] = " ".join(
            x for x in (java_opts, self.conf.get("spark.driver.extraJavaOptions")) if x)
        if not is_local(self.master):
            shipped = ship_project(Path(self.workdir))
            conf["spark.archives"] = ",".join(
                x for x in (f"{shipped}#{bootstrap.SHIPPED}", self.conf.get("spark.archives")) if x)
        conf["spark.master"] = self.master
        if is_local(self.master) and not jvm.turned_off(jvm.LAUNCH_CACHE_ENV):
            from .launch import LaunchCache
            self.launched.cache = LaunchCache(self.workdir, self.launched.token)
        start = functools.partial(ContextSession.start, conf)
        _ask_converters_early()
        with jvm.FilteredStderr(), self.launched:
            try:
                spark = _get_or_create(start, self.launched)
            except Exception:
                if not self.launched.forget():
                    raise
                spark = _get_or_create(start, self.launched)   # through spark-submit this time
        self.launched.remember()
        spark.sparkContext.setLogLevel(os.environ.get("KAFKALOG_SPARK_LOG_LEVEL", "OFF").upper())
        return spark

    def _start_early_daemon(self) -> None:
        """The daemon's imports made while the JVM starts (``daemon``): the process that makes them carries
        the session's token, and the daemon Spark launches finds it through the JVM's environment."""
        from . import daemon
        path = str(Path(self.workdir) / "daemon.sock")
        env = dict(os.environ, **{jvm.RUN_ENV: self.launched.token,
                                  "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")})  # pyspark's
        self.early = daemon.start_early(path, env)
        if self.early is not None:
            self._set_env(daemon.SOCKET_ENV, path)

    def __exit__(self, kind, value, tb) -> None:
        from . import daemon
        daemon.release_early(self.early)      # unclaimed, it exits now; claimed, it is the daemon: ends with Spark
        try:
            self._stop(kind)
        finally:
            daemon.end_early(self.early)
            self.early = None
            if self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
                self.workdir = None
            for name, value in self.saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            self.saved_env.clear()

    def _set_env(self, name: str, value: str) -> None:
        self.saved_env.setdefault(name, os.environ.get(name))
        os.environ[name] = value

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
        """Stop what this session started. A session kafkalog created ends with its JVM: Spark stopped, then the
        JVM's standard input closed (pyspark's gateway exits the JVM then) and every process of the session
        waited for, so that none outlives the command."""
        try:
            if self.created and self.spark is not None:
                if kind is not None and issubclass(kind, KeyboardInterrupt):
                    _mute_accumulator_server(self.spark)
                    self.launched.end()        # Spark's JVM (its shutdown hooks stop the context) and workers
                    self.class_data.drop()     # an archive it may have been writing when killed is not kept
                    _forget_gateway()
                    return
                try:
                    _stop_context(self.spark)
                except KeyboardInterrupt:
                    self.launched.end()
                    self.class_data.drop()
                    _forget_gateway()
                    raise
                except Exception:            # noqa: BLE001 - after a failed start the JVM may be gone
                    if kind is None:
                        self._end_jvm(failed=True)
                        raise
                self._end_jvm(failed=kind is not None)
            elif self.launched.procs and kind is not None:
                self.launched.end()
                self.class_data.drop()
        finally:
            import logging
            for name, level in self.log_levels.items():
                logging.getLogger(name).setLevel(level)
            self.log_levels.clear()

    def _end_jvm(self, failed: bool) -> None:
        """After Spark stopped: close the JVM's standard input, wait for it (in the foreground, with a line
        saying why, while a first run's JVM writes the class-data archive), then for the session's other
        processes; end whatever is left."""
        _forget_gateway()
        self.launched.close_jvm()
        writing = self.class_data.writing is not None and not failed
        exited = self.launched.wait_jvm(1.0 if writing else 10.0)
        if writing and not exited:
            self.notice("saving a class-data archive of Spark's classes for faster starts (once for this Java and "
                        f"pyspark, into {jvm.cache_dir()}; KAFKALOG_SPARK_CDS=0 turns it off)...")
            t0 = time.monotonic()
            try:
                exited = self.launched.wait_jvm(jvm.CDS_WRITE_TIMEOUT)
            except KeyboardInterrupt:   # the command's work is done: its result stands, the archive is dropped
                exited = False
            if not self.class_data.finish(exited):
                self.notice("the class-data archive was not saved" + ("" if exited else
                            f" (stopped after {time.monotonic() - t0:.0f} s); the next run tries again"))
        self.class_data.finish(exited and not failed)
        self.launched.settle()


class ContextSession:
    """The session kafkalog starts, as its jobs use it: a SparkContext at once (export's and scan's tasks are
    plain Spark tasks), and the SparkSession of Spark SQL only when something asks for one (scan's report
    table): making it took 0.5-0.8 s of every start here. Any SparkSession attribute makes it then (as
    ``SparkSession.builder.getOrCreate`` would have: this SparkContext, these options)."""

    def __init__(self, sc, options: dict) -> None:
        self.sparkContext = self._sc = sc       # ``_sc`` as a SparkSession has it (``_mute_accumulator_server``)
        self._options = dict(options)
        self._session = None

    @classmethod
    def start(cls, conf: dict) -> "ContextSession":
        """What ``SparkSession.builder.getOrCreate`` does first: the SparkContext of ``conf``."""
        from pyspark import SparkConf, SparkContext
        spark_conf = SparkConf()
        for key, value in conf.items():
            spark_conf.set(key, value)
        return cls(SparkContext.getOrCreate(spark_conf), conf)

    @property
    def session(self):
        if self._session is None:
            from pyspark.sql import SparkSession
            self._session = SparkSession(self.sparkContext, options=self._options)
        return self._session

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.session, name)

    def stop(self) -> None:
        if self._session is not None:
            self._session.stop()
        else:
            self.sparkContext.stop()


def _ask_converters_early() -> None:
    """Ask py4j's input converters their first question in a thread of its own while the JVM starts.

    The first call into the JVM that carries arguments (SparkContext copying its settings) asks each
    converter pyspark registered whether it converts them; pyspark 4's numpy converter imports
    ``pyspark.testing`` for that, and pandas with it: 0.3 s here between the gateway coming up and the
    SparkContext being made, with the JVM idle. Asked here, those imports overlap the JVM's start.
    """
    import threading

    def ask() -> None:
        try:
            import pyspark.sql.types  # noqa: F401 - registers pyspark's converters
            from py4j.protocol import INPUT_CONVERTER
            for converter in list(INPUT_CONVERTER):
                converter.can_convert("")
        except Exception:                 # noqa: BLE001 - only an earlier start of what the first call does
            pass
    threading.Thread(target=ask, name="kafkalog-py4j-converters", daemon=True).start()


def _get_or_create(start, launched: "jvm.Launched"):
    """``start()`` (the session's SparkContext) in a thread, waited for here: Ctrl-C while Spark starts (the JVM launching,
    the SparkContext being made) then ends the JVM and whatever it started (pyspark would leave a JVM
    still launching running after this process exits, its py4j server waiting for a connection forever),
    and is raised again with nothing printed by py4j."""
    import threading
    out: dict = {}
    done = threading.Event()       # not Thread.is_alive: a join interrupted by Ctrl-C can leave it False

    def target() -> None:
        try:
            out["spark"] = start()
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


def _stop_context(spark) -> None:
    """``spark.stop()`` without its one-second wait: pyspark's accumulator server (a socketserver in this
    process, whose handler polls its connection once a second) is told to stop first and shut down in a
    daemon thread, which ends at its next poll or with the process."""
    import threading
    sc = spark.sparkContext
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None:
        _mute_accumulator_server(spark)
        server.server_shutdown = True
        sc._accumulatorServer = None
    spark.stop()
    if server is not None:
        threading.Thread(target=server.shutdown, name="kafkalog-accumulator-stop", daemon=True).start()


def _forget_gateway() -> None:
    """Close pyspark's connection to the JVM and forget it, so that a later session in this process starts a
    JVM of its own (pyspark otherwise keeps it for the next SparkContext)."""
    try:
        from pyspark import SparkContext
        gateway = SparkContext._gateway
        if gateway is not None:
            SparkContext._gateway = None
            SparkContext._jvm = None
            gateway.shutdown()
    except Exception:                     # noqa: BLE001 - the JVM may already be gone
        pass


def _mute_accumulator_server(spark) -> None:
    """pyspark's accumulator server is a socketserver in this process: when the JVM dies in the middle of
    a request (kafkalog ends it on Ctrl-C), it prints "Exception occurred during processing of request"
    and a traceback on stderr, after kafkalog's one line (a flaky failure of the Ctrl-C test). Its error
    handler is silenced before the JVM is ended; reading ``_sc`` does not call into the JVM."""
    server = getattr(getattr(spark, "_sc", None), "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, client_address: None


def stop_starting(done, launched: "jvm.Launched", timeout: float = 60.0) -> None:
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
