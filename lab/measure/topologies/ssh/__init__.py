"""SERVER_HOST=user@host (TOPOLOGY ssh): the server on a real host over
OpenSSH, the client here or on CLIENT_HOST="user@host ...".

The steps, top-down:
  lab check   each host answers ssh (your config and keys, never a prompt) and has
              python3 3.9+, taskset, ss, rsync, the CPUs asked for, what the chosen
              servers run with (java, nginx) and the client tool; else exit 2 naming it
  lab up      one master connection per host (ControlMaster; every later ssh rides
              on it), then rsync of what runs there into REMOTE_DIR: lab/, client/,
              the servers' folders with their builds, the cache parts a build
              names (the Ada servers' Debian 11 root); then the address the server
              binds is checked there, and the hosts' facts saved for later steps
  lab probe/sweep
              the server starts there pinned (taskset) in an ssh session of its own
              whose output is its log here; its tree is sampled from that host's
              /proc by the lab's agent (lab/measure/topologies/ssh/agent.py) over the master;
              clients on client hosts run through the agent, which reports their
              rusage; every start is noted in a file so that `down` can stop it
  lab down    what a step left running is stopped (by its process id, checked
              against the run's LAB_RUN marker), remote run folders removed,
              master connections closed: after success, failure and Ctrl-C

State across steps (separate processes) lives in the lab cache, under ssh/:
the hosts' facts from `up` and the starts not yet stopped. Control sockets
are derived from the settings, under /tmp/labssh-<uid>/ (short: a socket
path has a limit of about 100 characters).

The package's modules, by role: session.py (how a host is reached, the
agent's session), ship.py (what is copied there, paths and environment
rewritten), remote.py (the server and clients run there), agent.py (the
lab's helper there, run as a script, never imported here), this one (the
topology: check, up, down, the hosts' state across steps).
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.measure import deps
from lab.setup import paths
from lab.host import procs
from lab.record import files
from lab.setup.params import ConfigError, Params
from lab.measure.topologies import ClientHost, HostLost, Placement, Topology
from lab.measure.topologies.local import LocalClientHost
from lab.measure.topologies.ssh.remote import Host, Registry, SshClientHost, SshServerHost
from lab.measure.topologies.ssh.session import AGENT, SshLink, Remote, key, last_line, unreachable
from lab.measure.topologies.ssh.ship import (BUILD_TOOLS, ROOT, chosen_servers, client_tool,
                                             ship_to)

PYTHON_MIN = (3, 9)


# ---------------------------------------------------------------- the topology

def local_identity() -> tuple[str, str]:
    """This host's boot id and network namespace (as the agent reports a host's)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    try:
        netns = os.readlink("/proc/self/ns/net")
    except OSError:
        netns = ""
    return boot, netns


@dataclass
class SshPlacement(Placement):
    """Hosts on one machine (same boot id) share CPU counters; on one network
    stack (and namespace), TIME_WAIT sockets: each is counted once."""
    identity: dict[int, tuple[str, str]] = field(default_factory=dict)   # id(host): (boot, netns)

    def _who(self, host: object) -> tuple[str, str]:
        return self.identity.get(id(host), (f"host-{id(host)}", ""))

    def _machines(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]
                  ) -> dict[str, tuple[Callable[[tuple[int, ...]], tuple[float, float]], set[int]]]:
        groups: dict[str, tuple[Callable[[tuple[int, ...]], tuple[float, float]], set[int]]] = {}
        hosts: list[tuple[object, Callable[[tuple[int, ...]], tuple[float, float]],
                          tuple[int, ...]]] = [(self.server, self.server.cpu_times, server_cpus)]
        hosts += [(c, c.cpu_times, client_cpus) for c in self.clients]
        for host, reader, cpus in hosts:
            boot = self._who(host)[0]
            if boot in groups:
                groups[boot][1].update(cpus)
            else:
                groups[boot] = (reader, set(cpus))
        return groups

    def cpu_times(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]
                  ) -> tuple[float, float]:
        busy = steal = 0.0
        for reader, cpus in self._machines(server_cpus, client_cpus).values():
            b, s = reader(tuple(sorted(cpus)))
            busy, steal = busy + b, steal + s
        return busy, steal

    def lab_cpus(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]) -> int:
        return sum(len(cpus) for _, cpus in self._machines(server_cpus, client_cpus).values())

    def tcp_shared(self) -> bool:
        return any(self._who(c) == self._who(self.server) for c in self.clients)

    def time_wait(self) -> int:
        seen: dict[tuple[str, str], Callable[[], int]] = {
            self._who(self.server): self.server.time_wait_sockets}
        for host in self.clients:
            seen.setdefault(self._who(host), host.time_wait_sockets)
        return sum(count() for count in seen.values())


