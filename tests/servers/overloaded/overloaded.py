"""Serves the lab's contract until it is loaded (a test double).

GET /api: 200, application/json, Content-Length 27, the greeting; any other
path: 404; HTTP/1.1 keep-alive, and `Connection: close` said back to a
request that asks for it. Loaded (more than LOADED requests to /api in the
last WINDOW_S, the previous one less than GAP_S ago), it answers GET /api
wrongly, as OVERLOADED_WRONG says:

  short   a 28-byte body: '{"greeting":"Hello World!!"}'
  same    27 bytes, other ones: '{"greeting":"Hello World?"}'
  error   '{"error":"overloaded"}', status 200

Each answer is one write (shared/http1.py: a head and a body apart would
wait on Nagle's algorithm and the client's delayed ACK: 25 answers a second,
never loaded).
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "shared"))
import http1  # noqa: E402 (the doubles' HTTP/1.1, beside this folder)

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


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for path, close in http1.requests(self.rfile):
            wrong = path == b"/api" and loaded()
            self.wfile.write(http1.contract(path, close, WRONG if wrong else http1.BODY))
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
