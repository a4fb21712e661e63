"""TOPOLOGY ssh (SERVER_HOST, CLIENT_HOST), first its pieces, then for real:
emulated hosts (tests/sshhost.py: network namespaces, each with its own
OpenSSH server and a key made for the test) act as the server host and as
client hosts, and the lab runs against them as a user would, through
run-benchmark.sh. After every run, success, failure or Ctrl-C, nothing the
lab started may be left on any host: the hosts share this machine's process
table, so conftest.leftovers() sees their processes too, and each namespace
is searched for anything besides its sshd."""
from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT, bench, free_port, lab, lab_env, leftovers, run_folders
from lab.analyse import levelrow
from lab.host import tcpstat
from lab.record.rows import read_rows
from lab.measure.clients import Load
from lab.record.level import Level
from lab.setup.fromenv import from_env
from lab.setup.params import ConfigError
from lab.measure import probe
from lab.measure.topologies import ssh
from lab.measure.topologies.ssh import session as ssh_session, ship as ssh_ship
from lab.measure.clienthosts import split_load
from sshhost import Lan, lan_for
from test_acceptq import assert_deaf_flagged

pytestmark = [pytest.mark.fault, pytest.mark.root, pytest.mark.ssh]

KNOWN = ["nginx", "aws", "jersey"]
CLIENTS = {"siege": "concurrency", "wrk": "concurrency", "vegeta": "rate"}


# ---------------------------------------------------------------- pieces, no ssh

def params(**env: str):
    return from_env(env, KNOWN, CLIENTS, {0, 1})


