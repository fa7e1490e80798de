"""The logical record every decoder yields, whatever the magic (Kafka's ``Record`` interface).

A module of its own so that the pure decoders (``record_batch``, ``legacy``) and the compiled record path
(``native``, which hands this type to the C decoder) share it without importing each other.
"""
from __future__ import annotations

from typing import NamedTuple


class Record(NamedTuple):
    """One logical record of any magic; ``crc``/``valid`` are set for legacy records only."""
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    sequence: int
    attributes: int = 0
    crc: int | None = None
    valid: bool | None = None
