"""The probe's failures as typed values (issue 21): the contract's breaches
after each probe and at the end (lab.analyse.contract.Check), and what the
probe came to (lab.analyse.probeview.ProbeOutcome), whose text() is the one
place the verdict is written. probe.json keeps its keys (error_after,
final_error, verdict), so one written before the breaches were kept still
reads and renders the same."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from test_probe import FAST, fake_report
from lab.analyse import probeview
from lab.analyse.contract import Check
from lab.analyse.probeview import ProbeOutcome
from lab.measure import probe

pytestmark = pytest.mark.unit

BREACHES = (Check("Content-Type", "GET /api must send Content-Type: application/json", False,
                  "'text/plain'"),
            Check("404 elsewhere", "GET /no-such-path must answer 404", False, "200 OK"))


def broken_report() -> probe.ProbeReport:
    bad = fake_report("bad", False)
    first = dataclasses.replace(bad.results[0], breaches_after=BREACHES,
                                error_after=" / ".join(c.text() for c in BREACHES))
    return dataclasses.replace(bad, results=(first, *bad.results[1:]),
                               final_breaches=BREACHES[:1], final_error=BREACHES[0].text())


def test_each_kind_of_outcome_says_itself() -> None:
    assert ProbeOutcome("a", True).text() == "a: still answers"
    assert ProbeOutcome("a", True).kind == "still-answers"
    back = ProbeOutcome("a", True, stopped_after="garbage")
    assert back.kind == "recovered"
    assert back.text() == "a: still answers (stopped answering after garbage and recovered)"
    gone = ProbeOutcome("a", False, error="port 1 busy")
    assert gone.kind == "unprobed" and gone.text() == "a: probe failed: port 1 busy"
    dead = ProbeOutcome("a", False, stopped_after="slow", breaches=BREACHES)
    assert dead.kind == "stopped-answering"
    assert dead.text() == ("a: stopped answering after slow: " +
                           " / ".join(c.text() for c in BREACHES))


def test_breaches_survive_probe_json(tmp_path: Path) -> None:
    report = broken_report()
    path = tmp_path / "probe.json"
    probe.save(report, path)
    back = probe.load_report(path)
    assert back == report
    assert back.results[0].breaches_after == BREACHES
    data = json.loads(path.read_text())
    assert data["kind"] == "stopped-answering"
    assert data["verdict"] == report.verdict() == probeview.outcome("bad", data).text()
    assert "Content-Type" in report.verdict() and "'text/plain'" in report.verdict()
    assert data["results"][0]["breaches_after"][1]["rule"] == BREACHES[1].rule


def test_a_probe_json_written_before_the_breaches_were_kept_still_reads(tmp_path: Path) -> None:
    """The keys this lab added (breaches_after, final_breaches, kind) removed:
    the report loads, and its verdict reads the same from the text it kept."""
    report = broken_report()
    data = json.loads(json.dumps(report.to_json()))
    for r in data["results"]:
        r.pop("breaches_after")
    for key in ("final_breaches", "kind"):
        data.pop(key)
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(data))
    back = probe.load_report(path)
    assert back.results[0].breaches_after == () and back.final_breaches == ()
    assert back.verdict() == report.verdict()
    assert probeview.outcome("bad", json.loads(path.read_text())).text() == report.verdict()
    assert probeview.table({"bad": json.loads(path.read_text())}) == \
        probe.table({"bad": report})
    assert FAST.deadline_s == back.limits.deadline_s
