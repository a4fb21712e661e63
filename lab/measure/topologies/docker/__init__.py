"""The docker topology (chosen by RUNTIME=docker): each server runs in a container
of its compose.yaml service.

Top-down, per run (the steps of run-benchmark.sh):
  check  every chosen server has a service, the port is free; not root: exit 2
         with the steps (the container's sockets are read with nsenter)
  deps   as root: Debian's docker.io and docker-compose, debootstrap
  build  the lab's own build only where the image takes its artifact (the
         Java jars); the Ada images build themselves (gprbuild in the image)
  up     the engine (dockerd started when none runs, as root), the base
         images (`make images`: debootstrap + docker import, when they
         cannot be pulled), the service images (compose build), leftovers of
         an earlier run of this project removed
  start  `compose up -d SERVICE` with the start's knobs as environment, pinned
         with the service's cpuset (SERVER_CPUS), MEM_LIMIT as its memory limit,
         published on BIND:PORT (127.0.0.1 by default) only; inside its own
         network namespace the server listens on 0.0.0.0
  sample the container's processes are this host's: their tree from /proc as
         for a process (RSS, threads, CPU), and the container's cgroup memory
  stop   docker stop, then the container is removed
  down   (always: success, failure, Ctrl-C) every container and network of
         the project removed

The compose project is `<LAB_DOCKER_PREFIX or restlab>-<PORT>`: derivable from
the settings, so `lab down` (another process) finds what `lab up` and the
sweeps made; containers also carry the label restlab.run=<run id>.

The package's modules, by role: engine.py (the engine and Compose: finding
them, starting dockerd, running their commands), images.py (the images:
debootstrap bases, compose build), compose.py (compose.yaml as the lab reads
it), cgroups.py (a container's memory cgroup); this one is the topology.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.measure import deps as lab_deps
from lab.host import procfs, procs, tcpstat
from lab.record import files
from lab.setup.params import ConfigError, Params, format_cpus
from lab.setup.paths import ROOT, cache_dir
from lab.host.procfs import TreeSample
from lab.measure.topologies import Placement, SetupError, Started, Topology, TreeSampler
from lab.measure.topologies.docker import compose
from lab.measure.topologies.docker.cgroups import cgroup_memory, cgroup_version
from lab.measure.topologies.docker.engine import (Compose, compose_argv, compose_env,
                                                engine_version, ensure_engine, find_compose,
                                                is_root, manual_steps, project_name,
                                                remote_engine, run, run_logged, say)
from lab.measure.topologies.docker.images import (build_images, ensure_bases, image_exists,
                                                image_facts, needed_bases)
from lab.measure.topologies.local import LocalClientHost, LocalServerHost
from lab.setup.servers import Server, ServerSpec, found_here, lookup

PROJECT_LABEL = "com.docker.compose.project"
MIN_MEMORY = 6 * 1024 * 1024            # Docker refuses a smaller limit


def state_file(port: int) -> Path:
    return cache_dir() / "docker" / f"{project_name(port)}.json"


# ---------------------------------------------------------------- services

def service_of(server: Server) -> str:
    """A server's compose service: its base name (jersey for jersey.jetty and jersey@16)."""
    return ServerSpec.parse(server.name).family


def chosen(params: Params) -> list[Server]:
    found = found_here(ROOT)
    return [lookup(found, n) for n in params.servers]


def service_for(folder: Path) -> str:
    """The service of the server whose folder holds (or is) `folder`: the folder
    with the server.toml, whose name is the server's and its service's."""
    for d in (folder, *folder.parents):
        if (d / "server.toml").exists():
            return d.name
    raise SetupError(f"{folder} is not inside a server's folder (no server.toml)")


def check_services(servers: list[Server]) -> dict[str, compose.Service]:
    """Every chosen server's service, each with its Dockerfile; ConfigError otherwise."""
    try:
        table = compose.services()
    except compose.ComposeFileError as e:
        raise ConfigError(f"RUNTIME=docker: {e}") from None
    runnable = sorted(n for n, s in table.items() if n != "client")
    missing = sorted({service_of(s) for s in servers} - set(table))
    if missing:
        raise ConfigError(f"RUNTIME=docker: no compose.yaml service for {', '.join(missing)} "
                          f"(servers with one: {', '.join(runnable)}); add a Dockerfile to "
                          "its folder and a service to compose.yaml, or run it without "
                          "RUNTIME=docker")
    out = {}
    for s in servers:
        svc = table[service_of(s)]
        if svc.dockerfile is None or not svc.dockerfile.exists():
            raise ConfigError(f"RUNTIME=docker: service {svc.name} has no Dockerfile "
                              f"({svc.dockerfile})")
        out[svc.name] = svc
    return out


