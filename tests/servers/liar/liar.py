"""Answers every GET with 200 and a body that is not the greeting."""
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = b'{"greeting":"Hello World?"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


ThreadingHTTPServer.request_queue_size = int(os.environ.get("BACKLOG", "512"))  # as the lab asks
ThreadingHTTPServer((os.environ.get("BIND", "127.0.0.1"), int(os.environ["PORT"])),
                    Handler).serve_forever()
