"""A start's warm-up judged from its own series: change points, then a class.

WARMUP=auto measures a start at its top level in slices (lab.measure.sweep,
WARMUP_SLICE_S each) and keeps, per slice, its req/s, its server CPU per
request and, for a JVM, its JIT compiler threads' CPU per second. Each
series is cut into segments of constant mean by PELT (Killick, Fearnhead
and Eckley, "Optimal detection of changepoints with a linear computational
cost", JASA 107, 2012) with the penalty Barrett et al. use, 15·ln n
("Virtual Machine Warmup Blows Hot and Cold", OOPSLA 2017), on a Gaussian
change-in-mean cost whose variance is von Neumann's from the series'
first differences (so a step hardly inflates it). Then, as Barrett
et al. class each process execution:

- flat: no segment differs from the last (by more than EQUIVALENT);
- warm-up: earlier segments were worse, the last is the best: steady after
  its first slice;
- slowdown: an earlier segment was better than the last;
- no steady state: the last segment is shorter than TAIL slices (a change
  near the end), or still drifting (its halves apart by more than
  EQUIVALENT and two standard errors: a slow climb that has no step for
  PELT to find, this lab's addition), so no steady state can be told.

A series judges the better side by its direction: req/s higher, CPU per
request lower. The start's class is the worst of its series' (no steady
state, then slowdown, then warm-up, then flat), and "steady after" the
latest of their last change points. The JIT's series is read alongside:
while its last segment still compiles (its mean above JIT_BUSY_SHARE of
the server's CPU), the start is not steady, whatever req/s says.

Pure arithmetic: the slices come from the sweep, the thresholds are here.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum

from lab.setup.params import WARMUP_LEAST_SLICES, WARMUP_TAIL_SLICES

PENALTY_PER_LN_N = 15.0      # Barrett et al.'s PELT penalty: 15·ln(n)
MIN_SEGMENT = 3              # slices: a shorter run of slices is an outlier, not a state
TAIL = WARMUP_TAIL_SLICES    # slices: the last segment must be at least this long
LEAST = WARMUP_LEAST_SLICES  # slices: fewer cannot show a change before the tail (3 + 5)
EQUIVALENT = 0.03            # segment means within 3% of the last's are the same state
JIT_BUSY_SHARE = 0.02        # the JIT still compiling: its CPU above 2% of the server's


class WarmClass(Enum):
    """A start's warm-up, as Barrett et al. class a process execution."""
    FLAT = "flat"
    WARMUP = "warm-up"
    SLOWDOWN = "slowdown"
    NO_STEADY = "no steady state"


_ORDER = (WarmClass.FLAT, WarmClass.WARMUP, WarmClass.SLOWDOWN, WarmClass.NO_STEADY)


def noise_sd(xs: list[float]) -> float:
    """The noise's standard deviation from first differences, von Neumann's
    way (the mean squared successive difference, halved): a step in the mean
    moves one difference, not the estimate, while noise that jumps between
    two modes at random from slice to slice (a JVM's connections landing on
    its IO threads anew each slice) counts whole, as noise, not as states."""
    diffs = [b - a for a, b in zip(xs, xs[1:])]
    if not diffs:
        return 0.0
    return math.sqrt(statistics.fmean(d * d for d in diffs) / 2)


def pelt(xs: list[float], penalty: float | None = None, min_segment: int = MIN_SEGMENT,
         step: float = 0.0) -> list[int]:
    """The change points of `xs` (indices where a new segment starts): the
    partition PELT finds, least cost plus `penalty` a change (15·ln n by
    default), segments at least `min_segment` long, on a change in mean with
    the variance estimated by noise_sd, floored by the series' resolution
    (`step`: a figure read in steps of it, such as one request a slice, has
    at least a rounding's noise, step/√12) and by 0.1% of its level (so a
    constant series has none). Computed exactly by optimal partitioning,
    without PELT's pruning: a warm-up has at most a few hundred slices."""
    n = len(xs)
    if n < 2 * min_segment:
        return []
    scale = abs(statistics.median(xs))
    sd = max(noise_sd(xs), step / math.sqrt(12), 1e-3 * scale, 1e-12)
    beta = PENALTY_PER_LN_N * math.log(n) if penalty is None else penalty
    s1, s2 = [0.0], [0.0]
    for x in xs:
        s1.append(s1[-1] + x / sd)
        s2.append(s2[-1] + (x / sd) ** 2)

    def cost(a: int, b: int) -> float:
        m = b - a
        return s2[b] - s2[a] - (s1[b] - s1[a]) ** 2 / m

    best = [-beta] + [math.inf] * n      # best[t]: the least cost of xs[:t] cut
    last = [0] * (n + 1)                  # where best[t]'s last segment starts
    for t in range(min_segment, n + 1):
        best[t], last[t] = min((best[s] + cost(s, t) + beta, s)
                               for s in range(0, t - min_segment + 1)
                               if s == 0 or s >= min_segment)
    out, t = [], n
    while t > 0:
        s = last[t]
        if s > 0:
            out.append(s)
        t = s
    return sorted(out)


def segments(xs: list[float], cps: list[int]) -> list[tuple[int, int, float]]:
    """(start, end, mean) of each segment between the change points."""
    edges = [0, *cps, len(xs)]
    return [(a, b, statistics.fmean(xs[a:b])) for a, b in zip(edges, edges[1:]) if b > a]


