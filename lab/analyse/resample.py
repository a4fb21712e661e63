"""`python3 -m lab resample RUN`: how often a paired run's rule decides on
fewer pairs, read off the pairs it recorded. Draws of PAIRS start pairs
(with replacement, seeded) go through the paired rule at the run's α and δ
(or those given) and are counted: A better, B better, equivalent,
undecided. On an A/A run the "better" share is the realized false-alarm
rate and the "equivalent" share what the host lets the rule say; on a run
of a known difference, the "better" share is the power.

It reads the run's per-pair figures as its verdict does
(lab.analyse.pairverdict: each level by its figure, the pair's mean log
advantage across them); the seats' balance is the run's own, not redrawn.
Nothing is written.
"""
from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from lab.analyse import analysis, decide, paired, pairverdict
from lab.record import files, runlock


# draws x pairs² at most: each draw sorts about pairs²/2 Walsh averages, so this bounds
# the work one call may ask for
MAX_WORK = 25_000_000


@dataclass(frozen=True)
class Drawn:
    """The outcomes of `draws` draws of `pairs` pairs."""
    draws: int
    pairs: int
    a_better: int
    b_better: int
    equivalent: int
    alpha: float
    delta_pct: float
    recorded: int                # the pairs the run recorded
    sd_pct: float                # their log ratios' standard deviation, %

    def line(self, a: str, b: str) -> str:
        def share(n: int) -> str:
            return f"{n:,} ({100 * n / self.draws:.1f}%)"
        undecided = self.draws - self.a_better - self.b_better - self.equivalent
        return (f"{self.draws:,} draws of {self.pairs} pairs from {self.recorded} recorded "
                f"(sd of their log ratio {self.sd_pct:.2f}%), α={100 * self.alpha:g}%, "
                f"δ={self.delta_pct:g}%: {a} better {share(self.a_better)}, {b} better "
                f"{share(self.b_better)}, equivalent within ±{self.delta_pct:g}% "
                f"{share(self.equivalent)}, undecided {share(undecided)}")


def draw(adv: list[float], pairs: int, draws: int, alpha: float, delta_pct: float,
         seed: int = 1) -> Drawn:
    """`draws` draws of `pairs` of the log advantages `adv`, through the rule."""
    rng = random.Random(seed)
    a = b = same = 0
    for _ in range(draws):
        picked = [math.exp(x) for x in rng.choices(adv, k=pairs)]
        d = paired.decide_paired(picked, [1.0] * pairs, alpha=alpha, delta_pct=delta_pct)
        a += d.outcome == decide.BETTER and bool(d.a_better)
        b += d.outcome == decide.BETTER and not d.a_better
        same += d.outcome == decide.EQUIVALENT
    mean = sum(adv) / len(adv)
    sd = math.sqrt(sum((x - mean) ** 2 for x in adv) / max(1, len(adv) - 1))
    return Drawn(draws, pairs, a, b, same, alpha, delta_pct, len(adv), 100 * sd)


def main(run: Path, pairs: int, draws: int, alpha: float | None, delta_pct: float | None,
         seed: int) -> int:
    try:
        runlock.refuse_busy(run, "lab resample")
        rec, a = analysis.of(run)
    except (files.RecordError, runlock.Busy) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    m = rec.manifest
    names = [s for s in m.params.servers if s in a.stats]
    if not analysis.paired_mode(m) or len(names) != 2:
        print(f"error: {run} is not a paired run of two measured servers", file=sys.stderr)
        return 2
    la, lb = a.stats[names[0]], a.stats[names[1]]
    used, _ = pairverdict.figures(la, lb, a.verdict_at)
    adv = list(pairverdict.advantages(la, lb, used).values())
    if len(adv) < 2:
        print(f"error: {run} has {len(adv)} whole pair(s): nothing to draw from",
              file=sys.stderr)
        return 3
    n = pairs or len(adv)
    if draws * n * n > MAX_WORK:
        print(f"error: {draws:,} draws of {n} pairs is more work than lab resample does "
              f"(draws x pairs² at most {MAX_WORK:,}: each draw sorts pairs² Walsh "
              "averages); give fewer --draws or --pairs", file=sys.stderr)
        return 2
    run_alpha, run_delta = analysis.rule_of(m)
    got = draw(adv, n, draws, run_alpha if alpha is None else alpha,
               run_delta if delta_pct is None else delta_pct, seed)
    print(f"{names[0]} vs {names[1]}, {analysis.paired_mode(m)}, levels "
          f"{', '.join(f'{v} by {pairverdict.WHAT[f]}' for v, f in used.items())}:")
    print(got.line(names[0], names[1]))
    return 0
