"""What each server sends: lab.measure.verify.wire reads the answer byte for byte
from a real server (header spacing kept, Date masked, bytes counted), the
manifest keeps it per start, and the report's table flags where servers
differ; a verdict between servers whose answers differ in size says by how
many bytes."""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FAKES, bench, free_port, lab_env, leftovers, run_folders
from lab.analyse import analysis, responses
from lab.present import sends
from lab.present.page import escaped
from lab.setup.markdown import md_code, md_text
from lab.record import manifest
from lab.record.rows import read_rows
from lab.measure import verify
from lab.record.manifest import Response

pytestmark = pytest.mark.fault

BODY = b'{"greeting":"Hello World!"}'
# EWS's answer as measured: two spaces after Content-Length's colon, no Date
EWS_LIKE = (b"HTTP/1.1 200 OK\r\nServer: EWS\r\nContent-Type: application/json\r\n"
            b"Content-Length:  27\r\nCache-Control: no-cache\r\n\r\n" + BODY)

BARE = r'''
import os, socket, threading
BODY = b'{"greeting":"Hello World!"}'
HEAD = (b"HTTP/1.1 200 OK\r\nServer: EWS\r\nContent-Type: application/json\r\n"
        b"Content-Length:  27\r\nCache-Control: no-cache\r\n")
def serve(conn):
    buf = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buf:
                got = conn.recv(4096)
                if not got:
                    return
                buf += got
            head, _, buf = buf.partition(b"\r\n\r\n")
            close = b"connection: close" in head.lower()
            ok = head.split(b" ")[1:2] == [b"/api"]
            extra = b"Connection: close\r\n" if close else b""
            conn.sendall(HEAD + extra + b"\r\n" + BODY if ok else
                         b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n" + extra + b"\r\n")
            if close:
                return
s = socket.create_server((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])),
                         backlog=int(os.environ.get("BACKLOG", "512")))
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
'''
MANIFEST = """name = "bare"
language = "Python"
framework = "socket"
version = "stdlib"
summary = "answers as EWS does: Content-Length with two spaces, no Date"

[run]
command = ["python3", "bare.py"]
ready_timeout = 10

[workers]
default = 1
"""


