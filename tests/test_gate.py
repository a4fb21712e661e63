"""`make compare` as a regression gate (issue 20): exit 0 when B is no worse,
1 when a check finds B worse beyond the noise (by CPU per request where
the host or the client set req/s), 3 when
nothing could be compared cleanly (with the reason), 2 on bad input; GATE
and MIN_EFFECT; the A/A floor of `make noise` used and named. On
constructed runs (no load)."""
from __future__ import annotations

import html
import json
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT, lab_env
from lab.present import compare
from lab.analyse.gate import GateSettings
from lab.analyse import floors
from lab.setup.exits import Exit
from lab.record.rows import Row
from test_compare import make_run, manifest, paced_rows, row, typed

import subprocess
import sys

pytestmark = pytest.mark.unit

CLEAN = GateSettings()


def run_pair(tmp: Path, a: dict[int, list[int]], b: dict[int, list[int]],
             flags_b: str = "", mb: dict[str, object] | None = None) -> tuple[Path, Path]:
    ra = make_run(tmp, "ra", manifest(), paced_rows(a))
    rows = [replace(r, flags=flags_b, client_bound="client-bound" in flags_b)
            for r in paced_rows(b)]
    rb = make_run(tmp, "rb", mb or manifest(), rows)
    return ra, rb


def gate_of(out_root: Path) -> dict[str, object]:
    [folder] = [p for p in out_root.iterdir() if p.name.startswith("compare-")]
    gate = json.loads((folder / "compare.json").read_text())["gate"]
    assert isinstance(gate, dict)
    return gate


def test_an_a_a_pair_is_never_a_regression(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5], 4: [400, 404, 398, 402, 401]},
                    {1: [101, 100, 102, 100.5, 101], 4: [399, 402, 405, 400.5, 403.5]})
    out = tmp_path / "out"
    assert compare.main(a, b, False, out, CLEAN) == Exit.OK
    gate = gate_of(out)
    assert gate["outcome"] == "pass" and gate["code"] == 0
    err = capsys.readouterr().err
    assert "gate: pass (exit 0)" in err


def test_a_30_percent_drop_on_clean_levels_is_a_regression(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5], 4: [400, 404, 398, 402, 401]},
                    {1: [70, 71, 70, 70.5, 70.5], 4: [280, 282, 281, 281, 281.5]})
    out = tmp_path / "out"
    assert compare.main(a, b, False, out, CLEAN) == Exit.FAILED
    gate = gate_of(out)
    assert gate["outcome"] == "regression"
    checks = gate["checks"]
    assert isinstance(checks, list)
    worse = [c for c in checks if c["outcome"] == "regression"]
    # one check across both levels (each start's mean over them) decides at
    # ALPHA/2 on 5 against 5; each level alone, at ALPHA/2 over 2, cannot
    [across] = worse
    assert (across["levels"], across["metric"]) == ([1, 4], "rate")
    assert across["worse_pct"] == pytest.approx(30, abs=1)
    assert "across 1, 4: regression" in across["text"]
    assert {c["outcome"] for c in checks if not c["levels"] and c["metric"] == "rate"} == \
        {"not-judged"}
    assert "regression" in capsys.readouterr().err
    [md] = out.glob("compare-*/compare.md")
    assert "## Gate: regression (exit 1)" in md.read_text()


def test_a_drop_smaller_than_min_effect_passes_and_a_larger_one_fails(tmp_path: Path) -> None:
    # 4% slower, 10 tight starts a side: B shown no worse than 5% (pass), and
    # worse than 1% (a regression at MIN_EFFECT=1%)
    a, b = run_pair(tmp_path, {1: [100 + 0.1 * i for i in range(10)]},
                    {1: [96 + 0.1 * i for i in range(10)]})
    assert compare.main(a, b, False, tmp_path / "o5", CLEAN) == Exit.OK
    one = GateSettings(min_effect_pct=1.0)
    assert compare.main(a, b, False, tmp_path / "o1", one) == Exit.FAILED
    # on 5 looser starts the same drop is neither shown nor excluded: undecided, exit 3
    c, d = run_pair(tmp_path / "few", {1: [100, 101, 102, 100.5, 101.5]},
                    {1: [96, 97, 97, 96.5, 97]})
    assert compare.main(c, d, False, tmp_path / "o3", CLEAN) == Exit.NOT_COMPARABLE


