"""The regression gate of `make compare`: every gated metric (GATE) of each
server at each level measured in both runs, through the lab's one decision
rule (lab.analyse.verdicts.judge, one-sided: is B worse than A?) with δ the
threshold (MIN_EFFECT, or the host's A/A floor from `make noise` when
larger). Two families, each at ALPHA/2 (Bonferroni within each, so the
compare's false-alarm rate stays within ALPHA): one check a server and
metric across the levels both runs measured cleanly (each start's geometric
mean over them: a start covers every level), and the checks at each level.

A client-bound A is a lower bound of A: a B clearly below it is worse.
Where req/s is host-busy, server CPU per request is judged instead, and
said; CPU per request cannot see a slowdown that is not CPU (a sleep, a
lock), so its pass stands only if B's req/s, raised by all the CPU time the
hypervisor and other processes took (an upper bound of B's), is not clearly
below A's (`vetoed`: such a check is not judged, and says why). Its outcome is the exit code of `make compare`: 1 when B is worse than
A by the rule, else 0 when at least one metric was judged, else 3
(lab.setup.exits).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from lab.analyse import claimreasons, costview, decide, floors, metrics, policy, verdicts
from lab.analyse.diff import Stats
from lab.analyse.metrics import LevelStats
from lab.record.manifest import Manifest
from lab.setup.exits import Exit
from lab.setup.servers import ServerSpec

# metric: (what it is, higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "rate": ("requests/s", True),
    "p99": ("p99 latency at the offered rate", False),
    "cpu": ("server CPU µs per request", False),
    "rss": ("RSS at the end", False),
    "instructions": ("instructions per request", False),
}
HOST = policy.HOST_FLAGS    # req/s not clean: server CPU per request judged instead
MAX_LOST = 0.9                   # the most of the server's CPU time a bound may add back
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
    min_effect_pct: float = policy.DELTA_PCT
    cache: Path | None = None      # where the A/A floors are kept (None: no floor)
    alpha: float = policy.ALPHA    # the false-alarm rate of one compare (all its checks)
    chosen: bool = False           # GATE was given (not its default): a paired gate
                                   # judges every level by the one figure it names


@dataclass(frozen=True)
class GateCheck:
    """One gated metric of one server at one level, A against B."""
    server: str
    value: int
    metric: str
    outcome: str           # regression | pass | not-clean | not-judged | not-applicable
    judgement: str | None  # verdicts.judge's kind (better, equivalent, undecided, ...)
    worse_pct: float | None   # how much worse B is than A (negative: better), in %; a
                              # regression's is never negative (lab.analyse.gate.shortfall)
    threshold_pct: float | None
    text: str              # the arithmetic: the rule's figures, interval, α, δ, starts
    levels: tuple[int, ...] = ()   # a check across levels (each start's mean over them)
    reason: str = ""       # one short line: what was found, without the arithmetic

    def where(self) -> str:
        """Its level ("4"), or the levels of a check across them ("across 1, 4")."""
        return f"across {', '.join(map(str, self.levels))}" if self.levels else str(self.value)


@dataclass(frozen=True)
class Gate:
    """The gate's outcome over every check, and what it used."""
    code: int
    outcome: str
    metrics: tuple[str, ...]
    min_effect_pct: float
    floors: dict[str, str]          # server: the floor used (or why none)
    checks: list[GateCheck]
    reason: str                     # one short line: why this outcome
    alpha: float = policy.ALPHA     # ALPHA: the family's false-alarm rate
    alpha_each: float = policy.ALPHA   # each check's: ALPHA over the family (Bonferroni)
    detail: str = ""                # the arithmetic behind the reason (each check's text)
    matched: str = ""               # two servers of other names gated against each other
                                    # (matched_costs), said; "" when names matched


