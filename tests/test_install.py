"""What a user installs is what we test (issue 23): a wheel and an sdist built from the tracked files (as
a clean clone has them), a wheel built from that sdist (the C sources must travel with it), and the
wheel installed into a new virtual environment with no source tree on ``sys.path``, where every
subcommand runs on a copy of the bundled fixtures.

The new environment gets kafkalog's declared dependencies only: the distributions its wheel's
``Requires-Dist`` names (and theirs, recursively), taken from this environment and linked into a
directory of their own, so a module kafkalog imports without declaring it fails here as it would for a
user (the test environment's other packages, pytest's included, are not visible). With the Spark
extra's distributions present here and Java on PATH, a second environment adds the extra and runs
``export`` and ``scan`` for real; the first one, without the extra, must answer them in one line
naming the extra, exit 3.

Slow (two isolated builds, about a minute or two): marked ``slow``, in the default run of .ci/run.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import FIXTURES, REPO

pytestmark = pytest.mark.slow


def _tracked_files() -> list[str]:
    done = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout: the tracked files (what a clean clone holds) are unknown")
    return [f for f in done.stdout.decode().split("\0") if f and (REPO / f).is_file()]


def _build(args: list[str], cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "build", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """{"tree": wheel built from the tracked files, "sdist": the sdist, "from_sdist": its wheel, "src": the
    copied tree}."""
    pytest.importorskip("build", reason="the test extra's 'build' is not installed (pip install -e '.[test]')")
    top = tmp_path_factory.mktemp("pkg")
    src = top / "src"
    for name in _tracked_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    _build(["--wheel", "--outdir", str(top / "tree"), "."], src)           # wheel straight from the tree
    _build(["--outdir", str(top / "sdist"), "."], src)                     # sdist, then a wheel from it
    (tree,) = (top / "tree").glob("*.whl")
    (sdist,) = (top / "sdist").glob("*.tar.gz")
    (from_sdist,) = (top / "sdist").glob("*.whl")
    return {"tree": tree, "sdist": sdist, "from_sdist": from_sdist, "src": src}


def _wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return {n for n in z.namelist() if ".dist-info/" not in n}


def test_the_wheel_holds_every_module_of_the_tree(built):
    """Package discovery, not a hand list: every tracked module of kafkalog_cli/ and formats/ is in the
    wheel (formats/ as kafkalog_formats), and so are the man pages and the data source module."""
    names = _wheel_names(built["tree"])
    expected = set()
    for f in _tracked_files():
        if f.endswith(".py") and f.startswith("kafkalog_cli/"):
            expected.add(f)
        elif f.endswith(".py") and f.startswith("formats/"):
            expected.add("kafkalog_formats/" + f[len("formats/"):])
    assert "kafkalog_cli/engine/diff/__init__.py" in expected
    assert expected - names == set(), f"modules missing from the wheel: {sorted(expected - names)}"
    assert "pyspark_kafkalog.py" in names
    pages = {p.name for p in (REPO / "man").glob("*.1")}
    assert {n.rsplit("/", 1)[1] for n in names if "/share/man/man1/" in n} == pages
    assert not any(n.startswith(("tests/", "tools/", "fixtures/", "formats/")) for n in names)
    assert not any("/_native_c/" in n for n in names), "C sources in the wheel (they belong to the sdist)"


def test_the_sdist_builds_the_same_wheel_with_the_c_sources(built):
    with tarfile.open(built["sdist"]) as t:
        members = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    sources = {f for f in _tracked_files() if "/_native_c/" in f}         # every layer's extension
    assert {f.split("/_native_c/")[0] for f in sources} == {"formats", "kafkalog_cli/render", "kafkalog_cli/repair"}
    assert sources <= members, f"C sources missing from the sdist: {sorted(sources - members)}"
    assert {"setup.py", "pyproject.toml", "README.md", "MANIFEST.in"} <= members
    assert _wheel_names(built["from_sdist"]) == _wheel_names(built["tree"])
    if shutil.which("cc") or shutil.which("gcc"):                       # a compiler: the extensions are built
        wheel = _wheel_names(built["from_sdist"])
        for so in ("kafkalog_formats/_native", "kafkalog_cli/render/_native_render",
                   "kafkalog_cli/repair/_native_clean"):
            assert any(re.match(so + r"\..*\.so$", n) for n in wheel), f"{so} is not in the wheel"


# --- the installed wheel in a new virtual environment ------------------------------------------------


def _declared_closure(requirements: list[str], extras: set[str]) -> list[metadata.Distribution]:
    """The distributions of this environment that ``requirements`` (Requires-Dist lines of kafkalog, with
    ``extras`` of kafkalog selected) need, recursively. Missing ones: pytest.skip naming them."""
    env = default_environment()
    seen: dict[str, metadata.Distribution] = {}
    todo = [(r, extras) for r in requirements]
    while todo:
        line, chosen = todo.pop()
        req = Requirement(line)
        if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in chosen | {""}):
            continue
        key = canonicalize_name(req.name)
        if key in seen:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{req.name} (a dependency kafkalog declares) is not installed in the test environment")
        seen[key] = dist
        todo.extend((r, set(req.extras)) for r in dist.requires or [])
    return list(seen.values())


def _link_dependencies(dists: list[metadata.Distribution], dest: Path) -> None:
    """Link each distribution's top-level entries (packages, modules, .libs, its .dist-info) into
    ``dest``: a site directory holding exactly those distributions."""
    dest.mkdir(parents=True)
    for dist in dists:
        root = Path(dist.locate_file(""))
        for f in dist.files or []:
            parts = Path(f).parts
            if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith(".pth"):
                continue
            top = parts[0]
            if not (dest / top).exists() and (root / top).exists():
                os.symlink(root / top, dest / top)


def _wheel_requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def _venv(base: Path, wheel: Path, extras: set[str]) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(base)], check=True, timeout=300)
    deps = base / "deps"
    _link_dependencies(_declared_closure(_wheel_requirements(wheel), extras), deps)
    site = subprocess.run([str(base / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "kafkalog-test-dependencies.pth").write_text(f"{deps}\n")   # after site-packages on sys.path
    done = subprocess.run([str(base / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return base


class Installed:
    """The ``kafkalog`` of a virtual environment, run from a directory outside the source tree."""

    def __init__(self, venv: Path, cwd: Path) -> None:
        self.venv, self.cwd = venv, cwd
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        self.env.update(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", COLUMNS="80",
                        PYTHONDONTWRITEBYTECODE="1")

    def run(self, *args: str, code: int | tuple = 0, env: dict | None = None, timeout: int = 300):
        done = subprocess.run([str(self.venv / "bin" / "kafkalog"), *args], cwd=self.cwd, capture_output=True,
                              text=True, timeout=timeout, env={**self.env, **(env or {})})
        codes = (code,) if isinstance(code, int) else code
        assert done.returncode in codes, f"kafkalog {' '.join(args)}: {done.returncode}\n{done.stdout[-2000:]}" \
                                         f"\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, done.stderr
        return done


@pytest.fixture(scope="module")
def core(built, tmp_path_factory) -> Installed:
    top = tmp_path_factory.mktemp("venv-core")
    return Installed(_venv(top / "v", built["tree"], set()), top)


def test_installed_kafkalog_is_the_wheel_not_the_tree(core):
    code = ("import json, sys, kafkalog_cli, kafkalog_formats, kafkalog_cli.engine.diff;"
            "print(json.dumps([kafkalog_cli.__file__, kafkalog_formats.__file__, sys.path]))")
    done = subprocess.run([str(core.venv / "bin" / "python"), "-c", code], cwd=core.cwd, capture_output=True,
                          text=True, env=core.env, check=True)
    cli_file, formats_file, path = json.loads(done.stdout)
    assert cli_file.startswith(str(core.venv)) and formats_file.startswith(str(core.venv))
    assert not any(Path(p).resolve() == REPO.resolve() for p in path if p)
    version = core.run("--version").stdout
    assert "record path:" in version
    if shutil.which("cc") or shutil.which("gcc"):       # a compiler built the wheel's extensions: they are used
        assert "record path: native C extension" in version, version
        assert "dump-log line writers: native C extension" in version, version
        assert "compact offset map: native C extension" in version, version


def _commands() -> set[str]:
    from kafkalog_cli.app import COMMANDS
    return set(COMMANDS)


def test_every_subcommand_runs_from_the_installed_wheel(core, tmp_path):
    """Every command of ``kafkalog --help`` on a copy of the bundled log directory: the read commands, the
    dry runs, a real recover, retain, compact and delete-records, diff, man, completion (export and scan:
    the next tests)."""
    logdir = tmp_path / "logdir"
    shutil.copytree(FIXTURES / "logdir", logdir)
    damaged = FIXTURES / "damaged" / "flipped-crc-byte" / "orders-0"
    ran: set[str] = set()

    def kafkalog(*args, code=0):
        ran.add(args[0])
        return core.run(*args, code=code)

    listed = set(re.findall(r"^  ([a-z][a-z-]*)  ", core.run("--help").stdout, re.M))
    assert listed == _commands()
    for name in sorted(listed):
        kafkalog(name, "--help")
    out = kafkalog("dump-log", "--deep-iteration", "--print-data-log", str(logdir / "payments-0")).stdout
    assert "baseOffset" in out
    kafkalog("dump-log", "--format", "json", "--decoder", "auto", "--print-data-log", str(logdir))
    kafkalog("verify", str(logdir))
    kafkalog("verify", "--format", "junit", str(damaged), code=1)
    kafkalog("lookup-offset", str(logdir / "orders-0"), "5")
    kafkalog("lookup-time", str(logdir / "orders-0"), "1700000010000")
    kafkalog("diff", str(logdir / "orders-0"), str(damaged), code=1)     # they diverge
    kafkalog("recover", "--dry-run", str(logdir), code=(0, 1))
    kafkalog("retain", "--dry-run", "--all", str(logdir), code=(0, 1))
    kafkalog("compact", "--dry-run", "--all", str(logdir), code=(0, 1))
    kafkalog("delete-records", "--dry-run", "--offset", "orders-0=10", str(logdir))
    backup = tmp_path / "backup"
    kafkalog("recover", "--backup-dir", str(backup), str(logdir), code=(0, 1))
    kafkalog("retain", "--retention-ms", "20000", "--now", "1700000050000", "--backup-dir", str(backup),
             "--partition", "orders-0", str(logdir))
    kafkalog("compact", "--force", "--config", "cleanup.policy=compact", "--now", "1900000000000",
             "--backup-dir", str(backup), "--partition", "payments-0", str(logdir))
    kafkalog("delete-records", "--offset", "orders-1=10", "--backup-dir", str(backup), str(logdir))
    kafkalog("verify", str(logdir))                          # what the writers left is valid
    where = kafkalog("man", "--path", "recover").stdout.strip()
    assert where.startswith(str(core.venv)), where           # the installed page, not the tree's
    assert "kafkalog-recover" in kafkalog("man", "recover").stdout
    if shutil.which("man"):                                  # man(1) finds the installed pages by PATH
        env = {k: v for k, v in core.env.items() if k != "MANPATH"}
        found = subprocess.run(["man", "-w", "kafkalog-recover"], capture_output=True, text=True, env=env)
        assert found.returncode == 0 and found.stdout.startswith(str(core.venv)), found.stdout + found.stderr
    assert "_KAFKALOG_COMPLETE" in kafkalog("completion", "bash").stdout
    answer = core.run(env={"_KAFKALOG_COMPLETE": "bash_complete", "COMP_WORDS": "kafkalog dump",
                           "COMP_CWORD": "1"})
    assert "dump-log" in answer.stdout
    ran |= {"export", "scan"}                                # test_export_and_scan_* below
    assert ran == _commands()


def _spark_extra_here() -> str | None:
    """Why the Spark extra cannot be installed into a new environment here, or None when it can."""
    if shutil.which("java") is None:
        return "Java is not on PATH"
    for name in ("pyspark", "pyarrow", "pandas"):
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return f"{name} (the Spark extra) is not installed in the test environment"
    return None


def test_export_and_scan_without_the_spark_extra_say_so_in_one_line(core, tmp_path):
    """The environment without the Spark extra: one line naming the extra to install, exit 3."""
    for args in (["export", str(FIXTURES / "logdir"), "--output", str(tmp_path / "out")],
                 ["scan", str(FIXTURES / "logdir")]):
        done = core.run(*args, code=3)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "kafkalog[spark]" in lines[0], done.stderr
        assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_export_and_scan_with_the_spark_extra(built, tmp_path_factory):
    """Decided by what this environment holds: the Spark extra's distributions (pyspark, pyarrow, pandas)
    and Java on PATH. Then a second environment gets the wheel with the extra, and export and scan run
    on the bundled log directory."""
    why = _spark_extra_here()
    if why:
        pytest.skip(why)
    top = tmp_path_factory.mktemp("venv-spark")
    spark = Installed(_venv(top / "v", built["tree"], {"spark"}), top)
    out = top / "records"
    spark.run("export", str(FIXTURES / "logdir"), "--output", str(out), "--output-format", "json", timeout=600)
    # the data files (Spark's convention: a name starting with _ is the job's metadata, here the manifest)
    rows = [json.loads(line) for f in sorted(out.rglob("*.json")) if not f.name.startswith("_")
            for line in f.read_text().splitlines()]
    assert any(r.get("topic") == "orders" for r in rows)
    done = spark.run("scan", str(FIXTURES / "logdir"), timeout=600)
    assert done.stdout.startswith("verify: passed")
