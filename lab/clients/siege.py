"""Siege in benchmark mode, with the lab's own rc file and JSON output.

Siege's `response_time` is printed in seconds with two decimals (0.00 at
loopback speeds); its `concurrency` is the sum of response times over the
elapsed time, so concurrency / transaction rate gives the mean response
time at full precision, and it is the in-flight count of Little's law.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import ClassVar

from lab import hostinfo
from lab.clients import ClientError, Level, Load, Options

RC_TEMPLATE = Path(__file__).resolve().parents[2] / "client" / "siegerc"
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
    dest.write_text(text)
    return dest


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
    return Level(
        transactions=int(data["transactions"]),
        successful=int(data["successful_transactions"]),
        failed=int(data["failed_transactions"]),
        availability_pct=float(data["availability"]),
        elapsed_s=float(data["elapsed_time"]),
        rate_rps=rate,
        resp_ms=in_flight / rate * 1000 if rate > 0 else 0.0,
        in_flight=in_flight,
        longest_ms=float(data["longest_transaction"]) * 1000,
        data_mb=float(data["data_transferred"]),
    )


class Siege:
    name: ClassVar[str] = "siege"
    axis: ClassVar[str] = "concurrency"
    help: ClassVar[str] = "closed loop, C simulated users, as published"
    packages: ClassVar[dict[str, str]] = {"siege": "siege"}
    cross_check: ClassVar[str] = "wrk"

    def __init__(self) -> None:
        self.rc: Path | None = None

    def install(self, cache: Path) -> int:
        return 0                                # its Debian package is all

    def version(self) -> str:
        return hostinfo.probe_version(*VERSION) or "not installed"

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        """Write the run's rc once; every server of the run then uses that copy."""
        rc = run_dir / "siegerc"
        self.rc = rc if rc.exists() else write_rc(rc, options.keepalive)
        return {"tool": "siege", "version": self.version(), "rc": self.rc.name,
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


CLIENT = Siege
