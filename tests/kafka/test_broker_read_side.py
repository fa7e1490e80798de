"""Broker test group 1, the read side: what a real broker wrote (scenario ``read-side``, seed 22:
``scenarios.write_read_side``, then a clean shutdown), read by kafkalog and by the same release's own tools
and clients.

* ``dump-log`` text equals ``DumpLogSegments`` (``kafka-dump-log.sh``) of the same release byte for byte, for
  every file kind and every option both have, except the differences the README lists on purpose
  (``documented``); rule "dump-log text output" of docs/kafka-rules.md.
* ``verify`` exits 0 on the directory (never cry wolf).
* every record a consumer read, with ``read_uncommitted`` and ``read_committed``, is what ``dump-log --format
  json`` gives (the committed view derived from the transaction markers in the log).
* ``lookup-time`` answers what the broker's ListOffsets by timestamp answered (``UnifiedLog.fetchOffsetByTimestamp``
  -> ``LogSegment.findOffsetByTimestamp``).
"""
from __future__ import annotations

import difflib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import clients
import jars
import scenarios
from broker import Broker, dump_log_segments
from conftest import run_cli

SEED = 22
TOPICS = ("mixed", "txn", "appendtime")
INTERNAL = ("__consumer_offsets", "__transaction_state", "__cluster_metadata")
ISOLATION = ("read_uncommitted", "read_committed")


@dataclass
class ReadSide:
    version: str
    log_dir: Path
    reads: dict            # (topic, isolation) -> [clients.Read]
    by_time: dict          # (topic, timestamp) -> (offset, timestamp) from ListOffsets
    broker: Broker


def _targets(rng: random.Random, reads: list) -> list[int]:
    stamps = sorted({r.timestamp for r in reads})
    picks = rng.sample(stamps, min(12, len(stamps)))
    return sorted({*picks, *(t + 1 for t in picks[:6]), *(t - 1 for t in picks[:6]),
                   stamps[0] - 10, stamps[-1], stamps[-1] + 1})


@pytest.fixture(scope="session")
def read_side(kafka_version, kafka_jars, tmp_path_factory) -> ReadSide:
    b = Broker(kafka_version, tmp_path_factory.mktemp(f"read-side-{kafka_version}-"))
    try:
        b.start()
        scenarios.write_read_side(b.bootstrap, SEED)
        reads = {(t, iso): clients.consume(b.bootstrap, t, 0, iso) for t in TOPICS for iso in ISOLATION}
        rng = random.Random(SEED)
        by_time = {(t, ts): clients.offset_for_time(b.bootstrap, t, 0, ts)
                   for t in TOPICS for ts in _targets(rng, reads[(t, "read_uncommitted")])}
        b.stop()
    finally:
        b.close()
    assert b.errors() == []
    return ReadSide(kafka_version, b.log_dir, reads, by_time, b)


# --- dump-log text vs DumpLogSegments ----------------------------------------------------------------

SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")


def _files(log_dir: Path, partitions, suffixes=SUFFIXES) -> list[Path]:
    out = []
    for part in partitions:
        d = log_dir / part
        out += sorted(p for p in d.iterdir() if p.suffix in suffixes and p.name[:20].isdigit())
    return out


def _user(suffixes=SUFFIXES):
    return [f"{t}-0" for t in TOPICS], suffixes


CASES = {
    # id: (partitions, suffixes, options)
    "shallow-every-file": ([f"{t}-0" for t in TOPICS + INTERNAL], SUFFIXES + (".checkpoint",), ()),
    "deep-iteration": (*_user((".log",)), ("--deep-iteration",)),
    "print-data-log": ([f"{t}-0" for t in TOPICS + INTERNAL], (".log", ".checkpoint"), ("--print-data-log",)),
    "skip-record-metadata": (*_user((".log",)), ("--print-data-log", "--skip-record-metadata")),
    "verify-index-only": (*_user((".index", ".timeindex")), ("--verify-index-only",)),
    "index-sanity-check": (*_user((".index", ".timeindex")), ("--index-sanity-check",)),
    "offsets-decoder": (["__consumer_offsets-0"], (".log",), ("--offsets-decoder",)),
    "transaction-log-decoder": (["__transaction_state-0"], (".log",), ("--transaction-log-decoder",)),
    "cluster-metadata-decoder": (["__cluster_metadata-0"], (".log", ".checkpoint"),
                                 ("--cluster-metadata-decoder",)),
    "max-bytes": (*_user((".log",)), ("--deep-iteration", "--max-bytes", "20000")),
}


