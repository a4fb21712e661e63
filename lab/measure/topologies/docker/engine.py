"""RUNTIME=docker's engine and Compose: which engine answers (or dockerd
started here, as root, when none does), which Compose runs (v2 or v1), and
how the lab calls them: one command to its end, output captured or logged;
a compose command for the project of a port, with its environment.

The topology (lab/measure/topologies/docker/) and the images (images.py)
run their commands through here.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.host import procs
from lab.record import files
from lab.setup.params import Params, format_cpus
from lab.setup.paths import cache_dir
from lab.measure.topologies import SetupError
from lab.measure.topologies.docker import compose

PREFIX_VARIABLE = "LAB_DOCKER_PREFIX"   # compose projects are <prefix>-<port>
DEFAULT_PROJECT_PREFIX = "restlab"
# The lab's own engine, when it has to start one. The userland proxy is off:
# with it, every connection to a published port is relayed by a docker-proxy
# process (unpinned, its CPU on nobody's account); without it the kernel
# forwards 127.0.0.1:PORT to the container (iptables DNAT).
DOCKERD_ARGS = ("--userland-proxy=false",)


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
    with files.open_binary(log, append=True) as f:      # never through a link
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
    prefix = re.sub(r"[^a-z0-9_-]", "", os.environ.get(PREFIX_VARIABLE, DEFAULT_PROJECT_PREFIX).lower())
    return f"{prefix or DEFAULT_PROJECT_PREFIX}-{port}"


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
    with files.open_binary(log, append=True) as f:
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


# ---------------------------------------------------------------- a compose command

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
