"""End to end, as `make bench` runs it: every server in the repository is
built (Ada toolchain bootstrap included; conftest's `built`, once a session),
verified and swept, then charted. The study's eight servers are checked on
the two runs of `make reproduce STUDY=ada-vs-java QUICK=1` (conftest's
quick_study, whose claims the smoke test below reads: 3 levels of 1 s, siege
and wrk; both its readers live in this file, so two pytest-xdist workers never
both make it);
the others are run here, warmed up and swept at two short levels. The
slowest test: it runs once. The robustness probe of every server is
test_probe.py's (each server probed once a session); make bench's probe step
itself runs in the topology tests (netns, ssh, docker)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, Build, Made, bench, free_port, leftovers, repository_env, run_folders
from lab.analyse import analysis, claims
from lab.record.rows import rows_by_server
from lab.setup.servers import ServerSpec, discover
from lab.studies import reproduce
from test_answer import HEAD, LONGEST, peak_in_head

pytestmark = pytest.mark.real_server

PNG = b"\x89PNG\r\n\x1a\n"


def manifest(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "manifest.json").read_text())
    return data


def check_run(run: Path, levels: list[int]) -> None:
    """A complete run: each server verified, listening where the lab said,
    loaded at every level, its files and charts made, nothing left running.
    No request failed, but above a server's tasks (aws@8 at c=50: AWS closes
    the connections past its slots)."""
    m = manifest(run)
    tool = m["client"]["tool"]
    assert m["status"] == "complete" and m["tools"][tool], (run, m["status"])
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
        assert [r.concurrency for r in rows] == levels
        for r in rows:
            assert r.rate_rps > 0 and r.transactions > 0, r
            assert r.failed == 0 or r.concurrency > (start.get("workers") or r.concurrency), r
            assert r.rss_end_kb > 0 and r.threads_end >= 1, r
            assert r.server_cpu_s > 0 and r.client_cpu_s > 0, r
        dat = (run / name / "rps.dat").read_text().splitlines()
        assert len(dat) == 1 + len(levels) and len(dat[1].split()) == 2
        assert (run / name / "server-rep1.log").exists()
        assert (run / name / f"{tool}-rep1-c{levels[0]}.out").read_text().strip()
    for chart in ("rps", "rss", "latency"):
        assert (run / f"{chart}.png").read_bytes().startswith(PNG)
        assert b"<svg" in (run / f"{chart}.svg").read_bytes()[:2000]
    assert (run / "report.html").read_text().count("<svg") >= 3
    summary = (run / "summary.md").read_text()
    assert all(f"| {name} |" in summary for name in m["servers"])
    # the answer first (issue 53): what was measured, the peak, the limit, each
    # line short; the 80-line bound is a one-server run's (test_front_door)
    lines = summary.splitlines()
    head = lines[:lines.index("", 2)]
    assert len(head) <= HEAD and all(len(x) <= LONGEST for x in head), head
    assert peak_in_head(summary, analysis.of(run)[1].stats), head
    assert leftovers(run) == []


def test_every_server_end_to_end(tmp_path: Path, built: Build, quick_study: Made) -> None:
    known = discover(ROOT)
    assert quick_study.out.returncode == 0, quick_study.out.stderr[-4000:]
    [claims] = quick_study.results.glob("reproduce-ada-vs-java-*/claims.json")
    study = [Path(r["folder"]) for r in json.loads(claims.read_text())["runs"]
             if r["role"] != reproduce.COST_ROLE]
    in_study = {ServerSpec.parse(n).name for run in study for n in manifest(run)["servers"]}
    rest = [name for name in known if name not in in_study]
    assert rest and in_study < set(known), (in_study, rest)
    built(*rest)
    env = repository_env(tmp_path, SERVER=" ".join(rest), CONCURRENCY="1 4", DURATION="1s",
                         WARMUP="1s", PORT=str(free_port()))
    out = bench(env, timeout=3600)
    assert out.returncode == 0, out.stderr[-4000:]
    [run] = run_folders(tmp_path)
    m = manifest(run)
    assert set(m["servers"]) == set(rest) and m["client"]["tool"] == "siege"
    check_run(run, [1, 4])
    for name in rest:                        # siege's own output, as the lab keeps it
        assert (run / name / "siege-rep1-c4.out").read_text().lstrip().startswith("{")
    for study_run in study:                  # siege, then wrk
        check_run(study_run, [1, 2, 50])

    # `make plots RUN=...` redraws from the saved results alone
    (run / "rps.png").unlink()
    redraw = subprocess.run([sys.executable, "-m", "lab", "plot", str(run)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert redraw.returncode == 0, redraw.stderr
    assert (run / "rps.png").read_bytes().startswith(PNG)


def test_quick_smoke_run_of_ada_vs_java(quick_study: Made) -> None:
    """make reproduce STUDY=ada-vs-java QUICK=1 (conftest's quick_study, once a
    session): two real lab runs (siege, wrk), 3 levels x 1 s x 1 repetition
    for aws@8 aws@16 asf@8 ews@1 simple-components@1 jersey@62 ada-mini@1 nginx@1."""
    r = quick_study.out
    assert r.returncode == 0, r.stderr[-4000:]
    folders = sorted(quick_study.results.glob("reproduce-ada-vs-java-*"))
    assert len(folders) == 1
    folder = folders[0]
    text = (folder / "claims.md").read_text()
    assert text in r.stdout and reproduce.SMOKE in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 8
    data = json.loads((folder / "claims.json").read_text())
    assert [(run["client"], run["role"]) for run in data["runs"]] == [
        ("siege", "published client"), ("wrk", "second client"),
        ("wrk", reproduce.COST_ROLE), ("wrk", reproduce.COST_ROLE)]
    for c in data["claims"]:
        for client in ("siege", "wrk"):
            got = c["by_client"][client]
            assert got["verdict"] == claims.INCONCLUSIVE, (c["id"], got)
            assert got["reason"]
    # the paired cost judgement, end to end: each throughput claim judged by cost
    # too (2 pairs a duet: no interval), the claim between worker counts not
    by_cost = {c["id"]: c["by_client"].get("cost") for c in data["claims"]}
    for cid in ("aws-over-grizzly-rps", "asf-over-aws-rps"):
        got = by_cost[cid]
        assert got is not None and got["verdict"] == claims.INCONCLUSIVE, (cid, got)
        assert "too few pairs: 2" in got["reason"] and got["runs"], got
    assert "more cores" in by_cost["aws-more-tasks-not-faster"]["reason"]
    assert by_cost["single-task-flat"]["by"].startswith("cost")
    assert by_cost["grizzly-over-aws-rss"] is None
    assert "by cost: verdict (reason)" in text
    for run in data["runs"][:2]:
        path = Path(run["folder"])
        assert run["exit"] == 0 and (path / "report.html").exists()
        m = json.loads((path / "manifest.json").read_text())
        assert m["status"] == "complete"
        assert m["params"]["levels"] == [1, 2, 50] and m["params"]["repeat"] == 1
        assert sorted(m["servers"]) == sorted(["aws@8", "aws@16", "asf@8", "ews@1",
                                               "simple-components@1", "jersey@62",
                                               "ada-mini@1", "nginx@1"])
        assert leftovers(path) == []
    for run, servers in zip(data["runs"][2:], (["aws@8", "jersey@62"], ["asf@8", "aws@8"])):
        path = Path(run["folder"])
        assert run["exit"] == 0 and (path / "report.html").exists()
        m = json.loads((path / "manifest.json").read_text())
        assert m["status"] == "complete" and m["params"]["paired"] == "duet"
        assert m["params"]["levels"] == [5] and m["params"]["repeat"] == 2
        assert list(m["servers"]) == servers and leftovers(path) == []
