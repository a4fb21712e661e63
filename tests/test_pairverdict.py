"""Paired runs, read side and plan: the seats of a start pair (swapped every
other pair, shared or split CPUs), PAIRED's checks (exit 2 before anything
starts), the rounds of `lab next`, and a paired run's verdicts on
constructed rows made by the real levelrow.make_row: the figure chosen by
the servers' CPU, the paired rule, and a seat that favours its occupant
caught as unbalanced, never called a difference between the servers."""
from __future__ import annotations

import dataclasses
import math
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import lab, lab_env, run_folders
from lab.analyse import levelrow, metrics, nextstarts, pairgate, pairverdict, resample
from lab.analyse.gate import GateSettings
from lab.analyse.nextstarts import plan
from lab.analyse.policy import LookSchedule
from lab.measure import pair
from lab.present import method
from lab.record import manifest
from lab.record.level import Level
from lab.record.rows import Row
from lab.setup.fromenv import from_env
from lab.setup.params import ConfigError, Params, Repeat

pytestmark = pytest.mark.unit

WHERE = levelrow.Where(server="a", rep=1, axis="concurrency", value=1, concurrency=1,
                       offered_rps=None, workers=1, backlog=512, duration_s=3,
                       server_cpus=1, client_cpus=1, lab_cpus=2)
LEVEL = Level(transactions=3000, successful=3000, failed=0, availability_pct=100.0,
              elapsed_s=3.0, rate_rps=1000.0, resp_ms=1.0, in_flight=1.0, longest_ms=5.0,
              data_mb=0.1)
MEASURED = levelrow.Measured(server_cpu_s=0.6, rss_end_kb=2048, rss_peak_kb=4096, threads_end=3,
                             threads_peak=4, client_cpu_s=0.3, wall_s=3.0, host_busy_s=0.9,
                             host_steal_s=0.0, sampler_cpu_s=0.01, time_wait=0)
CLIENTS = {"wrk": "concurrency", "siege": "concurrency", "vegeta": "rate"}


def params(**env: str) -> Params:
    base = {"SERVER": "a b", "CLIENT": "wrk", "PAIRED": "duet", "CONCURRENCY": "1 4"}
    return from_env({**base, **env}, ["a", "b", "c"], CLIENTS, available_cpus={0, 1})


def one(server: str, rep: int, value: int, rate: float, cpu_us: float, cpu_pct: float) -> Row:
    """A level of one side of a pair, through the real make_row: `rate`
    req/s, `cpu_us` server CPU per request, its server `cpu_pct` of its CPU."""
    level = dataclasses.replace(LEVEL, rate_rps=rate, transactions=int(rate * 3),
                                successful=int(rate * 3))
    cpu_s = cpu_us * rate * 3 / 1e6
    m = dataclasses.replace(MEASURED, server_cpu_s=cpu_s, wall_s=3.0 * cpu_s / (cpu_pct / 100)
                            if cpu_pct else 3.0, host_busy_s=cpu_s + 0.3)
    level = dataclasses.replace(level, elapsed_s=m.wall_s)    # the client's clock, the lab's
    row = levelrow.make_row(dataclasses.replace(WHERE, server=server, value=value), level, m)
    return dataclasses.replace(row, rep=rep, rate_rps=rate,
                               server_cpu_us_per_req=cpu_us * cpu_pct / 30.0)


def stats(rows: list[Row]) -> dict[str, list[metrics.LevelStats]]:
    by: dict[str, list[Row]] = {}
    for r in rows:
        by.setdefault(r.server, []).append(r)
    return {name: metrics.level_stats(rs) for name, rs in by.items()}


def pairs(n: int, a_over_b: float, seat: float = 1.0, sd: float = 0.01, cpu_pct: float = 30.0,
          seed: int = 1, value: int = 1) -> list[Row]:
    """n start pairs of a and b at one level: a's req/s `a_over_b` times b's,
    the side on seat 1 (a on odd pairs) `seat` times faster, a common
    moment's noise (both sides alike) and `sd` of each side's own."""
    rng = random.Random(seed)
    out = []
    for rep in range(1, n + 1):
        moment = 1000 * math.exp(rng.gauss(0, 0.2))        # the host at that moment
        a_seat, b_seat = (seat, 1.0) if rep % 2 else (1.0, seat)
        ra = moment * a_over_b * a_seat * math.exp(rng.gauss(0, sd))
        rb = moment * b_seat * math.exp(rng.gauss(0, sd))
        out += [one("a", rep, value, ra, 1e6 / ra * 0.3, cpu_pct),
                one("b", rep, value, rb, 1e6 / rb * 0.3, cpu_pct)]
    return out


