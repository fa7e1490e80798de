"""The text ``kafka-configs.sh --describe`` prints for topics and brokers (Kafka ``ConfigCommand``), read back.

Two shapes, by Kafka version and connection:

* through ``--bootstrap-server`` (2.5+; the only way from 3.0 for topics, ``describeResourceConfig``)::

      Dynamic configs for topic orders are:            (without --all: topic overrides only)
      All configs for topic orders are:                (with --all: every topic key, effective value)
      Dynamic configs for broker 1 are:
      Default configs for brokers in the cluster are:
        <name>=<value> sensitive=<true|false> synonyms={<SOURCE>:<name>=<value>, ...}

  entries sorted by name; the first synonym is the entry's own source (``DYNAMIC_TOPIC_CONFIG``,
  ``DYNAMIC_BROKER_CONFIG``, ``DYNAMIC_DEFAULT_BROKER_CONFIG``, ``STATIC_BROKER_CONFIG``, ``DEFAULT_CONFIG``,
  ...); a sensitive or unset value prints as ``null``.
* through ``--zookeeper`` (up to 2.8, ``describeConfigWithZk``): one line per entity,
  ``Configs for topic 'orders' are k1=v1,k2=v2`` (Java ``HashMap`` order). Values may hold commas
  (``cleanup.policy=compact,delete``): a comma-separated piece without ``=`` continues the previous value.

Lines of any other form (the tool's warnings, blank lines) are skipped.
"""
from __future__ import annotations

import re
from typing import NamedTuple

_HEADER = re.compile(r"(?P<kind>All|Dynamic) configs for (?P<type>topic|broker) (?P<name>.*) are:\s*\Z")
_DEFAULT_HEADER = re.compile(r"Default configs for (?P<type>brokers|broker-loggers) in the cluster are:\s*\Z")
_ZK_LINE = re.compile(r"Configs for (?:(?P<type>topic|brokers) '(?P<name>[^']*)'|(?P<default>default brokers)) are ?"
                      r"(?P<body>.*)\Z")
_ENTRY = re.compile(r"  (?P<name>[^=\s]+)=(?P<value>.*?) sensitive=(?P<sensitive>true|false) "
                    r"synonyms=\{(?P<synonyms>.*)\}\s*\Z")
_SYN_SOURCE = re.compile(r"([A-Z_]+):")


class DescribedConfig(NamedTuple):
    entity_type: str           # "topic" or "broker"
    entity: str                # topic name, broker id, or "" for the cluster-wide broker default
    name: str
    value: str | None          # None: printed as null
    source: str                # Kafka ConfigSource name; "ZOOKEEPER" for the --zookeeper form
    line: int                  # 1-based line number in the text
    all_configs: bool          # True when the section was printed with --all


def parse_config_describe(text: str) -> list[DescribedConfig]:
    """Every config entry of the text, in order."""
    return list(iter_config_describe(text.splitlines()))


def split_lines(chunks):
    """The lines ``"".join(chunks).splitlines()`` gives, one at a time, from text given in pieces: a file of
    any size is read a piece at a time, with the same lines (and line numbers) as read whole."""
    carry = ""
    for chunk in chunks:
        lines = (carry + chunk).splitlines(keepends=True)
        carry = ""
        if lines:
            last = lines[-1]
            # a last line without its end goes on in the next piece, and so may a "\r" ("\r\n" is one end)
            if last.splitlines()[0] == last or last.endswith("\r"):
                carry = lines.pop()
        for line in lines:
            yield line.splitlines()[0]
    if carry:
        yield from carry.splitlines()


def iter_config_describe(lines):
    """Every config entry of ``lines`` (an iterable of lines without their line ends, as ``split_lines``
    gives them), in order."""
    section: tuple[str, str, bool] | None = None
    for no, line in enumerate(lines, 1):
        m = _HEADER.match(line)
        if m:
            section = (m["type"], m["name"], m["kind"] == "All")
            continue
        m = _DEFAULT_HEADER.match(line)
        if m:
            section = ("broker" if m["type"] == "brokers" else "broker-logger", "", False)
            continue
        m = _ENTRY.match(line)
        if m and section is not None:
            sources = _SYN_SOURCE.match(m["synonyms"])
            value = None if m["value"] == "null" else m["value"]
            yield DescribedConfig(section[0], section[1], m["name"], value,
                                  sources.group(1) if sources else "UNKNOWN", no, section[2])
            continue
        m = _ZK_LINE.match(line)
        if m:
            section = None
            etype = "topic" if m["type"] == "topic" else "broker"
            entity = "" if m["default"] else m["name"]
            for name, value in _zk_pairs(m["body"]):
                yield DescribedConfig(etype, entity, name, value, "ZOOKEEPER", no, False)
            continue
        if line.strip() and not line.startswith("  "):
            section = None


def _zk_pairs(body: str) -> list[tuple[str, str]]:
    pairs: list[list[str]] = []
    if not body.strip():
        return []
    for piece in body.split(","):
        if "=" in piece and re.match(r"[A-Za-z0-9._-]+=", piece):
            name, _, value = piece.partition("=")
            pairs.append([name, value])
        elif pairs:
            pairs[-1][1] += "," + piece
    return [(n, v) for n, v in pairs]
