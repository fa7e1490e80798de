"""Broker scenarios of the trust issue (issue 21): what a real broker does with the states kafkalog used to
get wrong, and that kafkalog's repair now leaves a directory the broker serves as it would have itself.

* ``open-transaction``, item 3: a transaction is open and no segment has rolled (so no producer snapshot
  exists) when the broker is killed. Copy B: the broker recovers it itself. Copy A: ``kafkalog recover
  --mark-clean``, then the broker starts on it. With a clean-shutdown marker and no snapshot the broker would
  not replay the log (``UnifiedLog.rebuildProducerState``): the open transaction would be missing from the
  last stable offset and READ_COMMITTED consumers would read it. Both copies must serve the same before and
  after the transaction is aborted by its producer's next ``initTransactions``.
* ``misread-names``, item 6: ``notes.log`` in a partition directory stops the broker's start
  (``LogFileUtils.offsetFromFileName``: NumberFormatException); ``kafkalog recover --backup-dir`` moves it
  aside and the broker starts and serves every record.
"""
from __future__ import annotations

import time

import clients
import crash
from conftest import run_cli

TOPIC = "open"


def _write_open_transaction(bootstrap: str) -> list[bytes]:
    """A committed transaction, idempotent records, then a transaction left open; no roll (1 GiB segments).
    Returns the values of the open transaction."""
    clients.create_topic(bootstrap, TOPIC, config={"retention.ms": -1})
    p = clients.producer(bootstrap, transactional_id="open-t", transaction_timeout_ms=600000)
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(TOPIC, key=b"c%d" % i, value=b"committed", partition=0)
    p.commit_transaction(30)
    idem = clients.producer(bootstrap, enable_idempotence=True)
    clients.deliver(idem, TOPIC, [(b"i%d" % i, b"idempotent", [], None) for i in range(5)])
    p.begin_transaction()
    values = [b"open-%d" % i for i in range(4)]
    for i, v in enumerate(values):
        p.produce(TOPIC, key=b"o%d" % i, value=v, partition=0)
    p.flush(30)
    return values


def _abort_open(bootstrap: str) -> None:
    """The producer comes back: ``initTransactions`` aborts the transaction its previous incarnation left."""
    p = clients.producer(bootstrap, transactional_id="open-t", transaction_timeout_ms=600000)
    p.init_transactions(60)


def _committed_values(bootstrap: str) -> list:
    return [r.value for r in clients.consume(bootstrap, TOPIC, 0, "read_committed")]


def test_mark_clean_keeps_an_open_transaction_out_of_read_committed(kafka_version, kafka_jars, make_broker):
    """Scenario open-transaction (issue 21 item 3); rules: ``rebuildProducerState``'s clean-shutdown
    shortcut, ``UnifiedLog.close``'s snapshot, the last stable offset of an open transaction."""
    writer = make_broker(kafka_version, "writer")
    writer.start()
    open_values = _write_open_transaction(writer.bootstrap)
    time.sleep(1)
    writer.kill()
    assert not list(writer.log_dir.glob(f"{TOPIC}-0/*.snapshot")), "a snapshot exists: the scenario is void"

    b = crash.adopt(writer.log_dir, make_broker(kafka_version, "b"))
    a = crash.adopt(writer.log_dir, make_broker(kafka_version, "a"))
    rec = run_cli("recover", "--mark-clean", str(a.log_dir))
    assert rec.code in (0, 1), rec.out + rec.err
    assert (a.log_dir / ".kafka_cleanshutdown").exists()

    served = {}
    for name, broker in (("b", b), ("a", a)):
        broker.start()
        before = _committed_values(broker.bootstrap)
        _abort_open(broker.bootstrap)
        after = _committed_values(broker.bootstrap)
        everything = [r.value for r in clients.consume(broker.bootstrap, TOPIC, 0, "read_uncommitted")]
        broker.stop()
        assert broker.errors() == [], broker.errors()
        served[name] = (before, after, everything)
    assert served["a"] == served["b"]
    before, after, everything = served["a"]
    assert not set(open_values) & set(before) and not set(open_values) & set(after)
    assert set(open_values) <= set(everything)


def test_recover_moves_a_name_the_broker_cannot_load_aside(kafka_version, kafka_jars, make_broker, tmp_path):
    """Scenario misread-names (issue 21 item 6); rule: ``LogFileUtils.offsetFromFileName`` on every ``*.log``
    of a partition directory."""
    writer = make_broker(kafka_version, "writer")
    writer.start()
    clients.create_topic(writer.bootstrap, "named")
    idem = clients.producer(writer.bootstrap, enable_idempotence=True)
    clients.deliver(idem, "named", [(b"k%d" % i, b"v", [], None) for i in range(20)])
    writer.stop()
    (writer.log_dir / "named-0" / "notes.log").write_bytes(b"an operator's notes")
    assert run_cli("verify", str(writer.log_dir)).code == 1

    refused = crash.adopt(writer.log_dir, make_broker(kafka_version, "refused"))
    started = True
    try:
        refused.start(timeout=90)
    except Exception:
        started = False
    assert not started or refused.grep(r"NumberFormatException"), "the broker loaded notes.log"
    refused.close()

    a = crash.adopt(writer.log_dir, make_broker(kafka_version, "a"))
    backup = tmp_path / "backup"
    rec = run_cli("recover", "--backup-dir", str(backup), str(a.log_dir))
    assert rec.code == 1, rec.out
    assert (backup / "named-0" / "notes.log").read_bytes() == b"an operator's notes"
    a.start()
    values = clients.consume(a.bootstrap, "named", 0)
    a.stop()
    assert a.errors() == [] and len(values) == 20
