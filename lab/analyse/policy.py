"""The lab's decision policy, in one place: α and δ, how α is spent over a
family of verdicts and over the looks of REPEAT=auto, which flags make a
level unclean for which design, and which figure decides a start pair at a
level. The rules themselves are arithmetic that takes α and δ as arguments:
lab.analyse.decide (two sets of independent starts) and lab.analyse.paired
(start pairs measured at the same moment).

A run's verdicts (lab.analyse.verdicts, lab.analyse.pairverdict), the next
starts of REPEAT=auto (lab.analyse.nextstarts), the plan line and `make
compare`'s gates (lab.analyse.gate, lab.analyse.pairgate) take these from
here. The numbers are docs/methodology.md's.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lab.analyse import paired as paired_rule
from lab.setup.plan import DEFAULT_ALPHA, DEFAULT_DELTA_PCT, RunPlan

# the rule's defaults: the ALPHA and MIN_EFFECT settings' own (declared once, in
# lab.setup.params; a run's own rule is its plan's, lab.setup.plan)
ALPHA = DEFAULT_ALPHA            # per family of verdicts
DELTA_PCT = DEFAULT_DELTA_PCT    # smallest effect

# ---------------------------------------------------------------- unclean levels

# the host, not the server, took CPU: req/s is not the server's alone there
# (neighbour: the lab's own bursty hog ran beside the level, NEIGHBOUR)
HOST_FLAGS = ("host-busy", "steal", "neighbour")
# the lab's sampler stopped mid-level (the lab itself stopped or starved): the
# level's CPU shares cover time the load did not run, so whether the client
# was the limit or the host busy cannot be told there
STALL_FLAGS = ("sampler-gap",)
# the client was the limit (out-of-ports: the client's host had no local port left)
CLIENT_FLAGS = ("client-bound", "out-of-ports")
# a repetition whose figures are not the server's: it is not ranked at all
UNRANKED = ("client-stopped", "client-stalled", "answer-changed", "wrong-answers",
            "port-shared")

# what makes a level's req/s unclean, by design:
# - "sequential": one server at a time, so what the host took fell on one side
#   only; where every level has one, server CPU per request decides instead;
# - "paired": a start pair, both sides measured at the same moment on the same
#   host, so what the host took fell on both (the duet's premise, checked by
#   the seats' balance and an A/A's realized rate: docs/methodology.md#paired-runs);
#   only a client that was the limit (or a sampler gap, where that cannot be
#   told) makes req/s unclean there;
# - "gate": make compare's checks of two runs: a level is compared only where
#   neither side had any of these (failures: more than the run's share failed).
UNCLEAN = {
    "sequential": (*CLIENT_FLAGS, *HOST_FLAGS, *STALL_FLAGS),
    "paired": (*CLIENT_FLAGS, *STALL_FLAGS),
    "gate": (*CLIENT_FLAGS, *HOST_FLAGS, *STALL_FLAGS, "failures", *UNRANKED),
}


def unclean(flags: Mapping[str, int], design: str) -> list[str]:
    """The flags of `flags` (flag: repetitions flagged) that make a level
    unclean under `design` ("sequential", "paired" or "gate"), in policy order."""
    return [f for f in UNCLEAN[design] if flags.get(f, 0)]


def is_clean(flags: Mapping[str, int], design: str) -> bool:
    """A level (its flags) whose req/s counts under `design`."""
    return not unclean(flags, design)


# ---------------------------------------------------------------- which figure decides

RATE, CPU = "rate", "cpu"


def paired_figure(client_bound: bool, concurrency: int, gate: str = "") -> str:
    """The figure that decides a start pair at one level, from the level and
    the client alone (never from how busy the neighbours kept the CPUs):
    - one request in flight a side (c=1) and no client the limit: "rate"
      (req/s): a server that waits for each request is latency-bound, and a
      cost that is no CPU (a sleep, a lock) shows only in its rate;
    - more than one in flight, or a client that was the limit: "cpu" (server
      CPU per request): two servers that share the host split its CPUs as
      the scheduler does, and their req/s ratio compresses a difference in
      what each request costs.
    `gate` ("rate" or "cpu", make compare's GATE) chooses it outright."""
    if gate in (RATE, CPU):
        return gate
    return CPU if client_bound or concurrency > 1 else RATE


def vetoing_figure(figure: str) -> str:
    """The figure that must be inside ±δ too where `figure` decides a level
    and says "equivalent" ("": none):
    - req/s decides (one request in flight a side): server CPU per request,
      which sees a difference in cost that sharing a CPU compresses in req/s
      (5% more CPU per request moved c=1 req/s by about 1.3%);
    - CPU per request decides (more in flight, or a client the limit): none.
      req/s there is how the scheduler split the shared CPU (or the client's
      own figure), not the servers': an A/A of aws at c=4 spread it ±7%,
      so it would keep every A/A undecided while telling nothing of the
      servers; a cost that is no CPU (a sleep) shows at c=1 by req/s."""
    return CPU if figure == RATE else ""


# ---------------------------------------------------------------- α over a family

def family_alpha(alpha: float, members: int) -> float:
    """Bonferroni: each of `members` verdicts at α/members, so the chance of
    any false "better" in the family stays within α."""
    return alpha / max(1, members)


# ---------------------------------------------------------------- α over the looks

FIRST_LOOK_SHARE = 0.8   # one server at a time, REPEAT=auto: α spent at the first look
LOOK_GROWTH = math.sqrt(2)   # start pairs, REPEAT=auto: each look ~1.4× the pairs of the last


def pocock_spent(alpha: float, t: float) -> float:
    """The α spent by information time t (0..1) under Lan and DeMets'
    Pocock-type spending function, α·ln(1 + (e − 1)·t) (Lan and DeMets,
    Biometrika 70(3), 1983; Jennison and Turnbull, Group Sequential Methods,
    2000, §7.2): it spends α about evenly over the looks, where an O'Brien-
    Fleming shape keeps nearly all of it for the last one and could not
    decide at a first look of 10 pairs."""
    t = min(1.0, max(0.0, t))
    return alpha * math.log1p((math.e - 1) * t)


def reachable(pairs: int, alpha: float) -> bool:
    """Whether the exact signed-rank test of `pairs` pairs can decide at α,
    two-sided (α/2 a tail, as lab.analyse.paired.decide_paired tests it):
    its smallest two-sided p, 2/2^n, is at most α. The paired gate's one-sided
    checks at α/2 ask the same of their one tail."""
    return pairs >= paired_rule.min_pairs(alpha / 2)


@dataclass(frozen=True)
class LookSchedule:
    """When a run's verdicts are looked at (a look: a test on the starts so
    far, α spent over the looks, so looking does not raise the false-alarm
    rate whatever the stopping):
    - fixed REPEAT=N (first is None): one look at the end, all of α;
    - REPEAT=auto, one server at a time: a look after every start from
      `first` to `last` a side, FIRST_LOOK_SHARE of α at the first, the rest
      evenly over the later ones;
    - REPEAT=auto, start pairs (`paired`): the first look at the fewest pairs
      from `first` (REPEAT_MIN) on that can decide at every one of the
      `levels` the per-level verdicts split `run_alpha` over (`opening`),
      then at about LOOK_GROWTH times the last look's pairs, the last at
      `last` (one level at α=1%: 10, 14, 20, 28, 40; two: 11, 16, 23, 33,
      40); each spends the Pocock-type function's growth since the look
      before, at t = pairs / last, so the late looks keep their α (one
      level: a fifth of it at the fortieth pair).
    Each look is tested at the α it spent, so the chance of a false "better"
    over all of them is at most their sum, α (Bonferroni over the looks,
    conservative: it ignores that the looks share their pairs)."""
    first: int | None = None
    last: int | None = None
    paired: bool = False
    levels: int = 1                  # start pairs: the levels the per-level family splits α over
    run_alpha: float = ALPHA         # start pairs: the run's ALPHA, which the looks are placed for

    def opening(self) -> int | None:
        """The first look (None: fixed REPEAT). Start pairs: the fewest pairs
        k from `first` on whose α at each level, the spending function's at
        k / last over `levels` (family_alpha), the exact test can reach
        (`reachable`): a look spends no α where its pairs cannot use it at a
        level it judges (at α=1% over two levels 10 pairs would spend 0.18%
        a level, below the 0.195% 10 pairs can reach; 11 pairs spend 0.19%,
        which they can). `last` where no earlier look can."""
        if self.first is None or not self.paired:
            return self.first
        last = max(self.first, self.last or self.first)
        for k in range(self.first, last):
            if reachable(k, family_alpha(pocock_spent(self.run_alpha, k / last), self.levels)):
                return k
        return last

    def points(self) -> list[int]:
        """Every planned look, in starts (pairs) a side."""
        start = self.opening()
        if self.first is None or start is None:
            return []
        last = max(self.first, self.last or self.first)
        if not self.paired:
            return list(range(self.first, last + 1))
        out = [start]
        while out[-1] < last:
            nxt = max(out[-1] + 1, round(out[-1] * LOOK_GROWTH))
            if last - nxt < (nxt - out[-1]) / 2:      # no short step at the end
                nxt = last
            out.append(min(last, nxt))
        return out

    def alpha(self, alpha: float, starts: int) -> float:
        """α spent at the look made after `starts` starts a side (0 where no
        look is planned there)."""
        if self.first is None or self.last is None or self.last <= self.first:
            return alpha
        if not self.paired:
            if starts <= self.first:
                return alpha * FIRST_LOOK_SHARE
            return alpha * (1 - FIRST_LOOK_SHARE) / (self.last - self.first)
        pts = self.points()
        if starts < pts[0]:                      # fewer than planned: the first look's
            starts = pts[0]
        if starts not in pts:
            return 0.0
        k = pts.index(starts)
        before = pocock_spent(alpha, pts[k - 1] / self.last) if k else 0.0
        return pocock_spent(alpha, starts / self.last) - before

    def at(self, most: int) -> list[int]:
        """The looks made over `most` starts a side (fixed: one, at `most`;
        fewer pairs than the first look, a run that ended short: one, at
        `most`, with the first look's α)."""
        if self.first is None:
            return [most]
        if not self.paired:
            return list(range(min(self.first, most), most + 1))
        return [k for k in self.points() if k <= most] or [most]

    def which(self, starts: int) -> str:
        """'look 2 of 5' (REPEAT=auto), or "" for one look."""
        pts = self.points()
        if self.first is None or starts not in pts or len(pts) < 2:
            return ""
        return f"look {pts.index(starts) + 1} of {len(pts)}"


def looks(auto: bool, least: int, most: int, paired: bool, *, levels: int,
          alpha: float = ALPHA) -> LookSchedule:
    """A run's looks from its REPEAT (auto: least and most); `levels`: how many
    levels its per-level verdicts split α over (family_alpha; start pairs
    place their first look where each of them can decide), `alpha`: its ALPHA."""
    if not auto:
        return LookSchedule()
    return LookSchedule(least, most, paired, max(1, levels), alpha)


def judged_levels(plan: RunPlan, verdict_at: Sequence[int]) -> int:
    """How many levels a run's per-level verdicts split α over: VERDICT_AT's,
    else every swept value (lab.analyse.verdicts.verdict_values)."""
    return max(1, len(verdict_at or plan.values))


def planned_looks(plan: RunPlan, verdict_at: Sequence[int]) -> LookSchedule:
    """The looks of a run from its plan (lab.setup.plan.RunPlan) and VERDICT_AT:
    what the analysis, the next starts, the paired gate and the plan line use."""
    r = plan.repeat
    return looks(r.auto, r.least, r.most, plan.paired,
                 levels=judged_levels(plan, verdict_at), alpha=plan.alpha)


# ---------------------------------------------------------------- the paired modes
# (how the verdicts were reached, in a sentence: lab.present.method)

PAIRED_WORDS = {"duet": "under duet (both measured at the same moment)",
                "rmit": "under RMIT (alternating slices, both servers up)"}
