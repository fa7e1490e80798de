"""Read options of the ``kafkalog`` data source, parsed from the strings Spark passes (and the CLI builds).

======================  ==========================================================================
option                  meaning
======================  ==========================================================================
``path`` / ``paths``    log directories, partition directories, ``.log`` files or folders of log
                        directories (``load(p)`` sets ``path``, ``load([p, q])`` sets ``paths``)
``topic``               comma-separated globs (``orders,pay*``); default every topic
``partition``           comma-separated partitions and ranges (``0,2,5-7``); default all
``fromOffset``          first offset to read (inclusive), as ``dump-log --from-offset``
``toOffset``            last offset to read (inclusive), as ``dump-log --to-offset``
``fromTimestamp``       earliest record timestamp (inclusive): milliseconds or ISO-8601 (UTC if no zone)
``toTimestamp``         latest record timestamp (inclusive)
``isolation``           ``read_uncommitted`` (default: every record in the files, as ``dump-log``) or
                        ``read_committed`` (what a consumer with ``isolation.level=read_committed``
                        receives: no aborted records, no control records, nothing at or above the
                        last stable offset)
``includeControl``      ``true``/``false``: keep control records (transaction markers, KRaft control
                        records). Default ``true`` with read_uncommitted, ``false`` with read_committed
                        (a Kafka consumer never returns them)
``splitBytes``          segments larger than this are read by several tasks, cut at offset-index
                        entries (default 64 MiB)
``onError``             what a damaged batch or an unreadable stretch of a segment does (the problems
                        ``kafkalog verify`` reports): ``fail`` (default: the read stops with the problem,
                        its file, position and offset), ``skip`` (the rest is read; rows of a batch whose
                        CRC fails are never returned, records decoded before a decoding error are). List
                        the problems with ``table=errors``
``table``               ``records`` (default) or ``errors``: one row per problem of the segments read
                        (file, position, offset, kind, severity, message, ...), the ``_errors`` table of
                        ``kafkalog export``
``keyDecoder`` /        as ``dump-log --key-decoder/--value-decoder/--decoder``: adds the string columns
``valueDecoder`` /      ``key_decoded`` and ``value_decoded`` (text, or JSON text for Kafka's internal
``decoder``             topics with ``decoder=auto``)
``maxDecompressedBytes``  the largest size one batch's records may decompress to (and the largest single
                        record) that is read (default 128 MiB, ``--max-decompressed-bytes``); a batch
                        above it is a problem (never decoded: memory stays bounded)
``schema``              ``spark-kafka`` (Spark's Kafka source columns first: key, value, topic, partition,
                        offset, timestamp, timestampType, headers; then ours) or ``kafkalog`` (topic first,
                        timestamp_type as text). Default: ``spark-kafka`` when the read uses Spark's option
                        names below, else ``kafkalog``
======================  ==========================================================================

Spark's Kafka source option names, so that a batch job can switch ``format("kafka")`` to ``format("kafkalog")``
for a backfill from disks (the same meaning, over the offsets the files hold):

===========================  =====================================================================
``subscribe``                comma-separated topic names
``subscribePattern``         a regular expression the whole topic name must match
``assign``                   JSON ``{"topicA":[0,1],"topicB":[2,4]}``: only these partitions
``startingOffsets``          ``earliest`` (default) or JSON ``{"topicA":{"0":23,"1":-2}}`` (-2: earliest);
                             partitions not named start at the earliest offset
``endingOffsets``            ``latest`` (default) or JSON ``{"topicA":{"0":50,"1":-1}}``, exclusive (-1:
                             latest); partitions not named end at the latest offset
``startingTimestamp``        milliseconds: each partition starts at the earliest offset whose timestamp is at
                             or after it (Kafka's ``offsetsForTimes``; later records are read whatever
                             their timestamp); a partition without one reads nothing
``kafka.isolation.level``    ``read_uncommitted`` / ``read_committed`` (as ``isolation``)
``kafka.*``, ``includeHeaders``, ``failOnDataLoss``, ``minPartitions``  accepted and ignored (no broker is
                             contacted; headers are always a column)
===========================  =====================================================================

Option names are case-insensitive (Spark lower-cases them). Filters Spark pushes down (``where topic =
'x'``, ``offset > N``, ``partition in (...)``, ``timestamp >= ...``, ``cluster_id``, ``node_id``) are
added to these as further conditions (``pushed``), all of which must hold.
"""
from __future__ import annotations

