"""The regression gate of `make compare`: every gated metric (GATE) of each
server at each level measured in both runs, through the lab's one verdict
gate (lab.analyse.metrics.judge), then the effect against a threshold
(MIN_EFFECT, or the host's A/A floor from `make noise` when larger).

Its outcome is the exit code of `make compare`: 1 when B is worse than A
beyond the threshold at a level measured cleanly in both, else 0 when at
least one metric was compared cleanly, else 3 (lab.setup.exits).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.analyse import costview, floors, metrics
from lab.analyse.diff import Manifest, Stats
from lab.analyse.metrics import LevelStats
from lab.record import schema
from lab.setup.exits import Exit

# metric: (what it is, higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "rate": ("requests/s", True),
    "p99": ("p99 latency at the offered rate", False),
    "cpu": ("server CPU µs per request", False),
    "rss": ("RSS at the end", False),
    "instructions": ("instructions per request", False),
}
# A level is measured cleanly when no repetition on either side has one of these.
UNCLEAN = ("client-bound", "host-busy", "steal", "failures", *metrics.UNRANKED)
# What the gate says of one metric at one level; the first two are the only
# ones that count as "compared cleanly".
REGRESSION, PASS = "regression", "pass"
NOT_CLEAN, NOT_JUDGED, NOT_APPLICABLE = "not-clean", "not-judged", "not-applicable"
# The run's outcome, as compare.json and the last line say it (exit 0, 1, 3).
OUTCOMES = {Exit.OK: "pass", Exit.FAILED: "regression", Exit.NOT_COMPARABLE: "not-comparable"}


@dataclass(frozen=True)
class GateSettings:
    """What is gated (GATE), the smallest effect called a change (MIN_EFFECT)
    and where the A/A floors are kept."""
    metrics: tuple[str, ...] = ("rate", "p99")
    min_effect_pct: float = 5.0
    cache: Path | None = None      # where the A/A floors are kept (None: no floor)


@dataclass(frozen=True)
class Check:
    """One gated metric of one server at one level, A against B."""
    server: str
    value: int
    metric: str
    outcome: str           # regression | pass | not-clean | not-judged | not-applicable
    judgement: str | None  # metrics.judge's kind (better, no-clear-difference, ...)
    worse_pct: float | None   # how much worse B is than A (negative: better), in %
    threshold_pct: float | None
    text: str


@dataclass(frozen=True)
class Gate:
    """The gate's outcome over every check, and what it used."""
    code: int
    outcome: str
    metrics: tuple[str, ...]
    min_effect_pct: float
    floors: dict[str, str]          # server: the floor used (or why none)
    checks: list[Check]
    reason: str                     # one line: why this outcome


def unclean(s: LevelStats) -> list[str]:
    return [f for f in UNCLEAN if s.flags.get(f, 0)]


def values(s: LevelStats, metric: str) -> tuple[float, ...]:
    if metric == "rate":
        return s.rate.values
    if metric == "p99":
        return s.p99_ms.values if s.p99_ms is not None else ()
    if metric == "cpu":
        return s.cpu_us_per_req.values
    return s.rss_end_kb.values


def worse_pct(a: float, b: float, higher_is_better: bool) -> float | None:
    """How much worse b is than a, in % of a (negative: better)."""
    if a == 0:
        return None
    return 100 * ((a - b) / a if higher_is_better else (b - a) / a)


def check(server: str, value: int, metric: str, va: tuple[float, ...],
          vb: tuple[float, ...], threshold: float, floor_note: str) -> Check:
    """One metric through the verdict gate (metrics.judge), then the effect
    against the threshold (MIN_EFFECT or the A/A floor, the larger)."""
    what, higher = METRICS[metric]
    j = metrics.judge(metrics.Sample("A", va), metrics.Sample("B", vb),
                      higher_is_better=higher, better=f"has better {what} than")
    if j.kind not in ("better", "no-clear-difference"):
        return Check(server, value, metric, NOT_JUDGED, j.kind, None, threshold, j.text)
    worse = worse_pct(metrics.spread(list(va)).median, metrics.spread(list(vb)).median, higher)
    if j.kind == "better" and j.winner == "A" and worse is not None and worse > threshold:
        return Check(server, value, metric, REGRESSION, j.kind, worse, threshold,
                     f"regression: {what} {worse:.1f}% worse in B, beyond the threshold "
                     f"{threshold:.1f}% ({floor_note}); {j.text}")
    if j.kind == "better" and j.winner == "A":
        text = (f"pass: {what} {worse or 0:.1f}% worse in B, within the threshold "
                f"{threshold:.1f}% ({floor_note})")
    else:
        text = f"pass: {j.text}"
    return Check(server, value, metric, PASS, j.kind, worse, threshold, text)


