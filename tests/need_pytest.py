"""`make test`'s first step: make sure this Python can import pytest.

Missing, it goes through the lab's own installer (lab/measure/deps.py): as root it
installs Debian's python3-pytest, otherwise it prints the exact apt-get line
and exits 2. Run as `python3 tests/need_pytest.py`, before pytest exists.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lab.measure import deps

# deps.ensure keys packages on a command; pytest-3 is the one only Debian's
# python3-pytest provides, so a pip-installed pytest elsewhere does not count.
PACKAGE = {"pytest-3": "python3-pytest"}


def importable() -> bool:
    importlib.invalidate_caches()            # apt may have just added it
    return importlib.util.find_spec("pytest") is not None


def workers_note() -> int:
    """make test runs the suite on three pytest-xdist workers where that plugin
    is importable (the Makefile's XDIST_ARGS); without it, in one process."""
    if importlib.util.find_spec("xdist") is None:
        print("note: pytest-xdist is not installed, so the suite runs in one process, "
              "about half again as long on two cores (32 minutes against 21 here); to use three workers: "
              f"{sys.executable} -m pip install pytest-xdist (Debian's python3: "
              "apt-get install python3-pytest-xdist)", file=sys.stderr)
    return 0


def main() -> int:
    if importable():
        return workers_note()
    code = deps.ensure(PACKAGE)
    if code != 0:
        return code
    if importable():
        return workers_note()
    # Installed, yet this interpreter is not the one Debian's package serves.
    print(f"error: python3-pytest is installed for /usr/bin/python3, but {sys.executable} "
          f"cannot import pytest: run {sys.executable} -m pip install pytest, "
          "or make test PYTHON=/usr/bin/python3", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