import fnmatch
import glob
import json
import re
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Mapping

from kafkalog_formats.limits import DEFAULT_MAX_DECOMPRESSED_BYTES

from ..errors import UsageProblem

DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
ON_ERROR = ("fail", "skip", "quarantine")
TABLES = ("records", "errors")
PAYLOAD_DECODERS = ("string", "hex", "base64", "json", "schema-registry", "schema-registry-hex", "none")
KNOWN = ("path", "topic", "partition", "fromOffset", "toOffset", "fromTimestamp", "toTimestamp", "isolation",
         "includeControl", "splitBytes", "onError", "table", "keyDecoder", "valueDecoder", "decoder",
         "maxDecompressedBytes", "columns", "schema", "salvage")
#: Spark's Kafka source options understood (see above); others of its options are accepted and ignored
SPARK_KAFKA = ("subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets", "startingTimestamp",
               "kafka.isolation.level")
SPARK_KAFKA_IGNORED = ("includeHeaders", "failOnDataLoss", "minPartitions", "maxOffsetsPerTrigger")
SCHEMAS = ("spark-kafka", "kafkalog")


class OptionError(UsageProblem, ValueError):
    """A read option that cannot be understood; the message names the option and the value."""


@dataclass(frozen=True)
class ReadOptions:
    topics: tuple = ()                       # globs; empty = every topic
    partitions: tuple | None = None          # ((lo, hi), ...) inclusive ranges; None = every partition
    from_offset: int | None = None
    to_offset: int | None = None
    from_timestamp: int | None = None        # ms, inclusive
    to_timestamp: int | None = None          # ms, inclusive
    read_committed: bool = False
    include_control: bool = True
    split_bytes: int = DEFAULT_SPLIT_BYTES
    on_error: str = "fail"
    table: str = "records"
    key_decoder: str | None = None
    value_decoder: str | None = None
    decoder: str | None = None               # auto, an internal-topic decoder, a payload decoder or a plug-in
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    # conditions Spark pushed down (each group must match: AND of ORs)
    topic_groups: tuple = ()                 # ((glob, ...), ...)
    partition_groups: tuple = ()             # (((lo, hi), ...), ...)
    cluster_ids: frozenset | None = None
    node_ids: frozenset | None = None
    # Spark's Kafka source options
    topic_pattern: str | None = None         # subscribePattern (whole name)
    assigned: frozenset | None = None        # assign: {(topic, partition), ...}
    starting: tuple = ()                     # startingOffsets JSON: ((topic, partition, offset), ...), inclusive
    ending: tuple = ()                       # endingOffsets JSON: ((topic, partition, offset), ...), exclusive
    starting_timestamp: int | None = None    # startingTimestamp (ms)
    schema: str | None = None                # spark-kafka | kafkalog | None (the reader's default)
    salvage: bool = False                    # read what recover --salvage keeps (engine/salvage)

    def wants_topic(self, topic: str) -> bool:
        if self.topics and not any(fnmatch.fnmatchcase(topic, g) for g in self.topics):
            return False
        if self.topic_pattern is not None and not re.fullmatch(self.topic_pattern, topic):
            return False
        if self.assigned is not None and not any(t == topic for t, _p in self.assigned):
            return False
        return all(any(fnmatch.fnmatchcase(topic, g) for g in group) for group in self.topic_groups)

    def wants_assigned(self, topic: str, partition: int | None) -> bool:
        return self.assigned is None or (topic, partition) in self.assigned

    def for_partition(self, topic: str, partition: int | None) -> "ReadOptions":
        """These options with the partition's own offsets of startingOffsets/endingOffsets applied."""
        kw = {}
        for t, p, o in self.starting:
            if t == topic and p == partition and o >= 0:
                kw["from_offset"] = o
        for t, p, o in self.ending:
            if t == topic and p == partition and o >= 0:
                kw["to_offset"] = o - 1
        return self.narrowed(**kw) if kw else self

    @property
    def spark_kafka_names(self) -> bool:
        """The read named its topics with Spark's Kafka source options."""
        return bool(self.topic_pattern is not None or self.assigned is not None or self.uses_subscribe)

    uses_subscribe: bool = False

    def wants_partition(self, partition: int | None) -> bool:
        for ranges in ((self.partitions,) if self.partitions is not None else ()) + self.partition_groups:
            if partition is None or not any(lo <= partition <= hi for lo, hi in ranges):
                return False
        return True

    def wants_log_dir(self, cluster_id: str | None, node_id: int | None) -> bool:
        return ((self.cluster_ids is None or cluster_id in self.cluster_ids)
                and (self.node_ids is None or node_id in self.node_ids))

    @property
    def filters_records(self) -> bool:
        return (self.from_offset is not None or self.to_offset is not None
                or self.from_timestamp is not None or self.to_timestamp is not None)

    @property
    def decodes(self) -> bool:
        """Whether the rows carry ``key_decoded``/``value_decoded``."""
        return any(d is not None for d in (self.key_decoder, self.value_decoder, self.decoder))

    def narrowed(self, **kw) -> "ReadOptions":
        """These options with further conditions (pushed filters): ranges intersect, groups accumulate."""
        out = {}
        for name, value in kw.items():
            if name == "from_offset":
                out[name] = _max(self.from_offset, value)
            elif name == "to_offset":
                out[name] = _min(self.to_offset, value)
            elif name == "from_timestamp":
                out[name] = _max(self.from_timestamp, value)
            elif name == "to_timestamp":
                out[name] = _min(self.to_timestamp, value)
            elif name in ("topic_groups", "partition_groups"):
                out[name] = getattr(self, name) + (value,)
            elif name in ("cluster_ids", "node_ids"):
                old = getattr(self, name)
                out[name] = frozenset(value) if old is None else old & frozenset(value)
            else:
                raise TypeError(name)
        return replace(self, **out)

    def empty(self) -> bool:
        """True when the conditions exclude every record (e.g. offset > 5 and offset < 3)."""
        return ((self.from_offset is not None and self.to_offset is not None and self.from_offset > self.to_offset)
                or (self.from_timestamp is not None and self.to_timestamp is not None
                    and self.from_timestamp > self.to_timestamp)
                or self.cluster_ids == frozenset() or self.node_ids == frozenset())

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> "ReadOptions":
        o = {k.lower(): v for k, v in options.items() if v is not None}
        known = {k.lower() for k in KNOWN + SPARK_KAFKA + SPARK_KAFKA_IGNORED} | {"paths"}
        unknown = sorted(k for k in set(o) - known if not k.startswith("kafka."))
        if unknown:
            raise OptionError(f"unknown option(s) {', '.join(unknown)} for format 'kafkalog'; known: "
                              f"{', '.join(KNOWN)}")
        if "isolation" in o and "kafka.isolation.level" in o and \
                o["isolation"].strip().lower() != o["kafka.isolation.level"].strip().lower():
            raise OptionError("isolation and kafka.isolation.level disagree; give one of them")
        isolation = o.get("isolation", o.get("kafka.isolation.level", "read_uncommitted")).strip().lower()
        if isolation not in ISOLATION_LEVELS:
            raise OptionError(f"isolation: '{o['isolation']}' is not read_uncommitted or read_committed")
        committed = isolation == "read_committed"
        include = o.get("includecontrol")
        on_error = o.get("onerror", "fail").strip().lower()
        if on_error not in ON_ERROR:
            raise OptionError(f"onError: '{o['onerror']}' is not one of {', '.join(ON_ERROR)}")
        table = o.get("table", "records").strip().lower()
        if table not in TABLES:
            raise OptionError(f"table: '{o['table']}' is not records or errors")
        fields = dict(
            topics=tuple(g.strip() for g in o.get("topic", "").split(",") if g.strip()),
            partitions=parse_partitions(o["partition"]) if o.get("partition", "").strip() else None,
            from_offset=_int(o, "fromoffset"),
            to_offset=_int(o, "tooffset"),
            from_timestamp=parse_timestamp(o["fromtimestamp"], "fromTimestamp") if "fromtimestamp" in o else None,
            to_timestamp=parse_timestamp(o["totimestamp"], "toTimestamp") if "totimestamp" in o else None,
            read_committed=committed,
            include_control=(not committed) if include is None else _bool(include, "includeControl"),
            split_bytes=_int(o, "splitbytes", DEFAULT_SPLIT_BYTES, minimum=1),
            on_error=on_error,
            table=table,
            key_decoder=_payload_decoder(o, "keydecoder"),
            value_decoder=_payload_decoder(o, "valuedecoder"),
            decoder=o.get("decoder", "").strip() or None,
            max_decompressed_bytes=_int(o, "maxdecompressedbytes", DEFAULT_MAX_DECOMPRESSED_BYTES, minimum=1024),
            salvage=_bool(o["salvage"], "salvage") if "salvage" in o else False,
        )
        fields.update(_spark_kafka(o))
        opts = cls(**fields)
        if opts.from_offset is not None and opts.to_offset is not None and opts.from_offset > opts.to_offset:
            raise OptionError(f"fromOffset {opts.from_offset} is above toOffset {opts.to_offset}")
        if (opts.from_timestamp is not None and opts.to_timestamp is not None
                and opts.from_timestamp > opts.to_timestamp):
            raise OptionError(f"fromTimestamp {opts.from_timestamp} is after toTimestamp {opts.to_timestamp}")
        if opts.decoder is not None:
            from ..render.record_decoders import DecoderError, RecordDecoding
            try:
                RecordDecoding.named(opts.decoder) if opts.decoder not in PAYLOAD_DECODERS else None
            except DecoderError as e:
                raise OptionError(f"decoder: {e}") from None
        return opts


