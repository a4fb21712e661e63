"""The USE method read off one run (`python3 -m lab use RUN`, `make use`):
for each resource, its utilisation, saturation and errors (Brendan Gregg),
per server and level, from what results.csv recorded; where the run does
not record a figure, the table says so and names the command that shows it
live. Pure: reads the run's rows."""
from __future__ import annotations

from statistics import median

from lab.record.rows import Row
from lab.setup.markdown import Table

HEAD = ["resource", "utilisation", "saturation", "errors"]
# what the lab does not record, and the command that shows it while a level runs
RUN_QUEUE = "run queue: not recorded (watch `vmstat 1`, column r, during a level)"
LISTEN_OVERFLOWS = ("accept-queue overflows: not recorded (`nstat -az "
                    "TcpExtListenOverflows` before and after a level)")


def mid(values: list[float]) -> float:
    return median(values) if values else 0.0


def failures(rows: list[Row], kinds: tuple[str, ...]) -> int:
    """Failed requests of these kinds over the level's repetitions."""
    return sum(f.count for r in rows for f in r.failures() if f.kind in kinds)


def accept_queue(rows: list[Row]) -> str:
    """The accept queue the sampler saw over the level's repetitions
    (lab.host.acceptq), or the backlog given where it was not read."""
    seen = [r for r in rows if r.accept_queue_max is not None]
    if not seen:
        return f"backlog {rows[0].backlog}"
    full = [r.accept_queue_full_pct or 0.0 for r in seen]
    return (f"accept queue up to {max(r.accept_queue_max or 0 for r in seen):,} of backlog "
            f"{seen[0].accept_queue_backlog}, at it in {mid(full):.0f}% of samples"
            + (" (accept-queue-full)" if any(r.has("accept-queue-full") for r in rows) else ""))


def level_table(rows: list[Row]) -> list[list[str]]:
    """The USE rows of one server at one level (its repetitions' medians;
    counts summed over them)."""
    reps = len(rows)
    bound = sum(r.client_bound for r in rows)
    littles = [r.littles_ratio for r in rows if r.littles_ratio is not None]
    closed = any(r.concurrency > 0 for r in rows)
    failed = sum(r.failed for r in rows)
    return [
        ["server CPU", f"{mid([r.server_cpu_pct for r in rows]):.0f}% of its CPUs",
         RUN_QUEUE, "–"],
        ["client CPU", f"{mid([r.client_cpu_pct for r in rows]):.0f}% of its CPUs",
         f"client-bound in {bound} of {reps} repetitions" if bound else "not client-bound",
         "–"],
        ["the lab's CPUs (others)",
         f"{mid([r.other_cpu_pct for r in rows]):.0f}% other processes, "
         f"{mid([r.steal_pct for r in rows]):.0f}% steal",
         "host-busy" if any(r.has("host-busy") for r in rows) else "–", "–"],
        ["connections (accept queue)",
         (f"in flight / concurrency {mid(littles):.2f} (Little's law)" if closed and littles
          else f"offered {mid([r.offered_rps or 0 for r in rows]):,.0f}/s, achieved "
               f"{mid([r.rate_rps for r in rows]):,.0f}/s"),
         f"{accept_queue(rows)}; {LISTEN_OVERFLOWS}",
         f"refused {failures(rows, ('refused',))}, timeouts {failures(rows, ('timeout',))}"],
        ["sockets", f"{mid([float(r.time_wait) for r in rows]):,.0f} in TIME_WAIT after "
                    "the level",
         "–", f"reset or closed {failures(rows, ('reset', 'unanswered'))}"],
        ["memory", f"RSS {mid([r.rss_end_kb / 1024 for r in rows]):.1f} MB, "
                   f"{max(r.threads_peak for r in rows)} threads at most", "–", "–"],
        ["requests", f"{mid([r.rate_rps for r in rows]):,.0f} req/s",
         "saturated" if any(r.has("saturated") for r in rows) else "–",
         f"{failed:,} failed of {sum(r.transactions for r in rows):,}"],
    ]


def tables(rows: list[Row]) -> list[tuple[str, int, list[list[str]]]]:
    """(server, level, its USE rows) for every server and level, in run order."""
    grouped: dict[tuple[str, int], list[Row]] = {}
    for r in rows:
        grouped.setdefault((r.server, r.value), []).append(r)
    return [(server, value, level_table(found)) for (server, value), found in grouped.items()]


def markdown(rows: list[Row], axis: str) -> str:
    label = {"concurrency": "c", "rate": "rate"}.get(axis, axis)
    out = []
    for server, value, found in tables(rows):
        out += [f"## {server}, {label}={value}", "", *Table(HEAD, found).escaped().lines()]
        out.append("")
    return "\n".join(out)
