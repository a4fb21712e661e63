"""The two workshop lessons without a chart: the USE method read off a run
(`lab use`, lab.analyse.usemethod) and the live view of a running level (`lab
live`, lab.studies.live)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, lab, lab_env
from lab.present import usetable
from lab.record import runrecord

pytestmark = pytest.mark.unit

FIXTURES = ROOT / "tests" / "fixtures" / "runs"
FLAKY = FIXTURES / "20261123-033230-warming+nginx+flaky"     # failures, client-bound, host-busy


def test_use_reads_each_resource_of_each_level_off_the_run() -> None:
    rec = runrecord.load(FLAKY)
    found = usetable.tables(rec.rows)
    assert {(s, v) for s, v, _ in found} == {(r.server, r.value) for r in rec.rows}
    for server, value, rows in found:
        assert [r[0] for r in rows] == ["server CPU", "client CPU", "the lab's CPUs (others)",
                                        "connections (accept queue)", "sockets", "memory",
                                        "requests"]
        level = [r for r in rec.rows if (r.server, r.value) == (server, value)]
        failed = sum(r.failed for r in level)
        assert rows[-1][3].startswith(f"{failed:,} failed")
        bound = sum(r.client_bound for r in level)
        assert (f"client-bound in {bound} of" in rows[1][2]) == (bound > 0)
        # what the run does not record is said, with the command that shows it
        assert "not recorded" in rows[0][2] and "vmstat" in rows[0][2]
    assert any("failed" in r[3] and not r[3].startswith("0 failed")
               for s, _, rows in found if s == "flaky" for r in rows[-1:])


@pytest.mark.fault
def test_make_use_prints_the_table_and_refuses_a_non_run(tmp_path: Path) -> None:
    env = lab_env(tmp_path)
    out = lab(env, "use", str(FLAKY))
    assert out.returncode == 0, out.stderr
    assert "## flaky, c=8" in out.stdout and "| resource | utilisation |" in out.stdout
    (tmp_path / "empty").mkdir()
    bad = lab(env, "use", str(tmp_path / "empty"))
    assert bad.returncode == 2 and "error:" in bad.stderr


@pytest.mark.fault
def test_live_follows_the_start_being_measured(tmp_path: Path) -> None:
    run = tmp_path / "results" / "20261125-000000-sturdy-wrk-close"
    shutil.copytree(FIXTURES / "20261124-071349-sturdy+paced-landed", run)
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        m = json.loads((run / "manifest.json").read_text())
        m["status"] = "running"
        start = m["servers"]["sturdy"]["starts"][0]
        start.update(status="measuring", pid=server.pid)
        (run / "manifest.json").write_text(json.dumps(m))
        (run / "sturdy").mkdir(exist_ok=True)
        (run / "sturdy" / "wrk-rep1-c4.out").write_text("")
        # a line a second: 6 s leave room for a host loaded by a build beside
        # (3 s gave one line there once)
        out = lab(lab_env(tmp_path), "live", "--seconds", "6", timeout=60)
    finally:
        server.kill()
        server.wait()
    assert out.returncode == 0, out.stderr
    lines = [x for x in out.stdout.splitlines() if x.startswith("[sturdy")]
    assert len(lines) >= 2, out.stdout
    assert all(f"[sturdy {start['id']}]" in x and "wrk-rep1-c4" in x for x in lines)
    assert "server CPU" in lines[-1] and "client CPUs" in lines[-1] and "TIME_WAIT" in lines[-1]
    assert "rate: at the level's end" in lines[-1]          # wrk reports at the end only


@pytest.mark.fault
def test_live_waits_for_a_run_then_says_none_came(tmp_path: Path) -> None:
    out = lab(lab_env(tmp_path), "live", "--seconds", "1", timeout=60)
    assert out.returncode == 2 and "no run started" in out.stderr


def test_live_starts_afresh_at_a_new_start(tmp_path: Path) -> None:
    """A new start is a new process, its CPU counted from 0: its first line
    subtracted the previous start's CPU (server CPU -1050%), and showed the
    previous start's last level as the one running."""
    import time
    from lab.record import manifest
    from lab.studies import live
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "20261124-071349-sturdy+paced-landed", run)
    sum(range(3_000_000))                           # the first start's CPU: this process's
    second = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        data = json.loads((run / "manifest.json").read_text())
        data["status"] = "running"
        first, again = data["servers"]["sturdy"]["starts"][:1] * 2
        first = dict(first, status="measuring", pid=os.getpid())
        data["servers"]["sturdy"]["starts"] = [first]
        (run / "manifest.json").write_text(json.dumps(data))
        (run / "sturdy").mkdir(exist_ok=True)
        (run / "sturdy" / f"wrk-{first['id']}-c4.out").write_text("")
        state: dict[str, float] = {}
        said = [live.line(manifest.read_manifest(run), run, state, time.monotonic())]
        time.sleep(0.3)
        said.append(live.line(manifest.read_manifest(run), run, state, time.monotonic()))
        assert f"wrk-{first['id']}-c4" in said[-1] and "server CPU" in said[-1]
        # the next start: another id, another process, no output of its own yet
        nxt = dict(again, id="rep2", rep=2, status="measuring", pid=second.pid)
        data["servers"]["sturdy"]["starts"] = [dict(first, status="complete"), nxt]
        (run / "manifest.json").write_text(json.dumps(data))
        time.sleep(0.3)
        for _ in range(2):
            said.append(live.line(manifest.read_manifest(run), run, state, time.monotonic()))
            time.sleep(0.3)
    finally:
        second.kill()
        second.wait()
    for text in said[2:]:
        assert "[sturdy rep2]" in text and f"PID {second.pid}" in text, text
        assert f"wrk-{first['id']}-c4" not in text, text       # not the last start's level
        assert "server CPU -" not in text, text
    assert "server CPU" in said[-1]
