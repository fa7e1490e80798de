"""Running a generated scenario's workload on a real broker (issue 36): topics created with their configs,
then each step through confluent-kafka (librdkafka) and the admin API, then the fault: a clean stop, or a
SIGKILL fired at the drawn step after the drawn delay (while the workload goes on: what was in flight is
cut off). A step the broker refuses (DeleteRecords on a compact-only topic, a group that is not empty, a
configuration it rejects) is recorded with its error and the workload goes on: that is the broker's answer,
not a disagreement.
"""
from __future__ import annotations

import random
import shutil
import threading
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions

import clients
from broker import Broker

from . import payload
from .plan import DAY, Scenario

CHECKPOINTS = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
               "replication-offset-checkpoint", "cleaner-offset-checkpoint")
TXN_TIMEOUT_MS = 600_000


def records(step: dict, now: int) -> list[tuple]:
    """(key, value, headers, timestamp) of a produce step, the same for the same step and ``now``."""
    rng = random.Random(step["seed"])
    out = []
    for i in range(step["count"]):
        key = None if rng.random() < step["null_keys"] else f"k{rng.randrange(step['keys'])}".encode()
        value = None if rng.random() < step["tombstones"] else payload(rng, step["value_size"])
        headers = [(f"h{j}", None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 12)))
                   for j in range(step["headers"])]
        ts = {"none": None, "now": now + i, "old": now - 2 * DAY + i, "future": now + 1_200_000 + i,
              "equal": now, "shuffled": now - rng.randrange(0, 600_000)}[step["timestamps"]]
        out.append((key, value, headers, ts))
    return out