# ---------------------------------------------------------------- the steps' hooks

def check(params: Params) -> None:
    """`lab check`: exit 2 before anything is built or started."""
    services = check_services(chosen(params))
    if params.mem_limit:
        m = re.fullmatch(r"([0-9]+)([kmg]?)", params.mem_limit)
        assert m is not None      # lab.setup.params checked the form
        size = int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2)]
        if size < MIN_MEMORY:
            raise ConfigError(f"MEM_LIMIT={params.mem_limit}: Docker's smallest memory limit "
                              "is 6m")
    remote = remote_engine()
    if remote:
        raise ConfigError(
            f"RUNTIME=docker with {remote}: that engine runs the containers on another host, "
            "where this lab cannot read their processes and cgroup, and where 127.0.0.1 is "
            "not this host's. Run the lab on that host (make bench RUNTIME=docker there), or "
            "unset DOCKER_HOST; docs/topology-docker.md says how to load a remote engine's "
            "container by hand")
    version = engine_version()
    if not is_root():
        # The listening sockets are read inside the container's network namespace
        # (nsenter), which takes root; so does starting an engine or debootstrap.
        problems = ["the lab reads each container's sockets in its network namespace "
                    "(nsenter), which needs root: run it as root"]
        if shutil.which("docker") is None:
            problems.append("there is no docker command")
        elif version is None:
            problems.append("no Docker engine answers (docker version)")
        if find_compose() is None:
            problems.append("neither `docker compose` (v2) nor docker-compose (v1) is here")
        if version is not None:
            missing = [b for b in needed_bases(services) if not image_exists(b)]
            if missing:
                problems.append(f"the base image(s) {', '.join(missing)} are missing (and "
                                "cannot be pulled here, `make images` makes them as root)")
        if problems:
            raise ConfigError(manual_steps(problems))
    procs.check_port_free(params.port, params.bind)
    if version is not None:
        check_published(params.port)


def check_published(port: int) -> None:
    """PortBusy when a container publishes `port` (with DNAT no host socket shows it)."""
    out = run(["docker", "ps", "--filter", f"publish={port}", "--format", "{{.Names}}"],
              timeout=30)
    names = out.stdout.split()
    if names:
        raise procs.PortBusy(f"port {port} is published by container {', '.join(names)}: stop "
                             "it (docker rm -f NAME) or choose another with PORT=")


def packages(params: Params) -> int:
    """`lab deps`: Debian's docker.io (dockerd), docker-compose, debootstrap, nsenter."""
    want = {"nsenter": "util-linux"}
    engine = engine_version()
    if engine is None:
        want.update(docker="docker.io", dockerd="docker.io")
    if find_compose() is None:
        want["docker-compose"] = "docker-compose"
    services = check_services(chosen(params))
    if engine is None or not all(image_exists(b) for b in needed_bases(services)):
        want["debootstrap"] = "debootstrap"      # base images, where they cannot be pulled
    return lab_deps.ensure(want)


def needs_build(params: Params, server: Server) -> bool:
    """The lab's own build runs only where the image copies its artifact (the Java
    jars; an Ada image builds in its own build stage)."""
    if server.artifact is None:
        return True
    table = compose.services()
    svc = table.get(service_of(server))
    if svc is None or svc.dockerfile is None or not svc.dockerfile.exists():
        return True
    return server.artifact in svc.dockerfile_text()


def up(params: Params) -> None:
    """`lab up`: engine, Compose, base images, the services' images; leftovers removed."""
    t0 = time.monotonic()
    services = check_services(chosen(params))
    state: dict[str, Any] = ensure_engine()
    found = find_compose()
    if found is None:
        raise SetupError(manual_steps(["neither `docker compose` (v2) nor docker-compose (v1) "
                                       "is here"]))
    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    state.update(compose=found.describe(), compose_argv=list(found.argv),
                 compose_kind=found.kind, compose_version=found.version,
                 project=project_name(params.port),
                 base_images=ensure_bases(needed_bases(services), logs / "docker-images.log"))
    remove_project(params.port, found, quiet=False)
    state["images"] = build_images(services, found, params, logs)
    state["cgroup"] = cgroup_version()
    path = state_file(params.port)
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, json.dumps(state, indent=2) + "\n")
    procs.check_port_free(params.port, params.bind)
    check_published(params.port)
    say(f"up in {time.monotonic() - t0:.1f}s: engine {state['engine']}, {found.describe()}")


