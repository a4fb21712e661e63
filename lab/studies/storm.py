"""A connection storm against a cold server: N TCP connections opened at
once, one `GET /api` on each. It measures how long until every one is
answered, and what the kernel did meanwhile. When the accept queue (the
listen backlog) is full, Linux drops the SYN (ListenOverflows) and the
client sends it again after 1 s, then 3 s, 7 s... (TCPSynRetrans), so a
short backlog shows up as whole seconds.

    python3 -m lab.studies.storm jetty --backlog 50 512 --repeat 3

Every run starts the server fresh (cold: no JIT warm-up), pinned to
--server-cpus, as the lab starts it (BIND=127.0.0.1, BACKLOG, WORKERS =
its default); the client runs on --client-cpu. It needs the server built
(make build SERVER=...). Loopback only; each storm is bounded by
--timeout. The kernel counters are the whole host's: other traffic at the
same time adds to them.
"""
from __future__ import annotations

import argparse
import errno
import os
import resource
import selectors
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab.setup.paths import ROOT
from lab.host import procs
from lab.measure.launch import Knobs, ServerProcess, placeholders
from lab.setup.paths import cache_dir
from lab.setup.servers import discover, is_built

REQUEST = b"GET /api HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BODY = b'{"greeting":"Hello World!"}'
COUNTERS = ("ListenOverflows", "ListenDrops", "TCPSynRetrans")


@dataclass
class StormConn:
    """One of the storm's connections: its socket, when it connected and was answered."""
    sock: socket.socket
    connected: float | None = None     # seconds from the storm's start
    answered: float | None = None
    buf: bytearray = field(default_factory=bytearray)


@dataclass
class Storm:
    connections: int
    answered: int
    total_s: float                     # until every connection was answered or failed
    failed: dict[str, int]             # why, e.g. {"ECONNRESET": 3, "timeout": 1}
    connect_s: list[float]             # per answered connection: until connected,
    answer_s: list[float]              # and until answered (in the same order)
    kernel: dict[str, int]             # counter deltas over the storm

    @property
    def slow_connects(self) -> int:
        """Connections whose handshake took 1 s or more: their SYN was dropped at
        least once and sent again (the first retransmit comes after 1 s)."""
        return sum(1 for t in self.connect_s if t >= 1.0)

    @property
    def stalled(self) -> int:
        """Connections answered 1 s or more after their handshake: the queue was full
        when the client's final ACK came, so the server dropped it; the client,
        connected, sent its request, which waits for the retransmits."""
        return sum(1 for c, a in zip(self.connect_s, self.answer_s) if a - c >= 1.0)


def tcp_counters() -> dict[str, int]:
    """The TcpExt counters of /proc/net/netstat named in COUNTERS."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:]))
            return {k: int(table.get(k, 0)) for k in COUNTERS}
    return dict.fromkeys(COUNTERS, 0)


def complete(buf: bytearray) -> bool | None:
    """True once buf holds the whole greeting, False for another answer, None while partial."""
    head, sep, rest = bytes(buf).partition(b"\r\n\r\n")
    if not sep:
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if len(rest) < length:
        return None
    return head.startswith(b"HTTP/1.1 200") and rest[:length] == BODY


def storm(host: str, port: int, n: int, timeout: float) -> Storm:
    """Open n connections at once (non-blocking connects, one epoll loop), send
    one request on each as soon as it is connected, read the answer, close."""
    sel = selectors.DefaultSelector()
    failed: dict[str, int] = {}
    conns: list[StormConn] = []
    before = tcp_counters()
    start = time.monotonic()

    def fail(c: StormConn, why: str) -> None:
        failed[why] = failed.get(why, 0) + 1
        sel.unregister(c.sock)
        c.sock.close()

    for _ in range(n):
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.setblocking(False)
        c = StormConn(s)
        conns.append(c)
        sel.register(s, selectors.EVENT_WRITE, c)
        code = s.connect_ex((host, port))
        if code not in (0, errno.EINPROGRESS):
            fail(c, errno.errorcode.get(code, str(code)))
    pending = n - sum(failed.values())

    deadline = start + timeout
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
            c = key.data
            now = time.monotonic() - start
            try:
                if c.connected is None:
                    code = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if code:
                        raise OSError(code, os.strerror(code))
                    c.connected = now
                    c.sock.send(REQUEST)        # 40 bytes: always fits
                    sel.modify(c.sock, selectors.EVENT_READ, c)
                    continue
                chunk = c.sock.recv(4096)
                if not chunk:
                    raise OSError(0, "closed before the answer")
                c.buf += chunk
                ok = complete(c.buf)
                if ok is None:
                    continue
                if not ok:
                    raise OSError(0, "not the greeting")
                c.answered = now
                sel.unregister(c.sock)
                c.sock.close()
            except BlockingIOError:
                continue                        # a spurious wake-up: wait again
            except OSError as e:
                fail(c, errno.errorcode.get(e.errno or 0, e.strerror or str(e)))
            pending -= 1
    end = time.monotonic() - start

    for c in conns:
        if c.answered is None and c.sock.fileno() >= 0:
            fail(c, "timeout")
    sel.close()
    after = tcp_counters()
    done = [c for c in conns if c.answered is not None]
    return Storm(connections=n, answered=len(done), total_s=end, failed=failed,
                 connect_s=[c.connected for c in done if c.connected is not None],
                 answer_s=[c.answered for c in done if c.answered is not None],
                 kernel={k: after[k] - before[k] for k in COUNTERS})


def server_port(first: int = 18080) -> int:
    """A free port below the ephemeral range. A storm's client sockets take
    1,000 ephemeral ports and leave them in TIME_WAIT; a server port drawn
    from that range can then collide with one of them (bind: EADDRINUSE)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for port in range(first, low):
        try:
            procs.check_port_free(port)
            return port
        except procs.PortBusy:
            continue
    sys.exit(f"storm: no free port from {first} to {low - 1} (below the ephemeral range)")


