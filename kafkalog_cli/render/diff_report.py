"""Text and JSON lines for ``kafkalog diff``.

Text: one block per compared pair, lines of at most 80 columns, details capped at ``max_listed`` per
kind. JSON lines: one object per difference (``"type":"difference"``) and per discarded record
(``"type":"discarded"``) as the walk finds them, one ``"type":"pair"`` object after each pair, and one
``"type":"summary"`` at the end.
"""
from __future__ import annotations

import json

from ..names import json_safe, json_text
import textwrap
from datetime import datetime, timezone

from ..engine.diff.compare import REASONS, discarded_events

WIDTH = 80


def _ts(ms: int) -> str:
    if ms is None or ms < 0:
        return "no timestamp"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _line(out, text: str, indent: int = 0, break_long: bool = False) -> None:
    """``text`` within 80 columns, continued 2 columns further in; words are never cut (a path longer than a
    line is broken after a ``/``, ``break_long``)."""
    from ..names import shown
    from .wrap import wrap
    pad = " " * indent
    text = shown(text)
    if not break_long:
        for i, chunk in enumerate(textwrap.wrap(text, WIDTH - indent - 2, break_on_hyphens=False,
                                                break_long_words=False) or [""]):
            out.write((pad if i == 0 else pad + "  ") + chunk + "\n")
        return
    for line in wrap(text, WIDTH, pad, pad + "  "):
        while len(line) > WIDTH:               # one name longer than a line: cut, the rest continued
            out.write(line[:WIDTH] + "\n")
            line = pad + "  " + line[WIDTH:]
        out.write(line + "\n")


def _name_replicas(reps) -> None:
    """Short names for the text report (paths can be longer than a line): "broker N" when every replica's
    log directory names a distinct broker id, else "replica A", "replica B", ... Each is shown once
    beside its full path."""
    ids = [r.broker_id for r in reps]
    unique_ids = None not in ids and len(set(ids)) == len(ids)
    for i, r in enumerate(reps):
        r.short = f"broker {r.broker_id}" if unique_ids else f"replica {chr(ord('A') + i % 26)}"


def _n(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}{'es' if what.endswith('ch') else 's'}"


def _range(lo: int, hi: int) -> str:
    return f"offset {lo}" if lo == hi else f"offsets {lo}-{hi}"


def _epochs(r) -> str:
    return " ".join(f"{e}@{s}" for e, s in r.cache.entries) or "none"


def truncation_sentence(d, reps) -> str:
    fol, lead = reps[d.follower], reps[d.leader]
    t = d.truncation
    if d.full_reset:
        return (f"if {fol.who} rejoins with {lead.who} as leader: it truncates to offset {t.offset}, "
                f"below the leader's log start {lead.log_start}, so it then deletes its whole log and "
                f"starts again at {lead.log_start}")
    rule = "by leader epochs" if t.rule == "leader-epoch" else "to its high watermark"
    if d.keep_below >= fol.log_end:
        return (f"if {fol.who} rejoins with {lead.who} as leader: nothing to truncate ({rule}: offset "
                f"{t.offset} >= its log end {fol.log_end}); it fetches from {fol.log_end}")
    return f"if {fol.who} rejoins with {lead.who} as leader: it truncates {rule} to offset {d.keep_below}"


def step_lines(d, reps) -> list[str]:
    out = []
    for s in d.truncation.steps:
        if s.leader_end_offset < 0:
            out.append(f"asks for epoch {s.follower_epoch}: the leader knows no end offset for it "
                       f"-> high watermark {s.truncate_to}")
            continue
        fo = "unknown" if s.follower_end_offset is None else s.follower_end_offset
        out.append(f"asks for epoch {s.follower_epoch}: leader's epoch {s.leader_epoch} ends at "
                   f"{s.leader_end_offset}, the follower's at {fo} -> {s.truncate_to}"
                   + ("" if s.final else " (asks again)"))
    if d.truncation.note:
        out.append(d.truncation.note)
    return out


