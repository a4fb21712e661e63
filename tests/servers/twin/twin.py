"""A correct server whose cost per request is set: TWIN_CPU_US microseconds
of its own CPU time (a busy loop on the thread's CPU clock, so the cost is
the same whatever else runs) and TWIN_SLEEP_MS milliseconds of sleep (a cost
that CPU per request cannot see). Two builds that differ by a known amount,
for paired runs (PAIRED=duet) and the CI gate: the variants of server.toml.
TWIN_ODD_PORT_CPU_US more a request where its PORT is odd: a seat that is
slower whoever sits on it (a paired run's second seat has PORT+1).

Listens on BIND:PORT with backlog BACKLOG, as every lab server does."""
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"greeting":"Hello World!"}'
CPU_NS = int(float(os.environ.get("TWIN_CPU_US", "0")) * 1000) + \
    int(os.environ["PORT"]) % 2 * int(float(os.environ.get("TWIN_ODD_PORT_CPU_US", "0")) * 1000)
SLEEP_S = float(os.environ.get("TWIN_SLEEP_MS", "0")) / 1000


def burn() -> None:
    """CPU_NS of this thread's CPU time."""
    end = time.thread_time_ns() + CPU_NS
    while time.thread_time_ns() < end:
        pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True      # the head and the body go out as written

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path != "/api":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if CPU_NS:
            burn()
        if SLEEP_S:
            time.sleep(SLEEP_S)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(BODY)


class Server(ThreadingHTTPServer):
    request_queue_size = int(os.environ.get("BACKLOG", "512"))
    daemon_threads = True


server = Server((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])), Handler)
print(f"twin listening on {server.server_address}: {CPU_NS / 1000:g} us CPU, "
      f"{SLEEP_S * 1000:g} ms sleep a request", flush=True)
server.serve_forever()