def drifting(xs: list[float], step: float = 0.0) -> bool:
    """A segment still moving: its second half's mean differs from its first
    half's by more than EQUIVALENT, by more than two standard errors of the
    noise (noise_sd), and by more than the series' resolution (`step`: a
    server at 30 req/s moves 3% by one request a slice). A slow climb has no
    step for a change in mean to find in a few slices; this sees it."""
    half = len(xs) // 2
    first, second = xs[:half], xs[len(xs) - half:]
    if half < 2:
        return False
    m1, m2 = statistics.fmean(first), statistics.fmean(second)
    se = noise_sd(xs) * math.sqrt(2 / half)
    return abs(m2 - m1) > max(EQUIVALENT * abs(m1), 2 * se, step)


@dataclass(frozen=True)
class SeriesClass:
    """One series' class and where its last segment starts (a slice index)."""
    kind: WarmClass
    steady_from: int | None          # None: no steady state
    changes: int


def classify_series(xs: list[float], higher_is_better: bool, tail: int = TAIL,
                    step: float = 0.0) -> SeriesClass:
    """A series classed: flat, warm-up (steady from the last segment),
    slowdown (an earlier segment was better), no steady state (the last
    segment is shorter than `tail`). `step`: the series' resolution (one
    request a slice for req/s); segments closer than it are one state."""
    cps = pelt(xs, step=step)
    segs = segments(xs, cps)
    if len(xs) < tail + MIN_SEGMENT or not segs:     # too short to see a change before the tail
        return SeriesClass(WarmClass.NO_STEADY, None, len(cps))
    a, b, last = segs[-1]
    if b - a < tail or drifting(xs[a:b], step):
        return SeriesClass(WarmClass.NO_STEADY, None, len(cps))
    sign = 1 if higher_is_better else -1

    def rel(m: float) -> float:       # how much better the last is than m, 0 within a step
        if not m or abs(last - m) <= step:
            return 0.0
        return sign * (last - m) / abs(m)
    others = [rel(m) for _, _, m in segs[:-1]]
    if all(abs(r) <= EQUIVALENT for r in others):
        return SeriesClass(WarmClass.FLAT, 0, len(cps))
    if any(r < -EQUIVALENT for r in others):
        return SeriesClass(WarmClass.SLOWDOWN, a, len(cps))
    return SeriesClass(WarmClass.WARMUP, a, len(cps))


def filled(xs: list[float]) -> list[float]:
    """`xs` with each figure of 0 or less (a slice with no request) taken
    from the slice before it (the first positive one for those at the
    start); [] where none is positive."""
    first = next((x for x in xs if x > 0), None)
    if first is None:
        return []
    out, last = [], first
    for x in xs:
        last = x if x > 0 else last
        out.append(last)
    return out


@dataclass(frozen=True)
class Judged:
    """A start's warm-up: its class, the slice its steady state starts at
    (None: none), and the class of each series it was judged by."""
    kind: WarmClass
    steady_from: int | None
    by: dict[str, WarmClass]
    jit_busy: bool = False

    @property
    def steady(self) -> bool:
        return self.kind in (WarmClass.FLAT, WarmClass.WARMUP)


def judge(rates: list[float], cpu_us: list[float], jit_share: list[float] | None = None,
          tail: int = TAIL, rate_step: float = 0.0) -> Judged:
    """A start's warm-up from its slices: req/s, server CPU µs per request
    (its JIT compiler threads' left out, where read) and, for a JVM, the
    JIT's share of the server's CPU in each slice (None: not a JVM or not
    read). `rate_step`: req/s's resolution, one request a slice (1 /
    the slice's seconds). A slice with no request (a slow start's first) has no CPU per
    request: it takes its neighbour's; in the last TAIL slices it means no
    steady state."""
    series: dict[str, SeriesClass] = {}
    if rates:
        series["req/s"] = classify_series(rates, True, tail, rate_step)
    cpu = filled(cpu_us) if len(cpu_us) == len(rates) else []
    if cpu:
        series["CPU per request"] = classify_series(cpu, False, tail)
    if not series or min(rates[-tail:], default=0) <= 0:
        return Judged(WarmClass.NO_STEADY, None, {k: v.kind for k, v in series.items()})
    kind = max((s.kind for s in series.values()), key=_ORDER.index)
    starts = [s.steady_from for s in series.values()]
    steady_from = None if kind is WarmClass.NO_STEADY or None in starts else \
        max(x for x in starts if x is not None)
    busy = False
    if jit_share and len(jit_share) == len(rates) and steady_from is not None:
        # the JIT's own segments: its last one must be quiet, and the steady
        # state starts no earlier than it
        jit_from, _, jit_mean = segments(jit_share, pelt(jit_share))[-1]
        busy = jit_mean > JIT_BUSY_SHARE
        if busy:
            kind, steady_from = WarmClass.NO_STEADY, None
        elif jit_from > steady_from:
            if len(rates) - jit_from < tail:
                kind, steady_from, busy = WarmClass.NO_STEADY, None, True
            else:
                kind, steady_from = (WarmClass.WARMUP if kind is WarmClass.FLAT else kind,
                                     jit_from)
    return Judged(kind, steady_from, {k: v.kind for k, v in series.items()}, busy)


def settled(rates: list[float], cpu_us: list[float], jit_share: list[float] | None,
            least: int, rate_step: float = 0.0) -> bool:
    """WARMUP=auto's stop: at least `least` slices (LEAST: room for a change
    before the tail), and the start steady (flat or warmed up) with a last
    segment of TAIL slices or more."""
    return len(rates) >= least and judge(rates, cpu_us, jit_share, rate_step=rate_step).steady