def headline(outcome: str, j: verdicts.Judgement | None, worse: float | None,
             threshold: float | None, text: str, by: str = "") -> str:
    """A check's one line: what the rule found, in a few words; its text
    keeps the arithmetic (the interval, α, δ, the starts). `by`: the figure
    judged where it is not the gated one ("by CPU per request (req/s
    host-busy): ")."""
    if outcome == REGRESSION:
        return f"{by}B worse by {worse or 0:.1f}%, beyond the threshold {threshold or 0:.1f}%"
    if outcome == PASS:
        return f"{by}B no worse than A by {threshold or 0:.1f}% (the threshold) or more"
    d = j.decision if j is not None else None
    if j is not None and d is not None and j.kind == verdicts.UNDECIDED:
        head = d.reason.split(":")[0]
        if d.why == decide.TOO_FEW:
            head += f" for α={decide.pct(100 * d.alpha)}%"
        return f"{by}undecided: {head}"
    said = j.text if j is not None else text
    bound = re.match(r"not comparable \(([^;,]*)", said)
    return by + (f"not comparable ({bound.group(1)})" if bound else
                 re.split(r" \(|; |: ", said, maxsplit=1)[0])


def judged_by(flags: list[str]) -> str:
    """`by` of headline where server CPU per request stands for req/s."""
    names = dict.fromkeys(f.split(" in ")[0] for f in flags)
    return f"by CPU per request (req/s {', '.join(names)}): "


def unclean(s: LevelStats) -> list[str]:
    """The flags that keep a level out of the gate's clean checks (lab.analyse.policy)."""
    return policy.unclean(s.flags, "gate")


def values(s: LevelStats, metric: str) -> tuple[float, ...]:
    if metric == "rate":
        return s.rate.values
    if metric == "p99":
        return s.p99_ms.values if s.p99_ms is not None else ()
    if metric == "cpu":
        return s.cpu_us_per_req.values
    return s.rss_end_kb.values


def host_bound(s: LevelStats, widen: float) -> tuple[float, ...]:
    """Each start's req/s had the server had back all the CPU time the
    hypervisor (steal) and other processes took: in the worst case all of it
    came out of the server's own CPUs (the lab's share times `widen`, the
    lab's CPUs over the server's), at most MAX_LOST. An upper bound of the
    server's req/s on a quiet host, as a server slows at most in proportion
    to the CPU time it loses; () when it has none (client-bound: B may be
    faster than it shows; not ranked; shares not recorded)."""
    if s.client_bound or not s.ranked or len(s.lost_pct) != len(s.rate.values):
        return ()
    return tuple(v / (1 - min(MAX_LOST, widen * lost / 100))
                 for v, lost in zip(s.rate.values, s.lost_pct))


def widen_of(m: Manifest) -> float:
    """The lab's CPUs over the server's (pinning.server_cpus and
    client_cpus, CPU lists as taskset takes them); 2 when not recorded."""
    try:
        server = claimreasons.cpus(m.pinning.server_cpus)
        client = claimreasons.cpus(m.pinning.client_cpus)
    except ValueError:
        return 2.0
    return (server + client) / server if server and client else 2.0


def vetoed(c: GateCheck, va: tuple[float, ...], vb: tuple[float, ...], threshold: float,
           note: str, alpha: float, via: str) -> GateCheck:
    """A pass by server CPU per request (where req/s was not clean), unless
    B's host bound `vb` is still clearly below A's req/s `va` (A's as
    measured: a lower bound of A's where the host took time from it) by the
    rule at the check's α: then the slowdown is one CPU per request cannot
    see, and the check is not judged, with that said. It never makes a
    regression (that would be a second test at the same α)."""
    if c.outcome != PASS or not va or not vb:
        return c
    b = check(c.server, c.value, "rate", va, vb, threshold, note, alpha, a_bound=True)
    if b.outcome != REGRESSION:
        return c
    return replace(c, outcome=NOT_JUDGED, reason=(
        f"req/s {b.worse_pct or 0:.0f}% below A's: a slowdown CPU per request cannot see"),
        text=(
        f"{via}B's server CPU per request is no worse, but its req/s, "
        "even raised by all the CPU time the hypervisor and other processes took (an upper "
        f"bound of B's), is {b.worse_pct or 0:.0f}% below A's: a slowdown CPU per request "
        "cannot see (a sleep, a lock, I/O); not judged: measure on a quiet host"))


