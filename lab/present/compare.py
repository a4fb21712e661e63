"""Two runs side by side: `make compare A=results/<x> B=results/<y>`.

Per server and swept value measured in both runs, the ratio B/A of the median
requests/s (and of p99 latency, RSS at the end and server CPU µs per request),
with a verdict that respects the spread of repetitions: a change whose min–max
ranges overlap is no change. Runs whose conditions differ in a way that
decides the figures (CPUs, topology, client, connection mode, swept axis) are
refused unless forced; lesser differences are listed.

Writes results/compare-<A>-vs-<B>[-N]/: compare.md, compare.json,
compare.png/.svg (plots/compare.gp) and compare.html, and prints the table.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from lab.analyse import analysis, costview, floors, metrics
from lab.present import html
from lab.record import files, folder, schema
from lab.setup.exits import Exit
from lab.analyse.wording import axis_label as axis_name
from lab.analyse.wording import gp_quote, ratio as times, rng, xlabel
from lab.analyse.metrics import MIN_REPS_FOR_VERDICT, LevelStats, Spread

PLOTS = Path(__file__).resolve().parents[2] / "plots"
EXIT_REFUSED = int(Exit.BAD_INPUT)

Stats = dict[str, list[LevelStats]]
Manifest = dict[str, Any]          # a run's manifest as JSON (schema.Manifest.to_json)


# ---- conditions ---------------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    """One condition that is not the same in both runs."""
    what: str
    a: str
    b: str
    matters: bool          # True: refused unless forced

    def text(self) -> str:
        return f"{self.what}: A {self.a}, B {self.b}"



def shown(value: Any) -> str:
    if value is None:
        return "(not recorded)"
    if isinstance(value, list):
        return ",".join(map(str, value)) if value else "(none)"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# Conditions that decide the figures: a difference refuses the comparison.
MATTERS: list[tuple[str, str]] = [
    ("host CPU count", "host.cores"),
    ("usable CPUs", "host.usable_cpus"),
    ("topology", "topology"),
    ("client tool", "client.tool"),
    ("connection mode", "client.connection"),
    ("swept axis", "params.axis"),
]

# Conditions that may move the figures: listed, never refused.
MAY_MATTER: list[tuple[str, str]] = [
    ("kernel", "host.kernel"),
    ("OS", "host.os"),
    ("CPU model", "host.cpu_model"),
    ("memory GB", "host.memory_gb"),
    ("client version", "client.version"),
    ("client threads", "client.threads"),
    ("server CPUs (pinning)", "pinning.server_cpus"),
    ("client CPUs (pinning)", "pinning.client_cpus"),
    ("duration per level (s)", "params.duration_s"),
    ("repetitions", "params.repeat"),
    ("warm-up auto", "params.warmup_auto"),
    ("warm-up (s)", "params.warmup_s"),
    ("warm-up cap (s)", "params.warmup_max_s"),
    ("server workers", "params.workers"),
    ("accept backlog", "params.backlog"),
    ("lab commit", "lab.commit"),
    ("lab tree dirty", "lab.dirty"),
    ("run status", "status"),
]


def path_differences(ma: Manifest, mb: Manifest, paths: list[tuple[str, str]],
                     matters: bool) -> list[Difference]:
    out = []
    for what, path in paths:
        a, b = schema.manifest_value(ma, path), schema.manifest_value(mb, path)
        if a != b:
            out.append(Difference(what, shown(a), shown(b), matters))
    return out


def tool_differences(ma: Manifest, mb: Manifest) -> list[Difference]:
    """Every tool version recorded by either run (siege, wrk, java, nginx, ...)."""
    ta, tb = ma.get("tools") or {}, mb.get("tools") or {}
    return [Difference(f"{name} version", shown(ta.get(name)), shown(tb.get(name)), False)
            for name in sorted(set(ta) | set(tb)) if ta.get(name) != tb.get(name)]


def server_differences(ma: Manifest, mb: Manifest) -> list[Difference]:
    """Framework version and recorded facts (java_version, ...) of servers in both runs."""
    sa, sb = ma.get("servers") or {}, mb.get("servers") or {}
    out = []
    for name in [n for n in sa if n in sb]:
        a, b = sa[name], sb[name]
        if a.get("version") != b.get("version"):
            out.append(Difference(f"{name} framework version", shown(a.get("version")),
                                  shown(b.get("version")), False))
        fa, fb = a.get("facts") or {}, b.get("facts") or {}
        for key in sorted(set(fa) | set(fb)):
            if fa.get(key) != fb.get(key):
                out.append(Difference(f"{name} {key}", shown(fa.get(key)),
                                      shown(fb.get(key)), False))
    return out


def load_difference(ma: Manifest, mb: Manifest) -> list[Difference]:
    """The 1-minute load average at the start, when it differs at one decimal."""
    def first(m: Manifest) -> str:
        load = schema.manifest_value(m, "host.load_average_at_start")
        return f"{load[0]:.1f}" if isinstance(load, list) and load else shown(None)
    a, b = first(ma), first(mb)
    return [] if a == b else [Difference("load average at start (1 min)", a, b, False)]


def differences(ma: Manifest, mb: Manifest) -> list[Difference]:
    """What differs between the runs' conditions: those that matter first."""
    return (path_differences(ma, mb, MATTERS, True)
            + path_differences(ma, mb, MAY_MATTER, False)
            + tool_differences(ma, mb) + server_differences(ma, mb)
            + load_difference(ma, mb))


