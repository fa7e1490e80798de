"""``kafkalog compact``: one pass of Kafka's log cleaner over a partition, offline and crash-safe."""
from __future__ import annotations

import click

from ._decode import decode_limit_option
from ._times import Time
from ._targets import Directory, config_options, selection_options

HELP = """Run one pass of Kafka's log cleaner (compaction) on a partition, or on the partitions of a log
directory chosen by --all, --topic or --partition, offline. PATH is a partition directory or one log
directory (compact takes its lock); a folder holding log directories (one broker's disk with several
log.dirs, several brokers' disks) is refused with a command line for each.

Each partition gets its topic's own configuration, as the broker resolves it: Kafka's defaults, the
broker's server.properties (--server-properties), its dynamic configuration and the topic's overrides
from the KRaft metadata in the log directory (or, for a ZooKeeper-era broker, --topic-configs), then
--config [TOPIC:]KEY=VALUE. Only topics whose cleanup.policy contains compact are cleaned, as Kafka's
cleaner does (the internal topics are, even without metadata); give --config TOPIC:cleanup.policy=compact
to clean another. --min-cleanable-ratio, --delete-retention-ms, --min-compaction-lag-ms,
--max-compaction-lag-ms, --segment-bytes, --segment-index-bytes and --index-interval-bytes stand for
--config min.cleanable.dirty.ratio=..., delete.retention.ms=... and so on, for every topic.
__cluster_metadata is never touched, nor a directory the metadata says belongs to a deleted topic.

Kafka's LogCleaner, rule for rule: the dirty range starts at cleaner-offset-checkpoint (reset to the log
start when outside the log) and stops at the first uncleanable offset (the active segment, the last
stable offset below the high watermark, min.compaction.lag.ms); the partition is cleaned only when its
dirty ratio exceeds min.cleanable.dirty.ratio (or max.compaction.lag.ms forces it; --force always). The
offset map (key -> latest offset) is Kafka's: log.cleaner.dedupe.buffer.size (--dedupe-buffer-bytes) /
log.cleaner.threads bytes, 24 a key, filled to the load factor, so a huge log is cleaned in several
passes. Kept: the latest record of every key; tombstones until their delete horizon (set in the batch
header on the first pass, delete.retention.ms later); the last batch of each active producer and of the
pass, even empty. Dropped: keyless records, aborted transactional data, and transaction markers once
their transaction is gone and the horizon passed. Offsets never change; unchanged batches are copied
byte for byte; rewritten ones keep codec, base offset, last offset, producer fields and leader epoch.

Stricter than the broker, which never checks CRCs (it would copy a damaged record into a new batch
with a fresh CRC): before the first change every batch that may be rewritten is checked -- CRC, then
every record, decompression bounded -- and so are the checkpoints, .txnindex files and the index entry
the pass starts from. A partition with a problem is skipped and nothing of it changes; the problem
names file, position and offset. --dry-run shows exactly the same.

The report leads with the verdict (what was cleaned, or with --dry-run would be, and the exit status),
says once which configuration sources were read, shows each partition cleaned or with a problem (dirty
range and ratio, the offset map, each group), counts the others in one line by why nothing is cleaned
there and ends with the totals, within 80 columns. --details (-v) shows every partition with every value
used and its source.

Each group of segments is written as .cleaned files, renamed to .swap, the old segments retired,
the swap renamed into place (the broker's protocol); mtimes are kept as Kafka keeps them;
cleaner-offset-checkpoint is updated atomically. --backup-dir keeps every replaced file and the old
checkpoint (linked or copied there before the first rename). Leftovers of an interrupted run are
completed or rolled back first, as kafkalog recover does.

\b
Examples:
  kafkalog compact --dry-run /var/lib/kafka/data/__consumer_offsets-12
  kafkalog compact --topic __consumer_offsets /var/lib/kafka/data
  kafkalog compact --all --server-properties \\
    /etc/kafka/server.properties /var/lib/kafka/data
  kafkalog compact --force --now 2024-03-01T00:00:00Z \\
    --config cleanup.policy=compact compacted-0
  kafkalog compact --all --backup-dir /root/backup /var/lib/kafka/data

\b
Exit status:
  0  the job ran as configured (segments cleaned or nothing to clean,
     topics that are not compacted left alone; with --dry-run: would run)
  1  a problem was found: a partition skipped (damage, unknown high
     watermark, a deleted topic's directory), leftovers of an interrupted
     run finished
  2  usage error or a --config value Kafka would reject
  3  could not run (lock held, unreadable configuration or metadata, I/O
     error such as a full disk: the message names the file and what to
     run)
"""