def worse_pct(a: float, b: float, higher_is_better: bool) -> float | None:
    """How much worse b is than a, in % of a (negative: better)."""
    if a == 0:
        return None
    return 100 * ((a - b) / a if higher_is_better else (b - a) / a)


def shortfall(worse: float | None, j: verdicts.Judgement, higher: bool) -> tuple[float, str]:
    """How much worse B is, as a regression says it (never a negative
    "worse"): the medians' (`worse`, worse_pct) where they agree with the
    rule, else the rule's own estimate of it (Hodges-Lehmann: A better than
    B by j.percent), and which of the two it is."""
    if worse is not None and worse > 0:
        return worse, "median"
    est = max(j.percent or 0.0, 0.0)     # A better than B by est%: B's figure below or above
    return (100 * (1 - 1 / (1 + est / 100)) if higher else est), "the rule's estimate"


def check(server: str, value: int, metric: str, va: tuple[float, ...],
          vb: tuple[float, ...], threshold: float, floor_note: str, alpha: float,
          a_bound: bool = False, via: str = "", by: str = "") -> GateCheck:
    """One metric through the lab's decision rule (verdicts.judge, one-sided:
    is A better than B, i.e. B worse?) with δ = the threshold (MIN_EFFECT or
    the A/A floor, the larger): "better" is a regression; B shown no
    worse than δ (the upper 1-α bound of A's advantage below δ) passes;
    undecided (too few starts, or an interval that spans δ) is not judged. `a_bound`: A was client-bound, so its
    req/s is a lower bound of A's: a B clearly below it is still a
    regression. `via`: said before the text (CPU per request judged where
    req/s was host-busy), `by`: before the one-line reason (headline)."""
    what, higher = METRICS[metric]
    j = verdicts.judge(verdicts.Sample("A", va, a_bound), verdicts.Sample("B", vb),
                       higher_is_better=higher, better=f"has better {what} than",
                       alpha=alpha, delta_pct=threshold, sided="a")
    d = j.decision
    worse = worse_pct(metrics.spread(list(va)).median, metrics.spread(list(vb)).median,
                      higher) if va and vb else None
    if d is None or (j.kind not in verdicts.RANKED and d.why == decide.TOO_FEW):
        outcome, text = NOT_JUDGED, via + j.text
    elif j.kind in verdicts.RANKED and j.winner == "A":
        worse, how = shortfall(worse, j, higher)
        outcome, text = REGRESSION, (
            f"{via}regression: {what} {worse:.1f}% worse in B ({how}), by at least the "
            f"threshold {threshold:.1f}% ({floor_note}) by the rule: {j.text}")
    elif j.kind != "equivalent":
        outcome, text = NOT_JUDGED, via + j.text
    else:
        outcome, text = PASS, f"{via}pass ({floor_note}): {j.text}"
    return GateCheck(server, value, metric, outcome, j.kind, worse, threshold, text,
                     reason=headline(outcome, j, worse, threshold, text, by))


