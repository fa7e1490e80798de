"""The record-decoder options ``dump-log``, ``lookup-offset`` and ``lookup-time`` share: the payload decoders
(``--key-decoder``/``--value-decoder``), Kafka's decoder classes (``--key-decoder-class``/
``--value-decoder-class``), Kafka's internal-topic decoder flags and ``--decoder``; and what they resolve to."""
from __future__ import annotations

from typing import NamedTuple

import click

PAYLOAD_DECODERS = ("string", "hex", "base64", "json", "schema-registry", "schema-registry-hex", "none")
DECODER_CHOICES = click.Choice(list(PAYLOAD_DECODERS))
# Kafka's decoder flags, in Kafka's order of precedence (DumpLogSegmentsOptions.messageParser), and the
# decoder each selects
KAFKA_DECODER_FLAGS = (("offsets_decoder", "offsets"), ("transaction_log_decoder", "transaction-log"),
                       ("cluster_metadata_decoder", "cluster-metadata"),
                       ("remote_log_metadata_decoder", "remote-log-metadata"),
                       ("share_group_state_decoder", "share-group-state"))
NAMES = ("key_decoder", "value_decoder", "key_decoder_class", "value_decoder_class", "decoder_name", "key_schema",
         "value_schema",
         *(flag for flag, _n in KAFKA_DECODER_FLAGS))
STRING_DECODER = "kafka.serializer.StringDecoder"          # Kafka's default for a class option given bare


def complete_decoder(_ctx, _param, incomplete: str) -> list:
    """Shell completion of ``--decoder``: auto, the internal topics' decoders, the payload decoders and the
    installed plug-ins (MODULE:FUNCTION is the user's to type)."""
    from importlib.metadata import entry_points

    from click.shell_completion import CompletionItem
    names = ["auto", *(n for _f, n in KAFKA_DECODER_FLAGS), *PAYLOAD_DECODERS]
    names += sorted({ep.name for ep in entry_points(group="kafkalog.decoders")} - set(names))
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


class Decoding(NamedTuple):
    key_decoder: str                 # payload decoders of keys, values and header values
    value_decoder: str
    record_decoding: object          # render.record_decoders.RecordDecoding, or None
    implies_print: bool              # a decoder option was given: Kafka prints the data


def decoder_options(auto_default: bool = False):
    """The options, in the order ``--help`` shows them."""
    def deco(f):
        opts = [
            click.option("--key-decoder", type=DECODER_CHOICES, default=None, metavar="DECODER",
                         help="How to print keys: string (UTF-8, the default), hex, base64, json, schema-registry "
                              "(schema id and payload of Confluent-framed bytes), schema-registry-hex, none. "
                              "In JSON output, json embeds each key as JSON; one that is not valid JSON is written "
                              "as base64 with key_encoding \"base64\", and how many were is said once on stderr. "
                              "Implies --print-data-log."),
            click.option("--value-decoder", type=DECODER_CHOICES, default=None, metavar="DECODER",
                         help="How to print values and header values (same choices, the same JSON fallback; "
                              "default string). Implies --print-data-log."),
            click.option("--key-decoder-class", is_flag=False, flag_value=STRING_DECODER, default=None,
                         metavar="CLASS",
                         help="Kafka's option: a Kafka decoder class for keys (StringDecoder, DefaultDecoder "
                              "(hex here), IntegerDecoder, LongDecoder, of kafka.serializer or "
                              "org.apache.kafka.tools.api), or a Python MODULE:FUNCTION of the bytes. "
                              "Implies --print-data-log."),
            click.option("--value-decoder-class", is_flag=False, flag_value=STRING_DECODER, default=None,
                         metavar="CLASS", help="The same for values. Implies --print-data-log."),
            click.option("--key-schema", default=None, metavar="FILE[#MESSAGE]",
                         help="Decode keys with a schema file: .avsc (Avro), .desc/.pb/.protoset (a Protobuf "
                              "descriptor set from protoc --include_imports --descriptor_set_out; #MESSAGE names "
                              "the type), .proto (needs grpcio-tools), .json (JSON Schema); schema-registry "
                              "framing is read past. Needs the schemas extra. Implies --print-data-log."),
            click.option("--value-schema", default=None, metavar="FILE[#MESSAGE]",
                         help="The same for values."),
            click.option("--offsets-decoder", is_flag=True,
                         help="Decode records as __consumer_offsets records (offset commits, group metadata "
                              "with consumer-protocol assignments). Implies --print-data-log."),
            click.option("--transaction-log-decoder", is_flag=True,
                         help="Decode records as __transaction_state records. Implies --print-data-log."),
            click.option("--cluster-metadata-decoder", is_flag=True,
                         help="Decode records as KRaft metadata records (__cluster_metadata, .checkpoint). "
                              "Implies --print-data-log."),
            click.option("--remote-log-metadata-decoder", is_flag=True,
                         help="Decode records as __remote_log_metadata records. Implies --print-data-log."),
            click.option("--share-group-state-decoder", is_flag=True,
                         help="Decode records as __share_group_state records. Implies --print-data-log."),
            click.option("--decoder", "decoder_name", metavar="NAME", default=None, shell_complete=complete_decoder,
                         help="Record decoder: auto (by topic: every internal topic decoded, other topics by "
                              "the key/value decoders), offsets, transaction-log, cluster-metadata, "
                              "remote-log-metadata, share-group-state, a payload decoder for keys and values, "
                              "MODULE:FUNCTION, or a kafkalog.decoders entry point. Kafka's decoder flags take "
                              "precedence." + (" Default: auto." if auto_default else
                                               " Implies --print-data-log.")),
        ]
        for opt in reversed(opts):
            f = opt(f)
        return f
    return deco


