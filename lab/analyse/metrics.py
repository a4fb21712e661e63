"""The lab's thresholds and what each flag means, and a server's levels over
their repetitions: the spread of each figure (Spread), one level's
statistics (LevelStats), the peak, and whether a calibration level may be
saved as the client's capacity.

Every threshold lives here; the report, the charts, the progress lines, a
level's row (lab.analyse.levelrow) and the verdicts (lab.analyse.verdicts)
take them from this module.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from lab.analyse import decide, paired, policy
from lab.record import failures as failure_kinds, tcpkinds
from lab.record.failures import Failure
from lab.record.rows import Row
from lab.record.tcpkinds import TcpDelta
from lab.setup.whynot import Reason

CLIENT_BOUND_PCT = 90.0        # client CPU, % of its CPUs: it measured itself
HOST_BUSY_PCT = 10.0           # CPU of other processes on the lab's CPUs
STEAL_PCT = 10.0               # CPU time the hypervisor took
NOISY_SPREAD = 1.10            # max/min of a level's repetitions
LITTLES_LOW, LITTLES_HIGH = 0.8, 1.2   # in-flight / concurrency (closed loop)
SATURATED_SHORTFALL = 0.05     # achieved rate below offered rate by more than this
JIT_QUIET_PER_S = 1.0          # warm-up auto, a JVM: at most this many JIT compilations
                               # per second since the previous slice (lab.measure.jit)
MIN_REPS_FOR_VERDICT = 3       # fewer repetitions show no spread (a claim's range)
MIN_STARTS = decide.min_starts(policy.ALPHA / 2)   # the fewest starts a side on which a
                                                   # two-sided verdict can reach α (5 at 1%)
MIN_PAIRS = paired.min_pairs(policy.ALPHA / 2)     # likewise, start pairs (8 at 1%)
CAPACITY_LIMITED = 0.90        # a server at 90%+ of the client's calibrated capacity
FAILED_SHARE_PCT = 1.0         # failed requests, % of a repetition's: more, and the level's
                               # req/s (or latency) is not ranked
RAN_SHORT = 0.20               # the client's own elapsed time more than this share short of
                               # the level's length (Siege ends 2 s levels up to 7% short on
                               # its own): it stopped early, and its rate is not a level's
STALLED_SHARE = 0.10           # the client stopped (SIGSTOP, a tracer), or the lab's clock
                               # ran past the client's own, for more than this share of the
                               # level: its rate is not the level's (client-stalled)
STALL_MIN_S = 1.0              # ... and a gap between the two clocks, or between two of the
                               # sampler's samples (taken every 0.2 s), of at least this
                               # (sampler-gap: the lab itself stopped; the CPU shares are wrong)
ACCEPT_QUEUE_FULL_PCT = 10.0  # the server's accept queue at its backlog in this share of the
                               # level's samples, or more: accept-queue-full

# What each flag means, in one sentence: for summaries and reports.
FLAGS: dict[str, str] = {
    "client-bound": f"the client used {CLIENT_BOUND_PCT:.0f}% or more of its CPUs: the "
                    "figure measures the client, not the server",
    "failures": "some requests failed (socket errors, timeouts or non-2xx answers)",
    "host-busy": f"other processes took more than {HOST_BUSY_PCT:.0f}% of the lab's CPUs",
    "steal": f"the hypervisor took more than {STEAL_PCT:.0f}% of the lab's CPU time",
    "littles-law": f"in-flight requests / concurrency outside {LITTLES_LOW}-{LITTLES_HIGH}: "
                   "usually client-side queueing, errors or timeouts",
    "saturated": f"the achieved rate fell more than {SATURATED_SHORTFALL:.0%} short of the "
                 "offered rate: the server (or client) could not keep up",
    "not-steady": "the warm-up hit WARMUP_MAX with no steady state by its change points "
                  "(the start's class: no steady state, or a slowdown; for a JVM, or its JIT "
                  "still compiling)",
    "noisy": f"repetitions spread more than {NOISY_SPREAD - 1:.0%} (max/min)",
    "client-stopped": f"the client stopped early: its own elapsed time fell more than "
                      f"{RAN_SHORT:.0%} short of the level's length, so its rate is not the "
                      "level's; not ranked",
    "out-of-ports": "the client's host ran out of local ports (cannot assign requested "
                    "address): connections were opened faster than TIME_WAIT freed their "
                    "ports, so the level measures the client's host, not the server; its "
                    "req/s is not ranked",
    "client-stalled": f"the client was stopped (SIGSTOP, a tracer) or ran past its own clock "
                      f"for more than {STALLED_SHARE:.0%} of the level: it sent nothing then, "
                      "so its rate is not the level's; not ranked",
    "sampler-gap": f"the lab's sampler took no sample for more than {STALL_MIN_S:g} s and "
                   f"{STALLED_SHARE:.0%} of the level (every 0.2 s normally): the lab itself "
                   "was stopped or starved, so the level's CPU shares (server, client, other "
                   "processes) cover time the load did not run; req/s not ranked",
    "answer-changed": "the server's answer checked after the level (status and exact body, "
                      "on a fresh connection) was not the contract's: not ranked",
    "wrong-answers": "answers during the load were not the verified answer: the client's "
                     "bytes per response were not its size, or sampled answers were wrong: "
                     "not ranked",
    "port-shared": "another process (not the server's own) also held the server's port "
                   "before or after the level, as a second run on the same PORT with "
                   "SO_REUSEPORT does: the client may have loaded it; not ranked",
    "accept-queue-full": f"the server's accept queue sat at its backlog in "
                         f"{ACCEPT_QUEUE_FULL_PCT:.0f}% or more of the level's samples: it did "
                         "not accept() connections as fast as they came, and the kernel dropped "
                         "new ones (their clients wait for a SYN retransmitted after 1 s, 3 s): "
                         "a property of the server at this load, ranked; raise BACKLOG, or give "
                         "it more workers or CPUs, to see whether it is the backlog or the "
                         "server",
    "neighbour": "the lab's own noisy neighbour ran beside the level (NEIGHBOUR: bursty "
                 "processes on the lab's CPUs, on purpose): the figure shows this host with "
                 "that noise, to see how far its verdicts hold; run without NEIGHBOUR to "
                 "measure the servers",
}
# A level with one of these in any repetition is not ranked (its verdicts are
# "not comparable", it is nobody's peak), whatever the other flags say.
UNRANKED = policy.UNRANKED



@dataclass(frozen=True)
class Spread:
    """Median with min and max over repetitions (and the values themselves,
    when known: a ratio of two spreads has none)."""
    median: float
    lo: float
    hi: float
    n: int
    values: tuple[float, ...] = ()

    @property
    def ratio(self) -> float:
        """max/min; 1.0 for a single value, inf when min is 0 and max is not."""
        if self.lo > 0:
            return self.hi / self.lo
        return 1.0 if self.hi == 0 else float("inf")

    def overlaps(self, other: Spread) -> bool:
        return self.lo <= other.hi and other.lo <= self.hi


def spread(values: list[float]) -> Spread:
    if not values:
        raise ValueError("no values")
    return Spread(statistics.median(values), min(values), max(values), len(values),
                  tuple(values))


@dataclass(frozen=True)
class LevelStats:
    """One server at one swept value, over its repetitions."""
    server: str
    value: int
    rate: Spread
    resp_ms: Spread
    p50_ms: Spread | None
    p90_ms: Spread | None
    p99_ms: Spread | None
    rss_end_kb: Spread
    rss_peak_kb: int
    cpu_us_per_req: Spread
    client_cpu_pct: Spread
    sampler_cpu_pct: Spread
    failed: int
    open_loop: bool
    flags: dict[str, int] = field(default_factory=dict)   # flag: repetitions flagged
    cgroup_mem_kb: Spread | None = None   # RUNTIME=docker: the container's cgroup memory
    pss_kb: Spread | None = None          # smaps_rollup at the end; None: unavailable
    private_kb: Spread | None = None
    shared_kb: Spread | None = None
    anon_kb: Spread | None = None
    cpu_sys_us_per_req: Spread | None = None   # the kernel's part of cpu_us_per_req
    attempts: int = 0                     # requests answered or failed, over the repetitions
    failures: tuple[Failure, ...] = ()    # by kind, over the repetitions (lab.record.failures)
    failed_pct: float = 0.0               # the worst repetition's failed share, %
    failed_by_rep: tuple[int, ...] = ()   # failed requests of each repetition, in rep order
    unranked: tuple[str, ...] = ()        # why it is not ranked (UNRANKED), a line per
                                          # repetition flagged: "rep 2: client stopped early: ..."
    reps: tuple[int, ...] = ()            # the start (rep) of each value of rate, cpu, ...
    lost_pct: tuple[float, ...] = ()      # each start's CPU time the hypervisor (steal) and
                                          # other processes took, % of the lab's CPUs
    tcp: TcpDelta | None = None           # the kernel's TCP counters, over the repetitions
    # several client hosts: "bound" where any start's p50/p90/p99 are the worst
    # host's, else "exact" where they are the hosts' distributions merged;
    # "" for one client host's own figures (Row.percentiles)
    percentiles: str = ""
    # a paired run's slices (lab.record.rows.Row.slices): (rep, ((req/s, CPU µs a
    # request) of each slice, ...)) for each start whose level was sliced
    slices: tuple[tuple[int, tuple[tuple[float, float], ...]], ...] = ()

    @property
    def ranked(self) -> bool:
        """No repetition has an UNRANKED flag."""
        return not any(self.flags.get(f, 0) for f in UNRANKED)

    @property
    def noisy(self) -> bool:
        return self.rate.n > 1 and self.rate.ratio > NOISY_SPREAD

    @property
    def client_bound(self) -> bool:
        return self.flags.get("client-bound", 0) > 0

    def all_flags(self) -> list[str]:
        return list(self.flags) + (["noisy"] if self.noisy else [])


def percentiles_over_starts(group: list[Row]) -> str:
    """Where a level's percentiles come from, over its starts (LevelStats.percentiles)."""
    marks = {r.percentiles or "" for r in group}
    return "bound" if "bound" in marks else "exact" if "exact" in marks else ""