def _at_least(version: str, wanted: str) -> bool:
    return tuple(map(int, version.split("."))) >= tuple(map(int, wanted.split(".")))


def documented(version: str, case: str, kafka: str, ours: str) -> tuple[str, str]:
    """The README's differences on purpose ("Where we differ from Kafka, on purpose"), undone so that the
    rest compares byte for byte (stdout)."""
    if not _at_least(version, "4.1"):
        # KRaft control records print decoded, as the 4.1+ tool does (3.x/4.0: controlType: NAME(n))
        ours = re.sub(r"LeaderChange: \{.*\}$", "controlType: LEADER_CHANGE(2)", ours, flags=re.M)
    if case == "transaction-log-decoder" and jars.major(version) < 4:
        kafka, ours = transaction_log_before_4(kafka, ours)
    if jars.major(version) < 4:
        # the Scala tool's trailing space after a producer-snapshot entry without batch metadata (an entry
        # whose producer wrote only a marker, e.g. after an epoch bump): found by the generated scenarios
        kafka = re.sub(r"^(producerId: .* lastTimestamp: -?\d+) $", r"\1", kafka, flags=re.M)
    return kafka, ours


def _txn_3x(m: re.Match) -> str:
    key, value = json.loads(m["key"]), m["payload"]
    out = f"key: transaction_metadata::transactionalId={key['data']['transactionalId']} payload: "
    if not value.startswith("{"):
        return out + "<DELETE>"
    d = json.loads(value)["data"]
    parts = [] if d["transactionStatus"] == "Empty" else \
        [f"{t['topic']}-{p}" for t in d["transactionPartitions"] or () for p in t["partitionIds"]]
    return out + (f"producerId:{d['producerId']},producerEpoch:{d['producerEpoch']},state={d['transactionStatus']},"
                  f"partitions=[{','.join(parts)}],txnLastUpdateTimestamp={d['transactionLastUpdateTimestampMs']},"
                  f"txnTimeoutMs={d['transactionTimeoutMs']}")


def transaction_log_before_4(kafka: str, ours: str) -> tuple[str, str]:
    """The README's difference on purpose: kafkalog prints the 4.0+ envelope (``key: {"type":..,"data":..}
    payload: {"version":..,"data":..}``); 3.x's tool (``TransactionLog.formatRecordKeyAndValue``) prints
    ``transaction_metadata::transactionalId=ID`` and ``producerId:P,producerEpoch:E,state=S,partitions=[..],
    txnLastUpdateTimestamp=T,txnTimeoutMs=M`` (``<DELETE>`` for a tombstone). Ours is rewritten in that form,
    and both lists of partitions sorted (3.x prints a Scala ``HashSet`` in its own order)."""
    ours = re.sub(r"key: (?P<key>\{.*?\}\}) payload: (?P<payload>.*)$", _txn_3x, ours, flags=re.M)
    def sort(text: str) -> str:
        return re.sub(r"partitions=\[([^\]]*)\]",
                      lambda m: "partitions=[" + ",".join(sorted(filter(None, m[1].split(",")))) + "]", text)
    return sort(kafka), sort(ours)


