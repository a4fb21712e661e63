"""The decision rule for paired runs, the twin of lab/analyse/decide.py:
servers A and B started together as a start pair and measured at the same
moment, one figure each a pair, and one of the same three outcomes with a
stated false-alarm rate.

The start pair is the independent unit, and its figure is the log ratio
d = log A - log B: what the moment did to both servers (a busy host, a
noisy neighbour) cancels in it, so a pair sees a shift that the spread
between starts would hide from decide's two-sample test.

- better: the exact Wilcoxon signed-rank test rejects "no shift" at α
  (two-sided: α/2 a tail; sided "a": α in A's tail) AND the one-sample
  Hodges-Lehmann estimate of the shift is at least δ;
- equivalent: the 1-2α confidence interval of the shift lies inside ±δ
  (TOST); sided "a": the upper 1-α bound of "A better" is below δ;
- undecided, with the reason: too few pairs for α, an interval that spans
  δ, or a difference that is likely but may be smaller than δ.

Under "no difference" (an A/A run) A and B are exchangeable within a pair,
so d is symmetric about 0 whatever its distribution, bimodal included, and
the signs of the d are fair coins: the signed-rank test's error rate is
exact. Ties and zeros count against the claim (conservative: see
p_above). Pure arithmetic; the exact null distribution is computed once
per n by the counting recursion and cached.
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate

from lab.analyse import decide
from lab.analyse.decide import UNDECIDED, Decision, pct, ratio_pct

@lru_cache(maxsize=None)
def _counts(n: int) -> tuple[int, ...]:
    """counts[w]: how many of the 2^n sign patterns of ranks 1..n give
    W+ = w, the sum of the positive ranks. Recursion on the largest rank n:
    it is positive (W+ gains n) or negative (W+ gains nothing)."""
    if n == 0:
        return (1,)
    prev = _counts(n - 1)
    out = [0] * (n * (n + 1) // 2 + 1)
    for w, c in enumerate(prev):
        out[w] += c
        out[w + n] += c
    return tuple(out)


@lru_cache(maxsize=None)
def _cdf(n: int) -> tuple[float, ...]:
    """P(W+ <= w) under the null, w = 0..n(n+1)/2."""
    return tuple(c / 2 ** n for c in accumulate(_counts(n)))


def smallest_p(n: int) -> float:
    """The smallest one-sided p an exact signed-rank test of n pairs can give:
    every sign positive, 1 of the 2^n patterns."""
    return 0.5 ** n


def min_pairs(tail: float) -> int:
    """The fewest pairs for which the exact test can reach a one-sided tail
    of `tail` (two-sided α=1%: tail 0.5%, 8 pairs)."""
    for k in range(1, 200):
        if smallest_p(k) <= tail:
            return k
    return 200


@lru_cache(maxsize=None)
def _rank(n: int, tail: float) -> int:
    """k: the largest k >= 0 with P(W+ <= k-1) <= tail (0: no such bound)."""
    cdf = _cdf(n)
    k = 0
    while k < len(cdf) and cdf[k] <= tail + 1e-12:
        k += 1
    return k


def walsh(d: list[float]) -> list[float]:
    """The n(n+1)/2 Walsh averages (d_i + d_j)/2, i <= j, sorted. The count
    of positive ones is W+ (with no ties and no zeros), so the test, the
    estimate and the interval all read this one list."""
    return sorted((x + y) / 2 for i, x in enumerate(d) for y in d[i:])


def hodges_lehmann(w: list[float]) -> float:
    """The one-sample Hodges-Lehmann estimate of the shift: the median of the
    sorted Walsh averages `w` (robust: one wild pair moves it little)."""
    mid = len(w) // 2
    return w[mid] if len(w) % 2 else (w[mid - 1] + w[mid]) / 2


def interval(w: list[float], n: int, tail: float) -> tuple[float, float]:
    """The distribution-free confidence interval of the shift (Tukey; Moses):
    order statistics k and N+1-k of the N = n(n+1)/2 sorted Walsh averages
    `w`, k from the exact critical value of W+, each tail at most `tail`;
    infinite where the pairs are too few."""
    k = _rank(n, tail)
    if k == 0:
        return -math.inf, math.inf
    return w[k - 1], w[len(w) - k]


def p_above(w: list[float], n: int) -> float:
    """One-sided exact p of "shifted above 0": P(W+ >= u) under the null,
    u the number of Walsh averages strictly above 0. A Walsh average of
    exactly 0 (a zero d, or two d of one size and opposite signs) counts
    against the claim: breaking every such tie at random gives a statistic
    with exactly the null distribution that is never below u, so the p is
    never below the exact one (conservative)."""
    u = len(w) - bisect_right(w, 0.0)
    return _cdf(n)[len(w) - u]          # P(W+ >= u) = P(W+ <= N-u): symmetry


def p_below(w: list[float], n: int) -> float:
    """One-sided exact p of "shifted below 0", as p_above with the signs
    turned: Walsh averages strictly below 0, a 0 against the claim."""
    v = bisect_left(w, 0.0)
    return _cdf(n)[len(w) - v]


def decide_paired(a: tuple[float, ...] | list[float], b: tuple[float, ...] | list[float], *,
                  alpha: float, delta_pct: float, higher_is_better: bool = True,
                  sided: str = "two") -> Decision:
    """A against B, pair i of each measured together, by the rule above (the
    Decision says "N pairs")."""
    return replace(_decide(a, b, higher_is_better=higher_is_better, alpha=alpha,
                           delta_pct=delta_pct, sided=sided), pairs=True)


def _decide(a: tuple[float, ...] | list[float], b: tuple[float, ...] | list[float], *,
            alpha: float, delta_pct: float, higher_is_better: bool = True,
            sided: str = "two") -> Decision:
    """A against B by the rule above, pair i of `a` measured with pair i of
    `b`. `sided`: "two" (either may be better: α/2 a tail), or "a" (only
    "A better" is asked: α in that tail). Decision.starts is (n, n)."""
    if len(a) != len(b):
        raise ValueError(f"paired figures need one of each side a pair: "
                         f"{len(a)} of A, {len(b)} of B")
    n = len(a)
    la, lb = decide.logs(list(a)), decide.logs(list(b))
    if la is None or lb is None or n == 0:
        return Decision(UNDECIDED, None, 0.0, -math.inf, math.inf, 1.0, alpha, delta_pct,
                        (n, n), "a figure of 0 or less has no ratio", why=decide.NO_RATIO)
    turn = 1.0 if higher_is_better else -1.0
    w = walsh([turn * (x - y) for x, y in zip(la, lb)])
    est = hodges_lehmann(w)
    tail = alpha / 2 if sided == "two" else alpha
    lo, hi = interval(w, n, tail)
    p_a, p_b = p_above(w, n), p_below(w, n)
    p = min(1.0, 2 * min(p_a, p_b)) if sided == "two" else p_a
    est_pct, lo_pct, hi_pct = ratio_pct(est), ratio_pct(lo), ratio_pct(hi)
    d = Decision(UNDECIDED, None, est_pct, lo_pct, hi_pct, p, alpha, delta_pct, (n, n), "")
    if smallest_p(n) > tail:
        least = smallest_p(n) * (2 if sided == "two" else 1)
        return replace(d, reason=f"too few pairs: {n} pairs cannot reach α="
                       f"{pct(100 * alpha)}% (the smallest p is {least:.2g}); "
                       f"{min_pairs(tail)} pairs can", why=decide.TOO_FEW, need=min_pairs(tail))
    return decide.settle(d, est, p_a, p_b, tail, sided, interval(w, n, alpha),
                         "signed-rank test", "pairs")
