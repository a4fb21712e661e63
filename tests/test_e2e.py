"""End to end, as `make bench` runs it: every server in the repository is
built (Ada toolchain bootstrap included; conftest's `built`, once a session),
verified, warmed up and swept at two short levels, then charted. The slowest
test: it runs once. The robustness probe of every server is test_probe.py's
(each server probed once a session); make bench's probe step itself runs in
the topology tests (netns, ssh, docker)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, Build, bench, free_port, lab_env, leftovers, run_folders
from lab.record.rows import rows_by_server
from lab.setup.servers import discover

PNG = b"\x89PNG\r\n\x1a\n"


def test_every_server_end_to_end(tmp_path: Path, built: Build) -> None:
    built(*discover(ROOT))
    env = lab_env(tmp_path, SERVER="all", CONCURRENCY="1 4", DURATION="1s", WARMUP="1s",
                  PORT=str(free_port()))
    del env["LAB_SERVER_PATH"]                       # the repository's servers only
    out = bench(env, timeout=3600)
    assert out.returncode == 0, out.stderr[-4000:]
    [run] = run_folders(tmp_path)
    m = json.loads((run / "manifest.json").read_text())
    known = discover(ROOT)
    assert m["status"] == "complete" and set(m["servers"]) == set(known)
    assert m["client"]["tool"] == "siege" and m["tools"]["siege"]
    assert m["pinning"]["server_cpus"] != "" and m["host"]["cores"] >= 1

    grouped = dict(rows_by_server(run))
    for name, record in m["servers"].items():
        assert record["status"] == "complete", (name, record)
        [start] = record["starts"]
        assert "keep-alive" in start["verified"] and "exact body" in start["verified"]
        # a default run: loopback only, backlog 512, as ss showed it after the start
        assert start["listening"] == {"address": "127.0.0.1", "backlog": 512}, name
        assert record["facts"] and "error" not in record["facts"], (name, record["facts"])
        rows = grouped[name]
        assert [r.concurrency for r in rows] == [1, 4]
        for r in rows:
            assert r.rate_rps > 0 and r.transactions > 0, r
            assert r.failed == 0, r
            assert r.rss_end_kb > 0 and r.threads_end >= 1, r
            assert r.server_cpu_s > 0 and r.client_cpu_s > 0, r
        dat = (run / name / "rps.dat").read_text().splitlines()
        assert len(dat) == 3 and len(dat[1].split()) == 2
        assert (run / name / "server-rep1.log").exists()
        assert (run / name / "siege-rep1-c4.out").read_text().lstrip().startswith("{")

    for chart in ("rps", "rss", "latency"):
        assert (run / f"{chart}.png").read_bytes().startswith(PNG)
        assert b"<svg" in (run / f"{chart}.svg").read_bytes()[:2000]
    assert (run / "report.html").read_text().count("<svg") >= 3
    summary = (run / "summary.md").read_text()
    assert all(f"| {name} |" in summary for name in known)
    assert leftovers(run) == []

    # `make plots RUN=...` redraws from the saved results alone
    (run / "rps.png").unlink()
    redraw = subprocess.run([sys.executable, "-m", "lab", "plot", str(run)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert redraw.returncode == 0, redraw.stderr
    assert (run / "rps.png").read_bytes().startswith(PNG)
