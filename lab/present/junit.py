"""compare.xml: the regression gate of `make compare` as a JUnit XML report,
the format GitLab (`artifacts: reports: junit:`) and GitHub's JUnit report
actions show beside a job.

One test case per gated figure: each server × level × metric the gate
judged (lab.analyse.gate.GateCheck; what does not apply there, e.g. the ceiling
reference or requests/s in open loop, is no figure of the gate). A
regression is a <failure>; a figure not compared (not measured cleanly, no
verdict possible) is <skipped> with its reason; a pass has no child. A
failure or skip says its one-line reason in message= and first in its text
(GitLab shows the text, Jenkins the message), the arithmetic on the lines
after. A gate with no figure at all (the ceiling reference alone) is one
skipped case that says why. The gate's own outcome, reason and arithmetic
are the suite's properties.

Valid for Jenkins' JUnit schema (xUnit's junit-10.xsd): <testsuites> takes
no `skipped`.

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


NOTHING = "nothing gated"      # the one case of a gate without a figure


def said(c: GateCheck) -> str:
    """A failure's or a skip's message: one line, the check's reason."""
    return c.reason if c.outcome == REGRESSION else f"{c.outcome}: {c.reason or c.text}"


def tree(g: Gate, ids: tuple[str, str], axis: str = "c") -> ET.Element:
    """The report: one <testsuite> named after the two runs."""
    cases = gated(g)
    failures = sum(c.outcome == REGRESSION for c in cases)
    skipped = sum(c.outcome not in (REGRESSION, PASS) for c in cases) or int(not cases)
    name = f"make compare {ids[0]} (A) vs {ids[1]} (B)"
    counts = {"tests": str(len(cases) or 1), "failures": str(failures), "errors": "0",
              "skipped": str(skipped)}
    # Jenkins' schema (xUnit's junit-10.xsd) allows no `skipped` on <testsuites>
    root = ET.Element("testsuites", {"name": name, **{k: v for k, v in counts.items()
                                                      if k != "skipped"}})
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts})
    props = ET.SubElement(suite, "properties")
    for key, value in (("gate.outcome", g.outcome), ("gate.exit", str(g.code)),
                       ("gate.reason", g.reason), ("gate.detail", g.detail),
                       ("gate.metrics", " ".join(g.metrics)),
                       ("gate.min_effect_pct", f"{g.min_effect_pct:g}")):
        ET.SubElement(props, "property", {"name": key, "value": value})
    for c in cases:
        case = ET.SubElement(suite, "testcase", {"classname": f"gate.{c.server}",
                                                 "name": case_name(c, axis), "time": "0"})
        if c.outcome == REGRESSION:
            failure = ET.SubElement(case, "failure", {"message": said(c), "type": "regression"})
            failure.text = f"{said(c)}\n{c.text}"
        elif c.outcome != PASS:
            skip = ET.SubElement(case, "skipped", {"message": said(c)})
            skip.text = f"{said(c)}\n{c.text}"      # GitLab shows the text, not message=
    if not cases:
        case = ET.SubElement(suite, "testcase", {"classname": "gate", "name": NOTHING,
                                                 "time": "0"})
        why = f"{g.outcome} (exit {g.code}): {g.reason}"
        skip = ET.SubElement(case, "skipped", {"message": why})
        skip.text = f"{why}\n{g.detail}" if g.detail else why
    ET.indent(root)
    return root


def write(path: Path, g: Gate, ids: tuple[str, str], axis: str = "c") -> None:
    text = ET.tostring(tree(g, ids, axis), encoding="unicode")
    files.write_atomic(path, '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n")
