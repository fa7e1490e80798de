"""What the commands share about their targets: the options that choose partitions (``--topic``,
``--partition``; ``--all`` for the commands that change files), applied to what ``engine/targets.resolve``
found; and, for retain, compact and delete-records, the log directory's lock, each partition's configuration
(``engine/config_resolver``) resolved before the first change, and the leftovers of an interrupted run
finished first."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import click

from ..errors import CannotRun


class Directory(click.Path):
    """An existing directory given on the command line. ``click.Path(file_okay=False)`` refuses a regular file
    only: a FIFO, a device or a socket passed it, and each command then failed in its own way (recover and
    delete-records with a traceback, retain with 'Not a directory (fifo/.lock)')."""

    def __init__(self) -> None:
        super().__init__(exists=True, readable=False, file_okay=False, dir_okay=True)

    def convert(self, value, param, ctx):
        import os
        import stat
        rv = super().convert(value, param, ctx)
        try:
            mode = os.stat(rv).st_mode
        except OSError:
            return rv                       # gone meanwhile: the command reports it as it reads
        if not stat.S_ISDIR(mode):
            what = ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else
                    "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a directory")
            self.fail(f"{click.format_filename(rv)!r} is {what}, not a directory.", param, ctx)
        return rv


def filter_options(f):
    """``--topic`` and ``--partition``: only these partitions of the directories given (readers)."""
    f = click.option("--partition", "partitions", multiple=True, metavar="TOPIC-N",
                     help="Only this partition of the directories given (repeatable).")(f)
    f = click.option("--topic", "topics", multiple=True, metavar="TOPIC",
                     help="Only the partitions of this topic in the directories given (repeatable).")(f)
    return f


def selected(targets, topics=(), partitions=()):
    """``targets`` narrowed to ``--topic``/``--partition`` (unchanged without them); a usage error naming
    what nothing under the paths matched."""
    if not topics and not partitions:
        return targets
    from ..layout import parse_partition_spec
    try:
        wanted = {parse_partition_spec(p) for p in partitions}
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    out, missing = targets.select(topics, wanted)
    if missing:
        raise click.UsageError(f"no such partition or topic under {', '.join(targets.kinds)}: {', '.join(missing)}")
    return out


def selection_options(f):
    """``--all``, ``--topic`` and ``--partition``: which partitions of a log directory."""
    f = click.option("--partition", "partitions", multiple=True, metavar="TOPIC-N",
                     help="Only this partition of a log directory (repeatable).")(f)
    f = click.option("--topic", "topics", multiple=True, metavar="TOPIC",
                     help="Every partition of this topic in a log directory (repeatable).")(f)
    f = click.option("--all", "all_", is_flag=True,
                     help="Every partition of the log directory, each by its topic's own configuration.")(f)
    return f


def config_options(remote: bool):
    """The sources of each topic's configuration, and ``--config``."""
    def deco(f):
        if remote:
            f = click.option("--remote-log-end-offset", "remote_offsets", multiple=True, metavar="TOPIC-N:OFFSET",
                             help="The highest offset of TOPIC-N known to be in remote storage (tiered topics; "
                                  "-1: nothing uploaded). Default: from __remote_log_metadata on this disk.")(f)
        f = click.option("--config", "config_flags", multiple=True, metavar="[TOPIC:]KEY=VALUE",
                         help="A topic configuration value for every topic, or for TOPIC only (repeatable); "
                              "overrides every other source.")(f)
        f = click.option("--topic-configs", type=click.Path(exists=True), default=None, metavar="FILE|DIR",
                         help="ZooKeeper-era topic overrides: kafka-configs.sh --describe output, or a directory "
                              "of <topic>.properties files.")(f)
        f = click.option("--server-properties", type=click.Path(exists=True, dir_okay=False), default=None,
                         metavar="FILE", help="The broker's server.properties (its defaults for every topic).")(f)
        return f
    return deco


#: how the commands that change files take their paths (their --help says it in these words)
ONE_LOG_DIR = ("recover, retain and compact work on one log directory at a time (they take its lock and read its "
               "configuration)")


