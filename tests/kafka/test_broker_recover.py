"""Broker test group 2, recover (and group 5, verify, on every directory it leaves).

Scenario ``killed`` (``crash.run_until_killed``): an idempotent and two transactional producers write, and
the broker is SIGKILLed at a seeded moment; the directory is copied twice. Copy B: the broker recovers it
itself (``LogLoader.load``: ``recoverLog`` from the recovery point, producer state rebuilt). Copy A:
``kafkalog recover`` (with ``--mark-clean`` for the seeds that say so), then the broker starts on it.
Before both, the last segment of each ``orders`` partition loses its last bytes (a torn write): B must cut
them, and the broker started on A must find nothing to cut. Both must start without an ERROR line; the
partitions' batches must be equal (byte for byte but for the timestamps of markers written at load); consumers of both
isolation levels must read the same; producers continuing (each transactional id re-initialised, which
aborts the transaction the kill left open; a committed and an aborted transaction; an idempotent
producer) must get the same offsets and leave the same records.

Seeds (``KAFKALOG_KAFKA_SEEDS`` adds more, comma-separated): 1 (recover), 2 (recover --mark-clean).
"""
from __future__ import annotations

import os

import pytest

import clients
import crash
from conftest import run_cli

SEEDS = [(1, False), (2, True)] + [(int(s), int(s) % 2 == 0)
                                    for s in os.environ.get("KAFKALOG_KAFKA_SEEDS", "").split(",") if s]


REPAIRED = r"Corruption found|Found invalid|Truncating|[Cc]orrupted index|[Rr]ebuilding index"


def _batches(log_dir) -> dict:
    """Every batch of the ``orders`` partitions as dump-log gives it: byte for byte (CRC, sizes, positions)
    except the transaction markers a coordinator wrote at load time (completing a prepared transaction),
    whose timestamps (and so CRC) are the time of writing."""
    import json
    out = {}
    for d in sorted(log_dir.glob(f"{crash.TOPIC}-*")):
        res = run_cli("dump-log", "--format", "json", str(d))
        rows = []
        for o in map(json.loads, res.out.splitlines()):
            if o["type"] == "batch":
                row = {k: v for k, v in o.items() if k != "file"}
                if o["is_control"]:
                    for k in ("crc", "base_timestamp", "max_timestamp"):
                        row.pop(k)
                rows.append(row)
        out[d.name] = rows
    return out


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
    # then a torn tail (what a crash with a volatile disk cache leaves): the broker must find and cut it, and
    # must find nothing left to cut after kafkalog recover
    torn = crash.tear_tail(killed, seed)

    b = crash.adopt(killed, make_broker(kafka_version, "b"))
    a = crash.adopt(killed, make_broker(kafka_version, "a"))

    b.start()
    served_b = _serve(b)
    bytes_b = _batches(b.log_dir)
    cont_b = crash.continue_producing(b.bootstrap)
    after_b = _serve(b)
    b.stop()
    assert b.errors() == []
    assert b.grep(r"Recovering unflushed segment"), "the broker recovered nothing: the scenario is void"
    assert b.grep(REPAIRED), f"the broker found nothing to cut after {torn}: the scenario is void"
    assert len(served_b["read_uncommitted"]) >= 100, "the producers wrote (almost) nothing: the scenario is void"
    assert max(len(list(d.glob("*.log"))) for d in killed.glob(f"{crash.TOPIC}-*")) >= 2, \
        "one segment only: a recovery point left where it was would go unnoticed"

    args = ["recover", str(a.log_dir)] + (["--mark-clean"] if mark_clean else [])
    rec = run_cli(*args)
    assert rec.code in (0, 1), rec.out + rec.err
    res = run_cli("verify", str(a.log_dir))                      # group 5: what recover left
    assert res.code == 0, res.out
    a.start()
    errors_a = a.errors()
    # the broker started on kafkalog's result finds nothing to repair (no truncation, no corrupt index); with
    # --mark-clean it recovers no segment at all (without it, it re-reads the segments from the recovery point,
    # which recover leaves where it was: README "recover")
    assert not a.grep(REPAIRED), a.grep(REPAIRED)
    if mark_clean:
        recovered = [m for m in a.grep(r"Recovering unflushed segment") if f"partition={crash.TOPIC}-" in m]
        assert recovered == [], recovered
    served_a = _serve(a)
    bytes_a = _batches(a.log_dir)
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
