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

BODY = b'{"greeting":"Hello World!"}'
LOADED, WINDOW_S = 20, 0.100
DEAF_S = float(os.environ.get("DEAF_S", "2"))
HEAR_S = float(os.environ.get("HEAR_S", "0.5"))
spells: list[float] = []


def answer(status: str, body: bytes, close: bool) -> bytes:
    head = (f"HTTP/1.1 {status}\r\nContent-Type: "
            f"{'application/json' if status.startswith('200') else 'text/plain'}\r\n"
            f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "")
            + "\r\n")
    return head.encode() + body


def serve(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn, conn.makefile("rb") as rfile:
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
            path = parts[1] if len(parts) > 1 else b""
            reply = answer("200 OK", BODY, close) if path == b"/api" else \
                answer("404 Not Found", b"not found\n", close)
            try:
                conn.sendall(reply)
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
