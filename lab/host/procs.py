"""Start, watch and stop the processes the lab runs.

Each one gets a session (process group) of its own, so that stopping it
stops everything it forked, and the environment marker LAB_RUN so that a
test can find anything the lab left behind. Where the host allows it, each
also runs in a cgroup v2 of its own (lab/host/cgroup.py), which holds what
leaves the group (setsid, an emptied environment): stopping it kills that
too, and says what it was. Each group (and cgroup) is also given to the
step's keeper (lab/host/keeper.py), which kills it if the step vanishes before
stopping it (SIGKILL, the OOM killer).
"""
from __future__ import annotations

import errno
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from lab.host import cgroup

MARKER = "LAB_RUN"
KEEPER_VARIABLE = "LAB_KEEPER"            # lab/host/keeper.py's TOKEN_VARIABLE


class PortBusy(RuntimeError):
    pass


class NotReady(RuntimeError):
    pass


def pinned(argv: list[str], cpus: tuple[int, ...]) -> list[str]:
    return ["taskset", "-c", ",".join(map(str, cpus)), *argv]


class Keeper:
    """This step's keeper (lab/host/keeper.py): started on first use, told about
    every process group the step starts and stops, and, through the end of
    its pipe, when the step is gone. One per process; threads share it."""

    _lock = threading.Lock()
    _proc: subprocess.Popen[bytes] | None = None
    _owner = 0

    @classmethod
    def token(cls) -> str:
        """The LAB_KEEPER value of this step's processes: its pid and start time."""
        return f"{os.getpid()}.{started_at(os.getpid())}"

    @classmethod
    def _send(cls, line: str) -> None:
        with cls._lock:
            if cls._proc is None or cls._owner != os.getpid():   # not a forked copy's
                script = Path(__file__).with_name("keeper.py")
                cls._proc = subprocess.Popen(
                    [sys.executable, "-S", str(script), cls.token()], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, cwd="/")
                cls._owner = os.getpid()
            assert cls._proc.stdin is not None
            try:
                cls._proc.stdin.write(line.encode() + b"\n")
                cls._proc.stdin.flush()
            except OSError:
                pass                       # the keeper was killed: nothing to tell

    @classmethod
    def watch(cls, pgid: int) -> None:
        cls._send(f"group {pgid}")

    @classmethod
    def cgroup(cls, pgid: int, path: Path) -> None:
        """The cgroup of group `pgid`: killed and removed with it if the step vanishes."""
        cls._send(f"cgroup {pgid} {path}")

    @classmethod
    def release(cls, pgid: int) -> None:
        if cls._proc is not None:
            cls._send(f"free {pgid}")

    @classmethod
    def undo(cls, argv: list[str]) -> None:
        """Run argv if the step vanishes (a container to remove)."""
        cls._send(f"undo {json.dumps(argv)}")

    @classmethod
    def done(cls, argv: list[str]) -> None:
        if cls._proc is not None:
            cls._send(f"done {json.dumps(argv)}")


