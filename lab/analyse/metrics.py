"""The lab's arithmetic, as pure functions: a level's row and flags, the
spread of repetitions, steadiness of a warm-up, a client's share of its
calibrated capacity, and verdicts between servers.

Every threshold lives here; the report, the charts and the progress lines
take them from this module.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from itertools import combinations

from lab.analyse import decide
from lab.record import failures as failure_kinds
from lab.record.level import Level
from lab.record.failures import Failure, encode_failures
from lab.record.rows import Row
from lab.setup.reason import Reason

CLIENT_BOUND_PCT = 90.0        # client CPU, % of its CPUs: it measured itself
HOST_BUSY_PCT = 10.0           # CPU of other processes on the lab's CPUs
STEAL_PCT = 10.0               # CPU time the hypervisor took
NOISY_SPREAD = 1.10            # max/min of a level's repetitions
LITTLES_LOW, LITTLES_HIGH = 0.8, 1.2   # in-flight / concurrency (closed loop)
SATURATED_SHORTFALL = 0.05     # achieved rate below offered rate by more than this
STEADY_SLICES = 3              # warm-up auto: slices (lab.setup.params.WARMUP_SLICE_S) until
                               # this many consecutive slices ...
STEADY_TOLERANCE = 1.05        # ... within 5% of each other (max/min)
JIT_QUIET_PER_S = 1.0          # warm-up auto, a JVM: at most this many JIT compilations
                               # per second since the previous slice (lab.measure.jit)
MIN_REPS_FOR_VERDICT = 3       # fewer repetitions show no spread (a claim's range)
MIN_STARTS = decide.min_starts(decide.ALPHA / 2)   # the fewest starts a side on which a
                                                   # two-sided verdict can reach α (5 at 1%)
CAPACITY_LIMITED = 0.90        # a server at 90%+ of the client's calibrated capacity
FAILED_SHARE_PCT = 1.0         # failed requests, % of a repetition's: more, and the level's
                               # req/s (or latency) is not ranked
RAN_SHORT = 0.20               # the client's own elapsed time more than this share short of
                               # the level's length (Siege ends 2 s levels up to 7% short on
                               # its own): it stopped early, and its rate is not a level's

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
    "not-steady": "the warm-up hit WARMUP_MAX before three slices agreed within 5% (and, "
                  f"for a JVM, before its JIT compiled at most {JIT_QUIET_PER_S:g} method/s)",
    "noisy": f"repetitions spread more than {NOISY_SPREAD - 1:.0%} (max/min)",
    "client-stopped": f"the client stopped early: its own elapsed time fell more than "
                      f"{RAN_SHORT:.0%} short of the level's length, so its rate is not the "
                      "level's; not ranked",
    "answer-changed": "the server's answer checked after the level (status and exact body, "
                      "on a fresh connection) or sampled during it was not the contract's: "
                      "not ranked",
}
# A level with one of these in any repetition is not ranked (its verdicts are
# "not comparable", it is nobody's peak), whatever the other flags say.
UNRANKED = ("client-stopped", "answer-changed")


@dataclass(frozen=True)
class Measured:
    """What the sweep gathered around one client run, besides the client's Level."""
    server_cpu_s: float
    rss_end_kb: int
    rss_peak_kb: int
    threads_end: int
    threads_peak: int
    client_cpu_s: float
    wall_s: float
    host_busy_s: float            # user+nice+system on the lab's CPUs
    host_steal_s: float
    sampler_cpu_s: float
    time_wait: int
    # several client hosts: each one's CPU, % of its own CLIENT_CPUS; the row's
    # client CPU is the busiest host's, and client-bound applies per host
    client_hosts_cpu_pct: tuple[float, ...] = ()
    cgroup_mem_kb: int | None = None       # RUNTIME=docker: the container's cgroup memory
    cgroup_mem_peak_kb: int | None = None
    pss_kb: int | None = None              # smaps_rollup at the end (None: unavailable)
    private_kb: int | None = None
    shared_kb: int | None = None
    anon_kb: int | None = None
    server_sys_s: float | None = None      # the kernel's part of server_cpu_s
    # the answers checked after the level (or sampled during it) broke the
    # contract: what was seen ("" : they held)
    answer_changed: str = ""


