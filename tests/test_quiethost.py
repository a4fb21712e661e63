"""Whether the workshop's lessons can show on this host (lab.studies.quiethost):
`make workshop-check` says so first, with the lab's own host-busy figure
(the calibration on record, then a look now), and exits 2 with what to do
on a host too busy; `make workshop-prepare`'s "not ready" gives the figure."""
from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, lab_env
from lab.analyse.metrics import HOST_BUSY_PCT, STEAL_PCT
from lab.record import calibration, files
from lab.record.calibration import CalClient, CalLevel, Calibration
from lab.record.hostfacts import HostFacts
from lab.record.pinning import Pinning
from lab.studies import quiethost, workshop
from lab.studies.calibrate import QUIET_MOMENT

pytestmark = pytest.mark.unit

HERE = platform.node()


def cal(busy: bool, busy_pcts: tuple[float, ...] = (3.0, 4.0), steal: float = 0.0,
        host: str = HERE) -> Calibration:
    """A calibration as `make calibrate` saves it: on a busy host, every level's
    figures above the limit and the whole marked host_busy."""
    levels = {c: CalLevel(rate_rps=5000.0, client_cpu_pct=99.0, client_bound=True,
                          host_busy_pct=pct, steal_pct=steal)
              for c, pct in zip((1, 8), busy_pcts)}
    return Calibration(made="2026-12-04T19:17:38+0000", ceiling="nginx", duration_s=5,
                       levels=[1, 8], pinning=Pinning("0", "1"), host=HostFacts(hostname=host),
                       clients={"wrk": CalClient("4.2", {"close": levels, "keep-alive": {}})},
                       topology="local", extra={"host_busy": True} if busy else {})


def now(busy_pct: float, steal_pct: float = 0.0) -> quiethost.Now:
    return quiethost.Now("0-1", quiethost.SAMPLE_S, busy_pct, steal_pct)


def test_a_quiet_calibration_and_a_quiet_host_let_the_lessons_show() -> None:
    assert quiethost.decide(cal(False), HERE, now(HOST_BUSY_PCT / 2)) == ("", "")


def test_a_calibration_refused_on_a_busy_host_says_its_figure() -> None:
    busiest = HOST_BUSY_PCT * 4.3
    why, todo = quiethost.decide(cal(True, (HOST_BUSY_PCT * 2, busiest), steal=1.0), HERE,
                                 None)
    assert f"up to {busiest:.0f}% of the lab's CPUs" in why, why
    assert f"allows {HOST_BUSY_PCT:.0f}%" in why and "busy at every level" in why, why
    assert todo == QUIET_MOMENT
    # a quiet look now does not undo the calibration's word
    assert quiethost.decide(cal(True, (busiest, busiest)), HERE, now(0.0))[0] == \
        quiethost.on_record(cal(True, (busiest, busiest)), HERE)[0] != ""


@pytest.mark.parametrize("busy,steal,said", [
    (HOST_BUSY_PCT * 5.5, 0.0, "other processes took"),
    (0.0, STEAL_PCT * 2, "the hypervisor took"),
])
def test_a_host_busy_now_says_how_busy(busy: float, steal: float, said: str) -> None:
    why, todo = quiethost.decide(cal(False), HERE, now(busy, steal))
    figure = busy if busy > HOST_BUSY_PCT else steal
    assert f"{said} {figure:.0f}% of CPU 0-1" in why and todo == QUIET_MOMENT, why
    # at the limit itself: quiet, as a level is (flagged only above it)
    assert quiethost.decide(cal(False), HERE, now(HOST_BUSY_PCT, STEAL_PCT)) == ("", "")


def test_without_this_hosts_calibration_it_cannot_tell_and_says_prepare() -> None:
    for record in (None, cal(False, host=HERE + "-elsewhere")):
        why, todo = quiethost.decide(record, HERE, now(0.0))
        assert why and todo == quiethost.PREPARE, why
    assert "-elsewhere" in quiethost.decide(cal(False, host=HERE + "-elsewhere"), HERE,
                                            None)[0]


def test_the_look_reads_the_lab_cpus_own_times() -> None:
    cpus, label = quiethost.lab_cpus(cal(False))
    assert cpus == (0, 1) and label == "0-1"
    look = quiethost.look((0, 1), "0-1", seconds=0.2)
    assert 0.0 <= look.busy_pct <= 100.0 * 1.5 and look.steal_pct >= 0.0   # tick rounding


def run_check(cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", "workshop-host"], cwd=ROOT,
                          env=lab_env(cache, LAB_CACHE=str(cache)), capture_output=True,
                          text=True, timeout=60)


def test_the_step_exits_2_with_the_figure_and_what_to_do(tmp_path: Path) -> None:
    out = run_check(tmp_path)
    assert out.returncode == 2 and "make workshop-prepare" in out.stderr, out.stderr
    busiest = HOST_BUSY_PCT * 3.7
    files.write_json(tmp_path / calibration.FILE, cal(True, (busiest, busiest)).to_json())
    out = run_check(tmp_path)
    assert out.returncode == 2, out.stderr
    assert "will not show on this host" in out.stderr and f"{busiest:.0f}%" in out.stderr
    assert "then `make workshop-check` again" in out.stderr, out.stderr


def test_prepare_gives_the_last_tries_figure(tmp_path: Path) -> None:
    assert workshop.busy_figure(tmp_path) == ""               # none on record
    files.write_json(tmp_path / calibration.FILE, cal(False).to_json())
    assert workshop.busy_figure(tmp_path) == ""               # quiet
    busiest = HOST_BUSY_PCT * 6.1
    files.write_json(tmp_path / calibration.FILE, cal(True, (busiest, 1.0)).to_json())
    assert f"up to {busiest:.0f}% of the lab's CPUs" in workshop.busy_figure(tmp_path)


def test_workshop_check_looks_at_the_host_before_the_exercises() -> None:
    out = subprocess.run(["make", "-n", "workshop-check"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    lines = out.stdout.splitlines()
    host = next(i for i, x in enumerate(lines) if "-m lab workshop-host" in x)
    exercises = next(i for i, x in enumerate(lines) if "tests/test_workshop.py" in x)
    assert host < exercises, out.stdout
