"""Broker test group 2, recover (and group 5, verify, on every directory it leaves).

Scenario ``killed`` (``crash.run_until_killed``): an idempotent and two transactional producers write, and
the broker is SIGKILLed at a seeded moment; the directory is copied twice. Copy B: the broker recovers it
itself (``LogLoader.load``: ``recoverLog`` from the recovery point, producer state rebuilt). Copy A:
``kafkalog recover`` (with ``--mark-clean`` for the seeds that say so), then the broker starts on it.
Both must start without an ERROR line; the partitions' ``.log`` bytes must be equal; consumers of both
isolation levels must read the same; producers continuing (each transactional id re-initialised, which
aborts the transaction the kill left open; a committed and an aborted transaction; an idempotent
producer) must get the same offsets and leave the same records.

Seeds (``KAFKALOG_KAFKA_SEEDS`` adds more, comma-separated): 1 (recover), 2 (recover --mark-clean).
"""
from __future__ import annotations

import os
import re

import pytest

import clients
import crash
from conftest import run_cli

SEEDS = [(1, False), (2, True)] + [(int(s), int(s) % 2 == 0)
                                    for s in os.environ.get("KAFKALOG_KAFKA_SEEDS", "").split(",") if s]


def _serve(broker) -> dict:
    """What the broker serves: the records of ``orders`` at both isolation levels."""
    return {iso: clients.consume(broker.bootstrap, crash.TOPIC, 0, iso)
            for iso in ("read_uncommitted", "read_committed")}


@pytest.mark.parametrize("seed,mark_clean", SEEDS, ids=[f"seed{s}{'-mark-clean' if m else ''}" for s, m in SEEDS])
def test_recover_then_broker_equals_broker_recovery(kafka_version, kafka_jars, make_broker, seed, mark_clean):
    """Scenario killed, seed as named; rules: recovery of unflushed segments (``LogLoader.recoverLog``,
    ``LogSegment.recover``), producer state (``UnifiedLog.rebuildProducerState``), ``--mark-clean``'s marker
    and snapshots (issue 21 item 3)."""
    writer = make_broker(kafka_version, "writer")
    writer.start()
    crash.run_until_killed(writer, seed)
    killed = writer.log_dir
    assert not (killed / ".kafka_cleanshutdown").exists()

    # group 5: verify on the killed directory (the broker loads it, see B)
    res = run_cli("verify", str(killed))
    assert res.code == 0, res.out

    b = crash.adopt(killed, make_broker(kafka_version, "b"))
    a = crash.adopt(killed, make_broker(kafka_version, "a"))

    b.start()
    served_b = _serve(b)
    bytes_b = crash.log_bytes(b.log_dir)
    cont_b = crash.continue_producing(b.bootstrap)
    after_b = _serve(b)
    b.stop()
    assert b.errors() == []
    assert b.grep(r"Recovering unflushed segment"), "the broker recovered nothing: the scenario is void"
    assert len(served_b["read_uncommitted"]) >= 100, "the producers wrote (almost) nothing: the scenario is void"
    assert max(len(list(d.glob("*.log"))) for d in killed.glob(f"{crash.TOPIC}-*")) >= 2, \
        "one segment only: a recovery point left where it was would go unnoticed"

    args = ["recover", str(a.log_dir)] + (["--mark-clean"] if mark_clean else [])
    rec = run_cli(*args)
    assert rec.code in (0, 1), rec.out + rec.err
    res = run_cli("verify", str(a.log_dir))                      # group 5: what recover left
    assert res.code == 0, res.out
    last = {d.name: max(int(p.name[:20]) for p in d.glob("*.log")) for d in a.log_dir.glob(f"{crash.TOPIC}-*")}
    a.start()
    errors_a = a.errors()
    # the broker started on kafkalog's result finds nothing to recover: no truncation, no index rebuilt; with
    # --mark-clean no segment recovered at all, without it only each partition's last segment (the broker
    # recovers from the segment holding the recovery point, which recover set to the log end): had recover
    # done nothing, it would recover every segment from the old recovery point and truncate what it found
    assert not a.grep(r"Corruption found|Found invalid|Truncating|[Cc]orrupted index|[Rr]ebuilding index"), \
        a.grep(r"Corruption found|Found invalid|Truncating|[Cc]orrupted index|[Rr]ebuilding index")
    recovered = [(m["part"], int(m["base"])) for line in a.grep(r"Recovering unflushed segment")
                 if (m := re.search(r"partition=(?P<part>\S+),.*Recovering unflushed segment (?P<base>\d+)", line))
                 and m["part"] in last]
    if mark_clean:
        assert recovered == [], recovered
    else:
        assert all(base == last[part] for part, base in recovered), (recovered, last)
    served_a = _serve(a)
    bytes_a = crash.log_bytes(a.log_dir)
    cont_a = crash.continue_producing(a.bootstrap)
    after_a = _serve(a)
    a.stop()

    assert errors_a == [], errors_a
    assert bytes_a == bytes_b
    assert served_a == served_b
    assert cont_a == cont_b
    assert after_a == after_b
    # group 5: the directories both brokers left after a clean shutdown
    for d in (a.log_dir, b.log_dir):
        res = run_cli("verify", str(d))
        assert res.code == 0, res.out