@dataclass(frozen=True)
class Where:
    """Which level of which start a row belongs to."""
    server: str
    rep: int
    axis: str
    value: int
    concurrency: int
    offered_rps: float | None
    workers: int
    backlog: int
    duration_s: int
    server_cpus: int              # how many CPUs each side had
    client_cpus: int
    lab_cpus: int                 # CPUs of server and client together
    not_steady: bool = False


def ran_short(level: Level, duration_s: float, client: str) -> str:
    """Why a client run is no whole level, or "" when it ran its length: the
    client's own elapsed time fell more than RAN_SHORT short of `duration_s`,
    or the client said it gave up (Level.stopped, its own words). An
    open-loop client's elapsed time may end one request interval early."""
    slack = 1 / level.offered_rps if level.offered_rps else 0.0
    short = level.elapsed_s < (1 - RAN_SHORT) * max(duration_s - slack, 0.0)
    if not short and not level.stopped:
        return ""
    said = f": {level.stopped}" if level.stopped else ""
    return (f"{client} stopped after {level.elapsed_s:.2f} s of the {duration_s:g} s level "
            f"(its own elapsed time){said}")


def level_flags(level: Level, client_pct: float, other_pct: float, steal_pct: float,
                littles: float | None, not_steady: bool, answer_changed: str = "") -> list[str]:
    flags = []
    if level.stopped:
        flags.append("client-stopped")
    if answer_changed:
        flags.append("answer-changed")
    if client_pct >= CLIENT_BOUND_PCT:
        flags.append("client-bound")
    if level.failed:
        flags.append("failures")
    if other_pct > HOST_BUSY_PCT:
        flags.append("host-busy")
    if steal_pct > STEAL_PCT:
        flags.append("steal")
    if littles is not None and not LITTLES_LOW <= littles <= LITTLES_HIGH:
        flags.append("littles-law")
    if level.offered_rps and level.rate_rps < (1 - SATURATED_SHORTFALL) * level.offered_rps:
        flags.append("saturated")
    if not_steady:
        flags.append("not-steady")
    return flags


def make_row(where: Where, level: Level, m: Measured) -> Row:
    wall = max(m.wall_s, 1e-9)
    client_pct = max(m.client_hosts_cpu_pct) if m.client_hosts_cpu_pct else \
        100 * m.client_cpu_s / (where.client_cpus * wall)
    allotment = where.lab_cpus * wall
    other_pct = max(0.0, 100 * (m.host_busy_s - m.server_cpu_s - m.client_cpu_s) / allotment)
    steal_pct = 100 * m.host_steal_s / allotment
    littles = round(level.in_flight / where.concurrency, 3) if where.concurrency else None
    flags = level_flags(level, client_pct, other_pct, steal_pct, littles, where.not_steady,
                        m.answer_changed)
    unranked = "; ".join(x for x in (level.stopped and f"client stopped early: {level.stopped}",
                                     m.answer_changed and f"answer changed: {m.answer_changed}")
                         if x)
    return Row(
        server=where.server, rep=where.rep, axis=where.axis, value=where.value,
        concurrency=where.concurrency, offered_rps=where.offered_rps,
        workers=where.workers, backlog=where.backlog, duration_s=where.duration_s,
        transactions=level.transactions, successful=level.successful, failed=level.failed,
        availability_pct=level.availability_pct, elapsed_s=level.elapsed_s,
        rate_rps=round(level.rate_rps, 2), resp_ms=round(level.resp_ms, 4),
        p50_ms=level.p50_ms, p90_ms=level.p90_ms, p99_ms=level.p99_ms,
        longest_ms=level.longest_ms, in_flight=round(level.in_flight, 3), littles_ratio=littles,
        rss_end_kb=m.rss_end_kb, rss_peak_kb=m.rss_peak_kb,
        threads_end=m.threads_end, threads_peak=m.threads_peak,
        server_cpu_s=round(m.server_cpu_s, 3),
        server_cpu_us_per_req=round(1e6 * m.server_cpu_s / level.transactions, 2)
        if level.transactions else 0.0,
        server_cpu_pct=round(100 * m.server_cpu_s / (where.server_cpus * wall), 1),
        client_cpu_s=round(m.client_cpu_s, 3), client_cpu_pct=round(client_pct, 1),
        client_bound="client-bound" in flags, other_cpu_pct=round(other_pct, 1),
        steal_pct=round(steal_pct, 1), sampler_cpu_pct=round(100 * m.sampler_cpu_s / wall, 2),
        time_wait=m.time_wait, flags=" ".join(flags),
        cgroup_mem_kb=m.cgroup_mem_kb, cgroup_mem_peak_kb=m.cgroup_mem_peak_kb,
        pss_kb=m.pss_kb, private_kb=m.private_kb, shared_kb=m.shared_kb, anon_kb=m.anon_kb,
        server_sys_us_per_req=round(1e6 * m.server_sys_s / level.transactions, 2)
        if m.server_sys_s is not None and level.transactions else None,
        failure_kinds=encode_failures(level.failures), unranked=unranked)


