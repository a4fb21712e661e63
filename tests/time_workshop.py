"""Time each exercise of docs/workshop.md run as written (not short), for the
measured times the document gives. Run it alone on the 2-core VM, after
`make workshop-prepare`, with nothing else running:

    RESULTS=/tmp/workshop-timing python3 tests/time_workshop.py [N ...]

It reads the commands from the document as `make workshop-check` does
(tests/test_workshop.py), fills each `<run>` with the runs the exercise just
made, writes exercise 7's files into a scratch LAB_SERVER_PATH, and prints
one line per exercise: its wall time, and each command's exit code (make's:
the lab's 1 and 3 read 2). Exercise 2's wait for TIME_WAIT is not included:
it prints the count before the exercise instead."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import ROOT  # noqa: E402
from test_workshop import DOC, exercises, resolve, runs_in  # noqa: E402


def main(wanted: list[int]) -> int:
    results = Path(os.environ.get("RESULTS") or ROOT / "results").resolve()
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, RESULTS=str(results), LAB_SERVER_PATH=scratch)
        for ex in exercises(DOC.read_text()):
            if wanted and ex.number not in wanted:
                continue
            for path, code in ex.files.items():
                target = Path(scratch) / Path(path).relative_to("servers")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(code)
            if ex.number == 2:
                tw = subprocess.run(["ss", "-Htan", "state", "time-wait"],
                                    capture_output=True, text=True).stdout.count("\n")
                print(f"exercise 2: {tw} sockets in TIME_WAIT before it", flush=True)
            before = set(runs_in(results))
            made: list[Path] = []
            codes = []
            t0 = time.monotonic()
            for command in ex.commands:
                words = resolve(command, made)
                codes.append(subprocess.run(words, cwd=ROOT, env=env).returncode)
                made = [r for r in runs_in(results) if r not in before]
            took = time.monotonic() - t0
            print(f"exercise {ex.number}: {took / 60:.1f} min ({took:.0f} s), exit codes "
                  f"{codes}, runs: {' '.join(r.name for r in made)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main([int(a) for a in sys.argv[1:]]))
