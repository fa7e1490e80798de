"""A generated scenario (issue 36): what a seed draws, as plain data (JSON), and the smaller scenarios a
disagreement is shrunk through.

``draw(seed, version)`` gives a ``Scenario``: topics and their configurations, a workload of steps (producers
of every kind, configuration changes through the admin API, consumer-group commits and deletions,
transactional offset commits, DeleteRecords, partition additions, a copy of the checkpoints to restore
later), a fault plan (a clean stop or a SIGKILL at a drawn step and delay, then damage to the files before
the restart) and the maintenance both sides then do (DeleteRecords, retention, compaction, the
coordinator's offset expiration). Everything a step needs is drawn here, so a scenario replays from its
JSON alone (``Scenario.from_json``), and a shrunk one stays meaningful: steps refer to topics by name and
skip themselves when the topic is gone.

Values are chosen away from every threshold a run's timing could cross: old timestamps are two days old
against a retention of one day, future ones 20 minutes ahead (4.x refuses beyond one hour,
``message.timestamp.after.max.ms``), ``min.compaction.lag.ms`` is 0 or one hour, ``delete.retention.ms``
one day.
"""
from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field

import jars

MIB = 1 << 20
DAY = 86_400_000
HOUR = 3_600_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DAMAGE = ("torn_tail", "zero_tail", "flip_bit", "remove_index", "stale_checkpoint")