def resolve_decoders(params: dict, auto_default: bool = False) -> Decoding:
    """The decoders the options choose (Kafka's precedence: its internal-topic flags, then the decoder
    classes; ``--decoder`` names ours). Usage errors for a name that resolves to nothing."""
    from ..render import record_decoders as rd
    kd, vd = params.get("key_decoder"), params.get("value_decoder")
    kc, vc = params.get("key_decoder_class"), params.get("value_decoder_class")
    if kd and kc:
        raise click.UsageError("--key-decoder and --key-decoder-class both say how to print keys: give one")
    if vd and vc:
        raise click.UsageError("--value-decoder and --value-decoder-class both say how to print values: give one")
    chosen = next((name for flag, name in KAFKA_DECODER_FLAGS if params.get(flag)), params.get("decoder_name"))
    implies = any(params.get(n) is not None and params.get(n) is not False for n in NAMES)
    fields = []
    for opt, spec in (("--key-decoder-class", kc), ("--value-decoder-class", vc)):
        try:
            fields.append(None if spec is None else rd.decoder_class(spec))
        except rd.DecoderError as e:
            raise click.BadParameter(str(e), param_hint=f"'{opt}'") from None
    for i, (opt, spec, other) in enumerate((("--key-schema", params.get("key_schema"), kd or kc),
                                            ("--value-schema", params.get("value_schema"), vd or vc))):
        if spec is None:
            continue
        if other:
            raise click.UsageError(f"{opt} and a {opt.split('-')[2]} decoder both say how to print "
                                   f"{opt.split('-')[2]}s: give one")
        from ..render.schema_decoders import SchemaError, schema_decoder
        try:
            fields[i] = schema_decoder(spec)
        except SchemaError as e:
            raise click.BadParameter(str(e), param_hint=f"'{opt}'") from None
    # a class that is one of our payload decoders (StringDecoder, DefaultDecoder) is that payload decoder
    if isinstance(fields[0], str):
        kd, fields[0] = fields[0], None
    if isinstance(fields[1], str):
        vd, fields[1] = fields[1], None
    fallback = None
    if fields[0] is not None or fields[1] is not None:
        name = "schema" if params.get("key_schema") or params.get("value_schema") else "decoder-class"
        fallback = (name, rd.ClassDecoders(fields[0] or kd or "string", fields[1] or vd or "string"))
    if chosen is None and auto_default and not (kd or vd or fallback):
        chosen = "auto"
    record_decoding = None
    if chosen in PAYLOAD_DECODERS:                 # --decoder hex: the payload decoder for keys and values
        kd, vd = kd or chosen, vd or chosen
        chosen = None
    if chosen is not None:
        try:
            record_decoding = rd.RecordDecoding.named(chosen)
        except rd.DecoderError as e:
            raise click.BadParameter(str(e), param_hint="'--decoder'") from None
        if record_decoding.auto:
            record_decoding.fallback = fallback
    elif fallback is not None:
        record_decoding = rd.RecordDecoding(*fallback)
    return Decoding(kd or "string", vd or "string", record_decoding, implies)
