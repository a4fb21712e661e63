"""The probe's failures as typed values (issue 21): the contract's breaches
after each probe and at the end (lab.record.probe.Check), and what the
probe came to (lab.record.probe.ProbeOutcome), whose text() is the one
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
from lab.present import probetable
from lab.record.probe import read_probe

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


def test_probe_json_has_one_typed_reader_in_the_record(tmp_path: Path) -> None:
    """The probe writes through lab.record.probe's types, and a run's readers
    read probe.json back there: the same report; a file of another shape is
    named unreadable, not guessed at."""
    from lab.record import probe as record
    assert probe.ProbeReport is record.ProbeReport and probe.ProbeResult is record.ProbeResult
    report = broken_report()
    run = tmp_path / "run"
    for name in ("bad", "odd"):
        (run / name).mkdir(parents=True)
    probe.save(report, run / "bad" / "probe.json")
    (run / "odd" / "probe.json").write_text(json.dumps([{"probe": "garbage"}]))
    found = record.probe_files(run)
    assert found["bad"] == report == record.read_probe(run / "bad" / "probe.json")
    assert isinstance(found["odd"], str) and "should be an object" in found["odd"]


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
    back = read_probe(path)
    assert back == report
    assert back.results[0].breaches_after == BREACHES
    data = json.loads(path.read_text())
    assert data["kind"] == "stopped-answering"
    assert data["verdict"] == report.verdict() == probeview.outcome("bad", back).text()
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
    back = read_probe(path)
    assert back.results[0].breaches_after == () and back.final_breaches == ()
    assert back.verdict() == report.verdict()
    assert probeview.outcome("bad", back).text() == report.verdict()
    assert probetable.table({"bad": back}) == probetable.table({"bad": report})
    assert FAST.deadline_s == back.limits.deadline_s
