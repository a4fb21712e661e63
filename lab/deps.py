"""System packages: what the chosen servers and client need, installed when
root, otherwise the exact apt-get line and exit 2.

Vegeta is no Debian package: ensure_vegeta() builds the pinned version with
Go into the lab cache. Only CLIENT=vegeta needs Go.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from lab import hostinfo, paths
from lab.servers import Server

# command: Debian package, for the lab itself and each client
LAB = {"taskset": "util-linux", "ss": "iproute2", "gnuplot": "gnuplot-nox"}
CLIENTS: dict[str, dict[str, str]] = {"siege": {"siege": "siege"}, "wrk": {"wrk": "wrk"},
                                      "vegeta": {}}

VEGETA_MODULE = "github.com/tsenart/vegeta/v12"
VEGETA_VERSION = "v12.13.0"
GO_MINIMUM = (1, 22)      # vegeta v12.13.0's go.mod
INSTALL_TIMEOUT_S = 1800  # a cold module cache and build took about 2 minutes here


def needed(servers: Iterable[Server], client: str) -> dict[str, str]:
    want = dict(LAB)
    want.update(CLIENTS.get(client, {}))
    for s in servers:
        want.update(s.requires)
    return want


def missing(want: dict[str, str]) -> list[str]:
    return sorted({pkg for cmd, pkg in want.items() if shutil.which(cmd) is None})


def ensure(want: dict[str, str]) -> int:
    packages = missing(want)
    if not packages:
        return 0
    line = "apt-get install -y --no-install-recommends " + " ".join(packages)
    if os.geteuid() != 0:
        print(f"error: missing packages; as root run:\n  apt-get update && {line}",
              file=sys.stderr)
        return 2
    if shutil.which("apt-get") is None:
        print(f"error: missing {' '.join(packages)} and no apt-get to install them",
              file=sys.stderr)
        return 2
    print(f"installing {' '.join(packages)}", file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    code = subprocess.run(line.split(), env=env, check=False,
                          stdout=subprocess.DEVNULL).returncode
    still = missing(want)
    if code != 0 or still:
        print(f"error: '{line}' failed; still missing: {' '.join(still)}", file=sys.stderr)
        return 2
    return 0


def vegeta_binary(cache: Path) -> Path:
    return paths.go_bin(cache) / "vegeta"


def go_version(go: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([go, "version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bgo(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def go_problem() -> str | None:
    """Why the Go on PATH cannot build vegeta, or None when it can."""
    wanted = ".".join(map(str, GO_MINIMUM))
    advice = (f"install Go >= {wanted} and put its bin folder first on PATH "
              "(e.g. PATH=/usr/local/go/bin:$PATH); Debian 12's golang-go is 1.19, too old. "
              "Only CLIENT=vegeta needs Go.")
    go = shutil.which("go")
    if go is None:
        return f"CLIENT=vegeta is built with Go, and there is no go on PATH: {advice}"
    have = go_version(go)
    if have is None:
        return f"could not read the version of {go} ('go version'): {advice}"
    if have < GO_MINIMUM:
        return (f"vegeta {VEGETA_VERSION} needs Go >= {wanted}; {go} is "
                f"go{have[0]}.{have[1]}: {advice}")
    return None


def ensure_vegeta(cache: Path) -> int:
    """Build the pinned vegeta into <cache>/go/bin unless it is there: 0, or 2 and why."""
    binary = vegeta_binary(cache)
    if hostinfo.tool_version("vegeta", str(binary)) == VEGETA_VERSION:
        return 0
    problem = go_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    print(f"installing vegeta {VEGETA_VERSION} into {binary.parent}", file=sys.stderr, flush=True)
    # GOTOOLCHAIN=local: the Go that was checked is the Go that builds (no toolchain
    # download); -X stamps the version that `vegeta -version` shows and the check reads.
    env = dict(os.environ, GOBIN=str(binary.parent), GOTOOLCHAIN="local")
    argv = ["go", "install", f"-ldflags=-X main.Version={VEGETA_VERSION}",
            f"{VEGETA_MODULE}@{VEGETA_VERSION}"]
    try:
        out = subprocess.run(argv, env=env, capture_output=True, text=True,
                             timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"error: '{' '.join(argv)}' did not finish: {e}", file=sys.stderr)
        return 2
    got = hostinfo.tool_version("vegeta", str(binary))
    if out.returncode != 0 or got != VEGETA_VERSION:
        tail = " | ".join(out.stderr.strip().splitlines()[-5:]) or f"exit {out.returncode}"
        print(f"error: '{' '.join(argv)}' failed ({tail}); {binary} reports {got}",
              file=sys.stderr)
        return 2
    return 0


def ensure_client(client: str, cache: Path) -> int:
    """What a client needs beyond Debian packages (vegeta's build); 0 for the others."""
    return ensure_vegeta(cache) if client == "vegeta" else 0