def test_a_client_bound_b_is_judged_by_cpu_per_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # B's req/s is a lower bound of B: below A it says nothing; its server CPU
    # per request (the server's own time) doubled (500000 / rate µs in row())
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5]},
                    {1: [50, 51, 52, 50.5, 51.5]}, flags_b="client-bound")
    out = tmp_path / "out"
    assert compare.main(a, b, False, out, CLEAN) == Exit.FAILED
    checks = [c for c in gate_of(out)["checks"]   # type: ignore[attr-defined]
              if c["metric"] == "rate"]
    assert checks and all(c["outcome"] == "regression" for c in checks)
    assert all("client-bound" in c["text"] and "server CPU per request judged instead"
               in c["text"] for c in checks)
    # the same CPU per request on both sides: nothing worse is shown
    same = run_pair(tmp_path / "s", {1: [100, 101, 102, 100.5, 101.5]},
                    {1: [100, 101, 102, 100.5, 101.5]}, flags_b="client-bound")
    assert compare.main(*same, False, tmp_path / "o2", CLEAN) == Exit.OK


def test_a_host_busy_side_is_judged_by_cpu_per_request_and_says_so(tmp_path: Path) -> None:
    # req/s of a busy host measures the host; server CPU per request counts the
    # server's own time: B needs twice the CPU a request (500000 / rate µs)
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5]},
                    {1: [50, 51, 52, 50.5, 51.5]}, flags_b="host-busy")
    assert compare.main(a, b, False, tmp_path / "out", CLEAN) == Exit.FAILED
    checks = [c for c in gate_of(tmp_path / "out")["checks"]   # type: ignore[attr-defined]
              if c["metric"] == "rate"]
    assert checks and all(c["outcome"] == "regression" for c in checks)
    assert all("server CPU per request judged instead" in c["text"] for c in checks)
    assert all("host-busy" in c["text"] for c in checks)


def test_a_ten_times_slower_build_against_a_client_bound_baseline_is_a_regression(
        tmp_path: Path) -> None:
    # a client-bound A is a lower bound of A: a B far below it is worse, also
    # where B ran on a busy host (then by CPU per request): never exit 3
    fast = {4: [15263, 15100, 15400, 15200, 15300]}
    slow = {4: [1436, 1420, 1450, 1440, 1430]}
    ra = make_run(tmp_path, "ra", manifest(),
                  [replace(r, flags="client-bound", client_bound=True)
                   for r in paced_rows(fast)])
    rb = make_run(tmp_path, "rb", manifest(), paced_rows(slow))
    assert compare.main(ra, rb, False, tmp_path / "o1", CLEAN) == Exit.FAILED
    [check] = [c for c in gate_of(tmp_path / "o1")["checks"]   # type: ignore[attr-defined]
               if c["metric"] == "rate" and not c["levels"]]
    assert check["outcome"] == "regression" and check["judgement"] == "better-at-least"
    assert "lower bound" in check["text"]
    rc = make_run(tmp_path, "rc", manifest(),
                  [replace(r, flags="host-busy") for r in paced_rows(slow)])
    assert compare.main(ra, rc, False, tmp_path / "o2", CLEAN) == Exit.FAILED
    [check] = [c for c in gate_of(tmp_path / "o2")["checks"]   # type: ignore[attr-defined]
               if c["metric"] == "rate" and not c["levels"]]
    assert check["outcome"] == "regression" and "CPU per request" in check["text"]


