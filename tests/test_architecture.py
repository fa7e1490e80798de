"""The layering of the code (house style: imports point down, ``fileops`` is the only writer), checked on the
source with ``ast``: fast, no imports of the modules themselves.

* import direction: formats <- engine <- repair/render <- commands <- app (spark only from export/scan);
* no import cycle between modules, imports inside functions counted too (a cycle hidden in a function is
  still a cycle: the two modules cannot be understood, tested or moved apart);
* construct, click, rich and pyspark only in their layers;
* only ``kafkalog_cli/fileops.py`` creates, renames, truncates or removes files, apart from an allow-list
  whose every entry says why;
* the on-disk specification the code cites is the repository's own, and every section cited exists;
* only the target resolver (engine/targets.py, with engine/logdir.py) lists directories to find partitions
  or classifies a directory; the command layer lists none; no command imports another command's private
  names, and shared command helpers live in modules named for it (``commands/_*.py``, ``*_common.py``);
* the compiled code has one extension per layer (setup.py): the format layer's C (formats/_native_c) knows
  nothing of rendering or cleaning, an upper layer's extension shares only the format layer's sources.

``tools/make_fixtures.py --check`` is run by tests/test_readme.py.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"kafkalog_cli": ROOT / "kafkalog_cli", "kafkalog_formats": ROOT / "formats"}
SPEC = ROOT / "docs/kafka-on-disk.md"


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for both packages (``formats/`` installs as ``kafkalog_formats``)."""
    mods = {}
    for pkg, directory in PACKAGES.items():
        for f in directory.rglob("*.py"):
            parts = [pkg, *f.relative_to(directory).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = f
    return mods


MODULES = _modules()


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The project modules an import statement names (``from pkg import mod`` names ``pkg.mod``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            if path.name != "__init__.py":
                parts = parts[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    out = []
    for name in names:
        while name not in MODULES and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in MODULES and name != module:
            out.append(name)
    return out


def _graph() -> dict[str, dict[str, int]]:
    """module -> {imported project module: line of the first import}, imports inside functions included."""
    graph = {}
    for module, path in MODULES.items():
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for t in _targets(module, path, node):
                    edges.setdefault(t, node.lineno)
        graph[module] = edges
    return graph


GRAPH = _graph()


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


# (layer, the layers it must not import): imports point down only
FORBIDDEN = [
    ("kafkalog_formats", ["kafkalog_cli"]),
    ("kafkalog_cli.engine", ["kafkalog_cli.repair", "kafkalog_cli.render", "kafkalog_cli.commands",
                             "kafkalog_cli.app", "kafkalog_cli.spark"]),
    ("kafkalog_cli.repair", ["kafkalog_cli.commands", "kafkalog_cli.app", "kafkalog_cli.spark"]),
    ("kafkalog_cli.render", ["kafkalog_cli.commands", "kafkalog_cli.app", "kafkalog_cli.repair",
                             "kafkalog_cli.spark"]),
    ("kafkalog_cli.spark", ["kafkalog_cli.commands", "kafkalog_cli.app"]),
    ("kafkalog_cli.commands", ["kafkalog_cli.app"]),
]
# pyspark is imported only by these commands (house style: spark/ is imported only by export and scan)
SPARK_USERS = {"kafkalog_cli.commands.export", "kafkalog_cli.commands.scan"}


def test_the_graph_sees_the_project():
    """The scan finds both packages and their imports (a test of the tests' own reading)."""
    assert {"kafkalog_cli.app", "kafkalog_formats.record_batch", "kafkalog_cli.repair.recover_plan"} <= set(GRAPH)
    assert "kafkalog_cli.commands" in GRAPH["kafkalog_cli.app"]
    assert "kafkalog_formats.errors" in GRAPH["kafkalog_formats.record_batch"]


@pytest.mark.parametrize("layer,forbidden", FORBIDDEN, ids=[f[0] for f in FORBIDDEN])
def test_imports_point_down(layer, forbidden):
    wrong = [f"{m} imports {t} ({MODULES[m].relative_to(ROOT)}:{line})"
             for m, edges in sorted(GRAPH.items()) if _within(m, layer)
             for t, line in sorted(edges.items()) if any(_within(t, f) for f in forbidden)]
    assert not wrong, "\n".join(wrong)


def test_spark_is_imported_only_by_export_and_scan():
    wrong = [f"{m} imports {t}" for m, edges in sorted(GRAPH.items())
             if not _within(m, "kafkalog_cli.spark") and m not in SPARK_USERS
             for t in edges if _within(t, "kafkalog_cli.spark")]
    assert not wrong, "\n".join(wrong)



# third-party libraries, each in its layer (house style): construct only in formats/, click only in the
# commands and the app, rich only in render/, the app and ui.py, pyspark only in spark/
LIBRARY_HOMES = {
    "construct": ("formats/",),
    "click": ("kafkalog_cli/commands/", "kafkalog_cli/app.py"),
    "rich": ("kafkalog_cli/render/", "kafkalog_cli/app.py", "kafkalog_cli/ui.py"),
    "pyspark": ("kafkalog_cli/spark/",),
}
#: (file, library) -> why it is there; a ratchet: new places fail, and so does an entry nothing needs any more
LIBRARY_EXCEPTIONS = {
    ("kafkalog_cli/commands/_views.py", "rich"): "the views' progress bar (could join render/repair_text's)",
    ("kafkalog_cli/commands/verify.py", "rich"): "verify's progress bar (could join render/repair_text's)",
    ("kafkalog_cli/commands/export.py", "rich"): "the Spark stages' progress bar (could join render/)",
    ("kafkalog_cli/commands/export.py", "pyspark"): "whether a SparkSession is already active, before starting "
                                                    "one (could be a spark.session function)",
}


def test_libraries_stay_in_their_layer():
    found = set()
    for module, path in MODULES.items():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top in LIBRARY_HOMES and not rel.startswith(LIBRARY_HOMES[top]):
                    found.add((rel, top))
    wrong = sorted(found - set(LIBRARY_EXCEPTIONS))
    assert not wrong, "libraries imported outside their layer:\n" + "\n".join(f"{r}: {t}" for r, t in wrong)
    stale = sorted(set(LIBRARY_EXCEPTIONS) - found)
    assert not stale, f"exceptions that no longer match anything: {stale}"

def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


def test_no_import_cycles():
    """No two modules import each other, directly or through others, even from inside a function."""
    lines = []
    for comp in _cycles(GRAPH):
        members = set(comp)
        lines.append(" <-> ".join(comp) + ": " + "; ".join(
            f"{m} -> {t} (line {line})" for m in comp for t, line in sorted(GRAPH[m].items()) if t in members))
    assert not lines, "import cycles:\n" + "\n".join(lines)


# --- only fileops changes files ------------------------------------------------------------------------

OS_WRITES = {"rename", "replace", "unlink", "remove", "rmdir", "removedirs", "truncate", "ftruncate", "link",
             "symlink", "mkdir", "makedirs", "utime", "chmod", "posix_fallocate"}
SHUTIL_WRITES = {"move", "copy", "copy2", "copyfile", "copytree", "rmtree"}
PATH_WRITES = {"unlink", "rename", "replace", "write_bytes", "write_text", "mkdir", "touch", "rmdir",
               "symlink_to", "hardlink_to"}
#: (file, operation) -> why it is not fileops' business
ALLOWED_WRITES = {
    ("kafkalog_cli/output.py", "os.open(write)"): "stdout redirected to /dev/null after a broken pipe",
    ("kafkalog_cli/engine/stdin_input.py", "open('wb')"): "standard input copied into a private temporary "
                                                          "directory",
    ("kafkalog_cli/engine/stdin_input.py", ".rename()"): "that copy named as the segment or index it is",
}
#: spark/ writes the export's own output and scratch copies (Spark's writer, the manifest, the session's
#: temporary directories), never a Kafka log directory; tests/spark checks those.
NOT_CHECKED = ("kafkalog_cli/spark/",)


def _mode(call: ast.Call):
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Constant):
        return call.args[1].value
    for k in call.keywords:
        if k.arg == "mode":
            return k.value.value if isinstance(k.value, ast.Constant) else None
    return "r"


def _write_of(node: ast.Call) -> str | None:
    """The file-changing operation a call is, or None. str.replace(a, b) and renderers' write_text(out, ...)
    are told from Path.replace(target) and Path.write_text(data) by their number of arguments."""
    fn = node.func
    if isinstance(fn, ast.Name) and fn.id == "open":
        mode = _mode(node)
        return f"open({mode!r})" if mode is None or any(c in mode for c in "wax+") else None
    if not isinstance(fn, ast.Attribute):
        return None
    base = fn.value.id if isinstance(fn.value, ast.Name) else None
    if base == "os":
        if fn.attr in OS_WRITES:
            return f"os.{fn.attr}"
        if fn.attr == "open" and re.search(r"O_(WRONLY|RDWR|CREAT|TRUNC|APPEND)", ast.unparse(node)):
            return "os.open(write)"
        return None
    if base == "shutil":
        return f"shutil.{fn.attr}" if fn.attr in SHUTIL_WRITES else None
    if base == "fileops" or (isinstance(fn.value, ast.Call) and isinstance(fn.value.func, ast.Name)
                             and fn.value.func.id == "super"):
        return None
    if fn.attr in PATH_WRITES and not (fn.attr in ("replace", "write_text") and len(node.args) != 1):
        return f".{fn.attr}()"
    if fn.attr == "open" and base not in ("gzip", "io", "tarfile", "zipfile"):
        mode = _mode(node)
        return f".open({mode!r})" if isinstance(mode, str) and any(c in mode for c in "wax+") else None
    return None


def _writes() -> list[tuple[str, int, str]]:
    out = []
    for path in sorted(MODULES.values()):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "kafkalog_cli/fileops.py" or rel.startswith(NOT_CHECKED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                what = _write_of(node)
                if what:
                    out.append((rel, node.lineno, what))
    return out


def test_the_write_finder_finds_writes():
    calls = ["os.rename(a, b)", "p.unlink()", "open(p, 'wb')", "shutil.rmtree(d)", "p.replace(q)",
             "os.open(p, os.O_WRONLY)"]
    assert [_write_of(ast.parse(c).body[0].value) for c in calls] == [
        "os.rename", ".unlink()", "open('wb')", "shutil.rmtree", ".replace()", "os.open(write)"]
    harmless = ["s.replace('a', 'b')", "open(p, 'rb')", "fileops.rename(a, b)", "rr.write_text(out, report)",
                "super().write_text(t)"]
    assert [_write_of(ast.parse(c).body[0].value) for c in harmless] == [None] * len(harmless)


def test_only_fileops_changes_files():
    found = _writes()
    wrong = [f"{rel}:{line}: {what}" for rel, line, what in found if (rel, what) not in ALLOWED_WRITES]
    assert not wrong, "file changes outside kafkalog_cli/fileops.py:\n" + "\n".join(wrong)
    stale = set(ALLOWED_WRITES) - {(rel, what) for rel, _line, what in found}
    assert not stale, f"allow-list entries that no longer match anything: {sorted(stale)}"


# --- only output.py writes to standard output --------------------------------------------------------------

#: the one module that owns standard output (issue 34: five ways of writing it had drifted apart; a short
#: write or EAGAIN lost the end of a report with exit status 0)
STDOUT_OWNER = "kafkalog_cli/output.py"


def _stdout_use(node: ast.AST) -> str | None:
    """How a node writes to standard output behind ``output.Output``'s back, or None."""
    if isinstance(node, ast.Attribute) and node.attr in ("stdout", "__stdout__") \
            and isinstance(node.value, ast.Name) and node.value.id == "sys":
        return f"sys.{node.attr}"
    if not isinstance(node, ast.Call):
        return None
    fn, kw = node.func, {k.arg: k.value for k in node.keywords}
    name = fn.id if isinstance(fn, ast.Name) else f"{ast.unparse(fn.value)}.{fn.attr}" if isinstance(fn, ast.Attribute) else ""
    if name == "print" and "file" not in kw:
        return "print() to standard output"
    if name in ("click.echo", "click.secho", "echo", "secho") and not (
            "err" in kw and isinstance(kw["err"], ast.Constant) and kw["err"].value):
        return f"{name}() to standard output"
    if name in ("Console", "rich.console.Console") and "file" not in kw and not (
            "stderr" in kw and isinstance(kw["stderr"], ast.Constant) and kw["stderr"].value):
        return "a rich Console on standard output"
    if name == "os.write" and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 1:
        return "os.write(1, ...)"
    return None


def test_the_stdout_finder_finds_writes():
    found = ["sys.stdout.write(x)", "print(x)", "click.echo(x)", "Console()", "os.write(1, b)",
             "sys.__stdout__.flush()", "f(sys.stdout)"]
    assert all(any(_stdout_use(n) for n in ast.walk(ast.parse(c))) for c in found)
    harmless = ["print(x, file=sys.stderr)", "click.echo(x, err=True)", "Console(stderr=True)",
                "Console(file=out)", "out.write(x)", "os.write(fd, b)", "sys.stderr.write(x)"]
    assert [c for c in harmless if any(_stdout_use(n) for n in ast.walk(ast.parse(c)))] == []


def test_only_output_writes_to_stdout():
    """No ``sys.stdout``, no ``print()``/``click.echo()`` to standard output, no rich Console on it outside
    ``kafkalog_cli/output.py``: every command writes its report through ``output.Output``."""
    wrong = []
    for path in sorted(MODULES.values()):
        rel = path.relative_to(ROOT).as_posix()
        if rel == STDOUT_OWNER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            what = _stdout_use(node)
            if what:
                wrong.append(f"{rel}:{node.lineno}: {what}")
    assert not wrong, "standard output written outside kafkalog_cli/output.py:\n" + "\n".join(wrong)


# --- the compiled code: one extension per layer ------------------------------------------------------------

def _setup_lists() -> tuple[str, dict, dict]:
    """setup.py's FORMATS_C, SHARED and EXTENSIONS, read with ast (importing setup.py runs setup())."""
    env: dict = {}
    for node in ast.parse((ROOT / "setup.py").read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in ("FORMATS_C", "SHARED", "EXTENSIONS")):
            env[node.targets[0].id] = eval(compile(ast.Expression(node.value), "setup.py", "eval"), {}, dict(env))
    return env["FORMATS_C"], env["SHARED"], env["EXTENSIONS"]


def test_each_layer_builds_its_own_extension_from_its_own_sources():
    """Every C source belongs to the extension of the layer whose directory holds it; an upper layer's
    extension adds only the format layer's shared sources (a dependency pointing down), never a copy."""
    formats_c, shared, extensions = _setup_lists()
    assert set(shared) <= {p.name for p in (ROOT / formats_c).glob("*.c")}
    assert {name.rsplit(".", 1)[0] for name in extensions} == {"kafkalog_formats", "kafkalog_cli.render",
                                                                 "kafkalog_cli.repair"}
    listed = set()
    for name, (directory, own, uses) in extensions.items():
        package = name.rsplit(".", 1)[0]
        assert directory == ("formats" if package == "kafkalog_formats" else package.replace(".", "/")) + "/_native_c"
        assert set(uses) <= set(shared), f"{name} shares what the format layer does not offer"
        assert not set(own) & set(shared), f"{name} lists a shared source as its own"
        listed |= {f"{directory}/{c}" for c in own}
    listed |= {f"{formats_c}/{c}" for c in shared}
    on_disk = {str(p.relative_to(ROOT)) for p in ROOT.glob("**/_native_c/*.c") if ".venv" not in p.parts}
    assert on_disk == listed, "C sources not built (or listed but missing)"


def _c_code(path: Path) -> str:
    """A C source without its comments and string literals."""
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r'"(\\.|[^"\\])*"', '""', code)


def test_the_format_layers_c_knows_nothing_of_rendering_or_cleaning():
    """No identifier of formats/_native_c speaks of rendering, dumping or cleaning (offset map, MD5, keep
    decisions), and it includes no header of an upper layer."""
    formats_c, _shared, _extensions = _setup_lists()
    files = sorted((ROOT / formats_c).glob("*.[ch]"))
    assert len(files) > 10
    upper = re.compile(r"\w*(?:[Rr]ender|[Oo]ffset_?[Mm]ap|[Mm][Dd]5|[Cc]lean|[Kk]eep_|[Dd]ump|jsonl|kafka_text)\w*")
    found = [f"{f.name}: {sorted(set(upper.findall(_c_code(f))))}" for f in files if upper.search(_c_code(f))]
    assert not found, "upper-layer code in the format layer's C:\n" + "\n".join(found)
    upper_headers = {p.name for p in (ROOT / "kafkalog_cli").glob("*/_native_c/*.h")}
    assert upper_headers
    # vendor/: the decompressors built in (formats/_native_c/vendor/README.md), not an upper layer
    includes = [(f.name, h) for f in files for h in re.findall(r'#include\s+"([^"]+)"', f.read_text(encoding="utf-8"))
                if h in upper_headers or ("/" in h and not h.startswith("vendor/"))]
    assert not includes, f"headers of an upper layer: {includes}"


# --- the specification the code cites ------------------------------------------------------------------

def _sources() -> list[Path]:
    files = [p for d in ("kafkalog_cli", "formats", "tests", "tools") for p in (ROOT / d).rglob("*.py")]
    return sorted(files + list((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"])


def test_the_spec_is_cited_from_the_repository():
    """Every citation of the on-disk spec names docs/kafka-on-disk.md, and each section it cites exists."""
    assert SPEC.is_file()
    sections = set(re.findall(r"^#{2,3} (?:Appendix )?([0-9A-Z]+(?:\.\d+)?)\.? ", SPEC.read_text(encoding="utf-8"),
                              re.M))
    assert {"1.1", "7.1", "10.5", "9"} <= sections
    outside, missing, cited = [], [], 0
    for path in _sources():
        if path == SPEC:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in re.finditer(r"(\S*)kafka-on-disk\.md", line):
                if m.group(1).split("](")[-1].strip("`(\"'") != "docs/":       # a Markdown link's target too
                    # the guards that keep the spec's name out of messages to users name it on purpose
                    if "not in" not in line and "unkafka" not in line and "re.compile" not in line:
                        outside.append(f"{path.relative_to(ROOT)}:{n}")
                    continue
                cited += 1
                for sec in re.findall(r"§\s?(\d+(?:\.\d+)?)", line[m.end():]):
                    if sec not in sections:
                        missing.append(f"{path.relative_to(ROOT)}:{n}: §{sec}")
    assert cited > 10
    assert not outside, "citations of the spec outside docs/:\n" + "\n".join(outside)
    assert not missing, "sections cited that the spec does not have:\n" + "\n".join(missing)


# --- functions stay short --------------------------------------------------------------------------------

#: A function longer than this holds more than one step: split it into named phases (Kafka's own seams).
MAX_FUNCTION_LINES = 80
#: (file, function) -> the length it may keep, and why: a ratchet. A listed function may only shrink; one that
#: grows, a new long function, and an entry no longer needed (the function split or gone) all fail the test.
LONG_FUNCTIONS = {
    ("formats/record_batch.py", "_read_records"): (121, "DefaultRecord.readFrom in a loop, the hot pure path: "
                                                        "its varints inline (a call per record cost ~5%, one per "
                                                        "key and value ~13% of iter_records)"),
}


def _function_lengths() -> dict[tuple[str, str], int]:
    """(file, function name) -> lines from ``def`` to the function's last line, nested functions included
    (each on its own), for both packages; two functions of one name in a file: the longest."""
    out: dict[tuple[str, str], int] = {}
    for path in MODULES.values():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = (rel, node.name)
                out[key] = max(out.get(key, 0), node.end_lineno - node.lineno + 1)
    return out


def test_functions_stay_short():
    lengths = _function_lengths()
    wrong = [f"{rel}: {name} has {n} lines (more than {MAX_FUNCTION_LINES}"
             + (f", and more than the {LONG_FUNCTIONS[(rel, name)][0]} it is allowed)" if (rel, name) in LONG_FUNCTIONS
                else "): split it into named steps")
             for (rel, name), n in sorted(lengths.items())
             if n > MAX_FUNCTION_LINES and n > LONG_FUNCTIONS.get((rel, name), (0,))[0]]
    assert not wrong, "\n".join(wrong)
    shrunk = [f"{rel}: {name}: {lengths.get((rel, name), 0)} lines now: lower its entry (or drop it)"
              for (rel, name), (allowed, _why) in sorted(LONG_FUNCTIONS.items())
              if lengths.get((rel, name), 0) < allowed]
    assert not shrunk, "LONG_FUNCTIONS may only shrink; entries to tighten:\n" + "\n".join(shrunk)


def test_the_length_ratchet_sees_long_functions():
    lengths = _function_lengths()
    assert lengths[("kafkalog_cli/app.py", "main")] > 1
    assert all(lengths.get(k, 0) > MAX_FUNCTION_LINES for k in LONG_FUNCTIONS)


# --- one configuration resolver (issue 34, item 9) ------------------------------------------------------------

#: Modules that may turn a .properties file into values: the resolver's own sources, and these, each with why.
PROPERTIES_READERS = {
    "kafkalog_cli/engine/topic_config.py": "server.properties for the resolver (load_server_properties)",
    "kafkalog_cli/engine/config_resolver.py": "ZooKeeper-era <topic>.properties files (--topic-configs)",
    "kafkalog_cli/spark/plan.py": "meta.properties read leniently for the export's cluster id and node id",
}


def _properties_readers() -> set[str]:
    out = set()
    for path in MODULES.values():
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == \
                    "load_properties":
                out.add(rel)
    return out


def test_broker_configuration_is_read_only_through_the_resolver():
    """Every command's broker and topic configuration comes from engine/config_resolver (with Kafka's types and
    validators); a command that parses server.properties itself (as consumer-groups and transactions did)
    drifts from it: values Kafka refuses were taken as defaults."""
    readers = _properties_readers() - {"formats/meta_properties.py"}
    assert "kafkalog_cli/engine/topic_config.py" in readers        # the finder sees a reader
    assert readers <= set(PROPERTIES_READERS), sorted(readers - set(PROPERTIES_READERS))


# --- one target resolver (issue 34, the shape of the fix) ------------------------------------------------------

#: calls that list a directory
LISTINGS = {"iterdir", "scandir", "listdir", "walk", "glob", "rglob"}
#: calls that recognise a partition directory (by name) or classify a directory as Kafka's
PARTITION_WORDS = {"parse_partition_dir", "dir_kind", "is_partition_dir"}
#: the resolver and the log directory it opens: the only modules that list directories to find partitions
RESOLVER = {"kafkalog_cli/engine/targets.py", "kafkalog_cli/engine/logdir.py"}


def _called(node: ast.AST) -> set[str]:
    return {getattr(n.func, "attr", getattr(n.func, "id", "")) for n in ast.walk(node) if isinstance(n, ast.Call)}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _walks(tree: ast.AST) -> list[ast.AST]:
    """Loops and comprehensions over a directory listing whose body recognises a partition directory in the
    entries listed (``parse_partition_dir(c.name) for c in d.iterdir()``)."""
    out = []
    for node in ast.walk(tree):
        loops = []
        if isinstance(node, (ast.For, ast.AsyncFor)):
            loops = [(node.iter, node.target, node.body)]
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            element = [node.elt] if not isinstance(node, ast.DictComp) else [node.key, node.value]
            loops = [(g.iter, g.target, element + g.ifs) for g in node.generators]
        for iterable, target, body in loops:
            if not _called(iterable) & LISTINGS:
                continue
            entries = _names(target)
            for part in body:
                for call in ast.walk(part):
                    if (isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", ""))
                            in PARTITION_WORDS and _names(call) & entries):
                        out.append(node)
    return out


def _partition_finders() -> list[tuple[str, int]]:
    """(file, line) of each walk outside the resolver that lists a directory and picks partition directories
    from it itself."""
    out = []
    for path in MODULES.values():
        rel = path.relative_to(ROOT).as_posix()
        if rel not in RESOLVER:
            out += [(rel, n.lineno) for n in _walks(ast.parse(path.read_text(encoding="utf-8")))]
    return out


def test_the_partition_finder_finds_a_walk():
    """The walks the resolver replaced, as they were written (recover, delete-records, remote storage)."""
    for code in ("present = {str(p) for p in (parse_partition_dir(c.name) for c in root.iterdir() if c.is_dir()) if p}",
                 "for d in sorted(p for p in root.iterdir() if p.is_dir()):\n    n = parse_partition_dir(d.name)",
                 "for d in sorted(Path(logdir).iterdir()):\n    name = parse_partition_dir(d.name) if d.is_dir() else None"):
        assert _walks(ast.parse(code)), code
    assert not _walks(ast.parse("for e in d.iterdir():\n    kind = classify_file(e.name)\nparse_partition_dir(d.name)"))


def test_only_the_resolver_finds_partitions():
    """engine/targets.resolve turns every command's paths into log directories and partition directories; a
    module that lists directories and picks partitions from them itself (seven did: describe, verify,
    consumer-groups, transactions, retain/compact, delete-records, recover, the lookups) drifts from it, and
    a path form that works in one command fails in another."""
    assert _partition_finders() == []
    classifiers = {path.relative_to(ROOT).as_posix() for path in MODULES.values()
                   if "dir_kind" in _called(ast.parse(path.read_text(encoding="utf-8")))}
    assert classifiers <= RESOLVER, sorted(classifiers - RESOLVER)


def test_commands_list_no_directory():
    """The command layer gets its paths resolved (engine/targets): it never lists a directory itself."""
    for path in (ROOT / "kafkalog_cli" / "commands").glob("*.py"):
        called = _called(ast.parse(path.read_text(encoding="utf-8")))
        assert not called & LISTINGS, (path.name, sorted(called & LISTINGS))


#: a command module importing from another command module, each with why (shared helpers live in modules
#: named for sharing: commands/_*.py, commands/*_common.py)
CROSS_COMMAND_IMPORTS = {
    ("kafkalog_cli.commands.scan", "kafkalog_cli.commands.export"):
        "scan runs on Spark as export does (session, --spark-conf, the output check); public names only",
}


def _command_modules() -> set[str]:
    from kafkalog_cli.commands import COMMANDS
    return {module for module, _help in COMMANDS.values()}


def test_no_private_imports_across_command_modules():
    """A command importing another command's private helper (transactions used consumer_groups'
    _partition_count) couples the two without saying so: shared helpers live in a module whose name says it
    is shared, and a command module is imported by another only where listed above, for public names."""
    commands = _command_modules()
    shared = {m for m in MODULES if m.startswith("kafkalog_cli.commands.") and m not in commands}
    for m in shared:
        leaf = m.rsplit(".", 1)[1]
        assert leaf.startswith("_") or leaf.endswith("_common"), f"{m}: a shared command module named for sharing"
    for module in commands:
        path = MODULES[module]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            for target in _targets(module, path, node):
                if target in commands and target != module:
                    assert (module, target) in CROSS_COMMAND_IMPORTS, (module, target)
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    assert not private, (module, target, private)
