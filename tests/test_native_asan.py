"""The native parity and fuzz tests again, against AddressSanitizer + UBSan builds of the extensions.

Slow (a separate build, every input under the sanitizer), so it runs only when asked:

    KAFKALOG_ASAN=1 python -m pytest -q tests/test_native_asan.py

It compiles the extensions (``kafkalog_formats._native``, ``kafkalog_cli.render._native_render``,
``kafkalog_cli.repair._native_clean``) with ``KAFKALOG_NATIVE_ASAN=1`` (setup.py: -fsanitize=address,
undefined, no recovery) into a temporary copy of both packages, then runs tests/test_native_parity.py,
tests/test_native_fuzz.py, tests/test_native_commands.py (dump-log, verify, compact and the Spark rows
on both paths) and tests/test_many_headers.py (headers kept as bytes, walked in C over random bytes too)
in a subprocess that imports that build (PYTHONSAFEPATH: the copy, never the work tree;
LD_PRELOAD of the compiler's libasan, leak detection off: CPython itself keeps memory until exit). Any
out-of-bounds read or write, use after free or undefined behaviour aborts the run with the sanitizer's report.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

EXTENSIONS = ("kafkalog_formats._native", "kafkalog_cli.render._native_render", "kafkalog_cli.repair._native_clean")

pytestmark = [pytest.mark.asan,
              pytest.mark.skipif(not os.environ.get("KAFKALOG_ASAN"),
                                 reason="slow: run with KAFKALOG_ASAN=1 (builds the extension with AddressSanitizer)"),
              pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")]


def _libasan() -> str:
    return subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True,
                          check=True).stdout.strip()


#: subprocesses measuring memory, which the sanitizer's shadow memory would multiply
TEN_MILLION_HEADERS = "tests/test_many_headers.py::test_ten_million_headers_stay_within_the_memory_bound"


def test_parity_and_fuzz_inputs_under_address_sanitizer(tmp_path):
    build = tmp_path / "build"
    env = dict(os.environ, KAFKALOG_NATIVE_ASAN="1")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(build / "lib"),
                        "--build-temp", str(build / "tmp")], cwd=REPO, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pkg = tmp_path / "pkg"
    for package, source in (("kafkalog_formats", REPO / "formats"), ("kafkalog_cli", REPO / "kafkalog_cli")):
        shutil.copytree(source, pkg / package,
                        ignore=shutil.ignore_patterns("_native*.so", "__pycache__", "_native_c"))
    built = sorted((build / "lib").rglob("_native*.so"))
    assert len(built) == len(EXTENSIONS), built
    for so in built:
        shutil.copy(so, pkg / so.relative_to(build / "lib"))
    env = dict(os.environ, PYTHONPATH=str(pkg), PYTHONSAFEPATH="1", LD_PRELOAD=_libasan(),
               PYTHONMALLOC="malloc",           # every object in malloc, where the sanitizer sees its bounds
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    env.pop("KAFKALOG_PURE_PYTHON", None)
    probe = subprocess.run([sys.executable, "-c", "import importlib\n"
                            f"for n in {EXTENSIONS}: print(importlib.import_module(n).__file__)"],
                           cwd=REPO, env=env, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert all(f.startswith(str(pkg)) for f in probe.stdout.split()), probe.stdout
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
                        "tests/test_native_parity.py", "tests/test_native_fuzz.py", "tests/test_native_commands.py",
                        "tests/test_many_headers.py", "--deselect", TEN_MILLION_HEADERS],
                       cwd=REPO, env=env, capture_output=True, text=True)
    report = r.stdout[-3000:] + r.stderr[-6000:]
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, report
    assert r.returncode == 0, report
    assert " passed" in r.stdout and " failed" not in r.stdout, report
