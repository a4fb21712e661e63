"""compare.xml (issue 30): the gate as a JUnit XML report, one test case per
gated server × level × metric: a failure for a regression, skipped (with the
reason) for a figure not measured cleanly, passed otherwise; the ceiling
reference is no gated figure. On constructed runs (no load).

Every report is checked with `xmllint --schema` against the JUnit schema
Jenkins accepts (tests/fixtures/jenkins-junit.xsd, its source named in its
header): issue 44 found `skipped` on <testsuites>, which Jenkins refuses."""
from __future__ import annotations

import json
import os
import re
from dataclasses import replace
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT
from lab.present import compare, junit
from lab.record.rows import Row
from lab.setup.exits import Exit
from test_compare import make_run, manifest, paced_rows
from test_gate import CLEAN, run_pair
import test_pairverdict as paired

pytestmark = pytest.mark.unit

SCHEMA = ROOT / "tests" / "fixtures" / "jenkins-junit.xsd"
INSTALL = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "libxml2-utils"]


@pytest.fixture(scope="module")
def xmllint() -> str:
    """xmllint (Debian's libxml2-utils), installed as .ci/run installs it;
    as another user than root, the apt-get line is the skip's reason."""
    found = shutil.which("xmllint")
    if found is None and os.geteuid() == 0:
        subprocess.run(INSTALL, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        found = shutil.which("xmllint")
        assert found, f"{' '.join(INSTALL)} did not install xmllint"
    if found is None:
        pytest.skip(f"xmllint is missing: {' '.join(INSTALL)} (as root) installs it")
    return found


def invalid(xmllint: str, path: Path) -> str:
    """What xmllint says is wrong with `path` against Jenkins' schema ("" when valid)."""
    done = subprocess.run([xmllint, "--noout", "--schema", str(SCHEMA), str(path)],
                          capture_output=True, text=True, timeout=60)
    return "" if done.returncode == 0 else done.stderr.strip()


def xml_of(out: Path) -> Path:
    [folder] = [p for p in out.iterdir() if p.name.startswith("compare-")]
    return folder / "compare.xml"


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
    suite = root.find("testsuite")
    assert suite is not None and suite.get("failures") == "2" and suite.get("skipped") == "0"
    assert all("B worse by" in f.get("message", "") and "worse in B" in (f.text or "")
               for f in root.iter("failure"))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["gate.outcome"] == "regression" and props["gate.exit"] == "1"


def test_a_host_busy_figure_is_skipped_with_its_reason(tmp_path: Path) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101, 102]}, {1: [50, 51, 52]}, flags_b="host-busy")
    assert compare.main(a, b, False, tmp_path / "out", CLEAN) == Exit.NOT_COMPARABLE
    root, _ = report(tmp_path / "out")
    # req/s refused (host-busy in B), and CPU per request undecided on 3+3 starts
    assert cases(root) == {"paced across c=1 rate": "skipped", "paced c=1 rate": "skipped"}
    said = [(s.get("message", ""), s.text or "") for s in root.iter("skipped")]
    assert all("host-busy" in m and "CPU per request" in m and "not clean" in t
               for m, t in said), said


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


def test_the_schema_refuses_what_jenkins_refuses(xmllint: str, tmp_path: Path) -> None:
    """The schema kept here is strict where Jenkins' is: an attribute it does
    not declare, on <testsuites> or a test case, is refused."""
    for bad in ('<testsuites skipped="1"/>', '<testsuites><testsuite name="s" tests="1" '
                'failures="0" errors="0"><testcase name="c" verdict="x"/></testsuite>'
                '</testsuites>', '<testsuites><testsuite name="s"/></testsuites>'):
        (tmp_path / "bad.xml").write_text(bad)
        assert "not allowed" in invalid(xmllint, tmp_path / "bad.xml") or \
            "is required" in invalid(xmllint, tmp_path / "bad.xml"), bad
    (tmp_path / "good.xml").write_text('<testsuites tests="1"><testsuite name="s" tests="1" '
                                       'failures="0" errors="0" skipped="1"><testcase name="c">'
                                       '<skipped message="m">m</skipped></testcase>'
                                       '</testsuite></testsuites>')
    assert invalid(xmllint, tmp_path / "good.xml") == ""


