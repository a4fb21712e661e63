"""compare.xml: the regression gate of `make compare` as a JUnit XML report,
the format GitLab (`artifacts: reports: junit:`) and GitHub's JUnit report
actions show beside a job.

One test case per gated figure: each server × level × metric the gate
judged (lab.analyse.gate.GateCheck; what does not apply there, e.g. the ceiling
reference or requests/s in open loop, is no figure of the gate). A
regression is a <failure>; a figure not compared (not measured cleanly, no
verdict possible) is <skipped> with its reason; a pass has no child. The
gate's own outcome and reason are the suite's properties.

It reads only the gate's result objects (outcome words and texts), so it
keeps working when the verdict rule changes.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from lab.record import files
from lab.analyse.gate import NOT_APPLICABLE, PASS, REGRESSION, Gate, GateCheck


def gated(g: Gate) -> list[GateCheck]:
    """The gate's figures: every check but those that do not apply."""
    return [c for c in g.checks if c.outcome != NOT_APPLICABLE]


def case_name(c: GateCheck, axis: str) -> str:
    where = f"across {axis}={','.join(map(str, c.levels))}" if c.levels else f"{axis}={c.value}"
    return f"{c.server} {where} {c.metric}"


def tree(g: Gate, ids: tuple[str, str], axis: str = "c") -> ET.Element:
    """The report: one <testsuite> named after the two runs."""
    cases = gated(g)
    failures = sum(c.outcome == REGRESSION for c in cases)
    skipped = sum(c.outcome not in (REGRESSION, PASS) for c in cases)
    name = f"make compare {ids[0]} (A) vs {ids[1]} (B)"
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0",
              "skipped": str(skipped)}
    # Jenkins' schema (xUnit's junit-10.xsd) allows no `skipped` on <testsuites>
    root = ET.Element("testsuites", {"name": name, **{k: v for k, v in counts.items()
                                                      if k != "skipped"}})
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts})
    props = ET.SubElement(suite, "properties")
    for key, value in (("gate.outcome", g.outcome), ("gate.exit", str(g.code)),
                       ("gate.reason", g.reason), ("gate.metrics", " ".join(g.metrics)),
                       ("gate.min_effect_pct", f"{g.min_effect_pct:g}")):
        ET.SubElement(props, "property", {"name": key, "value": value})
    for c in cases:
        case = ET.SubElement(suite, "testcase", {"classname": f"gate.{c.server}",
                                                 "name": case_name(c, axis), "time": "0"})
        if c.outcome == REGRESSION:
            failure = ET.SubElement(case, "failure", {"message": c.text, "type": "regression"})
            failure.text = c.text
        elif c.outcome != PASS:
            skip = ET.SubElement(case, "skipped", {"message": f"{c.outcome}: {c.text}"})
            skip.text = f"{c.outcome}: {c.text}"   # GitLab shows the text, not message=
    ET.indent(root)
    return root


def write(path: Path, g: Gate, ids: tuple[str, str], axis: str = "c") -> None:
    text = ET.tostring(tree(g, ids, axis), encoding="unicode")
    files.write_atomic(path, '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n")
