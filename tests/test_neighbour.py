"""NEIGHBOUR (lab/measure/neighbour.py): the setting's checks (exit 2 before
anything starts), the hog itself (its processes, each pinned to its CPU, busy
about half the time, gone when told, at their deadline and when their parent
is gone), the flag and the plan; and a short real duet beside it, its levels
flagged, its manifest saying so, nothing of it left."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT, bench, lab, lab_env, leftovers, run_folders
from lab.analyse import levelrow, metrics
from lab.measure import neighbour
from lab.measure.pair import summed
from lab.record.checked import Obj
from lab.record.manifest import RunParams
from lab.setup.fromenv import from_env
from lab.setup.params import ConfigError
from test_cpu_verdict import LEVEL
from test_integrity import WHERE, assert_legend, measured
from test_pair import two_ports

pytestmark = pytest.mark.unit

KNOWN = ["aws", "nginx"]
CLIENTS = {"siege": "concurrency", "wrk": "concurrency"}
CPUS = tuple(sorted(os.sched_getaffinity(0)))


def params(**env: str):  # type: ignore[no-untyped-def]
    return from_env(env, KNOWN, CLIENTS, {0, 1, 2, 3})


# ---------------------------------------------------------------- the setting

@pytest.mark.parametrize("value", ["9", "-1", "x", "1.5", "\u0663", " "])
def test_a_bad_neighbour_is_a_config_error_that_says_the_range(value: str) -> None:
    with pytest.raises(ConfigError) as e:
        params(NEIGHBOUR=value)
    assert f"NEIGHBOUR={value!r}: expected a whole number from 0 to 8" in str(e.value)


def test_neighbour_is_typed_recorded_and_read_back() -> None:
    assert params().neighbour == 0 and params(NEIGHBOUR="0").neighbour == 0
    p = params(NEIGHBOUR="2", SERVER_CPUS="0", CLIENT_CPUS="2-3")
    assert p.neighbour == 2 and p.to_json()["neighbour"] == 2
    recorded = json.loads(json.dumps(p.to_json()))       # as manifest.json holds it
    read = RunParams.parse(Obj(recorded, Path("manifest.json"), "params"))
    assert read.neighbour == 2 and read.to_json()["neighbour"] == 2
    older = {k: v for k, v in recorded.items() if k != "neighbour"}
    assert not RunParams.parse(Obj(older, Path("manifest.json"), "params")).neighbour
    assert "neighbour" not in RunParams.parse(Obj(older, Path("manifest.json"),
                                                  "params")).to_json()


def test_neighbour_beside_a_server_on_another_host_is_refused() -> None:
    with pytest.raises(ConfigError) as e:
        params(NEIGHBOUR="1", SERVER_HOST="lab@server")
    assert "NEIGHBOUR=1 runs its processes on this host's CPUs" in str(e.value)
    assert "drop NEIGHBOUR" in str(e.value)
    assert params(NEIGHBOUR="0", SERVER_HOST="lab@server").neighbour == 0


def test_lab_check_exits_2_on_a_bad_neighbour_and_plans_a_good_one(tmp_path: Path,
                                                                    port: int) -> None:
    out = lab(lab_env(tmp_path, SERVER="nginx", NEIGHBOUR="9", PORT=str(port)), "check")
    assert out.returncode == 2, out.stderr
    assert "NEIGHBOUR='9': expected a whole number from 0 to 8" in out.stderr
    assert "Traceback" not in out.stderr and run_folders(tmp_path) == []
    out = lab(lab_env(tmp_path, SERVER="nginx", NEIGHBOUR="1", PORT=str(port),
                      SERVER_CPUS="0", CLIENT_CPUS="0"), "check")
    assert out.returncode == 0, out.stderr
    assert "| neighbour: 1 bursty process on CPU 0 (NEIGHBOUR=1)" in out.stderr


def test_the_plan_covers_the_runs_cpus_with_a_bounded_deadline() -> None:
    assert neighbour.plan_for(params(), 3, "rep1") is None
    p = params(NEIGHBOUR="2", SERVER_CPUS="0", CLIENT_CPUS="2-3", DURATION="10s",
               WARMUP="5s", CONCURRENCY="1 2 3")
    plan = neighbour.plan_for(p, 3, "rep1")
    assert plan is not None
    assert plan.cpus == (0, 2, 3) and plan.processes == 6
    assert plan.seconds == 2 * (5 + 3 * (10 + 1)) + neighbour.MARGIN_S
    assert plan.record()["cpus"] == [0, 2, 3] and "CPU 0,2-3 (NEIGHBOUR=2)" in plan.said()
    auto = neighbour.plan_for(replace(p, warmup_auto=True, warmup_max_s=60), 1, "rep1")
    assert auto is not None and auto.seconds == 2 * (60 + 11) + neighbour.MARGIN_S


# ---------------------------------------------------------------- the flag

def test_a_level_measured_beside_it_is_flagged_neighbour() -> None:
    beside = levelrow.make_row(WHERE, LEVEL, replace(measured(), neighbour=True))
    alone = levelrow.make_row(WHERE, LEVEL, measured())
    assert beside.has("neighbour") and not alone.has("neighbour")
    assert beside.unranked == ""                      # ranked: the noise is the point
    assert "neighbour" in metrics.FLAGS and "neighbour" not in metrics.UNRANKED
    # an RMIT level's slices: flagged when any slice ran beside it
    _, m = summed([(LEVEL, measured()), (LEVEL, replace(measured(), neighbour=True))])
    assert m.neighbour


# ---------------------------------------------------------------- the hog itself

def gone(pid: int) -> bool:
    """No such process, or a zombie (its parent gone too: nobody reaps it here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def all_gone(pids: list[int], within: float) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.05)
    return all(gone(p) for p in pids)


