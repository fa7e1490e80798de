"""Real Kafka clients for the broker tests: confluent-kafka (librdkafka) from PyPI.

Producing (every codec, idempotent and transactional producers, headers, tombstones), consuming a whole
partition with either isolation level, consumer-group commits and the admin calls the scenarios need
(topics created with configs, so they land in the KRaft metadata log; delete-records; ListOffsets by
timestamp). Everything waits for the broker's answer and raises on an error.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Read:
    """One record as a consumer received it."""
    partition: int
    offset: int
    timestamp_type: int     # 1 CreateTime, 2 LogAppendTime
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict | None = None) -> None:
    """Create ``name`` and wait until its partitions have leaders.

    librdkafka is given a request timeout under the wait here, so a broker that does not answer raises
    librdkafka's own error (which says why) rather than a bare timeout of the future. One lost answer is
    retried with a new client: a topic the first attempt did create then reads as already existing. (CI saw
    a ZooKeeper-mode 3.9.2 broker leave a CreateTopics unanswered for 60 s once, in 2026-11.)
    """
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1,
                     config={k: str(v) for k, v in (config or {}).items()})
    for attempt in (1, 2):
        client = admin(bootstrap)     # the futures fail when their client is collected
        try:
            for fut in client.create_topics([topic], operation_timeout=30, request_timeout=45).values():
                fut.result(60)
            break
        except KafkaException as e:
            err = e.args[0]
            if attempt == 2 and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if attempt == 2 or not (err.retriable() or err.code() == KafkaError._TIMED_OUT):
                raise
        except TimeoutError:
            if attempt == 2:
                raise
    # wait until the partitions have leaders (metadata propagated to the broker)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = client.list_topics(name, timeout=10).topics.get(name)
        if md and not md.error and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {name} has no leader")


def producer(bootstrap: str, **config) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
            "message.timeout.ms": 60000, "request.timeout.ms": 30000}
    # keyword names with "_" for "."; librdkafka's own "log_level" keeps its underscore (as "log.level" it is
    # an unknown property and the producer is refused: crash.py's producers never produced until this)
    conf.update({k if k == "log_level" else k.replace("_", "."): v for k, v in config.items()})
    return Producer(conf)


def deliver(p: Producer, topic: str, records, partition: int = 0) -> list[int]:
    """Produce ``records`` ((key, value, headers, timestamp or None), ...) and wait: their offsets."""
    offsets: list = []
    errors: list = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())
    for key, value, headers, ts in records:
        kw = {"timestamp": ts} if ts is not None else {}
        while True:
            try:
                p.produce(topic, value=value, key=key, headers=list(headers or ()), partition=partition,
                          on_delivery=on_delivery, **kw)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    if p.flush(60) != 0:
        raise TimeoutError("producer did not flush")
    if errors:
        raise KafkaException(errors[0])
    return offsets


def consume(bootstrap: str, topic: str, partition: int = 0, isolation: str = "read_uncommitted",
            timeout: float = 60) -> list[Read]:
    """Every record of one partition from its log start, with ``isolation.level``; ends at the partition's
    end (the high watermark, or the last stable offset with ``read_committed``)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation, "auto.offset.reset": "earliest",
                  "fetch.wait.max.ms": 50, "check.crcs": True})
    out: list[Read] = []
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise KafkaException(msg.error())
            ts_type, ts = msg.timestamp()
            out.append(Read(msg.partition(), msg.offset(), ts_type, ts, msg.key(), msg.value(),
                            tuple((k, v) for k, v in (msg.headers() or ()))))
        raise TimeoutError(f"{topic}-{partition}: no end of partition within {timeout} s")
    finally:
        c.close()


def commit_offsets(bootstrap: str, group: str, topic: str, offsets: dict[int, int], subscribe: bool = False
                   ) -> None:
    """Commit ``{partition: offset}`` for ``group`` (a record in ``__consumer_offsets``); with
    ``subscribe`` through a real group membership (join, sync: group metadata records too)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "session.timeout.ms": 10000})
    try:
        if subscribe:
            c.subscribe([topic])
            deadline = time.monotonic() + 60
            while not c.assignment() and time.monotonic() < deadline:
                c.poll(0.2)
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def delete_records(bootstrap: str, topic: str, partition: int, before: int) -> int:
    """DeleteRecords: the partition's new low watermark."""
    client = admin(bootstrap)
    (result,) = client.delete_records([TopicPartition(topic, partition, before)]).values()
    return result.result(60).low_watermark


def offset_for_time(bootstrap: str, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
    """ListOffsets by timestamp: (offset, timestamp) of the first record at or after it ((-1, -1): none)."""
    tp = TopicPartition(topic, partition)
    client = admin(bootstrap)
    info = client.list_offsets({tp: OffsetSpec.for_timestamp(timestamp)})[tp].result(60)
    return info.offset, info.timestamp


def watermarks(bootstrap: str, topic: str, partition: int = 0) -> tuple[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
    finally:
        c.close()
