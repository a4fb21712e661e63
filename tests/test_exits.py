"""Exit codes: one table (lab/setup/exits.py) that `make help` and docs/settings.md
show, and `make` passing the codes it can on (GNU make ends with 2 whenever a
recipe fails; an interrupt still reads 130 to its caller)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, free_port, lab, lab_env, run_folders
from lab.setup import exits
from lab.host import procs

pytestmark = pytest.mark.fault

STEPS = ("bench", "calibrate", "cost", "profile", "build", "rerun", "compare", "reproduce")


def make(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-s", "--no-print-directory", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.unit
def test_docs_table_is_the_generated_one() -> None:
    text = (ROOT / "docs" / "settings.md").read_text()
    m = re.search(r"<!-- exits:begin -->\n(.*?)\n<!-- exits:end -->", text, re.S)
    assert m, "docs/settings.md lacks its exits:begin/end markers"
    assert m.group(1) == exits.markdown_table(), \
        "docs/settings.md is stale: python3 -m lab exits --markdown gives the table"


def test_make_help_lists_every_code_and_what_make_gives(tmp_path: Path) -> None:
    out = make(lab_env(tmp_path), "help")
    assert out.returncode == 0, out.stderr
    for code, meaning in exits.TABLE:
        assert re.search(rf"^\s+{int(code)}\s+{re.escape(meaning)}", out.stdout, re.M), code
    assert "python3 -m lab compare A B" in out.stdout     # where 1 and 3 come from


@pytest.mark.unit
def test_every_lab_step_of_the_makefile_goes_through_step() -> None:
    """A recipe line that runs a step without $(call STEP,...) would turn its
    130 into make's 2."""
    text = (ROOT / "Makefile").read_text()
    for target in STEPS:
        recipe = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
        assert recipe, target
        lines = [ln for ln in recipe.group(1).replace("\\\n", " ").splitlines()
                 if "$(LAB)" in ln or "run-benchmark.sh" in ln]
        assert lines and all("$(call STEP," in ln for ln in lines), (target, lines)


def test_make_compare_on_bad_input_exits_2(tmp_path: Path) -> None:
    env = lab_env(tmp_path)
    missing = str(tmp_path / "no-such-run")
    direct = lab(env, "compare", missing, missing)
    assert direct.returncode == exits.Exit.BAD_INPUT, direct.stderr
    out = make(env, "compare", f"A={missing}", f"B={missing}")
    assert out.returncode == exits.Exit.BAD_INPUT, out.stderr
    assert "error:" in out.stderr