def combine(levels: list[Level]) -> Level:
    """One level measured by several client hosts at once, as one: counts,
    rates, data and requests in flight are summed; the mean response time is
    weighted by each host's responses; the longest response and each
    percentile are the worst host's (a percentile of the whole cannot be had
    from the parts: this one is an upper bound of it)."""
    if len(levels) == 1:
        return levels[0]
    successful = sum(x.successful for x in levels)
    failed = sum(x.failed for x in levels)
    transactions = sum(x.transactions for x in levels)
    weights = [x.transactions for x in levels] if transactions else [1] * len(levels)

    def worst(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return max(known) if known else None
    offered = [x.offered_rps for x in levels]
    return Level(
        transactions=transactions, successful=successful, failed=failed,
        availability_pct=100 * successful / (successful + failed) if successful + failed
        else 0.0,
        elapsed_s=max(x.elapsed_s for x in levels),
        rate_rps=sum(x.rate_rps for x in levels),
        resp_ms=sum(x.resp_ms * w for x, w in zip(levels, weights)) / sum(weights),
        in_flight=sum(x.in_flight for x in levels),
        longest_ms=max(x.longest_ms for x in levels),
        data_mb=sum(x.data_mb for x in levels),
        p50_ms=worst([x.p50_ms for x in levels]),
        p90_ms=worst([x.p90_ms for x in levels]),
        p99_ms=worst([x.p99_ms for x in levels]),
        offered_rps=None if None in offered else sum(v for v in offered if v is not None),
        failures=tuple(failure_kinds.merged(f for x in levels for f in x.failures)),
        stopped="; ".join(dict.fromkeys(x.stopped for x in levels if x.stopped)))


def steady(rates: list[float], slices: int = STEADY_SLICES,
           tolerance: float = STEADY_TOLERANCE) -> bool:
    """The last `slices` warm-up slices agree within `tolerance` (max/min)."""
    if len(rates) < slices:
        return False
    last = rates[-slices:]
    return min(last) > 0 and max(last) / min(last) <= tolerance


def jit_quiet(per_s: float | None) -> bool:
    """A JVM's JIT compilations per second (lab.measure.jit) are near zero; None
    (not read yet) is not quiet."""
    return per_s is not None and per_s <= JIT_QUIET_PER_S


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
            failed_pct=max(failed_share(r) for r in group),
            failed_by_rep=tuple(r.failed for r in sorted(group, key=lambda r: r.rep)),
            unranked=tuple(f"rep {r.rep}: {r.unranked}" if len(group) > 1 else r.unranked
                           for r in sorted(group, key=lambda r: r.rep) if r.unranked),
            reps=tuple(r.rep for r in group),
            lost_pct=tuple(r.steal_pct + r.other_cpu_pct for r in group)))
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


# --------------------------------------------------------------------------- the verdict gate

@dataclass(frozen=True)
class Sample:
    """One side of a comparison: a figure over repetitions (one value per
    repetition), and whether the client, not the server, was the limit."""
    label: str
    values: tuple[float, ...]
    client_bound: bool = False
    failed_pct: float = 0.0      # the worst repetition's failed requests, %: over
                                 # FAILED_SHARE_PCT the figure is not ranked


