"""Every kafkalog read and repair compared with the broker (issue 36). Each ``check_*`` takes what the
runner gathered and returns the disagreements it finds, as ``{"check", "detail"}`` dicts; an empty list is
agreement. kafkalog runs as a subprocess (``python -m kafkalog_cli``): a traceback or an exit status the
command does not document is a disagreement too.

The checks and the broker answers they use (``oracle.ask``):

* ``verify``: exit 0 on a directory the broker loaded without an ERROR or WARN line (and on every directory
  a broker stopped cleanly);
* ``dump-log-text``: ``dump-log`` = the same release's ``DumpLogSegments`` (every file kind, shallow, then
  ``--deep-iteration --print-data-log``), with the README's documented differences undone;
* ``dump-log-json``: the records of ``dump-log --format json`` = what consumers read, both isolation levels;
* ``lookup-time``: = ListOffsets by timestamp and max-timestamp;
* ``describe``: log start / high watermark / last stable offset = ListOffsets earliest / latest / latest
  read_committed; size = DescribeLogDirs; producers and open transactions = DescribeProducers;
* ``consumer-groups``: the groups and their committed offsets = ListGroups and ListConsumerGroupOffsets;
* ``transactions``: the transactional ids and states = ListTransactions/DescribeTransactions; hanging ones =
  ``kafka-transactions.sh find-hanging``;
* ``recover``: the broker started on kafkalog's result finds nothing to repair and serves what the broker
  that recovered the directory itself serves;
* ``maintenance``: delete-records, retain and compact = the broker's DeleteRecords, retention and cleaner
  (segments, log-start-offset checkpoint, records), then the broker serving both alike;
* ``expire-groups``: consumer-groups = the coordinator after its first expiration.
"""
from __future__ import annotations

import base64
import difflib
import json
import re
import subprocess
import sys
from pathlib import Path

import jars

SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex")
# exit statuses each command documents for a readable input
DOCUMENTED = {0, 1}


