"""No figure reproduce, cost or claims print is true by construction, and
each carries its unit: make reproduce counts instructions for each NAME@N as
the throughput runs started it (aws@16 with 16 workers, not plain aws twice)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT
from lab.analyse import claims, claimsfile, claimtext
from lab.studies import reproduce
from lab.setup.servers import ServerSpec, discover

pytestmark = pytest.mark.unit

LAB = set(discover(ROOT))


def ada_plan(quick: bool = True) -> reproduce.Plan:
    study = next(s for s in claimsfile.load(reproduce.CLAIMS, LAB, only="ada-vs-java"))
    return reproduce.make_plan(study, {"QUICK": "1" if quick else "0"})


def cost_json(per: dict[str, float]) -> dict[str, Any]:
    native = {"user_us_per_req": 10.0, "sys_us_per_req": 20.0, "rate_rps": 1000.0}
    return {"tool": "cachegrind", "wrapper": "valgrind", "levels": [1],
            "requests": [1000, 3000], "repeat": 1, "headers": 0,
            "servers": {name: {"applicable": True, "valgrind": "valgrind-3",
                               "reps": [{"rep": 1, "level": 1, "per_request": ir,
                                         "native": native}]}
                        for name, ir in per.items()}}


def test_each_at_n_is_counted_as_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost step is asked for aws@16 and aws@8 (the throughput runs'
    starts), and the claim's line names and divides those two counts."""
    plan = ada_plan()
    counts = {"aws@16": 190_000.0, "aws@8": 180_000.0, "asf@8": 250_000.0, "ews@1": 90_000.0}
    asked: list[dict[str, str]] = []

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        asked.append(kw["env"])
        (tmp_path / "cost.json").write_text(json.dumps(cost_json(
            {n: counts[n] for n in kw["env"]["SERVER"].split()})))
        return subprocess.CompletedProcess(argv, 0, "", f"run folder: {tmp_path}\n")
    monkeypatch.setattr(reproduce.subprocess, "run", fake_run)
    lines = reproduce.instruction_ratios(plan, {"QUICK": "1", "STUDY": "ada-vs-java"})
    [env] = asked
    assert {"aws@16", "aws@8"} <= set(env["SERVER"].split())
    assert "aws" not in env["SERVER"].split()
    assert "STUDY" not in env and "QUICK" not in env      # make cost would refuse them
    [line] = [ln for ln in lines if "aws-more-tasks-not-faster" in ln]
    assert "aws@16 190,000 instructions" in line and "aws@8 180,000 instructions" in line
    assert f"aws@8/aws@16 = {180_000 / 190_000:.3f} ×" in line
    for ln in lines:                                      # no server against itself
        assert "aws/aws" not in ln and "ratio aws " not in ln


def test_two_sides_that_are_one_start_get_no_ratio() -> None:
    c = next(c for c in ada_plan().study.claims if c.id == "aws-more-tasks-not-faster")
    aws8 = ServerSpec("aws", 8)
    line = reproduce.instruction_line(c, {"aws@16": aws8, "aws": aws8},
                                      {"aws@8": 180_000.0})
    assert "no instruction count" in line and "by construction" in line
    assert "ratio aws@8/aws@8" not in line


def test_every_measured_figure_has_its_unit() -> None:
    assert set(claimtext.UNITS) == set(claimsfile.METRICS)
    study = ada_plan().study
    order = next(c for c in study.claims if c.kind == "ordering" and c.metric == "rss_end")
    spread = claims.Spread(207_596.0, 200_000.0, 210_000.0, 3)
    r = claims.ClaimResult(order, claims.REPRODUCED, "ok",
                           order=tuple((s, spread) for s in order.servers))
    text = claimtext.measured_text(r)
    assert text.count("KiB") == len(order.servers) and "jersey 207,596" in text
    ratio = next(c for c in study.claims if c.kind == "ratio")
    assert claimtext.measured_text(claims.ClaimResult(ratio, claims.REPRODUCED, "ok",
                                                   measured=claims.Spread(1.07, 1.0, 1.1, 3))
                                ).endswith(" ×")


def test_a_claim_whose_sides_are_one_start_is_not_judged() -> None:
    """A study whose aws runs with 16 workers makes `aws@16 vs aws` one start:
    no ratio of 1.000 by construction, a verdict that says why."""
    plan = ada_plan()
    plan = reproduce.Plan(plan.study, plan.quick, {**plan.specs, "aws": ServerSpec("aws", 16)},
                          plan.runs, plan.overrides)
    done = reproduce.RunDone(plan.runs[0], 0, None)
    judged = reproduce.judge(plan, done, LAB)
    [r] = [r for r in judged.results if r.claim.id == "aws-more-tasks-not-faster"]
    assert r.verdict == claims.INCONCLUSIVE and "one start" in r.reason
    assert r.measured is None
