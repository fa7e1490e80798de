"""The partitions of an internal topic as its coordinator loads them: the group coordinator
(``__consumer_offsets``) and the transaction coordinator (``__transaction_state``) each replay their
partitions from the log start offset (``CoordinatorLoaderImpl``/``GroupMetadataManager.loadGroupsAndOffsets``,
``TransactionStateManager.loadTransactionMetadata``)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from .lookup import LookupFailed, PartitionView


def coordinator_partitions(directories: Iterable, partitions_read: dict) -> Iterator[tuple[int, PartitionView]]:
    """(partition number, view) of each ``<internal topic>-N`` directory, its log range recorded in
    ``partitions_read`` (log start from the checkpoint, log end); a directory without segments is
    recorded as read with no range and not yielded (the coordinator has nothing to load there)."""
    for directory in directories:
        directory = Path(directory)
        part = int(directory.name.rsplit("-", 1)[1])
        try:
            view = PartitionView(directory)
        except LookupFailed:
            partitions_read[part] = (None, None)
            continue
        partitions_read[part] = (view.log_start, view.log_end)
        yield part, view
