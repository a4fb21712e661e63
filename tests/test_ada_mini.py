"""ada-mini's HTTP handling over raw sockets: keep-alive, pipelining, a
request split in pieces, abrupt closes, 404, HTTP/1.0, Connection: close,
and 50 keep-alive connections served together by its single task."""
from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from conftest import ROOT, Build, free_port
from lab.measure.launch import Knobs, ServerProcess
from lab.setup.paths import cache_dir
from lab.setup.servers import discover
from lab.measure.verify import BODY

pytestmark = pytest.mark.real_server

REQUEST = b"GET /api HTTP/1.1\r\nHost: localhost\r\n\r\n"


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory, built: Build) -> Iterator[int]:
    built("ada-mini")
    server = discover(ROOT)["ada-mini"]
    cache = cache_dir()
    p = free_port()
    log = tmp_path_factory.mktemp("ada-mini") / "server.log"
    instance = ServerProcess(server, ROOT, cache, "test-ada-mini",
                             Knobs(port=p, workers=1, backlog=512, bind="127.0.0.1"),
                             (min(os.sched_getaffinity(0)),), log)
    instance.start()
    try:
        instance.ready()
        yield p
    finally:
        instance.stop()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def read_response(s: socket.socket, buf: bytearray) -> tuple[bytes, dict[str, str], bytes]:
    """One response from s (bytes already read wait in buf)."""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError(f"closed before a full head: {bytes(buf)!r}")
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in
               (line.split(":", 1) for line in lines[1:])}
    length = int(headers["content-length"])
    body = bytearray(rest)
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("closed inside the body")
        body += chunk
    buf[:] = body[length:]
    return lines[0].encode(), headers, bytes(body[:length])


def assert_greeting(status: bytes, headers: dict[str, str], body: bytes) -> None:
    assert status.startswith(b"HTTP/1.1 200"), status
    assert headers["content-type"] == "application/json"
    assert headers["content-length"] == "27" and body == BODY


def closed_by_server(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_keep_alive_across_requests(port: int) -> None:
    with connect(port) as s:
        buf = bytearray()
        for _ in range(5):
            s.sendall(REQUEST)
            assert_greeting(*read_response(s, buf))


def test_pipelined_requests_answered_in_order(port: int) -> None:
    with connect(port) as s:
        s.sendall(REQUEST + b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" + REQUEST)
        buf = bytearray()
        assert_greeting(*read_response(s, buf))
        assert read_response(s, buf)[0].startswith(b"HTTP/1.1 404")
        assert_greeting(*read_response(s, buf))


def test_request_split_in_pieces(port: int) -> None:
    with connect(port) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for piece in (b"GE", b"T /api HTTP/1.1\r\nHo", b"st: localhost\r\n", b"\r", b"\n"):
            s.sendall(piece)
            time.sleep(0.05)
        assert_greeting(*read_response(s, bytearray()))


def test_client_closing_mid_request_does_not_hurt(port: int) -> None:
    for _ in range(20):
        with connect(port) as s:
            s.sendall(b"GET /api HTTP/1.1\r\nHo")         # then a plain close
    for _ in range(20):
        s = connect(port)
        s.sendall(b"GET /ap")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()                                       # a reset
    with connect(port) as s:
        s.sendall(REQUEST)
        assert_greeting(*read_response(s, bytearray()))


def test_other_paths_are_404(port: int) -> None:
    with connect(port) as s:
        s.sendall(b"GET /api/extra HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, body = read_response(s, bytearray())
        assert status.startswith(b"HTTP/1.1 404")
        assert int(headers["content-length"]) == len(body)


def test_http_1_0_gets_an_answer_then_close(port: int) -> None:
    with connect(port) as s:
        s.sendall(b"GET /api HTTP/1.0\r\n\r\n")
        status, headers, body = read_response(s, bytearray())
        assert status.split()[1] == b"200" and body == BODY
        assert closed_by_server(s)


def test_connection_close_is_honoured(port: int) -> None:
    with connect(port) as s:
        s.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert_greeting(*read_response(s, bytearray()))
        assert closed_by_server(s)


def test_fifty_keep_alive_connections_none_starves(port: int) -> None:
    conns = [connect(port) for _ in range(50)]
    bufs = [bytearray() for _ in conns]
    try:
        for _ in range(20):                       # 20 rounds: all 50 send, then all read
            for s in conns:
                s.sendall(REQUEST)
            for s, buf in zip(conns, bufs):
                assert_greeting(*read_response(s, buf))
    finally:
        for s in conns:
            s.close()
