"""The plan of ``recover --salvage`` for a partition whose segments salvage changes (pure; no I/O): what
``salvage_recovery`` read turned into actions, in a crash-safe order, and the loss report.

Order (after passes 1-3, as for every partition; recover_exec argues each step):

1. producer snapshots above the first segment salvage changes are removed: they describe batches that are
   gone, and a broker reads the newest snapshot at or below its recovery point;
2. each changed segment is rewritten through Kafka's own swap protocol (``SalvageSegment``: the kept
   pieces and the ABORT markers into ``<base>.log.cleaned`` with its rebuilt indexes, the old files kept in
   the backup, ``.cleaned`` → ``.swap``, old → ``.deleted``, ``.swap`` → final): a kill at any instant leaves
   the old segment or the new one, and the broker's loader (or a re-run) completes an interrupted swap;
   the indexes of the other segments are rewritten where they differ from their rebuild;
3. the leader-epoch checkpoint as the recovery over the kept batches leaves it;
4. a producer snapshot at the log end, replayed over the kept batches.

Log-directory checkpoint entries above the new log end are lowered first (``plan_logdir``), as for any
recovery.
"""
from __future__ import annotations

from dataclasses import replace as evolve

from ..engine.salvage import Damage, Keep, Repair
from ..layout import segment_file_name
from . import recover_plan as rp
from .recover_actions import (R_SALVAGE, R_SALVAGE_INDEXES, R_SALVAGE_SNAP, Action, PartitionPlan, RemoveFile,
                              SalvageSegment, problem)

_FIELD_AT = {"base_offset": (0, ">q"), "length": (8, ">i"), "partition_leader_epoch": (12, ">i")}


def plan_partition(f, checkpoints: dict, *, mark_clean: bool = False, move_aside: bool = False, **kafka) -> PartitionPlan:
    """``recover_plan.plan_partition``, but for a partition salvage changes (``f.salvage.changed``), the salvage."""
    if f.salvage is None or not f.salvage.changed:
        return rp.plan_partition(f, checkpoints, mark_clean=mark_clean, move_aside=move_aside, **kafka)
    plan = PartitionPlan(f.dir_name, f.kind, f.topic, f.partition, recovery=f.recovery_reason, segments=len(f.segments))
    plan.owns_checkpoints = f.own_checkpoints
    return plan_salvaged(f, f.dir_name + "/", checkpoints, plan, mark_clean, move_aside)


