"""The operator's surface through the real CLI in subprocesses: closed pipes, Ctrl-C, global options,
``kafkalog man`` and shell completion (exit statuses as documented in the README and kafkalog(1))."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, copy_logdir, ctrl_c_default, run_cli

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def _env(**extra) -> dict:
    env = dict(os.environ, COLUMNS="80", **extra)
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    return env


def _closed_reader(args: list[str]) -> subprocess.CompletedProcess:
    """Run kafkalog with stdout into a pipe whose reader takes one line and closes it (``| head -1``)."""
    proc = subprocess.Popen(KAFKALOG + args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env())
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    return subprocess.CompletedProcess(args, proc.wait(timeout=120), first, err)


@pytest.mark.parametrize("args", [
    ["verify", "--format", "json", "--details"],
    ["dump-log", "--print-data-log"],
    ["dump-log", "--format", "json", "--deep-iteration"],
], ids=["verify-json", "dump-text", "dump-json"])
def test_a_closed_pipe_ends_quietly_with_141_not_problems_found(args):
    """``kafkalog … | head -1`` on clean data: a closed stdout is not a problem with the data, so not
    status 1; 141 (128 + SIGPIPE) like git or cat, and nothing on stderr."""
    if "--details" in args and "--details" not in run_cli("verify", "--help").out:
        args = [a for a in args if a != "--details"]
    clean = str(FIXTURES / "logdir")
    assert run_cli(*args, clean).code == 0            # the data itself is clean
    # enough output to fill the pipe buffer: files given 40 times are read 40 times (a directory given twice
    # is read once)
    done = _closed_reader(args + sorted(str(f) for f in Path(clean).glob("*/*.log")) * 40)
    assert done.stdout                                 # the reader did get its line
    assert done.returncode == 141, done.stderr
    assert done.stderr == b""


def test_ctrl_c_exits_130_with_one_line(tmp_path):
    """SIGINT to the process group while a reader is blocked writing: exit 130, one line, no traceback."""
    proc = subprocess.Popen(KAFKALOG + ["dump-log", "--print-data-log"] + [str(FIXTURES / "logdir")] * 40,
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
                            start_new_session=True, preexec_fn=ctrl_c_default)
    proc.stdout.readline()                             # it is running (and soon blocked on the full pipe)
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.stderr.read().decode()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 130
    assert "Traceback" not in err and "Aborted" not in err
    assert err.splitlines() == ["kafkalog: interrupted"]        # one line, no blank one before it (a pipe)


# The child of the Ctrl-C-during-import test: kafkalog's own entry (``python -m kafkalog_cli``, through runpy)
# with a profile function counting the Python calls made from the moment the click application's import
# begins (the audit event "import" of kafkalog_cli.app, inside entry.main's guard) until click creates the
# command's context (inside app.main's handler); at call number SIGINT_AT the process sends itself a real
# SIGINT. With SIGINT_AT -1 it writes the count, and where app.main was called, to SIGINT_COUNT_FILE.
_SIGINT_AT_A_CALL = r"""
import json, os, runpy, signal, sys
at, count_file = int(os.environ["SIGINT_AT"]), os.environ.get("SIGINT_COUNT_FILE")
calls, app_main = -1, None
def audit(event, args):
    global calls
    if event == "import" and args[0] == "kafkalog_cli.app" and calls < 0:
        calls = 0
        sys.setprofile(profile)
def profile(frame, event, arg):
    global calls, app_main
    if event != "call":
        return
    code = frame.f_code
    if code.co_name == "make_context":
        sys.setprofile(None)
        if count_file:
            with open(count_file, "w") as f:
                json.dump({"calls": calls, "app_main": app_main}, f)
        return
    if code.co_name == "main" and code.co_filename.endswith("app.py") and app_main is None:
        app_main = calls
    if calls == at:
        sys.setprofile(None)
        os.kill(os.getpid(), signal.SIGINT)
    calls += 1
