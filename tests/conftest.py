"""Shared test helpers: where fixtures and the real corpus live, and running the CLI in-process."""
from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout
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


def run_cli(*args: str) -> Result:
    """Run ``kafkalog ARGS`` in-process through the real entry point (exit-status mapping included)."""
    from kafkalog_cli.app import main
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return Result(code, out.getvalue(), err.getvalue())


def corpus_dirs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(),
                                  reason=f"real Kafka corpus not found at {CORPUS} (../shared is absent)")


def pytest_collection_modifyitems(config, items):
    """Long fuzz runs (marker ``fuzz``) run only when the marker expression names them (``-m fuzz``)."""
    import re
    if re.search(r"(?<!not )\bfuzz\b", config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="long fuzz run: select with -m fuzz")
    for item in items:
        if "fuzz" in item.keywords:
            item.add_marker(skip)
