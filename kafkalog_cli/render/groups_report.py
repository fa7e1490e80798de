"""``consumer-groups`` output: per group a heading and a table of its committed offsets (what
``kafka-consumer-groups.sh --describe --offsets`` shows) within 80 columns; JSON lines; or the CSV file that
``kafka-consumer-groups.sh --reset-offsets --from-file`` reads (Kafka ``ConsumerGroupCommand``
``exportOffsetsToCsv`` / ``OffsetsUtils.parseResetPlan``, 3.x-4.x: no header, ``topic,partition,offset`` for
one group, ``group,topic,partition,offset`` for several, fields quoted as Jackson's CSV writer does)."""
from __future__ import annotations

from .. import units
from .view_text import number, printable, table, wrapped


def offset_object(co, end: int | None, expired: bool) -> dict:
    return {"type": "offset", "group": co.group, "topic": co.topic, "partition": co.partition,
            "offset": co.offset, "leader_epoch": None if co.leader_epoch < 0 else co.leader_epoch,
            "metadata": co.metadata, "commit_timestamp": co.commit_timestamp,
            "expire_timestamp": co.expire_timestamp, "expires_at": co.expires_at, "expired": expired,
            "log_end_offset": end, "lag": None if end is None else max(end - co.offset, 0),
            "offsets_partition": co.log_partition, "record_offset": co.record_offset}


def group_object(g, expected: int | None) -> dict:
    return {"type": "group", "group": g.group_id, "kind": g.kind, "protocol_type": g.protocol_type,
            "protocol": g.protocol, "generation": g.generation, "state": g.state,
            "current_state_timestamp": g.current_state_timestamp,
            "members": [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                         "group_instance_id": m.instance_id} for m in g.members],
            "subscribed_topics": None if g.subscribed_topics is None else sorted(g.subscribed_topics),
            "offsets_partition": g.log_partition, "expected_offsets_partition": expected,
            "offsets": len(g.offsets), "expired_offsets": len(g.expired),
            "pending_transactional_offsets": sum(len(p) for p in g.pending.values()),
            "deleted_by_expiration": g.deleted_by_expiration}


def csv_field(text: str) -> str:
    """A CSV field as Jackson's CSV writer gives it: quoted when it holds the separator, a quote or a line
    break (or starts or ends with a space), quotes doubled."""
    if any(c in text for c in ',"\r\n') or text != text.strip(" "):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_csv(out, rows: list, one_group: bool) -> None:
    for co in rows:
        fields = [co.topic, str(co.partition), str(co.offset)]
        if not one_group:
            fields.insert(0, co.group)
        out.write(",".join(csv_field(f) for f in fields) + "\n")


def _kind(g) -> str:
    if g.kind == "simple":
        return "simple (offsets only, no group metadata)"
    if g.kind == "consumer":
        return "consumer (KIP-848)"
    return f"classic, protocol type {g.protocol_type or 'none'}" + (f" ({g.protocol})" if g.protocol else "")


def write_text(out, view, *, include_expired: bool, now: int) -> None:
    lines: list[str] = []
    for g in view.groups:
        members = len(g.members)
        head = (f"Group {printable(g.group_id)}: {_kind(g)}, {g.state}" +
                (f" with {members} member{'s' * (members != 1)}" if members else "") +
                f", on __consumer_offsets-{g.log_partition}")
        lines += wrapped(head)
        if g.group_id in view.removed:
            lines += wrapped("its group metadata was deleted (a tombstone) but offsets remain: loaded as a "
                             "group without metadata, as the coordinator loads it", "  ")
        rows = []
        shown = list(g.offsets.values()) + (list(g.expired.values()) if include_expired else [])
        for co in sorted(shown, key=lambda c: (c.topic, c.partition)):
            end = view.ends.get((co.topic, co.partition))
            expired = (co.topic, co.partition) in g.expired
            rows.append([printable(co.topic), str(co.partition), str(co.offset), number(end),
                         "-" if end is None else str(max(end - co.offset, 0)),
                         "expired" if expired else ("never" if co.expires_at is None else _minute(co.expires_at))])
        if rows:
            lines += ["  " + ln for ln in table(["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                                  "EXPIRES"], rows, right={1, 2, 3, 4}, width=78)]
        else:
            lines.append("  no committed offset")
        if g.expired and not include_expired:
            n = len(g.expired)
            lines += wrapped(f"{n} offset{'s' * (n != 1)} expired at {units.iso(now)} (offsets retention "
                             f"{units.duration(view.retention_ms)}, {view.retention_source}): the coordinator's "
                             "first expiration run removes them (--include-expired shows them)", "  ")
        if g.deleted_by_expiration:
            lines += wrapped("with every offset expired and no member, the coordinator deletes the group", "  ")
        pending = sum(len(p) for p in g.pending.values())
        if pending:
            lines += wrapped(f"{pending} transactional offset commit{'s' * (pending != 1)} pending (no COMMIT or "
                             "ABORT marker yet): not visible until the transaction commits", "  ")
        lines.append("")
    for gid, part in sorted(view.deleted.items()):
        lines += wrapped(f"Group {printable(gid)}: deleted (its group metadata tombstone is in "
                         f"__consumer_offsets-{part})")
    misplaced = [g for g in view.groups if view.expected.get(g.group_id) not in (None, g.log_partition)]
    if misplaced:
        lines += wrapped(f"note: {len(misplaced)} of these groups are not on the partition abs(hashCode) % "
                         f"{view.partition_count} gives ({view.count_source}): the cluster had another number of "
                         "__consumer_offsets partitions (--offsets-partitions sets it)")
    for n in view.notes + view.info:
        lines += wrapped(f"note: {n}")
    total = sum(len(g.offsets) for g in view.groups)
    lines += wrapped(f"{len(view.groups)} group{'s' * (len(view.groups) != 1)}, {total} committed offset"
                     f"{'s' * (total != 1)}, from {len(view.partitions)} __consumer_offsets partition"
                     f"{'s' * (len(view.partitions) != 1)} at {units.iso(now)}")
    out.write("\n".join(lines) + "\n")


def _minute(ms: int) -> str:
    """``2024-03-01T12:00Z``: the expiry time to the minute (the table stays within 80 columns)."""
    text = units.iso(ms)
    return text[:16] + "Z" if text[:4].isdigit() else text
