"""Published claims and whether a run reproduces them, as pure functions.

`evaluate` judges one claim (read by lab.analyse.claimsfile) against
per-server level statistics (lab.analyse.metrics.LevelStats); its words and
its Markdown table are lab.analyse.claimtext's. Nothing here runs a benchmark.

Verdicts, checked in this order:

- inconclusive when a required component is unavailable, when a server or a
  level the claim needs was not measured; then the lab's one verdict gate
  (lab.analyse.verdicts.judge, the same as a run's verdicts and `make compare`):
  a throughput point that is client-bound measures the client, fewer than
  metrics.MIN_REPS_FOR_VERDICT repetitions show no spread;
- ratio/value claims: reproduced when the whole measured range (min-max over
  repetitions) lies inside the accepted interval around the published value;
  not reproduced when it lies wholly outside; inconclusive (noise) when it
  straddles a boundary of the interval;
- ordering claims: each adjacent pair through the gate: not reproduced when
  some pair is separated in the opposite order; reproduced when every pair is
  separated (non-overlapping ranges) in the published order, a client-bound
  figure counting as a lower bound as everywhere; inconclusive otherwise.

A ratio's range is the widest the repetitions allow: median a / median b,
from a.lo / b.hi to a.hi / b.lo. A claim found client-bound or with too few
repetitions still carries what was measured (`measured` or `order`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from lab.analyse.claimsfile import FLATNESS_AT, Claim, num
from lab.analyse.metrics import MIN_REPS_FOR_VERDICT, LevelStats, Spread, peak
from lab.analyse.verdicts import RANKED, Sample, efficiency, judge_spreads, unjudgeable

# Metrics a saturated client falsifies; RSS is read from the server's /proc.
THROUGHPUT_METRICS = frozenset({"peak_rps", "rps_at", "flatness"})

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_MEASURED = "not measured"      # how an inconclusive reason starts when a figure is missing


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    verdict: str                       # reproduced | not reproduced | inconclusive
    reason: str
    measured: Spread | None = None     # ratio/value: median with its range
    order: tuple[tuple[str, Spread], ...] = ()   # ordering: each server's figure, published order
    # shown beside the verdict, never deciding it: an RSS claim's private-memory
    # figures (lab.host.procfs.Memory), a throughput claim's server CPU per request
    # where req/s could not decide (lab.analyse.verdicts.efficiency)
    beside: str = ""
    # how the verdict was reached: "" by the claim's own metric, "cost" by server
    # CPU per request (lab.analyse.claimcost)
    by: str = ""
    # a throughput point the claim needs was client-bound: req/s measured the client
    client_limited: bool = False

    @property
    def published(self) -> float | tuple[str, ...]:
        c = self.claim
        return c.servers if c.published is None else c.published

def spread(s: Spread) -> str:
    """'median [min–max]' of a claim's figure."""
    return f"{num(s.median)} [{num(s.lo)}–{num(s.hi)}]"


class _Missing(Exception):
    """A figure the claim needs was not measured."""


def _at(stats: list[LevelStats], value: int, server: str) -> LevelStats:
    for s in stats:
        if s.value == value:
            return s
    raise _Missing(f"{server} at {value}")


def _divide(a: Spread, b: Spread) -> Spread:
    """a/b with the widest range the repetitions allow."""
    def div(x: float, y: float) -> float:
        if y > 0:
            return x / y
        return 0.0 if x == 0 else math.inf
    return Spread(div(a.median, b.median), div(a.lo, b.hi), div(a.hi, b.lo), min(a.n, b.n))


def _figure(claim: Claim, stats: list[LevelStats], server: str
            ) -> tuple[Spread, list[LevelStats]]:
    """The claim's metric for one server, and the points it was taken from."""
    if not stats:
        raise _Missing(server)
    if claim.metric == "peak_rps":
        p = peak(stats)
        return p.rate, [p]
    if claim.metric == "rps_at":
        assert claim.at is not None
        p = _at(stats, claim.at, server)
        return p.rate, [p]
    if claim.metric == "rss_end":
        p = max(stats, key=lambda s: s.value)
        return p.rss_end_kb, [p]
    if claim.metric == "flatness":
        at = _at(stats, claim.at or FLATNESS_AT, server)
        p = peak(stats)
        return _divide(at.rate, p.rate), [at, p]
    raise ValueError(f"unknown metric {claim.metric!r}")


def figure(claim: Claim, stats: list[LevelStats], server: str) -> Spread | None:
    """The claim's metric for one server (median [min-max]); None when not measured."""
    try:
        return _figure(claim, stats, server)[0]
    except _Missing:
        return None


def evaluate(claim: Claim, stats: dict[str, list[LevelStats]],
             available: set[str]) -> ClaimResult:
    """Judge `claim` on per-server statistics (keyed as in claim.servers,
    `aws@16` for a worker-count variant); `available` holds the lab servers
    that exist (built or packaged) on this machine."""
    def result(verdict: str, reason: str, **kw: Any) -> ClaimResult:
        return ClaimResult(claim, verdict, reason, **kw)

    gone = [r for r in claim.requires if r not in available]
    if gone:
        why = "; ".join(claim.unavailable.get(r, f"{r} not available") for r in gone)
        return result(INCONCLUSIVE, f"component unavailable ({why})")
    figures: list[tuple[str, Spread]] = []
    points: list[LevelStats] = []
    try:
        for server in claim.servers:
            fig, used = _figure(claim, stats.get(server, []), server)
            figures.append((server, fig))
            points += used
    except _Missing as e:
        return result(INCONCLUSIVE, f"{NOT_MEASURED}: {e}")
    # what was measured is shown even when it cannot be judged
    shown: dict[str, Any] = {"order": tuple(figures)} if claim.kind == "ordering" else \
        {"measured": figures[0][1] if claim.kind == "value"
         else _divide(figures[0][1], figures[1][1])}
    throughput = claim.metric in THROUGHPUT_METRICS
    found = _evaluate(claim, figures, points, shown, throughput)
    beside = private_beside(claim, stats) if claim.metric == "rss_end" else \
        cpu_beside(claim, stats, found) if throughput else ""
    return replace(found, beside=beside) if beside else found