def writer_targets(paths, command: str, *, partition_ok: bool = False, folders: bool = False):
    """What a command that changes files is given, resolved (``engine/targets``): each path must be a log
    directory (or, with ``partition_ok``, a partition directory); with ``folders`` a folder stands for the
    log directories further down (delete-records: the log.dirs of one broker), otherwise a folder holding
    log directories is a usage error naming each one to give instead. A path that cannot be read: nothing
    can be done there, CannotRun (exit status 3); one holding nothing of Kafka: a usage error."""
    from ..engine.targets import resolve
    targets = resolve([str(p) for p in paths])
    for n in targets.notes:
        if n.unreadable:
            raise n.cannot_run("; nothing was changed")
        raise click.UsageError(f"{n.given} is not a Kafka log directory: no meta.properties, checkpoint file or "
                               "topic-partition directory in it or below")
    for given, kind in targets.kinds.items():
        under = [i for i in targets.items if i.given == given]
        if kind == "partition" and not partition_ok:
            p = under[0].path
            choose = f"--offset {p.name}=OFFSET" if command == "delete-records" else f"--partition {p.name}"
            raise click.UsageError(f"{given} is a partition directory; give its log directory and select the "
                                   f"partition: kafkalog {command} {Path(under[0].lock_root).resolve()} {choose}")
        if kind == "folder" and not folders:
            found = [str(i.path) for i in under]
            what = ("log directory" if len(found) == 1 else "log directories") if all(
                i.__class__.__name__ == "LogDirFound" for i in under) else ("directory" if len(found) == 1 else
                                                                            "directories")
            raise click.UsageError(
                f"{given} is a folder holding {len(found)} {what} further down, not a log directory; "
                f"{ONE_LOG_DIR}: give {'it' if len(found) == 1 else 'one'}:\n"
                + "\n".join(f"  kafkalog {command} [OPTIONS] {f}" for f in found))
        if kind == "folder" and any(i.__class__.__name__ == "PartitionDir" for i in under):
            p = next(i for i in under if i.__class__.__name__ == "PartitionDir")
            raise click.UsageError(f"{p.path} is a partition directory outside a log directory; give log "
                                   "directories")
    return targets


def partition_dirs(path: Path, wanted: set, topics=(), all_: bool = False,
                   command: str = "retain") -> tuple[list[Path], Path]:
    """(partition directories to work on, directory whose .lock to take) for retain and compact. A log
    directory needs a choice: ``--all``, ``--topic`` or ``--partition`` (``wanted``: {(topic, partition)})."""
    targets = writer_targets([path], command, partition_ok=True)
    if targets.kinds[str(path)] == "partition":
        if wanted or topics or all_:
            raise click.UsageError("--all, --topic and --partition choose partitions of a log directory; "
                                   f"{path} is one partition")
        p = targets.partitions[0]
        return [p.path], p.lock_root
    if not (wanted or topics or all_):
        raise click.UsageError("PATH is a log directory: choose partitions with --all, --topic TOPIC or "
                               "--partition TOPIC-N")
    if not all_:
        targets, missing = targets.select(topics, wanted)
        if missing:
            raise click.UsageError(f"no such partition or topic in {path}: {', '.join(missing)}")
    return [p.path for p in targets.partitions if p.topic_partition is not None], path


def kraft_untouched(dirs: list[Path]) -> dict:
    """{directory: why} for the KRaft metadata log among ``dirs``: not a LogManager log (``KafkaMetadataLog``
    deletes by snapshots), so neither retention nor the log cleaner ever touches it."""
    from ..layout import METADATA_PARTITION
    return {d: "the KRaft metadata log: the Raft layer keeps it (snapshots), Kafka's retention and log cleaner "
               "never touch it" for d in dirs if d.name == METADATA_PARTITION}


def check_topic_flags(config_flags, remote_offsets, dirs: list[Path]) -> None:
    """A topic named by ``--config TOPIC:...`` or ``--remote-log-end-offset`` must be among the partitions of
    this run (a mistyped name would otherwise be ignored without a word)."""
    from ..engine.config_resolver import parse_config_flag
    from ..engine.remote_storage import parse_remote_offset_override
    from ..layout import parse_partition_dir
    here = {(n.topic, n.partition) for n in (parse_partition_dir(d.name) for d in dirs) if n is not None}
    topics = {t for t, _p in here}
    for spec in config_flags:
        try:
            topic, _k, _v = parse_config_flag(spec)
        except ValueError:
            continue                   # the resolver reports it
        if topic is not None and topic not in topics:
            raise click.UsageError(f"--config {spec}: no partition of topic {topic} is in this run")
    for spec in remote_offsets:
        try:
            topic, part, _o = parse_remote_offset_override(spec)
        except ValueError:
            continue
        if (topic, part) not in here:
            raise click.UsageError(f"--remote-log-end-offset {spec}: partition {topic}-{part} is not in this run")


@dataclass
class Target:
    """One partition to work on, after what an interrupted run left in it was finished."""
    directory: Path
    state: object | None = None                  # PartitionState; None when it could not be read (see note)
    finished: list = field(default_factory=list)  # what was completed first (--dry-run: what would be)
    backups: list = field(default_factory=list)   # files moved into the backup directory meanwhile
    note: str | None = None                       # why there is no state
    untouched: str | None = None                  # why the partition is left exactly as it is (nothing read)
    empty_at: int | None = None                   # no segment file: the log start the broker creates one at


