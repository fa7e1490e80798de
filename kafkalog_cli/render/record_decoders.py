"""Record decoders for ``dump-log``: Kafka's internal-topic decoders, plug-ins, and automatic choice by topic.

A record decoder is a callable ``decoder(key, value, record, batch) -> (key_repr, value_repr)``: ``key`` and
``value`` are the record's bytes (or None), ``record`` the kafkalog ``Record`` (offset, timestamp, headers,
...) and ``batch`` its batch. Each repr is None (print nothing), text (printed as is; a JSON string in
``--format json``), bytes (base64 in JSON, as the ``base64`` decoder), or any JSON-able structure (compact
JSON in text lines, embedded as is in JSON lines).

Built in, each printing what Kafka's DumpLogSegments prints with the matching option (spec §6.3):

  offsets               __consumer_offsets     --offsets-decoder (3.8+ JSON envelopes)
  transaction-log       __transaction_state    --transaction-log-decoder (4.0+ envelope, status names)
  cluster-metadata      __cluster_metadata     --cluster-metadata-decoder
  remote-log-metadata   __remote_log_metadata  --remote-log-metadata-decoder (JSON, not Java toString)
  share-group-state     __share_group_state    --share-group-state-decoder

Plug-ins: ``package.module:function`` names any importable callable; a bare name is looked up in the
``kafkalog.decoders`` entry-point group. ``auto`` picks the decoder from the topic of each file's partition
directory and leaves other topics to the key/value decoders.

Built-in decoders return a ``Decoded`` (a 2-tuple with notes): ``warning`` for data this version of
kafkalog cannot fully read (a newer record type or version: the output carries Kafka's marker, the exit
status is unchanged), ``error`` for bytes that break the format (reported as a problem), and ``raw`` when
the reprs are markers rather than the data (JSON output then keeps the bytes, base64).
"""
from __future__ import annotations

import importlib
from pathlib import Path

from kafkalog_formats.errors import FormatError

from ..errors import UsageProblem
from ..layout import parse_partition_dir

DELETE = "<DELETE>"

#: internal topic name -> decoder name used by ``auto``
TOPIC_DECODERS = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transaction-log",
    "__cluster_metadata": "cluster-metadata",
    "__remote_log_metadata": "remote-log-metadata",
    "__share_group_state": "share-group-state",
}
ENTRY_POINT_GROUP = "kafkalog.decoders"


class Decoded(tuple):
    """(key_repr, value_repr) plus ``warning``, ``error`` and ``raw`` (see the module docstring), and
    ``floats``: False when the reprs hold no floating-point number (text output may then use the fast JSON
    encoder), None when unknown."""

    def __new__(cls, key, value, warning: str | None = None, error: str | None = None, raw: bool = False,
                floats: bool | None = None):
        self = tuple.__new__(cls, (key, value))
        self.warning, self.error, self.raw, self.floats = warning, error, raw, floats
        return self


class DecoderError(UsageProblem, ValueError):
    """A decoder name that names nothing, or a plug-in that cannot be loaded (a usage error)."""


# --- shared helpers ---------------------------------------------------------------------------------------

def _version_note(message, version: int, unparsed: int) -> str | None:
    notes = []
    if not message.known(version):
        notes.append(f"{message.name} version {version} is not one kafkalog knows ({message.valid}); "
                     "decoded the fields it knows")
    if unparsed:
        notes.append(f"{unparsed} byte(s) after the known fields of {message.name} v{version} were not decoded")
    return "; ".join(notes) or None


def _join(*notes) -> str | None:
    return "; ".join(n for n in notes if n) or None


def _missing_key(topic_decoder: str, offset: int) -> Decoded:
    return Decoded(None, None, error=f"Failed to decode message at offset {offset} using {topic_decoder} "
                                     "decoder (message had a missing key)", raw=True)


def _error(offset: int, reason: str, *, as_key: bool = True, word_offset: bool = True) -> Decoded:
    text = f"Error at {'offset ' if word_offset else ''}{offset}, skipping. {reason}"
    return Decoded(text, None, error=reason, raw=True) if as_key else Decoded(None, text, error=reason, raw=True)