def test_a_slowdown_cpu_per_request_cannot_see_is_never_a_pass(tmp_path: Path) -> None:
    # a sleep per request: 10x fewer req/s at the same server CPU per request,
    # both runs under hypervisor steal (every level flagged): CPU per request
    # alone would pass B; B's req/s raised by all the CPU time the hypervisor
    # took (15% of the lab's: at most 30% of the server's one CPU of two) is
    # still far below A's, so the check is not judged, and says why
    def rows(rates: dict[int, list[float]], steal: float) -> list[Row]:
        return [replace(r, flags="steal", steal_pct=steal, server_cpu_us_per_req=50.0)
                for r in paced_rows(rates)]     # type: ignore[arg-type]
    fast = {1: [1000, 1010, 990, 1005, 995], 4: [4000, 4040, 3960, 4020, 3980]}
    slow = {1: [100, 101, 99, 100.5, 99.5], 4: [400, 404, 396, 402, 398]}
    ra = make_run(tmp_path, "ra", manifest(), rows(fast, 15.0))
    rb = make_run(tmp_path, "rb", manifest(), rows(slow, 15.0))
    assert compare.main(ra, rb, False, tmp_path / "o1", CLEAN) == Exit.NOT_COMPARABLE
    checks = gate_of(tmp_path / "o1")["checks"]
    assert isinstance(checks, list)
    [across] = [c for c in checks if c["levels"] and c["metric"] == "rate"]
    assert across["outcome"] == "not-judged"
    assert "cannot see" in across["text"] and "upper bound of B's" in across["text"]
    assert not [c for c in checks if c["outcome"] == "pass"]
    # the same figures on both sides under the same steal: CPU per request passes
    rc = make_run(tmp_path, "rc", manifest(), rows(fast, 15.0))
    assert compare.main(ra, rc, False, tmp_path / "o2", CLEAN) == Exit.OK
    # a 20% drop that 15% steal could explain leaves CPU per request's pass
    near = {1: [800, 808, 792, 804, 796], 4: [3200, 3232, 3168, 3216, 3184]}
    rd = make_run(tmp_path, "rd", manifest(), rows(near, 15.0))
    assert compare.main(ra, rd, False, tmp_path / "o3", CLEAN) == Exit.OK


def test_too_few_repetitions_is_nothing_compared(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101]}, {1: [50, 51]})
    assert compare.main(a, b, False, tmp_path / "out", CLEAN) == Exit.NOT_COMPARABLE
    assert "too few starts: 2 against 2" in capsys.readouterr().err


def test_gate_on_cpu_per_request(tmp_path: Path) -> None:
    def rows(us: list[float]) -> list[Row]:
        return [replace(row("paced", i + 1, 1, 100), server_cpu_us_per_req=u)
                for i, u in enumerate(us)]
    a = make_run(tmp_path, "ra", manifest(), rows([100, 101, 102, 100.5, 101.5]))
    b = make_run(tmp_path, "rb", manifest(), rows([140, 141, 139, 140.5, 140]))
    assert compare.main(a, b, False, tmp_path / "o1", CLEAN) == Exit.OK    # rate: the same
    cpu = GateSettings(metrics=("cpu",))
    assert compare.main(a, b, False, tmp_path / "o2", cpu) == Exit.FAILED


def test_p99_is_gated_at_a_fixed_offered_rate_only(tmp_path: Path) -> None:
    def rows(p99: list[float], rate: bool) -> list[Row]:
        out = [row("paced", i + 1, 1000, 1000, p99=p) for i, p in enumerate(p99)]
        return [replace(r, offered_rps=1000.0, axis="rate") if rate else r for r in out]
    m = manifest(**{"params.axis": "rate"})
    a = make_run(tmp_path, "ra", m, rows([10, 11, 12, 10.5, 11.5], True))
    b = make_run(tmp_path, "rb", m, rows([20, 21, 22, 20.5, 21.5], True))
    assert compare.main(a, b, False, tmp_path / "o1", CLEAN) == Exit.FAILED
    c = make_run(tmp_path, "rc", manifest(), rows([10, 11, 12, 10.5, 11.5], False))
    d = make_run(tmp_path, "rd", manifest(), rows([20, 21, 22, 20.5, 21.5], False))
    p99 = GateSettings(metrics=("p99",))
    assert compare.main(c, d, False, tmp_path / "o2", p99) == Exit.NOT_COMPARABLE