class TextReport:
    def __init__(self, out, max_listed: int = 10) -> None:
        self.out = out
        self.max = self.listed = max_listed
        self.diffs: list = []
        self.ndiffs = 0
        self.discards: dict = {}

    def sink(self, kind: str, ev: dict) -> None:
        if kind == "discarded_records":
            for one in discarded_events(ev):
                self.sink("discarded", one)
            return
        if kind == "difference":
            self.ndiffs += 1
            if len(self.diffs) < self.max:
                self.diffs.append(ev)
        else:
            lst = self.discards.setdefault(id(ev["direction"]), [])
            if len(lst) < self.max:
                lst.append(ev)

    def group(self, reps) -> None:
        w = self.out
        _line(w, f"{reps[0].name} ({len(reps)} replicas)")
        _name_replicas(reps)
        for r in reps:
            _line(w, f"{r.who} = {r.label}", 2, break_long=True)
            _line(w, f"log start {r.log_start}, log end {r.log_end}, high watermark "
                     f"{r.high_watermark}, leader epochs {_epochs(r)}"
                     + (f", cleaned up to {r.cleaned_end}" if r.cleaned_end is not None else ""), 4)
            for n in r.notes:
                _line(w, f"note: {n}", 4)

    def end_group(self) -> None:
        self.out.write("\n")

    def begin(self, a, b) -> None:
        pass

    def pair(self, res, saved: dict) -> None:
        w = self.out
        a, b = res.replicas
        verdict = "AGREE" if res.agree else ("DIVERGE" if res.diverged else "PROBLEM")
        _line(w, f"{a.who} vs {b.who}: {verdict}", 2)
        if res.topic_ids_differ:
            _line(w, f"topic ids differ ({a.topic_id} and {b.topic_id}): the topic was deleted and "
                     "recreated; these directories hold different topics' data and are not compared", 4)
        else:
            self._content(res)
            quiet = [d for d in res.directions if not d.discards and d.truncation.rule == "leader-epoch"
                     and len(d.truncation.steps) == 1]
            if quiet and len(quiet) == len(res.directions):
                who = "neither" if len(quiet) == 2 else res.replicas[quiet[0].follower].who
                _line(w, f"{who} would truncate when rejoining "
                         f"{'the other' if len(quiet) == 2 else res.replicas[quiet[0].leader].who} as leader", 4)
            else:
                for d in res.directions:
                    self._direction(res, d, saved.get(id(d)))
        for p in res.problems:
            _line(w, f"problem: {p.where()}: {p.message}", 4)
        self.diffs, self.ndiffs, self.discards = [], 0, {}

    def _content(self, res) -> None:
        w = self.out
        a, b = res.replicas
        start, end = res.common_start, res.common_end
        stop = end if res.first_difference is None else min(res.first_difference, end)
        if start >= end:
            _line(w, "no offsets in common", 4)
        elif stop > start:
            _line(w, f"common prefix: {_range(start, stop - 1)} agree ({res.identical_batches} batches "
                     f"identical by CRC, {res.identical_records} records in agreement overall)", 4)
        if res.epoch_only_batches:
            _line(w, f"{res.epoch_only_batches} batches hold the same records written under different "
                     "leader epochs (a producer retry after a leader change)", 4)
        if res.first_difference is not None:
            what = {"content": "different records at the same offset",
                    "missing": "a record missing on one side"}[res.first_difference_what]
            _line(w, f"first difference at offset {res.first_difference}: {what}", 4)
        if res.differing_records:
            _line(w, f"{_n(res.differing_records, 'offset')} with different records on the two sides", 4)
        for ev in self.diffs:
            _line(w, _difference_text(ev, res.replicas), 6)
        if self.ndiffs > len(self.diffs):
            _line(w, f"... and {self.ndiffs - len(self.diffs)} more (--format json lists every one)", 6)
        for (side, reason), n in sorted(res.only.items()):
            lo, hi = res.only_ranges[(side, reason)]
            _line(w, f"only on {res.replicas[side].who}: {_n(n, 'record')} ({_range(lo, hi)}), "
                     f"{REASONS[reason]}", 4)

    def _direction(self, res, d, saved) -> None:
        w = self.out
        reps = res.replicas
        _line(w, truncation_sentence(d, reps), 4)
        for s in step_lines(d, reps):
            _line(w, s, 6)
        if not d.discards:
            return
        parts = [f"{n} {label}" for n, label in ((d.refetched, "identical on the leader (fetched again)"),
                                                  (d.retention, "below the leader's log start"),
                                                  (d.compacted, "compacted away on the leader"),
                                                  (d.lost, "not on the leader: lost without a copy"))
                 if n]
        rng = "" if d.first_offset is None else f" ({_range(d.first_offset, d.last_offset)})"
        _line(w, f"discards {_n(d.records, 'record')} in {_n(d.batches, 'batch')}{rng}: " + ", ".join(parts), 6)
        lst = self.discards.get(id(d), [])
        for ev in lst:
            _line(w, _discard_text(ev), 8)
        if d.records > len(lst):
            _line(w, f"... and {d.records - len(lst)} more (--format json lists every one)", 8)
        if saved:
            _line(w, f"saved to {saved[0]} ({saved[1]} batches, {saved[2]} bytes)", 6)

    def summary(self, results, notes, single, skipped) -> None:
        w = self.out
        for n in notes:
            _line(w, f"note: {n}")
        if single:
            from .repair_text import names_text
            places: dict[str, list] = {}
            for name, who in single:
                places.setdefault(who, []).append(name)
            _line(w, f"{_n(len(single), 'partition')} held in one place only, not compared:")
            for who, names in places.items():
                _line(w, f"{who}: {names_text(names)}", 2, break_long=True)
        for label, why in skipped:
            _line(w, f"skipped {label}: {why}")
        agree = sum(1 for r in results if r.agree)
        _line(w, f"{_n(len(results), 'pair')} compared: {agree} agree, {len(results) - agree} diverge or have "
                 "problems")


