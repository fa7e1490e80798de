"""A Python environment for Spark workers that is not the driver's: another CPython 3.11 interpreter
(Debian's /usr/bin/python3.11 where the tests run pyenv's, or the reverse) in its own virtual environment,
with kafkalog's dependencies and without kafkalog. Built once under .venvs/ (git-ignored) and reused while
the dependency list is unchanged (about 30 s with pip's cache, a minute or two without).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENVS = Path(os.environ.get("KAFKALOG_TEST_VENVS", REPO / ".venvs"))


def other_python() -> str | None:
    """A CPython of the driver's minor version (PySpark refuses another) that is not the driver's."""
    want = "python%d.%d" % sys.version_info[:2]
    mine = os.path.realpath(sys.executable)
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    for cand in (f"/usr/bin/{want}", f"/usr/local/bin/{want}", shutil.which(want)):
        if cand and os.path.exists(cand) and os.path.realpath(cand) not in (mine, base):
            r = subprocess.run([cand, "-c", "import venv, ensurepip"], capture_output=True)
            if r.returncode == 0:
                return cand
    return None


def requirements() -> list[str]:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return sorted(deps) + ["pyarrow>=18"]


@contextlib.contextmanager
def venv_lock(env: Path):
    """One process at a time builds or changes the virtual environment ``env``: pytest-xdist's workers share
    .venvs/, and one worker removing an environment another is building or using breaks both."""
    import fcntl
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f".{env.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def worker_env() -> tuple[Path | None, str]:
    """(the environment's bin directory, or None, and why not)."""
    python = other_python()
    if python is None:
        return None, f"no second CPython {sys.version_info[0]}.{sys.version_info[1]} with venv on this machine"
    reqs = requirements()
    key = hashlib.sha256(("\n".join(reqs) + python).encode()).hexdigest()[:12]
    env = VENVS / f"spark-worker-{key}"
    done = env / ".kafkalog-ready"
    with venv_lock(env):
        if done.exists():
            return env / "bin", ""
        shutil.rmtree(env, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(env)], check=True, capture_output=True)
        r = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", *reqs], capture_output=True,
                           text=True, timeout=900)
        if r.returncode != 0:
            return None, f"pip install into the worker environment failed: {r.stderr[-500:]}"
        done.write_text("\n".join(reqs) + "\n")
    return env / "bin", ""


if __name__ == "__main__":
    print(worker_env())