#: (option, topic key): the per-setting options, shorthands for --config KEY=VALUE for every topic.
SHORTHANDS = (("min_cleanable_ratio", "min.cleanable.dirty.ratio"), ("delete_retention_ms", "delete.retention.ms"),
              ("min_compaction_lag_ms", "min.compaction.lag.ms"), ("max_compaction_lag_ms", "max.compaction.lag.ms"),
              ("segment_bytes", "segment.bytes"), ("segment_index_bytes", "segment.index.bytes"),
              ("index_interval_bytes", "index.interval.bytes"))


def _shorthand(name: str, key: str, kind, **kw):
    return click.option(f"--{name.replace('_', '-')}", name, type=kind, default=None,
                        help=f"--config {key}=VALUE for every topic.", **kw)


@click.command("compact", help=HELP, short_help="Compact a partition with Kafka's log cleaner rules.")
@click.argument("path", type=Directory())
@selection_options
@config_options(remote=False)
@_shorthand("min_cleanable_ratio", "min.cleanable.dirty.ratio", click.FloatRange(0, 1), metavar="RATIO")
@click.option("--force", is_flag=True, help="Clean even when the dirty ratio is below min.cleanable.dirty.ratio.")
@_shorthand("delete_retention_ms", "delete.retention.ms", click.IntRange(min=0), metavar="MS")
@_shorthand("min_compaction_lag_ms", "min.compaction.lag.ms", click.IntRange(min=0), metavar="MS")
@_shorthand("max_compaction_lag_ms", "max.compaction.lag.ms", click.IntRange(min=1), metavar="MS")
@_shorthand("segment_bytes", "segment.bytes", click.IntRange(min=14), metavar="BYTES")
@_shorthand("segment_index_bytes", "segment.index.bytes", click.IntRange(min=4), metavar="BYTES")
@_shorthand("index_interval_bytes", "index.interval.bytes", click.IntRange(min=0), metavar="BYTES")
@click.option("--dedupe-buffer-bytes", type=click.IntRange(min=24), default=None, metavar="BYTES",
              help="log.cleaner.dedupe.buffer.size: the cleaners' offset map memory. A pass uses one thread's "
                   "share, this / log.cleaner.threads (at most 2 GiB): 24 bytes a slot, filled to "
                   "log.cleaner.io.buffer.load.factor, as Kafka's cleaner (default 128 MiB: about 5 M keys; a broker "
                   "takes no less than 1 MiB per thread, kafkalog down to two slots).")
