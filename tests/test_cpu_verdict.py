"""Server CPU per request judged where req/s cannot rank a pair (client-bound,
host-busy, equivalent or undecided): constructed rows through the real
levelrow.make_row, level_stats and the one gate, in a run's verdicts, the
summary, the report, `make compare` and the claims."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from lab.analyse import agree, analysis, claims, claimsfile, claimtext, diff, levelrow, metrics, verdicts
from lab.present import agreetable, claimsmd, compare, report, reportpage
from lab.record.level import Level
from lab.record.rows import Row
from lab.present.page import escaped
from lab.record import manifest, outputs

pytestmark = pytest.mark.unit

WHERE = levelrow.Where(server="a", rep=1, axis="concurrency", value=8, concurrency=8,
                       offered_rps=None, workers=8, backlog=512, duration_s=10,
                       server_cpus=1, client_cpus=1, lab_cpus=2)
LEVEL = Level(transactions=10000, successful=10000, failed=0, availability_pct=100.0,
              elapsed_s=10.0, rate_rps=1000.0, resp_ms=8.0, in_flight=8.0, longest_ms=20.0,
              data_mb=0.3)
MEASURED = levelrow.Measured(server_cpu_s=0.5, rss_end_kb=2048, rss_peak_kb=4096, threads_end=3,
                             threads_peak=4, client_cpu_s=5.0, wall_s=10.0, host_busy_s=6.0,
                             host_steal_s=0.0, sampler_cpu_s=0.05, time_wait=3)


def rows(server: str, rates: list[float], cpu_s: list[float], client_cpu_s: float = 5.0,
         busy_s: float | None = None, value: int = 8) -> list[Row]:
    """One row per repetition, made by levelrow.make_row from what a sweep measures:
    the flags (client-bound, host-busy) and CPU µs per request are its own."""
    out = []
    for i, (rate, cpu) in enumerate(zip(rates, cpu_s)):
        level = dataclasses.replace(LEVEL, rate_rps=rate, transactions=int(rate * 10),
                                    successful=int(rate * 10))
        m = dataclasses.replace(MEASURED, server_cpu_s=cpu, client_cpu_s=client_cpu_s,
                                host_busy_s=busy_s if busy_s is not None
                                else cpu + client_cpu_s)
        out.append(dataclasses.replace(
            levelrow.make_row(dataclasses.replace(WHERE, server=server, value=value), level, m),
            rep=i + 1))
    return out


def level(rs: list[Row]) -> metrics.LevelStats:
    [s] = metrics.level_stats(rs)
    return s


BOUND = 9.5                   # client CPU seconds of 10: 95%, client-bound


def test_client_bound_pair_is_ranked_by_cpu_per_request() -> None:
    """The issue's case: aws vs ada-mini with Siege the limit on both sides;
    ada-mini spends 40 µs a request, aws 65: ada-mini needs 38% less."""
    aws = level(rows("aws", [6000, 6100, 6050, 6050, 6075], [3.9, 3.965, 3.9325, 3.9325, 3.94875], client_cpu_s=BOUND))
    mini = level(rows("ada-mini", [6020, 6080, 6040, 6050, 6060], [2.408, 2.432, 2.416, 2.42, 2.424],
                      client_cpu_s=BOUND))
    assert aws.client_bound and mini.client_bound
    assert [round(v) for v in aws.cpu_us_per_req.values] == [65] * 5
    v = verdicts.verdict(aws, mini)
    assert v.kind == "not-comparable" and "client-bound" in v.text
    assert v.cpu is not None and v.cpu.kind == "better" and v.cpu.winner == "ada-mini"
    assert v.cpu_text.startswith("ada-mini needs 38% less server CPU per request than aws "
                                 "(40.0 vs 65.0 µs; α=1%, δ=5%, 5+5 starts)"), v.cpu_text
    assert v.said() == f"{v.text}; {v.cpu_text}"


def test_a_pair_req_s_ranks_on_a_quiet_host_gets_no_cpu_verdict() -> None:
    fast = level(rows("fast", [2000, 2010, 2020, 2005, 2015], [0.8, 0.8, 0.8, 0.8, 0.8]))
    slow = level(rows("slow", [1000, 1010, 1020, 1005, 1015], [0.8, 0.8, 0.8, 0.8, 0.8]))
    assert "host-busy" not in fast.flags
    v = verdicts.verdict(fast, slow)
    assert v.kind == "faster" and v.cpu is None and v.cpu_text == "" and v.said() == v.text


def test_a_ranked_pair_on_a_busy_host_gets_a_cpu_verdict_too() -> None:
    fast = level(rows("fast", [2000, 2010, 2020, 2005, 2015], [0.8, 0.8, 0.8, 0.8, 0.8], busy_s=9.0))
    slow = level(rows("slow", [1000, 1010, 1020, 1005, 1015], [0.8, 0.81, 0.8, 0.805, 0.805]))
    assert "host-busy" in fast.flags
    v = verdicts.verdict(fast, slow)
    assert v.kind == "faster" and v.cpu is not None
    assert v.cpu_text.startswith("fast needs 50% less server CPU per request than slow")
    assert "(host-busy: it counts the server's own CPU time only)" in v.cpu_text


def test_no_clear_difference_in_either_figure_says_so_for_both() -> None:
    a = level(rows("a", [1000, 1100, 1050, 1050, 1075], [1.0, 1.1, 1.05, 1.05, 1.075]))
    b = level(rows("b", [1050, 1150, 1000, 1100, 1075], [1.05, 1.0, 1.1, 1.025, 1.05]))
    v = verdicts.verdict(a, b)
    assert v.kind == "undecided" and v.cpu is not None
    assert v.cpu.kind == "undecided"
    assert v.cpu_text.startswith("server CPU per request: undecided (a better by [")


def test_a_repetition_that_completed_nothing_has_no_cpu_figure() -> None:
    """CPU per request of a repetition without a request is 0 in the row, not a
    figure: left out, two repetitions are too few for the gate."""
    a = level(rows("a", [1000, 1000, 0.0], [1.0, 1.0, 0.0], client_cpu_s=BOUND))
    b = level(rows("b", [1000, 1000, 1000, 1000, 1000], [2.0, 2.0, 2.0, 2, 2], client_cpu_s=BOUND))
    assert verdicts.cpu_values(a) == (100.0, 100.0)
    v = verdicts.verdict(a, b)
    assert v.cpu is not None and v.cpu.kind == "undecided"
    assert v.cpu_text.startswith("server CPU per request: undecided (too few starts: 2 against 5")


def test_compare_shows_cpu_per_request_where_req_s_cannot_rank() -> None:
    a = level(rows("aws", [6000, 6100, 6050, 6050, 6075], [3.9, 3.965, 3.9325, 3.9325, 3.94875], client_cpu_s=BOUND))
    b = level(rows("aws", [6020, 6080, 6040, 6050, 6060], [2.408, 2.432, 2.416, 2.42, 2.424], client_cpu_s=BOUND))
    c = diff.compare_level(a, b)
    assert c.kind == "not-comparable"
    assert c.cpu_text.startswith("B needs 38% less server CPU per request than A")
    assert c.cpu_text in "\n".join(compare.table([c], "c"))
    quiet = diff.compare_level(level(rows("x", [2000, 2010, 2020, 2005, 2015], [0.8] * 5)),
                                  level(rows("x", [1000, 1010, 1020, 1005, 1015], [0.8] * 5)))
    assert quiet.kind == "slower" and quiet.cpu_text == ""


def claim(metric: str = "peak_rps", kind: str = "ratio",
          servers: tuple[str, ...] = ("a", "b")) -> claimsfile.Claim:
    return claimsfile.Claim(
        id="c1", study="s", text="a vs b", kind=kind, metric=metric, servers=servers,
        published=None if kind == "ordering" else 1.07,
        accept=None if kind == "ordering" else (0.9, 1.2), tolerance="±15%", at=None,
        requires=servers, figures="", source="Someone, a blog", date="2017", unavailable={})


def test_a_claim_req_s_leaves_inconclusive_shows_cpu_per_request_beside() -> None:
    stats = {"a": [level(rows("a", [6000, 6100, 6050, 6050, 6075], [3.9, 3.965, 3.9325, 3.9325, 3.94875],
                              client_cpu_s=BOUND))],
             "b": [level(rows("b", [6020, 6080, 6040, 6050, 6060], [2.408, 2.432, 2.416, 2.42, 2.424],
                              client_cpu_s=BOUND))]}
    r = claims.evaluate(claim(), stats, {"a", "b"})
    assert r.verdict == claims.INCONCLUSIVE and "client-bound" in r.reason
    assert r.beside == "at 8: b needs 38% less server CPU per request than a (40.0 vs 65.0 µs; " \
                       "α=1%, δ=5%, 5+5 starts)"
    assert r.beside in claimtext.measured_text(r) and r.beside in claimsmd.table([r])
    decided = {"a": [level(rows("a", [2100, 2110, 2120, 2105, 2115], [0.8] * 5))],
               "b": [level(rows("b", [2000, 2010, 2020, 2005, 2015], [0.8] * 5))]}
    assert claims.evaluate(claim(), decided, {"a", "b"}).beside == ""


def test_a_landed_run_says_it_in_summary_report_and_results_json(tmp_path: Path) -> None:
    """A run written by the landed lab (tests/fixtures/runs), every level
    host-busy: each verdict carries the CPU verdict, in the summary, the
    report and results.json."""
    src = ROOT / "tests" / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"
    run = tmp_path / src.name
    shutil.copytree(src, run)
    _, a = analysis.of(run)
    assert a.verdicts
    for v in a.verdicts:
        sa, sb = (next(s for s in a.stats[n] if s.value == v.value) for n in (v.a, v.b))
        assert verdicts.needs_cpu_verdict(v.kind, sa, sb)      # host-busy
        assert v.cpu is not None and v.cpu_text
    summary = report.write(run)
    page = reportpage.render(run)
    results = (run / outputs.RESULTS_JSON).read_text()
    for v in a.verdicts:
        assert v.said() in summary
        assert escaped(v.said()) in page
        assert json.dumps(v.cpu_text)[1:-1] in results


def test_agree_counts_identical_verdicts_of_two_runs(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of the same pair: the req/s verdict the same in both (client-bound),
    the CPU verdict reversed in the second: 1 of 1 and 0 of 1."""
    def run(mini_cpu: float) -> dict[str, list[metrics.LevelStats]]:
        return {"aws": [level(rows("aws", [6000, 6100, 6050, 6050, 6075], [3.9, 3.965, 3.9325, 3.9325, 3.94875],
                                   client_cpu_s=BOUND))],
                "mini": [level(rows("mini", [6020, 6080, 6040, 6050, 6060],
                                    [mini_cpu, mini_cpu * 1.01, mini_cpu * 1.005, mini_cpu * 1.003, mini_cpu * 1.007],
                                    client_cpu_s=BOUND))]}
    same = agree.pairs(run(2.4), run(2.45), ["aws", "mini"])
    assert [(p.rate[0].same(p.rate[1]), p.cpu[0].same(p.cpu[1])) for p in same] == [(True, True)]
    assert agree.identical(same) == (1, 1)
    flipped = agree.pairs(run(2.4), run(6.0), ["aws", "mini"])
    [p] = flipped
    assert p.rate[0].kind == p.rate[1].kind == "not-comparable"
    assert (p.cpu[0].winner, p.cpu[1].winner) == ("mini", "aws")
    text = "\n".join(agreetable.report(flipped, ("one", "two")))
    assert "Identical verdicts, req/s: 1 of 1; server CPU per request: 0 of 1." in text
    src = ROOT / "tests" / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"
    assert agreetable.main([str(src), str(src)]) == 0
    assert "Identical verdicts, req/s: 2 of 2" in capsys.readouterr().out
    assert agreetable.main([str(src), str(tmp_path / "nope")]) == 2
    assert "no such run folder" in capsys.readouterr().err
    from lab import cli
    assert cli.main(["agree", str(src), str(src)]) == 0      # the front door: python3 -m lab agree
    assert "Identical verdicts, req/s: 2 of 2" in capsys.readouterr().out