@dataclass(frozen=True)
class Judgement:
    """What the gate says of two samples."""
    kind: str            # better | better-at-least | equivalent | undecided | not-comparable |
                         # missing
    winner: str | None   # better and better-at-least: the better side's label
    loser: str | None
    percent: float | None   # how much better the winner is (lower is better: how much
                            # higher the loser's figure is): the Hodges-Lehmann estimate
    text: str
    alpha: float | None = None        # the false-alarm rate the rule was applied at
    delta_pct: float | None = None    # the smallest effect that counts
    starts: tuple[int, int] | None = None   # starts of each side it stood on
    decision: decide.Decision | None = None


RANKED = ("better", "better-at-least")
UNDECIDED = "undecided"


def too_few(n: int) -> str:
    return (f"inconclusive ({n} repetition{'s' * (n != 1)}; "
            f"REPEAT={MIN_REPS_FOR_VERDICT} or more shows the spread)")


def bound_text(labels: list[str], extra: str = "") -> str:
    return f"not comparable (client-bound: {', '.join(labels)}{extra})"


def unjudgeable(samples: list[Sample], min_reps: int = MIN_REPS_FOR_VERDICT
                ) -> Judgement | None:
    """The gates before any ranking, for figures that must all be exact (a
    ratio, an interval): a client-bound figure, too few repetitions, a figure
    not measured. None when they all pass."""
    def no(kind: str, text: str) -> Judgement:
        return Judgement(kind, None, None, None, text)
    empty = [s.label for s in samples if not s.values]
    if empty:
        return no("missing", f"not measured ({', '.join(empty)})")
    bound = [s.label for s in samples if s.client_bound]
    if bound:
        return no("not-comparable", bound_text(bound))
    n = min(len(s.values) for s in samples)
    if n < min_reps:
        return no("inconclusive", too_few(n))
    return None


def judge(a: Sample, b: Sample, *, higher_is_better: bool = True,
          better: str = "is faster than", alpha: float = decide.ALPHA,
          delta_pct: float = decide.DELTA_PCT, sided: str = "two") -> Judgement:
    """The one verdict gate: is one sample better than the other, by the
    lab's decision rule (lab.analyse.decide: an exact rank test of the starts
    at α, an effect of at least δ)? Used by a run's verdicts, `make
    compare`, the claims, cost and noise (`higher_is_better=False` for a
    cost or a latency; `better` is the phrase between the labels; `sided`
    "a": only "A better than B" is asked, as the regression gate does).

    In this order: a side without values is missing; more than
    FAILED_SHARE_PCT failed requests are not ranked; a client-bound figure
    is a bound, not a measurement: when higher is better it is a lower bound
    of the server's, so "better" still holds when only the better side was
    client-bound (better-at-least), and otherwise the pair is not
    comparable; then the rule: better, equivalent within ±δ, or undecided
    with its reason."""
    def no(kind: str, text: str) -> Judgement:
        return Judgement(kind, None, None, None, text, alpha, delta_pct,
                         (len(a.values), len(b.values)))
    empty = [s.label for s in (a, b) if not s.values]
    if empty:
        return no("missing", f"not measured ({', '.join(empty)})")
    failing = [s for s in (a, b) if s.failed_pct > FAILED_SHARE_PCT]
    if failing:
        said = ", ".join(f"{s.label}: {s.failed_pct:.1f}% of requests failed" for s in failing)
        return no("not-comparable", f"not comparable ({said}; more than {FAILED_SHARE_PCT:g}% "
                  "failed is not ranked: see what failed)")
    d = decide.decide(a.values, b.values, higher_is_better=higher_is_better, alpha=alpha,
                      delta_pct=delta_pct, sided=sided)
    return from_decision(a, b, d, higher_is_better, better)


def rule_text(d: decide.Decision) -> str:
    return d.stated()