# ---- verdicts -----------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """One server at one swept value, A against B."""
    server: str
    value: int
    kind: str            # faster | slower | no-change | not-comparable | inconclusive | missing
    text: str
    percent: float | None          # B against A, signed (+ is faster in B)
    a: Spread | None               # req/s over repetitions
    b: Spread | None
    ratios: dict[str, float | None]   # B/A of the medians: rate, p99_ms, rss_end_kb, cpu_us_per_req
    cpu_text: str = ""   # where req/s cannot rank: server CPU per request (metrics.efficiency)

    def said(self) -> str:
        return f"{self.text}; {self.cpu_text}" if self.cpu_text else self.text


def ratio(a: float | None, b: float | None) -> float | None:
    """b/a, or None when either is unknown or a is 0."""
    if a is None or b is None or a == 0:
        return None
    return b / a


def median(s: Spread | None) -> float | None:
    return s.median if s is not None else None


def ratios(a: LevelStats, b: LevelStats) -> dict[str, float | None]:
    return {"rate": ratio(a.rate.median, b.rate.median),
            "p99_ms": ratio(median(a.p99_ms), median(b.p99_ms)),
            "rss_end_kb": ratio(a.rss_end_kb.median, b.rss_end_kb.median),
            "cpu_us_per_req": ratio(a.cpu_us_per_req.median, b.cpu_us_per_req.median)}


def judge(a: LevelStats, b: LevelStats) -> tuple[str, str, float | None]:
    """(kind, text, signed percent) for one server at one level, A against B,
    through the one verdict gate (lab.analyse.metrics.judge): by requests/s, or in
    open loop by p99 latency. kind: faster or slower (B against A; with
    -at-least when the better side was client-bound), else the gate's kind."""
    sa, sb, higher, phrase = metrics.samples(a, b)
    j = metrics.judge(metrics.Sample("A", sa.values, sa.client_bound),
                      metrics.Sample("B", sb.values, sb.client_bound),
                      higher_is_better=higher, better=phrase)
    if j.kind == "missing":
        return "inconclusive", "inconclusive (open loop without latency percentiles)", None
    if j.kind not in metrics.RANKED:
        return j.kind, j.text, None
    x, y = (a.rate.median, b.rate.median) if higher else \
        (b.p99_ms.median if b.p99_ms else 0.0, a.p99_ms.median if a.p99_ms else 0.0)
    pct = 100 * (y / x - 1) if x else None
    kind = "faster" if j.winner == "B" else "slower"
    return kind + ("-at-least" if j.kind == "better-at-least" else ""), j.text, pct


