"""verify() against small real HTTP servers, right and wrong in one way each,
and wrong in three ways at once: every breach reported in one pass."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lab.analyse import contract
from conftest import ROOT, free_port
from lab.measure.verify import BODY, VerifyError, checks, recheck, verify

pytestmark = pytest.mark.unit


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


def slow_first(delay_s: float) -> type[BaseHTTPRequestHandler]:
    """A correct server whose first answer waits delay_s (a JVM framework
    that sets itself up on its first request)."""
    base = handler()
    first = threading.Lock()

    class H(base):  # type: ignore[valid-type, misc]
        def do_GET(self) -> None:
            if first.acquire(blocking=False):
                time.sleep(delay_s)
            super().do_GET()
    return H


def test_a_slow_first_answer_is_waited_for_within_first_timeout() -> None:
    """The sweep gives the first GET /api the rest of the server's
    ready_timeout; every later operation keeps the short timeout."""
    with serving(slow_first(1.2)) as port:
        found = checks("127.0.0.1", port, timeout=1.0)
        assert contract.breaches(found)[0].name == contract.REACHABLE
    with serving(slow_first(1.2)) as port:
        assert "exact body" in verify("127.0.0.1", port, timeout=1.0, first_timeout=10.0)


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
    assert all(not b.ok for b in err.value.breaches)
    assert str(err.value).splitlines() == [b.text() for b in err.value.breaches]


def undated(found: list[contract.Check]) -> list[contract.Check]:
    """The breaches with the Date header of what came back masked."""
    return [replace(c, got=re.sub(r"Date: [^;\]]*", "Date: (masked)", c.got))
            for c in found]


def test_three_breaches_at_once_are_all_reported() -> None:
    """Wrong Content-Type, wrong body, and 200 where 404 is due: all three, in
    one pass, each with what came back; what the server got right passes."""
    broken = handler(body=b'{"greeting":"Hello World?"}', ctype="text/plain", missing=200)
    with serving(broken) as port:
        found = checks("127.0.0.1", port)
        with pytest.raises(VerifyError) as err:
            verify("127.0.0.1", port)
    assert [c.name for c in found if c.ok] == ["GET /api 200", "Content-Length 27",
                                               "keep-alive"]
    breaches = err.value.breaches
    assert [b.name for b in breaches] == ["Content-Type", "exact body", "404 elsewhere"]
    # two passes, two answers: their Date headers may differ by a second
    assert undated(breaches) == undated(contract.breaches(found))
    assert "'text/plain'" in breaches[0].got and "World?" in breaches[1].got
    assert breaches[2].got.startswith("200 ")
    message = str(err.value).splitlines()          # one breach per line
    assert len(message) == 3
    for line, b in zip(message, breaches):
        assert line == b.text() and b.rule in line and b.got in line
    said = contract.listed(breaches)               # the step's error (lab.measure.sweep)
    assert said.startswith("3 breaches:") and said.count("\n  - ") == 3


def test_a_closed_connection_still_gets_the_404_checked() -> None:
    """HTTP/1.0 closes after each answer: keep-alive is the breach, and 404
    elsewhere is still checked, on a connection of its own."""
    with serving(handler(version="HTTP/1.0", missing=500)) as port, \
            pytest.raises(VerifyError) as err:
        verify("127.0.0.1", port)
    assert [b.name for b in err.value.breaches] == ["keep-alive", "404 elsewhere"]
    assert err.value.breaches[1].got.startswith("500 ")


def test_nothing_listening() -> None:
    with serving(handler()) as port:
        pass
    with pytest.raises(VerifyError, match="must answer HTTP") as err:
        verify("127.0.0.1", port)
    [breach] = err.value.breaches                  # one: the rest cannot be checked
    assert breach.name == contract.REACHABLE and "ConnectionRefused" in breach.got


def test_a_media_type_parameter_passes_and_is_recorded() -> None:
    """ASF answers `application/json; charset=utf-8`: legal HTTP, recorded."""
    with serving(handler(ctype="application/json; charset=utf-8")) as port:
        passed = verify("127.0.0.1", port)
    assert "Content-Type (charset=utf-8)" in passed
    assert "Content-Type" not in passed


@pytest.mark.parametrize("ctype", ["application/json-seq", "application/jsonp; charset=utf-8",
                                   "charset=utf-8", ""])
def test_only_the_media_type_application_json_passes(ctype: str) -> None:
    with serving(handler(ctype=ctype)) as port, pytest.raises(VerifyError) as err:
        verify("127.0.0.1", port)
    assert "Content-Type: application/json" in err.value.check


class EWSLike(BaseHTTPRequestHandler):
    """The bytes EWS sends: `Content-Length:  27` (two spaces) and no Date."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/api":
            head = (b"HTTP/1.1 200 OK\r\nServer: EWS\r\nContent-Type: application/json\r\n"
                    b"Content-Length:  27\r\nCache-Control: no-cache\r\n\r\n")
            self.wfile.write(head + BODY)
        else:
            self.wfile.write(b"HTTP/1.1 404 Not Found\r\nServer: EWS\r\n"
                             b"Content-Type: text/plain\r\nContent-Length:  9\r\n\r\nNot found")