def remove_project(port: int, found: Compose | None, quiet: bool = True) -> list[str]:
    """Every container and network of the project, removed; what was removed."""
    project = project_name(port)
    if engine_version() is None:
        return []
    if found is not None:
        # every profile: Compose leaves the services of profiles not named alone
        profiles = [a for name in compose.services() for a in ("--profile", name)]
        run([*found.argv, "-f", str(compose.FILE), "-p", project, *profiles, "down",
             "--remove-orphans", "-t", "5"], timeout=120,
            env=compose_env(dict(os.environ), None))
    gone = []
    listed = run(["docker", "ps", "-aq", "--filter", f"label={PROJECT_LABEL}={project}"],
                 timeout=30).stdout.split()
    if listed:
        run(["docker", "rm", "-f", "-v", *listed], timeout=120)
        gone += [f"container {c[:12]}" for c in listed]
    nets = run(["docker", "network", "ls", "-q", "--filter", f"label={PROJECT_LABEL}={project}"],
               timeout=30).stdout.split()
    if nets:
        run(["docker", "network", "rm", *nets], timeout=60)
        gone += [f"network {n[:12]}" for n in nets]
    if gone and not quiet:
        say(f"removed what an earlier run of {project} left: {', '.join(gone)}")
    return gone


def down(params: Params) -> None:
    """`lab down`: the project's containers and networks, whatever state the run reached."""
    try:
        found = find_compose()
        gone = remove_project(params.port, found)
    except KeyboardInterrupt:
        gone = remove_project(params.port, None)
    project = project_name(params.port)
    left = run(["docker", "ps", "-aq", "--filter", f"label={PROJECT_LABEL}={project}"],
               timeout=30).stdout.split() if engine_version() else []
    if left:
        say(f"error: containers of {project} remain: {' '.join(left)}")
    elif gone:
        say(f"down: removed {', '.join(gone)} of {project}")


# ---------------------------------------------------------------- one container

def _starttime(pid: int) -> int | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return None if fields[0] == "Z" else int(fields[19])


def server_process(first: int, timeout: float = 5.0) -> int:
    """The server's PID on this host. compose.yaml runs each service with `init:
    true`, so the container's first process is docker-init (tini), which
    forwards SIGTERM to the server (a PID 1 without a handler ignores it); the
    server is its one child. Sampled from there, as a process is: the init's
    few hundred kB count in the cgroup's figure only."""
    try:
        comm = Path(f"/proc/{first}/comm").read_text().strip()
    except OSError:
        return first
    if comm not in ("docker-init", "tini", "tini-static"):
        return first
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = [s.pid for s in procfs.tree(first) if s.ppid == first]
        if children:
            return children[0]
        time.sleep(0.05)
    return first


def inspect(container: str) -> dict[str, Any]:
    out = run(["docker", "inspect", "--format", "{{json .}}", container], timeout=30)
    if out.returncode != 0:
        return {}
    data: dict[str, Any] = json.loads(out.stdout)
    return data