def level_checks(a: LevelStats, b: LevelStats, wanted: tuple[str, ...],
                 thresholds: dict[str, float], note: str, alpha: float,
                 widen: float = 2.0) -> list[GateCheck]:
    """Each wanted metric at one level. A client-bound A is a lower bound of
    A's req/s (judged); a client-bound B is not (B may be faster than it
    shows). Where req/s is host-busy, steal or client-bound in B, server CPU
    per request (the server's own time, which a client at its limit does not
    bound) is judged instead, and said. Failures are not clean."""
    out = []
    dirty = [f"{f} in {side}" for side, s in (("A", a), ("B", b)) for f in unclean(s)]
    busy = [f"{f} in {side}" for side, s in (("A", a), ("B", b)) for f in HOST
            if s.flags.get(f, 0)] + (["client-bound in B"] if b.client_bound else [])
    blocking = [d for d in dirty if d not in busy and d != "client-bound in A"]
    for metric in (m for m in wanted if m != "instructions"):
        if metric == "rate" and a.open_loop:
            out.append(GateCheck(a.server, a.value, metric, NOT_APPLICABLE, None, None, None,
                                 "requests/s is set by the offered rate in open loop "
                                 "(p99 is gated there)", reason="not gated in open loop"))
        elif metric == "p99" and not a.open_loop:
            out.append(GateCheck(a.server, a.value, metric, NOT_APPLICABLE, None, None, None,
                                 "p99 is gated at a fixed offered rate only (an open-loop "
                                 "client: CLIENT=vegeta)", reason="gated in open loop only"))
        elif metric == "rate" and not blocking and busy:
            via = (f"req/s not clean ({', '.join(busy)}): server CPU per request judged "
                   "instead, the server's own CPU time; ")
            cpu = replace(check(a.server, a.value, "cpu", values(a, "cpu"), values(b, "cpu"),
                                thresholds["cpu"], note, alpha, via=via, by=judged_by(busy)),
                          metric="rate")
            out.append(vetoed(cpu, values(a, "rate"), host_bound(b, widen), thresholds["rate"],
                              note, alpha, via))
        elif metric == "rate" and not blocking:
            out.append(check(a.server, a.value, metric, values(a, metric), values(b, metric),
                             thresholds[metric], note, alpha,
                             a_bound=a.flags.get("client-bound", 0) > 0))
        elif metric == "cpu" and not [d for d in dirty if not d.startswith("client-bound")
                                      and d not in busy]:
            out.append(check(a.server, a.value, metric, values(a, metric), values(b, metric),
                             thresholds[metric], note, alpha))
        elif dirty:
            out.append(GateCheck(a.server, a.value, metric, NOT_CLEAN, None, None, None,
                                 "not measured cleanly: " + ", ".join(dirty),
                                 reason="not measured cleanly: " + ", ".join(
                                     dict.fromkeys(d.split(" in ")[0] for d in dirty))))
        else:
            out.append(check(a.server, a.value, metric, values(a, metric), values(b, metric),
                             thresholds[metric], note, alpha))
    return out


def cost_levels(c: costview.CostAnalysis | None) -> dict[tuple[str, int], costview.LevelCost]:
    if c is None:
        return {}
    return {(s.server, x.level): x for s in c.servers if s.applicable and not s.error
            for x in s.levels}


CostLevels = dict[tuple[str, int], costview.LevelCost]


def matched_costs(ca: CostLevels, cb: CostLevels) -> tuple[str, str] | None:
    """(A's server, B's) when two cost runs counted one server each, under
    other names, as a base's build and the change's are (`myserver.base`
    and `myserver`: docs/ci.md): the gate compares those two, as a paired
    run's gate compares its two servers; None when a name is in both runs
    (matched by name) or a run counted more than one server or none."""
    names_a = {n for n, _ in ca}
    names_b = {n for n, _ in cb}
    if len(names_a) != 1 or len(names_b) != 1 or names_a == names_b:
        return None
    return next(iter(names_a)), next(iter(names_b))


def kernel_share(x: costview.LevelCost) -> float | None:
    """The kernel's % of a server's CPU in its plain starts (/proc's user and
    kernel time, no valgrind; noisy), None when not recorded."""
    if x.user_us is None or x.sys_us is None:
        return None
    total = x.user_us.median + x.sys_us.median
    return 100 * x.sys_us.median / total if total > 0 else None


def kernel_note(x: costview.LevelCost, y: costview.LevelCost) -> str:
    """What an instruction count leaves out, from the cost runs' own plain
    starts: the kernel's share of A's and B's CPU; "" when not recorded."""
    ka, kb = kernel_share(x), kernel_share(y)
    if ka is None or kb is None or x.user_us is None or x.sys_us is None \
            or y.user_us is None or y.sys_us is None:
        return ""
    return (f"; user space only: the kernel's work for the server (TCP, syscalls) is not "
            f"counted, and it took {ka:.0f}% of A's CPU and {kb:.0f}% of B's in "
            f"their plain starts (user + kernel µs a request, noisy: A "
            f"{x.user_us.median:.1f} + {x.sys_us.median:.1f}, B {y.user_us.median:.1f} + "
            f"{y.sys_us.median:.1f}; docs/cost-and-profiles.md)")


