"""``__transaction_state`` records of the transaction coordinator (Kafka ``TransactionLog`` and the
``TransactionLogKey``/``TransactionLogValue`` schemas under
``transaction-coordinator/src/main/resources/common/message``, 4.0).

Key: int16 version (0) | transactionalId string. Value: int16 version (0, or 1 = flexible) then::

    producerId int64 | producerEpoch int16 | transactionTimeoutMs int32 | transactionStatus int8
    | transactionPartitions nullable [topic string, partitionIds [int32]]
    | transactionLastUpdateTimestampMs int64 | transactionStartTimestampMs int64
    v1 tagged fields: 0 previousProducerId int64 (-1), 1 nextProducerId int64 (-1),
                      2 clientTransactionVersion int16 (0)

A null value is a tombstone. ``STATUS_NAMES`` are ``TransactionState``'s names for the status byte.
"""
from __future__ import annotations

from .kafka_message import Decoded, Message, build_version_prefixed, field as F, read_version_prefixed

STATUS_NAMES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

Key = Message("TransactionLogKey", "0", "none", [F("transactionalId", "string", "0")])

Value = Message("TransactionLogValue", "0-1", "1+", [
    F("producerId", "int64"),
    F("previousProducerId", "int64", tagged="1+", tag=0, default=-1),
    F("nextProducerId", "int64", tagged="1+", tag=1, default=-1),
    F("producerEpoch", "int16"),
    F("transactionTimeoutMs", "int32"),
    F("transactionStatus", "int8"),
    F("transactionPartitions", "[]struct", nullable="0+",
      fields=(F("topic", "string"), F("partitionIds", "[]int32"))),
    F("transactionLastUpdateTimestampMs", "int64"),
    F("transactionStartTimestampMs", "int64"),
    F("clientTransactionVersion", "int16", tagged="1+", tag=2, default=0),
])


def read_key(key: bytes) -> Decoded:
    """``message`` is None for a key version other than 0 (Kafka's ``UnknownKey``)."""
    return read_version_prefixed(key, {0: Key})


def read_value(value: bytes) -> Decoded:
    return read_version_prefixed(value, {}, Value)


def build_key(transactional_id: str) -> bytes:
    return build_version_prefixed(Key, 0, {"transactionalId": transactional_id})


def build_value(data: dict, version: int = 1) -> bytes:
    return build_version_prefixed(Value, version, data)