def compare_level(a: LevelStats, b: LevelStats) -> Comparison:
    kind, text, pct = judge(a, b)
    cpu = metrics.efficiency(a, b, ("A", "B"))[1] \
        if metrics.needs_cpu_verdict(kind, a, b) else ""    # req/s cannot rank: CPU per request
    return Comparison(a.server, a.value, kind, text, pct, a.rate, b.rate, ratios(a, b), cpu)


def missing(server: str, value: int, a: LevelStats | None, b: LevelStats | None,
            why: str) -> Comparison:
    return Comparison(server, value, "missing", why, None, a.rate if a else None,
                      b.rate if b else None, {})


def compare_server(name: str, la: list[LevelStats], lb: list[LevelStats]) -> list[Comparison]:
    at_a, at_b = {s.value: s for s in la}, {s.value: s for s in lb}
    out = []
    for value in sorted(set(at_a) | set(at_b)):
        a, b = at_a.get(value), at_b.get(value)
        if a is not None and b is not None:
            out.append(compare_level(a, b))
        else:
            side = "B" if b is None else "A"
            out.append(missing(name, value, a, b, f"missing in {side} (level not measured)"))
    return out


def compare_stats(sa: Stats, sb: Stats) -> list[Comparison]:
    """Every server and level of either run: compared where both measured it."""
    out = []
    for name in list(sa) + [n for n in sb if n not in sa]:
        la, lb = sa.get(name, []), sb.get(name, [])
        if la and lb:
            out += compare_server(name, la, lb)
            continue
        side = "B" if la else "A"           # the run that lacks the server
        why = f"missing in {side} (server not in {side})"
        out += [missing(name, s.value, s, None, why) for s in la]
        out += [missing(name, s.value, None, s, why) for s in lb]
    return out


# ---- the gate: exit 0, 1 (regression) or 3 (nothing compared cleanly) ----------------

# metric: (what it is, higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "rate": ("requests/s", True),
    "p99": ("p99 latency at the offered rate", False),
    "cpu": ("server CPU µs per request", False),
    "rss": ("RSS at the end", False),
    "instructions": ("instructions per request", False),
}
# A level is measured cleanly when no repetition on either side has one of these.
UNCLEAN = ("client-bound", "host-busy", "steal", "failures")
# What the gate says of one metric at one level; the first two are the only
# ones that count as "compared cleanly".
REGRESSION, PASS = "regression", "pass"
NOT_CLEAN, NOT_JUDGED, NOT_APPLICABLE = "not-clean", "not-judged", "not-applicable"
# The run's outcome, as compare.json and the last line say it (exit 0, 1, 3).
OUTCOMES = {Exit.OK: "pass", Exit.FAILED: "regression", Exit.NOT_COMPARABLE: "not-comparable"}


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


def gate(sa: Stats, sb: Stats, costs: tuple[costview.CostAnalysis | None,
                                             costview.CostAnalysis | None],
         ms: tuple[Manifest, Manifest], wanted: tuple[str, ...], min_effect: float,
         cache: Path | None) -> Gate:
    """Every gated metric at every level both runs measured, and the outcome:
    1 when B is worse beyond the threshold at a level measured cleanly in
    both, else 0 when at least one was compared cleanly, else 3."""
    checks: list[Check] = []
    used: dict[str, str] = {}
    ca, cb = cost_levels(costs[0]), cost_levels(costs[1])
    servers = [n for n in sa if n in sb] + [n for (n, lv) in ca if (n, lv) in cb
                                            and n not in sa]
    for name in dict.fromkeys(servers):
        if any(schema.manifest_value(m, f"servers.{name}.role") == "ceiling" for m in ms) and "." not in name:
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


