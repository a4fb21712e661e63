"""The contract every server meets before it is loaded.

GET /api: 200, Content-Type application/json, Content-Length 27, the exact
body; another path: 404; two requests answered on one keep-alive connection.

Content-Type is compared by its media type: a parameter is legal HTTP
(RFC 9110 8.3), so `application/json; charset=utf-8` (ASF) passes, and the
parameter is recorded in what passed ("Content-Type (charset=utf-8)").
"""
from __future__ import annotations

import http.client
import socket
from email.message import Message
from dataclasses import dataclass

BODY = b'{"greeting":"Hello World!"}'
CONTENT_TYPE = "application/json"


class VerifyError(AssertionError):
    """A failed check: `check` names it, `got` shows what came back."""

    def __init__(self, check: str, got: str) -> None:
        super().__init__(f"{check}\n    got: {got}")
        self.check = check
        self.got = got


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


def check_api(reply: Reply) -> str:
    """Raises VerifyError on a broken answer; returns the Content-Type check
    as passed, with its parameters if any."""
    if reply.status != 200:
        raise VerifyError("GET /api must answer 200", reply.show())
    ctype = reply.header("Content-Type")
    kind, params = media_type(ctype) if ctype is not None else ("", [])
    if kind != CONTENT_TYPE:
        raise VerifyError(f"GET /api must send Content-Type: {CONTENT_TYPE} "
                          "(parameters allowed)", f"{ctype!r}")
    length = reply.header("Content-Length")
    if length is None or length.strip() != str(len(BODY)):
        raise VerifyError(f"GET /api must send Content-Length: {len(BODY)} (not chunked)",
                          f"Content-Length={length!r}, "
                          f"Transfer-Encoding={reply.header('Transfer-Encoding')!r}")
    if reply.body != BODY:
        raise VerifyError(f"GET /api must return exactly {BODY.decode()}", repr(reply.body))
    return f"Content-Type ({'; '.join(params)})" if params else "Content-Type"


def verify(host: str, port: int, timeout: float = 5.0) -> list[str]:
    """Run every check; returns what passed, raises VerifyError at the first failure."""
    passed = []
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        first = get(conn, "/api")
        passed += ["GET /api 200", check_api(first), "Content-Length 27", "exact body"]
        if first.will_close or conn.sock is None:
            raise VerifyError("an HTTP/1.1 request must keep the connection open",
                              first.show())
        sock = conn.sock
        try:
            second = get(conn, "/api")
        except (http.client.HTTPException, OSError) as e:
            raise VerifyError("a second request on the same connection must be answered",
                              f"{type(e).__name__}: {e}") from e
        if conn.sock is not sock:
            raise VerifyError("the second request must reuse the connection", "a new connection")
        check_api(second)
        passed.append("keep-alive")
        missing = get(conn, "/no-such-path")
        if missing.status != 404:
            raise VerifyError("GET /no-such-path must answer 404", missing.show())
        passed.append("404 elsewhere")
    except (http.client.HTTPException, OSError) as e:
        raise VerifyError("the server must answer HTTP on 127.0.0.1", f"{type(e).__name__}: {e}")
    finally:
        conn.close()
    return passed


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


def wire(host: str, port: int, keepalive: bool, timeout: float = 5.0) -> dict[str, object]:
    """What the server sends for GET /api, byte for byte, in the run's connection
    mode (close: the request says Connection: close): the status line, each
    header as sent (its value's spacing kept, Date's value masked) and the
    bytes on the wire, head and body; for the manifest's start record."""
    request = (f"GET /api HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\n"
               + ("" if keepalive else "Connection: close\r\n") + "\r\n")
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request.encode())
        raw = read_response(sock)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append([name, f" {MASKED}" if name.strip().lower() == "date" else value])
    return {"request": "GET /api HTTP/1.1, " + ("keep-alive" if keepalive else
                                                "Connection: close"),
            "status_line": lines[0], "headers": headers, "bytes": len(raw),
            "head_bytes": len(head) + 4, "body_bytes": len(body)}
