"""Broker test group 3, compact (and group 5, verify, on what it leaves).

Scenario ``compaction`` (seed 3): a broker with its cleaner disabled writes topic ``compacted``
(``cleanup.policy=compact``, 1 MiB segments, ``min.cleanable.dirty.ratio=0.01``) with keyed updates,
tombstones, and two transactional producers whose committed and aborted transactions and markers span
segments; clean stop; copied twice. Copy B: the broker with its cleaner on, until the cleaner-offset
checkpoint names the partition (``LogCleaner``, ``Cleaner.doClean``). Copy A: ``kafkalog compact`` with the
configuration read from the KRaft metadata log, then the broker starts on it. The same records must be kept
(offset, key, value, headers, timestamp), in the same batches (base and last offset, count, producer
fields; the delete horizon stamped in a header is the cleaning time plus ``delete.retention.ms`` and so
differs), and the broker must serve A as it serves B. Then a second pass past ``delete.retention.ms`` (5 s):
on B's result, more keyed data written with the cleaner off (seed 33), copied twice again; both passes
must remove the same tombstones and markers whose delete horizon (stamped by the first pass) has passed.
"""
from __future__ import annotations

import json
import random
import time

import clients
import crash
import scenarios
from conftest import run_cli

TOPIC = "compacted"
DELETE_RETENTION_MS = 5000
STALE = 1_000_000_000         # a cleaner checkpoint entry far above the log end


