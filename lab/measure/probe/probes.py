"""The eleven probes, each bounded in time and in what it sends."""
from __future__ import annotations

import random
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from lab.host import procfs
from lab.record.probe import Facts
from lab.measure.probe.wire import (Conn, Target, describe, drive, exchange, how_it_ended, kib,
                            ms, opened, seconds, unread)

# ---------------------------------------------------------------- the probes

ProbeFn = Callable[[Target], tuple[str, Facts]]


def tree_cpu(t: Target) -> float | None:
    """The server tree's CPU seconds so far; None when it is gone."""
    s = t.sample() if t.sample is not None else procfs.sample(t.pid)
    return None if s is None else s.cpu_s



def probe_garbage(t: Target) -> tuple[str, Facts]:
    # Seeded, so every server gets the same bytes; the blank line at the end
    # lets a line-based parser decide instead of waiting for more.
    payload = random.Random(0x1AB).randbytes(2048) + b"\r\n\r\n"
    conn = exchange(t, payload)
    return describe(conn, t.limits.deadline_s), {"sent": conn.sent}


def probe_header_16k(t: Target) -> tuple[str, Facts]:
    conn = exchange(t, t.request(extra=b"X-Probe: " + b"a" * 16384 + b"\r\n"))
    return describe(conn, t.limits.deadline_s), {"sent": conn.sent}


def probe_headers_1m(t: Target) -> tuple[str, Facts]:
    """16384 header lines of 64 bytes (1 MiB), sent only as fast as the server
    reads them, until it has spent the CPU budget or the deadline is over.

    Loopback buffers would take the whole MiB at once, and a server whose
    header handling is quadratic then chews on it for minutes after we left.
    Pacing on what it has not read yet (at most `unread_max`) bounds that
    left-over work, and tells how much the server really read."""
    lim = t.limits
    lines = b"".join(b"X-Probe-%05d: " % i + b"h" * 47 + b"\r\n" for i in range(16384))
    payload = t.request(extra=lines)
    cpu0 = tree_cpu(t) or 0.0
    conn = Conn(t.addr, payload)
    conn.allowance = 0                   # nothing until the first look at the queues
    stop_reason = ""
    looked = 0.0
    read = 0                             # by the server, as far as we saw

    def tick(now: float) -> None:
        nonlocal stop_reason, looked, read
        if not conn.connected or conn.end or conn.allowance is None or stop_reason \
                or now - looked < 0.01:
            return
        cpu = tree_cpu(t)
        if cpu is not None and cpu - cpu0 >= lim.cpu_budget_s:
            stop_reason = f"stopped at the {lim.cpu_budget_s:g} s CPU budget"
            conn.allowance = 0
            return
        pending = unread(conn, t.addr, t.queue)
        if pending is None:
            # The kernel would not say at the first look: send unpaced, under
            # the deadline only. Later: the server's socket is gone.
            conn.allowance = None if not looked else 0
        else:
            read = max(read, conn.sent - pending)
            conn.allowance = max(0, lim.unread_max - pending)
        looked = now

    with opened([conn]):
        drive([conn], time.monotonic() + lim.deadline_s, lambda: conn.finished, tick,
              step_s=0.01)
        pending = unread(conn, t.addr, t.queue) if conn.connected and not conn.end else None
    if pending is not None:
        read = max(read, conn.sent - pending)
    outcome = describe(conn, lim.deadline_s)
    if stop_reason or not conn.answers:
        outcome += f" (server read {kib(read)}" + (f", {stop_reason})" if stop_reason else ")")
    return outcome, {"sent": conn.sent, "read_by_server": read, "size": len(payload),
                     "stopped": stop_reason, "paced": conn.allowance is not None}


def probe_no_version(t: Target) -> tuple[str, Facts]:
    conn = exchange(t, b"GET /api\r\n\r\n")
    return describe(conn, t.limits.deadline_s), {}


