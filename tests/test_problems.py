"""Every problem a run's manifest records appears in summary.md and
report.html, also one a later step added to a complete run (make profile's
async-profiler failure was only in the manifest)."""
from __future__ import annotations

import html as htmllib
from pathlib import Path

import pytest

from conftest import copy_of_run, free_port, lab, lab_env
from lab.record import manifest

pytestmark = pytest.mark.fault


def test_a_problem_added_to_a_complete_run_shows_in_summary_and_report(
        tmp_path: Path, short_run: Path) -> None:
    env = lab_env(tmp_path, SERVER="sturdy", PORT=str(free_port()))
    run = copy_of_run(short_run, tmp_path)          # a complete run of the session, copied
    problem = "profile of sturdy: mvn could not fetch tools.profiler:async-profiler:4.0 <x>"
    manifest.add_problem(run, problem)
    out = lab(env, "report", str(run))
    assert out.returncode == 0, out.stderr
    m = manifest.read_manifest(run)
    assert m.status == "complete" and m.problems == [problem]
    for p in m.problems:
        assert p in (run / "summary.md").read_text()
        assert htmllib.escape(p, quote=False) in (run / "report.html").read_text()
