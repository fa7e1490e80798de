"""``consumer-groups`` output: per group a heading and a table of its committed offsets (what
``kafka-consumer-groups.sh --describe --offsets`` shows), or a block of every value per group (``--details``);
JSON lines; or the CSV file that ``kafka-consumer-groups.sh --reset-offsets --from-file`` reads (Kafka
``ConsumerGroupCommand`` ``exportOffsetsToCsv`` / ``OffsetsUtils.parseResetPlan``, 3.x-4.x: no header,
``topic,partition,offset`` for one group, ``group,topic,partition,offset`` for several, fields quoted as
Jackson's CSV writer does; a row with a line break in a field cannot be read back and is left out, said in
a note). LAG is ``ConsumerGroupCommand.getLag``'s: log end minus the committed offset, negative when the
committed offset is beyond the log end (a truncated log); none for offset -1. Pure functions of values."""
from __future__ import annotations

from .. import units
from .view_text import labelled, number, table, wrapped


def lag(offset: int, end: int | None) -> int | None:
    """``ConsumerGroupCommand.getLag``: ``end - offset``, unless the offset is -1 or the end unknown."""
    return None if end is None or offset == -1 else end - offset


def offset_object(co, end: int | None, expired: bool) -> dict:
    return {"type": "offset", "group": co.group, "topic": co.topic, "partition": co.partition,
            "offset": co.offset, "leader_epoch": None if co.leader_epoch < 0 else co.leader_epoch,
            "metadata": co.metadata, "commit_timestamp": co.commit_timestamp,
            "expire_timestamp": co.expire_timestamp, "expires_at": co.expires_at, "expired": expired,
            "log_end_offset": end, "lag": lag(co.offset, end),
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
            "coordinator_loads": g.loads}


def deleted_object(group_id: str, partition: int, reason: str) -> dict:
    return {"type": "deleted_group", "group": group_id, "offsets_partition": partition, "reason": reason}


def shown_offsets(g, include_expired: bool) -> list:
    """The group's offsets a report shows, by topic and partition."""
    rows = list(g.offsets.values()) + (list(g.expired.values()) if include_expired else [])
    return sorted(rows, key=lambda c: (c.topic, c.partition))


def write_json(write, view, *, include_expired: bool, now: int) -> None:
    live = [g for g in view.groups if not g.deleted_by_expiration]
    for g in view.groups:
        if g.deleted_by_expiration:
            write(deleted_object(g.group_id, g.log_partition, "expiration"))
        else:
            write(group_object(g, view.expected.get(g.group_id)))
        for co in shown_offsets(g, include_expired):
            write(offset_object(co, view.ends.get((co.topic, co.partition)), (co.topic, co.partition) in g.expired))
    for gid, part in sorted(view.deleted.items()):
        write(deleted_object(gid, part, "tombstone"))
    for n in view.notes + view.info:
        write({"type": "note", "message": n})
    write({"type": "summary", "groups": len(live), "offsets": sum(len(g.offsets) for g in live),
           "deleted_groups": len(view.groups) - len(live) + len(view.deleted),
           "offsets_partitions_read": sorted(view.partitions), "offsets_partition_count": view.partition_count,
           "offsets_partition_count_source": view.count_source, "retention_ms": view.retention_ms,
           "retention_source": view.retention_source,
           "coordinator_rules": {str(p): ("4.x" if r.modern else "3.x") for p, r in sorted(view.rules.items())},
           "now": now})


def csv_field(text: str) -> str:
    """A CSV field as Jackson's CSV writer gives it: quoted when it holds the separator, a quote or a line
    break (or starts or ends with a space), quotes doubled."""
    if any(c in text for c in ',"\r\n') or text != text.strip(" "):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_lines(rows: list, one_group: bool, terminal: bool = False) -> tuple[list[str], list]:
    """(the lines of the reset file, the rows left out): ``OffsetsUtils.parseResetPlan`` splits the file at
    line breaks before it reads a field, so a row whose group id or topic holds one cannot be read back.
    The names are written exactly (the file restores those groups), escaped only for a ``terminal``."""
    from ..names import shown
    lines, left_out = [], []
    for co in rows:
        fields = [co.topic, str(co.partition), str(co.offset)]
        if not one_group:
            fields.insert(0, co.group)
        if any("\n" in f or "\r" in f for f in fields):
            left_out.append(co)
            continue
        line = ",".join(csv_field(f) for f in fields)
        lines.append((shown(line) if terminal else line) + "\n")
    return lines, left_out


def _kind(g) -> str:
    if g.kind == "simple":
        return "simple (offsets only, no group metadata)"
    if g.kind == "consumer":
        return "consumer (KIP-848)"
    return f"classic, protocol type {g.protocol_type or 'none'}" + (f" ({g.protocol})" if g.protocol else "")


def _heading(g, width) -> list[str]:
    members = len(g.members)
    head = (f"Group {g.group_id}: {_kind(g)}, {g.state}" +
            (f" with {members} member{'s' * (members != 1)}" if members else "") +
            f", on __consumer_offsets-{g.log_partition}")
    if g.deleted_by_expiration:
        head += ": deleted by the coordinator's first cleanup (empty, no offset left)"
    return wrapped(head, width=width)


def write_text(out, view, *, include_expired: bool, now: int, width: int | None = None,
               details: bool = False) -> None:
    lines: list[str] = []
    for g in view.groups:
        lines += _heading(g, width)
        lines += (_details(g, view, include_expired, now, width) if details else
                  _offsets_table(g, view, include_expired, width))
        lines += _group_notes(g, view, include_expired, now, width)
        lines.append("")
    for gid, part in sorted(view.deleted.items()):
        lines += wrapped(f"Group {gid}: deleted (its group metadata tombstone is in __consumer_offsets-{part})",
                         width=width)
    lines += _footer(view, now, width)
    out.write("\n".join(lines) + "\n")


