"""verify() against small real HTTP servers, right and wrong in one way each."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lab.verify import BODY, VerifyError, verify


def handler(body: bytes = BODY, ctype: str = "application/json", version: str = "HTTP/1.1",
            chunked: bool = False, missing: int = 404) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        protocol_version = version

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path != "/api":
                self.send_response(missing)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
            else:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
    return H


@contextmanager
def serving(h: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), h)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_correct_server_passes_every_check() -> None:
    with serving(handler()) as port:
        assert verify("127.0.0.1", port) == [
            "GET /api 200", "Content-Type", "Content-Length 27", "exact body",
            "keep-alive", "404 elsewhere"]


@pytest.mark.parametrize("h, check, got", [
    (handler(body=b'{"greeting":"Hello World?"}'), "exactly", "World?"),
    (handler(body=BODY + b"\n"), "Content-Length: 27", "'28'"),
    (handler(ctype="text/plain"), "Content-Type: application/json", "text/plain"),
    (handler(chunked=True), "not chunked", "chunked"),
    (handler(version="HTTP/1.0"), "keep the connection open", "200"),
    (handler(missing=200), "404", "200"),
])
def test_each_broken_server_fails_its_check(h: type[BaseHTTPRequestHandler], check: str,
                                            got: str) -> None:
    with serving(h) as port, pytest.raises(VerifyError) as err:
        verify("127.0.0.1", port)
    assert check in err.value.check
    assert got in err.value.got


def test_nothing_listening() -> None:
    with serving(handler()) as port:
        pass
    with pytest.raises(VerifyError, match="must answer HTTP"):
        verify("127.0.0.1", port)
