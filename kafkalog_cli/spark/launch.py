"""The java command ``spark-submit`` runs for a local session, remembered, so that later sessions start the
JVM directly: the bash scripts and Spark's launcher JVM (``org.apache.spark.launcher.Main``, which prints
the command that ``spark-class`` then execs) took 0.2-0.3 s of each start on the benchmark machine.

A session's first start goes through ``spark-submit`` as pyspark runs it. Once the gateway is up, the JVM
(the same process: ``spark-class`` execs it) is read back from ``/proc``: its arguments, and how its
environment differs from the one kafkalog passed (what ``load-spark-env.sh`` and ``conf/spark-env.sh``
set). Both are stored under a key of everything the launcher reads: the arguments, the environment passed,
and the names, sizes and times of the files of Spark's ``bin``, ``conf`` and ``jars`` directories. A later
start with the same key runs that java command with that environment; anything else (another setting,
another Spark or Java, a changed ``spark-defaults.conf``) is another key and goes through ``spark-submit``
again. Where a remembered command fails to start a gateway, the entry is dropped and the start is made
again through ``spark-submit`` (``Session._build``).

Parts that change from run to run are stored as placeholders: the session's work directory (in
``spark.local.dir`` and the log configuration's path) and its process token; pyspark's connection-file
path is the environment's own. A run writing the class-data archive (a path of its own) is neither
remembered nor replayed. Only on Linux (``/proc``), for local masters.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

#: entries kept (the newest): each environment of its own is an entry (a shell's, a scheduler's, a test's)
KEEP = 16
#: environment variables whose values are the run's own, never part of the key nor stored
VOLATILE_ENV = ("_PYSPARK_DRIVER_CONN_INFO_PATH",)
WORKDIR = "\0workdir\0"
TOKEN = "\0token\0"


def cache_dir() -> Path:
    from .jvm import cache_dir as cds
    return cds().parent / "spark-launch"


class LaunchCache:
    """Looked up by ``jvm.Launched`` as pyspark launches ``spark-submit`` (``command``), recorded by the
    session once the gateway is up."""

    def __init__(self, workdir: str, token: str) -> None:
        self.workdir = workdir
        self.token = token
        self.key: str | None = None
        self.used = False                 # the JVM was started from an entry

    def _swap(self, text: str) -> str:
        return text.replace(self.workdir, WORKDIR).replace(self.token, TOKEN)

    def _back(self, text: str) -> str:
        return text.replace(WORKDIR, self.workdir).replace(TOKEN, self.token)

    def _key(self, command: list, env: dict) -> str | None:
        if not command or not command[0].endswith("spark-submit") or not Path("/proc/self").is_dir():
            return None
        if any("ArchiveClassesAtExit" in a for a in command):
            return None                   # this run writes the class-data archive
        home = env.get("SPARK_HOME") or str(Path(command[0]).resolve().parent.parent)
        conf = env.get("SPARK_CONF_DIR") or os.path.join(home, "conf")
        h = hashlib.sha256()
        for part in command:
            h.update(self._swap(part).encode("utf-8", "surrogateescape") + b"\0")
        for name in sorted(env):
            if name not in VOLATILE_ENV:
                h.update(f"{name}={self._swap(env[name])}".encode("utf-8", "surrogateescape") + b"\0")
        for d in (os.path.join(home, "bin"), conf, os.path.join(home, "jars")):
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except OSError:
                h.update(f"{d}:missing\0".encode("utf-8", "surrogateescape"))
                continue
            for e in entries:
                try:
                    st = e.stat()
                except OSError:
                    continue
                h.update(f"{d}/{e.name}:{st.st_size}:{st.st_mtime_ns}\0".encode("utf-8", "surrogateescape"))
        return h.hexdigest()[:24]

    def command_for(self, command: list, env: dict) -> tuple[list, dict] | None:
        """(java command, its environment) remembered for ``command`` run with ``env``, or None."""
        self.key = self._key(command, env)
        if self.key is None:
            return None
        try:
            entry = json.loads((cache_dir() / f"{self.key}.json").read_text())
            argv = [self._back(a) for a in entry["argv"]]
            java = Path(argv[0])
            if java.stat().st_mtime_ns != entry["java_mtime_ns"]:
                return None
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
        try:
            os.utime(cache_dir() / f"{self.key}.json")       # in use: among the newest (``_prune``)
        except OSError:
            pass
        out = {k: v for k, v in env.items() if k not in entry["removed"]}
        out.update({k: self._back(v) for k, v in entry["added"].items()})
        self.used = True
        return argv, out

    def record(self, pid: int, env: dict) -> None:
        """Remember the JVM ``pid`` (started through ``spark-submit`` with ``env``) for this key."""
        if self.key is None or self.used:
            return
        try:
            argv = [a.decode("utf-8", "surrogateescape")
                    for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]]
            pairs = [x.split(b"=", 1) for x in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in x]
            jvm_env = {k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape") for k, v in pairs}
            if not argv or Path(argv[0]).name != "java":
                return
            entry = {"argv": [self._swap(a) for a in argv],
                     "java_mtime_ns": Path(argv[0]).stat().st_mtime_ns,
                     "added": {k: self._swap(v) for k, v in jvm_env.items()
                               if env.get(k) != v and k not in VOLATILE_ENV},
                     "removed": sorted(k for k in env if k not in jvm_env)}
            d = cache_dir()
            d.mkdir(parents=True, exist_ok=True)
            tmp = d / f"{self.key}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(entry))
            os.replace(tmp, d / f"{self.key}.json")
            _prune(d)
        except (OSError, ValueError):
            pass

    def drop(self) -> None:
        """Forget this key's entry (its command did not start a gateway)."""
        if self.key is not None:
            try:
                (cache_dir() / f"{self.key}.json").unlink()
            except OSError:
                pass
        self.used = False


def _prune(d: Path) -> None:
    """Keep the ``KEEP`` newest entries."""
    entries = []
    for p in d.glob("*.json"):
        try:
            entries.append((p.stat().st_mtime_ns, p))
        except OSError:
            pass
    for _t, p in sorted(entries, reverse=True)[KEEP:]:
        try:
            p.unlink()
        except OSError:
            pass
