"""Robustness probe: what a server does with the requests a benchmark never sends.

A sweep only ever sends well-formed GET /api. Servers differ most in what
they do with everything else, and some of it hurts a later measurement (CPU
still burning after a client left) or ends it (a server that stops
answering). So, before a server is loaded, a separate start of it gets
eleven small probes (PROBES): garbage bytes, oversized headers, a request
line without a version, half a request, slow clients beside normal ones,
many idle connections, pipelining, HTTP/1.0 without Host, a body that never
comes, a very long path.

Every probe is bounded in time (its own deadline, `Limits`) and in what it
sends: a small fixed payload, or, for the 1 MiB of headers, only as fast as
the server reads (its socket's receive queue, asked of the kernel) and only
until the server has spent a CPU budget. That bounds the server CPU a probe
can cause even in a server whose header handling is quadratic. The server's
process-tree CPU is sampled before each probe and after it has settled, and
recorded. After each probe the server must still pass the contract
(lab.verify); a server that stopped answering gets a bounded chance to
recover before the next probe, and the remaining probes are skipped if it
does not (they would only measure a dead server). The probes that occupy many
connections run last, so that a server slow to recover from them has been
probed on everything else.

The probe reports, it never fixes: `ProbeReport.still_answers` tells the
pipeline whether the server is fit to be loaded at all.

Entry points: `run_probe` (a server already running), `probe_server` (start a
separate instance, probe it, stop it, wait for its CPUs to go quiet),
`main_step` (the pipeline step: params in, report and exit code out), and
`table` (one Markdown table for several servers).
"""
from __future__ import annotations

import errno
import fcntl
import json
import random
import re
import resource
import selectors
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from http import HTTPStatus
from pathlib import Path

from lab import procfs, procs
from lab.launch import Knobs, ServerProcess
from lab.params import Params
from lab.servers import Server
from lab.verify import BODY, VerifyError, verify

REPORT = "probe.json"
SERVER_LOG = "probe-server.log"
STATUS_PHRASES = {s.value: s.phrase for s in HTTPStatus}
MAX_INBOX = 1 << 20          # an answer beyond this is not kept: it only has to be described

Facts = dict[str, float | int | str | None]


@dataclass(frozen=True)
class Limits:
    """Every bound of the probe. The defaults keep one server's probe well under
    a minute when it behaves, and bounded when it does not."""
    deadline_s: float = 3.0          # each probe's own deadline (the slow and idle ones too)
    verify_timeout_s: float = 2.0    # the contract check after each probe (per socket operation)
    settle_s: float = 1.5            # after a probe: wait up to this for its CPU to go quiet
    recover_s: float = 5.0           # a server that stopped answering: wait this long for it
    quiet_s: float = 30.0            # after the last probe: wait for the tree to use < 5% of a core
    cpus_quiet_s: float = 15.0       # after the stop: wait for its CPUs to be < 10% busy
    idle_connections: int = 1000
    idle_open_s: float = 2.0         # time allowed to open the idle connections
    slow_extra: int = 3              # slow clients = WORKERS + this ...
    slow_max: int = 64               # ... but never more than this
    slow_interval_s: float = 0.1     # a slow client sends one byte this often
    normal_requests: int = 5         # normal requests sent beside the slow clients
    cpu_budget_s: float = 2.0        # 1 MiB of headers: stop sending once the server spent this
    unread_max: int = 16 << 10       # ... and never let it have more than this unread


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    pid: int                         # root of the server's process tree (for its CPU)
    workers: int
    limits: Limits

    @property
    def addr(self) -> tuple[str, int]:
        return (self.host, self.port)

    def request(self, path: bytes = b"/api", extra: bytes = b"") -> bytes:
        """A well-formed HTTP/1.1 GET, with `extra` header lines (each ending CRLF)."""
        host = f"{self.host}:{self.port}".encode()
        return b"GET " + path + b" HTTP/1.1\r\nHost: " + host + b"\r\n" + extra + b"\r\n"


# ---------------------------------------------------------------- reading answers

