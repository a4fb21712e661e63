"""The verdict, in one place: `judge`, the one function that compares two
samples (through the lab's decision rule, lab.analyse.decide, the client-bound sides
and failed requests taken into account; "the gate" is make compare's,
lab.analyse.gate, which calls it), and a run's verdicts built on it:
two servers at one level (`verdict`, with server CPU per request where
req/s cannot rank them), one verdict a pair across the levels (`primary`),
and the run's families of them (`primaries`, `verdicts`).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from itertools import combinations

from lab.analyse import decide, policy
from lab.analyse.policy import HOST_FLAGS, LookSchedule
from lab.analyse.metrics import (FAILED_SHARE_PCT, MIN_REPS_FOR_VERDICT, LevelStats, Spread,
                                 unranked_text)


# --------------------------------------------------------------------------- the judge

@dataclass(frozen=True)
class Sample:
    """One side of a comparison: a figure over repetitions (one value per
    repetition), and whether the client, not the server, was the limit."""
    label: str
    values: tuple[float, ...]
    client_bound: bool = False
    failed_pct: float = 0.0      # the worst repetition's failed requests, %: over
                                 # FAILED_SHARE_PCT the figure is not ranked


@dataclass(frozen=True)
class Judgement:
    """What the gate says of two samples."""
    kind: str            # better | better-at-least | equivalent | undecided | not-comparable |
                         # missing
    winner: str | None   # better and better-at-least: the better side's label
    loser: str | None
    percent: float | None   # how much better the winner is (lower is better: how much
                            # higher the loser's figure is): the Hodges-Lehmann estimate
    text: str
    alpha: float | None = None        # the false-alarm rate the rule was applied at
    delta_pct: float | None = None    # the smallest effect that counts
    starts: tuple[int, int] | None = None   # starts of each side it stood on
    decision: decide.Decision | None = None


RANKED = ("better", "better-at-least")
UNDECIDED = "undecided"


def too_few(n: int) -> str:
    return (f"inconclusive ({n} repetition{'s' * (n != 1)}; "
            f"REPEAT={MIN_REPS_FOR_VERDICT} or more shows the spread)")


def bound_text(labels: list[str], extra: str = "") -> str:
    return f"not comparable (client-bound: {', '.join(labels)}{extra})"


def unjudgeable(samples: list[Sample], min_reps: int = MIN_REPS_FOR_VERDICT
                ) -> Judgement | None:
    """The gates before any ranking, for figures that must all be exact (a
    ratio, an interval): a client-bound figure, too few repetitions, a figure
    not measured. None when they all pass."""
    def no(kind: str, text: str) -> Judgement:
        return Judgement(kind, None, None, None, text)
    empty = [s.label for s in samples if not s.values]
    if empty:
        return no("missing", f"not measured ({', '.join(empty)})")
    bound = [s.label for s in samples if s.client_bound]
    if bound:
        return no("not-comparable", bound_text(bound))
    n = min(len(s.values) for s in samples)
    if n < min_reps:
        return no("inconclusive", too_few(n))
    return None


def judge(a: Sample, b: Sample, *, higher_is_better: bool = True,
          better: str = "is faster than", alpha: float = policy.ALPHA,
          delta_pct: float = policy.DELTA_PCT, sided: str = "two") -> Judgement:
    """The one judge: is one sample better than the other, by the
    lab's decision rule (lab.analyse.decide: an exact rank test of the starts
    at α, an effect of at least δ)? Used by a run's verdicts, `make
    compare`, the claims, cost and noise (`higher_is_better=False` for a
    cost or a latency; `better` is the phrase between the labels; `sided`
    "a": only "A better than B" is asked, as the regression gate does).

    In this order: a side without values is missing; more than
    FAILED_SHARE_PCT failed requests are not ranked; a client-bound figure
    is a bound, not a measurement: when higher is better it is a lower bound
    of the server's, so "better" still holds when only the better side was
    client-bound (better-at-least), and otherwise the pair is not
    comparable; then the rule: better, equivalent within ±δ, or undecided
    with its reason."""
    def no(kind: str, text: str) -> Judgement:
        return Judgement(kind, None, None, None, text, alpha, delta_pct,
                         (len(a.values), len(b.values)))
    empty = [s.label for s in (a, b) if not s.values]
    if empty:
        return no("missing", f"not measured ({', '.join(empty)})")
    failing = [s for s in (a, b) if s.failed_pct > FAILED_SHARE_PCT]
    if failing:
        said = ", ".join(f"{s.label}: {s.failed_pct:.1f}% of requests failed" for s in failing)
        return no("not-comparable", f"not comparable ({said}; more than {FAILED_SHARE_PCT:g}% "
                  "failed is not ranked: see what failed)")
    d = decide.decide(a.values, b.values, higher_is_better=higher_is_better, alpha=alpha,
                      delta_pct=delta_pct, sided=sided)
    return from_decision(a, b, d, higher_is_better, better)


def from_decision(a: Sample, b: Sample, d: decide.Decision, higher_is_better: bool,
                  better: str) -> Judgement:
    """A decision as a judgement, the client-bound sides taken into account."""
    def j(kind: str, text: str, winner: str | None = None, loser: str | None = None,
          percent: float | None = None) -> Judgement:
        return Judgement(kind, winner, loser, percent, text, d.alpha, d.delta_pct, d.starts, d)
    bound = [s.label for s in (a, b) if s.client_bound]
    if d.outcome == decide.BETTER:
        (first, fb), (second, sb) = ((a.label, a.client_bound), (b.label, b.client_bound)) \
            if d.a_better else ((b.label, b.client_bound), (a.label, a.client_bound))
        est, lo, hi = (d.estimate_pct, d.lo_pct, d.hi_pct) if d.a_better else \
            (ratio_flip(d.estimate_pct), ratio_flip(d.hi_pct), ratio_flip(d.lo_pct))
        said = f"{decide.span(lo, hi)}; {d.stated()}"
        if sb or (fb and not higher_is_better):
            return j("not-comparable", bound_text(bound, f", {said}"))
        if fb:
            return j("better-at-least", f"{first} {better} {second} by at least {est:.0f}% "
                     f"({said}; {first} was client-bound, so its figure is a lower bound)",
                     first, second, est)
        return j("better", f"{first} {better} {second} by {est:.0f}% ({said})",
                 first, second, est)
    if bound:
        return j("not-comparable", bound_text(bound, f"; {d.outcome}: {d.reason}"))
    if d.outcome == decide.EQUIVALENT and d.why == decide.UPPER:
        return j("equivalent", f"{b.label} is no worse than {a.label} by {d.delta_pct:g}% or "
                 f"more ({a.label} better by {decide.span(d.lo_pct, d.hi_pct)}; {d.stated()})")
    if d.outcome == decide.EQUIVALENT:
        return j("equivalent", f"equivalent within ±{d.delta_pct:g}% "
                 f"({a.label} better by {decide.span(d.lo_pct, d.hi_pct)}; {d.stated()})")
    why = d.reason if d.why != decide.SPANS else \
        (f"{a.label} better by {decide.span(d.lo_pct, d.hi_pct)}, which spans "
         f"±{d.delta_pct:g}%: more starts decide")
    return j(UNDECIDED, f"undecided ({why}; {d.stated()})")


def ratio_flip(p: float) -> float:
    """A's advantage over B in %, said as B's over A."""
    if p <= -100:
        return float("inf")
    return 100 * (1 / (1 + p / 100) - 1) if p != float("inf") else -100.0


Side = tuple[str, Spread, bool]      # label, figure over repetitions, client-bound


def judge_spreads(a: Side, b: Side, *, higher_is_better: bool = True,
                  better: str = "is faster than", alpha: float = policy.ALPHA,
                  delta_pct: float = policy.DELTA_PCT) -> Judgement:
    """`judge` on figures summed up as spreads: the rule needs the values of
    each start (a ratio of two figures has none: undecided)."""
    (la, x, ba), (lb, y, bb) = a, b
    if not x.values or not y.values:
        return Judgement(UNDECIDED, None, None, None, "undecided (no value of each start)")
    return judge(Sample(la, x.values, ba), Sample(lb, y.values, bb),
                 higher_is_better=higher_is_better, better=better, alpha=alpha,
                 delta_pct=delta_pct)


# --------------------------------------------------------------------------- a run's verdicts

@dataclass(frozen=True)
class Verdict:
    value: int       # the level; a primary verdict: the first of `levels`
    a: str
    b: str           # a is the faster one when kind is faster or faster-at-least
    kind: str        # a Judgement's kind, better read as faster
    percent: float | None
    text: str
    # where req/s (or p99) cannot rank the pair: server CPU per request,
    # through the same gate (lower is better); None where it was not needed
    cpu: Judgement | None = None
    cpu_text: str = ""
    wire_text: str = ""   # the two servers' responses differ in size (lab.analyse.responses)
    cost_text: str = ""   # beside the CPU verdict: make cost of the same builds (lab.analyse.costlink)
    alpha: float | None = None       # the false-alarm rate it was decided at
    delta_pct: float | None = None   # the smallest effect that counts
    starts: tuple[int, int] | None = None   # the starts of a and of b it stood on
    levels: tuple[int, ...] = ()     # a primary verdict: the levels it is taken across
    metric: str = ""                 # a primary verdict: what it ranks by
    paired: str = ""                 # decided on start pairs (PAIRED: duet, rmit)
    differs_at: tuple[int, ...] = ()  # "equivalent" vetoed: the levels whose own verdict differs
    seat: int = 0                    # paired "not-comparable": the seat that favoured its
                                     # occupant (1 or 2; 0: the seats were balanced)
    seat_pct: float | None = None    # ... by about this much, % (pairverdict.seat_effect)

    def said(self) -> str:
        """The verdict in full: req/s, then CPU per request (with instructions per
        request beside, when known), then the bytes."""
        cpu = f"{self.cpu_text} [{self.cost_text}]" if self.cpu_text and self.cost_text \
            else self.cpu_text
        return "; ".join(x for x in (self.text, cpu, self.wire_text) if x)

    def rule(self) -> str:
        """'α=1%, δ=5%, 5+5 starts', or a dash where the rule did not run."""
        if self.alpha is None or self.starts is None or self.delta_pct is None:
            return "–"
        n = f"{self.starts[0]} pairs ({self.paired})" if self.paired else \
            f"{self.starts[0]}+{self.starts[1]} starts"
        return f"α={decide.pct(100 * self.alpha)}%, δ={self.delta_pct:g}%, {n}"

    def where(self) -> str:
        """The level column: the level, or a primary verdict's levels."""
        if not self.levels:
            return str(self.value)
        return f"{self.levels[0]}–{self.levels[-1]}" if len(self.levels) > 2 else \
            ", ".join(map(str, self.levels))


def samples(a: LevelStats, b: LevelStats) -> tuple[Sample, Sample, bool, str]:
    """Two servers' figures at one level, for the gate: requests/s (closed
    loop), or p99 latency at the same offered rate (open loop, lower is better)."""
    if a.open_loop:
        def p99(s: LevelStats) -> tuple[float, ...]:
            return s.p99_ms.values if s.p99_ms is not None else ()
        return (Sample(a.server, p99(a), a.client_bound, a.failed_pct),
                Sample(b.server, p99(b), b.client_bound, b.failed_pct),
                False, "has lower p99 latency than")
    return (Sample(a.server, a.rate.values, a.client_bound, a.failed_pct),
            Sample(b.server, b.rate.values, b.client_bound, b.failed_pct), True, "is faster than")


CPU_PHRASE = "needs less server CPU per request than"


def cpu_values(s: LevelStats) -> tuple[float, ...]:
    """Server CPU µs per request of each repetition (a repetition that
    completed nothing has none)."""
    return tuple(v for v in s.cpu_us_per_req.values if v > 0)


def needs_cpu_verdict(kind: str, a: LevelStats, b: LevelStats) -> bool:
    """Where req/s cannot rank a pair: the gate did not rank it (client-bound,
    equivalent, undecided), or either side ran on a busy host."""
    return kind not in RANKED + ("faster", "faster-at-least", "slower", "slower-at-least") or \
        any(f in x.flags for x in (a, b) for f in HOST_FLAGS)


def efficiency(a: LevelStats, b: LevelStats, labels: tuple[str, str] | None = None,
               alpha: float = policy.ALPHA, delta_pct: float = policy.DELTA_PCT,
               sided: str = "two") -> tuple[Judgement, str]:
    """Server CPU per request of two levels through the gate (lower is
    better): it counts the server's own user+kernel time per completed
    request, so a client that was the limit does not make it a bound (the
    server simply idled more). Returns the judgement and its sentence:
    'ada-mini needs 39% less server CPU per request than aws (41 vs 67 µs,
    [...]; α=1%, δ=5%, 5+5 starts)'."""
    la, lb = labels or (a.server, b.server)
    j = judge(Sample(la, cpu_values(a)), Sample(lb, cpu_values(b)),
              higher_is_better=False, better=CPU_PHRASE, alpha=alpha, delta_pct=delta_pct,
              sided=sided)
    busy = sorted({f for x in (a, b) for f in HOST_FLAGS if f in x.flags})
    caveat = (f" ({' and '.join(busy)}: it counts the server's own CPU time only)"
              if busy else "")
    if j.kind != "better" or j.winner is None or j.percent is None or j.decision is None:
        return j, f"server CPU per request: {j.text}"
    win, lose = (a, b) if j.winner == la else (b, a)
    w, lo = statistics.median(cpu_values(win)), statistics.median(cpu_values(lose))
    less = 100 * (1 - 1 / (1 + j.percent / 100))
    kernel = f", of which kernel {win.cpu_sys_us_per_req.median:,.1f} vs " \
        f"{lose.cpu_sys_us_per_req.median:,.1f}" \
        if win.cpu_sys_us_per_req is not None and lose.cpu_sys_us_per_req is not None else ""
    return j, (f"{j.winner} needs {less:.0f}% less server CPU per request than {j.loser} "
               f"({w:,.1f} vs {lo:,.1f} µs{kernel}; {j.decision.stated()}){caveat}")


def verdict(a: LevelStats, b: LevelStats, alpha: float = policy.ALPHA,
            delta_pct: float = policy.DELTA_PCT) -> Verdict:
    """Two servers at one level, through the gate; where req/s (or p99)
    cannot rank them, server CPU per request too."""
    unranked = unranked_text([a, b])
    if unranked:            # a level that is no whole, honest level is not ranked at all
        return Verdict(a.value, a.server, b.server, "not-comparable", None, unranked)
    sa, sb, higher, phrase = samples(a, b)
    j = judge(sa, sb, higher_is_better=higher, better=phrase, alpha=alpha, delta_pct=delta_pct)
    if j.kind == "missing":
        j = Judgement(UNDECIDED, None, None, None, "undecided (no latency percentiles)",
                      alpha, delta_pct, j.starts)
    cpu, cpu_text = efficiency(a, b, alpha=alpha, delta_pct=delta_pct) \
        if needs_cpu_verdict(j.kind, a, b) else (None, "")
    rule = dict(alpha=j.alpha, delta_pct=j.delta_pct, starts=j.starts)
    if j.winner is not None and j.loser is not None:     # a run's verdicts are about speed
        starts = j.starts if j.winner == a.server or j.starts is None else \
            (j.starts[1], j.starts[0])
        return Verdict(a.value, j.winner, j.loser, j.kind.replace("better", "faster"),
                       j.percent, j.text, cpu, cpu_text, alpha=j.alpha,
                       delta_pct=j.delta_pct, starts=starts)
    return Verdict(a.value, a.server, b.server, j.kind, j.percent, j.text, cpu, cpu_text,
                   **rule)  # type: ignore[arg-type]


def verdict_values(stats: dict[str, list[LevelStats]], asked: tuple[int, ...]) -> list[int]:
    """The levels to compare at: those asked for (VERDICT_AT), else every level
    measured. Never levels picked from the figures being judged (each server's
    peak, say): a level chosen because its repetitions came out high would be
    judged by the same repetitions (the winner's curse)."""
    if asked:
        return sorted(asked)
    return sorted({x.value for s in stats.values() for x in s})


def by_start(levels: list[LevelStats], at: list[int], metric: str, upto: int | None = None
             ) -> dict[int, float]:
    """Start (rep): the mean log figure over the levels `at`, for the starts
    that measured every one of them (the first `upto` starts only)."""
    import math
    per: dict[int, list[float]] = {}
    for s in levels:
        if s.value not in at:
            continue
        vals = s.rate.values if metric == "rate" else s.cpu_us_per_req.values if \
            metric == "cpu" else (s.p99_ms.values if s.p99_ms is not None else ())
        if len(vals) != len(s.reps):
            continue
        for rep, v in zip(s.reps, vals):
            if v > 0 and (upto is None or rep <= upto):
                per.setdefault(rep, []).append(math.log(v))
    return {rep: sum(xs) / len(xs) for rep, xs in per.items() if len(xs) == len(at)}




def primary(name_a: str, la: list[LevelStats], name_b: str, lb: list[LevelStats],
            at: list[int], alpha: float, delta_pct: float, looks: LookSchedule) -> Verdict:
    """One verdict for a pair across the levels `at`: each start's mean log
    figure over them is one value (a start covers every level), by req/s (or
    p99 in open loop) over the levels both measured cleanly (no client-bound,
    host-busy or steal, failures within FAILED_SHARE_PCT), else by server CPU
    per request over every level both measured. REPEAT=auto: the looks are
    replayed (the first k starts of each side, k from the first look on) and
    the verdict is the first look's that decided."""
    import math
    ba, bb = {s.value: s for s in la}, {s.value: s for s in lb}
    both = [v for v in at if v in ba and v in bb]
    open_loop = any(s.open_loop for s in la + lb)
    clean = [v for v in both if all(policy.is_clean(x.flags, "sequential") for x in (ba[v], bb[v]))
             and max(ba[v].failed_pct, bb[v].failed_pct) <= FAILED_SHARE_PCT]
    metric, used = ("p99" if open_loop else "rate", clean) if clean else ("cpu", both)
    higher = metric == "rate"
    phrase = {"rate": "is faster than", "p99": "has lower p99 latency than",
              "cpu": CPU_PHRASE}[metric]
    what = {"rate": "requests/s", "p99": "p99 latency", "cpu": "server CPU per request"}[metric]
    note = "" if metric != "cpu" else \
        " (req/s is client-bound, host-busy or failing at every level: CPU per request instead)"
    if not used:
        return Verdict(at[0] if at else 0, name_a, name_b, "missing", None,
                       "not measured at a common level", levels=tuple(at), metric=what)
    most = max([0] + [r for s in la + lb for r in s.reps])
    j: Judgement | None = None
    for k in looks.at(most):
        xa, xb = by_start(la, used, metric, k), by_start(lb, used, metric, k)
        a_alpha = looks.alpha(alpha, k)
        j = judge(Sample(name_a, tuple(math.exp(v) for v in xa.values())),
                  Sample(name_b, tuple(math.exp(v) for v in xb.values())),
                  higher_is_better=higher, better=phrase, alpha=a_alpha, delta_pct=delta_pct)
        if j.kind in RANKED + ("equivalent",):
            break
    assert j is not None
    text = f"across {len(used)} level{'s' * (len(used) != 1)} by {what}: {j.text}{note}"
    lv = tuple(used)
    if j.winner is not None and j.loser is not None:
        starts = j.starts if j.winner == name_a or j.starts is None else \
            (j.starts[1], j.starts[0])
        return Verdict(lv[0], j.winner, j.loser, j.kind.replace("better", "faster"), j.percent,
                       text, alpha=j.alpha, delta_pct=j.delta_pct, starts=starts, levels=lv,
                       metric=what)
    return Verdict(lv[0], name_a, name_b, j.kind, j.percent, text, alpha=j.alpha,
                   delta_pct=j.delta_pct, starts=j.starts, levels=lv, metric=what)


def primaries(stats: dict[str, list[LevelStats]], at: list[int], alpha: float = policy.ALPHA,
              delta_pct: float = policy.DELTA_PCT, looks: LookSchedule = LookSchedule()
              ) -> list[Verdict]:
    """The run's primary verdicts: one a pair, the family of the run (each at
    α over the number of pairs, Bonferroni)."""
    pairs = list(combinations(stats, 2))
    each = policy.family_alpha(alpha, len(pairs))
    return [primary(a, stats[a], b, stats[b], at, each, delta_pct, looks) for a, b in pairs]


def starts_needed(servers: int, alpha: float = policy.ALPHA, looks: LookSchedule = LookSchedule(),
                  paired_run: bool = False) -> int | None:
    """The fewest starts a side (start pairs, in a paired run) from which the
    run's primary verdicts can decide at all: the family of every pair of
    `servers` servers, each at α over their number (`primaries`), two-sided,
    at the look made after that many starts (REPEAT=auto: that look's share
    of α). None: no look up to REPEAT_MAX can. The plan line and the
    few-repetitions warning print it; the rule itself says it pair by pair."""
    from lab.analyse import paired
    each = policy.family_alpha(alpha, servers * (servers - 1) // 2)

    def smallest(k: int) -> float:
        return paired.smallest_p(k) if paired_run else decide.smallest_p(k, k)
    start = looks.opening()                  # start pairs: the first look, past REPEAT_MIN
    if looks.first is None or start is None:
        return paired.min_pairs(each / 2) if paired_run else decide.min_starts(each / 2)
    for k in range(start, max(start, looks.last or 0) + 1):
        if smallest(k) <= looks.alpha(each, k) / 2:
            return k
    return None


def verdicts(stats: dict[str, list[LevelStats]], at: list[int], alpha: float = policy.ALPHA,
             delta_pct: float = policy.DELTA_PCT, looks: LookSchedule = LookSchedule()
             ) -> list[Verdict]:
    """Every pair of servers at every level in `at` (in the order given): the
    secondary verdicts, one family (req/s and CPU per request of every pair at
    every level, each at α over their number: Bonferroni)."""
    pairs = list(combinations(stats, 2))
    most = max([1] + [len(x.rate.values) for s in stats.values() for x in s])
    each = policy.family_alpha(looks.alpha(alpha, most), 2 * len(pairs) * max(1, len(at)))
    out = []
    for value in at:
        for a, b in pairs:
            sa = next((s for s in stats[a] if s.value == value), None)
            sb = next((s for s in stats[b] if s.value == value), None)
            if sa is None or sb is None:
                out.append(Verdict(value, a, b, "missing", None,
                                   f"not measured at {value} ({a if sa is None else b})"))
            else:
                out.append(verdict(sa, sb, each, delta_pct))
    return out
