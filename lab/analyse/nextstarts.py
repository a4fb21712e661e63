"""Which server starts a run needs next (`lab next RUN SERVER...`, the loop
of run-benchmark.sh): one round at a time, in a balanced order.

- REPEAT=N: rounds 1 to N, every server once a round.
- REPEAT=auto: rounds 1 to REPEAT_MIN for every server; after that, one more
  start only for the servers of pairs whose primary verdict is still
  undecided (lab.analyse.verdicts.primaries: the looks replayed, α spent over
  them, so looking after every round does not raise the false-alarm rate),
  up to REPEAT_MAX. A server whose start failed gets no more. A paired run
  whose "equivalent" a level's own difference held back is done once every
  level's own verdict is decided (settled).

Each round alternates which server starts first (ABBA: round 1 A B, round 2
B A, ...), so a drift or an order effect of the host does not fall on one
server. A pair judged on a level that was client-bound or host-busy is
judged there by server CPU per request (the primary verdict's fallback), so
such a level earns no more starts for req/s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lab.analyse import policy, verdicts
from lab.record.manifest import Manifest

if TYPE_CHECKING:        # a run's analysis is read only past REPEAT=auto's minimum
    from lab.analyse.analysis import Analysis

DECIDED = verdicts.RANKED + ("faster", "faster-at-least", "equivalent")
FAILED = ("failed", "not loaded", "interrupted")


@dataclass(frozen=True)
class Next:
    """The next round: (server, rep) in the order to start them, and one line
    saying why (empty starts: the run is done)."""
    starts: list[tuple[str, int]]
    said: str


def done(m: Manifest, server: str) -> tuple[int, bool]:
    """The starts (repetitions) a server has had, and whether one failed."""
    rec = m.servers.get(server)
    if rec is None:
        return 0, False
    reps = [st for st in rec.starts if st.rep is not None]
    return len({st.rep for st in reps}), any(st.status in FAILED for st in reps)


def minimum(m: Manifest) -> int:
    """The rounds every server gets before the verdicts are read: REPEAT (or
    REPEAT_MIN); a paired REPEAT=auto run's first look (lab.analyse.policy:
    the fewest pairs from REPEAT_MIN on that can decide at every level), so
    no pair count before it is looked at."""
    opening = policy.planned_looks(m.planned, m.params.verdict_at).opening()
    least = m.params.repeat.least
    return max(least, opening) if opening is not None and m.planned.paired else least


def ordered(servers: list[str], round_no: int) -> list[str]:
    """ABBA: odd rounds in the given order, even rounds reversed."""
    return list(servers) if round_no % 2 == 1 else list(reversed(servers))


def settled(v: verdicts.Verdict, levels: list[verdicts.Verdict]) -> bool:
    """An "equivalent" held back because a level's own verdict decided a
    difference (lab.analyse.pairverdict.level_veto) is settled once every
    level's own verdict of the pair is decided: more starts cannot make the
    pair equivalent where a level differs, and its levels say the answer."""
    own = [w for w in levels if {w.a, w.b} == {v.a, v.b}]
    return bool(v.differs_at) and bool(own) and all(w.kind in DECIDED for w in own)


def decided(v: verdicts.Verdict, levels: list[verdicts.Verdict]) -> bool:
    """A primary verdict that answers: faster, equivalent, or an "equivalent"
    held back where a level's own verdict decided a difference (settled).
    "not-comparable" and "missing" are no answer."""
    return v.kind in DECIDED or settled(v, levels)


def undecided(a: Analysis) -> list[tuple[str, str]]:
    """The pairs whose primary verdict more starts may still decide."""
    return [(v.a, v.b) for v in a.primary if not decided(v, a.verdicts)
            and v.kind not in ("missing", "not-comparable")]


def not_comparable(v: verdicts.Verdict) -> str:
    """Why a "not-comparable" pair stays so, and what would make it
    comparable: a paired pair's unbalanced seats (v.seat), else the
    verdict's own words."""
    if v.seat:
        return (f"not comparable: unbalanced seats (seat {v.seat} favoured whichever server "
                f"sat on it by about {v.seat_pct or 0.0:.0f}%): more pairs on these seats "
                "cannot change it; PAIRED=rmit, or seats on CPUs of their own, would")
    said = v.text if v.text.startswith("not comparable") else f"not comparable ({v.text})"
    return f"{said}: more starts alike cannot change it"