def documented_stderr(version: str, kafka: str) -> str:
    """Kafka's end-of-run reports on stderr without its JVM's log lines, and without the documented
    difference: the Java tool of 4.x (``org.apache.kafka.tools.DumpLogSegments``) starts every file's
    consecutive-offsets check at -1, so with --deep-iteration it reports ``-1 is followed by N`` for every
    segment whose first offset N is not 0 (the Scala tool of 3.x skipped the first record of a file)."""
    lines = [line for line in kafka.splitlines() if not line.startswith(("WARN ", "ERROR "))]
    if jars.major(version) >= 4:
        out: list[str] = []
        for line in lines:
            if re.fullmatch(r"  -1 is followed by \d+", line):
                continue
            out.append(line)
        # a "Non-consecutive offsets in F" header left without pairs goes too
        lines = [line for i, line in enumerate(out)
                 if not (line.startswith("Non-consecutive offsets in ")
                         and (i + 1 == len(out) or not out[i + 1].startswith("  ")))]
    return "\n".join(lines).strip()


def _skip_reason(version: str, case: str) -> str | None:
    if case == "offsets-decoder" and not _at_least(version, "3.8"):
        return ("documented difference: kafkalog prints the Kafka 3.8+ offsets form "
                f"({{\"type\":..,\"data\":..}}); {version}'s tool prints its own form")
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_dump_log_text_equals_dump_log_segments(read_side, case):
    """Scenario read-side (seed 22), every selected version; rule: dump-log text output = DumpLogSegments."""
    if reason := _skip_reason(read_side.version, case):
        pytest.skip(reason)
    partitions, suffixes, options = CASES[case]
    files = _files(read_side.log_dir, partitions, suffixes)
    assert files
    kafka = dump_log_segments(read_side.version, files, *options)
    assert kafka.returncode == 0, kafka.stderr
    ours = run_cli("dump-log", "--files", ",".join(map(str, files)), *options)
    assert ours.code == 0, ours.err
    want, got = documented(read_side.version, case, kafka.stdout, ours.out)
    if got != want:
        diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "DumpLogSegments", "kafkalog",
                                    lineterm="", n=1)
        pytest.fail("dump-log differs from DumpLogSegments:\n" + "\n".join(list(diff)[:60]))
    # the end-of-run reports (index mismatches, ...) go to stderr in both; Kafka's JVM warnings aside
    assert ours.err.strip() == documented_stderr(read_side.version, kafka.stderr)


# --- verify -------------------------------------------------------------------------------------------


def test_verify_accepts_what_the_broker_wrote(read_side):
    """Scenario read-side, clean shutdown; rule: verify never cries wolf."""
    res = run_cli("verify", "--fail-on", "warning", str(read_side.log_dir))
    assert res.code == 0, res.out + res.err


# --- records: consumers vs dump-log JSON --------------------------------------------------------------


def _dumped(partition_dir: Path) -> tuple[list[dict], list[dict]]:
    res = run_cli("dump-log", "--format", "json", "--print-data-log", "--key-decoder", "base64",
                  "--value-decoder", "base64", str(partition_dir))
    assert res.code == 0, res.err
    objs = [json.loads(line) for line in res.out.splitlines()]
    return [o for o in objs if o["type"] == "batch"], [o for o in objs if o["type"] == "record"]


def _b64(value):
    import base64
    return None if value is None else base64.b64decode(value)


def visible(partition_dir: Path, isolation: str) -> list[tuple]:
    """The records a consumer with ``isolation`` reads, from dump-log's JSON: data records in offset order;
    read_committed drops the records of transactions their producer's ABORT marker ends (and those still
    open at the end)."""
    batches, records = _dumped(partition_dir)
    by_position = {(b["file"], b["position"]): b for b in batches}
    committed_view = isolation == "read_committed"
    pending: dict[int, list] = {}
    out: list = []
    for r in records:
        b = by_position[(r["file"], r["batch_position"])]
        if b["is_control"]:
            held = pending.pop(b["producer_id"], [])
            if r["control"]["type"] == "COMMIT":
                out += held
            continue
        row = (r["offset"], r["timestamp"], _b64(r["key"]), _b64(r["value"]),
               tuple((h["key"], _b64(h["value"])) for h in r["headers"]))
        if committed_view and b["is_transactional"]:
            pending.setdefault(b["producer_id"], []).append(row)
        else:
            out.append(row)
    return sorted(out)


