"""What runs first in every kafkalog task on an executor: find kafkalog there, and say which record path runs.

This module imports nothing of kafkalog and is pickled *by value* into each job (``by_value``), so an
executor can run it before kafkalog is importable. ``ensure`` picks, once per Python worker process:

1. kafkalog installed in the executors' Python (a wheel, a packed environment, a container image), when
   its Python sources are the driver's (same fingerprint): the installed package is used as it is,
   compiled extension included; it is never hidden by a copy;
2. otherwise the copy the driver shipped with ``spark.archives`` (``SHIPPED``: the driver's installed
   ``kafkalog_formats`` with its compiled extension, ``kafkalog_cli`` and ``pyspark_kafkalog``), put
   first on ``sys.path``; its extension loads where the executors run the driver's CPython minor
   version (which PySpark requires anyway) on the same platform.

The task's own arguments are pickled bytes, unpickled only after that, so nothing of kafkalog is needed
to start a task. ``report`` says where kafkalog came from and which record path is active; a task on an
executor whose record path is the pure-Python one raises ``PureExecutorError`` unless the driver allowed it.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import socket
import sys

SHIPPED = "kafkalog-dist"            # the archive's directory in each executor's working directory
PACKAGES = ("kafkalog_formats", "kafkalog_cli")
MODULES = ("pyspark_kafkalog",)
_STATE = "_kafkalog_executor_state"  # a module in sys.modules: survives between tasks of a worker process


class PureExecutorError(Exception):
    """An executor would run the pure-Python record path (7-8x slower) and the driver did not allow it."""


def source_files() -> list[tuple[str, str]]:
    """(name inside the project, absolute path) of kafkalog's Python sources as installed here; [] when
    kafkalog is not importable. Found without importing it."""
    files = []
    for pkg in PACKAGES:
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            return []
        root = list(spec.submodule_search_locations)[0]
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.startswith("_native_c"))
            for n in names:
                if n.endswith(".py"):
                    full = os.path.join(d, n)
                    files.append((pkg + "/" + os.path.relpath(full, root).replace(os.sep, "/"), full))
    for mod in MODULES:
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            files.append((mod + ".py", spec.origin))
    return sorted(files)


def fingerprint(files: list[tuple[str, str]] | None = None) -> str | None:
    """sha256 over the names and contents of kafkalog's Python sources (the compiled extension is not
    part of it: each installation builds its own, checked by ``kafkalog_formats.native``)."""
    files = source_files() if files is None else files
    if not files:
        return None
    h = hashlib.sha256()
    for name, path in files:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        h.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:16]


def _shipped_dir() -> str | None:
    candidates = [os.path.join(os.getcwd(), SHIPPED)]
    try:
        from pyspark import SparkFiles
        candidates.append(os.path.join(SparkFiles.getRootDirectory(), SHIPPED))
    except Exception:                 # noqa: BLE001 - no SparkFiles (outside a task): the cwd is enough
        pass
    for c in candidates:
        if os.path.isdir(os.path.join(c, "kafkalog_cli")):
            return c
    return None


def _forget_kafkalog() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in PACKAGES + MODULES:
            del sys.modules[name]


def ensure(want: str | None) -> dict:
    """Make kafkalog importable in this worker process (installed, else shipped); the report (cached)."""
    state = sys.modules.get(_STATE)
    if state is not None and state.want == want:
        return state.report
    installed = fingerprint()
    if installed is not None and (want is None or installed == want):
        source = "installed"
    else:
        shipped = _shipped_dir()
        if shipped is None:
            why = ("is not installed in the executors' Python" if installed is None else
                   "installed in the executors' Python is another version than the driver's")
            return _remember(want, {"ok": False, "source": None,
                                    "problem": f"kafkalog {why} and no copy was shipped (spark.archives)"})
        _forget_kafkalog()
        if shipped in sys.path:
            sys.path.remove(shipped)
        sys.path.insert(0, shipped)
        importlib.invalidate_caches()
        source = "shipped"
    try:
        native = importlib.import_module("kafkalog_formats.native")
        report = {"ok": True, "source": source, "path": native.ACTIVE, "reason": native.reason}
        if native.ext is None and native.reason == "the C extension is not built":
            try:
                importlib.import_module("kafkalog_formats._native")
            except ImportError as e:           # say why it did not load (another Python, platform, libc)
                report["reason"] = f"its compiled extension does not load here ({e})"
        report["package"] = os.path.dirname(native.__file__)
    except Exception as e:                     # noqa: BLE001 - a missing dependency (numpy ...): say which
        report = {"ok": False, "source": source, "problem": f"kafkalog cannot be imported ({type(e).__name__}: {e})"}
    return _remember(want, report)


def _remember(want, report: dict) -> dict:
    import types
    report = dict(report, host=socket.gethostname(), python=sys.executable,
                  python_version="%d.%d.%d" % sys.version_info[:3], cwd=os.getcwd())
    state = types.ModuleType(_STATE)
    state.want, state.report = want, report
    sys.modules[_STATE] = state
    return report


def problem(report: dict, allow_pure: bool) -> str | None:
    """The one line that says why this executor must not run kafkalog's tasks (None: it may)."""
    where = f"executor {report.get('host')} ({report.get('python')}, Python {report.get('python_version')})"
    if not report.get("ok"):
        return f"{where}: {report.get('problem')}"
    if report.get("path") != "native" and not allow_pure:
        return (f"{where} would run the pure-Python record path ({report.get('reason')}); install kafkalog with "
                "its compiled extension in the executors' Python (README: Spark on a cluster), or pass "
                "--allow-pure-executors to accept a read 7-8x slower")
    return None


def probe(want: str | None, _index) -> dict:
    """Warm-up task: kafkalog found, its task modules imported, the report."""
    report = ensure(want)
    if report.get("ok"):
        try:
            for m in ("pyarrow.parquet", "kafkalog_cli.engine.verify_segment", "kafkalog_cli.spark.export",
                      "kafkalog_cli.spark.rows", "kafkalog_cli.spark.writer"):
                importlib.import_module(m)
            try:                      # pyarrow imports pandas the first time it converts numpy arrays
                importlib.import_module("pandas")
            except ImportError:
                pass
        except Exception as e:                 # noqa: BLE001
            report = dict(report, ok=False, problem=f"kafkalog cannot be imported ({type(e).__name__}: {e})")
    return report


def call(want: str | None, allow_pure: bool, target: str, args_blob: bytes, item_blob: bytes):
    """Run ``target`` (``module:function``) on a task's item: kafkalog located and checked first."""
    import pickle
    report = ensure(want)
    line = problem(report, allow_pure)
    if line is not None:
        raise PureExecutorError(line)
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    return fn(*pickle.loads(args_blob), pickle.loads(item_blob))


def by_value() -> None:
    """Pickle this module's functions by value (cloudpickle), so executors need not import kafkalog to
    run them."""
    from pyspark import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