@dataclass(frozen=True)
class SshPlan:
    """Where things go, from the settings alone."""
    params: Params
    id: str

    @staticmethod
    def of(params: Params) -> SshPlan:
        return SshPlan(params, key(params.ssh_config, params.server_host,
                                " ".join(params.client_hosts), params.remote_dir, str(ROOT),
                                str(paths.cache_dir())))

    @property
    def dests(self) -> list[str]:
        return list(dict.fromkeys([self.params.server_host, *self.params.client_hosts]))

    def link(self, dest: str) -> SshLink:
        return SshLink.to(dest, self.params)

    def role(self, dest: str) -> str:
        return "SERVER_HOST" if dest == self.params.server_host else "CLIENT_HOST"

    @property
    def state_file(self) -> Path:
        return paths.cache_dir() / "ssh" / f"{self.id}.json"

    @property
    def registry(self) -> Registry:
        return Registry(paths.cache_dir() / "ssh" / f"{self.id}.started")

    def base(self) -> str:
        """REMOTE_DIR as the remote shell reads it (relative: under the home)."""
        given = self.params.remote_dir.removeprefix("~/").removeprefix("~")
        if given:
            return given
        checkout = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
        return f".cache/polyglot-lab/{checkout}-{key(str(ROOT), str(paths.cache_dir()))[:8]}"


def load_state(plan: SshPlan) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(plan.state_file.read_text())
    except (OSError, ValueError):
        raise ConfigError(f"SERVER_HOST={plan.params.server_host}: the ssh hosts are not set "
                          "up for this step: `python3 -m lab up` does it (run-benchmark.sh "
                          "runs it before the run)") from None
    return data


def remote_of(data: dict[str, Any]) -> Remote:
    return Remote(dest=data["dest"], base=data["base"], python=data["python"],
                  boot_id=data["boot_id"], netns=data["netns"], cpus=tuple(data["cpus"]),
                  uid=int(data["uid"]), hostname=data["hostname"])


SPLIT = ("each level's concurrency or rate is shared among the client hosts (the first "
         "hosts one more); rates and counts are summed, mean latency weighted by responses, "
         "percentiles merged from each host's latency distribution (wrk, vegeta: "
         "<client>-<level>.h<i>.hist) or else the worst host's, a bound (siege); client CPU "
         "and client-bound are per host (<server>/client-hosts.jsonl)")


def topology(params: Params) -> Placement:
    plan = SshPlan.of(params)
    state = load_state(plan)
    hosts = {d: remote_of(h) for d, h in state["hosts"].items()}
    server = SshServerHost(hosts[params.server_host], plan.link(params.server_host),
                           plan.registry, {k for s in chosen_servers(params) for k in s.env})
    clients: tuple[ClientHost, ...] = tuple(
        SshClientHost(hosts[d], plan.link(d)) for d in params.client_hosts) or \
        (LocalClientHost(),)
    identity = {id(server): (server.remote.boot_id, server.remote.netns)}
    for c in clients:
        identity[id(c)] = ((c.remote.boot_id, c.remote.netns) if isinstance(c, Host)
                           else local_identity())
    where = "here" if not params.client_hosts else " ".join(params.client_hosts)
    several = len(params.client_hosts) > 1
    return SshPlacement(
        name="ssh", server=server, clients=clients, bind=state["bind"],
        connect=state["connect"],
        summary=(f"ssh (server on {params.server_host} at {state['connect']}; "
                 f"client{'s' * several} {'on ' if params.client_hosts else ''}{where})"),
        details={"ssh_config": params.ssh_config or "(ssh's own)",
                 "bind_from": state["bind_from"],
                 "remote_folders": {d: h.base for d, h in hosts.items()},
                 "shipped": state.get("shipped", {}),
                 **({"load_split": SPLIT} if several else {})},
        identity=identity)


# ---------------------------------------------------------------- lab check

def needs(params: Params) -> dict[str, dict[str, str]]:
    """Per host: command -> Debian package it needs there."""
    base = {"python3": "python3", "taskset": "util-linux", "rsync": "rsync"}
    server = {**base, "ss": "iproute2"}
    for s in chosen_servers(params):
        server.update({c: p for c, p in s.requires.items() if c not in BUILD_TOOLS})
    want = {params.server_host: server}
    tool = client_tool(params)
    for d in params.client_hosts:
        want[d] = {**want.get(d, {}), **base, **({} if tool else {params.client: params.client})}
    return want


PREFLIGHT = r"""
echo "uid=$(id -u)"
for c in {commands}; do
  if command -v "$c" >/dev/null 2>&1; then echo "have=$c"; else echo "lack=$c"; fi
done
python3 -c 'import os, sys; print("python=%d.%d" % sys.version_info[:2]); print("cpus=" + ",".join(map(str, sorted(os.sched_getaffinity(0)))))' 2>/dev/null || true
"""


