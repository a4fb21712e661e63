"""Why a client hung (lab.host.hang): the sentence from what its threads wait in and
its connections, and the same read from /proc of real stuck clients: one whose
request waits in a server's accept queue, one that waits on a lock of its own
after the server answered and closed."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from contextlib import contextmanager

import pytest

from lab.host import hang
from lab.host.hang import CLOSE_WAIT, ESTABLISHED, SYN_SENT, TcpSocket

pytestmark = pytest.mark.unit

# ---- the sentence ---------------------------------------------------------------------------


def test_open_unanswered_connections_are_the_servers_stall() -> None:
    text = hang.explain("siege", 47.2, ["network", "network", "lock"],
                        [TcpSocket(ESTABLISHED, 0, 0)] * 3, None)
    assert text.startswith("siege waited 47 s on 3 connections that the server accepted and "
                           "never answered (")
    assert "3 open (ESTABLISHED) with no answer to read" in text


def test_connections_not_accepted_say_the_accept_queue() -> None:
    text = hang.explain("wrk", 10, ["network"], [TcpSocket(ESTABLISHED, 0, 0)], 1)
    assert text.startswith("wrk waited 10 s on 1 connection that the server left unanswered "
                           "(1 waited in its accept queue, not accepted)")


def test_a_client_on_a_lock_with_every_connection_closed_hangs_on_its_own() -> None:
    text = hang.explain("siege", 47, ["lock", "lock"], [TcpSocket(CLOSE_WAIT, 0, 0)] * 6, 0)
    assert text.startswith("siege hung on its own: its threads wait on a lock (futex)")
    assert "2 on a lock" in text and "6 closed by the server (CLOSE-WAIT)" in text


def test_a_client_on_a_lock_with_a_connection_it_never_used() -> None:
    # seen against aws: Siege's users on a lock, one connection open with no request sent
    text = hang.explain("siege", 12, ["lock", "lock"],
                        [TcpSocket(CLOSE_WAIT, 0, 0)] * 6 + [TcpSocket(ESTABLISHED, 0, 0)], None)
    assert text.startswith("siege hung on its own: its threads wait on a lock (futex) and none "
                           "on the network; no thread of it waits on its 1 open connection")


def test_anything_else_claims_no_side() -> None:
    text = hang.explain("wrk", 5, ["network"], [TcpSocket(SYN_SENT, 0, 0)], None)
    assert text.startswith("wrk did not finish; neither side is clearly stalled")
    assert "1 still connecting (SYN-SENT)" in text


@pytest.mark.parametrize("wchan,what", [("futex_wait_queue", "lock"), ("futex_do_wait", "lock"),
                                        ("do_sys_poll", "network"), ("ep_poll", "network"),
                                        ("wait_woken", "network"), ("do_wait", "child"),
                                        ("pipe_read", "pipe"), ("0", "running"),
                                        ("hrtimer_nanosleep", "other")])
def test_what_a_thread_waits_in(wchan: str, what: str) -> None:
    assert hang.waits(wchan) == what


# ---- real stuck clients ---------------------------------------------------------------------

CLIENT = """
import socket, sys, threading
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /api HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
if sys.argv[2] == "read":
    print("sent", flush=True)
    s.recv(1)                                   # waits for an answer
else:
    s.recv(4096)                                # the answer, then the server's close
    print("answered", flush=True)
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()                              # waits on itself, for ever
"""


@contextmanager
def client(port: int, mode: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, str(port), mode],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() in ("sent", "answered")
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_request_left_in_the_accept_queue() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)                      # and never accepts
        port = listener.getsockname()[1]
        with client(port, "read") as proc:
            text = hang.diagnose(proc.pid, ["python3", f"http://127.0.0.1:{port}/api"], 12.0)
    assert text.startswith("python3 waited 12 s on 1 connection that the server left "
                           "unanswered (1 waited in its accept queue, not accepted)"), text


def test_a_client_stuck_on_its_own_lock_after_the_server_closed() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            conn.close()
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        with client(port, "lock") as proc:
            t.join(timeout=10)
            text = ""
            for _ in range(100):                # until the main thread is in the futex wait
                text = hang.diagnose(proc.pid, ["python3", f"http://127.0.0.1:{port}/api"], 3)
                if text.startswith("python3 hung on its own"):
                    break
                threading.Event().wait(0.05)
    assert text.startswith("python3 hung on its own: its threads wait on a lock (futex)"), text
    assert "1 closed by the server (CLOSE-WAIT)" in text


def test_a_client_gone_already_says_nothing() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    assert hang.diagnose(proc.pid, ["x"], 1) == ""


def test_a_socket_listed_twice_in_the_kernels_table_is_one_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc/net/tcp is printed a piece per read(): while other connections
    come and go, a row can appear twice. A fresh-clone make test saw "2
    connections" for a client that had one."""
    head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt" \
           "   uid  timeout inode\n"
    listener = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000001 00:00000000 00000000" \
               "     0        0 111 1 0 100 0 0 10 0\n"
    mine = "   1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000" \
           "     0        0 222 1 0 20 4 30 10 -1\n"
    (tmp_path / "tcp").write_text(head + listener + mine + mine + listener)
    monkeypatch.setattr(hang, "socket_inodes", lambda pids: {"222"})
    conns, queued = hang.connections([1], 8080, tmp_path)
    assert conns == [TcpSocket(ESTABLISHED, 0, 0)] and queued == 1
