"""``kafkalog diff``: where replicas of a partition diverge, and what the broker would throw away."""
from __future__ import annotations

import click

from ..status import Status
from ._targets import Directory
from ._decode import decode_limit_option

HELP = """Compare replicas of the same partitions, offline: where they diverge, and which records a
replica would throw away when it rejoins with another as leader.

Each PATH is a partition directory, a log directory, or a folder holding several brokers' log
directories. Every partition found in two or more places is compared (matched by topic and
partition; a different topic id in partition.metadata means the topic was deleted and recreated:
reported, not compared). Two partition directories given alone are compared whatever their names.

For each pair the command reports the common prefix, records held by one side only (explained by
retention -- below the other's log start --, by lag -- beyond the other's log end --, or by
compaction -- below the other's cleaner checkpoint -- when they can be), records that differ at the
same offset (transaction markers included), and for each way of rejoining the offset the follower
truncates to, computed as Kafka's follower does from both leader-epoch caches (KIP-101/KIP-279;
its high watermark when it has no epochs), with the records that truncation removes. Batches are
compared by CRC first and decoded only where they differ; memory stays bounded whatever the size.

\b
Examples:
  kafkalog diff /backups/broker-1/data /var/lib/kafka/data
  kafkalog diff --partition orders-0 kafka-logs-0 kafka-logs-1
  kafkalog diff --reference kafka-logs-0 --format json cluster/ \\
    | jq 'select(.type=="discarded")'
  kafkalog diff --reference 1 --save-discarded /tmp/discarded cluster/
  kafkalog dump-log --print-data-log /tmp/discarded

\b
Exit status:
  0  the replicas agree (one may lag: a prefix is agreement)
  1  they diverge, a problem was found, or (with --reference) a replica
     would lose records the reference does not hold
  2  usage error (also: nothing to compare)
  3  could not run
"""


@click.command("diff", help=HELP, short_help="Show where replicas of a partition diverge and what truncation discards.")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...",
                type=Directory())
@click.option("--reference", metavar="PATH|BROKER_ID", default=None,
              help="Compare every other replica against this one, as the leader it rejoins "
                   "(a log directory, a partition directory or a broker id).")
@click.option("--partition", "partitions", multiple=True, metavar="TOPIC-N",
              help="Only this partition (repeatable).")
@click.option("--save-discarded", "save_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write the batches a follower would remove as segments under DIR (a new or empty "
                   "directory outside every Kafka directory and every PATH), one partition directory per "
                   "follower.")
@click.option("--max-listed", type=click.IntRange(min=0), default=10, show_default=True, metavar="N",
              help="Text output: list at most N differences and N discarded records per pair.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: a block per pair; json: JSON lines (difference, discarded, pair, summary).")
@decode_limit_option
def command(paths, reference, partitions, save_dir, max_listed, fmt) -> int:
    from pathlib import Path

    from ..engine.diff import choose_pairs
    from ..engine.diff.replica import collect
    from ..layout import parse_partition_spec
    from ..render import diff_report as rr

    try:
        wanted = {parse_partition_spec(p) for p in partitions}
    except ValueError as e:
        raise click.UsageError(str(e))
    saver = None
    if save_dir is not None:
        from ..repair.save_discarded import DiscardSaver, check_target
        why = check_target(Path(save_dir), list(paths))
        if why:
            raise click.UsageError(f"--save-discarded: {why}")
        saver = DiscardSaver(Path(save_dir))
    inputs = collect(list(paths), wanted or None)
    try:
        groups, notes = choose_pairs(inputs.groups, reference)
    except ValueError as e:
        raise click.UsageError(str(e))
    if not groups:
        raise click.UsageError("nothing to compare: no partition is held in two of the given places"
                               + (f" ({len(inputs.single)} partitions found in one place only)"
                                  if inputs.single else ""))
    from ..output import stdout
    report = rr.JsonReport(stdout()) if fmt == "json" else rr.TextReport(stdout(), max_listed)
    results, status = [], Status.OK
    for reps, pairs in groups:
        report.group(reps)
        for a, b, ref in pairs:
            res = _compare(a, b, ref, report, saver)
            results.append(res)
            if not res.agree or (ref is not None and any(d.lost for d in res.directions)):
                status = Status.PROBLEMS
        report.end_group()
    report.summary(results, notes, inputs.single, inputs.skipped)
    return status


def _compare(a, b, ref, report, saver):
    """One pair: the walk, with discarded batches streamed to the saver when there is one."""
    from ..engine.diff.compare import PairWalk
    report.begin(a, b)
    on_batch = None
    if saver is not None:
        def on_batch(d, batch):
            reps = (a, b)
            saver.add(id(d), saver.target(reps[d.follower].label, reps[d.leader].label, a.name), batch.raw())
    res = PairWalk(a, b, ref, report.sink, on_batch, report.listed).run()
    saved = {}
    if saver is not None:
        for d in res.directions:
            before = len(saver.written)
            saver.finish(id(d))
            if len(saver.written) > before:
                saved[id(d)] = saver.written[-1]
    report.pair(res, saved)
    return res
