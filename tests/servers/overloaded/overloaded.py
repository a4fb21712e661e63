"""Serves the lab's contract until it is loaded (a test double).

GET /api: 200, application/json, Content-Length 27, the greeting; any other
path: 404; HTTP/1.1 keep-alive, and `Connection: close` said back to a
request that asks for it. Loaded (more than LOADED requests to /api in the
last WINDOW_S, the previous one less than GAP_S ago), it answers GET /api
wrongly, as OVERLOADED_WRONG says:

  short   a 28-byte body: '{"greeting":"Hello World!!"}'
  same    27 bytes, other ones: '{"greeting":"Hello World?"}'
  error   '{"error":"overloaded"}', status 200

Each answer is one write (a head and a body apart would wait on Nagle's
algorithm and the client's delayed ACK: 25 answers a second, never loaded).
On SIGTERM it prints how many answers were wrong, of how many, to its log.
"""
import collections
import os
import signal
import socket
import socketserver
import sys
import threading
import time

BODY = b'{"greeting":"Hello World!"}'
WRONG = {"short": b'{"greeting":"Hello World!!"}',
         "same": b'{"greeting":"Hello World?"}',
         "error": b'{"error":"overloaded"}'}[os.environ.get("OVERLOADED_WRONG", "short")]
LOADED, WINDOW_S, GAP_S = 20, 0.100, 0.020
lock = threading.Lock()
recent: collections.deque[float] = collections.deque()
counts = {"answered": 0, "wrong": 0}


def loaded() -> bool:
    """Count this request; whether the server is loaded now."""
    now = time.monotonic()
    with lock:
        previous = recent[-1] if recent else float("-inf")
        recent.append(now)
        while recent and recent[0] <= now - WINDOW_S:
            recent.popleft()
        busy = len(recent) > LOADED and now - previous < GAP_S
        counts["answered"] += 1
        counts["wrong"] += busy
    return busy


def answer(status: str, body: bytes, close: bool) -> bytes:
    head = (f"HTTP/1.1 {status}\r\nContent-Type: "
            f"{'application/json' if status.startswith('200') else 'text/plain'}\r\n"
            f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "")
            + "\r\n")
    return head.encode() + body


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            line = self.rfile.readline(65537)
            if not line:
                return
            close = False
            while True:
                header = self.rfile.readline(65537)
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.decode("latin-1").partition(":")
                if name.strip().lower() == "connection" and "close" in value.lower():
                    close = True
            parts = line.split()
            path = parts[1] if len(parts) > 1 else b""
            if path == b"/api":
                reply = answer("200 OK", WRONG if loaded() else BODY, close)
            else:
                reply = answer("404 Not Found", b"not found\n", close)
            self.wfile.write(reply)
            if close:
                return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = int(os.environ.get("BACKLOG", "512"))


def said(*_: object) -> None:
    print(f"overloaded: {counts['wrong']} of {counts['answered']} answers to GET /api were "
          f"wrong ({os.environ.get('OVERLOADED_WRONG', 'short')})", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, said)
Server((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])), Handler).serve_forever()
