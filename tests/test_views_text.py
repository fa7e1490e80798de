"""What the state views print (issue 35, items 4-7): no name is ever cut or made to look like another (long,
similar names piped and at an 80-column terminal), nothing read from the disk reaches the terminal raw
(control characters in a group's protocol type and protocol, names, ids, in text and JSON), LAG as
ConsumerGroupCommand computes it (negative beyond the log end), and a reset CSV holding only what
kafka-consumer-groups.sh can read back."""
from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

import views_data as vd
from conftest import run_cli
from kafkalog_formats import group_coordinator as gc
from kafkalog_formats import transaction_log as tl
from kafkalog_cli.render import view_text

T0, NOW = vd.T0, vd.NOW
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\x7f\x9b"


def objs(out: str, kind: str) -> list[dict]:
    return [o for o in map(json.loads, out.splitlines()) if o.get("type") == kind]


def commit(group, topic, part, offset, at):
    key = gc.build_key(1, {"group": group, "topic": topic, "partition": part})
    return (at, key, gc.build_value(1, {"offset": offset, "leaderEpoch": 0, "metadata": HOSTILE,
                                        "commitTimestamp": at}, 3))


def hostile_dir(tmp_path):
    """Group metadata whose protocol type, protocol, member, client and host hold escape sequences; a group id
    and a topic with them; a transactional id with them; a partition directory whose topic holds DEL."""
    logdir = tmp_path / "logdir"
    logdir.mkdir(parents=True)
    p = vd.Partition(logdir, "__consumer_offsets", 0)
    value = {"protocolType": "consumer" + HOSTILE, "generation": 1, "protocol": "range" + HOSTILE,
             "leader": "m", "currentStateTimestamp": T0,
             "members": [{"memberId": "m" + HOSTILE, "groupInstanceId": "i" + HOSTILE, "clientId": "c" + HOSTILE,
                          "clientHost": "/h" + HOSTILE, "rebalanceTimeout": 1, "sessionTimeout": 1,
                          "subscription": b"", "assignment": b""}]}
    p.records([(T0, gc.build_key(2, {"group": "g" + HOSTILE}), gc.build_value(2, value, 3))])
    p.records([commit("g" + HOSTILE, "t" + HOSTILE, 0, 5, T0), commit("plain", "orders", 0, 3, T0)])
    p.close()
    ts = vd.Partition(logdir, "__transaction_state", 0)
    state = {"producerId": 1, "producerEpoch": 0, "transactionTimeoutMs": 60000, "transactionStatus": 1,
             "transactionPartitions": [{"topic": "x" + HOSTILE, "partitionIds": [0]}],
             "transactionLastUpdateTimestampMs": T0, "transactionStartTimestampMs": T0}
    ts.records([(T0, tl.build_key("tid" + HOSTILE), tl.build_value(state, 1))])
    ts.close()
    d = vd.Partition(logdir, "del\x7fete", 0)
    d.records([(T0, b"k", b"v")])
    d.close()
    vd._checkpoints(logdir, {("__consumer_offsets", 0): p.next, ("__transaction_state", 0): ts.next,
                             ("del\x7fete", 0): 1}, None)
    return logdir


