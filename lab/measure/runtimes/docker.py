"""RUNTIME=docker: each server runs in a container of its compose.yaml service.

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
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lab.measure import deps as lab_deps
from lab.host import procfs, procs
from lab.setup.params import ConfigError, Params, default, format_cpus
from lab.setup.paths import ROOT, cache_dir
from lab.host.procfs import TreeSample
from lab.measure.runtimes import Placement, SetupError, Started, Topology, TreeSampler, compose
from lab.measure.runtimes.cgroups import cgroup_memory, cgroup_version
from lab.measure.runtimes.local import LocalClientHost, LocalServerHost
from lab.setup.servers import Server, found_here, lookup

PREFIX_VARIABLE = "LAB_DOCKER_PREFIX"   # compose projects are <prefix>-<port>
DEFAULT_PREFIX = "restlab"
PROJECT_LABEL = "com.docker.compose.project"
# The lab's own engine, when it has to start one. The userland proxy is off:
# with it, every connection to a published port is relayed by a docker-proxy
# process (unpinned, its CPU on nobody's account); without it the kernel
# forwards 127.0.0.1:PORT to the container (iptables DNAT).
DOCKERD_ARGS = ("--userland-proxy=false",)
MIRROR = os.environ.get("DEBIAN_MIRROR") or default("DEBIAN_MIRROR")   # for debootstrap
BASES = {"debian:bullseye": "bullseye", "debian:bookworm": "bookworm"}
# The archives a base made here installs from: the packages the process
# runtime runs, so that the two runtimes differ in the container only. Debian
# 11 as the lab's own Debian 11 root (the suite alone: AWS 20.2-2, GNAT
# 10.2.1); Debian 12 as a Debian 12 host is set up (its updates and security:
# the same JDK 17 build). Docker's own images also list bullseye-security,
# where an online build gets libaws 20.2-2+deb11u1; the facts record which.
SOURCES = {"bullseye": ("bullseye",),
           "bookworm": ("bookworm", "bookworm-updates", "bookworm-security")}
SECURITY_MIRROR = (os.environ.get("DEBIAN_SECURITY_MIRROR")
                   or default("DEBIAN_SECURITY_MIRROR"))
MIN_MEMORY = 6 * 1024 * 1024            # Docker refuses a smaller limit


# ---------------------------------------------------------------- small helpers

def say(text: str) -> None:
    print(f"docker: {text}", file=sys.stderr, flush=True)


def run(argv: list[str], timeout: float = 60, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    """argv to its end, output captured; a missing program or a timeout is exit 127/124."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(argv, 127, "", str(e))
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else ""
        return subprocess.CompletedProcess(argv, 124, "", f"{err}\ntimed out after {timeout}s")


def run_logged(argv: list[str], log: Path, timeout: float, env: dict[str, str] | None = None,
               cwd: Path | None = None, stdin: Any = subprocess.DEVNULL) -> int:
    with log.open("ab") as f:
        f.write(f"\n$ {shlex.join(argv)}\n".encode())
        f.flush()
        try:
            return subprocess.run(argv, stdout=f, stderr=f, stdin=stdin, env=env, cwd=cwd,
                                  timeout=timeout).returncode
        except FileNotFoundError as e:
            f.write(f"{e}\n".encode())
            return 127
        except subprocess.TimeoutExpired:
            f.write(f"timed out after {timeout:.0f}s\n".encode())
            return 124


def project_name(port: int) -> str:
    prefix = re.sub(r"[^a-z0-9_-]", "", os.environ.get(PREFIX_VARIABLE, DEFAULT_PREFIX).lower())
    return f"{prefix or DEFAULT_PREFIX}-{port}"


def state_file(port: int) -> Path:
    return cache_dir() / "docker" / f"{project_name(port)}.json"


def is_root() -> bool:
    return os.geteuid() == 0


# ---------------------------------------------------------------- the engine and Compose

def remote_engine() -> str | None:
    """Where the engine is when it is elsewhere (DOCKER_HOST=ssh://..., tcp://..., or
    the current docker context's endpoint); None: this host's socket."""
    host = os.environ.get("DOCKER_HOST", "").strip()
    if host:
        return None if host.startswith("unix://") else f"DOCKER_HOST={host}"
    if shutil.which("docker") is None:
        return None
    out = run(["docker", "context", "inspect", "--format", "{{.Endpoints.docker.Host}}"],
              timeout=30)
    endpoint = out.stdout.strip()
    if out.returncode == 0 and endpoint and not endpoint.startswith("unix://"):
        return f"the docker context's endpoint {endpoint}"
    return None


def engine_version() -> str | None:
    """The engine's version, or None when no engine answers."""
    if shutil.which("docker") is None:
        return None
    out = run(["docker", "version", "--format", "{{.Server.Version}}"], timeout=30)
    return out.stdout.strip() or None if out.returncode == 0 else None