def _spark_kafka(o: dict) -> dict:
    """The fields given by Spark's Kafka source option names (Spark's KafkaSourceProvider: exactly one of
    subscribe, subscribePattern, assign; batch reads refuse startingOffsets=latest and endingOffsets=earliest)."""
    out: dict = {}
    named = [k for k in ("subscribe", "subscribepattern", "assign") if o.get(k, "").strip()]
    if len(named) > 1:
        raise OptionError("give only one of subscribe, subscribePattern and assign (as Spark's Kafka source)")
    if o.get("subscribe", "").strip():
        if o.get("topic", "").strip():
            raise OptionError("give topic or subscribe, not both")
        out["topics"] = tuple(glob.escape(t.strip()) for t in o["subscribe"].split(",") if t.strip())
        out["uses_subscribe"] = True
    if o.get("subscribepattern", "").strip():
        try:
            re.compile(o["subscribepattern"])
        except re.error as e:
            raise OptionError(f"subscribePattern: '{o['subscribepattern']}' is not a regular expression ({e})") \
                from None
        out["topic_pattern"] = o["subscribepattern"]
    if o.get("assign", "").strip():
        value = _json(o, "assign")
        if not isinstance(value, dict) or not all(isinstance(v, list) and all(_is_int(p) for p in v)
                                                  for v in value.values()):
            raise OptionError('assign: expected JSON such as {"topicA":[0,1],"topicB":[2,4]}')
        out["assigned"] = frozenset((t, p) for t, ps in value.items() for p in ps)
    for key, name, special, refused in (("startingoffsets", "starting", "earliest", "latest"),
                                        ("endingoffsets", "ending", "latest", "earliest")):
        text = o.get(key, "").strip()
        if not text or text.lower() == special:
            continue
        if text.lower() == refused:
            raise OptionError(f"{_NAMES[key]}: {refused} is not allowed in a batch read (as in Spark)")
        value = _json(o, key)
        if not isinstance(value, dict) or not all(
                isinstance(v, dict) and all(_is_int(x) and str(p).lstrip("-").isdigit() for p, x in v.items())
                for v in value.values()):
            raise OptionError(f'{_NAMES[key]}: expected {special} or JSON such as {{"topicA":{{"0":23,"1":-2}}}}')
        bad = -1 if name == "starting" else -2
        entries = tuple(sorted((t, int(p), x) for t, v in value.items() for p, x in v.items()))
        if any(x == bad or x < -2 for _t, _p, x in entries):
            raise OptionError(f"{_NAMES[key]}: {bad} ({refused}) is not allowed in a batch read (as in Spark)")
        out[name] = entries
    if o.get("startingtimestamp", "").strip():
        out["starting_timestamp"] = _int(o, "startingtimestamp")
    schema = o.get("schema", "").strip().lower()
    if schema:
        if schema not in SCHEMAS:
            raise OptionError(f"schema: '{o['schema']}' is not spark-kafka or kafkalog")
        out["schema"] = schema
    return out


