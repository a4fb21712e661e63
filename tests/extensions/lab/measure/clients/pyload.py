"""pyload: a test-only load client in one file, closed loop, Python's stdlib.

C threads each send GET requests one after the other for the duration
(http.client, a new connection per request unless keep-alive), then the
process prints one JSON line of counts and latencies.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import ClassVar

from lab.measure import hostinfo
from lab.measure.clients import ClientError, Load, Options
from lab.record.level import Level

MARKER = "pyload "
SCRIPT = r'''
import http.client, json, sys, threading, time, urllib.parse
url, users, duration, keepalive = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
u = urllib.parse.urlsplit(url)
path = (u.path or "/") + ("?" + u.query if u.query else "")
lock = threading.Lock()
ok = failed = body = 0
times = []
end = time.monotonic() + duration
def user():
    global ok, failed, body
    conn = None
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
            conn.request("GET", path, headers={} if keepalive else {"Connection": "close"})
            r = conn.getresponse()
            data = r.read()
            good = 200 <= r.status < 400
            if not keepalive or r.will_close:
                conn.close()
                conn = None
        except OSError:
            good, data = False, b""
            if conn is not None:
                conn.close()
            conn = None
        with lock:
            times.append(time.monotonic() - t0)
            ok, failed, body = ok + good, failed + (not good), body + len(data)
t0 = time.monotonic()
threads = [threading.Thread(target=user) for _ in range(users)]
for t in threads:
    t.start()
for t in threads:
    t.join()
times.sort()
pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000 if times else 0.0
print("pyload " + json.dumps({"ok": ok, "failed": failed, "bytes": body,
      "elapsed": time.monotonic() - t0, "mean_ms": sum(times) / len(times) * 1000 if times else 0.0,
      "max_ms": times[-1] * 1000 if times else 0.0, "p50": pick(0.5), "p90": pick(0.9), "p99": pick(0.99)}))
'''


class PyLoad:
    name: ClassVar[str] = "pyload"
    axis: ClassVar[str] = "concurrency"
    help: ClassVar[str] = "test-only closed loop, C Python threads"
    packages: ClassVar[dict[str, str]] = {"python3": "python3"}
    cross_check: ClassVar[str] = "wrk"

    def __init__(self) -> None:
        self.options: Options | None = None

    def install(self, cache: Path) -> int:
        """Nothing to build; leaves a stamp so that a test sees `lab deps` ask."""
        (cache / "pyload").mkdir(parents=True, exist_ok=True)
        (cache / "pyload" / "installed").write_text("yes\n")
        return 0

    def version(self) -> str:
        found = hostinfo.probe_version([sys.executable, "--version"], r"Python\s+(\S+)")
        return f"stdlib-{found}" if found else "not installed"

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        self.options = options
        return {"tool": self.name, "version": self.version(),
                "connection": "keep-alive" if options.keepalive else "close"}

    def command(self, url: str, load: Load, duration_s: int) -> list[str]:
        if self.options is None:
            raise ClientError("PyLoad.prepare must run first")
        if load.rate or load.concurrency < 1:
            raise ClientError("pyload keeps users busy: give a concurrency, not a rate")
        return [sys.executable, "-c", SCRIPT, url, str(load.concurrency), str(duration_s),
                "1" if self.options.keepalive else "0"]

    def parse(self, stdout: str, stderr: str) -> Level:
        line = next((x for x in reversed(stdout.splitlines()) if x.startswith(MARKER)), None)
        if line is None:
            raise ClientError("pyload printed no statistics: " + (stderr.strip()[-300:]
                                                                   or "no output"))
        d = json.loads(line[len(MARKER):])
        n = d["ok"] + d["failed"]
        rate = n / d["elapsed"] if d["elapsed"] > 0 else 0.0
        return Level(transactions=n, successful=d["ok"], failed=d["failed"],
                     availability_pct=100 * d["ok"] / n if n else 0.0, elapsed_s=d["elapsed"],
                     rate_rps=rate, resp_ms=d["mean_ms"], in_flight=rate * d["mean_ms"] / 1000,
                     longest_ms=d["max_ms"], data_mb=d["bytes"] / 2**20,
                     p50_ms=d["p50"], p90_ms=d["p90"], p99_ms=d["p99"])


CLIENT = PyLoad