def test_nothing_from_the_disk_reaches_the_terminal_raw(tmp_path):
    """Before: consumer-groups printed a group's protocol type and protocol raw (an OSC title, a screen clear,
    a colour change reached the terminal), and JSON output held DEL and C1 characters raw."""
    logdir = hostile_dir(tmp_path)
    runs = [("consumer-groups",), ("consumer-groups", "--details"), ("consumer-groups", "--format", "json"),
            ("transactions", "--list"),
            ("transactions", "--list", "--format", "json"), ("describe",), ("describe", "--details"),
            ("describe", "--format", "json")]
    for args in runs:
        r = run_cli(*args, "--now", str(NOW), str(logdir))
        assert "Traceback" not in r.err, (args, r.err)
        assert not RAW_CONTROL.search(r.out.replace("\n", "")), (args, r.out)
        assert not RAW_CONTROL.search(r.err.replace("\n", "")), (args, r.err)
    text = " ".join(run_cli("consumer-groups", "--details", "--now", str(NOW), str(logdir)).out.split())
    assert "protocol type consumer\\x1b]0;pwned\\x07" in text and "(range\\x1b]0;pwned" in text
    js = run_cli("consumer-groups", "--format", "json", "--now", str(NOW), str(logdir)).out
    group = next(g for g in objs(js, "group") if g["group"].startswith("g"))
    assert group["protocol_type"] == "consumer" + HOSTILE                # JSON keeps the value exactly
    assert "\\u007f" in js and "\\u009b" in js
    # the reset file is data for kafka-consumer-groups.sh: piped, the group id and topic exactly; at a terminal
    # escaped
    csv = run_cli("consumer-groups", "--format", "csv", "--now", str(NOW), str(logdir)).out
    assert f"g{HOSTILE},t{HOSTILE},0,5" in csv.splitlines()
    shown = _on_a_terminal(["consumer-groups", "--format", "csv", "--now", str(NOW), str(logdir)], columns=80)
    assert not RAW_CONTROL.search(shown.replace("\n", "")) and "g\\x1b]0;pwned" in shown


def test_lag_is_log_end_minus_offset_and_negative_beyond_the_end(tmp_path):
    """ConsumerGroupCommand.getLag: end - offset, not clamped (a committed offset beyond a truncated log).
    Before: clamped to 0."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    data = vd.Partition(logdir, "orders", 0)
    data.records([(T0, b"k", b"v")] * 5)
    data.close()
    p = vd.Partition(logdir, "__consumer_offsets", 0)
    p.records([commit("g", "orders", 0, 9, T0), commit("h", "orders", 0, 2, T0)])
    p.close()
    vd._checkpoints(logdir, {("__consumer_offsets", 0): p.next, ("orders", 0): 5}, None)
    r = run_cli("consumer-groups", "--format", "json", "--now", str(NOW), str(logdir))
    lags = {o["group"]: (o["log_end_offset"], o["lag"]) for o in objs(r.out, "offset")}
    assert lags == {"g": (5, -4), "h": (5, 3)}
    text = run_cli("consumer-groups", "--group", "g", "--now", str(NOW), str(logdir)).out
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("orders"))
    assert row.split()[1:5] == ["0", "9", "5", "-4"]


def test_the_csv_leaves_out_what_kafka_consumer_groups_cannot_read(tmp_path):
    """OffsetsUtils.parseResetPlan splits the file at line breaks before reading a field: a group id or
    topic with one cannot be restored from the file. Before: written quoted across two lines, exit 0."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    p = vd.Partition(logdir, "__consumer_offsets", 0)
    p.records([commit("bad\ngroup", "orders", 0, 1, T0), commit("ok", "orders", 0, 2, T0),
               commit("ok", "two\r\nlines", 0, 3, T0), commit("q,\"uoted", "orders", 0, 4, T0)])
    p.close()
    vd._checkpoints(logdir, {("__consumer_offsets", 0): p.next}, None)
    r = run_cli("consumer-groups", "--format", "csv", "--now", str(NOW), str(logdir))
    assert r.code == 1
    assert r.out.splitlines() == ["ok,orders,0,2", '"q,""uoted",orders,0,4']
    assert r.err.count("not written to the CSV file") == 2
    assert "bad\\x0agroup" in r.err and "two\\x0d\\x0alines" in r.err
    one = run_cli("consumer-groups", "--format", "csv", "--group", "ok", "--now", str(NOW), str(logdir))
    assert one.code == 1 and one.out == "orders,0,2\n"
    refused = run_cli("consumer-groups", "--format", "csv", "--group", "bad\ngroup", str(logdir))
    assert refused.code == 2


