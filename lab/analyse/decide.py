"""The lab's decision rule: two sets of server starts, one figure each, and
one of three outcomes with a stated false-alarm rate.

- better: the exact Wilcoxon-Mann-Whitney test rejects "no shift" at α
  (two-sided: α/2 a tail; one-sided for the regression gate) AND the
  Hodges-Lehmann estimate of the shift is at least δ;
- equivalent: the 1-2α confidence interval of the shift lies inside ±δ
  (two one-sided tests, TOST); one-sided (the regression gate): the upper
  1-α bound of "A better" is below δ (non-inferiority: B no worse than δ);
- undecided, with the reason: too few starts for α, or an interval that
  spans δ.

The start (a fresh server start, one repetition) is the independent unit;
the figures are compared as logarithms, so a shift is a ratio. Under "no
difference" (an A/A comparison) the starts of both sides are exchangeable
whatever their distribution, bimodal included, so the rank test's error
rate is exact. Ties are counted against the claim (conservative). The
method and its arithmetic: docs/methodology.md.

Pure arithmetic: α and δ are arguments (their defaults and how they are
split: lab.analyse.policy); the exact null distribution is computed once per (m, n)
by the counting recursion and cached.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate

BETTER, EQUIVALENT, UNDECIDED = "better", "equivalent", "undecided"
# why an outcome was reached, as a fact (Decision.why; its words: Decision.reason)
NO_RATIO = "no-ratio"          # a figure of 0 or less
TOO_FEW = "too-few"            # the starts (pairs) cannot reach α: `need` can
REJECTS = "rejects"            # better: the test rejects and the estimate is at least δ
UPPER = "upper-bound"          # equivalent, one side asked: the upper bound below δ
INSIDE = "inside"              # equivalent: the 1-2α interval inside ±δ
SMALL = "small"                # undecided: a difference likely, maybe smaller than δ
SPANS = "spans"                # undecided: the interval spans ±δ


@lru_cache(maxsize=None)
def _counts(m: int, n: int) -> tuple[int, ...]:
    """counts[u]: how many of the C(m+n, m) orderings give U = u, where U
    counts pairs (x from the m side, y from the n side) with x > y.
    They are the coefficients of the Gaussian binomial [m+n choose m] in q,
    the product over i = 1..m of (1 - q^(n+i)) / (1 - q^i): each step is
    [n+i choose i], a polynomial, so the division is exact. One list of
    m·n+1 counts at a time (a recursion over every smaller m and n kept them
    all: 51 MB at 50 starts a side, and growing as the fourth power)."""
    poly = [1]
    for i in range(1, m + 1):
        grown = poly + [0] * (n + i)                # times (1 - q^(n+i))
        for k in range(n + i, len(grown)):
            grown[k] -= poly[k - n - i]
        for k in range(i, len(grown)):              # over (1 - q^i)
            grown[k] += grown[k - i]
        poly = grown[:i * n + 1]
    return tuple(poly)


@lru_cache(maxsize=None)
def _cdf(m: int, n: int) -> tuple[float, ...]:
    """P(U <= u) under the null, u = 0..mn."""
    counts = _counts(m, n)
    total = math.comb(m + n, m)
    return tuple(c / total for c in accumulate(counts))


def smallest_p(m: int, n: int) -> float:
    """The smallest one-sided p an exact rank test of m against n starts can give."""
    return 1 / math.comb(m + n, m)


@lru_cache(maxsize=None)
def _rank(m: int, n: int, tail: float) -> int:
    """k: the largest k >= 0 with P(U <= k-1) <= tail (0: no such bound)."""
    cdf = _cdf(m, n)
    k = 0
    while k < len(cdf) and cdf[k] <= tail + 1e-12:
        k += 1
    return k


def interval(diffs: list[float], m: int, n: int, tail: float) -> tuple[float, float]:
    """The distribution-free confidence interval of the shift (Hodges-Lehmann
    / Moses): order statistics k and mn+1-k of the m·n pairwise differences,
    each tail at most `tail`; infinite where the starts are too few."""
    k = _rank(m, n, tail)
    if k == 0:
        return -math.inf, math.inf
    return diffs[k - 1], diffs[m * n - k]


def p_greater(x: list[float], y: list[float]) -> float:
    """One-sided exact p of "x is shifted above y": P(U >= u) under the null,
    where a tie counts against x (conservative)."""
    m, n = len(x), len(y)
    u = sum(1 for a in x for b in y if a > b)
    cdf = _cdf(m, n)
    return 1.0 if u == 0 else 1.0 - cdf[u - 1]


@dataclass(frozen=True)
class Decision:
    """One comparison of side A against side B (A's figure over B's, as a
    ratio: on logs, A - B; for a cost, lower is better, the sign is turned
    so that a positive shift is always "A better")."""
    outcome: str              # better | equivalent | undecided
    a_better: bool | None     # better: which side
    estimate_pct: float       # Hodges-Lehmann: how much better A is than B, %
    lo_pct: float             # the 1-2α interval (two-sided: 1-α) of that, %
    hi_pct: float
    p: float                  # the test's p (two-sided: twice the smaller tail)
    alpha: float              # the α this decision was made at
    delta_pct: float
    starts: tuple[int, int]   # starts of A and of B it stood on
    reason: str               # undecided: why; else a short account (the words of `why`)
    pairs: bool = False       # start pairs (lab.analyse.paired): starts[0] pairs
    why: str = ""             # the reason as a fact: NO_RATIO, TOO_FEW, REJECTS, ...
    need: int = 0             # TOO_FEW: the starts (pairs) a side that can reach α

    def stated(self) -> str:
        """'α=1%, δ=5%, 5+5 starts' (start pairs: '10 pairs')"""
        n = f"{self.starts[0]} pairs" if self.pairs else \
            f"{self.starts[0]}+{self.starts[1]} starts"
        return f"α={pct(100 * self.alpha)}%, δ={self.delta_pct:g}%, {n}"


def pct(x: float) -> str:
    return f"{x:.2g}" if x < 1 else f"{x:g}"


def ratio_pct(log_shift: float) -> float:
    if log_shift == math.inf:
        return math.inf
    if log_shift == -math.inf:
        return -math.inf
    return 100 * (math.exp(log_shift) - 1)


def logs(values: tuple[float, ...] | list[float]) -> list[float] | None:
    """Log values, or None when one is not positive (no ratio)."""
    if any(v <= 0 for v in values):
        return None
    return [math.log(v) for v in values]


def decide(a: tuple[float, ...] | list[float], b: tuple[float, ...] | list[float], *,
           alpha: float, delta_pct: float, higher_is_better: bool = True,
           sided: str = "two") -> Decision:
    """A against B by the rule above. `sided`: "two" (either may be better:
    α/2 a tail), or "a" (only "A better" is asked: α in that tail, as the
    regression gate asks whether A was better than B)."""
    la, lb = logs(list(a)), logs(list(b))
    m, n = len(a), len(b)
    if la is None or lb is None or m == 0 or n == 0:
        return Decision(UNDECIDED, None, 0.0, -math.inf, math.inf, 1.0, alpha, delta_pct,
                        (m, n), "a figure of 0 or less has no ratio", why=NO_RATIO)
    if not higher_is_better:
        la, lb = [-v for v in la], [-v for v in lb]
    diffs = sorted(x - y for x in la for y in lb)
    mid = len(diffs) // 2
    est = diffs[mid] if len(diffs) % 2 else (diffs[mid - 1] + diffs[mid]) / 2
    tail = alpha / 2 if sided == "two" else alpha
    lo, hi = interval(diffs, m, n, tail)
    p_a, p_b = p_greater(la, lb), p_greater(lb, la)
    p = min(1.0, 2 * min(p_a, p_b)) if sided == "two" else p_a
    est_pct, lo_pct, hi_pct = ratio_pct(est), ratio_pct(lo), ratio_pct(hi)
    d = Decision(UNDECIDED, None, est_pct, lo_pct, hi_pct, p, alpha, delta_pct, (m, n), "")
    if smallest_p(m, n) > tail:
        need = min_starts(tail)
        least = smallest_p(m, n) * (2 if sided == "two" else 1)
        return replace(d, reason=f"too few starts: {m} against {n} cannot reach α="
                       f"{pct(100 * alpha)}% (the smallest p is {least:.2g}); "
                       f"{need} against {need} can", why=TOO_FEW, need=need)
    return settle(d, est, p_a, p_b, tail, sided, interval(diffs, m, n, alpha), "rank test",
                  "starts")


def settle(d: Decision, est: float, p_a: float, p_b: float, tail: float, sided: str,
           tost: tuple[float, float], test: str, more: str) -> Decision:
    """The outcome of a decision whose test could reach its tail (`d`: its
    figures, undecided): better when the test rejects (p_a, p_b: one-sided
    p of each side) and the log estimate `est` is at least δ; equivalent when
    the 1-2α interval `tost` (logs) lies inside ±δ (sided "a": its upper
    bound below δ); else undecided with the reason. Shared by this rule and
    its twin for start pairs (lab.analyse.paired): `test` names the test,
    `more` what more of decides ("starts", "pairs")."""
    delta = math.log1p(d.delta_pct / 100)
    a_wins = p_a <= tail and est >= delta
    b_wins = sided == "two" and p_b <= tail and -est >= delta
    if a_wins or b_wins:
        return replace(d, outcome=BETTER, a_better=a_wins, reason=f"the {test} rejects at α "
                       "and the estimate is at least δ", why=REJECTS)
    lo2, hi2 = tost
    if sided == "a" and hi2 < delta:              # one side asked: A no better than δ
        return replace(d, outcome=EQUIVALENT, lo_pct=ratio_pct(lo2), hi_pct=ratio_pct(hi2),
                       reason=f"the {pct(100 - 100 * d.alpha)}% upper bound is below "
                       f"+{d.delta_pct:g}%", why=UPPER)
    if -delta < lo2 and hi2 < delta:
        return replace(d, outcome=EQUIVALENT, lo_pct=ratio_pct(lo2), hi_pct=ratio_pct(hi2),
                       reason=f"the {pct(100 - 200 * d.alpha)}% interval lies inside "
                       f"±{d.delta_pct:g}%", why=INSIDE)
    if (p_a <= tail or (sided == "two" and p_b <= tail)) and abs(est) < delta:
        return replace(d, reason=f"a difference is likely, but it may be smaller than "
                       f"δ={d.delta_pct:g}%", why=SMALL)
    return replace(d, reason=f"the interval {span(d.lo_pct, d.hi_pct)} spans "
                   f"±{d.delta_pct:g}%: more {more} decide", why=SPANS)


def span(lo: float, hi: float) -> str:
    def one(x: float) -> str:
        return "-∞" if x == -math.inf else "+∞" if x == math.inf else f"{x:+.1f}%"
    return f"[{one(lo)}, {one(hi)}]"


def min_starts(tail: float, other: int | None = None) -> int:
    """The fewest starts a side (both sides equal, or against `other` starts)
    for which an exact test can reach a one-sided tail of `tail`."""
    for k in range(1, 200):
        if smallest_p(k, other if other is not None else k) <= tail:
            return k
    return 200
