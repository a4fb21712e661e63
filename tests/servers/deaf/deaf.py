"""Serves the lab's contract, but stops accepting once loaded (a test double).

GET /api: 200, application/json, Content-Length 27, the greeting; any other
path: 404; HTTP/1.1 keep-alive, and `Connection: close` said back to a
request that asks for it. Every connection accepted is served by a thread
of its own. Loaded (more than LOADED connections accepted in the last
WINDOW_S), it stops calling accept() for DEAF_S seconds: the kernel keeps
completing handshakes into the listening socket's accept queue until it
holds BACKLOG connections (the listen() backlog), then drops new ones.
Then it accepts again, for at least HEAR_S before it may go deaf again (the
lab's check after the level, a fresh connection, is answered once a spell
ends). On SIGTERM
it prints how often and how long it was deaf, to its log.
"""
import collections
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared"))
import http1  # noqa: E402 (the doubles' HTTP/1.1, beside this folder)

LOADED, WINDOW_S = 20, 0.100
DEAF_S = float(os.environ.get("DEAF_S", "2"))
HEAR_S = float(os.environ.get("HEAR_S", "0.5"))
spells: list[float] = []


def serve(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn, conn.makefile("rb") as rfile:
        for path, close in http1.requests(rfile):
            try:
                conn.sendall(http1.contract(path, close))
            except OSError:
                return
            if close:
                return


def said(*_: object) -> None:
    print(f"deaf: stopped accepting {len(spells)} times, {sum(spells):.1f} s in all "
          f"(DEAF_S={DEAF_S:g}, backlog {BACKLOG})", flush=True)
    sys.exit(0)


BACKLOG = int(os.environ.get("BACKLOG", "512"))
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])))
listener.listen(BACKLOG)
signal.signal(signal.SIGTERM, said)
recent: collections.deque[float] = collections.deque()
hearing_until = 0.0
while True:
    client, _ = listener.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
    now = time.monotonic()
    recent.append(now)
    while recent and recent[0] <= now - WINDOW_S:
        recent.popleft()
    if len(recent) > LOADED and now >= hearing_until:
        time.sleep(DEAF_S)                 # deaf: the accept queue fills
        spells.append(DEAF_S)
        recent.clear()
        hearing_until = time.monotonic() + HEAR_S
