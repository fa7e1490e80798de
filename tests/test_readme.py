"""Every command of the ``sh`` blocks of the README and of docs/ runs, as written, on the bundled fixtures.

Each command line runs in bash (``set -o pipefail``) in a workspace of its own whose working directory is a
copy of ``fixtures/logdir``, so ``orders-0`` and friends resolve, with the README's placeholder paths
mapped to copies of the bundled fixtures (``PLACES``). In the recover section ``/var/lib/kafka/data`` is
that copy as a broker leaves it after a crash (no clean-shutdown marker, a torn tail): the README's
recover examples are about such a directory. A command must exit 0 or 1 (1: problems found, nothing
read, or recover's repairs), never with a usage error, a traceback or status 3; and the retain, compact
and recover sections each show something happening (a verdict that deletes, cleans or repairs).

Left out, each with its reason (``NOT_RUN``): the lines that need Spark or a Spark cluster, the test
command itself, and the development tools that rewrite the checkout, change the environment or run for
minutes to hours (their own tests and markers cover them; ``test_fixtures_are_current`` below runs
``make_fixtures.py --check``). ``pip install . &&`` in front of a command is left to
tests/test_install.py, which installs the wheel for real.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO

README = REPO / "README.md"
#: the pages whose ``sh`` blocks run: the README and every page of docs/ (the user guide, one page per
#: command, Spark, performance, development and testing, where we differ from Kafka)
PAGES = [README] + sorted((REPO / "docs").rglob("*.md"))

#: (pattern a command line matches, why it is not run), the first that matches
NOT_RUN = [
    (r"-m fuzz|fuzz_harness|fuzz_atheris", "fuzzing: minutes to hours (marker fuzz, tools/fuzz_harness.py)"),
    (r"KAFKALOG_ASAN|tools/bench|\[bench\]", "benchmarks and AddressSanitizer runs take minutes; installing the "
     "bench extra changes the environment"),
    (r"tools/make_fixtures\.py|tools/make_man\.py", "they rewrite the checkout's generated files "
     "(test_fixtures_are_current and tests/test_docs.py check that those are current)"),
    (r"kafkalog export |kafkalog scan |\[spark\]", "needs Spark (tests/spark and tests/test_install.py run export "
     "and scan)"),
    (r"--master spark://|/opt/kafkalog-venv|start-worker\.sh|conda-pack|conda create", "needs a Spark cluster"),
    (r"tools/kafka_scenarios\.py", "generated scenarios against real brokers: minutes to hours (marker scenarios)"),
    (r"python -m pytest\b", "the test suite itself (.ci/run runs it; the broker tests need minutes per version)"),
    (r"kafka-[a-z-]+\.sh ", "a Kafka tool against a running broker (tests/kafka runs them)"),
    (r"--(key|value)-schema ", "needs the user's schema files (tests/test_views.py decodes Avro, Protobuf and JSON "
     "Schema values)"),
]
#: the install of a command line (``pip install . && kafkalog ...``): tests/test_install.py installs for real
INSTALL = re.compile(r"^pip install \S+ && ")


def _blocks() -> list[tuple[str, str, str]]:
    """(section heading, page and line number, block text) of every ``sh`` block of ``PAGES``."""
    out = []
    for page in PAGES:
        text = page.read_text()
        name = page.relative_to(REPO).as_posix()
        for m in re.finditer(r"^```sh\n(.*?)^```", text, re.M | re.S):
            before = text[:m.start()]
            heading = (re.findall(r"^#+ (.*)$", before, re.M) or ["(top)"])[-1]
            out.append((heading, f"{name}:{before.count(chr(10)) + 2}", m.group(1)))
    return out


def _commands(block: str) -> list[str]:
    """The command lines of a block: continuations joined, comments and blank lines dropped."""
    lines, current = [], ""
    for raw in block.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        line = current + line
        current = ""
        line = re.sub(r"\s+#(?![^']*'\)).*$", "", line).strip()      # a comment (not inside jq's quotes)
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _cases():
    cases = []
    for heading, lineno, block in _blocks():
        for n, command in enumerate(_commands(block)):
            why = next((reason for pattern, reason in NOT_RUN if re.search(pattern, command)), None)
            cases.append(pytest.param(heading, command, id=f"{lineno}-{n}",
                                      marks=[pytest.mark.skip(reason=why)] if why else []))
    return cases


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _crashed(d: Path) -> Path:
    """The log directory as a kill -9 leaves it: no clean-shutdown marker, a torn last batch."""
    (d / ".kafka_cleanshutdown").unlink()
    log = d / "orders-0" / "00000000000000000078.log"
    data = log.read_bytes()
    log.write_bytes(data + data[:40])
    return d


def _workspace(ws: Path, heading: str, command: str) -> tuple[str, Path, dict]:
    """The command with its placeholders mapped, its working directory and environment."""
    data = _copy(FIXTURES / "logdir", ws / "data")
    if "kafkalog recover" in heading:
        _crashed(data)
    places = {"/var/lib/kafka/data2": None, "/var/lib/kafka/data": data, "/root/kafka-backup": ws / "backup",
              "/etc/kafka/server.properties": ws / "server.properties", "/tmp/discarded": ws / "discarded",
              "/backups/broker-disks/": ws / "backups", "/backups/broker-1/data": ws / "backups" / "broker-1" / "data",
              "/backups/b1": ws / "backups" / "broker-1" / "data", "/data/": f"{data}/", "/data": data,
              "fixtures/": f"{ws / 'fixtures'}/", "offsets.json": ws / "offsets.json",
              "kafka-logs-": f"{ws / 'cluster' / 'kafka-logs-'}", "cluster/": f"{ws / 'cluster'}/"}
    if "/var/lib/kafka/data2" in command:                    # a second log directory of the same broker
        places["/var/lib/kafka/data2"] = _copy(FIXTURES / "logdir", ws / "data2")
        shutil.rmtree(places["/var/lib/kafka/data2"] / "orders-0")
        shutil.rmtree(data / "orders-1")
    if "/backups" in command:
        for b in ("broker-1", "broker-2"):
            _copy(FIXTURES / "logdir", ws / "backups" / b / "data")
    if "fixtures/" in command:
        _copy(FIXTURES, ws / "fixtures")
    if "kafka-logs-" in command or "cluster/" in command:
        for i in range(3):
            d = _copy(FIXTURES / "logdir", ws / "cluster" / f"kafka-logs-{i}")
            meta = d / "meta.properties"
            meta.write_text(re.sub(r"(node|broker)\.id=\d+", rf"\1.id={i}", meta.read_text()))
    (ws / "server.properties").write_text("log.retention.hours=168\nlog.retention.bytes=-1\n")
    (ws / "offsets.json").write_text('{"partitions": [{"topic": "orders", "partition": 0, "offset": 30}], '
                                     '"version": 1}\n')
    sr_json = re.search(r"```python\n# sr_json\.py\n(.*?)```", (REPO / "docs" / "commands" / "dump-log.md").read_text(),
                        re.S)
    (data / "sr_json.py").write_text(sr_json.group(1))          # the README's plug-in decoder, as written
    home = ws / "home"
    (home / ".config" / "fish" / "completions").mkdir(parents=True)
    command = command.replace("ssh broker1 cat ", "cat ")            # the segment copied over ssh: a local one
    for placeholder in sorted((p for p in places if places[p] is not None), key=len, reverse=True):
        command = re.sub(rf"(?<![\w/.-]){re.escape(placeholder)}", lambda _m, p=placeholder: str(places[p]), command)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPATH")}
    env.update(HOME=str(home), COLUMNS="80", PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}")
    if re.search(r"\s(-o|--output)\s+[^/\s]", command):    # a report named beside: never in a log directory
        return command, ws, env
    return command, data, env



@pytest.mark.parametrize("heading, command", _cases())
def test_readme_command_runs_on_the_bundled_fixtures(tmp_path, heading, command):
    command = INSTALL.sub("", command)
    if "| jq" in command and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    line, cwd, env = _workspace(tmp_path, heading, command)
    done = subprocess.run(["bash", "-c", f"set -o pipefail\n{line}"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode in (0, 1), f"{line}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr and "Usage:" not in done.stderr, done.stderr
    if command.startswith("kafkalog") and "--format" not in command and "completion" not in command:
        assert done.stdout or done.stderr, line                 # it printed something


@pytest.mark.parametrize("section, words", [
    ("`kafkalog retain`", r"^retain( --dry-run)?: (would delete|deleted) "),
    ("`kafkalog compact`", r"^compact( --dry-run)?: (would clean|cleaned) "),
    ("`kafkalog recover`", r"^recover( --dry-run)?: (would make|made) "),
])
def test_the_repair_examples_show_something_happening(tmp_path, section, words):
    """On the bundled fixtures the README's retain, compact and recover examples do something (issue 23: five
    of eight partitions were strays to the metadata and retain --dry-run --all exited 1)."""
    verdicts = []
    for heading, _lineno, block in _blocks():
        if heading != section:
            continue
        for n, command in enumerate(_commands(block)):
            if not command.startswith(f"kafkalog {section.strip('`').split()[1]}"):
                continue
            line, cwd, env = _workspace(tmp_path / f"{n}", heading, command)
            done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=300)
            verdicts.append(done.stdout.split("\n", 1)[0])
    assert any(re.match(words, v) for v in verdicts), verdicts


def test_fixtures_are_current():
    """``python tools/make_fixtures.py --check``: fixtures/ is what the generator writes."""
    done = subprocess.run([sys.executable, "tools/make_fixtures.py", "--check"], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