def probe_half(t: Target) -> tuple[str, Facts]:
    # The server gets a moment to show it is waiting (it should say nothing),
    # then the client leaves, as a client that crashed would.
    full = t.request()
    conn = exchange(t, full[:len(full) // 2], wait_s=0.5)
    if conn.inbox or conn.end:
        return describe(conn, 0.5), {}
    return "silent; client left after 0.5 s", {}


def probe_slow(t: Target) -> tuple[str, Facts]:
    """WORKERS + a few clients each sending one byte per interval, with normal
    requests started beside them at set times."""
    lim = t.limits
    count = min(t.workers + lim.slow_extra, lim.slow_max)
    # Long enough never to finish within the deadline at one byte per interval.
    pad = int(lim.deadline_s / lim.slow_interval_s) + 50
    slow_payload = t.request(extra=b"X-Slow: " + b"s" * pad + b"\r\n")
    t0 = time.monotonic()
    conns = [Conn(t.addr, slow_payload, expect=1, trickle_s=lim.slow_interval_s)
             for _ in range(count)]
    normal: list[Conn] = []
    # Normal requests start from 15% of the deadline, spread so that the last
    # one still has a third of the deadline to be answered.
    starts = [t0 + lim.deadline_s * (0.15 + 0.5 * i / max(lim.normal_requests - 1, 1))
              for i in range(lim.normal_requests)]

    def tick(now: float) -> None:
        while starts and now >= starts[0]:
            starts.pop(0)
            c = Conn(t.addr, t.request())
            normal.append(c)
            conns.append(c)

    with opened(conns):
        drive(conns, t0 + lim.deadline_s,
              lambda: not starts and all(c.finished for c in normal), tick)
        answered = [c for c in normal if c.answers and c.answers[0].is_contract]
        latencies = [v for v in (c.latency_ms() for c in answered) if v is not None]
        dropped = sum(1 for c in conns[:count] if c.end)
    outcome = f"{count} slow: {len(answered)} of {len(normal)} normal answered"
    if latencies:
        outcome += f", max {ms(max(latencies))}"
    if len(answered) < len(normal):
        outcome += f" (within {seconds(lim.deadline_s)})"
    if dropped:
        outcome += f"; server dropped {dropped} slow"
    return outcome, {"slow_clients": count, "normal": len(normal), "answered": len(answered),
                     "max_ms": max(latencies) if latencies else None,
                     "slow_dropped": dropped}


@contextmanager
def file_limit(wanted: int) -> Iterator[int]:
    """Raise our soft limit on open files for the idle probe; returns how many
    connections we can afford, and puts the old limit back afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    try:
        yield max(target, soft)
    finally:
        if target > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def probe_idle(t: Target) -> tuple[str, Facts]:
    """Many connections that never send anything, then one normal request."""
    lim = t.limits
    margin = 64                                  # descriptors we need for everything else
    with file_limit(lim.idle_connections + margin) as allowed:
        count = max(0, min(lim.idle_connections, allowed - margin))
        conns: list[Conn] = []
        with opened(conns):
            t0 = time.monotonic()
            for _ in range(count):
                conns.append(Conn(t.addr, b"", expect=0))
            drive(conns, t0 + lim.idle_open_s,
                  lambda: all(c.connected or c.end for c in conns))
            idle_open = sum(1 for c in conns if c.connected and not c.end)
            normal = Conn(t.addr, t.request())
            conns.append(normal)
            drive(conns, normal.started + lim.deadline_s, lambda: normal.finished)
            closed_by_server = sum(1 for c in conns[:count] if c.end)
    head = f"{idle_open} idle open" if idle_open == count else f"{idle_open} of {count} idle open"
    if normal.answers and normal.answers[0].is_contract:
        outcome = f"{head}: answered in {ms(normal.latency_ms())}"
    else:
        outcome = f"{head}: request {describe(normal, lim.deadline_s)}"
    if closed_by_server:
        outcome += f"; server closed {closed_by_server} idle"
    return outcome, {"idle_open": idle_open, "asked": count, "latency_ms": normal.latency_ms(),
                     "closed_by_server": closed_by_server}


def probe_pipelined(t: Target) -> tuple[str, Facts]:
    n = 3
    conn = exchange(t, t.request() * n, expect=n)
    good = sum(1 for a in conn.answers if a.is_contract)
    outcome = f"{good} of {n} answered"
    others = [a.label() for a in conn.answers if not a.is_contract]
    if others:
        outcome += f" (+ {', '.join(others)})"
    if len(conn.answers) < n:
        outcome += ", then " + how_it_ended(conn, t.limits.deadline_s, "")
    return outcome.rstrip(), {"answered": good}


def probe_http10(t: Target) -> tuple[str, Facts]:
    conn = exchange(t, b"GET /api HTTP/1.0\r\n\r\n")
    return describe(conn, t.limits.deadline_s), {}


def probe_no_body(t: Target) -> tuple[str, Facts]:
    conn = exchange(t, t.request(extra=b"Content-Length: 100\r\n"))
    return describe(conn, t.limits.deadline_s), {}


def probe_long_path(t: Target) -> tuple[str, Facts]:
    conn = exchange(t, t.request(path=b"/" + b"p" * 65536))
    return describe(conn, t.limits.deadline_s), {"sent": conn.sent}


@dataclass(frozen=True)
class Probe:
    name: str
    title: str
    run: ProbeFn


# Single-connection probes first; the two that occupy many connections last,
# so that a server slow to recover from them was still probed on the rest.
PROBES: tuple[Probe, ...] = (
    Probe("garbage", "garbage bytes (2 KiB random)", probe_garbage),
    Probe("header-16k", "one 16 KiB header", probe_header_16k),
    Probe("headers-1m", "1 MiB of headers (16384 × 64 B)", probe_headers_1m),
    Probe("no-version", "request line without version", probe_no_version),
    Probe("half", "half a request, then close", probe_half),
    Probe("pipelined", "3 pipelined GET /api", probe_pipelined),
    Probe("http10", "HTTP/1.0 without Host", probe_http10),
    Probe("no-body", "Content-Length: 100, no body", probe_no_body),
    Probe("long-path", "64 KiB path", probe_long_path),
    Probe("slow", "slow clients + normal requests", probe_slow),
    Probe("idle", "many idle connections + one request", probe_idle),
)