def _json(o: dict, key: str):
    try:
        return json.loads(o[key])
    except ValueError:
        raise OptionError(f"{_NAMES[key]}: '{o[key]}' is not JSON") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _payload_decoder(o: dict, key: str) -> str | None:
    value = o.get(key, "").strip()
    if not value:
        return None
    if value not in PAYLOAD_DECODERS:
        raise OptionError(f"{_NAMES[key]}: '{value}' is not one of {', '.join(PAYLOAD_DECODERS)}")
    return value


def _max(a, b):
    return b if a is None else a if b is None else max(a, b)


def _min(a, b):
    return b if a is None else a if b is None else min(a, b)


def paths_option(options: Mapping[str, str]) -> list[str]:
    """The paths of ``load(path)`` (option ``path``) or ``load([...])`` (option ``paths``, a JSON list)."""
    o = {k.lower(): v for k, v in options.items()}
    paths: list[str] = []
    if o.get("paths"):
        try:
            value = json.loads(o["paths"])
        except ValueError:
            value = o["paths"].split(",")
        paths.extend(value if isinstance(value, list) else [value])
    if o.get("path"):
        paths.append(o["path"])
    if not paths:
        raise OptionError("no path: use spark.read.format('kafkalog').load('/var/lib/kafka/data')")
    return [str(p) for p in paths]


