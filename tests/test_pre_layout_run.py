"""A run made by the tree before the role packages (issue 21) opens with
today's reader, and writing its summary again gives the same files: the
layout moved code, not what a run folder says."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import ROOT
from lab.present import html, report
from lab.record import schema

PRE = ROOT / "tests" / "fixtures" / "runs" / "20261125-120537-sturdy+paced-pre21"


def test_a_run_of_the_flat_tree_writes_the_same_summary_again(tmp_path: Path) -> None:
    run = tmp_path / PRE.name
    shutil.copytree(PRE, run)
    assert schema.read_manifest(run).run_id == "20261125-120537-sturdy+paced"
    assert len(schema.read_rows(run)) == 8              # 2 servers x 2 repetitions x 2 levels
    report.write(run)
    for name in ("summary.md", "levels.csv"):
        assert (run / name).read_text() == (PRE / name).read_text(), name
    again = json.loads((run / "results.json").read_text())
    again.pop("findings", None)                          # optional, added since (typed warnings)
    assert again == json.loads((PRE / "results.json").read_text())
    page = html.render(run)
    for server in ("sturdy", "paced"):
        assert server in page
