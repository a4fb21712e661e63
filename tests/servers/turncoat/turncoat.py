"""Serves the lab's contract, then stops keeping it (a test double).

GET /api: 200, application/json, Content-Length 27, the greeting; any other
path: 404; HTTP/1.1 keep-alive, and `Connection: close` said back to a
request that asks for it. Each option changes what it does after its first
N answers to GET /api:

  --body-after N    answers a different body of the same length ("Hello World?")
  --reset-after N   resets the connection of 9 in 10 later requests (no answer):
                    reads the request, then closes with SO_LINGER 0
  --unread-after N  closes 1 in --one-in of the later connections before
                    answering, with the request unread (the kernel resets it)
  --one-in K        with --reset-after: resets 1 in K requests, not 9 in 10
  --log-bytes B     writes B bytes to its standard output for every request
"""
import argparse
import os
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"greeting":"Hello World!"}'
CHANGED = b'{"greeting":"Hello World?"}'
parser = argparse.ArgumentParser()
parser.add_argument("--body-after", type=int, default=-1)
parser.add_argument("--reset-after", type=int, default=-1)
parser.add_argument("--unread-after", type=int, default=-1)
parser.add_argument("--one-in", type=int, default=0)
parser.add_argument("--log-bytes", type=int, default=0)
args = parser.parse_args()
lock = threading.Lock()
answered = 0
seen = 0            # requests waited for (--unread-after), read or not
closing: set[int] = set()   # connections to close with no FIN first (abrupt)
LINE = b"x" * 99 + b"\n"


def past(n: int) -> bool:
    return 0 <= n <= answered


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a: object) -> None:
        pass

    def handle_one_request(self) -> None:
        global seen
        if args.unread_after >= 0:
            try:        # wait for the next request, and read none of it
                waiting = self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                waiting = b""
            with lock:
                seen += bool(waiting)
                unread = waiting and seen > args.unread_after and seen % max(args.one_in, 1) == 0
            if unread:              # closed with the request unread: the kernel resets it
                abrupt(self.connection)
                self.close_connection = True
                return
        super().handle_one_request()

    def do_GET(self) -> None:
        global answered
        if args.log_bytes:
            whole, rest = divmod(args.log_bytes, len(LINE))
            os.write(1, LINE * whole + LINE[-rest:] if rest else LINE * whole)
        found = self.path == "/api"
        with lock:
            if found:
                answered += 1
            reset = past(args.reset_after) and (answered % args.one_in == 0 if args.one_in
                                                else answered % 10 != 0)
            changed = past(args.body_after)
        if found and reset:
            abrupt(self.connection)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True        # close() now sends RST, no answer
            return
        body = (CHANGED if changed else BODY) if found else b"not found\n"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json" if found else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


def abrupt(conn: socket.socket) -> None:
    """`conn` is to be closed at once, with no FIN before."""
    with lock:
        closing.add(conn.fileno())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = int(os.environ.get("BACKLOG", "512"))

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        # socketserver shuts the writing side down (a FIN) before it closes;
        # a client that reads that FIN closes its end first, and the close
        # that was to reset the connection then finds it closed: no reset
        # (wrk counted twice the resets the kernel sent). Close at once.
        with lock:
            now = request.fileno() in closing
            closing.discard(request.fileno())
        if now:
            self.close_request(request)
        else:
            super().shutdown_request(request)


Server((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])), Handler).serve_forever()