class Container:
    """A started service container: `pid` is its first process on this host."""

    def __init__(self, host: DockerServerHost, ident: str, service: str, info: dict[str, Any],
                 command: list[str], follower: subprocess.Popen[bytes], log: Path) -> None:
        self.host, self.id, self.service, self.command = host, ident, service, command
        self.info, self.follower, self.log = info, follower, log
        self.first = int(info.get("State", {}).get("Pid") or 0)   # docker-init, PID 1 inside
        self._pid = server_process(self.first)
        self.born = _starttime(self._pid) if self._pid else None
        self.returncode: int | None = None
        self.cgroup = cgroup_memory(self._pid) if self._pid else None
        self.memory_log = log.with_suffix(".memory.jsonl")
        self.n_levels = 0         # levels sampled so far (memory_log lines)

    @property
    def pid(self) -> int:
        return self._pid

    def poll(self) -> int | None:
        """None while its first process lives (read from /proc: cheap enough for the
        sweep's 50 ms checks); then its exit code, from the engine."""
        if self.returncode is not None:
            return self.returncode
        if self.born is not None and _starttime(self._pid) == self.born:
            return None
        state = inspect(self.id).get("State", {})
        if state.get("Running"):
            return None
        self.returncode = int(state.get("ExitCode", -1)) if state else -1
        return self.returncode

    def stop(self, grace: float = 10.0) -> int | None:
        """docker stop (TERM, KILL after `grace`), its exit code, then the container removed."""
        run(["docker", "stop", "-t", str(int(grace)), self.id], timeout=grace + 60)
        state = inspect(self.id).get("State", {})
        if self.returncode is None and state:
            self.returncode = int(state.get("ExitCode", -1))
        run(["docker", "rm", "-f", "-v", self.id], timeout=60)
        procs.Keeper.done(["docker", "rm", "-f", "-v", self.id])
        procs.stop(self.follower, grace=2)
        procs.kill_group(self.follower.pid)
        if self.host.current is self:
            self.host.current = None
        return self.returncode

    def record_memory(self, sample: TreeSample | None) -> None:
        """One line of <server log>.memory.jsonl: both memory figures and the cgroup's
        parts, at the end of each client run (warm-up slices and levels)."""
        if self.cgroup is None:
            return
        figures = self.cgroup.figures()
        if figures is None:
            return
        self.n_levels += 1
        line = {"n": self.n_levels, "time": round(time.time(), 1),
                "rss_kb": sample.rss_kb if sample else None,
                "processes": sample.processes if sample else None, **figures}
        with files.open_text(self.memory_log, append=True) as f:
            f.write(json.dumps(line) + "\n")


class ContainerSampler(procfs.Sampler):
    """procfs.Sampler of the container's process tree, plus its cgroup memory."""

    def __init__(self, container: Container, interval: float = 0.2, rescan: int = 5,
                 port: int | None = None) -> None:
        self.container = container
        # its first sample sets the peak; the queue is read in the container's namespace
        super().__init__(container.pid, interval, rescan, port)

    def _sample(self) -> TreeSample | None:
        s = super()._sample()
        cg = self.container.cgroup
        if s is None or cg is None:
            return s
        kb = cg.working_set_kb()
        if kb is not None:
            self.cgroup_mem_peak_kb = max(self.cgroup_mem_peak_kb or 0, kb)
        return replace(s, cgroup_mem_kb=kb)

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self.container.record_memory(self.last)


def _net_sockets(pid: int, state: str, port: int | None = None) -> int:
    """Sockets in a TCP state in the network namespace of `pid`."""
    return procfs.tcp_sockets(state, f"/proc/{pid}/net", port)


