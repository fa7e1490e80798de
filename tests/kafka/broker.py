"""A real Kafka broker on 127.0.0.1 for the differential tests (issue 22: Kafka itself as the oracle).

``Broker`` runs one release's ``kafka.Kafka`` from the jars ``jars.jars(version)`` resolved: a single-node
KRaft broker + controller (``process.roles=broker,controller``) whose log directory also holds the metadata
log ``__cluster_metadata-0`` (as on a combined node), or a ZooKeeper-mode broker (3.x only) with a ZooKeeper
server (``ZooKeeperServerMain`` from the same jars) for the message formats v0/v1 that only
``inter.broker.protocol.version`` below 3.0 still writes. It formats the log directory (``StorageTool
format``), starts the broker on free loopback ports and waits until it serves, stops it clean (SIGTERM: the
broker's shutdown hook closes every log and writes ``.kafka_cleanshutdown``) or dirty (SIGKILL), starts it
again on the same directory, and reads its own log (``server-N.log``, one per start) for ERROR lines and for
what its log loading, retention and cleaner did.

``dump_log_segments`` runs the same release's ``DumpLogSegments`` (``kafka.tools`` in 3.x, Scala;
``org.apache.kafka.tools`` in 4.x, Java) in a JVM of its own.

Every JVM started here is started in a session of its own with ``PR_SET_PDEATHSIG`` = SIGKILL (it dies with
the Python process that started it, even on kill -9) and is also killed by an ``atexit`` hook; the pytest
fixtures stop each one on teardown.
"""
from __future__ import annotations

import atexit
import base64
import ctypes
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import jars as _jars

CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
JVM_OPTS = ["-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss1m",
            "-Djava.awt.headless=true"]
_LIVE: set[subprocess.Popen] = set()
_LINE = re.compile(r"^\[(?P<time>[^\]]+)\] (?P<level>[A-Z]+) (?P<message>.*)$")


class BrokerFailed(Exception):
    """The broker did not start, stop or format as asked (the message quotes its log)."""


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except OSError:
        pass


def _kill_all() -> None:
    for proc in list(_LIVE):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _LIVE.discard(proc)


atexit.register(_kill_all)


