"""Missing system packages: as a normal user, the exact apt-get line and exit 2."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

SYSTEM_PYTHON = "/usr/bin/python3"
CHECK = ("import sys; sys.path.insert(0, sys.argv[1]); from lab import deps; "
         "sys.exit(deps.ensure({'no-such-command-xyz': 'no-such-package-xyz', 'sh': 'dash'}))")


@pytest.mark.skipif(shutil.which("setpriv") is None or not Path(SYSTEM_PYTHON).exists(),
                    reason="needs setpriv and a system python3 to run as another user")
def test_normal_user_gets_the_apt_line_and_exit_2() -> None:
    out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          SYSTEM_PYTHON, "-c", CHECK, str(ROOT)],
                         capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 2, out.stderr
    assert ("apt-get update && apt-get install -y --no-install-recommends "
            "no-such-package-xyz") in out.stderr
    assert "dash" not in out.stderr                 # only what is missing
