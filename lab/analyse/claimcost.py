"""A throughput claim judged by cost, where the client set the limit.

A client at its limit measures itself (Scott Oaks), so a req/s claim whose
points were client-bound stays inconclusive on req/s. Server CPU per
request is read from the server's own /proc, and a slow client does not
touch it. On the CPUs it is pinned to, a server can serve at most
cpus / (CPU per request) requests a second; as far as it is CPU-bound,
that is its capacity.

- **A ratio of two servers' throughput** (peak_rps, rps_at) is judged on a
  duet of the claim's two servers (PAIRED=duet: both started together,
  loaded at the same moment, so what the host does to one it does to the
  other). Each start pair gives one value: log(CPU per request of B / of A),
  each side at its cheapest level of the duet's (its best level, as a peak
  claim compares the servers; an rps_at claim has one level), over the
  levels it measured whole: the capacity ratio A/B of that pair. Their
  Hodges-Lehmann estimate and its exact
  distribution-free 1-α interval (lab.analyse.paired) are the figure; the
  seats' balance is checked as for a paired run's verdict
  (lab.analyse.pairverdict). The whole interval inside the claim's accepted
  window: reproduced by cost; wholly outside: not reproduced by cost; else
  inconclusive.
- **A claim about one server's curve** (flatness: req/s at a level over its
  peak) has no second server to pair. On its pinned CPUs its peak is at most
  cpus / (its lowest CPU per request over the sweep), so req/s at the level
  times that lowest CPU per request, over cpus, is a lower bound of its
  flatness. The bound at or above the window's floor (a window open above):
  reproduced by cost. Below it, the client may have kept the server idle:
  inconclusive. Above the window's top: not reproduced.
- **Scaling with tasks** (one server, two worker counts) is a question of
  more cores: a server pinned to one CPU cannot show it, by req/s or by
  cost, so it stays inconclusive with that reason.

Pure functions on level statistics; nothing here runs a benchmark.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lab.analyse import claims, paired, pairverdict, policy
from lab.analyse.claims import ClaimResult
from lab.analyse.claimsfile import Claim, num, spec_of
from lab.analyse.metrics import FAILED_SHARE_PCT, MIN_REPS_FOR_VERDICT, LevelStats, Spread
from lab.analyse.verdicts import too_few

BY = "cost"
# the metrics whose claims a cost figure can stand in for
RATES = ("peak_rps", "rps_at")

DUET = "duet"            # a ratio claim: judged on a duet of its two servers
BOUND = "bound"          # a flatness claim: judged on its own sweep, as a bound


def way(c: Claim) -> str | None:
    """How cost can judge claim `c`: DUET, BOUND, or None (it cannot: why_not)."""
    if c.kind == "ratio" and c.metric in RATES and not scaling(c):
        return DUET
    if c.kind == "value" and c.metric == "flatness":
        return BOUND
    return None


def scaling(c: Claim) -> bool:
    """A claim between worker counts of one server (aws@16 against aws)."""
    names = {spec_of(s).name for s in c.servers}
    return len(c.servers) > 1 and len(names) == 1


def why_not(c: Claim) -> str:
    """Why cost cannot stand in for claim `c`'s req/s."""
    if scaling(c):
        return ("cost cannot stand in: this claim is about what more tasks give, which "
                "needs more cores than the server's CPUs here; on one CPU more tasks "
                "cannot serve more, by req/s or by CPU per request")
    if c.kind == "ordering":
        return ("cost cannot stand in: an ordering is judged by req/s alone (each "
                "adjacent pair would need a duet of its own)")
    return f"cost cannot stand in for {c.metric}"


def duet_servers(c: Claim) -> tuple[str, str]:
    """The two servers of a duet claim, as the claim names them (A, B)."""
    return c.servers[0], c.servers[1]


def levels_of(c: Claim, cost_levels: Sequence[int]) -> tuple[int, ...]:
    """The levels a duet measures for claim `c`: its own level (rps_at), else
    the study's cost levels."""
    return (c.at,) if c.metric == "rps_at" and c.at is not None else tuple(cost_levels)


def result(c: Claim, verdict: str, reason: str, measured: Spread | None = None,
           by: str = BY) -> ClaimResult:
    """A verdict by cost; `by` says how it was reached: "cost (server CPU per
    request under duet, each at its cheapest of c=5, 15, 50)"."""
    return ClaimResult(c, verdict, reason, measured, by=by)