def plan_salvaged(f, d: str, checkpoints: dict, plan: PartitionPlan, mark_clean: bool, move_aside: bool) -> PartitionPlan:
    """The actions for a partition salvage changes (``f.salvage.changed``)."""
    LogEnd, _checkpoints, _leader_epochs, _leftovers = rp.LogEnd, rp._checkpoints, rp._leader_epochs, rp._leftovers
    _loaded_files, _producer_state = rp._loaded_files, rp._producer_state
    sf = f.salvage
    loaded = True
    left = _leftovers(f, d, move_aside)
    plan.misread = bool(left.problems)
    plan.problems += left.problems
    pass3, problems = _loaded_files(f, d, left.virtual, loaded)
    plan.problems += [p for p in problems if p.kind not in ("offset_overflow", "consumer_stops")]   # salvaged
    if sf.stop is not None:
        offset, message = sf.stop
        plan.refused = True
        plan.problems.append(problem("producer_state", f"after salvage, the batch at offset {offset} cannot be applied "
                                     f"to the producer state ({message}): Kafka's loader would stop there. Nothing was "
                                     "changed in this partition", d + f.segments[0].log.name))
        return plan
    for message, seg in sf.problems:
        plan.problems.append(problem("transaction_left_open", message, d + seg))

    # the facts as a recovery over the kept batches leaves them, for the shared planners
    segs = [evolve(s, result=sf.results.get(s.base), why="recovery",
                                next_offset=sf.results[s.base].next_offset if s.base in sf.results else s.next_offset)
            for s in f.segments]
    g = evolve(f, segments=segs, state_entries=sf.state_entries, state_end=sf.state_end,
                            epochs_after=sf.epochs_after, replay_from=sf.replay_from, stopped_at=None,
                            epochs_rebuilt=sf.epochs_after if f.epochs_problem else None)
    leo = segs[-1].next_offset if segs[-1].next_offset is not None else segs[-1].base
    ls_cp = checkpoints.get("log-start-offset-checkpoint") if f.own_checkpoints else None
    end = LogEnd(segs, [], leo, ls_cp, False, [])
    plan.log_end, plan.log_end_before = leo, f.log_end_before
    plan.segments_scanned = len(segs)
    plan.bytes_validated = sum(s.log.size for s in f.segments)

    first_changed = sf.first_changed
    stale = [RemoveFile(d + snap.name, f"producer snapshot at offset {snap.offset}, past the first segment salvage "
                        f"rewrites ({segment_file_name(first_changed, 'log')}): it describes batches that are gone",
                        R_SALVAGE_SNAP)
             for snap in f.snapshots if first_changed is not None and snap.offset > first_changed]
    kept_snaps = evolve(g, snapshots=[s for s in f.snapshots if first_changed is None
                                                   or s.offset <= first_changed])
    segment_actions = []
    for s in segs:
        res = s.result
        if res is None:
            continue
        if res.salvaged is not None and res.salvaged.changed:
            segment_actions.append(_salvage_action(s, d, res))
        else:
            orig = next(o for o in f.segments if o.base == s.base)
            segment_actions += _index_writes(s, d, plan, orig, first_changed)
    snaps = _producer_state(kept_snaps, d, end, loaded, True, mark_clean)
    plan.notes += snaps.notes
    epochs = _leader_epochs(g, d, end, loaded, end_moved=leo != f.log_end_before)
    plan.checkpoints += epochs.checkpoints
    plan.actions = left.actions + pass3 + stale + snaps.removals + segment_actions + epochs.actions + snaps.write
    plan.removed = [a.path for a in left.actions + pass3 + stale + snaps.removals if isinstance(a, RemoveFile)]
    if f.own_checkpoints:
        plan.log_start, changes = _checkpoints(g, end, checkpoints)
        plan.checkpoints += changes
    plan.salvage = loss_report(f, d, sf)
    return plan


def _index_writes(s, d: str, plan: PartitionPlan, orig, first_changed: int | None) -> list[Action]:
    """The indexes of a segment salvage does not rewrite: all three rebuilt where Kafka's loader would rebuild
    them anyway (a segment it recovers: from the recovery point on, a missing ``.index``, a ``.txnindex``
    failing its check; a missing ``.timeindex``); past the first rewritten segment, the ``.txnindex`` where the
    transactions salvage ended change it; else none."""
    _rebuilt_indexes = rp._rebuilt_indexes
    if orig.why not in rp.FULL and orig.pass3 is None and "timeindex" in orig.indexes:
        if first_changed is None or s.base < first_changed:
            return []
        s = evolve(s, why="txnindex-only")
    actions = []
    for a in _rebuilt_indexes(s, d, R_SALVAGE_INDEXES, plan.rebuilt):
        actions.append(evolve(a, reason="recovered over the batches salvage keeps; "
                                           + a.reason.split("; ", 1)[-1]))
    return actions


def _salvage_action(s, d: str, res) -> SalvageSegment:
    salvaged = res.salvaged
    parts: list = []
    markers = dict()
    for i, m in salvaged.markers:
        markers.setdefault(i, []).append(m)
    for i, piece in enumerate(salvaged.layout.pieces):
        if isinstance(piece, Keep):
            if parts and parts[-1][0] == "copy" and parts[-1][2] == piece.start:
                parts[-1] = ("copy", parts[-1][1], piece.end)
            else:
                parts.append(("copy", piece.start, piece.end))
        elif isinstance(piece, Repair):
            parts.append(("patch", piece.start, piece.end,
                          tuple((_FIELD_AT[name][0], _FIELD_AT[name][1], new) for name, _old, new in piece.fields)))
        for m in markers.get(i, ()):
            parts.append(("insert", m.data))
    lay = salvaged.layout
    dropped = sum(p.size for p in lay.damages)
    bits = [f"{len(lay.damages)} damaged range{'' if len(lay.damages) == 1 else 's'}, {dropped} bytes dropped"]
    if lay.repairs:
        bits.append(f"{len(lay.repairs)} batch{'' if len(lay.repairs) == 1 else 'es'} repaired")
    if salvaged.markers:
        bits.append(f"{len(salvaged.markers)} ABORT marker{'' if len(salvaged.markers) == 1 else 's'} written")
    files = [d + segment_file_name(s.base, "log")]
    files += [d + segment_file_name(s.base, sfx) for sfx in ("index", "timeindex", "txnindex") if sfx in s.indexes]
    indexes = (("index", res.index), ("timeindex", res.timeindex), ("txnindex", res.txnindex or None))
    return SalvageSegment(d + segment_file_name(s.base, "log"), "keeps every batch that proves itself and drops the "
                          "damaged bytes (saved whole in the backup)", R_SALVAGE, parts=tuple(parts),
                          indexes=indexes, files=tuple(files), old_size=s.log.size, new_size=salvaged.new_size,
                          mtime_ns=s.mtime_ns, detail="; ".join(bits))


