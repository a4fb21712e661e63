"""Two runs side by side, read: what differs in the conditions they were
measured under, and each server at each swept value, A against B.

The per-level verdict goes through the lab's one decision rule
(lab.analyse.verdicts.judge, lab.analyse.decide): faster or slower by at
least δ at α, equivalent within ±δ, or undecided with the reason.
Conditions that decide the figures (CPUs, topology, client,
connection mode, swept axis) are marked `matters`: `make compare` refuses
them unless forced; lesser differences are listed. The regression gate is
lab.analyse.gate; what `make compare` writes and prints, lab.present.compare.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.analyse import analysis, costview, verdicts
from lab.analyse.metrics import LevelStats, Spread
from lab.record import files
from lab.record.manifest import Manifest
from lab.record.rows import CSV
from lab.setup.whynot import Reason

Stats = dict[str, list[LevelStats]]
Costs = costview.CostAnalysis | None
# one condition of a run: what it is called, and its value in a manifest (None: not recorded)
Condition = tuple[str, Callable[[Manifest], object]]


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


# The conditions several readers compare (lab.analyse.floors, lab.analyse.history).
TOPOLOGY: Condition = ("topology", lambda m: m.topology)
CLIENT: Condition = ("client tool", lambda m: m.client.tool)
CONNECTION: Condition = ("connection mode", lambda m: m.client.connection)
SERVER_CPUS: Condition = ("server CPUs (pinning)", lambda m: m.pinning.server_cpus)
CLIENT_CPUS: Condition = ("client CPUs (pinning)", lambda m: m.pinning.client_cpus)
AXIS: Condition = ("swept axis", lambda m: m.params.axis)
CORES: Condition = ("host CPU count", lambda m: m.host.cores)
HOSTNAME: Condition = ("host", lambda m: m.host.hostname)
# the lab's noisy neighbour (NEIGHBOUR): its processes per CPU, 0 (none) in older runs
NEIGHBOUR: Condition = ("neighbour processes per CPU (NEIGHBOUR)",
                        lambda m: m.params.neighbour or 0)

# Conditions that decide the figures: a difference refuses the comparison.
MATTERS: list[Condition] = [
    CORES,
    ("usable CPUs", lambda m: m.host.usable_cpus),
    TOPOLOGY, CLIENT, CONNECTION, AXIS, NEIGHBOUR,
]

# Conditions that may move the figures: listed, never refused.
MAY_MATTER: list[Condition] = [
    ("kernel", lambda m: m.host.kernel),
    ("OS", lambda m: m.host.os),
    ("CPU model", lambda m: m.host.cpu_model),
    ("memory GB", lambda m: m.host.memory_gb),
    ("client version", lambda m: m.client.version),
    ("client threads", lambda m: m.client.threads),
    SERVER_CPUS, CLIENT_CPUS,
    ("duration per level (s)", lambda m: m.params.duration_s),
    ("repetitions", lambda m: m.planned.repeat.text()),
    ("warm-up auto", lambda m: m.params.warmup_auto),
    ("warm-up (s)", lambda m: m.params.warmup_s),
    ("warm-up cap (s)", lambda m: m.params.warmup_max_s),
    ("server workers", lambda m: m.params.workers),
    ("accept backlog", lambda m: m.params.backlog),
    ("lab commit", lambda m: m.lab.get("commit")),
    ("lab tree dirty", lambda m: m.lab.get("dirty")),
    ("run status", lambda m: m.status),
]


def condition_differences(ma: Manifest, mb: Manifest, conditions: list[Condition],
                          matters: bool) -> list[Difference]:
    out = []
    for what, of in conditions:
        a, b = of(ma), of(mb)
        if a != b:
            out.append(Difference(what, shown(a), shown(b), matters))
    return out


def tool_differences(ma: Manifest, mb: Manifest) -> list[Difference]:
    """Every tool version recorded by either run (siege, wrk, java, nginx, ...)."""
    ta, tb = ma.tools, mb.tools
    return [Difference(f"{name} version", shown(ta.get(name)), shown(tb.get(name)), False)
            for name in sorted(set(ta) | set(tb)) if ta.get(name) != tb.get(name)]


def server_differences(ma: Manifest, mb: Manifest) -> list[Difference]:
    """Framework version and recorded facts (java_version, ...) of servers in both runs."""
    out = []
    for name in [n for n in ma.servers if n in mb.servers]:
        a, b = ma.servers[name], mb.servers[name]
        if a.version != b.version:
            out.append(Difference(f"{name} framework version", shown(a.version or None),
                                  shown(b.version or None), False))
        fa, fb = a.facts or {}, b.facts or {}
        for key in sorted(set(fa) | set(fb)):
            if fa.get(key) != fb.get(key):
                out.append(Difference(f"{name} {key}", shown(fa.get(key)),
                                      shown(fb.get(key)), False))
    return out


def load_difference(ma: Manifest, mb: Manifest) -> list[Difference]:
    """The 1-minute load average at the start, when it differs at one decimal."""
    def first(m: Manifest) -> str:
        load = m.host.load_average_at_start
        return f"{load[0]:.1f}" if load else shown(None)
    a, b = first(ma), first(mb)
    return [] if a == b else [Difference("load average at start (1 min)", a, b, False)]


def paired_difference(ma: Manifest, mb: Manifest) -> list[Difference]:
    """A paired run's figures are each server's beside the other (PAIRED:
    under duet, a shared CPU), not its own on the host: against a run of
    one server at a time, or of the other design, they matter."""
    a, b = ma.planned.design, mb.planned.design
    alone = "(one server at a time)"
    return [] if a == b else [Difference("paired runs (PAIRED)", a or alone, b or alone, True)]


def differences(ma: Manifest, mb: Manifest) -> list[Difference]:
    """What differs between the runs' conditions: those that matter first."""
    return (paired_difference(ma, mb) + condition_differences(ma, mb, MATTERS, True)
            + condition_differences(ma, mb, MAY_MATTER, False)
            + tool_differences(ma, mb) + server_differences(ma, mb)
            + load_difference(ma, mb))