@pytest.mark.parametrize("isolation", ISOLATION)
@pytest.mark.parametrize("topic", TOPICS)
def test_consumer_reads_what_dump_log_json_gives(read_side, topic, isolation):
    """Scenario read-side; rule: the records of dump-log --format json (and the transaction markers' effect
    on read_committed, ``LogSegment``/``.txnindex`` aborted ranges) are what a consumer reads."""
    consumed = [(r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers))
                for r in read_side.reads[(topic, isolation)]]
    assert consumed, "the consumer read nothing"
    ours = visible(read_side.log_dir / f"{topic}-0", isolation)
    assert ours == consumed


def test_transactions_aborted_and_committed_both_present(read_side):
    """The scenario is what it claims: the txn partition holds aborted and committed transactions."""
    _batches, records = _dumped(read_side.log_dir / "txn-0")
    kinds = {r["control"]["type"] for r in records if r.get("control")}
    assert kinds == {"COMMIT", "ABORT"}
    assert len(read_side.reads[("txn", "read_committed")]) < len(read_side.reads[("txn", "read_uncommitted")])


# --- lookup-time vs ListOffsets -----------------------------------------------------------------------


@pytest.mark.parametrize("topic", TOPICS)
def test_lookup_time_equals_list_offsets(read_side, topic):
    """Scenario read-side; rule: lookup-time = ListOffsets by timestamp (``UnifiedLog.fetchOffsetByTimestamp``,
    ``LogSegment.findOffsetByTimestamp``: the first segment whose largest timestamp reaches the target, then
    the first record at or after it in that segment only)."""
    wrong = []
    for (t, ts), (offset, found_ts) in sorted(read_side.by_time.items()):
        if t != topic:
            continue
        res = run_cli("lookup-time", "--format", "json", str(read_side.log_dir / f"{topic}-0"), str(ts))
        obj = json.loads(res.out)
        got = (obj.get("found_offset", -1), obj.get("found_timestamp", -1)) if res.code == 0 else (-1, -1)
        if got != (offset, found_ts):
            wrong.append(f"timestamp {ts}: broker ({offset}, {found_ts}), kafkalog {got} (exit {res.code})")
    assert not wrong, "\n".join(wrong)


# --- export (Spark) vs consumers -----------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("isolation", ["read_committed"])     # read_uncommitted: the dump-log test above
def test_export_equals_consumers(read_side, tmp_path, isolation):
    """Scenario read-side; rule: ``kafkalog export --isolation`` gives what a consumer of that isolation
    level reads (``read_committed``: the aborted ranges of the ``.txnindex``, as ``Fetcher`` applies them)."""
    import base64
    import shutil as _shutil
    if _shutil.which("java") is None:
        pytest.skip("export needs Java")
    pytest.importorskip("pyspark")
    out = tmp_path / "export"
    # a process of its own: Spark's JVM and py4j stay out of the test process (tests/spark runs last)
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-m", "kafkalog_cli", "-q", "export", "--master", "local[2]",
                          "--output-format", "json", "--exclude-control", "--isolation", isolation,
                          "-o", str(out), str(read_side.log_dir)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    for topic in TOPICS:
        rows = [json.loads(line) for p in sorted((out / f"topic={topic}").rglob("part-*.json"))
                for line in p.read_text().splitlines()]
        # Spark's JSON writer leaves null fields out
        got = sorted((r["offset"], base64.b64decode(r["key"]) if r.get("key") is not None else None,
                      base64.b64decode(r["value"]) if r.get("value") is not None else None,
                      tuple((h["key"], None if h.get("value") is None else base64.b64decode(h["value"]))
                            for h in r["headers"]))
                     for r in rows)
        want = [(r.offset, r.key, r.value, tuple((k, v) for k, v in r.headers))
                for r in read_side.reads[(topic, isolation)]]
        assert got == want, topic
