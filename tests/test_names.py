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


def _run(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="80", **(env or {}))
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
    both = b"a\\xff\xfe-0"              # a backslash before "xff", then a byte that is not UTF-8
    shutil.copytree(os.fsencode(FIXTURES / "logdir" / "orders-0"), os.path.join(odd_logdir, both))
    done = _run("dump-log", "--format", "json", "--print-data-log", odd_logdir)
    names, topics = set(), set()
    for line in done.stdout.decode().splitlines():
        o = json.loads(line)
        f = o.get("file")
        if f and f.endswith(".log"):
            names.add(f.rsplit("/", 2)[-2])
            if o.get("type") in ("batch", "record"):
                topics.add(o["topic"])  # batches and records: the same escapes (a topic of bytes that are not
                                        # UTF-8 went through the slow encoder's looser ones, record by record)

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
    assert {unescape(n) for n in names} == set(ODD) | {both}
    assert {unescape(t) for t in topics} == {n.rsplit(b"-", 1)[0] for n in ODD + [both]}


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


def test_found_by_the_fuzz_harness_notices_and_exported_columns_escape_names(odd_logdir):
    """The harness's name generator (issue 24): dump-log's notice about an empty index quoted the path raw
    (a name of bytes that are not UTF-8 crashed a strict UTF-8 output), and export's reader put the
    directory's topic into an Arrow string column as it was (UnicodeEncodeError for every such partition).
    Now the notice is escaped as the Dumping line, and the topic column holds the JSON escapes."""
    from kafkalog_cli.names import json_name
    from kafkalog_cli.spark import problems as P
    from kafkalog_cli.spark.options import ReadOptions
    from kafkalog_cli.spark.plan import plan_ranges
    from kafkalog_cli.spark.rows import read_range
    names = ODD + [b"\xed\xa0\x80x-0"]
    shutil.copytree(os.fsencode(FIXTURES / "logdir" / "orders-0"), os.path.join(odd_logdir, names[-1]))
    for name in names:
        part = os.path.join(odd_logdir, name)
        open(os.path.join(part, b"00000000000000000000.index"), "wb").close()
        r = _run("dump-log", os.fsdecode(part))
        assert r.returncode in (0, 1) and b"Traceback" not in r.stderr, r.stderr[-1500:]
        assert "is empty" in _readable(r.stdout, name)
        opts = ReadOptions(on_error="skip")
        sink = P.ReadSink("skip")
        topics = set()
        for rng in plan_ranges([os.fsdecode(part)], opts).ranges:
            for rb in read_range(rng, opts, sink=sink):
                topics |= set(rb.column("topic").to_pylist())
        assert topics == {json_name(os.fsdecode(name.rsplit(b"-", 1)[0]))}, (name, topics)


@pytest.mark.parametrize("how", ["config", "server.properties"])
def test_an_integer_setting_with_thousands_of_leading_zeros_is_its_value(tmp_path, how):
    """Found by the harness's config generator: ``retention.ms=000...07`` (6,000 zeros) passed the digit
    check (it counted the digits after the zeros) and reached int(), past Python's 4,300-digit limit: a
    traceback in retain and compact. Java's Long.parseLong reads it as 7; so does kafkalog."""
    from conftest import copy_logdir
    ld = copy_logdir(tmp_path / "logdir")
    value = "0" * 6000 + "7"
    if how == "config":
        extra = ["--config", f"retention.ms={value}"]
    else:
        (tmp_path / "server.properties").write_text(f"log.retention.ms={value}\n")
        extra = ["--server-properties", str(tmp_path / "server.properties")]
    for cmd in (["retain", "--dry-run", "--all"], ["compact", "--dry-run", "--all", "--force"]):
        r = _run(*cmd, *extra, str(ld))
        assert b"Traceback" not in r.stderr and r.returncode in (0, 1), r.stderr[-1500:]
    r = _run("retain", "--dry-run", "--all", "--config", "retention.ms=-" + "0" * 6000 + "2", str(ld))
    assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr[-800:]


@pytest.mark.parametrize("args", [
    ["compact", "--force", "--config", "cleanup.policy=compact", "--delete-retention-ms", "0", "--high-watermark",
     "100000"],
    ["retain", "--retention-bytes", "0", "--high-watermark", "100000"],
], ids=["compact", "retain"])
def test_a_topic_name_no_checkpoint_can_hold_is_refused_before_the_first_change(odd_logdir, args):
    """Found by the fuzz harness: compact on a partition directory whose name is not UTF-8 (``t\\xc3-0``)
    cleaned it, then crashed writing cleaner-offset-checkpoint (UnicodeEncodeError, a traceback after the
    segments were swapped). retain and compact now refuse such a partition before they change anything:
    no line of a checkpoint could name it."""
    part = os.path.join(odd_logdir, ODD[0])
    for cp in os.listdir(odd_logdir):             # checkpoints that do not name it (as in the fuzz case)
        if cp.endswith(b"checkpoint"):
            os.unlink(os.path.join(odd_logdir, cp))

    def snapshot() -> dict:
        return {n: open(os.path.join(part, n), "rb").read() for n in os.listdir(part)}
    before = snapshot()
    r = _run(*args, os.fsdecode(part))
    err = r.stdout.decode() + r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err, err
    said = " ".join(err.split())                    # the report wraps at 80 columns
    assert "cannot be written to the log directory's checkpoints" in said and "not UTF-8" in said, err
    assert snapshot() == before
    assert not [n for n in os.listdir(odd_logdir) if n.endswith(b"checkpoint")]


@pytest.mark.parametrize("command", ["retain", "compact"])
def test_a_usage_error_quoting_a_topic_name_escapes_it(odd_logdir, command):
    """Found by the fuzz harness (case 7000399): a setting Kafka would refuse, for a topic whose directory
    name is not UTF-8, gave a usage error quoting the name raw (a lone surrogate, ``t\\udcc3``: a crash
    where stderr is strict UTF-8, ``\\udcc3`` on a terminal); it names the byte as every report does."""
    part = os.path.join(odd_logdir, ODD[0])
    env = {"PYTHONIOENCODING": "utf-8:strict"}
    r = _run(command, "--dry-run", "--config", "max.message.bytes=+0x10", os.fsdecode(part), env=env)
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err, err
    assert "topic t\\xff\\xfe: max.message.bytes='+0x10'" in err and "\\udc" not in err, err
