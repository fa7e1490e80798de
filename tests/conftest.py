"""Shared test helpers: where fixtures and the real corpus live, and running the CLI in-process."""
from __future__ import annotations

import io
import os
import signal
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
SHARED = Path(os.environ.get("KAFKALOG_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus" / "real"


class Result(NamedTuple):
    code: int
    out: str
    err: str


def run_cli(*args: str, stdout=None) -> Result:
    """Run ``kafkalog ARGS`` in-process through the real entry point (exit-status mapping included).
    ``stdout``: a text stream to write to instead of the one returned (a file, a pipe: its descriptor)."""
    from kafkalog_cli.app import main
    out, err = io.StringIO() if stdout is None else stdout, io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return Result(code, out.getvalue() if stdout is None else "", err.getvalue())


@contextmanager
def lock_held_by_another_process(path: Path):
    """A POSIX lock on ``path`` (created if missing, links followed) held by another process, as a running
    broker holds its log directory's ``.lock``, for the duration of the block."""
    import subprocess
    import sys
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, time\n"
        f"fd = os.open({str(path)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(30)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()


def copy_logdir(dest: Path, metadata: bool = False) -> Path:
    """A copy of ``fixtures/logdir`` at ``dest``. Without ``metadata`` (the default) its ``__cluster_metadata-0``
    is left out: that small metadata log knows only topic ``orders``, so ``retain`` and ``compact`` would
    leave every other partition alone as a stray; without it the copy is a log directory with no topic
    configuration source (Kafka's defaults and flags only)."""
    import shutil
    shutil.copytree(FIXTURES / "logdir", dest,
                    ignore=None if metadata else shutil.ignore_patterns("__cluster_metadata-0"))
    return dest


def json_objects(out: str, kind: str = "partition") -> list[dict]:
    """The JSON-lines objects of ``type`` ``kind`` in a command's output."""
    import json
    return [o for o in map(json.loads, out.splitlines()) if o.get("type") == kind]


def json_partition(out: str) -> dict:
    """The one ``partition`` object of a retain or compact run on one partition."""
    (obj,) = json_objects(out)
    return obj


def flat(text: str) -> str:
    """A report's words with its line breaks and indentation gone: reports wrap at 80 columns, and a test
    asserts on what is said, not on where a line breaks."""
    return " ".join(text.split())


def dry_as_real(out: str) -> str:
    """The partition blocks of a retain or compact --dry-run text report as the real run prints them: without
    the verdict and the run's context (up to the first blank line) and the totals (after the last one), in
    the real run's tense."""
    blocks = out.split("\n\n")
    body = "\n\n".join(blocks[1:-1])
    for dry, real in (("would set", "set"), ("would roll", "rolled"), ("would first", "first"),
                      ("would go", "deleted")):
        body = body.replace(dry, real)
    return body


def corpus_dirs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(),
                                  reason=f"real Kafka corpus not found at {CORPUS} (../shared is absent)")


def skip_unless_selected(config, items, marker: str, reason: str) -> None:
    """Tests marked ``marker`` run only when the ``-m`` expression names it (not negated); otherwise they
    are skipped with ``reason``."""
    import re
    if re.search(rf"(?<!not )\b{re.escape(marker)}\b", config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        # the marker itself: ``item.keywords`` also holds the names of the directories above the test (a
        # checkout in a directory called ``fuzz`` skipped every test)
        if item.get_closest_marker(marker) is not None:
            item.add_marker(skip)


def pytest_collection_modifyitems(config, items):
    """Long fuzz runs (marker ``fuzz``) run only when the marker expression names them (``-m fuzz``), and so
    do the tests of several minutes each (marker ``slow``: the wheel install, the crash matrices, 10 GiB and
    ten-million-header inputs; ``python -m pytest -m slow``, .ci/run's second step), so that the default
    suite takes minutes (docs/testing.md)."""
    skip_unless_selected(config, items, "fuzz", "long fuzz run: select with -m fuzz")
    skip_unless_selected(config, items, "slow", "minutes each: select with -m slow (.ci/run runs them)")


# Groups of tests that skip when a tool is missing (Java, Maven, confluent-kafka, the C build), by the skip
# reasons they give. KAFKALOG_REQUIRE (comma-separated group names; .ci/run sets it for the groups the README
# says run in CI) makes such a skip a failure: a CI machine that lost its JDK must not pass by skipping.
# (A missing pyspark already fails in CI: tests/spark/conftest.py.)
ENVIRONMENT_SKIPS = {
    "kafka": r"^broker tests",                                       # tests/kafka/jars.unavailable_reason
    "native": r"native path not active|extension is not built|an extension is not active",
    "java": r"needs Java",
}


def required_groups() -> list[str]:
    return [g.strip() for g in os.environ.get("KAFKALOG_REQUIRE", "").split(",") if g.strip()]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip whose reason says a required group's tool is missing becomes a failure (``KAFKALOG_REQUIRE``)."""
    outcome = yield
    rep = outcome.get_result()
    groups = required_groups()
    if not rep.skipped or not groups or hasattr(rep, "wasxfail"):
        return
    import re
    reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    reason = reason.removeprefix("Skipped: ")
    for group in groups:
        if group in ENVIRONMENT_SKIPS and re.search(ENVIRONMENT_SKIPS[group], reason):
            rep.outcome = "failed"
            rep.longrepr = (f"{reason}\n(KAFKALOG_REQUIRE={','.join(groups)}: the {group} tests run in CI, so "
                            "this skip is a failure)")
            return


def ctrl_c_default() -> None:
    """In the child before exec: SIGINT's default action, so Python installs its handler. A test run
    started in the background of a shell without job control (``cmd &`` in a script, CI wrappers) has
    SIGINT ignored, inherited by every child: a Ctrl-C test would then wait forever on a process that
    never sees the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