def verdict(rows: list[Row], mode: str = "duet", delta: float = 3.0) -> pairverdict.Verdict:
    s = stats(rows)
    values = sorted({r.value for r in rows})
    [v] = pairverdict.primaries(s, values, mode, delta_pct=delta)
    return v


# ---------------------------------------------------------------- the seats

def test_seats_swap_every_other_pair_and_share_two_cores() -> None:
    p = params(PORT="20000")
    one_, two = pair.seats(p, 1)                    
    assert (one_.number, one_.port, two.number, two.port) == (1, 20000, 2, 20001)
    assert one_.client_first and not two.client_first
    assert one_.server_cpus == two.server_cpus == (0,)      # a 2-core host: shared
    assert one_.client_cpus == two.client_cpus == (1,)
    a2, b2 = pair.seats(p, 2)                       
    assert (a2.number, b2.number) == (2, 1) and (a2.port, b2.port) == (20001, 20000)


def test_seats_split_the_cpus_where_there_are_four() -> None:
    p = from_env({"SERVER": "a b", "CLIENT": "wrk", "PAIRED": "duet"}, ["a", "b"], CLIENTS,
                 available_cpus={0, 1, 2, 3})
    a, b = pair.seats(p, 1)
    assert (a.server_cpus, b.server_cpus, a.client_cpus, b.client_cpus) == \
        ((0,), (1,), (2,), (3,))
    rmit = dataclasses.replace(p, paired="rmit")
    a, b = pair.seats(rmit, 1)                        # each alone while measured: every CPU
    assert a.server_cpus == b.server_cpus == (0, 1)


# ---------------------------------------------------------------- the setting

@pytest.mark.parametrize("env, said", [
    ({"PAIRED": "twins"}, "expected duet or rmit"),
    ({"SERVER": "a b c"}, "starts two servers together"),
    ({"SERVER": "a"}, "starts two servers together"),
    ({"AXIS": "workers", "VALUES": "1 2", "CONCURRENCY": "4"}, "drop AXIS or PAIRED"),
    ({"TOPOLOGY": "netns"}, "TOPOLOGY=local"),
    ({"PORT": "65535"}, "PORT+1"),
])
def test_paired_refuses_what_it_cannot_run(env: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("+", r"\+")):
        params(**env)


def test_paired_is_recorded_and_empty_by_default() -> None:
    assert params().paired == "duet"                
    assert params(PAIRED="").paired == ""           


def test_lab_next_plans_one_start_pair_a_round() -> None:
    m = manifest.Manifest(run_id="r", status="running", params=manifest.RunParams(
        servers=["a", "b"], axis="concurrency", duration_s=3, repeat=Repeat(3, 3),
        paired="duet"), client=manifest.ClientInfo(tool="wrk"))
    nxt = plan(m, ["a", "b"], None)
    assert nxt.starts == [("a+b", 1)] and "pair 1 of 3" in nxt.said
    gone = plan(m, ["a"], None)
    assert gone.starts == [] and "needs both servers: b" in gone.said
    m.run_plan = dataclasses.replace(m.planned, design="")   # the run's plan decides
    assert plan(m, ["a", "b"], None).starts == [("a", 1), ("b", 1)]


# ---------------------------------------------------------------- the verdicts

def test_a_b_moment_that_hits_both_sides_cancels_in_the_pairs() -> None:
    """The host's moment spreads each side by 20% (sd of the log), far more
    than the 5% between them: the pairs decide, by req/s (CPU 30%)."""
    v = verdict(pairs(10, 1.05))
    assert v.kind == "faster" and v.a == "a" and v.metric.startswith("requests/s")
    assert "under duet" in v.text and "10 pairs (duet)" in v.rule()
    assert v.percent is not None and 3 < v.percent < 7


