"""Every server listens where the lab says: on BIND:PORT only, with BACKLOG
as its accept backlog, as `ss` shows it (procs.listeners) and as the sweep
checks it after start (ServerProcess.check_listening).

The fixtures are real `ss -Hltn` output from the lab machine (Debian 12,
iproute2 6.1), with -p as root (ss-listen-root.txt) and without
(ss-listen-user.txt): the Java servers, nginx (reuseport: one socket per
worker) and the Ada servers before this change (every interface) and
after (127.0.0.1, shown as ::ffff:127.0.0.1 by the JDK's IPv6 sockets, and
::1), plus two sockets bound to a device (127.0.0.1%lo, [::1]%lo).
"""
from __future__ import annotations

import http.client
import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import ROOT, Build, free_port
from lab.host import procs
from lab.measure.launch import Knobs, ListenError, ServerProcess
from lab.setup.servers import Command, Server, discover

pytestmark = pytest.mark.unit

FIXTURES = ROOT / "tests" / "fixtures"
BODY = b'{"greeting":"Hello World!"}'
CPUS = tuple(sorted(os.sched_getaffinity(0)))
REPO = discover(ROOT)              # the repository's servers only (no test fakes)


def cache_dir() -> Path:
    return Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


# ------------------------------------------------------------------ parsing ss

def test_parse_captured_root_output() -> None:
    found = procs.parse_listeners((FIXTURES / "ss-listen-root.txt").read_text())
    assert len(found) == 28
    by_port: dict[int, list[procs.Listener]] = {}
    for s in found:
        by_port.setdefault(s.port, []).append(s)
    # Before: nginx on every IPv4 address, two reuseport sockets shared by
    # the master and its two workers; Jetty on * (an IPv6 socket, both families).
    assert by_port[18106] == [procs.Listener("0.0.0.0", 18106, 512, "nginx", (1326, 1364, 1365))] * 2
    assert by_port[18104] == [procs.Listener("*", 18104, 50, "java", (1323,))]
    assert [s.backlog for p in (18101, 18102, 18103, 18105) for s in by_port[p]] == [
        4096, 4096, 1000, 100]
    # After: the JDK shows 127.0.0.1 as IPv4-mapped, nginx one socket per worker.
    assert by_port[18204] == [procs.Listener("::ffff:127.0.0.1", 18204, 512, "java", (6841,))]
    assert by_port[18214] == [procs.Listener("::1", 18214, 77, "java", (6848,))]
    assert by_port[18242] == [procs.Listener("::1", 18242, 100, "nginx",
                                             (14880, 14889, 14890, 14891))] * 3
    assert by_port[18251] == [procs.Listener("127.0.0.1", 18251, 512, "aws_server", (17491,))]
    assert by_port[18262] == [procs.Listener("::1", 18262, 100, "ada_mini", (20960,))]
    # Bound to a device: the %scope is not part of the address.
    assert by_port[18271] == [procs.Listener("127.0.0.1", 18271, 37, "python3", (8630,))]
    assert by_port[18272] == [procs.Listener("::1", 18272, 38, "python3", (8630,))]


def test_parse_captured_output_without_processes() -> None:
    found = procs.parse_listeners((FIXTURES / "ss-listen-user.txt").read_text())
    assert len(found) == 22
    assert all(s.process is None and s.pids == () for s in found)
    assert {(s.address, s.backlog) for s in found} == {
        ("0.0.0.0", 512), ("*", 50), ("*", 100), ("*", 4096), ("*", 1000),
        ("::1", 77), ("::ffff:127.0.0.1", 512), ("127.0.0.1", 512), ("::1", 100)}


def test_parse_skips_other_states_and_rejects_garbage() -> None:
    assert procs.parse_listeners("") == []
    assert procs.parse_listeners("ESTAB 0 0 127.0.0.1:1 127.0.0.1:2\n") == []
    with pytest.raises(ValueError, match="unexpected"):
        procs.parse_listeners("LISTEN 0 x 127.0.0.1:80 0.0.0.0:*\n")
    with pytest.raises(ValueError, match="unexpected"):
        procs.parse_listeners("LISTEN 0 5 127.0.0.1 0.0.0.0:*\n")


@pytest.mark.parametrize(("listening", "bind", "same"), [
    ("127.0.0.1", "127.0.0.1", True),
    ("::ffff:127.0.0.1", "127.0.0.1", True),      # a JVM bound to 127.0.0.1
    ("::1", "::1", True),
    ("0:0::1", "::1", True),
    ("0.0.0.0", "127.0.0.1", False),
    ("*", "127.0.0.1", False),                    # a JVM on every address
    ("::", "::1", False),
    ("127.0.0.1", "::1", False),
    ("*", "0.0.0.0", True),                       # a JVM given BIND=0.0.0.0 or ::
    ("*", "::", True),
    ("::", "0.0.0.0", False),                     # IPv6 only: not every IPv4 address
])
def test_same_address(listening: str, bind: str, same: bool) -> None:
    assert procs.same_address(listening, bind) is same


# ------------------------------------------------------------ a real socket

