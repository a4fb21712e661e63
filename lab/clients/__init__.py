"""Load clients: one file each under lab/clients/.

A client turns (url, load, duration) into a command and the command's output
into a Level; the sweep runs the command pinned and measures the client's own
CPU (wait4 rusage, its children included), so `client-bound` means the same
for every client. A closed-loop client (siege, wrk) varies concurrency; an
open-loop client (vegeta) varies the offered rate. Adding a client is one
file here and one line in `clients()`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol


class ClientError(RuntimeError):
    """The client's output could not be read: the message shows it."""


@dataclass(frozen=True)
class Load:
    """What the client is asked to keep up."""
    concurrency: int = 0   # connections/users kept busy (closed loop); 0: the client decides
    rate: int = 0          # offered requests/s (open loop); 0: as fast as it can


@dataclass(frozen=True)
class Options:
    """The run's client settings (KEEPALIVE, CLIENT_THREADS)."""
    keepalive: bool
    threads: int


@dataclass(frozen=True)
class Level:
    """What the client measured at one level."""
    transactions: int      # responses received, successful or not
    successful: int        # 2xx/3xx responses
    failed: int            # socket errors, timeouts and non-2xx/3xx responses
    availability_pct: float
    elapsed_s: float
    rate_rps: float        # responses per second (achieved throughput)
    resp_ms: float         # mean response time
    in_flight: float       # mean requests in flight (rate x mean response time)
    longest_ms: float
    data_mb: float
    p50_ms: float | None = None     # latency percentiles, where the client gives them
    p90_ms: float | None = None
    p99_ms: float | None = None
    offered_rps: float | None = None   # open loop: the rate it was asked to offer


class Client(Protocol):
    name: ClassVar[str]
    axis: ClassVar[str]    # "concurrency" or "rate": what a sweep of this client varies

    def version(self) -> str: ...

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        """Write what the client needs into the run folder; returns its conditions."""
        ...

    def command(self, url: str, load: Load, duration_s: int) -> list[str]: ...

    def parse(self, stdout: str, stderr: str) -> Level: ...


def clients() -> dict[str, type[Client]]:
    from lab.clients.siege import Siege
    from lab.clients.vegeta import Vegeta
    from lab.clients.wrk import Wrk
    return {"siege": Siege, "wrk": Wrk, "vegeta": Vegeta}


def axes() -> dict[str, str]:
    """Each client's swept axis, for settings validation."""
    return {name: cls.axis for name, cls in clients().items()}
