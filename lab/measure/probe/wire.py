"""The probe's sockets: raw connections driven by one selector, HTTP answers
parsed as they come, and what the kernel says is still unread."""
from __future__ import annotations

import errno
import fcntl
import selectors
import socket
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus

from lab.host.procfs import TreeSample
from lab.record.probe import Facts, Limits
from lab.measure.verify import BODY


STATUS_PHRASES = {s.value: s.phrase for s in HTTPStatus}
MAX_INBOX = 1 << 20          # an answer beyond this is not kept: it only has to be described


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    pid: int                         # root of the server's process tree (for its CPU)
    workers: int
    limits: Limits
    # its tree where it runs (another host's /proc); None: this host's /proc of pid
    sample: Callable[[], TreeSample | None] | None = None
    # receive_queue asked where its sockets are (its network namespace); None: here
    queue: Callable[[tuple[str, int], tuple[str, int]], int | None] | None = None

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


def unread(conn: Conn, server: tuple[str, int],
           queue: Callable[[tuple[str, int], tuple[str, int]], int | None] | None = None
           ) -> int | None:
    """What we sent on conn that the server has not read: our send queue plus
    its receive queue (`queue`: asked where the server's sockets are). None
    once the server's socket is gone."""
    local = conn.sock.getsockname()[:2]
    theirs = (queue or receive_queue)(server, (local[0], local[1]))
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