def from_decision(a: Sample, b: Sample, d: decide.Decision, higher_is_better: bool,
                  better: str) -> Judgement:
    """A decision as a judgement, the client-bound sides taken into account."""
    def j(kind: str, text: str, winner: str | None = None, loser: str | None = None,
          percent: float | None = None) -> Judgement:
        return Judgement(kind, winner, loser, percent, text, d.alpha, d.delta_pct, d.starts, d)
    bound = [s.label for s in (a, b) if s.client_bound]
    if d.outcome == decide.BETTER:
        (first, fb), (second, sb) = ((a.label, a.client_bound), (b.label, b.client_bound)) \
            if d.a_better else ((b.label, b.client_bound), (a.label, a.client_bound))
        est, lo, hi = (d.estimate_pct, d.lo_pct, d.hi_pct) if d.a_better else \
            (ratio_flip(d.estimate_pct), ratio_flip(d.hi_pct), ratio_flip(d.lo_pct))
        said = f"{decide.span(lo, hi)}; {d.stated()}"
        if sb or (fb and not higher_is_better):
            return j("not-comparable", bound_text(bound, f", {said}"))
        if fb:
            return j("better-at-least", f"{first} {better} {second} by at least {est:.0f}% "
                     f"({said}; {first} was client-bound, so its figure is a lower bound)",
                     first, second, est)
        return j("better", f"{first} {better} {second} by {est:.0f}% ({said})",
                 first, second, est)
    if bound:
        return j("not-comparable", bound_text(bound, f"; {d.outcome}: {d.reason}"))
    if d.outcome == decide.EQUIVALENT and "upper bound" in d.reason:
        return j("equivalent", f"{b.label} is no worse than {a.label} by {d.delta_pct:g}% or "
                 f"more ({a.label} better by {decide.span(d.lo_pct, d.hi_pct)}; {d.stated()})")
    if d.outcome == decide.EQUIVALENT:
        return j("equivalent", f"equivalent within ±{d.delta_pct:g}% "
                 f"({a.label} better by {decide.span(d.lo_pct, d.hi_pct)}; {d.stated()})")
    why = d.reason if not d.reason.startswith("the interval") else \
        (f"{a.label} better by {decide.span(d.lo_pct, d.hi_pct)}, which spans "
         f"±{d.delta_pct:g}%: more starts decide")
    return j(UNDECIDED, f"undecided ({why}; {d.stated()})")


def ratio_flip(p: float) -> float:
    """A's advantage over B in %, said as B's over A."""
    if p <= -100:
        return float("inf")
    return 100 * (1 / (1 + p / 100) - 1) if p != float("inf") else -100.0


Side = tuple[str, Spread, bool]      # label, figure over repetitions, client-bound


def judge_spreads(a: Side, b: Side, *, higher_is_better: bool = True,
                  better: str = "is faster than", alpha: float = decide.ALPHA,
                  delta_pct: float = decide.DELTA_PCT) -> Judgement:
    """`judge` on figures summed up as spreads: the rule needs the values of
    each start (a ratio of two figures has none: undecided)."""
    (la, x, ba), (lb, y, bb) = a, b
    if not x.values or not y.values:
        return Judgement(UNDECIDED, None, None, None, "undecided (no value of each start)")
    return judge(Sample(la, x.values, ba), Sample(lb, y.values, bb),
                 higher_is_better=higher_is_better, better=better, alpha=alpha,
                 delta_pct=delta_pct)


@dataclass(frozen=True)
class Verdict:
    value: int       # the level; a primary verdict: the first of `levels`
    a: str
    b: str           # a is the faster one when kind is faster or faster-at-least
    kind: str        # a Judgement's kind, better read as faster
    percent: float | None
    text: str
    # where req/s (or p99) cannot rank the pair: server CPU per request,
    # through the same gate (lower is better); None where it was not needed
    cpu: Judgement | None = None
    cpu_text: str = ""
    wire_text: str = ""   # the two servers' responses differ in size (lab.analyse.sends)
    cost_text: str = ""   # beside the CPU verdict: make cost of the same builds (lab.analyse.costlink)
    alpha: float | None = None       # the false-alarm rate it was decided at
    delta_pct: float | None = None   # the smallest effect that counts
    starts: tuple[int, int] | None = None   # the starts of a and of b it stood on
    levels: tuple[int, ...] = ()     # a primary verdict: the levels it is taken across
    metric: str = ""                 # a primary verdict: what it ranks by

    def said(self) -> str:
        """The verdict in full: req/s, then CPU per request (with instructions per
        request beside, when known), then the bytes."""
        cpu = f"{self.cpu_text} [{self.cost_text}]" if self.cpu_text and self.cost_text \
            else self.cpu_text
        return "; ".join(x for x in (self.text, cpu, self.wire_text) if x)

    def rule(self) -> str:
        """'α=1%, δ=5%, 5+5 starts', or a dash where the rule did not run."""
        if self.alpha is None or self.starts is None or self.delta_pct is None:
            return "–"
        return (f"α={decide.pct(100 * self.alpha)}%, δ={self.delta_pct:g}%, "
                f"{self.starts[0]}+{self.starts[1]} starts")

    def where(self) -> str:
        """The level column: the level, or a primary verdict's levels."""
        if not self.levels:
            return str(self.value)
        return f"{self.levels[0]}–{self.levels[-1]}" if len(self.levels) > 2 else \
            ", ".join(map(str, self.levels))


