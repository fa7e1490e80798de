"""Fuzz harness: every command on mutated copies of real log directories, each run in a child process
with an address-space limit and a time limit, asserting what kafkalog promises on bad input.

Per run the assertions are: the exit status is in {0, 1, 2, 3}; no traceback; the run finished (within
``--timeout`` seconds of wall time); its peak resident set is under ``--rss-mib`` (400 MiB by default,
the bound the README documents); no message (stderr, and the reports of verify, recover, retain and
compact) shows Python's ``None`` or a section of our spec instead of Kafka's terms; a command that does
not change files (dry runs included) leaves every file's size, mode and times as they were; no run runs
out of file descriptors. The generators of issue 24 add: many segments run under a low ``ulimit -n``
(64-256, the soft limit); a run on sparse files finishes within ``--slow`` seconds (time follows the
bytes read, not apparent sizes); and when every mutation wrote valid data (names, configurations, many
segments, sparse indexes and snapshots, distinct keys, a record of many headers) on a seed verify passes,
recover keeps every batch, retain only whole segments below what stays and nothing at or above the high
watermark, compact every keyed batch added. Each run's peak of open files is sampled from /proc and reported per command.
The state views (describe, consumer-groups, transactions) run on every case; ``coordinator_payloads`` (issue 35)
appends CRC-valid mutated ``__consumer_offsets`` and ``__transaction_state`` records for them to replay.

Design: a fork server. The parent imports kafkalog and every command module once, then for each case
copies one partition (with its log directory's checkpoints and metadata) from a seed into a scratch
directory (``/dev/shm`` when present), applies one to three mutations from ``tests/damage.py``, and for
each command forks a child that sets ``RLIMIT_AS`` and ``RLIMIT_CPU``, runs ``kafkalog_cli.app.main``
(or the Spark export's per-segment reader, without Spark) on the copy with stdout/stderr in files, and
exits with the command's status. The parent measures the child's peak RSS with ``wait4`` and kills it
after the wall-time limit (a run blocked on a FIFO is caught that way), or once its standard output
passes ``OUTPUT_BYTES`` (counted as capped in the report, not a failure). Commands that change files get
their own copy.

Seeds: ``fixtures/`` (log directory and the damaged ones) and ``../shared/corpus/real`` (real brokers'
directories, 0.11 to 3.x).

    python tools/fuzz_harness.py --runs 2000 --seed 1            # a few minutes
    nice -n 19 python tools/fuzz_harness.py --hours 3 --workers 2 --report fuzz-report.json

Failures are written to the report (JSON) with the seed, mutations and command, so each can be
replayed with ``--replay CASE_SEED``; a failing case's scratch directory is kept under ``--keep``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import stat
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

ALLOWED = {0, 1, 2, 3}
#: the high watermark retain and compact are given (batches at or above it are never theirs to remove)
HIGH_WATERMARK = 100_000
LOGDIR_FILES = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
                "cleaner-offset-checkpoint", "meta.properties", ".kafka_cleanshutdown", "bootstrap.checkpoint")


# --- seeds ---------------------------------------------------------------------------------------

def find_seeds(roots: list[Path], max_bytes: int = 3 << 20) -> list[tuple[Path, Path]]:
    """(log directory, partition directory) pairs below ``roots`` (partitions up to ``max_bytes``)."""
    from kafkalog_cli.layout import parse_partition_dir
    seeds = []
    for root in roots:
        if not root.is_dir():
            continue
        for d in sorted(root.rglob("*")):
            if not d.is_dir() or parse_partition_dir(d.name) is None:
                continue
            files = [p for p in d.iterdir() if p.is_file()]
            if not any(p.name.endswith(".log") for p in files):
                continue
            if sum(p.stat().st_size for p in files) > max_bytes:
                continue
            seeds.append((d.parent, d))
    return seeds


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a (mutated) directory: FIFOs re-made, symlinks kept, sparse files kept sparse."""
    import stat as st
    dst.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(src):
        s, d = Path(entry.path), dst / entry.name
        mode = entry.stat(follow_symlinks=False).st_mode
        if st.S_ISLNK(mode):
            os.symlink(os.readlink(s), d)
        elif st.S_ISDIR(mode):
            copy_tree(s, d)
        elif st.S_ISFIFO(mode):
            os.mkfifo(d)
        elif st.S_ISREG(mode):
            _copy_sparse(s, d)


def _copy_sparse(s: Path, d: Path) -> None:
    size = s.stat().st_size
    with open(s, "rb") as fi, open(d, "wb") as fo:
        if size <= (16 << 20):
            fo.write(fi.read())
            return
        fd = fi.fileno()
        pos = 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            os.lseek(fd, start, os.SEEK_SET)
            fo.seek(start)
            left = end - start
            while left:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                fo.write(chunk)
                left -= len(chunk)
            pos = end
        fo.truncate(size)


