"""A run made by the tree before the role packages (issue 21) opens with
today's reader, and writing its summary again gives the same files: the
layout moved code, not what a run folder says."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from lab.present import report, reportpage
from lab.record import manifest
from lab.record.rows import read_rows

pytestmark = pytest.mark.unit

PRE = ROOT / "tests" / "fixtures" / "runs" / "20261125-120537-sturdy+paced-pre21"


FEW = ("rank nothing on a noisy host", "cannot reach the verdicts' α")   # few repetitions,
                                                                       # before and since


def without(summary: str, section: str) -> str:
    head, _, rest = summary.partition(section)
    return head + rest[rest.index("\n## "):]


def tables_but_verdicts(summary: str) -> list[str]:
    """The summary's table rows but the verdicts' (changed on purpose since,
    issue 28); summary.md's prose changed on purpose too (issue 53: the answer
    first, the mechanisms in the docs, "What failed" said once), its tables did not."""
    return [line for line in without(summary, "## Verdicts").splitlines()
            if line.startswith("|")]


def test_a_run_of_the_flat_tree_writes_the_same_summary_again(tmp_path: Path) -> None:
    run = tmp_path / PRE.name
    shutil.copytree(PRE, run)
    assert manifest.read_manifest(run).run_id == "20261125-120537-sturdy+paced"
    assert len(read_rows(run)) == 8              # 2 servers x 2 repetitions x 2 levels
    report.write(run)
    # levels.csv: the columns of then, the same; those added since (issue 45:
    # failed, percentiles, the kernel's TCP kinds) after them, empty or 0 here
    said_rows = [r.split(",") for r in (run / "levels.csv").read_text().splitlines()]
    old_rows = [r.split(",") for r in (PRE / "levels.csv").read_text().splitlines()]
    assert [r[:len(old_rows[0])] for r in said_rows] == old_rows
    assert said_rows[0][len(old_rows[0])] == "failed"
    assert all(r[len(old_rows[0])].isdigit() for r in said_rows[1:])
    assert all(cell == "" for r in said_rows[1:] for cell in r[len(old_rows[0]) + 1:])
    # the verdicts changed on purpose since (issue 28: the decision rule, every
    # level judged); the summary's other tables are what the flat tree wrote
    said, before = (run / "summary.md").read_text(), (PRE / "summary.md").read_text()
    assert tables_but_verdicts(said) == tables_but_verdicts(before)
    assert said.splitlines()[2].startswith("- Measured: sturdy, paced: GET /api")
    assert "## Verdicts (requests/s, at c = 1, 4)" in said
    assert "α=1%, δ=5%, 2+2 starts" in said and "too few starts: 2 against 2" in said
    assert "use REPEAT=5 or more (or REPEAT=auto) for verdicts" in said
    failed = said[said.index("## What failed"):].split("\n## ")[0]
    assert [ln.split(" at ")[0] for ln in failed.splitlines() if ln.startswith("- ")] == \
        ["- sturdy", "- paced"]            # both levels of each failed alike: a line each
    again = json.loads((run / "results.json").read_text())
    again.pop("findings", None)                          # optional, added since (typed warnings)
    assert again.pop("cgroups", {}) == {}                # added since (issue 44): not recorded then
    planned = again.pop("run_plan")                      # issue 53: built from its params
    assert (planned["repeat"], planned["paired"]) == ({"least": 2, "most": 2, "auto": False}, "")
    old = json.loads((PRE / "results.json").read_text())
    for d in (again, old):
        d.pop("verdicts"), d.pop("primary_verdicts", None)
        # the warnings' texts were shortened since (issue 53); their kinds are
        # test_findings.py's: here, as many as then
        d["warnings"] = len([w for w in d["warnings"] if not any(f in w for f in FEW)])
        assert set(d.pop("failed")) == {"sturdy", "paced"}   # its words: issue 53
        for levels in d["levels"].values():
            for level in levels:
                level.pop("reps", None)                  # added since (issue 28)
                level.pop("lost_pct", None)              # added since (issue 28: the host bound)
                assert not level.pop("unranked", [])     # added since (issue 32): none here
                assert level.pop("tcp", None) is None    # added since (issue 45): not read then
                assert not level.pop("percentiles", "")  # issue 45: one client host's own
                assert not level.pop("slices", [])       # issue 52: a paired run's slices
        for rows in d["rows"].values():
            for row in rows:
                assert not row.pop("unranked", "")       # added since (issue 32): none here
                assert row.pop("answers_checked", None) is None   # added since (issue 44):
                assert row.pop("answers_wrong", None) is None     # not checked then
                for column in ("accept_queue_max", "accept_queue_backlog",
                               "accept_queue_full_pct"):      # added since (issue 45):
                    assert row.pop(column, None) is None      # not read then
                assert row.pop("tcp_counters", None) is None      # issue 45: not read then
                assert not row.pop("percentiles", None)           # issue 45: one host's own
                for column in ("slice_rps", "slice_cpu_us"):      # issue 52: a paired
                    assert row.pop(column, None) is None          # run's slices
                for column in ("server_jit_us_per_req", "slice_jit_us"):  # issue 61: a
                    assert row.pop(column, None) is None          # JVM's compiler threads
    for rec in again["servers"].values():          # issue 61: the warm-up's class, none then
        for start in rec.get("starts", []):
            w = start.get("warmup") or {}
            assert not any(w.pop(k, None) for k in ("warm_class", "steady_after_s",
                                                     "series_class", "slice_jit_pct"))
    assert again == old
    got = json.loads((run / "results.json").read_text())
    for v in got["verdicts"]:          # half the requests failed: not ranked
        assert v["kind"] == "not-comparable" and v["starts"] == [2, 2] and v["alpha"] > 0
        assert v["cpu"]["kind"] == "undecided"
    [p] = got["primary_verdicts"]
    assert p["kind"] == "undecided" and p["metric"] == "server CPU per request"
    page = reportpage.render(run)
    for server in ("sturdy", "paced"):
        assert server in page
