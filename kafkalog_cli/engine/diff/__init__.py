"""``kafkalog diff``: where replicas of a partition diverge, and what the broker would discard.

``replica``  a replica as the broker loads it (log range, high watermark, cleaned prefix, epoch cache)
``epochs``   Kafka's leader-epoch cache and the follower truncation rule (KIP-101, KIP-279)
``compare``  the streaming merge of two replicas by offset
"""
from __future__ import annotations

from pathlib import Path


def choose_pairs(groups: dict, reference: str | None) -> tuple[list, list]:
    """[(replicas, [(a, b, leader index or None)])] per group, and notes for groups left out.

    Without a reference every two replicas are compared (both ways of rejoining); with one, each other
    replica is compared against it (index 0, the leader)."""
    out, notes = [], []
    for key, reps in groups.items():
        pairs: list = []
        if reference is None:
            for i in range(len(reps)):
                for j in range(i + 1, len(reps)):
                    pairs.append((reps[i], reps[j], None))
            out.append((reps, pairs))
            continue
        refs = [r for r in reps if matches(r, reference)]
        if len(refs) > 1:
            raise ValueError(f"--reference {reference} names {len(refs)} replicas of {reps[0].name}: "
                             + ", ".join(r.who for r in refs))
        if not refs:
            notes.append(f"{reps[0].name}: no replica on the reference {reference}: not compared")
            continue
        for r in reps:
            if r is not refs[0]:
                pairs.append((refs[0], r, 0))
        out.append(([refs[0]] + [r for r in reps if r is not refs[0]], pairs))
    return out, notes


def matches(replica, reference: str) -> bool:
    """A path (the partition directory, its log directory or a folder above it) or a broker id."""
    p = Path(reference)
    if p.exists():
        ref = p.resolve()
        d = replica.directory.resolve()
        return d == ref or ref in d.parents
    return reference.isdigit() and replica.broker_id == int(reference)