def started_at(pid: int) -> int | None:
    """The process's start time (clock ticks after boot); None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[19])


# each started group's cgroup (lab.host.cgroup), by the group's id, until kill_group
_cgroups: dict[int, cgroup.Cgroup] = {}
_cgroups_lock = threading.Lock()


def start(argv: list[str], cwd: Path, env: dict[str, str], log: IO[bytes] | int,
          stdout: IO[bytes] | int | None = None) -> subprocess.Popen[bytes]:
    """Start argv in a new session (and a cgroup of its own where the host
    allows it), watched by the step's keeper; stdout to `stdout` (or the
    log), stderr to the log. kill_group ends it."""
    env = {**env, KEEPER_VARIABLE: Keeper.token()}
    if not cgroup.status():
        _executable(argv[0], cwd, env)      # as Popen would say it, not the shell
    group = cgroup.Cgroup.make()
    try:
        proc = subprocess.Popen(argv if group is None else group.wrap(argv), cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL,
                                stdout=log if stdout is None else stdout, stderr=log,
                                start_new_session=True)
    except BaseException:
        if group is not None:
            group.stop(0)
        raise
    if group is not None:
        with _cgroups_lock:
            _cgroups[proc.pid] = group
        Keeper.cgroup(proc.pid, group.path)
    Keeper.watch(proc.pid)
    return proc


def _executable(name: str, cwd: Path, env: dict[str, str]) -> None:
    """FileNotFoundError unless `name` runs (looked up in env's PATH, or from cwd)."""
    found = (name if os.access(cwd / name, os.X_OK) and (cwd / name).is_file() else None) \
        if "/" in name else shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


def stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> int | None:
    """SIGTERM the process group, SIGKILL it after `grace` seconds; returns the exit code."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue
    return proc.poll()


def run(argv: list[str], timeout: float, stdout: IO[bytes] | None = None,
        cwd: Path | None = None) -> tuple[int, bytes, bytes]:
    """argv to its end as a group of its own that the step's keeper watches
    (start): its exit code, standard output (unless `stdout` takes it) and
    error. A timeout (subprocess.TimeoutExpired) or an interrupt stops the
    whole group first: nothing it forked outlives the call (perf's `sleep`)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = start(argv, cwd or Path.cwd(), dict(os.environ), err,
                     stdout=out if stdout is None else stdout)
        try:
            code = proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                stop(proc, grace=2)
            kill_group(proc.pid)
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def kill_group(pgid: int) -> list[cgroup.Left]:
    """SIGKILL what is left of a process group (children that outlived their
    leader) and of its cgroup, which is removed; returns what was in the
    cgroup outside the group (escaped it: setsid), now killed."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    with _cgroups_lock:
        group = _cgroups.pop(pgid, None)
    left = group.stop(pgid) if group is not None else []
    Keeper.release(pgid)
    return left


def cgroup_pids(pgid: int) -> list[int]:
    """The processes in the cgroup of group `pgid` (started by start()); [] without one."""
    with _cgroups_lock:
        group = _cgroups.get(pgid)
    return group.pids() if group is not None else []


def carries(pid: int, token: str) -> bool:
    """Whether the process's environment has this step's LAB_KEEPER token
    (start() gives it to all it starts; a child that kept its environment has it)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{KEEPER_VARIABLE}={token}".encode() + b"\0" in f.read() + b"\0"
    except OSError:
        return False


def strangers(found: list["Listener"], own: set[int], token: str) -> list["Listener"]:
    """The listening sockets among `found` that a process outside `own` holds
    (one that does not carry this step's token either); a socket whose holder
    ss does not show (another user's, without root) counts as a stranger's."""
    return [s for s in found
            if not s.pids or any(p not in own and not carries(p, token) for p in s.pids)]


def holders(found: list["Listener"]) -> str:
    """'nginx (pid 12,13), python3 (pid 40)': who holds these sockets, as ss shows it."""
    said = sorted({f"{x.process} (pid {','.join(map(str, x.pids))})" if x.process
                   else "a process the lab cannot see (another user's)" for x in found})
    return ", ".join(said)


def shown(found: list["Listener"]) -> str:
    """'127.0.0.1:8080, [::1]:8080' as ss prints addresses."""
    return ", ".join(f"[{x.address}]:{x.port}" if ":" in x.address else f"{x.address}:{x.port}"
                     for x in found)


def busy_message(port: int, found: list["Listener"]) -> str:
    holders = sorted({f"{x.process} (pid {','.join(map(str, x.pids))})"
                      for x in found if x.process})
    held = f", held by {' '.join(holders)}" if holders else ""
    where = f" (listening on {shown(found)})" if found else ""
    return (f"port {port} is already in use{held}{where}: stop that process or choose "
            "another with PORT=")


def check_port_free(port: int, bind: str = "127.0.0.1") -> None:
    """Refuse a port that anything listens on, on any address of either family.

    Binding BIND alone is not enough: 127.0.0.1:PORT binds fine next to an
    IPv6-only listener on [::1]:PORT, yet a server that binds [::] (as JVMs
    do) then fails, and a client that resolves localhost to ::1 reaches the
    other process. The bind attempt stays for what ss does not list (a
    socket bound but not listening) and for hosts without ss.
    """
    found = listeners(port)
    if found:
        raise PortBusy(busy_message(port, found))
    refused = bind_error(bind, port)
    if refused is not None:
        raise PortBusy(busy_message(port, [])) from refused


def bind_error(bind: str, port: int) -> OSError | None:
    """Why binding `port` on address `bind` fails now (None: it binds), as the
    server would bind it (SO_REUSEADDR); the ssh agent asks it on its host."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((bind, port))
        except OSError as e:
            return e
    return None


def check_local_address(name: str, address: str) -> None:
    """ConfigError unless `address` is one of this host's (or every address):
    a server could never listen on it."""
    from lab.setup.params import ConfigError
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((address, 0))
        except OSError as e:
            if e.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                raise
            mine = host_addresses()
            raise ConfigError(f"{name}={address} is not an address of this host, so no server "
                              f"can listen on it (this host's: {', '.join(mine) or 'unknown'})"
                              ) from None


def host_addresses() -> list[str]:
    """This host's IP addresses (`ip -o addr`), best effort."""
    try:
        out = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split()[3].split("/")[0] for line in out.splitlines()
            if len(line.split()) > 3 and line.split()[2] in ("inet", "inet6")]


