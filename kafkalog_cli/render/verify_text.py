"""``verify``'s text report for people: the verdict first, then the findings by partition, within 80 columns.

Layout (the same on a terminal, where it is coloured, and in a pipe or file, where it is plain)::

    verify: FAILED, 1 error and 5 warnings in 55 partitions

    kafka-data/telemetry-0: 1 error, 5 warnings; 2 segments, offsets 0..48496
      error    00000000000000000000.log, position 271, offset 3
               crc_mismatch: Record is corrupt (stored crc = 3472746837,
               computed crc = 4149510385)
      ...

    54 other partitions: no problems (--details lists every partition)
    verified 53 segments, 2.8 MiB, 1,234 batches, 33,203 records in 0.05 s

* Each partition with findings gets one line (its label, counts, segments, log start and end offsets) and
  its findings under it, errors first: file (named in full, relative to the partition directory), byte
  position, offset, then ``kind: message`` wrapped under it. More than ``SAME_KIND_SHOWN`` findings of one
  kind in one file are summarised in one line (``--details`` lists them all).
* Partitions are labelled by their path below the PATH given (with the PATH itself when several were
  given), so two log directories' ``orders-0`` never look alike.
* ``--details`` adds every partition's line and a table of its segments (status, size, batches, records,
  offsets; codecs on the partition's line).
* Words are never cut: a path longer than the line is broken after a ``/``, and only a single name longer
  than the whole line may exceed it. Epoch-millisecond timestamps in messages get their ISO-8601 time.
* The last line holds the totals and the time (``scan`` compares everything above it with ``verify``'s;
  the totals fit one line of 80 columns unless they run into the billions).

``lines()`` builds the report as (text, style) lines; ``write_plain`` and ``write_console`` print them.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from .. import units
from ..engine.verify import SEVERITY_RANK, VerifyReport
from ..layout import parse_partition_dir
from ..names import shown
from .wrap import Line, wrap

WIDTH = 80
SAME_KIND_SHOWN = 3                     # findings of one kind in one file listed before summarising the rest
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
INDENT = "  "
MESSAGE_COLUMN = 11                     # "  warning  " : where a finding's message lines start


class Options(NamedTuple):
    show_info: bool = False
    details: bool = False
    fail_on: str = "error"
    width: int = WIDTH
    given: tuple = ()                    # the PATH arguments as typed (for partition labels)


_TIMESTAMP = re.compile(r"\b(timestamp|timestamps|largestTimestamp|maxTimestamp) (\d{12,13})\b")


def readable(message: str) -> str:
    """Epoch-millisecond timestamps in a message get their ISO-8601 time beside them."""
    return _TIMESTAMP.sub(lambda m: f"{m.group(1)} {m.group(2)} ({units.iso(int(m.group(2)))})", message)


# --- grouping ------------------------------------------------------------------------------------------

def location(u) -> str:
    """The directory a unit belongs to: a partition's or log directory's own path; a file's directory."""
    if u.kind in ("partition", "logdir") or (u.kind == "file" and not Path(u.name).suffix
                                             and any(f.kind == "nothing_verified" for f in u.findings)):
        return u.name
    return str(Path(u.name).parent)


def _label(loc: str, given: tuple) -> str:
    """A directory as the user knows it: its path below the PATH given (PATH/... when several were)."""
    several = len(given) > 1
    for g in given:
        root = str(Path(g))
        if loc == root:
            return root if several else (Path(root).name or root)
        if loc.startswith(root.rstrip("/") + "/"):
            rel = loc[len(root.rstrip("/")) + 1:]
            return f"{root.rstrip('/')}/{rel}" if several else rel
        if Path(root).parent == Path(loc):
            return loc if several else (Path(loc).name or loc)      # a single file's directory
    return loc


class Group:
    """One directory of the report: its units, findings and totals."""

    def __init__(self, loc: str) -> None:
        self.loc = loc
        self.partition = None                 # the partition unit, if the directory is a partition
        self.is_logdir = False
        self.segments: list = []
        self.findings: list = []

    def counts(self) -> Counter:
        return Counter(f.severity for f in self.findings)


def groups(r: VerifyReport) -> list[Group]:
    out: dict[str, Group] = {}
    for u in r.units:
        g = out.get(location(u))
        if g is None:
            g = out[location(u)] = Group(location(u))
        if u.kind == "partition":
            g.partition = u
        elif u.kind == "logdir":
            g.is_logdir = True
        elif u.kind == "segment" and u.stats:
            g.segments.append(u)
        g.findings.extend(u.findings)
    return list(out.values())


# --- the report ----------------------------------------------------------------------------------------

def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 'es' if word.endswith('ch') else 's'}"


def _counts_text(c: Counter, show_info: bool) -> str:
    parts = [_plural(c[s], s) for s in ("error", "warning") if c[s]]
    if show_info and c["info"]:
        parts.append(f"{c['info']:,} info")
    return ", ".join(parts) or "ok"


