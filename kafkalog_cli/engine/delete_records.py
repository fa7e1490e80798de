"""What ``kafkalog delete-records`` is asked to do: kafka-delete-records.sh's offset file and the
``--offset`` flags, parsed as Kafka's ``DeleteRecordsCommand`` parses its file (3.x–4.x, ``parseJsonData``):
a JSON object with ``version`` 1 (the default when absent) and ``partitions``, a list of objects with
``topic`` (string), ``partition`` (int) and ``offset`` (long); a topic-partition given twice is an error.
An offset of -1 stands for the high watermark (``DeleteRecordsRequest.HIGH_WATERMARK``)."""
from __future__ import annotations

import json

from ..errors import UsageProblem

INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
HIGH_WATERMARK = -1


class OffsetsError(UsageProblem, ValueError):
    """The offsets asked for cannot be used (a usage error: nothing was read or changed)."""


def _java_int(value, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise OffsetsError(f"{what} must be a {'32' if hi == INT_MAX else '64'}-bit integer, not {value!r}")
    return value


def _check(topic: str, partition: int, offset: int) -> None:
    if partition < 0:
        raise OffsetsError(f"{topic}-{partition}: a partition number is not negative")
    if offset < HIGH_WATERMARK:
        raise OffsetsError(f"{topic}-{partition}: offset {offset} is neither an offset nor -1 (the high watermark)")


def parse_offset_json(text: str) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} from kafka-delete-records.sh's ``--offset-json-file`` content."""
    try:
        js = json.loads(text)
    except ValueError:
        raise OffsetsError("the offset file is not valid JSON") from None
    if not isinstance(js, dict):
        raise OffsetsError("the offset file must hold a JSON object with \"partitions\"")
    version = js.get("version", 1)
    if version != 1:
        raise OffsetsError(f"Not supported version field value {version!r} (kafka-delete-records.sh knows 1)")
    if "partitions" not in js:
        raise OffsetsError("Missing partitions field")
    if not isinstance(js["partitions"], list):
        raise OffsetsError("\"partitions\" must be a list")
    out: dict[tuple[str, int], int] = {}
    dupes = []
    for i, p in enumerate(js["partitions"]):
        if not isinstance(p, dict) or not {"topic", "partition", "offset"} <= p.keys():
            raise OffsetsError(f"partitions[{i}] must be an object with topic, partition and offset")
        topic = p["topic"]
        if not isinstance(topic, str) or not topic:
            raise OffsetsError(f"partitions[{i}].topic must be a topic name")
        part = _java_int(p["partition"], f"partitions[{i}].partition", INT_MIN, INT_MAX)
        off = _java_int(p["offset"], f"partitions[{i}].offset", LONG_MIN, LONG_MAX)
        _check(topic, part, off)
        if (topic, part) in out:
            dupes.append(f"{topic}-{part}")
        out[(topic, part)] = off
    if dupes:
        raise OffsetsError(f"Offset json file contains duplicate topic partitions: {','.join(dupes)}")
    return out


def parse_offset_flags(specs) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} from ``--offset TOPIC-N=OFFSET`` flags."""
    from ..layout import parse_partition_spec
    out: dict[tuple[str, int], int] = {}
    for spec in specs:
        name, eq, value = spec.rpartition("=")
        if not eq:
            raise OffsetsError(f"--offset {spec}: give TOPIC-N=OFFSET")
        try:
            tp = parse_partition_spec(name)
        except ValueError as e:
            raise OffsetsError(f"--offset {spec}: {e}") from None
        if not value.strip().lstrip("-").isdigit() or len(value.strip()) > 20:
            raise OffsetsError(f"--offset {spec}: the offset must be an integer (-1: the high watermark)")
        off = _java_int(int(value), f"--offset {spec}", LONG_MIN, LONG_MAX)
        _check(tp[0], tp[1], off)
        if tp in out:
            raise OffsetsError(f"{tp[0]}-{tp[1]} is given twice")
        out[tp] = off
    return out
