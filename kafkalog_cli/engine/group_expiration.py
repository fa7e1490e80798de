"""The group coordinator's first cleanup run on a loaded group: which committed offsets expire and whether the
group is then deleted (docs/kafka-rules.md S6, S14, S15).

Kafka 2.1-3.9 ``GroupMetadataManager.cleanupGroupMetadata`` with ``GroupMetadata.removeExpiredOffsets``; 4.x
``GroupCoordinatorShard.cleanupGroupMetadata`` with ``OffsetMetadataManager.cleanupExpiredOffsets``,
``ClassicGroup``/``ConsumerGroup.offsetExpirationCondition`` and ``GroupMetadataManager.maybeDeleteGroup``
(read from the 4.4.0 classes). At ``now``, with ``offsets.retention.ms``:

* An offset with an explicit expire timestamp (value version 1; only -1 means none) expires at it; else
  ``retention`` after its base time: the group's current-state timestamp (else the commit time) for an
  Empty classic group with a protocol type; the commit time for a simple group, a KIP-848 group, or a Stable
  classic consumer group whose subscription is known (offsets of its subscribed topics never expire). A
  Stable classic group of another protocol type, or whose subscription is unknown, expires nothing.
* A KIP-848 group's offsets of the topics its members subscribe to never expire.
* An offset with a pending transactional commit: 4.x keeps it (``hasPendingTransactionalOffsets``); 3.x
  expires it (``removeExpiredOffsets`` checks only the in-flight plain commits, which a load has none of).
* Deletion: a group that is empty (an Empty classic or simple group, a KIP-848 group without members),
  left with no committed offset and no pending transactional one, is deleted by that run, whether or not it
  had offsets before (3.x: ``is(Empty) && !hasOffsets`` -> Dead; 4.x: ``cleanupExpiredOffsets`` true, then
  ``maybeDeleteGroup`` when ``isEmpty``).
"""
from __future__ import annotations


def expire(g, now: int, retention_ms: int, rules) -> None:
    """Moves the offsets the run removes to ``g.expired``, sets each remaining offset's ``expires_at`` (None:
    it cannot expire as things are) and ``g.deleted_by_expiration``."""
    base_rule, protected = _condition(g)
    pending_tps = {tp for pend in g.pending.values() for tp in pend} if rules.modern else set()
    for tp, co in list(g.offsets.items()):
        if base_rule is None or tp[0] in protected or tp in pending_tps:
            co.expires_at = None
            continue
        co.expires_at = co.expire_timestamp if co.expire_timestamp is not None else base_rule(co) + retention_ms
        if now >= co.expires_at:
            g.expired[tp] = g.offsets.pop(tp)
    g.deleted_by_expiration = is_empty(g) and not g.offsets and not any(g.pending.values())


def is_empty(g) -> bool:
    """``GroupMetadata.is(Empty)`` / ``ClassicGroup.isEmpty`` (no members), ``ConsumerGroup.isEmpty``."""
    return not g.members if g.kind == "consumer" else g.state == "Empty"


def _condition(g):
    """(offset -> base timestamp, or None when nothing expires; topics whose offsets never expire)."""
    if g.kind == "consumer":
        return (lambda co: co.commit_timestamp), (g.subscribed_topics or set())
    if g.kind == "simple" or g.protocol_type is None:
        return (lambda co: co.commit_timestamp), set()
    if g.state == "Empty":
        cst = g.current_state_timestamp
        return (lambda co: cst if cst is not None else co.commit_timestamp), set()
    if g.protocol_type == "consumer" and g.subscribed_topics is not None and g.state == "Stable":
        return (lambda co: co.commit_timestamp), g.subscribed_topics
    return None, set()