def kl(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``kafkalog ARGS`` in a process of its own."""
    res = subprocess.run([sys.executable, "-m", "kafkalog_cli", "-q", *args], capture_output=True, timeout=timeout)
    # no universal newlines: a record's "\r" stays a "\r", as in DumpLogSegments' output
    return subprocess.CompletedProcess(res.args, res.returncode, res.stdout.decode("utf-8", "replace"),
                                       res.stderr.decode("utf-8", "replace"))


def _bad_run(check: str, res, allowed=DOCUMENTED) -> list[dict]:
    if "Traceback" in res.stderr or res.returncode not in allowed:
        return [{"check": check, "detail": f"kafkalog {' '.join(res.args[3:])[:300]} exited {res.returncode}: "
                                           f"{(res.stderr or res.stdout)[-800:]}"}]
    return []


def _objs(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def user_dirs(log_dir: Path) -> list[Path]:
    return sorted(p for p in log_dir.iterdir() if p.is_dir() and "-" in p.name and not p.name.startswith("__")
                  and p.name.rsplit("-", 1)[1].isdigit())


# --- verify ---------------------------------------------------------------------------------------------

def check_verify(log_dir: Path, label: str) -> list[dict]:
    res = kl("verify", "--format", "json", str(log_dir))
    bad = _bad_run("verify", res)
    if bad:
        return bad
    if res.returncode != 0:
        found = [o for o in _objs(res.stdout) if o.get("severity") == "error" or o.get("type") == "finding"
                 and o.get("severity") in ("error",)]
        return [{"check": "verify", "detail": f"verify exits 1 on {label}, which the broker loads without "
                                              f"complaint: {json.dumps(found)[:1500]}"}]
    return []


# --- dump-log text vs DumpLogSegments -----------------------------------------------------------------

def check_dump_text(version: str, log_dir: Path) -> list[dict]:
    """Not before 3.0: kafkalog prints the text of the 3.0+ tool; 2.x's ``DumpLogSegments`` has another form
    (``Starting offset:``, no ``deleteHorizonMs``, codec names in capitals, each record line repeating its
    batch's fields and ``crc: null``), a difference on purpose (docs/testing.md)."""
    from broker import dump_log_segments
    from test_broker_read_side import documented, documented_stderr
    if jars.major(version) < 3:
        return []
    files = [p for d in user_dirs(log_dir) for p in sorted(d.iterdir())
             if p.suffix in SUFFIXES and p.name[:20].isdigit()]
    if not files:
        return []
    out = []
    cases = {"shallow": (files, ()),
             "deep-print": ([f for f in files if f.suffix == ".log"], ("--deep-iteration", "--print-data-log"))}
    for case, (fs, options) in cases.items():
        if not fs:
            continue
        kafka = dump_log_segments(version, fs, *options)
        if kafka.returncode != 0:
            continue                                     # the tool itself failed: nothing to compare
        ours = kl("dump-log", "--files", ",".join(map(str, fs)), *options)
        out += _bad_run("dump-log-text", ours)
        want, got = documented(version, case, kafka.stdout, ours.stdout)
        if got != want:
            diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "DumpLogSegments", "kafkalog",
                                        lineterm="", n=1)
            lines = list(diff)[:40]
            if not lines:
                at = next(i for i, (x, y) in enumerate(zip(want, got)) if x != y) if len(want) == len(got) else 0
                lines = [f"at character {at}: {want[at:at + 80]!r} vs {got[at:at + 80]!r}"]
            out.append({"check": "dump-log-text", "detail": f"{case}:\n" + "\n".join(lines)})
        kerr = documented_stderr(version, kafka.stderr)
        if ours.stderr.strip() != kerr:
            out.append({"check": "dump-log-text", "detail": f"{case} stderr: DumpLogSegments {kerr[:600]!r}, "
                                                            f"kafkalog {ours.stderr.strip()[:600]!r}"})
    return out


# --- records: dump-log JSON vs consumers ---------------------------------------------------------------

def visible(res_out: str, isolation: str) -> list[list]:
    """The records a consumer with ``isolation`` reads, from dump-log's JSON (offset order; read_committed
    drops the records of transactions their ABORT marker ends, and those still open)."""
    objs = _objs(res_out)
    batches = {(o["file"], o["position"]): o for o in objs if o["type"] == "batch"}
    pending: dict[int, list] = {}
    out: list = []
    for r in (o for o in objs if o["type"] == "record"):
        b = batches[(r["file"], r["batch_position"])]
        if b["is_control"]:
            held = pending.pop(b["producer_id"], [])
            if r["control"]["type"] == "COMMIT":
                out += held
            continue
        row = [r["offset"], 2 if r.get("timestamp_type") == "LogAppendTime" else 1, r["timestamp"], r["key"],
               r["value"], [[h["key"], h["value"]] for h in r["headers"]]]
        if isolation == "read_committed" and b["is_transactional"]:
            pending.setdefault(b["producer_id"], []).append(row)
        else:
            out.append(row)
    return sorted(out, key=lambda r: r[0])


def _first_diff(want: list, got: list) -> str:
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            return f"first difference at #{i}: broker {str(w)[:300]}, kafkalog {str(g)[:300]}"
    return f"broker {len(want)} entries, kafkalog {len(got)}"


def check_dump_json(log_dir: Path, ans: dict) -> list[dict]:
    out = []
    for part in ans["partitions"]:
        d = log_dir / part
        if not d.is_dir():
            out.append({"check": "dump-log-json", "detail": f"{part}: the broker serves it, no directory"})
            continue
        res = kl("dump-log", "--format", "json", "--print-data-log", "--key-decoder", "base64",
                 "--value-decoder", "base64", str(d))
        bad = _bad_run("dump-log-json", res)
        if bad:
            out += bad
            continue
        for iso in ("read_uncommitted", "read_committed"):
            want = [[o, tt, ts, k, v, h] for o, tt, ts, k, v, h in ans["reads"][f"{part}/{iso}"]]
            got = visible(res.stdout, iso)
            if want != got:
                out.append({"check": "dump-log-json", "detail": f"{part} {iso}: {_first_diff(want, got)}"})
    return out


# --- lookups vs ListOffsets ------------------------------------------------------------------------------

def check_lookup_time(log_dir: Path, ans: dict) -> list[dict]:
    wrong = []
    asks = [(k.rsplit("@", 1)[0], k.rsplit("@", 1)[1], tuple(v)) for k, v in ans["by_time"].items()]
    asks += [(part, "max-timestamp", tuple(v)) for part, v in ans.get("max_timestamp", {}).items()]
    for part, ts, want in asks:
        res = kl("lookup-time", "--format", "json", str(log_dir / part), ts)
        if "Traceback" in res.stderr or res.returncode not in (0, 1):
            wrong.append(f"{part} {ts}: exit {res.returncode} {res.stderr[-300:]}")
            continue
        objs = _objs(res.stdout)
        obj = objs[-1] if objs else {}
        got = (obj.get("found_offset", -1), obj.get("found_timestamp", -1)) if res.returncode == 0 else (-1, -1)
        if got != want:
            wrong.append(f"{part} timestamp {ts}: broker {want}, kafkalog {got} (exit {res.returncode})")
    return [{"check": "lookup-time", "detail": w} for w in wrong]


# --- describe vs ListOffsets / DescribeLogDirs / DescribeProducers ---------------------------------------

def check_describe(log_dir: Path, ans: dict) -> list[dict]:
    res = kl("describe", "--format", "json", "--now", str(ans["now"]), str(log_dir))
    bad = _bad_run("describe", res)
    if bad:
        return bad
    parts = {f"{o['topic']}-{o['partition']}": o for o in _objs(res.stdout) if o["type"] == "partition"}
    out = []
    sizes = {f"{o['topic']}-{o['partition']}": o["size"] for o in ans["oracle"] if o["type"] == "size"}
    producers: dict[str, list] = {}
    for o in ans["oracle"]:
        if o["type"] == "producer":
            producers.setdefault(f"{o['topic']}-{o['partition']}", []).append(o)
    supported = not any(o["type"] == "unsupported" for o in ans["oracle"])
    for part in ans["partitions"]:
        d = parts.get(part)
        if d is None:
            out.append({"check": "describe", "detail": f"{part}: the broker serves it, describe does not list it"})
            continue
        for field, key in (("log_start_offset", "earliest"), ("high_watermark", "latest"),
                           ("last_stable_offset", "committed")):
            if d[field] != ans[key][part]:
                out.append({"check": "describe", "detail": f"{part} {field}: broker {ans[key][part]}, "
                                                           f"describe {d[field]}"})
        if part in sizes and d["size"] != sizes[part]:
            out.append({"check": "describe", "detail": f"{part} size: DescribeLogDirs {sizes[part]}, "
                                                       f"describe {d['size']}"})
        if supported:
            # a producer idle for producer.id.expiration.ms (1 day) is expired; the broker drops it at its next
            # check (every 10 minutes, ProducerStateManager.removeExpiredProducers), describe at --now
            ps = [p for p in producers.get(part, [])
                  if p["current_txn_start_offset"] >= 0 or ans["now"] - p["last_timestamp"] < 86_400_000]
            if d["producers"] != len(ps):
                out.append({"check": "describe", "detail": f"{part} producers: DescribeProducers {len(ps)} "
                                                           f"({[p['producer_id'] for p in ps]}), describe {d['producers']}"})
            want = sorted(p["current_txn_start_offset"] for p in ps if p["current_txn_start_offset"] >= 0)
            got = sorted(t["first_offset"] for t in d["open_transactions"])
            if want != got:
                out.append({"check": "describe", "detail": f"{part} open transactions' first offsets: "
                                                           f"DescribeProducers {want}, describe {got}"})
    extra = {p for p in parts if not p.startswith("__")} - set(ans["partitions"])
    if extra:
        out.append({"check": "describe", "detail": f"describe lists partitions the broker does not serve: "
                                                   f"{sorted(extra)}"})
    return out


# --- consumer-groups vs ListGroups / ListConsumerGroupOffsets ------------------------------------------

def check_groups(log_dir: Path, ans_groups: dict, now: int, extra: tuple = (), label: str = "consumer-groups"
                 ) -> list[dict]:
    res = kl("consumer-groups", "--format", "json", "--now", str(now), *extra, str(log_dir))
    bad = _bad_run(label, res)
    if bad:
        return bad
    objs = _objs(res.stdout)
    got: dict = {}
    for o in objs:
        if o["type"] == "offset" and not o.get("expired"):
            got.setdefault(o["group"], {})[f"{o['topic']}-{o['partition']}"] = o["offset"]
    listed = {o["group"] for o in objs if o["type"] == "group" and not o.get("deleted_by_expiration")}
    want = {g: v["offsets"] for g, v in ans_groups.items()}
    out = []
    if set(want) != listed | set(got):
        out.append({"check": label, "detail": f"groups: ListGroups {sorted(want)}, kafkalog "
                                              f"{sorted(listed | set(got))}"})
    for g in sorted(set(want) | set(got)):
        if want.get(g, {}) != got.get(g, {}):
            out.append({"check": label, "detail": f"group {g}: ListConsumerGroupOffsets {want.get(g, {})}, "
                                                  f"kafkalog {got.get(g, {})}"})
    return out


# --- transactions vs ListTransactions / find-hanging ----------------------------------------------------

def check_transactions(log_dir: Path, ans: dict) -> list[dict]:
    res = kl("transactions", "--format", "json", "--list", "--max-transaction-timeout", "0", "--now",
             str(ans["now"]), str(log_dir))
    bad = _bad_run("transactions", res)
    if bad:
        return bad
    objs = _objs(res.stdout)
    out = []
    listed = {o["transactional_id"]: o for o in ans["oracle"] if o["type"] == "transaction"}
    ours = {o["transactional_id"]: o for o in objs if o["type"] == "transactional_id"}
    if not any(o["type"] == "unsupported" for o in ans["oracle"]):
        if set(listed) != set(ours):
            out.append({"check": "transactions", "detail": f"transactional ids: ListTransactions {sorted(listed)}, "
                                                           f"kafkalog {sorted(ours)}"})
        for tid in set(listed) & set(ours):
            w, g = listed[tid], ours[tid]
            if (w["state"], w["producer_id"]) != (g["state"], g["producer_id"]):
                out.append({"check": "transactions", "detail": f"{tid}: ListTransactions {w['state']} "
                                                               f"{w['producer_id']}, kafkalog {g['state']} {g['producer_id']}"})
    if ans.get("hanging") is not None:
        want = sorted((h["Topic"], int(h["Partition"]), int(h["StartOffset"])) for h in ans["hanging"])
        got = sorted((o["topic"], o["partition"], o["first_offset"]) for o in objs
                     if o["type"] == "open_transaction" and o["status"] == "hanging")
        if want != got:
            out.append({"check": "transactions", "detail": f"hanging: find-hanging {want}, kafkalog {got}"})
        if got and res.returncode != 1:
            out.append({"check": "transactions", "detail": f"exit {res.returncode} with {len(got)} hanging"})
    return out


# --- repairs -------------------------------------------------------------------------------------------

LOAD_REPAIRS = r"Found invalid messages|Truncating|[Cc]orrupt|Found a corrupted index|Deleting segment|" \
               r"recovering segment|rebuilding index|Rebuilding index|Found deletable segments|not found"


def broker_repairs(lines: list[str]) -> list[str]:
    return [m for m in lines if re.search(LOAD_REPAIRS, m)]


def served_equal(check: str, ans_a: dict, ans_b: dict, label: str) -> list[dict]:
    out = []
    for key in ("partitions", "earliest", "latest", "committed"):
        if ans_a[key] != ans_b[key]:
            out.append({"check": check, "detail": f"{key}: broker on {label} {ans_a[key]}, "
                                                  f"broker on the broker's own result {ans_b[key]}"})
    for key in sorted(set(ans_a["reads"]) | set(ans_b["reads"])):
        a, b = ans_a["reads"].get(key, []), ans_b["reads"].get(key, [])
        if a != b:
            out.append({"check": check, "detail": f"{key} served differently: {_first_diff(b, a)}"})
    return out


def log_bytes(log_dir: Path) -> dict[str, str]:
    import hashlib
    return {f"{d.name}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            for d in user_dirs(log_dir) for p in sorted(d.glob("*.log"))}


def log_batches(log_dir: Path) -> dict[str, list]:
    """Every batch of the user partitions as dump-log gives it, byte for byte (CRC, size, position) except the
    transaction markers a coordinator writes when it loads a prepared transaction, whose timestamps (and so
    CRC) are the time of writing: two brokers write them at their own time."""
    out = {}
    for d in user_dirs(log_dir):
        rows = []
        for o in _objs(kl("dump-log", "--format", "json", str(d)).stdout):
            if o["type"] == "batch":
                row = {k: v for k, v in o.items() if k != "file"}
                if o["is_control"]:
                    for k in ("crc", "base_timestamp", "max_timestamp"):
                        row.pop(k, None)
                rows.append(row)
        out[d.name] = rows
    return out


def segment_names(log_dir: Path) -> dict[str, list[str]]:
    return {d.name: sorted(p.name for p in d.glob("*.log")) for d in user_dirs(log_dir)}


def checkpoint(log_dir: Path, name: str) -> dict[str, int]:
    from kafkalog_formats.checkpoint import parse_offset_checkpoint
    path = log_dir / name
    if not path.is_file():
        return {}
    return {f"{t}-{p}": o for (t, p), o in parse_offset_checkpoint(path.read_bytes()).items()
            if not t.startswith("__")}


def records_of(log_dir: Path, part: str) -> list:
    res = kl("dump-log", "--format", "json", "--print-data-log", "--key-decoder", "base64", "--value-decoder",
             "base64", str(log_dir / part))
    return [(o["offset"], o["timestamp"], o.get("key"), o.get("value"), json.dumps(o["headers"]))
            for o in _objs(res.stdout) if o["type"] == "record"]


def b64(value):
    return None if value is None else base64.b64encode(value).decode()
