"""The regression gate of a paired run (`make compare RUN=<paired run>`): its
second server (B, the head) against its first (A, the base), both measured
in the same start pairs (lab.measure.pair). The checks are the paired
verdicts (lab.analyse.pairverdict), one-sided (is B worse than A?), with
δ = MIN_EFFECT: one across the levels, at ALPHA/2, and one at each level,
each at ALPHA/2 over their number (Bonferroni), as lab.analyse.gate does.

At each level the figure is the paired policy's (lab.analyse.policy):
req/s where one request is in flight at a time (c=1, its client not at its
limit), server CPU per request where more are. A slowdown that costs no
CPU (a sleep, a lock) shows in req/s at c=1. The exit code: 1 when a check
finds B worse; 0 when the check across the levels, or every level's own,
shows B no worse; else 3. One level shown no worse while another is
undecided is 3, not 0: the undecided level may hide the regression (a
head with 5% more CPU a request passed at c=1, where a 1 ms sleep hides
its cost, while c=4 spanned +8%: issue 54).
"""
from __future__ import annotations

from lab.analyse.gate import (NOT_JUDGED, OUTCOMES, PASS, REGRESSION, Gate, GateCheck,
                              GateSettings, headline)
from lab.analyse.metrics import LevelStats
from lab.analyse.pairverdict import judged
from lab.analyse.policy import LookSchedule
from lab.setup.exits import Exit


def check(a: str, la: list[LevelStats], b: str, lb: list[LevelStats], at: list[int],
          alpha: float, delta: float, mode: str, looks: LookSchedule, figure: str,
          across: bool) -> GateCheck:
    """One check of B against A over the levels `at` (one level, or across)."""
    v, j = judged(a, la, b, lb, at, alpha, delta, looks, mode, sided="a", gate=figure)
    worse = j.decision.estimate_pct if j is not None and j.decision is not None else None
    if v.kind in ("faster", "faster-at-least") and v.a == a:
        outcome = REGRESSION
    elif v.kind == "equivalent":
        outcome = PASS
    else:
        outcome = NOT_JUDGED
    # the text's opening ("across 2 levels by ..., under duet (...): ") is no reason
    said = v.text.split(": ", 1)[-1] if v.text.startswith("across ") else v.text
    return GateCheck(b, v.value, v.metric or "paired", outcome, v.kind, worse, delta, v.text,
                     tuple(v.levels) if across else (),
                     headline(outcome, j, worse, delta, said))


def place(c: GateCheck) -> str:
    """Where a check stands in a sentence: "across 1, 4", or "at 4"."""
    return c.where() if c.levels else f"at {c.where()}"


def of(stats: dict[str, list[LevelStats]], at: list[int], mode: str, settings: GateSettings,
       looks: LookSchedule = LookSchedule(), gate: tuple[str, ...] = ()) -> Gate:
    """The gate of a paired run's two servers (A first, as the run named them);
    `looks`: the run's (REPEAT=auto: the checks replay them, as its verdicts
    did, so the looks that stopped it spend their α here too); `gate`: GATE,
    where it names one paired figure (rate or cpu) that figure decides every
    level, else the policy's (lab.analyse.policy.paired_figure)."""
    figure = next((g for g in gate if g in ("rate", "cpu")), "") \
        if len([g for g in gate if g in ("rate", "cpu")]) == 1 else ""
    (a, la), (b, lb) = list(stats.items())[:2]
    half = settings.alpha / 2
    each = half / max(1, len(at))
    delta = settings.min_effect_pct
    checks = [check(a, la, b, lb, at, half, delta, mode, looks, figure, across=True)]
    checks += [check(a, la, b, lb, [v], each, delta, mode, looks, figure, across=False)
               for v in at]
    worse = [c for c in checks if c.outcome == REGRESSION]
    passed = [c for c in checks if c.outcome == PASS]
    detail = "; ".join(f"{c.where()}: {c.text}" for c in checks)
    if worse:
        code, reason = Exit.FAILED, f"{b} is worse than {a} {place(worse[0])}: {worse[0].reason}"
        detail = "; ".join(f"{c.where()}: {c.text}" for c in worse)
    elif checks[0].outcome == PASS or all(c.outcome == PASS for c in checks[1:]):
        code, reason = Exit.OK, (f"{b} is no worse than {a} by {delta:g}% or more "
                                 f"{place(passed[0])}, under {mode}")
        detail = f"{passed[0].where()}: {passed[0].text}"
    elif passed:        # a level passed, another could still hide a regression
        open_ = [c for c in checks[1:] if c.outcome != PASS]
        code, reason = Exit.NOT_COMPARABLE, (
            f"undecided: {b} is no worse than {a} {place(passed[0])}, but not shown "
            f"{' or '.join(place(c) for c in open_)} nor across the levels: "
            f"{open_[0].reason}")
    else:
        code, reason = Exit.NOT_COMPARABLE, f"nothing decided: {checks[0].reason}"
    return Gate(int(code), OUTCOMES[code], ("paired",), delta, {}, checks, reason,
                settings.alpha, each, detail)
