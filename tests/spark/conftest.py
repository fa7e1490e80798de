"""One SparkSession per test process for the Spark part of the suite (shared/docs/spark-findings.md §5 recipe).

``local[2]``, UI and console progress off, two shuffle partitions, UTC, quiet log4j2, loopback only,
and C1-only JIT with the serial GC (halves the JVM's start-up CPU on 2 cores; fine for small jobs).
Tests marked ``spark`` need this session (``-m 'not spark'`` deselects them). They skip only where Java
is absent; a missing pyspark is a failure in CI (it installs the ``spark`` extra) and a skip elsewhere.

Under pytest-xdist each worker has a session of its own (its scratch directory in the worker's temporary
directory), stopped after the worker's last Spark test and started again if another comes (``SparkHandle``);
the virtual environments the Spark 3.5 and cluster tests build under .venvs/ are built under a file lock
(``worker_env.venv_lock``), and the process checks look for their own run's processes only.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest


def _reexport_root_conftest() -> None:
    """pytest imports every conftest.py outside a package as the module ``conftest`` (dropping the previous
    one from sys.modules), so after this file is loaded ``from conftest import run_cli`` in any test module
    finds this file. Offer the names of tests/conftest.py here too (not its fixtures: pytest registers
    those from that file itself)."""
    from importlib.util import module_from_spec, spec_from_file_location
    spec = spec_from_file_location("kafkalog_tests_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    root = module_from_spec(spec)
    spec.loader.exec_module(root)
    for name, value in vars(root).items():
        if name.startswith("__") or type(value).__name__ in ("FixtureFunctionDefinition", "FixtureFunctionMarker"):
            continue
        if hasattr(value, "_pytestfixturefunction") or name.startswith("pytest_"):
            continue
        globals().setdefault(name, value)


_reexport_root_conftest()

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from kafkalog_cli.spark.session import LOG4J2  # noqa: E402  (no pyspark import: plain text)


def pytest_collection_modifyitems(config, items):
    """The Spark tests run last (a JVM, py4j and pyspark's imports change the test process; the memory
    measurements of other tests must not depend on whether Spark ran before them). The standalone-cluster
    tests (marker ``spark_cluster``: a master, a worker and three applications, about a minute on 2
    cores) run only when the marker expression names them:
    ``python -m pytest -m spark_cluster tests/spark/test_spark_cluster.py``."""
    ours = [i for i in items if SPARK_TESTS in Path(str(i.fspath)).resolve().parents]
    if ours:
        mine = set(map(id, ours))
        items[:] = [i for i in items if id(i) not in mine] + ours
    skip_unless_selected(config, items, "spark_cluster",  # noqa: F821 - re-exported from tests/conftest.py
                         "standalone Spark cluster: select with -m spark_cluster")
    skip_unless_selected(config, items, "spark35",  # noqa: F821
                         "pyspark 3.5 in a virtual environment of its own: select with -m spark35")


def java_missing_reason() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if (home and (Path(home) / "bin" / "java").is_file()) or shutil.which("java"):
        return None
    return "Java is not installed (Spark needs Java 17+ on PATH or JAVA_HOME)"


def pyspark_missing_reason() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed: pip install -e '.[spark]'"
    return None


def require_spark() -> None:
    reason = java_missing_reason()
    if reason:
        pytest.skip(reason)
    reason = pyspark_missing_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI installs the spark extra: .ci/run)")
        pytest.skip(reason)


def _discoverable_data_source() -> None:
    """Spark registers the ``DefaultSource`` of every top-level ``pyspark_*`` module its workers' Python
    lists with ``pkgutil.iter_modules`` (pyspark ``lookup_data_sources``). A regular install puts
    ``pyspark_kafkalog.py`` in site-packages, where it is listed; an editable install (this checkout)
    serves it through an import hook that ``iter_modules`` does not see. Put the module's directory on
    the workers' path then, as site-packages would be (local workers inherit the environment)."""
    import importlib.util
    import pkgutil
    spec = importlib.util.find_spec("pyspark_kafkalog")
    if spec is None or spec.origin is None:
        return
    here = os.path.dirname(spec.origin)
    listed = {m.name: getattr(m.module_finder, "path", None) for m in pkgutil.iter_modules()
              if m.name == "pyspark_kafkalog"}
    if listed.get("pyspark_kafkalog") not in (None, "") and os.path.abspath(listed["pyspark_kafkalog"]) != os.getcwd():
        return
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (here, os.environ.get("PYTHONPATH")) if x)


