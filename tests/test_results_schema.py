"""results.json's versioned schema (issue 20): docs/results.schema.json,
checked with tests/schemacheck.py (stdlib only) on every saved run written
again by this lab, field by field in docs/run-folder.md, and verdict words
in the gate's vocabulary. (conftest checks every results.json the tests
write in a session against the same schema.)"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import schemacheck
from conftest import ROOT, lab_env, lab
from lab import metrics, record

RUNS = ROOT / "tests" / "fixtures" / "runs"
SAVED = sorted(p.name for p in RUNS.iterdir() if (p / "manifest.json").is_file())


def schema() -> dict[str, object]:
    data = json.loads(schemacheck.SCHEMA.read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("name", SAVED)
def test_each_saved_run_written_again_fits_the_schema(tmp_path: Path, name: str) -> None:
    run = tmp_path / name
    shutil.copytree(RUNS / name, run)
    (run / "results.json").unlink(missing_ok=True)
    done = lab(lab_env(tmp_path), "report", str(run), timeout=120)
    assert done.returncode == 0, done.stderr
    assert schemacheck.check_file(run / "results.json") == []
    data = json.loads((run / "results.json").read_text())
    assert data["results_schema"] == record.RESULTS_SCHEMA == 1
    for v in data["verdicts"]:      # the gate's words, as make compare prints them
        assert v["verdict"] in (*metrics.RANKED, "no-clear-difference", "not-comparable",
                                "inconclusive", "missing")
        assert v["verdict"] == v["kind"].replace("faster", "better")


def test_the_checker_finds_what_does_not_fit(tmp_path: Path) -> None:
    run = tmp_path / "r"
    shutil.copytree(RUNS / SAVED[0], run)
    assert lab(lab_env(tmp_path), "report", str(run), timeout=120).returncode == 0
    good = json.loads((run / "results.json").read_text())
    s = schema()
    assert schemacheck.errors(good, s) == []
    for change, fragment in [
            (lambda d: d.pop("levels"), "missing 'levels'"),
            (lambda d: d.update(results_schema=2), "expected 1"),
            (lambda d: d["rows"][next(iter(d["rows"]))][0].update(rate_rps="fast"),
             "rate_rps: expected number"),
            (lambda d: d["rows"][next(iter(d["rows"]))][0].update(failed=True),
             "failed: expected integer"),
            (lambda d: d.update(verdicts=[{"value": 1, "a": "x", "b": "y", "kind": "faster",
                                           "percent": 3.0, "text": "t", "verdict": "faster"}]),
             "'faster' is not one of"),
            (lambda d: d["levels"][next(iter(d["levels"]))][0].update(p99_ms={"median": 1}),
             "fits none of 2 alternatives")]:
        bad = json.loads(json.dumps(good))
        change(bad)
        found = schemacheck.errors(bad, s)
        assert any(fragment in e for e in found), (fragment, found)
    assert "does not know" in schemacheck.errors({}, {"pattern": "x"})[0]


def test_every_field_of_the_schema_is_described_in_run_folder_md() -> None:
    doc = (ROOT / "docs" / "run-folder.md").read_text()
    def keys(node: object) -> set[str]:
        """Every property name, at any depth."""
        if isinstance(node, dict):
            here = set(node["properties"]) if isinstance(node.get("properties"), dict) else set()
            return here | {k for v in node.values() for k in keys(v)}
        if isinstance(node, list):
            return {k for v in node for k in keys(v)}
        return set()
    found = keys(schema())
    assert {"results_schema", "rate_rps", "verdict", "share", "open_loop"} <= found
    for key in found:
        assert re.search(rf"`{re.escape(key)}`", doc), f"docs/run-folder.md lacks `{key}`"
    assert "results.schema.json" in doc and "results_schema" in doc