def threshold_for(floor: floors.Floor | None, min_effect: float) -> dict[str, float]:
    """Per metric: MIN_EFFECT, or the A/A floor when it is larger."""
    got = floor.floors_pct if floor is not None else {}
    return {m: max(min_effect, got.get(m, 0.0)) for m in METRICS}


def of(sa: Stats, sb: Stats, costs: tuple[costview.CostAnalysis | None,
                                           costview.CostAnalysis | None],
       ms: tuple[Manifest, Manifest], settings: GateSettings) -> Gate:
    """Every gated metric at every level both runs measured, and the outcome:
    1 when a check finds B worse beyond the threshold (by req/s, or by CPU
    per request where only the host or the client set req/s), else 0 when
    one showed B no worse, else 3."""
    wanted, min_effect, cache = settings.metrics, settings.min_effect_pct, settings.cache
    checks: list[GateCheck] = []
    used: dict[str, str] = {}
    ca, cb = cost_levels(costs[0]), cost_levels(costs[1])
    pair = matched_costs(ca, cb) if "instructions" in wanted else None
    matched = ""
    as_a: dict[str, str] = {}           # B's name -> A's, of the matched pair
    if pair is not None:
        as_a = {pair[1]: pair[0]}
        ca = {(pair[1], lv): x for (_, lv), x in ca.items()}
        matched = (f"instructions: A's {pair[0]} against B's {pair[1]}: each cost run "
                   "counted one server, under another name (a base's build and the "
                   "change's), so the two are compared")
    servers = [n for n in sa if n in sb] + [n for (n, lv) in ca if (n, lv) in cb
                                            and n not in sa]
    # two families, each at half of ALPHA: the checks across the levels (one a
    # server and metric) and the checks at each level (Bonferroni within each)
    across = across_checks(sa, sb, wanted, ms, settings, cache)
    each = policy.family_alpha(settings.alpha / 2, family_size(sa, sb, ca, cb, wanted, ms))
    for name in dict.fromkeys(servers):
        if ms[0].role(as_a.get(name, name)) == "ceiling" or ms[1].role(name) == "ceiling":
            in_b = {s.value for s in sb.get(name, [])}
            checks += [GateCheck(name, s.value, metric, NOT_APPLICABLE, None, None, None,
                                 "the ceiling reference is not gated: it measures the host and "
                                 "the client, not a server under test",
                                 reason="the ceiling reference is not gated")
                       for s in sa.get(name, []) if s.value in in_b for metric in wanted]
            continue
        floor, note = floors.matching(cache, name, ms)
        used[name] = note
        short = f"A/A floor of {floor.made}" if floor else f"MIN_EFFECT={min_effect:g}%"
        thresholds = threshold_for(floor, min_effect)
        at_b = {s.value: s for s in sb.get(name, [])}
        for a in sa.get(name, []):
            if a.value in at_b:
                checks += level_checks(a, at_b[a.value], wanted, thresholds, short, each,
                                       widen_of(ms[1]))
        if "instructions" in wanted:
            for (n, level), x in sorted(ca.items()):
                y = cb.get((n, level))
                if n == name and y is not None:
                    via = f"A's {as_a[name]} against B's {name}: " if name in as_a else ""
                    c = check(name, level, "instructions", x.per_request.values,
                              y.per_request.values, thresholds["instructions"], short, each,
                              via=via)
                    checks.append(replace(c, text=c.text + kernel_note(x, y)))
    checks = across + checks
    code, reason, detail = outcome_of(checks, wanted)
    if pair is not None and checks:
        names = f"A's {pair[0]} against B's {pair[1]}"
        reason = f"{reason[:-1]}; {names})" if reason.endswith(")") else f"{reason} ({names})"
    return Gate(int(code), OUTCOMES[code], wanted, min_effect, used, checks, reason,
                settings.alpha, each, detail, matched if checks else "")


