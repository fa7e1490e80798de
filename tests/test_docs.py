"""Docs generated from the CLI stay current (house style 10 and 11).

Regenerate after changing a command's options or help text:

    python tools/make_man.py            # man/*.1
    python tools/make_man.py --golden   # tests/golden/help/*.txt
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.app import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[1]
MAN_DIR = ROOT / "man"
GOLDEN_DIR = ROOT / "tests" / "golden" / "help"
WIDTH = 80
REGEN_MAN = "python tools/make_man.py"
REGEN_GOLDEN = "python tools/make_man.py --golden"
HEAVY = ("numpy", "construct", "rich", "kafkalog_formats", "pyspark", "zstandard", "lz4", "cramjam")


def _load_make_man():
    spec = importlib.util.spec_from_file_location("make_man", ROOT / "tools" / "make_man.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_man = _load_make_man()

# None is the group itself (kafkalog.1, kafkalog.txt); the rest are the registered subcommands.
NAMES = [None, *sorted(COMMANDS)]
IDS = ["kafkalog", *sorted(COMMANDS)]


def _man_file(name: str | None) -> str:
    return ("kafkalog" if name is None else f"kafkalog-{name}") + ".1"


def _golden_file(name: str | None) -> str:
    return ("kafkalog" if name is None else name) + ".txt"


def _subprocess_env() -> dict:
    env = dict(os.environ, COLUMNS=str(WIDTH), PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    env.pop("PYTHONSTARTUP", None)
    return env


# --- (a) man pages are current ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated_man(tmp_path_factory) -> Path:
    """The generator run in-process into a temporary directory."""
    out = tmp_path_factory.mktemp("man")
    make_man.write(out, make_man.render_pages(), "*.1")
    return out


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_man_page_is_current(generated_man, name):
    page = _man_file(name)
    committed = MAN_DIR / page
    assert committed.is_file(), f"man/{page} is missing; run {REGEN_MAN}"
    assert committed.read_bytes() == (generated_man / page).read_bytes(), \
        f"man/{page} is stale; run {REGEN_MAN}"


def test_no_stray_man_pages(generated_man):
    committed = sorted(p.name for p in MAN_DIR.glob("*.1"))
    generated = sorted(p.name for p in generated_man.glob("*.1"))
    assert committed == generated, f"man/ does not match the registered commands; run {REGEN_MAN}"


def test_check_mode_names_stale_pages(tmp_path, capsys):
    pages = make_man.render_pages()
    make_man.write(tmp_path, pages, "*.1")
    assert make_man.main(["--check", "--out", str(tmp_path)]) == 0
    victim = tmp_path / _man_file(sorted(COMMANDS)[0])
    victim.write_bytes(victim.read_bytes() + b".\\\" edited by hand\n")
    (tmp_path / "kafkalog-gone.1").write_text(".TH GONE 1\n")
    capsys.readouterr()
    assert make_man.main(["--check", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert victim.name in err and "kafkalog-gone.1" in err


def test_generation_is_deterministic():
    assert make_man.render_pages() == make_man.render_pages()


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
@pytest.mark.parametrize("name", NAMES, ids=IDS)
@pytest.mark.parametrize("width", [80, 100])
def test_man_page_renders_without_warnings(name, width):
    # -rcR=0: paginate as man(1) does (some break warnings only appear at page boundaries)
    proc = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-rcR=0", f"-rLL={width}n",
                           str(MAN_DIR / _man_file(name))], capture_output=True)
    assert proc.returncode == 0
    assert proc.stderr.decode(errors="replace") == ""


def test_json_output_section_only_on_dump_log():
    """Only the pages whose EXTRA_SECTIONS declare one (dump-log, recover) have a JSON OUTPUT section."""
    declared = {f"kafkalog-{c}.1" for c, sections in make_man.EXTRA_SECTIONS.items()
                if any(title == "JSON OUTPUT" for title, _ in sections)}
    assert {"kafkalog-dump-log.1", "kafkalog-recover.1"} <= declared
    pages = make_man.render_pages()
    for file, text in pages.items():
        assert (".SH \"JSON OUTPUT\"" in text) == (file in declared), file


def test_json_output_section_names_every_object_type():
    """Every ``"type": "..."`` the JSON renderer writes is documented (a cheap guard against drift)."""
    source = (ROOT / "kafkalog_cli" / "render" / "jsonl.py").read_text()
    types = set(re.findall(r'"type":\s*"([a-z_]+)"', source))
    assert {"batch", "record", "file", "problem"} <= types
    section = make_man.EXTRA_SECTIONS["dump-log"][0][1]
    documented = set(re.findall(r"^\.SS (\S+)$", section, re.M)) | set(re.findall(r"^\.B (\S+)$", section, re.M))
    assert types <= documented, f"undocumented JSON object types: {sorted(types - documented)}"


# --- (b) every --help equals its golden file --------------------------------------------------------


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_help_matches_golden(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    args = ["--help"] if name is None else [name, "--help"]
    result = CliRunner(env={"COLUMNS": str(WIDTH)}).invoke(cli, args, prog_name="kafkalog",
                                                           terminal_width=WIDTH, catch_exceptions=False)
    assert result.exit_code == 0
    golden = GOLDEN_DIR / _golden_file(name)
    assert golden.is_file(), f"{golden.relative_to(ROOT)} is missing; run {REGEN_GOLDEN}"
    assert result.stdout_bytes == golden.read_bytes(), \
        f"{golden.relative_to(ROOT)} differs from --help; run {REGEN_GOLDEN} if the change is intended"


# commands whose --help may be wider than 80 columns (none since issue 23)
WIDER_THAN_80: set[str] = set()


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_help_fits_80_columns_and_never_splits_an_option(name):
    """--help is within 80 columns on any terminal (click's max_content_width), and a line never ends in the
    middle of an option or a setting name (textwrap breaks words at hyphens: ``--log-start-`` / ``offset``)."""
    text = (GOLDEN_DIR / _golden_file(name)).read_text()
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["--help"] if name is None else [name, "--help"],
                                                      prog_name="kafkalog")
    assert result.stdout == text                            # a wide terminal changes nothing
    for line in text.splitlines():
        assert not re.search(r"[A-Za-z0-9]-$", line), f"a word broken at its hyphen: {line!r}"
        if name not in WIDER_THAN_80:
            assert len(line) <= 80, line


@pytest.mark.skipif(shutil.which("nroff") is None, reason="nroff (groff) is not installed")
@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_kafkalog_man_fits_80_columns(name):
    """``kafkalog man NAME`` in a pipe (nroff at 80 columns): no line wider than 80, including the example
    and table blocks that man does not fill."""
    if name in WIDER_THAN_80:
        pytest.skip("the Spark commands' help text is the Spark work's (issue 23)")
    args = ["man"] + ([name] if name else [])
    done = subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=_subprocess_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    wide = [line for line in done.stdout.splitlines() if len(line) > 80]
    assert wide == []


def test_golden_generator_matches_committed():
    files = make_man.render_golden()
    assert make_man.stale(GOLDEN_DIR, files, "*.txt") == [], f"run {REGEN_GOLDEN}"


# --- (c) every registered command has a man page and a golden file ----------------------------------


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_has_docs(name):
    assert (MAN_DIR / _man_file(name)).is_file(), f"no man page for {name}; run {REGEN_MAN}"
    assert (GOLDEN_DIR / _golden_file(name)).is_file(), f"no golden --help for {name}; run {REGEN_GOLDEN}"
    group_page = (MAN_DIR / _man_file(None)).read_text()
    assert f".BR {make_man.code('kafkalog-' + name)} (1)" in group_page, "kafkalog.1 does not list it"


def test_no_golden_files_for_unknown_commands():
    expected = {_golden_file(n) for n in NAMES}
    assert {p.name for p in GOLDEN_DIR.glob("*.txt")} == expected


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_registry_short_help_matches_command(name):
    """The group lists COMMANDS' short help; the command's own short_help must say the same."""
    ctx = cli.make_context("kafkalog", ["--help"], resilient_parsing=True)
    command = cli.get_command(ctx, name)
    assert command is not None and command.name == name
    assert command.short_help in (None, COMMANDS[name][1])


# --- (d) importing the app stays light ---------------------------------------------------------------

_REPORT_HEAVY = (
    "import json, sys\n"
    "heavy = {heavy!r}\n"
    "{body}\n"
    "print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set(heavy))))\n"
)


def _heavy_modules_after(body: str) -> list[str]:
    code = _REPORT_HEAVY.format(heavy=HEAVY, body=body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=_subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_app_imports_no_heavy_modules():
    assert _heavy_modules_after("import kafkalog_cli.app") == []


def test_group_help_imports_no_heavy_modules():
    body = ("import contextlib, io\n"
            "import kafkalog_cli.app as app\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            "        app.main(['--help'])\n"
            "    except SystemExit as e:\n"
            "        assert e.code == 0, e.code\n")
    assert _heavy_modules_after(body) == []


# --- (e) python -m kafkalog_cli --help works -----------------------------------------------------------


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_python_m_help(name):
    args = ["--help"] if name is None else [name, "--help"]
    proc = subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=_subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Usage: kafkalog {name + ' ' if name else ''}[OPTIONS]")
    if name is None:
        for command in COMMANDS:
            assert f"  {command}  " in proc.stdout


def test_lookup_on_uncompressed_data_loads_no_codec_or_message_schema():
    """A lookup's start-up is most of its time (issue 12): on an uncompressed partition of an ordinary
    topic it loads neither the codec libraries, nor the internal topics' message schemas, nor construct
    (the schema layer's declarative schemas are built on first use, ``_lazy.lazy_attributes``), nor
    numpy."""
    lazy = ("cramjam", "lz4", "zstandard", "xxhash", "kafkalog_formats.group_coordinator",
            "kafkalog_formats.metadata_records", "kafkalog_formats.consumer_protocol", "construct", "numpy")
    code = ("import contextlib, io, json, sys\n"
            "import kafkalog_cli.app as app\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n"
            "        app.main(['lookup-offset', '--print-data-log', 'fixtures/logdir/orders-0', '5'])\n"
            "    except SystemExit as e:\n"
            "        assert e.code == 0, e.code\n"
            "assert 'found:' in out.getvalue(), out.getvalue()\n"
            f"print(json.dumps([m for m in {lazy!r} if m in sys.modules]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=_subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_compact_loads_no_numpy(tmp_path):
    """compact's start-up counts against the aiokafka pass (issue 12): the indexes it writes are packed
    with ``struct`` and the transaction index read without numpy, so a whole pass never imports it."""
    import shutil
    shutil.copytree(ROOT / "fixtures" / "logdir", tmp_path / "logdir")
    code = ("import contextlib, io, json, sys\n"
            "import kafkalog_cli.app as app\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    try:\n"
            f"        app.main(['compact', '--force', '--config', 'cleanup.policy=compact', '--now', '1900000000000',\n"
            f"                  {str(tmp_path / 'logdir' / 'orders-0')!r}])\n"
            "    except SystemExit as e:\n"
            "        assert e.code == 0, e.code\n"
            "assert 'group [' in out.getvalue(), out.getvalue()\n"
            "print(json.dumps('numpy' in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env=_subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert json.loads(proc.stdout.strip().splitlines()[-1]) is False


# --- the docs pages agree with the reference (--help and the man pages, generated from the commands) -------

DOCS = ROOT / "docs"
#: each command's page: the man page and --help stay the reference, these pages explain
COMMAND_PAGES = {"dump-log": "commands/dump-log.md", "verify": "commands/verify.md",
                 "lookup-offset": "commands/lookups.md", "lookup-time": "commands/lookups.md",
                 "recover": "commands/recover.md", "retain": "commands/retain.md", "compact": "commands/compact.md",
                 "delete-records": "commands/delete-records.md", "diff": "commands/diff.md",
                 "describe": "commands/state-views.md", "consumer-groups": "commands/state-views.md",
                 "transactions": "commands/state-views.md", "export": "spark.md", "scan": "spark.md",
                 "man": "guide.md", "completion": "guide.md"}
#: pages for users (the README links them): no issue numbers, no maintainers' bookkeeping (performance.md
#: and testing.md are the maintainers' records: their figures name the work they were measured for)
USER_PAGES = [ROOT / "README.md", DOCS / "guide.md", DOCS / "spark.md",
              DOCS / "kafka-differences.md", *sorted((DOCS / "commands").glob("*.md"))]


def _options(command) -> set[str]:
    return {o for p in command.params for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))
            if o.startswith("--")}


def test_every_command_has_its_page_and_the_readme_links_every_page():
    assert set(COMMAND_PAGES) == set(COMMANDS)
    readme = (ROOT / "README.md").read_text()
    for page in set(COMMAND_PAGES.values()) | {"kafka-differences.md", "performance.md", "testing.md"}:
        assert (DOCS / page).is_file(), page
        assert f"docs/{page}" in readme, f"the README does not link docs/{page}"


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"man", "completion"}))
def test_a_command_page_names_only_options_its_command_has(name):
    """Every ``kafkalog NAME ... --option`` of the command's page (in its examples and its text) is an option
    of that command or a global one: the page cannot describe an option --help and the man page lack."""
    import importlib
    text = (DOCS / COMMAND_PAGES[name]).read_text()
    ours = _options(importlib.import_module(COMMANDS[name][0]).command) | _options(cli) | {"--help", "--version"}
    for line in re.findall(rf"kafkalog {re.escape(name)}\b[^\n`|]*", text):
        for opt in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line):
            assert opt in ours, f"docs/{COMMAND_PAGES[name]}: {opt} is not an option of kafkalog {name}: {line}"


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_user_pages_speak_of_no_issue_numbers(page):
    found = re.findall(r".{0,30}\bissues? \d+.{0,30}", page.read_text())
    assert not found, found


def test_the_readme_is_an_entrance():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_relative_links_of_the_docs_resolve():
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: {target}"


def test_ci_runs_the_readmes_test_command_first():
    """The README's second set-up command (the contributor's) is .ci/run's first command, word for word, and
    every `.ci/run` step is named in docs/testing.md with its command."""
    readme = (ROOT / "README.md").read_text()
    setup = re.search(r"^## Set up\n+```sh\n(.*?)```", readme, re.M | re.S).group(1).splitlines()
    assert len(setup) == 2, setup
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines()
          if ln and not ln.startswith(("#", "step", "export", "set ", "cd "))]
    assert ci[0] == setup[1], (ci[0], setup[1])
    testing = (DOCS / "testing.md").read_text()
    for line in ci:
        if line.startswith("step()"):
            continue
        assert f"`{line}`" in testing, f"docs/testing.md does not give .ci/run's step: {line}"
