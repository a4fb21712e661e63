"""The results folder: new run folders (never overwritten), whether one can
be made, a run whose lab is gone. What a run folder holds (manifest.json,
results.csv, results.json) is lab.record's (manifest, rows, outputs); their atomic writes are
lab.record.files'."""
from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.record import files, manifest
from lab.setup.whynot import Reason


MARK = ".lab-results"      # a RESULTS folder the lab made (or made a run in) holds this file


def mark(root: Path) -> None:
    """Mark `root` as a results folder of the lab's: its index.html is the lab's to write."""
    path = root / MARK
    if not os.path.lexists(path):       # a link there (dangling or not) is not written through
        files.write_atomic(path, "The lab's results folder: the lab writes index.html here.\n")


def new_folder(root: Path, base: str) -> Path:
    """Make root/<base>[-N], never an existing folder (nothing is overwritten),
    and mark root as the lab's results folder."""
    root.mkdir(parents=True, exist_ok=True)
    mark(root)
    for n in range(1, 1000):
        path = root / (base if n == 1 else f"{base}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"no free folder name for {base} under {root}")


def new_run(results: Path, servers: tuple[str, ...], tags: tuple[str, ...] = ()) -> Path:
    """Make results/<date>-<time>-<servers>[-<tag>...][-N]: the tags (a bench
    run's client and connection mode, e.g. wrk-close) tell runs of the same
    servers apart by name. The name is for people: readers take a run's
    conditions from its manifest, never from its name, so older names read
    the same."""
    names = "+".join(servers) if len(servers) <= 4 else f"{len(servers)}-servers"
    return new_folder(results, "-".join([time.strftime('%Y%m%d-%H%M%S'), names, *tags]))


def why_not_writable(results: Path) -> Reason:
    """Why run folders cannot be made under `results`, or None when they can.

    Tried for real rather than with os.access, which says yes to root on
    /proc or a read-only mount: a scratch folder with a file in it is made in
    `results`, or in its nearest existing ancestor when `results` does not
    exist yet, and removed again, so the check creates nothing either way.
    """
    existing = results
    while not os.path.lexists(existing):    # lexists: a dangling link is in the way too
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder, so no folder can be made under it"
    try:
        scratch = Path(tempfile.mkdtemp(prefix=".lab-write-test-", dir=existing))
    except OSError as e:
        return f"cannot make a folder in {existing} ({e.strerror or e})"
    try:
        (scratch / manifest.MANIFEST).write_text("{}\n")   # a run folder's first file
    except OSError as e:
        return f"cannot write a file in a new folder of {existing} ({e.strerror or e})"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return None





# ---------------------------------------------------------------- a run whose lab is gone

LOCK = "lock"      # run-benchmark.sh holds an flock on it while it or one of its steps lives


def lab_gone(run: Path) -> bool:
    """True when the run's lab took its lock once and nothing holds it any more:
    the script and every step of it ended. A lock file never written to
    (the few ms between `lab new-run` and the script's flock), or none (a run
    made by steps called one by one), says nothing: False."""
    try:
        fd = os.open(run / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False                # held: the lab still runs
        return True
    finally:
        os.close(fd)                    # (releases this check's own lock)


def mark_gone(run: Path) -> bool:
    """Mark a run "interrupted" when its manifest says running and its lab is
    gone (SIGKILL, the OOM killer, a reboot); True when it did. Only the
    statuses change and one problem is added: the rest of that run's manifest
    is written back as it was read (never upgraded to this lab's schema), and
    a manifest this lab cannot read is left alone."""
    if not lab_gone(run):
        return False

    def statuses(data: dict[str, Any]) -> bool:
        if data.get("status") != "running":
            return False
        servers = data.get("servers")
        for rec in servers.values() if isinstance(servers, dict) else []:
            if not isinstance(rec, dict):
                continue
            if rec.get("status") not in ("complete", "failed", "not loaded"):
                rec["status"] = "interrupted"
            for start in rec.get("starts") or []:
                if isinstance(start, dict) and \
                        start.get("status") in ("starting", "verified", "measuring"):
                    start["status"] = "interrupted"
        data["status"] = "interrupted"
        problems = data.get("problems")
        data["problems"] = (problems if isinstance(problems, list) else []) + [
            "interrupted: the lab's processes ended without finishing the run "
            "(killed, or the machine stopped); found by a later lab step"]
        return True
    try:
        with manifest.locked(run, make=False):
            path = run / manifest.MANIFEST
            data = files.read_json(path)
            manifest.parse_manifest(data, path)        # a manifest this lab reads, else untouched
            if not statuses(data):
                return False
            with files.last_words():
                files.write_json(path, data)
            return True
    except (OSError, files.RecordError):
        return False


def mark_gone_runs(results: Path) -> list[Path]:
    """mark_gone for every run folder under `results`; the ones marked."""
    if not results.is_dir():
        return []
    return [run for run in sorted(results.iterdir())
            if run.is_dir() and not run.is_symlink() and (run / LOCK).exists()
            and mark_gone(run)]