def cost_run(folder: Path, facts: dict[str, dict[str, str]]) -> None:
    """A `make cost` run folder as lab.studies.cost writes it (manifest kind cost, cost.json)."""
    src = ROOT / "tests" / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"
    folder.mkdir()
    shutil.copy(src / manifest.MANIFEST, folder / manifest.MANIFEST)
    (folder / "cost.json").write_text(json.dumps({
        "tool": "cachegrind", "wrapper": "valgrind", "levels": [1, 4], "requests": [100, 200],
        "repeat": 3,
        "servers": {name: {"applicable": True, "valgrind": "valgrind-3.19.0",
                           "reps": [{"rep": r, "level": lv, "per_request": base * lv + r}
                                    for r in (1, 2, 3) for lv in (1, 4)]}
                    for name, base in (("sturdy", 1000.0), ("paced", 2000.0))}}))

    def change(m: manifest.Manifest) -> None:
        m.extra["kind"] = "cost"
        m.run_id = folder.name
        for name, f in facts.items():
            m.servers[name].facts = f
    manifest.update(folder, change)


def test_instructions_per_request_of_a_cost_run_of_the_same_builds_sit_beside(
        tmp_path: Path) -> None:
    src = ROOT / "tests" / "fixtures" / "runs" / "20261124-071349-sturdy+paced-landed"
    run = tmp_path / src.name
    shutil.copytree(src, run)
    build = {"sturdy": {"version": "1", "built_at": "t1"}, "paced": {"version": "2"}}

    def same(m: manifest.Manifest) -> None:
        for name, f in build.items():
            m.servers[name].facts = f
    manifest.update(run, same)
    _, a = analysis.of(run)
    assert all(v.cpu_text and not v.cost_text for v in a.verdicts)    # no cost run yet
    cost_run(tmp_path / "20261125-000000-cost-other", {**build, "paced": {"version": "3"}})
    _, a = analysis.of(run)
    assert all(not v.cost_text for v in a.verdicts)                   # paced: another build
    cost_run(tmp_path / "20261125-000001-cost", build)
    _, a = analysis.of(run)
    for v in a.verdicts:
        level = 1 if v.value == 1 else 4
        assert v.cost_text == (
            f"make cost (20261125-000001-cost, same builds): {v.a} "
            f"{(1000 if v.a == 'sturdy' else 2000) * level + 2:,.0f}, {v.b} "
            f"{(1000 if v.b == 'sturdy' else 2000) * level + 2:,.0f} instructions per request "
            f"(user space, c={level})")
        assert f"{v.cpu_text} [{v.cost_text}]" in v.said()
        assert v.said() in report.write(run)


