"""compare.xml (issue 30): the gate as a JUnit XML report, one test case per
gated server × level × metric: a failure for a regression, skipped (with the
reason) for a figure not measured cleanly, passed otherwise; the ceiling
reference is no gated figure. On constructed runs (no load)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from lab.present import compare
from lab.setup.exits import Exit
from test_compare import make_run, manifest, paced_rows
from test_gate import CLEAN, run_pair


def report(out: Path) -> tuple[ET.Element, list[dict[str, object]]]:
    [folder] = [p for p in out.iterdir() if p.name.startswith("compare-")]
    checks = json.loads((folder / "compare.json").read_text())["gate"]["checks"]
    return ET.parse(folder / "compare.xml").getroot(), checks


def cases(root: ET.Element) -> dict[str, str]:
    """Test case name: failure, skipped or passed."""
    out = {}
    for case in root.iter("testcase"):
        kind = [child.tag for child in case if child.tag in ("failure", "skipped", "error")]
        out[str(case.get("name"))] = kind[0] if kind else "passed"
    return out


def test_a_regression_is_a_failure_and_a_pass_passes(tmp_path: Path) -> None:
    # six starts a side: each level's own check (at α/4) can decide
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5, 99.5],
                               4: [400, 404, 398, 402, 401, 399]},
                    {1: [70, 71, 70, 70.5, 71.5, 69.5], 4: [399, 402, 405, 400.5, 403.5, 401]})
    assert compare.main(a, b, False, tmp_path / "out", CLEAN) == Exit.FAILED
    root, checks = report(tmp_path / "out")
    gated = [c for c in checks if c["outcome"] != "not-applicable"]
    assert cases(root) == {"paced across c=1,4 rate": "failure", "paced c=1 rate": "failure",
                           "paced c=4 rate": "passed"}
    assert len(gated) == len(cases(root)) == int(root.get("tests", "-1"))
    assert root.get("failures") == "2" and root.get("skipped") == "0"
    assert all("worse in B" in f.get("message", "") for f in root.iter("failure"))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["gate.outcome"] == "regression" and props["gate.exit"] == "1"


def test_a_host_busy_figure_is_skipped_with_its_reason(tmp_path: Path) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101, 102]}, {1: [50, 51, 52]}, flags_b="host-busy")
    assert compare.main(a, b, False, tmp_path / "out", CLEAN) == Exit.NOT_COMPARABLE
    root, _ = report(tmp_path / "out")
    # req/s refused (host-busy in B), and CPU per request undecided on 3+3 starts
    assert cases(root) == {"paced across c=1 rate": "skipped", "paced c=1 rate": "skipped"}
    messages = [s.get("message", "") for s in root.iter("skipped")]
    assert all("host-busy" in m and "not clean" in m for m in messages), messages


def test_the_ceiling_reference_is_no_test_case(tmp_path: Path) -> None:
    m = manifest(**{"servers.nginx": {"version": "1.22", "role": "ceiling", "facts": {}}})
    a = make_run(tmp_path, "ra", m, paced_rows({1: [100, 101, 102, 100.5, 101.5, 100]}) +
                 paced_rows({1: [1000, 1001, 1002, 1000, 1001, 1002]}, server="nginx"))
    b = make_run(tmp_path, "rb", m, paced_rows({1: [101, 100, 102, 100.5, 101.5, 100]}) +
                 paced_rows({1: [700, 701, 702, 700, 701, 702]}, server="nginx"))
    assert compare.main(a, b, False, tmp_path / "out", CLEAN) == Exit.OK
    root, _ = report(tmp_path / "out")
    got = cases(root)
    assert got["paced c=1 rate"] == "passed" and set(got.values()) == {"passed"}
    assert not any("nginx" in name for name in got)
