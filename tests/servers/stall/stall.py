"""Answers the first five requests correctly (the verification in connection
close mode: GET /api, a second on the connection, the 404, Connection: close,
and GET /api as the load client sends it), then holds every request."""
import itertools
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"greeting":"Hello World!"}'
counter = itertools.count()
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        with lock:
            n = next(counter)
        if n >= 5:
            time.sleep(600)
        ok = self.path == "/api"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY) if ok else 0))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if ok:
            self.wfile.write(BODY)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer.request_queue_size = int(os.environ.get("BACKLOG", "512"))  # as the lab asks
ThreadingHTTPServer((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])),
                    Handler).serve_forever()
