"""lab.analyse.paired, the decision rule for paired runs: its exact
arithmetic (the signed-rank distribution, the Hodges-Lehmann estimate and
interval, ties and zeros), and its false-alarm rate, power and equivalence
simulated on start pairs (seeded, pure arithmetic): a log ratio N(0, 2%) a
pair, and bimodal busy-host pairs (both servers of a pair see the same busy
moment, aws at c=4's 9.8k to 30.7k req/s, and in a third of the pairs one
of them, either, loses 40%; figures rounded to 100 req/s, so ties and zeros
occur)."""
from __future__ import annotations

import math
import random
import statistics
from itertools import product

import pytest

from lab.analyse import decide, paired, policy

pytestmark = pytest.mark.unit

ALPHA = policy.ALPHA
SIMS = 10_000
BUSY_AWS_C4 = (9_800.0, 11_900.0, 16_500.0, 21_700.0, 28_900.0, 30_700.0)


def pair_rule(a: list[float], b: list[float], **kw: object) -> decide.Decision:
    """paired.decide_paired at the policy's α and δ unless given."""
    return paired.decide_paired(a, b, **{"alpha": ALPHA, "delta_pct": policy.DELTA_PCT, **kw})  # type: ignore[arg-type]


def rule(a: list[float], b: list[float], **kw: object) -> decide.Decision:
    """decide.decide at the policy's α and δ unless given."""
    return decide.decide(a, b, **{"alpha": ALPHA, "delta_pct": policy.DELTA_PCT, **kw})  # type: ignore[arg-type]


def within(sims: int, rate: float) -> float:
    """The largest count a true rate `rate` gives with 3 standard errors."""
    return sims * (rate + 3 * math.sqrt(rate * (1 - rate) / sims))


# ---------------------------------------------------------------- exact arithmetic

