"""The HTTP/1.1 of the test doubles written on sockets (deaf, overloaded):
requests read from a connection and answers in one write each. Not a
server: a double's script puts this folder on its path."""
from collections.abc import Iterator
from typing import BinaryIO

BODY = b'{"greeting":"Hello World!"}'


def requests(rfile: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Each request on a keep-alive connection: its path and whether it asked
    for `Connection: close`; ends when the client closes."""
    while True:
        line = rfile.readline(65537)
        if not line:
            return
        close = False
        while True:
            header = rfile.readline(65537)
            if header in (b"\r\n", b"\n", b""):
                break
            name, _, value = header.decode("latin-1").partition(":")
            if name.strip().lower() == "connection" and "close" in value.lower():
                close = True
        parts = line.split()
        yield (parts[1] if len(parts) > 1 else b""), close


def answer(status: str, body: bytes, close: bool) -> bytes:
    """A whole answer, head and body, for one write (a head and a body apart
    would wait on Nagle's algorithm and the client's delayed ACK)."""
    head = (f"HTTP/1.1 {status}\r\nContent-Type: "
            f"{'application/json' if status.startswith('200') else 'text/plain'}\r\n"
            f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "")
            + "\r\n")
    return head.encode() + body


def contract(path: bytes, close: bool, body: bytes = BODY) -> bytes:
    """The answer to GET `path`: `body` at /api, 404 elsewhere."""
    return answer("200 OK", body, close) if path == b"/api" else \
        answer("404 Not Found", b"not found\n", close)