def _offsets_table(g, view, include_expired: bool, width) -> list[str]:
    rows = []
    for co in shown_offsets(g, include_expired):
        end = view.ends.get((co.topic, co.partition))
        expired = (co.topic, co.partition) in g.expired
        rows.append([co.topic, str(co.partition), str(co.offset), number(end), number(lag(co.offset, end)),
                     "expired" if expired else ("never" if co.expires_at is None else _minute(co.expires_at))])
    if not rows:
        return [] if g.deleted_by_expiration else ["  no committed offset"]
    return ["  " + ln for ln in table(["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "EXPIRES"],
                                      rows, right={1, 2, 3, 4}, width=None if width is None else width - 2)]


def _group_notes(g, view, include_expired: bool, now: int, width) -> list[str]:
    lines = []
    if g.group_id in view.removed:
        lines += wrapped("its group metadata was deleted (a tombstone) but offsets remain: loaded as a group "
                         "without metadata, as the coordinator loads it", "  ", width)
    if not g.loads:
        lines += wrapped(f"a broker cannot load __consumer_offsets-{g.log_partition} (see the notes): it serves "
                         "none of this group", "  ", width)
    if g.expired and not include_expired:
        n = len(g.expired)
        lines += wrapped(f"{n} offset{'s' * (n != 1)} expired at {units.iso(now)} (offsets retention "
                         f"{units.duration(view.retention_ms)}, {view.retention_source}): the coordinator's first "
                         "cleanup removes them (--include-expired shows them)", "  ", width)
    pending = sum(len(p) for p in g.pending.values())
    if pending:
        lines += wrapped(f"{pending} transactional offset commit{'s' * (pending != 1)} pending (no COMMIT or "
                         "ABORT marker yet): not visible until the transaction commits", "  ", width)
    return lines


def _footer(view, now: int, width) -> list[str]:
    lines = []
    misplaced = [g for g in view.groups if view.expected.get(g.group_id) not in (None, g.log_partition)]
    if misplaced:
        n = len(misplaced)
        lines += wrapped(f"note: {n} of these groups {'is' if n == 1 else 'are'} not on the partition abs(hashCode) % "
                         f"{view.partition_count} gives ({view.count_source}): the cluster had another number of "
                         "__consumer_offsets partitions (--offsets-partitions sets it)", width=width)
    for n in view.notes + view.info:
        lines += wrapped(f"note: {n}", width=width)
    live = [g for g in view.groups if not g.deleted_by_expiration]
    total = sum(len(g.offsets) for g in live)
    lines += wrapped(f"{len(live)} group{'s' * (len(live) != 1)}, {total} committed offset"
                     f"{'s' * (total != 1)}, from {len(view.partitions)} __consumer_offsets partition"
                     f"{'s' * (len(view.partitions) != 1)} at {units.iso(now)}", width=width)
    return lines


def _details(g, view, include_expired: bool, now: int, width) -> list[str]:
    """Every value of the group, one per line (``--details``)."""
    out: list[str] = []

    def row(label: str, text: str) -> None:
        out.extend(labelled(label, text, width))

    expected = view.expected.get(g.group_id)
    row("kind", _kind(g))
    state = g.state + (f", generation {g.generation}" if g.generation is not None else "")
    if g.current_state_timestamp is not None:
        state += f", state since {units.iso(g.current_state_timestamp)}"
    row("state", state)
    row("partition", f"__consumer_offsets-{g.log_partition}" + (
        "" if expected in (None, g.log_partition) else
        f" (abs(hashCode) % {view.partition_count} gives {expected})"))
    for m in g.members:
        row("member", f"{m.member_id}: client {m.client_id}, host {m.client_host}"
                      + (f", instance {m.instance_id}" if m.instance_id else ""))
    if g.subscribed_topics is not None:
        row("subscribed", ", ".join(sorted(g.subscribed_topics)) or "no topic")
    elif g.members and g.protocol_type == "consumer":
        row("subscribed", "unknown (the subscription cannot be read: the coordinator expires nothing)")
    for co in shown_offsets(g, include_expired):
        end = view.ends.get((co.topic, co.partition))
        expired = (co.topic, co.partition) in g.expired
        when = "expired" if expired else ("never expires" if co.expires_at is None else
                                          f"expires {units.iso(co.expires_at)}")
        row("offset", f"{co.topic}-{co.partition}: {co.offset}"
                      + (f" (log end {end}, lag {lag(co.offset, end)})" if end is not None else "")
                      + (f", leader epoch {co.leader_epoch}" if co.leader_epoch >= 0 else "")
                      + f", committed {units.iso(co.commit_timestamp)}"
                      + (f", expire timestamp {co.expire_timestamp}" if co.expire_timestamp is not None else "")
                      + f", {when}, metadata \"{co.metadata}\""
                      + f", record {co.record_offset} of __consumer_offsets-{co.log_partition}")
    for pid, pend in sorted(g.pending.items()):
        for (t, p), co in sorted(pend.items()):
            row("pending", f"{t}-{p}: {co.offset} by producer {pid} (record {co.record_offset}, no marker yet)")
    return out


def _minute(ms: int) -> str:
    """``2024-03-01T12:00Z``: the expiry time to the minute."""
    text = units.iso(ms)
    return text[:16] + "Z" if text[:4].isdigit() else text
