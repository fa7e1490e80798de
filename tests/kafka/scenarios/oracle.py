"""What a live broker answers about the directory it loaded (issue 36): the reference every kafkalog read is
compared with.

``ask(broker)`` collects, for every user partition: ListOffsets (earliest, latest, latest read_committed,
max-timestamp on 3.0+, and by timestamp for timestamps drawn from the records), the records a consumer
reads at both isolation levels; DescribeLogDirs sizes, DescribeProducers and the coordinator's
transactions (``Oracle.java``, one JVM); ListGroups and ListConsumerGroupOffsets; and
``kafka-transactions.sh find-hanging`` (3.0+). ``settle(broker)`` first waits for what a broker does on its
own after loading a directory (its first retention pass, markers of transactions it completes) so the
answers describe the state the broker stops with.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, TopicPartition
from confluent_kafka.admin import OffsetSpec

import clients
import jars
from broker import Broker, java, run_tool, spawn, reap

HERE = Path(__file__).resolve().parent
INTERNAL = ("__consumer_offsets", "__transaction_state", "__cluster_metadata")


def oracle_classes() -> Path:
    """Oracle.java compiled once (against 3.9.2's kafka-clients) into the jar cache."""
    src = HERE / "Oracle.java"
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:12]
    out = jars.cache_root() / f"oracle-{digest}"
    if not (out / "Oracle.class").is_file():
        out.mkdir(parents=True, exist_ok=True)
        res = subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", jars.classpath("3.9.2"), str(src)],
                             capture_output=True, text=True, timeout=300)
        if res.returncode != 0:
            raise RuntimeError(f"javac Oracle.java: {res.stderr[-2000:]}")
    return out


def wait_leaders(broker: Broker, timeout: float = 60) -> None:
    """Until every partition has a leader (a restarted broker takes its partitions' leadership a moment
    after it serves: DeleteRecords before that is refused with NOT_LEADER_OR_FOLLOWER)."""
    deadline = time.monotonic() + timeout
    adm = clients.admin(broker.bootstrap)
    while time.monotonic() < deadline:
        md = adm.list_topics(timeout=10)
        if md.topics and all(not tm.error and all(p.leader >= 0 and not p.error for p in tm.partitions.values())
                             for tm in md.topics.values()):
            return
        time.sleep(0.3)


def b64(value: bytes | None) -> str | None:
    import base64
    return None if value is None else base64.b64encode(value).decode()


def user_partitions(broker: Broker) -> list[tuple[str, int]]:
    md = clients.admin(broker.bootstrap).list_topics(timeout=30)
    return sorted((t, p) for t, tm in md.topics.items() if not t.startswith("__") for p in tm.partitions)


def _offsets(broker: Broker, tps, spec, iso=IsolationLevel.READ_UNCOMMITTED) -> dict:
    adm = clients.admin(broker.bootstrap)
    res = adm.list_offsets({TopicPartition(t, p): spec for t, p in tps}, isolation_level=iso)
    out = {}
    for tp, fut in res.items():
        info = fut.result(60)
        out[(tp.topic, tp.partition)] = (info.offset, info.timestamp)
    return out


def first_retention(broker: Broker, since: float) -> float:
    """When (``time.monotonic``) the broker's first retention passes after a start at ``since`` have run:
    ``LogManager`` schedules ``cleanupLogs`` 30 s after the start before 3.9 (``InitialTaskDelayMs``), after
    ``log.initial.task.delay.ms`` (500 ms here) from 3.9, then every ``log.retention.check.interval.ms`` (1 s
    here); two passes and a margin for a loaded machine."""
    first = 30.0 if jars.major(broker.version) < 3 or broker.version == "3.7.0" else 0.5
    return since + first + 5.0


def settle(broker: Broker, since: float, timeout: float = 90) -> None:
    """Wait until the broker's first retention passes after its start have run, and its partitions' ends stop
    moving (the coordinator completing a transaction it loaded writes markers)."""
    deadline = time.monotonic() + timeout
    wait_leaders(broker)
    time.sleep(max(0.0, first_retention(broker, since) - time.monotonic()))
    tps = [(t, p) for t, p in user_partitions(broker)]
    last = None
    while time.monotonic() < deadline:
        now = (_offsets(broker, tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED),
               _offsets(broker, tps, OffsetSpec.earliest()))
        if now == last:
            return
        last = now
        time.sleep(1.0)


def _times(reads: list) -> list[int]:
    stamps = sorted({r.timestamp for r in reads})
    if not stamps:
        return [0]
    rng = random.Random(len(stamps))
    picks = rng.sample(stamps, min(6, len(stamps)))
    return sorted({stamps[0] - 1, stamps[0], stamps[-1], stamps[-1] + 1, *picks, *(t + 1 for t in picks[:3])})


