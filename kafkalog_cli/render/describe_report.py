"""``describe`` output: a table of partitions and a summary per topic (``view_text``: whole names), a block of every
value per partition (``--details``), or JSON lines (one ``partition`` object per partition, one ``topic``
object per topic, ``note`` objects)."""
from __future__ import annotations

from .. import units
from .view_text import labelled, number, printable, table, wrapped


def partition_object(d) -> dict:
    return {"type": "partition", "topic": d.topic, "partition": d.partition, "directory": d.directory,
            "log_dir": d.log_dir, "state": d.state, "size": d.size, "segments": d.segments,
            "log_start_offset": d.log_start, "log_end_offset": d.log_end, "high_watermark": d.high_watermark,
            "high_watermark_checkpoint": d.high_watermark_checkpoint, "recovery_point": d.recovery_point,
            "last_stable_offset": d.last_stable_offset, "first_timestamp": d.first_timestamp,
            "last_timestamp": d.last_timestamp, "producers": d.producers,
            "producer_states": [producer_object(e) for e in d.producer_states],
            "open_transactions": [txn_object(t) for t in d.open_transactions],
            "cleaner_checkpoint": d.cleaner_checkpoint, "dirty_ratio": d.dirty_ratio,
            "cleanable_bytes": d.cleanable_bytes, "cleanup_policy": d.cleanup_policy,
            "config_source": d.config_source, "topic_id": d.topic_id, "topic_status": d.topic_status,
            "notes": list(d.notes), "problems": list(d.problems)}


def producer_object(e) -> dict:
    """One active producer as ``kafka-transactions.sh describe-producers`` lists it."""
    return {"producer_id": e.producer_id, "producer_epoch": e.producer_epoch, "last_sequence": e.last_sequence,
            "last_timestamp": e.timestamp, "coordinator_epoch": e.coordinator_epoch,
            "current_transaction_start_offset": e.current_txn_first_offset}


def txn_object(t) -> dict:
    return {"producer_id": t.producer_id, "producer_epoch": t.producer_epoch,
            "coordinator_epoch": t.coordinator_epoch, "first_offset": t.first_offset,
            "last_offset": t.last_offset, "last_timestamp": t.last_timestamp}


def write_json(out, parts: list, topics: list[dict], notes: list[str], write) -> None:
    for d in parts:
        write(partition_object(d))
    for t in topics:
        write(dict({"type": "topic"}, **t))
    for n in notes:
        write({"type": "note", "message": n})


def _name(d) -> str:
    return printable(d.name + (f" ({d.state})" if d.state else ""))


def write_text(out, parts: list, topics: list[dict], notes: list[str], *, details: bool, topics_only: bool,
               now: int, width: int | None = None) -> None:
    lines: list[str] = []
    if not parts:
        lines.append("no partition found")
    elif details:
        for d in parts:
            lines += _block(d, now, width)
            lines.append("")
    elif not topics_only:
        rows = [[_name(d), units.size(d.size), str(d.segments), number(d.log_start), number(d.log_end),
                 number(d.high_watermark), number(d.last_stable_offset), str(len(d.open_transactions))]
                for d in parts]
        lines += table(["PARTITION", "SIZE", "SEGS", "LOG START", "LOG END", "HW", "LSO", "TXNS"], rows,
                       right={1, 2, 3, 4, 5, 6, 7}, width=width)
        noted = [d for d in parts if d.notes or d.problems]
        if noted:
            lines.append("")
            for d in noted:
                for n in d.problems:
                    lines += wrapped(f"{_name(d)}: problem: {n}", width=width)
                for n in d.notes:
                    lines += wrapped(f"{_name(d)}: {n}", width=width)
        lines.append("")
    if parts:
        rows = [[printable(t["topic"]), str(t["partitions"]), units.size(t["size"]), str(t["segments"]),
                 str(t["offsets"]), str(t["open_transactions"])] for t in topics]
        lines += table(["TOPIC", "PARTITIONS", "SIZE", "SEGMENTS", "OFFSETS", "OPEN TXNS"], rows,
                       right={1, 2, 3, 4, 5}, width=width)
        size = sum(d.size for d in parts)
        txns = sum(len(d.open_transactions) for d in parts)
        logdirs = {d.log_dir for d in parts if d.log_dir}
        lines.append("")
        lines += wrapped(f"{len(parts)} partition{'s' * (len(parts) != 1)} of {len(topics)} "
                         f"topic{'s' * (len(topics) != 1)}"
                         + (f" in {len(logdirs)} log director{'ies' if len(logdirs) != 1 else 'y'}" if logdirs
                            else "") + f", {units.size(size)}, {txns} open transaction{'s' * (txns != 1)}",
                         width=width)
    for n in notes:
        lines += wrapped(f"note: {n}", width=width)
    out.write("\n".join(lines).rstrip("\n") + "\n")


def _block(d, now: int, width: int | None) -> list[str]:
    out = [_name(d)]

    def row(label: str, text: str) -> None:
        out.extend(labelled(label, text, width))

    row("directory", printable(d.directory))

    row("size", f"{units.size(d.size)} ({d.size} bytes) in {d.segments} segment{'s' * (d.segments != 1)}")
    row("log start", number(d.log_start))
    row("log end", number(d.log_end))
    hw = number(d.high_watermark)
    if d.high_watermark_checkpoint is not None and d.high_watermark_checkpoint != d.high_watermark:
        hw += f" (checkpoint {d.high_watermark_checkpoint}, clamped to the log)"
    elif d.high_watermark is not None and d.high_watermark_checkpoint is None:
        hw += " (not in replication-offset-checkpoint: 0, clamped to the log)"
    row("high watermark", hw)
    row("last stable", number(d.last_stable_offset))
    row("recovery point", number(d.recovery_point))
    row("first timestamp", units.timestamp(d.first_timestamp))
    row("last timestamp", units.timestamp(d.last_timestamp))
    if d.producers is not None:
        row("producers", f"{d.producers} active, {len(d.open_transactions)} open transaction"
                         f"{'s' * (len(d.open_transactions) != 1)}")
    for t in d.open_transactions:
        held = (d.high_watermark - t.first_offset) if d.high_watermark is not None else None
        row("open transaction", f"producer {t.producer_id} epoch {t.producer_epoch} from offset {t.first_offset}"
            f", last write {units.iso(t.last_timestamp)} ({units.duration(max(now - t.last_timestamp, 0))} ago)"
            + (f", holds {held} offsets below the high watermark" if held and held > 0 else ""))
    cleaner = f"checkpoint {number(d.cleaner_checkpoint)}"
    if d.dirty_ratio is not None:
        cleaner += f", dirty ratio {d.dirty_ratio:.3f} ({units.size(d.cleanable_bytes or 0)} cleanable)"
    row("cleaner", cleaner)
    if d.cleanup_policy is not None:
        row("cleanup.policy", f"{d.cleanup_policy} ({d.config_source})")
    if d.topic_id is not None or d.topic_status is not None:
        status = _STATUS.get(d.topic_status or "", f", {d.topic_status}")
        row("topic id", f"{d.topic_id or 'none (no partition.metadata)'}{status}")
    for n in d.problems:
        row("problem", n)
    for n in d.notes:
        row("note", n)
    return out


_STATUS = {"live": "", "not_in_metadata_mode": " (no KRaft metadata in this log directory)",
           "unknown_topic": " (not in the KRaft metadata)", "deleted_topic": " (a deleted topic's leftover)",
           "id_mismatch": " (the metadata gives this id to another topic)",
           "no_topic_id": " (matched to the metadata by name)", "delete": " (a -delete directory)"}