def outcome(v: verdicts.Verdict) -> str:
    """A closed pair in a few words, for the run's last line."""
    if v.differs_at:
        return f"{v.a} vs {v.b}: differs at {', '.join(map(str, v.differs_at))}"
    if v.kind == "not-comparable":
        return f"{v.a} vs {v.b}: {not_comparable(v)}"
    if v.kind == "missing":
        return f"{v.a} vs {v.b}: not measured ({v.text})"
    return f"{v.a} vs {v.b}: {v.kind}"


def closed(a: Analysis) -> str:
    """The run's last line where no pair is left that more starts may decide:
    "every pair decided (...)" only where every primary verdict answers
    (`decided`); a pair not comparable, or not measured, is named as such."""
    said = [outcome(v) for v in a.primary]
    answered = [decided(v, a.verdicts) for v in a.primary]
    if all(answered):
        return f"every pair decided ({', '.join(said)})"
    if not any(answered):
        return f"nothing more starts can decide ({'; '.join(said)})"
    return f"every pair decided or past what more starts can decide ({'; '.join(said)})"


def plan(m: Manifest, loaded: list[str], a: Analysis | None) -> Next:
    """The next round of `loaded` servers (those the probe let through), from
    what the run has recorded; `a` is its analysis (REPEAT=auto, past the
    minimum). A paired run (PAIRED) starts its two servers together: a round
    is one start pair, "A+B" (lab.measure.pair)."""
    mode = m.planned.design
    if not mode:
        return rounds(m, loaded, a)
    if len(loaded) != 2:
        gone = [s for s in m.params.servers if s not in loaded]
        return Next([], f"PAIRED={mode} needs both servers: {', '.join(gone) or 'one'} "
                    "not loaded")
    nxt = rounds(m, loaded, a)
    if not nxt.starts:
        pairs = min(done(m, s)[0] for s in loaded)
        used = f" after {pairs} of up to {m.planned.repeat.most} pairs" \
            if m.planned.repeat.auto else ""
        return Next([], nxt.said.replace("starts a server", "start pairs") + used)
    rep = max(r for _, r in nxt.starts)
    return Next([("+".join(loaded), rep)], nxt.said.replace("round", "pair", 1))


def rounds(m: Manifest, loaded: list[str], a: Analysis | None) -> Next:
    """The next round of starts of a run of one server at a time."""
    p = m.params
    auto, first, most = p.repeat.auto, minimum(m), p.repeat.most
    have = {s: done(m, s) for s in loaded}
    fewest = min((n for n, _ in have.values()), default=0)
    round_no = fewest + 1
    if round_no <= first:
        todo = [s for s in loaded if have[s][0] < round_no]
        return Next([(s, round_no) for s in ordered(todo, round_no)],
                    f"round {round_no} of {first}" + (f" (REPEAT=auto, up to {most})"
                                                      if auto else ""))
    if not auto:
        return Next([], f"{first} starts a server done")
    if a is None or len(loaded) < 2:
        return Next([], "nothing to decide")
    if not a.primary:
        return Next([], "nothing to decide: no two compared servers (a ceiling reference, "
                    "nginx, is never ranked)")
    open_pairs = undecided(a)
    if not open_pairs:
        return Next([], closed(a))
    want = [s for s in loaded if any(s in pair for pair in open_pairs)
            and have[s][0] < most and not have[s][1]]
    if not want:
        return Next([], f"REPEAT_MAX={most} reached (or a start failed): still undecided: "
                    + ", ".join(f"{x} vs {y}" for x, y in open_pairs))
    round_no = min(have[s][0] for s in want) + 1
    want = [s for s in want if have[s][0] < round_no]
    return Next([(s, have[s][0] + 1) for s in ordered(want, round_no)],
                f"undecided: {', '.join(f'{x} vs {y}' for x, y in open_pairs)}: one more "
                f"start each (up to {most})")
