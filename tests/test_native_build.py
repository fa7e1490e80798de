"""The optional extension: which path runs, how to force the pure one, and a build without a compiler."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkalog_formats import native

from conftest import REPO


def _run(code: str, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.pop(native.PURE_ENV, None)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, cwd=REPO)


def _version(**env) -> str:
    r = _run("from kafkalog_cli.app import main; main(['--version'])", **env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_version_names_the_native_path_when_it_is_built():
    if native.ext is None and native.PURE_ENV not in os.environ:
        pytest.skip(f"the extension is not built here: {native.reason}")
    out = _version()
    assert out.startswith("kafkalog, version ") and "record path: native C extension, CRC-32C " in out


def test_pure_python_env_forces_the_pure_path():
    out = _version(**{native.PURE_ENV: "1"})
    assert "record path: pure Python, KAFKALOG_PURE_PYTHON is set" in out
    r = _run("import sys; from kafkalog_formats import native, columns; "
             "print(native.ACTIVE, native.ext, 'kafkalog_formats._native' in sys.modules)", **{native.PURE_ENV: "1"})
    assert r.stdout.split() == ["pure", "None", "False"], r.stderr


def test_zero_means_not_set():
    r = _run("from kafkalog_formats import native; print(native.ACTIVE)", **{native.PURE_ENV: "0"})
    assert r.stdout.strip() == ("native" if native.ext is not None or native.PURE_ENV in os.environ else "pure")


def test_help_does_not_load_the_extension():
    r = _run("import sys\nfrom kafkalog_cli.app import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print('LOADED' if 'kafkalog_formats._native' in sys.modules else 'NOT LOADED', file=sys.stderr)")
    assert "Usage: kafkalog" in r.stdout and r.stderr.strip().endswith("NOT LOADED"), r.stderr


def test_build_without_a_compiler_succeeds_without_the_extension(tmp_path):
    """setup.py declares the extension optional: a failing compiler is a warning, not a failed install."""
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(tmp_path / "lib"),
                        "--build-temp", str(tmp_path / "tmp")], cwd=REPO, capture_output=True, text=True,
                       env=dict(os.environ, CC="false", LDSHARED="false"))
    assert r.returncode == 0, r.stderr
    assert 'building extension "kafkalog_formats._native" failed' in r.stderr
    assert not list(tmp_path.rglob("_native*.so"))


def test_a_lookup_does_not_import_numpy():
    """numpy costs more than a whole lookup: the index modules import it on first use only."""
    r = _run("import sys\nfrom kafkalog_cli.app import main\ntry:\n"
             "    main(['lookup-offset', 'fixtures/logdir/orders-0', '5'])\nexcept SystemExit:\n    pass\n"
             "print('NUMPY' if 'numpy' in sys.modules else 'NO NUMPY', file=sys.stderr)")
    assert "offset" in r.stdout and r.stderr.strip().endswith("NO NUMPY"), r.stdout + r.stderr


def test_verify_does_not_import_numpys_masked_arrays():
    """numpy 2's ``np.unique`` imports ``numpy.ma`` on its first call (37 ms, a fifth of a small verify's
    run, found profiling the fuzz harness's children): verify's index checks dedupe without it."""
    r = _run("import sys\nfrom kafkalog_cli.app import main\ntry:\n"
             "    main(['verify', 'fixtures/logdir'])\nexcept SystemExit:\n    pass\n"
             "print('MA' if 'numpy.ma' in sys.modules else 'NO MA', file=sys.stderr)")
    assert "verify: passed" in r.stdout and r.stderr.strip().endswith("NO MA"), r.stdout + r.stderr
