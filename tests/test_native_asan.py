"""The native parity and fuzz tests again, against an AddressSanitizer + UBSan build of the extension.

Slow (a separate build, every input under the sanitizer), so it runs only when asked:

    KAFKALOG_ASAN=1 python -m pytest -q tests/test_native_asan.py

It compiles ``kafkalog_formats._native`` with ``KAFKALOG_NATIVE_ASAN=1`` (setup.py: -fsanitize=address,
undefined, no recovery) into a temporary package, then runs tests/test_native_parity.py,
tests/test_native_fuzz.py and tests/test_native_commands.py (dump-log, verify, compact and the Spark rows
on both paths) in a subprocess that imports that build (LD_PRELOAD of the compiler's libasan,
leak detection off: CPython itself keeps memory until exit). Any out-of-bounds read or write, use after
free or undefined behaviour aborts the run with the sanitizer's report.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = [pytest.mark.asan,
              pytest.mark.skipif(not os.environ.get("KAFKALOG_ASAN"),
                                 reason="slow: run with KAFKALOG_ASAN=1 (builds the extension with AddressSanitizer)"),
              pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")]


def _libasan() -> str:
    return subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_parity_and_fuzz_inputs_under_address_sanitizer(tmp_path):
    build = tmp_path / "build"
    env = dict(os.environ, KAFKALOG_NATIVE_ASAN="1")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(build / "lib"),
                        "--build-temp", str(build / "tmp")], cwd=REPO, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    so = next((build / "lib" / "kafkalog_formats").glob("_native*.so"))
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "formats", pkg / "kafkalog_formats",
                    ignore=shutil.ignore_patterns("_native*.so", "__pycache__", "_native_c"))
    shutil.copy(so, pkg / "kafkalog_formats" / so.name)
    (pkg / "kafkalog_cli").symlink_to(REPO / "kafkalog_cli")
    env = dict(os.environ, PYTHONPATH=str(pkg), LD_PRELOAD=_libasan(),
               PYTHONMALLOC="malloc",           # every object in malloc, where the sanitizer sees its bounds
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    env.pop("KAFKALOG_PURE_PYTHON", None)
    probe = subprocess.run([sys.executable, "-c", "import kafkalog_formats._native as n; print(n.__file__)"],
                           env=env, capture_output=True, text=True)
    assert probe.returncode == 0 and probe.stdout.strip().startswith(str(pkg)), probe.stdout + probe.stderr
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        "tests/test_native_parity.py", "tests/test_native_fuzz.py", "tests/test_native_commands.py"],
                       cwd=REPO, env=env, capture_output=True, text=True)
    report = r.stdout[-3000:] + r.stderr[-6000:]
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, report
    assert r.returncode == 0, report
    assert " passed" in r.stdout and " failed" not in r.stdout, report