sys.addaudithook(audit)
runpy.run_module("kafkalog_cli", run_name="__main__", alter_sys=True)
"""


def _verify_interrupted_at(call: int, count_file: Path | None = None) -> subprocess.CompletedProcess:
    env = _env(SIGINT_AT=str(call), **({"SIGINT_COUNT_FILE": str(count_file)} if count_file else {}))
    return subprocess.run([sys.executable, "-c", _SIGINT_AT_A_CALL, "verify", str(FIXTURES / "logdir")],
                          cwd=REPO, capture_output=True, env=env, timeout=120, preexec_fn=ctrl_c_default)


@pytest.fixture(scope="module")
def import_calls(tmp_path_factory) -> dict:
    """How many calls the import of the application and app.main's start take, and where app.main starts
    (counted twice: the first run may still compile modules)."""
    path = tmp_path_factory.mktemp("calls") / "calls.json"
    for _ in range(2):
        assert _verify_interrupted_at(-1, path).returncode == 0
    counted = json.loads(path.read_text())
    assert 1000 < counted["calls"] and 0 < counted["app_main"] < counted["calls"], counted
    return counted


@pytest.mark.parametrize("moment", ["0", "1/8", "2/8", "3/8", "4/8", "5/8", "6/8", "7/8", "app.main",
                                    "app.main+1", "app.main+3", "last"])
def test_ctrl_c_while_kafkalog_is_still_importing_is_not_a_traceback(moment, import_calls):
    """SIGINT at any moment from kafkalog's first import of the click application (some 100 ms) until
    app.main's own handler is in place: exit 130 and the one line, no traceback, nothing on stdout. The
    moment is a Python call (every call in that window is a place Python can raise KeyboardInterrupt),
    spread over the window and at app.main's start (before: a traceback through app.py and a death by
    SIGINT); a delay after the start measured in time mostly hit the interpreter's own start-up under load
    (site, before kafkalog runs: a death by SIGINT before Python handles it, or its traceback)."""
    total, main_at = import_calls["calls"], import_calls["app_main"]
    if "/" in moment:
        num, den = map(int, moment.split("/"))
        call = total * num // den
    else:
        call = {"0": 0, "app.main": main_at, "app.main+1": main_at + 1, "app.main+3": main_at + 3,
                "last": total - 1}[moment]
    res = _verify_interrupted_at(call)
    text = res.stderr.decode(errors="replace")
    assert res.returncode == 130, text
    assert text.splitlines() == ["kafkalog: interrupted"], text
    assert res.stdout == b""


def _records(d: Path) -> list[str]:
    out = run_cli("dump-log", "--print-data-log", "--format", "json", str(d)).out
    return sorted(line.replace(str(d), "") for line in out.splitlines() if '"type":"record"' in line)


@pytest.mark.parametrize("pause_after", [0, 3, 8])
def test_ctrl_c_in_a_writing_command_then_rerun_completes(tmp_path, pause_after):
    """SIGINT in the middle of ``retain`` (between two file operations): exit 130 with the hint; the same
    command again (no recover in between) leaves exactly what an uninterrupted run leaves."""
    args = ["retain", "--retention-ms", "20000", "--now", "1700000050000", "--partition", "orders-0",
            "--partition", "payments-0"]
    clean, hit = tmp_path / "clean", tmp_path / "interrupted"
    copy_logdir(clean)
    copy_logdir(hit)
    assert run_cli(*args, str(clean)).code in (0, 1)
    proc = subprocess.Popen(KAFKALOG + args + [str(hit)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(KAFKALOG_PAUSE_AFTER=str(pause_after)),
                            start_new_session=True, preexec_fn=ctrl_c_default)
    assert b"paused" in proc.stderr.readline()
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.stderr.read().decode()
    proc.stdout.close()
    assert proc.wait(timeout=60) == 130
    assert "Traceback" not in err
    assert "kafkalog: interrupted; every step is crash-safe" in err
    assert max(map(len, err.splitlines())) <= 80, err
    assert run_cli(*args, str(hit)).code in (0, 1)
    assert _records(hit) == _records(clean)
    assert run_cli("verify", str(hit)).code == 0


def test_quiet_and_no_progress_are_global_options():
    for opt in ("--quiet", "-q", "--no-progress", "--color=never"):
        assert run_cli(opt, "verify", str(FIXTURES / "logdir")).code == 0
    bad = run_cli("--color=sometimes", "verify", str(FIXTURES / "logdir"))
    assert bad.code == 2 and "sometimes" in bad.err


def test_man_prints_every_page_as_text_without_a_terminal():
    from kafkalog_cli.app import COMMANDS
    for name in [None, *COMMANDS]:
        args = ["man"] + ([name] if name else [])
        done = subprocess.run(KAFKALOG + args, cwd=REPO, capture_output=True, env=_env(), timeout=60)
        assert done.returncode == 0, done.stderr
        text = done.stdout.decode()
        title = "kafkalog" if name is None else f"kafkalog-{name}"
        assert "NAME" in text and title in text and "\\f" not in text and ".TP" not in text


def test_man_fallback_renderer_without_man_or_nroff():
    """No man(1), no nroff: the page is still readable text (fonts and escapes removed)."""
    from kafkalog_cli.render.man_text import roff_to_text
    page = (REPO / "man" / "kafkalog-retain.1").read_text()
    text = roff_to_text(page)
    assert text.startswith("KAFKALOG-RETAIN(1)")
    assert "kafkalog retain [OPTIONS] PATH" in text
    assert "--retention-ms MS" in text.replace("\n", " ") or "--retention-ms" in text
    assert "\\-" not in text and "\\f" not in text


def test_man_rejects_an_unknown_command():
    bad = run_cli("man", "frobnicate")
    assert bad.code == 2 and "frobnicate" in bad.err


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_and_its_answers(shell):
    script = run_cli("completion", shell)
    assert script.code == 0 and "_KAFKALOG_COMPLETE" in script.out
    if shell == "bash":
        done = subprocess.run(KAFKALOG, cwd=REPO, capture_output=True, text=True, timeout=60,
                              env=_env(_KAFKALOG_COMPLETE="bash_complete", COMP_WORDS="kafkalog dump",
                                       COMP_CWORD="1"))
        assert done.returncode == 0
        assert "dump-log" in done.stdout


@pytest.mark.parametrize("words, expected", [
    ("dump-log --decoder ", {"auto", "offsets", "cluster-metadata", "string", "json"}),
    ("lookup-offset --decoder tr", {"transaction-log"}),
    ("dump-log --key-decoder ", {"string", "hex", "base64", "json", "schema-registry", "none"}),
    ("lookup-time --value-decoder ", {"string", "json", "schema-registry-hex"}),
    ("dump-log --format ", {"text", "json"}),
    ("verify --format ", {"text", "json", "junit"}),
    ("retain --format ", {"text", "json"}),
    ("export --on-error ", {"skip", "quarantine", "fail"}),
], ids=["decoder", "decoder-prefix", "key-decoder", "value-decoder", "dump-format", "verify-format",
        "retain-format", "on-error"])
def test_completion_offers_the_values_of_options(words, expected):
    """bash completion of an option's value (issue 23: --decoder offered nothing)."""
    done = subprocess.run(KAFKALOG, cwd=REPO, capture_output=True, text=True, timeout=60,
                          env=_env(_KAFKALOG_COMPLETE="bash_complete", COMP_WORDS=f"kafkalog {words}",
                                   COMP_CWORD=str(len(words.split()) + (words.endswith(" ")))))
    assert done.returncode == 0, done.stderr
    offered = {line.split(",", 1)[1] for line in done.stdout.splitlines() if line.startswith("plain,")}
    assert expected <= offered, offered
    assert all(v.startswith(words.split()[-1]) for v in offered) or words.endswith(" ")