def test_an_a_a_pair_is_equivalent_within_three_percent() -> None:
    v = verdict(pairs(10, 1.0, sd=0.005))
    assert v.kind == "equivalent", v.text


@pytest.mark.parametrize("cpu_pct", [10.0, 45.0, 95.0])
def test_the_figure_follows_the_level_not_how_busy_the_cpus_were(cpu_pct: float) -> None:
    """More than one request in flight (c=4): server CPU per request, whether
    the servers kept their CPUs 10% or 95% busy (a neighbour's load changes
    that, not the figure). One in flight (c=1): req/s, however busy; a
    client that was the limit there: CPU per request."""
    assert verdict(pairs(10, 1.0, cpu_pct=cpu_pct, value=4)).metric.startswith(
        "server CPU per request at 4")
    assert verdict(pairs(10, 1.0, cpu_pct=cpu_pct)).metric.startswith("requests/s at 1")
    bound = [dataclasses.replace(r, flags="client-bound") for r in pairs(10, 1.0)]
    assert verdict(bound).metric.startswith("server CPU per request at 1")


def compressed(n: int, rate_ratio: float, cpu_ratio: float, seed: int, value: int = 1,
               sd: float = 0.004) -> list[Row]:
    """n pairs where A's req/s is `rate_ratio` times B's and B's CPU per
    request `cpu_ratio` times A's: under duet at c=1 a 5% difference in CPU
    shows in req/s as about 1.3% (docs/methodology.md)."""
    rng = random.Random(seed)
    out = []
    for rep in range(1, n + 1):
        moment = 1000 * math.exp(rng.gauss(0, 0.2))
        ra = moment * rate_ratio * math.exp(rng.gauss(0, sd))
        rb = moment * math.exp(rng.gauss(0, sd))
        ca, cb = 300 * math.exp(rng.gauss(0, sd)), 300 * cpu_ratio * math.exp(rng.gauss(0, sd))
        out += [one("a", rep, value, ra, ca, 30.0), one("b", rep, value, rb, cb, 30.0)]
    return out


def test_a_compressed_figure_never_claims_equivalent() -> None:
    """req/s 1.3% apart (inside ±3%) while CPU per request is 5% apart: never
    "equivalent within ±3%"; the verdict names the CPU figure that differs."""
    for seed in range(40):
        v = verdict(compressed(10, 1.013, 1.05, seed))
        assert v.kind != "equivalent", v.text
        assert v.metric.startswith("requests/s at 1")
        assert "but server CPU per request shows a difference" in v.text, v.text
    # both figures inside: equivalent
    assert verdict(compressed(10, 1.0, 1.0, 1)).kind == "equivalent"


def sliced(rows: list[Row], burst: dict[tuple[str, int], int], slices: int = 5) -> list[Row]:
    """Each row's level as `slices` slices of its own figures, one slice of
    (server, rep) in `burst` hit by a neighbour's burst: half its req/s, and
    twice its CPU per request (its window's figures follow the slices)."""
    out = []
    for r in rows:
        rps = [r.rate_rps] * slices
        cpu = [r.server_cpu_us_per_req] * slices
        k = burst.get((r.server, r.rep))
        if k is not None:
            rps[k], cpu[k] = rps[k] / 2, cpu[k] * 2
        out.append(dataclasses.replace(
            r, rate_rps=sum(rps) / slices, server_cpu_us_per_req=sum(cpu) / slices,
            slice_rps=" ".join(f"{x:.1f}" for x in rps),
            slice_cpu_us=" ".join(f"{x:.2f}" for x in cpu)))
    return out


def test_a_burst_on_one_slice_of_one_side_cannot_swing_the_pair() -> None:
    """A/A at c=4, a burst on one of B's five slices in every pair: the
    window's CPU per request says A is 20% cheaper in every pair; the
    Hodges-Lehmann estimate of the slices' ratios, the pair's figure, does
    not move."""
    rows = pairs(10, 1.0, sd=0.002, value=4)
    hit = sliced(rows, {("b", rep): rep % 5 for rep in range(1, 11)})
    v = verdict(hit)
    assert v.kind == "equivalent", v.text
    whole = [dataclasses.replace(r, slice_rps=None, slice_cpu_us=None) for r in hit]
    assert verdict(whole).kind == "faster", "the window alone would call it a difference"


