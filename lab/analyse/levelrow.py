"""One level of one start as a row of results.csv: what the sweep gathered
around a client run (Measured, Where), the level's flags, several client
hosts' figures combined into one level, whether the client ran the level's
length, and whether a warm-up is steady. Pure functions; the thresholds are
lab.analyse.metrics'.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from lab.analyse.metrics import (ACCEPT_QUEUE_FULL_PCT, CLIENT_BOUND_PCT, HOST_BUSY_PCT, JIT_QUIET_PER_S, LITTLES_HIGH,
                                 LITTLES_LOW, RAN_SHORT, SATURATED_SHORTFALL, STALL_MIN_S,
                                 STALLED_SHARE, STEAL_PCT)
from lab.record import failures as failure_kinds
from lab.record.histogram import Histogram
from lab.record.level import Answers, Level
from lab.record.failures import encode_failures
from lab.record.rows import Row
from lab.record.tcpkinds import TcpDelta, encode as encode_tcp


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
    # the answers during the level were wrong (lab.analyse.answers): what was
    # seen ("" : nothing seen)
    wrong_answers: str = ""
    answers: Answers | None = None         # the check slice's counts (None: none ran)
    # another process held the server's port at a check before or after the
    # level (its clients may have loaded that one): who ("": nobody)
    port_shared: str = ""
    # a paired run (lab.measure.pair): the other side's server and client CPU
    # on the CPUs this side's host figures cover (not "other processes"), and
    # its client's CPU on this side's client CPUs (a shared client CPU is
    # client-bound by both clients' load)
    partner_cpu_s: float = 0.0
    shared_client_cpu_s: float = 0.0
    # stalls: how long the client was seen stopped (SIGSTOP, a tracer), and the
    # longest time between two of the server sampler's samples (lab.record.series.
    # longest_gap: every 0.2 s, unless the lab itself stopped)
    client_stopped_s: float = 0.0
    sampler_gap_s: float = 0.0
    # how far the lab's clock ran past the client's own elapsed time, where it
    # is not wall_s less the level's elapsed time (a PAIRED=rmit level: its
    # slices' worst, not their sum of start-up times)
    clock_over_s: float | None = None
    # the accept queue of the server's listening socket at each sample (lab.host.acceptq):
    # the highest, the backlog, how many samples and how many at the backlog (None, 0:
    # not read)
    accept_queue_max: int | None = None
    accept_queue_backlog: int | None = None
    accept_queue_samples: int = 0
    accept_queue_full: int = 0
    # the kernel's TCP counters over the client run, where the server's sockets are
    # (lab.record.tcpkinds; None: not read)
    tcp: TcpDelta | None = None
    # the lab's noisy neighbour (NEIGHBOUR, lab.measure.neighbour) was running
    # when the client run began
    neighbour: bool = False
    # a JVM's JIT compiler threads' part of server_cpu_s (lab.host.procfs.
    # compiler_threads; None: not a JVM, or its threads not on this host)
    server_jit_s: float | None = None


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


def sampler_gap(m: Measured) -> bool:
    """The sampler took no sample for over STALL_MIN_S and STALLED_SHARE of the
    level's wall time: the lab itself was stopped or starved, and the level's
    CPU shares (over that wall time) cover time the load did not run."""
    return m.sampler_gap_s > max(STALL_MIN_S, STALLED_SHARE * m.wall_s)


def stalled(level: Level, duration_s: float, m: Measured, client: str) -> str:
    """Why the client's rate is not the level's though it ran the level's
    length by its own clock, or "": it was seen stopped (SIGSTOP, a tracer)
    for more than STALLED_SHARE of the level, or the level's wall time ran
    past the client's own elapsed time by that much (and STALL_MIN_S) while
    the lab's sampler had no gap (with one, the lab stalled: sampler-gap) and
    the client had not ended early (client-stopped says that)."""
    most = STALLED_SHARE * duration_s
    if m.client_stopped_s > most:
        return (f"{client} was stopped for {m.client_stopped_s:.1f} s of the {duration_s:g} s "
                "level (a signal or a tracer): it sent nothing then")
    over = m.wall_s - level.elapsed_s if m.clock_over_s is None else m.clock_over_s
    if over > max(most, STALL_MIN_S) and not sampler_gap(m) and not level.stopped:
        return (f"{client} took {m.wall_s:.1f} s by the lab's clock for {level.elapsed_s:.1f} s "
                "by its own: it stalled outside its own measurement")
    return ""


def level_flags(level: Level, client_pct: float, other_pct: float, steal_pct: float,
                littles: float | None, not_steady: bool, answer_changed: str = "",
                stall: str = "", gap: bool = False,
                wrong_answers: str = "", port_shared: str = "",
                queue_full_pct: float | None = None, neighbour: bool = False) -> list[str]:
    flags = []
    if level.stopped:
        flags.append("client-stopped")
    if stall:
        flags.append("client-stalled")
    if gap:
        flags.append("sampler-gap")
    if answer_changed:
        flags.append("answer-changed")
    if wrong_answers:
        flags.append("wrong-answers")
    if port_shared:
        flags.append("port-shared")
    if client_pct >= CLIENT_BOUND_PCT:
        flags.append("client-bound")
    if level.failed:
        flags.append("failures")
    if any(f.kind == "ports" for f in level.failures):
        flags.append("out-of-ports")
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
    if queue_full_pct is not None and queue_full_pct >= ACCEPT_QUEUE_FULL_PCT:
        flags.append("accept-queue-full")
    if neighbour:
        flags.append("neighbour")
    return flags


def queue_full_pct(m: Measured) -> float | None:
    """The share of the level's samples whose accept queue was at its backlog, %."""
    if not m.accept_queue_samples:
        return None
    return round(100 * m.accept_queue_full / m.accept_queue_samples, 1)