def verdict(r: VerifyReport, o: Options) -> tuple[str, bool]:
    """The first line, and whether the run fails (some finding at or above --fail-on)."""
    threshold = SEVERITY_RANK[o.fail_on]
    c = Counter(f.severity for f in r.findings())
    failing = any(SEVERITY_RANK[s] >= threshold and n for s, n in c.items())
    problems = [_plural(c[s], s) for s in ("error", "warning") if c[s]]
    what = " and ".join(problems) if problems else "no problems"
    scope = _plural(r.partitions, "partition") if r.partitions else _plural(
        sum(1 for u in r.units if u.kind != "logdir"), "file")
    odd = [Path(u.name).name or u.name for u in r.units if u.kind == "partition" and
           parse_partition_dir(Path(u.name).name) is None]
    if odd:                 # a folder of segments given directly: say what it was taken for
        scope += (f" ({', '.join(odd[:3])}{' ...' if len(odd) > 3 else ''}: "
                  f"{'a directory' if len(odd) == 1 else 'directories'} not named TOPIC-PARTITION, read as "
                  f"{'a partition' if len(odd) == 1 else 'partitions'})")
    text = f"verify: {'FAILED' if failing else 'passed'}, {what} in {scope}"
    nothing = [f for f in r.findings() if f.kind == "nothing_verified"]
    if nothing and not r.partitions and not r.segments and len(nothing) == sum(c.values()):
        dirs = [f.file for f in nothing if f.message.startswith("not a Kafka log directory")]
        files = [f.file for f in nothing if f.file not in dirs]
        said = []
        if dirs:
            said.append(f"{', '.join(dirs)} {'is not a Kafka log directory' if len(dirs) == 1 else 'are not Kafka log directories'}")
        if files:
            said.append(f"{', '.join(files)} {'is not a Kafka file' if len(files) == 1 else 'are not Kafka files'}")
        text = f"verify: FAILED, nothing verified: {' and '.join(said)}"
    if not failing and c["warning"]:
        text += " (--fail-on warning would fail)"
    return text, failing


def _hidden_notes(r: VerifyReport, o: Options) -> str | None:
    n = 0 if o.show_info else sum(1 for f in r.findings() if f.severity == "info")
    return f"{_plural(n, 'informational note')} not shown (--show-info lists them)" if n else None


def _group_line(g: Group, label: str, o: Options) -> str:
    c = g.counts()
    head = f"{label}{' (log directory)' if g.is_logdir else ''}: {_counts_text(c, o.show_info)}"
    if g.partition is not None:
        st = g.partition.stats
        n = st.get("segments", len(g.segments))
        start, end = st.get("log_start_offset"), st.get("log_end_offset")
        if not st:
            head += "; not read"                          # the directory could not be listed
        elif not n:
            head += "; no segment"
        elif end is None:
            head += f"; {_plural(n, 'segment')}, log end unknown (last segment unreadable)"
        elif start is not None and end > start:
            head += f"; {_plural(n, 'segment')}, offsets {start}..{end - 1}"
        else:
            head += f"; {_plural(n, 'segment')}, empty (log end {end})"
    return head


def _where(f, g: Group) -> str:
    """The file of a finding as seen from its directory, then position and offset."""
    loc = Path(g.loc)
    p = Path(f.file) if f.file else None
    if p is None:
        name = "?"
    elif p == loc:
        name = "the log directory" if g.is_logdir else "the partition directory" if g.partition else str(p)
    elif p.parent == loc:
        name = p.name
    elif p.parent == loc.parent:
        name = f"{p.name} (log directory)"
    else:
        name = str(p)
    if f.position is not None:
        name += f", position {f.position}"
    if f.offset is not None:
        name += f", offset {f.offset}"
    return name


def _finding_lines(f, g: Group, o: Options) -> list[Line]:
    sev = f.severity
    first = f"{INDENT}{sev:<{MESSAGE_COLUMN - len(INDENT) - 2}}  "
    out = [Line(x, SEVERITY_STYLE[sev], len(first.rstrip()) if i == 0 else 0)
           for i, x in enumerate(wrap(_where(f, g), o.width, first))]
    out.extend(Line(x) for x in wrap(f"{f.kind}: {readable(f.message)}", o.width, " " * MESSAGE_COLUMN))
    return out


def _findings_of(g: Group, o: Options) -> list[Line]:
    shown = [f for f in g.findings if f.severity != "info" or o.show_info]
    shown.sort(key=lambda f: -SEVERITY_RANK[f.severity])                   # stable: file order within
    out: list[Line] = []
    seen: Counter = Counter()
    total = Counter((f.file, f.kind) for f in shown)
    for f in shown:
        key = (f.file, f.kind)
        seen[key] += 1
        if o.details or total[key] <= SAME_KIND_SHOWN or seen[key] < SAME_KIND_SHOWN:
            out.extend(_finding_lines(f, g, o))
        elif seen[key] == SAME_KIND_SHOWN:
            more = total[key] - SAME_KIND_SHOWN + 1
            name = _where(f._replace(position=None, offset=None), g)
            text = f"... and {more:,} more {f.kind} in {name} (--details lists them)"
            out.extend(Line(x, "dim") for x in wrap(text, o.width, " " * MESSAGE_COLUMN))
    return out


