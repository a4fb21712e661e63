"""A failed setup or build prints the last lines of its own output, not of
the shared, appended log in LAB_CACHE/logs (a previous run's error, another
checkout's lines); the shared log still gets this output appended."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FAKES, MIRROR, ROOT, lab, lab_env, until
from lab.setup import sources

pytestmark = pytest.mark.unit


@pytest.mark.fault
def test_a_failed_ada_source_check_shows_only_its_own_output(tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    shutil.copytree(ROOT / MIRROR, mirror)
    ews = sources.load()["ews"]
    (mirror / ews.archive).unlink()
    cache = tmp_path / "cache"
    (cache / "logs").mkdir(parents=True)
    shared = cache / "logs" / "build-ews.log"
    shared.write_text("".join(f"OLD LINE {i} of another checkout\n" for i in range(40)))
    env = lab_env(tmp_path, SERVER="ews", ADA_SOURCES=str(mirror), LAB_CACHE=str(cache))
    out = lab(env, "build", "ews", timeout=300)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "not in ADA_SOURCES" in out.stderr
    assert "OLD LINE" not in out.stderr
    text = shared.read_text()
    assert text.startswith("OLD LINE 0") and "not in ADA_SOURCES" in text
    assert sorted(p.name for p in (cache / "logs").iterdir()) == ["build-ews.log"]


# A setup that fails when another one of the same server is inside it, and
# stays inside until the test lets it go.
SETUP = """mkdir inside || { echo "two setups of one server at once" >&2; exit 1; }
: > started
i=0
while [ ! -e go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
rmdir inside
"""
LOCKEE = """name = "lockee"
language = "shell"
framework = "none"
version = "1"

[setup]
command = ["sh", "setup.sh"]

[run]
command = ["python3", "-c", "pass"]

[workers]
meaning = "none"
"""


@pytest.mark.fault
def test_two_builds_in_one_cache_take_turns(tmp_path: Path) -> None:
    """Two `lab build` sharing LAB_CACHE (two `make bench` side by side): the
    second waits for the first, saying so, instead of setting the same server
    up at the same time (two toolchain.sh runs once raced on one temporary
    file)."""
    folder = tmp_path / "servers" / "lockee"
    folder.mkdir(parents=True)
    (folder / "server.toml").write_text(LOCKEE)
    (folder / "setup.sh").write_text(SETUP)
    env = lab_env(tmp_path, SERVER="lockee", LAB_SERVER_PATH=str(folder.parent),
                  LAB_CACHE=str(tmp_path / "cache"))
    argv = [sys.executable, "-m", "lab", "build", "lockee"]
    logs = [tmp_path / "first.err", tmp_path / "second.err"]
    with logs[0].open("w") as e1, logs[1].open("w") as e2:
        first = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=e1, stdout=subprocess.DEVNULL)
        second = None
        try:
            until(lambda: (folder / "started").exists() or first.poll() is not None,
                  why="the first setup starts")
            second = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=e2,
                                      stdout=subprocess.DEVNULL)
            until(lambda: "waiting for it to end" in logs[1].read_text()
                  or second.poll() is not None, why="the second build says it waits")
            assert second.poll() is None, logs[1].read_text()
            # a server with nothing to set up or build does not wait
            free = subprocess.run([*argv[:-1], "sturdy"], cwd=ROOT, timeout=60, text=True,
                                  env={**env, "LAB_SERVER_PATH": f"{folder.parent}:{FAKES}",
                                       "SERVER": "sturdy"}, capture_output=True)
            assert free.returncode == 0 and "another build" not in free.stderr, free.stderr
            (folder / "go").touch()
            codes = first.wait(timeout=60), second.wait(timeout=60)
        finally:
            for p in (first, second):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()
    errs = [log.read_text() for log in logs]
    assert codes == (0, 0), errs
    assert "another build holds" in errs[1] and "another build holds" not in errs[0]
    assert "[lockee] setup done" in errs[1]
