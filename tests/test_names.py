"""Names that are not UTF-8 or hold control characters (issue 24, items 6 and 7): every command's every
output format stays readable and parseable. A directory ``t\\xff\\xfe-0`` crashed dump-log --format json;
``ctl\\x1b[31mred\\x07-0`` reached the terminal raw and made verify --format junit write XML parsers reject.

The escapes (kafkalog_cli/names.py, kafkalog(1)): JSON writes a byte that is not UTF-8 as ``\\xHH`` and
a backslash as ``\\\\`` in name fields, so a name's bytes come back exactly; text and XML show bytes that
are not UTF-8 and control characters as ``\\xHH``, invisible format characters as ``\\uHHHH``."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.dom import minidom

import pytest

from conftest import FIXTURES, REPO

ODD = [b"t\xff\xfe-0", b"ctl\x1b[31mred\x07-0", b"back\\slash\xe2\x80\xaeevil-0"]


@pytest.fixture
def odd_logdir(tmp_path) -> bytes:
    """A log directory (with its own checkpoints) of three partitions with hostile names."""
    d = os.fsencode(tmp_path / "logdir")
    os.mkdir(d)
    for name in ODD:
        shutil.copytree(os.fsencode(FIXTURES / "logdir" / "orders-0"), os.path.join(d, name))
    shutil.copy(FIXTURES / "logdir" / "meta.properties", os.fsdecode(d) + "/meta.properties")
    lines = [b"0", str(len(ODD)).encode()] + [n.rsplit(b"-", 1)[0] + b" 0 91" for n in ODD]
    for cp in (b"replication-offset-checkpoint", b"recovery-point-offset-checkpoint"):
        with open(os.path.join(d, cp), "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
    return d


def _run(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="80")
    return subprocess.run([sys.executable, "-m", "kafkalog_cli", *args], cwd=REPO, capture_output=True,
                          env=env, timeout=300)


def _readable(data: bytes, what: str) -> str:
    """Valid UTF-8, and nothing a terminal would act on (no ESC, BEL, bidi override) or hide."""
    text = data.decode("utf-8")                     # raises on anything that is not UTF-8
    bad = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b-\u200f]", text)
    assert not bad, (what, bad)
    return text


COMMANDS = [
    ["dump-log"], ["dump-log", "--print-data-log", "--deep-iteration"], ["verify"], ["verify", "--details"],
    ["recover", "--dry-run"], ["retain", "--dry-run", "--all", "--retention-ms", "0"],
    ["compact", "--dry-run", "--all", "--force", "--config", "cleanup.policy=compact"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(a[:2]))
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_output_shows_hostile_names_escaped(odd_logdir, args, fmt):
    if fmt == "json":
        args = args + ["--format", "json"]
    done = _run(*[*args, odd_logdir])
    assert done.returncode in (0, 1), done.stderr.decode(errors="replace")
    out = _readable(done.stdout, "stdout")
    _readable(done.stderr, "stderr")
    assert b"Traceback" not in done.stderr
    if fmt == "json":
        objs = [json.loads(line) for line in out.splitlines()]
        files = {o.get("file") for o in objs} | {o.get("partition") for o in objs} | {o.get("group") for o in objs}
        said = " ".join(str(f) for f in files)
        assert "t\\xff\\xfe-0" in said and "ctl\x1b[31mred\x07-0" in said      # JSON escapes ESC itself
        assert "back\\\\slash\u202eevil-0" in said                              # \\ for a backslash
    elif args != ["verify"]:           # (verify names only partitions with findings; these have none)
        assert "t\\xff\\xfe-0" in out and "ctl\\x1b[31mred\\x07-0" in out and "\\u202e" in out


def test_a_json_name_gives_the_bytes_back(odd_logdir):
    """Undo ``\\\\`` and ``\\xHH``: the exact bytes of the directory name."""
    done = _run("dump-log", "--format", "json", odd_logdir)
    names = set()
    for line in done.stdout.decode().splitlines():
        f = json.loads(line).get("file")
        if f and f.endswith(".log"):
            names.add(f.rsplit("/", 2)[-2])

    def unescape(s: str) -> bytes:
        out, i = bytearray(), 0
        while i < len(s):
            if s.startswith("\\\\", i):
                out += b"\\"
                i += 2
            elif s.startswith("\\x", i):
                out.append(int(s[i + 2:i + 4], 16))
                i += 4
            else:
                out += s[i].encode()
                i += 1
        return bytes(out)
    assert {unescape(n) for n in names} == set(ODD)


def test_junit_xml_with_hostile_names_is_well_formed(odd_logdir, tmp_path):
    report = tmp_path / "verify.xml"
    done = _run("verify", "--format", "junit", "--output", str(report), odd_logdir)
    assert done.returncode in (0, 1), done.stderr
    doc = minidom.parse(str(report))                   # expat: rejects what XML 1.0 forbids
    suites = {s.getAttribute("name") for s in doc.getElementsByTagName("testsuite")}
    assert {"t\\xff\\xfe-0", "ctl\\x1b[31mred\\x07-0", "back\\slash\\u202eevil-0"} <= suites


def test_diff_and_lookups_escape_names(odd_logdir):
    a, b = (os.path.join(odd_logdir, n) for n in ODD[:2])
    for args in (["diff", a, b], ["diff", "--format", "json", a, b], ["lookup-offset", a, "5"],
                 ["lookup-time", "--format", "json", b, "0"]):
        done = _run(*args)
        assert done.returncode in (0, 1), done.stderr
        _readable(done.stdout, args[0])
        _readable(done.stderr, args[0])
