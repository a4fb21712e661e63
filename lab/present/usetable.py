"""The USE method (lab.analyse.usemethod's facts) in words: a table per
server and level, each resource's utilisation, saturation and errors; where
the run does not record a figure, the cell says so and names the command
that shows it live. `make use` prints the Markdown."""
from __future__ import annotations

from lab.analyse.usemethod import AcceptQueue, UseLevel, levels
from lab.record.rows import Row
from lab.setup.markdown import Table

HEAD = ["resource", "utilisation", "saturation", "errors"]
# what the lab does not record, and the command that shows it while a level runs
RUN_QUEUE = "run queue: not recorded (watch `vmstat 1`, column r, during a level)"
LISTEN_OVERFLOWS = ("accept-queue overflows: not recorded (`nstat -az "
                    "TcpExtListenOverflows` before and after a level)")


def accept_queue(q: AcceptQueue) -> str:
    if not q.read:
        return f"backlog {q.backlog}"
    return (f"accept queue up to {q.peak:,} of backlog {q.backlog}, at it in "
            f"{q.full_pct:.0f}% of samples" + (" (accept-queue-full)" if q.flagged else ""))


def level_table(u: UseLevel) -> list[list[str]]:
    """The USE rows of one server at one level."""
    return [
        ["server CPU", f"{u.server_cpu_pct:.0f}% of its CPUs", RUN_QUEUE, "–"],
        ["client CPU", f"{u.client_cpu_pct:.0f}% of its CPUs",
         f"client-bound in {u.client_bound} of {u.reps} repetitions" if u.client_bound
         else "not client-bound", "–"],
        ["the lab's CPUs (others)",
         f"{u.other_cpu_pct:.0f}% other processes, {u.steal_pct:.0f}% steal",
         "host-busy" if u.host_busy else "–", "–"],
        ["connections (accept queue)",
         (f"in flight / concurrency {u.littles:.2f} (Little's law)"
          if u.closed and u.littles is not None
          else f"offered {u.offered_rps:,.0f}/s, achieved {u.rate_rps:,.0f}/s"),
         f"{accept_queue(u.queue)}; {LISTEN_OVERFLOWS}",
         f"refused {u.refused}, timeouts {u.timeouts}"],
        ["sockets", f"{u.time_wait:,.0f} in TIME_WAIT after the level",
         "–", f"reset or closed {u.reset}"],
        ["memory", f"RSS {u.rss_mb:.1f} MB, {u.threads_peak} threads at most", "–", "–"],
        ["requests", f"{u.rate_rps:,.0f} req/s", "saturated" if u.saturated else "–",
         f"{u.failed:,} failed of {u.transactions:,}"],
    ]


def tables(rows: list[Row]) -> list[tuple[str, int, list[list[str]]]]:
    """(server, level, its USE rows) for every server and level, in run order."""
    return [(u.server, u.value, level_table(u)) for u in levels(rows)]


def markdown(rows: list[Row], axis: str) -> str:
    label = {"concurrency": "c", "rate": "rate"}.get(axis, axis)
    out = []
    for server, value, found in tables(rows):
        out += [f"## {server}, {label}={value}", "", *Table(HEAD, found).escaped().lines()]
        out.append("")
    return "\n".join(out)