@pytest.fixture
def ews_like() -> Iterator[int]:
    """A real TCP server that sends EWS_LIKE to every request, then closes."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def loop() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(EWS_LIKE)
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield port
    srv.close()
    t.join(timeout=5)


def test_wire_keeps_what_was_sent_byte_for_byte(ews_like: int) -> None:
    got = verify.wire("127.0.0.1", ews_like, keepalive=False)
    assert got["status_line"] == "HTTP/1.1 200 OK"
    assert got["headers"] == [["Server", " EWS"], ["Content-Type", " application/json"],
                              ["Content-Length", "  27"], ["Cache-Control", " no-cache"]]
    assert got["bytes"] == len(EWS_LIKE)
    assert got["body_bytes"] == 27 and got["head_bytes"] == len(EWS_LIKE) - 27
    assert got["request"] == "GET /api HTTP/1.1, Connection: close"


def response(headers: list[tuple[str, str]], status: str = "HTTP/1.1 200 OK") -> Response:
    head = len(status) + 2 + sum(len(k) + 1 + len(v) + 2 for k, v in headers) + 2
    return Response(request="GET /api HTTP/1.1, Connection: close", status_line=status,
                    headers=headers, bytes=head + 27, head_bytes=head, body_bytes=27)


AWS = response([("Date", " (masked)"), ("Server", " AWS (Ada Web Server) v20.0"),
                ("Connection", " close"), ("Content-Type", " application/json"),
                ("Content-Length", " 27")])
EWS = response([("Server", " EWS"), ("Content-Type", " application/json"),
                ("Content-Length", "  27"), ("Connection", " close"),
                ("Cache-Control", " no-cache")])
ASF = response([("Date", " (masked)"), ("Server", " ASF"),
                ("Content-Type", " application/json; charset=utf-8"),
                ("Content-Length", " 27"), ("Connection", " close")])


def test_the_table_flags_what_differs() -> None:
    found = responses.differences({"aws": AWS, "ews": EWS, "asf": ASF, "old": None})
    flags = {n: [d.plain() for d in found[n]] for n in found}
    assert flags["ews"][:2] == ["no Date header", "Content-Length:  27 (spacing)"]
    assert flags["asf"][0] == "Content-Type parameter charset=utf-8"
    # what the server sent kept apart from the words: as code in Markdown, its spacing kept
    assert [sends.said(d, md_code, md_text) for d in found["ews"][:2]] == \
        ["no Date header", "`Content-Length:  27` (spacing)"]
    assert sends.said(found["asf"][0], md_code, md_text) == "Content-Type parameter `charset=utf-8`"
    assert not any("Date" in f or "spacing" in f for f in flags["aws"])
    assert flags["old"] == ["not recorded (a run before the lab recorded answers)"]
    sizes = {n: r.bytes for n, r in (("aws", AWS), ("ews", EWS), ("asf", ASF))}
    small = min(sizes, key=lambda n: sizes[n] or 0)
    assert all(f"{(sizes[n] or 0) - (sizes[small] or 0)} bytes more than the smallest answer"
               in flags[n] for n in sizes if n != small)
    assert not any("bytes more" in f for f in flags[small])
    other = responses.differences({"a": AWS, "b": response(AWS.headers[:3] + [
        ("Content-Type", " text/plain"), ("Content-Length", " 27")]), "c": AWS})
    assert "another Content-Type: text/plain" in [d.plain() for d in other["b"]]


def test_a_size_note_says_by_how_many_bytes() -> None:
    assert AWS.bytes is not None and EWS.bytes is not None
    found = {n: responses.ServerAnswer(n, r, 1, False, ()) for n, r in (("aws", AWS), ("ews", EWS))}
    note = responses.size_note("aws", "ews", found)
    assert note == (f"ews's answer is {AWS.bytes - EWS.bytes} bytes smaller than aws's "
                    f"({EWS.bytes} vs {AWS.bytes} bytes on the wire)")
    assert responses.size_note("aws", "aws", found) == ""
    assert responses.size_note("aws", "nope", found) == ""


def test_a_run_records_and_shows_what_each_server_sends(tmp_path: Path) -> None:
    """A real run of two real servers: sturdy (Python's http.server: Date and
    Server) and bare (EWS's answer): every start's answer in the manifest,
    the table in summary.md and report.html with the differences flagged, the
    byte difference in the verdict, and PSS/private memory in every row."""
    extra = tmp_path / "servers" / "bare"
    extra.mkdir(parents=True)
    (extra / "bare.py").write_text(BARE)
    (extra / "server.toml").write_text(MANIFEST)
    env = lab_env(tmp_path, SERVER="sturdy bare", CONCURRENCY="2", DURATION="1s",
                  REPEAT="3", WARMUP="0", PORT=str(free_port()),
                  LAB_SERVER_PATH=f"{FAKES}:{tmp_path / 'servers'}")
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    m = manifest.read_manifest(run)
    for name in ("sturdy", "bare"):
        starts = m.server(name).starts
        assert len(starts) == 3 and all(s.response is not None for s in starts)
    bare = m.server("bare").starts[0].response
    sturdy = m.server("sturdy").starts[0].response
    assert bare is not None and sturdy is not None
    assert ("Content-Length", "  27") in bare.headers and bare.header("Date") is None
    assert bare.bytes == len(EWS_LIKE) + len(b"Connection: close\r\n")
    assert sturdy.header("Date") == "(masked)" and sturdy.header("Server")
    raw = json.loads((run / "manifest.json").read_text())
    assert raw["servers"]["bare"]["starts"][0]["response"]["headers"][2] == \
        ["Content-Length", "  27"]
    summary = (run / "summary.md").read_text()
    assert "## What each server sends" in summary
    table = summary[summary.index("## What each server sends"):]
    assert "| bare |" in table and "| sturdy |" in table
    assert "no Date header" in table and "`Content-Length:  27` (spacing)" in table
    page = (run / "report.html").read_text()
    assert 'id="sends"' in page and escaped("Content-Length:  27") in page
    _, a = analysis.of(run)
    [v] = a.verdicts
    assert sturdy.bytes is not None
    diff = abs(sturdy.bytes - bare.bytes)
    assert diff and f"{diff} bytes smaller" in v.wire_text and v.wire_text in summary
    rows = read_rows(run)
    assert rows and all(r.pss_kb and r.private_kb and r.shared_kb is not None
                        and r.anon_kb for r in rows)
    assert all(r.pss_kb <= r.rss_end_kb * 1.1 for r in rows if r.pss_kb)
    assert "## Where the memory goes" in summary and 'id="memory"' in page


@pytest.mark.unit
def test_a_server_whose_start_failed_is_not_called_an_old_run() -> None:
    """PAIRED's second server could not take PORT+1: its start failed before
    its check. This run records answers (the first server's is there), so the
    table says the start never got that far, not "a run before the lab
    recorded answers" (issue 54)."""
    m = manifest.Manifest(run_id="r", status="incomplete", params=manifest.RunParams(
        servers=["a", "b"], axis="concurrency", duration_s=1),
        client=manifest.ClientInfo(tool="wrk"))
    m.servers = {"a": manifest.ServerRecord("a", starts=[manifest.Start("rep1", 1, "complete",
                                                                        response=AWS)]),
                 "b": manifest.ServerRecord("b", starts=[manifest.Start("rep1", 1, "failed")])}
    got = responses.answers(m)
    assert [d.plain() for d in got["b"].differs] == [
        "not recorded: no start of this server got as far as its verification (What failed "
        "says why)"]
    old = manifest.Manifest(run_id="o", status="complete", params=manifest.RunParams(
        servers=["a"], axis="concurrency", duration_s=1),
        client=manifest.ClientInfo(tool="wrk"))
    old.servers = {"a": manifest.ServerRecord("a", starts=[manifest.Start("rep1", 1, "complete")])}
    assert [d.plain() for d in responses.answers(old)["a"].differs] == \
        ["not recorded (a run before the lab recorded answers)"]
