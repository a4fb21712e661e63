"""The run record read back as a new user would, through the front door:
runs of older labs open, corrupt or foreign folders give a message and exit 2
(never a traceback), the index is written only where it is the lab's, and
atomically; the Makefile passes RUN, A and B as data; rerun lets settings
given now win; missing or impossible figures show as "–"; a failed compare
leaves nothing behind. The eight cases of the issue that asked for the
typed record, each reproduced."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, free_port
from lab.analyse import analysis, wording
from lab.present import indexpage, plot
from lab.present.page import escaped
from lab.record import files, folder, manifest, outputs, runrecord
from lab.setup.params import Repeat

pytestmark = pytest.mark.fault

FIXTURES = ROOT / "tests" / "fixtures" / "runs"
OLD = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
LANDED = "20261124-071349-sturdy+paced-landed"     # written by the tree before the typed record
COMPLETE = "20261123-033407-nginx+paced"


def lab(*args: str, env: dict[str, str] | None = None,
        cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    full.update(LAB_SERVER_PATH=str(FAKES), **(env or {}))
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120)


def make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    full.update(LAB_SERVER_PATH=str(FAKES), **(env or {}))
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *args], env=full,
                          capture_output=True, text=True, timeout=120)


def copy_run(dest: Path, name: str = COMPLETE) -> Path:
    shutil.copytree(FIXTURES / name, dest)
    return dest


def lab_results(tmp: Path) -> Path:
    """A results folder as the lab makes it (marked as its own)."""
    top = tmp / "results"
    top.mkdir()
    folder.mark(top)
    return top


# ---- runs written by older labs ------------------------------------------------------

@pytest.mark.parametrize("name", OLD)
def test_runs_of_older_labs_open_and_render(name: str, tmp_path: Path) -> None:
    run = copy_run(tmp_path / name, name)
    rec, a = analysis.of(run)
    assert rec.rows and a.stats and rec.manifest.client.tool
    schema_of = json.loads((FIXTURES / name / "manifest.json").read_text()).get("schema")
    assert schema_of in (None, 2), schema_of      # before the typed record, or schema 2 (pre21)
    done = lab("report", str(run))
    assert done.returncode == 0, done.stderr
    assert (run / "report.html").is_file() and (run / "summary.md").is_file()


@pytest.mark.unit
def test_a_manifest_survives_a_read_modify_write(tmp_path: Path) -> None:
    run = copy_run(tmp_path / LANDED, LANDED)
    before = json.loads((run / "manifest.json").read_text())
    manifest.update(run, lambda m: None)
    after = json.loads((run / "manifest.json").read_text())
    assert after.pop("schema") == manifest.SCHEMA
    for key in before:                       # nothing lost, however typed
        assert key in after, key
    assert after["servers"]["sturdy"]["starts"][0]["pid"] == \
        before["servers"]["sturdy"]["starts"][0]["pid"]


@pytest.mark.unit
def test_a_newer_schema_is_refused_with_what_to_do(tmp_path: Path) -> None:
    run = copy_run(tmp_path / "r")
    m = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**m, "schema": manifest.SCHEMA + 1}))
    with pytest.raises(files.RecordError, match="newer lab"):
        runrecord.load(run)


# ---- case 1: report and plots never overwrite a page the lab did not write -----------

def test_case1_report_leaves_a_users_index_alone(tmp_path: Path) -> None:
    mine = tmp_path / "v"
    mine.mkdir()
    (mine / "index.html").write_text("mine\n")
    run = copy_run(mine / "r")
    done = make("report", f"RUN={run}")
    assert done.returncode == 0, done.stderr
    assert (mine / "index.html").read_text() == "mine\n"
    assert (run / "report.html").is_file()
    assert "not a results folder the lab made" in done.stderr


def test_case1_even_in_the_labs_own_folder_a_foreign_index_stays(tmp_path: Path) -> None:
    top = lab_results(tmp_path)
    (top / "index.html").write_text("<html>the user's notes</html>\n")
    run = copy_run(top / "r")
    assert lab("report", str(run)).returncode == 0
    assert (top / "index.html").read_text() == "<html>the user's notes</html>\n"
    (top / "index.html").unlink()
    assert lab("report", str(run)).returncode == 0
    assert indexpage.INDEX_SIGNATURE in (top / "index.html").read_text()


# ---- case 2: one malformed folder breaks nothing else -------------------------------

@pytest.mark.parametrize("content,reason", [
    ("[1, 2, 3]", "should be an object, found a list"),
    ('"a string"', "should be an object, found text"),
    ("", "is empty"),
    ('{"run_id": "x"', "not valid JSON"),
])
def test_case2_a_malformed_sibling_is_listed_with_its_reason(tmp_path: Path, content: str,
                                                             reason: str) -> None:
    top = lab_results(tmp_path)
    run = copy_run(top / "good")
    (top / "bad").mkdir()
    (top / "bad" / "manifest.json").write_text(content)
    done = lab("report", str(run))
    assert done.returncode == 0, done.stderr
    index = (top / "index.html").read_text()
    row = next(r for r in index.split("<tr>") if ">bad<" in r)
    assert "unreadable" in row and escaped(reason) in row
    assert 'href="good/report.html"' in index


# ---- case 3: concurrent report steps -------------------------------------------------

def test_case3_parallel_report_steps_all_succeed(tmp_path: Path) -> None:
    top = lab_results(tmp_path)
    runs = [copy_run(top / f"r{i}") for i in range(4)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    procs = [subprocess.Popen([sys.executable, "-m", "lab", "report", str(runs[i % 4])],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for i in range(16)]
    errors = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
    for p in procs:
        if p.stderr:
            p.stderr.close()
    assert all(code == 0 for code, _ in errors), [e for c, e in errors if c]
    assert indexpage.INDEX_SIGNATURE in (top / "index.html").read_text()
    assert not list(top.glob("*.tmp")) and not list(top.glob(".*.tmp"))


# ---- case 4: the Makefile passes RUN, A and B as data -------------------------------

def test_case4_a_path_with_a_space_works_for_report_and_plots(tmp_path: Path) -> None:
    top = tmp_path / "my results"
    top.mkdir()
    run = copy_run(top / "a run")
    for target in ("report", "plots"):
        done = make(target, f"RUN={run}")
        assert done.returncode == 0, (target, done.stderr)
    assert (run / "report.html").is_file() and (run / "rps.svg").is_file()


def test_case4_a_semicolon_in_run_is_not_a_command(tmp_path: Path) -> None:
    witness = tmp_path / "ran"
    for target in ("report", "plots", "rerun"):
        done = make(target, f"RUN=/nonexistent; touch {witness}")
        assert done.returncode == 2, (target, done.stderr)
        assert "no such run folder" in done.stderr
    done = make("compare", f"A=/x; touch {witness}", f"B=/y; touch {witness}")
    assert done.returncode == 2
    assert not witness.exists()


# ---- case 5: corrupt folders: a message naming the file, exit 2 ----------------------

def corrupt(run: Path, how: str) -> str:
    """Break a run folder; returns the file the message must name."""
    m, csv = run / "manifest.json", run / "results.csv"
    if how == "truncated csv":
        text = csv.read_text()
        csv.write_text(text[:len(text) // 2])
        return "results.csv"
    if how == "csv is a folder":
        csv.unlink()
        csv.mkdir()
        return "results.csv"
    if how == "empty manifest":
        m.write_text("")
    elif how == "truncated manifest":
        m.write_text(m.read_text()[:200])
    elif how == "binary manifest":
        m.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00garbage")
    elif how == "manifest is a list":
        m.write_text("[1, 2, 3]")
    elif how == "foreign folder":
        m.write_text(json.dumps({"name": "my-project", "version": "1.0"}))
    elif how == "no manifest":
        m.unlink()
    return "manifest.json"


HOW = ["truncated csv", "csv is a folder", "empty manifest", "truncated manifest",
       "binary manifest", "manifest is a list", "foreign folder", "no manifest"]


@pytest.mark.parametrize("how", HOW)
def test_case5_a_corrupt_run_gives_a_message_not_a_traceback(tmp_path: Path, how: str) -> None:
    good = copy_run(tmp_path / "good")
    bad = copy_run(tmp_path / "bad")
    name = corrupt(bad, how)
    steps = [("report", str(bad)), ("plot", str(bad)), ("compare", str(good), str(bad))]
    if name == "manifest.json":           # rerun reads the manifest alone
        steps.append(("rerun", str(bad)))
    for args in steps:
        done = lab(*args, env={"RESULTS": str(tmp_path / "out")})
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert re.search(rf"error: .*{re.escape(str(bad))}.*{name}|error: .*{name}", done.stderr), \
            (args, done.stderr)
    assert not (tmp_path / "out").exists() or not [
        p for p in (tmp_path / "out").iterdir() if p.is_dir()]


def test_case5_a_manifest_without_settings_cannot_be_rerun(tmp_path: Path) -> None:
    run = copy_run(tmp_path / "r")
    m = json.loads((run / "manifest.json").read_text())
    del m["settings"]
    (run / "manifest.json").write_text(json.dumps(m))
    done = lab("rerun", str(run))
    assert done.returncode == 2 and "records no `settings`" in done.stderr
    assert "Traceback" not in done.stderr


# ---- case 6: rerun: settings given now win, and it says so ---------------------------

def test_case6_rerun_uses_the_port_given_on_the_command_line(tmp_path: Path) -> None:
    run = copy_run(tmp_path / "r")
    with socket.socket() as busy:               # the port given is taken: `lab check` says so
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = make("rerun", f"RUN={run}", f"PORT={port}",
                    env={"RESULTS": str(tmp_path / "out")})
    assert done.returncode == 2, done.stderr
    assert f"rerun: PORT='{port}' given now overrides the recorded PORT='28383'" in done.stderr
    assert f"{port}" in done.stderr.split("overrides", 1)[1]     # the check used it


@pytest.mark.unit
def test_case6_rerun_settings_recorded_unless_given() -> None:
    from lab.cli.run import rerun_settings
    recorded = {"PORT": "8080", "SERVER": "aws", "DURATION": "5s"}
    settings, over = rerun_settings(recorded, {"PORT": "9090", "DURATION": "5s"},
                                    ["PORT", "DURATION", "RUN"])
    assert settings["PORT"] == "9090" and settings["SERVER"] == "aws"
    assert over == {"PORT": ("8080", "9090")}          # DURATION given but the same
    settings, over = rerun_settings(recorded, {"PORT": "9090"}, [])
    assert settings["PORT"] == "8080" and not over      # in the environment, not given


# ---- case 7: display, ticks, compare folders in the index, a failed compare ----------

def test_case7_a_negative_figure_shows_as_a_dash_with_the_reason(tmp_path: Path) -> None:
    run = copy_run(tmp_path / "r")
    lines = (run / "results.csv").read_text().splitlines()
    head = lines[0].split(",")
    rate = head.index("rate_rps")
    rows = [line.split(",") for line in lines[1:]]
    for r in rows:
        if r[0] == "paced" and r[head.index("value")] != "1":
            r[rate] = "-6280"
    (run / "results.csv").write_text("\n".join([lines[0], *map(",".join, rows)]) + "\n")
    done = lab("report", str(run))
    assert done.returncode == 0, done.stderr
    text = (run / "summary.md").read_text() + (run / "report.html").read_text()
    assert "-6,280" not in text
    assert "– (negative in the record (-6280): impossible)" in text
    assert wording.median_range(None) == "–" and wording.figure(math.nan).startswith("– (")


def test_case7_a_figure_that_is_no_number_is_refused_naming_the_cell(tmp_path: Path) -> None:
    """Issue 44 (6): NaN in results.csv is corruption, refused by the reader
    (it used to be shown as a dash): exit 2, the file, the line and the cell
    named, and no report written from it."""
    run = copy_run(tmp_path / "r")
    (run / "report.html").unlink(missing_ok=True)
    lines = (run / "results.csv").read_text().splitlines()
    head = lines[0].split(",")
    rate = head.index("rate_rps")
    rows = [line.split(",") for line in lines[1:]]
    for r in rows:
        if r[0] == "paced" and r[head.index("value")] == "1":
            r[rate] = "nan"
    (run / "results.csv").write_text("\n".join([lines[0], *map(",".join, rows)]) + "\n")
    done = lab("report", str(run))
    assert done.returncode == 2, done.stderr
    assert "results.csv: line" in done.stderr and "`rate_rps` is 'nan'" in done.stderr
    assert "corrupt" in done.stderr and not (run / "report.html").exists()


def test_case7_concurrency_ticks_are_whole_numbers(tmp_path: Path) -> None:
    run = copy_run(tmp_path / "r")
    done = lab("plot", str(run))
    assert done.returncode == 0, done.stderr
    for chart in ("rps", "latency"):
        svg = (run / f"{chart}.svg").read_text()
        labels = re.findall(r"<text[^>]*>\s*([0-9.]+)\s*</text>", svg)
        values = {float(x) for x in labels}
        assert {1.0, 4.0} <= values, labels
        assert not any("." in x for x in labels if float(x) < 10), labels   # no 0.5, 1.5


def test_case7_compare_folders_are_in_the_index_and_a_failed_compare_leaves_none(
        tmp_path: Path) -> None:
    top = lab_results(tmp_path)
    a, b = copy_run(top / "a"), copy_run(top / "b")
    done = lab("compare", str(a), str(b), env={"RESULTS": str(top)})
    # the saved run has a host-busy repetition at every level: nothing compared
    # cleanly (exit 3), the folder is made all the same
    assert done.returncode == 3 and "host-busy" in done.stderr, done.stderr
    [folder] = [p for p in top.iterdir() if p.name.startswith("compare-")]
    index = (top / "index.html").read_text()
    assert f'href="{folder.name}/compare.html"' in index and "comparison" in index
    page = (folder / "compare.html").read_text()
    assert "<script" not in page.lower() and " onload" not in page.lower()
    other = copy_run(top / "other")
    m = json.loads((other / "manifest.json").read_text())
    csv = (other / "results.csv").read_text().replace("paced,", "elsewhere,") \
        .replace("nginx,", "elsewhere2,")
    (other / "results.csv").write_text(csv)
    (other / "manifest.json").write_text(json.dumps(m))
    before = sorted(p.name for p in top.iterdir())
    done = lab("compare", str(a), str(other), env={"RESULTS": str(top)})
    assert done.returncode == 3 and "nothing to compare" in done.stderr
    assert sorted(p.name for p in top.iterdir()) == before


def test_the_summary_says_the_probe_s_outcome_and_the_page_its_table(tmp_path: Path) -> None:
    """summary.md says each server's probe outcome (issue 53: its table of a
    row per probe, the probe's own printout, is report.html's and probe.json's)."""
    from test_probe import fake_report           # a ProbeReport as the probe makes it
    from lab.measure import probe
    run = copy_run(tmp_path / "r")
    for name, ok in (("nginx", True), ("paced", False)):
        (run / name).mkdir(exist_ok=True)
        probe.save(fake_report(name, ok), run / name / "probe.json")
    done = lab("report", str(run))
    assert done.returncode == 0, done.stderr
    summary = (run / "summary.md").read_text()
    assert "- paced: stopped answering after garbage" in summary
    assert "| probe |" not in summary and "report.html" in summary
    page = (run / "report.html").read_text()
    for name in ("nginx", "paced"):
        for r in fake_report(name, name == "nginx").results:
            assert escaped(r.title) in page
    assert escaped("400 Bad | Request") in page and "no: timed out" in page


