"""The order in which ``DumpLogSegments`` prints its end-of-run reports, one per file.

It keeps each report (offset-index mismatches, time-index mismatches, out-of-order timestamps, indexed
offsets not found, non-consecutive offsets) in a hash map keyed by the file's absolute path and prints the
map as it iterates: Scala 2.13's ``mutable.HashMap`` in the Scala tool (``kafka.tools.DumpLogSegments``,
``main`` and ``TimeIndexDumpErrors.printErrors``, 3.x and 4.0, the ``kafka_2.13`` builds), Java's
``HashMap`` in the Java one (``org.apache.kafka.tools.DumpLogSegments``, later 4.x). Both iterate their
buckets in index order, the index being the low bits of ``h ^ (h >>> 16)`` for ``h`` the path's
``String.hashCode``, over a table of 16 buckets that doubles as the map fills. They differ only within a
bucket (Scala keeps a bucket's entries by hash, Java by insertion) and in when the table doubles (Scala
before its 12th entry, Java after its 13th): the Scala order is given here. With two files or more in
the reports, the order they come out in is then Kafka's (``dump-log`` kept the order files were read).
The ``kafka_2.12`` builds of 3.x iterate Scala 2.12's hash map, in another order, not given here.
"""
from __future__ import annotations

import os

from kafkalog_formats.java_text import java_string_hash, java_utf8


def path_hash(path: str) -> int:
    """``String.hashCode`` of ``path`` as the JVM holds it: a file name's bytes that are not UTF-8 are what
    Java's decoder turns them into (``java_utf8``)."""
    return java_string_hash(java_utf8(os.fsencode(path)))


def _improved(h: int) -> int:
    """``h ^ (h >>> 16)`` as a signed 32-bit int (Scala's ``improveHash``, Java's ``HashMap.hash``)."""
    u = h & 0xFFFFFFFF
    u ^= u >> 16
    return u - (1 << 32) if u & 0x80000000 else u


def scala_hash_map_order(keys) -> list:
    """``keys`` (distinct strings, in insertion order) in the order Scala 2.13's ``mutable.HashMap`` iterates
    them: table of 16 buckets doubled before an insertion that would reach 3/4 of it, buckets in index
    order, a bucket's entries by (signed) improved hash, then insertion."""
    keys = list(keys)
    size = 16
    while len(keys) >= int(size * 0.75):        # HashMap.put0: grow when contentSize + 1 >= threshold
        size *= 2
    hashed = [(_improved(path_hash(k)), i, k) for i, k in enumerate(keys)]
    hashed.sort(key=lambda t: (t[0] & (size - 1), t[0], t[1]))
    return [k for _h, _i, k in hashed]


def in_kafka_order(table: dict) -> list:
    """``table``'s (key, value) pairs in the order ``DumpLogSegments`` prints them."""
    return [(k, table[k]) for k in scala_hash_map_order(table)]