def cpu_s(pid: int) -> float:
    """utime + stime, as /proc/PID/stat counts them."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wanted_s(pid: int) -> float:
    """Time on a CPU and waiting for one (/proc/PID/schedstat): what it asked for,
    whatever else runs on its CPU."""
    run_ns, wait_ns = Path(f"/proc/{pid}/schedstat").read_text().split()[:2]
    return (int(run_ns) + int(wait_ns)) / 1e9


def allowed(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split()[1]
    return ""


def children(pid: int) -> set[int]:
    found = set()
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            found.add(int(name))
    return found


def test_it_starts_its_processes_pinned_busy_half_the_time_and_stops_when_told() -> None:
    plan = neighbour.Plan(per_cpu=2, cpus=CPUS, seconds=60, seed="test")
    hog = neighbour.start(plan, dict(os.environ))
    try:
        assert len(hog.pinned) == 2 * len(CPUS) == plan.processes
        assert set(hog.pinned) == children(hog.proc.pid)
        for pid, cpu in hog.pinned.items():
            assert allowed(pid) == str(cpu)
        assert sorted(hog.pinned.values()) == sorted(CPUS * 2)
        before = {p: (cpu_s(p), wanted_s(p)) for p in hog.pinned}
        t0 = time.monotonic()
        time.sleep(2.0)
        wall = time.monotonic() - t0
        for pid, (cpu0, want0) in before.items():
            burned, wanted = cpu_s(pid) - cpu0, wanted_s(pid) - want0
            assert 0.25 < wanted / wall < 0.75, (pid, wanted, wall)     # busy about half
            assert burned > 0.05 * wall, (pid, burned)                  # and it burned
        assert hog.running()
    finally:
        said = hog.stop()
    assert said == "" and hog.stop() == ""
    assert all_gone([hog.proc.pid, *hog.pinned], 2.0)


def test_a_cpu_it_cannot_pin_to_fails_the_start_with_the_reason() -> None:
    plan = neighbour.Plan(per_cpu=1, cpus=(4000,), seconds=10, seed="x")
    with pytest.raises(neighbour.NeighbourError) as e:
        neighbour.start(plan, dict(os.environ))
    assert "did not start" in str(e.value) and "cannot pin a process to CPU 4000" in str(e.value)


def watcher(seconds: float, parent: int = 0) -> list[str]:
    return [sys.executable, "-S", "-m", "lab.measure.neighbour", "--per-cpu", "1", "--cpus",
            ",".join(map(str, CPUS)), "--seconds", str(seconds), "--seed", "t",
            *(["--parent", str(parent)] if parent else [])]


def ready(line: str) -> list[int]:
    words = line.split()
    assert words[0] == "ready", line
    return [int(w.partition(":")[0]) for w in words[1:]]


def test_its_processes_end_by_themselves_at_the_deadline() -> None:
    proc = subprocess.Popen(watcher(1.0), cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pids = ready(proc.stdout.readline())
        assert proc.wait(timeout=5) == 0
        assert all_gone(pids, 1.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_its_processes_end_when_the_watcher_is_killed() -> None:
    proc = subprocess.Popen(watcher(60), cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pids = ready(proc.stdout.readline())
    proc.kill()                                # SIGKILL: no word to its processes
    proc.wait()
    assert all_gone(pids, 2.0), pids           # each saw its parent gone at its next burst


def test_it_ends_when_the_lab_step_that_started_it_is_gone() -> None:
    """A step killed with SIGKILL (no finally): its watcher sees its parent
    gone, and ends its processes and itself."""
    step = ("import subprocess, sys, os, time\n"
            f"p = subprocess.Popen({watcher(60)!r} + ['--parent', str(os.getpid())])\n"
            "print(p.pid, flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", step], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        watcher_pid = int(proc.stdout.readline())
        pids = ready(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert all_gone([watcher_pid, *pids], 3.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- a real duet beside it

@pytest.mark.fault
def test_a_duet_beside_the_neighbour_is_flagged_and_leaves_nothing(
        tmp_path: Path, wrk_installed: None) -> None:
    env = lab_env(tmp_path, SERVER="twin twin#2", PAIRED="duet", NEIGHBOUR="1", CLIENT="wrk",
                  KEEPALIVE="1", PORT=two_ports(), CONCURRENCY="2", DURATION="1s",
                  REPEAT="2", WARMUP="0")
    t0 = time.monotonic()
    done = bench(env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - t0 < 90
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    assert not [p for p in filter(str.isdigit, os.listdir("/proc"))
                if b"lab.measure.neighbour" in read_cmdline(p)
                and f"LAB_RUN={run.name}".encode() in read_environ(p)]
    said = done.stderr
    assert "| neighbour: " in said and "(NEIGHBOUR=1)" in said
    with (run / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and all("neighbour" in r["flags"].split() for r in rows), rows
    m = json.loads((run / "manifest.json").read_text())
    assert m["params"]["neighbour"] == 1 and m["settings"]["NEIGHBOUR"] == "1"
    cpus = sorted(set(m["params"]["server_cpus"]) | set(m["params"]["client_cpus"]))
    for server in m["servers"].values():
        for st in server["starts"]:
            assert st["neighbour"]["per_cpu"] == 1 and st["neighbour"]["cpus"] == cpus
            assert st["neighbour"]["processes"] == len(cpus)
            assert "ended" not in st["neighbour"]
    found = json.loads((run / "results.json").read_text())["findings"]
    assert {f["kind"] for f in found} >= {"neighbour"}
    assert_legend(run, "neighbour")


def read_cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def read_environ(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""
