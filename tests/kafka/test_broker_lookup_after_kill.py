"""lookup-time and ``dump-log --from-time`` after a kill -9 (issue 34 item 6) against the broker's ListOffsets.

Scenario ``killed-times`` (seed 34): a broker writes ``timed`` (1 MiB segments, CreateTime timestamps one second
apart, three segments) and is killed. The active segment's ``.timeindex`` is then still preallocated
(``segment.index.bytes``): its last slot reads timestamp 0. Copy A: kafkalog reads the killed directory as it
is. Copy B: the broker restarts on it, recovers the active segment (no ``.kafka_cleanshutdown``: its indexes
are rebuilt from the batches) and answers ListOffsets by timestamp. For timestamps in every segment, between
records and past the last one, lookup-time gives the broker's offset and timestamp, and ``dump-log
--from-time`` starts at that offset (before the fix: nothing found in the active segment, exit 1).
"""
from __future__ import annotations

import json
import random

import clients
import crash
import scenarios
from conftest import run_cli

TOPIC = "timed"
N = 2500
T0 = scenarios.T0


def test_lookup_time_after_a_kill_equals_list_offsets_of_the_recovered_broker(kafka_version, kafka_jars,
                                                                               make_broker):
    rng = random.Random(34)
    w = make_broker(kafka_version, "writer")
    w.start()
    clients.create_topic(w.bootstrap, TOPIC, config={"segment.bytes": scenarios.SEGMENT_BYTES, "retention.ms": -1})
    p = clients.producer(w.bootstrap, linger_ms=0, batch_num_messages=8)
    clients.deliver(p, TOPIC, [(b"k%d" % i, scenarios.payload(rng, 900), [], T0 + i * 1000) for i in range(N)])
    w.kill()
    pdir = w.log_dir / f"{TOPIC}-0"
    active = sorted(pdir.glob("*.timeindex"))[-1]
    data = active.read_bytes()
    assert len(data) > 12 and data[-12:] == bytes(12), "the active time index is trimmed: the scenario is void"
    assert len(list(pdir.glob("*.log"))) >= 3

    a = crash.adopt(w.log_dir, make_broker(kafka_version, "a"))
    b = crash.adopt(w.log_dir, make_broker(kafka_version, "b"))
    from_times = (T0 + (N - 5) * 1000, T0 + 1500)
    targets = sorted({T0 + i * 1000 + d for i in range(0, N, 97) for d in (0, 1)}
                     | {T0 - 1, T0 + (N - 1) * 1000, T0 + N * 1000, *from_times})
    b.start()
    broker = {ts: clients.offset_for_time(b.bootstrap, TOPIC, 0, ts) for ts in targets}
    b.stop()
    assert b.errors() == [], b.errors()

    wrong = []
    for ts in targets:
        res = run_cli("lookup-time", "--format", "json", str(a.log_dir / f"{TOPIC}-0"), str(ts))
        obj = json.loads(res.out) if res.code == 0 else {}
        got = (obj.get("found_offset", -1), obj.get("found_timestamp", -1))
        if got != broker[ts]:
            wrong.append(f"timestamp {ts}: broker {broker[ts]}, kafkalog {got} (exit {res.code}: {res.err.strip()})")
    assert not wrong, "\n".join(wrong)
    assert broker[T0 + (N - 1) * 1000][0] == N - 1          # the newest record, in the active segment

    for ts in from_times:
        res = run_cli("dump-log", "--format", "json", "--deep-iteration", "--from-time", str(ts),
                      str(a.log_dir / f"{TOPIC}-0"))
        assert res.code == 0, res.err
        first = next(o for o in map(json.loads, res.out.splitlines()) if o["type"] == "record")
        assert first["offset"] == broker[ts][0], (first["offset"], broker[ts])