def make_row(where: Where, level: Level, m: Measured, client: str = "the client") -> Row:
    wall = max(m.wall_s, 1e-9)
    client_pct = max(m.client_hosts_cpu_pct) if m.client_hosts_cpu_pct else \
        100 * (m.client_cpu_s + m.shared_client_cpu_s) / (where.client_cpus * wall)
    allotment = where.lab_cpus * wall
    other_pct = max(0.0, 100 * (m.host_busy_s - m.server_cpu_s - m.client_cpu_s
                                - m.partner_cpu_s) / allotment)
    steal_pct = 100 * m.host_steal_s / allotment
    littles = round(level.in_flight / where.concurrency, 3) if where.concurrency else None
    stall = stalled(level, where.duration_s, m, client)
    full_pct = queue_full_pct(m)
    flags = level_flags(level, client_pct, other_pct, steal_pct, littles, where.not_steady,
                        m.answer_changed, stall, sampler_gap(m), m.wrong_answers,
                        m.port_shared, full_pct, m.neighbour)
    unranked = "; ".join(x for x in (level.stopped and f"client stopped early: {level.stopped}",
                                     stall and f"client stalled: {stall}",
                                     m.answer_changed and f"answer changed: {m.answer_changed}",
                                     m.wrong_answers and f"wrong answers: {m.wrong_answers}",
                                     m.port_shared and f"port shared: {m.port_shared}")
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
        server_jit_us_per_req=round(1e6 * m.server_jit_s / level.transactions, 2)
        if m.server_jit_s is not None and level.transactions else None,
        failure_kinds=encode_failures(level.failures), unranked=unranked,
        answers_checked=m.answers.checked if m.answers else None,
        answers_wrong=m.answers.wrong if m.answers else None,
        accept_queue_max=m.accept_queue_max, accept_queue_backlog=m.accept_queue_backlog,
        accept_queue_full_pct=full_pct, tcp_counters=encode_tcp(m.tcp),
        percentiles=level.percentiles)


def combine(host_levels: list[Level], merged: Histogram | None = None) -> Level:
    """One level measured by several client hosts at once, as one: counts,
    rates, data and requests in flight are summed; the mean response time is
    weighted by each host's responses; the longest response is the worst
    host's. Each percentile is that of `merged`, the hosts' latency
    distributions added up (lab.record.histogram: exact, to its resolution),
    or without it the worst host's (a percentile of the whole cannot be had
    from the parts' percentiles: this one is an upper bound of it)."""
    if len(host_levels) == 1:            # one host had the level: its own figures
        only = host_levels[0]
        return only if merged is None else replace(only, percentiles="exact")
    successful = sum(x.successful for x in host_levels)
    failed = sum(x.failed for x in host_levels)
    transactions = sum(x.transactions for x in host_levels)
    weights = [x.transactions for x in host_levels] if transactions else [1] * len(host_levels)

    def worst(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return max(known) if known else None
    offered = [x.offered_rps for x in host_levels]
    return Level(
        transactions=transactions, successful=successful, failed=failed,
        availability_pct=100 * successful / (successful + failed) if successful + failed
        else 0.0,
        elapsed_s=max(x.elapsed_s for x in host_levels),
        rate_rps=sum(x.rate_rps for x in host_levels),
        resp_ms=sum(x.resp_ms * w for x, w in zip(host_levels, weights)) / sum(weights),
        in_flight=sum(x.in_flight for x in host_levels),
        longest_ms=max(x.longest_ms for x in host_levels),
        data_mb=sum(x.data_mb for x in host_levels),
        p50_ms=merged.percentile_ms(50) if merged else worst([x.p50_ms for x in host_levels]),
        p90_ms=merged.percentile_ms(90) if merged else worst([x.p90_ms for x in host_levels]),
        p99_ms=merged.percentile_ms(99) if merged else worst([x.p99_ms for x in host_levels]),
        percentiles="exact" if merged else "bound",
        offered_rps=None if None in offered else sum(v for v in offered if v is not None),
        failures=tuple(failure_kinds.merged(f for x in host_levels for f in x.failures)),
        stopped="; ".join(dict.fromkeys(x.stopped for x in host_levels if x.stopped)),
        counted=host_levels[0].counted if len({x.counted for x in host_levels}) == 1 else "",
        counted_slack=sum(x.counted_slack for x in host_levels),
        counted_partial=any(x.counted_partial for x in host_levels))


def jit_quiet(per_s: float | None) -> bool:
    """A JVM's JIT compilations per second (lab.measure.jit) are near zero; None
    (not read yet) is not quiet."""
    return per_s is not None and per_s <= JIT_QUIET_PER_S

