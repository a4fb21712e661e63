"""A cgroup v2 of the lab's own around each process it starts, where the host allows it.

A process group and the keeper's environment token (lab.host.procs,
lab.host.keeper) do not hold a process that calls setsid and execs with an
emptied environment: it leaves both. A cgroup holds it, whatever it forks.
So every process lab.host.procs.start starts enters a cgroup of its own
before it runs (a shell writes its pid to the cgroup's cgroup.procs, then
execs the command: nothing forks in between); stopping it kills the whole
cgroup (cgroup.kill, Linux 5.14+; before that, SIGKILL to every pid in
cgroup.procs until it is empty) and removes it. What was still in it
outside the process group when it was stopped is returned (`Left`): a
child that escaped, which the run records.

The cgroups go under the step's own cgroup v2 (/proc/self/cgroup's `0::`
line, below the cgroup2 mount: /sys/fs/cgroup on a unified host,
/sys/fs/cgroup/unified on a hybrid one). They need no controller, only
the right to create a folder there and move a process into it: root, or a
user whose cgroup is delegated. `status()` says why not, once per process;
then the lab works as before (process groups and the keeper's token) and
the run says so (lab.cli.run records it in the manifest).
"""
from __future__ import annotations

import itertools
import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lab.host import keeper

# Run by /bin/sh as `sh -c SHIM PROCS argv...`: into the cgroup, then exec argv (same pid).
SHIM = 'echo 0 >"$0" || exit 125; exec "$@"'
PREFIX = "lab-"
_seq = itertools.count(1)


@dataclass(frozen=True)
class Left:
    """A process still in a cgroup, outside its process group, when it was stopped."""
    pid: int
    comm: str

    def to_json(self) -> dict[str, object]:
        return {"pid": self.pid, "comm": self.comm}


def v2_mount(mountinfo: str) -> tuple[Path, str] | None:
    """The first cgroup2 mount of /proc/self/mountinfo: (mount point, its root)."""
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) >= 5 and extra and extra[0] == "cgroup2":
            return Path(fields[4]), fields[3]
    return None


def own_path(proc_cgroup: str) -> str | None:
    """This process's cgroup v2 path, from /proc/self/cgroup's `0::` line."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def parent() -> Path | str:
    """The folder the lab makes its cgroups in, or why there is none."""
    found = _found()
    return found if isinstance(found, str) else found[0]


@cache
def _found() -> tuple[Path, bool] | str:
    """parent(), and whether its cgroups have cgroup.kill; found once a process."""
    try:
        mount = v2_mount(Path("/proc/self/mountinfo").read_text())
        mine = own_path(Path("/proc/self/cgroup").read_text())
    except OSError as e:
        return f"cannot read this process's cgroups ({e})"
    if mount is None:
        return "no cgroup v2 hierarchy is mounted (cgroup v1 only)"
    if mine is None:
        return "this process is in no cgroup v2 (/proc/self/cgroup has no 0:: line)"
    point, root = mount
    rel = os.path.relpath(mine, root) if mine.startswith(root) else None
    folder = point if rel in (None, ".") else point / str(rel)
    if rel is None or rel.startswith("..") or not (folder / "cgroup.procs").is_file():
        return f"this process's cgroup {mine} is not under the cgroup2 mount {point}"
    sweep(folder)
    return _try(folder)


def cpu_stat(pid: int) -> Path | None:
    """The cpu.stat of the lab's own cgroup that `pid` is in (the one
    lab.host.procs.start made for it, which holds it and whatever it forks),
    or None: no cgroup of the lab's here, or `pid` in another one (a
    container's, a remote host's)."""
    folder = parent()
    try:
        path = own_path(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return None
    name = (path or "").rsplit("/", 1)[-1]
    if isinstance(folder, str) or not name.startswith(PREFIX):
        return None
    stat = folder / name / "cpu.stat"
    return stat if stat.is_file() else None


def cpu_usage(stat: Path) -> tuple[float, float] | None:
    """(CPU s, of it in the kernel) from a cgroup's cpu.stat, or None when it
    is gone. usage_usec is the scheduler's own run time, to the microsecond,
    where /proc/PID/stat counts whole clock ticks (10 ms); its
    user/system split is the kernel's, from those ticks."""
    try:
        fields = dict(line.split() for line in stat.read_text().splitlines() if " " in line)
        return int(fields["usage_usec"]) / 1e6, int(fields["system_usec"]) / 1e6
    except (OSError, KeyError, ValueError):
        return None