def level_stats(rows: list[Row]) -> list[LevelStats]:
    """Rows of one server, grouped by swept value."""
    by_value: dict[int, list[Row]] = {}
    for r in rows:
        by_value.setdefault(r.value, []).append(r)
    out = []
    for value in sorted(by_value):
        group = by_value[value]
        flags: dict[str, int] = {}
        for r in group:
            for f in r.flags.split():
                flags[f] = flags.get(f, 0) + 1
        def pct(values: list[float | None]) -> Spread | None:
            known = [v for v in values if v is not None]
            return spread(known) if known else None
        out.append(LevelStats(
            server=group[0].server, value=value,
            rate=spread([r.rate_rps for r in group]),
            resp_ms=spread([r.resp_ms for r in group]),
            p50_ms=pct([r.p50_ms for r in group]),
            p90_ms=pct([r.p90_ms for r in group]),
            p99_ms=pct([r.p99_ms for r in group]),
            rss_end_kb=spread([float(r.rss_end_kb) for r in group]),
            rss_peak_kb=max(r.rss_peak_kb for r in group),
            cpu_us_per_req=spread([r.server_cpu_us_per_req for r in group]),
            client_cpu_pct=spread([r.client_cpu_pct for r in group]),
            sampler_cpu_pct=spread([r.sampler_cpu_pct for r in group]),
            failed=sum(r.failed for r in group),
            open_loop=group[0].offered_rps is not None,
            flags=flags,
            cgroup_mem_kb=pct([None if r.cgroup_mem_kb is None else float(r.cgroup_mem_kb)
                               for r in group]),
            pss_kb=pct([None if r.pss_kb is None else float(r.pss_kb) for r in group]),
            private_kb=pct([None if r.private_kb is None else float(r.private_kb)
                            for r in group]),
            shared_kb=pct([None if r.shared_kb is None else float(r.shared_kb)
                           for r in group]),
            anon_kb=pct([None if r.anon_kb is None else float(r.anon_kb) for r in group]),
            cpu_sys_us_per_req=pct([r.server_sys_us_per_req for r in group]),
            attempts=sum(r.successful + r.failed for r in group),
            failures=tuple(failure_kinds.merged(f for r in group for f in r.failures())),
            tcp=tcpkinds.summed(r.tcp() for r in group),
            failed_pct=max(failed_share(r) for r in group),
            failed_by_rep=tuple(r.failed for r in sorted(group, key=lambda r: r.rep)),
            unranked=tuple(f"rep {r.rep}: {r.unranked}" if len(group) > 1 else r.unranked
                           for r in sorted(group, key=lambda r: r.rep) if r.unranked),
            reps=tuple(r.rep for r in group),
            slices=tuple((r.rep, r.slices()) for r in group if r.slices()),
            lost_pct=tuple(r.steal_pct + r.other_cpu_pct for r in group),
            percentiles=percentiles_over_starts(group)))
    return out