def _segment_table(g: Group, o: Options) -> list[Line]:
    if not g.segments:
        return []
    rows = [("segment", "status", "size", "batches", "records", "offsets")]
    for u in g.segments:
        s = u.stats
        offs = "-" if s.get("first_offset") is None else f"{s['first_offset']}..{s['last_offset']}"
        rows.append((Path(u.name).name, _worst_shown(u, o), units.size(s.get("bytes", 0)),
                     f"{s.get('batches', 0):,}", f"{s.get('records', 0):,}", offs))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    right = (False, False, True, True, True, False)
    total = len(INDENT) + sum(widths) + 2 * 5
    out: list[Line] = []
    for n, r in enumerate(rows):
        style = None if n == 0 or r[1] == "ok" else SEVERITY_STYLE[r[1]]
        if total <= o.width:
            cells = [c.rjust(w) if rj else c.ljust(w) for c, w, rj in zip(r, widths, right)]
            out.append(Line((INDENT + "  ".join(cells)).rstrip(), "bold" if n == 0 else style))
        elif n:                                     # too wide for a table: a few lines per segment
            out.extend(Line(x, style) for x in wrap(
                f"{r[0]}: {r[1]}, {r[2]}, {r[3]} batches, {r[4]} records, offsets {r[5]}", o.width, INDENT,
                INDENT * 3))
    return out


def _worst_shown(u, o: Options) -> str:
    shown = [f.severity for f in u.findings if f.severity != "info" or o.show_info]
    return max(shown, key=SEVERITY_RANK.__getitem__, default="ok")


def _codecs(g: Group) -> str | None:
    """``46 batches (none)``, ``46 batches (none 40, zstd 6)``: how the partition's batches are compressed."""
    c: Counter = Counter()
    for u in g.segments:
        c.update(u.stats.get("codecs", {}))
    if not c:
        return None
    mix = next(iter(c)) if len(c) == 1 else ", ".join(f"{k} {v:,}" for k, v in sorted(c.items()))
    return f"{_plural(sum(c.values()), 'batch')} ({mix})"


def lines(r: VerifyReport, o: Options) -> list[Line]:
    head, failing = verdict(r, o)
    style = "bold red" if failing else "bold yellow" if any(f.severity == "warning" for f in r.findings()) \
        else "bold green"
    out = [Line(x, style) for x in wrap(head, o.width)]
    gs = groups(r)
    labels = {g.loc: _label(g.loc, o.given) for g in gs}
    with_findings = [g for g in gs if any(f.severity != "info" or o.show_info for f in g.findings)]
    for g in with_findings:
        out.append(Line(""))
        out.extend(Line(x, "bold") for x in wrap(_group_line(g, labels[g.loc], o), o.width, "", INDENT * 2))
        out.extend(_findings_of(g, o))
    clean = [g for g in gs if g.partition is not None and g not in with_findings]
    if o.details:
        out.append(Line(""))
        out.append(Line("Every partition and its segments (--details):", "bold"))
        for g in gs:
            if g.partition is None and not g.segments:
                continue
            out.append(Line(""))
            text = _group_line(g, labels[g.loc], o)
            codecs = _codecs(g)
            if codecs:
                text += f"; {codecs}"
            out.extend(Line(x, "bold") for x in wrap(text, o.width, "", INDENT * 2))
            out.extend(_segment_table(g, o))
    elif clean and with_findings:
        text = f"{_plural(len(clean), 'other partition')}: no problems (--details lists every partition)"
        out.append(Line(""))
        out.extend(Line(x, "green") for x in wrap(text, o.width))
    notes = _hidden_notes(r, o)
    if notes and len(out) > 1:
        if out[-1].text:
            out.append(Line(""))
        out.extend(Line(x, "dim") for x in wrap(notes, o.width))
    if len(out) > 1:
        out.append(Line(""))
    totals = (f"verified {_plural(r.segments, 'segment')}, {units.size(r.bytes)}, {_plural(r.batches, 'batch')}, "
              f"{_plural(r.records, 'record')} in {r.seconds:.2f} s")
    out.extend(Line(x, "dim") for x in wrap(totals, o.width))
    return out


def write_plain(out, r: VerifyReport, o: Options) -> None:
    for line in lines(r, o):
        out.write(shown(line.text) + "\n")


def write_console(console, r: VerifyReport, o: Options) -> None:
    """On a terminal: the same lines, coloured (rich), never re-wrapped."""
    from rich.text import Text
    for line in lines(r, o):
        t = Text(shown(line.text))
        if line.style:
            t.stylize(line.style, 0, line.head or len(line.text))
        console.print(t, soft_wrap=True, highlight=False)