def gate_lines(g: Gate) -> list[str]:
    """The gate's part of compare.md (and of what compare prints)."""
    lines = [f"## Gate: {g.outcome} (exit {g.code})", "",
             f"Gated on {' '.join(g.metrics)}; MIN_EFFECT={g.min_effect_pct:g}%. {g.reason}.",
             ""]
    lines += [f"- noise floor for {name}: {note}" for name, note in g.floors.items()]
    lines += ["", "| server | level | metric | gate | B worse by | threshold | why |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {c.server} | {c.value} | {c.metric} | {c.outcome} | "
              f"{'–' if c.worse_pct is None else f'{c.worse_pct:.1f}%'} | "
              f"{'–' if c.threshold_pct is None else f'{c.threshold_pct:.1f}%'} | "
              f"{c.text.replace('|', '/')} |" for c in g.checks]
    return lines


# ---- text ---------------------------------------------------------------------

def axis_label(m: Manifest) -> str:
    return axis_name(str(schema.manifest_value(m, "params.axis") or "level"))


def table(rows: list[Comparison], level: str) -> list[str]:
    lines = [f"| server | {level} | A req/s median [min–max] | B req/s median [min–max] | "
             "B/A | verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {c.server} | {c.value} | {rng(c.a)} | {rng(c.b)} | "
              f"{times(c.ratios.get('rate'))} | {c.said()} |" for c in rows]
    return lines


def other_ratios(rows: list[Comparison], level: str) -> list[str]:
    lines = [f"| server | {level} | p99 ms B/A | RSS end B/A | CPU µs/req B/A |",
             "|---|---|---|---|---|"]
    lines += [f"| {c.server} | {c.value} | {times(c.ratios.get('p99_ms'))} | "
              f"{times(c.ratios.get('rss_end_kb'))} | {times(c.ratios.get('cpu_us_per_req'))} |"
              for c in rows if c.kind != "missing"]
    return lines


def conditions(m: Manifest) -> str:
    return analysis.conditions(schema.parse_manifest(m, Path(schema.MANIFEST)))


def run_id(run: Path, m: Manifest) -> str:
    return str(m.get("run_id") or run.name)


NOTE = (f"Verdicts: by median requests/s (open loop: by p99 latency), through the lab's one "
        f"verdict gate: \"faster\"/\"slower\" only when the min–max ranges of the repetitions "
        f"do not overlap, with at least {MIN_REPS_FOR_VERDICT} repetitions on each side; a "
        "client-bound figure is a lower bound.")


def markdown(ids: tuple[str, str], ms: tuple[Manifest, Manifest], rows: list[Comparison],
             diffs: list[Difference], forced: bool) -> str:
    level = axis_label(ms[0])
    lines = [f"# Compare {ids[0]} (A) vs {ids[1]} (B)", "",
             f"A: {conditions(ms[0])}.", f"B: {conditions(ms[1])}.", ""]
    hard = [d for d in diffs if d.matters]
    if forced and hard:
        lines += [f"- Warning (FORCE=1): {d.text()} — the figures may not be comparable."
                  for d in hard] + [""]
    lines += table(rows, level) + ["", "## Other ratios (B/A of medians)", ""]
    lines += other_ratios(rows, level)
    lines += ["", "## Differences in conditions", ""]
    soft = [d for d in diffs if not d.matters]
    lines += [f"- {d.text()}" for d in hard + soft] or ["- none recorded"]
    lines += ["", NOTE, ""]
    return "\n".join(lines)