def run_oracle(broker: Broker, tps) -> list[dict]:
    cp = f"{oracle_classes()}:{jars.classpath(broker.version)}"
    cmd = [java(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           "-Dlog4j.configuration=file:/dev/null", "-Dlog4j2.configurationFile=/dev/null", "-cp", cp, "Oracle",
           broker.bootstrap, *[f"{t}:{p}" for t, p in tps]]
    proc = spawn(cmd, cwd=broker.home, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=180)
    finally:
        reap(proc)
    if proc.returncode != 0:
        raise RuntimeError(f"Oracle exited {proc.returncode}: {err.decode(errors='replace')[-1500:]}")
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def find_hanging(broker: Broker) -> list[dict] | None:
    """``kafka-transactions.sh find-hanging --broker-id 1 --max-transaction-timeout 0`` (3.0+): every open
    transaction whose coordinator does not know it; None before 3.0."""
    if jars.major(broker.version) < 3:
        return None
    res = run_tool(broker.version, "org.apache.kafka.tools.TransactionsCommand",
                   ["--bootstrap-server", broker.bootstrap, "find-hanging", "--broker-id", "1",
                    "--max-transaction-timeout", "0"], timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"find-hanging: {res.stdout}{res.stderr}"[-1500:])
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    head = re.split(r"\s+", lines[0].strip())
    return [dict(zip(head, re.split(r"\s+", ln.strip()))) for ln in lines[1:]]


def describe_topic_configs(broker: Broker) -> str:
    """``kafka-configs.sh --bootstrap-server B --describe --entity-type topics`` of this release (every topic's
    overrides: what an operator gives ``--topic-configs`` for a ZooKeeper-mode directory); the ConfigCommand
    class is ``kafka.admin`` up to 3.x, ``org.apache.kafka.tools`` in 4.x."""
    main = "org.apache.kafka.tools.ConfigCommand" if jars.major(broker.version) >= 4 else "kafka.admin.ConfigCommand"
    res = run_tool(broker.version, main, ["--bootstrap-server", broker.bootstrap, "--describe", "--entity-type",
                                          "topics"], timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"kafka-configs --describe: {res.stdout}{res.stderr}"[-1500:])
    return res.stdout


def groups(broker: Broker) -> dict:
    adm = clients.admin(broker.bootstrap)
    listed = adm.list_consumer_groups(request_timeout=30).result(60)
    out = {}
    for g in listed.valid:
        fut = adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g.group_id)])[g.group_id]
        offs = {f"{tp.topic}-{tp.partition}": tp.offset for tp in fut.result(60).topic_partitions}
        out[g.group_id] = {"state": str(getattr(g.state, "name", g.state)),
                           "simple": g.is_simple_consumer_group,
                           "type": str(getattr(getattr(g, "type", None), "name", None)),
                           "offsets": offs}
    return out


def ask(broker: Broker) -> dict:
    """Everything the broker answers; keys are strings (the report is JSON)."""
    tps = user_partitions(broker)
    ans: dict = {"now": int(time.time() * 1000), "partitions": [f"{t}-{p}" for t, p in tps]}
    key = lambda tp: f"{tp[0]}-{tp[1]}"
    ans["earliest"] = {key(tp): v[0] for tp, v in _offsets(broker, tps, OffsetSpec.earliest()).items()}
    ans["latest"] = {key(tp): v[0] for tp, v in _offsets(broker, tps, OffsetSpec.latest()).items()}
    ans["committed"] = {key(tp): v[0] for tp, v in
                        _offsets(broker, tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED).items()}
    if jars.major(broker.version) >= 3:
        ans["max_timestamp"] = {key(tp): list(v) for tp, v in
                                _offsets(broker, tps, OffsetSpec.max_timestamp()).items()}
    ans["reads"] = {}
    ans["by_time"] = {}
    for t, p in tps:
        for iso in ("read_uncommitted", "read_committed"):
            ans["reads"][f"{t}-{p}/{iso}"] = [
                [r.offset, r.timestamp_type, r.timestamp, b64(r.key), b64(r.value), [[k, b64(v)] for k, v in r.headers]]
                for r in clients.consume(broker.bootstrap, t, p, iso)]
        reads = ans["reads"][f"{t}-{p}/read_uncommitted"]
        for ts in _times([type("R", (), {"timestamp": r[2]}) for r in reads]):
            ans["by_time"][f"{t}-{p}@{ts}"] = list(clients.offset_for_time(broker.bootstrap, t, p, ts))
    ans["oracle"] = run_oracle(broker, tps)
    ans["groups"] = groups(broker)
    ans["hanging"] = find_hanging(broker)
    return ans