def _whole(s: LevelStats) -> bool:
    return s.ranked and s.failed_pct <= FAILED_SHARE_PCT


def cheapest(stats: list[LevelStats], levels: Sequence[int]) -> dict[int, tuple[float, int]]:
    """Start pair -> this side's lowest server CPU per request over the
    `levels` it measured whole, and that level: the server at its best
    level, as a peak claim compares it."""
    out: dict[int, tuple[float, int]] = {}
    for s in stats:
        vals = s.cpu_us_per_req.values
        if s.value not in levels or not _whole(s) or len(vals) != len(s.reps):
            continue
        for rep, v in zip(s.reps, vals):
            if v > 0 and (rep not in out or v < out[rep][0]):
                out[rep] = (v, s.value)
    return out


def usual(at: list[int]) -> str:
    """'c=50 (8 of 8 pairs)': the level a side was most often cheapest at."""
    top = max(sorted(set(at)), key=at.count)
    return f"c={top} ({at.count(top)} of {len(at)} pairs)"


@dataclass(frozen=True)
class Capacity:
    """A duet's capacity ratio A/B: the estimate and its exact interval, each
    side at its cheapest level of `levels`."""
    estimate: float
    lo: float
    hi: float
    pairs: int
    levels: tuple[int, ...]
    alpha: float
    best: str = ""                   # where each side was cheapest: "a at c=15 (...), b at ..."
    left: str = ""                   # levels a side did not measure whole (failures)

    def spread(self) -> Spread:
        return Spread(self.estimate, self.lo, self.hi, self.pairs)


def capacity(a: str, la: list[LevelStats], b: str, lb: list[LevelStats],
             levels: Sequence[int], alpha: float) -> Capacity | str:
    """A/B's capacity ratio from a duet's statistics, or why none: for each
    start pair, log(B's lowest CPU per request over `levels` / A's), each
    side over the levels it measured whole; their Hodges-Lehmann estimate
    and its exact interval of two-sided level 1-α."""
    ca, cb = cheapest(la, levels), cheapest(lb, levels)
    reps = sorted(ca.keys() & cb.keys())
    if not reps:
        return (f"no start pair measured CPU per request whole on both sides at "
                f"c={', '.join(map(str, levels))}")
    adv = {r: math.log(cb[r][0] / ca[r][0]) for r in reps}
    seats = pairverdict.unbalanced_text(pairverdict.balance(adv, alpha, policy.DELTA_PCT))
    if seats:
        return seats
    n = len(adv)
    w = paired.walsh(list(adv.values()))
    lo, hi = paired.interval(w, n, alpha / 2)
    if math.isinf(lo) or math.isinf(hi):
        return (f"too few pairs: {n} cannot give an exact {100 * (1 - alpha):g}% interval; "
                f"{paired.min_pairs(alpha / 2)} can")
    best = (f"{a} cheapest at {usual([ca[r][1] for r in reps])}, "
            f"{b} at {usual([cb[r][1] for r in reps])}") if len(levels) > 1 else ""
    left = "; ".join(f"{x} at c={', '.join(str(s.value) for s in st)}" for x, st in
                     ((a, [s for s in la if s.value in levels and not _whole(s)]),
                      (b, [s for s in lb if s.value in levels and not _whole(s)])) if st)
    return Capacity(math.exp(paired.hodges_lehmann(w)), math.exp(lo), math.exp(hi), n,
                    tuple(v for v in levels if any(s.value == v for s in la + lb)), alpha,
                    best, left)


def how(cap: Capacity, mode: str = DUET) -> str:
    """'server CPU per request under duet, each at its cheapest of c=5, 15, 50'."""
    at = ", ".join(map(str, cap.levels))
    return f"server CPU per request under {mode}, " + (
        f"each at its cheapest of c={at}" if len(cap.levels) > 1 else f"c={at}")