# --- coordinator records (__consumer_offsets, __transaction_state, __share_group_state) ---------------

def _where(e, part: str) -> str:
    return e.reason if e.position is None else f"{e.reason} (at byte {e.position} of the {part})"


def _coordinator(key, value, record, what: str, read_key, read_value, value_label: str = "version",
                 finish=None) -> Decoded:
    """Kafka's coordinator-record output (3.8+): key ``{"type":"<t>","data":{…}}``, value
    ``{"version":"<v>","data":{…}}`` or ``<DELETE>``, or one marker in place of the key."""
    if key is None:
        return _missing_key(what, record.offset)
    try:
        k = read_key(key)
    except FormatError as e:
        return _error(record.offset, _where(e, "key"))
    if k.message is None:
        return Decoded(f"Unknown record type {k.version} at offset {record.offset}, skipping.", None,
                       warning=f"unknown record type {k.version}", raw=True)
    key_repr = {"type": str(k.version), "data": k.message.to_json(k.data, k.version)}
    key_note = _version_note(k.message, k.version, k.unparsed)
    if value is None:
        return Decoded(key_repr, DELETE, warning=key_note, floats=k.message.has_float)
    try:
        v = read_value(k.version, value)
    except FormatError as e:
        return _error(record.offset, _where(e, "value"))
    data = v.message.to_json(v.data, v.version)
    extra = finish(k.version, v, data) if finish else None
    return Decoded(key_repr, {value_label: str(v.version), "data": data},
                   warning=_join(key_note, _version_note(v.message, v.version, v.unparsed), extra),
                   floats=k.message.has_float or v.message.has_float)


def _consumer_protocol_members(record_type: int, v, data: dict) -> None:
    """Classic groups of the consumer protocol: each member's subscription and assignment bytes are
    replaced by their JSON; bytes that do not decode stay base64, as in Kafka."""
    from kafkalog_formats import consumer_protocol as cp
    if record_type != 2 or v.data.get("protocolType") != cp.PROTOCOL_TYPE:
        return None
    for member, out in zip(v.data.get("members") or (), data.get("members") or ()):
        for name, read, msg in (("subscription", cp.read_subscription, cp.Subscription),
                                ("assignment", cp.read_assignment, cp.Assignment)):
            if member.get(name) is None:
                continue
            try:
                d = read(member[name])
            except FormatError:
                continue
            out[name] = msg.to_json(d.data, d.version)
    return None


# The message schemas load when a topic's decoder first runs: a lookup or dump of an ordinary topic
# never pays for them (start-up time).

def offsets(key, value, record, batch) -> Decoded:
    from kafkalog_formats import group_coordinator as gc
    return _coordinator(key, value, record, "offset topic", gc.read_key, gc.read_value,
                        finish=_consumer_protocol_members)


def _status_names(record_type: int, v, data: dict) -> str | None:
    from kafkalog_formats import transaction_log as tl
    status = data.get("transactionStatus")
    if status is None:
        return None
    if status not in tl.STATUS_NAMES:
        return f"unknown transaction status {status}"
    data["transactionStatus"] = tl.STATUS_NAMES[status]
    return None


def transaction_log(key, value, record, batch) -> Decoded:
    from kafkalog_formats import transaction_log as tl
    return _coordinator(key, value, record, "transaction log", tl.read_key,
                        lambda _t, data: tl.read_value(data), finish=_status_names)


def share_group_state(key, value, record, batch) -> Decoded:
    from kafkalog_formats import share_group_state as sg
    # Kafka's share-group-state parser labels the value's version "type" as well (4.0)
    return _coordinator(key, value, record, "share group state topic", sg.read_key, sg.read_value,
                        value_label="type")


# --- __cluster_metadata and __remote_log_metadata -------------------------------------------------------

def _framed(read, value, record, word_offset: bool, what: str) -> Decoded:
    try:
        m = read(value)
    except FormatError as e:
        return _error(record.offset, _where(e, "value"), as_key=False, word_offset=word_offset)
    if m.message is None:
        text = f"Error at {'offset ' if word_offset else ''}{record.offset}, skipping. Unknown {what} id {m.api_key}"
        return Decoded(None, text, warning=f"unknown {what} record type {m.api_key} (version {m.version})",
                       raw=True)
    return Decoded(None, {"type": m.name, "version": m.version, "data": m.message.to_json(m.data, m.version)},
                   warning=_version_note(m.message, m.version, m.unparsed), floats=m.message.has_float)


