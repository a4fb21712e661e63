"""A JVM server's JIT compilations, read from the JVM itself.

`jcmd PID PerfCounter.print` prints the JVM's own performance counters
(the hsperfdata that jstat reads), with no agent and no flag on the server;
`sun.ci.totalCompiles` counts every method the JIT has compiled since the
start. WARMUP=auto reads it after each slice: the compilations per second
between two readings fall near zero (lab.analyse.metrics.JIT_QUIET_PER_S) once the
JIT has gone quiet.

jcmd runs where the server runs (ServerHost.run: this host, a netns, the
ssh server host), pinned like it, between slices (never under a measured
load); with RUNTIME=docker, on this host against the container's process
(not tried here: no Docker daemon was reachable when this was written). Where it cannot reach the JVM (no
jcmd, another PID namespace, another user), the reading is None and the
warm-up records why.
"""
from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lab.measure.topologies import ServerHost
from lab.setup.servers import Server

COUNTER = "sun.ci.totalCompiles"
JCMD_TIMEOUT_S = 30
_LINE = re.compile(r"^" + re.escape(COUNTER) + r"=(\d+)\s*$", re.M)


def is_jvm(server: Server) -> bool:
    """Its server.toml says language = "Java"."""
    return server.language.strip().lower() == "java"


def parse(text: str) -> int | None:
    """sun.ci.totalCompiles from PerfCounter.print's output, or None when absent."""
    m = _LINE.search(text)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Reading:
    compiles: int | None        # None: unavailable, `error` says why
    error: str = ""


def read(where: ServerHost, pid: int, cwd: Path, env: dict[str, str],
         cpus: tuple[int, ...]) -> Reading:
    """The JVM's compilations so far (jcmd PID PerfCounter.print, where it runs)."""
    argv = ["jcmd", str(pid), "PerfCounter.print"]
    try:
        if where.name == "docker":
            # its run() starts the image's facts, not a command; the PID is the
            # server's on this host, and HotSpot's jcmd attaches into a container
            # from the host (as the same user or root) with this host's jcmd
            out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                                 timeout=JCMD_TIMEOUT_S)
            code, stdout, stderr = out.returncode, out.stdout, out.stderr
        else:
            code, stdout, stderr = where.run(argv, cwd, env, cpus, timeout=JCMD_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as e:
        return Reading(None, f"{' '.join(argv)}: {e}")
    n = parse(stdout)
    if n is None:
        said = (stderr.strip() or stdout.strip()).splitlines()
        why = said[-1][:200] if said else f"exit {code}"
        return Reading(None, f"{' '.join(argv)}: no {COUNTER} ({why})")
    return Reading(n)


class Watch:
    """Readings of one JVM through a warm-up: the count at the last reading
    and the compilations per second since the one before. Once a reading
    fails, it stops asking (the error is kept)."""

    def __init__(self, reader: Callable[[], Reading]) -> None:
        self.reader = reader
        self.compiles: int | None = None
        self.per_s: float | None = None
        self.error = ""
        self._at = 0.0

    @property
    def unavailable(self) -> bool:
        return bool(self.error)

    def take(self) -> None:
        if self.error:
            return
        got = self.reader()
        now = time.monotonic()
        if got.compiles is None:
            self.error = got.error
            return
        if self.compiles is not None and now > self._at:
            self.per_s = round(max(0, got.compiles - self.compiles) / (now - self._at), 2)
        self.compiles, self._at = got.compiles, now

    def record(self, quiet: bool) -> dict[str, object]:
        """The warm-up record's JIT fields (lab.record.manifest.Warmup)."""
        if self.error:
            return {"jit_error": self.error}
        return {"jit_compiles": self.compiles, "jit_per_s": self.per_s, "jit_quiet": quiet}