class DockerServerHost(LocalServerHost):
    """This host's Docker engine. The run command a manifest gives is not used:
    the compose service of the server's folder is started instead (the image's
    CMD runs the same server). Everything else is this host's: /proc, ss, the
    CPU counters; the listeners and somaxconn are read inside the container's
    network namespace, the port-free check on the host."""
    name = "docker"

    def __init__(self, params: Params, found: Compose | None) -> None:
        super().__init__()
        self.params = params
        self.compose = found
        self.project = project_name(params.port)
        self.publish = params.bind
        self.current: Container | None = None

    def compose_cmd(self, service: str, *args: str) -> list[str]:
        if self.compose is None:
            self.compose = find_compose()
        if self.compose is None:
            raise SetupError(manual_steps(["neither `docker compose` (v2) nor docker-compose "
                                           "(v1) is here"]))
        return compose_argv(self.compose, self.params.port, service, *args)

    def environment(self, env: dict[str, str], cpus: tuple[int, ...]) -> dict[str, str]:
        """What compose.yaml interpolates: the start's knobs, BIND = where the port is
        published on this host, the cpuset, the memory limit, the run id (a label)."""
        return compose_env(env, self.params, cpus)

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], log: Path,
              cpus: tuple[int, ...], log_max: int | None = None) -> Started:
        # log_max: not applied here yet (the server's log is not capped in this topology)
        service = service_for(cwd)
        cenv = self.environment(env, cpus)
        command = self.compose_cmd(service, "up", "-d", "--no-build", "--force-recreate",
                                   "--no-deps", service)
        code = run_logged(command, log, timeout=180, env=cenv, cwd=ROOT)
        ident = run(self.compose_cmd(service, "ps", "-q", service), timeout=60,
                    env=cenv).stdout.strip()
        info = inspect(ident) if ident else {}
        if ident:                            # removed by the step's keeper if the step vanishes
            procs.Keeper.undo(["docker", "rm", "-f", "-v", ident])
        if code != 0 or not info:
            if ident:
                run(["docker", "rm", "-f", "-v", ident], timeout=60)
            raise procs.NotReady(f"docker compose up {service} failed (exit {code}):\n"
                                 f"{procs.tail(log, 15)}")
        with files.open_binary(log, append=True) as f:
            follower = procs.start(["docker", "logs", "--follow", ident], ROOT, cenv, f)
        self.current = Container(self, ident, service, info, command, follower, log)
        return self.current

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], cpus: tuple[int, ...],
            timeout: float) -> tuple[int, str, str]:
        """A manifest's facts: the image's own /lab/facts, in a container of the
        service with its cpuset and memory limit (the JVM sizes itself from them)."""
        service = service_for(cwd)
        command = self.compose_cmd(service, "run", "--rm", "--no-deps", "-T", "--entrypoint",
                                   "/lab/facts", service)
        out = run(command, timeout=timeout, env=self.environment(env, cpus))
        image = compose.services().get(service)
        if image is not None and out.returncode == 0:
            facts = image_facts(image.image)
            extra = f"image={image.image}\nimage_id={facts.get('id', '?')}\n" \
                    f"image_size_mb={facts.get('size_mb', '?')}\n"
            return out.returncode, out.stdout + ("" if out.stdout.endswith("\n") else "\n") \
                + extra, out.stderr
        return out.returncode, out.stdout, out.stderr

    def sampler(self, proc: Started, port: int | None = None) -> TreeSampler:
        assert isinstance(proc, Container)
        return ContainerSampler(proc, port=port)

    def sample(self, proc: Started) -> TreeSample | None:
        assert isinstance(proc, Container)
        s = procfs.sample(proc.pid)
        if s is None or proc.cgroup is None:
            return s
        return TreeSample(s.processes, s.cpu_s, s.threads, s.rss_kb,
                          proc.cgroup.working_set_kb())

    def _in_container(self, argv: list[str]) -> subprocess.CompletedProcess[str] | None:
        if self.current is None or self.current.poll() is not None:
            return None
        return run(["nsenter", "-t", str(self.current.pid), "-n", *argv], timeout=30)

    def own_pids(self, proc: Started) -> set[int] | None:
        """None: the container's sockets name pids of its own namespace."""
        return None

    def listeners(self, port: int) -> list[procs.Listener]:
        """What listens on `port` inside the container's network namespace."""
        out = self._in_container(["ss", "-Hltnp", f"sport = :{port}"])
        if out is None:
            return procs.listeners(port)
        if out.returncode != 0:
            raise RuntimeError(f"cannot list the container's sockets (nsenter ... ss): "
                               f"{out.stderr.strip()}")
        return [s for s in procs.parse_listeners(out.stdout) if s.port == port]

    def somaxconn(self) -> int | None:
        """The container's own: net.core.somaxconn belongs to each network namespace."""
        out = self._in_container(["cat", "/proc/sys/net/core/somaxconn"])
        if out is None:
            return procs.somaxconn()
        return int(out.stdout) if out.returncode == 0 and out.stdout.strip().isdigit() \
            else None

    def check_port_free(self, port: int, bind: str) -> None:
        """On this host, where the port is published (BIND), and among containers."""
        procs.check_port_free(port, self.publish)
        check_published(port)

    own_network = True      # the container's namespace: the clients reach it through a port

    def tcp_counters(self) -> dict[str, int] | None:
        """The container's network namespace's."""
        return tcpstat.read_or_none(f"/proc/{self.current.pid}/net") if self.current else None

    def time_wait_sockets(self) -> int:
        """This host's, plus the container's network namespace's."""
        inside = procfs.time_wait_sockets(f"/proc/{self.current.pid}/net") if self.current else 0
        return procfs.time_wait_sockets() + inside

    def wait_ready(self, proc: Started, host: str, port: int, timeout: float) -> float:
        """Until the server listens inside the container, then until the published
        address accepts: a published port can accept before the server listens."""
        assert isinstance(proc, Container)
        t0 = time.monotonic()
        while _net_sockets(proc.pid, "0A", port) == 0:
            if proc.poll() is not None:
                raise procs.NotReady(f"exited with code {proc.returncode} before listening "
                                     f"on {port}")
            if time.monotonic() - t0 > timeout:
                raise procs.NotReady(f"did not listen on port {port} inside its container "
                                     f"within {timeout:.0f}s")
            time.sleep(0.1)
        procs.wait_ready(host, port, proc, max(1.0, timeout - (time.monotonic() - t0)))
        return time.monotonic() - t0

    def start_details(self, proc: Started) -> dict[str, object]:
        assert isinstance(proc, Container)
        config, host_config = proc.info.get("Config", {}), proc.info.get("HostConfig", {})
        limit = proc.cgroup.limit() if proc.cgroup else None
        relay = docker_proxy(self.params.port)
        return {"command": proc.command, "runtime": "docker", "container": proc.id[:12],
                "container_name": str(proc.info.get("Name", "")).lstrip("/"),
                "image": config.get("Image"), "image_id": str(proc.info.get("Image", ""))[:19],
                "image_command": config.get("Cmd"),
                "cpuset": host_config.get("CpusetCpus") or "every CPU",
                "memory_limit_kb": limit // 1024 if limit else None,
                "cgroup": str(proc.cgroup.path) if proc.cgroup else None,
                "cgroup_version": proc.cgroup.version if proc.cgroup else None,
                "published_on": f"{self.publish}:{self.params.port}",
                "listening_in_container": f"0.0.0.0:{self.params.port}",
                "port_relay": (f"docker-proxy pid {relay}" if relay else
                               "kernel (iptables DNAT, no userland proxy)"),
                "memory_log": proc.memory_log.name}