def test_a_seat_that_favours_its_occupant_is_unbalanced_never_a_difference() -> None:
    """A/A, the second seat 20% slower whoever sits on it: the odd and the
    even pairs disagree, and the pair is not ranked."""
    v = verdict(pairs(10, 1.0, seat=1.2))
    assert v.kind == "not-comparable" and "unbalanced: seat 1 favoured" in v.text, v.text
    assert "faster" not in v.kind


def test_a_not_comparable_pair_ends_the_run_named_as_such_never_decided() -> None:
    """The seats' check finds seat 1 favoured by about 4%: the primary is
    not comparable, with the seat and its effect as facts, and the run's
    last line says so and what would make it comparable, never "decided"."""
    s = stats(pairs(10, 1.0, seat=1.04) + pairs(10, 1.0, seat=1.04, seed=2, value=4))
    found = pairverdict.verdicts(s, [1, 4], "duet", delta_pct=3.0)
    [v] = pairverdict.primaries(s, [1, 4], "duet", delta_pct=3.0, levels=found)
    assert v.kind == "not-comparable" and v.seat == 1 and v.seat_pct is not None
    assert round(v.seat_pct) == 4, v.seat_pct
    assert not nextstarts.decided(v, found)
    last = nextstarts.closed(SimpleNamespace(primary=[v], verdicts=found))   # type: ignore[arg-type]
    assert "decided" not in last, last
    assert ("a vs b: not comparable: unbalanced seats (seat 1 favoured whichever server sat "
            "on it by about 4%): more pairs on these seats cannot change it; PAIRED=rmit, "
            "or seats on CPUs of their own, would") in last, last


def test_equivalent_across_the_levels_does_not_hide_a_level_that_differs() -> None:
    """c=1 the same by req/s, c=4 4% apart by CPU per request: their mean is
    inside ±3%, but the pair is undecided, naming c=4's own verdict; with
    both levels the same it stays equivalent."""
    s = stats(pairs(10, 1.0, sd=0.003) + pairs(10, 1.04, sd=0.003, seed=2, value=4))
    across = pairverdict.primary("a", s["a"], "b", s["b"], [1, 4], 0.01, 3.0,
                                 LookSchedule(), "duet")
    assert across.kind == "equivalent", across.text
    [v] = pairverdict.primaries(s, [1, 4], "duet", delta_pct=3.0)
    assert v.kind == "undecided" and "but at 4 alone: a needs less server CPU" in v.text, v.text
    same = stats(pairs(10, 1.0, sd=0.003) + pairs(10, 1.0, sd=0.003, seed=2, value=4))
    assert pairverdict.primaries(same, [1, 4], "duet", delta_pct=3.0)[0].kind == "equivalent"


def test_repeat_auto_stops_where_the_levels_own_verdicts_answer_a_held_back_equivalent() -> None:
    """The held-back "equivalent" names the level that differs; once every
    level's own verdict is decided more pairs cannot change the answer, and
    REPEAT=auto stops; while a level is still open it goes on."""
    s = stats(pairs(10, 1.0, sd=0.003) + pairs(10, 1.04, sd=0.003, seed=2, value=4))
    found = pairverdict.verdicts(s, [1, 4], "duet", delta_pct=3.0)
    [v] = pairverdict.primaries(s, [1, 4], "duet", delta_pct=3.0, levels=found)
    assert v.differs_at == (4,) and [w.kind for w in found] == ["equivalent", "faster"]
    assert nextstarts.settled(v, found)
    assert nextstarts.outcome(v) == "a vs b: differs at 4"
    open_c1 = [dataclasses.replace(found[0], kind="undecided"), found[1]]
    assert not nextstarts.settled(v, open_c1)
    kept = pairverdict.primaries(s, [1, 4], "duet", delta_pct=3.0)[0]
    assert not nextstarts.settled(dataclasses.replace(kept, differs_at=()), found)


