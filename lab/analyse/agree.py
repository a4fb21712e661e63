"""How far two independent runs of the same servers agree: for every pair of
servers at every level both runs measured, the req/s verdict (lab.analyse.verdicts.verdict)
and the server-CPU-per-request verdict (lab.analyse.verdicts.efficiency, judged for
every pair, not only where req/s cannot rank), each counted identical when
both runs give the same outcome (the same kind and the same winner).

    python3 -m lab agree RUN_A RUN_B

Prints one line per pair and level and the two counts, for docs/results.md.
Pure reading: it imports nothing of the measuring side."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from lab.analyse import analysis, verdicts
from lab.setup.exits import Exit
from lab.analyse.metrics import LevelStats
from lab.record.files import RecordError
from lab.setup.markdown import Table

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


def report(found: list[Pair], ids: tuple[str, str]) -> list[str]:
    same_rate = sum(p.rate[0].same(p.rate[1]) for p in found)
    same_cpu = sum(p.cpu[0].same(p.cpu[1]) for p in found)
    lines = [f"# Agreement of {ids[0]} and {ids[1]}", "",
             *Table(["level", "pair", "req/s (1)", "req/s (2)", "CPU/req (1)", "CPU/req (2)"],
                    [[str(p.value), f"{p.a} vs {p.b}", p.rate[0].text, p.rate[1].text,
                      p.cpu[0].text, p.cpu[1].text] for p in found]).lines()]
    lines += ["", f"Identical verdicts, req/s: {same_rate} of {len(found)}; "
                  f"server CPU per request: {same_cpu} of {len(found)}."]
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m lab agree RUN_A RUN_B", file=sys.stderr)
        return Exit.BAD_INPUT
    try:
        (_, x), (_, y) = analysis.of(Path(argv[0])), analysis.of(Path(argv[1]))
    except RecordError as e:
        print(f"error: {e}", file=sys.stderr)
        return Exit.BAD_INPUT
    compared = [n for n in x.compared if n in y.compared]
    found = pairs(x.stats, y.stats, compared)
    if not found:
        print("error: the two runs have no pair of servers at a common level: give two runs "
              "of the same servers", file=sys.stderr)
        return Exit.BAD_INPUT
    print("\n".join(report(found, (Path(argv[0]).name, Path(argv[1]).name))))
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
