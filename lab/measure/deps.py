"""System packages: what the chosen servers and client need, installed when
root, otherwise the exact apt-get line and exit 2. A client says what it
needs (its `packages`, and its `install` for the rest: vegeta's Go build).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from lab.measure.clients import clients
from lab.setup.servers import Server

# How long an install waits for the lock of another apt-get (or dpkg) at work.
APT_LOCK_WAIT_S = 600

# command: Debian package, for the lab itself
LAB = {"taskset": "util-linux", "ss": "iproute2", "gnuplot": "gnuplot-nox"}


def needed(servers: Iterable[Server], client: str) -> dict[str, str]:
    want = dict(LAB)
    want.update(clients()[client].packages)
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
        print(f"error: missing packages; as root run:\n  apt-get update && {line}\n"
              "or, not root but allowed sudo (a CI runner: docs/ci.md):\n"
              f"  sudo apt-get update && sudo {line}", file=sys.stderr)
        return 2
    if shutil.which("apt-get") is None:
        print(f"error: missing {' '.join(packages)} and no apt-get to install them",
              file=sys.stderr)
        return 2
    print(f"installing {' '.join(packages)}", file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    wait = ["-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}"]    # another apt-get at work
    subprocess.run(["apt-get", *wait, "update", "-qq"], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    code = subprocess.run(["apt-get", *wait, *line.split()[1:]], env=env, check=False,
                          stdout=subprocess.DEVNULL).returncode
    still = missing(want)
    if code != 0 or still:
        print(f"error: '{line}' failed; still missing: {' '.join(still)}", file=sys.stderr)
        return 2
    return 0


def ensure_client(client: str, cache: Path) -> int:
    """What a client needs beyond Debian packages (vegeta's build); 0 for the others."""
    return clients()[client]().install(cache)