def _difference_text(ev: dict, reps) -> str:
    if ev["what"] == "missing":
        return (f"offset {ev['offset']}: only on {reps[ev['on']].who} (leader epoch {ev['leader_epoch']}), "
                "missing on the other")
    e0, e1 = ev["leader_epochs"]
    text = f"offset {ev['offset']}: different {', '.join(ev['fields'])} (leader epoch {e0} vs {e1}"
    if "markers" in ev:
        m = [x or "data" for x in ev["markers"]]
        text += f"; {m[0]} vs {m[1]}"
    return text + ")"


def _discard_text(ev: dict) -> str:
    prod = "" if ev["producer_id"] < 0 else f" producer {ev['producer_id']}/{ev['producer_epoch']} seq {ev['sequence']}"
    kind = f" {ev['marker']} marker" if ev.get("marker") else ""
    return (f"offset {ev['offset']} {_ts(ev['timestamp'])} epoch {ev['partition_leader_epoch']}{prod}{kind}"
            f"{'' if ev['on_leader'] else ' (not on the leader)'}")


class JsonReport:
    listed = None                   # every discarded record is a line

    def __init__(self, out) -> None:
        self.out = out
        self.ctx: dict = {}
        self._heads: dict = {}      # id(direction) -> the start of its discarded lines

    def _write(self, obj: dict) -> None:
        self.out.write(json_text(json.dumps(json_safe(obj), ensure_ascii=False, separators=(",", ":"))) + "\n")

    def group(self, reps) -> None:
        pass

    def end_group(self) -> None:
        pass

    def begin(self, a, b) -> None:
        self.ctx = {"partition": a.name, "replicas": [a.label, b.label], "reps": (a, b)}
        self._heads = {}

    def sink(self, kind: str, ev: dict) -> None:
        reps = self.ctx["reps"]
        o = {"type": kind, "partition": self.ctx["partition"]}
        if kind in ("discarded", "discarded_records"):
            # a line per record, millions of them: the names are escaped once per direction, and the
            # record's own fields are numbers, booleans and Kafka's marker names, which need no escaping
            d = ev["direction"]
            head = self._heads.get(id(d))
            if head is None:
                o.update(type="discarded", follower=reps[d.follower].label, leader=reps[d.leader].label)
                head = self._heads[id(d)] = json_text(json.dumps(json_safe(o), ensure_ascii=False,
                                                                 separators=(",", ":")))[:-1] + ","
            if kind == "discarded":
                self.out.write(head + _fields_json(ev) + "\n")
            else:
                self.out.write(_records_json(head, ev))
            return
        else:
            o["replicas"] = self.ctx["replicas"]
            o.update({k: (reps[v].label if k == "on" else v) for k, v in ev.items()})
        self._write(o)

    def pair(self, res, saved: dict) -> None:
        self._write(pair_object(res, saved))

    def summary(self, results, notes, single, skipped) -> None:
        self._write({"type": "summary", "pairs": len(results), "agree": sum(1 for r in results if r.agree),
                     "notes": notes, "not_compared": [{"partition": n, "replica": who} for n, who in single],
                     "skipped": [{"path": p, "why": why} for p, why in skipped]})


