"""Instructions per request (make cost, written by lab.studies.cost into the run
record's cost.json) as a figure of the analysis: its spread over
repetitions and verdicts through the lab's one judge (lab.analyse.verdicts.judge,
lower is better): typed facts, which lab.present.costtable words for summary.md
and report.html.

The figure is user space only (valgrind sees the server's own instructions,
not the kernel's TCP and syscall work); each row shows it beside the CPU
µs/request a plain start of the same server spent in user space and in the
kernel, as /proc accounts them."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from lab.analyse import metrics
from lab.analyse.metrics import Spread
from lab.analyse.verdicts import RANKED, Sample, judge
from lab.record.costs import Costs

JIT_LANGUAGES = frozenset({"Java", "Kotlin", "Scala", "Groovy", "Clojure"})
JIT_REASON = ("not applicable (JIT): a JVM compiles its hot code while it runs, and under "
              "valgrind the JIT compiler's own work, the interpreter's and the compiled "
              "code's are one count that depends on when compilation happened, not on what "
              "a request costs; see its CPU profile (make profile) instead")
BETTER = "needs fewer instructions per request than"


@dataclass(frozen=True)
class LevelCost:
    server: str
    level: int
    per_request: Spread            # instructions per request over repetitions
    user_us: Spread | None = None  # plain start: CPU µs per request in user space
    sys_us: Spread | None = None   # ... in the kernel
    rate_rps: Spread | None = None  # ... requests/s (noisy)


@dataclass(frozen=True)
class ServerCost:
    server: str
    applicable: bool
    reason: str
    error: str
    valgrind: str
    levels: tuple[LevelCost, ...]
    functions: dict[int, list[tuple[str, float]]]


@dataclass(frozen=True)
class CostVerdict:
    level: int
    a: str                # the one with fewer instructions when kind is better
    b: str
    kind: str             # lab.analyse.verdicts.Judgement's kind
    percent: float | None  # how many % fewer (kind better)
    text: str


@dataclass(frozen=True)
class CostAnalysis:
    condition: str
    servers: list[ServerCost]
    verdicts: list[CostVerdict]


def _spread(values: list[float | None]) -> Spread | None:
    known = [v for v in values if v is not None]
    return metrics.spread(known) if known else None


def server_costs(costs: Costs) -> list[ServerCost]:
    out = []
    for name, entry in costs.servers.items():
        levels = []
        for level in sorted({r.level for r in entry.reps}):
            mine = [r for r in entry.reps if r.level == level]
            levels.append(LevelCost(
                server=name, level=level,
                per_request=metrics.spread([r.per_request for r in mine]),
                user_us=_spread([r.user_us for r in mine]),
                sys_us=_spread([r.sys_us for r in mine]),
                rate_rps=_spread([r.rate_rps for r in mine])))
        out.append(ServerCost(name, entry.applicable, entry.reason, entry.error, entry.valgrind,
                              tuple(levels), entry.functions))
    return out


def verdict(a: LevelCost, b: LevelCost) -> CostVerdict:
    """The lab's judge on instructions per request (lower is better)."""
    j = judge(Sample(a.server, a.per_request.values),
              Sample(b.server, b.per_request.values),
              higher_is_better=False, better=BETTER)
    if j.winner is None or j.loser is None or j.kind not in RANKED:
        return CostVerdict(a.level, a.server, b.server, j.kind, None, j.text)
    low, high = (a, b) if j.winner == a.server else (b, a)
    fewer = 100 * (1 - low.per_request.median / high.per_request.median)
    spread = 100 * (max(low.per_request.ratio, high.per_request.ratio) - 1)
    return CostVerdict(a.level, low.server, high.server, j.kind, fewer,
                       f"{low.server} needs {fewer:.1f}% fewer instructions per request than "
                       f"{high.server} (spread {spread:.2f}%; {j.decision.stated()})"
                       if j.decision else j.text)


def verdicts(found: list[ServerCost]) -> list[CostVerdict]:
    measured = [s for s in found if s.applicable and s.levels]
    out = []
    for level in sorted({x.level for s in measured for x in s.levels}):
        for a, b in combinations(measured, 2):
            la = next((x for x in a.levels if x.level == level), None)
            lb = next((x for x in b.levels if x.level == level), None)
            if la is not None and lb is not None:
                out.append(verdict(la, lb))
    return out


def analyse(costs: Costs) -> CostAnalysis:
    found = server_costs(costs)
    versions = sorted({s.valgrind for s in found if s.valgrind})
    condition = (f"{costs.tool}, {', '.join(versions) or 'valgrind'}; h2load --h1 -n "
                 f"{' and -n '.join(map(str, costs.requests))} at "
                 f"c={' and '.join(map(str, costs.levels))}, {costs.repeat} repetitions; "
                 f"wrapper: {costs.wrapper}")
    return CostAnalysis(condition, found, verdicts(found))
