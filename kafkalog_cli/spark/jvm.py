"""The driver JVM kafkalog launches through pyspark: its processes, its end, and its class-data archive.

* ``Launched``: pyspark's ``Popen`` of ``spark-submit`` (which execs the JVM) is made in a process group of
  its own, so that Ctrl-C on a terminal reaches only kafkalog, and kafkalog ends the JVM itself. Every
  process of the session (the JVM, Spark's Python daemon, which makes a process group of its own, and its
  workers) carries ``KAFKALOG_SPARK_RUN=<token>`` in its environment; ``end`` waits for, then ends, every
  process carrying this session's token, so that none outlives the command, whatever group it is in.
* ``ClassData``: a class-data-sharing archive of Spark's classes for the local driver JVM (Java 13+'s
  dynamic CDS). The first local run's JVM writes it as it exits, and kafkalog waits for that in the
  foreground with a line saying so (about 10-20 s, once per Java runtime and pyspark); later runs map
  it instead of loading and verifying some 10,000 classes from Spark's jars, about 40 % of the JVM's
  start-up CPU here. ``KAFKALOG_SPARK_CDS=0`` turns it off.
* ``FilteredStderr``: the JVM's standard error copied to ours without the one line Java always prints for
  Spark 4's incubating vector module.
"""
from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from pathlib import Path

RUN_ENV = "KAFKALOG_SPARK_RUN"
CDS_ENV = "KAFKALOG_SPARK_CDS"
#: ``0`` turns off starting the JVM from spark-submit's remembered command (``launch``)
LAUNCH_CACHE_ENV = "KAFKALOG_SPARK_LAUNCH_CACHE"
#: longest wait for the first run's JVM to write the archive (beyond it the archive is dropped)
CDS_WRITE_TIMEOUT = 600.0


class Launched:
    """The processes pyspark launches for one session, found again by the token in their environment."""

    def __init__(self) -> None:
        self.procs: list = []
        self.token = uuid.uuid4().hex
        self.cache = None                 # a launch.LaunchCache: spark-submit's java command, remembered
        self.passed_env: dict | None = None

    def __enter__(self):
        import pyspark.java_gateway as jg
        self.module, self.real = jg, jg.Popen
        launched, real, token = self.procs, self.real, self.token

        def popen(command, **kw):
            kw["process_group"] = 0
            env = kw.get("env")
            if env is not None:
                kw["env"] = self.passed_env = dict(env, **{RUN_ENV: token})
                remembered = self.cache.command_for(list(command), kw["env"]) if self.cache is not None else None
                if remembered is not None:
                    command, kw["env"] = remembered
            p = real(command, **kw)
            launched.append(p)
            return p
        jg.Popen = popen
        self.clock = getattr(jg, "time", None)
        if self.clock is time:
            jg.time = _FinePoll()
        return self

    def __exit__(self, *exc) -> None:
        self.module.Popen = self.real
        if self.clock is time:
            self.module.time = time

    def remember(self) -> None:
        """The gateway is up: remember the java command spark-submit ran (``launch``)."""
        if self.cache is not None and self.jvm is not None and self.passed_env is not None:
            self.cache.record(self.jvm.pid, self.passed_env)

    def forget(self) -> bool:
        """A remembered command did not start a gateway: drop it and this launch's processes (True), so that
        the start is made again through spark-submit; False when the command was not a remembered one."""
        if self.cache is None or not self.cache.used:
            return False
        self.cache.drop()
        self.end(grace=5.0)
        for p in self.procs:
            try:
                p.wait(5)
            except Exception:             # noqa: BLE001 - ended above; reaped if it can be
                pass
        self.procs.clear()
        return True

    @property
    def jvm(self):
        return self.procs[0] if self.procs else None

    def close_jvm(self) -> None:
        """Close the JVM's standard input: pyspark's gateway server exits the JVM at end of file."""
        p = self.jvm
        if p is not None and p.stdin is not None:
            try:
                p.stdin.close()
            except OSError:
                pass

    def wait_jvm(self, timeout: float) -> bool:
        """Wait for the JVM to exit (True) or ``timeout`` to pass (False)."""
        import subprocess
        p = self.jvm
        if p is None:
            return True
        try:
            p.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def alive(self) -> list[int]:
        """The pids of this session's processes still running (zombies do not count)."""
        return ours(self.token, {p.pid for p in self.procs})

    def end(self, grace: float = 10.0) -> None:
        """End every process of this session: SIGTERM, then SIGKILL after ``grace`` seconds."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.alive()
            if not pids:
                return
            for p in self.procs:
                try:
                    os.killpg(p.pid, sig)
                except OSError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self.alive():
                time.sleep(0.05)

    def settle(self, grace: float = 5.0) -> None:
        """After a clean stop: give the session's processes ``grace`` seconds to exit, then end them."""
        deadline = time.monotonic() + grace
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.end(grace=5.0)


