"""A server across runs (issue 20): `make history SERVER=x` as a table, and
results/index.html's trend chart per server (plots/history.gp, inlined by
html's one inliner), each run numbered and linked, a line broken wherever
the conditions change. On constructed runs."""
from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, lab_env
from lab.analyse import history
from lab.present import historytable, indexpage
from lab.record import folder
from test_compare import make_run, manifest, paced_rows, typed

pytestmark = pytest.mark.unit


def runs(top: Path) -> list[Path]:
    """Four runs of paced: two under siege, one under wrk, one under siege
    again with another server version; started in that order."""
    out = []
    for i, (changes, rate) in enumerate([({}, 100), ({}, 120),
                                         ({"client.tool": "wrk"}, 300),
                                         ({"servers.paced": {"version": "2.0", "facts": {}}},
                                          90)]):
        m: dict[str, Any] = manifest(**changes, started=f"2026-11-2{i}T10:00:00+0000")
        out.append(make_run(top, f"r{i + 1}", m,
                            paced_rows({1: [rate / 2] * 3, 4: [rate, rate + 1, rate + 2]})))
    return out


def test_points_and_segments_break_where_conditions_change(tmp_path: Path) -> None:
    top = tmp_path / "results"
    runs(top)
    pts = history.points(top)["paced"]
    assert [p.run for p in pts] == ["r1", "r2", "r3", "r4"]
    assert [p.peak_rps for p in pts] == [101, 121, 301, 91]
    assert [p.peak_at for p in pts] == [4, 4, 4, 4]
    assert [[p.run for p in s] for s in history.segments(pts)] == [["r1", "r2"], ["r3"], ["r4"]]
    assert history.changes(pts[1], pts[2]) == ["client siege → wrk"]
    assert history.changes(pts[2], pts[3]) == ["client wrk → siege",
                                                "server version stdlib → 2.0"]


@pytest.mark.unit
def test_a_dotted_server_name_has_its_version_in_the_conditions() -> None:
    """jersey.tomcat is one server: its version breaks a line as any other's does."""
    m = manifest()
    m["servers"]["jersey.tomcat"] = {"version": "3.1.5", "facts": {}}
    assert ("server version", "3.1.5") in history.conditions(typed(m), "jersey.tomcat")
    assert ("server version", "stdlib") in history.conditions(typed(m), "paced")
    assert ("server version", "?") in history.conditions(typed(m), "absent")


