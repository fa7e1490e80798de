"""What the broker tests make a real broker write: seeded, so a scenario is the same on every run.

``write_read_side`` fills a fresh broker with every kind of data the read side must render as Kafka does:
one partition written by producers of every codec (keys, values, headers, tombstones, CreateTime
timestamps out of order), a partition of idempotent and interleaved transactional producers (committed and
aborted), a LogAppendTime topic, consumer-group commits (``__consumer_offsets``), the transaction log
(``__transaction_state``) and topics created with configs (the KRaft metadata log).
"""
from __future__ import annotations

import random

import clients

T0 = 1_700_000_000_000
SEGMENT_BYTES = 1 << 20      # the smallest segment.bytes Kafka 4.x accepts


def payload(rng: random.Random, n: int) -> bytes:
    """Half text, half random bytes: compressed batches keep a realistic size."""
    text = (b"kafkalog " * (n // 18 + 1))[: n // 2]
    return text + rng.randbytes(n - len(text))


def keyed_records(rng: random.Random, n: int, *, start: int = 0, keys: int = 50, ts0: int = T0,
                  tombstone_every: int = 17, out_of_order_every: int = 7) -> list[tuple]:
    """(key, value, headers, timestamp) tuples: keys ``k0``..``k{keys-1}``, tombstones, headers (one with a
    null value), CreateTime timestamps one second apart with every 7th one a minute in the past."""
    out = []
    for i in range(start, start + n):
        key = f"k{rng.randrange(keys)}".encode()
        value = None if tombstone_every and i % tombstone_every == tombstone_every - 1 else \
            payload(rng, rng.randrange(40, 600))
        headers = [("seq", str(i).encode())] + ([("null", None)] if i % 5 == 0 else [])
        ts = ts0 + i * 1000 - (60_000 if out_of_order_every and i % out_of_order_every == 0 else 0)
        out.append((key, value, headers, ts))
    return out


def write_mixed(bootstrap: str, topic: str, seed: int, rounds: int = 4, per_codec: int = 220) -> None:
    """Every codec in one partition, several rounds so each segment mixes them."""
    rng = random.Random(seed)
    producers = {c: clients.producer(bootstrap, compression_type=c, batch_num_messages=rng.choice([7, 25, 60]),
                                     enable_idempotence=(c in ("lz4", "zstd")))
                 for c in clients.CODECS}
    i = 0
    for _ in range(rounds):
        for codec, p in producers.items():
            clients.deliver(p, topic, keyed_records(rng, per_codec, start=i))
            i += per_codec


def write_transactions(bootstrap: str, topic: str, seed: int, rounds: int = 6, per_txn: int = 40) -> None:
    """Two transactional producers interleaved (each transaction committed or aborted by the seed) and an
    idempotent producer writing between them."""
    rng = random.Random(seed)
    txn = [clients.producer(bootstrap, transactional_id=f"txn-{j}", compression_type=c,
                            batch_num_messages=10)
           for j, c in enumerate(("zstd", "none"))]
    idem = clients.producer(bootstrap, enable_idempotence=True, compression_type="snappy")
    for p in txn:
        p.init_transactions(30)
    i = 0
    for r in range(rounds):
        for p in txn:
            p.begin_transaction()
        for p in txn:
            for rec in keyed_records(rng, per_txn, start=i, tombstone_every=0):
                p.produce(topic, key=rec[0], value=rec[1], headers=rec[2], timestamp=rec[3], partition=0)
            p.flush(30)
            i += per_txn
            clients.deliver(idem, topic, keyed_records(rng, 10, start=i))
            i += 10
        for j, p in enumerate(txn):
            if (r + j + seed) % 3 == 0:
                p.abort_transaction(30)
            else:
                p.commit_transaction(30)


def write_read_side(bootstrap: str, seed: int = 22) -> dict[str, dict]:
    """The read-side data set; returns the topics and their configs."""
    keep = {"retention.ms": -1, "segment.bytes": SEGMENT_BYTES}     # fixed timestamps of 2023
    topics = {
        "mixed": {**keep, "index.interval.bytes": 4096},
        "txn": keep,
        "appendtime": {**keep, "message.timestamp.type": "LogAppendTime"},
    }
    for name, config in topics.items():
        clients.create_topic(bootstrap, name, config=config)
    write_mixed(bootstrap, "mixed", seed)
    write_transactions(bootstrap, "txn", seed)
    rng = random.Random(seed + 1)
    for codec in ("gzip", "zstd", "none"):
        clients.deliver(clients.producer(bootstrap, compression_type=codec), "appendtime",
                        [(k, v, h, None) for k, v, h, _ in keyed_records(rng, 150)])
    clients.commit_offsets(bootstrap, "group-a", "mixed", {0: 100}, subscribe=True)
    clients.commit_offsets(bootstrap, "group-b", "txn", {0: 7})
    return topics