class _FinePoll:
    """``time`` for pyspark's java_gateway, which looks for the JVM's connection file every 0.1 s (50 ms of
    every start on average): every 10 ms."""

    def __getattr__(self, name: str):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(min(seconds, 0.01))


def ours(token: str, pids: set | None = None) -> list[int]:
    """Live processes whose environment carries ``KAFKALOG_SPARK_RUN=token``, or whose pid is in ``pids``
    (the JVM: its environment is read too, but its pid is known)."""
    want = f"{RUN_ENV}={token}".encode()
    found = []
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            if state in (b"Z", b"X"):
                continue
            if pids and int(name) in pids:
                found.append(int(name))
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except (OSError, IndexError):
            continue
        if want in env.split(b"\0"):
            found.append(int(name))
    return found


# --- the class-data archive ------------------------------------------------------------------------------

class ClassData:
    """The class-data archive for this Java runtime, pyspark and JVM options: ``options()`` gives the JVM
    options that map it, or that make this run's JVM write it at its exit (``writing``); ``finish``, once
    that JVM has exited, puts it into place."""

    def __init__(self, light_jvm: str) -> None:
        self.light_jvm = light_jvm
        self.final: Path | None = None
        self.writing: Path | None = None

    def options(self, java: str | None) -> str:
        """'' when off or when it cannot be used (another run is writing it, no cache directory)."""
        import hashlib
        if turned_off(CDS_ENV):
            return ""
        try:
            import pyspark
            jars = Path(pyspark.__file__).parent / "jars"
            listing = sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar"))
            home = cache_dir()
            home.mkdir(parents=True, exist_ok=True)
            real_java = os.path.realpath(java) if java else ""
            key = hashlib.sha256("\n".join([real_java, str(os.stat(real_java).st_mtime_ns) if real_java else "",
                                             pyspark.__version__, self.light_jvm, *listing]).encode()).hexdigest()[:16]
        except (OSError, ImportError):
            return ""
        self.final = home / f"{key}.jsa"
        quiet = "-Xlog:disable -Xshare:auto"
        if self.final.exists():
            return f"{quiet} -XX:SharedArchiveFile={self.final}"
        others = False
        for tmp in home.glob(f"{key}.*.tmp"):       # archives other runs' JVMs write (their pid in the name)
            pid = tmp.name.split(".")[1]
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                others = True
            else:
                _unlink(tmp)                            # a run killed while its JVM wrote it
        if others:
            return ""
        self.writing = home / f"{key}.{os.getpid()}.tmp"
        return f"{quiet} -XX:ArchiveClassesAtExit={self.writing}"

    def finish(self, exited: bool) -> bool:
        """Once the JVM that wrote the archive has exited (``exited``): put it into place (True), else drop it."""
        tmp, self.writing = self.writing, None
        if tmp is None:
            return False
        try:
            if exited and tmp.stat().st_size > 0:
                os.replace(tmp, self.final)
                return True
        except OSError:
            pass
        _unlink(tmp)
        return False

    def drop(self) -> None:
        self.finish(False)


def turned_off(name: str) -> bool:
    """Whether the environment variable ``name`` (on by default) says 0, false, no or off."""
    return os.environ.get(name, "1").strip().lower() in ("0", "false", "no", "off")


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kafkalog" / "spark-cds"


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


# --- the JVM's standard error ----------------------------------------------------------------------------

#: lines the JVM prints that say nothing to a kafkalog user (Spark 4's launcher always adds the incubating
#: vector module, and Java announces it; it cannot be turned off: shared/docs/spark-findings.md §5)
NOISE = (b"WARNING: Using incubator modules",)


class FilteredStderr:
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
    try:
        os.close(out)
    except OSError:
        pass


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass
