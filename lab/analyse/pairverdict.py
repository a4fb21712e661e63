"""A paired run's verdicts (PAIRED=duet or rmit): its two servers started
together as start pairs (lab.measure.pair), each pair one value.

At each level (a concurrency) the figure that decides is chosen by
lab.analyse.policy from the level and the client alone: req/s where one
request was in flight a side and no client was the limit, else server CPU
per request. A level is measured in slices (lab.measure.pair): the pair's
figure there is the Hodges-Lehmann estimate of its slices' log ratios, so a
burst on one slice of one side cannot swing it. A pair's value is its mean log advantage
of A over B across the levels used (positive: A better), and the rule is the
exact paired one (lab.analyse.paired), looks replayed under REPEAT=auto
(α spent over them: lab.analyse.policy.LookSchedule). "Equivalent" needs
every figure a level measures inside ±δ: req/s beside CPU per request.

Before any verdict, the seats are checked: odd pairs put A on seat 1, even
pairs on seat 2, so a seat that favours its occupant shows as a difference
between the odd and the even pairs (decide's rank test at α). Such a pair is
unbalanced: the two sides did not see the same conditions, so the run says
so and ranks nothing, rather than call the seat's effect the servers'.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import replace

from lab.analyse import decide, paired, policy
from lab.analyse.metrics import FAILED_SHARE_PCT, LevelStats
from lab.analyse.policy import LookSchedule
from lab.analyse.verdicts import CPU_PHRASE, Judgement, Sample, Verdict, from_decision

WHAT = {"rate": "requests/s", "cpu": "server CPU per request"}


def figures(la: list[LevelStats], lb: list[LevelStats], at: list[int], gate: str = ""
            ) -> tuple[dict[int, str], str]:
    """The figure that decides at each level both measured whole (no
    unranked repetition, failures within FAILED_SHARE_PCT), from the level
    and the client alone (lab.analyse.policy.paired_figure; `gate`: make
    compare's GATE, rate or cpu, chooses it), and why a level was left out
    ("" when none was)."""
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
        bound = not all(policy.is_clean(x.flags, "paired") for x in (a, b))
        out[v] = policy.paired_figure(bound, v, gate)
    return out, ", ".join(left)


def level_logs(s: LevelStats, fig: str) -> dict[int, float | list[float]]:
    """Start (rep): the level's figure as a log, or each slice's (a sliced
    level: lab.measure.pair), where every one is above 0."""
    out: dict[int, float | list[float]] = {}
    sliced = dict(s.slices)
    vals = s.rate.values if fig == "rate" else s.cpu_us_per_req.values
    whole = dict(zip(s.reps, vals)) if len(vals) == len(s.reps) else {}
    for rep in set(whole) | set(sliced):
        parts = [r if fig == "rate" else c for r, c in sliced.get(rep, ())]
        if parts and all(x > 0 for x in parts):
            out[rep] = [math.log(x) for x in parts]
        elif rep in whole and whole[rep] > 0:
            out[rep] = math.log(whole[rep])
    return out


def pair_log_ratio(xa: float | list[float], xb: float | list[float]) -> float:
    """A pair's log ratio A/B at one level where both sides were sliced alike
    (slice k of A measured with slice k of B): the Hodges-Lehmann estimate of
    its slices' log ratios (the median of their Walsh averages: Hodges and
    Lehmann, Ann. Math. Statist. 34, 1963), robust to a slice a burst swung
    (with 5 slices, one wild slice cannot carry it past the others) and
    nearly as precise as their mean where none was (measured: 20-60% less
    spread between pairs than the plain median of 3 slices of CPU per
    request, whose /proc ticks it rounds). Turned with A and B, so the
    paired test stays exact. Else the whole level's."""
    if isinstance(xa, list) and isinstance(xb, list) and len(xa) == len(xb):
        return paired.hodges_lehmann(paired.walsh([x - y for x, y in zip(xa, xb)]))
    whole_a = statistics.fmean(xa) if isinstance(xa, list) else xa
    whole_b = statistics.fmean(xb) if isinstance(xb, list) else xb
    return whole_a - whole_b


def advantages(la: list[LevelStats], lb: list[LevelStats], used: dict[int, str]
               ) -> dict[int, float]:
    """Pair (rep): A's mean log advantage over B across the levels `used`,
    each by its figure (req/s: log A/B; CPU per request: log B/A) and, where
    the level was sliced, the Hodges-Lehmann estimate of its slices'
    (pair_log_ratio), for the pairs that measured every one of them on both
    sides."""
    ba, bb = {s.value: s for s in la}, {s.value: s for s in lb}
    per: dict[int, list[float]] = {}
    for v, fig in used.items():
        xa, xb = level_logs(ba[v], fig), level_logs(bb[v], fig)
        for rep in xa.keys() & xb.keys():
            d = pair_log_ratio(xa[rep], xb[rep])
            per.setdefault(rep, []).append(d if fig == "rate" else -d)
    return {rep: sum(ds) / len(ds) for rep, ds in sorted(per.items()) if len(ds) == len(used)}


def balance(adv: dict[int, float], alpha: float, delta_pct: float) -> decide.Decision:
    """The seats' effect: A's advantage on seat 1 (odd pairs) against seat 2
    (even pairs), by decide's exact rank test. "better" either way: a seat,
    not a server, made the difference."""
    odd = [math.exp(d) for r, d in adv.items() if r % 2 == 1]
    even = [math.exp(d) for r, d in adv.items() if r % 2 == 0]
    return decide.decide(odd, even, alpha=alpha, delta_pct=delta_pct)


def seat_effect(d: decide.Decision) -> tuple[int, float] | None:
    """The seat that favoured whichever server sat on it, and by about how
    much (%), where the seats' check (`balance`) found one; else None."""
    if d.outcome != decide.BETTER:
        return None
    # A on seat 1 against A on seat 2 differ by twice the seat's effect
    return (1 if d.a_better else 2), 100 * (math.sqrt(1 + abs(d.estimate_pct) / 100) - 1)


def unbalanced_text(d: decide.Decision) -> str:
    """'unbalanced: ...' when the seats' check found an effect, else ""."""
    found = seat_effect(d)
    if found is None:
        return ""
    seat, half = found
    return (f"unbalanced: seat {seat} favoured whichever server sat on it by about "
            f"{half:.0f}% ({d.stated()}): the two sides did not see the same conditions, so "
            "the pair is not ranked (docs/methodology.md#paired-runs)")


def primary(name_a: str, la: list[LevelStats], name_b: str, lb: list[LevelStats],
            at: list[int], alpha: float, delta_pct: float, looks: LookSchedule, mode: str,
            gate: str = "") -> Verdict:
    """One verdict for the pair across the levels `at`; REPEAT=auto: the
    looks replayed (the first k pairs), the first look that decided."""
    return judged(name_a, la, name_b, lb, at, alpha, delta_pct, looks, mode, gate=gate)[0]


def decided_at(adv: dict[int, float], k: int, alpha: float, delta_pct: float,
               sided: str) -> decide.Decision:
    """The paired rule on the first k pairs of `adv`."""
    first = [d for r, d in adv.items() if r <= k]
    return paired.decide_paired([math.exp(x) for x in first], [1.0] * len(first),
                                alpha=alpha, delta_pct=delta_pct, sided=sided)


def other_check(la: list[LevelStats], lb: list[LevelStats], used: dict[int, str], k: int,
                alpha: float, delta_pct: float, sided: str) -> str:
    """An "equivalent" on the deciding figures stands only where the other
    figure that measures the servers is equivalent too, at the same α (an
    intersection-union test: no α is split): "" where it is (or no level
    measures it), else why not, with the figure that shows a difference.
    Never a "better": α was spent on the deciding figures. Which levels
    have such a figure: lab.analyse.policy.vetoing_figure."""
    other = {v: o for v, f in used.items() if (o := policy.vetoing_figure(f))}
    if not other:
        return ""
    adv = advantages(la, lb, other)
    if len([r for r in adv if r <= k]) < 2:
        return ""
    d = decided_at(adv, k, alpha, delta_pct, sided)
    if d.outcome == decide.EQUIVALENT:
        return ""
    what = " and ".join(sorted({WHAT[f] for f in other.values()}))
    shows = f"{d.estimate_pct:+.1f}% for A {decide.span(d.lo_pct, d.hi_pct)}"
    if d.outcome == decide.BETTER:
        return (f"{what} shows a difference: {shows} (an equivalent needs every figure "
                "inside ±δ)")
    return (f"{what} is not shown inside ±{delta_pct:g}%: {shows} (an equivalent needs "
            "every figure inside ±δ)")


