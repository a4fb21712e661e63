"""A run's warm-ups in words: each start's class (lab.analyse.warmup, recorded
by the sweep in the start's warm-up record), for summary.md and report.html."""
from __future__ import annotations

from lab.record.manifest import Manifest, Start, Warmup

ORDER = ("flat", "warm-up", "slowdown", "no steady state")


def class_of(w: Warmup) -> str:
    """A start's class as recorded; a run before the classes: "steady" or
    "not steady" by its old rule (three slices within 5%)."""
    if w.warm_class:
        return w.warm_class
    return "steady" if w.steady else "not steady"


def start_cell(w: Warmup) -> str:
    """One start's warm-up in a few words: 'warm-up, steady after 18 s'."""
    kind = class_of(w)
    if w.steady_after_s is not None and kind == "warm-up":
        return f"{kind}, steady after {w.steady_after_s:g} s"
    if kind in ("no steady state", "not steady"):
        return f"{kind} within the {w.cap_s} s cap (levels flagged not-steady)"
    return kind


def server_line(name: str, auto: list[Warmup]) -> str:
    """'- undertow: 10 starts: 7 warm-up (steady after 12–31 s), 2 flat, 1 no
    steady state within the 60 s cap (its levels flagged not-steady)'."""
    counts: dict[str, list[Warmup]] = {}
    for w in auto:
        counts.setdefault(class_of(w), []).append(w)
    parts = []
    for kind in (*ORDER, "steady", "not steady"):
        ws = counts.get(kind, [])
        if not ws:
            continue
        after = [w.steady_after_s for w in ws if w.steady_after_s is not None]
        span = (f" (steady after {min(after):g}–{max(after):g} s)" if len(set(after)) > 1
                else f" (steady after {after[0]:g} s)" if after and kind != "flat" else "")
        if kind in ("no steady state", "not steady"):
            span = f" within the {ws[0].cap_s} s cap (its levels flagged not-steady)"
        parts.append(f"{len(ws)} {kind}{span}")
    jit = [w.slice_jit_pct[-1] for w in auto if w.slice_jit_pct]
    jit_said = (f"; its JIT compiler threads took {min(jit):.0f}–{max(jit):.0f}% of its CPU "
                "in the warm-up's last second" if jit else "")
    many = f"{len(auto)} start{'s' * (len(auto) != 1)}"
    return f"- {name}: {many}: {', '.join(parts)}{jit_said}"


def never_steady(starts: list[Start]) -> tuple[int, int]:
    """(starts with no steady state within WARMUP_MAX, WARMUP=auto starts)."""
    auto = [s.warmup for s in starts if s.warmup and s.warmup.mode == "auto"]
    return sum(1 for w in auto if w.never_steady), len(auto)


def never_said(starts: list[Start]) -> str:
    never, total = never_steady(starts)
    return f"{never} of {total} WARMUP=auto starts never became steady." if total else ""


def lines(m: Manifest) -> list[str]:
    """summary.md's warm-up section: a line per server, the classes counted,
    then how many starts never became steady."""
    out = []
    for name, rec in m.servers.items():
        auto = [s.warmup for s in rec.starts if s.warmup and s.warmup.mode == "auto"]
        if auto:
            out.append(server_line(name, auto))
    never, total = never_steady([s for rec in m.servers.values() for s in rec.starts])
    if out:
        out.append(f"- {never} of {total} starts never became steady"
                   + (" (docs/methodology.md#the-warm-up-by-change-points)" if never else ""))
    return out