def as_json(ids: tuple[str, str], runs: tuple[Path, Path], ms: tuple[Manifest, Manifest],
            rows: list[Comparison], diffs: list[Difference], forced: bool) -> dict[str, Any]:
    side = [{"run_id": ids[i], "path": str(runs[i]), "conditions": conditions(ms[i])}
            for i in (0, 1)]
    return {"made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "a": side[0], "b": side[1], "axis": schema.manifest_value(ms[0], "params.axis"),
            "forced": forced,
            "warnings": [d.text() for d in diffs if d.matters],
            "differences": [asdict(d) for d in diffs],
            "comparisons": [asdict(c) for c in rows]}


# ---- chart --------------------------------------------------------------------

def num(x: float) -> str:
    return f"{x:g}"


def export(out: Path, stats: Stats, side: str, servers: list[str]) -> None:
    """data/<side>-<server>.dat: value median min max client_bound."""
    data = out / "data"
    data.mkdir(exist_ok=True)
    for name in servers:
        lines = ["# value rate rate_lo rate_hi client_bound"]
        lines += [f"{s.value} {num(s.rate.median)} {num(s.rate.lo)} {num(s.rate.hi)} "
                  f"{int(s.client_bound)}" for s in stats[name]]
        (data / f"{side}-{name}.dat").write_text("\n".join(lines) + "\n")