@pytest.mark.usefixtures("wrk_installed")                # the lab installs it (conftest)
def test_case6_a_rerun_records_what_it_overrode(tmp_path: Path) -> None:
    run = copy_run(tmp_path / LANDED, LANDED)
    port = str(free_port())
    out = tmp_path / "out"
    done = make("rerun", f"RUN={run}", f"PORT={port}", "REPEAT=1", "CONCURRENCY=1",
                f"RESULTS={out}", env={"WARMUP_MAX": "9s"})
    assert done.returncode == 0, done.stderr[-3000:]
    [new] = [p for p in out.iterdir() if p.is_dir()]
    m = manifest.read_manifest(new)
    assert m.settings["PORT"] == port and m.params.repeat == Repeat(1, 1)
    landed = "20261124-071349-sturdy+paced"          # the run id it was recorded under
    assert m.extra["rerun"]["of"] == landed
    assert m.extra["rerun"]["overridden"]["PORT"] == {"recorded": "18140", "given": port}
    # in the environment, not on the command line: the recorded value stays
    assert "WARMUP_MAX" not in m.extra["rerun"]["overridden"]
    assert m.settings["WARMUP_MAX"] == "60s"
    summary = (new / "summary.md").read_text()
    assert f"Rerun of {landed}; " in summary and f"PORT given now ('{port}')" in summary


def test_what_the_report_writes_is_named_once(tmp_path: Path) -> None:
    """outputs.OUTPUTS is what `lab report` writes into a run folder; the
    pending-report problem names each of them; the charts the lab draws are
    the ones the report page orders."""
    run = tmp_path / COMPLETE
    shutil.copytree(FIXTURES / COMPLETE, run)
    for name in outputs.OUTPUTS:
        (run / name).unlink(missing_ok=True)
    out = lab("report", str(run))
    assert out.returncode == 0, out.stderr
    assert [name for name in outputs.OUTPUTS if not (run / name).is_file()] == []
    assert all(name in manifest.REPORT_PENDING for name in outputs.OUTPUTS)
    drawn = {c for axis in ("concurrency", "rate", "workers") for c in plot.charts(axis, True)}
    assert drawn <= set(outputs.CHARTS)