@pytest.mark.parametrize("env, fragment", [
    ({"SSH_CONFIG": "/nonexistent/config", "SERVER_HOST": "root@x"},
     "SSH_CONFIG='/nonexistent/config': no readable file there"),
    ({"SSH_CONFIG": __file__}, "SSH_CONFIG is for real hosts over ssh"),
    ({"REMOTE_DIR": "lab"}, "REMOTE_DIR is for real hosts over ssh"),
    ({"REMOTE_DIR": "../up", "SERVER_HOST": "x"}, "REMOTE_DIR='../up'"),
    ({"REMOTE_DIR": "~", "SERVER_HOST": "x"}, "not the home or / itself"),
    ({"REMOTE_DIR": "a b", "SERVER_HOST": "x"}, "REMOTE_DIR='a b'"),
    ({"SERVER_HOST": "-oProxyCommand"}, "expected user@host or host"),
    ({"SERVER_HOST": "x", "SERVER_CPUS": "5000"}, "beyond any machine's"),
])
def test_ssh_settings_are_checked(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        params(**env)
    assert fragment in str(err.value)


@pytest.mark.unit
def test_cpus_of_another_host_are_not_checked_against_this_one() -> None:
    p = params(SERVER_HOST="root@big", SERVER_CPUS="0-7", CLIENT_CPUS="3",
               SSH_CONFIG=__file__, REMOTE_DIR="~/labs/x")
    assert p.topology == "ssh" and p.server_cpus == tuple(range(8)) and p.client_cpus == (3,)
    assert p.ssh_config == str(Path(__file__).resolve()) and p.remote_dir == "~/labs/x"
    with pytest.raises(ConfigError, match="CPU 7 does not exist here"):
        params(SERVER_CPUS="7")                        # the local topology still checks


@pytest.mark.unit
def test_a_level_is_shared_among_client_hosts() -> None:
    assert split_load(Load(concurrency=8), 2) == [Load(concurrency=4), Load(concurrency=4)]
    assert split_load(Load(concurrency=5), 3) == [Load(concurrency=2), Load(concurrency=2),
                                                  Load(concurrency=1)]
    assert split_load(Load(concurrency=1), 2) == [Load(concurrency=1), Load(concurrency=0)]
    assert split_load(Load(rate=1001), 2) == [Load(rate=501), Load(rate=500)]
    assert split_load(Load(concurrency=7), 1) == [Load(concurrency=7)]


def level(rate: float, n: int, failed: int, resp: float, p99: float | None) -> Level:
    return Level(transactions=n + failed, successful=n, failed=failed,
                 availability_pct=100.0 * n / (n + failed), elapsed_s=2.0, rate_rps=rate,
                 resp_ms=resp, in_flight=rate * resp / 1000, longest_ms=resp * 10,
                 data_mb=n / 1000, p50_ms=resp, p90_ms=resp, p99_ms=p99)


@pytest.mark.unit
def test_several_hosts_levels_combine() -> None:
    a, b = level(1000, 2000, 0, 1.0, 3.0), level(3000, 5998, 2, 2.0, 9.0)
    both = levelrow.combine([a, b])
    assert both.rate_rps == 4000 and both.successful == 7998 and both.failed == 2
    assert both.transactions == 8000
    assert both.resp_ms == pytest.approx((1.0 * 2000 + 2.0 * 6000) / 8000)
    assert both.p99_ms == 9.0 and both.longest_ms == 20.0      # the worst host's
    assert both.in_flight == pytest.approx(a.in_flight + b.in_flight)
    assert both.availability_pct == pytest.approx(100 * 7998 / 8000)
    assert levelrow.combine([a]) is a
    assert levelrow.combine([a, level(10, 20, 0, 1.0, None)]).p99_ms == 3.0


@pytest.mark.unit
def test_client_bound_applies_per_host() -> None:
    where = levelrow.Where(server="s", rep=1, axis="concurrency", value=8, concurrency=8,
                           offered_rps=None, workers=1, backlog=1, duration_s=2, server_cpus=1,
                           client_cpus=1, lab_cpus=3)
    m = dict(server_cpu_s=1.0, rss_end_kb=1, rss_peak_kb=1, threads_end=1, threads_peak=1,
             wall_s=2.0, host_busy_s=0.0, host_steal_s=0.0, sampler_cpu_s=0.0, time_wait=0)
    # 1.9 CPU seconds over two hosts of one CPU each: 95% of one host's, not of two
    row = levelrow.make_row(where, level(100, 200, 0, 1.0, 2.0),
                            levelrow.Measured(client_cpu_s=1.9, client_hosts_cpu_pct=(95.0, 0.0),
                                              **m))
    assert row.client_bound and row.client_cpu_pct == 95.0 and row.client_cpu_s == 1.9
    row = levelrow.make_row(where, level(100, 200, 0, 1.0, 2.0),
                            levelrow.Measured(client_cpu_s=1.6, client_hosts_cpu_pct=(80.0, 80.0),
                                              **m))
    assert not row.client_bound and row.client_cpu_pct == 80.0


@pytest.mark.unit
def test_paths_and_environment_as_the_remote_host_sees_them(tmp_path: Path) -> None:
    remote = ssh_session.Remote(dest="u@h", base="/home/u/lab", python="python3", boot_id="b",
                        netns="n", cpus=(0,), uid=1000, hostname="h")
    mapped = ssh_ship.path_map(remote)
    cache = ssh_ship.paths.cache_dir()
    assert mapped(str(ROOT / "servers/java/jersey")) == "/home/u/lab/root/servers/java/jersey"
    assert mapped(str(cache / "ada-bullseye")) == "/home/u/lab/cache/ada-bullseye"
    assert mapped(str(ROOT) + "2/x") == str(ROOT) + "2/x"          # not a path under ROOT
    assert mapped(f"--x={ROOT}/a b {ROOT}") == "--x=/home/u/lab/root/a b /home/u/lab/root"
    for first in ("/a/long/prefix", "/z"):       # a sibling of any mapped path, whatever its rank
        two = ssh_ship.PathMap([(first, "/r1"), ("/q/x", "/r2")])
        assert two(f"{first}2/y /q/x2 /q/x/y {first}/y") == f"{first}2/y /q/x2 /r2/y /r1/y"
    env = dict(os.environ, PORT="8080", LAB_ROOT=str(ROOT), LAB_RUN="r1", LAB_SCRATCH="/tmp/s",
               UNDERTOW_ANSWER_ON="io", JAVA_OPTS="-Xmx64m")
    got = ssh_ship.remote_env(env, mapped)
    assert got["LAB_ROOT"] == "/home/u/lab/root" and got["LAB_RUN"] == "r1"
    assert got["PORT"] == "8080" and got["JAVA_OPTS"] == "-Xmx64m"
    assert got["UNDERTOW_ANSWER_ON"] == "io"
    assert "LAB_SCRATCH" not in got and "PATH" not in got and "HOME" not in got


@pytest.mark.unit
def test_control_sockets_fit_the_path_limit() -> None:
    p = params(SERVER_HOST="someone@" + "h" * 60, SSH_CONFIG=__file__)
    link = ssh_session.SshLink.to(p.server_host, p)
    assert len(link.control) + len(".XXXXXXXXXXXXXXXX") < 100   # ssh adds a suffix at bind


def marked(run: str) -> list[int]:
    needle = f"LAB_RUN={run}".encode() + b"\0"
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_the_agent_runs_samples_and_stops_here(tmp_path: Path) -> None:
    """The agent's protocol, run here without ssh: a client's output and
    rusage, a sampler, a session stopped, and clients stopped at end of file."""
    run = f"agent-test-{os.getpid()}"
    agent = ssh_session.Session([sys.executable, str(ROOT / ssh_session.AGENT), "serve"], "agent")
    try:
        def ask(*request: object) -> dict:
            agent.send(json.dumps(list(request)))
            return agent.json(timeout=30)
        watched = ask("watch", os.getpid(), 0.05)
        assert watched["first"]["rss_kb"] > 0 and watched["first"]["threads"] >= 1
        n = ask("client_start", ["sh", "-c", "echo out; echo err >&2; exit 3"], "0",
                {"LAB_RUN": run}, str(tmp_path), str(tmp_path / "c"), "one")["client"]
        done = ask("client_wait", n, 10)
        assert done["done"] and done["exit_code"] == 3
        assert (done["stdout"], done["stderr"]) == ("out\n", "err\n")
        assert done["cpu_s"] >= 0 and done["wall_s"] > 0
        ended = ask("unwatch", watched["watch"])
        assert ended["last"]["rss_kb"] > 0 and ended["own_cpu_s"] >= 0
        # the host's TCP counters (lab.host.tcpstat), read by the agent
        assert set(ask("tcp_counters")["counters"]) == set(tcpstat.COUNTERS)
        # a port held here does not bind there (lab.host.procs.bind_error, shipped)
        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            held.listen()
            taken = ask("bindable", "127.0.0.1", held.getsockname()[1])
        assert taken["ok"] is False and taken["errno"] == errno.EADDRINUSE, taken
        assert ask("bindable", "127.0.0.1", 0) == {"ok": True}

        # a server's session: TERM, then KILL for what ignores it, marked ones too
        server = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 60 & sleep 60"],
                                  env=dict(os.environ, LAB_RUN=run), start_new_session=True)
        time.sleep(0.3)
        assert ask("alive", server.pid)["alive"]
        stopped = ask("stop", server.pid, 0.5, run)
        server.wait(timeout=10)
        assert server.pid in stopped["killed"] and stopped["left"] == []
        assert not ask("alive", server.pid)["alive"]

        n = ask("client_start", ["sleep", "60"], "0", {"LAB_RUN": run}, str(tmp_path),
                str(tmp_path / "c"), "two")["client"]
        assert not ask("client_wait", n, 0.1)["done"]
        assert marked(run)
    finally:
        agent.close(wait=15)                 # end of file: the agent stops its clients
    assert agent.popen.returncode == 0
    assert marked(run) == []


