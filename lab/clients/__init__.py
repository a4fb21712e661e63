"""Load clients. Each one turns (url, concurrency, duration) into a command
and its output into a Level; the sweep runs the command pinned and measures
the client's own CPU."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class ClientError(RuntimeError):
    """The client's output could not be read: the message shows it."""


@dataclass(frozen=True)
class Level:
    """What the client measured at one concurrency level."""
    transactions: int
    successful: int
    failed: int
    availability_pct: float
    elapsed_s: float
    rate_rps: float
    resp_ms: float        # mean response time
    in_flight: float      # mean requests in flight as the client saw them
    longest_ms: float
    data_mb: float


class Client(Protocol):
    name: str

    def version(self) -> str: ...

    def prepare(self, run_dir: Path, keepalive: bool) -> dict[str, str]:
        """Write what the client needs into the run folder; returns its conditions."""
        ...

    def command(self, url: str, concurrency: int, duration_s: int) -> list[str]: ...

    def parse(self, stdout: str, stderr: str) -> Level: ...


def clients() -> dict[str, type]:
    from lab.clients.siege import Siege
    return {"siege": Siege}