def copy_case(logdir: Path, part: Path, dest: Path) -> tuple[Path, Path]:
    """A minimal log directory at ``dest``: the partition plus the log directory's own files."""
    out = dest / "logdir"
    out.mkdir(parents=True)
    for name in LOGDIR_FILES:
        src = logdir / name
        if src.is_file():
            shutil.copyfile(src, out / name)
    shutil.copytree(part, out / part.name, symlinks=True)
    return out, out / part.name


# --- commands ------------------------------------------------------------------------------------

def commands(logdir: Path, part: Path, rng: random.Random, original: Path) -> list[tuple[str, list[str], bool]]:
    """(name, argv, changes files) for one case: every command, some options drawn at random; ``diff``
    compares the mutated partition with ``original``, the unmutated seed (a healthy replica)."""
    p, d = str(part), str(logdir)
    decoders = []
    if part.name.startswith("__consumer_offsets"):
        decoders = ["--offsets-decoder"]
    elif part.name.startswith("__transaction_state"):
        decoders = ["--transaction-log-decoder"]
    elif part.name.startswith("__cluster_metadata"):
        decoders = ["--cluster-metadata-decoder"]
    else:
        decoders = rng.choice(([], ["--value-decoder", "json"], ["--key-decoder", "hex", "--value-decoder", "base64"]))
    cfg = config_options(logdir.parent)
    off = str(rng.choice((0, 1, 5, 13, 25, 40, 80, 90, rng.randrange(200))))
    ts = rng.choice(("earliest", "latest", "max-timestamp", "0", "1700000000000", str(rng.randrange(1 << 41))))
    return [
        ("dump-log", ["dump-log", "--deep-iteration", "--print-data-log", *decoders, p], False),
        ("dump-log-json", ["dump-log", "--format", "json", "--print-data-log", *decoders, p], False),
        ("dump-log-index", ["dump-log", rng.choice(("--verify-index-only", "--index-sanity-check")), p], False),
        ("verify", ["verify", d], False),
        ("verify-json", ["verify", "--format", "json", rng.choice(("--shallow", "--show-info")), p], False),
        ("lookup-offset", ["lookup-offset", "--print-data-log", p, off], False),
        ("lookup-time", ["lookup-time", "--format", "json", p, ts], False),
        ("recover-dry-run", ["recover", "--dry-run", "--include-metadata-log", d], False),
        ("recover", ["recover", "--all-segments", "--force", "--include-metadata-log", d], True),
        ("retain-dry-run", ["retain", "--dry-run", "--all", "--retention-ms", "0", "--retention-bytes", "100",
                            *cfg, d], False),
        ("retain", ["retain", "--retention-bytes", rng.choice(("0", "1000", "100000")), "--high-watermark",
                    str(HIGH_WATERMARK), *cfg, p], True),
        ("compact-dry-run", ["compact", "--dry-run", "--force", "--config", "cleanup.policy=compact",
                             "--high-watermark", str(HIGH_WATERMARK), *cfg, p], False),
        ("compact", ["compact", "--force", "--config", "cleanup.policy=compact", "--delete-retention-ms", "0",
                     "--high-watermark", str(HIGH_WATERMARK), *cfg, p], True),
        ("diff", ["diff", "--format", rng.choice(("text", "json")), p, str(original)], False),
        ("delete-records-dry-run", ["delete-records", "--dry-run", *_offsets_option(logdir.parent, part),
                                    *_server_option(logdir.parent), "--config", "cleanup.policy=delete", d], False),
        ("describe", ["describe", *rng.choice(([], ["--details"], ["--format", "json"])), d], False),
        ("consumer-groups", ["consumer-groups", *rng.choice(([], ["--details"], ["--format", "json"],
                                                             ["--format", "csv"], ["--include-expired"])),
                             *rng.choice(([], ["--kafka-version", "3.9"], ["--kafka-version", "4.0"])), d], False),
        ("transactions", ["transactions", "--list", *rng.choice(([], ["--format", "json"])),
                          *rng.choice(([], ["--kafka-version", "3.9"], ["--kafka-version", "4.0"])), d], False),
        ("export-reader", ["<export-reader>", p], False),
        ("scan-reader", ["<scan-reader>", p], False),
    ]


def _offsets_option(base: Path, part: Path) -> list[str]:
    """delete-records' offsets: the file ``damage.huge_text_inputs`` left beside the log directory, else the
    partition's log start (-1: up to the high watermark would change more than a dry run shows)."""
    if (base / "offsets.json").is_file():
        return ["--offset-json-file", str(base / "offsets.json")]
    return ["--offset", f"{os.fsdecode(os.fsencode(part.name))}=0"]