def _similar_names_dir(tmp_path) -> tuple:
    """Partitions whose topics differ only in the middle of a long name (as a real disk's 20
    _confluent-...-partition topics did), each with offsets committed by a group of a similar long id."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    names = [f"_confluent-controlcenter-7-4-0-1-{kind}-KSTREAM-AGGREGATE-STATE-STORE-0000000{n}-changelog"
             for kind in ("MonitoringStream", "MonitoringTriggerStore") for n in (1, 2)]
    offsets = vd.Partition(logdir, "__consumer_offsets", 0)
    for i, name in enumerate(names):
        part = vd.Partition(logdir, name, 0)
        part.records([(T0, b"k", b"v")] * (i + 1))
        part.close()
        offsets.records([commit("_confluent-controlcenter-7-4-0-1-command-consumer-group-" + str(i), name, 0, i,
                                T0)])
    offsets.close()
    vd._checkpoints(logdir, {("__consumer_offsets", 0): offsets.next, **{(n, 0): i + 1 for i, n in enumerate(names)}},
                    None)
    return logdir, names


def _first_cells(lines: list[str]) -> list[str]:
    """Each table row's first cell, its continuation lines (a name a terminal table wrapped: a line holding that
    cell alone) joined back."""
    out: list[str] = []
    for ln in lines[1:]:
        if not ln.strip():
            break
        if ln.startswith(" ") or len(ln.split()) == 1:
            out[-1] += ln.strip()
        else:
            out.append(ln.split()[0])
    return out


def test_long_similar_names_piped_are_whole(tmp_path, monkeypatch):
    """Not a terminal: whole names, whatever the width, as kafka-consumer-groups.sh prints them. Before: cut in
    the middle with an ellipsis even when piped or at COLUMNS=200, so different topics printed alike."""
    logdir, names = _similar_names_dir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    for args in (("describe",), ("consumer-groups",), ("describe", "--topics")):
        r = run_cli(*args, "--now", str(NOW), str(logdir))
        assert "…" not in r.out
        for n in names:
            assert n in r.out, (args, n)


def test_long_similar_names_at_an_80_column_terminal_wrap_and_stay_distinct(tmp_path):
    logdir, names = _similar_names_dir(tmp_path)
    rows = [[f"{n}-0", "1 KiB", "1", "0", "5", "5", "5", "0"] for n in names]
    lines = view_text.table(["PARTITION", "SIZE", "SEGS", "LOG START", "LOG END", "HW", "LSO", "TXNS"], rows,
                            right={1, 2, 3, 4, 5, 6, 7}, width=80)
    assert max(map(len, lines)) <= 80
    assert _first_cells(lines) == [f"{n}-0" for n in names]
    assert len(lines) > len(names) + 1                    # the names did not fit: they continue below
    # the real command on a real terminal (a pseudo-terminal of 80 columns)
    out = _on_a_terminal(["describe", "--now", str(NOW), str(logdir)], columns=80)
    assert "…" not in out and max(map(len, out.splitlines())) <= 80, out
    assert _first_cells(out.splitlines()) == ["__consumer_offsets-0"] + [f"{n}-0" for n in names]
    wide = _on_a_terminal(["describe", "--now", str(NOW), str(logdir)], columns=200)
    assert _first_cells(wide.splitlines()) == ["__consumer_offsets-0"] + [f"{n}-0" for n in names]
    assert wide.splitlines()[6] == ""                     # room for whole names: one line per row


def _on_a_terminal(args: list[str], columns: int) -> str:
    """The command's stdout when it is a terminal of ``columns`` columns."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS=str(columns), LINES="50", NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "--no-progress", *args], stdout=slave,
                            stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_consumer_groups_details(tmp_path):
    w = vd.logdir_with_offsets(tmp_path)
    r = run_cli("consumer-groups", "--details", "--now", str(NOW), str(w.logdir))
    assert r.code == 0
    lines = r.out.splitlines()
    assert "  member           m-1: client c, host /h" in lines
    assert "  subscribed       orders" in lines
    assert any(ln.startswith("  pending          orders-1: 15 by producer 502") for ln in lines)
    assert any(ln.startswith("  offset           orders-0: 9, leader epoch 0, committed") for ln in lines)