def floor(server: str, pct: float, **conditions: object) -> floors.Floor:
    return floors.Floor(server=server, made="2026-11-25T05:00:00+0000", run="/r/aa-run",
                        conditions={**floors.conditions_of(typed(manifest())), **conditions},
                        floors_pct={"rate": pct, "cpu": pct}, levels=[1], duration_s=1,
                        repeat=3)


def test_a_difference_under_the_a_a_floor_is_not_a_regression_and_the_floor_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5]},
                    {1: [92, 93, 93, 92.5, 93]})   # 8% slower
    cache = tmp_path / "cache"
    assert compare.main(a, b, False, tmp_path / "o1",
                        GateSettings(cache=cache)) == Exit.FAILED
    assert "no A/A floor for paced" in capsys.readouterr().err
    floors.add(cache, floor("paced", 12.0))
    assert compare.main(a, b, False, tmp_path / "o2",
                        GateSettings(cache=cache)) == Exit.OK
    err = capsys.readouterr().err
    assert "noise floor for paced: A/A floor of paced from `make noise`" in err
    assert "rate 12.0%" in err
    # a floor taken under other conditions is not used, and the message says why
    floors.add(cache, floor("paced", 30.0, **{"client tool": "wrk"}))
    assert [f.floors_pct["rate"] for f in floors.read_all(cache, "paced")] == [12.0, 30.0]
    elsewhere = tmp_path / "cache2"
    floors.add(elsewhere, floor("paced", 30.0, **{"client tool": "wrk"}))
    assert compare.main(a, b, False, tmp_path / "o3",
                        GateSettings(cache=elsewhere)) == Exit.FAILED
    assert "taken under other conditions" in capsys.readouterr().err


def test_the_same_run_twice_is_refused_and_a_copy_is_warned_of(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path, "ra", manifest(), paced_rows({1: [100, 101, 102, 100.5, 101.5]}))
    out = tmp_path / "out"
    assert compare.main(a, a, False, out, CLEAN) == Exit.BAD_INPUT
    assert "same run folder" in capsys.readouterr().err
    assert not out.exists()
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in a.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    assert compare.main(a, copy, False, out, CLEAN) == Exit.OK
    assert "hold the same measurements" in capsys.readouterr().err


