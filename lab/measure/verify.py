"""The contract every server meets before it is loaded.

GET /api: 200, Content-Type application/json, Content-Length 27, the exact
body; another path: 404; two requests answered on one keep-alive connection;
and, for a run with connection close, what that mode promises: a request
that says `Connection: close` gets `Connection: close` back and then a closed
connection (a client such as wrk reuses a connection whose answer did not
say close: a server that closes it anyway fails every other request).
Every check is made and every breach reported in one pass (`checks`, typed
lab.analyse.contract.Check values); `verify` raises VerifyError with all of
them. A server that does not answer at all is one breach.

Content-Type is compared by its media type: a parameter is legal HTTP
(RFC 9110 8.3), so `application/json; charset=utf-8` (ASF) passes, and the
parameter is recorded in what passed ("Content-Type (charset=utf-8)").
"""
from __future__ import annotations

import http.client
import socket
import time
from email.message import Message
from dataclasses import dataclass

from lab.analyse import contract
from lab.analyse.contract import Check

BODY, CONTENT_TYPE = contract.BODY, contract.CONTENT_TYPE     # the contract's, one owner


class VerifyError(AssertionError):
    """The contract not met: `breaches` holds every failed check (lab.analyse.contract),
    its message one breach per line; `check` and `got` are the first breach's."""

    def __init__(self, check: str | Check, got: str = "",
                 breaches: list[Check] | None = None) -> None:
        found = breaches or [check if isinstance(check, Check) else
                             Check(name=check, rule=check, ok=False, got=got)]
        super().__init__(contract.lines(found))
        self.breaches = found
        self.check = found[0].rule
        self.got = found[0].got


@dataclass(frozen=True)
class Reply:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    will_close: bool

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def show(self) -> str:
        head = "; ".join(f"{k}: {v}" for k, v in self.headers)
        return f"{self.status} {self.reason} [{head}] body={self.body[:120]!r}"


def get(conn: http.client.HTTPConnection, path: str) -> Reply:
    conn.request("GET", path, headers={"Accept": "application/json"})
    resp = conn.getresponse()
    body = resp.read()
    return Reply(resp.status, resp.reason, resp.getheaders(), body, resp.will_close)


def media_type(value: str) -> tuple[str, list[str]]:
    """A Content-Type's media type (lower case) and its parameters as name=value;
    the stdlib's header parser reads it ("" for a value without a type/subtype)."""
    m = Message()
    m["Content-Type"] = value
    params = m.get_params() or []
    kind = params[0][0].lower() if params and "/" in params[0][0] else ""
    return kind, [f"{k.lower()}={v}" for k, v in params[1:]]


def api_checks(reply: Reply) -> list[Check]:
    """The checks of one answer to GET /api: status, Content-Type (its parameters,
    if any, in the passed label), Content-Length, the exact body."""
    ctype = reply.header("Content-Type")
    kind, params = media_type(ctype) if ctype is not None else ("", [])
    length = reply.header("Content-Length")
    return [
        Check("GET /api 200", "GET /api must answer 200", reply.status == 200, reply.show()),
        Check(f"Content-Type ({'; '.join(params)})" if params else "Content-Type",
              f"GET /api must send Content-Type: {CONTENT_TYPE} (parameters allowed)",
              kind == CONTENT_TYPE, f"{ctype!r}"),
        Check(f"Content-Length {len(BODY)}",
              f"GET /api must send Content-Length: {len(BODY)} (not chunked)",
              length is not None and length.strip() == str(len(BODY)),
              f"Content-Length={length!r}, "
              f"Transfer-Encoding={reply.header('Transfer-Encoding')!r}"),
        Check("exact body", f"GET /api must return exactly {BODY.decode()}",
              reply.body == BODY, repr(reply.body))]


def failed(name: str, rule: str, e: BaseException) -> Check:
    """A check the server broke by not answering (an exception on our side)."""
    return Check(name, rule, False, f"{type(e).__name__}: {e}")


def keep_alive(conn: http.client.HTTPConnection, first: Reply) -> Check:
    """Two requests answered on one connection, the second as the first."""
    name = "keep-alive"
    if first.will_close or conn.sock is None:
        return Check(name, "an HTTP/1.1 request must keep the connection open", False,
                     first.show())
    sock = conn.sock
    try:
        second = get(conn, "/api")
    except (http.client.HTTPException, OSError) as e:
        return failed(name, "a second request on the same connection must be answered", e)
    if conn.sock is not sock:
        return Check(name, "the second request must reuse the connection", False,
                     "a new connection")
    # what the first answer broke is already a breach: only what differs counts here
    wrong = [c for c, was in zip(api_checks(second), api_checks(first)) if was.ok and not c.ok]
    if wrong:
        return Check(name, "the second answer on the connection must meet the contract too",
                     False, "; ".join(f"{c.rule}: got {c.got}" for c in wrong))
    return Check(name, "two requests answered on one keep-alive connection", True)