@dataclass(frozen=True)
class Compose:
    """The Compose that runs: v2 (`docker compose`) where it exists, else v1."""
    argv: tuple[str, ...]
    kind: str            # v2 | v1
    version: str

    def describe(self) -> str:
        return f"{' '.join(self.argv)} {self.version} ({self.kind})"


def find_compose() -> Compose | None:
    if shutil.which("docker"):
        out = run(["docker", "compose", "version", "--short"], timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return Compose(("docker", "compose"), "v2", out.stdout.strip())
    if shutil.which("docker-compose"):
        out = run(["docker-compose", "version", "--short"], timeout=60)
        if out.returncode == 0 and out.stdout.strip():
            version = out.stdout.strip()
            return Compose(("docker-compose",), "v2" if version.startswith("2") else "v1",
                           version)
    return None


def dockerd_log() -> Path:
    return cache_dir() / "docker" / "dockerd.log"


def start_engine() -> dict[str, Any]:
    """Start dockerd (as root, when none answers) and wait until it does."""
    if shutil.which("dockerd") is None:
        raise SetupError("no Docker engine answers and there is no dockerd: run `lab deps` "
                         "(as root it installs Debian's docker.io)")
    log = dockerd_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = ["dockerd", *DOCKERD_ARGS]
    say(f"starting the engine: {shlex.join(argv)} (log: {log})")
    with log.open("ab") as f:
        # A daemon of its own session: it outlives this run, as an engine does.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        version = engine_version()
        if version:
            return {"engine": version, "engine_started_by_lab": True, "dockerd_pid": proc.pid,
                    "dockerd_args": list(DOCKERD_ARGS), "dockerd_log": str(log)}
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise SetupError(f"dockerd did not start (exit {proc.poll()}); last lines of {log}:\n"
                     f"{procs.tail(log, 15)}")


def ensure_engine() -> dict[str, Any]:
    version = engine_version()
    if version:
        return {"engine": version, "engine_started_by_lab": False}
    if remote_engine():
        raise SetupError(f"the Docker engine at {remote_engine()} does not answer "
                         "(docker version)")
    if not is_root():
        raise SetupError(manual_steps(["no Docker engine answers"]))
    return start_engine()


def manual_steps(problems: list[str]) -> str:
    return (f"RUNTIME=docker: {'; '.join(problems)}. As root, `make bench RUNTIME=docker` "
            "does all of this itself; or run as root:\n"
            "  apt-get update && apt-get install -y --no-install-recommends docker.io "
            "docker-compose debootstrap\n"
            "  service docker start    # or: dockerd --userland-proxy=false &\n"
            "  make images             # debian:bullseye and debian:bookworm, where they "
            "cannot be pulled\n"
            "and give your user the engine (adduser $USER docker, then log in again)")


# ---------------------------------------------------------------- services and images

def service_of(server: Server) -> str:
    """A server's compose service: its base name (jersey for jersey.jetty and jersey@16)."""
    return (server.base or server.name).partition("@")[0]


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


def image_exists(name: str) -> bool:
    return run(["docker", "image", "inspect", name], timeout=30).returncode == 0


def needed_bases(services: dict[str, compose.Service]) -> list[str]:
    return sorted({b for s in services.values() if s.dockerfile
                   for b in compose.base_images(s.dockerfile)})


def unmount_below(path: Path) -> None:
    """Unmount whatever an interrupted debootstrap left mounted under path."""
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for m in sorted((m for m in mounts if m == str(path) or m.startswith(f"{path}/")),
                    reverse=True):
        subprocess.run(["umount", "-l", m], check=False, capture_output=True)


def make_base_image(name: str, suite: str, log: Path) -> float:
    """debootstrap --variant=minbase SUITE, then docker import as NAME: the image
    an online user pulls, made from the same archive. Seconds it took."""
    if not is_root():
        raise SetupError(manual_steps([f"{name} is missing and cannot be pulled here"]))
    if shutil.which("debootstrap") is None:
        raise SetupError("debootstrap is missing: run `lab deps` (as root it installs it)")
    t0 = time.monotonic()
    work = cache_dir() / "docker"
    work.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"base-{suite}.", dir=work))
    try:
        say(f"{name}: debootstrap --variant=minbase {suite} (log: {log})")
        if run_logged(["debootstrap", "--variant=minbase", suite, str(root), MIRROR], log,
                      timeout=1800) != 0:
            raise SetupError(f"debootstrap {suite} failed; last lines of {log}:\n"
                             f"{procs.tail(log, 15)}")
        unmount_below(root)
        (root / "etc/apt/sources.list").write_text("".join(
            f"deb {SECURITY_MIRROR if s.endswith('-security') else MIRROR} {s} main\n"
            for s in SOURCES.get(suite, (suite,))))
        for junk in ("var/lib/apt/lists", "var/cache/apt/archives"):
            for p in (root / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        say(f"{name}: docker import")
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(root), "--exclude=./dev/*",
                                "--exclude=./proc/*", "--exclude=./sys/*", "-c", "."],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        code = run_logged(["docker", "import", "--change", 'CMD ["bash"]',
                           "--change", f"LABEL restlab.base=debootstrap-{suite}",
                           "-", name], log, timeout=900, stdin=tar.stdout)
        if tar.stdout is not None:
            tar.stdout.close()
        tar.wait()
        if code != 0 or tar.returncode != 0:
            raise SetupError(f"docker import {name} failed; see {log}")
    finally:
        unmount_below(root)
        subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)
    return time.monotonic() - t0


