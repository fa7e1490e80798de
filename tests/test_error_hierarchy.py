"""One error hierarchy, mapped to exit statuses in one place (issue 25; ``kafkalog_cli/errors.py``), checked on
the source with ``ast`` as tests/test_architecture.py checks the layering:

* every exception class defined under ``kafkalog_cli`` derives from ``KafkalogError`` (whose ``status`` is
  its exit status), unless it is listed below with the reason it never reaches ``app.main``;
* one problem type, ``engine/findings.Finding`` (``OTHER_PROBLEM_TYPES`` says why the rest are not);
* no command calls ``sys.exit`` or returns an exit status of an error (2, 3): it raises, and ``app.main``
  writes the one line and ends with the status. A command returns only the status of a completed report
  (0 or 1).
"""
from __future__ import annotations

import ast
import builtins
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "kafkalog_cli"

#: exception classes that are not KafkalogErrors, each with why it never reaches app.main
INTERNAL = {
    "kafkalog_cli/spark/bootstrap.py:PureExecutorError":
        "raised on an executor by a module that imports nothing of kafkalog (it runs before kafkalog is "
        "importable there); the driver turns its line into ExecutorProblem (a CannotRun)",
    "kafkalog_cli/engine/transactions.py:_Stop":
        "control flow inside one partition's replay: caught in the same module and turned into a Finding "
        "(the coordinator's load stops there); it never leaves engine/transactions.py",
}


def _classes() -> dict[str, tuple[str, list[str]]]:
    """``file:Class`` -> (class name, names of its bases) for every class under kafkalog_cli/."""
    out = {}
    for f in sorted(CLI.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                out[f"{f.relative_to(ROOT)}:{node.name}"] = (node.name, bases)
    return out


CLASSES = _classes()


def _exception_classes() -> dict[str, set[str]]:
    """``file:Class`` -> every class name it derives from (transitively, by name), for exception classes."""
    by_name: dict[str, list[str]] = {}
    for name, bases in CLASSES.values():
        by_name.setdefault(name, []).extend(bases)

    def ancestors(name: str, seen: frozenset = frozenset()) -> set[str]:
        out = set()
        for b in by_name.get(name, []):
            if b not in seen:
                out |= {b} | ancestors(b, seen | {name})
        return out

    def builtin_exception(name: str) -> bool:
        obj = getattr(builtins, name, None)
        return isinstance(obj, type) and issubclass(obj, BaseException)

    found = {key: ancestors(name) for key, (name, _b) in CLASSES.items()}
    return {key: anc for key, anc in found.items() if any(builtin_exception(a) for a in anc)}


def test_the_scan_sees_the_exception_classes():
    """The scan finds exception classes, through their bases too (a test of the test's own reading)."""
    found = _exception_classes()
    assert "KafkalogError" in found["kafkalog_cli/fileops.py:LockHeld"]
    assert "OSError" in found["kafkalog_cli/fileops.py:LockHeld"]
    assert "kafkalog_cli/errors.py:CannotRun" in found
    assert "kafkalog_cli/engine/findings.py:Finding" not in found


def test_every_kafkalog_exception_derives_from_kafkalog_error():
    found = _exception_classes()
    wrong = [key for key, anc in sorted(found.items())
             if "KafkalogError" not in anc and not key.endswith(":KafkalogError") and key not in INTERNAL]
    assert not wrong, ("exception classes outside kafkalog_cli/errors.py's hierarchy (derive from one of its "
                       "classes, or list them in INTERNAL with the reason):\n" + "\n".join(wrong))
    stale = [key for key in INTERNAL if key not in found]
    assert not stale, f"INTERNAL lists classes that no longer exist: {stale}"


def test_the_error_classes_map_to_the_documented_statuses():
    from kafkalog_cli.errors import CannotRun, InputProblem, KafkalogError, Reported, UsageProblem
    from kafkalog_cli.status import Status
    assert (KafkalogError.status, UsageProblem.status, CannotRun.status, InputProblem.status) == \
        (Status.CANNOT_RUN, Status.USAGE, Status.CANNOT_RUN, Status.PROBLEMS)
    assert Reported(Status.PROBLEMS).status == Status.PROBLEMS
    from kafkalog_cli.engine.lookup import LookupFailed
    assert LookupFailed("x", "no_segments").status == Status.CANNOT_RUN
    assert LookupFailed("x", "offset_out_of_range").status == Status.PROBLEMS


def _error_exits(path: Path, root: Path = ROOT) -> list[str]:
    """Where a command module ends the run with an error's status itself: ``sys.exit``/``exit`` with an
    argument, or a return of 2 or 3 (a literal, or ``Status.USAGE``/``Status.CANNOT_RUN``)."""
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            owner = getattr(fn.value, "id", "") if isinstance(fn, ast.Attribute) else ""
            if (name == "exit" and owner in ("sys", "")) or (name == "exit" and (node.args or node.keywords)):
                wrong.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Return) and node.value is not None:
            v = node.value
            if (isinstance(v, ast.Constant) and isinstance(v.value, int) and not isinstance(v.value, bool)
                    and v.value not in (0, 1)) or \
                    (isinstance(v, ast.Attribute) and v.attr in ("USAGE", "CANNOT_RUN")):
                wrong.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return wrong


def test_the_exit_finder_finds_an_exit(tmp_path):
    f = tmp_path / "cmd.py"
    f.write_text("import sys\ndef a():\n    sys.exit(3)\ndef b():\n    return Status.CANNOT_RUN\n"
                 "def c():\n    return 2\ndef d():\n    return Status.PROBLEMS\ndef e(ctx):\n    ctx.exit()\n")
    assert sorted(w.split(":")[1] for w in _error_exits(f, tmp_path)) == ["3", "5", "7"]


def test_commands_raise_errors_and_never_exit_with_their_status():
    wrong = [w for f in sorted((CLI / "commands").glob("*.py")) for w in _error_exits(f)]
    assert not wrong, ("commands end with an error's status themselves; raise a kafkalog_cli.errors class "
                       "instead (app.main maps it):\n" + "\n".join(wrong))


#: classes named as problems or findings besides ``engine/findings.Finding``, each with why it is not one
#: (a ratchet: a new problem type fails here; make it a Finding)
OTHER_PROBLEM_TYPES = {
    "kafkalog_cli/engine/topic_config.py:ConfigProblem":
        "a configuration value Kafka would reject: topic, key, value and the source it came from (a flag, a "
        "properties file, the metadata log), not a place in a file",
    "kafkalog_cli/engine/transactions.py:TxnFinding":
        "the verdict on one open transaction (open, hanging, unknown) with its age and what it holds back: a "
        "row of the transactions view, not a problem at a place in a file",
}


def test_one_finding_type():
    """Issue 25: one problem type. Every class whose name says problem or finding is ``Finding`` itself, an
    exception, or listed above with the reason it is something else."""
    exceptions = _exception_classes()
    found = [key for key, (name, _b) in CLASSES.items()
             if name.endswith(("Problem", "Finding")) and key not in exceptions]
    wrong = [key for key in found if key != "kafkalog_cli/engine/findings.py:Finding"
             and key not in OTHER_PROBLEM_TYPES]
    assert not wrong, "problem types beside engine/findings.Finding (make them Findings):\n" + "\n".join(wrong)
    stale = [key for key in OTHER_PROBLEM_TYPES if key not in found]
    assert not stale, f"OTHER_PROBLEM_TYPES lists classes that no longer exist: {stale}"