def test_the_kernel_share_is_recorded_and_shown_beside_the_cpu_verdict() -> None:
    def with_sys(rs: list[Row], sys_us: float) -> list[Row]:
        return [dataclasses.replace(r, server_sys_us_per_req=sys_us) for r in rs]
    row = levelrow.make_row(WHERE, LEVEL, dataclasses.replace(MEASURED, server_sys_s=0.2))
    assert row.server_sys_us_per_req == 20.0 and row.server_cpu_us_per_req == 50.0
    assert levelrow.make_row(WHERE, LEVEL, MEASURED).server_sys_us_per_req is None
    aws = level(with_sys(rows("aws", [6000, 6100, 6050, 6025, 6075],
                              [3.9, 3.965, 3.9325, 3.9, 3.95], client_cpu_s=BOUND), 30.0))
    mini = level(with_sys(rows("mini", [6020, 6080, 6040, 6030, 6060],
                               [2.408, 2.432, 2.416, 2.41, 2.42], client_cpu_s=BOUND), 25.0))
    assert mini.cpu_sys_us_per_req is not None and mini.cpu_sys_us_per_req.median == 25.0
    v = verdicts.verdict(aws, mini)
    assert "(40.0 vs 65.0 µs, of which kernel 25.0 vs 30.0; α=1%, δ=5%, 5+5 starts)" in v.cpu_text


def test_the_sampler_splits_user_and_kernel_time() -> None:
    """A real process spending its time in syscalls: the sampler's kernel part."""
    import subprocess
    import sys
    from lab.host import procfs
    code = ("import os, sys, time\nsys.stdin.readline()\nfd = os.open('/dev/null', os.O_WRONLY)\n"
            "t = time.thread_time()\nwhile time.thread_time() - t < 0.5:\n"
            "    os.write(fd, b'x')\nprint('done', flush=True)\nsys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        with procfs.Sampler(proc.pid, interval=0.05) as s:
            proc.stdin.write("go\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "done"
        assert s.sys_s is not None and 0 < s.sys_s <= s.cpu_s
        assert s.cpu_s >= 0.45
    finally:
        proc.kill()
        proc.wait()