def two_run_reports(tmp: Path) -> dict[str, tuple[int, Path]]:
    """compare.xml of the gate of two runs, one a way it ends: a regression
    (exit 1), a pass (0), host-busy figures skipped (3), the ceiling alone (3)."""
    made: dict[str, tuple[int, Path]] = {}
    a, b = run_pair(tmp / "r", {1: [100, 101, 102, 100.5, 101.5, 99.5],
                                4: [400, 404, 398, 402, 401, 399]},
                    {1: [70, 71, 70, 70.5, 71.5, 69.5], 4: [399, 402, 405, 400.5, 403.5, 401]})
    made["regression"] = (compare.main(a, b, False, tmp / "o1", CLEAN), xml_of(tmp / "o1"))
    a, b = run_pair(tmp / "p", {1: [100, 101, 102, 100.5, 101.5]},
                    {1: [101, 100, 102, 100.5, 101]})
    made["pass"] = (compare.main(a, b, False, tmp / "o2", CLEAN), xml_of(tmp / "o2"))
    a, b = run_pair(tmp / "h", {1: [100, 101, 102]}, {1: [50, 51, 52]}, flags_b="host-busy")
    made["host-busy"] = (compare.main(a, b, False, tmp / "o3", CLEAN), xml_of(tmp / "o3"))
    # a sleep a request under hypervisor steal: CPU per request cannot see it
    def steal(rates: dict[int, list[float]]) -> list[Row]:
        return [replace(r, flags="steal", steal_pct=15.0, server_cpu_us_per_req=50.0)
                for r in paced_rows(rates)]     # type: ignore[arg-type]
    a = make_run(tmp / "s", "ra", manifest(), steal({1: [1000, 1010, 990, 1005, 995],
                                                     4: [4000, 4040, 3960, 4020, 3980]}))
    b = make_run(tmp / "s", "rb", manifest(), steal({1: [100, 101, 99, 100.5, 99.5],
                                                     4: [400, 404, 396, 402, 398]}))
    made["steal"] = (compare.main(a, b, False, tmp / "o5", CLEAN), xml_of(tmp / "o5"))
    runs = ROOT / "tests" / "fixtures" / "runs"
    made["sturdy"] = (compare.main(runs / "20261124-071349-sturdy+paced-landed",
                                   runs / "20261125-120537-sturdy+paced-pre21", False,
                                   tmp / "o6", CLEAN),
                      xml_of(tmp / "o6"))
    made["ceiling"] = (compare.main(runs / "20261123-033230-warming+nginx+flaky",
                                    runs / "20261123-033407-nginx+paced", False, tmp / "o4",
                                    CLEAN), xml_of(tmp / "o4"))
    return made


def paired_reports(tmp: Path) -> dict[str, tuple[int, Path]]:
    """compare.xml of the gate of a paired run (lab.analyse.pairgate) on
    constructed start pairs: a head that sleeps (exit 1), the same code (0),
    too few pairs (3)."""
    made: dict[str, tuple[int, Path]] = {}
    tmp.mkdir()
    for name, rows in (("sleep", paired.sleepy(10)),
                       ("same", paired.pairs(10, 1.0, sd=0.005)
                        + paired.pairs(10, 1.0, sd=0.005, seed=2, value=4)),
                       ("few", paired.pairs(3, 1.0))):
        g = paired.gate_of(rows)
        junit.write(tmp / f"{name}.xml", g, ("run:a", "run:b"))
        made[name] = (g.code, tmp / f"{name}.xml")
    return made


def test_every_compare_xml_is_valid_for_jenkins(xmllint: str, tmp_path: Path) -> None:
    reports = {**two_run_reports(tmp_path), **paired_reports(tmp_path / "paired")}
    assert {k: code for k, (code, _) in reports.items()} == {
        "regression": 1, "pass": 0, "host-busy": 3, "steal": 3, "sturdy": 3, "ceiling": 3,
        "sleep": 1, "same": 0, "few": 3}
    assert {k: invalid(xmllint, path) for k, (_, path) in reports.items()} == \
        {k: "" for k in reports}


