"""lab.studies.storm, the backlog storm of docs/methodology.md: its answer
check on constructed bytes, and a small storm on loopback against the
test greeting server (tests/httpfakes.py) and against a closed port."""
from __future__ import annotations

import pytest

import httpfakes
from conftest import free_port
from lab.studies import storm

pytestmark = pytest.mark.unit

GREETING = (b"HTTP/1.1 200 OK\r\nContent-Length: 27\r\n\r\n" + storm.BODY)


def test_an_answer_is_complete_once_its_whole_body_came() -> None:
    assert storm.complete(bytearray(GREETING)) is True
    assert storm.complete(bytearray(GREETING[:-1])) is None               # body partial
    assert storm.complete(bytearray(b"HTTP/1.1 200 OK\r\nContent-")) is None  # head partial
    assert storm.complete(bytearray(GREETING.replace(b"200 OK", b"503 Busy"))) is False
    other = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    assert storm.complete(bytearray(other)) is False


def test_a_storm_answered_by_a_server_counts_each_connection_once() -> None:
    port = free_port()
    server = httpfakes.start("ok", port)
    try:
        got = storm.storm("127.0.0.1", port, 20, timeout=30)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert (got.connections, got.answered, got.failed) == (20, 20, {})
    assert len(got.connect_s) == len(got.answer_s) == 20
    assert all(0 <= c <= a <= got.total_s for c, a in zip(got.connect_s, got.answer_s))
    assert set(got.kernel) == set(storm.COUNTERS)


def test_a_storm_on_a_closed_port_is_refused_each_time() -> None:
    got = storm.storm("127.0.0.1", free_port(), 5, timeout=10)
    assert got.answered == 0 and got.failed == {"ECONNREFUSED": 5}
    assert got.connect_s == [] and got.slow_connects == got.stalled == 0