def write(broker, seed: int) -> None:
    rng = random.Random(seed)
    clients.create_topic(broker.bootstrap, TOPIC, config={
        "cleanup.policy": "compact", "segment.bytes": scenarios.SEGMENT_BYTES, "retention.ms": -1,
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": DELETE_RETENTION_MS})
    plain = clients.producer(broker.bootstrap, compression_type="zstd", batch_num_messages=30)
    txn = [clients.producer(broker.bootstrap, transactional_id=f"c-{j}") for j in range(2)]
    for p in txn:
        p.init_transactions(30)
    i = 0
    for r in range(10):
        clients.deliver(plain, TOPIC, scenarios.keyed_records(rng, 300, start=i, keys=150, tombstone_every=11))
        i += 300
        for p in txn:
            p.begin_transaction()
        for j, p in enumerate(txn):
            for rec in scenarios.keyed_records(rng, 40, start=i, keys=150, tombstone_every=0):
                p.produce(TOPIC, key=rec[0], value=rec[1], headers=rec[2], timestamp=rec[3], partition=0)
            p.flush(30)
            i += 40
        for j, p in enumerate(txn):
            (p.abort_transaction if (r + j) % 3 == 0 else p.commit_transaction)(30)


def checkpoint_entry(log_dir, name: str) -> int | None:
    """The partition's entry in the offset checkpoint file ``name`` of ``log_dir`` (None: no file or entry)."""
    from kafkalog_formats.checkpoint import parse_offset_checkpoint
    path = log_dir / name
    return parse_offset_checkpoint(path.read_bytes()).get((TOPIC, 0)) if path.is_file() else None


def log_start(log_dir) -> int:
    """The log start offset the broker loads: its checkpoint entry, at least the first segment's base."""
    bases = [int(p.name[:20]) for p in (log_dir / f"{TOPIC}-0").glob("*.log")]
    return max(checkpoint_entry(log_dir, "log-start-offset-checkpoint") or 0, min(bases))


def dumped(partition_dir) -> tuple[list, list]:
    res = run_cli("dump-log", "--format", "json", "--print-data-log", "--key-decoder", "base64",
                  "--value-decoder", "base64", str(partition_dir))
    objs = [json.loads(line) for line in res.out.splitlines()]
    # a clean stop within file.delete.delay.ms of a cleaning leaves the replaced segment as .deleted files,
    # which dump-log names (a note) and the broker deletes when it loads the log; the cleaner's index
    # entries name offsets inside batches, which DumpLogSegments reports (index_mismatch, offset_not_found)
    # and exits 0 on: so does dump-log, graded as verify grades them
    problems = [o for o in objs if o["type"] == "problem" and o["kind"] != "leftover_deleted"]
    assert res.code == 0 and not problems, res.err
    batches = [(o["base_offset"], o["last_offset"], o["count"], o["codec"], o["producer_id"], o["producer_epoch"],
                o["base_sequence"], o["is_transactional"], o["is_control"]) for o in objs if o["type"] == "batch"]
    records = [(o["offset"], o["timestamp"], o.get("key"), o.get("value"), json.dumps(o["headers"]),
                json.dumps(o.get("control"))) for o in objs if o["type"] == "record"]
    return batches, records


def serve(b) -> dict:
    return {iso: clients.consume(b.bootstrap, TOPIC, 0, iso) for iso in ("read_uncommitted", "read_committed")}


def compare_pass(src, make_broker, version, label, kafkalogs=None):
    """One cleaning pass of ``src`` by the broker (B) and by kafkalog (A); both must keep the same; returns B
    (and appends A to ``kafkalogs`` when given).

    B has cleaned when its cleaner checkpoint holds a new entry for the partition above the log start: the
    end offset ``LogCleanerManager.doneCleaning`` writes after the cleaned segments are swapped in. Other
    writes of that file are no cleaning: an entry for another partition (``__consumer_offsets``,
    ``__transaction_state``), and the log start itself, which ``grabFilthiestCompactedLog`` writes when it
    resets an invalid entry (KAFKA-8724), possibly long before it can clean (at load the high watermark, so
    the last stable offset, is 0: nothing is cleanable until the partition has a leader). Serving B at such
    a moment served the uncleaned log."""
    b = crash.adopt(src, make_broker(version, f"b-{label}"))
    a = crash.adopt(src, make_broker(version, f"a-{label}"))
    before, start = checkpoint_entry(b.log_dir, "cleaner-offset-checkpoint"), log_start(b.log_dir)

    def done(b) -> bool:
        entry = checkpoint_entry(b.log_dir, "cleaner-offset-checkpoint")
        return entry is not None and entry != before and entry > start
    b.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not done(b):
        time.sleep(0.5)
    assert done(b), "the broker's cleaner did not clean within 60 s:\n" + "\n".join(b.grep("Cleaner"))
    served_b = serve(b)
    b.stop()
    assert b.errors() == []

    res = run_cli("compact", "--partition", f"{TOPIC}-0", str(a.log_dir))
    assert res.code == 0, res.out + res.err
    batches_a, records_a = dumped(a.log_dir / f"{TOPIC}-0")
    batches_b, records_b = dumped(b.log_dir / f"{TOPIC}-0")
    assert len(records_b) < len(dumped(src / f"{TOPIC}-0")[1]), "the broker removed nothing"
    assert records_a == records_b, label
    assert batches_a == batches_b, label
    for d in (a.log_dir, b.log_dir):                                                # group 5
        assert run_cli("verify", str(d)).code == 0
    a.start()
    served_a = serve(a)
    a.stop()
    assert a.errors() == []
    assert served_a == served_b
    if kafkalogs is not None:
        kafkalogs.append(a)
    return b


def test_compact_keeps_what_the_broker_cleaner_keeps(kafka_version, kafka_jars, make_broker):
    """Scenario compaction (seed 3); rules: ``Cleaner.doClean``/``cleanSegments`` (latest record per key,
    tombstones until their delete horizon, aborted transactional data removed, markers kept until their
    horizon, empty batches of active producers kept), ``LogCleanerManager`` (dirty range, ratio)."""
    writer = make_broker(kafka_version, "writer", config={"log.cleaner.enable": "false"})
    writer.start()
    write(writer, 3)
    writer.stop()
    src = writer.log_dir
    assert run_cli("verify", str(src)).code == 0                                   # group 5

    b = compare_pass(src, make_broker, kafka_version, "first-pass")

    # second pass, past delete.retention.ms: on what the broker's first pass left, more keyed data (a
    # segment rolls, so it is dirty) written with the cleaner off; tombstones and markers whose horizon
    # (stamped by the first pass) has passed go
    more = make_broker(kafka_version, "writer-2", config={"log.cleaner.enable": "false"})
    crash.adopt(b.log_dir, more)
    more.start()
    rng = random.Random(33)
    p = clients.producer(more.bootstrap, compression_type="lz4", batch_num_messages=30)
    clients.deliver(p, TOPIC, scenarios.keyed_records(rng, 2600, start=10_000, keys=150, tombstone_every=13,
                                                    ts0=scenarios.T0 + 10_000_000))
    more.stop()
    time.sleep(DELETE_RETENTION_MS / 1000)
    tombstones = lambda d: sum(1 for r in dumped(d / f"{TOPIC}-0")[1] if r[3] is None and r[5] == "null")
    b2 = compare_pass(more.log_dir, make_broker, kafka_version, "second-pass")
    assert tombstones(b2.log_dir) < tombstones(more.log_dir)


def test_a_cleaner_checkpoint_beyond_the_log_end_makes_the_whole_log_dirty(kafka_version, kafka_jars, make_broker):
    """Scenario stale-checkpoint (seed 5): the compaction scenario's topic with a cleaner-offset-checkpoint
    entry far above its log end (a checkpoint file restored from another copy of the directory, or
    damaged); rule: ``LogCleanerManager.cleanableOffsets`` (KAFKA-8724, 2.4+): such an offset is reset to
    the log start offset, so the whole log is dirty and cleaned. kafkalog compact must keep what the
    broker's cleaner keeps, and ``kafkalog recover`` resets the entry as the broker would."""
    writer = make_broker(kafka_version, "writer", config={"log.cleaner.enable": "false"})
    writer.start()
    write(writer, 5)
    writer.stop()
    src = writer.log_dir
    crash.set_checkpoint_entry(src, "cleaner-offset-checkpoint", TOPIC, 0, STALE)

    # the broker first resets the entry to the log start (0), then cleans: compare_pass waits for the cleaning
    b = compare_pass(src, make_broker, kafka_version, "stale-checkpoint")
    # 3.x LogCleanerManager: "... is larger than the log end offset N. Resetting to the log start offset 0."
    assert b.grep(r"larger than the log end offset \d+\. Resetting to the log start offset"), \
        "the broker did not reset the checkpoint: the scenario is void"

    r = crash.adopt(src, make_broker(kafka_version, "recovered"))
    assert run_cli("recover", str(r.log_dir)).code == 1                 # the entry is rewritten
    assert checkpoint_entry(r.log_dir, "cleaner-offset-checkpoint") == 0    # this log starts at offset 0


LONG_MAX = (1 << 63) - 1


def test_delete_retention_at_long_max_keeps_tombstones_as_the_broker_does(kafka_version, kafka_jars, make_broker):
    """Scenario forever (seed 7): topic ``compacted`` with ``delete.retention.ms=9223372036854775807`` (valid:
    ``atLeast(0)``; "keep tombstones forever"), records of 2023 and records a day in the future (allowed by
    ``message.timestamp.after.max.ms``). Rules: ``MemoryRecords.filterTo`` computes the delete horizon as the
    long sum ``currentTime + deleteRetentionMs``, which wraps below zero, and ``MemoryRecordsBuilder`` stamps
    only a horizon >= 0 (``hasDeleteHorizonMs``), 3.x and 4.x: each pass rebuilds the tombstones' batches
    without a horizon, so they are never removed. On main kafkalog compact stopped with a struct.error
    traceback (the horizon did not fit a long); stamping the wrapped horizon instead would have removed the
    tombstones at the second pass."""
    writer = make_broker(kafka_version, "writer", config={"log.cleaner.enable": "false"})
    writer.start()
    clients.create_topic(writer.bootstrap, TOPIC, config={
        "cleanup.policy": "compact", "segment.bytes": scenarios.SEGMENT_BYTES, "retention.ms": -1,
        "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": LONG_MAX,
        "message.timestamp.after.max.ms": LONG_MAX})
    rng = random.Random(7)
    future = int(time.time() * 1000) + 86_400_000
    p = clients.producer(writer.bootstrap, batch_num_messages=30)
    clients.deliver(p, TOPIC, scenarios.keyed_records(rng, 2500, keys=120, tombstone_every=11))
    clients.deliver(p, TOPIC, scenarios.keyed_records(rng, 2500, start=2500, keys=120, tombstone_every=11,
                                                    ts0=future))
    writer.stop()
    src = writer.log_dir

    def segments(d) -> dict:
        return {f.name: f.read_bytes() for f in sorted((d / f"{TOPIC}-0").glob("*.log"))}

    def horizons(d) -> list:
        res = run_cli("dump-log", "--format", "json", str(d / f"{TOPIC}-0"))
        return [o["delete_horizon_ms"] for o in map(json.loads, res.out.splitlines())
                if o["type"] == "batch" and o.get("delete_horizon_ms") is not None]

    tombstones = lambda d: sum(1 for r in dumped(d / f"{TOPIC}-0")[1] if r[3] is None and r[5] == "null")
    kafkalogs: list = []
    b = compare_pass(src, make_broker, kafka_version, "forever", kafkalogs=kafkalogs)
    a = kafkalogs[0].log_dir
    assert tombstones(b.log_dir) > 0 and horizons(b.log_dir) == [], horizons(b.log_dir)[:3]
    assert segments(a) == segments(b.log_dir)        # nothing depends on the cleaning time: byte for byte

    # second pass: more data under other keys (a segment rolls, so it is dirty); no tombstone has a horizon,
    # so both keep every one
    more = make_broker(kafka_version, "writer-2", config={"log.cleaner.enable": "false"})
    crash.adopt(b.log_dir, more)
    more.start()
    p = clients.producer(more.bootstrap, batch_num_messages=30)
    clients.deliver(p, TOPIC, [(b"m%d" % (i % 200), scenarios.payload(rng, 500), [], scenarios.T0 + 10_000_000 + i)
                               for i in range(2600)])
    more.stop()
    b2 = compare_pass(more.log_dir, make_broker, kafka_version, "forever-second-pass")

    def deleted_keys(d) -> set:                      # keys whose latest record is a tombstone
        latest = {}
        for r in sorted(dumped(d / f"{TOPIC}-0")[1]):
            if r[5] == "null":
                latest[r[2]] = r[3]
        return {k for k, v in latest.items() if v is None}
    assert deleted_keys(b2.log_dir) == deleted_keys(more.log_dir) != set()