# ---- verdicts -----------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """One server at one swept value, A against B."""
    server: str
    value: int
    kind: str            # faster | slower | equivalent | undecided | not-comparable | missing
    text: str
    percent: float | None          # B against A, signed (+ is faster in B)
    a: Spread | None               # req/s over repetitions
    b: Spread | None
    ratios: dict[str, float | None]   # B/A of the medians: rate, p99_ms, rss_end_kb, cpu_us_per_req
    cpu_text: str = ""   # where req/s cannot rank: server CPU per request (verdicts.efficiency)

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
    through the one judge (lab.analyse.verdicts.judge): by requests/s, or in
    open loop by p99 latency. kind: faster or slower (B against A; with
    -at-least when the better side was client-bound), else the gate's kind."""
    sa, sb, higher, phrase = verdicts.samples(a, b)
    j = verdicts.judge(verdicts.Sample("A", sa.values, sa.client_bound),
                       verdicts.Sample("B", sb.values, sb.client_bound),
                       higher_is_better=higher, better=phrase)
    if j.kind == "missing":
        return "undecided", "undecided (open loop without latency percentiles)", None
    if j.kind not in verdicts.RANKED:
        return j.kind, j.text, None
    x, y = (a.rate.median, b.rate.median) if higher else \
        (b.p99_ms.median if b.p99_ms else 0.0, a.p99_ms.median if a.p99_ms else 0.0)
    pct = 100 * (y / x - 1) if x else None
    kind = "faster" if j.winner == "B" else "slower"
    return kind + ("-at-least" if j.kind == "better-at-least" else ""), j.text, pct


def compare_level(a: LevelStats, b: LevelStats) -> Comparison:
    kind, text, pct = judge(a, b)
    cpu = verdicts.efficiency(a, b, ("A", "B"))[1] \
        if verdicts.needs_cpu_verdict(kind, a, b) else ""    # req/s cannot rank: CPU per request
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


# ---- the runs ------------------------------------------------------------------

def load(run: Path) -> tuple[Manifest, Stats, Costs] | str:
    """The run's manifest, level statistics and instructions per request
    (make cost runs), or why it cannot be compared."""
    try:
        rec, a = analysis.of(run)
    except files.RecordError as e:
        return str(e)
    if not a.stats and a.costs is None:
        return f"{run} has no measured levels ({CSV} is missing or empty)"
    return rec.manifest, a.stats, a.costs


def why_not_two_runs(a: Path, b: Path, ma: Manifest, mb: Manifest) -> Reason:
    """Why A and B are not two runs (their ratios would all be 1.000), or None
    when they are. The same folder is an error; a copy (same run id, same
    rows) is a reason starting "warning:", to print and go on."""
    if a.resolve() == b.resolve():
        return (f"A and B are the same run folder ({a.resolve()}): every ratio would be "
                "1.000; give B a run of the changed server (make noise SERVER=... measures "
                "this host's own spread)")
    rows = [(r / CSV).read_bytes() if (r / CSV).is_file() else b""
            for r in (a, b)]
    if ma.run_id == mb.run_id and rows[0] == rows[1]:
        return (f"warning: A and B hold the same measurements (run {ma.run_id} and a "
                "copy of it): every ratio is 1.000")
    return None
