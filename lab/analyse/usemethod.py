"""The USE method read off one run (`python3 -m lab use RUN`, `make use`):
for each resource, its utilisation, saturation and errors (Brendan Gregg),
per server and level, from what results.csv recorded, as typed facts
(lab.present.usetable words them, and says where the run does not record a
figure and which command shows it live). Pure: reads the run's rows."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from lab.record.rows import Row


def mid(values: list[float]) -> float:
    return median(values) if values else 0.0


def failures(rows: list[Row], kinds: tuple[str, ...]) -> int:
    """Failed requests of these kinds over the level's repetitions."""
    return sum(f.count for r in rows for f in r.failures() if f.kind in kinds)


@dataclass(frozen=True)
class AcceptQueue:
    """The accept queue the sampler saw over a level's repetitions
    (lab.host.acceptq); read False: not sampled, backlog is the one given."""
    read: bool
    backlog: int | None
    peak: int = 0
    full_pct: float = 0.0          # median share of samples at the backlog
    flagged: bool = False          # accept-queue-full in a repetition


@dataclass(frozen=True)
class UseLevel:
    """One server at one level: its repetitions' medians, counts summed over them."""
    server: str
    value: int
    reps: int
    server_cpu_pct: float
    client_cpu_pct: float
    client_bound: int              # repetitions flagged client-bound
    other_cpu_pct: float
    steal_pct: float
    host_busy: bool
    closed: bool                   # a closed loop (concurrency > 0)
    littles: float | None          # in flight / concurrency (Little's law); None: unknown
    offered_rps: float
    rate_rps: float
    queue: AcceptQueue
    refused: int
    timeouts: int
    reset: int                     # reset or closed unanswered
    time_wait: float
    rss_mb: float
    threads_peak: int
    saturated: bool
    failed: int
    transactions: int


def accept_queue(rows: list[Row]) -> AcceptQueue:
    seen = [r for r in rows if r.accept_queue_max is not None]
    if not seen:
        return AcceptQueue(False, rows[0].backlog)
    return AcceptQueue(True, seen[0].accept_queue_backlog,
                       max(r.accept_queue_max or 0 for r in seen),
                       mid([r.accept_queue_full_pct or 0.0 for r in seen]),
                       any(r.has("accept-queue-full") for r in rows))


def level(rows: list[Row]) -> UseLevel:
    """The USE facts of one server at one level."""
    littles = [r.littles_ratio for r in rows if r.littles_ratio is not None]
    return UseLevel(
        server=rows[0].server, value=rows[0].value, reps=len(rows),
        server_cpu_pct=mid([r.server_cpu_pct for r in rows]),
        client_cpu_pct=mid([r.client_cpu_pct for r in rows]),
        client_bound=sum(r.client_bound for r in rows),
        other_cpu_pct=mid([r.other_cpu_pct for r in rows]),
        steal_pct=mid([r.steal_pct for r in rows]),
        host_busy=any(r.has("host-busy") for r in rows),
        closed=any(r.concurrency > 0 for r in rows),
        littles=mid(littles) if littles else None,
        offered_rps=mid([r.offered_rps or 0 for r in rows]),
        rate_rps=mid([r.rate_rps for r in rows]),
        queue=accept_queue(rows),
        refused=failures(rows, ("refused",)), timeouts=failures(rows, ("timeout",)),
        reset=failures(rows, ("reset", "unanswered")),
        time_wait=mid([float(r.time_wait) for r in rows]),
        rss_mb=mid([r.rss_end_kb / 1024 for r in rows]),
        threads_peak=max(r.threads_peak for r in rows),
        saturated=any(r.has("saturated") for r in rows),
        failed=sum(r.failed for r in rows),
        transactions=sum(r.transactions for r in rows))


def levels(rows: list[Row]) -> list[UseLevel]:
    """Every server and level, in run order."""
    grouped: dict[tuple[str, int], list[Row]] = {}
    for r in rows:
        grouped.setdefault((r.server, r.value), []).append(r)
    return [level(found) for found in grouped.values()]
