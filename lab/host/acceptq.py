"""The accept queue of a listening TCP socket, as the kernel holds it.

For a socket in LISTEN, `ss -ltn` shows as Recv-Q the connections whose
handshake the kernel completed and the server has not accept()ed yet, and as
Send-Q its backlog (what listen() asked, capped by net.core.somaxconn). The
kernel takes one past the backlog, then drops what comes (a client's SYN is
retransmitted after 1 s, 3 s, ...). `Reader` asks the kernel what `ss` asks
(sock_diag netlink, inet_diag: idiag_rqueue and idiag_wqueue of listening
sockets), without a process per sample: it costs the sampler well under a
millisecond, and it is exact where /proc/net/tcp gives no backlog.

The socket is opened in a network namespace (`namespace`, a file such as
/proc/PID/ns/net: the server's), and stays in it: a namespace other than
the lab's is entered by a thread of its own (setns, root), only to open it.

Written for Python 3.9 and newer, standard library only (the ssh topology's
agent runs it on the server's host).
"""
from __future__ import annotations

import os
import socket
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from lab.host import netenter

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10
HEADER = struct.Struct("=IHHII")           # nlmsghdr: len, type, flags, seq, pid
REQUEST = struct.Struct("=BBBBI48x")       # inet_diag_req_v2: family, protocol, ext, pad,
                                           # states; its sockid left zero (a dump)
MESSAGE = struct.Struct("=BBBB2sH16s16sI8sIIIII")   # inet_diag_msg: ..., sport (big-endian),
                                           # ..., expires, rqueue, wqueue, uid, inode


@dataclass(frozen=True)
class Queue:
    """A port's listening sockets at one moment: connections waiting to be
    accepted and the backlog, summed over its sockets (nginx's reuseport
    opens one a worker); `full`: one of them held its backlog or more."""
    waiting: int
    backlog: int
    full: bool


def same_namespace(namespace: str) -> bool:
    """Whether `namespace` (a namespace file) is the calling thread's network namespace."""
    mine, theirs = os.stat("/proc/thread-self/ns/net"), os.stat(namespace)
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def _open() -> socket.socket:
    return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC,
                         NETLINK_SOCK_DIAG)


def open_in(namespace: Optional[str]) -> socket.socket:
    """A sock_diag socket in `namespace` (None, or the lab's own: here). OSError
    when it cannot be entered (not root, the process gone)."""
    if namespace is None or same_namespace(namespace):
        return _open()
    return netenter.inside(namespace, _open)


def dump(sock: socket.socket, family: int, seq: int) -> List[Tuple[int, int, int]]:
    """(port, waiting, backlog) of every TCP socket of `family` in LISTEN."""
    body = REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN)
    sock.send(HEADER.pack(HEADER.size + len(body), SOCK_DIAG_BY_FAMILY,
                          NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + body)
    found: List[Tuple[int, int, int]] = []
    while True:
        data = sock.recv(65536)
        at = 0
        while at + HEADER.size <= len(data):
            length, kind, _, got_seq, _ = HEADER.unpack_from(data, at)
            if length < HEADER.size:
                raise OSError(f"sock_diag: a message of {length} bytes")
            if got_seq == seq:
                if kind == NLMSG_DONE:
                    return found
                if kind == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", data, at + HEADER.size)[0]
                    raise OSError(code, f"sock_diag: {os.strerror(code)}")
                if kind == SOCK_DIAG_BY_FAMILY and length >= HEADER.size + MESSAGE.size:
                    fields = MESSAGE.unpack_from(data, at + HEADER.size)
                    found.append((struct.unpack("!H", fields[4])[0], fields[11], fields[12]))
            at += (length + 3) & ~3
        if not data:
            raise OSError("sock_diag: the kernel's answer ended early")


class Reader:
    """The accept queue of whatever listens on `port` in `namespace`, read
    with one netlink socket opened once (`close` it)."""

    def __init__(self, port: int, namespace: Optional[str] = None) -> None:
        self.port = port
        self.sock = open_in(namespace)
        self.seq = 0

    def read(self) -> Optional[Queue]:
        """Now; None when nothing listens on the port."""
        sockets = []
        for family in (socket.AF_INET, socket.AF_INET6):
            self.seq += 1
            sockets += [(w, b) for port, w, b in dump(self.sock, family, self.seq)
                        if port == self.port]
        if not sockets:
            return None
        return Queue(waiting=sum(w for w, _ in sockets), backlog=sum(b for _, b in sockets),
                     full=any(w >= b for w, b in sockets))

    def close(self) -> None:
        self.sock.close()


class Tally:
    """A level's samples of one port's accept queue (the sweep's sampler,
    lab.host.procfs.Sampler, takes one with each sample of the server's tree):
    how many, how many at the backlog, the highest queue, the backlog last
    seen, and (monotonic s, waiting) of each for the per-second series.
    `error`: why it could not be read ("": it was, or nobody asked)."""

    def __init__(self) -> None:
        self.samples = 0
        self.full = 0
        self.max: Optional[int] = None
        self.backlog: Optional[int] = None
        self.points: List[Tuple[float, int]] = []
        self.error = ""

    def add(self, at: float, q: Optional[Queue]) -> None:
        if q is None:            # nothing listened at that moment (the server gone)
            return
        self.samples += 1
        self.full += q.full
        self.max = q.waiting if self.max is None else max(self.max, q.waiting)
        self.backlog = q.backlog
        self.points.append((at, q.waiting))

    def to_json(self) -> Dict[str, Any]:
        """Its figures for the ssh agent's answer (no points: no series there)."""
        return {"samples": self.samples, "full": self.full, "max": self.max,
                "backlog": self.backlog, "error": self.error}

    @classmethod
    def from_json(cls, data: object) -> "Tally":
        t = cls()
        if not isinstance(data, dict):
            t.error = "not read (the server host's agent is older)"
            return t
        t.samples, t.full = int(data.get("samples") or 0), int(data.get("full") or 0)
        t.max = None if data.get("max") is None else int(data["max"])
        t.backlog = None if data.get("backlog") is None else int(data["backlog"])
        t.error = str(data.get("error") or "")
        return t
