"""Where the lab's processes run: the one seam between a sweep and its topology.

A sweep, the verification, the probe and the reports never ask where a
process runs. They ask a `ServerHost` to start the server pinned to its
CPUs, sample its process tree, list what listens on a port and read its
host's facts; they ask a `ClientHost` to run the load client to its end and
say how much CPU it used. A `Placement` pairs one server host with one or
more client hosts, and says which address the server binds and where the
clients reach it; a `Topology` makes it from the settings.

A topology is one package here, its helpers inside it (or one module or
package in a lab/measure/topologies folder on PYTHONPATH: the package spans
them, pkgutil.extend_path), whose TOPOLOGY is a `Topology`: its name, how it
is chosen, and its steps (check, deps, needs_build, up, join, down, place);
what it leaves out does nothing. The lab finds it by itself, importing only
what stands directly here (never a topology's helpers, such as the ssh agent):
TOPOLOGY=<name> accepts it, `lab check` checks it, run-benchmark.sh sets it up
and down around the run. Found here:
  local   one host, loopback (the default)          lab/measure/topologies/local/
  netns   two network namespaces, a veth pair       lab/measure/topologies/netns/
  ssh     real hosts over OpenSSH (SERVER_HOST)      lab/measure/topologies/ssh/
  docker  each server in a compose.yaml container   lab/measure/topologies/docker/
docs/extending.md says how to add one.
"""
from __future__ import annotations

import importlib
import pkgutil
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from lab.host import procs, tcpstat
from lab.setup.params import ConfigError, Params
from lab.host.acceptq import Tally
from lab.host.procfs import TreeSample
from lab.record.series import Point
from lab.setup.servers import Server

T = TypeVar("T")
# The longest a client host waits for a shared start time (ClientHost.run_client's
# `at`): a clock set far ahead there cannot stall a level.
START_WAIT_MAX_S = 5.0
__path__ = pkgutil.extend_path(__path__, __name__)   # topologies kept outside the checkout


@dataclass(frozen=True)
class ClientRun:
    """One client run: its output, exit code, CPU (user+sys, children included) and wall time."""
    stdout: str
    stderr: str
    exit_code: int | None
    cpu_s: float
    wall_s: float
    host: str = "local"
    started: float | None = None     # wall-clock time it started there (several client hosts)
    # how long the client was seen stopped (SIGSTOP, a tracer) while it ran: it
    # sent nothing then (0.0 where it is not watched: a remote client host)
    stopped_s: float = 0.0
    # what was left in its cgroup outside its process group at its end (killed
    # with it: lab.host.cgroup), "comm (pid N)" each
    left: tuple[str, ...] = ()


class ClientHung(RuntimeError):
    """The client ran far past its time limit and was stopped."""


class ServerDied(RuntimeError):
    """The server exited while a client was loading it."""


class HostLost(RuntimeError):
    """A host stopped answering the lab (its connection broke): the message says which."""

class SetupError(RuntimeError):
    """`lab up` could not set the topology up (exit 1; the message says why)."""


class Started(Protocol):
    """A process a host started: its id there, whether it still runs, how to stop it."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def stop(self, grace: float = 10.0) -> int | None:
        """Stop its whole tree (TERM, then KILL after `grace` s); its exit code."""


class TreeSampler(Protocol):
    """Samples a server's process tree during one client run (a context manager):
    every member the sweep reads (lab.host.procfs.Sampler has them all)."""
    first: TreeSample | None
    last: TreeSample | None
    rss_peak_kb: int
    threads_peak: int
    own_cpu_s: float              # the sampler's own CPU time: the lab's cost
    memory_error: str             # why `last` has no PSS/private/shared memory ("": it has)
    points: list[Point]           # every sample, for the per-second series ([]: none kept)
    cgroup_mem_peak_kb: int | None    # a container's cgroup memory peak; None elsewhere
    queue: Tally                  # the accept queue at each sample (lab.host.acceptq)

    @property
    def cpu_s(self) -> float: ...

    @property
    def sys_s(self) -> float | None:
        """The kernel's part of cpu_s; None where it cannot be told."""

    def __enter__(self) -> TreeSampler: ...

    def __exit__(self, *exc: object) -> None: ...


class HostCounters(ABC):
    """What a server host and a client host both answer about themselves."""

    @abstractmethod
    def cpu_times(self, cpus: tuple[int, ...]) -> tuple[float, float]:
        """(busy, steal) seconds so far on these CPUs there."""

    @abstractmethod
    def time_wait_sockets(self) -> int:
        """TCP sockets in TIME_WAIT there."""

    @abstractmethod
    def facts(self) -> dict[str, object]:
        """The host's facts (lab.measure.hostinfo.host() there)."""