def failed_share(row: Row) -> float:
    """Failed requests, % of those answered or failed, at one level of one start."""
    attempts = row.successful + row.failed
    return 100 * row.failed / attempts if attempts else 0.0


def peak(stats: list[LevelStats]) -> LevelStats:
    """The level with the highest median rate, among the ranked ones (a level
    the client abandoned, or whose answers changed, is nobody's peak) when
    there are any."""
    return max([s for s in stats if s.ranked] or stats, key=lambda s: s.rate.median)


def unranked_text(stats: list[LevelStats]) -> str:
    """'not comparable (aws: client stopped early ...)' when a side has an
    UNRANKED flag, else ""."""
    said = [f"{s.server}: {'; '.join(s.unranked) or ', '.join(f for f in UNRANKED if f in s.flags)}"
            for s in stats if not s.ranked]
    return f"not comparable ({'; '.join(said)}; such a level is not ranked)" if said else ""


def why_not_calibrated(row: Row) -> Reason:
    """Why a calibration level may not be saved as the client's capacity, or
    None when it may. It measures the client only when the client was the
    limit (client-bound) on a quiet host: else it measured the host, the
    network or the ceiling, and every later share of it would be wrong."""
    if any(row.has(f) for f in UNRANKED):
        return f"{row.unranked or 'not a whole level'}: measure again"
    if row.has("host-busy"):
        return (f"other processes took {row.other_cpu_pct:.0f}% of the lab's CPUs "
                f"(over {HOST_BUSY_PCT:.0f}%): it measured the host; calibrate on a quiet host")
    if row.has("steal"):
        return (f"the hypervisor took {row.steal_pct:.0f}% of the CPU time (steal): "
                "calibrate on a quiet host")
    if row.failed:
        return f"{row.failed} requests failed: the ceiling did not keep up"
    if not row.client_bound:
        return (f"the client used {row.client_cpu_pct:.0f}% of its CPUs (under "
                f"{CLIENT_BOUND_PCT:.0f}%): it was not the limit, so the figure is not its "
                "capacity")
    return None