def _evaluate(claim: Claim, figures: list[tuple[str, Spread]], points: list[LevelStats],
              shown: dict[str, Any], throughput: bool) -> ClaimResult:
    if claim.kind == "ordering":
        return _ordering(claim, tuple(figures), {p.server for p in points
                                                 if throughput and p.client_bound})
    # a ratio or a value needs every figure exact: the gates of lab.analyse.verdicts.judge
    # before any ranking (client-bound, too few repetitions)
    samples = [Sample(f"{p.server} at {p.value}", p.rate.values,
                      throughput and p.client_bound) for p in points]
    gate = unjudgeable(list({s.label: s for s in samples}.values()))
    if gate is not None:
        return ClaimResult(claim, INCONCLUSIVE, gate.text, **shown,
                           client_limited=gate.kind == "not-comparable")
    return _interval(claim, shown["measured"])


def private_beside(claim: Claim, stats: dict[str, list[LevelStats]]) -> str:
    """An RSS claim's servers by private memory (smaps_rollup) at the same
    level: the ratio of a ratio claim, each figure of an ordering."""
    got: list[tuple[str, Spread | None]] = []
    for server in claim.servers:
        levels = stats.get(server, [])
        got.append((server, max(levels, key=lambda s: s.value).private_kb if levels else None))
    missing = [s for s, x in got if x is None]
    if missing:
        return f"private memory: unavailable ({', '.join(missing)})"
    figures = [(s, x) for s, x in got if x is not None]
    if claim.kind == "ratio":
        return f"private memory ratio {spread(_divide(figures[0][1], figures[1][1]))}"
    return "private memory " + " / ".join(f"{x.median / 1024:.1f}" for _, x in figures) + " MB"


def cpu_beside(claim: Claim, stats: dict[str, list[LevelStats]], found: ClaimResult) -> str:
    """Where req/s did not decide a claim between servers (inconclusive),
    their server CPU per request through the gate (lab.analyse.verdicts.efficiency), at
    the claim's level or else the highest level both measured."""
    if found.verdict != INCONCLUSIVE or len(claim.servers) < 2:
        return ""
    said = []
    for a, b in zip(claim.servers, claim.servers[1:]):
        la, lb = stats.get(a, []), stats.get(b, [])
        common = sorted({s.value for s in la} & {s.value for s in lb})
        if not common:
            continue
        at = claim.at if claim.at in common else common[-1]
        sa = next(s for s in la if s.value == at)
        sb = next(s for s in lb if s.value == at)
        said.append(f"at {at}: {efficiency(sa, sb, (a, b))[1]}")
    return "; ".join(said)


def _interval(claim: Claim, m: Spread) -> ClaimResult:
    assert claim.accept is not None and claim.published is not None
    lo, hi = claim.accept
    shown = f"[{num(m.lo)}–{num(m.hi)}]"
    window = f"{num(lo)}–{num(hi)} ({num(claim.published)} {claim.tolerance})"
    if lo <= m.lo and m.hi <= hi:
        return ClaimResult(claim, REPRODUCED, f"whole range {shown} inside {window}", m)
    if m.hi < lo or m.lo > hi:
        side = "below" if m.hi < lo else "above"
        return ClaimResult(claim, NOT_REPRODUCED, f"whole range {shown} {side} {window}", m)
    return ClaimResult(claim, INCONCLUSIVE,
                       f"noise: range {shown} straddles the edge of {window}", m)


def _ordering(claim: Claim, figures: tuple[tuple[str, Spread], ...],
              bound: set[str]) -> ClaimResult:
    """Each adjacent pair through the one verdict gate (lab.analyse.verdicts.judge):
    separated in the published order, or the opposite, or neither."""
    reversed_, overlap, unjudged = [], [], []
    for (a, x), (b, y) in zip(figures, figures[1:]):
        j = judge_spreads((a, x, a in bound), (b, y, b in bound), better="is above")
        if j.kind in RANKED:
            if j.winner != a:
                reversed_.append(f"{b} above {a}")
        elif j.kind in ("equivalent", "undecided"):
            overlap.append(f"{a} and {b} ({j.text})")
        else:
            unjudged.append(j.text)
    if reversed_:
        return ClaimResult(claim, NOT_REPRODUCED, "separated in the opposite order: "
                           + ", ".join(reversed_), order=figures)
    if unjudged:
        return ClaimResult(claim, INCONCLUSIVE, "; ".join(dict.fromkeys(unjudged)),
                           order=figures, client_limited=bool(bound))
    if overlap:
        return ClaimResult(claim, INCONCLUSIVE, "not separated: " + ", ".join(overlap),
                           order=figures)
    return ClaimResult(claim, REPRODUCED, "every adjacent pair separated in the published order",
                       order=figures)
