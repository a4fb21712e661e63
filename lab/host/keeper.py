"""The keeper: what a lab step started does not outlive the step, however it ends.

A step (`lab sweep`, `lab probe`, `lab calibrate` ...) starts one keeper the
first time it starts a process (lab.host.procs.start). The keeper runs this file as
a script, in a session of its own (a signal to the step's process group does
not reach it), and reads its standard input, the step's end of a pipe:

    group PGID        a process group the step started (a server, a client)
    cgroup PGID PATH  that group's cgroup v2 (lab/host/cgroup.py)
    free PGID         the step stopped that group (and removed its cgroup) itself
    undo JSON         a command to run if the step vanishes (docker rm -f ID)
    done JSON         that command is no longer needed

Only the step holds the pipe's write end (close-on-exec, never inherited by
what it starts), so the keeper reads end of file when the step is gone,
whether it returned, was interrupted, killed with SIGKILL or by the OOM
killer. It then kills, with SIGKILL, every group still registered, everything
in any cgroup of the step's still there, which it removes (that catches what
left its group with setsid and dropped its environment), and every process
whose environment carries the step's token (LAB_KEEPER=TOKEN, set by
lab.host.procs.start: it catches a process that left its group with setsid
but kept its environment, where there are no cgroups), runs the `undo`
commands, and exits. When the step stopped everything itself there is
nothing left to do.

Why not `setpriv --pdeathsig KILL` on each child: the parent-death signal
reaches only that child (nginx's workers and a shell's children survive
their parent), it fires when the *thread* that forked the child ends (the
lab starts clients from worker threads) and it is reset across a setuid
exec. A cgroup needs root (or a delegated hierarchy) and cgroup v2: the
lab uses one where it can, but a process that watches a pipe works in every
topology, for any user.

Standard library only, no import of the lab: it starts in a few ms.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

TOKEN_VARIABLE = "LAB_KEEPER"


def marked(token: str) -> list[int]:
    """Processes whose environment has LAB_KEEPER=token (other than this one)."""
    needle = f"{TOKEN_VARIABLE}={token}".encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read() + b"\0":
                    found.append(int(name))
        except OSError:
            continue
    return found


def cgroup_pids(path: str) -> list[int]:
    """The pids in a cgroup v2 and in its children."""
    found: list[int] = []
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            found = [int(x) for x in f.read().split()]
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                found += cgroup_pids(entry.path)
    except (OSError, ValueError):
        pass
    return found


def remove_cgroup(path: str, timeout: float) -> None:
    """Remove a cgroup (its children first) once its processes are gone."""
    try:
        children = [e.path for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for child in children:
        remove_cgroup(child, timeout)
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)


def kill_cgroup(path: str, timeout: float = 10.0) -> None:
    """SIGKILL everything in a cgroup v2 and remove it: cgroup.kill, else each
    pid (frozen first where cgroup.freeze exists, so that nothing forks
    meanwhile). The one owner, for the step (lab.host.cgroup) and for the
    keeper when a step vanished (stdlib only: the keeper imports no lab)."""
    try:
        with open(os.path.join(path, "cgroup.kill"), "w") as f:
            f.write("1")
    except OSError:
        freeze = os.path.join(path, "cgroup.freeze")
        frozen = write_quietly(freeze, "1")
        for _ in range(50):
            left = cgroup_pids(path)
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)
        if frozen:
            write_quietly(freeze, "0")
    remove_cgroup(path, timeout)


def write_quietly(path: str, text: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(text)
        return True
    except OSError:
        return False


def kill_all(groups: set[int], token: str, cgroups: list[str] | None = None) -> None:
    """SIGKILL the groups and the cgroups (every one the step made: one it
    freed but could not remove goes too), then whatever still carries the
    token (a few rounds: a process may fork while it is being killed)."""
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    for path in cgroups or []:
        kill_cgroup(path)
    for _ in range(20):
        left = marked(token)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def serve(token: str) -> None:
    groups: set[int] = set()
    cgroups: dict[str, None] = {}          # every cgroup the step made, in order
    undo: list[list[str]] = []
    for line in sys.stdin:
        word, _, rest = line.strip().partition(" ")
        try:
            if word == "group":
                groups.add(int(rest))
            elif word == "cgroup":
                _pgid, _, path = rest.partition(" ")
                cgroups[path] = None
            elif word == "free":
                groups.discard(int(rest))
            elif word == "undo":
                undo.append([str(a) for a in json.loads(rest)])
            elif word == "done":
                argv = [str(a) for a in json.loads(rest)]
                undo = [u for u in undo if u != argv]
        except ValueError:
            continue
    kill_all(groups, token, list(cgroups))
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)      # not inherited by the undo commands
    for argv in undo:
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
        except (OSError, subprocess.SubprocessError):
            pass


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)      # it ends when its step is gone, not before
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("-1000")                    # the OOM killer takes anything but it (root)
    except OSError:
        pass
    serve(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