def _fields_json(ev: dict) -> str:
    """A discarded record's fields (without its direction), the members after the opening brace."""
    import orjson
    ev = {k: v for k, v in ev.items() if k != "direction"}
    try:
        return orjson.dumps(ev).decode()[1:]
    except (orjson.JSONEncodeError, TypeError):          # an integer beyond 64 bits
        return json.dumps(ev, separators=(",", ":"))[1:]


def _records_json(head: str, ev: dict) -> str:
    """The lines of a "discarded_records" event, the same as its "discarded" events' (``_fields_json``)."""
    txn = "true" if ev["is_transactional"] else "false"
    mid1 = f'"producer_id":{ev["producer_id"]:d},"producer_epoch":{ev["producer_epoch"]:d},'
    mid2 = (f'"partition_leader_epoch":{ev["partition_leader_epoch"]:d},"is_transactional":{txn},'
            f'"is_control":false,"on_leader":false,"why":{json.dumps(ev["why"])},')
    return "".join([f'{head}"offset":{o},"timestamp":{t},{mid1}"sequence":{q},{mid2}"key_size":{k},'
                    f'"value_size":{v}}}\n' for o, t, q, k, v in ev["rows"]])


def _replica_object(r) -> dict:
    return {"label": r.label, "directory": str(r.directory), "broker_id": r.broker_id, "topic_id": r.topic_id,
            "log_start_offset": r.log_start, "log_end_offset": r.log_end, "high_watermark": r.high_watermark,
            "high_watermark_source": r.hw_source, "cleaner_offset": r.cleaned_end,
            "leader_epochs": [list(e) for e in r.cache.entries], "leader_epochs_source": r.epoch_source,
            "notes": r.notes}


def pair_object(res, saved: dict) -> dict:
    reps = res.replicas
    stop = res.common_end if res.first_difference is None else min(res.first_difference, res.common_end)
    return {
        "type": "pair", "partition": reps[0].name, "agree": res.agree, "diverged": res.diverged,
        "topic_ids_differ": res.topic_ids_differ, "replicas": [_replica_object(r) for r in reps],
        "common_prefix": None if stop <= res.common_start else [res.common_start, stop - 1],
        "first_difference": res.first_difference, "first_difference_kind": res.first_difference_what or None,
        "identical_batches": res.identical_batches, "identical_records": res.identical_records,
        "same_records_other_epoch_batches": res.epoch_only_batches,
        "differing_records": res.differing_records,
        "only": [{"on": reps[s].label, "reason": reason, "records": n, "first_offset": res.only_ranges[(s, reason)][0],
                  "last_offset": res.only_ranges[(s, reason)][1]} for (s, reason), n in sorted(res.only.items())],
        "truncations": [{
            "follower": reps[d.follower].label, "leader": reps[d.leader].label,
            "truncation_offset": d.keep_below, "rule": d.truncation.rule, "full_reset": d.full_reset,
            "steps": [{"follower_epoch": s.follower_epoch, "leader_epoch": s.leader_epoch,
                       "leader_end_offset": s.leader_end_offset, "follower_end_offset": s.follower_end_offset,
                       "truncate_to": s.truncate_to, "final": s.final} for s in d.truncation.steps],
            "discarded_records": d.records, "discarded_batches": d.batches, "refetched": d.refetched,
            "below_leader_log_start": d.retention, "compacted_on_leader": d.compacted, "lost": d.lost,
            "first_offset": d.first_offset, "last_offset": d.last_offset,
            "saved_to": str(saved[id(d)][0]) if id(d) in saved else None,
        } for d in res.directions],
        "problems": [{"kind": p.kind, "message": p.message, "file": p.file, "position": p.position}
                     for p in res.problems],
    }
