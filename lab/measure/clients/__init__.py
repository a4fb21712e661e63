"""Load clients: one file each under lab/measure/clients/.

A client turns (url, load, duration) into a command and the command's output
into a Level; the sweep runs the command pinned and measures the client's own
CPU (wait4 rusage, its children included), so `client-bound` means the same
for every client. A closed-loop client (siege, wrk) varies concurrency; an
open-loop client (vegeta) varies the offered rate.

Adding a client is one file: a module here (or in a lab/measure/clients folder on
PYTHONPATH: the package spans them, pkgutil.extend_path) whose CLIENT is a
class with what `Client` lists: its name, axis, help line, the Debian
packages it runs from, what it installs besides (a build into the lab
cache), its version probe, and how it makes its command and reads its
output. The lab then finds it by itself: CLIENT=<name> accepts it, `lab deps`
installs it, the manifest records its version, `make calibrate` measures it,
and `make reproduce` pairs it with its cross_check client.
docs/extending.md says more.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol, runtime_checkable

from lab.measure import hostinfo
from lab.record.histogram import Histogram
from lab.record.level import Answers, Level
from lab.setup.params import LOAD_AXES

__path__ = pkgutil.extend_path(__path__, __name__)   # clients kept outside the checkout


class ClientError(RuntimeError):
    """The client's output could not be read: the message shows it."""


@dataclass(frozen=True)
class Load:
    """What the client is asked to keep up."""
    concurrency: int = 0   # connections/users kept busy (closed loop); 0: the client decides
    rate: int = 0          # offered requests/s (open loop); 0: as fast as it can


@dataclass(frozen=True)
class Options:
    """The run's client settings (KEEPALIVE, CLIENT_THREADS, CONNECTIONS)."""
    keepalive: bool
    threads: int
    connections: int = 0   # CONNECTIONS: the most an open-loop client keeps; 0: no cap


class Client(Protocol):
    name: ClassVar[str]    # what CLIENT= names it by
    axis: ClassVar[str]    # "concurrency" or "rate": what a sweep of this client varies
    help: ClassVar[str]    # one line for `make help` and the settings table
    packages: ClassVar[dict[str, str]]   # command it runs: Debian package (`lab deps`)
    cross_check: ClassVar[str]           # the client `make reproduce` checks a study's
                                         # findings with besides this one ("": none)

    def __init__(self) -> None: ...

    def install(self, cache: Path) -> int:
        """What it needs beyond `packages` (a build into the lab cache), done
        unless done already: 0, or 2 with the steps printed."""
        ...

    def version(self) -> str:
        """Its version as it says it ("not installed" when it cannot be run)."""
        ...

    def prepare(self, run_dir: Path, options: Options) -> dict[str, str]:
        """Write what the client needs into the run folder; returns its conditions."""
        ...

    def command(self, url: str, load: Load, duration_s: int) -> list[str]: ...

    def parse(self, stdout: str, stderr: str) -> Level: ...


class Packaged:
    """A client that runs from its Debian package alone (siege, wrk): nothing
    to install besides, its version from `version_probe` (command, pattern)."""
    version_probe: ClassVar[tuple[list[str], str]]

    def install(self, cache: Path) -> int:
        return 0

    def version(self) -> str:
        return hostinfo.probe_version(*self.version_probe) or "not installed"


@runtime_checkable
class PerSecond(Protocol):
    """What a client may give besides `Client`'s members (vegeta does): its
    responses in each second of a run, read from its output, for the level's
    per-second series (lab.record.series). A client without it gives none."""

    def per_second(self, stdout: str) -> list[float]: ...


@runtime_checkable
class Asks(Protocol):
    """What a client may give besides `Client`'s members (wrk, siege and
    vegeta do): its request for a URL, byte for byte as it sends it (after
    prepare: the run's connection mode), so that the verification sends the
    load client's own request (lab.measure.verify.as_client) and the size of
    its answer is what the client's byte count is checked against
    (lab.analyse.answers). A client without it is verified with the lab's own
    request."""

    def request(self, url: str) -> bytes: ...