def ensure_bases(names: list[str], log: Path) -> dict[str, str]:
    """Each base image: found, pulled, or made here (debootstrap + import). Their origin."""
    origin = {}
    for name in names:
        if image_exists(name):
            label = run(["docker", "image", "inspect", "--format",
                         '{{index .Config.Labels "restlab.base"}}', name], timeout=30)
            made = label.stdout.strip() if label.returncode == 0 else ""
            origin[name] = f"present ({'made here: ' + made if made else 'pulled'})"
            continue
        if name not in BASES:
            origin[name] = "pulled by the build"
            continue
        say(f"{name} is missing; trying docker pull")
        if run_logged(["docker", "pull", name], log, timeout=300) == 0:
            origin[name] = "pulled"
            continue
        took = make_base_image(name, BASES[name], log)
        origin[name] = f"made here (debootstrap + docker import, {took:.0f}s)"
        say(f"{name}: made in {took:.0f}s")
    return origin


def image_facts(image: str) -> dict[str, Any]:
    out = run(["docker", "image", "inspect", "--format", "{{.Id}} {{.Size}}", image],
              timeout=30)
    if out.returncode != 0 or not out.stdout.split():
        return {}
    ident, size = out.stdout.split()[:2]
    return {"id": ident[:19], "size_mb": round(int(size) / 1e6, 1)}


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
    images = {}
    for name, svc in services.items():
        log = logs / f"docker-build-{name}.log"
        t1 = time.monotonic()
        say(f"[{name}] compose build (log: {log})")
        # v1's classic builder keeps a failed step's container unless told not to
        argv = compose_argv(found, params.port, name, "build",
                            *(["--force-rm"] if found.kind == "v1" else []), name)
        if run_logged(argv, log, timeout=3600, env=compose_env(dict(os.environ), params),
                      cwd=ROOT) != 0:
            raise SetupError(f"{name}: the image did not build; last lines of {log}:\n"
                             f"{procs.tail(log, 20)}")
        images[name] = {"image": svc.image, **image_facts(svc.image)}
        say(f"[{name}] image {svc.image} ready in {time.monotonic() - t1:.1f}s "
            f"({images[name].get('size_mb', '?')} MB)")
    state["images"] = images
    state["cgroup"] = cgroup_version()
    path = state_file(params.port)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2) + "\n")
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


def images_step() -> int:
    """`make images`: debian:bullseye and debian:bookworm, made here unless present."""
    state = ensure_engine()
    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    origin = ensure_bases(sorted(BASES), logs / "docker-images.log")
    for name, how in origin.items():
        print(f"{name}: {how}")
    say(f"engine {state['engine']}")
    return 0


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
        self.levels = 0

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
        self.levels += 1
        line = {"n": self.levels, "time": round(time.time(), 1),
                "rss_kb": sample.rss_kb if sample else None,
                "processes": sample.processes if sample else None, **figures}
        with self.memory_log.open("a") as f:
            f.write(json.dumps(line) + "\n")


class ContainerSampler(procfs.Sampler):
    """procfs.Sampler of the container's process tree, plus its cgroup memory."""

    def __init__(self, container: Container, interval: float = 0.2, rescan: int = 5) -> None:
        self.container = container
        self.cgroup_mem_peak_kb: int | None = None
        super().__init__(container.pid, interval, rescan)

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
              cpus: tuple[int, ...]) -> Started:
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
        with log.open("ab") as f:
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

    def sampler(self, proc: Started) -> TreeSampler:
        assert isinstance(proc, Container)
        return ContainerSampler(proc)

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

    def time_wait_sockets(self) -> int:
        """This host's, plus the container's network namespace's."""
        inside = _net_sockets(self.current.pid, "06") if self.current else 0
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


def compose_argv(found: Compose, port: int, service: str, *args: str) -> list[str]:
    return [*found.argv, "-f", str(compose.FILE), "-p", project_name(port),
            "--profile", service, *args]


def compose_env(env: dict[str, str], params: Params | None,
                cpus: tuple[int, ...] | None = None) -> dict[str, str]:
    out = dict(env)
    if params is not None:
        out.update(BIND=params.bind, PORT=str(params.port),
                   SERVER_CPUS=format_cpus(cpus or params.server_cpus),
                   CLIENT_CPUS=format_cpus(params.client_cpus),
                   MEM_LIMIT=params.mem_limit or "0")
    out["LAB_RUN"] = env.get(procs.MARKER, "")
    out.pop("COMPOSE_PROFILES", None)            # the lab names the one profile itself
    return out


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
