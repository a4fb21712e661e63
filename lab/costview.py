"""Reading a run's cost.json (written by `make cost`, lab.cost): instructions
per request with their spread, verdicts between servers, and the Markdown
and HTML sections of the run's summary and report.

The figure is user space only (valgrind sees the server's own instructions,
not the kernel's TCP and syscall work); each row shows it beside the CPU
µs/request a plain start of the same server spent in user space and in the
kernel, as /proc accounts them."""
from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from itertools import combinations
from pathlib import Path
from typing import Any

from lab import metrics
from lab.metrics import Spread

COST_FILE = "cost.json"
JIT_LANGUAGES = frozenset({"Java", "Kotlin", "Scala", "Groovy", "Clojure"})
JIT_REASON = ("not applicable (JIT): a JVM compiles its hot code while it runs, and under "
              "valgrind the JIT compiler's own work, the interpreter's and the compiled "
              "code's are one count that depends on when compilation happened, not on what "
              "a request costs; see the CPU profile (make profile) instead")
KERNEL_NOTE = ("Instructions are counted in user space only: the kernel's work for the "
               "server (TCP, syscalls) is not in this figure. The CPU µs/request beside it "
               "come from a plain start (no valgrind) and /proc, which splits user and "
               "kernel time; they move with the host's load, the instruction count does not.")


@dataclass(frozen=True)
class LevelCost:
    server: str
    level: int
    per_request: Spread            # instructions per request over repetitions
    user_us: Spread | None         # plain start: CPU µs per request in user space
    sys_us: Spread | None          # ... in the kernel
    rate_rps: Spread | None        # ... requests/s (noisy)


@dataclass(frozen=True)
class ServerCost:
    server: str
    applicable: bool
    reason: str
    error: str
    valgrind: str
    levels: tuple[LevelCost, ...]


def load(run: Path) -> dict[str, Any] | None:
    path = run / COST_FILE
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _spread(values: list[float]) -> Spread | None:
    return metrics.spread(values) if values else None


def costs(data: dict[str, Any]) -> list[ServerCost]:
    out = []
    for name, entry in data.get("servers", {}).items():
        reps = entry.get("reps") or []
        levels = []
        for level in sorted({r["level"] for r in reps}):
            mine = [r for r in reps if r["level"] == level]
            levels.append(LevelCost(
                server=name, level=level,
                per_request=metrics.spread([float(r["per_request"]) for r in mine]),
                user_us=_spread([r["native"]["user_us_per_req"] for r in mine if r.get("native")]),
                sys_us=_spread([r["native"]["sys_us_per_req"] for r in mine if r.get("native")]),
                rate_rps=_spread([r["native"]["rate_rps"] for r in mine if r.get("native")])))
        out.append(ServerCost(name, bool(entry.get("applicable")), entry.get("reason", ""),
                              entry.get("error", ""), entry.get("valgrind", ""), tuple(levels)))
    return out


@dataclass(frozen=True)
class CostVerdict:
    level: int
    a: str
    b: str
    kind: str          # fewer | no-clear-difference | inconclusive
    percent: float | None
    text: str


def verdict(a: LevelCost, b: LevelCost) -> CostVerdict:
    """Fewer instructions per request is better: the same rule as the
    throughput verdict (enough repetitions, min-max ranges apart)."""
    n = min(a.per_request.n, b.per_request.n)
    if n < metrics.MIN_REPS_FOR_VERDICT:
        return CostVerdict(a.level, a.server, b.server, "inconclusive", None, metrics.too_few(n))
    if a.per_request.overlaps(b.per_request):
        return CostVerdict(a.level, a.server, b.server, "no-clear-difference", None,
                           "no clear difference (ranges overlap)")
    low, high = (a, b) if a.per_request.median < b.per_request.median else (b, a)
    pct = 100 * (1 - low.per_request.median / high.per_request.median)
    spread_pct = 100 * max(low.per_request.ratio, high.per_request.ratio) - 100
    return CostVerdict(a.level, low.server, high.server, "fewer", pct,
                       f"{low.server} needs {pct:.1f}% fewer instructions per request than "
                       f"{high.server} (spread {spread_pct:.2f}%)")


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


def rng(s: Spread | None, fmt: str = ",.0f") -> str:
    if s is None:
        return "-"
    if s.n == 1:
        return format(s.median, fmt)
    return f"{format(s.median, fmt)} [{format(s.lo, fmt)}–{format(s.hi, fmt)}]"


def spread_pct(s: Spread) -> str:
    return f"{100 * (s.ratio - 1):.2f}%"


def rows(found: list[ServerCost]) -> list[list[str]]:
    """Plain-text cells: server, c, instructions/request, spread, user µs, kernel µs, req/s."""
    out = []
    for s in found:
        if not s.applicable:
            out.append([s.server, "-", s.reason, "", "", "", ""])
        elif s.error and not s.levels:
            out.append([s.server, "-", f"failed: {s.error}", "", "", "", ""])
        for x in s.levels:
            out.append([s.server, str(x.level), rng(x.per_request, ",.1f"),
                        spread_pct(x.per_request), rng(x.user_us, ".1f"), rng(x.sys_us, ".1f"),
                        rng(x.rate_rps)])
    return out


HEAD = ["server", "c", "instructions/request (user space)", "spread (max/min)",
        "CPU µs/req user (plain start)", "CPU µs/req kernel (plain start)",
        "req/s (plain start, noisy)"]


def conditions(data: dict[str, Any], found: list[ServerCost]) -> str:
    versions = sorted({s.valgrind for s in found if s.valgrind})
    return (f"{data.get('tool', 'cachegrind')}, {', '.join(versions) or 'valgrind'}; "
            f"h2load --h1 -n {' and -n '.join(map(str, data.get('requests', [])))} at "
            f"c={' and '.join(map(str, data.get('levels', [])))}, "
            f"{data.get('repeat', '?')} repetitions; wrapper: `{data.get('wrapper', '')}`")


def markdown(run: Path) -> str:
    data = load(run)
    if data is None:
        return ""
    found = costs(data)
    lines = ["## Instructions per request (cachegrind)", "", KERNEL_NOTE, "",
             f"Conditions: {conditions(data, found)}.", "",
             "| " + " | ".join(HEAD) + " |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows(found)]
    vs = verdicts(found)
    if vs:
        lines += ["", "### Verdicts on instructions per request", ""]
        lines += [f"- c={v.level}: {v.a} vs {v.b}: {v.text}" for v in vs]
    errors = [f"- {s.server}: {s.error}" for s in found if s.error]
    if errors:
        lines += ["", "Failed:", *errors]
    return "\n".join(lines) + "\n"


def html(run: Path) -> str:
    """The report's section (escaped text, tables only, no script)."""
    data = load(run)
    if data is None:
        return ""
    from lab.html import table
    found = costs(data)
    e = escape
    body = [f"<h2 id=\"cost\">Instructions per request (cachegrind)</h2><p>{e(KERNEL_NOTE)}</p>",
            f'<p class="muted">{e(conditions(data, found))}</p>',
            table(HEAD, [[e(c) for c in r] for r in rows(found)], numeric={1, 2, 3, 4, 5, 6},
                  cls="cost")]
    vs = verdicts(found)
    if vs:
        body.append(table(["c", "fewer", "more", "kind", "verdict"],
                          [[e(str(v.level)), e(v.a), e(v.b), e(v.kind), e(v.text)] for v in vs],
                          numeric={0}, cls="cost-verdicts"))
    return "".join(body)