def backup_dir(backup: str | None, lock_root: Path) -> Path | None:
    """``--backup-dir`` checked against the log directory (device and inode, so aliases are caught)."""
    if backup is None:
        return None
    from .. import fileops
    why = fileops.check_backup_dir(backup, lock_root)
    if why:
        raise click.UsageError(f"--backup-dir: {why}")
    return Path(backup)


@contextmanager
def holding_lock(lock_root: Path, dry_run: bool):
    """The log directory's ``.lock`` for the whole run (shared for ``--dry-run``); CannotRun when a broker
    (or another kafkalog) holds it."""
    from .. import fileops
    try:
        lock = fileops.lock_dir(lock_root, shared=dry_run)
    except fileops.LockHeld:
        raise CannotRun(f"{lock_root}: the log directory is locked by another process (a running broker?); "
                        "stop it first") from None
    with lock:
        yield


def open_configs(lock_root: Path, dirs: list[Path], *, server_properties=None, topic_configs=None,
                 config_flags=(), remote_offsets=(), shorthands=()):
    """Every partition's configuration, resolved before the first change: (resolver, {directory:
    PartitionConfig}). ``shorthands``: (key, value, option text) of options that stand for ``--config
    KEY=VALUE``. A bad value from a flag is a usage error (exit 2); from the broker's files, the metadata or
    an unreadable source, CannotRun (exit 3). Either way nothing has changed yet."""
    from kafkalog_formats.errors import FormatError

    from ..engine.config_resolver import ConfigResolver, parse_config_flag
    from ..engine.metadata_replay import MetadataError
    from ..engine.remote_storage import RemoteMetadataError
    from ..engine.topic_config import ConfigError, Source
    flags = list(config_flags)
    for spec in flags:
        try:
            topic, key, _v = parse_config_flag(spec)
        except ValueError:
            continue                                  # reported by the resolver, with the others
        clash = next((opt for k, _v, opt in shorthands if k == key and topic is None), None)
        if clash:
            raise click.UsageError(f"{clash} and --config {spec} both set {key} for every topic: give one")
    flags = [f"{k}={v}" for k, v, _o in shorthands] + flags
    try:
        r = ConfigResolver.open(lock_root, server_properties=server_properties, topic_configs=topic_configs,
                                config_flags=flags, remote_offsets=remote_offsets)
        for key, value, option in shorthands:         # the source as the user typed it
            r.all_flags[key] = (value, Source("flag", option))
        pcs = {pc.directory: pc for pc in r.resolve_all(dirs)}
    except ConfigError as e:
        from_flags = all(isinstance(p.source, str) or getattr(p.source, "kind", "") == "flag" for p in e.problems)
        text = "\n".join(str(p) for p in e.problems)
        if from_flags:
            raise click.UsageError(text) from None
        raise CannotRun(f"a topic configuration Kafka would reject (nothing was changed):\n{text}") from None
    except (MetadataError, RemoteMetadataError) as e:
        raise CannotRun(f"cannot read the topic configuration from the metadata (nothing was changed): {e}") from None
    except FormatError as e:
        raise CannotRun(f"cannot read the topic configuration (nothing was changed): "
                        f"{e.file + ': ' if e.file else ''}{e.reason}") from None
    except OSError as e:
        raise CannotRun(f"cannot read the topic configuration (nothing was changed): {e.filename or ''}: "
                        f"{e.strerror or e}") from None
    return r, pcs


def targets(dirs: list[Path], dry_run: bool, backup: Path | None = None, untouched: dict | None = None):
    """A ``Target`` per partition (call inside ``holding_lock``). Files an interrupted run left (``.cleaned``,
    ``.swap``, ``.deleted``, temporary files) are first completed or rolled back exactly as ``kafkalog
    recover`` and Kafka's loader do (removed files go to ``backup``); with ``--dry-run`` they are listed, and a
    pending swap leaves the partition unplanned (its segments change once it is completed). A directory in
    ``untouched`` ({directory: why}) is yielded as it is: nothing of it is read, finished or changed."""
    import sys

    from ..engine.lookup import LookupFailed
    from ..engine.partition_state import partition_state
    from ..repair import interrupted
    for d in dirs:
        t = Target(d)
        if untouched and d in untouched:
            t.untouched = untouched[d]
            yield t
            continue
        actions, swapping = interrupted.plan(d)
        t.finished = [interrupted.describe(a) for a in actions]
        if actions and dry_run and swapping:
            t.note = ("files of an interrupted operation are present: a real run first completes the "
                      "interrupted swap (as kafkalog recover does), then plans this partition")
            yield t
            continue
        if actions and not dry_run:
            t.backups = interrupted.finish(d, actions, backup)
        try:
            t.state = partition_state(d)
        except LookupFailed as e:
            if getattr(e, "kind", None) == "no_segments" and not t.finished:
                t.untouched = ("no segment file: nothing to do (Kafka creates an empty segment at the log start "
                               "offset when it loads the partition)")
                t.empty_at = _empty_log_start(d)
            elif not t.finished:
                from ..names import shown
                sys.stderr.write(shown(f"kafkalog: {d}: {e}") + "\n")
                continue
            else:
                t.note = str(e)
        yield t


