"""How far two independent runs of the same servers agree: for every pair of
servers at every level both runs measured, the req/s verdict (lab.analyse.verdicts.verdict)
and the server-CPU-per-request verdict (lab.analyse.verdicts.efficiency, judged for
every pair, not only where req/s cannot rank), each counted identical when
both runs give the same outcome (the same kind and the same winner).

    python3 -m lab agree RUN_A RUN_B

Typed facts (lab.present.agreetable prints one line per pair and level and
the two counts, for docs/results.md). Pure reading: it imports nothing of the
measuring side."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from lab.analyse import verdicts
from lab.analyse.metrics import LevelStats

Stats = dict[str, list[LevelStats]]


@dataclass(frozen=True)
class Outcome:
    kind: str
    winner: str | None
    percent: float | None
    text: str

    def same(self, other: Outcome) -> bool:
        return (self.kind, self.winner) == (other.kind, other.winner)


@dataclass(frozen=True)
class Pair:
    value: int
    a: str
    b: str
    rate: tuple[Outcome, Outcome]
    cpu: tuple[Outcome, Outcome]


def outcomes(a: LevelStats, b: LevelStats) -> tuple[Outcome, Outcome]:
    """(req/s, CPU per request) of one pair at one level."""
    v = verdicts.verdict(a, b)
    ranked = v.kind in ("faster", "faster-at-least")
    rate = Outcome(v.kind, v.a if ranked else None, v.percent, v.text)
    j, text = verdicts.efficiency(a, b)
    return rate, Outcome(j.kind, j.winner, j.percent, text)


def pairs(x: Stats, y: Stats, compared: list[str]) -> list[Pair]:
    out = []
    for a, b in combinations(compared, 2):
        for value in sorted({s.value for s in x.get(a, [])}):
            got = [next((s for s in st.get(n, []) if s.value == value), None)
                   for st in (x, y) for n in (a, b)]
            xa, xb, ya, yb = got
            if xa is None or xb is None or ya is None or yb is None:
                continue
            (r1, c1), (r2, c2) = outcomes(xa, xb), outcomes(ya, yb)
            out.append(Pair(value, a, b, (r1, r2), (c1, c2)))
    return out


def identical(found: list[Pair]) -> tuple[int, int]:
    """How many pairs the two runs judge alike: (req/s, server CPU per request)."""
    return (sum(p.rate[0].same(p.rate[1]) for p in found),
            sum(p.cpu[0].same(p.cpu[1]) for p in found))