def judge_duet(c: Claim, la: list[LevelStats], lb: list[LevelStats],
               cost_levels: Sequence[int], alpha: float = policy.ALPHA) -> ClaimResult:
    """A ratio claim A/B judged by the capacity ratio of a duet of A and B."""
    assert c.accept is not None and c.published is not None
    a, b = duet_servers(c)
    if not la or not lb:
        missing = ", ".join(x for x, s in ((a, la), (b, lb)) if not s)
        return result(c, claims.INCONCLUSIVE, f"by cost: not measured ({missing} in no duet)")
    cap = capacity(a, la, b, lb, levels_of(c, cost_levels), alpha)
    if isinstance(cap, str):
        return result(c, claims.INCONCLUSIVE, f"by cost: {cap}")
    lo, hi = c.accept
    shown = (f"capacity ratio {a}/{b} = CPU per request {b}/{a} {num(cap.estimate)} "
             f"[{num(cap.lo)}–{num(cap.hi)}] ({how(cap)}"
             + (f": {cap.best}" if cap.best else "")
             + f"; {cap.pairs} pairs, exact {100 * (1 - cap.alpha):g}% interval"
             + (f"; left out: {cap.left}, not ranked or more than {FAILED_SHARE_PCT:g}% "
                "failed" if cap.left else "") + ")")
    window = f"{num(lo)}–{num(hi)} ({num(c.published)} {c.tolerance})"
    by = f"{BY} ({how(cap)})"
    if lo <= cap.lo and cap.hi <= hi:
        return result(c, claims.REPRODUCED, f"{shown}: whole interval inside {window}",
                      cap.spread(), by)
    if cap.hi < lo or cap.lo > hi:
        side = "below" if cap.hi < lo else "above"
        return result(c, claims.NOT_REPRODUCED, f"{shown}: whole interval {side} {window}",
                      cap.spread(), by)
    return result(c, claims.INCONCLUSIVE, f"{shown}: straddles the edge of {window}",
                  cap.spread(), by)


def flatness_bound(stats: list[LevelStats], at: int, cpus: int) -> Spread | str:
    """The lower bound of rps(at)/peak from the server's own cost: rps at `at`
    times the lowest median CPU per request over the sweep, over `cpus`
    (the range: lowest and highest rps at `at` with that cost)."""
    here = next((s for s in stats if s.value == at), None)
    if here is None:
        return f"not measured at c={at}"
    if cpus < 1:
        return "the server's CPUs are not recorded"
    costs = [s.cpu_us_per_req.median for s in stats if _whole(s) and s.cpu_us_per_req.median > 0]
    if not costs:
        return "no level measured CPU per request"
    least = min(costs) / 1e6 / cpus
    r = here.rate
    return Spread(r.median * least, r.lo * least, r.hi * least, r.n)


def judge_bound(c: Claim, stats: list[LevelStats], cpus: int) -> ClaimResult:
    """A flatness claim judged by its lower bound from cost (flatness_bound)."""
    assert c.accept is not None and c.published is not None and c.at is not None
    (server,) = c.servers
    got = flatness_bound(stats, c.at, cpus)
    if isinstance(got, str):
        return result(c, claims.INCONCLUSIVE, f"by cost: {got}")
    if got.n < MIN_REPS_FOR_VERDICT:
        return result(c, claims.INCONCLUSIVE, f"by cost: {too_few(got.n)}")
    least = min(s.cpu_us_per_req.median for s in stats
                if _whole(s) and s.cpu_us_per_req.median > 0)
    lo, hi = c.accept
    shown = (f"req/s at c={c.at} × its lowest CPU per request ({least:.1f} µs) over "
             f"{cpus} CPU{'s' * (cpus != 1)} = {num(got.median)} [{num(got.lo)}–{num(got.hi)}], "
             f"a lower bound of {server}'s share of its peak (its peak is at most "
             f"{cpus}/CPU per request)")
    window = f"{num(lo)}–{num(hi)} ({num(c.published)} {c.tolerance})"
    by = f"{BY} (req/s at c={c.at} × its lowest server CPU per request)"
    if got.lo > hi:
        return result(c, claims.NOT_REPRODUCED, f"{shown}: above {window}", got, by)
    if lo <= got.lo and math.isinf(hi):
        return result(c, claims.REPRODUCED, f"{shown}: at or above the floor of {window}",
                      got, by)
    return result(c, claims.INCONCLUSIVE,
                  f"{shown}: the bound does not reach {window} (the client may have kept "
                  "the server idle)", got, by)
