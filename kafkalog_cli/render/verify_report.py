"""Renderers for ``verify``: the text report for people (``verify_text``), JSON lines, JUnit XML."""
from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from ..engine.verify import SEVERITY_RANK, VerifyReport
from ..names import clean, json_name, json_text, shown


def finding_line(f) -> str:
    where = f.file or "?"
    if f.position is not None:
        where += f": position {f.position}"
    if f.offset is not None:
        where += f" (offset {f.offset})"
    return f"{f.severity}: {f.kind}: {where}: {f.message}"


def write_text(out, r: VerifyReport, show_info: bool = False, *, details: bool = False, fail_on: str = "error",
               given=(), width: int | None = None) -> None:
    """The report for people (``render/verify_text``), plain: verdict, findings by partition, totals."""
    from . import verify_text as vt
    vt.write_plain(out, r, vt.Options(show_info, details, fail_on, width or vt.WIDTH, tuple(given)))


def write_rich(console, r: VerifyReport, show_info: bool = False, *, details: bool = False, fail_on: str = "error",
               given=()) -> None:
    """The same report on a terminal: coloured, at most 80 columns (fewer on a narrower terminal)."""
    from . import verify_text as vt
    width = min(vt.WIDTH, console.width or vt.WIDTH)
    vt.write_console(console, r, vt.Options(show_info, details, fail_on, width, tuple(given)))


def write_json(out, r: VerifyReport) -> None:
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def dumps(obj) -> str:
        return json_text(encode(obj))
    for u in r.units:
        for f in u.findings:
            out.write(dumps({"type": "finding", "severity": f.severity, "kind": f.kind,
                             "file": f.file if f.file is None else json_name(f.file), "position": f.position,
                             "offset": f.offset, "message": clean(f.message), "unit": json_name(u.name),
                             "unit_kind": u.kind, "group": json_name(u.group)}) + "\n")
    for u in r.units:
        if u.kind == "segment":
            out.write(dumps({"type": "segment", "file": json_name(u.name), "group": json_name(u.group),
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
            suite = suites[u.group] = ET.SubElement(root, "testsuite", name=shown(u.group))
            suite.set("tests", "0")
            suite.set("failures", "0")
            suite.set("errors", "0")
            suite.set("skipped", "0")
            suite.set("time", "0")
        case = ET.SubElement(suite, "testcase", classname=shown(u.group), name=shown(u.name),
                             time=f"{u.seconds:.3f}")
        failing = [f for f in u.findings if SEVERITY_RANK[f.severity] >= threshold]
        other = [f for f in u.findings if SEVERITY_RANK[f.severity] < threshold]
        if failing:
            first = failing[0]
            el = ET.SubElement(case, "failure", message=_plain(f"{first.kind}: {first.message}"), type=first.kind)
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
    """XML 1.0 cannot carry most control characters nor a byte that is not UTF-8; file names and messages
    might (``names.shown``), line by line."""
    return "\n".join(shown(line) for line in s.split("\n"))
