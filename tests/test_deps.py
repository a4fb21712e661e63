"""Missing system packages: as a normal user, the exact apt-get line and exit 2."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.unit, pytest.mark.root]

SYSTEM_PYTHON = "/usr/bin/python3"
CHECK = ("import sys; sys.path.insert(0, sys.argv[1]); from lab.measure import deps; "
         "sys.exit(deps.ensure({'no-such-command-xyz': 'no-such-package-xyz', 'sh': 'dash'}))")


AS_NOBODY = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not Path(SYSTEM_PYTHON).exists(),
    reason="needs root, setpriv and a system python3 to run as another user")


@AS_NOBODY
def test_normal_user_gets_the_apt_line_and_exit_2(shared_checkout: Path) -> None:
    # nobody reads the lab from a shared copy: the checkout may be private
    out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          SYSTEM_PYTHON, "-c", CHECK, str(shared_checkout)],
                         capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 2, out.stderr
    assert ("apt-get update && apt-get install -y --no-install-recommends "
            "no-such-package-xyz") in out.stderr
    assert "dash" not in out.stderr                 # only what is missing


@AS_NOBODY
def test_make_test_as_a_normal_user_prints_the_pytest_apt_line(shared_checkout: Path) -> None:
    # -S: no site-packages, so pytest is missing whatever this host has;
    # PATH without /usr/bin: Debian's pytest-3 counts as absent too.
    no_path = shared_checkout / "empty-path"
    no_path.mkdir(mode=0o755)
    as_nobody = [shutil.which("setpriv") or "setpriv", "--reuid=nobody", "--regid=nogroup",
                 "--clear-groups"]
    out = subprocess.run([*as_nobody, shutil.which("make") or "make", "-s", "-C",
                          str(shared_checkout), "test", f"PYTHON={SYSTEM_PYTHON} -S"],
                         env={"PATH": str(no_path), "LANG": "C.UTF-8"},
                         capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 2, out.stderr
    assert ("as root run:\n  apt-get update && apt-get install -y --no-install-recommends "
            "python3-pytest\n") in out.stderr
    assert "pytest is missing" not in out.stderr and "deps" not in out.stdout + out.stderr


FAKE_APT = """#!/bin/sh
# apt-get stand-in: records its arguments; "install" provides what
# python3-pytest would, the pytest-3 command and an importable pytest
echo "$*" >> "$FAKE_APT_LOG"
case "$*" in
  *install*) printf '#!/bin/sh\\n' > "$FAKE_BIN/pytest-3"; chmod +x "$FAKE_BIN/pytest-3"
             : > "$FAKE_SITE/pytest.py" ;;
esac
"""


@pytest.mark.skipif(os.geteuid() != 0 or not Path(SYSTEM_PYTHON).exists(),
                    reason="the install path is root's")
def test_root_installs_pytest_through_the_labs_installer(tmp_path: Path) -> None:
    bin_dir, site = tmp_path / "bin", tmp_path / "site"
    bin_dir.mkdir()
    site.mkdir()
    apt = bin_dir / "apt-get"
    apt.write_text(FAKE_APT)
    apt.chmod(0o755)
    log = tmp_path / "apt.log"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(site), "FAKE_APT_LOG": str(log),
           "FAKE_BIN": str(bin_dir), "FAKE_SITE": str(site)}
    out = subprocess.run([SYSTEM_PYTHON, "-S", str(ROOT / "tests" / "need_pytest.py")],
                         env=env, capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "installing python3-pytest" in out.stderr
    assert log.read_text().splitlines() == [
        "-o DPkg::Lock::Timeout=600 update -qq",
        "-o DPkg::Lock::Timeout=600 install -y --no-install-recommends python3-pytest"]


def test_not_root_is_also_given_the_sudo_line(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A CI runner that is not root (GitHub's) is told the sudo line too (issue 30)."""
    from lab.measure import deps
    monkeypatch.setattr(deps.os, "geteuid", lambda: 1000)
    assert deps.ensure({"no-such-command-i30": "no-such-package"}) == 2
    err = capsys.readouterr().err
    assert "as root run:\n  apt-get update && apt-get install -y --no-install-recommends " \
        "no-such-package\n" in err
    assert "sudo apt-get update && sudo apt-get install -y --no-install-recommends " \
        "no-such-package" in err
