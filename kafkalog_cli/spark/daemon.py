"""Spark's Python daemon for the sessions kafkalog starts on a local master, with the task modules imported
once before it forks its workers (``spark.python.daemon.module``; run as ``python -m``), and imported while
the JVM starts rather than after it.

Each Python worker of a local executor is forked from one daemon process. pyspark's own daemon imports its
worker module and everything a task needs after the fork, in every worker: pyspark.worker, pyarrow, pandas
(which pyarrow imports the first time it converts an array) and kafkalog's record path, about a second of
CPU per worker on this kind of machine. Imported here, before the fork, the workers share them: the imports
are paid once, and their pages once. Nothing here starts a thread of Python's, runs a pyarrow computation
or opens a file before the fork (numpy's and jemalloc's own threads are handled across fork by their
libraries, as with any forking server that imports them); the daemon itself is pyspark's
(``pyspark.daemon.manager``).

Those imports still took 1.2 s on the idle benchmark machine, after the SparkContext and before the first
task: Spark launches the daemon only when the first job needs a worker. So the driver starts the imports
early (``start_early``, as it launches the JVM): ``python -m kafkalog_cli.spark.daemon --early SOCKET``
imports the task modules while the JVM starts and then waits on a Unix socket. The daemon Spark launches
(``main``) connects to it and hands it its standard input, output and error, its arguments, environment,
working directory and module path (``SCM_RIGHTS``); the waiting process takes them and becomes the daemon,
and the launched one stays as its stand-in for the JVM (it passes on SIGTERM and exits when the daemon
exits). Where the waiting process is not there, has gone, or was started for another Python, pyspark,
kafkalog or start-up setting (``PYTHONHASHSEED``...) than the daemon's (``_mismatch``), the launched daemon imports the modules itself, as before. An
unclaimed waiting process exits when the driver closes its standard input (the session stopping, or the
driver gone), and carries the session's token (``jvm.RUN_ENV``) like every process of the session.

Used only where the executors run this installation (local masters): a cluster's executors run Spark's
default daemon.
"""
from __future__ import annotations

import importlib
import json
import os
import sys

#: what every export or scan task imports (``bootstrap.probe`` imports the same, as the warm-up)
PRELOAD = ("pyspark.worker", "numpy", "pyarrow", "pyarrow.parquet", "pyarrow.pandas_compat", "pandas",
           "kafkalog_formats.native", "kafkalog_cli.engine.verify_segment", "kafkalog_cli.spark.export",
           "kafkalog_cli.spark.rows", "kafkalog_cli.spark.rows_native", "kafkalog_cli.spark.storage",
           "kafkalog_cli.spark.writer", "kafkalog_cli.spark.jobs")
#: where the launched daemon finds the process that imported them early (set by the driver for the JVM)
SOCKET_ENV = "KAFKALOG_SPARK_DAEMON_SOCKET"
#: top-level packages that must come from the same files in both processes
SAME_ORIGIN = ("pyspark", "kafkalog_cli", "kafkalog_formats", "pyarrow", "numpy")
#: variables Python reads as it starts (their values then hold for the whole process): the same in both
STARTUP_ENV = ("PYTHONHASHSEED", "PYTHONHOME", "PYTHONOPTIMIZE", "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONNOUSERSITE",
               "PYTHONSAFEPATH", "PYTHONDEVMODE", "PYTHONMALLOC", "PYTHONWARNINGS", "PYTHONINTMAXSTRDIGITS")
#: longest wait of the launched daemon for the early one's answer (it answers once its imports are done)
ANSWER_TIMEOUT = 120.0


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:              # a worker then imports it (or says why it cannot) as it would anyway
            pass


def _become_daemon() -> None:
    from pyspark.daemon import manager

    from . import bootstrap
    bootstrap.ensure(None)               # where kafkalog comes from and its record path, for every worker
    manager()


def main() -> None:
    """The daemon Spark launches: handed over to the early process when there is one, else pyspark's."""
    path = os.environ.get(SOCKET_ENV)
    if path and _hand_over(path):
        return
    preload()
    _become_daemon()


# --- on the driver ---------------------------------------------------------------------------------------

def start_early(path: str, env: dict):
    """Launch the early process (its standard input a pipe: closing it ends the process while unclaimed);
    the Popen, or None where it cannot be started."""
    import subprocess
    if len(os.fsencode(path)) > 100:      # a Unix socket's path is limited (108 bytes on Linux)
        return None
    try:
        return subprocess.Popen([sys.executable, "-m", "kafkalog_cli.spark.daemon", "--early", path],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, close_fds=True,
                                process_group=0)      # as the JVM: Ctrl-C on a terminal reaches only kafkalog
    except OSError:
        return None


def release_early(proc) -> None:
    """Close the early process's standard input: an unclaimed one exits then; a claimed one is the daemon,
    which exits with the JVM."""
    try:
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass


def end_early(proc, timeout: float = 5.0) -> None:
    """After the session's processes have ended: reap the early process (ended if it is still there)."""
    import subprocess
    if proc is None:
        return
    release_early(proc)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# --- the early process -----------------------------------------------------------------------------------

def serve_early(path: str) -> None:
    """Listen at ``path`` first (so that a daemon launched during the imports waits for them), import the
    task modules, then take the first daemon that connects, or exit when standard input ends."""
    import select
    import socket
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        sock.listen(1)
    except OSError:
        return
    preload()
    while True:
        ready, _w, _x = select.select([sock, 0], [], [])
        if 0 in ready and not os.read(0, 4096):
            _unlink(path)
            return
        if sock in ready:
            break
    conn, _addr = sock.accept()
    sock.close()
    _unlink(path)
    conn.settimeout(30.0)
    try:
        fds, request = _receive(conn)
    except (OSError, ValueError):
        return
    why = _mismatch(request)
    try:
        conn.sendall(json.dumps({"refused": why} if why else {"pid": os.getpid()}).encode() + b"\n")
        conn.close()
    except OSError:                       # the launched daemon gave up waiting: it imports on its own
        why = "gone"
    if why:
        for fd in fds:
            os.close(fd)
        return
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv[:] = request["argv"]
    sys.path[:] = request["path"]
    _become_daemon()


def _receive(conn) -> tuple[list, dict]:
    import socket
    head, fds, _flags, _addr = socket.recv_fds(conn, 8, 3)
    if len(head) < 8 or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("short request")
    size = int(head.decode("ascii"), 16)
    body = bytearray()
    while len(body) < size:
        chunk = conn.recv(min(1 << 16, size - len(body)))
        if not chunk:
            for fd in fds:
                os.close(fd)
            raise ValueError("short request")
        body += chunk
    return fds, json.loads(body)


def _origins() -> dict:
    """Where this process finds each of ``SAME_ORIGIN`` (a file path, or None)."""
    import importlib.util
    out = {}
    for name in SAME_ORIGIN:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        out[name] = spec.origin if spec is not None else None
    return out


def _mismatch(request: dict) -> str | None:
    """Why this process cannot be the launched daemon's (another Python, hash seed or package), or None."""
    if os.path.realpath(request["executable"]) != os.path.realpath(sys.executable):
        return "another Python"
    for name in STARTUP_ENV:
        if request["env"].get(name) != os.environ.get(name):
            return f"another {name}"
    mine = _origins()
    for name, origin in request["origins"].items():
        if mine.get(name) != origin and not (name == "pyspark" and _same_pyspark(mine.get(name), origin)):
            return f"another {name}"
    return None


def _same_pyspark(mine: str | None, theirs: str | None) -> bool:
    """Spark puts its ``python/lib/pyspark.zip`` first on the daemon's path: the same release as the driver's
    pyspark when both carry the same ``version.py``."""
    a, b = _version_text(mine), _version_text(theirs)
    return a is not None and a == b


def _version_text(origin: str | None) -> bytes | None:
    """``pyspark/version.py`` beside ``origin`` (a package's ``__init__.py``, in a directory or a zip)."""
    import zipfile
    if not origin:
        return None
    package = os.path.dirname(origin)
    try:
        if os.path.isdir(package):
            with open(os.path.join(package, "version.py"), "rb") as f:
                return f.read()
        archive, _sep, inner = origin.partition(".zip" + os.sep)
        with zipfile.ZipFile(archive + ".zip") as z:
            return z.read(os.path.dirname(inner) + "/version.py")
    except (OSError, KeyError, zipfile.BadZipFile, ValueError):
        return None


# --- the daemon Spark launched, handing over ------------------------------------------------------------

def _hand_over(path: str) -> bool:
    """Give this daemon's place to the early process (True: it is the daemon now, and this one has waited
    for it to exit), or False (not there, gone, or refused: import here)."""
    import signal
    import socket
    request = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path,
                          "executable": sys.executable, "origins": _origins()}).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(ANSWER_TIMEOUT)
            s.connect(path)
            socket.send_fds(s, [b"%08x" % len(request)], [0, 1, 2])
            s.sendall(request)
            answer = s.makefile("rb").readline()
    except OSError:
        return False
    try:
        pid = int(json.loads(answer)["pid"])
    except (ValueError, KeyError, TypeError):
        return False

    def forward(signum, _frame) -> None:
        try:
            os.kill(pid, signum)
        except OSError:
            pass
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)                   # the daemon reads the JVM's pipe; this process holds none of it
    os.dup2(devnull, 1)
    os.close(devnull)
    _wait_for(pid)
    return True


def _wait_for(pid: int) -> None:
    import select
    import time
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])
        os.close(fd)
        return
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        except OSError:
            pass
        time.sleep(0.1)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--early":
        serve_early(sys.argv[2])
    else:
        main()