def samples(a: LevelStats, b: LevelStats) -> tuple[Sample, Sample, bool, str]:
    """Two servers' figures at one level, for the gate: requests/s (closed
    loop), or p99 latency at the same offered rate (open loop, lower is better)."""
    if a.open_loop:
        def p99(s: LevelStats) -> tuple[float, ...]:
            return s.p99_ms.values if s.p99_ms is not None else ()
        return (Sample(a.server, p99(a), a.client_bound, a.failed_pct),
                Sample(b.server, p99(b), b.client_bound, b.failed_pct),
                False, "has lower p99 latency than")
    return (Sample(a.server, a.rate.values, a.client_bound, a.failed_pct),
            Sample(b.server, b.rate.values, b.client_bound, b.failed_pct), True, "is faster than")


CPU_PHRASE = "needs less server CPU per request than"
HOST_FLAGS = ("host-busy", "steal")


def cpu_values(s: LevelStats) -> tuple[float, ...]:
    """Server CPU µs per request of each repetition (a repetition that
    completed nothing has none)."""
    return tuple(v for v in s.cpu_us_per_req.values if v > 0)


def needs_cpu_verdict(kind: str, a: LevelStats, b: LevelStats) -> bool:
    """Where req/s cannot rank a pair: the gate did not rank it (client-bound,
    equivalent, undecided), or either side ran on a busy host."""
    return kind not in RANKED + ("faster", "faster-at-least", "slower", "slower-at-least") or \
        any(f in x.flags for x in (a, b) for f in HOST_FLAGS)


def efficiency(a: LevelStats, b: LevelStats, labels: tuple[str, str] | None = None,
               alpha: float = decide.ALPHA, delta_pct: float = decide.DELTA_PCT,
               sided: str = "two") -> tuple[Judgement, str]:
    """Server CPU per request of two levels through the gate (lower is
    better): it counts the server's own user+kernel time per completed
    request, so a client that was the limit does not make it a bound (the
    server simply idled more). Returns the judgement and its sentence:
    'ada-mini needs 39% less server CPU per request than aws (41 vs 67 µs,
    [...]; α=1%, δ=5%, 5+5 starts)'."""
    la, lb = labels or (a.server, b.server)
    j = judge(Sample(la, cpu_values(a)), Sample(lb, cpu_values(b)),
              higher_is_better=False, better=CPU_PHRASE, alpha=alpha, delta_pct=delta_pct,
              sided=sided)
    busy = sorted({f for x in (a, b) for f in HOST_FLAGS if f in x.flags})
    caveat = (f" ({' and '.join(busy)}: it counts the server's own CPU time only)"
              if busy else "")
    if j.kind != "better" or j.winner is None or j.percent is None or j.decision is None:
        return j, f"server CPU per request: {j.text}"
    win, lose = (a, b) if j.winner == la else (b, a)
    w, lo = statistics.median(cpu_values(win)), statistics.median(cpu_values(lose))
    less = 100 * (1 - 1 / (1 + j.percent / 100))
    kernel = f", of which kernel {win.cpu_sys_us_per_req.median:,.1f} vs " \
        f"{lose.cpu_sys_us_per_req.median:,.1f}" \
        if win.cpu_sys_us_per_req is not None and lose.cpu_sys_us_per_req is not None else ""
    return j, (f"{j.winner} needs {less:.0f}% less server CPU per request than {j.loser} "
               f"({w:,.1f} vs {lo:,.1f} µs{kernel}; {j.decision.stated()}){caveat}")


