"""A throughput claim judged by cost (lab.analyse.claimcost, claimjudge.by_cost
and overall) on constructed duets and sweeps made by the real levelrow.make_row:
the capacity ratio's exact interval against the published window, too few
pairs, an unbalanced seat, the flatness bound, a claim between worker
counts left inconclusive, and a verdict by cost standing only where every
client's req/s was the limit."""
from __future__ import annotations

import dataclasses
import math
import random

import pytest

from lab.analyse import claimcost, claimjudge, claims, claimsfile, claimtext, metrics
from lab.present import claimsmd
from lab.analyse.claims import ClaimResult
from lab.record.rows import Row
from lab.setup.servers import discover
from lab.setup.paths import ROOT
from lab.studies import reproduce
from test_pairverdict import one

pytestmark = pytest.mark.unit

LEVELS = (5, 15, 50)


def study() -> claimsfile.Study:
    return next(s for s in claimsfile.load(reproduce.CLAIMS, set(discover(ROOT)),
                                           only="ada-vs-java") if s.id == "ada-vs-java")


def claim(cid: str) -> claimsfile.Claim:
    return next(c for c in study().claims if c.id == cid)


def stats(rows: list[Row]) -> dict[str, list[metrics.LevelStats]]:
    by: dict[str, list[Row]] = {}
    for r in rows:
        by.setdefault(r.server, []).append(r)
    return {name: metrics.level_stats(rs) for name, rs in by.items()}


def duet(n: int, b_over_a: float, a: str = "aws", b: str = "jersey", sd: float = 0.01,
         seat: float = 1.0, seed: int = 1, moment_sd: float = 0.2
         ) -> dict[str, list[metrics.LevelStats]]:
    """n start pairs of a duet: b's CPU per request `b_over_a` times a's, a
    moment's noise common to both (`moment_sd`, a new moment each level), `sd`
    each side's own, and the side on seat 1 (a on odd pairs) `seat` times
    cheaper."""
    rng = random.Random(seed)
    rows = []
    for rep in range(1, n + 1):
        for v in LEVELS:
            moment = 20.0 * math.exp(rng.gauss(0, moment_sd))
            sa, sb = (1 / seat, 1.0) if rep % 2 else (1.0, 1 / seat)
            ca = moment * sa * math.exp(rng.gauss(0, sd))
            cb = moment * b_over_a * sb * math.exp(rng.gauss(0, sd))
            rows += [one(a, rep, v, 1e6 / ca * 0.5, ca, 30.0),
                     one(b, rep, v, 1e6 / cb * 0.5, cb, 30.0)]
    return stats(rows)


def test_the_capacity_ratio_is_the_inverse_ratio_of_cpu_per_request() -> None:
    s = duet(8, 1.10)
    cap = claimcost.capacity("aws", s["aws"], "jersey", s["jersey"], LEVELS, 0.01)
    assert isinstance(cap, claimcost.Capacity)
    assert cap.pairs == 8 and cap.levels == LEVELS
    assert cap.lo < cap.estimate < cap.hi
    assert cap.lo < 1.10 < cap.hi and abs(cap.estimate - 1.10) < 0.02


@pytest.mark.parametrize(("b_over_a", "verdict"), [(1.07, claims.REPRODUCED),
                                                    (1.50, claims.NOT_REPRODUCED),
                                                    (1.23, claims.INCONCLUSIVE)])
def test_the_whole_interval_against_the_published_window(b_over_a: float, verdict: str) -> None:
    """AWS ÷ Grizzly is published as 1.07 ±15% (0.91–1.23)."""
    c = claim("aws-over-grizzly-rps")
    s = duet(8, b_over_a, sd=0.01)
    r = claimcost.judge_duet(c, s["aws"], s["jersey"], LEVELS)
    assert r.verdict == verdict, r.reason
    assert r.by == "cost (server CPU per request under duet, each at its cheapest of c=5, 15, 50)"
    assert claimtext.verdict_text(r) == f"{verdict} by {r.by}"
    assert r.measured is not None and r.measured.n == 8
    assert "8 pairs, exact 99% interval" in r.reason