# --- the loss report ----------------------------------------------------------------------------------

def loss_report(f, d: str, sf) -> dict:
    """What salvage drops, repairs and writes, and what it keeps that Kafka's own recovery would have
    deleted: plain values (JSON-ready), rendered by ``render.recover_report``."""
    damages, repairs, markers = [], [], []
    for s in f.segments:
        lay = sf.layouts.get(s.base)
        if lay is None:
            continue
        name = d + s.log.name
        for piece in lay.pieces:
            if isinstance(piece, Damage):
                damages.append(_damage(name, piece))
            elif isinstance(piece, Repair):
                repairs.append({"file": name, "position": piece.start, "bytes": piece.end - piece.start,
                                "offsets": [piece.first, piece.last], "reason": piece.reason,
                                "fields": [{"field": n, "old": o, "new": v} for n, o, v in piece.fields]})
        res = sf.results.get(s.base)
        if res is not None and res.salvaged is not None:
            for _i, m in res.salvaged.markers:
                markers.append({"file": name, "offset": m.offset, "producer_id": m.producer_id,
                                "producer_epoch": m.producer_epoch, "transaction_first_offset": m.first_offset})
    return {"damages": damages, "repairs": repairs, "markers": markers, "kafka": _kafka_outcome(f, d, sf)}


def _damage(name: str, piece: Damage) -> dict:
    entries = []
    for e in piece.entries:
        entries.append({"position": e.position, "size": e.size, "kind": e.kind, "reason": e.reason,
                        "claimed_offsets": None if e.base is None else [e.base, e.last],
                        "records": e.count if e.kind not in ("crc", "framing") else None})
    lost = piece.lost
    return {"file": name, "start": piece.start, "end": piece.end, "bytes": piece.size,
            "offsets_after": piece.after, "offsets_before": piece.before,
            "offsets_lost": list(lost) if lost is not None else None,
            "tail": piece.before is None, "found_by": piece.found_by, "note": piece.note, "entries": entries,
            "backup": name}


def _kafka_outcome(f, d: str, sf) -> dict | None:
    """Where Kafka's recovery would cut (the scan's ``stopped_at``) or why its loader would stop, and what
    salvage keeps beyond that point."""
    if f.stopped_at is None:
        if f.refusal is not None:
            return {"refused": f.refusal.message, "records_kept": None}
        overflow = [p for p in f.problems if p.kind == "offset_overflow"]
        if overflow:
            return {"refused": overflow[0].message, "records_kept": None}
        return {"unchecked": True, "records_kept": None, "recovery": f.recovery_reason}
    seg = next(s for s in f.segments if s.base == f.stopped_at)
    cut = seg.result.valid_bytes if seg.result is not None else 0
    later = [s for s in f.segments if s.base > f.stopped_at]
    n, first, last = sf.layouts[seg.base].records_from(cut)
    for s in later:
        lay = sf.layouts.get(s.base)
        if lay is None:
            continue
        m, a, b = lay.records_from(0)
        n += m
        first = first if first is not None else a
        last = b if b is not None else last
    return {"file": d + seg.log.name, "position": cut, "segments_deleted": len(later), "records_kept": n,
            "offsets_kept": None if first is None else [first, last]}