def cluster_metadata(key, value, record, batch) -> Decoded:
    from kafkalog_formats.metadata_records import read_metadata_record
    return _framed(read_metadata_record, value, record, False, "metadata")


def remote_log_metadata(key, value, record, batch) -> Decoded:
    from kafkalog_formats.remote_log_metadata import read_remote_log_metadata
    return _framed(read_remote_log_metadata, value, record, True, "remote log metadata")


BUILTIN = {
    "offsets": offsets,
    "transaction-log": transaction_log,
    "cluster-metadata": cluster_metadata,
    "remote-log-metadata": remote_log_metadata,
    "share-group-state": share_group_state,
}


# --- resolving names ---------------------------------------------------------------------------------

def _import(name: str):
    """The callable ``module:function`` names."""
    module, _, attr = name.partition(":")
    try:
        obj = importlib.import_module(module)
    except Exception as e:                           # noqa: BLE001 - any import failure is the user's to see
        raise DecoderError(f"cannot import decoder module '{module}': {type(e).__name__}: {e}") from None
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise DecoderError(f"module '{module}' has no attribute '{attr}'")
    if not callable(obj):
        raise DecoderError(f"'{name}' is not callable")
    return obj


def resolve(name: str):
    """The decoder callable for a built-in name, ``module:function``, or an entry point's name."""
    if name in BUILTIN:
        return BUILTIN[name]
    if ":" in name:
        return _import(name)
    from importlib.metadata import entry_points
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                obj = ep.load()
            except Exception as e:                   # noqa: BLE001
                raise DecoderError(f"cannot load decoder '{name}' ({ep.value}): {type(e).__name__}: {e}") from None
            if not callable(obj):
                raise DecoderError(f"decoder '{name}' ({ep.value}) is not callable")
            return obj
    raise DecoderError(f"unknown decoder '{name}': use auto, {', '.join(BUILTIN)}, a payload decoder, "
                       f"module:function, or a name registered under the '{ENTRY_POINT_GROUP}' entry points"
                       f"{_installed()}")


def _installed() -> str:
    from importlib.metadata import entry_points
    names = sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})
    return f" (installed: {', '.join(names)})" if names else ""


def topic_of(file: str) -> str | None:
    """The topic whose data a file holds, from its partition directory name (``bootstrap.checkpoint``:
    the metadata topic)."""
    p = Path(file)
    if p.name == "bootstrap.checkpoint":
        return "__cluster_metadata"
    part = parse_partition_dir(p.parent.name)
    return None if part is None else part.topic


class RecordDecoding:
    """Which record decoder applies to a file: always the same one, or (``auto``) by topic name, other topics
    by ``fallback`` ((name, callable) of the key/value decoder classes, or None: the payload decoders)."""

    def __init__(self, name: str | None, decoder=None, auto: bool = False, fallback: tuple | None = None) -> None:
        self.name, self.decoder, self.auto, self.fallback = name, decoder, auto, fallback
        self._cache: dict[str, tuple] = {}

    @classmethod
    def named(cls, name: str) -> "RecordDecoding":
        if name == "auto":
            return cls("auto", None, auto=True)
        return cls(name, resolve(name))

    def for_file(self, file: str) -> tuple[str, object] | None:
        """(decoder name, callable) for records of ``file``, or None: use the key/value decoders."""
        if not self.auto:
            return (self.name, self.decoder)
        hit = self._cache.get(file)
        if hit is None:
            name = TOPIC_DECODERS.get(topic_of(file) or "")
            hit = self._cache[file] = ((name, BUILTIN[name]),) if name else (self.fallback,)
        return hit[0]


# --- Kafka's --key-decoder-class / --value-decoder-class ------------------------------------------------

