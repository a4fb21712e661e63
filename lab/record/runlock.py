"""A run's lock (<run>/lock, flock): held while the step that makes or adds to
a run lives, so that another step neither reads a run mid-way nor loads the
host under it, and a later step tells a run whose lab is gone (marked
interrupted, lab.record.folder.mark_gone) from one still going.

- run-benchmark.sh takes it with `flock` and its steps inherit the descriptor;
- `lab cost` (its own new run) and `lab profile` (a run it adds to) take it
  themselves (hold), and give their keeper a command that marks the run if
  they vanish (SIGKILL, the OOM killer): `lab gone RUN [NOTE]`;
- a step that reads or adds to a run (report, plots, compare, profile, rerun)
  refuses one held by another step (busy): exit 2. A step that inherited the
  holder's descriptor (run-benchmark.sh's own `lab report`) is the holder.
"""
from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from lab.record import files, folder
from lab.setup import paths
from lab.host import procs
from lab.setup.params import ConfigError



class Busy(ConfigError):
    """The run's lock is held by another live step: exit 2, nothing done."""


def _same_file(fd: int, st: os.stat_result) -> bool:
    try:
        here = os.fstat(fd)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (st.st_dev, st.st_ino)


def inherited(run: Path) -> bool:
    """True when this process has the run's lock file open (inherited from the
    script or step that holds it: it is that holder's own step)."""
    try:
        st = os.stat(run / folder.LOCK)
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return False
    return any(_same_file(int(fd), st) for fd in fds if fd.isdigit())


def holder(run: Path) -> str | None:
    """What holds the run's lock ("held by run-benchmark.sh"), when a live step
    other than this process and its holder holds it; None when it is free."""
    path = run / folder.LOCK
    if not path.exists() or inherited(run):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                text = files.read_bytes(path, 64 * 1024).decode(errors="replace").strip(
                    ).splitlines()
            except files.RecordError:
                text = []
            return text[-1] if text else "held"
        return None
    finally:
        os.close(fd)


def refuse_busy(run: Path, step: str) -> None:
    """Busy (exit 2) when another live step holds the run."""
    who = holder(run)
    if who is not None:
        raise Busy(f"{run} is still running ({who}): `{step}` waits until it ends; "
                   "run it again then")


def hold(run: Path, who: str) -> int:
    """Take the run's lock for this step (Busy when another step holds it); the
    descriptor (close-on-exec: not inherited by what the step starts) is kept
    until the step closes it or ends."""
    try:
        fd = files.open_fd(run / folder.LOCK, run, append=True)
    except OSError as e:
        raise files.UnsafePath(run / folder.LOCK, f"cannot be opened ({e.strerror or e})"
                               ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        who_else = holder(run) or "another step"
        raise Busy(f"{run} is still running ({who_else}): wait until it ends") from None
    os.write(fd, f"held by {who} (pid {os.getpid()})\n".encode())
    return fd


def guard(run: Path, remove: Path | None = None, problem: str = "") -> list[str]:
    """Tell the step's keeper what to do if the step vanishes (SIGKILL, the OOM
    killer): `lab gone RUN` marks the run interrupted (lab.record.folder.mark_gone),
    removes `remove` (a partial folder inside the run) and records `problem`.
    Returns the command, for unguard once the step has done it itself."""
    root = paths.ROOT
    argv = ["env", "-C", str(root), sys.executable, "-m", "lab", "gone", str(run.resolve())]
    if remove is not None:
        argv += ["--remove", str(remove.resolve())]
    if problem:
        argv += ["--problem", problem]
    procs.Keeper.undo(argv)
    return argv


def unguard(argv: list[str]) -> None:
    """The step ended by itself (its outcome recorded): no command to run."""
    procs.Keeper.done(argv)