def test_too_few_pairs_give_no_interval() -> None:
    s = duet(2, 1.07)
    r = claimcost.judge_duet(claim("aws-over-grizzly-rps"), s["aws"], s["jersey"], LEVELS)
    assert r.verdict == claims.INCONCLUSIVE and "too few pairs: 2" in r.reason
    assert "8 can" in r.reason


def test_a_seat_that_favours_its_occupant_is_not_a_capacity() -> None:
    """12 pairs, the same cost, seat 1 a third cheaper: not judged."""
    s = duet(12, 1.0, seat=1.3, sd=0.005)
    r = claimcost.judge_duet(claim("aws-over-grizzly-rps"), s["aws"], s["jersey"], LEVELS)
    assert r.verdict == claims.INCONCLUSIVE and "unbalanced: seat 1" in r.reason


def test_a_claim_between_worker_counts_needs_cores() -> None:
    c = claim("aws-more-tasks-not-faster")
    assert claimcost.way(c) is None and claimcost.scaling(c)
    j = claimjudge.by_cost(study(), c, [], [])
    assert j is not None and j.result.verdict == claims.INCONCLUSIVE
    assert "more cores" in j.result.reason
    assert claimjudge.by_cost(study(), claim("grizzly-over-aws-rss"), [], []) is None


def sweep(rate_at_2: float, cost_us: float) -> dict[str, list[metrics.LevelStats]]:
    rows = []
    for rep in (1, 2, 3):
        rows += [one("ews", rep, 2, rate_at_2 * (1 + 0.01 * rep), cost_us * 1.2, 30.0),
                 one("ews", rep, 5, 1e6 / cost_us * 0.8, cost_us, 30.0)]
    return stats(rows)


def test_flatness_by_its_own_cost_is_a_lower_bound() -> None:
    """EWS on one CPU at 20 µs a request can serve at most 50,000 req/s: at
    c=2 it served 45,000, so at least 0.9 of its peak; at 25,000, the bound
    (0.5) says nothing."""
    c = claim("single-task-flat")
    assert claimcost.way(c) == claimcost.BOUND
    r = claimcost.judge_bound(c, sweep(45_000, 20.0)["ews"], 1)
    assert r.verdict == claims.REPRODUCED, r.reason
    assert r.measured is not None and 0.9 <= r.measured.lo < r.measured.hi < 0.94
    low = claimcost.judge_bound(c, sweep(25_000, 20.0)["ews"], 1)
    assert low.verdict == claims.INCONCLUSIVE and "the client may have kept" in low.reason
    two = claimcost.judge_bound(c, sweep(45_000, 20.0)["ews"], 2)    # 100,000 at most
    assert two.verdict == claims.INCONCLUSIVE


def test_the_sweep_with_the_highest_bound_judges_a_flatness() -> None:
    c = claim("single-task-flat")
    low = claimjudge.Sweep("siege", None, sweep(25_000, 20.0), 1)
    high = claimjudge.Sweep("wrk", None, sweep(45_000, 20.0), 1)
    j = claimjudge.by_cost(study(), c, [low, high], [])
    assert j is not None and j.result.verdict == claims.REPRODUCED
    assert j.result.reason.endswith("on the wrk sweep")


def rate_result(c: claimsfile.Claim, verdict: str, limited: bool) -> ClaimResult:
    return ClaimResult(c, verdict, "req/s", client_limited=limited)