def test_a_real_socket_is_reported_with_its_address_and_backlog() -> None:
    with socket.socket() as s, socket.socket() as other:
        s.bind(("127.0.0.1", 0))
        s.listen(37)
        other.bind(("127.0.0.1", 0))
        other.listen(5)
        port = s.getsockname()[1]
        found = procs.listeners(port)
    assert [(f.address, f.port, f.backlog) for f in found] == [("127.0.0.1", port, 37)]
    if os.geteuid() == 0:
        assert found[0].pids == (os.getpid(),)


def test_the_kernel_caps_the_backlog_at_somaxconn() -> None:
    cap = procs.somaxconn()
    assert cap is not None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(cap + 100)
        assert [f.backlog for f in procs.listeners(s.getsockname()[1])] == [cap]


# --------------------------------------------- check_listening on a fake server

# Each argument HOST/BACKLOG is one socket listening on PORT; SO_REUSEPORT
# lets several share it, as nginx's workers do.
FAKE = """
import os, socket, sys, time
held = []
for spec in sys.argv[1:]:
    host, backlog = spec.rsplit("/", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((host, int(os.environ["PORT"])))
    s.listen(int(backlog))
    held.append(s)
time.sleep(120)
"""


def fake(*specs: str) -> Server:
    return Server(name="fake", folder=ROOT, language="Python", framework="socket",
                  version="0", role="server", summary="", workers_default=1,
                  workers_meaning="", ready_timeout=10,
                  run=Command((sys.executable, "-c", FAKE, *specs), ROOT))


@contextmanager
def started(server: Server, knobs: Knobs, log: Path) -> Iterator[ServerProcess]:
    """The server started as the sweep starts it, ready; always stopped after."""
    proc = ServerProcess(server, ROOT, cache_dir(), "test-listen", knobs, CPUS, log)
    proc.start()
    try:
        proc.ready()
        yield proc
    finally:
        proc.stop()


def check(tmp_path: Path, backlog: int, *specs: str) -> dict[str, object]:
    knobs = Knobs(port=free_port(), workers=1, backlog=backlog, bind="127.0.0.1")
    with started(fake(*specs), knobs, tmp_path / "fake.log") as proc:
        return proc.check_listening()


def test_check_listening_passes_on_bind_with_the_backlog(tmp_path: Path) -> None:
    assert check(tmp_path, 37, "127.0.0.1/37") == {"address": "127.0.0.1", "backlog": 37}


def test_check_listening_refuses_every_interface(tmp_path: Path) -> None:
    with pytest.raises(ListenError, match=r"fake listens on 0\.0\.0\.0:\d+ backlog 37.*"
                                          r"not only on BIND=127\.0\.0\.1"):
        check(tmp_path, 37, "0.0.0.0/37")


def test_check_listening_refuses_one_socket_of_several_elsewhere(tmp_path: Path) -> None:
    with pytest.raises(ListenError, match=r"listens on 0\.0\.0\.0:\d+ backlog 37[^;]*, not only"):
        check(tmp_path, 37, "127.0.0.1/37", "0.0.0.0/37")


def test_check_listening_refuses_another_backlog(tmp_path: Path) -> None:
    with pytest.raises(ListenError, match=r"listens on 127\.0\.0\.1:\d+ backlog 50.*, "
                                          r"expected backlog 512: it must pass BACKLOG"):
        check(tmp_path, 512, "127.0.0.1/50")


def test_check_listening_expects_the_capped_backlog(tmp_path: Path) -> None:
    cap = procs.somaxconn()
    assert cap is not None and cap + 100 <= 65535
    asked = cap + 100
    assert check(tmp_path, asked, f"127.0.0.1/{asked}") == {"address": "127.0.0.1",
                                                            "backlog": cap}
    with pytest.raises(ListenError, match=rf"expected backlog {cap} \(BACKLOG={asked}, "
                                          rf"capped by net.core.somaxconn={cap}\)"):
        check(tmp_path, asked, "127.0.0.1/512")


# ------------------------------------------------------ the repository's servers

def get_api(bind: str, port: int) -> bytes:
    conn = http.client.HTTPConnection(procs.connect_host(bind), port, timeout=10)
    try:
        conn.request("GET", "/api")
        response = conn.getresponse()
        assert response.status == 200
        return response.read()
    finally:
        conn.close()


@pytest.mark.real_server
@pytest.mark.parametrize("name", sorted(REPO))
def test_server_listens_on_bind_with_backlog(name: str, tmp_path: Path, built: Build) -> None:
    """Started as the lab starts it: on 127.0.0.1 with backlog 512 (the
    defaults), then on ::1 with 100 (127.0.0.1 without IPv6), so both knobs
    are seen to reach the server."""
    server = REPO[name]
    built(name)
    starts = [("127.0.0.1", 512), ("::1" if has_ipv6_loopback() else "127.0.0.1", 100)]
    for bind, backlog in starts:
        knobs = Knobs(port=free_port(), workers=server.workers_default, backlog=backlog,
                      bind=bind)
        with started(server, knobs, tmp_path / f"{name}-{backlog}.log") as proc:
            assert proc.check_listening() == {"address": bind, "backlog": backlog}
            sockets = procs.listeners(knobs.port)
            assert sockets, "ss shows nothing on the port"
            for s in sockets:
                assert procs.same_address(s.address, bind) and s.backlog == backlog, sockets
            assert get_api(bind, knobs.port) == BODY