def _int_decoder(size: int, java: str):
    """Kafka's ``IntegerDecoder``/``LongDecoder``: ``ByteBuffer.wrap(bytes).getInt()``/``getLong()``, the first
    4/8 bytes big-endian and signed (more bytes are ignored; fewer make Kafka's tool die with
    BufferUnderflowException: here an error marker and a problem, exit status 1)."""
    def decode(data: bytes) -> int:
        if len(data) < size:
            raise ValueError(f"{java} needs {size} bytes, the field has {len(data)}")
        return int.from_bytes(data[:size], "big", signed=True)
    return decode


#: Kafka's decoder classes (``kafka.serializer`` 0.8-3.9, deprecated in 3.8 and converted by
#: ``DumpLogSegments.convertDeprecatedDecoderClass``; ``org.apache.kafka.tools.api`` 3.8+, the only ones in
#: 4.0) -> our payload decoder name, or a function of the bytes. ``DefaultDecoder`` returns the bytes, which
#: Kafka prints as the Java array's identity (``[B@6d06d69c``); kafkalog prints them in hex.
KAFKA_DECODER_CLASSES = {
    "StringDecoder": "string",
    "DefaultDecoder": "hex",
    "IntegerDecoder": _int_decoder(4, "IntegerDecoder"),
    "LongDecoder": _int_decoder(8, "LongDecoder"),
}
KAFKA_DECODER_PACKAGES = ("kafka.serializer.", "org.apache.kafka.tools.api.")


def decoder_class(spec: str):
    """What ``--key-decoder-class``/``--value-decoder-class SPEC`` means: a payload decoder name (str) or a
    function of the bytes (Kafka's Integer/Long decoders, or a plug-in ``module:function``)."""
    simple = spec
    for pkg in KAFKA_DECODER_PACKAGES:
        if spec.startswith(pkg):
            simple = spec[len(pkg):]
    if simple in KAFKA_DECODER_CLASSES:
        return KAFKA_DECODER_CLASSES[simple]
    if ":" in spec:
        return _import(spec)
    if Path(spec).exists():
        raise DecoderError(f"'{spec}' is a file, not a decoder class: the option takes a CLASS when one follows "
                           "it; give PATH before the option, or the class (e.g. StringDecoder)")
    known = ", ".join(KAFKA_DECODER_CLASSES)
    raise DecoderError(f"'{spec}' is a Java class kafkalog cannot load: it understands Kafka's {known} "
                       f"(kafka.serializer.* or org.apache.kafka.tools.api.*); for another format give a Python "
                       "MODULE:FUNCTION that takes the bytes and returns what to print")


class ClassDecoders:
    """A record decoder from two field decoders (each a payload decoder name or a function of the bytes),
    what Kafka's ``DecoderMessageParser`` does with the key and value decoder classes."""

    def __init__(self, key, value) -> None:
        from .payload import to_text
        self.fields = [(lambda b, n=d: to_text(n, b)) if isinstance(d, str) else d for d in (key, value)]

    def __call__(self, key, value, record, batch) -> Decoded:
        out, errors = [], []
        for what, fn, data in (("key", self.fields[0], key), ("value", self.fields[1], value)):
            if data is None:
                out.append(None)
                continue
            try:
                out.append(fn(bytes(data)))
            except Exception as e:                   # noqa: BLE001 - a decoder's failure is a finding
                out.append(None)
                errors.append(f"{what}: {e}" if isinstance(e, ValueError) else f"{what}: {type(e).__name__}: {e}")
        if errors:
            return _error(record.offset, "; ".join(errors))
        return Decoded(out[0], out[1])


def apply(decoder, record, batch) -> Decoded:
    """Run a decoder on one record; whatever a plug-in raises or returns wrongly becomes an error marker."""
    try:
        out = decoder(record.key, record.value, record, batch)
    except Exception as e:                           # noqa: BLE001 - a plug-in's failure is a finding, not a crash
        reason = f"{type(e).__name__}: {e}"
        return _error(record.offset, reason)
    if isinstance(out, Decoded):
        return out
    if not isinstance(out, tuple) or len(out) != 2:
        return _error(record.offset, f"decoder returned {type(out).__name__}, not a (key, value) pair")
    return Decoded(out[0], out[1])
