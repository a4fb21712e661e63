"""Local HTTP servers for the load-client tests: `python3 httpfakes.py MODE PORT`.

ok:     GET /api answers the greeting (keep-alive kept), any other path 404;
        a request that asks to close gets "Connection: close" back, as nginx does.
quiet:  as ok, but closes without saying so in the response (allowed: a SHOULD).
reset:  reads the request and resets the connection (RST, no response).
Listens on 127.0.0.1 only.
"""
from __future__ import annotations

import socket
import socketserver
import struct
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"greeting":"Hello World!"}'


class Greeting(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body are two writes: without this, Nagle and delayed ACKs add 40 ms
    disable_nagle_algorithm = True
    say_close = True

    def do_GET(self) -> None:
        if self.path != "/api":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        if self.close_connection and self.say_close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: object) -> None:
        pass                         # thousands of requests: keep stderr for errors


class QuietClose(Greeting):
    say_close = False


class Reset(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.recv(4096)
        # linger on, 0 s: close() sends RST instead of FIN
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class Quiet:
    """A client that is stopped mid-request is part of these tests, not an error."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[misc]


class ResetServer(Quiet, socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class GreetingServer(Quiet, ThreadingHTTPServer):
    request_queue_size = 512         # the lab's BACKLOG: no refusals at a burst of connects


def main(mode: str, port: int) -> None:
    address = ("127.0.0.1", port)
    server: socketserver.TCPServer
    if mode == "ok":
        server = GreetingServer(address, Greeting)
    elif mode == "quiet":
        server = GreetingServer(address, QuietClose)
    elif mode == "reset":
        server = ResetServer(address, Reset)
    else:
        raise SystemExit(f"unknown mode {mode!r}: ok, quiet or reset")
    print("ready", flush=True)
    server.serve_forever()


def start(mode: str, port: int, pin: str | None = None) -> subprocess.Popen[str]:
    """Start a fake in its own process (optionally pinned) and wait until it listens."""
    argv = [sys.executable, __file__, mode, str(port)]
    proc = subprocess.Popen((["taskset", "-c", pin] if pin else []) + argv,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError(f"httpfakes {mode} did not start")
    return proc


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