def one_run(name: str, backlog: int, args: argparse.Namespace, logs: Path) -> Storm:
    server = discover(ROOT)[name]
    cache = cache_dir()
    knobs = Knobs(port=server_port(), workers=server.workers_default, backlog=backlog,
                  bind="127.0.0.1")
    if not is_built(server, placeholders(ROOT, cache, knobs)):
        sys.exit(f"storm: {name} is not built (or is stale): make build SERVER={name}")
    proc = ServerProcess(server, ROOT, cache, f"storm-{os.getpid()}", knobs,
                         tuple(args.server_cpus), logs / f"{name}-{backlog}.log")
    proc.start()
    try:
        proc.ready()
        listening = proc.check_listening()
        print(f"  {name} cold on {listening['address']}:{knobs.port} "
              f"backlog {listening['backlog']}", flush=True)
        return storm("127.0.0.1", knobs.port, args.connections, args.timeout)
    finally:
        proc.stop()


def spread(values: list[float]) -> str:
    return (f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"
            if values else "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.studies.storm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("server")
    parser.add_argument("--backlog", type=int, nargs="+", default=[512])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a storm may last (default 60)")
    parser.add_argument("--server-cpus", type=int, nargs="+", default=[0])
    parser.add_argument("--client-cpu", type=int, default=1)
    args = parser.parse_args(argv)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = args.connections + 64
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            sys.exit(f"storm: {args.connections} connections need {need} file descriptors, "
                     f"the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    os.sched_setaffinity(0, {args.client_cpu})

    print("backlog run  total_s  answered  failed  connect>=1s  stalled>=1s  "
          "answer_s p50/p99/max  "
          + "  ".join(COUNTERS), flush=True)
    with tempfile.TemporaryDirectory(prefix="lab-storm.") as tmp:
        for backlog in args.backlog:
            totals: list[float] = []
            for run in range(1, args.repeat + 1):
                r = one_run(args.server, backlog, args, Path(tmp))
                totals.append(r.total_s)
                a = sorted(r.answer_s) or [0.0]
                print(f"{backlog:7d} {run:3d}  {r.total_s:7.2f}  {r.answered:8d}  "
                      f"{sum(r.failed.values()):6d}  {r.slow_connects:11d}  {r.stalled:11d}  "
                      f"{statistics.median(a):6.2f}/{a[int(0.99 * (len(a) - 1))]:.2f}/"
                      f"{a[-1]:.2f}    "
                      + "  ".join(f"{r.kernel[k]:{len(k)}d}" for k in COUNTERS)
                      + (f"  {r.failed}" if r.failed else ""), flush=True)
            print(f"backlog {backlog}: total_s min / median / max = {spread(totals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
