"""Numbers you can trust, through run-benchmark.sh as a user runs it:
repetitions interleave servers with a fresh start each, WARMUP=auto waits for
a steady rate (or flags the cap), a knob sweep restarts the server per value,
and `make calibrate` records what the client drives against the ceiling."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import GRACE, ROOT, bench, free_port, lab_env, leftovers, run_folders
from lab.record import calibration, files, manifest
from lab.record.rows import read_rows
from replan import plan_of_line

pytestmark = pytest.mark.fault

QUICK = {"DURATION": "1s", "WARMUP": "0", "PROBE": "0"}


def only_run(tmp: Path) -> tuple[Path, dict]:
    [run] = run_folders(tmp)
    return run, json.loads((run / "manifest.json").read_text())


def test_repetitions_interleave_servers_each_a_fresh_start(tmp_path: Path) -> None:
    # nginx is the ceiling reference, never in a verdict: paced and its alias
    # paced#2 are the pair the Verdicts section judges
    out = bench(lab_env(tmp_path, SERVER="nginx paced paced#2", REPEAT="2", CONCURRENCY="1 2",
                        PORT=str(free_port()), **QUICK), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run, m = only_run(tmp_path)
    rows = read_rows(run)
    # ABBA: the second round starts the servers in the reverse order
    assert [(r.server, r.rep, r.value) for r in rows] == [
        ("nginx", 1, 1), ("nginx", 1, 2), ("paced", 1, 1), ("paced", 1, 2),
        ("paced#2", 1, 1), ("paced#2", 1, 2), ("paced#2", 2, 1), ("paced#2", 2, 2),
        ("paced", 2, 1), ("paced", 2, 2), ("nginx", 2, 1), ("nginx", 2, 2)]
    for name in ("nginx", "paced", "paced#2"):
        starts = m["servers"][name]["starts"]
        assert [s["rep"] for s in starts] == [1, 2]
        assert starts[0]["pid"] != starts[1]["pid"]            # a fresh process each
        assert all(s["status"] == "complete" for s in starts)
        assert m["servers"][name]["status"] == "complete"
    assert m["status"] == "complete"
    summary = (run / "summary.md").read_text()
    assert "req/s median [min–max]" in summary and "–" in summary.split("## Levels")[1]
    verdicts = summary.split("## Verdicts", 1)[1]     # an IndexError when it is missing
    for value in (1, 2):      # 2 starts a side cannot reach α: undecided, and it says why
        assert f"| {value} | paced vs paced#2 |" in verdicts, verdicts
    assert "too few starts: 2 against 2" in verdicts, verdicts
    assert "nginx vs" not in verdicts and "vs nginx" not in verdicts
    assert m["starts_spent"] == {"nginx": 2, "paced": 2, "paced#2": 2}
    levels = (run / "levels.csv").read_text().splitlines()
    assert levels[0].startswith("server,value,reps,rate_median,rate_min,rate_max")
    assert len(levels) == 1 + 6 and all(",2," in line for line in levels[1:])
    assert b"<svg" in (run / "rps.svg").read_bytes()[:2000]
    assert leftovers(run) == []


@pytest.mark.quiet
def test_repeat_auto_adds_starts_only_while_a_pair_is_undecided(tmp_path: Path) -> None:
    # two entries of one server: 2 against 2 starts cannot decide at 1%, so
    # REPEAT=auto goes on, one round at a time in ABBA order, to REPEAT_MAX
    out = bench(lab_env(tmp_path, SERVER="paced paced#2", REPEAT="auto", REPEAT_MIN="2",
                        REPEAT_MAX="3", CONCURRENCY="1", PORT=str(free_port()), **QUICK),
                timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "REPEAT=auto (2 starts each, then one more at a time" in out.stderr
    assert "[repeat] undecided: paced vs paced#2: one more start each (up to 3)" in out.stderr
    assert "[repeat] REPEAT_MAX=3 reached" in out.stderr
    assert "[paced#2 rep 3, up to 3] stopped" in out.stderr   # a third start, not "rep 3/2"
    run, m = only_run(tmp_path)
    rows = read_rows(run)
    assert [(r.server, r.rep) for r in rows] == [
        ("paced", 1), ("paced#2", 1), ("paced#2", 2), ("paced", 2), ("paced", 3),
        ("paced#2", 3)]
    assert m["starts_spent"] == {"paced": 3, "paced#2": 3}
    assert m["params"]["repeat_auto"] is True and m["params"]["repeat_max"] == 3
    # its Reproduce line, read by the lab's settings parser, plans this run (issue 53)
    planned = manifest.read_manifest(run).planned
    assert planned.repeat.text() == "auto (2 to 3)" and plan_of_line(m["reproduce"]) == planned
    assert m["status"] == "complete"
    results = json.loads((run / "results.json").read_text())
    [p] = results["primary_verdicts"]
    assert p["kind"] == "undecided" and p["starts"] == [3, 3]


@pytest.mark.quiet
def test_warmup_auto_waits_until_the_rate_is_steady(tmp_path: Path) -> None:
    # keep-alive: no connection set up a request, the double's sleep sets its rate
    out = bench(lab_env(tmp_path, SERVER="warming", CONCURRENCY="2", DURATION="2s",
                        KEEPALIVE="1", WARMUP="auto", WARMUP_MAX="40s", PROBE="0",
                        PORT=str(free_port())),
                timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run, m = only_run(tmp_path)
    [start] = m["servers"]["warming"]["starts"]
    warm = start["warmup"]
    assert warm["mode"] == "auto" and warm["steady"] is True, json.dumps(warm)
    assert warm["seconds"] >= 4 and warm["slices"] >= 3          # it speeds up for 4 s
    assert warm["slice_rates"][0] < 0.7 * warm["slice_rates"][-1]
    [row] = read_rows(run)
    assert not row.has("not-steady")
    assert "steady after" in out.stderr
    # it speeds up, then holds: a warm-up by its change points, steady after it sped up
    assert warm["warm_class"] == "warm-up" and warm["steady_after_s"] >= 2, warm
    assert "1 warm-up (steady after" in (run / "summary.md").read_text()


@pytest.mark.quiet
def test_warmup_that_hits_its_cap_flags_every_level(tmp_path: Path) -> None:
    # it speeds up over 30 s of load: within 8 s, the least WARMUP_MAX, its
    # series climbs to the end: no steady state
    out = bench(lab_env(tmp_path, SERVER="warming.slow", CONCURRENCY="1 2", DURATION="1s",
                        WARMUP="auto", WARMUP_MAX="8s", PROBE="0", PORT=str(free_port())),
                timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run, m = only_run(tmp_path)
    [start] = m["servers"]["warming.slow"]["starts"]
    warm = start["warmup"]
    assert warm["steady"] is False and 1 <= warm["slices"] <= 8, warm
    assert warm["warm_class"] == "no steady state" and warm.get("steady_after_s") is None
    assert all(r.has("not-steady") for r in read_rows(run))
    summary = (run / "summary.md").read_text()
    assert "1 no steady state within the 8 s cap" in summary and "Raise WARMUP_MAX" in summary
    assert "1 of 1 starts never became steady" in summary


def test_a_knob_sweep_restarts_the_server_per_value(tmp_path: Path) -> None:
    out = bench(lab_env(tmp_path, SERVER="nginx", AXIS="workers", VALUES="1 2",
                        CONCURRENCY="2", PORT=str(free_port()), **QUICK), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run, m = only_run(tmp_path)
    rows = read_rows(run)
    assert [(r.axis, r.value, r.workers, r.concurrency) for r in rows] == [
        ("workers", 1, 1, 2), ("workers", 2, 2, 2)]
    # nginx: a master and WORKERS single-threaded workers, all sampled
    assert [r.threads_end for r in rows] == [2, 3]
    starts = m["servers"]["nginx"]["starts"]
    assert [s["knob"] for s in starts] == [1, 2] and starts[0]["pid"] != starts[1]["pid"]
    assert (run / "knob.png").exists() and not (run / "rps.png").exists()
    assert "workers=2" in out.stderr


def test_a_knob_value_that_stops_answering_leaves_the_other_values_measured(
        tmp_path: Path) -> None:
    """Each value of a knob sweep is a start of its own: stall answering no
    request under load at workers=1 is that value's result, and workers=2 is
    still started and measured (docs/workshop.md, exercise 3: AWS with 2 tasks
    and 32 closing clients can fail every request)."""
    out = bench(lab_env(tmp_path, SERVER="stall", AXIS="workers", VALUES="1 2",
                        CONCURRENCY="2", PORT=str(free_port()), **QUICK), timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    run, m = only_run(tmp_path)
    assert [(r.value, r.successful) for r in read_rows(run)] == [(1, 0), (2, 0)]
    starts = m["servers"]["stall"]["starts"]
    assert [(s["knob"], s["status"]) for s in starts] == [(1, "failed"), (2, "failed")]
    assert starts[0]["pid"] != starts[1]["pid"]
    assert m["status"] == "incomplete"
    for value in (1, 2):
        assert any(p.startswith(f"stall workers={value}: c=2: no request completed")
                   for p in m["problems"]), m["problems"]
    assert "workers=1 failed:" in out.stderr and "stall stopped answering" in out.stderr
    assert leftovers(run) == []


@pytest.mark.quiet
def test_calibrate_saves_only_levels_where_the_client_was_the_limit(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = lab_env(tmp_path, LAB_CACHE=str(cache), CLIENTS="siege", CONCURRENCY="2",
                  DURATION="1s", PORT=str(free_port()), **GRACE)
    cal = subprocess.run(["make", "-s", "calibrate"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert "| siege" in cal.stdout and "c=2" in cal.stdout
    refused = [line for line in cal.stderr.splitlines() if "not saved:" in line]
    if cal.returncode == 0:             # a quiet host where siege was the limit
        data = json.loads((cache / "calibration.json").read_text())
        saved = data["clients"]["siege"]
        assert data["ceiling"] == "nginx" and data["pinning"]["client_cpus"]
        assert data["topology"].startswith("loopback")
        for mode in ("close", "keep-alive"):
            for level in saved.get(mode, {}).values():
                # a busy host: saved all the same, the calibration marked host-busy
                assert level["client_bound"] and (level["host_busy_pct"] <= 10
                                                   or data.get("host_busy") is True)
        assert ("make calibrate` again" in cal.stderr) == bool(data.get("host_busy"))
        assert len(refused) + sum(len(saved.get(m, {})) for m in ("close", "keep-alive")) == 2
    else:                               # each level was refused, and says why
        assert cal.returncode == 2, cal.stderr[-3000:]     # make's code for the step's 1
        assert len(refused) == 2 and "no level was saved" in cal.stderr
        assert not (cache / "calibration.json").exists()


@pytest.mark.quiet
def test_a_run_states_its_share_of_a_calibration_of_its_conditions(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    out = bench(lab_env(tmp_path, LAB_CACHE=str(cache), SERVER="paced", CONCURRENCY="2",
                        PORT=str(free_port()), **QUICK), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    first, _ = only_run(tmp_path)
    made = manifest.read_manifest(first)           # a calibration of exactly these conditions
    cal = calibration.Calibration(
        made="2026-11-24T00:00:00+0000", ceiling="nginx", duration_s=1, levels=[2],
        pinning=made.pinning, host={}, topology=made.topology,
        clients={"siege": calibration.CalClient("4", {"close": {2: calibration.CalLevel(
            rate_rps=10.0, client_cpu_pct=95.0, client_bound=True)}, "keep-alive": {}})})
    cache.mkdir(exist_ok=True)
    files.write_json(cache / "calibration.json", cal.to_json())
    shutil.rmtree(first)
    out = bench(lab_env(tmp_path, LAB_CACHE=str(cache), SERVER="paced", CONCURRENCY="2",
                        PORT=str(free_port()), **QUICK), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run, m = only_run(tmp_path)
    assert m["calibration"]["made"] == "2026-11-24T00:00:00+0000"
    summary = (run / "summary.md").read_text()
    assert "of what siege drove against the ceiling here (c=2)" in summary
    # paced at c=2 (5 ms a request) does far more than the 10 req/s on record: it does not hold
    assert "the calibration does not hold here: run `make calibrate` on a quiet host" in summary
    assert "client-limited" not in summary


def test_a_knob_value_the_server_cannot_serve_is_recorded_and_skipped(tmp_path: Path) -> None:
    out = bench(lab_env(tmp_path, SERVER="closer", AXIS="workers", VALUES="1 2",
                        CONCURRENCY="2", PORT=str(free_port()), **QUICK), timeout=300)
    assert out.returncode == 1, out.stderr[-3000:]
    run, m = only_run(tmp_path)
    assert [(r.value, r.workers) for r in read_rows(run)] == [(2, 2)]
    assert [s["status"] for s in m["servers"]["closer"]["starts"]] == ["not loaded", "complete"]
    assert m["status"] == "incomplete"
    [problem] = m["problems"]
    assert problem.startswith("closer workers=1: closer failed verification, not loaded")
    assert "keep the connection open" in problem
    assert "workers=1 not loaded" in (run / "summary.md").read_text()
    assert leftovers(run) == []