def test_the_counts_are_the_2_to_the_n_sign_patterns() -> None:
    for n in range(21):
        assert sum(paired._counts(n)) == 2 ** n
    n = 8
    seen = [0] * (n * (n + 1) // 2 + 1)
    for signs in product((0, 1), repeat=n):
        seen[sum(rank for rank, up in zip(range(1, n + 1), signs) if up)] += 1
    assert tuple(seen) == paired._counts(n)


def test_known_critical_values() -> None:
    # n=10: the one-sided 1% critical value of the tables is W+ <= 5 (10/1024)
    assert paired._cdf(10)[5] == pytest.approx(0.0098, abs=1e-4)
    assert paired._cdf(10)[6] > 0.01
    # n=8: two-sided, the smallest p is 2/256 (every sign the same)
    assert 2 * paired.smallest_p(8) == 2 / 256
    assert paired.min_pairs(ALPHA / 2) == 8 and paired.min_pairs(ALPHA) == 7
    assert paired.min_pairs(paired.smallest_p(12)) == 12


def test_the_estimate_is_the_median_of_the_walsh_averages() -> None:
    # Walsh averages of 1,2,3,4,100: 1 1.5 2 2 2.5 2.5 3 [3] 3.5 4 50.5 51 52 52 100;
    # the mean is 22, the estimate 3
    w = paired.walsh([1.0, 2.0, 3.0, 4.0, 100.0])
    assert len(w) == 15 and paired.hodges_lehmann(w) == 3.0
    assert paired.hodges_lehmann(paired.walsh([1.0, 2.0, 4.0])) == 2.25   # 2 and 2.5


def test_the_interval_for_six_pairs_by_hand() -> None:
    # n=6: P(W+ <= 2) = 3/64 = 0.047, P(W+ <= 3) = 5/64: at a 5% tail k = 3, the
    # 3rd and the 19th of the 21 Walsh averages of 1..6 (1, 1.5, 2, 2, ...: 2 and 5)
    w = paired.walsh([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert paired.interval(w, 6, 0.05) == (2.0, 5.0)
    assert paired.hodges_lehmann(w) == 3.5
    assert paired.interval(w, 6, 0.02) == (1.0, 6.0)               # 1/64: min and max
    assert paired.interval(w, 6, 0.01) == (-math.inf, math.inf)    # 1/64 > 1%


def test_zeros_and_ties_count_against_the_claim() -> None:
    up = [float(v) for v in range(1, 9)]
    assert paired.p_above(paired.walsh(up), 8) == 1 / 256
    assert paired.p_below(paired.walsh(up), 8) == 1.0
    # a zero in place of the smallest: as if it were negative, P(W+ >= 35) = 2/256
    assert paired.p_above(paired.walsh([0.0, *up[1:]]), 8) == 2 / 256
    assert paired.p_below(paired.walsh([0.0, *up[1:]]), 8) == 1.0
    # 1 and -1: W+ is 1 or 2 with the tie broken, 1 counted: P(W+ >= 1) = 3/4
    assert paired.p_above(paired.walsh([1.0, -1.0]), 2) == 0.75


def test_with_ties_and_zeros_the_p_is_never_below_the_sign_flips() -> None:
    """Under the null the signs of the pairs are fair coins: over all 2^n sign
    patterns of tied magnitudes with a zero, the share at least as far out as
    each pattern is never above that pattern's p (conservative)."""
    sizes = [0.0, 0.01, 0.01, 0.02, 0.02, 0.02, 0.03, 0.05]
    n = len(sizes)
    ups = []
    for signs in product((1.0, -1.0), repeat=n):
        w = paired.walsh([s * v for s, v in zip(signs, sizes)])
        ups.append((sum(1 for x in w if x > 0), paired.p_above(w, n)))
    for u, p in ups:
        assert sum(1 for v, _ in ups if v >= u) / 2 ** n <= p + 1e-12


# ---------------------------------------------------------------- simulated pairs

def normal(r: random.Random, k: int, shift: float = 0.0,
           sd: float = 0.02) -> tuple[list[float], list[float]]:
    """k start pairs: a moment shared by both (spread 10%, which the ratio
    cancels), each server its own noise, log ratio N(log(1 + shift), sd)."""
    a, b = [], []
    for _ in range(k):
        moment = 10_000 * math.exp(r.gauss(0, 0.10))
        a.append(moment * (1 + shift) * math.exp(r.gauss(0, sd / math.sqrt(2))))
        b.append(moment * math.exp(r.gauss(0, sd / math.sqrt(2))))
    return a, b


def busy(r: random.Random, k: int) -> tuple[list[float], list[float]]:
    """k A/A start pairs on a busy host: one recorded busy moment for both,
    ±3% each, and in a third of the pairs one of the two loses 40%; rounded
    to 100 req/s."""
    a, b = [], []
    for _ in range(k):
        moment = r.choice(BUSY_AWS_C4)
        x, y = (moment * (1 + r.uniform(-0.03, 0.03)) for _ in range(2))
        if r.random() < 1 / 3:
            x, y = (0.6 * x, y) if r.random() < 0.5 else (x, 0.6 * y)
        a.append(round(x, -2))
        b.append(round(y, -2))
    return a, b


def aa(r: random.Random, kind: str, k: int) -> tuple[list[float], list[float]]:
    return normal(r, k) if kind == "normal" else busy(r, k)


@pytest.mark.parametrize("kind", ["normal", "busy"])
def test_a_a_false_alarms_stay_within_alpha_at_ten_pairs(kind: str) -> None:
    # δ=0 leaves the test alone (with δ it only gets rarer): 10 pairs at 1%
    # reject at W+ >= 52 or <= 3, 10/1024 = 0.98%; normal pairs find that,
    # not less (exact, not timid); busy ones, tied, no more
    r = random.Random(29)
    said = sum(pair_rule(*aa(r, kind, 10), delta_pct=0.0).outcome == decide.BETTER
               for _ in range(SIMS))
    assert said <= within(SIMS, ALPHA)
    if kind == "normal":
        expect = 10 / 1024
        assert abs(said / SIMS - expect) <= 3 * math.sqrt(expect * (1 - expect) / SIMS)


def sequential(a: list[float], b: list[float], first: int, last: int,
               delta_pct: float) -> tuple[str, int]:
    """REPEAT=auto on pre-drawn pairs: the looks of policy.LookSchedule from
    `first` to `last` pairs, α spent over them; the outcome and the pairs."""
    looks = policy.LookSchedule(first, last, paired=True)
    for k in looks.points():
        d = pair_rule(a[:k], b[:k], delta_pct=delta_pct, alpha=looks.alpha(ALPHA, k))
        if d.outcome != decide.UNDECIDED:
            return d.outcome, k
    return decide.UNDECIDED, last


@pytest.mark.parametrize("kind", ["normal", "busy"])
def test_every_look_up_to_the_budget_keeps_the_false_alarm_rate(kind: str) -> None:
    # δ=0: no "equivalent" stops a run early, so every A/A run looks at 10,
    # 14, 20, 28 and 40 pairs; a false "better" at any of them counts
    r = random.Random(291)
    said = 0
    for _ in range(SIMS):
        a, b = aa(r, kind, 40)
        said += sequential(a, b, 10, 40, 0.0)[0] == decide.BETTER
    assert said <= within(SIMS, ALPHA)


def test_the_spending_keeps_alpha_for_the_late_looks() -> None:
    looks = policy.LookSchedule(10, 40, paired=True)
    assert looks.points() == [10, 14, 20, 28, 40]
    spent = [looks.alpha(ALPHA, k) for k in looks.points()]
    assert sum(spent) == pytest.approx(ALPHA)
    assert [looks.alpha(ALPHA, k) for k in (11, 39)] == [0.0, 0.0]     # no look planned there
    # the first look can decide 10 pairs (two-sided 2/1024 <= its α), and every
    # later look can too: none is spent where the test cannot reach it
    assert all(2 * paired.smallest_p(k) <= a for k, a in zip(looks.points(), spent))
    # the last look keeps a fifth of α (the old split kept 0.5% of it a look)
    assert spent[-1] >= 0.2 * ALPHA
    assert policy.pocock_spent(ALPHA, 1.0) == pytest.approx(ALPHA)
    # fewer pairs than the first look: tested at the first look's α
    assert looks.alpha(ALPHA, 7) == spent[0]


def test_the_first_look_waits_for_pairs_that_can_decide_at_every_level() -> None:
    # two levels at α=1%: 10 pairs would spend 0.357% over both, 0.179% a level,
    # below the 2/1024 = 0.195% the exact test of 10 pairs can reach; 11 can
    two = policy.looks(True, 10, 40, True, levels=2)
    assert policy.family_alpha(policy.pocock_spent(ALPHA, 10 / 40), 2) < 2 * paired.smallest_p(10)
    assert two.opening() == 11 and two.points() == [11, 16, 23, 33, 40]
    spent = [two.alpha(ALPHA, k) for k in two.points()]
    assert sum(spent) == pytest.approx(ALPHA)
    # every look reaches its α at each level, the per-level verdicts' (α over 2)
    assert all(policy.reachable(k, policy.family_alpha(a, 2))
               for k, a in zip(two.points(), spent))
    assert two.alpha(ALPHA, 10) == spent[0] and two.which(11) == "look 1 of 5"
    # one level: 10 pairs reach it, the looks as before; fixed REPEAT: one look
    assert policy.looks(True, 10, 40, True, levels=1).points() == [10, 14, 20, 28, 40]
    assert policy.looks(False, 10, 10, True, levels=2).points() == []
    # more levels, later still; none before the budget can: one look, at its end
    assert policy.looks(True, 10, 40, True, levels=4).opening() == 12
    assert policy.looks(True, 5, 8, True, levels=2).points() == [8]


def test_a_5_percent_shift_is_found_within_the_default_budget() -> None:
    r = random.Random(5)
    fixed = looked = 0
    for _ in range(SIMS):
        a, b = normal(r, 40, shift=0.05)
        fixed += pair_rule(a[:10], b[:10], delta_pct=2.0).outcome == decide.BETTER
        outcome, k = sequential(a, b, 10, 40, 2.0)
        looked += outcome == decide.BETTER
    assert fixed >= 0.9 * SIMS
    assert looked >= 0.9 * SIMS


# ---------------------------------------------------------------- bursts on slices

def bursty(r: random.Random, k: int, shift: float = 0.0, slices: int = 5,
           hit: float = 0.03) -> tuple[list[list[float]], list[list[float]]]:
    """k start pairs, each level in `slices` slices measured on both sides at
    the same moment: a moment shared by both (it cancels), 1% noise of each
    side's own, and a burst of a neighbour that hits any one side's slice with
    probability `hit` and takes 20-60% of it: about one pair in four has a
    slice swung (the hogs the lab makes measured gentler: their bursts are
    shorter than a slice, docs/results.md)."""
    a, b = [], []
    for _ in range(k):
        sa, sb = [], []
        for _ in range(slices):
            moment = 10_000 * math.exp(r.gauss(0, 0.10))
            x = moment * (1 + shift) * math.exp(r.gauss(0, 0.01))
            y = moment * math.exp(r.gauss(0, 0.01))
            if r.random() < hit:
                x *= 1 - r.uniform(0.2, 0.6)
            if r.random() < hit:
                y *= 1 - r.uniform(0.2, 0.6)
            sa.append(x)
            sb.append(y)
        a.append(sa)
        b.append(sb)
    return a, b


def pair_values(a: list[list[float]], b: list[list[float]], robust: bool) -> list[float]:
    """Each pair's ratio A/B: the Hodges-Lehmann estimate of its slices' log
    ratios (the lab's, pairverdict.pair_log_ratio), or the whole window's."""
    from lab.analyse import pairverdict
    out = []
    for sa, sb in zip(a, b):
        la, lb = [math.log(x) for x in sa], [math.log(y) for y in sb]
        d = pairverdict.pair_log_ratio(la, lb) if robust else \
            math.log(sum(sa) / sum(sb))
        out.append(math.exp(d))
    return out


@pytest.mark.parametrize("robust", [True, False])
def test_bursts_on_slices_keep_the_false_alarm_rate_over_every_look(robust: bool) -> None:
    r = random.Random(52)
    said = 0
    for _ in range(SIMS):
        a, b = bursty(r, 40)
        said += sequential(pair_values(a, b, robust), [1.0] * 40, 10, 40, 0.0)[0] == \
            decide.BETTER
    assert said <= within(SIMS, ALPHA)


def test_the_slices_estimate_finds_a_5_percent_shift_that_bursts_hide_from_the_window() -> None:
    r = random.Random(53)
    runs, robust, whole, spreads = 1_000, 0, 0, ([], [])
    for _ in range(runs):
        a, b = bursty(r, 40, shift=0.05)
        for found, spread, values in ((True, spreads[0], pair_values(a, b, True)),
                                      (False, spreads[1], pair_values(a, b, False))):
            outcome, _ = sequential(values, [1.0] * 40, 10, 40, 2.0)
            if found:
                robust += outcome == decide.BETTER
            else:
                whole += outcome == decide.BETTER
            spread.append(statistics.stdev(math.log(v) for v in values))
    assert robust >= 0.9 * runs
    assert statistics.median(spreads[0]) < 0.6 * statistics.median(spreads[1])
    assert robust > whole


def test_a_a_with_tight_pairs_is_equivalent_within_3_percent() -> None:
    r = random.Random(15)
    said = 0
    for _ in range(SIMS):
        d = pair_rule(*normal(r, 10, sd=0.015), delta_pct=3.0)
        said += d.outcome == decide.EQUIVALENT
    assert said >= 0.9 * SIMS


def test_pairing_cancels_the_moment_that_hides_a_shift_from_starts() -> None:
    # busy moments spread the starts 9.8k to 30.7k; A is 5% ahead in each pair
    r = random.Random(3)
    b = [r.choice(BUSY_AWS_C4) * math.exp(r.gauss(0, 0.01)) for _ in range(10)]
    a = [v * 1.05 * math.exp(r.gauss(0, 0.01)) for v in b]
    d = pair_rule(a, b, delta_pct=2.0)
    assert d.outcome == decide.BETTER and d.a_better and 3 < d.estimate_pct < 7
    assert rule(a, b, delta_pct=2.0).outcome == decide.UNDECIDED


# ---------------------------------------------------------------- as decide does

def test_a_cost_5_percent_higher_on_b_decides_a_better() -> None:
    r = random.Random(8)
    a = [100 * math.exp(r.gauss(0, 0.01)) for _ in range(10)]
    b = [v * 1.05 * math.exp(r.gauss(0, 0.01)) for v in a]
    d = pair_rule(a, b, higher_is_better=False, delta_pct=2.0, sided="a")
    assert d.outcome == decide.BETTER and d.a_better is True and d.starts == (10, 10)
    assert 3 < d.estimate_pct < 7 and d.lo_pct > 0
    # the same figures as a rate: B better, two-sided; asked only "A better?",
    # the answer is A no better than δ (the upper bound below it)
    two = pair_rule(a, b, delta_pct=2.0)
    assert two.outcome == decide.BETTER and two.a_better is False and two.estimate_pct < -3
    one = pair_rule(a, b, delta_pct=2.0, sided="a")
    assert one.outcome == decide.EQUIVALENT and "upper bound is below +2%" in one.reason


def test_one_sided_needs_one_pair_fewer() -> None:
    a, b = [110.0 + i for i in range(7)], [100.0] * 7
    one = pair_rule(a, b, sided="a")
    assert one.outcome == decide.BETTER and one.p == 1 / 128 and one.why == decide.REJECTS
    two = pair_rule(a, b)
    assert two.outcome == decide.UNDECIDED and (two.why, two.need) == (decide.TOO_FEW, 8)
    assert two.reason == ("too few pairs: 7 pairs cannot reach α=1% (the smallest p "
                          "is 0.016); 8 pairs can")


def test_undecided_says_why() -> None:
    r = random.Random(4)
    wide = pair_rule(*normal(r, 10, sd=0.10))
    assert wide.outcome == decide.UNDECIDED and "spans ±5%: more pairs decide" in wide.reason
    # log ratios 1%..8%: every sign up (p 2/256), the estimate 4.5% < 5%, the
    # interval up to 7.5% (the 2nd largest Walsh average)
    small = pair_rule([100 * math.exp(0.01 * i) for i in range(1, 9)], [100.0] * 8)
    assert small.outcome == decide.UNDECIDED and small.p <= ALPHA
    assert small.reason == "a difference is likely, but it may be smaller than δ=5%"


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="3 of A, 2 of B"):
        pair_rule([1.0, 2.0, 3.0], [1.0, 2.0])
    d = pair_rule([1.0, 0.0], [1.0, 2.0])
    assert d.outcome == decide.UNDECIDED and d.reason == "a figure of 0 or less has no ratio"
    assert d.starts == (2, 2)
