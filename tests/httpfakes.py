"""Local HTTP servers for the load-client tests: `python3 httpfakes.py MODE PORT`.

ok:     GET /api answers the greeting (keep-alive kept), any other path 404;
        a request that asks to close gets "Connection: close" back, as nginx does.
quiet:  as ok, but closes without saying so in the response (allowed: a SHOULD).
reset:  reads the request and resets the connection (RST, no response).
reset-every N K FILE: as ok, but the Nth, 2Nth, ... accepted connection, up to K
        of them, reads its request and is reset (RST, no response); FILE
        holds how many it reset so far.
Listens on 127.0.0.1 only.
"""
from __future__ import annotations

import socket
import socketserver
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
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


class ResetEvery(GreetingServer):
    """Every Nth connection, K times, read and reset: a known count of one kind of failure."""
    daemon_threads = True

    def __init__(self, address: tuple[str, int], every: int, times: int, count: Path) -> None:
        super().__init__(address, Greeting)
        self.every, self.times, self.count = every, times, count
        self.accepted = self.resets = 0
        self.lock = threading.Lock()
        count.write_text("0\n")

    def finish_request(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.accepted += 1
            reset = self.accepted % self.every == 0 and self.resets < self.times
            if reset:
                self.resets += 1
                done = self.resets
        if not reset:
            super().finish_request(request, client_address)
            return
        sock: socket.socket = request
        data = b""
        while b"\r\n\r\n" not in data:        # the whole request, then no answer
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()                               # RST
        with self.lock:
            self.count.write_text(f"{done}\n")


def main(mode: str, port: int, *args: str) -> None:
    address = ("127.0.0.1", port)
    server: socketserver.TCPServer
    if mode == "reset-every":
        server = ResetEvery(address, int(args[0]), int(args[1]), Path(args[2]))
    elif mode == "ok":
        server = GreetingServer(address, Greeting)
    elif mode == "quiet":
        server = GreetingServer(address, QuietClose)
    elif mode == "reset":
        server = ResetServer(address, Reset)
    else:
        raise SystemExit(f"unknown mode {mode!r}: ok, quiet, reset or reset-every")
    print("ready", flush=True)
    server.serve_forever()


def start(mode: str, port: int, pin: str | None = None,
          args: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    """Start a fake in its own process (optionally pinned) and wait until it listens."""
    argv = [sys.executable, __file__, mode, str(port), *args]
    proc = subprocess.Popen((["taskset", "-c", pin] if pin else []) + argv,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError(f"httpfakes {mode} did not start")
    return proc


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *sys.argv[3:])