def _server_option(base: Path) -> list[str]:
    return ["--server-properties", str(base / "server.properties")] if (base / "server.properties").is_file() else []


def config_options(base: Path) -> list[str]:
    """retain's and compact's configuration options from the files ``damage.giant_config`` left beside the
    log directory (none when it did not run)."""
    out = _server_option(base)
    if (base / "topic-configs").is_dir():
        out += ["--topic-configs", str(base / "topic-configs")]
    elif (base / "topic-configs.txt").is_file():              # damage.huge_text_inputs
        out += ["--topic-configs", str(base / "topic-configs.txt")]
    if (base / "config-args.txt").is_file():
        for line in (base / "config-args.txt").read_text(errors="surrogateescape").splitlines():
            out += ["--config", line]
    return out


def run_export_reader(path: str) -> int:
    """What export's executors do per segment range (plan + read_range), without Spark: with export's
    default ``--on-error skip`` every problem is collected, and any makes the status 1 as export's does."""
    from kafkalog_cli.spark import problems as P
    from kafkalog_cli.spark.options import ReadOptions
    from kafkalog_cli.spark.plan import plan_ranges
    from kafkalog_cli.spark.rows import read_range
    opts = ReadOptions(on_error="skip")
    plan = plan_ranges([path], opts)
    rows = 0
    sink = P.ReadSink("skip")
    for r in plan.ranges:
        for rb in read_range(r, opts, sink=sink):
            rows += rb.num_rows
    return 1 if sink.errors else 0


def run_scan_reader(path: str) -> int:
    """What scan's executors do per segment (verify_segment)."""
    from kafkalog_cli.engine.partition import PartitionLog
    from kafkalog_cli.engine.verify_segment import verify_segment
    log = PartitionLog.open(path)
    bases = list(log.segments)
    for i, b in enumerate(bases):
        verify_segment(log.segments[b].log_path, b, active=i == len(bases) - 1)
    return 0


# --- one run in a child --------------------------------------------------------------------------

def _limit_files(nofile: int) -> None:
    """``ulimit -n``: the soft limit (the hard one stays, as a shell's ``ulimit -Sn`` leaves it)."""
    if nofile:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))


