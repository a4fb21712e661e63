"""claims.json's one shape (docs/claims.schema.json), checked with
tests/schemacheck.py on the file each command writes: `make claims` on runs
made earlier, `make reproduce` with its runs stood in for by saved ones (its
real runs: tests/test_e2e.py's smoke run of the quick study). Both are judged by
lab.analyse.claimjudge; the shape is described in docs/run-folder.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import schemacheck
from claimfakes import fake_duet, fake_run
from conftest import ROOT
from lab.analyse import claimjudge, claims, claimsfile
from lab.setup.servers import discover
from lab.studies import claimruns, reproduce

pytestmark = pytest.mark.unit

SCHEMA = schemacheck.CLAIMS_SCHEMA


def study() -> claimsfile.Study:
    return next(s for s in claimsfile.load(reproduce.CLAIMS, set(discover(ROOT)),
                                           only="ada-vs-java") if s.id == "ada-vs-java")


def fits(path: Path) -> dict[str, Any]:
    assert schemacheck.check_file(path, SCHEMA) == []
    data = json.loads(path.read_text())
    assert isinstance(data, dict) and data["claims_schema"] == claimjudge.CLAIMS_SCHEMA
    return data


def test_make_claims_writes_a_claims_json_that_fits(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8"})
    b = fake_run(tmp_path / "b", {"paced": "jersey@62"}, tool="wrk")
    code = claimruns.main("ada-vs-java", [str(a), str(b)], {"RESULTS": str(tmp_path / "out")})
    assert code == 0
    [path] = (tmp_path / "out").glob("claims-ada-vs-java-*/claims.json")
    data = fits(path)
    assert data["command"] == "claims" and data["study"] == "ada-vs-java"
    study = next(s for s in claimsfile.load(reproduce.CLAIMS, set(discover(ROOT)), only="ada-vs-java")
                 if s.id == "ada-vs-java")
    ids = [c.id for c in study.claims]
    assert [c["id"] for c in data["claims"]] == ids         # every claim, the study's order
    for c in data["claims"]:
        for client, got in c["by_client"].items():
            assert client in ("siege", "wrk", "—", claimjudge.COST) and got["verdict"] in (
                claims.REPRODUCED, claims.NOT_REPRODUCED, claims.INCONCLUSIVE)


def test_make_reproduce_writes_a_claims_json_that_fits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """reproduce.main end to end, its two runs stood in for by saved runs
    (nothing is built or started)."""
    names = {"nginx": "aws@8", "paced": "jersey@62"}

    def stand_in(run: reproduce.RunPlan, env: object) -> reproduce.RunDone:
        if run.paired:                                   # a cost pair: a duet of its two
            a, b = run.settings["SERVER"].split()
            return reproduce.RunDone(run, 0, fake_duet(tmp_path / f"duet-{a}-{b}", a, b, 8, 1.1))
        return reproduce.RunDone(run, 0, fake_run(tmp_path / run.client, names,
                                                  tool=run.client))
    monkeypatch.setattr(reproduce, "preflight", lambda plan, env: 0)
    monkeypatch.setattr(reproduce, "run_benchmark", stand_in)
    monkeypatch.setattr(reproduce, "instruction_ratios", lambda plan, env: [])
    assert reproduce.main("ada-vs-java", {"RESULTS": str(tmp_path / "out")}) == 0
    [path] = (tmp_path / "out").glob("reproduce-ada-vs-java-*/claims.json")
    data = fits(path)
    assert data["command"] == "reproduce" and [r["client"] for r in data["runs"]] == [
        "siege", "wrk", "wrk", "wrk"]
    # the throughput claims are judged by cost too; the memory claims are not
    assert {c["id"]: set(c["by_client"]) for c in data["claims"]} == {
        c.id: {"siege", "wrk"} | ({claimjudge.COST} if c.metric != "rss_end" else set())
        for c in study().claims}
    duets = [tmp_path / "duet-aws@8-jersey@62", tmp_path / "duet-asf@8-aws@8"]
    assert claimruns.expand([str(path.parent)]) == [tmp_path / "siege", tmp_path / "wrk",
                                                    *duets]


def test_the_checker_finds_what_does_not_fit(tmp_path: Path) -> None:
    a = fake_run(tmp_path / "a", {"nginx": "aws@8", "paced": "jersey@62"})
    assert claimruns.main("ada-vs-java", [str(a)], {"RESULTS": str(tmp_path / "out")}) == 0
    [path] = (tmp_path / "out").glob("claims-*/claims.json")
    good = json.loads(path.read_text())
    schema = json.loads(SCHEMA.read_text())
    assert schemacheck.errors(good, schema) == []
    entry = next(iter(good["claims"][0]["by_client"].values()))
    flat = {**good, "claims": [{"id": good["claims"][0]["id"], "client": "wrk", **entry}]}
    for bad, fragment in [
            ({**good, "claims_schema": 2}, "expected 1"),
            (flat, "missing 'by_client'"),              # the flat entries make claims once wrote
            ({**good, "command": "bench"}, "is not one of"),
            ({**good, "claims": [{**good["claims"][0], "by_client": {"wrk": {
                **entry, "verdict": "better"}}}]}, "is not one of")]:
        assert any(fragment in e for e in schemacheck.errors(bad, schema)), fragment


def test_the_schema_is_documented_where_the_run_folder_files_are() -> None:
    text = (ROOT / "docs" / "run-folder.md").read_text()
    assert "claims.schema.json" in text and "by_client" in text
