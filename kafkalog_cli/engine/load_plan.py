"""Which segments of a partition Kafka's next start recovers (``LogLoader.recoverLog``), from the files
alone: the read side grades findings by it (``verify_policy``) and the write side takes the largest
timestamps the broker's retention and cleaner will see from it (``partition_state``, ``segment_times``).

Kafka (2.x–4.x): ``LogManager.loadLogs`` notes whether ``.kafka_cleanshutdown`` exists (and deletes it,
2.8+); without it every segment from the one holding the partition's recovery point is recovered
(``LogSegments.values(recoveryPoint, ∞)``; recovery point 0 when the checkpoint has no entry). The KRaft
metadata log is recovered on every start (``KafkaMetadataLog``: recovery point 0, never clean).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoadPlan:
    """What Kafka's next start does with one partition's segments."""
    recover_from: int | None = None   # base offset of the first segment the loader recovers; None: none
    deleted: bool = False             # a ``-delete`` directory: Kafka deletes the whole partition
    reason: str = ""

    def recovers(self, base_offset: int) -> bool:
        return self.recover_from is not None and base_offset >= self.recover_from


UNKNOWN = LoadPlan()


def plan_for(bases: list[int], *, metadata_log: bool, deleted: bool, clean_shutdown: bool | None,
             recovery_point: int | None) -> LoadPlan:
    """``clean_shutdown`` None: the log directory is unknown (a partition or file given alone); then only
    the active segment counts as recovered, as on any start without a clean-shutdown marker."""
    if not bases:
        return LoadPlan(deleted=deleted)
    if deleted:
        return LoadPlan(None, True, "the partition is marked for deletion")
    if metadata_log:
        return LoadPlan(bases[0], False, "the KRaft metadata log is recovered on every start")
    if clean_shutdown is None:
        return LoadPlan(bases[-1], False, "the active segment is recovered unless the broker shut down cleanly")
    if clean_shutdown:
        return LoadPlan(None, False, "clean-shutdown marker: Kafka does not recover this log")
    rp = recovery_point or 0
    floor = bases[0]
    for b in bases:
        if b <= rp:
            floor = b
    return LoadPlan(floor, False, f"no clean-shutdown marker: Kafka recovers from the segment holding the "
                    f"recovery point {rp}")