def docker_proxy(port: int) -> int | None:
    """The PID of the engine's docker-proxy relaying `port`, if the engine uses one."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"docker-proxy") and b"-host-port" in cmd:
            i = cmd.index(b"-host-port")
            if i + 1 < len(cmd) and cmd[i + 1] == str(port).encode():
                return int(pid)
    return None


# ---------------------------------------------------------------- the topology

def topology(params: Params) -> Placement:
    try:
        state: dict[str, Any] = json.loads(state_file(params.port).read_text())
    except (OSError, ValueError):
        state = {}
    found = (Compose(tuple(state["compose_argv"]), state.get("compose_kind", "?"),
                     state.get("compose_version", "?")) if state.get("compose_argv") else None)
    host = DockerServerHost(params, found)
    mem = params.mem_limit or "none"
    compose_text = state.get("compose", "docker compose")
    summary = (f"docker ({compose_text}, engine {state.get('engine', '?')} on this host): "
               f"the server in a container, cpuset {format_cpus(params.server_cpus)}, memory "
               f"limit {mem}, listening on 0.0.0.0 in its own network namespace, published "
               f"on {params.bind}:{params.port} only; client on this host, pinned")
    details = {
        "runtime": "docker", "engine": state.get("engine"), "compose": state.get("compose"),
        "compose_file": "compose.yaml", "project": project_name(params.port),
        "engine_started_by_lab": state.get("engine_started_by_lab"),
        "dockerd_args": state.get("dockerd_args"),
        "published_on": f"{params.bind}:{params.port}",
        "server_listens_on": f"0.0.0.0:{params.port} inside the container's own network "
                             "namespace (nothing else shares it)",
        "network": "the project's bridge network; the client reaches the published port",
        "memory_limit": params.mem_limit or None,
        "cgroup": state.get("cgroup") or cgroup_version(),
        "memory_figures": {
            "rss_end_kb": "RSS of the container's process tree (/proc/PID/stat), as for a "
                          "process: resident pages, shared libraries counted in full",
            "cgroup_mem_kb": "the container's memory cgroup: usage less inactive page cache "
                             "(as docker stats shows it; what MEM_LIMIT limits): page cache "
                             "and kernel memory charged to the container included"},
        "base_images": state.get("base_images"), "images": state.get("images"),
    }
    return Placement(name="docker", server=host, clients=(LocalClientHost(),), bind="0.0.0.0",
                     connect=procs.connect_host(params.bind), summary=summary, details=details)


class Docker(Topology):
    name = "docker"
    chosen_by = "RUNTIME"
    summary = "each server in its compose.yaml container, built from its Dockerfile"

    def place(self, params: Params) -> Placement:
        return topology(params)

    def check(self, params: Params) -> None:
        check(params)

    def deps(self, params: Params) -> int:
        return packages(params)

    def needs_build(self, params: Params, server: Server) -> bool:
        return needs_build(params, server)

    def up(self, params: Params) -> None:
        up(params)

    def down(self, params: Params) -> None:
        down(params)


TOPOLOGY = Docker()