@dataclass(frozen=True)
class Answer:
    """One complete HTTP response found in what a connection received."""
    status: int
    reason: str
    body: bytes

    def label(self) -> str:
        # Tomcat sends no reason phrase: show the standard one, for the reader.
        reason = self.reason or STATUS_PHRASES.get(self.status, "")
        text = f"{self.status} {reason}".strip()
        return text if len(text) <= 40 else text[:39] + "…"

    @property
    def is_contract(self) -> bool:
        return self.status == 200 and self.body == BODY


def _chunked_end(data: bytes, pos: int) -> int | None:
    """End of a chunked body starting at pos, or None while it is incomplete."""
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None
        try:
            size = int(data[pos:eol].split(b";")[0].strip(), 16)
        except ValueError:
            return None
        pos = eol + 2
        if size == 0:
            if data[pos:pos + 2] == b"\r\n":
                return pos + 2
            trailers = data.find(b"\r\n\r\n", pos)
            return None if trailers < 0 else trailers + 4
        pos += size + 2
        if pos > len(data):
            return None


def _body_end(data: bytes, start: int, status: int, headers: dict[str, str],
              closed: bool) -> int | None:
    if status in (204, 304):
        return start
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return _chunked_end(data, start)
    length = headers.get("content-length")
    if length is not None and length.strip().isdigit():
        end = start + int(length)
        return end if end <= len(data) else None
    # No length: the body runs until the server closes.
    return len(data) if closed else None