def test_ews_spacing_and_no_date_pass() -> None:
    with serving(EWSLike) as port:
        assert verify("127.0.0.1", port) == [
            "GET /api 200", "Content-Type", "Content-Length 27", "exact body",
            "keep-alive", "404 elsewhere"]


class SecondWrong(BaseHTTPRequestHandler):
    """Right on a connection's first request, a wrong body on the next."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        served = getattr(self, "served", 0)
        self.served = served + 1
        if self.path != "/api":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = BODY if served == 0 else BODY.replace(b"!", b"?")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_second_answer_unlike_the_first_breaks_keep_alive_only() -> None:
    with serving(SecondWrong) as port, pytest.raises(VerifyError) as err:
        verify("127.0.0.1", port)
    [breach] = err.value.breaches
    assert breach.name == "keep-alive" and "second answer" in breach.rule
    assert "exactly" in breach.got and "World?" in breach.got


# --------------------------------------------------------------------------- connection close

CLOSE_SAID = "a request with Connection: close must be answered with Connection: close"
CLOSED = "after answering a request with Connection: close, the server must close"


def closing(say: bool = True, close: bool = True) -> type[BaseHTTPRequestHandler]:
    """The greeting; a request that asks to close is answered with (say) or
    without `Connection: close`, and then the connection closed (close) or kept."""
    class H(handler()):  # type: ignore[misc,valid-type]
        def end_headers(self) -> None:
            asked = self.close_connection
            if asked and say:
                self.send_header("Connection", "close")
            super().end_headers()
            self.close_connection = asked and close
    return H


def test_close_mode_passes_a_server_that_says_close_and_closes() -> None:
    with serving(closing()) as port:
        passed = verify("127.0.0.1", port, keepalive=False)
    assert passed[-2:] == ["Connection: close", "closed after it"]


def test_a_server_that_closes_without_saying_so_fails_close_mode() -> None:
    """As the workshop's hello.py did: wrk reused the connection, and exactly
    half its requests failed. Keep-alive mode does not ask it."""
    with serving(handler()) as port:
        assert "Connection: close" not in verify("127.0.0.1", port, keepalive=True)
        with pytest.raises(VerifyError) as e:
            verify("127.0.0.1", port, keepalive=False)
    [breach] = e.value.breaches
    assert breach.rule.startswith(CLOSE_SAID)
    assert breach.got == "HTTP/1.1 200 OK with no Connection header"
    assert CLOSE_SAID in contract.listed(e.value.breaches)


def test_a_server_that_says_close_but_keeps_the_connection_fails_close_mode() -> None:
    with serving(closing(close=False)) as port:
        with pytest.raises(VerifyError) as e:
            verify("127.0.0.1", port, keepalive=False)
    [breach] = e.value.breaches
    assert breach.rule == CLOSED and "still open" in breach.got


def test_the_workshops_own_server_passes_close_mode(tmp_path: Path) -> None:
    """docs/workshop.md exercise 7's hello.py, as the document gives it."""
    text = (ROOT / "docs" / "workshop.md").read_text()
    code = re.search(r"^```python servers/hello/hello.py\n(.*?)^```", text, re.M | re.S)
    assert code, "exercise 7 gives hello.py"
    (tmp_path / "hello.py").write_text(code.group(1))
    port = free_port()
    env = dict(os.environ, BIND="127.0.0.1", PORT=str(port), BACKLOG="16")
    proc = subprocess.Popen([sys.executable, "hello.py"], cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        assert "closed after it" in verify("127.0.0.1", port, keepalive=False)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# --------------------------------------------------------------------------- after a level

def test_recheck_sees_an_answer_that_changed() -> None:
    with serving(handler()) as port:
        assert recheck("127.0.0.1", port) == []
    with serving(handler(body=b'{"greeting":"Hello World?"}')) as port:
        [breach] = recheck("127.0.0.1", port)
    assert breach.name == "exact body" and "Hello World?" in breach.got


def test_recheck_of_a_server_gone_is_one_breach() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]           # nothing listens there
    [breach] = recheck("127.0.0.1", port, timeout=1)
    assert breach.name == contract.REACHABLE and "after the load" in breach.rule