@pytest.mark.fault
def test_make_history_prints_the_table(tmp_path: Path) -> None:
    top = tmp_path / "results"
    runs(top)
    env = lab_env(tmp_path, SERVER="paced")
    done = subprocess.run(["make", "-s", "history"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "# paced across 4 runs"
    assert "| 1 | r1 | 2026-11-20T10:00:00+0000 | 101 (4) |" in done.stdout
    assert "| | **conditions change:** client siege → wrk | | | | | | |" in lines
    rows = [ln for ln in lines if re.match(r"\| \d ", ln)]
    assert [r.split(" | ")[1] for r in rows] == ["r1", "r2", "r3", "r4"]
    bad = subprocess.run(["make", "-s", "history"], cwd=ROOT,
                         env=lab_env(tmp_path, SERVER="nope"), capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "no run in" in bad.stderr and "paced" in bad.stderr


def test_the_index_has_a_trend_chart_per_server_with_linked_runs(tmp_path: Path) -> None:
    top = tmp_path / "results"
    made = runs(top)
    folder.mark(top)
    (made[0] / "report.html").write_text("<html></html>")
    index = indexpage.write_index(top)
    assert index is not None
    text = index.read_text()
    assert "<h2>History per server</h2>" in text and "<h3>paced</h3>" in text
    chart = text.split('<figure id="history-paced">')[1].split("</figure>")[0]
    assert chart.startswith("<svg") and "<script" not in chart.lower()
    assert "http://" not in chart and "https://" not in chart      # the hardened inliner
    items = re.findall(r"<li[^>]*>(.*?)</li>", text.split('<ol class="history">')[1]
                       .split("</ol>")[0])
    assert items[0].startswith('<a href="r1/report.html">r1</a>')   # its report
    assert items[1].startswith('<a href="r2/">r2</a>')              # no report: its folder
    assert items[2] == "conditions change: client siege → wrk"
    # nothing but the index and the runs' cache is written in the results folder
    assert sorted(p.name for p in top.iterdir()) == [".lab-results", ".lab-runs-cache.json",
                                                      "index.html", "r1", "r2", "r3", "r4"]
    # the data gnuplot draws: a blank line (a break in every line) at each change
    history.data_file(tmp_path / "paced.dat", history.points(top)["paced"])
    dat = (tmp_path / "paced.dat").read_text().split("\n")[1:-1]
    assert dat == ["1 101 4950.5 10 ? 0", "2 121 4132.23 10 ? 0", "",
                   "3 301 1661.13 10 ? 0", "", "4 91 5494.51 10 ? 0"]



def test_a_chart_that_cannot_be_drawn_says_why(tmp_path: Path) -> None:
    top = tmp_path / "results"
    runs(top)
    pts = [replace(p, peak_rps=None, cpu_us_per_req=None, rss_mb=None)
           for p in history.points(top)["paced"]]
    with pytest.raises(history.ChartError, match="no figure of paced in any run"):
        history.chart_svg("paced", pts)
    assert history.chart_svg("paced", history.points(top)["paced"]).lstrip().startswith("<")


def test_flagged_runs_say_so_and_are_no_step_of_the_trend(tmp_path: Path) -> None:
    """Issue 30: client-bound and host-busy runs read as a trend (14,376 ->
    6,579 -> 2,259). Each says its flag in the table's flags column, and the
    chart's line does not join it to the others."""
    top = tmp_path / "results"
    for i, (rate, flag) in enumerate([(100, ""), (60, "host-busy"), (30, "client-bound"),
                                      (102, "")]):
        rows = paced_rows({4: [rate, rate + 1, rate + 2]})
        rows = [replace(r, flags=flag, client_bound=flag == "client-bound") if r.rep == 1
                else r for r in rows]
        make_run(top, f"r{i + 1}", manifest(started=f"2026-11-2{i}T10:00:00+0000"), rows)
    pts = history.points(top)["paced"]
    assert [p.flags for p in pts] == [(), ("host-busy",), ("client-bound",), ()]
    lines = historytable.table("paced", pts)
    assert lines[2].endswith("| flags |")
    rows = {ln.split(" | ")[1]: ln for ln in lines if re.match(r"\| \d ", ln)}
    assert rows["r1"].endswith("|  |") and rows["r4"].endswith("|  |")
    assert rows["r2"].endswith("| host-busy: not a trend point |")
    assert rows["r3"].endswith("| client-bound (req/s a lower bound): not a trend point |")
    assert any("2 of 4 runs flagged" in ln for ln in lines)
    history.data_file(tmp_path / "paced.dat", pts)
    dat = (tmp_path / "paced.dat").read_text().split("\n")[1:-1]
    # the line joins the clean runs (1 and 4); each flagged run stands apart
    blocks = "\n".join(dat).split("\n\n")
    assert [[ln.split()[0] for ln in b.splitlines()] for b in blocks] == \
        [["1", "4"], ["2"], ["3"]]
    assert {ln.split()[0]: ln.split()[-1] for ln in dat if ln} == \
        {"1": "0", "2": "1", "3": "1", "4": "0"}
    assert history.chart_svg("paced", pts).lstrip().startswith("<")
    folder.mark(top)
    index = indexpage.write_index(top)
    assert index is not None and "host-busy: not a trend point" in index.read_text()


def test_a_run_folder_named_like_a_script_url_is_a_quoted_relative_link(tmp_path: Path) -> None:
    """Issue 44 #5: a run folder named `javascript:alert(document.domain)`
    never becomes an href the browser would run, in the runs table or the
    history list; every href of the index is a relative path to its file."""
    from html import unescape
    from urllib.parse import unquote
    top = tmp_path / "results"
    made = runs(top)
    hostile = made[1].rename(top / "javascript:alert(document.domain)")
    folder.mark(top)
    (hostile / "report.html").write_text("<html></html>")
    index = indexpage.write_index(top)
    assert index is not None
    text = index.read_text()
    assert "javascript:alert(document.domain)" in text          # shown, as text
    hrefs = re.findall(r'href="([^"]*)"', text, re.I)
    assert len(hrefs) >= 5
    assert not [h for h in hrefs if unescape(h).lower().lstrip().startswith("javascript:")]
    for h in hrefs:
        target = unquote(unescape(h))
        assert ":" not in unescape(h).split("/")[0] and not target.startswith("/"), h
        assert (top / target).exists(), h
