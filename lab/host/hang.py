"""Why a client hung: which side stalls, read from /proc before the client is stopped.

When a client runs far past its time (lab.measure.topologies' ClientHung), the lab
looks, before stopping it, at what each of its threads waits in (the
kernel's wchan: a lock, the network, a child) and at its TCP connections to
the server (/proc/net/tcp: open and unanswered, closed by the server, still
connecting), and at the server's accept queue (the listener's queue length).
Then it says which side stalls: "siege waited 47 s on 3 connections that the
server accepted and never answered", or "siege waits on a lock of its own;
the server had closed every connection" (docs/servers.md, AWS: the hang was
Siege's).
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lab.host import procfs

PROC = Path("/proc")
# /proc/net/tcp states (include/net/tcp_states.h)
ESTABLISHED, SYN_SENT, CLOSE_WAIT, LISTEN = "01", "02", "08", "0A"
PORT = re.compile(r"https?://(?:\[[^\]]*\]|[^/:\s]+):(\d+)")


@dataclass(frozen=True)
class TcpSocket:
    """One TCP socket of the client to the server's port."""
    state: str          # /proc/net/tcp's hex state
    tx_queue: int       # bytes sent, not acknowledged
    rx_queue: int       # bytes received, not read by the client


def waits(wchan: str) -> str:
    """What a thread waits in, from its wchan: lock, network, child, pipe, running, other."""
    if not wchan or wchan == "0":
        return "running"
    if "futex" in wchan:
        return "lock"
    if any(k in wchan for k in ("poll", "select", "epoll", "sk_wait", "wait_woken", "inet_",
                                "tcp_", "sock")):
        return "network"
    if "do_wait" in wchan or "wait4" in wchan:
        return "child"
    if "pipe" in wchan:
        return "pipe"
    return "other"


def threads_of(pids: list[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            tasks = os.listdir(PROC / str(pid) / "task")
        except OSError:
            continue
        for t in tasks:
            try:
                out.append(waits((PROC / str(pid) / "task" / t / "wchan").read_text().strip()))
            except OSError:
                pass
    return out


def socket_inodes(pids: list[int]) -> set[str]:
    found = set()
    for pid in pids:
        fds = PROC / str(pid) / "fd"
        try:
            names = os.listdir(fds)
        except OSError:
            continue
        for fd in names:
            try:
                target = os.readlink(fds / fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                found.add(target[8:-1])
    return found


def tcp_table(net: Path) -> list[list[str]]:
    rows = []
    for name in ("tcp", "tcp6"):
        try:
            with open(net / name) as f:
                next(f)
                rows += [line.split() for line in f]
        except (OSError, StopIteration):
            pass
    return rows


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1], 16)


def queues(field: str) -> tuple[int, int]:
    tx, rx = field.split(":")
    return int(tx, 16), int(rx, 16)


def connections(pids: list[int], port: int | None, net: Path) -> tuple[list[TcpSocket], int | None]:
    """The client's TCP sockets to `port`, and the listener's accept queue there
    (None: no listener seen from the client's network namespace)."""
    inodes = socket_inodes(pids)
    conns, queued = [], None
    seen: set[tuple[str, str, str]] = set()
    for row in tcp_table(net):
        # the kernel prints the table a piece per read(): a socket may be
        # listed twice while other connections come and go (a busy host)
        if len(row) < 10 or (row[1], row[2], row[9]) in seen:
            continue
        seen.add((row[1], row[2], row[9]))
        state, tx_rx, inode = row[3], row[4], row[9]
        if state == LISTEN and port is not None and port_of(row[1]) == port:
            queued = (queued or 0) + queues(tx_rx)[1]       # rx: connections not accepted
        elif inode in inodes and (port is None or port_of(row[2]) == port):
            tx, rx = queues(tx_rx)
            conns.append(TcpSocket(state, tx, rx))
    return conns, queued


def explain(client: str, waited_s: float, threads: list[str], conns: list[TcpSocket],
            queued: int | None) -> str:
    """Which side stalls, in one sentence, from what the client's threads wait
    in and the state of its connections to the server."""
    open_ = [c for c in conns if c.state == ESTABLISHED]
    closed = [c for c in conns if c.state == CLOSE_WAIT]
    connecting = [c for c in conns if c.state == SYN_SENT]
    seen = Counter(threads)
    on = ", ".join(f"{n} on {'a lock' if w == 'lock' else w}" for w, n in seen.most_common())
    parts = []
    if open_:
        unsent = sum(1 for c in open_ if c.tx_queue)
        parts.append(f"{len(open_)} open (ESTABLISHED)"
                     + (f", {unsent} with bytes the server has not acknowledged"
                        if unsent else " with no answer to read"))
    if closed:
        parts.append(f"{len(closed)} closed by the server (CLOSE-WAIT)")
    if connecting:
        parts.append(f"{len(connecting)} still connecting (SYN-SENT)")
    conn_text = "; ".join(parts) or "none open"
    accept = f"; the server's accept queue held {queued}" if queued else ""
    facts = (f"{client}'s threads: {on or 'none seen'}; its connections to the server: "
             f"{conn_text}{accept}")
    if open_ and "network" in seen:
        why = (f"{client} waited {waited_s:.0f} s on {len(open_)} connection"
               f"{'s' * (len(open_) != 1)} that the server "
               + (f"left unanswered ({queued} waited in its accept queue, not accepted)"
                  if queued else "accepted and never answered"))
    elif "lock" in seen and "network" not in seen:
        rest = ("the server had answered or closed every connection" if not open_ and
                not connecting else
                f"no thread of it waits on its {len(open_) + len(connecting)} open connection"
                f"{'s' * (len(open_) + len(connecting) != 1)}")
        why = (f"{client} hung on its own: its threads wait on a lock (futex) and none on "
               f"the network; {rest} (a client deadlock, e.g. Siege cancelling its users at "
               "the end of a timed run)")
    else:
        why = f"{client} did not finish; neither side is clearly stalled"
    return f"{why} ({facts})"


def diagnose(pid: int, argv: list[str], waited_s: float) -> str:
    """explain() for the running client `pid` (and its children), whose command
    line `argv` names the server's URL; "" when it has gone already."""
    pids = [s.pid for s in procfs.tree(pid)]
    if not pids:
        return ""
    m = next((m for a in argv if (m := PORT.search(a))), None)
    port = int(m.group(1)) if m else None
    name = next((Path(a).name for a in argv if not a.startswith("-") and Path(a).name in
                 ("siege", "wrk", "vegeta", "sh")), Path(argv[0]).name if argv else "the client")
    conns, queued = connections(pids, port, PROC / str(pid) / "net")
    return explain(name, waited_s, threads_of(pids), conns, queued)
