"""A paired run's verdicts (PAIRED=duet or rmit): its two servers started
together as start pairs (lab.measure.pair), each pair one value.

At each level (a concurrency) the figure that decides is chosen by
lab.analyse.policy: req/s where one request was in flight a side, or where
the servers did not saturate their CPUs, and no client was the limit; else
server CPU per request. A pair's value is its mean log advantage of A
over B across the levels used (positive: A better), and the rule is the
exact paired one (lab.analyse.paired), looks replayed under REPEAT=auto.

Before any verdict, the seats are checked: odd pairs put A on seat 1, even
pairs on seat 2, so a seat that favours its occupant shows as a difference
between the odd and the even pairs (decide's rank test at α). Such a pair is
unbalanced: the two sides did not see the same conditions, so the run says
so and ranks nothing, rather than call the seat's effect the servers'.
"""
from __future__ import annotations

import math
import statistics

from lab.analyse import decide, paired, policy
from lab.analyse.metrics import FAILED_SHARE_PCT, LevelStats
from lab.analyse.verdicts import CPU_PHRASE, Judgement, LookSchedule, Sample, Verdict, from_decision

WHAT = {"rate": "requests/s", "cpu": "server CPU per request"}


def busy_pct(s: LevelStats) -> dict[int, float]:
    """Each pair's server CPU, % of one CPU: CPU per request times req/s."""
    if len(s.rate.values) != len(s.reps) or len(s.cpu_us_per_req.values) != len(s.reps):
        return {}
    return {r: us * rate / 1e4 for r, us, rate in
            zip(s.reps, s.cpu_us_per_req.values, s.rate.values)}


def figures(la: list[LevelStats], lb: list[LevelStats], at: list[int], shared: bool,
            cpus: int = 1) -> tuple[dict[int, str], str]:
    """The figure that decides at each level both measured whole (no
    unranked repetition, failures within FAILED_SHARE_PCT), and why a level
    was left out ("" when none was). `cpus`: each seat's server CPUs;
    `shared`: both servers ran on them at once (their loads add up)."""
    ba, bb = {s.value: s for s in la}, {s.value: s for s in lb}
    out: dict[int, str] = {}
    left: list[str] = []
    for v in at:
        a, b = ba.get(v), bb.get(v)
        if a is None or b is None:
            continue
        if not (a.ranked and b.ranked) or max(a.failed_pct, b.failed_pct) > FAILED_SHARE_PCT:
            left.append(f"{v} (not ranked or failing)")
            continue
        xa, xb = busy_pct(a), busy_pct(b)
        both = [((xa[r] + x) if shared else max(xa[r], x)) / max(1, cpus)
                for r, x in xb.items() if r in xa]
        bound = any(x.flags.get(f, 0) for x in (a, b) for f in policy.PAIRED_UNCLEAN)
        out[v] = policy.paired_figure(statistics.median(both) if both else 0.0, bound, v)
    return out, ", ".join(left)


def advantages(la: list[LevelStats], lb: list[LevelStats], used: dict[int, str]
               ) -> dict[int, float]:
    """Pair (rep): A's mean log advantage over B across the levels `used`,
    each by its figure (req/s: log A/B; CPU per request: log B/A), for the
    pairs that measured every one of them on both sides."""
    ba, bb = {s.value: s for s in la}, {s.value: s for s in lb}
    per: dict[int, list[float]] = {}
    for v, fig in used.items():
        def values(s: LevelStats) -> dict[int, float]:
            vals = s.rate.values if fig == "rate" else s.cpu_us_per_req.values
            return dict(zip(s.reps, vals)) if len(vals) == len(s.reps) else {}
        xa, xb = values(ba[v]), values(bb[v])
        for rep in xa.keys() & xb.keys():
            if xa[rep] > 0 and xb[rep] > 0:
                d = math.log(xa[rep] / xb[rep])
                per.setdefault(rep, []).append(d if fig == "rate" else -d)
    return {rep: sum(ds) / len(ds) for rep, ds in sorted(per.items()) if len(ds) == len(used)}


def balance(adv: dict[int, float], alpha: float, delta_pct: float) -> decide.Decision:
    """The seats' effect: A's advantage on seat 1 (odd pairs) against seat 2
    (even pairs), by decide's exact rank test. "better" either way: a seat,
    not a server, made the difference."""
    odd = [math.exp(d) for r, d in adv.items() if r % 2 == 1]
    even = [math.exp(d) for r, d in adv.items() if r % 2 == 0]
    return decide.decide(odd, even, alpha=alpha, delta_pct=delta_pct)