def verdict(a: LevelStats, b: LevelStats, alpha: float = decide.ALPHA,
            delta_pct: float = decide.DELTA_PCT) -> Verdict:
    """Two servers at one level, through the gate; where req/s (or p99)
    cannot rank them, server CPU per request too."""
    unranked = unranked_text([a, b])
    if unranked:            # a level that is no whole, honest level is not ranked at all
        return Verdict(a.value, a.server, b.server, "not-comparable", None, unranked)
    sa, sb, higher, phrase = samples(a, b)
    j = judge(sa, sb, higher_is_better=higher, better=phrase, alpha=alpha, delta_pct=delta_pct)
    if j.kind == "missing":
        j = Judgement(UNDECIDED, None, None, None, "undecided (no latency percentiles)",
                      alpha, delta_pct, j.starts)
    cpu, cpu_text = efficiency(a, b, alpha=alpha, delta_pct=delta_pct) \
        if needs_cpu_verdict(j.kind, a, b) else (None, "")
    rule = dict(alpha=j.alpha, delta_pct=j.delta_pct, starts=j.starts)
    if j.winner is not None and j.loser is not None:     # a run's verdicts are about speed
        starts = j.starts if j.winner == a.server or j.starts is None else \
            (j.starts[1], j.starts[0])
        return Verdict(a.value, j.winner, j.loser, j.kind.replace("better", "faster"),
                       j.percent, j.text, cpu, cpu_text, alpha=j.alpha,
                       delta_pct=j.delta_pct, starts=starts)
    return Verdict(a.value, a.server, b.server, j.kind, j.percent, j.text, cpu, cpu_text,
                   **rule)  # type: ignore[arg-type]


def verdict_values(stats: dict[str, list[LevelStats]], asked: tuple[int, ...]) -> list[int]:
    """The levels to compare at: those asked for (VERDICT_AT), else every level
    measured. Never levels picked from the figures being judged (each server's
    peak, say): a level chosen because its repetitions came out high would be
    judged by the same repetitions (the winner's curse)."""
    if asked:
        return sorted(asked)
    return sorted({x.value for s in stats.values() for x in s})


@dataclass(frozen=True)
class Looks:
    """How a run's starts were spent: fixed (REPEAT=N: one look) or
    REPEAT=auto (a look after every start from `first` to `last` a side)."""
    first: int | None = None
    last: int | None = None

    def alpha(self, alpha: float, starts: int) -> float:
        return decide.look_alpha(alpha, starts, self.first, self.last)

    def at(self, most: int) -> list[int]:
        """The looks made over `most` starts a side."""
        if self.first is None:
            return [most]
        return list(range(min(self.first, most), most + 1))


def by_start(levels: list[LevelStats], at: list[int], metric: str, upto: int | None = None
             ) -> dict[int, float]:
    """Start (rep): the mean log figure over the levels `at`, for the starts
    that measured every one of them (the first `upto` starts only)."""
    import math
    per: dict[int, list[float]] = {}
    for s in levels:
        if s.value not in at:
            continue
        vals = s.rate.values if metric == "rate" else s.cpu_us_per_req.values if \
            metric == "cpu" else (s.p99_ms.values if s.p99_ms is not None else ())
        if len(vals) != len(s.reps):
            continue
        for rep, v in zip(s.reps, vals):
            if v > 0 and (upto is None or rep <= upto):
                per.setdefault(rep, []).append(math.log(v))
    return {rep: sum(xs) / len(xs) for rep, xs in per.items() if len(xs) == len(at)}


RATE_UNCLEAN = ("client-bound", "host-busy", "steal")


