"""Measurement integrity: a level the client abandoned, or whose answers
changed, is no level. Its rate is not taken, it is not ranked, and it says why
(issue 32, measurement defect 1; issue 29 #11).

The client's own elapsed time judges whether it ran the level's length:
Siege's `elapsed_time` (it gives up after 1,024 failures, silently, and also
ends some timed runs early with nothing failed), wrk's duration and vegeta's
duration plus wait. Real captured outputs where one shows it, constructed ones
(a captured output with its duration changed) where none does.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import replace
from html import escape
from pathlib import Path

import pytest

from conftest import GRACE, ROOT, bench, free_port, lab_env, leftovers, run_folders, until
from lab.analyse import analysis, findings, gate, levelrow, metrics, verdicts
from lab.measure.clients import siege, vegeta, wrk
from lab.record import manifest
from lab.record.level import Level
from lab.present import reportpage

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> tuple[str, str]:
    return ((FIXTURES / f"{name}.out").read_text(), (FIXTURES / f"{name}.err").read_text())


# --------------------------------------------------------------------------- each client

def test_siege_that_gave_up_after_1024_failures_stopped_early() -> None:
    # siege-reset: `siege -t1S` against a server that resets every connection
    level = siege.parse(*fixture("siege-reset"))
    assert level.elapsed_s == 0.19 and level.failed == 1025
    assert "gives up after 1,024 failed connections" in level.stopped
    why = levelrow.ran_short(level, 1, "siege")
    assert why.startswith("siege stopped after 0.19 s of the 1 s level (its own elapsed time)")
    assert "1,025 failed" in why


@pytest.mark.parametrize("name, duration", [("siege-ok", 2), ("siege-aws-c50", 2)])
def test_siege_that_ran_its_length_did_not_stop(name: str, duration: int) -> None:
    level = siege.parse(*fixture(name))         # 1.87 s and 1.91 s of 2: Siege's own slack
    assert level.stopped == "" and levelrow.ran_short(level, duration, "siege") == ""


def test_siege_that_ended_early_with_nothing_failed_stopped_early() -> None:
    out, err = fixture("siege-ok")              # 1.87 s: of a 5 s level, it stopped early
    level = siege.parse(out, err)
    assert level.failed == 0 and level.stopped == ""
    assert levelrow.ran_short(level, 5, "siege") == \
        "siege stopped after 1.87 s of the 5 s level (its own elapsed time)"


def wrk_with_duration(seconds: float) -> tuple[str, str]:
    out, err = fixture("wrk-ok")
    lines = []
    for line in out.splitlines():
        if line.startswith(wrk.REPORT_LINE):
            data = json.loads(line[len(wrk.REPORT_LINE):])
            data["duration_us"] = int(seconds * 1e6)
            line = wrk.REPORT_LINE + json.dumps(data)
        lines.append(line)
    return "\n".join(lines) + "\n", err


def test_wrk_by_its_own_duration() -> None:
    assert levelrow.ran_short(wrk.parse(*fixture("wrk-ok")), 2, "wrk") == ""   # -d 2s
    short = wrk.parse(*wrk_with_duration(0.16))
    assert levelrow.ran_short(short, 2, "wrk") == \
        "wrk stopped after 0.16 s of the 2 s level (its own elapsed time)"


def vegeta_with_duration(seconds: float) -> tuple[str, str]:
    out, err = fixture("vegeta-ok")
    data = json.loads(out)
    data["duration"], data["wait"] = int(seconds * 1e9), 1_000_000
    return json.dumps(data) + "\n", err


def test_vegeta_by_its_own_duration() -> None:
    assert levelrow.ran_short(vegeta.parse(*fixture("vegeta-ok")), 2, "vegeta") == ""
    assert levelrow.ran_short(vegeta.parse(*fixture("vegeta-close")), 2, "vegeta") == ""
    short = vegeta.parse(*vegeta_with_duration(0.3))
    assert "vegeta stopped after 0.30 s of the 2 s level" in levelrow.ran_short(short, 2, "vegeta")


def test_vegeta_at_a_low_rate_may_end_one_interval_early() -> None:
    # 5 requests/s for 1 s: the last is sent at 0.8 s; that is the whole level
    level = Level(5, 5, 0, 100.0, 0.801, 6.2, 1.0, 0.0, 1.0, 0.0, offered_rps=5.0)
    assert levelrow.ran_short(level, 1, "vegeta") == ""


# --------------------------------------------------------------------------- the level

WHERE = levelrow.Where(server="aws", rep=1, axis="concurrency", value=8, concurrency=8,
                       offered_rps=None, workers=5, backlog=512, duration_s=5,
                       server_cpus=1, client_cpus=1, lab_cpus=2)


def measured(answer_changed: str = "") -> levelrow.Measured:
    return levelrow.Measured(server_cpu_s=1.0, rss_end_kb=1000, rss_peak_kb=1000,
                             threads_end=5, threads_peak=5, client_cpu_s=1.0, wall_s=5.0,
                             host_busy_s=2.0, host_steal_s=0.0, sampler_cpu_s=0.0,
                             time_wait=0, answer_changed=answer_changed)


def rows_of(server: str, rates: dict[int, float], stopped_at: int | None = None,
            changed_at: int | None = None, reps: int = 3) -> list:
    out = []
    for rep in range(1, reps + 1):
        for value, rate in rates.items():
            level = Level(int(rate * 5), int(rate * 5), 0, 100.0, 5.0, rate, 0.5, 8.0,
                          2.0, 1.0)
            if value == stopped_at:
                level = replace(level, elapsed_s=0.16, failed=1024,
                                stopped="siege stopped after 0.16 s of the 5 s level")
            m = measured("after the level, body changed" if value == changed_at else "")
            out.append(levelrow.make_row(replace(WHERE, server=server, value=value,
                                                 concurrency=value, rep=rep), level, m))
    return out


def test_a_stopped_level_is_flagged_with_its_reason_and_not_ranked() -> None:
    rows = rows_of("aws", {4: 9000.0, 8: 14038.0}, stopped_at=8)
    row = next(r for r in rows if r.value == 8)
    assert row.has("client-stopped")
    assert row.unranked == "client stopped early: siege stopped after 0.16 s of the 5 s level"
    stats = metrics.level_stats(rows)
    at8 = next(s for s in stats if s.value == 8)
    assert not at8.ranked and at8.unranked[0].startswith("rep 1: client stopped early")
    assert metrics.peak(stats).value == 4           # 14,038 req/s is nobody's peak
    other = metrics.level_stats(rows_of("ada-mini", {4: 5000.0, 8: 5000.0}))
    v = verdicts.verdict(at8, next(s for s in other if s.value == 8))
    assert v.kind == "not-comparable" and "client stopped early" in v.text
    assert "client-stopped" in gate.unclean(at8)


def test_a_level_whose_answer_changed_is_flagged_and_not_ranked() -> None:
    rows = rows_of("turncoat", {1: 3000.0, 2: 9000.0}, changed_at=2)
    row = next(r for r in rows if r.value == 2)
    assert row.has("answer-changed")
    assert row.unranked == "answer changed: after the level, body changed"
    stats = metrics.level_stats(rows)
    assert metrics.peak(stats).value == 1
    other = metrics.level_stats(rows_of("ada-mini", {1: 3000.0, 2: 5000.0}))
    v = verdicts.verdict(stats[1], other[1])
    assert v.kind == "not-comparable" and "answer changed" in v.text
    assert verdicts.verdict(stats[0], other[0]).kind != "not-comparable"


def test_a_client_stopped_mid_level_is_flagged_stalled_and_not_ranked() -> None:
    """wrk stopped (SIGSTOP) for 3 s of a 4 s level still ran 4 s by its own
    clock, and reported a third of its rate (issue 44, §7): the time it was
    seen stopped makes the level client-stalled, not ranked."""
    level = Level(4708, 4708, 0, 100.0, 4.0, 1177.0, 0.8, 8.0, 2.0, 1.0)
    where = replace(WHERE, duration_s=4)
    m = replace(measured(), wall_s=4.05, client_stopped_s=3.0)
    row = levelrow.make_row(where, level, m, "wrk")
    assert row.has("client-stalled") and not row.has("sampler-gap")
    assert row.unranked == ("client stalled: wrk was stopped for 3.0 s of the 4 s level "
                            "(a signal or a tracer): it sent nothing then")
    fine = levelrow.make_row(where, replace(level, rate_rps=3326.0),
                             replace(m, client_stopped_s=0.1), "wrk")
    assert fine.flags == "" and fine.unranked == ""
    stats = metrics.level_stats([row])
    assert not stats[0].ranked and "client-stalled" in gate.unclean(stats[0])
    other = metrics.level_stats([fine])
    assert verdicts.verdict(stats[0], other[0]).kind == "not-comparable"
    said = analysis_findings([row])["client-stalled"]
    assert said.startswith("aws: wrk stalled at 1 of 1 levels (c=8: client stalled: wrk was "
                           "stopped for 3.0 s"), said


def test_a_level_longer_than_the_clients_own_clock_is_client_stalled() -> None:
    level = Level(5000, 5000, 0, 100.0, 5.0, 1000.0, 0.8, 8.0, 2.0, 1.0)
    row = levelrow.make_row(WHERE, level, replace(measured(), wall_s=9.0), "siege")
    assert row.has("client-stalled") and "took 9.0 s by the lab's clock for 5.0 s" in row.unranked
    # the same gap with the lab's own sampler stopped is the lab's stall, not the client's
    lab_stopped = levelrow.make_row(WHERE, level, replace(measured(), wall_s=25.0,
                                                          sampler_gap_s=20.0), "siege")
    assert lab_stopped.flags.split() == ["sampler-gap"] and lab_stopped.unranked == ""


def test_an_rmit_level_is_judged_by_its_worst_slice_not_their_sum() -> None:
    """PAIRED=rmit measures a level in up to five slices, each a client run with
    its own start-up: their sum of a few tenths of a second each is no stall;
    a slice stopped for 2 s is, and so is the level."""
    from lab.measure import pair
    where = replace(WHERE, duration_s=10)
    part = Level(2000, 2000, 0, 100.0, 2.0, 1000.0, 0.8, 8.0, 2.0, 1.0)
    m = replace(measured(), wall_s=2.3)
    level, joined = pair.summed([(part, m)] * 5)
    assert level.elapsed_s == 10.0 and joined.wall_s == pytest.approx(11.5)
    assert levelrow.make_row(where, level, joined, "wrk").flags == ""
    assert level.percentiles == ""          # no percentiles from the client: no mark
    # each percentile the worst slice's: an upper bound of the level's, marked so
    slow = replace(part, p50_ms=1.0, p90_ms=2.0, p99_ms=9.0)
    level, joined = pair.summed([(replace(slow, p99_ms=3.0), m)] * 4 + [(slow, m)])
    assert level.percentiles == "bound" and level.p99_ms == 9.0
    assert levelrow.make_row(where, level, joined, "wrk").percentiles == "bound"
    level, joined = pair.summed([(part, m)] * 4 + [(part, replace(m, client_stopped_s=2.0))])
    assert levelrow.make_row(where, level, joined, "wrk").has("client-stalled")


def test_a_sampler_gap_is_flagged_and_its_rate_not_ranked() -> None:
    """The sweep stopped 20 s mid-level: server and client CPU of 5% and 7%
    instead of about 25% and 40% (issue 44, §7). A gap between the sampler's
    samples says so; req/s there is unclean (CPU per request decides)."""
    level = Level(5000, 5000, 0, 100.0, 5.0, 1000.0, 0.8, 8.0, 2.0, 1.0)
    row = levelrow.make_row(WHERE, level, replace(measured(), wall_s=25.0, sampler_gap_s=20.2))
    assert row.has("sampler-gap") and row.server_cpu_pct < 5
    assert "sampler-gap" in gate.unclean(metrics.level_stats([row])[0])
    assert "sampler-gap" in metrics.FLAGS and "sampler-gap" in reportpage.MEANINGS
    # the sampler's ordinary rhythm (0.2 s, a busy host's 0.6 s) is no gap
    quiet = levelrow.make_row(WHERE, level, replace(measured(), sampler_gap_s=0.6))
    assert quiet.flags == ""
    found = analysis_findings([row])
    assert "sampler-gap" in found and "lab's own sampling" in found["sampler-gap"]
    assert "client-stalled" not in found


def analysis_findings(rows: list) -> dict[str, str]:
    """The findings' texts by kind for these rows, as a saved run's analysis finds them."""
    m = manifest.read_manifest(FIXTURES / "runs" / "20261124-071349-sturdy+paced-landed")
    found = analysis.warnings(m, {rows[0].server: metrics.level_stats(rows)}, "", [])
    return {f.kind: f.text() for f in found}


def test_the_series_gap_is_the_longest_between_samples() -> None:
    from lab.record import series
    assert series.longest_gap([]) == 0.0 and series.longest_gap([(1.0, 0.0, 1)]) == 0.0
    points = [(0.0, 0.0, 1), (0.2, 0.1, 1), (20.4, 0.2, 1), (20.6, 0.3, 1)]
    assert abs(series.longest_gap(points) - 20.2) < 1e-9


def test_the_stop_clock_counts_only_time_stopped() -> None:
    import os
    import signal
    import subprocess
    import time
    from lab.host import procfs
    proc = subprocess.Popen(["sleep", "30"])
    try:
        clock = procfs.StopClock(proc.pid)
        clock.tick()
        time.sleep(0.2)
        clock.tick()
        assert clock.stopped_s == 0.0                 # running (sleeping) is not stopped
        os.kill(proc.pid, signal.SIGSTOP)
        until_stopped = time.monotonic() + 5
        while procfs.state(proc.pid) != "T" and time.monotonic() < until_stopped:
            time.sleep(0.01)
        clock.tick()
        time.sleep(0.3)
        clock.tick()
        assert clock.stopped_s >= 0.3
        os.kill(proc.pid, signal.SIGCONT)
    finally:
        proc.kill()
        proc.wait()
    assert procfs.state(proc.pid) == ""


def test_a_remote_client_host_counts_its_client_stopped(tmp_path: Path) -> None:
    """TOPOLOGY=ssh: the agent runs the client there and watches it the same way
    (its result's stopped_s, lab.measure.topologies.ssh.agent)."""
    import threading
    from lab.measure.topologies.ssh import agent
    run = agent.ClientProcess(["sleep", "1"], "0", {}, str(tmp_path), str(tmp_path), "c")

    def stop_for_a_while() -> None:
        from lab.host import procfs
        os.kill(run.proc.pid, signal.SIGSTOP)
        while procfs.state(run.proc.pid) != "T":
            time.sleep(0.01)
        time.sleep(0.6)
        os.kill(run.proc.pid, signal.SIGCONT)
    stopper = threading.Thread(target=stop_for_a_while)
    stopper.start()
    try:
        done = run.wait(30)
    finally:
        stopper.join()
    assert done["done"] and done["stopped_s"] >= 0.5, done
    calm = agent.ClientProcess(["true"], "0", {}, str(tmp_path), str(tmp_path), "d").wait(30)
    assert calm["stopped_s"] == 0.0


# --------------------------------------------------------------------------- live

def show(out: object) -> str:
    return f"{getattr(out, 'stdout', '')}\n{getattr(out, 'stderr', '')}"


@pytest.mark.fault
def test_siege_giving_up_is_caught_live(tmp_path: Path) -> None:
    """dropper resets 9 in 10 connections once verified: Siege gives up after
    1,024 failures within a second of a 3 s level."""
    env = lab_env(tmp_path, SERVER="dropper", CLIENT="siege", CONCURRENCY="8",
                  DURATION="3s", WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=300)
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    assert "NOT RANKED: client stopped early: siege stopped after" in out.stderr, show(out)
    assert "gives up after 1,024 failed connections" in out.stderr
    data = json.loads((run / "results.json").read_text())
    [level] = data["levels"]["dropper"]
    assert "client-stopped" in level["flags"] and level["unranked"]
    [row] = data["rows"]["dropper"]
    assert row["elapsed_s"] < 0.8 * 3 and "client-stopped" in row["flags"].split()
    kinds = {f["kind"]: f for f in data["findings"]}
    assert "siege stopped early" in kinds["client-stopped"]["text"]
    assert "client stopped early" in (run / "summary.md").read_text()
    assert "stopped early" in (run / "report.html").read_text()
    assert_legend(run, "client-stopped")


@pytest.mark.fault
def test_a_body_changed_mid_run_is_caught_live(tmp_path: Path) -> None:
    """turncoat answers another body after its first 300 answers: the check
    after each level sees it."""
    env = lab_env(tmp_path, SERVER="turncoat", CLIENT="siege", CONCURRENCY="1 2",
                  DURATION="1s", WARMUP="0", PORT=str(free_port()))
    out = bench(env, timeout=300)
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    # the level's line names every reason it is not ranked: on a busy host siege
    # may also stop early, a reason that comes first
    assert re.search(r"NOT RANKED: (.*; )?answer changed: after the level, GET /api must "
                     r"return exactly", out.stderr), show(out)
    data = json.loads((run / "results.json").read_text())
    flagged = [r for r in data["rows"]["turncoat"] if "answer-changed" in r["flags"].split()]
    assert flagged and all("Hello World?" in r["unranked"] for r in flagged)
    kinds = {f["kind"]: f for f in data["findings"]}
    assert "its answer changed during the load" in kinds["answer-changed"]["text"]
    assert "its answer changed during the load" in (run / "summary.md").read_text()
    assert_legend(run, "answer-changed")


def stopped_mid_level(tmp_path: Path, duration: str, which: str, stop_s: float
                      ) -> tuple[Path, str, str]:
    """A one-level run of sturdy under wrk, with `which` ("wrk", or "lab": the
    lab's step, wrk's parent) stopped by SIGSTOP from outside for `stop_s`,
    half a second into the level."""
    port = free_port()
    env = lab_env(tmp_path, SERVER="sturdy", CLIENT="wrk", CONCURRENCY="2",
                  DURATION=duration, WARMUP="0", PORT=str(port))
    proc = subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env={**GRACE, **env},
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    target = None
    try:
        until(lambda: find_client(b"wrk", port) or proc.poll() is not None, 180,
              "wrk started")
        wrk_pid = find_client(b"wrk", port)
        assert wrk_pid, proc.communicate()
        target = wrk_pid if which == "wrk" else parent_of(wrk_pid)
        time.sleep(0.5)
        os.kill(target, signal.SIGSTOP)
        time.sleep(stop_s)
        os.kill(target, signal.SIGCONT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if target:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    [run] = run_folders(tmp_path)
    return run, stdout, stderr


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


@pytest.mark.fault
def test_a_client_stopped_mid_level_is_caught_live(tmp_path: Path) -> None:
    """wrk stopped (SIGSTOP) from outside for 2.5 s of a 4 s level: it runs its
    length by its own clock, so only the lab's watch of it can tell (issue 44,
    §7). The level is flagged client-stalled and not ranked."""
    run, stdout, stderr = stopped_mid_level(tmp_path, "4s", "wrk", 2.5)
    assert leftovers(run) == []
    assert re.search(r"NOT RANKED: client stalled: wrk was stopped for 2\.\d s of the 4 s level",
                     stderr), f"{stdout}\n{stderr}"
    data = json.loads((run / "results.json").read_text())
    [row] = data["rows"]["sturdy"]
    assert "client-stalled" in row["flags"].split() and row["elapsed_s"] > 3.5
    kinds = {f["kind"]: f for f in data["findings"]}
    assert "wrk stalled at 1 of 1 levels" in kinds["client-stalled"]["text"]
    assert_legend(run, "client-stalled")


@pytest.mark.fault
def test_the_lab_stopped_mid_level_is_a_sampler_gap_live(tmp_path: Path) -> None:
    """The lab's own step stopped (SIGSTOP) for 5 s of a 2 s level: wrk ends on
    its own meanwhile, the level's wall time runs on, and its CPU shares fall
    (issue 44, §7: 5% and 7% instead of 25% and 40%). The gap in the lab's
    sampling flags it sampler-gap, and the client is not blamed."""
    run, stdout, stderr = stopped_mid_level(tmp_path, "2s", "lab", 5.0)
    assert leftovers(run) == []
    data = json.loads((run / "results.json").read_text())
    [row] = data["rows"]["sturdy"]
    flags = row["flags"].split()
    assert "sampler-gap" in flags and "client-stalled" not in flags, f"{stdout}\n{stderr}"
    kinds = {f["kind"]: f for f in data["findings"]}
    assert "lab's own sampling" in kinds["sampler-gap"]["text"]
    assert_legend(run, "sampler-gap")


def find_client(name: bytes, port: int) -> int | None:
    """The pid of a client `name` loading this port (its URL in its argv)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and Path(argv[0].decode()).name.encode() == name and \
                any(f":{port}".encode() in a for a in argv):
            return int(pid)
    return None


def assert_legend(run: Path, flag: str) -> None:
    """The report marks the flag and its legend says what it means (the saved
    fixture runs have neither flag: tests/test_html.py's NO_REAL_DATA)."""
    page = (run / "report.html").read_text()
    legend = page[page.index('<dl class="legend">'):page.index("</dl>")]
    assert f'data-flag="{flag}"' in legend and escape(reportpage.MEANINGS[flag]) in legend


def test_findings_own_their_text() -> None:
    f = findings.ClientStopped("aws", 1, 3, ("c=8: client stopped early: x",), tool="siege")
    assert f.to_json()["kind"] == "client-stopped" and "c=8" in f.text()
    a = findings.AnswerChanged("t", 1, 2, ("c=2: answer changed: y",))
    assert a.to_json()["kind"] == "answer-changed" and "not ranked" in a.text()
    assert analysis.findings is findings