@runtime_checkable
class Checks(Protocol):
    """What a client may give besides `Client`'s members (wrk and vegeta do): a
    command that loads as `command` does and also checks every successful
    answer's status and exact body (`body`), for a check slice at the level's load after
    each level (lab.measure.sweep), and its counts read from its output. The
    measured level runs without the check: it costs the client CPU on every
    answer (docs/methodology.md)."""

    def check_command(self, url: str, load: Load, duration_s: int, body: bytes) -> list[str]: ...

    def check_parse(self, stdout: str, stderr: str) -> Answers: ...


@runtime_checkable
class Distributes(Protocol):
    """What a client may give besides `Client`'s members (wrk does): a command
    that loads as `command` does and also writes the client's whole latency
    distribution at its end, at no cost while the level runs, and that
    distribution read from its output (lab.record.histogram; ValueError
    saying why when it gave none, or only part). Several client hosts run it,
    and the level's percentiles are those of their distributions merged; a
    client without it (siege keeps none) gives the worst host's, a bound."""

    def distribution_command(self, url: str, load: Load, duration_s: int) -> list[str]: ...

    def distribution(self, stdout: str) -> Histogram: ...


@runtime_checkable
class DistributesAfter(Protocol):
    """What a `Distributes` client may give besides (vegeta does): a command to
    run on the same host after the level, outside its measurement, whose
    output `distribution` reads (vegeta's results, kept by the level's command
    in a file that this one reads and removes); None when the level's output
    names no such file."""

    def distribution_after(self, stdout: str, stderr: str) -> list[str] | None: ...


def target(url: str) -> tuple[str, str]:
    """A URL's Host header value and its path (with the query), as clients send them."""
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    return parts.netloc, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def clients() -> dict[str, type[Client]]:
    """Every client found: the CLIENT of each module of this package, by name."""
    found: dict[str, type[Client]] = {}
    for info in pkgutil.iter_modules(__path__, __name__ + "."):
        cls = vars(importlib.import_module(info.name)).get("CLIENT")
        if cls is None:
            continue
        lacking = [m for m in ("name", "axis", "help", "packages", "cross_check", "install",
                               "version", "prepare", "command", "parse") if not hasattr(cls, m)]
        if not isinstance(cls, type) or lacking or getattr(cls, "axis") not in LOAD_AXES:
            raise TypeError(f"{info.name}.CLIENT is not a lab.measure.clients.Client"
                            + (f" (it lacks {', '.join(lacking)})" if lacking else ""))
        client: type[Client] = cls
        found[client.name] = client
    return dict(sorted(found.items()))


def axes() -> dict[str, str]:
    """Each client's swept axis, for settings validation."""
    return {name: cls.axis for name, cls in clients().items()}


def described() -> str:
    """Each client's help line, for `make help` and the settings table."""
    return "; ".join(f"{name}: {cls.help}" for name, cls in clients().items())


def host_tools() -> dict[str, str | None]:
    """The host's TOOLS' versions (lab.measure.hostinfo) and each load client's
    ("not installed": None), each probed anew. The probes run side by side:
    one after another they took 0.6 s of each run (mvn -v starts a JVM)."""
    from concurrent.futures import ThreadPoolExecutor   # here: every step imports this module
    found = [cls() for cls in clients().values()]
    with ThreadPoolExecutor(max_workers=len(hostinfo.TOOLS) + len(found)) as pool:
        tools = {name: pool.submit(hostinfo.tool_version, name) for name in hostinfo.TOOLS}
        loads = {c.name: pool.submit(c.version) for c in found}
        versions = {name: f.result() for name, f in tools.items()}
        for name, f in loads.items():
            version = f.result()
            versions[name] = None if version == "not installed" else version
    return dict(sorted(versions.items()))