def parse_answers(data: bytes, closed: bool) -> list[Answer]:
    """The complete final responses at the start of `data`, in order.

    Interim 1xx responses are skipped; parsing stops at the first response that
    is incomplete or is not HTTP (an HTTP/0.9 bare body, say)."""
    answers: list[Answer] = []
    pos = 0
    while data.startswith(b"HTTP/", pos):
        head_end = data.find(b"\r\n\r\n", pos)
        if head_end < 0:
            break
        lines = data[pos:head_end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            break
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        start = head_end + 4
        if 100 <= status < 200:
            pos = start
            continue
        end = _body_end(data, start, status, headers, closed)
        if end is None:
            break
        answers.append(Answer(status, parts[2].strip() if len(parts) > 2 else "",
                              data[start:end]))
        pos = end
    return answers


# ---------------------------------------------------------------- raw connections

class Conn:
    """One client connection, non-blocking, driven by `drive`.

    It connects, writes `payload` (all at once, or one byte every `trickle_s`
    seconds), reads whatever comes back, and notes how it ended: "closed" (the
    server closed), "reset", "refused", or "" (still open when we stopped).
    """

    def __init__(self, addr: tuple[str, int], payload: bytes, expect: int = 1,
                 trickle_s: float = 0.0) -> None:
        self.payload, self.expect, self.trickle_s = payload, expect, trickle_s
        self.started = time.monotonic()
        self.sent = 0
        self.inbox = bytearray()
        self.connected = False
        self.end = ""
        self.write_error = ""
        self.answers: list[Answer] = []
        self.answered_at: float | None = None   # when `expect` answers had come
        self.next_send = 0.0
        self.allowance: int | None = None      # bytes it may still send; None: no limit
        self.sock = socket.socket(socket.AF_INET6 if ":" in addr[0] else socket.AF_INET,
                                  socket.SOCK_STREAM)
        self.sock.setblocking(False)
        code = self.sock.connect_ex(addr)
        if code == 0:
            self.connected = True
        elif code != errno.EINPROGRESS:
            self.end = ("refused" if code == errno.ECONNREFUSED
                        else errno.errorcode.get(code, str(code)))

    @property
    def writing(self) -> bool:
        return self.connected and not self.end and not self.write_error \
            and self.sent < len(self.payload) and self.allowance != 0

    @property
    def finished(self) -> bool:
        """Nothing more to wait for: it ended, or every expected answer came."""
        return bool(self.end) or (self.expect > 0 and self.answered_at is not None)

    def wanted(self, now: float) -> int:
        if self.end:
            return 0
        if not self.connected:
            return selectors.EVENT_WRITE           # writable = the connect completed (or failed)
        events = selectors.EVENT_READ
        if self.writing and now >= self.next_send:
            events |= selectors.EVENT_WRITE
        return events

    def on_writable(self, now: float) -> None:
        if not self.connected:
            code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self.end = "refused" if code == errno.ECONNREFUSED else "reset"
                return
            self.connected = True
            return
        size = 1 if self.trickle_s else 1 << 16
        if self.allowance is not None:
            size = min(size, self.allowance)
        try:
            n = self.sock.send(self.payload[self.sent:self.sent + size])
        except BlockingIOError:
            return
        except OSError as e:
            # The server closed or reset while we were still writing; what it
            # sent before that may still be readable, so keep reading.
            self.write_error = "reset" if isinstance(e, ConnectionResetError) else "broken pipe"
            return
        self.sent += n
        if self.allowance is not None:
            self.allowance -= n
        self.next_send = now + self.trickle_s

    def on_readable(self, now: float) -> None:
        try:
            data = self.sock.recv(1 << 16)
        except BlockingIOError:
            return
        except ConnectionResetError:
            self.end = "reset"
            return
        except OSError as e:
            self.end = errno.errorcode.get(e.errno or 0, "error")
            return
        if not data:
            self.end = "closed"
        elif len(self.inbox) < MAX_INBOX:
            self.inbox += data
        if self.expect and self.answered_at is None:
            self.answers = parse_answers(bytes(self.inbox), self.end == "closed")
            if len(self.answers) >= self.expect:
                self.answered_at = now

    def next_wake(self) -> float | None:
        """When a trickling connection wants to write next."""
        return self.next_send if self.trickle_s and self.writing else None

    def latency_ms(self) -> float | None:
        if self.answered_at is None:
            return None
        return (self.answered_at - self.started) * 1000

    def close(self) -> None:
        self.sock.close()


def drive(conns: list[Conn], until: float, done: Callable[[], bool],
          tick: Callable[[float], None] | None = None, step_s: float = 0.05) -> None:
    """Serve every connection's reads and writes until `done()` or `until`.

    `tick` runs every round (at least every `step_s`) and may append to
    `conns` (normal requests join the slow clients so) or change a
    connection's allowance (pacing)."""
    sel = selectors.DefaultSelector()
    masks: dict[Conn, int] = {}
    try:
        while True:
            now = time.monotonic()
            if tick is not None:
                tick(now)
            if now >= until or done():
                return
            wakes = [w for w in (c.next_wake() for c in conns) if w is not None]
            timeout = min([until, now + step_s, *wakes]) - now
            for c in conns:
                mask = c.wanted(now)
                old = masks.get(c, 0)
                if mask == old:
                    continue
                if old and mask:
                    sel.modify(c.sock, mask, c)
                elif mask:
                    sel.register(c.sock, mask, c)
                else:
                    sel.unregister(c.sock)
                masks[c] = mask
            for key, events in sel.select(max(timeout, 0.0)):
                conn: Conn = key.data
                now = time.monotonic()
                if events & selectors.EVENT_WRITE:
                    conn.on_writable(now)
                if events & selectors.EVENT_READ and not conn.end and conn.connected:
                    conn.on_readable(now)
    finally:
        sel.close()


@contextmanager
def opened(conns: list[Conn]) -> Iterator[list[Conn]]:
    """Close every connection of the list on the way out, however the probe ends."""
    try:
        yield conns
    finally:
        for c in conns:
            c.close()


def exchange(t: Target, payload: bytes, expect: int = 1,
             wait_s: float | None = None) -> Conn:
    """One connection: send payload (under the deadline), wait for `expect`
    answers or the end. The connection comes back closed, its record kept."""
    limit = t.limits.deadline_s if wait_s is None else wait_s
    conn = Conn(t.addr, payload, expect)
    with opened([conn]) as conns:
        drive(conns, time.monotonic() + limit, lambda: conn.finished)
    return conn


# ---------------------------------------------------------------- what the server has not read

# sock_diag (netlink) constants, from linux/sock_diag.h and linux/inet_diag.h
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLMSG_ERROR = 2
INET_DIAG_NOCOOKIE = 0xFFFFFFFF
SIOCOUTQ = 0x5411                    # = TIOCOUTQ: bytes in a socket's send queue


def _sockid(family: int, local: tuple[str, int], remote: tuple[str, int]) -> bytes:
    """struct inet_diag_sockid: ports and addresses in network order, no cookie."""
    src = socket.inet_pton(family, local[0]).ljust(16, b"\0")
    dst = socket.inet_pton(family, remote[0]).ljust(16, b"\0")
    return (struct.pack("!HH", local[1], remote[1]) + src + dst
            + struct.pack("=III", 0, INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE))


def receive_queue(local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """Bytes that arrived on the TCP socket local<->remote and that its owner
    has not read yet, asked of the kernel for that one socket (sock_diag).
    None when there is no such socket (closed) or the kernel will not say.

    /proc/net/tcp says the same but lists every socket of the host: after a
    sweep, tens of thousands in TIME_WAIT, and 0.1 s to read."""
    family = socket.AF_INET6 if ":" in local[0] else socket.AF_INET
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
    req += _sockid(family, local, remote)
    flags = 1                                    # NLM_F_REQUEST: one socket, no dump
    msg = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, flags, 1, 0) + req
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            nl.sendto(msg, (0, 0))
            data = nl.recv(8192)
    except OSError:
        return None
    if len(data) < 16:
        return None
    _length, kind = struct.unpack_from("=IH", data)
    if kind == NLMSG_ERROR or kind != SOCK_DIAG_BY_FAMILY or len(data) < 16 + 64:
        return None
    # struct inet_diag_msg: 4 bytes of family/state/timer/retrans, the 48-byte
    # sockid, expires, then rqueue and wqueue (u32 each).
    rqueue: int = struct.unpack_from("=I", data, 16 + 4 + 48 + 4)[0]
    return rqueue


def unread(conn: Conn, server: tuple[str, int]) -> int | None:
    """What we sent on conn that the server has not read: our send queue plus
    its receive queue. None once the server's socket is gone."""
    local = conn.sock.getsockname()[:2]
    theirs = receive_queue(server, (local[0], local[1]))
    if theirs is None:
        return None
    try:
        ours = struct.unpack("=i", fcntl.ioctl(conn.sock.fileno(), SIOCOUTQ, b"\0" * 4))[0]
    except OSError:
        return None
    return int(ours) + theirs


# ---------------------------------------------------------------- describing outcomes

def seconds(value: float) -> str:
    return f"{value:g}s"


def kib(n: int) -> str:
    return f"{n / 1024:.0f} KiB"


def describe(conn: Conn, limit_s: float) -> str:
    """What the server did with one request, in a few words."""
    if conn.answers:
        return conn.answers[0].label()
    data = bytes(conn.inbox)
    if data:
        if data.startswith(BODY):
            return "bare body, no status line (HTTP/0.9)"
        if data.startswith(b"HTTP/"):
            first = data.split(b"\r\n", 1)[0].decode("latin-1")[:40]
            return f"incomplete answer ({first})"
        return f"{len(data)} bytes, not HTTP"
    return how_it_ended(conn, limit_s, "without answer")


def how_it_ended(conn: Conn, limit_s: float, what: str) -> str:
    """How a connection ended, answers aside: refused, reset, closed or silent."""
    if conn.end == "refused":
        return "connection refused"
    if not conn.connected:
        return f"not connected within {seconds(limit_s)} (accept queue full)"
    if "reset" in (conn.end, conn.write_error):
        return f"reset {what}"
    if conn.end or conn.write_error:
        return f"closed {what}"
    return f"no answer within {seconds(limit_s)}"


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


# ---------------------------------------------------------------- the probes

ProbeFn = Callable[[Target], tuple[str, Facts]]


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
    cpu0 = tree_cpu(t.pid) or 0.0
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
        cpu = tree_cpu(t.pid)
        if cpu is not None and cpu - cpu0 >= lim.cpu_budget_s:
            stop_reason = f"stopped at the {lim.cpu_budget_s:g} s CPU budget"
            conn.allowance = 0
            return
        pending = unread(conn, t.addr)
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
        pending = unread(conn, t.addr) if conn.connected and not conn.end else None
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


# ---------------------------------------------------------------- CPU and contract checks

def tree_cpu(pid: int) -> float | None:
    s = procfs.sample(pid)
    return None if s is None else s.cpu_s


def wait_quiet(pid: int, bound_s: float, window_s: float, share: float) -> float | None:
    """Seconds until the tree used less than `share` of a core over one
    window (or is gone); None if it never did within bound_s."""
    t0 = time.monotonic()
    prev = tree_cpu(pid)
    while True:
        time.sleep(window_s)
        cur = tree_cpu(pid)
        elapsed = time.monotonic() - t0
        if cur is None or prev is None or (cur - prev) / window_s < share:
            return elapsed
        if elapsed >= bound_s:
            return None
        prev = cur


def wait_cpus_quiet(cpus: tuple[int, ...], bound_s: float, share: float = 0.10) -> float | None:
    """Seconds until these CPUs were less than `share` busy over 1 s (all of
    them together); None if they never were within bound_s."""
    t0 = time.monotonic()
    prev, _ = procfs.cpu_times(cpus)
    while True:
        time.sleep(1.0)
        cur, _ = procfs.cpu_times(cpus)
        elapsed = time.monotonic() - t0
        if (cur - prev) / len(cpus) < share:
            return elapsed
        if elapsed >= bound_s:
            return None
        prev = cur


def check(t: Target) -> tuple[bool, str]:
    """The contract (lab.verify), with the probe's short timeout; the error on one line."""
    try:
        verify(t.host, t.port, timeout=t.limits.verify_timeout_s)
        return True, ""
    except VerifyError as e:
        return False, " / ".join(line.strip() for line in str(e).splitlines())


def check_until(t: Target, bound_s: float) -> tuple[bool, str, float]:
    """Check the contract until it passes or bound_s is over; (ok, last error, seconds)."""
    t0 = time.monotonic()
    while True:
        ok, error = check(t)
        elapsed = time.monotonic() - t0
        if ok or elapsed >= bound_s:
            return ok, error, elapsed
        time.sleep(min(0.5, max(bound_s - elapsed, 0.0)))


# ---------------------------------------------------------------- results

@dataclass(frozen=True)
class ProbeResult:
    probe: str                   # Probe.name
    title: str
    ran: bool                    # False: skipped, the server had stopped answering
    outcome: str                 # what the server did, in a few words
    cpu_s: float                 # server tree CPU from the probe's start until it settled
    elapsed_s: float             # the probe itself (not the settling, not the check)
    settled_s: float | None      # after the probe, until its CPU went quiet; None: still busy
    answers_after: bool          # passed the contract right after this probe
    error_after: str = ""        # why not
    recovered_s: float | None = None   # not answering after the previous probe: time until it did
    facts: Facts = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeReport:
    """One server's probe. `still_answers` is the verdict the pipeline uses:
    the contract passed in the final check, made after the last probe and
    after the server's CPU went quiet (allowing `Limits.recover_s` to
    recover). A server that stopped answering after some probe and came back
    still answers; `stopped_after` names the first probe it failed after."""
    server: str
    host: str
    port: int
    workers: int
    limits: Limits
    results: tuple[ProbeResult, ...] = ()
    final_ok: bool = False
    final_error: str = ""
    quiet_s: float | None = None         # after the last probe: tree < 5% of a core over 1 s
    cpus_quiet_s: float | None = None    # after the stop (probe_server): CPUs < 10% busy over 1 s
    elapsed_s: float = 0.0               # the probe (run_probe) from first probe to final check
    error: str = ""                      # the instance could not be started or probed at all

    @property
    def still_answers(self) -> bool:
        return not self.error and self.final_ok

    @property
    def stopped_after(self) -> str | None:
        """The first probe after which the contract check failed."""
        return next((r.probe for r in self.results if r.ran and not r.answers_after), None)

    @property
    def cpu_s(self) -> float:
        return sum(r.cpu_s for r in self.results)

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data.update(still_answers=self.still_answers, stopped_after=self.stopped_after,
                    cpu_s=round(self.cpu_s, 3))
        return data

    def verdict(self) -> str:
        """One line for logs and the run summary."""
        if self.error:
            return f"{self.server}: probe failed: {self.error}"
        where = f" after {self.stopped_after}" if self.stopped_after else ""
        if self.still_answers:
            recovered = f" (stopped answering{where} and recovered)" if where else ""
            return f"{self.server}: still answers{recovered}"
        return f"{self.server}: stopped answering{where}: {self.final_error}"

    def markdown(self) -> str:
        """A table row per probe, then the verdict and the CPU waits."""
        rows = ["| probe | outcome | CPU s | time s | CPU quiet after | answers after |",
                "|---|---|---:|---:|---|---|"]
        for r in self.results:
            if not r.ran:
                rows.append(f"| {r.title} | {cell(r.outcome)} | - | - | - | - |")
                continue
            after = "yes" if r.answers_after else f"**no**: {cell(r.error_after)}"
            if r.recovered_s is not None:
                after += f" (recovered {r.recovered_s:.1f} s before it)"
            rows.append(f"| {r.title} | {cell(r.outcome)} | {r.cpu_s:.2f} | {r.elapsed_s:.2f} "
                        f"| {settled_text(r.settled_s, self.limits.settle_s)} | {after} |")
        notes = [f"**{self.verdict()}**",
                 f"CPU quiet after the last probe: "
                 f"{settled_text(self.quiet_s, self.limits.quiet_s)}; "
                 f"probe time {self.elapsed_s:.1f} s, server CPU {self.cpu_s:.2f} s"]
        if self.cpus_quiet_s is not None or self.error:
            notes.append(f"CPUs quiet after the stop: "
                         f"{settled_text(self.cpus_quiet_s, self.limits.cpus_quiet_s)}")
        return "\n".join(rows) + "\n\n" + "  \n".join(notes) + "\n"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def settled_text(value: float | None, bound: float) -> str:
    return f"{value:.1f} s" if value is not None else f"never (> {bound:g} s)"


def load_report(path: Path) -> ProbeReport:
    """A probe.json read back (for the run summary)."""
    data = json.loads(path.read_text())
    limits = Limits(**data["limits"])
    results = tuple(ProbeResult(**r) for r in data["results"])
    keep = {f.name for f in fields(ProbeReport)} - {"limits", "results"}
    return ProbeReport(limits=limits, results=results,
                       **{k: v for k, v in data.items() if k in keep})


# ---------------------------------------------------------------- running the probes

def run_one(probe: Probe, t: Target) -> ProbeResult:
    """One probe: CPU before, the probe, settling, CPU after, the contract."""
    pid = t.pid
    before = tree_cpu(pid)
    t0 = time.monotonic()
    try:
        outcome, facts = probe.run(t)
    except OSError as e:
        # Our side failed (out of descriptors, say): say so, do not guess.
        outcome, facts = f"probe error: {type(e).__name__}: {e}", {}
    elapsed = time.monotonic() - t0
    settled = wait_quiet(pid, t.limits.settle_s, window_s=0.3, share=0.10)
    after = tree_cpu(pid)
    if after is None:
        outcome += "; server process exited"
    ok, error = check(t)
    cpu = after - before if after is not None and before is not None else 0.0
    return ProbeResult(probe=probe.name, title=probe.title, ran=True, outcome=outcome,
                       cpu_s=round(max(cpu, 0.0), 3), elapsed_s=round(elapsed, 3),
                       settled_s=None if settled is None else round(settled, 2),
                       answers_after=ok, error_after=error, facts=facts)


def skipped(probe: Probe, since: str) -> ProbeResult:
    return ProbeResult(probe=probe.name, title=probe.title, ran=False,
                       outcome=f"not run: not answering since {since}", cpu_s=0.0,
                       elapsed_s=0.0, settled_s=None, answers_after=False)


def run_probe(host: str, port: int, pid: int, workers: int, limits: Limits | None = None,
              server: str = "") -> ProbeReport:
    """Probe a running server (pid: the root of its process tree, for CPU).

    Each probe is followed by a contract check. A server that failed it gets
    `recover_s` to answer again before the next probe; if it does not, the
    remaining probes are skipped. Then, bounded by `quiet_s`, we wait for the
    server's CPU to go quiet, and check the contract a last time."""
    lim = limits or Limits()
    t = Target(host, port, pid, workers, lim)
    t0 = time.monotonic()
    results: list[ProbeResult] = []
    gave_up = ""
    for probe in PROBES:
        previous = results[-1] if results else None
        if gave_up:
            results.append(skipped(probe, gave_up))
            continue
        recovered: float | None = None
        if previous is not None and not previous.answers_after:
            ok, _, waited = check_until(t, lim.recover_s)
            if not ok:
                gave_up = previous.probe
                results.append(skipped(probe, gave_up))
                continue
            recovered = round(waited, 2)
        result = run_one(probe, t)
        results.append(replace(result, recovered_s=recovered))
    quiet = wait_quiet(pid, lim.quiet_s, window_s=1.0, share=0.05)
    final_ok, final_error, _ = check_until(t, lim.recover_s)
    return ProbeReport(server=server, host=host, port=port, workers=workers, limits=lim,
                       results=tuple(results), final_ok=final_ok, final_error=final_error,
                       quiet_s=None if quiet is None else round(quiet, 2),
                       elapsed_s=round(time.monotonic() - t0, 2))


def probe_server(server: Server, root: Path, cache: Path, run_dir: Path, knobs: Knobs,
                 cpus: tuple[int, ...], limits: Limits | None = None) -> ProbeReport:
    """Start a separate instance of `server` (its log: <run_dir>/<server>/
    probe-server.log), probe it, stop it, then wait (bounded) until its CPUs
    are quiet so that nothing the probe left running leaks into the measured
    run that follows. Writes <run_dir>/<server>/probe.json."""
    lim = limits or Limits()
    out = run_dir / server.name
    out.mkdir(parents=True, exist_ok=True)
    instance = ServerProcess(server, root, cache, run_dir.name, knobs, cpus, out / SERVER_LOG)
    host = procs.connect_host(knobs.bind)
    report = ProbeReport(server=server.name, host=host, port=knobs.port,
                         workers=knobs.workers, limits=lim)
    try:
        instance.start()
        instance.ready()
        report = run_probe(host, knobs.port, instance.pid, knobs.workers, lim, server.name)
    except (procs.PortBusy, procs.NotReady) as e:
        report = replace(report, error=str(e))
    finally:
        try:
            instance.stop()
        except procs.PortBusy as e:
            # The port outlived the stop: the sweep that follows would fail on it.
            report = replace(report, error=report.error or f"after the stop: {e}")
    report = replace(report, cpus_quiet_s=wait_cpus_quiet(cpus, lim.cpus_quiet_s))
    save(report, out / REPORT)
    return report


def save(report: ProbeReport, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    tmp.replace(path)


def exit_code(report: ProbeReport, force: bool) -> int:
    """0: load it; 1: it stopped answering (or could not be probed) and FORCE is off."""
    return 0 if report.still_answers or force else 1


def main_step(params: Params, server: Server, root: Path, cache: Path, run_dir: Path,
              limits: Limits | None = None) -> tuple[ProbeReport | None, int]:
    """The pipeline step `lab probe RUN SERVER`: (report, exit code).

    PROBE=0: (None, 0), nothing started. Otherwise a separate start of the
    server on params.port with the run's knobs, pinned to params.server_cpus.
    Exit 1 when the server stopped answering (or its probe instance could not
    be started) unless FORCE=1, which turns that into a warning."""
    if not params.probe:
        print(f"[{server.name}] probe skipped (PROBE=0)", file=sys.stderr)
        return None, 0
    knobs = Knobs(port=params.port, workers=server.workers(params.workers),
                  backlog=params.backlog, bind=params.bind)
    print(f"[{server.name}] probe: {len(PROBES)} probes on a separate start "
          f"(CPU {','.join(map(str, params.server_cpus))})", file=sys.stderr, flush=True)
    report = probe_server(server, root, cache, run_dir, knobs, params.server_cpus, limits)
    print(report.markdown(), file=sys.stderr)
    code = exit_code(report, params.force)
    if not report.still_answers:
        what = "loading it anyway (FORCE=1)" if params.force else \
            "not loading it (FORCE=1 loads it anyway)"
        print(f"{'warning' if params.force else 'error'}: {report.verdict()}; {what}",
              file=sys.stderr)
    return report, code


# ---------------------------------------------------------------- the summary table

# "400 Bad Request" -> "400": the wide table keeps status codes only.
REASON = re.compile(r"^([1-5][0-9][0-9]) [A-Z][A-Za-z -]*[A-Za-z]")


def table_cell(r: ProbeResult, settle_bound: float) -> str:
    if not r.ran:
        return "not run"
    outcome = REASON.sub(r"\1", r.outcome)
    text = f"{cell(outcome)} · {r.cpu_s:.2f} s"
    if r.settled_s is None:
        text += f" · busy > {settle_bound:g} s"
    if not r.answers_after:
        text += " · **✗**"
    return text


def table(reports: dict[str, ProbeReport]) -> str:
    """One Markdown table: a row per probe, a column per server (short names
    make narrow columns; the probes' descriptions need the width)."""
    names = list(reports)
    lines = ["| probe | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for i, probe in enumerate(PROBES):
        cells = []
        for name in names:
            rep = reports[name]
            r = rep.results[i] if i < len(rep.results) else None
            cells.append("-" if r is None else table_cell(r, rep.limits.settle_s))
        lines.append(f"| {probe.title} | " + " | ".join(cells) + " |")

    def row(title: str, fn: Callable[[ProbeReport], str]) -> None:
        lines.append(f"| {title} | " + " | ".join(fn(reports[n]) for n in names) + " |")

    row("WORKERS (slow clients: WORKERS + 3)", lambda r: str(r.workers))
    row("**still answers**", lambda r: "yes" if r.still_answers else
        f"**no**{': ' + cell(r.error) if r.error else ''}")
    row("stopped answering after", lambda r: r.stopped_after or "-")
    row("CPU quiet after last probe", lambda r: settled_text(r.quiet_s, r.limits.quiet_s))
    row("server CPU, all probes", lambda r: f"{r.cpu_s:.2f} s")
    row("probe time", lambda r: f"{r.elapsed_s:.0f} s")
    settle = max((r.limits.settle_s for r in reports.values()), default=Limits().settle_s)
    legend = (f"Each cell: what the server did · server CPU seconds spent on that probe "
              f"(until its CPU went quiet, at most {settle:g} s after it); *busy*: its CPU "
              f"was still busy then; **✗**: it failed the contract check (lab/verify.py) "
              f"right after that probe; *not run*: skipped, the server had stopped answering.")
    return "\n".join(lines) + "\n\n" + legend + "\n"


# ---------------------------------------------------------------- by hand

def main(argv: list[str]) -> int:
    """`python3 -m lab.probe [--port N] [--cpus 0] [--run DIR] SERVER...|all`:
    probe built servers one after another (each with its default WORKERS)
    and print the table; what regenerates docs/probe-table.md."""
    import argparse
    import os
    import tempfile

    from lab.servers import discover

    root = Path(__file__).resolve().parents[1]
    cache = Path(os.environ.get("LAB_CACHE") or root / ".cache").resolve()
    ap = argparse.ArgumentParser(prog="python3 -m lab.probe", description=main.__doc__)
    ap.add_argument("servers", nargs="+")
    ap.add_argument("--port", type=int, default=18090)
    ap.add_argument("--cpus", default="0", help="CPU list for the servers, e.g. 0 or 0,1")
    ap.add_argument("--run", type=Path, default=None, help="folder for probe.json and logs")
    args = ap.parse_args(argv)
    known = discover(root, os.environ.get("LAB_SERVER_PATH", ""))
    names = list(known) if args.servers == ["all"] else args.servers
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"error: unknown server {', '.join(unknown)}; known: {', '.join(known)}",
              file=sys.stderr)
        return 2
    run = args.run or Path(tempfile.mkdtemp(prefix="lab-probe."))
    cpus = tuple(int(c) for c in args.cpus.split(","))
    reports = {}
    for name in names:
        server = known[name]
        knobs = Knobs(port=args.port, workers=server.workers_default, backlog=512,
                      bind="127.0.0.1")
        reports[name] = probe_server(server, root, cache, run, knobs, cpus)
        print(f"{reports[name].verdict()} ({reports[name].elapsed_s:.0f} s; "
              f"{run / name / REPORT})", file=sys.stderr, flush=True)
    print(table(reports))
    return 0 if all(r.still_answers for r in reports.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
