"""Where the lab keeps what it installs (LAB_CACHE, or .cache in the repo) and
finds servers (LAB_SERVER_PATH): the one reader of each (lab/setup/params.py declares them)."""
from __future__ import annotations

import errno
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the checkout: every module names it from here
PLOTS = ROOT / "plots"                       # the gnuplot files, one per chart


def cache_dir() -> Path:
    return Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()


def server_path() -> list[Path]:
    """LAB_SERVER_PATH: more folders with server manifests (colon-separated)."""
    return [Path(p).resolve() for p in os.environ.get("LAB_SERVER_PATH", "").split(":") if p]


def go_bin(cache: Path) -> Path:
    """Where the lab's Go-built tools (vegeta) are installed."""
    return cache / "go" / "bin"


# Free space below this on a disk the lab writes a log or a record to: what
# was written there last may have been cut short (a tmpfs block is 4 KiB).
NEARLY_FULL_BYTES = 16 * 1024


def free_bytes(folder: Path) -> int | None:
    """Bytes an unprivileged writer may still write on `folder`'s disk (None:
    it cannot be told)."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def nearly_full(folder: Path) -> bool:
    free = free_bytes(folder)
    return free is not None and free < NEARLY_FULL_BYTES


def cannot_write(folder: Path, e: OSError | None = None, setting: str = "LAB_CACHE") -> str:
    """Why the lab could not write in `folder` (in `setting`), naming the path
    (an OSError of a write to an open file names none) and, on a full disk,
    what to do."""
    free = free_bytes(folder)
    said = e.strerror or str(e) if e is not None else "No space left on device"
    full = e is None or e.errno in (errno.ENOSPC, errno.EDQUOT)
    where = str(e.filename) if e is not None and e.filename else str(folder)
    if not full:
        return f"{where}: {said}"
    room = f", {free:,} bytes free there" if free is not None else ""
    return (f"{setting} is full: {where}: {said}{room}; free space on that disk or set "
            f"{setting} to a folder on another")