@dataclass
class Scenario:
    seed: int
    version: str
    mode: str                                  # "kraft" or "zk" (2.x)
    topics: list[dict]                         # {"name", "partitions", "config"}
    steps: list[dict]
    fault: dict                                # {"kind": "clean"|"kill", "at": step, "delay": s, "damage": [...]}
    maintenance: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | dict) -> "Scenario":
        return cls(**(json.loads(text) if isinstance(text, str) else text))

    def copy(self, **changes) -> "Scenario":
        d = json.loads(self.to_json())
        d.update(changes)
        return Scenario(**d)

    def size(self) -> int:
        """How big the scenario is, for shrinking (steps, topics, damage, maintenance, a kill)."""
        return (len(self.steps) * 4 + len(self.topics) * 2 + len(self.fault.get("damage", ())) * 3
                + sum(1 for v in self.maintenance.values() if v) + (self.fault["kind"] == "kill")
                + sum(t["partitions"] - 1 for t in self.topics)
                + sum(s.get("count", 0) for s in self.steps) // 100)

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for s in self.steps:
            k = s["op"] + (f":{s['producer']}" if s["op"] == "produce" else "")
            kinds[k] = kinds.get(k, 0) + 1
        dmg = ",".join(d["kind"] for d in self.fault.get("damage", ())) or "none"
        return (f"seed {self.seed} Kafka {self.version} ({self.mode}): {len(self.topics)} topics, "
                f"steps {dict(sorted(kinds.items()))}, fault {self.fault['kind']}, damage {dmg}, "
                f"maintenance {sorted(k for k, v in self.maintenance.items() if v)}")


def _is_compact(config: dict) -> bool:
    return "compact" in config.get("cleanup.policy", "delete")


def _topic_config(rng: random.Random, version: str) -> dict:
    major = jars.major(version)
    policy = rng.choices(["delete", "compact", "compact,delete"], [6, 3, 1])[0]
    segment = MIB if major >= 4 else rng.choice([MIB, 256 << 10, 64 << 10, 16 << 10])
    config = {"cleanup.policy": policy, "segment.bytes": segment, "retention.ms": -1,
              "retention.bytes": -1, "delete.retention.ms": DAY}
    if rng.random() < 0.25:
        config["message.timestamp.type"] = "LogAppendTime"
    if rng.random() < 0.3:
        config["compression.type"] = rng.choice(["gzip", "lz4", "zstd", "snappy", "uncompressed"])
    if rng.random() < 0.4:
        config["index.interval.bytes"] = rng.choice([512, 1024, 4096])
    if "compact" in policy:
        config["min.compaction.lag.ms"] = rng.choice([0, 0, HOUR])
        config["min.cleanable.dirty.ratio"] = rng.choice(["0.01", "0.01", "0.5"])
    if "delete" in policy and rng.random() < 0.3:
        config["retention.ms"] = DAY          # the old records (two days) go, the recent ones stay
    return config


def _produce(rng: random.Random, topic: dict, tid_pool: list[str], compact: bool, major: int) -> dict:
    kind = rng.choices(["plain", "idempotent", "transactional"], [4, 3, 3])[0]
    step = {"op": "produce", "topic": topic["name"], "partition": rng.randrange(topic["partitions"]),
            "producer": kind, "codec": rng.choice(CODECS), "count": rng.choice([1, 5, 30, 120, 400, 2500]),
            "batch": rng.choice([1, 7, 40, 200]), "keys": rng.choice([1, 10, 200]),
            "null_keys": 0.0 if compact else rng.choice([0.0, 0.0, 0.3, 1.0]),
            "tombstones": rng.choice([0.0, 0.1, 0.5]), "headers": rng.choice([0, 0, 1, 3]),
            "value_size": rng.choice([0, 20, 300, 3000]),
            "timestamps": rng.choice(["none", "now", "old", "future", "equal", "shuffled"]),
            "seed": rng.randrange(1 << 30)}
    if kind == "transactional":
        step["txn_id"] = rng.choice(tid_pool)
        step["verdict"] = rng.choices(["commit", "abort", "open"], [5, 3, 1])[0]
    return step


def draw(seed: int, version: str) -> Scenario:
    """The scenario of ``seed`` for Kafka ``version`` (the same every time)."""
    rng = random.Random(f"scenario-{seed}")
    major = jars.major(version)
    mode = "zk" if major < 3 else "kraft"
    topics = []
    for i in range(rng.choice([1, 2, 2, 3])):
        topics.append({"name": f"t{i}", "partitions": rng.choice([1, 1, 2, 3]),
                       "config": _topic_config(rng, version)})
    tid_pool = [f"tx-{j}" for j in range(rng.choice([1, 2, 3]))]
    groups = [f"g{j}" for j in range(rng.choice([1, 2, 3]))]
    steps: list[dict] = []
    compact_now = {t["name"]: _is_compact(t["config"]) for t in topics}
    for _ in range(rng.randrange(4, 16)):
        topic = rng.choice(topics)
        op = rng.choices(["produce", "alter_config", "commit_offsets", "txn_offset_commit", "delete_group",
                          "delete_records", "add_partitions", "save_checkpoints"],
                         [10, 2, 3, 1, 1, 1, 1, 1])[0]
        if op == "produce":
            steps.append(_produce(rng, topic, tid_pool, compact_now[topic["name"]], major))
        elif op == "alter_config":
            key = rng.choice(["retention.ms", "retention.bytes", "segment.bytes", "message.timestamp.type",
                              "min.compaction.lag.ms", "compression.type", "cleanup.policy"])
            value = {"retention.ms": rng.choice([-1, DAY, 7 * DAY]),
                     "retention.bytes": rng.choice([-1, 4 * topic["config"]["segment.bytes"]]),
                     "segment.bytes": MIB if major >= 4 else rng.choice([MIB, 64 << 10, 16 << 10]),
                     "message.timestamp.type": rng.choice(["CreateTime", "LogAppendTime"]),
                     "min.compaction.lag.ms": rng.choice([0, HOUR]),
                     "compression.type": rng.choice(["producer", "gzip", "lz4", "zstd"]),
                     "cleanup.policy": rng.choice(["delete", "compact", "compact,delete"])}[key]
            if key == "cleanup.policy":
                compact_now[topic["name"]] = compact_now[topic["name"]] or "compact" in value
            steps.append({"op": "alter_config", "topic": topic["name"], "key": key, "value": value})
        elif op == "commit_offsets":
            protocol = "consumer" if major >= 4 and rng.random() < 0.5 else "classic"
            steps.append({"op": "commit_offsets", "group": rng.choice(groups), "topic": topic["name"],
                          "offsets": {str(p): rng.randrange(0, 500) for p in range(topic["partitions"])
                                      if rng.random() < 0.8} or {"0": 0},
                          "member": protocol == "consumer" or rng.random() < 0.5, "protocol": protocol})
        elif op == "txn_offset_commit":
            steps.append({"op": "txn_offset_commit", "txn_id": rng.choice(tid_pool), "group": rng.choice(groups),
                          "topic": topic["name"], "partition": rng.randrange(topic["partitions"]),
                          "offset": rng.randrange(0, 300),
                          "verdict": rng.choices(["commit", "abort"], [3, 1])[0]})
        elif op == "delete_group":
            steps.append({"op": "delete_group", "group": rng.choice(groups)})
        elif op == "delete_records":
            steps.append({"op": "delete_records", "topic": topic["name"],
                          "partition": rng.randrange(topic["partitions"]), "fraction": rng.choice([0.2, 0.5, 1.0])})
        elif op == "add_partitions":
            steps.append({"op": "add_partitions", "topic": topic["name"], "add": rng.choice([1, 2])})
            topic["partitions_after"] = topic.get("partitions_after", topic["partitions"])
        else:
            steps.append({"op": "save_checkpoints"})
    if not any(s["op"] == "produce" for s in steps):
        steps.insert(0, _produce(rng, topics[0], tid_pool, compact_now[topics[0]["name"]], major))
    for t in topics:
        t.pop("partitions_after", None)

    kind = rng.choice(["clean", "kill"])
    fault = {"kind": kind, "at": rng.randrange(len(steps)), "delay": round(rng.uniform(0.0, 1.5), 2),
             "damage": []}
    for _ in range(rng.choices([0, 1, 2], [5, 4, 1])[0]):
        dk = rng.choice(DAMAGE if kind == "kill" else tuple(d for d in DAMAGE if d != "flip_bit"))
        topic = rng.choice(topics)
        fault["damage"].append({"kind": dk, "topic": topic["name"], "partition": rng.randrange(topic["partitions"]),
                                "seed": rng.randrange(1 << 30)})
    maintenance = {
        "delete_records": [{"topic": t["name"], "partition": p, "fraction": rng.choice([0.3, 0.7, 1.0])}
                           for t in topics for p in range(t["partitions"]) if rng.random() < 0.25],
        "retention": {t["name"]: {"retention.ms": rng.choice([-1, DAY]),
                                  "retention.bytes": rng.choice([-1, 2 * t["config"]["segment.bytes"]])}
                      for t in topics if rng.random() < 0.4},
        "compact": rng.random() < 0.6,
        "expire_groups": rng.random() < 0.3,
    }
    return Scenario(seed, version, mode, topics, steps, fault, maintenance)


def shrink_candidates(s: Scenario):
    """Smaller scenarios, the boldest first: no damage, a clean stop, no maintenance, halves of the steps,
    single steps gone, fewer records, topics gone, one partition."""
    f = s.fault
    if f.get("damage"):
        yield s.copy(fault={**f, "damage": []})
        for i in range(len(f["damage"])):
            yield s.copy(fault={**f, "damage": f["damage"][:i] + f["damage"][i + 1:]})
    if f["kind"] == "kill":
        yield s.copy(fault={**f, "kind": "clean"})
    for key, value in s.maintenance.items():
        if value:
            yield s.copy(maintenance={**s.maintenance, key: type(value)()})
    n = len(s.steps)
    chunk = n // 2
    while chunk >= 1:
        for start in range(0, n, chunk):
            rest = s.steps[:start] + s.steps[start + chunk:]
            if rest and any(x["op"] == "produce" for x in rest):
                at = f["at"] if f["at"] < start else max(start, f["at"] - chunk)
                yield s.copy(steps=rest, fault={**f, "at": min(at, len(rest) - 1)})
        chunk //= 2
    for i, st in enumerate(s.steps):
        if st.get("count", 0) > 5:
            yield s.copy(steps=s.steps[:i] + [{**st, "count": max(1, st["count"] // 4)}] + s.steps[i + 1:])
    names = {t["name"] for t in s.topics}
    for t in s.topics:
        if len(s.topics) > 1:
            keep = names - {t["name"]}
            steps = [x for x in s.steps if x.get("topic", next(iter(keep))) in keep]
            if any(x["op"] == "produce" for x in steps):
                yield s.copy(topics=[u for u in s.topics if u["name"] in keep], steps=steps,
                             fault={**f, "at": min(f["at"], len(steps) - 1),
                                    "damage": [d for d in f["damage"] if d["topic"] in keep]})
        if t["partitions"] > 1:
            topics = [dict(u, partitions=1) if u is t else u for u in s.topics]
            steps = [dict(x, partition=0) if x.get("topic") == t["name"] and "partition" in x else x
                     for x in s.steps]
            steps = [dict(x, offsets={"0": x["offsets"].get("0", 0)}) if x["op"] == "commit_offsets"
                     and x["topic"] == t["name"] else x for x in steps]
            yield s.copy(topics=topics, steps=steps)
