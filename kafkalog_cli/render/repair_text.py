"""What the text reports of the commands that change files share (``recover``, ``retain``, ``compact``,
``delete-records``): the shape of ``verify``'s report, within 80 columns.

    retain --dry-run: would delete 7 segments (180.28 KiB) in 3 of 9 partitions (exit 0)
    now 2026-11-27T00:39:32.735Z (the current time); configuration: KRaft metadata:
      snapshot 00000000000000000003-0000000002.checkpoint and log offsets up to 24 ...

    orders-0: 4 of 4 segments go (6.8 KiB); log start offset 0 -> 91
      ...

    7 other partitions: nothing to delete (5), left untouched (2) (--details lists each)

    would delete 5 segments (7.2 KiB) in 2 of 9 partitions; 18 segments read in 0.04 s

* The verdict comes first, in one line (wrapped only when it must be): what happened, or would happen
  with ``--dry-run``, and the exit status it gives.
* The run's context comes once: the time taken as now and the configuration sources, never per partition.
* Each partition with something to say (a change, a problem) gets a block; the others are counted in one
  line by why nothing happens there. ``--details`` shows every partition, with the values it used.
* The totals come last. Every line fits ``WIDTH`` columns: text is wrapped at spaces with an indent, file
  names are relative to the partition (or log) directory, and a single word longer than a line is the
  only thing that may exceed it.

The renderers build ``Line``s (text and a rich style); ``emit`` prints them plain, or coloured on a terminal.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..names import shown
from .wrap import Line, wrap

WIDTH = 80
INDENT = "  "


@dataclass
class Run:
    """The facts of one run that every report states once."""
    command: str                          # "retain", "compact", "delete-records", "recover"
    dry_run: bool
    details: bool = False
    seconds: float = 0.0
    status: int = 0
    now: int | None = None
    now_given: bool = False
    sources: list = field(default_factory=list)     # configuration sources read
    notes: list = field(default_factory=list)       # notes about the run (the resolver's, builtin defaults)
    root: str = ""                                  # the log directory: paths in sources and notes are below it
    width: int = WIDTH
    backup_dir: str | None = None


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def para(text: str, style: str | None = None, first: str = "", rest: str | None = None,
         width: int = WIDTH) -> list[Line]:
    """``text`` wrapped into Lines: the first starting with ``first``, the others with ``rest`` (default: as
    wide as ``first`` plus two spaces, so a continuation is seen as one)."""
    rest = " " * (len(first) + 2) if rest is None else rest
    text = _UNIT.sub("\\1\ue001\\2", shown(text))       # a number and its unit stay on one line
    return [Line(x.replace("\ue001", " "), style) for x in wrap(text, width, first, rest)]


_UNIT = re.compile(r"(\d) (s|ms|min|h|B|KiB|MiB|GiB|TiB|bytes?)\b")


def some_of(k: int, n: int, word: str = "partition") -> str:
    """``3 of 9 partitions``, or ``1 partition`` when there is only one."""
    return plural(n, word) if k == n == 1 else f"{k:,} of {plural(n, word)}"


def verdict_line(run: Run, what: str, problems: str | None = None) -> list[Line]:
    """``COMMAND[ --dry-run]: WHAT[; PROBLEMS] (exit N)``, styled by the status (WHAT says "would" in a dry
    run)."""
    text = f"{run.command}{' --dry-run' if run.dry_run else ''}: {what}"
    if problems:
        text += f"; {problems}"
    text += f" (exit {run.status})"
    style = "bold green" if run.status == 0 else "bold red" if problems else "bold yellow"
    return para(text, style, rest="    ", width=run.width)


def context_lines(run: Run) -> list[Line]:
    """The time taken as now and every configuration source, said once for the whole run."""
    from .. import units
    out: list[Line] = []
    parts = []
    if run.now is not None:
        parts.append(f"now {units.timestamp(run.now)}, {'from --now' if run.now_given else 'the current time'}")
    if run.sources:
        parts.append("configuration: " + "; ".join(run.sources))
    below = (run.root.rstrip("/") + "/") if run.root else None
    if parts:
        text = "; ".join(parts)
        out += para(text.replace(below, "") if below else text, "dim", rest=INDENT, width=run.width)
    for n in run.notes:
        out += para(f"note: {n.replace(below, '') if below else n}", "dim", rest=INDENT, width=run.width)
    return out


def others_line(counts: Counter, run: Run, shown: int) -> list[Line]:
    """One line for the partitions without a block: ``6 other partitions: 4 compacted, nothing below the log
    start offset; 1 left untouched (the KRaft metadata log)`` (``counts``: phrase read after a count ->
    how many)."""
    n = sum(counts.values())
    if not n:
        return []
    why = "; ".join(f"{count:,} {phrase}" for phrase, count in sorted(counts.items(), key=lambda x: (-x[1], x[0])))
    head = plural(n, "other partition") if shown else plural(n, "partition")
    return para(f"{head}: {why} (--details lists each)", "green", rest=INDENT, width=run.width)


def relative(path: str, *bases: str) -> str:
    """``path`` without the first of ``bases`` it lies in (a partition or log directory)."""
    for b in bases:
        if not b:
            continue
        b = b.rstrip("/") + "/"
        if path.startswith(b):
            return path[len(b):]
    return path


def problem_object(p) -> dict:
    """A ``Finding`` that kept a partition from being changed, as the repair reports' JSON gives it."""
    return {"kind": p.kind, "message": p.message, "file": p.file, "position": p.position, "offset": p.offset}


