"""The Spark extra stays optional: the rest of the CLI never imports it, and export/scan say what is
missing (Java, a Java too old for Spark 4, pyspark) with exit status 3 instead of a traceback."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO

SPARK_MODULES = ("pyspark", "pyarrow", "py4j", "pandas")


def run_python(code: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("argv", [["--help"], ["export", "--help"], ["scan", "--help"],
                                  ["dump-log", "--format", "json", str(FIXTURES / "logdir" / "orders-0")],
                                  ["verify", str(FIXTURES / "logdir")]])
def test_spark_modules_are_not_imported_outside_export_and_scan(argv):
    code = ("import io, sys, contextlib\nfrom kafkalog_cli.app import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SPARK_MODULES!r}))")
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"


def cli(args: list[str], env: dict, prelude: str = "") -> subprocess.CompletedProcess:
    code = f"{prelude}\nfrom kafkalog_cli.app import main\nmain({args!r})"
    return run_python(code, env=env, cwd=REPO)


@pytest.mark.parametrize("command", ["export", "scan"])
def test_missing_java(command, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)
    out = tmp_path / "out"
    r = cli([command, str(FIXTURES / "logdir"), "--output", str(out)], env)
    assert r.returncode == 3
    assert "Java is not installed" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_java_too_old(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "java").write_text('#!/bin/sh\necho \'openjdk version "11.0.22" 2024-01-16\' >&2\n')
    (fake / "java").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = f"{fake}{os.pathsep}{Path(sys.executable).parent}"
    r = cli(["export", str(FIXTURES / "logdir"), "-o", str(tmp_path / "out")], env)
    assert r.returncode == 3 and "is Java 11; Spark 4 needs Java 17 or newer" in r.stderr, r.stderr


def test_java_too_old_by_its_release_file(tmp_path):
    """The runtime's ``release`` file is read before any JVM is started: here it says 11 while the binary
    would answer 17, and the run is refused for Java 11."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text('#!/bin/sh\necho \'openjdk version "17.0.15" 2025-04-15\' >&2\n')
    (home / "bin" / "java").chmod(0o755)
    (home / "release").write_text('IMPLEMENTOR="Test"\nJAVA_VERSION="11.0.22"\nOS_NAME="Linux"\n')
    env = dict(os.environ, JAVA_HOME=str(home))
    r = cli(["export", str(FIXTURES / "logdir"), "-o", str(tmp_path / "out")], env)
    assert r.returncode == 3 and "is Java 11; Spark 4 needs Java 17 or newer" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, major", [('JAVA_VERSION="17.0.15"', 17), ('JAVA_VERSION="1.8.0_392"', 8),
                                         ('JAVA_VERSION="25"', 25), ('IMPLEMENTOR="x"', None)])
def test_release_file_versions(tmp_path, text, major):
    from kafkalog_cli.spark.session import release_version
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("")
    (tmp_path / "release").write_text(f'IMPLEMENTOR="x"\n{text}\n')
    assert release_version(str(tmp_path / "bin" / "java")) == major
    (tmp_path / "release").unlink()
    assert release_version(str(tmp_path / "bin" / "java")) is None


@pytest.mark.parametrize("command", ["scan", "export"])
@pytest.mark.parametrize("module", ["pyspark", "pyarrow"])
def test_missing_pyspark_or_pyarrow(command, module, tmp_path):
    out = tmp_path / "out"
    r = cli([command, str(FIXTURES / "logdir"), "--output", str(out)], dict(os.environ),
            prelude=f"import sys; sys.modules[{module!r}] = None")
    assert r.returncode == 3, r.stderr
    assert r.stderr.splitlines()[-1].startswith(f"kafkalog: {module} is not installed")
    assert "pip install 'kafkalog[spark]'" in r.stderr and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1
    assert not out.exists()


@pytest.mark.parametrize("command", ["scan", "export"])
def test_pyarrow_that_cannot_be_imported_says_why(command, tmp_path):
    """pyspark 3.5's sql extra pins numpy<2, beside which pyarrow 26 does not import ("pyarrow requires NumPy
    2.0 or newer"): the command names that cause, not "pyarrow is not installed". numpy reports 1.26.4 here,
    and pyarrow's own import check refuses it."""
    out = tmp_path / "out"
    r = cli([command, str(FIXTURES / "logdir"), "--output", str(out)], dict(os.environ),
            prelude="import numpy; numpy.__version__ = '1.26.4'")
    assert r.returncode == 3, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("kafkalog: pyarrow is installed but cannot be imported: pyarrow requires NumPy 2.0 "
                               "or newer, found 1.26.4"), lines[0]
    assert not out.exists()
