"""The lab as a user runs it, on the cheap nginx reference and test doubles:
bad input, busy port, a server that never listens or lies, a crash and
Ctrl-C mid-sweep. After each, nothing the lab started may be left running."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, bench, lab_env, leftovers, run_folders
from lab.record.manifest import read_manifest
from replan import plan_of_line

pytestmark = pytest.mark.fault

SHORT = {"CONCURRENCY": "1 2 3 4 5 6", "DURATION": "2s", "WARMUP": "0"}   # long enough to interrupt
BRIEF = {"CONCURRENCY": "1 2", "DURATION": "1s", "WARMUP": "0"}


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def rows(run: Path) -> list[str]:
    csv = run / "results.csv"
    return csv.read_text().splitlines()[1:] if csv.exists() else []


@pytest.mark.parametrize("settings, message", [
    ({"SERVER": "nope"}, "unknown server nope; known:"),
    ({"SERVER": "nginx", "CONCURRENCY": ""}, "CONCURRENCY is empty"),
    ({"SERVER": "nginx", "CONCURRENCY": "1 x"}, "x is not a positive whole number"),
    ({"SERVER": "nginx", "DURATION": "10x"}, "like 10s or 1m"),
    ({"SERVER": "nginx", "SERVER_CPUS": "99"}, "CPU 99 does not exist"),
])
def test_bad_input_exits_2_before_anything_runs(tmp_path: Path, settings: dict[str, str],
                                                message: str) -> None:
    out = bench(lab_env(tmp_path, **settings), timeout=60)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert "[" not in out.stderr.split(message)[0]     # no step ran before the error
    assert run_folders(tmp_path) == []


def test_make_passes_settings_and_exit_code(tmp_path: Path) -> None:
    env = lab_env(tmp_path)
    out = subprocess.run(["make", "-s", "bench", "SERVER=nginx", "CONCURRENCY=0"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "0 is not a positive whole number" in out.stderr


def test_busy_port_names_the_holder(tmp_path: Path, port: int) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        out = bench(lab_env(tmp_path, SERVER="nginx", PORT=str(port), **SHORT), timeout=60)
    assert out.returncode == 2
    assert f"port {port} is already in use, held by" in out.stderr
    assert "python" in out.stderr
    assert run_folders(tmp_path) == []


def test_server_that_never_listens(tmp_path: Path, port: int) -> None:
    out = bench(lab_env(tmp_path, SERVER="mute", PORT=str(port), **SHORT), timeout=120)
    assert out.returncode == 1
    assert f"did not accept connections on port {port} within 2s" in out.stderr
    assert "mute: not listening on purpose" in out.stderr     # the end of its log
    [run] = run_folders(tmp_path)
    assert manifest(run)["status"] == "incomplete"
    assert manifest(run)["servers"]["mute"]["status"] == "failed"
    assert leftovers(run) == []


def test_server_that_fails_verification_is_not_loaded(tmp_path: Path, port: int) -> None:
    out = bench(lab_env(tmp_path, SERVER="liar nginx", PORT=str(port), **BRIEF), timeout=120)
    assert out.returncode == 1
    assert "liar failed verification, not loaded" in out.stderr
    assert "Hello World?" in out.stderr                       # what came back
    [run] = run_folders(tmp_path)
    assert not list((run / "liar").glob("siege-*.out"))      # the liar was not loaded
    assert rows(run) and all(r.startswith("nginx,") for r in rows(run))  # nginx was
    m = manifest(run)
    assert m["status"] == "incomplete" and m["servers"]["nginx"]["status"] == "complete"
    assert any(p.startswith("liar: not measured (failed") for p in m["problems"])
    assert leftovers(run) == []


def test_a_crash_takes_out_one_server_not_the_run(tmp_path: Path, port: int) -> None:
    """crasher dies (SIGKILL, as the OOM killer does) at its second level; the
    second server and the second repetition are measured all the same."""
    out = bench(lab_env(tmp_path, SERVER="crasher paced", PORT=str(port), REPEAT="2",
                        CONCURRENCY="1 2 3", DURATION="1s", WARMUP="0"), timeout=300)
    assert out.returncode == 1, out.stderr
    [run] = run_folders(tmp_path)
    m = manifest(run)
    assert m["status"] == "incomplete"
    crashed = [s for s in m["servers"]["crasher"]["starts"] if s["status"] == "failed"]
    assert [s["rep"] for s in crashed] == [1, 2]           # tried again in repetition 2
    assert all(s["died_at"] == "c=2" and s["exit_code"] == -signal.SIGKILL for s in crashed)
    assert "the server exited during c=2 (rep1-c2): killed by SIGKILL" in out.stderr
    assert m["servers"]["paced"]["status"] == "complete"
    paced = [r for r in rows(run) if r.startswith("paced,")]
    assert len(paced) == 6                                   # 3 levels x 2 repetitions
    for rep in (1, 2):
        assert (f"crasher rep {rep}: not measured (failed at c=2, killed by SIGKILL)"
                in m["problems"])
    assert "crasher rep 1: not measured" in (run / "summary.md").read_text()
    assert "crasher rep 2: not measured (failed at c=2" in (run / "report.html").read_text()
    assert leftovers(run) == []


def start_bench(tmp_path: Path, port: int) -> tuple[subprocess.Popen[str], Path]:
    env = lab_env(tmp_path, SERVER="nginx", PORT=str(port), **SHORT)
    proc = subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = run_folders(tmp_path)
        if runs and rows(runs[0]):
            return proc, runs[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("no level finished in time")


def test_server_crash_mid_sweep(tmp_path: Path, port: int) -> None:
    proc, run = start_bench(tmp_path, port)
    master = manifest(run)["servers"]["nginx"]["starts"][-1]["pid"]
    assert any("nginx: worker" in p for p in leftovers(run))
    os.kill(master, signal.SIGKILL)                          # its workers stay orphaned
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "the server exited" in err and "finished levels are kept" in err
    m = manifest(run)
    assert m["status"] == "incomplete" and m["servers"]["nginx"]["status"] == "failed"
    assert 1 <= len(rows(run)) < 6
    assert (run / "rps.png").exists()                        # partial results still drawn
    assert leftovers(run) == []


def test_ctrl_c_mid_sweep(tmp_path: Path, port: int) -> None:
    proc, run = start_bench(tmp_path, port)
    os.killpg(proc.pid, signal.SIGINT)                       # what a terminal's Ctrl-C does
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    m = manifest(run)
    assert m["status"] == "interrupted" and m["servers"]["nginx"]["status"] == "interrupted"
    assert len(rows(run)) >= 1
    assert leftovers(run) == []
    assert "This run is interrupted" in (run / "summary.md").read_text()


@pytest.mark.quiet
def test_competing_load_is_flagged(tmp_path: Path, port: int) -> None:
    server_cpu = str(min(os.sched_getaffinity(0)))
    hog = subprocess.Popen(["taskset", "-c", server_cpu, "python3", "-c", "while True: pass"])
    try:
        out = bench(lab_env(tmp_path, SERVER="nginx", PORT=str(port), CONCURRENCY="2",
                            DURATION="2s", WARMUP="0"), timeout=120)
    finally:
        hog.kill()
        hog.wait()
    assert out.returncode == 0, out.stderr
    [run] = run_folders(tmp_path)
    [row] = rows(run)
    assert "host-busy" in row
    assert "Rerun on a quiet host" in (run / "summary.md").read_text()



def test_server_that_stops_answering_after_verification(tmp_path: Path, port: int) -> None:
    out = bench(lab_env(tmp_path, SERVER="stall nginx", PORT=str(port), CONCURRENCY="2 4",
                        DURATION="2s", WARMUP="0"), timeout=120)
    assert out.returncode == 1, out.stderr
    assert "c=2: no request completed in 2s" in out.stderr
    assert "stall stopped answering" in out.stderr
    [run] = run_folders(tmp_path)
    assert manifest(run)["status"] == "incomplete"
    assert len([r for r in rows(run) if r.startswith("stall,")]) == 1   # the evidence is kept
    assert len([r for r in rows(run) if r.startswith("nginx,")]) == 2   # and nginx measured
    assert leftovers(run) == []


def test_rerun_repeats_a_run_from_its_manifest(tmp_path: Path, port: int) -> None:
    first = bench(lab_env(tmp_path, SERVER="nginx", PORT=str(port), CONCURRENCY="3",
                          DURATION="1s", WARMUP="0", KEEPALIVE="1"), timeout=120)
    assert first.returncode == 0, first.stderr
    [run] = run_folders(tmp_path)
    # a different environment must not leak into the rerun
    env = lab_env(tmp_path, SERVER="aws", CONCURRENCY="1 2", KEEPALIVE="0")
    again = subprocess.run(["make", "-s", "rerun", f"RUN={run}"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"rerun of {run.name}" in again.stderr
    new = [r for r in run_folders(tmp_path) if r != run]
    assert len(new) == 1
    assert manifest(new[0])["params"] == manifest(run)["params"]
    assert manifest(new[0])["client"]["connection"] == "keep-alive"
    # the rerun's plan is the run's, and its Reproduce line gives it again (issue 53)
    planned = read_manifest(new[0]).planned
    assert planned == read_manifest(run).planned and planned.load == (3,)
    assert plan_of_line(manifest(new[0])["reproduce"]) == planned


@pytest.mark.real_server
def test_workers_as_shipped_are_recorded_per_server(tmp_path: Path, port: int) -> None:
    """No WORKERS: a server without a manifest default is given none and uses
    its own (3 here), which the lab records from what it prints; NAME@N still
    sets one server, WORKERS=N every server."""
    out = bench(lab_env(tmp_path, SERVER="shipped shipped@2 paced", PORT=str(port),
                        CONCURRENCY="1", DURATION="2s", WARMUP="0"), timeout=300)
    assert out.returncode == 0, out.stderr
    [run] = run_folders(tmp_path)
    starts = {n: s["starts"][0] for n, s in manifest(run)["servers"].items()}
    assert starts["shipped"]["workers"] is None                 # nothing given ...
    assert starts["shipped"]["ran_with"] == {"workers": 3, "detail": "its own default"}
    assert starts["shipped@2"]["workers"] == 2
    assert starts["shipped@2"]["ran_with"] == {"workers": 2, "detail": "from WORKERS"}
    assert starts["paced"]["workers"] == 1 and starts["paced"]["ran_with"] is None
    assert all(starts[n]["threads_idle"] >= 1 for n in starts)
    workers = {r.split(",")[0]: r.split(",")[6] for r in rows(run)}
    assert workers == {"shipped": "3", "shipped@2": "2", "paced": "1"}

    again = bench(lab_env(tmp_path, SERVER="shipped shipped@2", PORT=str(port), WORKERS="5",
                          CONCURRENCY="1", DURATION="2s", WARMUP="0"), timeout=300)
    assert again.returncode == 0, again.stderr
    run2 = [r for r in run_folders(tmp_path) if r != run][0]
    starts = {n: s["starts"][0] for n, s in manifest(run2)["servers"].items()}
    assert starts["shipped"]["ran_with"]["workers"] == 5 and starts["shipped@2"]["workers"] == 2
