"""Calls from the driver into Spark: a failed job as one line (``SparkJobError``, ``ExecutorProblem``) and
Ctrl-C that cancels the running jobs (``run_cancellable``). Shared by the session (``session``) and every
job (``jobs``, ``export``), so neither imports the other for it.
"""
from __future__ import annotations

import os
import re
import threading

from ..errors import CannotRun


class ExecutorProblem(CannotRun):
    """An executor cannot run kafkalog's tasks as asked (pure-Python record path, kafkalog missing)."""


class SparkJobError(CannotRun):
    """A Spark job failed; the message is the gist (the error of the failing task or query)."""


class _spark_errors:
    """Turn pyspark/py4j exceptions into SparkJobError with a short message (naming the partial output
    a failed write left behind, which is never at the final path)."""

    def __init__(self, partial: str | None = None) -> None:
        self.partial = partial

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if exc is None:
            return False
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
        if isinstance(exc, (PySparkException, Py4JError)):
            msg = _gist(exc)
            if "PureExecutorError: " in str(exc):
                raise ExecutorProblem(msg) from exc
            if self.partial and os.path.isdir(self.partial):
                msg += f" (partial output left in {self.partial})"
            raise SparkJobError(msg) from exc
        return False


def run_cancellable(spark, fn):
    """Run ``fn()`` (which runs Spark jobs) in a thread and wait for it here. Ctrl-C then reaches this thread
    outside any call into the JVM: the jobs are cancelled, their tasks end, and KeyboardInterrupt is raised
    again (the command exits 130 with one line). Python's own handler is put back for the wait (pyspark's
    handler cancels from inside whatever JVM call is running, which breaks that call's connection and
    prints py4j tracebacks)."""
    import signal
    out: dict = {}
    done = threading.Event()       # not Thread.is_alive: a join interrupted by Ctrl-C can leave it False

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:        # noqa: BLE001 - handed to the waiting thread
            out["error"] = e
        finally:
            done.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    t = threading.Thread(target=target, name="kafkalog-spark-job", daemon=True)
    t.start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        quiet_py4j()
        try:
            spark.sparkContext.cancelAllJobs()
        except BaseException:             # noqa: BLE001 - the JVM may already be going away; a second Ctrl-C
            pass
        done.wait(20)
        raise
    if "error" in out:
        raise out["error"]
    return out.get("value")


def quiet_py4j() -> None:
    """No log lines from py4j while Spark is being stopped after Ctrl-C (its connections close under it)."""
    import logging
    for name in ("py4j", "py4j.java_gateway", "py4j.clientserver", "root"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _gist(exc) -> str:
    """``_gist_line`` and, when the JVM's chain of causes ends elsewhere (a write that failed on a full disk:
    "TASK_WRITE_FAILED ... Caused by: java.io.IOException: No space left on device"), that root cause."""
    gist = _gist_line(exc)
    causes = re.findall(r"^\s*Caused by: (.+)$", str(exc), re.M)
    if causes:
        root = re.sub(r"^(?:[\w.$]+(?:Exception|Error): )+", "", causes[-1].strip())
        if root and root not in gist:
            gist = f"{gist} (caused by: {root[:500]})"
    return gist


_PY_OS_ERROR = re.compile(r"^\w+Error: \[Errno \d+\] ([^:]+?)(?:: '(.*)')?$")


def _os_words(line: str) -> str:
    """A Python worker's ``OSError: [Errno 28] No space left on device: 'FILE'`` as the system says it
    (``FILE: No space left on device``, as errors.said words an error raised here)."""
    m = _PY_OS_ERROR.match(line)
    if not m:
        return line
    return f"{m.group(2)}: {m.group(1)}" if m.group(2) else m.group(1)


def _gist_line(exc) -> str:
    """The line that says what went wrong: a Python worker's last traceback line, else the failing task's
    own error (after "most recent failure: Lost task ...:"), else the first line."""
    text = str(exc).split("JVM stacktrace:")[0]
    m = re.search(r"PureExecutorError: ([^\n]+)", text)
    if m:
        return m.group(1).strip()
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(("at ", "..."))]
    python = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Unavailable)\b.*:", ln)
              and not ln.startswith(("java.", "javax.", "org.", "scala.", "py4j.protocol.Py4J"))]
    if python:
        return _os_words(python[-1])[:2000]
    m = re.search(r"most recent failure: Lost task [^)]*\)[^:]*: ([^\n]+)", text)
    if m:
        return m.group(1).strip()[:2000]
    for ln in lines:
        if ln.startswith(": "):
            return ln[2:][:2000]
    return (lines[0] if lines else type(exc).__name__)[:2000]