def preflight(link: SshLink, role: str, want: dict[str, str], cpus: tuple[int, ...]) -> list[str]:
    """What the host lacks (empty: nothing); ConfigError when ssh cannot reach it."""
    script = PREFLIGHT.format(commands=" ".join(shlex.quote(c) for c in want))
    try:
        out = link.run(script, timeout=40)
    except HostLost as e:
        raise unreachable(role, link, str(e)) from None
    if out.returncode == 255:
        raise unreachable(role, link, last_line(out.stderr) or "ssh exited with code 255")
    facts: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        k, _, v = line.partition("=")
        facts.setdefault(k.strip(), []).append(v.strip())
    if "uid" not in facts:
        raise unreachable(role, link, f"the preflight script did not run (exit "
                          f"{out.returncode}: {last_line(out.stderr)})")
    problems = []
    python = facts.get("python", [""])[0]
    # python3 counts as there when it runs (a wrapper on PATH may not)
    lacking = [c for c in want if c in facts.get("lack", []) or (c == "python3" and not python)]
    if lacking:
        packages = sorted({want[c] for c in lacking})
        problems.append(f"lacks {', '.join(lacking)} (Debian: apt-get install "
                        f"{' '.join(packages)})")
    if python:
        major, minor = (int(x) for x in python.split("."))
        if (major, minor) < PYTHON_MIN:
            problems.append(f"has Python {python}; the lab's agent needs "
                            f"{'.'.join(map(str, PYTHON_MIN))} or newer")
    have = {int(c) for c in facts.get("cpus", [""])[0].split(",") if c}
    missing = sorted(set(cpus) - have) if have else []
    if missing:
        what = "SERVER_CPUS" if role == "SERVER_HOST" else "CLIENT_CPUS"
        problems.append(f"has no CPU {','.join(map(str, missing))} for {what} (usable there: "
                        f"{','.join(map(str, sorted(have)))})")
    return problems


def check(params: Params) -> None:
    """`lab check`: every host reachable and fit, before anything is built."""
    plan = SshPlan.of(params)
    if deps.ensure({"ssh": "openssh-client", "rsync": "rsync"}) != 0:   # installs as root
        raise ConfigError("SERVER_HOST needs ssh and rsync on this host")
    if not params.client_hosts:
        missing = sorted(set(params.client_cpus) - os.sched_getaffinity(0))
        if missing:
            raise ConfigError(f"CLIENT_CPUS: CPU {','.join(map(str, missing))} does not exist "
                              f"here, where the client runs (usable: "
                              f"{','.join(map(str, sorted(os.sched_getaffinity(0))))})")
    want = needs(params)
    problems = []
    for dest in plan.dests:
        role = plan.role(dest)
        cpus = params.server_cpus if dest == params.server_host else params.client_cpus
        if dest == params.server_host and dest in params.client_hosts:
            cpus = tuple(sorted(set(params.server_cpus) | set(params.client_cpus)))
        for problem in preflight(plan.link(dest), role, want[dest], cpus):
            problems.append(f"{role}={dest} {problem}")
    if problems:
        raise ConfigError("; ".join(problems))


# ---------------------------------------------------------------- lab up / down

def hello(link: SshLink, role: str, base: str) -> dict[str, Any]:
    out = link.run(f"cd {shlex.quote(base)} && exec python3 root/{AGENT} hello", timeout=60)
    try:
        data: dict[str, Any] = json.loads(out.stdout)
    except ValueError:
        raise ConfigError(f"{role}={link.dest}: the lab's agent did not run there: "
                          f"{last_line(out.stderr) or out.stdout[:200]}") from None
    return data


def server_address(params: Params, link: SshLink) -> tuple[str, str, str]:
    """(bind, connect, why): where the server listens there and clients reach it."""
    out = subprocess.run(["ssh", *(["-F", link.config] if link.config else []), "-G", "--",
                          link.dest], capture_output=True, text=True, timeout=30)
    name = next((line.split(None, 1)[1] for line in out.stdout.splitlines()
                 if line.startswith("hostname ")), "")
    try:
        addr = str(ipaddress.ip_address(name))
        how = f"the HostName ssh uses for {link.dest} (ssh -G)"
    except ValueError:
        try:
            addr = str(socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)[0][4][0])
        except (OSError, IndexError):
            raise ConfigError(f"SERVER_HOST={link.dest}: its host name {name!r} does not "
                              "resolve here; give BIND=<its address>") from None
        how = f"{name}, the HostName ssh uses for {link.dest}, resolved here"
    given = ipaddress.ip_address(params.bind)
    if not given.is_loopback:                  # BIND given for this host: as asked
        connect = addr if given.is_unspecified else params.bind
        return params.bind, connect, "BIND"
    return addr, addr, how