def elsewhere(conn: http.client.HTTPConnection) -> Check:
    """GET /no-such-path: 404 (on the kept-alive connection when it was kept)."""
    name, rule = "404 elsewhere", "GET /no-such-path must answer 404"
    try:
        missing = get(conn, "/no-such-path")
    except (http.client.HTTPException, OSError) as e:
        return failed(name, rule, e)
    return Check(name, rule, missing.status == 404, missing.show())


TIMEOUT_S = 5.0          # each socket operation of a check (a server's first answer: first_timeout)
CLOSE_WAIT_S = 2.0       # how long a server may take to close after its last answer


def has_token(value: str | None, token: str) -> bool:
    """A Connection header's value lists `token` (comma-separated, any case)."""
    return value is not None and token in (t.strip().lower() for t in value.split(","))


def connection_close(host: str, port: int, timeout: float = TIMEOUT_S) -> list[Check]:
    """What connection close promises (RFC 9112 9.6): a GET /api that says
    `Connection: close` is answered with `Connection: close`, then the server
    closes the connection."""
    header = "Connection: close"
    said_rule = ("a request with Connection: close must be answered with Connection: close "
                 "(a client then knows not to send another request on that connection)")
    closed_rule = "after answering a request with Connection: close, the server must close"
    request = (f"GET /api HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n"
               "Connection: close\r\n\r\n")
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(request.encode())
            raw = read_response(sock)
            sock.settimeout(CLOSE_WAIT_S)
            try:
                more = sock.recv(1)
                closed, after = not more, f"{more!r} more bytes"
            except (ConnectionResetError, BrokenPipeError):
                closed, after = True, ""
            except TimeoutError:
                closed, after = False, f"still open {CLOSE_WAIT_S:g} s after the answer"
    except (VerifyError, OSError) as e:
        return [failed(header, said_rule, e)]
    head = raw.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    said = [v.strip() for k, _, v in (line.partition(":") for line in head[1:])
            if k.strip().lower() == "connection"]
    return [Check(header, said_rule, any(has_token(v, "close") for v in said),
                  f"{head[0]} with " + (f"Connection: {', '.join(said)}" if said
                                        else "no Connection header")),
            Check("closed after it", closed_rule, closed, after)]


def checks(host: str, port: int, timeout: float = TIMEOUT_S,
           keepalive: bool = True, first_timeout: float | None = None) -> list[Check]:
    """Every check of the contract, passed or not, in one pass: GET /api's
    status, Content-Type, Content-Length and body, keep-alive, 404 elsewhere,
    and, when the run's connection mode is close (keepalive False), what
    close promises (connection_close). A server that does not answer GET /api
    at all is one breach: the rest cannot be checked. The first answer may
    take first_timeout (a JVM framework that sets itself up on its first
    request); every later socket operation, timeout."""
    conn = http.client.HTTPConnection(host, port, timeout=first_timeout or timeout)
    try:
        first = get(conn, "/api")
    except (http.client.HTTPException, OSError) as e:
        conn.close()
        return [failed(contract.REACHABLE, "the server must answer HTTP on 127.0.0.1", e)]
    if conn.sock is not None:
        conn.sock.settimeout(timeout)
    try:
        found = [*api_checks(first), keep_alive(conn, first)]
        if not found[-1].ok:            # the 404 on a connection of its own
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        found.append(elsewhere(conn))
    finally:
        conn.close()
    if not keepalive:
        found += connection_close(host, port, timeout)
    return [c if not c.ok else Check(c.name, c.rule, True) for c in found]


def verify(host: str, port: int, timeout: float = TIMEOUT_S, keepalive: bool = True,
           first_timeout: float | None = None) -> list[str]:
    """Run every check (those of the run's connection mode); returns the labels
    of what passed, or raises VerifyError with every breach."""
    found = checks(host, port, timeout, keepalive, first_timeout)
    broken = contract.breaches(found)
    if broken:
        raise VerifyError(broken[0], breaches=broken)
    return [c.name for c in found]


