"""The one resolver of command-line paths: which log directories, partition directories and files the paths
a user gives name. Every command finds its partitions here, so that every path form works the same way in
each of them:

==========================  ===========================================================================
a file                      itself (commands that read files: dump-log, verify, export)
a partition directory       itself, with its log directory when its parent is one (its checkpoints)
a log directory             its partition directories, sorted by topic and partition (``LogDir.open``)
a folder                    every log directory and partition directory further down, in name order: a
                            backup folder, one broker's disk with several ``log.dirs``, several brokers'
                            disks; a folder holding loose Kafka files is a partition copied alone and
                            is still walked (not one named as a partition: Kafka reads files only there)
==========================  ===========================================================================

Each directory is taken once, however many of the paths given or links lead to it.

A path that holds nothing of Kafka, or a directory that cannot be listed, becomes a ``Note`` in its place:
each command says in its own report what that means (a finding, or "could not run"). Nothing here reads a
segment; a partition directory is only named (its reader opens it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

from ..errors import CannotRun
from ..layout import PartitionName, parse_partition_dir
from .logdir import LogDir, dir_kind

#: what a path that holds nothing of Kafka is told (a command may use its own words)
NOTHING_HERE = ("no log directory, partition directory or Kafka file here or in the directories below "
                "(segments, indexes, snapshots, checkpoints)")


@dataclass(frozen=True)
class PartitionDir:
    """A partition directory found under a given path."""
    path: Path                 # spelled under the path given (str() shows it as the user typed it)
    logdir: Path | None        # the log directory holding it; None when its parent is no log directory
    given: str                 # the command-line path it was found under

    @property
    def name(self) -> PartitionName | None:
        return parse_partition_dir(self.path.name)

    @property
    def topic_partition(self) -> tuple[str, int] | None:
        """(topic, partition) of a live partition directory (not ``-delete``/``-future``/``-stray``)."""
        n = self.name
        return (n.topic, n.partition) if n is not None and n.state is None else None

    @property
    def lock_root(self) -> Path:
        """The directory whose ``.lock`` a command that changes this partition takes: its log directory as the
        broker sees it (``logdir_of``: the one holding a link to it, a broker holding that lock owns it); or
        the folder holding a partition copied alone, links resolved."""
        return self.logdir if self.logdir is not None else self.path.resolve().parent


@dataclass(frozen=True)
class LogDirFound:
    """A log directory found under a given path, with its partition directories (all of them, or those a
    selection kept)."""
    path: Path
    given: str
    dir: LogDir                         # opened: every partition directory, its files and findings
    partitions: tuple = ()              # PartitionDir, in LogDir order
    selected: bool = False              # True: ``partitions`` is a selection (``Targets.select``)


@dataclass(frozen=True)
class FileGiven:
    """A path that is not a directory (a segment, index, snapshot, checkpoint; or a FIFO, which its reader
    refuses), given on the command line."""
    path: Path
    given: str


@dataclass(frozen=True)
class Note:
    """A path that holds nothing of Kafka (``error`` None) or a directory that cannot be listed."""
    path: Path
    given: str
    error: OSError | None = None

    @property
    def unreadable(self) -> bool:
        return self.error is not None

    @property
    def message(self) -> str:
        if self.error is None:
            return NOTHING_HERE
        return f"cannot read: {self.error.strerror or self.error}"

    def cannot_run(self, what: str = "") -> CannotRun:
        """The error of a command that needs every path it is given (exit status 3)."""
        return CannotRun(f"{shown(self.path, self.given)}: {self.message}{what}")


@dataclass
class Targets:
    """What the paths name, in the order found: each path in turn; under a folder its directories in name
    order; under a log directory its partitions in (topic, partition) order."""
    items: list = field(default_factory=list)      # LogDirFound | PartitionDir | FileGiven | Note
    kinds: dict = field(default_factory=dict)      # given path -> "file", "partition", "logdir", "folder"
    again: set = field(default_factory=set)        # given paths under which a directory taken before was met

    @property
    def partitions(self) -> list[PartitionDir]:
        """Every partition directory, those of log directories included, in the order found."""
        out: list[PartitionDir] = []
        for i in self.items:
            if isinstance(i, PartitionDir):
                out.append(i)
            elif isinstance(i, LogDirFound):
                out.extend(i.partitions)
        return out

    @property
    def logdirs(self) -> list[LogDirFound]:
        return [i for i in self.items if isinstance(i, LogDirFound)]

    @property
    def files(self) -> list[FileGiven]:
        return [i for i in self.items if isinstance(i, FileGiven)]

    @property
    def notes(self) -> list[Note]:
        return [i for i in self.items if isinstance(i, Note)]

    def logdir_paths(self) -> list[Path]:
        """Every log directory named, found or holding a partition directory given, once each, in order."""
        out: list[Path] = []
        for i in self.items:
            p = i.path if isinstance(i, LogDirFound) else i.logdir if isinstance(i, PartitionDir) else None
            if p is not None and p not in out:
                out.append(p)
        return out

    def segment_bytes(self) -> int:
        """The size of every ``.log`` segment named (for a progress bar's total; unreadable ones count 0)."""
        total = sum(max(_log_bytes(p.path), 0) for p in self.partitions)
        for f in self.files:
            try:
                total += f.path.stat().st_size if f.path.name.endswith(".log") and f.path.is_file() else 0
            except OSError:
                pass
        return total

    def replicas(self, topic: str | None = None) -> dict[tuple[str, int], list[PartitionDir]]:
        """{(topic, partition): its live partition directories} (several: copies from several brokers'
        disks), sorted by topic and partition; only ``topic``'s when given."""
        out: dict = {}
        for p in self.partitions:
            tp = p.topic_partition
            if tp is not None and (topic is None or tp[0] == topic):
                out.setdefault(tp, []).append(p)
        return dict(sorted(out.items()))

    def unreadable_notes(self) -> list[str]:
        """A line for each directory that cannot be listed."""
        return [f"{shown(n.path, n.given)}: {n.message}" for n in self.notes if n.unreadable]

    def partition_notes(self) -> list[str]:
        """For commands that read partitions only (the state views): each directory that cannot be listed,
        and each path given under which no partition directory was found, one line each."""
        have = {p.given for p in self.partitions}
        out = []
        for g in self.kinds:
            bad = [n for n in self.notes if n.unreadable and n.given == g]
            out += [f"{shown(n.path, n.given)}: {n.message}" for n in bad]
            if g not in have and not bad and g not in self.again:
                out.append(f"{g}: no Kafka partition directory here")
        return out

    def select(self, topics: Iterable[str] = (), partitions: Iterable[tuple[str, int]] = ()) -> tuple["Targets", list[str]]:
        """Only the live partition directories of ``topics`` and the ``partitions`` named, and the files
        that lie in one; a log directory stays (its own files are still there for a command that reads them)
        with the partitions kept. Also the names asked for that nothing matched ("orders-7", "audit")."""
        topics, wanted = set(topics), set(partitions)

        def keep(tp) -> bool:
            return tp is not None and (tp[0] in topics or tp in wanted)

        items = []
        for i in self.items:
            if isinstance(i, PartitionDir):
                if keep(i.topic_partition):
                    items.append(i)
            elif isinstance(i, LogDirFound):
                items.append(replace(i, partitions=tuple(p for p in i.partitions if keep(p.topic_partition)),
                                     selected=True))
            elif isinstance(i, FileGiven):
                n = parse_partition_dir(i.path.parent.name)
                if n is not None and keep((n.topic, n.partition) if n.state is None else None):
                    items.append(i)
            else:
                items.append(i)
        out = Targets(items, dict(self.kinds), set(self.again))
        found = {p.topic_partition for p in out.partitions}
        found |= {(n.topic, n.partition) for n in (parse_partition_dir(f.path.parent.name) for f in out.files)
                  if n is not None}
        missing = [t for t in sorted(topics) if not any(f[0] == t for f in found)]
        missing += [f"{t}-{p}" for t, p in sorted(wanted - found)]
        return out, missing


def one_copy_each(replicas: dict[tuple[str, int], list[PartitionDir]]) -> tuple[list[PartitionDir], list[str]]:
    """One partition directory per partition, for a command that reads a partition as its leader would (the
    coordinators' internal topics): where several brokers' disks hold copies, the one with the highest high
    watermark in its log directory's replication-offset-checkpoint (the leader's is never below a
    follower's), then the most ``.log`` bytes, then the first found. Also a line per partition read from one
    copy of several, naming it."""
    chosen, notes = [], []
    for (topic, part), copies in replicas.items():
        best = copies[0] if len(copies) == 1 else max(copies, key=lambda c: (_high_watermark(c), _log_bytes(c.path),
                                                                            -copies.index(c)))
        chosen.append(best)
        if len(copies) > 1:
            where = best.logdir if best.logdir is not None else best.path
            notes.append(f"{topic}-{part}: {len(copies)} copies found; read the one in {where} (the highest high "
                         "watermark, then the longest log)")
    return chosen, notes


def _high_watermark(p: PartitionDir) -> int:
    if p.logdir is None:
        return -1
    cp, _problem = LogDir(p.logdir).offset_checkpoint("replication-offset-checkpoint")
    return cp.get(p.topic_partition, -1)


def _log_bytes(directory: Path) -> int:
    try:
        return sum(e.stat().st_size for e in os.scandir(directory) if e.name.endswith(".log") and e.is_file())
    except OSError:
        return -1


def files_in_offset_order(targets: Targets) -> list[tuple[str, list[str], list]]:
    """For each path given, in order: (the path, its files, findings), the files as the user spelled them.
    A file stays as given; a partition directory yields its segments' files in offset order; a log directory
    every partition's (sorted by topic and partition) and then its ``bootstrap.checkpoint`` (not when
    partitions were selected). Findings: what ``LogDir``/``PartitionLog`` found odd, and an ``io_error`` for
    a directory that cannot be read (the others are still expanded)."""
    from .findings import Finding
    from .partition import PartitionLog
    out: dict[str, tuple[str, list[str], list]] = {g: (g, [], []) for g in targets.kinds}

    def partition(p: PartitionDir, files: list, findings: list) -> None:
        try:
            log = PartitionLog.open(p.path)
        except OSError as e:
            findings.append(Finding("io_error", f"cannot read: {e.strerror or e}: nothing in it was read",
                                    shown(p.path, p.given)))
            return
        files.extend(str(f) for f in log.files_in_offset_order())
        findings.extend(log.findings)

    for i in targets.items:
        _g, files, findings = out.setdefault(i.given, (i.given, [], []))
        if isinstance(i, FileGiven):
            files.append(shown(i.path, i.given))
        elif isinstance(i, PartitionDir):
            partition(i, files, findings)
        elif isinstance(i, LogDirFound):
            findings.extend(i.dir.findings)
            for p in i.partitions:
                partition(p, files, findings)
            boot = i.path / "bootstrap.checkpoint"
            if not i.selected and boot.is_file():
                files.append(str(boot))
        elif i.unreadable:
            findings.append(Finding("io_error", f"{i.message}: nothing in it was read", shown(i.path, i.given)))
    return list(out.values())


def logdir_of(partition_dir: Path) -> Path | None:
    """The log directory holding ``partition_dir`` as the broker sees it (None: none does, or it cannot be
    read). A partition directory that is a link lies in the directory holding the link when that is a log
    directory: Kafka's LogManager loads what its log directories list, links followed, and takes that
    directory's lock and checkpoints for it. A link anywhere else (a shortcut to a partition) stands for the
    directory it leads to, whose parent is taken."""
    partition_dir = Path(partition_dir)
    if partition_dir.name in ("", ".", ".."):
        parents = [partition_dir.resolve().parent]
    elif partition_dir.is_symlink():
        parents = [partition_dir.parent, partition_dir.resolve().parent]
    else:
        parents = [partition_dir.parent]
    for parent in parents:
        try:
            if dir_kind(parent) == "logdir":
                return parent
        except OSError:
            pass
    return None


def resolve(paths: Iterable[str | os.PathLike]) -> Targets:
    """What ``paths`` name (see the module's table). Never raises for what it finds: a directory that cannot
    be listed is a ``Note`` in its place and the walk goes on. Each directory is taken once, however many of
    the paths or links lead to it (device and inode, as ``du`` counts): ``ld ld/orders-0``, a log directory
    and a link to it, a folder with a link back up. A path that leads only to directories taken before adds
    nothing (``Targets.again``)."""
    out = Targets()
    seen: set = set()
    for given in paths:
        given = os.fspath(given)
        before = len(out.items)
        root = Path(given)
        try:
            out.kinds[given] = _walk(given, root, out, seen)
        except OSError as e:
            out.kinds.setdefault(given, "folder")
            out.items.append(Note(root, given, e))
            continue
        if len(out.items) == before and given not in out.again:
            out.items.append(Note(root, given))
    return out


def _walk(given: str, root: Path, out: Targets, seen: set) -> str:
    """Add what ``root`` holds to ``out``, depth first in name order (a loop, not recursion: a tree may be
    deeper than Python's stack); returns its kind. OSError when ``root`` itself cannot be listed."""
    if not root.is_dir():               # a file, a FIFO or device given by name: its reader refuses what it cannot read
        out.items.append(FileGiven(root, given))
        return "file"
    kind = "folder"
    stack = [root]
    while stack:
        path = stack.pop()
        try:
            found, below = _visit(given, path, out, seen)
        except OSError as e:
            if path is root:
                raise
            out.items.append(Note(path, given, e))
            continue
        if path is root:
            kind = found
        stack.extend(reversed(below))
    return kind


def _visit(given: str, path: Path, out: Targets, seen: set) -> tuple[str, list[Path]]:
    """Add what the directory ``path`` is to ``out``: (its kind, the directories below it to walk next)."""
    st = path.stat()
    kind = dir_kind(path)
    if (st.st_dev, st.st_ino) in seen:  # a second way to a directory taken before, or a link back up the tree
        out.again.add(given)
        return ("folder" if kind == "container" else kind), []
    seen.add((st.st_dev, st.st_ino))
    if kind == "partition":
        out.items.append(PartitionDir(path, logdir_of(path), given))
        # a folder holding loose Kafka files (a partition copied alone) may hold log directories too: both are
        # read. Below a directory named as a partition, Kafka's loader reads files only (its subdirectories are
        # reported by the partition's reader)
        return kind, ([] if parse_partition_dir(path.name) is not None else _subdirs(path))
    if kind == "logdir":
        d = LogDir.open(path)
        parts = []
        for p in d.partition_dirs:
            key = _identity(p)
            if key is not None and key in seen:
                out.again.add(given)
                continue
            if key is not None:
                seen.add(key)
            parts.append(PartitionDir(p, path, given))
        out.items.append(LogDirFound(path, given, d, tuple(parts)))
        return kind, []
    return "folder", _subdirs(path)


def _subdirs(path: Path) -> list[Path]:
    return sorted(c for c in path.iterdir() if c.is_dir())


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def shown(path: Path, given: str) -> str:
    """``path`` as the user spelled it: the given text itself for the path given."""
    return given if Path(given) == path else str(path)


__all__ = ["FileGiven", "LogDirFound", "NOTHING_HERE", "Note", "PartitionDir", "Targets", "files_in_offset_order",
           "logdir_of", "one_copy_each", "resolve", "shown"]