def unbalanced_text(d: decide.Decision) -> str:
    """'unbalanced: ...' when the seats' check found an effect, else ""."""
    if d.outcome != decide.BETTER:
        return ""
    seat = 1 if d.a_better else 2
    # A on seat 1 against A on seat 2 differ by twice the seat's effect
    half = 100 * (math.sqrt(1 + abs(d.estimate_pct) / 100) - 1)
    return (f"unbalanced: seat {seat} favoured whichever server sat on it by about "
            f"{half:.0f}% ({d.stated()}): the two sides did not see the same conditions, so "
            "the pair is not ranked (docs/methodology.md#paired-runs)")


def primary(name_a: str, la: list[LevelStats], name_b: str, lb: list[LevelStats],
            at: list[int], alpha: float, delta_pct: float, looks: LookSchedule, mode: str,
            shared: bool, cpus: int = 1) -> Verdict:
    """One verdict for the pair across the levels `at`; REPEAT=auto: the
    looks replayed (the first k pairs), the first look that decided."""
    return judged(name_a, la, name_b, lb, at, alpha, delta_pct, looks, mode, shared, cpus)[0]


def judged(name_a: str, la: list[LevelStats], name_b: str, lb: list[LevelStats],
           at: list[int], alpha: float, delta_pct: float, looks: LookSchedule, mode: str,
           shared: bool, cpus: int = 1, sided: str = "two") -> tuple[Verdict, Judgement | None]:
    """primary, with the judgement it stands on (None: the rule did not run);
    `sided` "a": only "A better" is asked (the paired gate: is B worse?)."""
    under = policy.PAIRED_WORDS.get(mode, f"under {mode}")
    used, left = figures(la, lb, at, shared, cpus)
    if not used:
        return Verdict(at[0] if at else 0, name_a, name_b, "missing", None,
                       f"not measured whole at a common level ({left or 'none'})",
                       levels=tuple(at), metric="", paired=mode), None
    kinds = sorted(set(used.values()))
    what = " and ".join(
        f"{WHAT[k]} at {', '.join(str(v) for v, f in used.items() if f == k)}" for k in kinds)
    adv = advantages(la, lb, used)
    lv = tuple(used)
    text = f"across {len(used)} level{'s' * (len(used) != 1)} by {what}, {under}: "
    off = f" (left out: {left})" if left else ""
    seats = balance(adv, alpha, delta_pct)
    tilt = unbalanced_text(seats)
    if tilt:
        return Verdict(lv[0], name_a, name_b, "not-comparable", None, text + tilt + off,
                       alpha=alpha, delta_pct=delta_pct, starts=(len(adv), len(adv)),
                       levels=lv, metric=what, paired=mode), None
    phrase = "is faster than" if kinds == ["rate"] else \
        CPU_PHRASE if kinds == ["cpu"] else "does better than"
    j = None
    for k in looks.at(max(adv, default=0)):
        first = [d for r, d in adv.items() if r <= k]
        d = paired.decide_paired([math.exp(x) for x in first], [1.0] * len(first),
                                 alpha=looks.alpha(alpha, k), delta_pct=delta_pct, sided=sided)
        j = from_decision(Sample(name_a, ()), Sample(name_b, ()), d, True, phrase)
        if j.kind in ("better", "equivalent"):
            break
    if j is None:
        return Verdict(lv[0], name_a, name_b, "missing", None, text + "no whole pair" + off,
                       levels=lv, metric=what, paired=mode), None
    if j.winner is not None and j.loser is not None:
        return Verdict(lv[0], j.winner, j.loser, j.kind.replace("better", "faster"), j.percent,
                       text + j.text + off, alpha=j.alpha, delta_pct=j.delta_pct,
                       starts=j.starts, levels=lv, metric=what, paired=mode), j
    return Verdict(lv[0], name_a, name_b, j.kind, j.percent, text + j.text + off,
                   alpha=j.alpha, delta_pct=j.delta_pct, starts=j.starts, levels=lv,
                   metric=what, paired=mode), j


def primaries(stats: dict[str, list[LevelStats]], at: list[int], mode: str, shared: bool,
              alpha: float = policy.ALPHA, delta_pct: float = policy.DELTA_PCT,
              looks: LookSchedule = LookSchedule(), cpus: int = 1) -> list[Verdict]:
    """The paired run's primary verdict (its one pair of servers)."""
    (a, la), (b, lb) = list(stats.items())[:2]
    return [primary(a, la, b, lb, at, alpha, delta_pct, looks, mode, shared, cpus)]


def verdicts(stats: dict[str, list[LevelStats]], at: list[int], mode: str, shared: bool,
             alpha: float = policy.ALPHA, delta_pct: float = policy.DELTA_PCT,
             looks: LookSchedule = LookSchedule(), cpus: int = 1) -> list[Verdict]:
    """The pair at each level alone: the secondary verdicts, one family
    (each at α over the levels, Bonferroni)."""
    (a, la), (b, lb) = list(stats.items())[:2]
    each = alpha / max(1, len(at))
    return [primary(a, la, b, lb, [v], each, delta_pct, looks, mode, shared, cpus)
            for v in at]
