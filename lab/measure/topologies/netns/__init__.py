"""TOPOLOGY=netns: two emulated hosts on this machine.

The server and the client each get a network namespace of their own, joined
by a veth pair with an address at each end; nothing else is in either
namespace but its loopback. The server runs in its namespace and listens on
its end of the pair only; the client runs in the other namespace and
reaches it across the pair. With LINK (and LINK_DELAY) each end's egress is
shaped by tc: a token bucket (tbf) at LINK, and under it a netem delay of
LINK_DELAY, so that a request and its answer each cross the emulated wire.

Both namespaces share this machine's CPUs, /proc and process ids: CPU
pinning, the process-tree sampler and the client's rusage work as with
TOPOLOGY=local. What is per namespace (listeners, somaxconn, TIME_WAIT, the
net sysctls) is asked inside the namespace it belongs to.

Everything is named after PORT, so every step derives the same names:
  namespaces  lab-s<PORT> (server), lab-c<PORT> (client)
  veth ends   the same names, one in each namespace (never in this host's)
  addresses   a /30 out of 10.200.0.0/14 picked by PORT: .1 server, .2 client
LAB_NETNS_PREFIX replaces `lab` (tests use their own). `up` removes
leftovers of these names first, `down` removes them whatever state they are
in, and stops any process still inside them: only the lab starts processes
there.

The lab's own connections (readiness, verification, the robustness probe)
leave from the client's namespace too: `join` moves the `probe` and
`sweep` steps there (setns(2) on the step's main thread).
"""
from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lab.measure import hostinfo
from lab.host import netenter, procfs, procs
from lab.record import files
from lab.setup.params import ConfigError, Params
from lab.setup.paths import cache_dir
from lab.measure.topologies import Placement, ServerHost, Topology
from lab.measure.topologies.local import LocalClientHost, LocalServerHost

T = TypeVar("T")

PREFIX_ENV = "LAB_NETNS_PREFIX"
DEFAULT_NETNS_PREFIX = "lab"
PREFIX_TEXT = re.compile(r"[a-z][a-z0-9]{0,4}")       # names stay <= 15 chars (IFNAMSIZ)
NETWORK = ipaddress.IPv4Network("10.200.0.0/14")      # 4 addresses per port, 1024..65535
NETNS_DIR = Path("/run/netns")
MTU = 1500                                            # Ethernet's, veth's default
WIRE_FRAME = MTU + 14                                 # what tc counts per full packet
TX_QUEUE = 1000                                       # packets: a NIC's default txqueuelen
NETEM_LIMIT = 10000                                   # packets netem may hold in delay
TOOLS = {"ip": "iproute2", "tc": "iproute2", "ss": "iproute2", "unshare": "util-linux",
         "taskset": "util-linux"}


class NetnsError(ConfigError):
    """The emulated hosts cannot be made or used here; the message says what to do."""


# ---------------------------------------------------------------- names and addresses

@dataclass(frozen=True)
class Names:
    """Everything TOPOLOGY=netns makes, derived from PORT and the prefix."""
    prefix: str
    port: int

    @property
    def server_ns(self) -> str:
        return f"{self.prefix}-s{self.port}"

    @property
    def client_ns(self) -> str:
        return f"{self.prefix}-c{self.port}"

    @property
    def server_dev(self) -> str:
        """The veth end inside the server's namespace."""
        return self.server_ns

    @property
    def client_dev(self) -> str:
        return self.client_ns

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        base = int(NETWORK.network_address) + 4 * self.port
        return ipaddress.IPv4Network((base, 30))

    @property
    def server_addr(self) -> str:
        return str(self.subnet.network_address + 1)

    @property
    def client_addr(self) -> str:
        return str(self.subnet.network_address + 2)

    def sides(self) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
        """(namespace, device, address) of the server's side, then the client's."""
        return ((self.server_ns, self.server_dev, self.server_addr),
                (self.client_ns, self.client_dev, self.client_addr))


def prefix() -> str:
    value = os.environ.get(PREFIX_ENV, "").strip() or DEFAULT_NETNS_PREFIX
    if not PREFIX_TEXT.fullmatch(value):
        raise NetnsError(f"{PREFIX_ENV}={value!r}: expected 1 to 5 lower-case letters or "
                         "digits, starting with a letter (the names must fit 15 characters)")
    return value


def names(params: Params) -> Names:
    return Names(prefix(), params.port)


# ---------------------------------------------------------------- the link's shaping

UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12,
         "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9}