def test_a_verdict_by_cost_stands_only_where_every_client_was_the_limit() -> None:
    c = claim("aws-over-grizzly-rps")
    s = duet(8, 1.07)
    cost = claimcost.judge_duet(c, s["aws"], s["jersey"], LEVELS)
    bound = [rate_result(c, claims.INCONCLUSIVE, True), rate_result(c, claims.INCONCLUSIVE, True)]
    assert claimjudge.overall(bound + [cost]) == ("reproduced by cost (server CPU per request "
                                                 "under duet, each at its cheapest of c=5, 15, 50)")
    # one client decided by req/s, the other was the limit: the first speaks, cost
    # is beside
    decided = [rate_result(c, claims.NOT_REPRODUCED, False), bound[1]]
    assert claimjudge.verdict_of(decided + [cost]) is None
    assert claimjudge.overall(decided + [cost]) == \
        "not reproduced (the other client was the limit)"
    # one undecided for its noise, not the limit: the claim stays open
    noisy = [rate_result(c, claims.REPRODUCED, False), rate_result(c, claims.INCONCLUSIVE, False)]
    assert claimjudge.overall(noisy + [cost]).startswith("open")
    # too few repetitions, not the client: cost does not stand in
    few = [rate_result(c, claims.INCONCLUSIVE, False)]
    assert claimjudge.verdict_of(few + [cost]) is None
    # a cost that cannot decide leaves the claim open, and says so
    mute = dataclasses.replace(cost, verdict=claims.INCONCLUSIVE)
    assert claimjudge.overall(bound + [mute]).endswith("; by cost: inconclusive")


def test_each_side_at_its_cheapest_level_and_a_failing_level_left_out() -> None:
    """A peak claim compares each server at its best level: here jersey is
    cheapest at c=50 and aws at c=5; aws's c=50, where more than
    FAILED_SHARE_PCT of its requests failed (AWS closes connections past its
    slots), is left out for aws alone, and the reason names it."""
    s = duet(8, 1.0, sd=0.001, moment_sd=0.0)

    def scaled(levels: list[metrics.LevelStats], by: dict[int, float]
               ) -> list[metrics.LevelStats]:
        return [dataclasses.replace(x, cpu_us_per_req=dataclasses.replace(
            x.cpu_us_per_req, values=tuple(v * by.get(x.value, 1.0)
                                            for v in x.cpu_us_per_req.values)))
                for x in levels]
    s["jersey"] = scaled(s["jersey"], {5: 2.0, 15: 1.5, 50: 1.1})
    s["aws"] = [dataclasses.replace(x, failed_pct=5.0) if x.value == 50 else x
                for x in scaled(s["aws"], {50: 0.5})]
    r = claimcost.judge_duet(claim("aws-over-grizzly-rps"), s["aws"], s["jersey"], LEVELS)
    assert r.measured is not None and abs(r.measured.median - 1.1) < 0.03, r.reason
    assert "aws cheapest at c=" in r.reason and "jersey at c=50 (8 of 8 pairs)" in r.reason
    assert "left out: aws at c=50, not ranked or more than 1% failed" in r.reason


def test_a_claim_req_s_decided_keeps_its_verdict_and_no_cost_reasons() -> None:
    """EWS flat from c=2 reproduced by req/s (the client not the limit): the
    bound by cost beside it neither changes the overall verdict nor adds a
    'why not reproduced' block."""
    c = claim("single-task-flat")
    rate = claimjudge.Judged("siege", rate_result(c, claims.REPRODUCED, False))
    cost = claimjudge.Judged(claimjudge.COST, claimcost.judge_bound(
        c, sweep(25_000, 20.0)["ews"], 1))
    assert cost.result.verdict == claims.INCONCLUSIVE
    assert claimjudge.overall([rate.result, cost.result]) == claims.REPRODUCED
    assert claimsmd.why_lines(study(), [rate, cost], reproduce.server_specs(study())) == []


def test_a_ratio_s_variants_give_the_duet_that_judges_it_by_cost() -> None:
    from lab.analyse import claimreasons
    st = study()
    said = claimreasons.variants(claim("aws-over-grizzly-rps"), st, reproduce.server_specs(st))
    duet_line = next(v for v in said if v.startswith("by cost:"))
    assert ("make bench SERVER='aws@8 jersey@62' PAIRED=duet CLIENT=wrk KEEPALIVE=0 "
            "CONCURRENCY='5 15 50' DURATION=10s REPEAT=8") in duet_line
    scaling = claimreasons.variants(claim("aws-more-tasks-not-faster"), st,
                                    reproduce.server_specs(st))
    assert not any(v.startswith("by cost:") for v in scaling)