@dataclass(frozen=True)
class Listener:
    """One listening TCP socket, as `ss -ltn` shows it.

    `address` is the local address without brackets or %scope: 127.0.0.1,
    ::1, ::ffff:127.0.0.1 (127.0.0.1 on one of the JDK's IPv6 sockets) or *
    (every address of both families). `backlog` is ss's Send-Q, which for a
    listening socket is its accept backlog as the kernel capped it
    (net.core.somaxconn). `process` (the first name) and `pids` say who
    holds it when ss shows them (-p, as root): nginx's master and workers
    share each of its sockets."""
    address: str
    port: int
    backlog: int
    process: str | None = None
    pids: tuple[int, ...] = ()


_USER = re.compile(r'\("((?:[^"\\]|\\.)*)",pid=(\d+)')


def parse_listeners(text: str) -> list[Listener]:
    """The LISTEN lines of `ss -Hltn` (or -Hltnp) output:
    `LISTEN Recv-Q Send-Q Local:Port Peer:Port [users:(("name",pid=N,fd=M),...)]`."""
    found = []
    for line in text.splitlines():
        fields = line.split(None, 5)
        if not fields or fields[0] != "LISTEN":
            continue
        if len(fields) < 5 or not fields[2].isdigit():
            raise ValueError(f"unexpected ss line: {line!r}")
        host, _, port = fields[3].rpartition(":")
        if not port.isdigit() or not host:
            raise ValueError(f"unexpected local address in ss line: {line!r}")
        # "[::1]", "127.0.0.1%lo", "[fe80::1]%eth0": the bare address.
        host = host.split("%", 1)[0].removeprefix("[").removesuffix("]")
        users = _USER.findall(fields[5]) if len(fields) > 5 else []
        found.append(Listener(address=host, port=int(port), backlog=int(fields[2]),
                              process=users[0][0] if users else None,
                              pids=tuple(sorted({int(pid) for _, pid in users}))))
    return found


def listeners(port: int) -> list[Listener]:
    """Every TCP socket listening on `port` (all addresses), from `ss`, with
    the processes holding it: all of them as root; without root, -p shows
    only this user's (another user's socket has none)."""
    try:
        out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True,
                             text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"cannot list the sockets listening on port {port} with ss "
                           f"(Debian package iproute2): {e}") from e
    return [found for found in parse_listeners(out) if found.port == port]


def somaxconn() -> int | None:
    """net.core.somaxconn: the kernel caps every listen backlog at it (None if unreadable)."""
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        return None


def same_address(listening: str, bind: str) -> bool:
    """Whether a socket listening on `listening` (as in Listener.address) is
    bound to exactly `bind`. The JDK listens on IPv6 sockets, so 127.0.0.1
    shows as ::ffff:127.0.0.1, and "every address" as *, which also serves
    IPv4: * is what BIND=0.0.0.0 or BIND=:: gives a JVM."""
    want = _plain(bind)
    if listening == "*":
        return want is not None and want.is_unspecified
    got = _plain(listening)
    return got is not None and got == want


def _plain(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address without a %scope, an IPv4-mapped IPv6 address as IPv4; None if not one."""
    try:
        addr = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def connect_host(bind: str) -> str:
    """Where a client reaches a server bound to `bind`."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bind, bind)


class Polled(Protocol):
    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...


def wait_ready(host: str, port: int, proc: Polled, timeout: float) -> float:
    """Wait until something accepts on host:port (the address clients use);
    returns the seconds it took."""
    start_t = time.monotonic()
    while time.monotonic() - start_t < timeout:
        if proc.poll() is not None:
            raise NotReady(f"exited with code {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return time.monotonic() - start_t
        except OSError:       # a fine poll: a server is often up in a few ms (nginx),
            time.sleep(0.01)  # and every start waited out a 0.1 s sleep here
    raise NotReady(f"did not accept connections on port {port} within {timeout:.0f}s")


def wait_port_released(port: int, bind: str = "127.0.0.1", timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            check_port_free(port, bind)
            return
        except PortBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"
