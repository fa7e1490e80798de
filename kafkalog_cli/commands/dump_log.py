"""``kafkalog dump-log``: Kafka's kafka-dump-log.sh, on files or whole directories, text or JSON lines."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from ..status import Status
from . import show_version
from ._decoders import decoder_options, resolve_decoders
from ._targets import filter_options
from ._times import Time

STDIN_TYPES = ("log", "index", "timeindex", "snapshot", "txnindex", "checkpoint")
from ._decode import decode_limit_option

HELP = """Print the contents of Kafka log files: segments (.log), KRaft snapshots (.checkpoint), offset and
time indexes, producer snapshots and transaction indexes.

PATH may be a file, a partition directory (all its files in offset order), a whole log directory,
several of them, or a folder holding log directories further down (one broker's disk with several
log.dirs, several brokers' disks, a backup); --topic and --partition keep only those partitions.
--from-offset -N starts N offsets before each partition's log end (kcat's -o -N: its last N
records, fewer where compaction removed some). Or - for one file on standard input: a segment, KRaft snapshot or producer snapshot is recognised by its valid
checksum (--type says what it is otherwise; an index also needs --base-offset, and its entries are
printed unverified, its segment not being there). Positions are those of standard input.
Text output reproduces kafka-dump-log.sh (Kafka 3.2+/4.0) line for line; --format json prints one
JSON object per line for scripts. Problems that make Kafka's tool crash (a truncated or zero-filled
tail, a corrupt batch, a missing companion file) are reported with file and byte position (on
stderr in text output, as "problem" objects in JSON output), and the dump goes on.

Kafka's internal topics are decoded with --offsets-decoder (__consumer_offsets),
--transaction-log-decoder (__transaction_state), --cluster-metadata-decoder (__cluster_metadata
segments and KRaft snapshots), --remote-log-metadata-decoder and --share-group-state-decoder, or
all at once with --decoder auto, which picks the decoder from each file's topic. Records print
as Kafka's JSON envelopes; in JSON output they are embedded as objects. --decoder also takes
MODULE:FUNCTION or the name of a plug-in registered under the "kafkalog.decoders" entry points.