class Workload:
    def __init__(self, broker: Broker, scenario: Scenario, quiet: bool):
        self.broker = broker
        self.s = scenario
        self.killed = threading.Event()
        self.base = {"log_level": 0, "socket_timeout_ms": 5000} if quiet else {}
        self.txn: dict[str, object] = {}          # transactional id -> live producer
        self.open: dict[str, bool] = {}           # transactional id -> a transaction is open
        self.kept: list = []                      # producers whose transaction was left open
        self.errors: list[str] = []

    # --- steps ------------------------------------------------------------------------------------------

    def _producer(self, step: dict):
        conf = dict(self.base, compression_type=step["codec"], batch_num_messages=step["batch"], linger_ms=5,
                    message_timeout_ms=20000, request_timeout_ms=10000)
        if step["producer"] == "idempotent":
            return clients.producer(self.broker.bootstrap, enable_idempotence=True, **conf)
        if step["producer"] == "plain":
            return clients.producer(self.broker.bootstrap, enable_idempotence=False, **conf)
        tid = step["txn_id"]
        p = self.txn.get(tid)
        if p is None or self.open.get(tid):
            if p is not None:
                self.kept.append(p)                # its open transaction stays open; the new one fences it
            p = clients.producer(self.broker.bootstrap, transactional_id=tid, transaction_timeout_ms=TXN_TIMEOUT_MS,
                                 **conf)
            p.init_transactions(30)
            self.txn[tid] = p
            self.open[tid] = False
        return p

    def produce(self, step: dict) -> None:
        p = self._producer(step)
        recs = records(step, int(time.time() * 1000))
        if step["producer"] != "transactional":
            clients.deliver(p, step["topic"], recs, step["partition"])
            return
        tid = step["txn_id"]
        p.begin_transaction()
        self.open[tid] = True
        for key, value, headers, ts in recs:
            kw = {"timestamp": ts} if ts is not None else {}
            while True:
                try:
                    p.produce(step["topic"], key=key, value=value, headers=headers, partition=step["partition"],
                              **kw)
                    break
                except BufferError:
                    p.poll(0.1)
        if p.flush(30) != 0:
            raise TimeoutError("transactional producer did not flush")
        if step["verdict"] == "commit":
            p.commit_transaction(30)
            self.open[tid] = False
        elif step["verdict"] == "abort":
            p.abort_transaction(30)
            self.open[tid] = False

    def alter_config(self, step: dict) -> None:
        res = ConfigResource(ConfigResource.Type.TOPIC, step["topic"], incremental_configs=[
            ConfigEntry(step["key"], str(step["value"]), incremental_operation=AlterConfigOpType.SET)])
        adm = clients.admin(self.broker.bootstrap)        # kept: the futures fail when their client is collected
        for fut in adm.incremental_alter_configs([res]).values():
            fut.result(30)

    def commit_offsets(self, step: dict) -> None:
        conf = {"bootstrap.servers": self.broker.bootstrap, "group.id": step["group"], "enable.auto.commit": False,
                "auto.offset.reset": "earliest", **({"log_level": 0} if self.base else {})}
        if step["protocol"] == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf["session.timeout.ms"] = 10000
        c = Consumer(conf)
        try:
            if step["member"]:
                c.subscribe([step["topic"]])
                deadline = time.monotonic() + 30
                while not c.assignment() and time.monotonic() < deadline and not self.killed.is_set():
                    c.poll(0.2)
            c.commit(offsets=[TopicPartition(step["topic"], int(p), o) for p, o in step["offsets"].items()],
                     asynchronous=False)
        finally:
            c.close()

    def txn_offset_commit(self, step: dict) -> None:
        p = self._producer({"producer": "transactional", "txn_id": step["txn_id"], "codec": "none", "batch": 10})
        c = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": step["group"],
                      "enable.auto.commit": False, **({"log_level": 0} if self.base else {})})
        try:
            p.begin_transaction()
            self.open[step["txn_id"]] = True
            p.send_offsets_to_transaction([TopicPartition(step["topic"], step["partition"], step["offset"])],
                                          c.consumer_group_metadata(), 30)
            (p.commit_transaction if step["verdict"] == "commit" else p.abort_transaction)(30)
            self.open[step["txn_id"]] = False
        finally:
            c.close()

    def delete_group(self, step: dict) -> None:
        adm = clients.admin(self.broker.bootstrap)
        for fut in adm.delete_consumer_groups([step["group"]], request_timeout=30).values():
            fut.result(30)

    def delete_records(self, step: dict) -> None:
        low, high = clients.watermarks(self.broker.bootstrap, step["topic"], step["partition"])
        clients.delete_records(self.broker.bootstrap, step["topic"], step["partition"],
                               low + int((high - low) * step["fraction"]))

    def add_partitions(self, step: dict) -> None:
        adm = clients.admin(self.broker.bootstrap)
        md = adm.list_topics(step["topic"], timeout=10).topics[step["topic"]]
        for fut in adm.create_partitions([NewPartitions(step["topic"], len(md.partitions) + step["add"])]).values():
            fut.result(30)

    def save_checkpoints(self, step: dict) -> None:
        dest = self.broker.home / "saved-checkpoints"
        dest.mkdir(exist_ok=True)
        for name in CHECKPOINTS:
            if (self.broker.log_dir / name).is_file():
                shutil.copy2(self.broker.log_dir / name, dest / name)

    # --- the run ----------------------------------------------------------------------------------------

    def _kill(self) -> None:
        self.killed.set()
        self.broker.kill()

    def run(self) -> dict:
        """Create the topics, run the steps, apply the fault (the broker is stopped or killed after it)."""
        for t in self.s.topics:
            clients.create_topic(self.broker.bootstrap, t["name"], t["partitions"], t["config"])
        names = {t["name"] for t in self.s.topics}
        fault = self.s.fault
        timer = None
        done = []
        for i, step in enumerate(self.s.steps):
            if fault["kind"] == "kill" and i == fault["at"]:
                timer = threading.Timer(fault["delay"], self._kill)
                timer.start()
            if self.killed.is_set():
                break
            if step.get("topic", next(iter(names))) not in names:
                continue
            try:
                getattr(self, step["op"])(step)
                done.append(i)
            except Exception as e:                # the broker's refusal, or the kill cutting it off
                if self.killed.is_set():
                    break
                self.errors.append(f"step {i} ({step['op']}): {type(e).__name__}: {str(e)[:200]}")
        if timer is not None:
            timer.join()
        for p in [*self.txn.values(), *self.kept]:
            try:
                p.purge()
            except Exception:
                pass
        if fault["kind"] == "kill":
            self._kill()
        else:
            self.broker.stop()
        self.txn.clear()
        self.kept.clear()
        return {"steps_done": done, "step_errors": self.errors, "killed_during": not len(done) == len(self.s.steps)}


def run(broker: Broker, scenario: Scenario, quiet: bool = True) -> dict:
    return Workload(broker, scenario, quiet).run()