def primary(name_a: str, la: list[LevelStats], name_b: str, lb: list[LevelStats],
            at: list[int], alpha: float, delta_pct: float, looks: Looks) -> Verdict:
    """One verdict for a pair across the levels `at`: each start's mean log
    figure over them is one value (a start covers every level), by req/s (or
    p99 in open loop) over the levels both measured cleanly (no client-bound,
    host-busy or steal, failures within FAILED_SHARE_PCT), else by server CPU
    per request over every level both measured. REPEAT=auto: the looks are
    replayed (the first k starts of each side, k from the first look on) and
    the verdict is the first look's that decided."""
    import math
    ba, bb = {s.value: s for s in la}, {s.value: s for s in lb}
    both = [v for v in at if v in ba and v in bb]
    open_loop = any(s.open_loop for s in la + lb)
    clean = [v for v in both if not any(x.flags.get(f, 0) for x in (ba[v], bb[v])
                                         for f in RATE_UNCLEAN)
             and max(ba[v].failed_pct, bb[v].failed_pct) <= FAILED_SHARE_PCT]
    metric, used = ("p99" if open_loop else "rate", clean) if clean else ("cpu", both)
    higher = metric == "rate"
    phrase = {"rate": "is faster than", "p99": "has lower p99 latency than",
              "cpu": CPU_PHRASE}[metric]
    what = {"rate": "requests/s", "p99": "p99 latency", "cpu": "server CPU per request"}[metric]
    note = "" if metric != "cpu" else \
        " (req/s is client-bound, host-busy or failing at every level: CPU per request instead)"
    if not used:
        return Verdict(at[0] if at else 0, name_a, name_b, "missing", None,
                       "not measured at a common level", levels=tuple(at), metric=what)
    most = max([0] + [r for s in la + lb for r in s.reps])
    j: Judgement | None = None
    for k in looks.at(most):
        xa, xb = by_start(la, used, metric, k), by_start(lb, used, metric, k)
        a_alpha = looks.alpha(alpha, k)
        j = judge(Sample(name_a, tuple(math.exp(v) for v in xa.values())),
                  Sample(name_b, tuple(math.exp(v) for v in xb.values())),
                  higher_is_better=higher, better=phrase, alpha=a_alpha, delta_pct=delta_pct)
        if j.kind in RANKED + ("equivalent",):
            break
    assert j is not None
    text = f"across {len(used)} level{'s' * (len(used) != 1)} by {what}: {j.text}{note}"
    lv = tuple(used)
    if j.winner is not None and j.loser is not None:
        starts = j.starts if j.winner == name_a or j.starts is None else \
            (j.starts[1], j.starts[0])
        return Verdict(lv[0], j.winner, j.loser, j.kind.replace("better", "faster"), j.percent,
                       text, alpha=j.alpha, delta_pct=j.delta_pct, starts=starts, levels=lv,
                       metric=what)
    return Verdict(lv[0], name_a, name_b, j.kind, j.percent, text, alpha=j.alpha,
                   delta_pct=j.delta_pct, starts=j.starts, levels=lv, metric=what)


def primaries(stats: dict[str, list[LevelStats]], at: list[int], alpha: float = decide.ALPHA,
              delta_pct: float = decide.DELTA_PCT, looks: Looks = Looks()) -> list[Verdict]:
    """The run's primary verdicts: one a pair, the family of the run (each at
    α over the number of pairs, Bonferroni)."""
    pairs = list(combinations(stats, 2))
    each = decide.family_alpha(alpha, len(pairs))
    return [primary(a, stats[a], b, stats[b], at, each, delta_pct, looks) for a, b in pairs]


def verdicts(stats: dict[str, list[LevelStats]], at: list[int], alpha: float = decide.ALPHA,
             delta_pct: float = decide.DELTA_PCT, looks: Looks = Looks()) -> list[Verdict]:
    """Every pair of servers at every level in `at` (in the order given): the
    secondary verdicts, one family (req/s and CPU per request of every pair at
    every level, each at α over their number: Bonferroni)."""
    pairs = list(combinations(stats, 2))
    most = max([1] + [len(x.rate.values) for s in stats.values() for x in s])
    each = decide.family_alpha(looks.alpha(alpha, most), 2 * len(pairs) * max(1, len(at)))
    out = []
    for value in at:
        for a, b in pairs:
            sa = next((s for s in stats[a] if s.value == value), None)
            sb = next((s for s in stats[b] if s.value == value), None)
            if sa is None or sb is None:
                out.append(Verdict(value, a, b, "missing", None,
                                   f"not measured at {value} ({a if sa is None else b})"))
            else:
                out.append(verdict(sa, sb, each, delta_pct))
    return out