def rate_bits(text: str) -> float:
    """A tc rate (1gbit, 100mbit, 10mbps: bytes) in bits per second."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([a-z]+)", text)
    if not m or m.group(2) not in UNITS:
        raise NetnsError(f"LINK={text!r}: expected a tc rate such as 1gbit or 100mbit")
    return float(m.group(1)) * UNITS[m.group(2)]


def qdiscs(link: str, delay: str) -> list[list[str]]:
    """The tc qdisc arguments for one end's egress (after `tc qdisc add dev DEV`).

    tbf holds the rate: a bucket of 1 ms of the rate (at least 16 KiB), a
    queue of TX_QUEUE full frames (a NIC's default transmit queue), beyond
    which packets are dropped as a full NIC queue would. netem, under it,
    holds every packet for `delay` (one way: a round trip gets it twice)."""
    if not link:
        return []
    byte_rate = rate_bits(link) / 8
    burst = max(int(byte_rate / 1000), 16 * 1024)
    shaped = [["root", "handle", "1:", "tbf", "rate", link, "burst", str(burst),
               "limit", str(TX_QUEUE * WIRE_FRAME)]]
    if delay:
        shaped.append(["parent", "1:1", "handle", "10:", "netem", "delay", delay,
                       "limit", str(NETEM_LIMIT)])
    return shaped


# ---------------------------------------------------------------- running things in a namespace

def _setns(namespace: str) -> None:
    """Move the calling thread (only it) into the named network namespace."""
    try:
        netenter.enter(str(NETNS_DIR / namespace))
    except FileNotFoundError:
        raise NetnsError(f"network namespace {namespace} does not exist: `python3 -m lab up` "
                         "makes it (run-benchmark.sh does)") from None
    except OSError as e:
        raise NetnsError(f"cannot enter network namespace {namespace}: "
                         f"{os.strerror(e.errno or 0)} (TOPOLOGY=netns needs root)") from None


def inside(namespace: str, fn: Callable[[], T]) -> T:
    """fn() run by a thread of its own inside `namespace` (lab.host.netenter):
    the sockets it opens and what it reads under /proc/sys/net and
    /proc/thread-self/net are that namespace's; the caller stays where it was."""
    def there() -> T:
        _setns(namespace)
        return fn()
    return netenter.in_thread(there, f"netns {namespace}")


def exec_in(namespace: str) -> tuple[str, ...]:
    """The prefix that runs a command inside `namespace` (ip execs it: same pid)."""
    return ("ip", "netns", "exec", namespace)


def time_wait_here() -> int:
    """TCP sockets in TIME_WAIT in the calling thread's namespace (IPv4 and IPv6)."""
    return procfs.time_wait_sockets("/proc/thread-self/net")


def sysctls_here() -> dict[str, str | None]:
    """The net sysctls the lab records (hostinfo.SYSCTLS), in the calling thread's namespace."""
    return {name: hostinfo.sysctl(name) for name in hostinfo.SYSCTLS}


# ---------------------------------------------------------------- the hosts

class NetnsServerHost(LocalServerHost):
    """The server's namespace: commands run through `ip netns exec`; sockets,
    somaxconn and TIME_WAIT are that namespace's; /proc and CPUs this host's."""

    def __init__(self, namespace: str) -> None:
        super().__init__(prefix=exec_in(namespace))
        self.namespace = namespace
        self.name = f"{namespace} (network namespace on this host)"

    def listeners(self, port: int) -> list[procs.Listener]:
        flags = "-Hltnp" if os.geteuid() == 0 else "-Hltn"
        try:
            out = subprocess.run([*self.prefix, "ss", flags, f"sport = :{port}"],
                                 capture_output=True, text=True, timeout=10, check=True).stdout
        except (OSError, subprocess.SubprocessError) as e:
            raise RuntimeError(f"cannot list the sockets listening on port {port} in "
                               f"{self.namespace} with ss: {e}") from e
        return [found for found in procs.parse_listeners(out) if found.port == port]

    def somaxconn(self) -> int | None:
        return inside(self.namespace, procs.somaxconn)

    def check_port_free(self, port: int, bind: str) -> None:
        found = self.listeners(port)
        if found:
            raise procs.PortBusy(f"in {self.namespace}: {procs.busy_message(port, found)}")

        def try_bind() -> None:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((bind, port))

        try:
            inside(self.namespace, try_bind)
        except OSError as e:
            raise procs.PortBusy(f"in {self.namespace}: cannot bind {bind}:{port} ({e})") from e

    def time_wait_sockets(self) -> int:
        return inside(self.namespace, time_wait_here)

    def facts(self) -> dict[str, object]:
        return inside(self.namespace, hostinfo.host)     # the sysctls are the namespace's

    def in_network(self, fn: Callable[[], T]) -> T:
        return inside(self.namespace, fn)

    own_network = True


class NetnsClientHost(LocalClientHost):
    """The client's namespace: the client runs through `ip netns exec` (it execs,
    so wait4's rusage is still the client's own). Same machine as the server:
    CPU counters are shared, TIME_WAIT is not."""

    def __init__(self, namespace: str) -> None:
        super().__init__(prefix=exec_in(namespace))
        self.namespace = namespace
        self.name = f"{namespace} (network namespace on this host)"

    def time_wait_sockets(self) -> int:
        return inside(self.namespace, time_wait_here)

    def facts(self) -> dict[str, object]:
        return inside(self.namespace, hostinfo.host)

    def same_host_as(self, server: ServerHost) -> bool:
        return isinstance(server, NetnsServerHost)


@dataclass
class NetnsPlacement(Placement):
    """Two namespaces on one machine: CPU time counted once, TIME_WAIT in each."""
    names: Names | None = None

    def time_wait(self) -> int:
        return self.server.time_wait_sockets() + sum(c.time_wait_sockets() for c in self.clients)

    def describe(self) -> dict[str, Any]:
        """What the manifest records, with the kernel's own view of the link
        (tc qdisc show, net sysctls) when the namespaces exist."""
        described = super().describe()
        n = self.names
        assert n is not None
        live: dict[str, Any] = {}
        for side, (ns, dev, _addr) in zip(("server", "client"), n.sides()):
            if exists(ns):
                shown = subprocess.run(["tc", "-n", ns, "qdisc", "show", "dev", dev],
                                       capture_output=True, text=True, timeout=10)
                live[side] = {"qdisc": shown.stdout.strip().splitlines(),
                              "sysctl": inside(ns, sysctls_here)}
        described["live"] = live
        return described


def topology(params: Params) -> Placement:
    n = names(params)
    shaping = qdiscs(params.link, params.link_delay)
    link = (f"{params.link}" + (f", {params.link_delay} each way" if params.link_delay else "")
            if params.link else "unshaped")
    details: dict[str, Any] = {
        "names": {"server_namespace": n.server_ns, "client_namespace": n.client_ns,
                  "server_veth": n.server_dev, "client_veth": n.client_dev,
                  "subnet": str(n.subnet), "server_address": n.server_addr,
                  "client_address": n.client_addr},
        "link": {"rate": params.link or None, "delay_one_way": params.link_delay or None,
                 "tc": [f"tc -n {ns} qdisc add dev {dev} {' '.join(q)}"
                        for ns, dev, _ in n.sides() for q in shaping],
                 "mtu": MTU}}
    return NetnsPlacement(
        name="netns", server=NetnsServerHost(n.server_ns),
        clients=(NetnsClientHost(n.client_ns),), bind=n.server_addr, connect=n.server_addr,
        summary=(f"netns (two network namespaces on one host, {n.client_addr} -> "
                 f"{n.server_addr} over a veth pair, link {link}; server and client "
                 "pinned to disjoint CPUs)"),
        details=details, names=n)


# ---------------------------------------------------------------- check, up, join, down

def run(argv: list[str], what: str) -> str:
    """Run an ip/tc command; NetnsError with its message if it fails."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NetnsError(f"{what}: {' '.join(argv)}: {e}") from None
    if out.returncode != 0:
        raise NetnsError(f"{what}: `{' '.join(argv)}` failed: "
                         f"{(out.stderr or out.stdout).strip()}")
    return out.stdout


def exists(namespace: str) -> bool:
    return (NETNS_DIR / namespace).exists()


def pids_in(namespace: str) -> list[int]:
    """Processes in the namespace (`ip netns pids`); none when it does not exist."""
    if not exists(namespace):
        return []
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True,
                         timeout=30)
    return [int(p) for p in out.stdout.split() if p.isdigit() and int(p) != os.getpid()]


def kernel_has(argv: list[str]) -> tuple[bool, str]:
    """Whether the kernel does what argv asks, tried in a throwaway network
    namespace (unshare --net) that disappears with the command."""
    out = subprocess.run(["unshare", "--net", "--", *argv], capture_output=True, text=True,
                         timeout=30)
    return out.returncode == 0, (out.stderr or out.stdout).strip()


def check(params: Params) -> None:
    """Before anything is built or started (`lab check`): exit 2 unless the
    namespaces, the veth pair and the shaping can be made here."""
    n = names(params)
    if os.geteuid() != 0:
        raise NetnsError("TOPOLOGY=netns makes network namespaces, a veth pair and tc "
                         "qdiscs, which needs root: run as root (sudo make bench ...), "
                         "or use TOPOLOGY=local")
    missing = sorted({pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None})
    if missing:
        raise NetnsError(f"TOPOLOGY=netns needs {', '.join(missing)}: apt-get install "
                         f"{' '.join(missing)}")
    if params.bind not in ("127.0.0.1", n.server_addr):
        raise NetnsError(f"BIND={params.bind}: TOPOLOGY=netns sets the server's address "
                         f"itself ({n.server_addr} in {n.server_ns}); drop BIND")
    ok, why = kernel_has(["ip", "link", "add", "lab-a", "type", "veth", "peer", "name",
                          "lab-b"])
    if not ok:
        raise NetnsError(f"this kernel cannot make a veth pair ({why}): TOPOLOGY=netns "
                         "needs CONFIG_VETH (modprobe veth)")
    for q in qdiscs(params.link, params.link_delay):
        kind = q[q.index("handle") + 2]
        ok, why = kernel_has(["tc", "qdisc", "add", "dev", "lo", "root",
                              *q[q.index("handle") + 2:]])
        if not ok:
            setting = "LINK_DELAY" if kind == "netem" else "LINK"
            raise NetnsError(f"{setting}: this kernel has no tc qdisc {kind} ({why}): "
                             f"load it (modprobe sch_{kind}) or drop {setting}")
    in_use(n)


def in_use(n: Names) -> None:
    """NetnsError when the names belong to another live run on this PORT (its
    owner, from the state file `up` wrote, still runs) or when a process lives
    in one of the namespaces: not leftovers to remove."""
    owner = live_owner(n)
    if owner is not None:
        raise NetnsError(f"network namespaces {n.server_ns} and {n.client_ns} belong to a "
                         f"run still going (pid {owner}): choose another PORT, or wait for it")
    for ns in (n.server_ns, n.client_ns):
        pids = pids_in(ns)
        if pids:
            raise NetnsError(f"network namespace {ns} is in use by pid "
                             f"{', '.join(map(str, pids[:5]))}: another TOPOLOGY=netns run "
                             f"on PORT={n.port}? Choose another PORT; if it is a leftover, "
                             f"TOPOLOGY=netns PORT={n.port} python3 -m lab down removes it")


def state_file(n: Names) -> Path:
    """Who made the namespaces (`up`'s caller: run-benchmark.sh), for as long as they exist."""
    return cache_dir() / "netns" / f"{n.server_ns}.json"


def started(pid: int) -> int | None:
    """The process's start time (clock ticks after boot); None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


def live_owner(n: Names) -> int | None:
    """The pid of the run that made these namespaces, if it is another one and still runs."""
    try:
        data = json.loads(state_file(n).read_text())
        pid, start = int(data["owner_pid"]), int(data["owner_start"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getppid() or not exists(n.server_ns):
        return None
    return pid if started(pid) == start else None


def up(params: Params) -> None:
    """Make the two namespaces and the link between them (leftovers of the
    same names removed first), shape it, and check that it carries TCP."""
    check(params)
    n = names(params)
    remove(n)
    for ns in (n.server_ns, n.client_ns):
        run(["ip", "netns", "add", ns], "making the namespaces")
    # Each end is born in its namespace: nothing of ours ever sits in this host's.
    run(["ip", "link", "add", n.server_dev, "netns", n.server_ns, "mtu", str(MTU), "type",
         "veth", "peer", "name", n.client_dev, "netns", n.client_ns, "mtu", str(MTU)],
        "making the veth pair")
    this_host = sysctls_here()
    for ns, dev, addr in n.sides():
        run(["ip", "-n", ns, "addr", "add", f"{addr}/{n.subnet.prefixlen}", "dev", dev],
            "addressing the link")
        run(["ip", "-n", ns, "link", "set", "lo", "up"], "raising loopback")
        run(["ip", "-n", ns, "link", "set", dev, "up"], "raising the link")
        # Each emulated host starts with this host's values of the sysctls the
        # lab records, so that netns and local runs differ by the link only.
        inside(ns, lambda: write_sysctls(this_host))
        for q in qdiscs(params.link, params.link_delay):
            run(["tc", "-n", ns, "qdisc", "add", "dev", dev, *q], "shaping the link")
    check_link(n)
    owner = os.getppid()
    state = state_file(n)
    state.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(state, json.dumps({"owner_pid": owner, "owner_start": started(owner),
                                          "link": params.link,
                                          "link_delay": params.link_delay}) + "\n")


def write_sysctls(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is not None:
            path = Path("/proc/sys", *name.split("."))
            try:
                path.write_text(value.replace(" ", "\t") + "\n")
            except OSError as e:
                raise NetnsError(f"cannot set {name}={value} in a namespace: {e}") from e


def check_link(n: Names, timeout: float = 5.0) -> None:
    """A TCP connection from the client's address to the server's, across the pair."""
    def listen() -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((n.server_addr, 0))
        s.listen(1)
        return s

    server = inside(n.server_ns, listen)
    try:
        target = server.getsockname()

        def connect() -> None:
            deadline = time.monotonic() + timeout
            while True:                         # the pair may take a moment to come up
                try:
                    with socket.create_connection(target, timeout=1.0,
                                                  source_address=(n.client_addr, 0)):
                        return
                except OSError as e:
                    if time.monotonic() > deadline:
                        raise NetnsError(f"the link {n.client_ns} -> {n.server_ns} does "
                                         f"not carry TCP to {target[0]}:{target[1]}: {e}"
                                         ) from None
                    time.sleep(0.1)

        inside(n.client_ns, connect)
    finally:
        server.close()


STEP_NAME = b"lab-step"                               # what `ps` shows for a joined step
PR_SET_NAME = 15


def join(params: Params) -> None:
    """Move this step's main thread into the client's namespace: the lab's own
    connections (readiness, verification, the probe) then cross the link as
    the client's do. Threads and commands it starts later begin there too.
    The step renames itself (STEP_NAME) so that `down` tells it from leftovers."""
    if os.geteuid() != 0:
        raise NetnsError("TOPOLOGY=netns needs root")
    _setns(names(params).client_ns)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, ctypes.c_char_p(STEP_NAME), 0, 0, 0)


def steps_in(namespace: str) -> list[int]:
    """The lab's own steps (joined to the namespace) still running there."""
    found = []
    for pid in pids_in(namespace):
        try:
            if Path(f"/proc/{pid}/comm").read_bytes().strip() == STEP_NAME:
                found.append(pid)
        except OSError:
            continue
    return found


def stop_inside(namespace: str, grace: float = 5.0) -> list[int]:
    """TERM, then KILL, whatever still runs in the namespace; the pids found."""
    found = pids_in(namespace)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in found:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while pids_in(namespace) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not pids_in(namespace):
            break
    return found


def remove(n: Names, steps_grace: float = 40.0) -> None:
    """Remove the namespaces (their veth ends go with them) and anything named
    like them in this host's namespace; never fails on what is not there.

    A step of the lab still inside (Ctrl-C or a kill reached it too) is given
    `steps_grace` to stop its server and client and save what it measured;
    then whatever runs in either namespace is stopped."""
    deadline = time.monotonic() + steps_grace
    while steps_in(n.client_ns) and time.monotonic() < deadline:
        time.sleep(0.2)
    for ns in (n.server_ns, n.client_ns):
        stop_inside(ns)
        if exists(ns):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=30)
    for dev in (n.server_dev, n.client_dev):       # a pair half-made in this host
        if Path("/sys/class/net", dev).exists():
            subprocess.run(["ip", "link", "delete", dev], capture_output=True, timeout=30)


def down(params: Params) -> None:
    """Undo `up`, whatever state it reached (also after a failure or Ctrl-C)."""
    if os.geteuid() != 0:
        return                                  # nothing can have been made
    n = names(params)
    remove(n)
    state_file(n).unlink(missing_ok=True)
    left = [ns for ns in (n.server_ns, n.client_ns) if exists(ns)]
    if left:
        raise NetnsError(f"could not remove network namespace {', '.join(left)}: "
                         f"ip netns delete {' '.join(left)}")


class Netns(Topology):
    name = "netns"
    chosen_by = "TOPOLOGY"
    summary = ("two emulated hosts: a network namespace each, joined by a veth pair "
               "(root; LINK shapes it)")

    # each step is this module's function of the same name (place: topology())
    place = staticmethod(topology)
    check = staticmethod(check)
    up = staticmethod(up)
    join = staticmethod(join)
    down = staticmethod(down)


TOPOLOGY = Netns()