class ServerHost(HostCounters):
    """Where a server runs."""
    name = "server host"
    # the server has a network namespace of its own, which no client shares
    # (a netns, a container); False: the clients' may be its (Placement.tcp_shared)
    own_network = False

    @abstractmethod
    def start(self, argv: list[str], cwd: Path, env: dict[str, str], log: Path,
              cpus: tuple[int, ...], log_max: int | None = None) -> Started:
        """Start argv pinned to `cpus`, in a session of its own, stdout and stderr to
        `log`; with `log_max`, at most that many bytes of it kept (lab.host.logcap),
        where the topology can (a local process: TOPOLOGY=local, netns)."""

    @abstractmethod
    def run(self, argv: list[str], cwd: Path, env: dict[str, str], cpus: tuple[int, ...],
            timeout: float) -> tuple[int, str, str]:
        """Run a short command there to its end (a manifest's facts): (exit code, out, err)."""

    @abstractmethod
    def sampler(self, proc: Started, port: int | None = None) -> TreeSampler:
        """A sampler of `proc`'s tree for the length of one client run; with
        `port`, of the accept queue of what listens on it there too."""

    @abstractmethod
    def sample(self, proc: Started) -> TreeSample | None:
        """`proc`'s tree now (RSS, threads, CPU); None when it is gone."""

    @abstractmethod
    def listeners(self, port: int) -> list[procs.Listener]:
        """Every socket listening on `port` there (ss)."""

    @abstractmethod
    def somaxconn(self) -> int | None:
        """net.core.somaxconn there (the cap of every listen backlog)."""

    @abstractmethod
    def check_port_free(self, port: int, bind: str) -> None:
        """PortBusy if anything there listens on `port` (any address)."""

    def in_network(self, fn: Callable[[], T]) -> T:
        """fn() run where the server's sockets can be seen (the probe asks that
        kernel what a socket has not read yet). Here: in this process as is."""
        return fn()

    def wait_ready(self, proc: Started, host: str, port: int, timeout: float) -> float:
        """Seconds until `proc` accepts connections on host:port (NotReady if never)."""
        return procs.wait_ready(host, port, proc, timeout)

    def tcp_counters(self) -> dict[str, int] | None:
        """The kernel's TCP counters (lab.host.tcpstat) where the server's sockets
        are; None where they cannot be read."""
        return self.in_network(tcpstat.read_or_none)

    def own_pids(self, proc: Started) -> set[int] | None:
        """The processes that are `proc`'s own now (its tree, its cgroup), as the
        host's `listeners` name them; None where that cannot be told."""
        return None

    def left_over(self, proc: Started) -> list[dict[str, object]] | None:
        """After proc.stop(): what was still in its cgroup outside its process
        group (escaped it), killed with it, as {"pid", "comm"}; None where the
        lab keeps no cgroup of it (lab.host.cgroup.status(), another host)."""
        return None

    def start_details(self, proc: Started) -> dict[str, object]:
        """What a start's record keeps besides its PID and command (a container's id,
        image, limits); keys given here replace the record's own."""
        return {}

    def wait_port_released(self, port: int, bind: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.check_port_free(port, bind)
                return
            except procs.PortBusy:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


class ClientHost(HostCounters):
    """Where a load client runs."""
    name = "client host"

    @abstractmethod
    def run_client(self, argv: list[str], cpus: tuple[int, ...], env: dict[str, str],
                   out: Path, timeout: float, server_alive: Callable[[], bool],
                   at: float | None = None) -> ClientRun:
        """Run the client pinned to `cpus` to its end, stdout to `out` (stderr beside it,
        .err); ClientHung past `timeout`, ServerDied when `server_alive()` turns false.
        `at`: the wall-clock time (time.time()) to start it, for several client
        hosts started together; a host that gets it late starts at once."""

    def prepare(self, argv: list[str], env: dict[str, str]) -> None:
        """What run_client(argv) needs there, made ready beforehand (files
        copied), so that hosts started together are not held up by it."""

    def same_host_as(self, server: ServerHost) -> bool:
        """True when the client and the server share the machine's CPU counters."""
        return False


@dataclass
class Placement:
    """Where one run's processes are: a server host, its client hosts, and the
    addresses between them (what a `Topology` places)."""
    name: str                                   # local | netns | ssh | docker ...
    server: ServerHost
    clients: tuple[ClientHost, ...]
    bind: str                                   # where the server listens
    connect: str                                # where clients (and the lab) reach it
    summary: str                                # one line; its first word is the kind
    details: dict[str, Any] = field(default_factory=dict)   # what the manifest records

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "server_host": self.server.name,
                "client_hosts": [c.name for c in self.clients],
                "bind": self.bind, "connect": self.connect, **self.details}

    def cpu_times(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]
                  ) -> tuple[float, float]:
        """Busy and steal seconds over the CPUs the run uses, on every host it uses."""
        if all(c.same_host_as(self.server) for c in self.clients):
            return self.server.cpu_times(tuple(sorted(set(server_cpus) | set(client_cpus))))
        busy, steal = self.server.cpu_times(server_cpus)
        for c in self.clients:
            b, s = c.cpu_times(client_cpus)
            busy, steal = busy + b, steal + s
        return busy, steal

    def lab_cpus(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]) -> int:
        """How many CPUs cpu_times() counts over: the run's CPU allotment."""
        if all(c.same_host_as(self.server) for c in self.clients):
            return len(set(server_cpus) | set(client_cpus))
        return len(server_cpus) + len(client_cpus) * len(self.clients)

    def tcp_shared(self) -> bool:
        """The server's TCP counters (ServerHost.tcp_counters) count a client's
        sockets too: one network namespace on one host."""
        return not self.server.own_network and any(c.same_host_as(self.server)
                                                   for c in self.clients)

    def time_wait(self) -> int:
        """TIME_WAIT sockets on every host of the run (once per host)."""
        if all(c.same_host_as(self.server) for c in self.clients):
            return self.server.time_wait_sockets()
        return self.server.time_wait_sockets() + sum(c.time_wait_sockets()
                                                     for c in self.clients)


