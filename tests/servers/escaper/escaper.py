"""A correct server (GET /api: the greeting; 404 elsewhere; keep-alive, and
`Connection: close` said back) that misbehaves around its own lifetime, as
ESCAPE says (a test double for issue 44, sections 2, 3 and 8):

  exec        once listening, double-forks; the grandchild calls setsid and
              execs /bin/sleep 86400.PORT with an emptied environment
  exec-port   the same, and the sleep keeps the listening socket
  child-port  the grandchild stays python3, environment kept, holding the
              listening socket: the server's own child on its port
  quit        exits 0 (os._exit: no goodbye) once it has accepted its first
              connection: the lab's readiness check
  none        nothing of that

REUSEPORT=1 binds with SO_REUSEPORT, ESCAPER_BIND_DELAY_S (default 4) after
it starts: two runs started together on one PORT both check the port
before either binds it, and both bind it.

Listens on BIND:PORT with backlog BACKLOG, as every lab server does."""
import os
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY = b'{"greeting":"Hello World!"}'
ESCAPE = os.environ.get("ESCAPE", "exec")
PORT = int(os.environ["PORT"])
REUSEPORT = os.environ.get("REUSEPORT") == "1"


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

    def server_bind(self) -> None:
        if REUSEPORT:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


def escape(listening: socket.socket) -> None:
    """Leave a grandchild behind, out of this process group, as ESCAPE says."""
    if os.fork():
        os.wait()                       # the child ends at once: the grandchild is orphaned
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    keep = ESCAPE in ("exec-port", "child-port")
    os.set_inheritable(listening.fileno(), keep)
    if not keep:
        listening.close()
    if ESCAPE == "child-port":
        time.sleep(86400)
        os._exit(0)
    os.execve("/bin/sleep", ["sleep", f"86400.{PORT}"], {})


if REUSEPORT:
    time.sleep(float(os.environ.get("ESCAPER_BIND_DELAY_S", "4")))
server = Server((os.environ.get("BIND", "127.0.0.1"), PORT), Handler, bind_and_activate=False)
server.server_bind()
if ESCAPE in ("exec", "exec-port", "child-port"):
    escape(server.socket)               # before it listens: done once the lab finds it ready
server.server_activate()
print(f"escaper ({ESCAPE}) listening on {server.server_address}", flush=True)
if ESCAPE == "quit":
    conn, _ = server.socket.accept()
    conn.close()
    os._exit(0)
server.serve_forever()