def outcome_of(checks: list[GateCheck], wanted: tuple[str, ...]) -> tuple[Exit, str, str]:
    """The exit code, its one-line reason and the arithmetic behind it: 1
    when a check found B worse, else 0 when one showed B no worse, else 3.
    Both gates (of two runs, of a paired run) say it so."""
    worse = [c for c in checks if c.outcome == REGRESSION]
    passed = [c for c in checks if c.outcome == PASS]
    if worse:
        more = f" and {len(worse) - 1} more" if len(worse) > 1 else ""
        return Exit.FAILED, (f"B is worse than A beyond the noise: {worse[0].server} "
                             f"{worse[0].where()} {worse[0].metric}{more}"), \
            "; ".join(f"{c.server} {c.where()} {c.metric}: {c.text}" for c in worse)
    if passed:
        return Exit.OK, f"B is no worse than A ({len(passed)} check(s) passed)", ""
    gated = [c for c in checks if c.outcome != NOT_APPLICABLE]
    heads = list(dict.fromkeys(c.reason or c.text for c in gated or checks))
    if not heads:
        return Exit.NOT_COMPARABLE, "nothing gated: no level was measured in both runs", \
            why_nothing(checks, wanted)
    more = f" (+{len(heads) - 1} other reason{'s' * (len(heads) > 2)})" if len(heads) > 1 else ""
    return Exit.NOT_COMPARABLE, f"nothing {'decided' if gated else 'gated'}: {heads[0]}{more}", \
        why_nothing(checks, wanted)


def per_start(levels: list[LevelStats], metric: str) -> tuple[float, ...]:
    """Each start's geometric mean of the metric over `levels` (a start that
    lacks one of them, or has a figure of 0 there, has none)."""
    per: dict[int, list[float]] = {}
    for s in levels:
        vals = values(s, metric)
        if len(vals) != len(s.reps):
            return ()
        for rep, v in zip(s.reps, vals):
            if v > 0:
                per.setdefault(rep, []).append(math.log(v))
    return tuple(math.exp(sum(xs) / len(xs)) for xs in per.values() if len(xs) == len(levels))


@dataclass(frozen=True)
class PlannedCheck:
    """One check across levels, planned before the family's α is known (its
    size is the number of them)."""
    server: str
    metric: str                # the gated metric the check stands for
    judged: str                # the metric judged: the same, or cpu where req/s is not clean
    a: list[LevelStats]        # A's levels it is taken across
    b: list[LevelStats]        # B's, the same values
    threshold: float           # δ of the judged metric (MIN_EFFECT or the A/A floor)
    floor_note: str            # which: "MIN_EFFECT=5%" or "A/A floor of ..."
    why: str                   # said before the text ("" when the metric is judged itself)
    by: str                    # said before the one-line reason (headline), likewise
    rate_threshold: float      # δ of req/s, for the host bound's veto


