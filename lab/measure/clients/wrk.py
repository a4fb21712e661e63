"""wrk, closed loop: C connections kept busy, statistics read from a Lua hook.

wrk's text report rounds (2.20ms, 87.56k); the lab's script
client/wrk-report.lua prints wrk's own counters and microsecond latencies as
one JSON line from the done() hook, which runs once at the end, so it costs
nothing during the load. Where several client hosts share a level, the run's
wrk-histogram.lua (client/wrk-histogram.lua appended) also writes wrk's
whole latency histogram from done(), for the hosts' percentiles merged.

Counting, as siege counts: every response is a transaction; socket errors
(connect, read, write, timeout) and 4xx/5xx responses are failures; 2xx/3xx
responses are successful. wrk counts a response slower than its timeout as a
request and as a timeout, and also counts connections found stuck past it,
so `timeout` is taken as wrk reports it, among the failures.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar

from lab.analyse.metrics import STALL_MIN_S, STALLED_SHARE
from lab.setup.paths import ROOT
from lab.measure import hostinfo
from lab.measure.clients import ClientError, Load, Options, Packaged, target
from lab.record import files, histogram
from lab.record.histogram import Histogram
from lab.record.level import Answers, Level
from lab.record.failures import Failure

SCRIPT = ROOT / "client" / "wrk-report.lua"
CHECK = ROOT / "client" / "wrk-check.lua"      # appended to SCRIPT: the check slice's
CHECK_SCRIPT = "wrk-check.lua"                 # its name in the run folder
HISTOGRAM = ROOT / "client" / "wrk-histogram.lua"   # appended to SCRIPT: several hosts'
HISTOGRAM_SCRIPT = "wrk-histogram.lua"
HISTOGRAM_LINE = "wrk-histogram "
REPORT_LINE = "wrk-report "
ANSWERS_LINE = "wrk-answers "
COUNTS = ("requests", "duration_us", "bytes", "connect", "read", "write", "status", "timeout")
TIMES = ("mean_us", "max_us", "p50_us", "p90_us", "p99_us")
MIB = 1024 * 1024        # siege's data_transferred unit
# its version probe: wrk -v prints "wrk debian/4.1.0-3+b2 [epoll] ..." and exits 1
VERSION = (["wrk", "-v"], r"wrk\s+(\S+)\s+\[")


def histogram_budget() -> bytes:
    """The Lua line that bounds the histogram's reading in done(): half of the
    time past wrk's own clock that flags a client as stalled (lab.analyse.metrics)."""
    return (f"HISTOGRAM_BUDGET = {{share = {STALLED_SHARE / 2:g}, "
            f"min_s = {STALL_MIN_S / 2:g}}}\n").encode()


def threads_for(concurrency: int, wanted: int) -> int:
    """The most threads, up to `wanted`, that share the connections evenly.

    wrk gives each thread connections // threads, so 3 connections on 2
    threads would be 2 connections: the thread count must divide C.
    """
    for t in range(max(1, min(wanted, concurrency)), 0, -1):
        if concurrency % t == 0:
            return t
    return 1


def report_line(stdout: str) -> dict[str, Any] | None:
    """The script's JSON line, or None when wrk never reached done()."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(REPORT_LINE):
            try:
                data = json.loads(line[len(REPORT_LINE):])
            except json.JSONDecodeError:
                return None
            ok = isinstance(data, dict) and all(
                isinstance(data.get(k), (int, float)) for k in COUNTS)
            return data if ok else None
    return None


def micros(value: object) -> float:
    """Microseconds to milliseconds; the script writes null for wrk's NaN (no samples)."""
    return float(value) / 1000 if isinstance(value, (int, float)) else 0.0


# wrk's counters of failed requests: the kind each one is, in wrk's words
SOCKET_ERRORS = {
    "connect": ("refused", "wrk: connect errors"),
    "read": ("reset", "wrk: read errors (a reset, or the connection closed before a whole "
                      "response)"),
    "write": ("reset", "wrk: write errors"),
    "timeout": ("timeout", "wrk: timeouts (no response within its 2 s timeout)"),
}


def failures(data: dict[str, Any]) -> tuple[Failure, ...]:
    """wrk's socket errors by the call that failed, and its non-2xx/3xx count
    (wrk keeps no count per status)."""
    found = [Failure(kind, int(data[key]), words)
             for key, (kind, words) in SOCKET_ERRORS.items() if int(data[key])]
    if int(data["status"]):
        found.append(Failure("status", int(data["status"]), "wrk: non-2xx or 3xx responses "
                                                             "(wrk does not count them by status)"))
    return tuple(found)


