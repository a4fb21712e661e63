"""Vegeta, open loop: requests sent at a fixed rate whatever the server does.

A closed-loop client waits for a response before sending the next request,
so a slow server also slows the load and hides its own queueing
(coordinated omission). Vegeta sends on a schedule and, with no cap on its
workers, starts another worker rather than wait for a busy one.

The command is one shell pipeline, so that the sweep's wait4 rusage of the
shell counts both vegeta processes and the shell's stdout is the report:

    printf 'GET URL\\n' | vegeta attack -rate=R/s ... | vegeta report -type=json

`report` decodes the results while the attack runs instead of after it (with
`attack -output FILE` then `report FILE`), so the command lasts as long as
the attack: the sweep divides the server's and the client's CPU by that
time. Its decoding runs on the client's CPUs, and is counted there.
The raw results are not kept: about 230 bytes a request (body and headers
included), 46 MB for 10 s at 20,000 req/s, and a `tee` to write them would
be client CPU too.

The target goes in on stdin rather than as a file: the URL is known only in
command(), and the recorded command then says exactly what was attacked.
The asked rate is written to stderr ("offered_rps=R") so that the saved
output alone says what was offered.

Counting, as siege and wrk count: a transaction is a response (vegeta's
status code 0 is a request that got none: refused, reset, timed out);
2xx/3xx are successful; failed is every other request.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, ClassVar

from lab import hostinfo, paths
from lab.clients import ClientError, Level, Load, Options

MIB = 1024 * 1024        # siege's data_transferred unit
NS_PER_MS = 1e6
OFFERED = re.compile(r"^offered_rps=(\d+)$", re.M)


def report_json(stdout: str) -> dict[str, Any] | None:
    start = stdout.find("{")
    try:
        data = json.loads(stdout[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        return None
    ok = (isinstance(data, dict) and isinstance(data.get("requests"), int)
          and isinstance(data.get("latencies"), dict)
          and isinstance(data.get("status_codes"), dict))
    return data if ok else None


def successes(codes: dict[str, int]) -> int:
    return sum(n for code, n in codes.items() if code.isdigit() and 200 <= int(code) < 400)


def parse(stdout: str, stderr: str) -> Level:
    data = report_json(stdout)
    if data is None or data["requests"] == 0:
        # a report of nothing: the attack never ran (bad flag, killed), report read no results
        lines = [line for line in stderr.splitlines() if line.strip() and not OFFERED.match(line)]
        raise ClientError("vegeta printed no results: " + (" | ".join(lines[-5:]) or "no output"))
    requests = int(data["requests"])
    codes = {str(k): int(v) for k, v in data["status_codes"].items()}
    transactions = requests - codes.get("0", 0)
    successful = successes(codes)
    failed = requests - successful
    # vegeta's `duration` ends at the last request sent and `wait` at its response:
    # responses are counted over both, as vegeta's own throughput is
    elapsed = (int(data["duration"]) + int(data["wait"])) / 1e9
    lat = data["latencies"]
    mean_ms = lat["mean"] / NS_PER_MS
    offered = OFFERED.search(stderr)
    return Level(
        transactions=transactions,
        successful=successful,
        failed=failed,
        availability_pct=100 * successful / requests,
        elapsed_s=elapsed,
        rate_rps=transactions / elapsed if elapsed > 0 else 0.0,
        resp_ms=mean_ms,
        # Little's law over every request: the mean latency includes the failed ones
        in_flight=requests / elapsed * mean_ms / 1000 if elapsed > 0 else 0.0,
        longest_ms=lat["max"] / NS_PER_MS,
        data_mb=int(data["bytes_in"]["total"]) / MIB,
        p50_ms=lat["50th"] / NS_PER_MS,
        p90_ms=lat["90th"] / NS_PER_MS,
        p99_ms=lat["99th"] / NS_PER_MS,
        offered_rps=float(offered.group(1)) if offered else None,
    )


class Vegeta:
    name: ClassVar[str] = "vegeta"
    axis: ClassVar[str] = "rate"

    def __init__(self, cache: Path | None = None) -> None:
        self.binary = paths.go_bin(cache or paths.cache_dir()) / "vegeta"
        self.options: Options | None = None

    def version(self) -> str:
        return hostinfo.tool_version("vegeta", str(self.binary)) or "not installed"

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        """Nothing to write: the target goes in on stdin (see the module's notes)."""
        self.options = options
        return {"tool": "vegeta", "version": self.version(),
                "connection": "keep-alive" if options.keepalive else "close",
                "threads": str(options.threads), "binary": str(self.binary)}

    def attack_flags(self, load: Load, duration_s: int) -> list[str]:
        if load.rate < 0 or load.concurrency < 0:
            raise ClientError(f"vegeta: a negative load {load}")
        if load.rate:
            flags = [f"-rate={load.rate}/s"]
        elif load.concurrency:
            # as fast as C workers go (calibration); vegeta requires the cap with rate 0
            flags = ["-rate=0"]
        else:
            raise ClientError("vegeta needs a rate, or a concurrency to run as fast as it can")
        if load.concurrency:
            flags += [f"-workers={load.concurrency}", f"-max-workers={load.concurrency}"]
        assert self.options is not None
        return flags + [f"-duration={duration_s}s",
                        f"-keepalive={'true' if self.options.keepalive else 'false'}"]

    def command(self, url: str, load: Load, duration_s: int) -> list[str]:
        if self.options is None:
            raise ClientError("Vegeta.prepare must run first")
        flags = self.attack_flags(load, duration_s)
        vegeta = shlex.quote(str(self.binary))
        # GOMAXPROCS: CLIENT_THREADS, as wrk's -t (Go's default is one per allowed CPU)
        script = (f"export GOMAXPROCS={self.options.threads}; "
                  + (f"echo offered_rps={load.rate} >&2; " if load.rate else "")
                  + f"printf 'GET %s\\n' {shlex.quote(url)} | "
                  + f"{vegeta} attack {' '.join(flags)} | {vegeta} report -type=json")
        return ["sh", "-c", script]

    def parse(self, stdout: str, stderr: str) -> Level:
        return parse(stdout, stderr)