def spawn(cmd: list[str], *, cwd: Path, stdout, stderr=subprocess.STDOUT, env: dict | None = None
          ) -> subprocess.Popen:
    """A JVM (or any process) that cannot outlive the tests."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_die_with_parent, env=env)
    _LIVE.add(proc)
    return proc


def reap(proc: subprocess.Popen, sig: int = signal.SIGKILL, timeout: float = 60) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    _LIVE.discard(proc)
    return proc.returncode


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def java() -> str:
    return shutil.which("java") or "java"


def log4j_config(version: str, path: Path, log_file: Path, level: str = "INFO",
                 loggers: dict | None = None) -> Path:
    """A logging configuration writing every logger to ``log_file`` in Kafka's own pattern; ``loggers``
    sets the level of named loggers (``{"kafka.log.LogManager": "DEBUG"}``)."""
    pattern = "[%d] %p %m (%c)%n"
    loggers = loggers or {}
    if _jars.major(version) >= 4:
        path.write_text(
            "status = warn\n"
            "appender.file.type = File\nappender.file.name = FILE\n"
            f"appender.file.fileName = {log_file}\n"
            "appender.file.layout.type = PatternLayout\n"
            f"appender.file.layout.pattern = {pattern}\n"
            f"rootLogger.level = {level}\nrootLogger.appenderRef.file.ref = FILE\n"
            + "".join(f"logger.l{i}.name = {name}\nlogger.l{i}.level = {lvl}\n"
                      for i, (name, lvl) in enumerate(loggers.items())))
    else:
        path.write_text(
            f"log4j.rootLogger={level}, file\n"
            "log4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={log_file}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            f"log4j.appender.file.layout.ConversionPattern={pattern}\n"
            + "".join(f"log4j.logger.{name}={lvl}\n" for name, lvl in loggers.items()))
    return path


def log_property(version: str, config: Path) -> str:
    key = "log4j2.configurationFile" if _jars.major(version) >= 4 else "log4j.configuration"
    return f"-D{key}={'' if _jars.major(version) >= 4 else 'file:'}{config}"


def tool_main(version: str, name: str) -> str:
    """The class of a Kafka tool in this release (Scala ``kafka.tools`` or Java ``org.apache.kafka.tools``)."""
    lib = _jars.jars(version)
    java_class = f"org/apache/kafka/tools/{name}.class"
    for jar in (lib / f"kafka-tools-{version}.jar", lib / f"kafka_2.13-{version}.jar"):
        if jar.is_file() and java_class in zipfile.ZipFile(jar).namelist():
            return f"org.apache.kafka.tools.{name}"
    return f"kafka.tools.{name}"


def run_tool(version: str, main: str, args: list[str], *, cwd: Path | None = None, timeout: float = 600
             ) -> subprocess.CompletedProcess:
    """One run of a Kafka tool's ``main`` in a JVM of its own; its logging goes to stderr at WARN."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="kafka-tool-") as tmp:
        conf = Path(tmp, "log4j.properties")
        if _jars.major(version) >= 4:
            conf.write_text("status = warn\nappender.err.type = Console\nappender.err.name = ERR\n"
                            "appender.err.target = SYSTEM_ERR\nappender.err.layout.type = PatternLayout\n"
                            "appender.err.layout.pattern = %p %m%n\nrootLogger.level = WARN\n"
                            "rootLogger.appenderRef.err.ref = ERR\n")
        else:
            conf.write_text("log4j.rootLogger=WARN, err\nlog4j.appender.err=org.apache.log4j.ConsoleAppender\n"
                            "log4j.appender.err.Target=System.err\n"
                            "log4j.appender.err.layout=org.apache.log4j.PatternLayout\n"
                            "log4j.appender.err.layout.ConversionPattern=%p %m%n\n")
        cmd = [java(), *JVM_OPTS, log_property(version, conf), "-cp", _jars.classpath(version), main, *args]
        proc = spawn(cmd, cwd=cwd or Path(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            reap(proc)
        return subprocess.CompletedProcess(cmd, proc.returncode, out.decode("utf-8", "replace"),
                                           err.decode("utf-8", "replace"))


def dump_log_segments(version: str, files: list[Path], *options: str) -> subprocess.CompletedProcess:
    """``kafka-dump-log.sh --files F1,F2,... OPTIONS`` of this release."""
    return run_tool(version, tool_main(version, "DumpLogSegments"),
                    ["--files", ",".join(str(f) for f in files), *options])


def cluster_id(seed: str = "kafkalog") -> str:
    """A KRaft cluster id (base64url of a UUID, 22 characters), fixed per seed."""
    raw = uuid.uuid5(uuid.NAMESPACE_URL, seed).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@dataclass
class ZooKeeper:
    """A ZooKeeper server (``ZooKeeperServerMain``) from a 3.x release's jars, for a ZooKeeper-mode broker."""
    version: str
    home: Path
    port: int = 0
    proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        conf = log4j_config(self.version, self.home / "zk-log4j.properties", self.home / "zookeeper.log", "WARN")
        cmd = [java(), *JVM_OPTS, log_property(self.version, conf), "-Dzookeeper.admin.enableServer=false",
               "-cp", _jars.classpath(self.version), "org.apache.zookeeper.server.ZooKeeperServerMain",
               str(self.port), str(self.home / "data")]
        with open(self.home / "zk-stdout.txt", "ab") as out:
            self.proc = spawn(cmd, cwd=self.home, stdout=out)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerFailed(f"ZooKeeper exited with status {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.5) as s:
                    s.sendall(b"srvr")
                    if s.recv(64).startswith(b"Zookeeper version"):
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise BrokerFailed("ZooKeeper did not start")

    def stop(self) -> None:
        if self.proc is not None:
            reap(self.proc, signal.SIGTERM, 30)
            self.proc = None


@dataclass
class Broker:
    """One broker of ``version`` with its log directory ``home/data``.

    ``mode`` is ``"kraft"`` (combined broker/controller) or ``"zk"`` (3.x only; a ZooKeeper server is
    started with it). ``config`` adds or overrides server properties.
    """
    version: str
    home: Path
    mode: str = "kraft"
    config: dict = field(default_factory=dict)
    log_dir: Path = field(init=False)
    port: int = 0
    controller_port: int = 0
    proc: subprocess.Popen | None = None
    zookeeper: ZooKeeper | None = None
    starts: int = 0
    loggers: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.log_dir = self.home / "data"

    # --- configuration --------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict:
        props = {
            "log.dirs": str(self.log_dir),
            "num.partitions": "1", "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0", "auto.create.topics.enable": "false",
            "num.network.threads": "2", "num.io.threads": "2", "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1", "log.cleaner.threads": "1",
            "log.cleaner.backoff.ms": "500", "log.retention.check.interval.ms": "1000",
            "log.cleaner.dedupe.buffer.size": str(32 << 20),
        }
        if _jars.major(self.version) >= 3 and self.version != "3.7.0":
            # 3.9+: the delay of the first retention, flush and checkpoint tasks (30 s, fixed, in 3.7).
            props["log.initial.task.delay.ms"] = "500"
        if self.mode == "kraft":
            props.update({
                "process.roles": "broker,controller", "node.id": "1",
                "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            })
        else:
            props.update({
                "broker.id": "1", "zookeeper.connect": f"127.0.0.1:{self.zookeeper.port}/kafka",
                "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                "zookeeper.connection.timeout.ms": "30000",
            })
        props.update({k: str(v) for k, v in self.config.items()})
        return props

    def write_properties(self) -> Path:
        path = self.home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    # --- life cycle -----------------------------------------------------------------------------------

    def format(self) -> None:
        """``kafka-storage.sh format`` of the log directory (KRaft only; a ZooKeeper broker needs none)."""
        if self.mode != "kraft":
            return
        self.port = self.port or free_port()
        self.controller_port = self.controller_port or free_port()
        props = self.write_properties()
        res = run_tool(self.version, "kafka.tools.StorageTool",
                       ["format", "-t", cluster_id(), "-c", str(props)], timeout=120)
        if res.returncode != 0:
            raise BrokerFailed(f"StorageTool format failed: {res.stdout}{res.stderr}")

    @property
    def log_file(self) -> Path:
        """The broker's own log of its latest start."""
        return self.home / f"server-{self.starts}.log"

    def start(self, timeout: float = 180) -> "Broker":
        """Start the broker on its log directory (formatting it first when new) and wait until it serves."""
        if self.mode == "zk" and self.zookeeper is None:
            self.zookeeper = ZooKeeper(self.version, self.home / "zookeeper")
            self.zookeeper.start()
        if self.mode == "kraft" and not (self.log_dir / "meta.properties").is_file():
            self.format()
        self.port = self.port or free_port()
        self.controller_port = self.controller_port or free_port()
        props = self.write_properties()
        self.starts += 1
        conf = log4j_config(self.version, self.home / f"log4j-{self.starts}.properties", self.log_file,
                            loggers=self.loggers)
        cmd = [java(), *JVM_OPTS, log_property(self.version, conf), "-cp", _jars.classpath(self.version),
               "kafka.Kafka", str(props)]
        with open(self.home / f"stdout-{self.starts}.txt", "wb") as out:
            self.proc = spawn(cmd, cwd=self.home, stdout=out)
        ready = re.compile(r"Kafka Server started|\[KafkaServer id=\d+\] started")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = reap(self.proc)
                self.proc = None
                raise BrokerFailed(f"Kafka {self.version} exited with status {code} at start:\n"
                                   + self.tail())
            if self.log_file.is_file() and ready.search(self.log_file.read_text(errors="replace")):
                if self.mode == "zk":
                    self._await_controller(deadline)
                return self
            time.sleep(0.2)
        self.kill()
        raise BrokerFailed(f"Kafka {self.version} did not start within {timeout:.0f} s:\n" + self.tail())

    def _await_controller(self, deadline: float) -> None:
        """Wait until the broker's Metadata answer names a controller and lists the broker.

        A ZooKeeper-mode broker logs "started" once ``KafkaController.startup`` has only queued its election
        (``KafkaServer.startup``, 3.x); its metadata cache fills when the new controller sends UpdateMetadata.
        A client asking before that gets no controller, and librdkafka may sit on that answer for the whole
        request timeout (CI stop 41: a CreateTopics unanswered for 60 s under load).
        """
        from confluent_kafka.admin import AdminClient
        client = AdminClient({"bootstrap.servers": self.bootstrap})
        while time.monotonic() < deadline:
            try:
                md = client.list_topics(timeout=5)
                if md.controller_id >= 0 and md.brokers:
                    return
            except Exception:       # KafkaException: not answering yet
                pass
            time.sleep(0.2)
        self.kill()
        raise BrokerFailed(f"Kafka {self.version} named no controller:\n" + self.tail())

    def stop(self, timeout: float = 120) -> None:
        """A clean shutdown (SIGTERM); raises unless the broker exits and leaves ``.kafka_cleanshutdown``."""
        if self.proc is None:
            return
        code = reap(self.proc, signal.SIGTERM, timeout)
        self.proc = None
        if not (self.log_dir / CLEAN_SHUTDOWN).is_file():
            raise BrokerFailed(f"Kafka {self.version} exited with status {code} without writing "
                               f"{CLEAN_SHUTDOWN}:\n" + self.tail())

    def kill(self) -> None:
        """A dirty shutdown: SIGKILL (what the page cache holds stays; nothing is flushed or closed)."""
        if self.proc is not None:
            reap(self.proc, signal.SIGKILL)
            self.proc = None

    def close(self) -> None:
        """Teardown: the broker killed if it still runs, and its ZooKeeper stopped."""
        self.kill()
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # --- its own log ----------------------------------------------------------------------------------

    def log_lines(self, start: int | None = None) -> list[tuple[str, str]]:
        """(level, message) of every line of the broker's log of start ``start`` (default: the latest)."""
        path = self.home / f"server-{start or self.starts}.log"
        if not path.is_file():
            return []
        out = []
        for line in path.read_text(errors="replace").splitlines():
            m = _LINE.match(line)
            if m:
                out.append((m["level"], m["message"]))
            elif out:   # a stack trace line belongs to the message before it
                level, message = out[-1]
                out[-1] = (level, message + "\n" + line)
        return out

    def errors(self, start: int | None = None) -> list[str]:
        return [m for level, m in self.log_lines(start) if level in ("ERROR", "FATAL")]

    def grep(self, pattern: str, start: int | None = None) -> list[str]:
        rx = re.compile(pattern)
        return [m for _, m in self.log_lines(start) if rx.search(m)]

    def tail(self, n: int = 40) -> str:
        text = ""
        for p in (self.log_file, self.home / f"stdout-{self.starts}.txt"):
            if p.is_file():
                text += f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-n:]) + "\n"
        return text


RECOVERY_PATTERNS = (
    r"Recovering unflushed segment", r"Found deletable segments", r"Deleting segment",
    r"Loading producer state", r"Reloading from producer snapshot", r"Truncating", r"Found invalid",
    r"Deleted log", r"Cleaner \d+", r"log start offset", r"Incrementing log start offset",
)


def recovery_lines(broker: Broker, start: int | None = None) -> list[str]:
    """What the broker's log loading, retention and cleaner said in one start."""
    return broker.grep("|".join(RECOVERY_PATTERNS), start)