def test_a_skipped_case_says_its_reason_in_its_text(tmp_path: Path) -> None:
    """GitLab shows a skipped case's text, not its message="""
    reports = {**two_run_reports(tmp_path), **paired_reports(tmp_path / "paired")}
    skipped = [s for _, path in reports.values()
               for s in ET.parse(path).getroot().iter("skipped")]
    assert skipped
    for s in skipped:
        assert s.text and s.get("message") and s.text.startswith(str(s.get("message"))), \
            (s.text, s.get("message"))


def test_a_compare_of_the_ceiling_alone_says_why_in_a_skipped_case(tmp_path: Path) -> None:
    """No figure gated (the ceiling reference is the only server in common):
    exit 3, and the report holds one skipped case naming the reason, not
    tests="0" with the reason only in a property."""
    code, path = two_run_reports(tmp_path)["ceiling"]
    assert code == Exit.NOT_COMPARABLE
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("skipped")) == ("1", "1")
    assert cases(root) == {junit.NOTHING: "skipped"}
    [skip] = root.iter("skipped")
    assert "ceiling reference is not gated" in skip.get("message", "")
    assert "exit 3" in skip.get("message", "") and "ceiling" in (skip.text or "")


def test_each_reason_comes_first_in_one_short_line(tmp_path: Path) -> None:
    """A failure's or skip's message, and the gate's reason, are one line
    under 100 characters; the arithmetic (interval, α, starts) follows in
    the text and in gate.detail. Issue 44 saw skip messages of 258
    characters and a gate.reason of 579."""
    reports = {**two_run_reports(tmp_path), **paired_reports(tmp_path / "paired")}
    for name, (code, path) in reports.items():
        root = ET.parse(path).getroot()
        props = {p.get("name"): p.get("value") or "" for p in root.iter("property")}
        reason = props["gate.reason"]
        assert "\n" not in reason and len(reason) < 100, (name, reason)
        if code != Exit.OK:
            assert props["gate.detail"] and props["gate.detail"] != reason, name
        for el in [*root.iter("failure"), *root.iter("skipped")]:
            message, text = el.get("message", ""), el.text or ""
            assert "\n" not in message and len(message) < 100, (name, message)
            first, _, rest = text.partition("\n")
            assert first == message and rest, (name, text)
    # the arithmetic is there, after the line: too few starts and what would decide
    root = ET.parse(reports["host-busy"][1]).getroot()
    assert all("3 against 3 cannot reach" in (s.text or "") and
               "3 against 3" not in s.get("message", "") for s in root.iter("skipped"))


def documented_forms() -> list[re.Pattern[str]]:
    """The case names docs/ci.md gives for compare.xml (`<server> c=<level>
    <metric>` ...), each as a pattern of the names it stands for."""
    text = " ".join((ROOT / "docs" / "ci.md").read_text().split())
    para = text[text.index("`compare.xml` is the gate as a JUnit XML report"):]
    forms = re.findall(r"`(<server> [^`]*<metric>)`", para.split(" A regression ")[0])
    out = []
    for form in forms:
        pattern = re.escape(form)
        for word, said in ((re.escape("<levels>"), r"\d+(,\d+)*"),
                           (re.escape("<level>"), r"\d+"), (re.escape("<server>"), r"\S+"),
                           (re.escape("<metric>"), r".+")):
            pattern = pattern.replace(word, said)
        out.append(re.compile(pattern + "$"))
    return out


def test_every_case_name_has_a_form_docs_ci_md_gives(tmp_path: Path) -> None:
    """Both forms are written down (issue 44: ci.md gave only the one of a
    level, not `<server> across c=… <metric>`), and every case of the real
    reports is one of them."""
    forms = documented_forms()
    assert len(forms) == 2, forms
    names = [str(case.get("name")) for _, path in two_run_reports(tmp_path).values()
             for case in ET.parse(path).getroot().iter("testcase")
             if case.get("name") != junit.NOTHING]
    used = {i for name in names for i, form in enumerate(forms) if form.match(name)}
    assert [n for n in names if not any(f.match(n) for f in forms)] == []
    assert used == {0, 1}, names