def sweep(folder: Path) -> list[str]:
    """Kill and remove the lab's cgroups in `folder` whose step is gone
    (lab-PID-N and lab-probe-PID with no process PID): what a step that
    died before its keeper could act, or whose last removal met a busy
    cgroup, left. Returns their names. A live step's are never touched."""
    gone = []
    for entry in folder.glob(f"{PREFIX}*"):
        m = re.fullmatch(rf"{PREFIX}(?:probe-(\d+)|(\d+)-\d+)", entry.name)
        if m is None or not entry.is_dir() or entry.is_symlink():
            continue
        if not os.path.exists(f"/proc/{m.group(1) or m.group(2)}"):
            keeper.kill_cgroup(str(entry), timeout=1.0)
            gone.append(entry.name)
    return gone


def _try(folder: Path) -> tuple[Path, bool] | str:
    """`folder` if a process can be made and moved into a child of it (and
    whether that child has cgroup.kill), else why not."""
    probe = folder / f"{PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as e:
        return f"cannot create a cgroup in {folder} ({e.strerror or e})"
    try:
        done = subprocess.run(["/bin/sh", "-c", SHIM, str(probe / "cgroup.procs"), "true"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=30)
        if done.returncode != 0:
            return (f"cannot move a process into a cgroup of {folder} "
                    f"({done.stderr.strip()[-200:] or f'exit {done.returncode}'})")
        has_kill = (probe / "cgroup.kill").exists()
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot move a process into a cgroup of {folder} ({e})"
    finally:
        keeper.remove_cgroup(str(probe), 5.0)
    return folder, has_kill


def status() -> str:
    """"" when the lab's processes get cgroups here, else why not (one line)."""
    found = parent()
    return found if isinstance(found, str) else ""


def describe() -> dict[str, object]:
    """The run's record of it (the manifest's `cgroups`)."""
    found = _found()
    if isinstance(found, str):
        return {"used": False, "why": found}
    return {"used": True, "under": str(found[0]),
            "kill": "cgroup.kill" if found[1] else "SIGKILL to each pid in cgroup.procs"}


class Cgroup:
    """One process's cgroup: `wrap` its argv, `stop` it at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def make(cls) -> Cgroup | None:
        """A new, empty cgroup; None where cgroups cannot be used (status())."""
        found = parent()
        if isinstance(found, str):
            return None
        path = found / f"{PREFIX}{os.getpid()}-{next(_seq)}"
        try:
            path.mkdir()
        except OSError:
            return None
        return cls(path)

    def wrap(self, argv: list[str]) -> list[str]:
        """argv, run after its process entered this cgroup (same pid once it execs)."""
        return ["/bin/sh", "-c", SHIM, str(self.path / "cgroup.procs"), *argv]

    def pids(self) -> list[int]:
        return pids_in(self.path)

    def stop(self, pgid: int) -> list[Left]:
        """Kill everything in it and remove it; what was in it outside process
        group `pgid` (escaped it) before the kill."""
        left = []
        for pid in self.pids():
            stat = _stat(pid)
            if stat is not None and stat[1] != pgid:
                left.append(Left(pid, stat[0]))
        keeper.kill_cgroup(str(self.path))
        return left


def pids_in(path: Path) -> list[int]:
    """The pids in a cgroup and in its children."""
    return keeper.cgroup_pids(str(path))


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's comm and process group, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes().decode(errors="replace")
    except OSError:
        return None
    comm = raw[raw.index("(") + 1:raw.rindex(")")]
    return comm, int(raw[raw.rindex(")") + 2:].split()[2])