def chart(out: Path, stats: tuple[Stats, Stats], ids: tuple[str, str],
          ms: tuple[Manifest, Manifest]) -> str | None:
    """compare.png and compare.svg; None, or why they could not be drawn."""
    servers = [n for n in stats[0] if stats[1].get(n) and stats[0][n]]
    if not servers:
        return "no server was measured in both runs"
    export(out, stats[0], "a", servers)
    export(out, stats[1], "b", servers)
    axis = str(schema.manifest_value(ms[0], "params.axis") or "")
    ticks = " ".join(str(v) for v in sorted({s.value for st in stats for n in servers
                                             for s in st[n]}))
    for fmt in ("png", "svg"):
        setup = (f"dir={gp_quote(str(out))}; servers={gp_quote(' '.join(servers))}; "
                 f"label_a={gp_quote(ids[0])}; label_b={gp_quote(ids[1])}; "
                 f"cond_a={gp_quote(f'A: {conditions(ms[0])}')}; "
                 f"cond_b={gp_quote(f'B: {conditions(ms[1])}')}; "
                 f"xlabel={gp_quote(xlabel(axis))}; xticks={gp_quote(ticks)}; fmt='{fmt}'")
        try:
            done = subprocess.run(["gnuplot", "-e", setup, str(PLOTS / "compare.gp")],
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"gnuplot could not run: {e}"
        if done.returncode != 0:
            return f"gnuplot compare.gp failed: {done.stderr.strip()[-500:]}"
    return None


# ---- HTML (built by lab.present.html) -------------------------------------------------------

KIND_CLASS = {"faster": "better", "faster-at-least": "better", "slower": "worse",
              "slower-at-least": "worse"}


def page(ids: tuple[str, str], ms: tuple[Manifest, Manifest], rows: list[Comparison],
         diffs: list[Difference], forced: bool, chart_path: Path | None,
         chart_problem: str | None, g: Gate | None = None) -> str:
    e = html.e
    level = axis_label(ms[0])
    cells = [[e(c.server), e(c.value), e(rng(c.a)), e(rng(c.b)), e(times(c.ratios.get("rate"))),
              f'<span class="{KIND_CLASS.get(c.kind, "")}">{e(c.said())}</span>'] for c in rows]
    others = [[f"{e(c.server)} at {e(level)}={e(c.value)}",
               e(times(c.ratios.get("p99_ms"))), e(times(c.ratios.get("rss_end_kb"))),
               e(times(c.ratios.get("cpu_us_per_req")))] for c in rows if c.kind != "missing"]
    return html.compare_page(html.ComparePage(
        ids=ids, conditions=(conditions(ms[0]), conditions(ms[1])),
        warnings=[f"FORCE=1: {d.text()} — the figures may not be comparable."
                  for d in diffs if d.matters and forced],
        head=["server", level, "A req/s median [min–max]", "B req/s median [min–max]", "B/A",
              "verdict"],
        rows=cells, numeric={1, 2, 3, 4},
        other_head=["server and level", "p99 ms B/A", "RSS end B/A", "CPU µs/req B/A"],
        other_rows=others, note=NOTE, chart=chart_path, chart_problem=chart_problem,
        differences=[d.text() for d in diffs],
        gate_summary=f"{g.outcome} (exit {g.code}): {g.reason}" if g else "",
        gate_notes=[f"GATE={' '.join(g.metrics)}, MIN_EFFECT={g.min_effect_pct:g}%"]
        + [f"noise floor for {n}: {t}" for n, t in g.floors.items()] if g else [],
        gate_head=["server", "level", "metric", "gate", "B worse by", "threshold", "why"],
        gate_rows=[[e(c.server), e(c.value), e(c.metric),
                    f'<span class="{GATE_CLASS.get(c.outcome, "")}">{e(c.outcome)}</span>',
                    e("–" if c.worse_pct is None else f"{c.worse_pct:.1f}%"),
                    e("–" if c.threshold_pct is None else f"{c.threshold_pct:.1f}%"),
                    e(c.text)] for c in (g.checks if g else [])]))


GATE_CLASS = {"regression": "worse", "pass": "better"}


# ---- the command ---------------------------------------------------------------

Costs = costview.CostAnalysis | None


def load(run: Path) -> tuple[Manifest, Stats, Costs] | str:
    """The run's manifest, level statistics and instructions per request
    (make cost runs), or why it cannot be compared."""
    try:
        rec, a = analysis.of(run)
    except schema.RecordError as e:
        return str(e)
    if not a.stats and a.costs is None:
        return f"{run} has no measured levels ({schema.CSV} is missing or empty)"
    return rec.manifest.to_json(), a.stats, a.costs


def refusal(diffs: list[Difference]) -> str:
    hard = [d for d in diffs if d.matters]
    return ("error: these runs were measured under conditions that decide the figures, "
            "so they are not compared:\n" + "\n".join(f"  - {d.text()}" for d in hard)
            + "\nFORCE=1 compares them anyway, with a warning for each difference.")


def same_run(a: Path, b: Path, ma: Manifest, mb: Manifest) -> str | None:
    """Why A and B are one run (its ratios would all be 1.000), or None.
    The same folder is refused; a copy (same run id, same rows) is warned of."""
    if a.resolve() == b.resolve():
        return (f"A and B are the same run folder ({a.resolve()}): every ratio would be "
                "1.000; give B a run of the changed server (make noise SERVER=... measures "
                "this host's own spread)")
    rows = [(r / schema.CSV).read_bytes() if (r / schema.CSV).is_file() else b""
            for r in (a, b)]
    if ma.get("run_id") == mb.get("run_id") and rows[0] == rows[1]:
        return (f"warning: A and B hold the same measurements (run {ma.get('run_id')} and a "
                "copy of it): every ratio is 1.000")
    return None


@dataclass(frozen=True)
class GateSettings:
    metrics: tuple[str, ...] = ("rate", "p99")
    min_effect_pct: float = 5.0
    cache: Path | None = None      # where the A/A floors are kept (None: no floor)


def main(a: Path, b: Path, force: bool, out_root: Path,
         settings: GateSettings = GateSettings()) -> int:
    """Compare run B against run A: 0 B no worse, 1 B worse beyond the noise
    (or the chart failed with the gate passed), 2 refused (bad input), 3
    nothing compared cleanly (lab.setup.exits)."""
    got = [load(a), load(b)]
    errors = [g for g in got if isinstance(g, str)]
    if errors:
        print("\n".join(f"error: {x}" for x in errors), file=sys.stderr)
        return EXIT_REFUSED
    (ma, sa, ca), (mb, sb, cb) = [g for g in got if not isinstance(g, str)]
    same = same_run(a, b, ma, mb)
    if same is not None and not same.startswith("warning:"):
        print(f"error: {same}", file=sys.stderr)
        return EXIT_REFUSED
    if same is not None:
        print(same, file=sys.stderr)
    diffs = differences(ma, mb)
    if any(d.matters for d in diffs) and not force:
        print(refusal(diffs), file=sys.stderr)
        return EXIT_REFUSED
    ids, ms = (run_id(a, ma), run_id(b, mb)), (ma, mb)
    rows = compare_stats(sa, sb)
    g = gate(sa, sb, (ca, cb), ms, settings.metrics, settings.min_effect_pct, settings.cache)
    if not any(c.kind != "missing" for c in rows) and not g.checks:
        print(f"error: {ids[0]} and {ids[1]} have no server measured at the same level in "
              "both: nothing to compare (no folder made)", file=sys.stderr)
        return int(Exit.NOT_COMPARABLE)
    out = folder.new_folder(out_root, f"compare-{ids[0]}-vs-{ids[1]}")
    try:
        text = markdown(ids, ms, rows, diffs, force) + "\n".join(gate_lines(g)) + "\n"
        (out / "compare.md").write_text(text)
        problem = chart(out, (sa, sb), ids, ms) if rows else None
        svg = out / "compare.svg"
        files.write_atomic(out / "compare.html", page(ids, ms, rows, diffs, force,
                                                     svg if svg.is_file() else None, problem,
                                                     g))
        # compare.json last: the index lists a folder with it as a finished comparison
        files.write_json(out / "compare.json",
                          {**as_json(ids, (a, b), ms, rows, diffs, force), "gate": asdict(g)})
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)     # a failed comparison leaves no folder
        raise
    print(text)
    print(f"comparison: {out}", file=sys.stderr)
    try:
        index = html.write_index(out_root)
    except OSError as e:
        index = None
        print(f"note: no index written in {out_root}: {e.strerror or e}", file=sys.stderr)
    if index is not None:
        print(f"index: {index}", file=sys.stderr)
    for name, note in g.floors.items():
        print(f"noise floor for {name}: {note}", file=sys.stderr)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
    print(f"gate: {g.outcome} (exit {g.code}): {g.reason}", file=sys.stderr)
    if problem and g.code == Exit.OK:
        return int(Exit.FAILED)
    return g.code


