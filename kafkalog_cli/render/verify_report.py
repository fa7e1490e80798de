"""Renderers for ``verify``: plain lines, a rich table on a terminal, JSON lines, JUnit XML."""
from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from ..engine.verify import SEVERITY_RANK, VerifyReport


def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def summary_line(r: VerifyReport) -> str:
    errors, warnings = r.count("error"), r.count("warning")
    problems = "no problems" if not errors and not warnings else \
        f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    return (f"verified {r.partitions} partition{'s' * (r.partitions != 1)}, {r.segments} segment"
            f"{'s' * (r.segments != 1)}, {_human_bytes(r.bytes)}, {r.records} records in {r.seconds:.2f} s: "
            f"{problems}")


def finding_line(f) -> str:
    where = f.file or "?"
    if f.position is not None:
        where += f": position {f.position}"
    if f.offset is not None:
        where += f" (offset {f.offset})"
    return f"{f.severity}: {f.kind}: {where}: {f.message}"


def write_text(out, r: VerifyReport, show_info: bool = False) -> None:
    for f in r.findings():
        if f.severity != "info" or show_info:
            out.write(finding_line(f) + "\n")
    out.write(summary_line(r) + "\n")


def write_rich(console, r: VerifyReport, show_info: bool = False) -> None:
    """One table per partition (segments with their numbers and status), then the findings."""
    from rich.table import Table
    from rich.text import Text

    style = {"error": "bold red", "warning": "yellow", "info": "dim", None: "green"}
    groups: dict[str, list] = {}
    for u in r.units:
        if u.kind == "segment":
            groups.setdefault(u.group, []).append(u)
    for group, units in groups.items():
        t = Table(title=group, title_justify="left", expand=False)
        for col, just in (("segment", "left"), ("bytes", "right"), ("batches", "right"), ("records", "right"),
                          ("offsets", "right"), ("codecs", "left"), ("status", "left")):
            t.add_column(col, justify=just)
        for u in units:
            s = u.stats
            worst = u.worst()
            offsets = "-" if s.get("first_offset") is None else f"{s['first_offset']}..{s['last_offset']}"
            codecs = ", ".join(f"{k} {v}" for k, v in s.get("codecs", {}).items()) or "-"
            status = Text(worst or "ok", style=style[worst])
            t.add_row(u.name.rsplit("/", 1)[-1], f"{s.get('bytes', 0):,}", str(s.get("batches", 0)),
                      str(s.get("records", 0)), offsets, codecs, status)
        console.print(t)
    for f in r.findings():
        if f.severity != "info" or show_info:
            console.print(Text(finding_line(f), style=style[f.severity]))
    console.print(Text(summary_line(r), style="bold"))


def write_json(out, r: VerifyReport) -> None:
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for u in r.units:
        for f in u.findings:
            out.write(dumps({"type": "finding", "severity": f.severity, "kind": f.kind, "file": f.file,
                             "position": f.position, "offset": f.offset, "message": f.message,
                             "unit": u.name, "unit_kind": u.kind, "group": u.group}) + "\n")
    for u in r.units:
        if u.kind == "segment":
            out.write(dumps({"type": "segment", "file": u.name, "group": u.group,
                             "status": u.worst() or "ok", **u.stats}) + "\n")
    out.write(dumps({"type": "summary", "partitions": r.partitions, "segments": r.segments, "bytes": r.bytes,
                     "batches": r.batches, "records": r.records, "errors": r.count("error"),
                     "warnings": r.count("warning"), "infos": r.count("info"),
                     "seconds": round(r.seconds, 3)}) + "\n")


def junit_xml(r: VerifyReport, fail_on: str = "error") -> bytes:
    """JUnit XML: one <testsuite> per partition / log directory, one <testcase> per unit; findings at or
    above ``fail_on`` become <failure> elements, the rest go to <system-out>."""
    threshold = SEVERITY_RANK[fail_on]
    root = ET.Element("testsuites", name="kafkalog verify")
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0}
    for u in r.units:
        suite = suites.get(u.group)
        if suite is None:
            suite = suites[u.group] = ET.SubElement(root, "testsuite", name=u.group)
            suite.set("tests", "0")
            suite.set("failures", "0")
            suite.set("errors", "0")
            suite.set("skipped", "0")
            suite.set("time", "0")
        case = ET.SubElement(suite, "testcase", classname=u.group, name=u.name, time=f"{u.seconds:.3f}")
        failing = [f for f in u.findings if SEVERITY_RANK[f.severity] >= threshold]
        other = [f for f in u.findings if SEVERITY_RANK[f.severity] < threshold]
        if failing:
            first = failing[0]
            el = ET.SubElement(case, "failure", message=f"{first.kind}: {first.message}", type=first.kind)
            el.text = "\n".join(_plain(finding_line(f)) for f in failing)
            suite.set("failures", str(int(suite.get("failures")) + 1))
            totals["failures"] += 1
        if other:
            ET.SubElement(case, "system-out").text = "\n".join(_plain(finding_line(f)) for f in other)
        suite.set("tests", str(int(suite.get("tests")) + 1))
        suite.set("time", f"{float(suite.get('time')) + u.seconds:.3f}")
        totals["tests"] += 1
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failures"]))
    root.set("errors", "0")
    root.set("time", f"{r.seconds:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _plain(s: str) -> str:
    """XML 1.0 cannot carry most control characters; file names and messages might."""
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else f"\\x{ord(c):02x}" for c in s)
