"""Serves the lab's contract only to a request that says
`Accept-Encoding: identity` (a test double): any other GET /api gets the
greeting gzipped (Content-Encoding: gzip), 404 elsewhere. HTTP/1.1
keep-alive, and `Connection: close` said back to a request that asks for it.
On SIGTERM it prints how many answers were gzipped, of how many."""
import gzip
import os
import signal
import socket
import socketserver
import sys
import threading

BODY = b'{"greeting":"Hello World!"}'
GZIPPED = gzip.compress(BODY, mtime=0)
lock = threading.Lock()
counts = {"answered": 0, "wrong": 0}


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            line = self.rfile.readline(65537)
            if not line:
                return
            close = identity = False
            while True:
                header = self.rfile.readline(65537)
                if header in (b"\r\n", b"\n", b""):
                    break
                name, _, value = header.decode("latin-1").partition(":")
                name, value = name.strip().lower(), value.strip().lower()
                close = close or (name == "connection" and "close" in value)
                identity = identity or (name == "accept-encoding" and value == "identity")
            parts = line.split()
            extra = "Connection: close\r\n" if close else ""
            if len(parts) > 1 and parts[1] == b"/api":
                with lock:
                    counts["answered"] += 1
                    counts["wrong"] += not identity
                body = BODY if identity else GZIPPED
                extra += "" if identity else "Content-Encoding: gzip\r\n"
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            else:
                body = b"not found\n"
                head = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
            head += f"Content-Length: {len(body)}\r\n{extra}\r\n"
            self.wfile.write(head.encode() + body)
            if close:
                return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = int(os.environ.get("BACKLOG", "512"))


def said(*_: object) -> None:
    print(f"picky: {counts['wrong']} of {counts['answered']} answers to GET /api were gzipped",
          flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, said)
Server((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])), Handler).serve_forever()
