"""Producers that are cut off by a SIGKILL of their broker (scenario ``killed``), and the comparison of two
copies of what the broker left: one the broker recovers itself (B), one kafkalog repairs first (A).

``run_until_killed`` keeps an idempotent producer and two transactional producers (transactions committed
and aborted by the seed, several open at once) writing to ``orders`` (1 MiB segments, so a kill can fall
in any segment) and SIGKILLs the broker at a seeded moment. The transactional ids are ``t-0`` and ``t-1``;
a producer continuing on another broker uses them again (``init_transactions`` aborts the transaction the
kill left open, as the coordinator does).
"""
from __future__ import annotations

import random
import shutil
import threading
import time
from pathlib import Path

import clients
import scenarios
from broker import Broker

TOPIC = "orders"
TXN_IDS = ("t-0", "t-1")


def _quiet(**kw):
    return dict(kw, message_timeout_ms=4000, request_timeout_ms=3000, retries=3, socket_timeout_ms=3000,
                log_level=0)


def _transactional(bootstrap: str, tid: str, seed: int, stop: threading.Event) -> None:
    rng = random.Random(f"{seed}-{tid}")
    try:
        p = clients.producer(bootstrap, **_quiet(transactional_id=tid, transaction_timeout_ms=600000,
                                                 compression_type=rng.choice(clients.CODECS)))
        p.init_transactions(10)
        i = 0
        while not stop.is_set():
            p.begin_transaction()
            for rec in scenarios.keyed_records(rng, rng.randrange(5, 60), start=i, tombstone_every=0,
                                               ts0=int(time.time() * 1000)):
                p.produce(TOPIC, key=rec[0], value=rec[1], headers=rec[2], partition=0)
                i += 1
            p.flush(5)
            if rng.random() < 0.3:
                p.abort_transaction(5)
            else:
                p.commit_transaction(5)
    except Exception:      # the broker was killed under it
        return


def _idempotent(bootstrap: str, seed: int, stop: threading.Event) -> None:
    rng = random.Random(f"{seed}-idem")
    try:
        p = clients.producer(bootstrap, **_quiet(enable_idempotence=True, compression_type="lz4",
                                                 batch_num_messages=20))
        i = 0
        while not stop.is_set():
            clients.deliver(p, TOPIC, scenarios.keyed_records(rng, 40, start=i, ts0=int(time.time() * 1000)))
            i += 40
    except Exception:
        return


def run_until_killed(broker: Broker, seed: int, min_s: float = 0.5, max_s: float = 3.0) -> float:
    """Produce until the partition has rolled a segment, then for a seeded time more, then SIGKILL the broker;
    returns that time. Segments are 128 KiB (1 MiB on 4.x, its smallest), so that the partition has several
    and a recovery point left behind is seen, whatever the machine's load."""
    import jars
    small = jars.major(broker.version) < 4
    clients.create_topic(broker.bootstrap, TOPIC, config={
        "segment.bytes": 128 << 10 if small else scenarios.SEGMENT_BYTES, "retention.ms": -1})
    stop = threading.Event()
    threads = [threading.Thread(target=_transactional, args=(broker.bootstrap, tid, seed, stop), daemon=True)
               for tid in TXN_IDS]
    threads.append(threading.Thread(target=_idempotent, args=(broker.bootstrap, seed, stop), daemon=True))
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list((broker.log_dir / f"{TOPIC}-0").glob("*.log"))) < 2:
        time.sleep(0.1)
    delay = random.Random(seed).uniform(min_s, max_s)
    time.sleep(delay)
    broker.kill()
    stop.set()
    for t in threads:
        t.join(30)
    return delay


def adopt(src_log_dir: Path, broker: Broker) -> Broker:
    """``broker`` (not started) takes a copy of ``src_log_dir`` as its log directory."""
    shutil.copytree(src_log_dir, broker.log_dir, symlinks=True)
    (broker.log_dir / ".lock").unlink(missing_ok=True)
    return broker


def continue_producing(bootstrap: str) -> dict:
    """What a producer continuing after the restart sees: each transactional id re-initialised (aborting
    what the kill left open), one committed and one aborted transaction, and an idempotent producer's
    records; fixed timestamps so both copies get the same bytes. Returns the offsets each got."""
    out = {}
    for j, tid in enumerate(TXN_IDS):
        p = clients.producer(bootstrap, transactional_id=tid)
        p.init_transactions(30)
        for verdict in ("commit", "abort"):
            offsets: list = []
            p.begin_transaction()
            for k in range(3):
                p.produce(TOPIC, key=f"{tid}-{verdict}-{k}".encode(), value=b"after restart", partition=0,
                          timestamp=scenarios.T0 + k, on_delivery=lambda e, m: offsets.append(m.offset()))
            p.flush(30)
            (p.commit_transaction if verdict == "commit" else p.abort_transaction)(30)
            out[(tid, verdict)] = offsets
    idem = clients.producer(bootstrap, enable_idempotence=True)
    out["idempotent"] = clients.deliver(idem, TOPIC, [(b"idem", b"after restart", [], scenarios.T0)] * 3)
    return out


def tear_tail(log_dir: Path, seed: int) -> str:
    """Cut the last 1-200 bytes (seeded) of the newest segment of every ``orders`` partition: a torn write."""
    rng = random.Random(f"tear-{seed}")
    done = []
    for part in sorted(log_dir.glob(f"{TOPIC}-*")):
        segs = sorted(p for p in part.glob("*.log") if p.stat().st_size > 0)
        if segs:
            size = segs[-1].stat().st_size
            cut = rng.randint(1, min(200, size))
            with open(segs[-1], "r+b") as f:
                f.truncate(size - cut)
            done.append(f"{part.name}/{segs[-1].name} cut by {cut} bytes")
    return ", ".join(done)


def set_checkpoint_entry(log_dir: Path, name: str, topic: str, partition: int, offset: int) -> None:
    """One entry of the log directory's offset checkpoint ``name`` set, the others kept (a broker writes
    some only when they say something, so the file or the entry may be missing)."""
    from kafkalog_formats.checkpoint import build_offset_checkpoint, parse_offset_checkpoint
    path = log_dir / name
    entries = dict(parse_offset_checkpoint(path.read_bytes())) if path.is_file() else {}
    entries[(topic, partition)] = offset
    path.write_text(build_offset_checkpoint(entries))


def log_bytes(log_dir: Path, partitions=None) -> dict[str, bytes]:
    """Every ``.log`` of the partitions (all but the metadata log by default), by relative path."""
    out = {}
    for p in sorted(log_dir.glob("*-*/*.log")):
        part = p.parent.name
        if part.startswith("__cluster_metadata") or (partitions and part not in partitions):
            continue
        out[f"{part}/{p.name}"] = p.read_bytes()
    return out
