"""`python3 -m lab resample RUN` (lab.analyse.resample) against hostile
arguments: each out-of-range number is refused by the parser (exit 2,
saying the range) before the run is read; work past MAX_WORK and a run
still being written are refused too; the rule itself is tested in
test_pairverdict.py."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from claimfakes import fake_duet
from conftest import ROOT
from lab.analyse import resample

pytestmark = pytest.mark.unit


def run_resample(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", "resample", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "said"), [
    (("--draws", "0"), "0 is out of range: draws, from 1 to 100000"),
    (("--alpha", "2"), "2 is out of range: α as a fraction, above 0 to 0.5"),
    (("--alpha", "0"), "0 is out of range: α as a fraction, above 0 to 0.5"),
    (("--pairs", "-1"), "-1 is out of range: pairs a draw, from 0 to 100"),
    (("--pairs", "100000"), "100000 is out of range: pairs a draw, from 0 to 100"),
    (("--delta", "-3"), "-3 is out of range: δ in percent, above 0 to 100"),
    (("--delta", "nan"), "nan is out of range: δ in percent, above 0 to 100"),
    (("--draws", "many"), "'many' is not a number (draws)"),
])
def test_out_of_range_numbers_exit_2_saying_the_range(tmp_path: Path, args: tuple[str, ...],
                                                     said: str) -> None:
    r = run_resample(str(tmp_path), *args)
    assert r.returncode == 2 and said in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_more_work_than_the_bound_is_refused_before_drawing(tmp_path: Path) -> None:
    run = fake_duet(tmp_path / "duet", "aws@8", "jersey@62", 8, 1.1)
    draws = resample.MAX_WORK // (100 * 100) + 1
    r = run_resample(str(run), "--pairs", "100", "--draws", str(draws))
    assert r.returncode == 2 and "more work than lab resample does" in r.stderr, r.stderr
    ok = run_resample(str(run), "--draws", "50")
    assert ok.returncode == 0, ok.stderr
    assert "50 draws of 8 pairs from 8 recorded" in ok.stdout


def test_a_run_still_running_is_refused(tmp_path: Path) -> None:
    run = fake_duet(tmp_path / "duet", "aws@8", "jersey@62", 8, 1.1)
    (run / "lock").write_text("held by run-benchmark.sh (pid 1)\n")
    holder = subprocess.Popen(["flock", str(run / "lock"), "-c", "echo held; read x"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        r = run_resample(str(run))
        assert r.returncode == 2 and "still running" in r.stderr, r.stderr
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)