CHOSEN_BY = ("TOPOLOGY", "SERVER_HOST", "RUNTIME")


@runtime_checkable
class Topology(Protocol):
    """One kind of topology: a module's TOPOLOGY. Subclass it and write
    `place`; every other step has a default that does nothing."""
    name: ClassVar[str]          # its name in the manifest; TOPOLOGY=<name> when chosen so
    chosen_by: ClassVar[str]     # TOPOLOGY, SERVER_HOST (ssh) or RUNTIME (docker: the
                                 # setting keeps that name, lab.setup.params)
    summary: ClassVar[str]       # one line describing it (for the settings' help and docs)

    def place(self, params: Params) -> Placement:
        """The run's hosts and addresses (every step that runs servers or clients)."""
        ...

    def check(self, params: Params) -> None:
        """Refuse, with ConfigError (exit 2), what it cannot do here (`lab check`,
        before anything is built or started): root, tools, kernel support, hosts."""
        return None

    def deps(self, params: Params) -> int:
        """Install what it needs (`lab deps`): 0, or 2 with the steps printed."""
        return 0

    def needs_build(self, params: Params, server: Server) -> bool:
        """Whether `lab build` runs the server's own setup and build here."""
        return True

    def up(self, params: Params) -> None:
        """Set up what lasts the whole run (`lab up`): namespaces, links, an ssh
        master connection; SetupError (exit 1) when it cannot."""
        return None

    def join(self, params: Params) -> None:
        """Move this step to where the clients run, so that the lab's own
        connections (readiness, verification, the probe) cross the same link
        as the load (`lab probe`, `lab sweep`)."""
        return None

    def down(self, params: Params) -> None:
        """Undo `up`, whatever state it got to (`lab down`, also on failure and Ctrl-C)."""
        return None


def topologies() -> dict[str, Topology]:
    """Every topology found: the TOPOLOGY of each module or package directly in
    this package (a topology's own modules, inside its package, are not read)."""
    found: dict[str, Topology] = {}
    for info in pkgutil.iter_modules(__path__, __name__ + "."):
        value = vars(importlib.import_module(info.name)).get("TOPOLOGY")
        if not isinstance(value, Topology) or value.chosen_by not in CHOSEN_BY:
            raise TypeError(f"{info.name}.TOPOLOGY is not a lab.measure.topologies.Topology "
                            f"(chosen_by one of {', '.join(CHOSEN_BY)}); a topology's "
                            f"helpers belong inside its package")
        found[value.name] = value
    return found


def selectable() -> tuple[str, ...]:
    """The names TOPOLOGY accepts (ssh is chosen by SERVER_HOST, docker by RUNTIME)."""
    return tuple(sorted(n for n, t in topologies().items() if t.chosen_by == "TOPOLOGY"))


def chosen(params: Params) -> Topology:
    """The topology the settings choose (Params.topology: docker under
    RUNTIME=docker, ssh when SERVER_HOST is given, else TOPOLOGY's)."""
    name = params.topology
    found = topologies()
    if name not in found:
        raise ConfigError(f"topology {name} is not available in this version of the lab "
                          f"(found: {', '.join(sorted(found))})")
    return found[name]


def deps(params: Params) -> int:
    """`lab deps`: 0, or 2 with the steps."""
    return chosen(params).deps(params)


def needs_build(params: Params, server: Server) -> bool:
    """`lab build`: whether the server's own build runs (RUNTIME=docker: only
    where its image takes the artifact)."""
    return chosen(params).needs_build(params, server)


def current(params: Params) -> Placement:
    """The run's placement, as the chosen topology makes it."""
    return chosen(params).place(params)
