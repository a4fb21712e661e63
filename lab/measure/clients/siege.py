"""Siege in benchmark mode, with the lab's own rc file and JSON output.

Siege's `response_time` is printed in seconds with two decimals (0.00 at
loopback speeds); its `concurrency` is the sum of response times over the
elapsed time, so concurrency / transaction rate gives the mean response
time at full precision, and it is the in-flight count of Little's law.
"""
from __future__ import annotations

import json
import platform
import re
from pathlib import Path
from typing import ClassVar

from lab.setup.paths import ROOT
from lab.record import failures as kinds
from lab.measure.clients import ClientError, Load, Options, Packaged, target
from lab.record import files
from lab.record.level import Level
from lab.record.failures import Failure

RC_TEMPLATE = ROOT / "client" / "siegerc"
VERSION = (["siege", "--version"], r"SIEGE\s+(\S+)")     # its version probe
FIELDS = ("transactions", "availability", "elapsed_time", "data_transferred",
          "transaction_rate", "concurrency", "successful_transactions",
          "failed_transactions", "longest_transaction")


def write_rc(dest: Path, keepalive: bool) -> Path:
    text = RC_TEMPLATE.read_text()
    connection = "keep-alive" if keepalive else "close"
    text, n = re.subn(r"(?m)^connection = .*$", f"connection = {connection}", text)
    if n != 1:
        raise ClientError(f"{RC_TEMPLATE} must have exactly one 'connection =' line")
    files.write_atomic(dest, text)
    return dest


MIB = 1024 * 1024        # data_transferred's unit (its bodies' bytes)
ROUNDING_MB = 0.005      # it prints data_transferred with two decimals


ERROR_LINE = re.compile(r"^\[(error|alert|fatal)\]\s*(.*)$")
SILENT = ("siege printed no error line (it prints none for a connection reset or closed "
          "before the answer, an empty answer or a 5xx, and lines for only some of its "
          "connect failures)")
# Siege ends a run, silently and with exit 0, once this many connections
# failed (its `failures` setting, which client/siegerc leaves at the default)
GIVES_UP = 1024
GAVE_UP = ("siege gives up after {failures:,} failed connections (its `failures` setting) "
           "and says nothing: {failed:,} failed")
STATUS = ("siege: answers of 400 or more (it counts them as transactions, not failures, "
          "and does not say which status)")


def failures(failed: int, errors: int, stderr: str) -> tuple[Failure, ...]:
    """Siege's failed count by the kind its error lines say, one line a
    failure; failures without a line are `unanswered` (see SILENT); `errors`
    answers of 400 or more, a non-2xx count without its status."""
    lines: dict[str, int] = {}
    for line in stderr.splitlines():
        m = ERROR_LINE.match(line.strip())
        if m:
            words = f"siege: {m.group(2)}"
            lines[words] = lines.get(words, 0) + 1
    found = []
    budget = failed
    for words, n in sorted(lines.items(), key=lambda kv: -kv[1]):
        n = min(n, budget)                  # more lines than failures: never more than failed
        if n:
            found.append(Failure(kinds.kind_of(words), n, words))
            budget -= n
    if budget:
        found.append(Failure("unanswered", budget, SILENT))
    if errors:
        found.append(Failure("status", errors, STATUS))
    return tuple(found)


def parse(stdout: str, stderr: str) -> Level:
    start = stdout.find("{")
    try:
        data = json.loads(stdout[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not all(k in data for k in FIELDS):
        errors = [line for line in stderr.splitlines() if line.strip()][-5:]
        raise ClientError("siege printed no statistics: " + (" | ".join(errors) or "no output"))
    rate = float(data["transaction_rate"])
    in_flight = float(data["concurrency"])
    transactions, successful = int(data["transactions"]), int(data["successful_transactions"])
    # Siege's failures are requests without an answer; its answers of 400 or
    # more are transactions but not successful: both are the lab's failures
    failed, status = int(data["failed_transactions"]), max(0, transactions - successful)
    return Level(
        transactions=transactions,
        successful=successful,
        failed=failed + status,
        availability_pct=float(data["availability"]),
        elapsed_s=float(data["elapsed_time"]),
        rate_rps=rate,
        resp_ms=in_flight / rate * 1000 if rate > 0 else 0.0,
        in_flight=in_flight,
        longest_ms=float(data["longest_transaction"]) * 1000,
        data_mb=float(data["data_transferred"]),
        failures=failures(failed, status, stderr),
        stopped=GAVE_UP.format(failures=GIVES_UP, failed=failed) if failed >= GIVES_UP else "",
        counted="body", counted_slack=ROUNDING_MB * MIB,
    )


class Siege(Packaged):
    name: ClassVar[str] = "siege"
    axis: ClassVar[str] = "concurrency"
    help: ClassVar[str] = "closed loop, C simulated users, as published"
    packages: ClassVar[dict[str, str]] = {"siege": "siege"}
    version_probe: ClassVar[tuple[list[str], str]] = VERSION
    cross_check: ClassVar[str] = "wrk"

    def __init__(self) -> None:
        self.rc: Path | None = None
        self.keepalive = True
        self.said_version = ""

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        """Write the run's rc once; every server of the run then uses that copy."""
        rc = run_dir / "siegerc"
        self.rc = rc if rc.exists() else write_rc(rc, options.keepalive)
        self.keepalive, self.said_version = options.keepalive, self.version()
        return {"tool": "siege", "version": self.said_version, "rc": self.rc.name,
                "connection": "keep-alive" if options.keepalive else "close"}

    def command(self, url: str, load: Load, duration_s: int) -> list[str]:
        if self.rc is None:
            raise ClientError("Siege.prepare must run first")
        if load.rate or load.concurrency < 1:
            raise ClientError("siege keeps a number of users busy: give a concurrency, not a rate")
        return ["siege", "-R", str(self.rc), "-b", f"-t{duration_s}S",
                f"-c{load.concurrency}", url]

    def parse(self, stdout: str, stderr: str) -> Level:
        return parse(stdout, stderr)

    def request(self, url: str) -> bytes:
        """Siege's request with client/siegerc's settings: Accept, its
        Accept-Encoding (`*` for the rc's empty one), its User-Agent (its
        version and the platform it was built for) and the run's Connection
        (captured: tests/test_answers.py)."""
        if self.rc is None:
            raise ClientError("Siege.prepare must run first")
        host, path = target(url)
        agent = f"Mozilla/5.0 (pc-{platform.machine()}-linux-gnu) Siege/{self.said_version}"
        return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\n"
                f"Accept-Encoding: *\r\nUser-Agent: {agent}\r\nConnection: "
                f"{'keep-alive' if self.keepalive else 'close'}\r\n\r\n").encode()


CLIENT = Siege
