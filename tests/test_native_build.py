"""The optional extensions (one per layer): which path runs, how to force the pure one, a build without a
compiler, and what each exports."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafkalog_formats import native

from conftest import REPO

EXTENSIONS = ("kafkalog_formats._native", "kafkalog_cli.render._native_render", "kafkalog_cli.repair._native_clean")


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
    from kafkalog_cli.render import native_lines
    from kafkalog_cli.repair import native_clean
    for line, seam in zip(out.splitlines()[1:], (native_lines, native_clean), strict=True):
        assert line.endswith("native C extension" if seam.ext is not None else seam.reason), out


def test_pure_python_env_forces_the_pure_path():
    out = _version(**{native.PURE_ENV: "1"})
    assert "record path: pure Python, KAFKALOG_PURE_PYTHON is set" in out
    assert out.splitlines()[1:] == ["dump-log line writers: pure Python, KAFKALOG_PURE_PYTHON is set",
                                    "compact offset map: pure Python, KAFKALOG_PURE_PYTHON is set"]
    r = _run("import sys; from kafkalog_formats import native, columns\n"
             "from kafkalog_cli.render import native_lines\nfrom kafkalog_cli.repair import native_clean\n"
             "print(native.ACTIVE, native.ext, native_lines.ext, native_clean.ext, "
             f"any(m in sys.modules for m in {EXTENSIONS}))",
             **{native.PURE_ENV: "1"})
    assert r.stdout.split() == ["pure", "None", "None", "None", "False"], r.stderr


def test_zero_means_not_set():
    r = _run("from kafkalog_formats import native; print(native.ACTIVE)", **{native.PURE_ENV: "0"})
    assert r.stdout.strip() == ("native" if native.ext is not None or native.PURE_ENV in os.environ else "pure")


def test_help_does_not_load_the_extension():
    r = _run("import sys\nfrom kafkalog_cli.app import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
             f"print('LOADED' if any(m in sys.modules for m in {EXTENSIONS}) else 'NOT LOADED', file=sys.stderr)")
    assert "Usage: kafkalog" in r.stdout and r.stderr.strip().endswith("NOT LOADED"), r.stderr


def test_build_without_a_compiler_succeeds_without_the_extension(tmp_path):
    """setup.py declares every extension optional: a failing compiler is a warning, not a failed install."""
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(tmp_path / "lib"),
                        "--build-temp", str(tmp_path / "tmp")], cwd=REPO, capture_output=True, text=True,
                       env=dict(os.environ, CC="false", LDSHARED="false"))
    assert r.returncode == 0, r.stderr
    for name in EXTENSIONS:
        assert f'building extension "{name}" failed' in r.stderr
    assert not list(tmp_path.rglob("_native*.so"))


def test_each_layers_extension_exports_its_own_functions_only():
    """The format layer's extension knows nothing of rendering or cleaning: dump-log's line writers are in
    ``kafkalog_cli.render._native_render``, the offset map and MD5 in ``kafkalog_cli.repair._native_clean``;
    no function is exported by two of them (shared C sources are compiled into each, never exported twice)."""
    import importlib
    import re
    from kafkalog_cli.render import native_lines
    from kafkalog_cli.repair import native_clean
    seams = (native, native_lines, native_clean)
    if any(s.ext is None for s in seams):
        pytest.skip(f"an extension is not active here: {[s.reason for s in seams]}")
    exported = {name: {n for n in dir(importlib.import_module(name)) if not n.startswith("__")} for name in EXTENSIONS}
    formats, render, clean = exported.values()
    layout = {"LAYOUT_VERSION", "NB", "NR", "NH"}
    assert {"scan", "records", "crc32c", "coordinator_texts", "gather", "batch_sound"} <= formats
    assert render - layout == {"render_text", "render_json"}
    assert {"OffsetMap", "map_put_run", "clean_run", "keep_batch", "md5_many"} <= clean
    assert not (formats & (render | clean)) - layout and not (render & clean) - layout
    assert not [n for n in formats if re.search(r"render|offset_?map|md5|clean|keep|map_put", n, re.I)]
    assert native_clean.ext.OffsetMap.__module__ == "kafkalog_cli.repair._native_clean"


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