def recheck(host: str, port: int, timeout: float = TIMEOUT_S) -> list[Check]:
    """The contract's cheap part again, after a level: one GET /api on a fresh
    connection, its status, Content-Type, Content-Length and exact body. The
    breaches ([]: the answer held). A connection that fails is tried once more
    after a second (a backlog still draining); failed twice, it is a breach."""
    for attempt in (1, 2):
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            reply = get(conn, "/api")
        except (http.client.HTTPException, OSError) as e:
            if attempt == 2:
                return [failed(contract.REACHABLE, "GET /api must still be answered after "
                                                   "the load (a fresh connection, twice)", e)]
            time.sleep(1)
            continue
        finally:
            conn.close()
        return contract.breaches(api_checks(reply))
    return []


# --------------------------------------------------------------------------- what it sends

MASKED = "(masked)"            # the Date header's value: it changes every second


def read_response(sock: socket.socket, limit: int = 65536) -> bytes:
    """One whole response with a Content-Length body, as received."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise VerifyError("the server must answer GET /api", f"closed after {len(buf)} bytes")
        buf += chunk
        if len(buf) > limit:
            raise VerifyError("the answer's head must end", f"over {limit} bytes without one")
    head, _, body = buf.partition(b"\r\n\r\n")
    length = next((int(v.strip()) for k, _, v in (line.partition(b":")
                                                   for line in head.split(b"\r\n")[1:])
                   if k.strip().lower() == b"content-length" and v.strip().isdigit()), None)
    if length is None:
        raise VerifyError("GET /api must send Content-Length", head.decode("latin-1"))
    while len(body) < length:
        chunk = sock.recv(4096)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body[:length]


def lab_request(host: str, port: int, keepalive: bool) -> bytes:
    """The lab's own GET /api, in the run's connection mode (close: it says
    Connection: close): what a load client without its own (clients.Asks) is
    verified with."""
    return (f"GET /api HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n"
            + ("" if keepalive else "Connection: close\r\n") + "\r\n").encode()


def exchange(host: str, port: int, request: bytes, timeout: float = TIMEOUT_S) -> bytes:
    """Send `request` as it is on a new connection; the whole answer, as received."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        return read_response(sock)


def reply_of(raw: bytes) -> Reply:
    """An answer as received (read_response) as a Reply, for api_checks."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
    reply = Reply(int(code) if code.isdigit() else 0, reason, headers, body, False)
    return Reply(reply.status, reason, headers, body,
                 has_token(reply.header("Connection"), "close") or version == "HTTP/1.0")


def recorded(raw: bytes, said: str) -> dict[str, object]:
    """What the server sent, for the manifest's start record: the status line,
    each header as sent (its value's spacing kept, Date's value masked) and
    the bytes on the wire, head and body."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append([name, f" {MASKED}" if name.strip().lower() == "date" else value])
    return {"request": said, "status_line": lines[0], "headers": headers, "bytes": len(raw),
            "head_bytes": len(head) + 4, "body_bytes": len(body)}


def wire(host: str, port: int, keepalive: bool, timeout: float = TIMEOUT_S) -> dict[str, object]:
    """What the server sends to the lab's own GET /api, byte for byte, in the
    run's connection mode (recorded)."""
    raw = exchange(host, port, lab_request(host, port, keepalive), timeout)
    return recorded(raw, "GET /api HTTP/1.1, " + ("keep-alive" if keepalive
                                                  else "Connection: close"))


def as_client(host: str, port: int, request: bytes, who: str,
              timeout: float = TIMEOUT_S) -> tuple[dict[str, object], list[Check]]:
    """GET /api as the load client sends it, byte for byte (its headers too:
    a server may answer a request without `Accept-Encoding: identity`
    otherwise): what came back (recorded, the size the client's byte count is
    checked against) and the contract's checks of it (status, Content-Type,
    Content-Length, exact body), each breach naming the client's request."""
    names = [line.partition(b":")[0].decode("latin-1")
             for line in request.split(b"\r\n\r\n")[0].split(b"\r\n")[1:]]
    said = f"GET /api HTTP/1.1 as {who} sends it ({', '.join(names)})"
    label = f"as {who} sends it"
    try:
        raw = exchange(host, port, request, timeout)
    except (VerifyError, OSError) as e:
        return ({"request": said, "error": f"{type(e).__name__}: {e}"},
                [failed(label, f"GET /api must be answered {label} ({', '.join(names)})", e)])
    found = [Check(label, f"{c.rule}, to the request {label} ({', '.join(names)})", c.ok, c.got)
             for c in api_checks(reply_of(raw))]
    broken = contract.breaches(found)
    return recorded(raw, said), broken or [Check(label, label, True)]
