"""A correct server whose speed is set by a sleep per request, not by the CPU,
so that its rate is steady on a noisy host: 5 ms per request once warm (--pace).

With --die-at N it kills itself with SIGKILL (as the OOM killer would) once N
requests sleep at the same time: at concurrency N, never below.

With --warm S it starts slow and speeds up over its first S seconds of
load (8 times its pace, falling linearly to its pace), like a JIT warming up.
Listens on BIND:PORT with backlog BACKLOG, as every lab server does."""
import argparse
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"greeting":"Hello World!"}'
args = argparse.ArgumentParser()
args.add_argument("--warm", type=float, default=0.0)
args.add_argument("--pace", type=float, default=5.0,
                  help="ms per request once warm: the longer, the less the CPU's share "
                       "(and a noisy host's) in its rate")
args.add_argument("--close-below", type=int, default=0,
                  help="with fewer WORKERS than this, close every connection (as AWS does "
                       "with one task)")
args.add_argument("--die-at", type=int, default=0)
args.add_argument("--shipped", type=int, default=0,
                  help="its own default worker count when WORKERS is unset (as shipped); "
                       "it prints what it runs with, as the lab's servers do")
ARGS = args.parse_args()
# a variant's longer warm-up (its manifest's env): the longer of the two
ARGS.warm = max(ARGS.warm, float(os.environ.get("PACED_WARM_S", "0")))
WARM_S = ARGS.warm
PACE_S = ARGS.pace / 1000
CLOSE = int(os.environ.get("WORKERS", "1")) < ARGS.close_below
FIRST: list[float] = []
SLEEPING = [0]
LOCK = threading.Lock()


def pause() -> float:
    """Seconds to sleep for this request."""
    with LOCK:
        if not FIRST:
            FIRST.append(time.monotonic())
        since = time.monotonic() - FIRST[0]
    if WARM_S <= 0 or since >= WARM_S:
        return PACE_S
    return PACE_S * (1 + 7 * (1 - since / WARM_S))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path != "/api":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with LOCK:
            SLEEPING[0] += 1
            if ARGS.die_at and SLEEPING[0] >= ARGS.die_at:
                os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(pause())
        with LOCK:
            SLEEPING[0] -= 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        if CLOSE or self.close_connection:      # asked to close (or always): said so
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(BODY)


class Server(ThreadingHTTPServer):
    request_queue_size = int(os.environ.get("BACKLOG", "512"))


server = Server((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])), Handler)
print(f"paced listening on {server.server_address}, warm-up {WARM_S}s", flush=True)
if ARGS.shipped:
    given = os.environ.get("WORKERS", "")
    print(f"lab-workers: {given or ARGS.shipped} ("
          f"{'from WORKERS' if given else 'its own default'})", flush=True)
server.serve_forever()
