"""``transactions`` output: open transactions (``view_text``: whole names) with the ``kafka-transactions.sh abort``
command each hanging one needs (Kafka ``TransactionsCommand.AbortTransactionCommand``, 3.0-4.x:
``--start-offset`` for brokers 3.0 and newer, ``--producer-id --producer-epoch --coordinator-epoch``
before), the coordinator's transactional ids (``--list``), or JSON lines."""
from __future__ import annotations

import shlex

from .. import units
from .view_text import printable, table, wrapped


def abort_command(topic: str, partition: int, txn) -> str:
    return (f"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {shlex.quote(topic)} "
            f"--partition {partition} --start-offset {txn.first_offset}")


def abort_command_old(topic: str, partition: int, txn) -> str:
    return (f"kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {shlex.quote(topic)} "
            f"--partition {partition} --producer-id {txn.producer_id} --producer-epoch {txn.producer_epoch} "
            f"--coordinator-epoch {max(txn.coordinator_epoch, 0)}")


def finding_object(d, f) -> dict:
    t = f.txn
    o = {"type": "open_transaction", "topic": d.topic, "partition": d.partition, "producer_id": t.producer_id,
         "producer_epoch": t.producer_epoch, "coordinator_epoch": t.coordinator_epoch,
         "first_offset": t.first_offset, "last_offset": t.last_offset, "last_timestamp": t.last_timestamp,
         "age_ms": f.age_ms, "high_watermark": d.high_watermark, "last_stable_offset": d.last_stable_offset,
         "holds_back": f.holds_back, "status": f.status, "transactional_id": f.transactional_id,
         "coordinator_state": f.coordinator_state, "reason": f.reason}
    if f.status == "hanging":
        o["abort_command"] = abort_command(d.topic, d.partition, t)
        o["abort_command_before_3_0"] = abort_command_old(d.topic, d.partition, t)
    return o


def txn_id_object(m) -> dict:
    return {"type": "transactional_id", "transactional_id": m.transactional_id, "producer_id": m.producer_id,
            "producer_epoch": m.producer_epoch, "state": m.state, "timeout_ms": m.timeout_ms,
            "start_timestamp": m.start_timestamp, "last_update_timestamp": m.last_update_timestamp,
            "partitions": [{"topic": t, "partition": p} for t, p in m.partitions],
            "transaction_state_partition": m.log_partition}


def write_json(write, findings, coord, notes, list_ids: bool) -> None:
    for d, f in findings:
        write(finding_object(d, f))
    if list_ids:
        for tid in sorted(coord.by_id):
            write(txn_id_object(coord.by_id[tid]))
    for n in notes:
        write({"type": "note", "message": n})
    write({"type": "summary", "open_transactions": len(findings),
           "hanging": sum(1 for _d, f in findings if f.status == "hanging"),
           "transaction_state_partitions_read": sorted(coord.partitions_read),
           "transaction_state_partition_count": coord.partition_count,
           "transaction_state_complete": coord.complete})


def write_text(out, findings, coord, notes, list_ids: bool, now: int, partitions: int,
               width: int | None = None) -> None:
    lines: list[str] = []
    if findings:
        rows = []
        for d, f in findings:
            t = f.txn
            rows.append([printable(d.name), str(t.producer_id), str(t.producer_epoch), str(t.first_offset),
                         units.duration(max(f.age_ms, 0)), str(f.holds_back), f.status])
        lines += table(["PARTITION", "PRODUCER", "EPOCH", "FIRST OFFSET", "AGE", "HOLDS BACK", "STATUS"], rows,
                       right={1, 2, 3, 5}, width=width)
        lines.append("")
        for d, f in findings:
            t = f.txn
            lines += wrapped(f"{printable(d.name)}, producer {t.producer_id} from offset {t.first_offset}: "
                             + (f"transactional id {printable(f.transactional_id)}; " if f.transactional_id else "")
                             + f.reason, width=width)
            if f.status == "hanging":
                lines += wrapped("abort it with: " + abort_command(d.topic, d.partition, t), "  ", width, hang=4)
                lines += wrapped("(brokers before 3.0: " + abort_command_old(d.topic, d.partition, t) + ")",
                                 "  ", width, hang=4)
        lines.append("")
    if list_ids and coord.by_id:
        rows = [[printable(m.transactional_id), str(m.producer_id), str(m.producer_epoch), m.state,
                 ", ".join(f"{printable(t)}-{p}" for t, p in m.partitions) or "-"]
                for m in (coord.by_id[k] for k in sorted(coord.by_id))]
        lines += table(["TRANSACTIONAL ID", "PRODUCER", "EPOCH", "STATE", "PARTITIONS"], rows, right={1, 2},
                       width=width)
        lines.append("")
    for n in notes:
        lines += wrapped(f"note: {n}", width=width)
    hanging = sum(1 for _d, f in findings if f.status == "hanging")
    read = len(coord.partitions_read)
    where = (f"all {read} __transaction_state partitions" if coord.complete else
             f"{read} of {coord.partition_count} __transaction_state partitions ({coord.count_source})"
             if read else "no __transaction_state partition")
    lines += wrapped(f"{len(findings)} open transaction{'s' * (len(findings) != 1)} in {partitions} partition"
                     f"{'s' * (partitions != 1)}, {hanging} hanging; checked against {where}, at "
                     f"{units.iso(now)}", width=width)
    out.write("\n".join(lines) + "\n")