def gate_settings(environ: Callable[[str, str], str], cache: Path | None) -> GateSettings:
    """GATE and MIN_EFFECT from the environment, checked by their registry
    entries (ConfigError: exit 2)."""
    from lab.setup.params import SETTINGS
    wanted = SETTINGS["GATE"].check(environ("GATE", SETTINGS["GATE"].default)) \
        if SETTINGS["GATE"].check else ("rate", "p99")
    effect = SETTINGS["MIN_EFFECT"].check(environ("MIN_EFFECT", SETTINGS["MIN_EFFECT"].default)) \
        if SETTINGS["MIN_EFFECT"].check else 5.0
    assert isinstance(wanted, tuple) and isinstance(effect, float)
    return GateSettings(tuple(str(w) for w in wanted), effect, cache)


def cli(argv: list[str], environ: Callable[[str, str], str] = os.environ.get) -> int:
    """python3 -m lab.present.compare A B [OUT_ROOT]; FORCE, GATE, MIN_EFFECT from the environment."""
    from lab.setup.params import ConfigError
    if len(argv) not in (2, 3):
        print("usage: python3 -m lab.present.compare RUN_A RUN_B [OUT_ROOT]", file=sys.stderr)
        return EXIT_REFUSED
    a, b = Path(argv[0]), Path(argv[1])
    root = Path(argv[2]) if len(argv) == 3 else a.resolve().parent
    try:
        settings = gate_settings(environ, None)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_REFUSED
    return main(a, b, environ("FORCE", "0") == "1", root, settings)


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