# ---------------------------------------------------------------- for real, emulated hosts

@pytest.fixture(scope="module")
def lan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lan]:
    yield from lan_for(tmp_path_factory, "t")


def ssh_env(tmp: Path, lan: Lan, **settings: str) -> dict[str, str]:
    return lab_env(tmp, **{"SSH_CONFIG": str(lan.config), "SERVER_HOST": lan.dest(0),
                           "PORT": str(free_port()), **settings})


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def nothing_left(run: Path, lan: Lan, params_env: dict[str, str]) -> None:
    """No process of the run here or on any host, no master connection open."""
    assert leftovers(run) == []
    assert lan.leftovers() == []                                
    p = from_env(params_env, ["nginx", "aws", "jersey", "paced"], CLIENTS)
    for dest in ssh.SshPlan.of(p).dests:
        assert not Path(ssh_session.SshLink.to(dest, p).control).exists(), dest


def test_unreachable_or_unfit_hosts_stop_the_run_before_anything_is_built(
        tmp_path: Path, lan: Lan) -> None:
    closed = lan.dest(0, "-closed")                              
    out = bench(ssh_env(tmp_path, lan, SERVER="nginx", SERVER_HOST=closed), timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"SERVER_HOST={closed}: ssh cannot reach it" in out.stderr
    assert "Connection refused" in out.stderr

    bare = lan.dest(1, "-bare")                                  
    out = bench(ssh_env(tmp_path, lan, SERVER="nginx", CLIENT="wrk", CLIENT_HOST=bare),
                timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"CLIENT_HOST={bare} lacks python3, taskset, rsync, wrk" in out.stderr

    out = bench(ssh_env(tmp_path, lan, SERVER="nginx", SERVER_CPUS="7"), timeout=120)
    assert out.returncode == 2, out.stderr
    assert f"SERVER_HOST={lan.dest(0)} has no CPU 7 for SERVER_CPUS" in out.stderr
    assert run_folders(tmp_path) == []
    assert "] build" not in out.stderr and "] setup" not in out.stderr


@pytest.mark.real_server
def test_aws_and_jersey_on_the_server_host(tmp_path: Path, lan: Lan) -> None:
    """The Ada server from its shipped Debian 11 root and a Java server from
    its shipped jar, verified and swept there; the client here. (The probe
    of a server there: test_two_client_hosts_drive_one_server_together; aws
    spins after a probe, so its probe waits 30 s for a quiet that never comes.)"""
    env = ssh_env(tmp_path, lan, SERVER="aws jersey", CONCURRENCY="1 4", DURATION="2s",
                  WARMUP="0", PROBE="0")
    out = bench(env, timeout=1800)
    assert out.returncode == 0, out.stderr[-4000:]
    [run] = run_folders(tmp_path)
    m = manifest(run)
    address = lan.hosts[0].address                               
    assert m["status"] == "complete"
    assert m["topology"] == f"ssh (server on {lan.dest(0)} at {address}; client here)"
    assert m["topology_details"]["bind"] == address and m["settings"]["SSH_CONFIG"]
    assert m["host"]["ssh"] == lan.dest(0) and m["host"]["cores"] >= 1
    assert m["client_hosts"] and m["client_hosts"][0]["hostname"]        # here, local
    for name in ("aws", "jersey"):
        rec = m["servers"][name]
        [start] = rec["starts"]
        assert start["listening"] == {"address": address, "backlog": 512}, name
        assert rec["facts"] and "error" not in rec["facts"], rec["facts"]
        log = (run / name / "server-rep1.log").read_text()
        assert f"lab-remote: pid {start['pid']} on {lan.dest(0)}" in log
    assert m["servers"]["aws"]["facts"]["toolchain"] == "rootfs"
    assert m["servers"]["aws"]["facts"]["rootfs_path"] == \
        m["topology_details"]["remote_folders"][lan.dest(0)] + "/cache/ada-bullseye"
    rows = read_rows(run)
    assert [(r.server, r.concurrency) for r in rows] == [("aws", 1), ("aws", 4),
                                                         ("jersey", 1), ("jersey", 4)]
    for r in rows:
        assert r.rate_rps > 0 and r.failed == 0 and r.rss_end_kb > 0 and r.threads_end >= 1
        assert r.server_cpu_s > 0 and r.client_cpu_s > 0
    nothing_left(run, lan, env)


def test_two_client_hosts_drive_one_server_together(tmp_path: Path, lan: Lan) -> None:
    hosts = f"{lan.dest(1)} {lan.dest(2)}"                        
    env = ssh_env(tmp_path, lan, SERVER="nginx", CLIENT="wrk", CLIENT_HOST=hosts,
                  CONCURRENCY="1 4", DURATION="2s", WARMUP="0", PROBE="1")
    out = bench(env, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    [run] = run_folders(tmp_path)
    m = manifest(run)
    assert m["status"] == "complete" and "load_split" in m["topology_details"]
    assert m["topology_details"]["client_hosts"] == hosts.split()
    assert [h["ssh"] for h in m["client_hosts"]] == hosts.split()     # each host's facts
    probed = json.loads((run / "nginx" / "probe.json").read_text())   # probed from here
    assert probed["host"] == lan.hosts[0].address and probed["still_answers"]
    assert [r["probe"] for r in probed["results"]] == [p.name for p in probe.PROBES]
    rows = {r.concurrency: r for r in read_rows(run)}
    lines = [json.loads(x) for x in (run / "nginx" / "client-hosts.jsonl").read_text()
             .splitlines()]
    by_tag = {x["tag"]: x for x in lines}
    one, four = by_tag["rep1-c1"], by_tag["rep1-c4"]
    assert [h["concurrency"] for h in one["hosts"]] == [1]                # the other sat out
    assert [(h["host"], h["concurrency"]) for h in four["hosts"]] == \
        [(d, 2) for d in hosts.split()]
    assert four["start_spread_s"] is not None and four["start_spread_s"] < 1.0
    assert rows[4].rate_rps == pytest.approx(sum(h["rate_rps"] for h in four["hosts"]),
                                             abs=0.1)
    assert rows[4].successful == sum(h["successful"] for h in four["hosts"])
    assert rows[4].client_cpu_pct == pytest.approx(max(h["client_cpu_pct"]
                                                       for h in four["hosts"]), abs=0.1)
    # the server host's kernel counters, read by its agent: no client shares its namespace
    tcp = rows[4].tcp()
    assert tcp is not None and tcp.netns == "server", rows[4].tcp_counters
    for i in range(2):
        text = (run / "nginx" / f"wrk-rep1-c4.h{i}.out").read_text()
        assert "wrk-report " in text
    nothing_left(run, lan, env)


def test_the_server_hosts_accept_queue_is_read_there(tmp_path: Path, lan: Lan) -> None:
    """The deaf double on the server host, the client here: its agent reads the
    listening socket's queue at each sample and its kernel's counters, where
    no client shares the namespace (issue 45 left this untested live). Its
    sampler there keeps no per-second samples: no series."""
    env = ssh_env(tmp_path, lan)
    run = assert_deaf_flagged(tmp_path, env, per_second=False)
    assert not list((run / "deaf").glob("series-*.csv"))
    assert manifest(run)["host"]["ssh"] == lan.dest(0)
    tcp = [r.tcp() for r in read_rows(run)]
    assert all(t is not None and t.netns == "server" for t in tcp), tcp
    nothing_left(run, lan, env)


def start_bench(env: dict[str, str], tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        runs = run_folders(tmp)
        if runs and read_rows(runs[0]):
            return proc, runs[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError("no level finished in time")


def client_running(lan: Lan, tool: str, proc: subprocess.Popen[str]) -> None:
    """Wait (polling, under a deadline) until a process of `tool` runs on one of
    the hosts: a level's client run, started after the level measured before it."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in lan.leftovers():                 # "<alias> <pid>: <command line>"
            argv = line.split(": ", 1)[1].split()
            if argv and Path(argv[0]).name == tool:
                return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError(f"no {tool} ran on a client host in time")


SLOW = {"SERVER": "nginx", "CONCURRENCY": "1 2 3 4 5 6 7 8", "DURATION": "2s", "WARMUP": "0"}


def test_ctrl_c_stops_everything_on_every_host(tmp_path: Path, lan: Lan) -> None:
    env = ssh_env(tmp_path, lan, CLIENT="wrk", CLIENT_HOST=lan.dest(1), **SLOW)
    proc, run = start_bench(env, tmp_path)
    client_running(lan, "wrk", proc)                 # the next level's client, on its host
    os.killpg(proc.pid, signal.SIGINT)               # what a terminal's Ctrl-C does
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    m = manifest(run)
    assert m["status"] == "interrupted" and m["servers"]["nginx"]["status"] == "interrupted"
    assert read_rows(run)
    nothing_left(run, lan, env)


def test_server_crash_on_the_server_host(tmp_path: Path, lan: Lan) -> None:
    env = ssh_env(tmp_path, lan, **SLOW)
    proc, run = start_bench(env, tmp_path)
    pid = manifest(run)["servers"]["nginx"]["starts"][-1]["pid"]
    os.kill(pid, signal.SIGKILL)          # the namespace host shares this process table
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "the server exited" in err and "finished levels are kept" in err
    m = manifest(run)
    assert m["status"] == "incomplete" and m["servers"]["nginx"]["status"] == "failed"
    assert 1 <= len(read_rows(run)) < 8
    nothing_left(run, lan, env)


def test_a_killed_steps_server_is_stopped_by_its_keeper(tmp_path: Path, lan: Lan) -> None:
    """A sweep step killed outright (SIGKILL: no cleanup of its own): its keeper
    stops the server's session there (the agent's `stop`), at once, without
    waiting for `lab down`."""
    env = ssh_env(tmp_path, lan, **SLOW)
    assert lab(env, "check").returncode == 0
    up = lab(env, "up")
    assert up.returncode == 0, up.stderr
    try:
        run = Path(lab(env, "new-run").stdout.strip())
        step = subprocess.Popen([sys.executable, "-m", "lab", "sweep", str(run), "nginx"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not read_rows(run):
            assert time.monotonic() < deadline and step.poll() is None
            time.sleep(0.2)
        assert leftovers(run)
        step.kill()
        step.wait()
        deadline = time.monotonic() + 30
        while leftovers(run) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert leftovers(run) == [], "the keeper should have stopped the server there"
    finally:
        down = lab(env, "down")
    assert down.returncode == 0, down.stderr
    nothing_left(run, lan, env)


def test_the_emulated_hosts_by_hand(tmp_path: Path) -> None:
    """`python3 -m tests.sshhost up|down`, as the docs tell a user."""
    if os.geteuid() != 0:
        pytest.skip("emulated ssh hosts need root (ip netns)")
    tag = f"c{os.getpid() % 10000}"
    folder = tmp_path / "hosts"
    up = subprocess.run([sys.executable, "-m", "tests.sshhost", "up", "--hosts", "1",
                         "--tag", tag, "--dir", str(folder)], cwd=ROOT, capture_output=True,
                        text=True, timeout=120)
    try:
        assert up.returncode == 0, up.stderr
        settings = dict(line.split("=", 1) for line in up.stdout.splitlines())
        assert settings["SERVER_HOST"] == f"root@sshh{tag}-a"
        hello = subprocess.run(["ssh", "-F", settings["SSH_CONFIG"], settings["SERVER_HOST"],
                                "cat /proc/self/net/dev | grep -c sshh; hostname"],
                               capture_output=True, text=True, timeout=60)
        assert hello.returncode == 0, hello.stderr
        assert hello.stdout.split()[0] == "1"        # one interface of the lab's: its own
    finally:
        down = subprocess.run([sys.executable, "-m", "tests.sshhost", "down", "--tag", tag,
                               "--dir", str(folder)], cwd=ROOT, capture_output=True, text=True,
                              timeout=120)
    assert down.returncode == 0, down.stderr
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"sshh{tag}" not in namespaces
