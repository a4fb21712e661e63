"""lab.host.cgroup's reading of the host: where the cgroup2 hierarchy is
mounted (a unified host, a hybrid one, none) and the step's own cgroup."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab.host import cgroup

pytestmark = pytest.mark.unit

UNIFIED = """\
24 30 0:22 / /sys ro,nosuid - sysfs sysfs ro
26 24 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
"""
HYBRID = """\
36 25 0:31 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
37 36 0:32 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
44 36 0:39 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_ONLY = """\
36 25 0:31 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
37 36 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
"""


def test_the_cgroup2_mount_is_found_on_unified_and_hybrid_hosts() -> None:
    assert cgroup.v2_mount(UNIFIED) == (Path("/sys/fs/cgroup"), "/")
    assert cgroup.v2_mount(HYBRID) == (Path("/sys/fs/cgroup/unified"), "/")
    assert cgroup.v2_mount(V1_ONLY) is None


def test_the_step_s_own_cgroup_is_its_0_line() -> None:
    assert cgroup.own_path("4:memory:/a\n0::/user.slice/session-3.scope\n") == \
        "/user.slice/session-3.scope"
    assert cgroup.own_path("4:memory:/a\n1:cpu:/\n") is None


def test_the_run_s_record_says_used_or_why_not() -> None:
    said = cgroup.describe()
    if said["used"]:
        assert cgroup.status() == "" and said["kill"] in (
            "cgroup.kill", "SIGKILL to each pid in cgroup.procs")
        assert Path(str(said["under"]), "cgroup.procs").is_file()
    else:
        assert said["why"] == cgroup.status() != ""


@pytest.mark.root
def test_the_cgroups_of_a_step_that_is_gone_are_swept_and_a_live_steps_kept() -> None:
    """A cgroup a dead step left (lab-PID-N, empty or not) is killed and removed
    by the next step that looks for its cgroups; a live step's stays."""
    under = cgroup.parent()
    if isinstance(under, str):
        pytest.skip(f"no cgroups here: {under}")
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert not Path(f"/proc/{dead.pid}").exists()
    left = under / f"{cgroup.PREFIX}{dead.pid}-1"
    mine = under / f"{cgroup.PREFIX}{os.getpid()}-999999"
    left.mkdir()
    mine.mkdir()
    sleeper = subprocess.Popen(["/bin/sh", "-c", cgroup.SHIM, str(left / "cgroup.procs"),
                                "sleep", "60"])
    try:
        for _ in range(200):
            if cgroup.pids_in(left):
                break
            time.sleep(0.01)
        assert cgroup.pids_in(left) == [sleeper.pid]
        assert cgroup.sweep(under) == [left.name]
        assert not left.exists() and sleeper.wait(timeout=5) == -signal.SIGKILL
        assert mine.is_dir()
    finally:
        sleeper.kill()
        for path in (left, mine):
            if path.exists():
                path.rmdir()


BUSY = ("import time\nend = time.monotonic() + 0.35\n"
        "while time.monotonic() < end: pass\ntime.sleep(30)\n")


def test_a_tree_in_the_lab_s_cgroup_is_timed_to_the_microsecond() -> None:
    """A server started in a cgroup of the lab's: the sampler's CPU time is
    the cgroup's usage_usec (the scheduler's, where /proc counts 10 ms
    ticks), and agrees with /proc's within a few ticks; a process in no
    cgroup of the lab's (this one) has none, and keeps /proc's."""
    from lab.host import procfs
    made = cgroup.Cgroup.make()
    if made is None:
        pytest.skip(f"no cgroups here: {cgroup.status()}")
    assert cgroup.cpu_stat(os.getpid()) is None
    busy = subprocess.Popen(made.wrap([sys.executable, "-c", BUSY]), start_new_session=True)
    try:
        for _ in range(200):
            if cgroup.pids_in(made.path):
                break
            time.sleep(0.01)
        assert cgroup.cpu_stat(busy.pid) == made.path / "cpu.stat"
        with procfs.Sampler(busy.pid, interval=0.05) as s:
            time.sleep(0.6)
        assert s.first is not None and s.last is not None
        assert s.first.cg_cpu_s is not None and s.last.cg_cpu_s is not None
        ticks = s.last.cpu_s - s.first.cpu_s
        assert s.cpu_s == s.last.cg_cpu_s - s.first.cg_cpu_s
        # 0.35 s of busy loop, and the interpreter's start-up if the first sample came first
        assert 0.1 < s.cpu_s < 0.8 and abs(s.cpu_s - ticks) <= 0.05, (s.cpu_s, ticks)
        # a whole-tick count: the cgroup's is not one
        assert round(s.cpu_s * 100, 6) != round(s.cpu_s * 100)
    finally:
        made.stop(os.getpgid(busy.pid))
        busy.wait(timeout=5)