def up(params: Params) -> None:
    """Open the masters, ship what runs there, check the server's address, save the facts."""
    plan = SshPlan.of(params)
    hosts: dict[str, dict[str, Any]] = {}
    shipped: dict[str, list[str]] = {}
    servers = chosen_servers(params)
    for dest in plan.dests:
        link, role = plan.link(dest), plan.role(dest)
        failed = link.open_master()
        if failed:
            raise unreachable(role, link, failed)
        made = link.run(f"mkdir -p {shlex.quote(plan.base())} && cd {shlex.quote(plan.base())} "
                        "&& pwd -P")
        if made.returncode != 0 or not made.stdout.strip():
            raise ConfigError(f"{role}={dest}: cannot make the lab's folder {plan.base()} "
                              f"there: {last_line(made.stderr)}; set REMOTE_DIR")
        base = made.stdout.strip().splitlines()[-1]
        what = ship_to(params, link, base, dest == params.server_host, servers, dest)
        shipped[dest] = what
        facts = hello(link, role, base)
        if tuple(facts["python"][:2]) < PYTHON_MIN:
            raise ConfigError(f"{role}={dest}: Python {facts['python']} there; the lab's agent "
                              f"needs {'.'.join(map(str, PYTHON_MIN))} or newer")
        hosts[dest] = {"dest": dest, "base": base, "python": "python3", **{
            k: facts[k] for k in ("boot_id", "netns", "cpus", "uid", "hostname")}}
    server_link = plan.link(params.server_host)
    bind, connect, how = server_address(params, server_link)
    state = {"hosts": hosts, "bind": bind, "connect": connect, "bind_from": how,
             "shipped": shipped, "opened": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    plan.state_file.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(plan.state_file, json.dumps(state, indent=2) + "\n")
    server = SshServerHost(remote_of(hosts[params.server_host]), server_link, plan.registry)
    try:
        server.check_port_free(params.port, bind)     # PortBusy: exit 2, nothing started
    except procs.PortBusy as e:
        raise procs.PortBusy(f"SERVER_HOST={params.server_host}: {e} ({how})") from None


def down(params: Params) -> None:
    """Stop whatever a step left running there, remove the run folders there,
    close the masters. Never fails: says what it could not do."""
    plan = SshPlan.of(params)
    try:
        hosts = json.loads(plan.state_file.read_text()).get("hosts", {})
    except (OSError, ValueError):
        hosts = {}
    for entry in plan.registry.running():
        dest, pid, since = entry["dest"], int(entry["pid"]), entry.get("since")
        if dest not in hosts or since is None:
            continue
        # the agent stops its session only if its leader is still the process
        # the lab started (the id may have been given to another since)
        agent = f"{hosts[dest]['base']}/root/{AGENT}"
        try:
            out = plan.link(dest).run(shlex.join(["python3", agent, "stop", str(pid), str(since),
                                                  str(entry["run"])]), timeout=60)
            if '"killed"' in out.stdout:
                print(f"topology: stopped what a step left running on {dest} (pid {pid})",
                      file=sys.stderr)
            elif out.returncode != 0:
                print(f"warning: could not stop pid {pid} on {dest}: "
                      f"{last_line(out.stderr)}", file=sys.stderr)
        except HostLost as e:
            print(f"warning: could not stop pid {pid} on {dest}: {e}", file=sys.stderr)
        stop_local_ssh(int(entry.get("ssh_pid", 0)))
    for dest, h in hosts.items():               # the runs' files there (logs came here)
        try:
            plan.link(dest).run(f"rm -rf -- {shlex.quote(h['base'] + '/runs')}", timeout=60)
        except HostLost as e:
            print(f"warning: could not remove {h['base']}/runs on {dest}: {e}", file=sys.stderr)
    for dest in plan.dests:
        try:
            plan.link(dest).close_master()
        except subprocess.SubprocessError as e:
            print(f"warning: could not close the ssh connection to {dest}: {e}",
                  file=sys.stderr)
    plan.registry.path.unlink(missing_ok=True)
    plan.state_file.unlink(missing_ok=True)


def stop_local_ssh(pid: int) -> None:
    """The local ssh of a start a dead step left behind, if it still runs (checked by name)."""
    if pid <= 0:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if cmdline and cmdline[0].endswith(b"ssh"):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


class Ssh(Topology):
    name = "ssh"
    chosen_by = "SERVER_HOST"
    summary = "the server on a real host over OpenSSH, clients here or on CLIENT_HOST"

    # each step is this module's function of the same name (place: topology())
    place = staticmethod(topology)
    check = staticmethod(check)
    up = staticmethod(up)
    down = staticmethod(down)


TOPOLOGY = Ssh()