def test_the_looks_of_repeat_auto_stop_at_the_first_that_decides() -> None:
    rows = pairs(14, 1.10, seed=3)
    s = stats(rows)
    [v] = pairverdict.primaries(s, [1], "duet", delta_pct=3.0,
                                looks=LookSchedule(10, 40, paired=True))
    assert v.kind == "faster" and v.starts == (10, 10)
    assert "look 1 of 5: 10 pairs of up to 40" in v.text, v.text


def test_the_method_sentence_says_how_a_paired_run_decides() -> None:
    assert "signed-rank" in method.said("duet") and "under duet" in method.said("duet")
    assert "Mann-Whitney" in method.said("")


# ---------------------------------------------------------------- the paired gate

def gate_of(rows: list[Row], delta: float = 3.0, gate: tuple[str, ...] = ()) -> pairgate.Gate:
    s = stats(rows)
    at = sorted({r.value for r in rows})
    return pairgate.of(s, at, "duet", GateSettings(min_effect_pct=delta), gate=gate)


def sleepy(n: int, seed: int = 5) -> list[Row]:
    """B sleeps 30% more a request at c=1 (its rate falls, its CPU per
    request does not); at c=4 both saturate one CPU and cost the same."""
    rng = random.Random(seed)
    out = []
    for rep in range(1, n + 1):
        moment = 1000 * math.exp(rng.gauss(0, 0.2))
        ra, rb = (moment * math.exp(rng.gauss(0, 0.01)) for _ in range(2))
        out += [one("a", rep, 1, ra, 300, 30.0), one("b", rep, 1, rb / 1.3, 300, 23.0),
                one("a", rep, 4, ra, 300 * math.exp(rng.gauss(0, 0.01)), 48.0),
                one("b", rep, 4, rb, 300 * math.exp(rng.gauss(0, 0.01)), 48.0)]
    return out


def test_the_paired_gate_passes_the_same_code_and_fails_a_costlier_head() -> None:
    same = gate_of(pairs(10, 1.0, sd=0.005) + pairs(10, 1.0, sd=0.005, seed=2, value=4))
    assert same.code == 0 and same.outcome == "pass", same.reason
    worse = gate_of(pairs(10, 1.06, sd=0.005) + pairs(10, 1.06, sd=0.005, seed=2, value=4))
    assert worse.code == 1 and worse.checks[0].outcome == "regression"
    assert worse.checks[0].worse_pct is not None and worse.checks[0].worse_pct > 3
    # its reason names the checks' place as a sentence does: "across 1, 4" or "at 4"
    assert re.search(r"is worse than a (across 1, 4|at [14]):", worse.reason), worse.reason
    assert re.search(r"by 3% or more (across 1, 4|at [14]), under duet", same.reason), same.reason
    at4 = gate_of(pairs(10, 1.0, sd=0.005) + pairs(10, 1.05, sd=0.005, seed=2, value=4))
    assert at4.code == 1 and "b is worse than a at 4: " in at4.reason, at4.reason


def test_one_level_no_worse_does_not_pass_a_gate_another_leaves_open() -> None:
    """c=1 shown no worse, c=4 too noisy to tell: exit 3, not a pass (a 5%
    CPU head passed so where a sleep hid its cost at c=1); both levels, or
    the check across them, shown no worse: a pass."""
    g = gate_of(pairs(10, 1.0, sd=0.003) + pairs(10, 1.03, sd=0.04, seed=1, value=4))
    assert [c.outcome for c in g.checks[1:]] == ["pass", "not-judged"], g.checks
    assert g.code == 3 and "no worse than a at 1, but not shown at 4" in g.reason, g.reason
    both = gate_of(pairs(10, 1.0, sd=0.003) + pairs(10, 1.0, sd=0.003, seed=1, value=4))
    assert both.code == 0, both.reason


def test_the_paired_gate_sees_a_sleep_that_costs_no_cpu() -> None:
    """CPU per request is the same at both levels; c=1 is decided by req/s."""
    g = gate_of(sleepy(10))
    assert g.code == 1, g.reason
    at1 = next(c for c in g.checks if not c.levels and c.value == 1)
    assert at1.outcome == "regression" and at1.metric.startswith("requests/s")