def parse(stdout: str, stderr: str) -> Level:
    data = report_line(stdout)
    if data is None:
        errors = [line for line in (stderr + stdout).splitlines() if line.strip()][-5:]
        raise ClientError("wrk printed no statistics: " + (" | ".join(errors) or "no output"))
    requests = int(data["requests"])
    status = int(data["status"])
    socket = sum(int(data[k]) for k in ("connect", "read", "write", "timeout"))
    successful = max(0, requests - status)
    failed = socket + status
    elapsed = data["duration_us"] / 1e6
    rate = requests / elapsed if elapsed > 0 else 0.0
    mean_ms = micros(data.get("mean_us"))
    attempts = successful + failed
    return Level(
        transactions=requests,
        successful=successful,
        failed=failed,
        availability_pct=100 * successful / attempts if attempts else 0.0,
        elapsed_s=elapsed,
        rate_rps=rate,
        resp_ms=mean_ms,
        in_flight=rate * mean_ms / 1000,      # Little's law, as the client saw it
        longest_ms=micros(data.get("max_us")),
        data_mb=data["bytes"] / MIB,          # wrk counts headers too, siege only bodies
        p50_ms=micros(data.get("p50_us")),
        p90_ms=micros(data.get("p90_us")),
        p99_ms=micros(data.get("p99_us")),
        failures=failures(data),
        counted="wire", counted_partial=True,   # every read counted, complete or not
    )


def check_parse(stdout: str, stderr: str) -> Answers:
    """The checking script's line: answers checked, wrong, the first wrong one."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(ANSWERS_LINE):
            try:
                data = json.loads(line[len(ANSWERS_LINE):])
            except json.JSONDecodeError:
                break
            if isinstance(data, dict) and isinstance(data.get("checked"), int) and \
                    isinstance(data.get("wrong"), int) and isinstance(data.get("example"), str):
                return Answers(data["checked"], data["wrong"], data["example"])
            break
    errors = [line for line in (stderr + stdout).splitlines() if line.strip()][-5:]
    raise ClientError("wrk printed no answers checked: " + (" | ".join(errors) or "no output"))


class Wrk(Packaged):
    name: ClassVar[str] = "wrk"
    axis: ClassVar[str] = "concurrency"
    help: ClassVar[str] = "closed loop, C connections on CLIENT_THREADS threads"
    packages: ClassVar[dict[str, str]] = {"wrk": "wrk"}
    version_probe: ClassVar[tuple[list[str], str]] = VERSION
    cross_check: ClassVar[str] = "siege"

    def __init__(self) -> None:
        self.script: Path | None = None
        self.options: Options | None = None

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        """Copy the script into the run once; later steps of the run use that copy."""
        script = run_dir / SCRIPT.name
        if not os.path.lexists(script):
            files.write_atomic(script, SCRIPT.read_bytes())
        check = run_dir / CHECK_SCRIPT
        if not os.path.lexists(check):
            files.write_atomic(check, SCRIPT.read_bytes() + b"\n" + CHECK.read_bytes())
        self.script, self.options = script, options
        return {"tool": "wrk", "version": self.version(),
                "connection": "keep-alive" if options.keepalive else "close",
                "threads": str(options.threads), "script": script.name}

    def command(self, url: str, load: Load, duration_s: int) -> list[str]:
        if self.script is None or self.options is None:
            raise ClientError("Wrk.prepare must run first")
        if load.rate or load.concurrency < 1:
            raise ClientError("wrk keeps connections busy: give a concurrency, not a rate")
        threads = threads_for(load.concurrency, self.options.threads)
        argv = ["wrk", "-t", str(threads), "-c", str(load.concurrency),
                "-d", f"{duration_s}s", "--latency", "-s", str(self.script)]
        if not self.options.keepalive:
            # wrk reconnects after a response that asked to close, like siege's close mode
            argv += ["-H", "Connection: close"]
        return argv + [url]

    def parse(self, stdout: str, stderr: str) -> Level:
        return parse(stdout, stderr)

    def check_command(self, url: str, load: Load, duration_s: int, body: bytes) -> list[str]:
        """The level's command with the checking script (client/wrk-check.lua),
        the expected body its argument."""
        argv = self.command(url, load, duration_s)
        assert self.script is not None
        at = argv.index(str(self.script))
        argv[at] = str(self.script.with_name(CHECK_SCRIPT))
        return argv + ["--", body.decode("latin-1")]

    def check_parse(self, stdout: str, stderr: str) -> Answers:
        return check_parse(stdout, stderr)

    def distribution_command(self, url: str, load: Load, duration_s: int) -> list[str]:
        """The level's command with the script that also writes wrk's whole
        latency histogram from done() (client/wrk-histogram.lua): no hook per
        request, so the level runs as `command`'s does."""
        argv = self.command(url, load, duration_s)
        assert self.script is not None
        kept = self.script.with_name(HISTOGRAM_SCRIPT)   # in the run only where it is used
        if not os.path.lexists(kept):
            files.write_atomic(kept, SCRIPT.read_bytes() + b"\n" + histogram_budget()
                               + HISTOGRAM.read_bytes())
        argv[argv.index(str(self.script))] = str(kept)
        return argv

    def distribution(self, stdout: str) -> Histogram:
        """wrk's latency histogram, whole microseconds (its own resolution)."""
        return histogram.from_line(stdout, HISTOGRAM_LINE)

    def request(self, url: str) -> bytes:
        """wrk's request: the request line and Host, and the run's -H (captured:
        tests/test_answers.py; wrk writes its headers from a Lua table, in an
        order that varies from run to run)."""
        if self.options is None:
            raise ClientError("Wrk.prepare must run first")
        host, path = target(url)
        return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
                + ("" if self.options.keepalive else "Connection: close\r\n") + "\r\n").encode()


CLIENT = Wrk
