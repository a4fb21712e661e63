"""lab.analyse.decide, the decision rule: its exact arithmetic, and its
false-alarm rate and power simulated on starts like this host's (seeded,
pure arithmetic): tight quiet-host starts (1-15% spread, a small order
effect) and bimodal busy-host starts (aws at c=4 beside other work: 9.8k to
30.7k req/s over six starts)."""
from __future__ import annotations

import math
import random

import pytest

from lab.analyse import decide, policy

pytestmark = pytest.mark.unit

ALPHA = policy.ALPHA
SIMS = 10_000
BUSY_AWS_C4 = (9_800.0, 11_900.0, 16_500.0, 21_700.0, 28_900.0, 30_700.0)


def rule(a: list[float], b: list[float], **kw: object) -> decide.Decision:
    """decide.decide at the policy's α and δ unless given."""
    return decide.decide(a, b, **{"alpha": ALPHA, "delta_pct": policy.DELTA_PCT, **kw})  # type: ignore[arg-type]


def within(sims: int, rate: float) -> float:
    """The largest count a true rate `rate` gives with 3 standard errors."""
    return sims * (rate + 3 * math.sqrt(rate * (1 - rate) / sims))


@pytest.mark.parametrize("m, n, two_sided", [
    (3, 3, 0.10), (4, 4, 0.0286), (5, 5, 0.0079), (4, 6, 0.0095)])
def test_the_smallest_p_of_an_exact_test_is_one_over_the_orderings(
        m: int, n: int, two_sided: float) -> None:
    assert 2 * decide.smallest_p(m, n) == pytest.approx(two_sided, abs=1e-4)
    assert sum(decide._counts(m, n)) == math.comb(m + n, m)


def test_a_regression_gate_needs_few_new_starts_against_a_long_baseline() -> None:
    assert decide.smallest_p(10, 3) == pytest.approx(1 / 286)     # 0.0035 < 1%
    d = rule([100.0 + i for i in range(10)], [60.0, 61.0, 62.0], sided="a")
    assert d.outcome == decide.BETTER and d.a_better and d.starts == (10, 3)


def test_the_counting_recursion_matches_enumeration() -> None:
    from itertools import combinations
    m, n = 4, 5
    seen = [0] * (m * n + 1)
    for xs in combinations(range(m + n), m):
        ys = [v for v in range(m + n) if v not in xs]
        seen[sum(1 for x in xs for y in ys if x > y)] += 1
    assert tuple(seen) == decide._counts(m, n)


def quiet(r: random.Random, base: float, k: int, second: bool,
          sigma: float = 0.04) -> list[float]:
    """k starts of one server on a quiet host: log-normal, σ 4% (5 starts
    spread 1-15% max/min), +1% when it started second (an order effect)."""
    return [base * math.exp(r.gauss(0, sigma)) * (1.01 if (i % 2 == 1) == second else 1.0)
            for i in range(k)]


def busy(r: random.Random, k: int) -> list[float]:
    """k starts on a busy host: one of the recorded bimodal starts, ±3%."""
    return [r.choice(BUSY_AWS_C4) * (1 + r.uniform(-0.03, 0.03)) for _ in range(k)]


def aa(r: random.Random, kind: str, k: int) -> tuple[list[float], list[float]]:
    """An A/A pair: the same server twice, starts interleaved ABBA (each side
    starts second in alternate rounds)."""
    if kind == "quiet":
        return quiet(r, 10_000, k, False), quiet(r, 10_000, k, True)
    return busy(r, k), busy(r, k)


@pytest.mark.parametrize("kind", ["quiet", "busy"])
def test_a_a_false_alarms_stay_within_alpha_at_five_starts(kind: str) -> None:
    r = random.Random(28)
    said = sum(rule(*aa(r, kind, 5)).outcome == decide.BETTER for _ in range(SIMS))
    assert said <= within(SIMS, ALPHA)


