"""Serves the lab's contract, and breaks for good on garbage (a test double).

GET /api: 200, application/json, Content-Length 27, the greeting; any other
path: 404; HTTP/1.1 keep-alive. Once a request line arrives that is not
"METHOD target [HTTP/x.y]", every later request is held without an answer,
forever: the robustness probe must see that it stopped answering after its
garbage probe. With --sturdy it never breaks: the well-behaved double.
"""
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"greeting":"Hello World!"}'
STURDY = "--sturdy" in sys.argv[1:]
REQUEST_LINE = re.compile(rb"[A-Z]+ \S+( HTTP/\d\.\d)?\r?\n")
broken = threading.Event()
stopping = threading.Event()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def parse_request(self) -> bool:
        if not STURDY and not REQUEST_LINE.fullmatch(self.raw_requestline):
            broken.set()
        if broken.is_set():
            stopping.wait()          # hold the connection, answer nothing
            return False
        return super().parse_request()

    def do_GET(self) -> None:
        found = self.path == "/api"
        body = BODY if found else b"not found\n"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json" if found else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:               # the request asked to close: say so
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = int(os.environ.get("BACKLOG", "512"))


Server((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])), Handler).serve_forever()
