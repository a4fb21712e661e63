"""The lab's decision policy, in one place: which flags make a figure
unclean, which figure decides a pair of servers at a level, which rule
decides (independent starts or start pairs), and how α is spent. The rules
themselves are arithmetic: lab.analyse.decide (two sets of independent
starts) and lab.analyse.paired (start pairs measured at the same moment).

A run's verdicts (lab.analyse.verdicts, lab.analyse.pairverdict), the next
starts of REPEAT=auto (lab.analyse.nextstarts) and `make compare`'s gate
(lab.analyse.gate) take these from here.
"""
from __future__ import annotations

from typing import Protocol

from lab.analyse import decide, paired

ALPHA = decide.ALPHA               # per family of verdicts (ALPHA for make compare)
DELTA_PCT = decide.DELTA_PCT       # the smallest effect that counts (MIN_EFFECT)

# the host, not the server, took CPU: req/s is not the server's alone there
HOST_FLAGS = ("host-busy", "steal")
# the lab's sampler stopped mid-level (the lab itself stopped or starved): the
# level's CPU shares cover time the load did not run, so whether the client
# was the limit or the host busy cannot be told there
STALL_FLAGS = ("sampler-gap",)
# one server at a time: req/s (or p99) is ranked only at levels without these
# (out-of-ports: the client's host had no local port left, so the client was the limit);
# where every level has one, server CPU per request decides instead
RATE_UNCLEAN = ("client-bound", "out-of-ports", *HOST_FLAGS, *STALL_FLAGS)
# a start pair: both sides ran at the same moment on the same host, so what
# the host took fell on both (the duet's premise, checked by the balance of
# the seats and an A/A's realized rate: docs/methodology.md#paired-runs);
# only a client that was the limit (or a sampler gap, where that cannot be
# told) makes req/s unclean there
PAIRED_UNCLEAN = ("client-bound", "out-of-ports", *STALL_FLAGS)
# a start pair at a level of more than one request in flight a side, where
# the servers' CPUs were this busy (both servers' CPU summed where they share
# CPUs), is decided by server CPU per request: two saturated servers on one
# CPU split it as the scheduler does, and their req/s ratio says more of the
# scheduler than of the servers
SATURATED_CPU_PCT = 80.0

PAIRED_WORDS = {"duet": "under duet (both measured at the same moment)",
                "rmit": "under RMIT (alternating slices, both servers up)"}


class Rule(Protocol):
    def __call__(self, a: tuple[float, ...] | list[float], b: tuple[float, ...] | list[float],
                 *, higher_is_better: bool = True, alpha: float = ALPHA,
                 delta_pct: float = DELTA_PCT, sided: str = "two") -> decide.Decision: ...


def rule(paired_mode: str) -> Rule:
    """The decision rule of a run: independent starts, or start pairs."""
    return paired.decide_paired if paired_mode else decide.decide


def paired_figure(cpu_pct: float, client_bound: bool, concurrency: int) -> str:
    """The figure that decides a start pair at one level: "cpu" (server CPU
    per request) where a client was the limit, or where more than one
    request was in flight a side and the servers saturated their CPUs; else
    "rate" (req/s). With one request in flight a side, a server is
    latency-bound: no queue of its own, and a cost that is no CPU (a sleep,
    a lock) shows only in its rate."""
    if client_bound:
        return "cpu"
    return "cpu" if concurrency > 1 and cpu_pct >= SATURATED_CPU_PCT else "rate"



def method(paired_mode: str) -> str:
    """The sentence a report gives for how its verdicts were reached."""
    if not paired_mode:
        return decide.METHOD
    return f"{paired.METHOD} Pairs {PAIRED_WORDS.get(paired_mode, paired_mode)}."
