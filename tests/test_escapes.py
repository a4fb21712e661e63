"""What a server leaves behind, shares or does around its own lifetime
(issue 44, sections 2, 3 and 8), with tests/servers/escaper:

- a grandchild that calls setsid and execs /bin/sleep with an emptied
  environment (out of its process group, without the lab's markers) is
  gone after the run, and the run records it; one that keeps the listening
  socket does not hold the port against the next run;
- the server's own child holding the port is said to be its own, and the
  levels measured stand;
- a server that exits right after it is ready is said to have exited, with
  its code;
- another process on the server's port (two runs on one PORT, SO_REUSEPORT)
  flags the levels measured meanwhile, which are not ranked."""
from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, bench, free_port, lab_env, leftovers, run_folders, until
from test_integrity import assert_legend

from lab.host import cgroup, procs
from lab.measure.launch import Knobs, ServerProcess
from lab.setup.paths import cache_dir
from lab.setup.servers import discover

pytestmark = pytest.mark.fault

SHORT = {"CONCURRENCY": "1 2", "DURATION": "1s", "WARMUP": "0"}
CGROUPS = pytest.mark.skipif(cgroup.status() != "",
                             reason=f"no cgroup of the lab's own here: {cgroup.status()}")


def manifest(run: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((run / "manifest.json").read_text())


def rows(run: Path) -> list[dict[str, str]]:
    with open(run / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def sleeps(port: int) -> list[int]:
    """The escaper's /bin/sleep of this port, wherever it is now."""
    needle = f"sleep\0{86400}.{port}\0".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == needle:
                found.append(int(pid))
        except OSError:
            continue
    return found


def orphan_cgroups() -> list[str]:
    """The lab's cgroups (lab-PID-N) whose step PID is gone: left behind."""
    under = cgroup.parent()
    if isinstance(under, str):
        return []
    steps = {c.name: c.name.split("-")[1] for c in under.glob(f"{cgroup.PREFIX}*-*")}
    return [name for name, pid in steps.items()
            if pid.isdigit() and not Path(f"/proc/{pid}").exists()]


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def one_run(tmp_path: Path, port: int, server: str, **settings: str
            ) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = bench(lab_env(tmp_path, SERVER=server, PORT=str(port), **{**SHORT, **settings}),
                timeout=600)
    runs = run_folders(tmp_path)
    assert runs, out.stderr[-3000:]
    return out, runs[-1]


@CGROUPS
@pytest.mark.parametrize("server", ["escaper", "escaper.port"])
def test_an_escaped_grandchild_is_gone_after_the_run(tmp_path: Path, port: int,
                                                     server: str) -> None:
    """make bench ends 0 and nothing of the server is left: not its setsid'd
    /bin/sleep with an emptied environment, not the port (the variant's
    sleep kept the listening socket); the start's record names what was
    left in its cgroup and killed. The next run on that port runs."""
    try:
        out, run = one_run(tmp_path, port, server)
        assert out.returncode == 0, out.stderr[-3000:]
        assert sleeps(port) == []
        assert procs.listeners(port) == []
        assert leftovers(run) == []
        until(lambda: orphan_cgroups() == [], 15, "no cgroup of a step that is gone")
        m = manifest(run)
        assert m["status"] == "complete", m["problems"]
        assert m["cgroups"]["used"] is True
        [start] = m["servers"][server]["starts"]
        assert [x["comm"] for x in start["left"]] == ["sleep"], start
        assert any("sleep (pid" in n and "killed with its cgroup" in n
                   for n in m["servers"][server]["notes"])
        again, _ = one_run(tmp_path, port, server)
        assert again.returncode == 0, again.stderr[-3000:]
    finally:
        kill_all(sleeps(port))


def test_the_run_says_whether_its_processes_had_cgroups(tmp_path: Path, port: int) -> None:
    """The manifest records it, and where there are none, the run warns."""
    out, run = one_run(tmp_path, port, "escaper.shares", ESCAPER_BIND_DELAY_S="0")
    assert out.returncode == 0, out.stderr[-3000:]
    assert manifest(run)["cgroups"] == cgroup.describe()
    assert ("warning: no cgroup of the lab's own here" in out.stderr) == \
        (cgroup.status() != "")


@CGROUPS
def test_the_server_s_own_child_on_its_port_is_said_so_and_the_levels_stand(
        tmp_path: Path, port: int) -> None:
    """Its child (setsid, environment kept) keeps the listening socket: it is
    named as the server's own, killed, and the run is complete with both
    levels (it said "held by python3 ...: stop that process" and "not
    measured (failed)" before)."""
    out, run = one_run(tmp_path, port, "escaper.child")
    assert out.returncode == 0, out.stderr[-3000:]
    m = manifest(run)
    assert m["status"] == "complete", m["problems"]
    assert not any("not measured" in p for p in m["problems"])
    assert len(rows(run)) == 2
    [start] = m["servers"]["escaper.child"]["starts"]
    assert [x["comm"] for x in start["left"]] == ["python3"]
    assert "its own child" in " ".join(m["servers"]["escaper.child"]["notes"])
    assert procs.listeners(port) == [] and leftovers(run) == []


def test_without_cgroups_the_server_s_own_child_on_its_port_is_killed(
        tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the lab has no cgroups, the server's own child that kept its
    environment and the port (escaper.child) is found on the port after the
    stop by the step's token, killed and named, not a busy port that stops
    the run."""
    monkeypatch.setattr(cgroup, "_found", lambda: "no cgroups in this test")
    server = discover(ROOT, str(FAKES))["escaper.child"]
    sp = ServerProcess(server, ROOT, cache_dir(), "test-escapes",
                       Knobs(port=port, workers=None, backlog=64, bind="127.0.0.1"), (0,),
                       tmp_path / "server.log")
    sp.start()
    try:
        sp.ready()
        child = [p for s in procs.listeners(port) for p in s.pids if p != sp.pid]
        assert child, procs.listeners(port)
        assert sp.strangers() == ""                 # its own child is no stranger
    finally:
        sp.stop()
    assert sp.left == [{"pid": child[0], "comm": "python3", "held_port": True}]
    assert procs.listeners(port) == []
    until(lambda: not Path(f"/proc/{child[0]}").exists() or
          Path(f"/proc/{child[0]}/stat").read_text().split(") ")[1].startswith("Z"), 10)


@pytest.mark.parametrize("probe", ["0", "1"])
def test_a_server_that_exits_once_ready_is_said_to_have_exited(tmp_path: Path, port: int,
                                                               probe: str) -> None:
    """It exits 0 after it accepted the readiness check: said so, with its
    code, by the sweep and by the probe, not as a refused connection or a
    server that stopped answering after a probe."""
    out, run = one_run(tmp_path, port, "escaper.quits", PROBE=probe)
    assert out.returncode != 0
    said = "\n".join([line for line in out.stderr.splitlines() if line.startswith("error:")]
                     + manifest(run)["problems"])
    assert "exited with code 0" in said, out.stderr[-3000:]
    assert "Connection refused" not in said and "stopped answering" not in said, said


def shared(run: Path) -> list[dict[str, str]]:
    return [r for r in rows(run) if "port-shared" in r["flags"].split()]


def test_a_process_that_joins_the_port_flags_the_levels_after(tmp_path: Path,
                                                              port: int) -> None:
    """Another process binds the server's port with SO_REUSEPORT once the
    first level is measured (as a second run's server does): the levels
    after that are flagged port-shared, with who held it, and not ranked."""
    env = lab_env(tmp_path, SERVER="escaper.shares", PORT=str(port), ESCAPER_BIND_DELAY_S="0",
                  CONCURRENCY="1 2 3 4", DURATION="1s", WARMUP="0")
    proc = subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    other = socket.socket()
    try:
        until(lambda: run_folders(tmp_path) and (run_folders(tmp_path)[0] / "results.csv")
              .exists() and rows(run_folders(tmp_path)[0]), 180, "a first level")
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        other.bind(("127.0.0.1", port))
        other.listen(16)
        _, err = proc.communicate(timeout=300)
    finally:
        other.close()
        if proc.poll() is None:
            proc.kill()
    [run] = run_folders(tmp_path)
    flagged = shared(run)
    assert flagged, err[-3000:]
    assert rows(run)[0] not in flagged                     # measured before it joined
    for r in flagged:
        assert "port shared" in r["unranked"] and f"port {port} also held by" in r["unranked"]
    summary = (run / "summary.md").read_text()
    assert "another process held its port" in summary
    assert_legend(run, "port-shared")


def test_two_runs_on_one_port_do_not_both_read_clean(tmp_path: Path, port: int) -> None:
    """Two make bench on one PORT started together, their servers binding with
    SO_REUSEPORT after both labs checked the port: they cannot both read
    complete with clean levels (each client loaded both servers)."""
    env = {"SERVER": "escaper.shares", "PORT": str(port), "ESCAPER_BIND_DELAY_S": "6", **SHORT}
    runs = []
    for side in ("a", "b"):
        top = tmp_path / side
        runs.append((top, subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT,
                                           env=lab_env(top, **env), text=True,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    said = []
    for top, proc in runs:
        _, err = proc.communicate(timeout=600)
        said.append(err[-2000:])
    clean = []
    for top, _ in runs:
        [run] = run_folders(top)
        m = manifest(run)
        if m["status"] == "complete" and not shared(run):
            clean.append(run)
    assert len(clean) < 2, said
    assert procs.listeners(port) == []


def escaping(tmp_path: Path, mark: int, then_sleep: bool = False) -> list[str]:
    """A command that leaves a setsid'd /bin/sleep 86400.MARK with an emptied
    environment behind (then sleeps itself, if asked)."""
    script = tmp_path / "escape.py"
    script.write_text("import os, time\n"
                      "if os.fork() == 0:\n"
                      "    os.setsid()\n"
                      "    if os.fork() == 0:\n"
                      f"        os.execve('/bin/sleep', ['sleep', '86400.{mark}'], {{}})\n"
                      "    os._exit(0)\n"
                      "os.wait()\n"
                      + ("time.sleep(900)\n" if then_sleep else ""))
    return ["python3", str(script)]


@CGROUPS
def test_a_client_s_escaped_grandchild_is_killed_and_named(tmp_path: Path) -> None:
    """A load client that leaves a setsid'd /bin/sleep with an emptied
    environment behind: killed with the client's cgroup, named in its run."""
    from lab.measure.topologies.local import LocalClientHost
    mark = free_port()
    try:
        ran = LocalClientHost().run_client(escaping(tmp_path, mark), (0,), dict(os.environ),
                                           tmp_path / "client.out", 60, lambda: True)
        assert ran.exit_code == 0, ran.stderr
        assert [x.partition(" ")[0] for x in ran.left] == ["sleep"], ran.left
        assert sleeps(mark) == []
    finally:
        kill_all(sleeps(mark))


def test_a_run_without_cgroups_says_so_in_its_summary(tmp_path: Path) -> None:
    """The manifest's cgroups, not used and why: a warning of the run's own."""
    import shutil
    saved = ROOT / "tests" / "fixtures" / "runs" / "20261123-033407-nginx+paced"
    run = tmp_path / "results" / saved.name
    shutil.copytree(saved, run)
    m = manifest(run)
    m["cgroups"] = {"used": False, "why": "no cgroup v2 hierarchy is mounted (cgroup v1 only)"}
    (run / "manifest.json").write_text(json.dumps(m))
    out = subprocess.run(["python3", "-m", "lab", "report", str(run)], cwd=ROOT,
                         env=lab_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    summary = (run / "summary.md").read_text()
    assert "had no cgroup of their own here (no cgroup v2 hierarchy is mounted" in summary


@CGROUPS
def test_the_keeper_kills_an_escaped_grandchild_of_a_vanished_step(tmp_path: Path) -> None:
    """A step SIGKILLed while a process it started has left a setsid'd
    /bin/sleep with an emptied environment behind: its keeper kills the
    cgroup, sleep included, and removes it."""
    mark = free_port()
    code = ("import os, subprocess, sys, time\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "from pathlib import Path\n"
            "from lab.host import procs\n"
            f"p = procs.start({escaping(tmp_path, mark, then_sleep=True)!r}, Path('/'),\n"
            "                dict(os.environ), subprocess.DEVNULL)\n"
            "print(procs._cgroups[p.pid].path, flush=True)\n"
            "time.sleep(900)\n")
    step = subprocess.Popen(["python3", "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert step.stdout is not None
        made = Path(step.stdout.readline().strip())
        until(lambda: len(sleeps(mark)) == 1, 10, "the escaped sleep")
        step.kill()
        step.wait()
        until(lambda: sleeps(mark) == [] and not made.exists(), 15, "the keeper's kill")
    finally:
        step.kill()
        kill_all(sleeps(mark))