def _empty_log_start(d: Path) -> int:
    """Where the broker creates the empty segment of a partition directory holding none: at its
    log-start-offset-checkpoint entry, else 0 (``LogLoader.recoverLog``, 2.x-4.x)."""
    from ..engine.logdir import LogDir
    from ..layout import parse_partition_dir
    n = parse_partition_dir(d.name)
    if n is None:
        return 0
    values, _problem = LogDir(d.resolve().parent).offset_checkpoint("log-start-offset-checkpoint")
    return values.get((n.topic, n.partition), 0)


def stopped_message(command: str, directory: Path | None, lock_root: Path, e: OSError, backup: Path | None,
                    dry_run: bool = False) -> str:
    """What to tell a user whose run stopped on an error of the operating system (a full disk, most often):
    which file, which partition, the remedy that fits the error, and, for a run that changes files, what
    state the partition is in and what to run next. A dry run changed nothing: it says so. The message of a
    ``CannotRun`` (``app.main`` writes it after "kafkalog: ")."""
    what = e.strerror or str(e)
    where = f" ({e.filename})" if e.filename else ""
    part = f"{directory.name}: " if directory is not None else ""
    from ..fileops import remedy as remedy_of
    remedy = remedy_of(e.errno)
    if dry_run:
        return (f"{part}{what}{where}.\nkafkalog: {command} --dry-run stopped; it changed nothing: "
                f"{remedy}, then run it again.")
    kept = f" Every file removed so far is in {backup}." if backup is not None else ""
    return (f"{part}{what}{where}.\nkafkalog: {command} stopped; the partition may hold files of the "
            f"interrupted operation, which lose nothing: {remedy}, then run the same kafkalog {command} again, "
            f"which first completes or rolls them back as kafkalog recover {lock_root} does.{kept}")


def policy_settings(pcs: dict, untouched: dict, settings_of) -> dict:
    """{partition directory: ``settings_of(its config)``} for the partitions whose topic the command may
    change; each other one goes into ``untouched`` with the reason (``topic_policy.untouchable``)."""
    from ..repair.topic_policy import untouchable
    settings = {}
    for d, pc in pcs.items():
        why = untouchable(pc)
        if why:
            untouched[d] = why
        else:
            settings[d] = settings_of(pc)
    return settings


class WriterRun:
    """What ``retain`` and ``compact`` do around their own per-partition work, in the same words: the check
    that the report has a reader before the first change, a progress bar over the partitions, a report per
    ``Target`` (a JSON line each as it comes, with ``--format json``), exit status 1 once any report has a
    problem, and the one message and exit status 3 of a run that stopped (``failed``), naming the partition
    it was working on."""

    def __init__(self, command: str, lock_root: Path, backup: Path | None, dry_run: bool) -> None:
        from ..status import Status
        self.command, self.lock_root, self.backup, self.dry_run = command, lock_root, backup, dry_run
        self.current: Path | None = None      # the partition being worked on (named if the run stops)
        self.reports: list = []
        self.status = Status.OK
        self._reader_checked = False

    def check_reader(self) -> None:
        """Once per run, before the first change: a report nobody reads never comes with changes (a dry run
        changes nothing, so it is not checked)."""
        from ..output import check_reader
        if not self.dry_run and not self._reader_checked:
            check_reader()
        self._reader_checked = True

    def run(self, dirs: list[Path], untouched: dict, one, on_report=None) -> None:
        """``one(target)`` -> its report (with a ``problem`` attribute); ``on_report(report)`` as each comes.
        A command whose partitions lie in several log directories calls it once per directory, setting
        ``lock_root`` and ``backup`` to that directory's before each call."""
        from ..render import repair_text
        from ..status import Status
        self.check_reader()
        with repair_text.PartitionsProgress(len(dirs), self.command) as progress:
            for t in targets(dirs, self.dry_run, self.backup, untouched):
                self.current = t.directory
                progress.step(t.directory.name)
                rep = one(t)
                self.reports.append(rep)
                if on_report is not None:
                    on_report(rep)
                if rep.problem:
                    self.status = Status.PROBLEMS
                self.current = None

    def failed(self, e: OSError) -> CannotRun:
        """A run stopped by an error of the operating system: the error to raise, naming the partition it was
        working on and what to run next (``app.main`` writes it on stderr after the report so far, exit
        status 3). A broken pipe is not this: it ends quietly in ``app.main``."""
        return CannotRun(stopped_message(self.command, self.current, self.lock_root, e, self.backup, self.dry_run))