def _note_start_rss(out_dir: Path) -> None:
    """A forked child shares its parent's pages and counts them in its peak RSS (a test process that ran the
    Spark tests first is 600 MiB, and every command then 'peaked' at 600 MiB): reset the high-water mark to
    the present (``/proc/self/clear_refs``, 5) and note the resident set inherited, which the parent
    subtracts from the peak wait4 reports, leaving the command's own growth."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        with open("/proc/self/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        (out_dir / "start_rss").write_text(str(rss))
    except (OSError, StopIteration, ValueError):
        pass


def _child(argv: list[str], out_dir: Path, as_bytes: int, cpu_s: int, nofile: int = 0) -> None:
    os.setpgid(0, 0)
    resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    _note_start_rss(out_dir)
    fd_out = os.open(out_dir / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    fd_err = os.open(out_dir / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(fd_out, 1)
    os.dup2(fd_err, 2)
    for fd in (fd_out, fd_err, devnull):
        os.close(fd)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    _limit_files(nofile)
    code = 0
    try:
        if argv[0] == "<export-reader>":
            code = run_export_reader(argv[1])
        elif argv[0] == "<scan-reader>":
            code = run_scan_reader(argv[1])
        else:
            from kafkalog_cli.app import main
            main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 99
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(code if 0 <= code < 256 else 98)


#: Linux carries a process's peak RSS across exec (the old memory map's high-water mark), and a child
#: starts from its parent's: a command spawned straight from a large process (a test process after the
#: Spark tests) would report that process's peak. A small launcher forks the command and reports the
#: command's own peak (in the file named by its first argument), then ends as the command did.
_LAUNCH = ("import os, signal, sys\n"
           "pid = os.fork()\n"
           "if pid == 0:\n"
           "    os.execv(sys.executable, [sys.executable] + sys.argv[2:])\n"
           "_, status, ru = os.wait4(pid, 0)\n"
           "with open(sys.argv[1], 'w') as f:\n"
           "    f.write(str(ru.ru_maxrss))\n"
           "if os.WIFSIGNALED(status):\n"
           "    try:\n"
           "        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)\n"
           "    except (OSError, ValueError):\n"
           "        pass\n"
           "    os.kill(os.getpid(), os.WTERMSIG(status))\n"
           "os._exit(os.WEXITSTATUS(status))\n")


def _spawn(argv: list[str], out_dir: Path, as_bytes: int, cpu_s: int, nofile: int = 0) -> int:
    """A real ``python -m kafkalog_cli`` process (the small sample of fresh-interpreter runs)."""
    import subprocess

    def limits():
        os.setpgid(0, 0)
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        _limit_files(nofile)
    if argv[0].startswith("<"):
        fn = "run_export_reader" if argv[0] == "<export-reader>" else "run_scan_reader"
        cmd = ["-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
               f"import fuzz_harness as h; sys.exit(h.{fn}({argv[1]!r}))"]
    else:
        cmd = ["-m", "kafkalog_cli", *argv]
    cmd = [sys.executable, "-c", _LAUNCH, str(out_dir / "maxrss"), *cmd]
    with open(out_dir / "stdout", "wb") as o, open(out_dir / "stderr", "wb") as e:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=o, stderr=e, preexec_fn=limits).pid


#: A run over its time limit that has had less than half of it on a CPU (the machine busy with other work:
#: the harness runs at nice 19) may go on up to this many times the limit: a hang uses no CPU time either,
#: and is still stopped there. Two runs of dump-log --offsets-decoder on 3 M records (43 s alone) were
#: stopped at 120 s with 8-19 s of CPU while a test suite ran beside the harness.
STARVED_FACTOR = 4


def _starved(pid: int, timeout: float, elapsed: float) -> bool:
    if elapsed > STARVED_FACTOR * timeout:
        return False
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    cpu = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")     # utime stime cutime cstime
    return cpu < timeout / 2


def _open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def run_one(argv: list[str], out_dir: Path, timeout: float, as_bytes: int, fresh: bool = False,
            nofile: int = 0) -> dict:
    """Run one command in a forked child (or, with ``fresh``, a new interpreter) under the limits; its
    peak of open files is sampled from /proc every few milliseconds (``fresh``: the launcher's)."""
    t0 = time.monotonic()
    (out_dir / "start_rss").unlink(missing_ok=True)
    pid = _spawn(argv, out_dir, as_bytes, int(timeout), nofile) if fresh else os.fork()
    if pid == 0:
        try:
            _child(argv, out_dir, as_bytes, int(timeout), nofile)
        finally:
            os._exit(97)
    status, ru, timed_out, capped = None, None, False, False
    fds, polls = 0, 0
    while True:
        wpid, status, ru = os.wait4(pid, os.WNOHANG)
        if wpid:
            break
        if polls % 4 == 0:
            fds = max(fds, _open_files(pid))
        polls += 1
        if polls % 64 == 0:
            capped = _output_size(out_dir) > OUTPUT_BYTES
        elapsed = time.monotonic() - t0
        over = elapsed > timeout and not _starved(pid, timeout, elapsed)    # waiting for a CPU is not a hang
        if capped or over:
            timed_out = not capped
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status, ru = os.wait4(pid, 0)
            break
        time.sleep(0.002)
    elapsed = time.monotonic() - t0
    err = (out_dir / "stderr").read_text(errors="replace") if (out_dir / "stderr").exists() else ""
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
    else:
        code = -os.WTERMSIG(status)
    maxrss = ru.ru_maxrss
    try:
        if fresh:                        # the command's own peak, from the launcher (_LAUNCH)
            maxrss = int((out_dir / "maxrss").read_text())
        else:                            # the command's own growth, not the pages it shares with us
            maxrss = max(0, maxrss - int((out_dir / "start_rss").read_text()))
    except (OSError, ValueError):
        pass
    return {"code": code, "rss_mib": round(maxrss / 1024, 1), "seconds": round(elapsed, 3), "open_files": fds,
            "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 3),
            "timed_out": timed_out, "output_capped": capped,
            "traceback": "Traceback (most recent call last)" in err, "stderr_tail": err[-3000:]}


#: a run's standard output is cut here (the run is stopped, not failed): a listing of every record of a
#: decompression bomb (diff's JSON lines, 18 M records, 8 GB) must not fill ``/dev/shm``
OUTPUT_BYTES = 1 << 30


def _output_size(out_dir: Path) -> int:
    try:
        return (out_dir / "stdout").stat().st_size
    except OSError:
        return 0


#: what a message to users never holds: Python's None, our spec's section numbers (Kafka's terms instead)
#: Python's None and references to our spec's sections ("§7.1"); a bare "§" can come from the damaged
#: input a message quotes (Kafka's Uuid error names the bad string)
_NOT_KAFKA = re.compile(r"\bNone\b|§\s?\d+\.\d|kafka-on-disk")
#: commands whose standard output is a report (no record data, which may hold any text)
REPORTS = ("verify", "verify-json", "recover-dry-run", "recover", "retain-dry-run", "retain", "compact-dry-run",
           "compact", "describe", "consumer-groups", "transactions")


def unkafka_words(text: str) -> str | None:
    m = _NOT_KAFKA.search(text)
    return None if m is None else text[max(0, m.start() - 80):m.end() + 40]


def tree_state(root: Path) -> dict:
    """What a command that changes nothing leaves as it was: every entry's type, size, mode and
    modification/change times (a write, rename, link or chmod moves one; reading moves none). The
    ``.lock`` a command creates and deletes again is left out."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(os.fsencode(root)):
        for name in dirnames + filenames:
            if name == b".lock":
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            mode = st.st_mode
            out[path] = (mode, None, None, None) if (mode & 0o170000) == 0o040000 else \
                (mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return out


def tree_changes(before: dict, after: dict) -> str | None:
    """The first difference between two ``tree_state`` results, in words."""
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a != b:
            what = "created" if a is None else "removed" if b is None else "changed"
            return f"{os.fsdecode(path)!a} {what}"
    return None


def log_batches(part: Path) -> list[tuple[int, int]]:
    """(base offset, CRC) of every well-framed v2 batch of the partition's segments in offset order,
    read by the mutators' own walker (not kafkalog's reader)."""
    from damage import v2_batches
    import struct
    out = []
    try:
        logs = sorted((p for p in part.iterdir() if p.name.endswith(".log") and p.name[:-4].isdigit()),
                      key=lambda p: int(p.name[:-4]))
    except OSError:
        return out
    for f in logs:
        try:
            st = f.stat()
            if not stat.S_ISREG(st.st_mode):      # a FIFO named like a segment (special_files): opening blocks
                continue
            data = f.read_bytes() if st.st_size < (256 << 20) else b""
        except OSError:
            continue
        for pos, _size in v2_batches(data):
            out.append((struct.unpack_from(">q", data, pos)[0], struct.unpack_from(">I", data, pos + 17)[0]))
    return out


def lost_records(name: str, before: list, after: list, added: list) -> str | None:
    """What a writer lost on a clean seed whose mutations all write valid data: recover keeps every batch;
    retain removes only whole segments below what stays and nothing at or above the high watermark it is
    given; compact keeps every keyed batch a generator added (keys no later record supersedes; the
    one-record batches of ``many_segments`` have no key, and the cleaner drops such records as Kafka's)."""
    after_set = set(after)
    if name == "recover":
        gone = [b for b in before if b not in after_set]
        return f"recover removed {len(gone)} valid batches (first at offset {gone[0][0]})" if gone else None
    if name == "retain":
        above = [b for b in before if b[0] >= HIGH_WATERMARK and b not in after_set]
        if above:
            return f"retain removed {len(above)} batches above the high watermark (first at {above[0][0]})"
        if after:
            start = after[0][0]
            gone = [b for b in before if b[0] >= start and b not in after_set]
            if gone:
                return f"retain removed {len(gone)} batches above the new log start (first at {gone[0][0]})"
        return None
    if name == "compact":
        gone = [b for b in added if b not in after_set]
        return f"compact lost {len(gone)} added batches of distinct keys (first at {gone[0][0]})" if gone else None
    return None


def check(res: dict, rss_mib: float) -> list[str]:
    bad = []
    if res.get("changed"):
        bad.append(f"changed files without being asked to: {res['changed']}")
    if res.get("lost"):
        bad.append(f"lost data: {res['lost']}")
    if res.get("emfile"):
        bad.append("ran out of file descriptors (open files not bounded)")
    if res.get("slow"):
        bad.append(f"took {res['seconds']} s on a few MB of real bytes (time follows apparent sizes)")
    if res.get("unkafka"):
        bad.append(f"message not in Kafka's terms: {res['unkafka']!r}")
    if res["timed_out"]:
        bad.append("did not finish")
    elif res["code"] not in ALLOWED and not res.get("output_capped"):
        bad.append(f"exit status {res['code']}")
    if res["traceback"]:
        bad.append("traceback")
    if res["rss_mib"] > rss_mib:
        bad.append(f"RSS {res['rss_mib']} MiB")
    return bad


# --- the loop ------------------------------------------------------------------------------------

_CLEAN: dict = {}


def seed_is_clean(logdir: Path, part: Path, scratch: Path, args) -> bool:
    """Whether ``verify`` passes the unmutated seed partition and recover would cut nothing of it (a
    damaged seed may rightly lose data to a writer, so the no-loss check applies to clean seeds only). A
    seed verify passes may still end in a torn write, which Kafka's recovery cuts, deleting every later
    segment with it (``LogLoader.recoverLog``): data a generator appends after it is lost by the broker
    as by recover (fuzz case 7000974). Once per seed per process."""
    key = str(part)
    if key not in _CLEAN:
        d = Path(tempfile.mkdtemp(prefix="seed-", dir=scratch))
        try:
            out, p = copy_case(logdir, part, d)
            res = run_one(["verify", str(p)], d, args.timeout, args.as_mib << 20)
            clean = res["code"] == 0
            if clean:
                res = run_one(["recover", "--dry-run", "--all-segments", "--include-metadata-log", "--format",
                               "json", str(out)], d, args.timeout, args.as_mib << 20)
                clean = res["code"] in (0, 1) and not _truncations((d / "stdout").read_text(errors="replace"))
            _CLEAN[key] = clean
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return _CLEAN[key]


def _truncations(recover_json: str) -> bool:
    """Whether recover's JSON lines plan a cut (or say nothing readable)."""
    try:
        objs = [json.loads(line) for line in recover_json.splitlines() if line.strip()]
    except ValueError:
        return True
    parts = [o for o in objs if o.get("type") == "partition"]
    return not parts or any(o.get("truncations") for o in parts)


def run_case(case_seed: int, seeds, assets, scratch: Path, args, only: set | None = None) -> list[dict]:
    from damage import VALID_GENERATORS, mutate, partition_dir
    rng = random.Random(case_seed)
    logdir_src, part_src = seeds[rng.randrange(len(seeds))]
    case_dir = Path(tempfile.mkdtemp(prefix=f"case{case_seed}-", dir=scratch))
    results = []
    try:
        logdir, part = copy_case(logdir_src, part_src, case_dir / "base")
        names = None if not args.mutator else args.mutator
        mutations = mutate(logdir, part, rng, assets, names)
        part = partition_dir(logdir, part)
        kinds = {m.split(":", 1)[0] for m in mutations}
        # many segments run under a low ``ulimit -n`` (below their count: one file a segment would fail)
        nofile = rng.choice((64, 128, 256)) if "many_segments" in kinds else 0
        # a case that also holds a million records (keys, bombs) or 1,500 segments rightly takes longer
        big = {"distinct_keys", "decompression_bomb", "many_segments", "many_headers"}
        sparse = "sparse_files" in kinds and not kinds & big
        checked = kinds <= set(VALID_GENERATORS) and seed_is_clean(logdir_src, part_src, scratch, args)
        added = []
        if checked and (case_dir / "base" / "added.txt").is_file():
            for line in (case_dir / "base" / "added.txt").read_text().splitlines():
                _seg, off, crc = line.split()
                added.append((int(off), int(crc)))
        before_batches = log_batches(part) if checked else []
        keep = False
        cmds = commands(logdir, part, rng, part_src)
        for name, argv, writes in cmds:
            if only and name not in only:
                continue
            if args.commands and name not in args.commands:
                continue
            run_dir = case_dir / f"run-{name}"
            run_dir.mkdir()
            if writes:
                w = run_dir / "copy"
                copy_tree(case_dir / "base", w)
                argv = [a.replace(str(case_dir / "base"), str(w)) for a in argv]
                work_part = Path(str(part).replace(str(case_dir / "base"), str(w)))
            else:
                state = tree_state(case_dir / "base")
            res = run_one(argv, run_dir, args.timeout, args.as_mib << 20, getattr(args, "subprocess", False),
                          nofile)
            res.update(case=case_seed, command=name, argv=argv, seed_dir=str(part_src), mutations=mutations,
                       nofile=nofile)
            text = res["stderr_tail"]
            if name in REPORTS and (run_dir / "stdout").exists():
                with open(run_dir / "stdout", errors="replace") as f:
                    text += f.read(1 << 20)
            res["unkafka"] = unkafka_words(text)
            res["emfile"] = "Too many open files" in text or "EMFILE" in text
            res["slow"] = sparse and res["seconds"] > getattr(args, "slow", 30.0)
            if not writes:
                res["changed"] = tree_changes(state, tree_state(case_dir / "base"))
            elif checked and res["code"] in (0, 1) and name in ("recover", "retain", "compact"):
                res["lost"] = lost_records(name, before_batches, log_batches(work_part), added)
            res["problems"] = check(res, args.rss_mib)
            keep = keep or bool(res["problems"])
            results.append(res)
        if keep and args.keep:
            dest = Path(args.keep) / f"case{case_seed}"
            shutil.rmtree(dest, ignore_errors=True)
            copy_tree(case_dir / "base", dest)
    finally:
        shutil.rmtree(case_dir, ignore_errors=True)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=0, help="stop after this many command runs (0: no limit)")
    ap.add_argument("--hours", type=float, default=0.0, help="stop after this long (0: no limit)")
    ap.add_argument("--seed", type=int, default=1, help="first case seed (cases are seed, seed+1, ...)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120.0, help="wall-time limit per run, seconds")
    ap.add_argument("--rss-mib", type=float, default=400.0, help="peak RSS bound per run")
    ap.add_argument("--slow", type=float, default=30.0,
                    help="wall-time bound per run on sparse files (a few MB of real bytes), seconds")
    ap.add_argument("--as-mib", type=int, default=6144, help="RLIMIT_AS per run (sparse 2 GiB maps need room)")
    ap.add_argument("--mutator", action="append", help="only this mutator (repeatable)")
    ap.add_argument("--commands", action="append", help="only this command (repeatable)")
    ap.add_argument("--replay", type=int, help="run one case seed and print every result")
    ap.add_argument("--report", default=None, help="write a JSON report here")
    ap.add_argument("--keep", default=None, help="copy failing cases' directories here")
    ap.add_argument("--scratch", default="/dev/shm" if Path("/dev/shm").is_dir() else None)
    ap.add_argument("--no-corpus", action="store_true", help="seed from fixtures/ only")
    ap.add_argument("--subprocess", action="store_true",
                    help="run each command as a fresh interpreter (python -m kafkalog_cli) instead of a fork")
    args = ap.parse_args(argv)

    # import everything once: children start with it loaded (the fork-server part)
    import importlib
    import kafkalog_cli
    import kafkalog_cli.app  # noqa: F401
    # every module of both packages: commands import lazily, and a child that imports pays the compile
    # (without bytecode caching, as this machine's environment sets) on every run
    import pkgutil
    import kafkalog_formats
    for pkg in (kafkalog_cli, kafkalog_formats):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if info.name.endswith(".__main__"):
                continue
            if ".spark." in info.name and not info.name.endswith((".rows", ".rows_native", ".decode", ".plan")):
                continue                # the rest of Spark's side needs pyspark, which the readers do not use
            try:
                importlib.import_module(info.name)
            except Exception:
                pass
    for lib in ("numpy", "cramjam", "lz4.block", "lz4.frame", "zstandard", "xxhash", "fastavro"):
        try:                                # the codecs' and decoders' libraries, imported on first use
            importlib.import_module(lib)
        except ImportError:
            pass
    from damage import Assets

    roots = [REPO / "fixtures"]
    shared = Path(os.environ.get("KAFKALOG_SHARED", REPO.parent / "shared"))
    if not args.no_corpus:
        roots.append(shared / "corpus" / "real")
    seeds = find_seeds(roots)
    scratch = Path(tempfile.mkdtemp(prefix="kafkalog-fuzz-", dir=args.scratch))
    assets = Assets(Path(args.scratch or tempfile.gettempdir()) / "kafkalog-fuzz-assets")
    if args.replay is not None:
        for r in run_case(args.replay, seeds, assets, scratch, args):
            print(json.dumps({k: v for k, v in r.items() if k != "stderr_tail"}))
            if r["problems"]:
                print(ascii(r["stderr_tail"]))
        shutil.rmtree(scratch, ignore_errors=True)
        return 0
    if args.workers > 1:
        return _parallel(args, seeds, assets, scratch)
    summary = _loop(args, seeds, assets, scratch, args.seed, 1)
    return _finish(args, summary, scratch)


def _loop(args, seeds, assets, scratch, first_seed: int, step: int, save=None) -> dict:
    t_end = time.monotonic() + args.hours * 3600 if args.hours else None
    summary = {"runs": 0, "cases": 0, "failures": [], "max_rss_mib": 0.0, "max_rss_run": None,
               "by_command": {}, "codes": {}, "mutators": {}, "seconds": 0.0}
    t0 = time.monotonic()
    seed = first_seed
    while True:
        if args.runs and summary["runs"] >= args.runs:
            break
        if t_end and time.monotonic() > t_end:
            break
        try:
            results = run_case(seed, seeds, assets, scratch, args)
        except Exception:                # the harness's own failure (a mutator): reported, the loop goes on
            import traceback
            summary.setdefault("harness_errors", []).append({"case": seed, "traceback": traceback.format_exc()[-2000:]})
            print(f"harness error on case {seed}: {traceback.format_exc().splitlines()[-1]}", flush=True)
            results = []
        for r in results:
            summary["runs"] += 1
            c = summary["by_command"].setdefault(r["command"], {"runs": 0, "failures": 0, "max_rss_mib": 0.0,
                                                                "max_open_files": 0, "max_seconds": 0.0, "cpu_seconds": 0.0})
            c["runs"] += 1
            c["cpu_seconds"] = round(c.get("cpu_seconds", 0.0) + r["cpu_seconds"], 3)
            c["max_rss_mib"] = max(c["max_rss_mib"], r["rss_mib"])
            c["max_open_files"] = max(c.get("max_open_files", 0), r.get("open_files", 0))
            c["max_seconds"] = max(c.get("max_seconds", 0.0), r["seconds"])
            for m in r["mutations"]:
                k = m.split(":", 1)[0]
                summary["mutators"][k] = summary["mutators"].get(k, 0) + 1
            code = "output capped" if r.get("output_capped") else str(r["code"])
            summary["codes"][code] = summary["codes"].get(code, 0) + 1
            if r["rss_mib"] > summary["max_rss_mib"]:
                summary["max_rss_mib"] = r["rss_mib"]
                summary["max_rss_run"] = {k: r[k] for k in ("case", "command", "mutations")}
            if r["problems"]:
                c["failures"] += 1
                summary["failures"].append(r)
                print(ascii(f"FAIL case {r['case']} {r['command']}: {r['problems']} {r['mutations']}"), flush=True)
        summary["cases"] += 1
        seed += step
        if summary["cases"] % 50 == 0:
            print(f"{summary['runs']} runs, {len(summary['failures'])} failures, max RSS "
                  f"{summary['max_rss_mib']} MiB, {time.monotonic() - t0:.0f} s", flush=True)
            if save is not None:         # a worker that dies (the OOM killer) keeps what it counted
                summary["seconds"] = round(time.monotonic() - t0, 1)
                save(summary)
    summary["seconds"] = round(time.monotonic() - t0, 1)
    return summary


def _parallel(args, seeds, assets, scratch) -> int:
    """``workers`` loops over interleaved seeds, each in its own process; summaries merged."""
    pids = []
    for w in range(args.workers):
        pid = os.fork()
        if pid == 0:
            if args.runs:                       # --runs is the total over all workers
                args.runs = -(-args.runs // args.workers)
            path = scratch / f"summary-{w}.json"

            def save(summary, path=path):
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(summary))
                os.replace(tmp, path)
            save(_loop(args, seeds, assets, scratch, args.seed + w, args.workers, save))
            os._exit(0)
        pids.append(pid)
    ended = {}
    for w, pid in enumerate(pids):
        ended[w] = os.waitpid(pid, 0)[1]
    merged = {"runs": 0, "cases": 0, "failures": [], "max_rss_mib": 0.0, "max_rss_run": None, "by_command": {},
              "codes": {}, "mutators": {}, "seconds": 0.0}
    for w in range(args.workers):
        p = scratch / f"summary-{w}.json"
        st = ended[w]
        if st != 0:                     # a worker the OOM killer took, say: its runs after its last save are lost
            how = f"signal {os.WTERMSIG(st)}" if os.WIFSIGNALED(st) else f"exit status {os.WEXITSTATUS(st)}"
            print(f"worker {w} ended by {how}: its runs after its last summary (every 50 cases) are not counted",
                  flush=True)
            merged.setdefault("lost_workers", []).append({"worker": w, "ended": how})
        if not p.exists():
            continue
        s = json.loads(p.read_text())
        merged.setdefault("harness_errors", []).extend(s.get("harness_errors", []))
        merged["runs"] += s["runs"]
        merged["cases"] += s["cases"]
        merged["failures"] += s["failures"]
        merged["seconds"] = max(merged["seconds"], s["seconds"])
        if s["max_rss_mib"] > merged["max_rss_mib"]:
            merged["max_rss_mib"], merged["max_rss_run"] = s["max_rss_mib"], s["max_rss_run"]
        for k, v in s["codes"].items():
            merged["codes"][k] = merged["codes"].get(k, 0) + v
        for k, v in s["mutators"].items():
            merged["mutators"][k] = merged["mutators"].get(k, 0) + v
        for k, v in s["by_command"].items():
            c = merged["by_command"].setdefault(k, {"runs": 0, "failures": 0, "max_rss_mib": 0.0,
                                                    "max_open_files": 0, "max_seconds": 0.0, "cpu_seconds": 0.0})
            c["runs"] += v["runs"]
            c["cpu_seconds"] = round(c["cpu_seconds"] + v.get("cpu_seconds", 0.0), 3)
            c["failures"] += v["failures"]
            for m in ("max_rss_mib", "max_open_files", "max_seconds"):
                c[m] = max(c[m], v[m])
    return _finish(args, merged, scratch)


def _finish(args, summary: dict, scratch: Path) -> int:
    shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}, indent=1))
    print(f"{len(summary['failures'])} failing runs, {len(summary.get('harness_errors', []))} harness errors")
    if args.report:
        Path(args.report).write_text(json.dumps(summary, indent=1))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