def test_nothing_in_common_is_exit_3_without_a_folder(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    a = make_run(tmp_path, "ra", manifest(), paced_rows({1: [1, 2, 3, 1.5, 2.5]}))
    b = make_run(tmp_path, "rb", manifest(), paced_rows({1: [1, 2, 3, 1.5, 2.5]}, server="other"))
    out = tmp_path / "out"
    assert compare.main(a, b, False, out, CLEAN) == Exit.NOT_COMPARABLE
    assert "nothing to compare" in capsys.readouterr().err
    assert not out.exists() or not [p for p in out.iterdir() if p.is_dir()]


@pytest.mark.fault
@pytest.mark.parametrize("name,value,fragment", [
    ("GATE", "speed", "expected one or more of rate p99 cpu rss instructions"),
    ("GATE", "", "expected one or more"),
    ("MIN_EFFECT", "five", "expected a percentage"),
    ("MIN_EFFECT", "120%", "expected a percentage"),
])
def test_bad_gate_settings_are_exit_2(tmp_path: Path, name: str, value: str,
                                      fragment: str) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5]}, {1: [70, 71, 70, 70.5, 70.5]})
    env = lab_env(tmp_path, **{name: value})
    done = subprocess.run([sys.executable, "-m", "lab", "compare", str(a), str(b)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and fragment in done.stderr, done.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.fault
def test_min_effect_reads_percent_or_plain_number(tmp_path: Path) -> None:
    a, b = run_pair(tmp_path, {1: [100, 101, 102, 100.5, 101.5]}, {1: [96, 97, 97, 96.5, 97]})
    env = lab_env(tmp_path, MIN_EFFECT="1%", GATE="rate")
    done = subprocess.run([sys.executable, "-m", "lab", "compare", str(a), str(b)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "MIN_EFFECT=1%" in done.stdout


def cost_run(root: Path, name: str, per_request: list[float], server: str = "paced",
             native: dict[str, float] | None = None, also: tuple[str, ...] = ()) -> Path:
    """A make cost run: a manifest and cost.json, no results.csv; `native`:
    each repetition's plain start (user_us_per_req, sys_us_per_req); `also`:
    more servers counted the same."""
    run = root / name
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({**manifest(), "run_id": name}))
    reps = [{"rep": i + 1, "level": 1, "per_request": x, "native": native or {}}
            for i, x in enumerate(per_request)]
    (run / "cost.json").write_text(json.dumps({
        "tool": "cachegrind", "wrapper": "none", "levels": [1], "requests": [2000, 6000],
        "repeat": len(per_request),
        "servers": {n: {"applicable": True, "reps": reps} for n in (server, *also)}}))
    return run


def test_gate_on_instructions_per_request_of_cost_runs(tmp_path: Path) -> None:
    a = cost_run(tmp_path, "ca", [10000, 10010, 10020, 10005, 10015])
    same = cost_run(tmp_path, "cb", [10005, 10000, 10015, 10002.5, 10007.5])
    more = cost_run(tmp_path, "cc", [12000, 12010, 12020, 12005, 12015])
    gate = GateSettings(metrics=("instructions",))
    assert compare.main(a, same, False, tmp_path / "o1", gate) == Exit.OK
    assert compare.main(a, more, False, tmp_path / "o2", gate) == Exit.FAILED
    [check] = gate_of(tmp_path / "o2")["checks"]   # type: ignore[misc]
    assert (check["metric"], check["outcome"]) == ("instructions", "regression")
    assert check["worse_pct"] == pytest.approx(100 * (12010 / 10010 - 1))
    # the default gate (rate p99) finds nothing to compare in cost runs: exit 3
    assert compare.main(a, more, False, tmp_path / "o3", CLEAN) == Exit.NOT_COMPARABLE


def test_the_ceiling_reference_is_not_gated(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    m = manifest(**{"servers.nginx": {"version": "1.22", "role": "ceiling", "facts": {}}})
    a = make_run(tmp_path, "ra", m, paced_rows({1: [100, 101, 102, 100.5, 101.5]}) +
                 paced_rows({1: [1000, 1001, 1002, 1000.5, 1001.5]}, server="nginx"))
    b = make_run(tmp_path, "rb", m, paced_rows({1: [101, 100, 102, 100.5, 101]}) +
                 paced_rows({1: [700, 701, 702, 700.5, 701.5]}, server="nginx"))
    assert compare.main(a, b, False, tmp_path / "out", CLEAN) == Exit.OK
    checks = gate_of(tmp_path / "out")["checks"]
    assert isinstance(checks, list)
    assert {c["outcome"] for c in checks if c["server"] == "nginx"} == {"not-applicable"}
    assert "ceiling reference is not gated" in capsys.readouterr().out


def unclean_flags() -> tuple[set[str], set[str]]:
    """Every flag that makes a level unclean for the gate, from their one
    declaration (lab.analyse.policy's tuples and its UNCLEAN by design), split into those where server CPU per request
    is judged instead of req/s, and those never judged."""
    from lab.analyse import policy
    declared = {f for name in dir(policy) if name.endswith("_FLAGS") for f in getattr(policy, name)}
    every = declared | set(policy.UNCLEAN["gate"]) | set(policy.UNRANKED)
    judged_by_cpu = set(policy.UNCLEAN["sequential"])
    return judged_by_cpu, every - judged_by_cpu


def test_ci_md_names_every_unclean_flag_and_what_the_gate_does_with_it() -> None:
    """docs/ci.md's paragraph on a level measured cleanly names each flag
    (issue 44: it left out client-stopped), says that host-busy, steal and
    client-bound levels are judged by CPU per request and can fail the job
    (exit 1), and that the others are never judged."""
    text = (ROOT / "docs" / "ci.md").read_text()
    [para] = [p for p in text.split("\n\n") if p.startswith("A level is measured cleanly")]
    para = " ".join(para.split())
    by_cpu, never = unclean_flags()
    assert {f for f in by_cpu | never if f"`{f}`" not in para} == set(), para
    [cpu] = [s for s in para.split(". ") if "CPU per request" in s and "judge" in s]
    assert all(f"`{f}`" in cpu for f in by_cpu) and not any(f"`{f}`" in cpu for f in never), cpu
    [blocked] = [s for s in para.split(". ") if "never judged" in s]
    assert all(f"`{f}`" in blocked for f in never), blocked
    assert "exit 1" in para and "never fails the job" not in text
    two_runs = text[text.index("## Two runs"):]          # the paired gate's table is before
    exit1 = next(line for line in two_runs.splitlines() if line.startswith("| 1 |"))
    assert "CPU per request" in exit1, exit1


@pytest.mark.parametrize("flag", sorted(unclean_flags()[1]))
def test_a_level_never_judged_is_judged_neither_at_the_level_nor_across(
        tmp_path: Path, flag: str) -> None:
    """Every level flagged `flag` (failures, a client that stopped early, an
    answer that changed, ...) on both sides, B needing twice the CPU a
    request: no check judges it, and nothing is decided (exit 3). The check
    across the levels judged such levels by CPU per request (exit 1)."""
    def rows(rates: dict[int, list[float]]) -> list[Row]:
        return [replace(r, flags=flag) for r in paced_rows(rates)]  # type: ignore[arg-type]
    ra = make_run(tmp_path, "ra", manifest(), rows({1: [100, 101, 102, 100.5, 101.5],
                                                    4: [400, 404, 398, 402, 401]}))
    rb = make_run(tmp_path, "rb", manifest(), rows({1: [50, 51, 52, 50.5, 51.5],
                                                    4: [200, 202, 199, 201, 200.5]}))
    assert compare.main(ra, rb, False, tmp_path / "out", CLEAN) == Exit.NOT_COMPARABLE
    checks = gate_of(tmp_path / "out")["checks"]
    assert isinstance(checks, list)
    assert {c["outcome"] for c in checks} <= {"not-clean", "not-applicable"}, checks


INSTRUCTIONS = GateSettings(metrics=("instructions",))
SAME = [10000, 10010, 10020, 10005, 10015]


def test_a_base_and_its_change_counted_in_two_cost_runs_are_gated_against_each_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/ci.md's instruction gate: `make cost SERVER=myserver.base`, then
    `SERVER=myserver`: each run counted one server, under another name; the
    gate compares the two, as a paired run's gate does, and says so (issue 54)."""
    base = cost_run(tmp_path, "ca", SAME, server="myserver.base")
    same = cost_run(tmp_path, "cb", [10005, 10000, 10015, 10002.5, 10007.5], server="myserver")
    more = cost_run(tmp_path, "cc", [12000, 12010, 12020, 12005, 12015], server="myserver")
    assert compare.main(base, same, False, tmp_path / "o1", INSTRUCTIONS) == Exit.OK
    err = capsys.readouterr().err
    said = "A's myserver.base against B's myserver"
    assert said in err and "each cost run counted one server" in err
    assert err.splitlines()[-1].endswith(f"; {said})")   # the gate's last line names them
    gate = gate_of(tmp_path / "o1")
    [check] = gate["checks"]                              # type: ignore[misc]
    assert (check["server"], check["outcome"]) == ("myserver", "pass")
    assert check["text"].startswith(said)
    assert said in gate["matched"]                        # type: ignore[operator]
    [folder] = (tmp_path / "o1").glob("compare-*")
    assert said in (folder / "compare.md").read_text()
    assert said in html.unescape((folder / "compare.html").read_text())
    assert compare.main(base, more, False, tmp_path / "o2", INSTRUCTIONS) == Exit.FAILED
    [check] = gate_of(tmp_path / "o2")["checks"]          # type: ignore[misc]
    assert (check["server"], check["outcome"]) == ("myserver", "regression")


def test_cost_runs_of_other_servers_are_matched_only_one_against_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Names in common are matched by name; a run of two servers against a
    run of one of another name compares nothing (exit 3), and the error says
    how servers are matched; the default GATE never matches other names."""
    two = cost_run(tmp_path, "ca", SAME, server="myserver.base", also=("other",))
    one = cost_run(tmp_path, "cb", SAME, server="myserver")
    assert compare.main(two, one, False, tmp_path / "o1", INSTRUCTIONS) == Exit.NOT_COMPARABLE
    err = capsys.readouterr().err
    assert "nothing to compare" in err and "A counted myserver.base, other, B myserver" in err
    assert "where each counted one server, those two" in err
    base = cost_run(tmp_path, "cc", SAME, server="myserver.base")
    assert compare.main(base, one, False, tmp_path / "o2", CLEAN) == Exit.NOT_COMPARABLE
    assert "instructions per request are gated with GATE=instructions" in capsys.readouterr().err
    both = cost_run(tmp_path, "cd", SAME, server="myserver", also=("other",))
    assert compare.main(both, one, False, tmp_path / "o3", INSTRUCTIONS) == Exit.OK
    [check] = gate_of(tmp_path / "o3")["checks"]          # type: ignore[misc]
    assert check["server"] == "myserver" and not gate_of(tmp_path / "o3")["matched"]


def test_the_instruction_gate_says_what_the_count_leaves_out(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Instructions are user space only: each check says how much of A's and
    B's CPU the kernel took in the cost runs' plain starts (/proc), so an
    instruction change larger than the CPU's is read as it should be."""
    a = cost_run(tmp_path, "ca", SAME, native={"user_us_per_req": 4.0, "sys_us_per_req": 6.0})
    b = cost_run(tmp_path, "cb", [11200, 11210, 11220, 11205, 11215],
                 native={"user_us_per_req": 4.5, "sys_us_per_req": 6.0})
    assert compare.main(a, b, False, tmp_path / "out", INSTRUCTIONS) == Exit.FAILED
    [check] = gate_of(tmp_path / "out")["checks"]         # type: ignore[misc]
    text = check["text"]
    assert "user space only" in text and "TCP, syscalls" in text
    assert "it took 60% of A's CPU and 57% of B's in their plain starts" in text
    assert "A 4.0 + 6.0, B 4.5 + 6.0" in text
    assert "it took 60% of A's CPU" in capsys.readouterr().err     # the why: line


def test_a_regression_never_says_a_negative_worse() -> None:
    """"B worse by -88.1%" (issue 54): a regression is the rule's finding, and
    B's medians can sit above A's while the rule finds A better (a bimodal
    A: most of its starts just below B's median, the rest far above every
    B). The regression then says the rule's estimate, never a negative
    "worse", in its line, its text and the gate table's cell."""
    import re
    import statistics
    from lab.analyse import gate
    a = tuple([99 + i * 0.001 for i in range(24)] + [1000 + i for i in range(20)])
    b = tuple([100 + i * 0.001 for i in range(24)] + [10 + i * 0.01 for i in range(20)])
    medians = gate.worse_pct(statistics.median(a), statistics.median(b), True)
    assert medians is not None and medians < 0          # B's median above A's
    c = gate.check("s", 8, "rate", a, b, 5.0, "floor", 0.005)
    assert c.outcome == gate.REGRESSION, c.text
    assert c.worse_pct is not None and c.worse_pct > 0, c
    for said in (c.reason, c.text, compare.against_a(c.worse_pct)):
        assert not re.search(r"worse by -|-[\d.]+% worse", said), said
    assert "the rule's estimate" in c.text and c.reason.startswith("B worse by "), c.text
    # where the medians agree with the rule, they are what it says
    quiet = gate.check("s", 8, "rate", tuple(100.0 + i for i in range(6)),
                       tuple(80.0 + i for i in range(6)), 5.0, "floor", 0.01)
    assert quiet.outcome == gate.REGRESSION and "(median)" in quiet.text, quiet.text
    assert quiet.worse_pct == gate.worse_pct(102.5, 82.5, True)
