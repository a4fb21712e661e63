"""Time each exercise of docs/workshop.md run as written (not short), for the
measured times the document gives. Run it alone on the 2-core VM, after
`make workshop-prepare`, with nothing else running:

    RESULTS=/tmp/workshop-timing python3 tests/time_workshop.py [N ...]

It reads the commands from the document as `make workshop-check` does
(tests/test_workshop.py), fills each `<run>` with the runs the exercise just
made, writes exercise 7's files into a copy of the lab (as the check does:
a servers/hello a student left in the clone is not the text's), and prints
one line per exercise: its wall time, and each command's exit code (make's:
the lab's 1 and 3 read 2). Before exercise 2 it waits, as the text says,
until TIME_WAIT on the lab's PORT is near 0 (time_wait_command, as its first
line counts), and prints the count and the wait, which the exercise's time
leaves out."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import ROOT  # noqa: E402
from lab.setup.params import SETTINGS  # noqa: E402
from test_workshop import (DOC, check_env, exercises, lab_copy, resolve,  # noqa: E402
                           runs_in, write_files)


def time_wait_command(port: int) -> list[str]:
    """Exercise 2's first line (before its `| wc -l`): the sockets to and
    from the lab's PORT in TIME_WAIT, the exercise's own; a host-wide count
    holds other programs' sockets too, and may never come near 0."""
    return ["ss", "-Htan", "state", "time-wait", f"( sport = :{port} or dport = :{port} )"]


def time_wait_on(port: int) -> int:
    return subprocess.run(time_wait_command(port), capture_output=True,
                          text=True).stdout.count("\n")


def wait_near_zero(port: int, near: int = 100, most_s: float = 90.0) -> float:
    """As the text asks before exercise 2: wait until the lab's PORT has
    fewer than `near` sockets in TIME_WAIT (the kernel frees them within a
    minute); the seconds waited."""
    t0 = time.monotonic()
    while time_wait_on(port) >= near and time.monotonic() - t0 < most_s:
        time.sleep(2)
    return time.monotonic() - t0


def main(wanted: list[int]) -> int:
    results = Path(os.environ.get("RESULTS") or ROOT / "results").resolve()
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, RESULTS=str(results))
        for ex in exercises(DOC.read_text()):
            if wanted and ex.number not in wanted:
                continue
            root, here = ROOT, env
            if ex.files:                    # written into the clone: a copy of it
                root = lab_copy(ROOT, Path(scratch) / f"lab-{ex.number}")
                write_files(ex, root)
                here = check_env(env)
            if ex.number == 2:
                port = int(env.get("PORT") or SETTINGS["PORT"].default)
                print(f"exercise 2: {time_wait_on(port)} sockets on port {port} in TIME_WAIT "
                      f"before it; waited {wait_near_zero(port):.0f} s for near 0", flush=True)
            before = set(runs_in(results))
            made: list[Path] = []
            codes = []
            t0 = time.monotonic()
            for command in ex.commands:
                words = resolve(command, made, root)
                codes.append(subprocess.run(words, cwd=root, env=here).returncode)
                made = [r for r in runs_in(results) if r not in before]
            took = time.monotonic() - t0
            print(f"exercise {ex.number}: {took / 60:.1f} min ({took:.0f} s), exit codes "
                  f"{codes}, runs: {' '.join(r.name for r in made)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]]))