def test_make_bench_interrupted_in_its_step_ends_with_130(tmp_path: Path) -> None:
    """SIGTERM to the lab's sweep step alone (not to make): the step stops,
    run-benchmark.sh marks the run interrupted and ends with 130, and make,
    which would say 2, ends by SIGINT: the calling shell sees 130."""
    port = free_port()
    proc = bench_in_background(tmp_path, port)
    try:
        sweep = None
        deadline = time.monotonic() + 180
        while sweep is None and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            runs = run_folders(tmp_path)
            if runs and (runs[0] / "results.csv").exists():
                sweep = next(iter(step_pids(f"{runs[0]}")), None)
            time.sleep(0.2)
        assert sweep is not None, "the sweep step did not start in time"
        os.kill(sweep, signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "make status: 130" in out, (out, err[-2000:])
    [run] = run_folders(tmp_path)
    assert '"status": "interrupted"' in (run / "manifest.json").read_text()
    assert procs.listeners(port) == []


def make_pid(shell: int) -> int | None:
    """The `make` process the bash `shell` started."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == shell and argv[0].endswith(b"make"):
            return int(pid)
    return None


def script_pid(make: int) -> int | None:
    """run-benchmark.sh under `make` (its recipe's shell's child; not the
    script's watcher, a subshell of it)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"run-benchmark.sh") for a in argv) \
                and parent_of(parent_of(pid)) == make:
            return int(pid)
    return None


def parent_of(pid: int | str | None) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def sweeping(tmp_path: Path, proc: subprocess.Popen[str]) -> int:
    """make's PID, once the sweep has measured a level."""
    started = False
    deadline = time.monotonic() + 180
    while not started and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        runs = run_folders(tmp_path)
        started = bool(runs) and (runs[0] / "results.csv").exists()
        time.sleep(0.2)
    assert started, "the sweep did not start in time"
    pid = make_pid(proc.pid)
    assert pid is not None
    return pid


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_kill_of_make_s_pid_stops_the_run(tmp_path: Path, sig: signal.Signals) -> None:
    """`kill <make's PID>` (SIGTERM to make alone, as a user or a CI runner
    sends it): make ends, and run-benchmark.sh, which would go on holding
    its ports, gets it passed on: the run is marked interrupted, nothing
    listens, and no step of the lab is left (issue 54). `kill -INT <make's
    PID>` (`setsid make bench`: no terminal to press Ctrl-C in) does not end
    make: its handler waits for the recipe, which went on through every
    level; run-benchmark.sh sees it and stops, and make ends by SIGINT."""
    port = free_port()
    proc = bench_in_background(tmp_path, port)
    try:
        os.kill(sweeping(tmp_path, proc), sig)
        out, err = proc.communicate(timeout=120)
        [run] = run_folders(tmp_path)
        deadline = time.monotonic() + 60          # the script ends after make did
        while step_pids(f"{run}") and time.monotonic() < deadline:
            time.sleep(0.2)
        while '"status": "running"' in (run / "manifest.json").read_text() \
                and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert '"status": "interrupted"' in (run / "manifest.json").read_text(), err[-2000:]
    assert step_pids(f"{run}") == []
    until_free = time.monotonic() + 30
    while procs.listeners(port) and time.monotonic() < until_free:
        time.sleep(0.2)
    assert procs.listeners(port) == []
    if sig == signal.SIGINT:
        assert "make status: 130" in out, (out, err[-2000:])


def test_sigint_stops_a_make_started_with_it_ignored(tmp_path: Path) -> None:
    """make started with SIGINT ignored (`make bench &` in a script, nohup)
    keeps ignoring it, and so did run-benchmark.sh: a Ctrl-C that lands
    between two steps, or a kill -INT of the script, was lost and the run
    ended complete. The script starts again with SIGINT restored; what it
    cannot pass on (a SIGINT to make itself) it says at the start (issue 54)."""
    port = free_port()
    proc = bench_in_background(tmp_path, port, sigint=signal.SIG_IGN)
    try:
        script = script_pid(sweeping(tmp_path, proc))
        assert script is not None
        os.kill(script, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    [run] = run_folders(tmp_path)
    manifest = (run / "manifest.json").read_text()
    assert '"status": "interrupted"' in manifest, err[-2000:]
    assert "interrupted (SIGINT" in err and '"complete"' not in manifest
    assert re.search(r"make \(PID \d+\) ignores SIGINT", err), err[-2000:]
    assert step_pids(f"{run}") == []
    assert procs.listeners(port) == []


def bench_in_background(tmp_path: Path, port: int,
                        sigint: signal.Handlers = signal.SIG_DFL) -> subprocess.Popen[str]:
    """`make bench` of a long sweep of sturdy, from a shell of its own session
    that prints make's status at the end; make's SIGINT as `sigint` (ignored:
    as a script's `make bench &` starts it)."""
    env = lab_env(tmp_path, SERVER="sturdy", CONCURRENCY="1 2 3 4 5 6 7 8 9 10",
                  DURATION="2s", WARMUP="0", PORT=str(port))
    command = 'make -s --no-print-directory bench; echo "make status: $?"'
    if sigint == signal.SIG_IGN:
        command = f"trap '' INT; {command}"
    return subprocess.Popen(["bash", "-c", command], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=as_from_a_shell)


def as_from_a_shell() -> None:
    """The stop signals as a user's shell hands them to make: default, not
    blocked. make keeps ignoring a SIGINT ignored when it started, and then
    ends with 2. In two full runs on two pytest-xdist workers both tests
    here saw make end with 2, never alone or in one process; what in the
    worker's state did it was not found, so the child starts from a clean one."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def step_pids(run: str) -> list[int]:
    """`python3 -m lab sweep RUN ...` processes of this run."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"sweep" in argv and run.encode() in argv:
            found.append(int(pid))
    return found


def lab_step_pids(step: str, marker: str) -> list[int]:
    """`python3 -m lab STEP` processes whose environment holds `marker`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if argv[1:4] == [b"-m", b"lab", step.encode()] and b"--check" not in argv \
                and marker.encode() in environ:
            found.append(int(pid))
    return found


def test_make_cost_interrupted_in_its_step_ends_with_130(tmp_path: Path) -> None:
    """SIGTERM to `lab cost` alone, once its run folder exists: make ends by
    SIGINT, so the calling shell sees the step's 130, not make's 2."""
    port = free_port()
    env = lab_env(tmp_path, SERVER="nginx", COST_LEVELS="1", COST_REQUESTS="50000 100000",
                  REPEAT="1", PORT=str(port))
    proc = subprocess.Popen(["bash", "-c", 'make -s --no-print-directory cost; '
                             'echo "make status: $?"'], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=as_from_a_shell)
    try:
        step: list[int] = []
        deadline = time.monotonic() + 180
        while not step and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            if run_folders(tmp_path):            # the counting step, not `lab cost --check`
                step = lab_step_pids("cost", str(tmp_path / "results"))
            time.sleep(0.2)
        assert step and run_folders(tmp_path), "make cost did not start in time"
        os.kill(step[0], signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "make status: 130" in out, (out, err[-2000:])
    assert procs.listeners(port) == []