def across_checks(sa: Stats, sb: Stats, wanted: tuple[str, ...],
                  ms: tuple[Manifest, Manifest], settings: GateSettings,
                  cache: Path | None) -> list[GateCheck]:
    """One check a server and gated metric across every level both runs
    measured cleanly (no flag of UNCLEAN on either side): each start's mean
    over those levels is one value, so a sweep of many levels needs no more
    starts than one level. Where fewer than two levels are clean for req/s
    but some are only host-busy, steal or client-bound (the sequential design's unclean flags in lab.analyse.policy:
    no failures, no client that stopped, no answer that changed), req/s is
    judged across those by server CPU per request, and said. The family: these checks, each at ALPHA/2 over
    their number."""
    planned: list[PlannedCheck] = []
    for name in sa:
        if name not in sb or any(m.role(name) == "ceiling" for m in ms):
            continue
        at_b = {s.value: s for s in sb[name]}
        common = [(a, at_b[a.value]) for a in sa[name] if a.value in at_b]
        pairs = [(a, b) for a, b in common if not unclean(a) and not unclean(b)]
        # levels unclean only where the host or a client set req/s: CPU per request
        sound = [(a, b) for a, b in common
                 if set(unclean(a) + unclean(b)) <= set(policy.UNCLEAN["sequential"])]
        if not common:
            continue
        floor, _ = floors.matching(cache, name, ms)
        short = f"A/A floor of {floor.made}" if floor else \
            f"MIN_EFFECT={settings.min_effect_pct:g}%"
        thresholds = threshold_for(floor, settings.min_effect_pct)
        open_loop = common[0][0].open_loop
        for metric in wanted:
            if metric == "instructions" or (metric == "rate" and open_loop) or \
                    (metric == "p99" and not open_loop):
                continue
            if len(pairs) >= 2:
                planned.append(PlannedCheck(name, metric, metric, [a for a, _ in pairs],
                                 [b for _, b in pairs], thresholds[metric], short, "", "",
                                 thresholds[metric]))
            elif metric == "rate" and len(sound) > len(pairs):
                dirty = sorted({f for a, b in sound for f in unclean(a) + unclean(b)})
                planned.append(PlannedCheck(name, metric, "cpu", [a for a, _ in sound],
                                 [b for _, b in sound], thresholds["cpu"], short,
                                 f"req/s not clean ({', '.join(dirty)}): server CPU per request "
                                 "judged instead, the server's own CPU time; ", judged_by(dirty),
                                 thresholds["rate"]))
    each = policy.family_alpha(settings.alpha / 2, len(planned))
    widen = widen_of(ms[1])
    out = []
    for t in planned:
        lv = tuple(s.value for s in t.a)
        via = f"across {', '.join(map(str, lv))}: {t.why}"
        c = check(t.server, lv[0], t.judged, per_start(t.a, t.judged), per_start(t.b, t.judged),
                  t.threshold, t.floor_note, each, via=via, by=t.by)
        bounds = [host_bound(s, widen) for s in t.b]
        if t.judged != t.metric and all(s.ranked for s in t.a) and all(bounds):
            bound = [replace(s, rate=metrics.spread(list(v))) for s, v in zip(t.b, bounds)]
            c = vetoed(c, per_start(t.a, "rate"), per_start(bound, "rate"), t.rate_threshold,
                       t.floor_note, each, via)
        out.append(replace(c, levels=lv, metric=t.metric))
    return out


def family_size(sa: Stats, sb: Stats, ca: dict[tuple[str, int], costview.LevelCost],
                cb: dict[tuple[str, int], costview.LevelCost], wanted: tuple[str, ...],
                ms: tuple[Manifest, Manifest]) -> int:
    """How many checks the rule may run (the family of one compare): each
    gated metric that applies, at each level of each server in both runs
    (not the ceiling), before any is judged."""
    n = 0
    for name in sa:
        if name not in sb or any(m.role(name) == "ceiling" for m in ms):
            continue
        at_b = {s.value: s for s in sb[name]}
        for a in sa[name]:
            if a.value in at_b:
                n += sum(1 for m in wanted if m not in ("instructions",)
                         and not (m == "rate" and a.open_loop)
                         and not (m == "p99" and not a.open_loop))
    n += sum(1 for k in ca if k in cb) if "instructions" in wanted else 0
    return max(1, n)


def why_nothing(checks: list[GateCheck], wanted: tuple[str, ...]) -> str:
    if not checks:
        return (f"no level of GATE={' '.join(wanted)} was measured in both runs "
                "(instructions: make cost runs only)")
    shown = [c for c in checks if c.outcome != NOT_APPLICABLE] or checks
    reasons: dict[str, list[str]] = {}
    for c in shown:
        reasons.setdefault(c.text, []).append(f"{c.server} {c.where()} {c.metric}")
    return "; ".join(f"{text} [{', '.join(where)}]" for text, where in reasons.items())