class SparkHandle:
    """This test process's SparkSession (one per process: one per pytest-xdist worker), as the tests reach it.
    The session starts when a test first needs it and stops once no Spark test follows in this process
    (``pytest_runtest_teardown``); should one follow after all (pytest-xdist's work stealing can hand a
    worker Spark tests, then others, then Spark tests again), it starts again. Attributes are the live
    session's."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def ensure(self):
        """The live session, started if there is none (kafkalog's commands run in-process use it as the active
        session)."""
        if not _SESSIONS:
            _SESSIONS.append(_start(self.base))
        return _SESSIONS[0]

    def __getattr__(self, name):
        return getattr(self.ensure(), name)


def _start(base: Path):
    from pyspark.sql import SparkSession

    from kafkalog_cli.spark.datasource import register
    _discoverable_data_source()
    base.mkdir(parents=True, exist_ok=True)
    log4j = base / "log4j2.properties"
    log4j.write_text(LOG4J2)
    session = (SparkSession.builder.master("local[2]").appName("kafkalog-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.local.dir", str(base / "local"))
               # what README tells users to set in their own sessions for the kafkalog source's pushdown
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.driver.extraJavaOptions",
                       f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile=file:{log4j}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    require_spark()
    handle = SparkHandle(tmp_path_factory.mktemp("spark"))
    handle.ensure()
    yield handle
    while _SESSIONS:
        _stop(_SESSIONS.pop())


@pytest.fixture(autouse=True)
def _live_spark(request):
    """A test that asks for ``spark`` finds the session live, also when it was stopped before."""
    if "spark" in request.fixturenames:
        request.getfixturevalue("spark").ensure()


_SESSIONS: list = []
SPARK_TESTS = Path(__file__).resolve().parent


def _stop(session) -> None:
    """Stop the session and end its JVM: pyspark keeps the JVM (and py4j's threads) for a next SparkContext
    otherwise, until this process exits; the JVM exits when its standard input closes."""
    from pyspark import SparkContext
    session.stop()
    gateway = SparkContext._gateway
    if gateway is not None:
        SparkContext._gateway = None
        SparkContext._jvm = None
        gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.stdin.close()
            try:
                proc.wait(30)
            except Exception:           # noqa: BLE001 - a JVM that does not exit is ended
                proc.kill()
                proc.wait()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """The Spark tests run together (tests/spark, sorted last); after the last of them in this process the
    session, the JVM and py4j's threads end, so the rest of the suite runs as it does without Spark (its
    memory measurements count every thread's allocations). Under pytest-xdist ``nextitem`` is the next test
    of this worker."""
    if not _SESSIONS:
        return
    if nextitem is not None and SPARK_TESTS in Path(str(nextitem.fspath)).resolve().parents:
        return
    _stop(_SESSIONS.pop())


def live_processes():
    """(pid, command line, environment entries) of every process that is not a zombie."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            yield int(name), cmd, env


def carrying(mark: str) -> list[str]:
    """Live processes whose environment holds ``KAFKALOG_TEST_MARK=mark`` (every process a command started
    inherits it, whatever process group it is in)."""
    want = f"KAFKALOG_TEST_MARK={mark}".encode()
    return [f"{pid}: {cmd[:150]}" for pid, cmd, env in live_processes() if want in env]


# --- the same records, whoever read them: dump-log JSON lines vs Arrow tables of the export ---------

MIN_TS_MS, MAX_TS_MS = -62135596800000, 253402300799999    # Spark's timestamp range (years 1..9999)
DUMP_ARGS = ("dump-log", "--format", "json", "--deep-iteration", "--print-data-log",
             "--key-decoder", "base64", "--value-decoder", "base64")


def _ts(ms):
    return None if ms is None or ms == -1 or not MIN_TS_MS <= ms <= MAX_TS_MS else ms


def _digest(fields: tuple) -> str:
    import hashlib
    return hashlib.sha256(repr(fields).encode()).hexdigest()


def dump_log_records(*paths: str) -> list[tuple]:
    """(segment, offset, sha256 of every field) for each record dump-log prints from ``.log`` files,
    sorted. dump-log gives control records as a decoded ``control`` object, so for them the control
    type and the key/value sizes stand in for the bytes."""
    import base64
    import json
    import os
    r = run_cli(*DUMP_ARGS, *paths)  # noqa: F821 (re-exported from tests/conftest.py)
    batches = {}
    out = []
    for line in r.out.splitlines():
        o = json.loads(line)
        if o["type"] == "batch":
            batches[(o["file"], o["position"])] = o
        elif o["type"] == "record" and o["file"].endswith(".log"):
            b = batches[(o["file"], o["batch_position"])]
            seg = os.path.abspath(o["file"])
            if b["is_control"]:
                data = (o["control"]["type"], o["key_size"], o["value_size"])
            else:
                data = (None if o["key"] is None else base64.b64decode(o["key"]),
                        None if o["value"] is None else base64.b64decode(o["value"]))
            headers = tuple((h["key"], None if h["value"] is None else base64.b64decode(h["value"]))
                            for h in o["headers"])
            fields = (seg, o["offset"], _ts(o["timestamp"]), o["timestamp_type"], data, headers, o["sequence"],
                      b["producer_id"], b["producer_epoch"], b["partition_leader_epoch"], b["is_transactional"],
                      b["is_control"], b["codec"], o["batch_position"], *_topic_partition(seg))
            out.append((seg, o["offset"], _digest(fields)))
    return sorted(out)


def _topic_partition(segment: str) -> tuple:
    from kafkalog_cli.layout import parse_partition_dir
    import os
    d = os.path.basename(os.path.dirname(segment))
    n = parse_partition_dir(d)
    return (n.topic, n.partition) if n else (d, None)


def table_records(table) -> list[tuple]:
    """The same (segment, offset, digest) list from an Arrow table with the export's columns."""
    import pyarrow as pa
    from kafkalog_formats.control import parse_control_key
    cols = {name: table.column(name).to_pylist() for name in table.column_names if name != "timestamp"}
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    if "timestamp_type" not in cols:           # --schema spark-kafka: Kafka's TimestampType id instead
        names = {0: "CreateTime", 1: "LogAppendTime", -1: "NoTimestampType"}
        cols["timestamp_type"] = [names[t] for t in cols["timestampType"]]
    out = []
    for i in range(table.num_rows):
        key, value = cols["key"][i], cols["value"][i]
        if cols["is_control"][i]:
            data = (parse_control_key(key).name, len(key) if key is not None else -1,
                    len(value) if value is not None else -1)
        else:
            data = (key, value)
        headers = tuple((h["key"], h["value"]) for h in cols["headers"][i])
        seg = cols["segment"][i]
        fields = (seg, cols["offset"][i], None if ts[i] is None else ts[i] // 1000, cols["timestamp_type"][i],
                  data, headers, cols["sequence"][i], cols["producer_id"][i], cols["producer_epoch"][i],
                  cols["partition_leader_epoch"][i], cols["is_transactional"][i], cols["is_control"][i],
                  cols["codec"][i], cols["batch_position"][i], cols["topic"][i], cols["partition"][i])
        out.append((seg, cols["offset"][i], _digest(fields)))
    return sorted(out)


def assert_same_records(got: list, want: list) -> None:
    """Counts, then the first differing record (by segment and offset) for a readable failure."""
    assert len(got) == len(want), f"{len(got)} records exported, dump-log printed {len(want)}"
    for g, w in zip(got, want):
        assert g == w, f"first difference: exported {g}, dump-log {w}"


def consumer_view(partition_dir: Path) -> list[tuple[int, bytes | None]]:
    """What a read_committed consumer receives, computed the way Kafka's consumer does it (stateful,
    batch by batch, CompletedFetch.nextFetchedRecord), from dump-log's JSON: the aborted transactions
    of the .txnindex files are consumed as batches reach their first offset, an ABORT marker removes its
    producer, aborted transactional batches and every control batch are skipped."""
    import base64
    import json
    r = run_cli("dump-log", "--format", "json", "--deep-iteration", "--print-data-log", "--value-decoder",
                "base64", str(partition_dir))
    objs = [json.loads(line) for line in r.out.splitlines()]
    aborted = sorted((o["first_offset"], o["producer_id"]) for o in objs if o["type"] == "txn_index_entry")
    records: dict = {}
    batches = []
    for o in objs:
        if o["type"] == "batch" and o["file"].endswith(".log"):
            batches.append(o)
            records[(o["file"], o["position"])] = []
        elif o["type"] == "record" and o["file"].endswith(".log"):
            records[(o["file"], o["batch_position"])].append(o)
    aborted_producers: set = set()
    out = []
    for b in batches:
        if b["producer_id"] >= 0:
            while aborted and aborted[0][0] <= b["last_offset"]:
                aborted_producers.add(aborted.pop(0)[1])
            recs = records[(b["file"], b["position"])]
            if b["is_control"] and recs and recs[0]["control"]["type"] == "ABORT":
                aborted_producers.discard(b["producer_id"])
            elif b["is_transactional"] and b["producer_id"] in aborted_producers:
                continue
        if b["is_control"]:
            continue
        out.extend((rec["offset"], base64.b64decode(rec["value"])) for rec in records[(b["file"], b["position"])])
    return out
