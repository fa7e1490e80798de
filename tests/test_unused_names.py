"""Dead names do not come back: pyflakes over the library (``kafkalog_cli/``, ``formats/``) finds no unused
import and no local variable assigned but never read, and over ``tests/`` no test function defined twice in
one module (the first copy never runs: a test that cannot fail). A line marked ``# noqa`` (bare, or naming
the pyflakes code: F401 an import kept on purpose, such as a re-export or an import for its side effect;
F841) is exempt. Skipped when pyflakes is missing (it is in the test extra)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytest.importorskip("pyflakes")
from pyflakes import checker, messages  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z0-9, ]+))?", re.IGNORECASE)
_CODES = {messages.UnusedImport: "F401", messages.UnusedVariable: "F841"}


def _reports(roots: list[str], wanted) -> list[str]:
    """``path:line: message`` for each pyflakes message ``wanted(message)`` accepts, outside ``# noqa`` lines."""
    out = []
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            lines = source.splitlines()
            for msg in checker.Checker(ast.parse(source, str(path)), filename=str(path)).messages:
                if not wanted(msg):
                    continue
                noqa = _NOQA.search(lines[msg.lineno - 1]) if msg.lineno <= len(lines) else None
                if noqa and (not noqa["codes"] or _CODES[type(msg)] in noqa["codes"].upper()):
                    continue
                out.append(f"{path.relative_to(REPO)}:{msg.lineno}: {msg.message % msg.message_args}")
    return out


def test_the_library_has_no_unused_import_or_variable():
    found = _reports(["kafkalog_cli", "formats"],
                     lambda m: isinstance(m, (messages.UnusedImport, messages.UnusedVariable)))
    assert found == [], "\n".join(found)


def test_no_test_function_is_defined_twice():
    found = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for scope in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            seen: dict[str, int] = {}
            for node in scope.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                    if node.name in seen:
                        found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.name} again (first at line "
                                     f"{seen[node.name]}): only the last definition runs")
                    seen.setdefault(node.name, node.lineno)
    assert found == [], "\n".join(found)
