"""Run generated scenarios against real brokers and compare kafkalog with them (issue 36).

One scenario, in phases (each broker a fresh copy of the directory, one broker at a time):

1. **W**: a broker of the scenario's version runs the workload, then the fault (clean stop or SIGKILL), then
   the damage to its files (``damage.apply``): the directory ``src``.
2. **B**: a broker loads a copy of ``src`` (its own recovery), settles, answers every question
   (``oracle.ask``) and stops cleanly: ``verify`` on ``src`` (when the broker said no ERROR/WARN while
   loading) and every read (dump-log text and JSON, lookup-time, describe, consumer-groups, transactions) on
   what it left are compared with its answers.
3. **A**: ``kafkalog recover`` on another copy of ``src``; verify exits 0 on it; a broker started on it must
   repair nothing and serve what B serves.
4. **C/D** (maintenance): on copies of B's result, the broker does DeleteRecords, retention and cleaning (C)
   and kafkalog does delete-records, retain and compact (D): the same segments, log-start-offset checkpoint
   and records; a broker started on D serves what C serves.
5. **E** (expire_groups): a broker with ``offsets.retention.minutes=1`` on a copy of B's result, after its
   first expiration: consumer-groups with ``--offsets-retention-ms 60000`` on B's result = its groups.

Usage (the long run; ``--hours`` bounds it, ``--report`` is rewritten after every scenario)::

    python tools/kafka_scenarios.py --hours 2 --versions all --report scenarios-report.json
    python tools/kafka_scenarios.py --seeds 1-5 --versions 3.9.2
    python tools/kafka_scenarios.py --replay case.json          # one scenario from its JSON

A disagreement is shrunk (``plan.shrink_candidates``: the smallest scenario on which the same check still
disagrees, within ``--shrink-runs``) and written to the report with its seed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

import jars  # noqa: E402
from broker import Broker  # noqa: E402

from . import compare, damage, oracle, plan, workload  # noqa: E402
from .plan import Scenario  # noqa: E402

ALL_VERSIONS = ("2.8.2", "3.7.0", "3.9.2", "4.4.0")
CHECKS = ("verify", "dump-log-text", "dump-log-json", "lookup-time", "describe", "consumer-groups",
          "transactions", "recover", "maintenance", "expire-groups")
DEBUG_LOGGERS: dict = {}
LOCK = Path(os.environ.get("KAFKALOG_BROKER_LOCK", "/tmp/kafkalog-scenarios-broker.lock"))


@dataclass
class Outcome:
    seed: int
    version: str
    scenario: dict
    disagreements: list = field(default_factory=list)
    harness_error: str | None = None
    step_errors: list = field(default_factory=list)
    damage: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    def checks_failed(self) -> set[str]:
        return {d["check"] for d in self.disagreements}


class Run:
    """One scenario's brokers, directories and answers."""

    def __init__(self, s: Scenario, work: Path, only: set[str] | None):
        self.s = s
        self.work = work
        self.only = only
        self.out = Outcome(s.seed, s.version, json.loads(s.to_json()))
        self.zk_data: Path | None = None
        self.trusted_damage = False

    def want(self, *checks: str) -> bool:
        return self.only is None or bool(self.only & set(checks))

    def add(self, found: list[dict]) -> None:
        self.out.disagreements += found

    def broker(self, label: str, src: Path | None, config: dict | None = None) -> Broker:
        cfg = {"log.cleaner.enable": "false"}
        if self.s.mode == "zk":
            cfg["zookeeper.session.timeout.ms"] = "6000"
        cfg.update(config or {})
        b = Broker(self.s.version, self.work / label, mode=self.s.mode, config=cfg, loggers=DEBUG_LOGGERS)
        if src is not None:
            shutil.copytree(src, b.log_dir, symlinks=True)
            (b.log_dir / ".lock").unlink(missing_ok=True)
        if self.s.mode == "zk" and self.zk_data is not None:
            shutil.copytree(self.zk_data, b.home / "zookeeper" / "data")
        return b

    def copy(self, src: Path, label: str) -> Path:
        dest = self.work / label
        shutil.copytree(src, dest, symlinks=True)
        (dest / ".lock").unlink(missing_ok=True)
        return dest

    # --- phases ---------------------------------------------------------------------------------------

    def write(self) -> Path:
        w = self.broker("w", None, {"log.cleaner.enable": "true"})
        try:
            w.start()
            res = workload.run(w, self.s)
        finally:
            w.close()
        self.out.step_errors = res["step_errors"]
        if self.s.mode == "zk":
            self.zk_data = w.home / "zookeeper" / "data"
        self.out.damage = damage.apply(w.log_dir, w.home / "saved-checkpoints", self.s.fault["damage"])
        return w.log_dir

    def load(self, label: str, src: Path, config: dict | None = None) -> tuple[Broker, dict, list[str]]:
        """A broker on a copy of ``src``: started, settled, asked, stopped cleanly. Returns it, its answers
        and the ERROR/WARN lines of its start."""
        b = self.broker(label, src, config)
        try:
            t0 = time.monotonic()
            b.start()
            oracle.settle(b, t0)
            ans = oracle.ask(b)
            complaints = [m for lvl, m in b.log_lines() if lvl in ("ERROR", "FATAL", "WARN")]
            b.stop()
        finally:
            b.close()
        return b, ans, complaints

    def run(self) -> Outcome:
        s = self.s
        src = self.write()
        damaged = bool(self.out.damage) and not all("nothing done" in d for d in self.out.damage)
        b, ans_b, complaints_b = self.load("b", src)
        self.out.notes.append(f"B: {len(complaints_b)} WARN/ERROR lines at load")
        self.out.notes.append(
            f"compared with B: {len(ans_b['partitions'])} partitions, "
            f"{sum(len(v) for v in ans_b['reads'].values())} records read (both isolation levels), "
            f"{len(ans_b['by_time']) + len(ans_b.get('max_timestamp', {}))} ListOffsets by time, "
            f"{len(ans_b['groups'])} groups with {sum(len(g['offsets']) for g in ans_b['groups'].values())} offsets, "
            f"{sum(1 for o in ans_b['oracle'] if o['type'] == 'producer')} producers, "
            f"{sum(1 for o in ans_b['oracle'] if o['type'] == 'transaction')} transactional ids, "
            f"{len(ans_b['hanging'] or ())} hanging")
        load_errors = [m for m in b.errors()]
        if self.want("verify") and not damaged and not load_errors and not _loader_warned(complaints_b):
            self.add(compare.check_verify(src, "the directory the fault left"))
        bdir = b.log_dir
        # damage after a clean stop stays: the broker trusts a cleanly shut down log and never looks (verify
        # is right to report it on every copy); after a kill it recovers and repairs
        self.trusted_damage = damaged and s.fault["kind"] == "clean"
        if self.trusted_damage:
            self.out.notes.append("damage after a clean stop: the broker does not recover it; verify not required "
                                  "to pass")
        if self.want("verify") and not self.trusted_damage:
            self.add(compare.check_verify(bdir, "the directory the broker stopped cleanly"))
        if self.want("dump-log-text"):
            self.add(compare.check_dump_text(s.version, bdir))
        if self.want("dump-log-json"):
            self.add(compare.check_dump_json(bdir, ans_b))
        if self.want("lookup-time"):
            self.add(compare.check_lookup_time(bdir, ans_b))
        if self.want("describe"):
            self.add(compare.check_describe(bdir, ans_b))
        if self.want("consumer-groups"):
            self.add(compare.check_groups(bdir, ans_b["groups"], ans_b["now"]))
        if self.want("transactions"):
            self.add(compare.check_transactions(bdir, ans_b))
        if self.want("recover"):
            self.recover(src, ans_b, b)
        if self.want("maintenance") and (s.maintenance.get("delete_records") or s.maintenance.get("retention")
                                         or s.maintenance.get("compact")):
            self.maintain(bdir, ans_b)
        if self.want("expire-groups") and s.maintenance.get("expire_groups") and ans_b["groups"]:
            self.expire(bdir, ans_b)
        return self.out

    def recover(self, src: Path, ans_b: dict, b: Broker) -> None:
        adir = self.copy(src, "a-input")
        mark = self.s.seed % 2 == 0
        res = compare.kl("recover", str(adir), *(["--mark-clean"] if mark else []))
        bad = compare._bad_run("recover", res)
        if bad:
            self.add(bad)
            return
        if not self.trusted_damage:
            self.add([dict(d, check="recover") for d in compare.check_verify(adir, "what kafkalog recover left")])
        before = compare.log_bytes(adir)
        a, ans_a, _complaints = self.load("a", adir)
        errors = a.errors()
        if errors:
            self.add([{"check": "recover", "detail": f"the broker on kafkalog's result logged ERROR: {errors[:3]}"}])
        repairs = compare.broker_repairs([m for _l, m in a.log_lines(1)])
        if repairs:
            self.add([{"check": "recover", "detail": "the broker started on kafkalog's result repaired: "
                                                     + " | ".join(repairs[:5])[:1500]}])
        # without --mark-clean the broker re-reads the segments from the recovery point, which recover leaves
        # where it was (README, recover): it must find nothing to repair there (above); with it, read none
        # (the KRaft metadata log is recovered by the Raft layer at every start, whatever the marker says)
        still = [m for m in a.grep(r"Recovering unflushed segment|[Rr]ecovering segment") if "__cluster_metadata" not in m]
        if mark and still:
            self.add([{"check": "recover", "detail": "after recover --mark-clean the broker still recovered: "
                                                     + " | ".join(still[:3])}])
        self.add(compare.served_equal("recover", ans_a, ans_b, "kafkalog's result"))
        after_b, after_a = compare.log_batches(b.log_dir), compare.log_batches(a.log_dir)
        for part in sorted(set(after_a) | set(after_b)):
            if after_a.get(part) != after_b.get(part):
                self.add([{"check": "recover", "detail": f"{part} batches differ (broker's own recovery, kafkalog "
                                                         f"then broker): {compare._first_diff(after_b.get(part, []), after_a.get(part, []))}"}])
        changed = {k for k in before if before.get(k) != after_a.get(k)}
        if changed and not repairs:
            self.out.notes.append(f"A: .log files the broker changed after kafkalog recover: {sorted(changed)[:5]}")

    def _configs(self) -> dict[str, dict]:
        """Each topic's configuration at the end of the workload (its alter steps that the broker took)."""
        configs = {t["name"]: dict(t["config"]) for t in self.s.topics}
        failed = {int(e.split()[1]) for e in self.out.step_errors if e.startswith("step ")}
        for i, st in enumerate(self.s.steps):
            if st["op"] == "alter_config" and i not in failed and st["topic"] in configs:
                configs[st["topic"]][st["key"]] = st["value"]
        return configs

    def maintain(self, bdir: Path, ans_b: dict) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
        import clients
        m = self.s.maintenance
        configs = self._configs()
        deletes = {}
        for d in m.get("delete_records") or []:
            part = f"{d['topic']}-{d['partition']}"
            if part in ans_b["earliest"]:
                lo, hi = ans_b["earliest"][part], ans_b["latest"][part]
                deletes[part] = lo + int((hi - lo) * d["fraction"])
        retention = {t: v for t, v in (m.get("retention") or {}).items() if t in configs}
        compact = bool(m.get("compact"))
        # C: the broker (its cleaner on when the scenario compacts)
        c = self.broker("c", bdir, {"log.cleaner.enable": "true" if compact else "false"})
        refused, described = {}, None
        try:
            t0 = time.monotonic()
            c.start()
            oracle.wait_leaders(c)
            adm = clients.admin(c.bootstrap)
            for topic, values in retention.items():
                res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
                    ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
                for fut in adm.incremental_alter_configs([res]).values():
                    fut.result(30)
            for part, offset in deletes.items():
                topic, p = part.rsplit("-", 1)
                try:
                    clients.delete_records(c.bootstrap, topic, int(p), offset)
                except Exception as e:
                    refused[part] = str(e)[:200]
            # ZooKeeper mode: the topics' cleanup.policy is in ZooKeeper, which kafkalog cannot read; the
            # operator gives kafka-configs.sh --describe's output, as delete-records' refusal says
            described = oracle.describe_topic_configs(c) if self.s.mode == "zk" and deletes else None
            # retention passes after the changes (the first ones after the start, or two intervals later)
            time.sleep(max(0.0, max(oracle.first_retention(c, t0), time.monotonic() + 3) - time.monotonic()))
            _wait_cleaner(c, time.monotonic() + 120)
            oracle.settle(c, t0)
            ans_c = oracle.ask(c)
            c.stop()
        finally:
            c.close()
        if c.errors():
            self.out.notes.append(f"C logged ERROR: {c.errors()[:2]}")
        # D: kafkalog
        ddir = self.copy(bdir, "d-input")
        # KRaft: every topic's configuration as the workload left it comes from the metadata log (the admin
        # API's changes are records there), only the maintenance's own limits are given; ZooKeeper mode keeps
        # them in ZooKeeper, so all are given
        given = configs if self.s.mode == "zk" else {t: {} for t in configs}
        for k, v in retention.items():
            given[k].update(v)
        cfg_args = [a for topic, cfg in given.items() for k, v in cfg.items()
                    for a in ("--config", f"{topic}:{k}={v}")]
        now = str(int(time.time() * 1000))
        sources = []
        if described is not None:
            tc_file = ddir.parent / "d-topic-configs.txt"
            tc_file.write_text(described)
            sources = ["--topic-configs", str(tc_file)]
        for part, offset in deletes.items():
            if described is not None:       # without a source naming the policy: refused, nothing changed
                res = compare.kl("delete-records", "--offset", f"{part}={offset}", str(ddir))
                if res.returncode != 2 or "no source names the cleanup.policy" not in res.stderr:
                    self.add([{"check": "maintenance", "detail": f"delete-records {part}={offset} on a ZooKeeper-"
                                                                 "mode directory without a topic configuration "
                                                                 f"source exited {res.returncode}, not refused "
                                                                 f"(exit 2): {(res.stderr or res.stdout)[-300:]}"}])
            res = compare.kl("delete-records", "--offset", f"{part}={offset}", *sources, str(ddir))
            if part in refused:
                if res.returncode == 0:
                    self.add([{"check": "maintenance", "detail": f"delete-records {part}={offset}: the broker "
                                                                 f"refused ({refused[part]}), kafkalog did it"}])
            else:
                self.add(compare._bad_run("maintenance", res))
                if res.returncode not in (0, 1):
                    self.add([{"check": "maintenance", "detail": f"delete-records {part}={offset}: the broker "
                                                                 f"did it, kafkalog exited {res.returncode}: "
                                                                 f"{res.stderr[-300:]}"}])
        res = compare.kl("retain", "--all", "--now", now, *cfg_args, str(ddir))
        self.add(compare._bad_run("maintenance", res))
        if compact:
            res = compare.kl("compact", "--all", "--now", now, *cfg_args, str(ddir))
            self.add(compare._bad_run("maintenance", res))
        c_dir = c.log_dir
        seg_c, seg_d = compare.segment_names(c_dir), compare.segment_names(ddir)
        for part in sorted(set(seg_c) | set(seg_d)):
            if seg_c.get(part) != seg_d.get(part):
                self.add([{"check": "maintenance", "detail": f"{part} segments: broker {seg_c.get(part)}, "
                                                             f"kafkalog {seg_d.get(part)}"}])
        lso_c = compare.checkpoint(c_dir, "log-start-offset-checkpoint")
        lso_d = compare.checkpoint(ddir, "log-start-offset-checkpoint")
        for part in sorted(set(lso_c) | set(lso_d)):
            # the broker writes an entry only above the first segment's base; kafkalog may write it always
            first = int((seg_c.get(part) or ["0" * 20])[0][:20])
            if lso_c.get(part, first) != lso_d.get(part, first):
                self.add([{"check": "maintenance", "detail": f"{part} log-start-offset-checkpoint: broker "
                                                             f"{lso_c.get(part)}, kafkalog {lso_d.get(part)}"}])
        for part in sorted(set(seg_c) & set(seg_d)):
            rc, rd = compare.records_of(c_dir, part), compare.records_of(ddir, part)
            if rc != rd:
                self.add([{"check": "maintenance", "detail": f"{part} records: {compare._first_diff(rc, rd)}"}])
        self.out.notes.append(f"maintenance: delete-records {deletes}, retention {retention}, compact {compact}; "
                              f"segments {sum(map(len, seg_c.values()))} (broker) of "
                              f"{sum(map(len, compare.segment_names(bdir).values()))} before")
        d, ans_d, _ = self.load("d", ddir)
        if d.errors():
            self.add([{"check": "maintenance", "detail": f"the broker on kafkalog's result logged ERROR: "
                                                         f"{d.errors()[:3]}"}])
        self.add(compare.served_equal("maintenance", ans_d, ans_c, "kafkalog's result"))
        if not self.trusted_damage:
            self.add([dict(x, check="maintenance") for x in compare.check_verify(ddir, "what retain/compact left")])

    def expire(self, bdir: Path, ans_b: dict) -> None:
        e = self.broker("e", bdir, {"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "500"})
        try:
            e.start()
            time.sleep(6)
            groups = oracle.groups(e)
            now = int(time.time() * 1000)
            e.stop()
        finally:
            e.close()
        self.add(compare.check_groups(bdir, groups, now, ("--offsets-retention-ms", "60000"),
                                      label="expire-groups"))


def _loader_warned(lines: list[str]) -> bool:
    """A WARN line of the broker's log loading (a repair it made), among its WARN/ERROR lines."""
    return any(compare.re.search(compare.LOAD_REPAIRS, m) for m in lines)


def _wait_cleaner(c: Broker, deadline: float) -> None:
    """Until the cleaner has finished what it began and its checkpoint stopped changing for 3 s."""
    path = c.log_dir / "cleaner-offset-checkpoint"
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        began = len(c.grep(r"Beginning cleaning of log"))
        ended = len(c.grep(r"cleaned log|Cleaned log|Log cleaner thread \d+ cleaned"))
        now = path.read_text() if path.is_file() else ""
        if now != last or began > ended:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 3:
            return
        time.sleep(0.5)


def run_scenario(s: Scenario, work: Path | None = None, only: set[str] | None = None, keep: bool = False,
                 yield_to_pause: bool = False) -> Outcome:
    """Run one scenario; broker phases hold ``LOCK`` (one broker at a time on a shared machine). With
    ``yield_to_pause`` (the long run's scenarios) it first waits while ``LOCK.pause`` exists."""
    import fcntl
    tmp = Path(tempfile.mkdtemp(prefix=f"scenario-{s.version}-{s.seed}-", dir=work))
    t0 = time.monotonic()
    r = Run(s, tmp, only)
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    # a broker test run by hand asks the long run to let it go first: it creates LOCK.pause, takes LOCK (or
    # runs scenarios, which take it), and removes the pause when done (one older than an hour is ignored)
    pause = LOCK.with_suffix(".pause")
    while yield_to_pause and pause.exists() and time.time() - pause.stat().st_mtime < 3600:
        time.sleep(2)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            r.run()
        except Exception:
            r.out.harness_error = traceback.format_exc()[-3000:]
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    r.out.seconds = round(time.monotonic() - t0, 1)
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return r.out


def run_isolated(s: Scenario, only: set[str] | None = None, keep: bool = False) -> Outcome:
    """``run_scenario`` in a Python process of its own (the long run: a hang or a crash of one scenario, or of
    librdkafka, stays there; and each scenario runs the code as it is on disk now)."""
    import subprocess
    with tempfile.TemporaryDirectory(prefix="scenario-io-") as tmp:
        case, result = Path(tmp, "case.json"), Path(tmp, "outcome.json")
        case.write_text(s.to_json())
        cmd = [sys.executable, str(HERE.parent.parent.parent / "tools" / "kafka_scenarios.py"), "--replay", str(case),
               "--outcome", str(result), *(["--only", ",".join(sorted(only))] if only else []),
               *(["--keep"] if keep else [])]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
            err = proc.stderr[-3000:]
        except subprocess.TimeoutExpired as e:
            err = f"scenario process timed out after 3600 s: {str(e.stderr)[-2000:]}"
        if result.is_file():
            return Outcome(**json.loads(result.read_text()))
        out = Outcome(s.seed, s.version, json.loads(s.to_json()))
        out.harness_error = f"the scenario's process left no outcome:\n{err}"
        return out


def shrink(s: Scenario, check: str, budget: int, log=print) -> tuple[Scenario, int]:
    """The smallest scenario on which ``check`` still disagrees (greedy; at most ``budget`` runs)."""
    runs = 0
    best = s
    improved = True
    while improved and runs < budget:
        improved = False
        for cand in plan.shrink_candidates(best):
            if runs >= budget:
                break
            if cand.size() >= best.size():
                continue
            runs += 1
            out = run_isolated(cand, only={check})
            if check in out.checks_failed():
                log(f"  shrunk to size {cand.size()}: {cand.summary()}")
                best = cand
                improved = True
                break
    return best, runs


def _seeds(spec: str) -> list[int]:
    out = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        elif part:
            out.append(int(part))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generated scenarios against real Kafka brokers (issue 36).")
    ap.add_argument("--versions", default=jars.DEFAULT_VERSION,
                    help=f"comma-separated, or 'all' ({', '.join(ALL_VERSIONS)})")
    ap.add_argument("--seeds", help="seeds to run, e.g. 1-20,33 (default: from --first-seed on, until --hours)")
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--hours", type=float, help="run seeds until this much time has passed")
    ap.add_argument("--report", default="scenarios-report.json")
    ap.add_argument("--replay", help="a scenario's JSON file (or a report's shrunk case) to run alone")
    ap.add_argument("--shrink-runs", type=int, default=12, help="runs a shrink may take per disagreement")
    ap.add_argument("--keep", action="store_true", help="keep each scenario's directories")
    ap.add_argument("--only", help="with --replay: only these checks (comma-separated)")
    ap.add_argument("--outcome", help="with --replay: write the outcome's JSON here")
    args = ap.parse_args(argv)
    versions = list(ALL_VERSIONS) if args.versions == "all" else args.versions.split(",")
    report = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "versions": versions, "scenarios": [],
              "disagreements": [], "shrunk": [], "harness_errors": [], "per_version": {}}

    def save():
        tmp = Path(args.report + ".tmp")
        tmp.write_text(json.dumps(report, indent=1, default=str))
        tmp.replace(args.report)

    if args.replay:
        spec = json.loads(Path(args.replay).read_text())
        s = Scenario.from_json(spec.get("scenario", spec))          # a regression file or a bare scenario
        out = run_scenario(s, only=set(args.only.split(",")) if args.only else None, keep=args.keep,
                           yield_to_pause=bool(args.outcome))
        if args.outcome:
            Path(args.outcome).write_text(json.dumps(asdict(out), default=str))
        else:
            print(json.dumps(asdict(out), indent=1, default=str))
        return 1 if out.disagreements or out.harness_error else 0

    deadline = time.monotonic() + args.hours * 3600 if args.hours else None
    seeds = _seeds(args.seeds) if args.seeds else None
    i = 0
    t_start = time.monotonic()
    while True:
        if seeds is not None and i >= len(seeds):
            break
        if deadline is not None and time.monotonic() > deadline:
            break
        seed = seeds[i] if seeds is not None else args.first_seed + i
        i += 1
        for version in versions:
            if deadline is not None and time.monotonic() > deadline:
                break
            s = plan.draw(seed, version)
            print(f"[{time.strftime('%H:%M:%S')}] {s.summary()}", flush=True)
            out = run_isolated(s, keep=args.keep)
            pv = report["per_version"].setdefault(version, {"scenarios": 0, "disagreeing": 0, "harness_errors": 0,
                                                            "seconds": 0.0})
            pv["scenarios"] += 1
            pv["seconds"] = round(pv["seconds"] + out.seconds, 1)
            report["scenarios"].append({"seed": seed, "version": version, "seconds": out.seconds,
                                        "disagreements": len(out.disagreements),
                                        "checks_failed": sorted(out.checks_failed()),
                                        "harness_error": bool(out.harness_error), "notes": out.notes,
                                        "step_errors": out.step_errors, "damage": out.damage})
            print(f"    {out.seconds} s, {len(out.disagreements)} disagreements"
                  + (", HARNESS ERROR" if out.harness_error else ""), flush=True)
            if out.harness_error:
                pv["harness_errors"] += 1
                report["harness_errors"].append({"seed": seed, "version": version, "error": out.harness_error})
                print(out.harness_error, flush=True)
            if out.disagreements:
                pv["disagreeing"] += 1
                for d in out.disagreements:
                    report["disagreements"].append({"seed": seed, "version": version, **d})
                    print(f"    {d['check']}: {d['detail'][:400]}", flush=True)
                for check in sorted(out.checks_failed()):
                    known = {(x["version"], x["check"]) for x in report["shrunk"]}
                    if (version, check) in known or args.shrink_runs <= 0:
                        continue
                    small, runs = shrink(s, check, args.shrink_runs)
                    report["shrunk"].append({"seed": seed, "version": version, "check": check, "runs": runs,
                                             "size": small.size(), "summary": small.summary(),
                                             "scenario": json.loads(small.to_json())})
            report["elapsed_s"] = round(time.monotonic() - t_start, 1)
            save()
    report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    save()
    total = sum(v["scenarios"] for v in report["per_version"].values())
    print(f"{total} scenarios, {len(report['disagreements'])} disagreements, "
          f"{len(report['harness_errors'])} harness errors; report: {args.report}")
    return 1 if report["disagreements"] or report["harness_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