\b
Examples:
  kafkalog dump-log /var/lib/kafka/data/orders-0
  kafkalog dump-log --deep-iteration --print-data-log orders-0
  kafkalog dump-log --format json --value-decoder json orders-0 | jq .
  kafkalog dump-log --print-data-log --decoder auto /var/lib/kafka/data
  kafkalog dump-log --offsets-decoder __consumer_offsets-12
  kafkalog dump-log --topic orders --from-offset -3 --print-data-log \\
    /var/lib/kafka/data
  kafkalog dump-log --decoder mypkg.decoders:avro orders-0
  kafkalog dump-log --verify-index-only orders-0/*.index
  ssh broker1 cat /data/orders-0/00000000000000000000.log \\
    | kafkalog dump-log -

Problems are graded as verify grades the files they are in: Kafka's tool
prints its index reports and exits 0, and so does dump-log where verify
passes those files (a compacted topic's index entries inside batches, a
torn tail Kafka's next start cuts); a line on stderr then says so.

\b
Exit status:
  0  everything read was valid, or what was reported is no error by
     verify's grading
  1  a problem verify grades as an error (an invalid CRC before intact
     batches, an index a lookup would go wrong by), a problem decoding a
     record, a file that could not be read (an index without its segment),
     or nothing was read (no Kafka file under a directory, no batch in
     --from-offset/--to-offset, only files it does not know, an empty
     standard input)
  2  usage error (also --from-offset after --to-offset, a --topic or
     --partition found nowhere under the paths)
"""

@click.command("dump-log", help=HELP, short_help="Print the contents of segment, index and snapshot files.")
@click.argument("paths", nargs=-1, metavar="[PATH]...",
                type=click.Path(exists=True, readable=False, dir_okay=True, file_okay=True, allow_dash=True))
@click.option("--files", "files_opt", metavar="FILE1,FILE2,...",
              help="Comma-separated files to dump (Kafka's option; may be combined with PATH).")
@click.option("--print-data-log", is_flag=True, help="Print record keys and values (implies --deep-iteration).")
@click.option("--deep-iteration", is_flag=True, help="Print every record inside each batch, decompressing.")
@click.option("--skip-record-metadata", is_flag=True,
              help="Text output: leave out the per-record metadata (offset, timestamp, sizes, headers); "
                   "combine with --print-data-log to see only keys and values.")
@click.option("--max-bytes", type=click.IntRange(min=0), default=None, metavar="BYTES",
              help="Read at most this many bytes of each .log/.checkpoint (also silences the "
                   "trailing-bytes message, as in Kafka).")
@click.option("--max-message-size", type=click.IntRange(min=1), default=5 * 1024 * 1024, show_default=True,
              metavar="BYTES",
              help="Bytes read at each offset-index entry when verifying an index.")
@click.option("--salvage", is_flag=True,
              help="Read past damage in a .log as recover --salvage would, changing nothing: only the batches it "
                   "would keep are printed, each range it would drop is reported (with the offsets lost), each "
                   "batch it would repair is shown as stored with the repair said. Beyond Kafka's tool, which stops "
                   "at the first damage.")
@click.option("--index-sanity-check", is_flag=True, help="Only run Kafka's sanity check on .index/.timeindex files.")
@click.option("--verify-index-only", is_flag=True, help="Verify indexes against the log without printing entries.")
@decoder_options()
@click.option("--from-offset", type=int, default=None, metavar="OFFSET",
              help="Skip batches and records before this offset; -N: start N offsets before each partition's log "
                   "end, the last N records (kcat -o -N; fewer where compaction removed some).")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Skip batches and records after this offset.")
@click.option("--from-time", "from_time", type=Time(), default=None, metavar="TIME",
              help="Start at the first record at or after TIME (epoch ms or ISO-8601), found per partition "
                   "through the time index as ListOffsets finds it (kcat -o s@TIME).")
@click.option("--to-time", "to_time", type=Time(), default=None, metavar="TIME",
              help="Stop before the first record at or after TIME, found the same way (kcat -o e@TIME).")
@click.option("--count", "-c", "count", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop after N records (N batches without --deep-iteration), as kcat -c.")
@filter_options
@click.option("--format-string", "-f", "format_string", default=None, metavar="FMT",
              help="Print each record by kcat's format letters: %t topic, %p partition, %o offset, %T timestamp, "
                   "%k key, %K key size, %s value, %S value size, %R value size (4 bytes), %h headers, %% and "
                   "\\n \\t \\r \\xHH (see kafkalog-dump-log(1)). Implies --print-data-log.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: kafka-dump-log.sh lines; json: one JSON object per line (see kafkalog-dump-log(1)).")
@click.option("--type", "file_type", type=click.Choice(list(STDIN_TYPES)), default=None,
              help="What - (standard input) holds: log, index, timeindex, snapshot (producer), txnindex or "
                   "checkpoint (KRaft snapshot). Without it, a segment or snapshot is recognised by its valid "
                   "checksum; an index needs it.")
@click.option("--base-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="For - (standard input): the segment's base offset, the number in its file name (needed "
                   "for an index, whose entries are stored relative to it).")
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=show_version,
              help="Show kafkalog's version and exit (as kafka-dump-log.sh --version shows Kafka's).")
@decode_limit_option
def command(paths, files_opt, print_data_log, deep_iteration, skip_record_metadata, max_bytes,
            max_message_size, salvage, index_sanity_check, verify_index_only, from_offset, to_offset, from_time,
            to_time, count, topics, partitions, format_string, fmt, file_type, base_offset, **decoders) -> int:
    from ..engine.dump import Dumper, DumpOptions

    decoding = resolve_decoders(decoders)
    record_decoding = decoding.record_decoding
    print_data = print_data_log or decoding.implies_print or format_string is not None
    times = _times(from_time, to_time)
    given = list(paths)
    if files_opt:
        given.extend(f for f in files_opt.split(",") if f)
    if not given:
        raise click.UsageError("give at least one PATH (or --files FILE1,FILE2,...), or - for standard input")
    last = None
    if from_offset is not None and from_offset < 0:
        last, from_offset = -from_offset, None
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise click.UsageError(f"--from-offset {from_offset} is after --to-offset {to_offset}: no offset is in "
                               "that range")
    stdin = "-" in given
    if stdin and len(given) > 1:
        raise click.UsageError("- (standard input) is one file: give it alone")
    if stdin and times != (None, None):
        raise click.UsageError("--from-time and --to-time look records up in a partition's time index: standard "
                               "input has none (use --from-offset/--to-offset)")
    if stdin and last is not None:
        raise click.UsageError(f"--from-offset -{last} counts back from a partition's log end: standard input is "
                               "one file, not a partition (give the offset itself)")
    if stdin and (topics or partitions):
        raise click.UsageError("--topic and --partition choose partitions of directories: standard input is one "
                               "file")
    if not stdin and (file_type or base_offset is not None):
        raise click.UsageError("--type and --base-offset describe - (standard input); a file is known by its name")
    opts = DumpOptions(deep_iteration=deep_iteration or print_data, print_data=print_data,
                       max_bytes=max_bytes, max_message_size=max_message_size,
                       index_sanity_check=index_sanity_check, verify_index_only=verify_index_only,
                       from_offset=from_offset, to_offset=to_offset, salvage=salvage)
    kd, vd = decoding.key_decoder, decoding.value_decoder
    from ..output import stdout
    out = stdout()
    if format_string is not None:
        from ..render.format_string import BadFormatString, FormatRenderer, compile_format
        try:
            parts = compile_format(format_string)
        except BadFormatString as e:
            raise click.BadParameter(str(e), param_hint="'--format-string'") from None
        renderer = FormatRenderer(out.buffer, sys.stderr, parts, kd, vd, raw_key=decoders.get("key_decoder") is None,
                                  raw_value=decoders.get("value_decoder") is None, record_decoding=record_decoding)
    elif fmt == "json":
        from ..render.jsonl import JsonRenderer
        renderer = JsonRenderer(out, kd, vd, print_data, skip_record_metadata, record_decoding=record_decoding)
    else:
        from ..render.kafka_text import TextRenderer
        renderer = TextRenderer(out, sys.stderr, kd, vd, print_data, skip_record_metadata,
                                record_decoding=record_decoding)
    dumper = Dumper(opts)
    seen = _Seen(renderer, count)
    if stdin:
        _dump_stdin(dumper, seen, file_type, base_offset, opts)
    else:
        _dump_paths(dumper, seen, given, times, topics, partitions, last)
        seen.grade(dumper.report)
    seen.nothing_read(given, opts, times, last)
    renderer.finish(dumper.report)
    out.flush()
    note = renderer.fallback_note() if fmt == "json" else None
    from .. import ui
    if note and ui.show_info():
        sys.stderr.write(f"kafkalog: {note}\n")
    failed = seen.failures or renderer.problems
    if not failed and seen.severity is not None and ui.show_info():
        sys.stderr.write(f"kafkalog: {_NOT_FAILED[seen.severity]}: exit 0\n")
    return Status.PROBLEMS if failed else Status.OK


#: the line after problems verify does not grade as errors (Kafka's tool exits 0 on them too)
_NOT_FAILED = {"warning": "warnings by verify's grading (Kafka's next start repairs them)",
               "info": "not an error by verify's grading (healthy brokers write this)"}


class _Seen:
    """Passes events to the renderer and keeps what "nothing was read" needs: files dumped, batches shown."""

    def __init__(self, renderer, count: int | None = None) -> None:
        from ..engine import dump as ev
        self.ev = ev
        self.renderer = renderer
        self.dumped = self.logs = self.batches = self.problems = 0
        self.failures = 0                  # problems that fail the run (exit status 1)
        self.severity: str | None = None   # verify's worst grade of the other problems shown, when not an error
        self.ignored: list[str] = []
        self.remaining = count             # --count: records (or batches) still to show; None: no limit

    @property
    def done(self) -> bool:
        return self.remaining is not None and self.remaining <= 0

    def emit_all(self, events) -> None:
        if self.remaining is not None:
            events = self._counted(events)
        ev, emit = self.ev, self.renderer.emit
        for e in events:
            t = type(e)
            if t is ev.BatchItem:
                self.batches += 1
            elif t is ev.RecordRun:
                self.batches += e.scan.n_batches
            elif t is ev.FileStart:
                self.dumped += 1
                self.logs += e.kind in ("log", "kraft_snapshot", "bootstrap")
            elif t is ev.Ignored:
                self.ignored.append(e.file)
            emit(e)

    def _counted(self, events):
        """The events up to the --count-th record (or batch): a run of the compiled path is expanded into
        its batches so that it can end inside one; the walk stops there."""
        ev = self.ev
        for e in events:
            if self.done:
                return
            items = e.items() if type(e) is ev.RecordRun else (e,)
            for it in items:
                if type(it) is ev.BatchItem:
                    if it.records is None:
                        self.remaining -= 1
                    else:
                        it = it._replace(records=self._limited(it.records))
                yield it
                if self.done:
                    return

    def _limited(self, records):
        for item in records:
            if self.remaining <= 0:
                return
            yield item
            if item.control is None:
                self.remaining -= 1

    def problem(self, file: str, kind: str, message: str) -> None:
        self.problems += 1
        self.failures += 1
        self.renderer.emit(self.ev.Finding(kind, message, file))

    def graded(self, severity: str) -> None:
        """A problem shown and graded by verify's rules: only an error fails the run."""
        if severity == "error":
            self.failures += 1
        elif severity != "info" or self.severity is None:
            self.severity = severity

    def grade(self, report) -> None:
        """The dumper's problems graded (``engine/dump_grade``): what could not be read fails the run; the
        rest fails it only where verify finds an error in the files concerned."""
        from ..engine.dump_grade import without_segment, worst_severity
        self.failures += report.ungraded
        files = report.graded_files()
        alone = [f for f in files if without_segment(f)]
        self.failures += len(alone)
        files = [f for f in files if f not in alone]
        if files:
            self.graded(worst_severity(files) or "info")

    def nothing_read(self, given: list[str], opts, times=(None, None), last: int | None = None) -> None:
        """Exit status 1 with the reason when nothing the command was asked for was read."""
        where = " ".join(given)
        if not self.dumped and self.ignored:
            hint = ""
            if any(not Path(f).suffix for f in self.ignored):
                hint = "; to read standard input give - (with --type when it is an index)"
            self.problem(where, "nothing_dumped", "nothing dumped: not a Kafka log file (a segment, index, "
                         f"snapshot or checkpoint is known by its suffix){hint}")
        elif not self.batches and not self.problems and times != (None, None):
            self.problem(where, "time_range_empty", "no record is in the --from-time/--to-time range: nothing "
                         "dumped")
        elif (self.logs and not self.batches and not self.problems
              and (opts.from_offset is not None or opts.to_offset is not None or last is not None)):
            lo = f"-{last}" if last is not None else "" if opts.from_offset is None else opts.from_offset
            hi = "" if opts.to_offset is None else opts.to_offset
            self.problem(where, "offset_range_empty", f"no batch holds an offset in {lo}..{hi} "
                         "(--from-offset/--to-offset): nothing dumped")


def _times(from_time: int | None, to_time: int | None) -> tuple[int | None, int | None]:
    if from_time is not None and to_time is not None and from_time >= to_time:
        raise click.UsageError(f"--from-time {from_time} is not before --to-time {to_time}: no record is in that "
                               "range")
    return from_time, to_time


def _by_directory(files: list[str]):
    """Consecutive files of one directory, as (directory, files)."""
    group: list[str] = []
    current = None
    for f in files:
        d = Path(f).parent
        if group and d != current:
            yield current, group
            group = []
        current = d
        group.append(f)
    if group:
        yield current, group


def _dump_paths(dumper, seen: _Seen, given: list[str], times=(None, None), topics=(), partitions=(),
                last: int | None = None) -> None:
    from ..engine import dump as ev
    from ..engine.findings import SCAN_SEVERITY
    from ..engine.targets import files_in_offset_order, resolve
    from ._targets import selected
    targets = selected(resolve(given), topics, partitions)
    files, findings = [], []
    for p, f, found in files_in_offset_order(targets):
        if not f and not found and Path(p).is_dir():
            seen.problem(p, "no_kafka_files", "no Kafka log files here or in the directories below (segments, "
                         "indexes, snapshots, checkpoints): nothing dumped")
        files.extend(f)
        findings.extend(found)
    for f in findings:
        # shown either way; a note (a .deleted file pending removal, a file Kafka ignores) is not a problem,
        # and only what verify grades as an error (a directory Kafka refuses) fails the run
        severity = SCAN_SEVERITY.get(f.kind, f.severity)
        if severity != "info":
            seen.problems += 1
            seen.graded(severity)
        seen.renderer.emit(ev.Finding(f.kind, f.message, f.file or "", f.position, f.offset))
    if times == (None, None) and last is None:
        seen.emit_all(dumper.dump(files))
        return
    from ..engine.time_range import last_offsets, offset_range
    opts = dumper.opts
    lo0, hi0 = opts.from_offset, opts.to_offset
    for directory, group in _by_directory(files):
        if seen.done:
            break
        lo, hi = lo0, hi0
        if last is not None:                # kcat -o -N: from N offsets before each partition's log end
            lo = last_offsets(directory, last)
        if times != (None, None):
            rng = offset_range(directory, *times)
            if rng is None:
                continue                    # no record of this partition is in the time range
            t_lo, t_hi = rng
            lo = lo if t_lo is None else (t_lo if lo is None else max(t_lo, lo))
            hi = hi if t_hi is None else (t_hi if hi is None else min(t_hi, hi))
        if lo is not None and hi is not None and lo > hi:
            continue
        opts.from_offset, opts.to_offset = lo, hi
        seen.emit_all(dumper.dump(group))
    opts.from_offset, opts.to_offset = lo0, hi0


def _dump_stdin(dumper, seen: _Seen, file_type: str | None, base_offset: int | None, opts) -> None:
    """``-``: standard input copied to a private file (bounded memory), dumped under the name ``-``."""
    from .. import ui
    from ..engine import stdin_input as si
    from ..output import stdout
    if sys.stdin is None or sys.stdin.isatty():
        raise click.UsageError("- reads standard input, which is a terminal: pipe a file into it "
                               "(kafkalog dump-log - < 00000000000000000000.log)")
    src = si.StdinInput(sys.stdin.buffer)
    try:
        kind, why = file_type, None
        _check_stdin_type(kind, base_offset, opts)
        if not src.size:            # with --type or without: nothing was read (a failed ssh/cat upstream, say)
            seen.problem(si.NAME, "nothing_dumped", "standard input is empty: nothing dumped")
            return
        if kind is None:
            kind, why = src.identify()
            if kind is None:
                raise click.UsageError(f"cannot tell what standard input holds: {why}; give --type "
                                       f"{'|'.join(si.TYPES)}")
            _check_stdin_type(kind, base_offset, opts)
        if why is not None and ui.show_info():
            stdout().flush()
            sys.stderr.write(f"kafkalog: -: read as {_KIND_WORDS[kind]}: {why} (--type chooses)\n")
        path = src.place(kind, base_offset)
        if kind in si.NEEDS_BASE:
            if not opts.index_sanity_check and ui.show_info():
                stdout().flush()
                sys.stderr.write("kafkalog: -: entries not verified against their segment (not on standard "
                                 "input)\n")
            seen.emit_all(_failing(seen, si.index_events(path, kind, base_offset, opts.index_sanity_check)))
            return
        seen.emit_all(si.renamed(dumper.dump([str(path)]), str(path), base_offset is not None))
        seen.grade(dumper.report)            # the copy verified alone, before it is renamed and removed
        si.rename_report(dumper.report, str(path))
    finally:
        src.close()


def _failing(seen: _Seen, events):
    """Events of an index read alone: a problem found in it fails the run (no segment to grade it with)."""
    for e in events:
        if type(e) is seen.ev.Finding:
            seen.problems += 1
            seen.failures += 1
        yield e


def _check_stdin_type(kind: str | None, base_offset: int | None, opts) -> None:
    """Usage errors of an index on standard input (exit 2, before anything is read)."""
    from ..engine import stdin_input as si
    if kind not in si.NEEDS_BASE:
        return
    if base_offset is None:
        raise click.UsageError(f"{'an offset' if kind == 'index' else 'a time'} index read from standard "
                               "input needs --base-offset (the number in its file name): its entries are "
                               "stored relative to it")
    if opts.verify_index_only:
        raise click.UsageError("--verify-index-only checks an index against its segment, which standard "
                               "input does not have: dump the file itself")


_KIND_WORDS = {"log": "a log segment", "checkpoint": "a KRaft snapshot", "snapshot": "a producer snapshot"}
