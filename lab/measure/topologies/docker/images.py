"""RUNTIME=docker's images: the Debian base images (found, pulled, or made
here with debootstrap + docker import where they cannot be pulled), each
service's image (`compose build`), and their facts (id, size).

`lab up` makes what the chosen services need; `make images` (`lab images`)
makes both bases alone. The topology itself is lab/measure/topologies/docker/,
the engine and Compose engine.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.host import procs
from lab.setup.params import Params, default
from lab.setup.paths import ROOT, cache_dir
from lab.measure.topologies import SetupError
from lab.measure.topologies.docker import compose
from lab.measure.topologies.docker.engine import (Compose, compose_argv, compose_env,
                                                ensure_engine, is_root, manual_steps, run,
                                                run_logged, say)

MIRROR = os.environ.get("DEBIAN_MIRROR") or default("DEBIAN_MIRROR")   # for debootstrap
BASES = {"debian:bullseye": "bullseye", "debian:bookworm": "bookworm"}
# The archives a base made here installs from: the packages a RUNTIME=process
# run uses, so that the two settings differ in the container only. Debian
# 11 as the lab's own Debian 11 root (the suite alone: AWS 20.2-2, GNAT
# 10.2.1); Debian 12 as a Debian 12 host is set up (its updates and security:
# the same JDK 17 build). Docker's own images also list bullseye-security,
# where an online build gets libaws 20.2-2+deb11u1; the facts record which.
SOURCES = {"bullseye": ("bullseye",),
           "bookworm": ("bookworm", "bookworm-updates", "bookworm-security")}
SECURITY_MIRROR = (os.environ.get("DEBIAN_SECURITY_MIRROR")
                   or default("DEBIAN_SECURITY_MIRROR"))


# ---------------------------------------------------------------- base images

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


# ---------------------------------------------------------------- the services' images

def image_facts(image: str) -> dict[str, Any]:
    out = run(["docker", "image", "inspect", "--format", "{{.Id}} {{.Size}}", image],
              timeout=30)
    if out.returncode != 0 or not out.stdout.split():
        return {}
    ident, size = out.stdout.split()[:2]
    return {"id": ident[:19], "size_mb": round(int(size) / 1e6, 1)}



def build_images(services: dict[str, compose.Service], found: Compose, params: Params,
                 logs: Path) -> dict[str, dict[str, Any]]:
    """`compose build` of each service's image (its log in `logs`); each image's facts."""
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
    return images


# ---------------------------------------------------------------- `make images`

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