def _stderr_on_a_terminal(args: list[str]) -> tuple[int, bytes]:
    """Run kafkalog with stderr on a pseudo-terminal (stdout a pipe); what was drawn on the terminal."""
    import pty  # noqa: F401  (POSIX only; the tests run on Linux)
    import select
    master, slave = os.openpty()
    proc = subprocess.Popen(KAFKALOG + args, cwd=REPO, stdout=subprocess.PIPE, stderr=slave,
                            env=_env(TERM="xterm"))
    os.close(slave)
    proc.stdout.read()
    code = proc.wait(timeout=120)
    drawn = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    return code, drawn


@pytest.mark.parametrize("command", [["verify"], ["recover", "--dry-run"]], ids=["verify", "recover"])
def test_progress_on_a_terminal_and_its_global_switches(command):
    logdir = str(FIXTURES / "logdir")
    code, drawn = _stderr_on_a_terminal(command + [logdir])
    assert code in (0, 1) and b"kB" in drawn                     # a progress bar was drawn
    for switch in ("--no-progress", "--quiet"):
        code, drawn = _stderr_on_a_terminal([switch] + command + [logdir])
        assert code in (0, 1) and drawn == b"", switch


def _closed_stdout(args: list[str]) -> subprocess.CompletedProcess:
    """Run kafkalog with a stdout whose reader has already gone (a pipe with its read end closed), its output
    block-buffered as it is for a user (PYTHONUNBUFFERED would make the first write fail at once)."""
    r, w = os.pipe()
    os.close(r)
    env = _env()
    env.pop("PYTHONUNBUFFERED", None)
    try:
        return subprocess.run(KAFKALOG + args, cwd=REPO, stdout=w, stderr=subprocess.PIPE, env=env, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("command", ["compact", "retain", "recover", "diff", "verify", "lookup-offset"])
@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real"])
def test_a_closed_stdout_ends_quietly_with_141_for_every_command(tmp_path, command, dry):
    """compact (and retain) took a closed pipe for an I/O error of their own and printed "compact stopped
    ... interrupted operation" with status 3; a closed stdout ends every command quietly with 141, and a
    writer whose report nobody can read changes nothing (it looks before the first change: its report comes
    at the end)."""
    if command in ("verify", "diff", "lookup-offset") and not dry:
        pytest.skip("read-only command")
    logdir = copy_logdir(tmp_path / "logdir")
    argv = {"compact": ["compact", "--all", "--force", "--config", "cleanup.policy=compact", str(logdir)],
            "retain": ["retain", "--all", "--retention-ms", "0", str(logdir)],
            "recover": ["recover", "--all-segments", str(logdir)],
            "diff": ["diff", str(logdir / "orders-0"), str(FIXTURES / "damaged" / "flipped-crc-byte" / "orders-0")],
            "verify": ["verify", str(logdir)],
            "lookup-offset": ["lookup-offset", str(logdir / "orders-0"), "5"]}[command]
    if dry and command in ("compact", "retain", "recover"):
        argv.insert(1, "--dry-run")
    before = {p: p.read_bytes() for p in sorted(logdir.rglob("*")) if p.is_file()}
    done = _closed_stdout(argv)
    assert done.returncode == 141, done.stderr
    assert done.stderr == b""
    after = {p: p.read_bytes() for p in sorted(logdir.rglob("*")) if p.is_file()}
    if command in ("compact", "retain", "recover"):   # stdout is checked before the first change
        assert after == before