def judged(name_a: str, la: list[LevelStats], name_b: str, lb: list[LevelStats],
           at: list[int], alpha: float, delta_pct: float, looks: LookSchedule, mode: str,
           sided: str = "two", gate: str = "") -> tuple[Verdict, Judgement | None]:
    """primary, with the judgement it stands on (None: the rule did not run);
    `sided` "a": only "A better" is asked (the paired gate: is B worse?);
    `gate`: make compare's GATE figure (rate or cpu), else the policy's."""
    under = policy.PAIRED_WORDS.get(mode, f"under {mode}")
    used, left = figures(la, lb, at, gate)
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
    found = seat_effect(seats)
    if tilt and found is not None:
        return Verdict(lv[0], name_a, name_b, "not-comparable", None, text + tilt + off,
                       alpha=alpha, delta_pct=delta_pct, starts=(len(adv), len(adv)),
                       levels=lv, metric=what, paired=mode, seat=found[0],
                       seat_pct=found[1]), None
    phrase = "is faster than" if kinds == ["rate"] else \
        CPU_PHRASE if kinds == ["cpu"] else "does better than"
    j = None
    most = max(adv, default=0)
    for k in looks.at(most):
        d = decided_at(adv, k, looks.alpha(alpha, k), delta_pct, sided)
        j = from_decision(Sample(name_a, ()), Sample(name_b, ()), d, True, phrase)
        if j.kind == "equivalent":
            why = other_check(la, lb, used, k, looks.alpha(alpha, k), delta_pct, sided)
            if why:
                j = replace(j, kind="undecided", text=f"undecided: {what} alone {j.text}, "
                            f"but {why}")
        if j.kind in ("better", "equivalent"):
            if looks.which(k):
                j = replace(j, text=f"{j.text} ({looks.which(k)}: {k} pairs of up to "
                            f"{looks.last})")
            break
    if j is None:
        return Verdict(lv[0], name_a, name_b, "missing", None, text + "no whole pair" + off,
                       levels=lv, metric=what, paired=mode), None
    if j.kind not in ("better", "equivalent") and looks.which(looks.at(most)[-1]):
        k = looks.at(most)[-1]
        j = replace(j, text=f"{j.text} ({looks.which(k)}: {k} pairs of up to {looks.last})")
    if j.winner is not None and j.loser is not None:
        return Verdict(lv[0], j.winner, j.loser, j.kind.replace("better", "faster"), j.percent,
                       text + j.text + off, alpha=j.alpha, delta_pct=j.delta_pct,
                       starts=j.starts, levels=lv, metric=what, paired=mode), j
    return Verdict(lv[0], name_a, name_b, j.kind, j.percent, text + j.text + off,
                   alpha=j.alpha, delta_pct=j.delta_pct, starts=j.starts, levels=lv,
                   metric=what, paired=mode), j


def primaries(stats: dict[str, list[LevelStats]], at: list[int], mode: str,
              alpha: float = policy.ALPHA, delta_pct: float = policy.DELTA_PCT,
              looks: LookSchedule = LookSchedule(),
              levels: list[Verdict] | None = None) -> list[Verdict]:
    """The paired run's primary verdict (its one pair of servers); an
    "equivalent" across the levels stands only where no level's own verdict
    decided a difference (level_veto). `levels`: those verdicts where the
    caller has them (lab.analyse.analysis), else they are reached here."""
    (a, la), (b, lb) = list(stats.items())[:2]
    first = primary(a, la, b, lb, at, alpha, delta_pct, looks, mode)
    if first.kind != "equivalent" or len(at) < 2:
        return [first]
    if levels is None:
        levels = verdicts(stats, at, mode, alpha, delta_pct, looks)
    return [level_veto(first, levels)]


def level_veto(first: Verdict, levels: list[Verdict]) -> Verdict:
    """"Equivalent" across the levels is a mean of the levels' figures (c=1's
    req/s with c=4's CPU per request): a level that differs can hide in it.
    Where a level's own verdict (at α over the levels) decided a difference,
    the pair is undecided, saying where: an intersection-union test, which
    spends no more α. More pairs do not lift it where the level truly differs;
    its own verdict is the answer there."""
    differ = [v for v in levels if v.kind == "faster"]
    if first.kind != "equivalent" or not differ:
        return first
    at = ", ".join(str(v.value) for v in differ)
    said = differ[0].text.split(": ", 1)[-1]     # past "across 1 level by ..., under ...: "
    return replace(first, kind="undecided", percent=None,
                   text=f"undecided: {first.text}, but at {at} alone: {said}",
                   differs_at=tuple(v.value for v in differ))


def verdicts(stats: dict[str, list[LevelStats]], at: list[int], mode: str,
             alpha: float = policy.ALPHA, delta_pct: float = policy.DELTA_PCT,
             looks: LookSchedule = LookSchedule()) -> list[Verdict]:
    """The pair at each level alone: the secondary verdicts, one family
    (each at α over the levels, Bonferroni)."""
    (a, la), (b, lb) = list(stats.items())[:2]
    each = policy.family_alpha(alpha, len(at))
    return [primary(a, la, b, lb, [v], each, delta_pct, looks, mode) for v in at]
