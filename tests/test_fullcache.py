"""A full LAB_CACHE (issue 44, §7): the lab says which path is full and
leaves an honest status, as it does on a full RESULTS (tests/test_hostile.py's
full disk): `make calibrate`'s record is not left "running", and a build
whose log could not be written whole is not called done.

A tmpfs of a few kilobytes makes the disk full: these tests need root, and
skip, saying so, without it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import free_port, lab, lab_env

pytestmark = [pytest.mark.fault, pytest.mark.root]


def small_disk(where: Path, size_kb: int) -> str | None:
    """`where` made a tmpfs of size_kb KiB; why not, else None."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "not root: no tmpfs can be mounted"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "lab-test",
                           str(where)], capture_output=True, text=True)
    return None if done.returncode == 0 else f"mount failed: {done.stderr.strip()}"


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Path]:
    """LAB_CACHE on a 40 KiB tmpfs."""
    where = tmp_path / "cache"
    why = small_disk(where, 40)
    if why:
        pytest.skip(why)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def no_traceback(out: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in out.stderr and "Traceback" not in out.stdout, out.stderr


def test_calibrate_on_a_full_cache_names_the_path_and_is_not_left_running(
        tmp_path: Path, cache: Path) -> None:
    """It said "No space left on device" without a path, and its manifest
    stayed "running"."""
    env = lab_env(tmp_path, LAB_CACHE=str(cache), CLIENTS="wrk", CONCURRENCY="1 2 4 8",
                  DURATION="1s", WARMUP="0", PORT=str(free_port()))
    env.pop("RESULTS")
    out = lab(env, "calibrate", timeout=300)
    no_traceback(out)
    assert out.returncode == 1, out.stderr
    [line] = [x for x in out.stderr.splitlines() if x.startswith("error:")]
    assert "LAB_CACHE is full: " + str(cache / "calibration") in line, line
    assert "No space left on device" in line
    assert not (cache / "calibration.json").exists()
    [sub] = [p.parent for p in (cache / "calibration").glob("*/*/manifest.json")]
    m = json.loads((sub / "manifest.json").read_text())
    assert m["status"] == "incomplete", m["status"]
    assert any("LAB_CACHE is full" in p for p in m["problems"]), m["problems"]
    assert {rec["status"] for rec in m["servers"].values()} == {"failed"}


CHATTY = """name = "chatterbox"
language = "shell"
framework = "none"
version = "1"

[build]
artifact = "out/built"
command = ["sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo compiling unit $i; i=$((i+1)); done; mkdir -p out; touch out/built"]

[run]
command = ["python3", "-c", "pass"]

[workers]
meaning = "none"
"""


def test_a_build_with_20_kb_free_is_not_called_done(tmp_path: Path, cache: Path) -> None:
    """A build printing ~40 KB into a cache with 20 KB free said "done" and
    left an empty log: its outcome, and what it built, cannot be trusted."""
    folder = tmp_path / "servers" / "chatterbox"
    folder.mkdir(parents=True)
    (folder / "server.toml").write_text(CHATTY)
    (cache / "filler").write_bytes(bytes(20 * 1024))
    env = lab_env(tmp_path, SERVER="chatterbox", LAB_SERVER_PATH=str(folder.parent),
                  LAB_CACHE=str(cache))
    out = lab(env, "build", "chatterbox", timeout=120)
    no_traceback(out)
    assert out.returncode == 1, out.stderr
    assert "build done" not in out.stderr and "up to date" not in out.stderr
    [line] = [x for x in out.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith("error: chatterbox: build not trusted: LAB_CACHE is full: "
                           + str(cache / "logs")), line
    kept = [p for p in (cache / "logs").iterdir() if p.stat().st_size]
    assert kept and f"output is kept in {kept[0]}" in line, line
    assert kept[0].read_text().startswith("\n$ sh -c")
    assert f"remove {folder / 'out' / 'built'}" in line
