"""``kafkalog dump-log``: Kafka's kafka-dump-log.sh, on files or whole directories, text or JSON lines."""
from __future__ import annotations

import sys

import click

from ..status import Status
from ._decode import decode_limit_option

HELP = """Print the contents of Kafka log files: segments (.log), KRaft snapshots (.checkpoint), offset and
time indexes, producer snapshots and transaction indexes.

PATH may be a file, a partition directory (all its files in offset order), a whole log directory,
or a folder holding log directories further down (several brokers' disks, a backup).
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
  kafkalog dump-log --deep-iteration --print-data-log 00000000000000000000.log
  kafkalog dump-log --format json --value-decoder json orders-0 | jq .
  kafkalog dump-log --print-data-log --decoder auto /var/lib/kafka/data
  kafkalog dump-log --offsets-decoder __consumer_offsets-12/00000000000000000000.log
  kafkalog dump-log --decoder mypkg.decoders:avro orders-0
  kafkalog dump-log --verify-index-only orders-0/00000000000000000000.index

\b
Exit status: 0 everything read was valid; 1 a problem was found (invalid CRC, trailing or
corrupt bytes, index mismatch, a file that could not be read); 2 usage error.
"""

DECODER_CHOICES = click.Choice(["string", "hex", "base64", "json", "schema-registry", "schema-registry-hex", "none"])
PAYLOAD_DECODERS = ("string", "hex", "base64", "json", "schema-registry", "schema-registry-hex", "none")
# Kafka's decoder flags, in Kafka's order of precedence (spec §6.1), and the decoder each selects
KAFKA_DECODER_FLAGS = (("offsets_decoder", "offsets"), ("transaction_log_decoder", "transaction-log"),
                       ("cluster_metadata_decoder", "cluster-metadata"),
                       ("remote_log_metadata_decoder", "remote-log-metadata"),
                       ("share_group_state_decoder", "share-group-state"))


@click.command("dump-log", help=HELP, short_help="Print the contents of segment, index and snapshot files.")
@click.argument("paths", nargs=-1, metavar="[PATH]...",
                type=click.Path(exists=True, dir_okay=True, file_okay=True))
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
@click.option("--index-sanity-check", is_flag=True, help="Only run Kafka's sanity check on .index/.timeindex files.")
@click.option("--verify-index-only", is_flag=True, help="Verify indexes against the log without printing entries.")
@click.option("--key-decoder", type=DECODER_CHOICES, default=None, metavar="DECODER",
              help="How to print keys: string (UTF-8, the default), hex, base64, json, schema-registry "
                   "(schema id and payload of Confluent-framed bytes), schema-registry-hex, none. "
                   "Implies --print-data-log.")
@click.option("--value-decoder", type=DECODER_CHOICES, default=None, metavar="DECODER",
              help="How to print values and header values (same choices; default string). "
                   "Implies --print-data-log.")
@click.option("--offsets-decoder", is_flag=True,
              help="Decode records as __consumer_offsets records (offset commits, group metadata with "
                   "consumer-protocol assignments). Implies --print-data-log.")
@click.option("--transaction-log-decoder", is_flag=True,
              help="Decode records as __transaction_state records. Implies --print-data-log.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode records as KRaft metadata records (__cluster_metadata, .checkpoint). "
                   "Implies --print-data-log.")
@click.option("--remote-log-metadata-decoder", is_flag=True,
              help="Decode records as __remote_log_metadata records. Implies --print-data-log.")
@click.option("--share-group-state-decoder", is_flag=True,
              help="Decode records as __share_group_state records. Implies --print-data-log.")
@click.option("--decoder", "decoder_name", metavar="NAME", default=None,
              help="Record decoder: auto (by topic: every internal topic decoded, other topics by "
                   "--key-decoder/--value-decoder), offsets, transaction-log, cluster-metadata, "
                   "remote-log-metadata, share-group-state, a payload decoder for keys and values, "
                   "MODULE:FUNCTION, or a kafkalog.decoders entry point. Kafka's decoder flags take "
                   "precedence. Implies --print-data-log.")
@click.option("--from-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Skip batches and records before this offset.")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Skip batches and records after this offset.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: kafka-dump-log.sh lines; json: one JSON object per line (see kafkalog-dump-log(1)).")
@decode_limit_option
def command(paths, files_opt, print_data_log, deep_iteration, skip_record_metadata, max_bytes,
            max_message_size, index_sanity_check, verify_index_only, key_decoder, value_decoder,
            offsets_decoder, transaction_log_decoder, cluster_metadata_decoder, remote_log_metadata_decoder,
            share_group_state_decoder, decoder_name, from_offset, to_offset, fmt) -> int:
    from ..engine.dump import Dumper, DumpOptions, Problem
    from ..engine.targets import expand_paths

    given = list(paths)
    if files_opt:
        given.extend(f for f in files_opt.split(",") if f)
    if not given:
        raise click.UsageError("give at least one PATH (or --files FILE1,FILE2,...)")
    flags = dict(offsets_decoder=offsets_decoder, transaction_log_decoder=transaction_log_decoder,
                 cluster_metadata_decoder=cluster_metadata_decoder,
                 remote_log_metadata_decoder=remote_log_metadata_decoder,
                 share_group_state_decoder=share_group_state_decoder)
    chosen = next((name for flag, name in KAFKA_DECODER_FLAGS if flags[flag]), decoder_name)
    record_decoding = None
    if chosen in PAYLOAD_DECODERS:                 # --decoder hex: the payload decoder for keys and values
        key_decoder, value_decoder = key_decoder or chosen, value_decoder or chosen
    elif chosen is not None:
        from ..render.record_decoders import DecoderError, RecordDecoding
        try:
            record_decoding = RecordDecoding.named(chosen)
        except DecoderError as e:
            raise click.BadParameter(str(e), param_hint="'--decoder'") from None
    print_data = (print_data_log or key_decoder is not None or value_decoder is not None
                  or chosen is not None)
    files, findings = expand_paths(given)
    opts = DumpOptions(deep_iteration=deep_iteration or print_data, print_data=print_data,
                       max_bytes=max_bytes, max_message_size=max_message_size,
                       index_sanity_check=index_sanity_check, verify_index_only=verify_index_only,
                       from_offset=from_offset, to_offset=to_offset)
    kd, vd = key_decoder or "string", value_decoder or "string"
    out = sys.stdout
    if fmt == "json":
        from ..render.jsonl import JsonRenderer
        renderer = JsonRenderer(out, kd, vd, print_data, skip_record_metadata, record_decoding=record_decoding)
    else:
        from ..render.kafka_text import TextRenderer
        renderer = TextRenderer(out, sys.stderr, kd, vd, print_data, skip_record_metadata,
                                record_decoding=record_decoding)
    dumper = Dumper(opts)
    for f in findings:
        renderer.emit(Problem(f.file or "", f.position, f.kind, f.message, f.offset))
    for event in dumper.dump(files):
        renderer.emit(event)
    renderer.finish(dumper.report)
    out.flush()
    return Status.PROBLEMS if (findings or dumper.report.has_problems or renderer.problems) else Status.OK