def problem_text(p, partition: str) -> str:
    """A ``Finding`` that kept a partition from being changed, for a report: its file relative to the partition directory ``partition`` (or,
    for a file of the log directory, to that), then position, offset and message."""
    f = str(p.file)
    cut = f.rfind(f"/{partition}/")
    if cut >= 0 or f.startswith(f"{partition}/"):
        f = f[cut + len(partition) + 2:]
    elif f.endswith(f"/{partition}") or f == partition:
        f = "the partition directory"
    elif "/" in f:                             # a file of the log directory (a checkpoint), as verify names it
        f = f.rsplit("/", 1)[1] + " (log directory)"
    where = f + (f" position {p.position}" if p.position is not None else "")
    where += f" (offset {p.offset})" if p.offset is not None else ""
    return f"{where}: {p.message}"


_PARTITION = re.compile(r"^(.*)-(\d+)$")


def names_text(names: list[str], limit: int = 6) -> str:
    """Partition names as people scan them: ``__consumer_offsets-{0..49}, telemetry-0`` (consecutive
    partitions of a topic as ranges; more than ``limit`` topics: the rest counted)."""
    by_topic: dict[str, list[int]] = {}
    odd: list[str] = []
    for name in names:
        m = _PARTITION.match(name)
        if m:
            by_topic.setdefault(m.group(1), []).append(int(m.group(2)))
        else:
            odd.append(name)
    parts = []
    for topic, nums in by_topic.items():
        nums = sorted(set(nums))
        if len(nums) == 1:
            parts.append(f"{topic}-{nums[0]}")
            continue
        runs, start, prev = [], nums[0], nums[0]
        for x in nums[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            runs.append(str(start) if start == prev else f"{start}..{prev}")
            if x is not None:
                start = prev = x
        parts.append(f"{topic}-{{{','.join(runs)}}}")
    parts += odd
    if len(parts) > limit:
        parts = parts[:limit] + [f"{len(parts) - limit} more"]
    return ", ".join(parts)


def emit(out, lines: list[Line]) -> None:
    """Print the report: coloured through rich when ``out`` is a terminal that takes colour, else plain."""
    from .. import ui
    if ui.use_color(out):
        from rich.text import Text
        console = ui.console(out)
        for line in lines:
            t = Text(shown(line.text))
            if line.style:
                t.stylize(line.style, 0, line.head or len(t.plain))
            console.print(t, soft_wrap=True, highlight=False)
        return
    out.write("".join(shown(line.text) + "\n" for line in lines))


def blank(lines: list[Line]) -> None:
    """A blank line between sections (never two, never first)."""
    if lines and lines[-1].text:
        lines.append(Line(""))


class PartitionsProgress:
    """One progress bar over the partitions of a run (stderr, only when it is a terminal): the report
    itself comes at the end, so a long run shows where it is."""

    def __init__(self, total: int, what: str) -> None:
        from .. import ui
        self._progress = None
        self._task = None
        if ui.show_progress() and total > 1:
            import sys

            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
            self._progress = Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.description}"), console=Console(file=sys.stderr),
                                      transient=True)
            self._total = total

    def __enter__(self) -> "PartitionsProgress":
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task("", total=self._total)
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def step(self, name: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=name)