def parse_partitions(spec: str) -> tuple:
    """``"0,2,5-7"`` -> ((0, 0), (2, 2), (5, 7))."""
    out = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise OptionError(f"partition: '{part}' is not a number or a range like 5-7") from None
        if a < 0 or b < a:
            raise OptionError(f"partition: '{part}' is not a range of partitions (0 or above, low-high)")
        out.append((a, b))
    return tuple(out)


def parse_timestamp(value: str, name: str) -> int:
    """Milliseconds since the epoch from ``1700000000000`` or ISO-8601 (``2023-11-14T22:13:20Z``,
    ``2023-11-14``); a time without a zone is UTC."""
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise OptionError(f"{name}: '{value}' is neither milliseconds since the epoch nor an ISO-8601 time "
                          "such as 2023-11-14T22:13:20Z") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _int(o: dict, key: str, default=None, minimum: int = 0):
    if key not in o or str(o[key]).strip() == "":
        return default
    try:
        v = int(str(o[key]).strip())
    except ValueError:
        raise OptionError(f"{_NAMES[key]}: '{o[key]}' is not an integer") from None
    if v < minimum:
        raise OptionError(f"{_NAMES[key]}: {v} is below {minimum}")
    return v


def _bool(value: str, name: str) -> bool:
    v = str(value).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise OptionError(f"{name}: '{value}' is not true or false")


_NAMES = {"fromoffset": "fromOffset", "tooffset": "toOffset", "splitbytes": "splitBytes",
          "maxdecompressedbytes": "maxDecompressedBytes", "keydecoder": "keyDecoder", "valuedecoder": "valueDecoder",
          "assign": "assign", "startingoffsets": "startingOffsets", "endingoffsets": "endingOffsets",
          "startingtimestamp": "startingTimestamp"}