def test_the_paired_gate_honours_gate_cpu() -> None:
    """GATE=cpu: every level by CPU per request. The sleep at c=1 costs no
    CPU, so the head passes: what GATE=cpu asks (by default c=1 is judged by
    req/s, and the same pairs fail: the test above)."""
    g = gate_of(sleepy(10), gate=("cpu",))
    at1 = next(c for c in g.checks if not c.levels and c.value == 1)
    assert at1.metric.startswith("server CPU per request") and at1.outcome == "pass"
    assert g.code == 0, g.reason
    assert gate_of(sleepy(10), gate=("rate",)).code == 1


def test_the_paired_gate_with_too_few_pairs_decides_nothing() -> None:
    g = gate_of(pairs(3, 1.0))
    assert g.code == 3 and "too few pairs" in g.reason


def test_repeat_auto_of_start_pairs_looks_from_ten_to_forty() -> None:
    p = params(REPEAT="auto")
    assert (p.repeat.least, p.repeat.most) == (10, 40)
    p = params(REPEAT="auto", REPEAT_MIN="10", REPEAT_MAX="20")
    assert (p.repeat.least, p.repeat.most) == (10, 20)


def test_resampled_pairs_show_the_realized_rates() -> None:
    """Draws of recorded pairs through the rule: an A/A with 1% sd says
    equivalent within ±3% almost always and better almost never; a 5%
    difference is found."""
    rng = random.Random(7)
    same = [rng.gauss(0, 0.01) for _ in range(20)]
    got = resample.draw(same, 10, 1000, 0.01, 3.0)
    assert got.equivalent >= 900 and got.a_better + got.b_better <= 20
    assert "equivalent within ±3%" in got.line("a", "b")
    shifted = [x + math.log(1.05) for x in same]
    assert resample.draw(shifted, 10, 1000, 0.01, 2.0).a_better >= 900


def test_a_paired_run_s_spread_across_pairs_is_said_to_be_cancelled() -> None:
    from lab.analyse import findings
    alone = findings.Noisy("ews", 2, 2, 10, 1.36, 1).text()
    paired_ = findings.Noisy("ews", 2, 2, 10, 1.36, 1, "start pairs").text()
    assert "Consider more repetitions" in alone and "10 repetitions" in alone
    assert "10 start pairs" in paired_ and "each pair's ratio" in paired_
    assert "Consider more" not in paired_


def test_a_pair_with_the_ceiling_reference_is_refused_before_anything_starts(
        tmp_path: Path, port: int) -> None:
    """nginx (role = "ceiling") is never ranked, so a duet of a server and
    nginx would end with no verdict while saying it was done (issue 54):
    refused, exit 2, before a run folder exists."""
    out = lab(lab_env(tmp_path, SERVER="twin nginx", PAIRED="duet", CLIENT="wrk",
                      PORT=str(port)), "check")
    assert out.returncode == 2, out.stderr
    assert "nginx is the ceiling reference" in out.stderr and "drop PAIRED" in out.stderr
    assert "Traceback" not in out.stderr and run_folders(tmp_path) == []


def test_a_paired_auto_run_records_the_plan_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """REPEAT=auto under PAIRED plans 10 to 40 pairs (the paired defaults,
    not the registry's 5 to 10): the settings the run records, and so its
    Reproduce line, say the same (issue 53)."""
    from lab.cli.common import recorded_settings
    env = {"SERVER": "a b", "CLIENT": "wrk", "PAIRED": "duet", "REPEAT": "auto"}
    p = from_env(env, ["a", "b"], CLIENTS, available_cpus={0, 1})
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    said = recorded_settings(p)
    again = from_env({**env, **{k: v for k, v in said.items() if k.startswith("REPEAT")}},
                     ["a", "b"], CLIENTS, available_cpus={0, 1})
    assert (said["REPEAT_MIN"], said["REPEAT_MAX"]) == ("10", "40")
    assert again.repeat == p.repeat
    monkeypatch.setenv("PAIRED", "rmit ")        # make drops the first blank of " rmit "
    rmit = from_env({**env, "PAIRED": "rmit "}, ["a", "b"], CLIENTS, available_cpus={0, 1})
    assert recorded_settings(rmit)["PAIRED"] == "rmit"      # as checked, from the run's plan