def level_checks(a: LevelStats, b: LevelStats, wanted: tuple[str, ...],
                 thresholds: dict[str, float], note: str) -> list[Check]:
    out = []
    dirty = [f"{f} in {side}" for side, s in (("A", a), ("B", b)) for f in unclean(s)]
    for metric in (m for m in wanted if m != "instructions"):
        if metric == "rate" and a.open_loop:
            out.append(Check(a.server, a.value, metric, NOT_APPLICABLE, None, None, None,
                             "requests/s is set by the offered rate in open loop "
                             "(p99 is gated there)"))
        elif metric == "p99" and not a.open_loop:
            out.append(Check(a.server, a.value, metric, NOT_APPLICABLE, None, None, None,
                             "p99 is gated at a fixed offered rate only (an open-loop "
                             "client: CLIENT=vegeta)"))
        elif dirty:
            out.append(Check(a.server, a.value, metric, NOT_CLEAN, None, None, None,
                             "not measured cleanly: " + ", ".join(dirty)))
        else:
            out.append(check(a.server, a.value, metric, values(a, metric), values(b, metric),
                             thresholds[metric], note))
    return out


def cost_levels(c: costview.CostAnalysis | None) -> dict[tuple[str, int], costview.LevelCost]:
    if c is None:
        return {}
    return {(s.server, x.level): x for s in c.servers if s.applicable and not s.error
            for x in s.levels}


def threshold_for(floor: floors.Floor | None, min_effect: float) -> dict[str, float]:
    """Per metric: MIN_EFFECT, or the A/A floor when it is larger."""
    got = floor.floors_pct if floor is not None else {}
    return {m: max(min_effect, got.get(m, 0.0)) for m in METRICS}


def of(sa: Stats, sb: Stats, costs: tuple[costview.CostAnalysis | None,
                                           costview.CostAnalysis | None],
       ms: tuple[Manifest, Manifest], settings: GateSettings) -> Gate:
    """Every gated metric at every level both runs measured, and the outcome:
    1 when B is worse beyond the threshold at a level measured cleanly in
    both, else 0 when at least one was compared cleanly, else 3."""
    wanted, min_effect, cache = settings.metrics, settings.min_effect_pct, settings.cache
    checks: list[Check] = []
    used: dict[str, str] = {}
    ca, cb = cost_levels(costs[0]), cost_levels(costs[1])
    servers = [n for n in sa if n in sb] + [n for (n, lv) in ca if (n, lv) in cb
                                            and n not in sa]
    for name in dict.fromkeys(servers):
        if "." not in name and any(schema.manifest_value(m, f"servers.{name}.role") == "ceiling"
                                   for m in ms):
            in_b = {s.value for s in sb.get(name, [])}
            checks += [Check(name, s.value, metric, NOT_APPLICABLE, None, None, None,
                             "the ceiling reference is not gated: it measures the host and "
                             "the client, not a server under test")
                       for s in sa.get(name, []) if s.value in in_b for metric in wanted]
            continue
        floor, note = floors.matching(cache, name, ms)
        used[name] = note
        short = f"A/A floor of {floor.made}" if floor else f"MIN_EFFECT={min_effect:g}%"
        thresholds = threshold_for(floor, min_effect)
        at_b = {s.value: s for s in sb.get(name, [])}
        for a in sa.get(name, []):
            if a.value in at_b:
                checks += level_checks(a, at_b[a.value], wanted, thresholds, short)
        if "instructions" in wanted:
            for (n, level), x in sorted(ca.items()):
                y = cb.get((n, level))
                if n == name and y is not None:
                    checks.append(check(name, level, "instructions", x.per_request.values,
                                        y.per_request.values, thresholds["instructions"],
                                        short))
    counted = [c for c in checks if c.outcome in (REGRESSION, PASS)]
    if any(c.outcome == REGRESSION for c in checks):
        code, reason = Exit.FAILED, "B is worse than A beyond the noise at a cleanly " \
            "measured level: " + "; ".join(f"{c.server} {c.value} {c.metric}"
                                           for c in checks if c.outcome == REGRESSION)
    elif counted:
        code, reason = Exit.OK, (f"B is no worse than A ({len(counted)} metric(s) at clean "
                                 "levels compared)")
    else:
        code, reason = Exit.NOT_COMPARABLE, "nothing could be compared cleanly: " + \
            why_nothing(checks, wanted)
    return Gate(int(code), OUTCOMES[code], wanted, min_effect, used, checks, reason)


def why_nothing(checks: list[Check], wanted: tuple[str, ...]) -> str:
    if not checks:
        return (f"no level of GATE={' '.join(wanted)} was measured in both runs "
                "(instructions: make cost runs only)")
    shown = [c for c in checks if c.outcome != NOT_APPLICABLE] or checks
    reasons: dict[str, list[str]] = {}
    for c in shown:
        reasons.setdefault(c.text, []).append(f"{c.server} {c.value} {c.metric}")
    return "; ".join(f"{text} [{', '.join(where)}]" for text, where in reasons.items())
