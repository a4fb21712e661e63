"""results.json's versioned schema (issue 20): docs/results.schema.json,
checked with tests/schemacheck.py (stdlib only) on every saved run written
again by this lab, field by field in docs/run-folder.md, and verdict words
in the gate's vocabulary. (conftest checks every results.json the tests
write in a session against the same schema.)"""
from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import schemacheck
from conftest import ROOT, bench, free_port, lab_env, lab, leftovers, run_folders
from lab.analyse import verdicts
from lab.record import manifest, outputs

pytestmark = pytest.mark.fault

RUNS = ROOT / "tests" / "fixtures" / "runs"
SAVED = sorted(p.name for p in RUNS.iterdir() if (p / "manifest.json").is_file())


def json_schema() -> dict[str, object]:
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
    assert data["results_schema"] == outputs.RESULTS_SCHEMA == 1
    for v in data["verdicts"]:      # the gate's words, as make compare prints them
        assert v["verdict"] in (*verdicts.RANKED, "no-clear-difference", "not-comparable",
                                "inconclusive", "missing")
        assert v["verdict"] == v["kind"].replace("faster", "better")


def test_the_checker_finds_what_does_not_fit(tmp_path: Path) -> None:
    run = tmp_path / "r"
    shutil.copytree(RUNS / SAVED[0], run)
    assert lab(lab_env(tmp_path), "report", str(run), timeout=120).returncode == 0
    good = json.loads((run / "results.json").read_text())
    s = json_schema()
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


@pytest.mark.unit
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
    found = keys(json_schema())
    assert {"results_schema", "rate_rps", "verdict", "share", "open_loop"} <= found
    for key in found:
        assert re.search(rf"`{re.escape(key)}`", doc), f"docs/run-folder.md lacks `{key}`"
    assert "results.schema.json" in doc and "results_schema" in doc


def undescribed(value: Any, node: dict[str, Any], where: str = "$") -> list[str]:
    """Every key in value that node does not describe: an object's key must be
    one of its `properties` or fall under an `additionalProperties` schema (a
    map such as server -> levels); an object the schema gives no keys for at
    all (`{"type": "object"}`, e.g. `costs`) is described as a whole."""
    if "anyOf" in node:
        fits = [s for s in node["anyOf"] if not schemacheck.errors(value, s, where)]
        return undescribed(value, fits[0], where) if fits else []
    out: list[str] = []
    if isinstance(value, dict):
        props, extra = node.get("properties"), node.get("additionalProperties")
        for k, v in value.items():
            if isinstance(props, dict) and k in props:
                out += undescribed(v, props[k], f"{where}.{k}")
            elif isinstance(extra, dict):
                out += undescribed(v, extra, f"{where}.{k}")
            elif props is not None or extra is not None:
                out.append(f"{where}.{k}")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, v in enumerate(value):
            out += undescribed(v, node["items"], f"{where}[{i}]")
    return out


def analysis_part(run: Path) -> dict[str, Any]:
    """results.json less the manifest's own keys (manifest.json's, with its own
    schema version, as the schema's description says)."""
    data = json.loads((run / "results.json").read_text())
    assert isinstance(data, dict)
    own = set(manifest.read_manifest(run).to_json())
    assert {"run_id", "servers", "params"} <= own and "levels" not in own
    return {k: v for k, v in data.items() if k not in own}


def test_the_schema_describes_every_key_the_analysis_writes(tmp_path: Path) -> None:
    """A real short run (two fake servers started, loaded and stopped), then
    every saved run written again: no key of the analysis the schema does
    not describe, at any depth (issue 19's fields went in without it)."""
    env = lab_env(tmp_path, SERVER="sturdy paced", CONCURRENCY="2", DURATION="1s",
                  REPEAT="2", WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    s = json_schema()
    part = analysis_part(run)
    assert {"levels", "verdicts", "answers", "failed", "rows"} <= set(part)
    row = next(iter(part["rows"].values()))[0]
    level = next(iter(part["levels"].values()))[0]
    assert "failure_kinds" in row and "failed_by_rep" in level   # issue 19's, written
    assert any(a["response"] for a in part["answers"].values())  # a real answer, recorded
    assert undescribed(part, s) == []
    assert schemacheck.check_file(run / "results.json") == []
    for name in SAVED:
        again = tmp_path / "saved" / name
        shutil.copytree(RUNS / name, again)
        (again / "results.json").unlink(missing_ok=True)
        assert lab(lab_env(tmp_path), "report", str(again), timeout=120).returncode == 0
        assert undescribed(analysis_part(again), s) == [], name
    # and the check is not vacuous: a key the schema lacks, at any depth, is named
    changes: list[tuple[Callable[[dict[str, Any]], object], str]] = [
            (lambda d: d.update(novel=1), "$.novel"),
            (lambda d: next(iter(d["levels"].values()))[0].update(novel=1), ".novel"),
            (lambda d: next(iter(d["rows"].values()))[0].update(novel=None), ".novel"),
            (lambda d: d["verdicts"].append({"value": 1, "cpu": {
                "kind": "better", "winner": "a", "loser": "b", "percent": 5.0, "text": "t",
                "novel": 1}}), ".cpu.novel"),
            (lambda d: next(iter(d["answers"].values())).update(novel=[]), ".novel")]
    for change, where in changes:
        bad = json.loads(json.dumps(part))
        change(bad)
        assert any(e.endswith(where) for e in undescribed(bad, s)), where