@click.option("--high-watermark", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Use this high watermark instead of replication-offset-checkpoint's (one partition only).")
@click.option("--now", type=Time(), default=None, metavar="TIME", help="The current time (epoch ms or ISO-8601).")
@click.option("--dry-run", is_flag=True, help="Print the dirty ratio, groups and what each would drop (--details: "
                                              "every value used); change nothing.")
@click.option("--backup-dir", "backup_dir_", type=click.Path(file_okay=False, dir_okay=True), default=None,
              metavar="DIR", help="Keep every file compact removes or overwrites here (outside the log directory; "
                                  "created if needed): old segments as <partition>/<file>, the checkpoint as is.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Report format: text, or JSON lines (a partition object each, then a summary).")
@click.option("--details", "-v", is_flag=True,
              help="Text: every partition, with the values it used and where each came from.")
@decode_limit_option
def command(path, all_, topics, partitions, server_properties, topic_configs, config_flags, force, dedupe_buffer_bytes,
            high_watermark, now, dry_run, backup_dir_, fmt, details, **shorthand_values) -> int:
    import time
    from pathlib import Path

    from ._times import now_or_current
    from ..layout import parse_partition_spec
    from ..output import stdout, work_done
    from ..render import compact_report, repair_text
    from ..repair.topic_policy import cleaning_settings, offset_map_memory, offset_map_problem, untouchable
    from ._targets import (WriterRun, backup_dir, check_topic_flags, holding_lock, kraft_untouched,
                           open_configs, partition_dirs)

    started = time.monotonic()
    now_ms = now_or_current(now)
    try:
        wanted = {parse_partition_spec(p) for p in partitions}
    except ValueError as e:
        raise click.UsageError(str(e))
    dirs, lock_root = partition_dirs(Path(path), wanted, topics, all_, "compact")
    untouched = kraft_untouched(dirs)
    if high_watermark is not None and len(dirs) - len(untouched) != 1:
        raise click.UsageError("--high-watermark applies to one partition")
    check_topic_flags(config_flags, (), dirs)
    shorthands = [(key, _text(shorthand_values[name]), f"--{name.replace('_', '-')} {_text(shorthand_values[name])}")
                  for name, key in SHORTHANDS if shorthand_values[name] is not None]
    backup = backup_dir(backup_dir_, lock_root)
    run = WriterRun("compact", lock_root, backup, dry_run)
    out = stdout()
    try:
        with holding_lock(lock_root, dry_run):
            resolver, pcs = open_configs(lock_root, [d for d in dirs if d not in untouched],
                                         server_properties=server_properties, topic_configs=topic_configs,
                                         config_flags=config_flags, shorthands=shorthands)
            cleaner = resolver.broker.setting("log.cleaner.enable")
            if cleaner.value is False:
                # LogManager.startup creates the LogCleaner only when log.cleaner.enable (0.9-4.0)
                resolver.notes.append(f"log.cleaner.enable=false ({cleaner.source}): this broker never "
                                      "compacts; kafkalog compacts as you asked (a broker with this setting "
                                      "will not keep these partitions compacted)")
            why = offset_map_problem(*offset_map_memory(resolver.broker, dedupe_buffer_bytes)[:2])
            if why is not None:
                raise click.UsageError(why)
            settings = {}
            for d, pc in pcs.items():
                settings[d] = cleaning_settings(pc, resolver.broker, dedupe_buffer_bytes)
                why = untouchable(pc) or settings[d].why_not
                if why:
                    untouched[d] = why
            run.run(dirs, untouched,
                    lambda t: _compact_partition(t, pcs.get(t.directory), settings.get(t.directory), now_ms,
                                                 high_watermark, force, dry_run, backup),
                    (lambda rep: compact_report.write_json(out, rep)) if fmt == "json" else None)
            if not dry_run:
                work_done(run.status)       # a Ctrl-C from here on stops only the report
            if fmt == "json":
                compact_report.write_summary(out, run.reports, now_ms, now is not None, resolver, dry_run,
                                             int(run.status))
            else:
                screen = repair_text.Run("compact", dry_run, details, time.monotonic() - started, int(run.status),
                                         now_ms, now is not None, list(resolver.sources), list(resolver.notes),
                                         root=str(lock_root))
                repair_text.emit(out, compact_report.text_lines(run.reports, screen))
    except BrokenPipeError:
        raise                   # the reader of the report went away (| head): app.main ends quietly with 141
    except OSError as e:
        raise run.failed(e) from e
    return run.status


def _compact_partition(t, pc, cs, now_ms: int, high_watermark, force: bool, dry_run: bool, backup):
    """One partition's cleaning pass (``LogCleaner``'s ``cleanSegments`` over its dirty part), or the report
    of a partition left alone or skipped."""
    from ..repair.compact_exec import PassReport, run_pass
    name = f"{pc.topic}-{pc.partition}" if pc is not None else t.directory.name
    if t.untouched is not None:
        rep = PassReport(name, dry_run=dry_run, untouched=t.untouched)
    elif t.state is None:
        rep = PassReport(name, dry_run=dry_run, skipped=t.note, blocked=True)
    else:
        rep = run_pass(t.state, cs.config, now_ms, high_watermark=high_watermark, force=force,
                       dry_run=dry_run, backup=backup, sole_replica=bool(pc and pc.sole_replica))
    rep.topic_status = pc.status if pc is not None else "live"
    rep.settings = cs
    rep.finished, rep.backups = t.finished, t.backups + rep.backups
    return rep


def _text(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)
