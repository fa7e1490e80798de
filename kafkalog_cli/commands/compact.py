"""``kafkalog compact``: one pass of Kafka's log cleaner over a partition, offline and crash-safe."""
from __future__ import annotations

import sys

import click

from ..status import Status
from ._decode import decode_limit_option

HELP = """Run one pass of Kafka's log cleaner (compaction) on a partition, or on the partitions of a log
directory chosen by --topic or --all, offline.

Kafka's LogCleaner, rule for rule: the dirty range starts at cleaner-offset-checkpoint (reset to the
log start when outside the log) and stops at the first uncleanable offset (the active segment, the last
stable offset below the high watermark, --min-compaction-lag-ms); the partition is cleaned only when
its dirty ratio exceeds --min-cleanable-ratio (or --max-compaction-lag-ms forces it; --force always).
The offset map (key -> latest offset) holds what --dedupe-buffer-bytes allows, so a huge log is
cleaned in several passes. Kept: the latest record of every key; tombstones until their delete
horizon (set in the batch header on the first pass, --delete-retention-ms later); the last batch of
each active producer and of the pass, even empty. Dropped: keyless records, aborted transactional
data, and transaction markers once their transaction is gone and the horizon passed. Offsets never
change; unchanged batches are copied byte for byte; rewritten ones keep codec, base offset, last
offset, producer fields and leader epoch.

Each group of segments is written as .cleaned files, renamed to .swap, the old segments retired,
the swap renamed into place (the broker's protocol: kafkalog recover completes an interrupted swap);
mtimes are kept as Kafka keeps them; cleaner-offset-checkpoint is updated atomically.

\b
Examples:
  kafkalog compact --dry-run /var/lib/kafka/data/__consumer_offsets-12
  kafkalog compact --topic __consumer_offsets /var/lib/kafka/data
  kafkalog compact --force --now 2024-03-01T00:00:00Z --delete-retention-ms 0 compacted-0

\b
Exit status: 0 nothing to clean; 1 segments cleaned (or would be, with --dry-run), or a partition
skipped for an unknown high watermark; 2 usage error; 3 could not run (lock held, leftovers).
"""


@click.command("compact", help=HELP, short_help="Compact a partition with Kafka's log cleaner rules.")
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option("--topic", "topics", multiple=True, metavar="TOPIC", help="Compact this topic's partitions (repeatable).")
@click.option("--all", "all_", is_flag=True, help="Compact every partition of the log directory.")
@click.option("--min-cleanable-ratio", type=click.FloatRange(0, 1), default=0.5, show_default=True)
@click.option("--force", is_flag=True, help="Clean even when the dirty ratio is below --min-cleanable-ratio.")
@click.option("--delete-retention-ms", type=click.IntRange(min=0), default=86_400_000, show_default=True,
              metavar="MS", help="How long tombstones and empty-transaction markers stay after their first pass.")
@click.option("--min-compaction-lag-ms", type=click.IntRange(min=0), default=0, show_default=True, metavar="MS")
@click.option("--max-compaction-lag-ms", type=click.IntRange(min=0), default=(1 << 63) - 1, metavar="MS")
@click.option("--segment-bytes", type=click.IntRange(min=14), default=1 << 30, show_default=True, metavar="BYTES")
@click.option("--segment-index-bytes", type=click.IntRange(min=4), default=10 * 1024 * 1024, show_default=True,
              metavar="BYTES")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=4096, show_default=True, metavar="BYTES")
@click.option("--dedupe-buffer-bytes", type=click.IntRange(min=24), default=128 * 1024 * 1024, show_default=True,
              metavar="BYTES", help="Offset map memory (24 bytes per key, 90% load factor), as log.cleaner.dedupe.buffer.size.")
@click.option("--high-watermark", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Use this high watermark instead of replication-offset-checkpoint's (one partition only).")
@click.option("--now", default=None, metavar="TIME", help="The current time (epoch ms or ISO-8601).")
@click.option("--dry-run", is_flag=True, help="Print the dirty ratio, groups and what each would drop; change nothing.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@decode_limit_option
def command(path, topics, all_, min_cleanable_ratio, force, delete_retention_ms, min_compaction_lag_ms,
            max_compaction_lag_ms, segment_bytes, segment_index_bytes, index_interval_bytes, dedupe_buffer_bytes,
            high_watermark, now, dry_run, fmt) -> int:
    import time
    from pathlib import Path

    from ..engine.logdir import dir_kind
    from ..engine.lookup import parse_timestamp
    from ..layout import METADATA_PARTITION, parse_partition_dir
    from ..render import compact_report
    from ..repair.cleaner import CleanerConfig
    from ..repair.compact_exec import run_pass
    from ._targets import CannotRun, locked_states, partition_dirs

    try:
        now_ms = int(time.time() * 1000) if now is None else parse_timestamp(now)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--now")
    p = Path(path)
    if dir_kind(p) == "logdir" and not topics and not all_:
        raise click.UsageError("PATH is a log directory: choose partitions with --topic TOPIC or --all")
    dirs, lock_root = partition_dirs(p, set())
    dirs = [d for d in dirs if d.name != METADATA_PARTITION]          # the Raft layer's, never compacted
    if topics:
        dirs = [d for d in dirs if parse_partition_dir(d.name).topic in set(topics)]
    if high_watermark is not None and len(dirs) != 1:
        raise click.UsageError("--high-watermark applies to one partition")
    cfg = CleanerConfig(min_cleanable_ratio=min_cleanable_ratio, delete_retention_ms=delete_retention_ms,
                        min_compaction_lag_ms=min_compaction_lag_ms, max_compaction_lag_ms=max_compaction_lag_ms,
                        segment_bytes=segment_bytes, segment_index_bytes=segment_index_bytes,
                        index_interval_bytes=index_interval_bytes, dedupe_buffer_bytes=dedupe_buffer_bytes)
    status = Status.OK
    try:
        for state in locked_states(dirs, lock_root, dry_run):
            rep = run_pass(state, cfg, now_ms, high_watermark=high_watermark, force=force, dry_run=dry_run)
            (compact_report.write_json if fmt == "json" else compact_report.write_text)(sys.stdout, rep)
            changed = any(st.batches_copied != st.batches_in or len(b) > 1 for b, st in rep.groups)
            if changed or rep.blocked or (rep.checkpoint and rep.checkpoint[0] != rep.checkpoint[1]):
                status = Status.PROBLEMS
    except CannotRun as e:
        sys.stderr.write(f"kafkalog: {e}\n")
        return Status.CANNOT_RUN
    return status