def test_without_delta_the_rate_is_the_exact_tests_own() -> None:
    # δ=0 leaves the test alone: 5 against 5 at 1% rejects only at the extreme
    # orderings, 2/252 = 0.79%, and the simulation finds that, not less
    r = random.Random(7)
    said = sum(rule(quiet(r, 1.0, 5, False), quiet(r, 1.0, 5, False),
                             delta_pct=0.0).outcome == decide.BETTER for _ in range(SIMS))
    expect = 2 / 252
    sd = math.sqrt(expect * (1 - expect) / SIMS)
    assert abs(said / SIMS - expect) <= 3 * sd


def sequential(a: list[float], b: list[float], first: int, last: int) -> tuple[str, int]:
    """REPEAT=auto on pre-drawn starts: a look after every start from `first`
    to `last` a side, α spent over the looks; the outcome and the starts."""
    for k in range(first, last + 1):
        d = rule(a[:k], b[:k], alpha=policy.LookSchedule(first, last).alpha(ALPHA, k))
        if d.outcome != decide.UNDECIDED:
            return d.outcome, k
    return decide.UNDECIDED, last


@pytest.mark.parametrize("kind", ["quiet", "busy"])
def test_a_look_after_every_start_keeps_the_false_alarm_rate(kind: str) -> None:
    r = random.Random(281)
    said = 0
    for _ in range(SIMS):
        a, b = aa(r, kind, 10)
        said += sequential(a, b, 5, 10)[0] == decide.BETTER
    assert said <= within(SIMS, ALPHA)


def test_spending_adds_up_to_alpha() -> None:
    looks = policy.LookSchedule(5, 10)
    assert sum(looks.alpha(ALPHA, k) for k in range(5, 11)) == pytest.approx(ALPHA)
    assert policy.LookSchedule().alpha(ALPHA, 5) == ALPHA
    # the first look can still decide 5 against 5 (two-sided p 0.0079)
    assert 2 * decide.smallest_p(5, 5) <= looks.alpha(ALPHA, 5)


def test_a_20_percent_shift_is_found_within_repeat_max_on_a_quiet_host() -> None:
    r = random.Random(20)
    runs, found, starts = 2_000, 0, 0
    for _ in range(runs):
        a = quiet(r, 12_000, 10, False)
        b = quiet(r, 10_000, 10, True)
        outcome, k = sequential(a, b, 5, 10)
        found += outcome == decide.BETTER
        starts += k
    assert found >= 0.9 * runs
    assert starts / runs < 10


def test_equivalent_needs_the_whole_interval_inside_delta() -> None:
    r = random.Random(5)
    a, b = quiet(r, 10_000, 10, False, 0.015), quiet(r, 10_000, 10, True, 0.015)
    d = rule(a, b)
    assert d.outcome == decide.EQUIVALENT and -5 < d.lo_pct and d.hi_pct < 5
    assert d.why == decide.INSIDE
    wide = rule(busy(r, 10), busy(r, 10))
    assert wide.outcome == decide.UNDECIDED and "spans ±5%" in wide.reason
    assert wide.why == decide.SPANS       # the fact the gate and the verdicts read, not the words


def test_too_few_starts_say_how_many_would_do() -> None:
    d = rule([1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
    assert d.outcome == decide.UNDECIDED
    assert d.reason.startswith("too few starts: 3 against 3 cannot reach α=1%")
    assert "5 against 5 can" in d.reason
    assert (d.why, d.need) == (decide.TOO_FEW, 5)
    assert rule([0.0, 1.0], [1.0, 2.0]).why == decide.NO_RATIO


def test_the_exact_counts_are_every_ordering_s_and_kept_one_table_at_a_time() -> None:
    """_counts(m, n) counts, for each U, the orderings of m against n values
    that give it: checked against every ordering, up to 5 a side. It keeps
    no table for smaller m and n (issue 44, §6: at 50 starts a side those
    tables took 51 MB of a report's memory)."""
    import itertools
    for m in range(0, 6):
        for n in range(0, 6):
            counts = [0] * (m * n + 1)
            for xs in itertools.combinations(range(m + n), m):   # x's ranks among all
                ys = [r for r in range(m + n) if r not in xs]
                counts[sum(1 for x in xs for y in ys if x > y)] += 1
            assert decide._counts(m, n) == tuple(counts), (m, n)
    decide._counts.cache_clear()
    big = decide._counts(40, 40)
    assert sum(big) == math.comb(80, 40) and decide._counts.cache_info().currsize == 1
