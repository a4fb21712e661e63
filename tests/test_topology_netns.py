"""TOPOLOGY=netns: two network namespaces joined by a veth pair, optionally shaped.

Names: every namespace and veth these tests make starts with PREFIX and
carries a port no other test uses, so they never touch a real run's. After
each test, nothing of theirs may be left: no namespace, no veth, no process.
"""
from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import FAKES, ROOT, bench, free_port, lab, lab_env, leftovers, readable_copy, \
    run_folders
from lab.setup.fromenv import from_env
from lab.setup.params import ConfigError
from lab.measure.topologies import netns

pytestmark = [pytest.mark.fault, pytest.mark.root]

PREFIX = "labt"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                               reason="TOPOLOGY=netns needs root and iproute2")
SHORT = {"CONCURRENCY": "1 2 3 4 5 6", "DURATION": "2s", "WARMUP": "0"}


def params(port: int = 8080, **settings: str):  # type: ignore[no-untyped-def]
    env = {"TOPOLOGY": "netns", "PORT": str(port), "SERVER": "nginx", **settings}
    return from_env(env, ["nginx"], ["siege", "wrk"], available_cpus={0, 1})


def ours(port: int) -> netns.Names:
    return netns.Names(PREFIX, port)


def namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def devices_here() -> list[str]:
    return sorted(os.listdir("/sys/class/net"))


def ns_inode(name: str) -> int:
    return os.stat(f"/run/netns/{name}").st_ino


def processes_in(inode: int) -> list[int]:
    """Every process whose network namespace is `inode` (a namespace outlives
    its name while one is left in it, and keeps its veth end with it)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino == inode:
                found.append(int(pid))
        except OSError:
            continue
    return found


def assert_gone(port: int) -> None:
    n = ours(port)
    assert n.server_ns not in namespaces() and n.client_ns not in namespaces()
    assert n.server_dev not in devices_here() and n.client_dev not in devices_here()


@pytest.fixture
def netns_env(tmp_path: Path) -> Iterator[tuple[dict[str, str], int]]:
    """Settings for a netns run on a port of its own; its namespaces removed afterwards
    even when the test failed (the test itself asserts the lab removed them)."""
    port = free_port()
    env = lab_env(tmp_path, TOPOLOGY="netns", PORT=str(port), LAB_NETNS_PREFIX=PREFIX,
                  SERVER="nginx")
    try:
        yield env, port
    finally:
        if os.geteuid() == 0:
            netns.remove(ours(port))


# ---------------------------------------------------------------- names, addresses, shaping

@pytest.mark.unit
def test_names_fit_and_addresses_never_collide() -> None:
    subnets = set()
    for port in range(1024, 65536):
        n = netns.Names("abcde", port)                  # the longest prefix allowed
        assert len(n.server_dev) <= 15 and len(n.client_dev) <= 15
        assert n.subnet.subnet_of(netns.NETWORK)
        subnets.add(n.subnet)
    assert len(subnets) == 65536 - 1024
    n = netns.Names("lab", 8080)
    assert (n.server_ns, n.client_ns) == ("lab-s8080", "lab-c8080")
    assert ipaddress.ip_address(n.server_addr) in n.subnet
    assert ipaddress.ip_address(n.client_addr) in n.subnet
    assert n.server_addr != n.client_addr
    assert not ipaddress.ip_address(n.server_addr).is_loopback


@pytest.mark.unit
@pytest.mark.parametrize("value", ["LAB", "1ab", "toolong", "a-b", "a b"])
def test_a_bad_prefix_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(netns.PREFIX_ENV, value)
    with pytest.raises(ConfigError, match="LAB_NETNS_PREFIX"):
        netns.prefix()


@pytest.mark.unit
def test_rates_in_tc_units() -> None:
    assert netns.rate_bits("1gbit") == 1e9
    assert netns.rate_bits("100mbit") == 1e8
    assert netns.rate_bits("1.5kbit") == 1500
    assert netns.rate_bits("10mbps") == 8e7            # tc's bps are bytes
    with pytest.raises(ConfigError):
        netns.rate_bits("fast")


@pytest.mark.unit
def test_shaping_is_tbf_for_the_rate_and_netem_for_the_delay() -> None:
    assert netns.qdiscs("", "") == []
    [tbf] = netns.qdiscs("1gbit", "")
    assert tbf[:6] == ["root", "handle", "1:", "tbf", "rate", "1gbit"]
    burst = int(tbf[tbf.index("burst") + 1])
    assert burst == 125_000                             # 1 ms of 1 Gbit/s
    assert int(tbf[tbf.index("burst") + 1]) >= 16 * 1024
    assert int(netns.qdiscs("1mbit", "")[0][7]) == 16 * 1024
    tbf, netem = netns.qdiscs("1gbit", "0.1ms")
    assert netem[:7] == ["parent", "1:1", "handle", "10:", "netem", "delay", "0.1ms"]


@pytest.mark.unit
def test_the_topology_binds_the_servers_address_only() -> None:
    topo = netns.topology(params(8080, LINK="1gbit"))
    n = netns.Names(netns.prefix(), 8080)
    assert topo.name == "netns" and topo.summary.split()[0] == "netns"
    assert topo.bind == topo.connect == n.server_addr
    assert not ipaddress.ip_address(topo.bind).is_unspecified
    described = topo.describe()
    json.dumps(described)                               # the manifest can hold it
    assert described["bind"] == n.server_addr
    assert described["names"]["client_address"] == n.client_addr
    assert described["link"]["tc"] == [
        f"tc -n {ns} qdisc add dev {ns} root handle 1: tbf rate 1gbit burst 125000 "
        f"limit {netns.TX_QUEUE * netns.WIRE_FRAME}" for ns in (n.server_ns, n.client_ns)]
    # one machine: CPU time is counted once over both sides' CPUs
    assert topo.clients[0].same_host_as(topo.server)


@pytest.mark.unit
def test_the_plan_names_the_topologys_address_not_bind() -> None:
    from lab.cli.prepare import plan
    p = params(8080)
    assert "(netns address):8080" in plan(p) and "127.0.0.1" not in plan(p)
    assert f"{netns.topology(p).bind}:8080" in plan(p, netns.topology(p).bind)


def test_link_settings_need_netns() -> None:
    with pytest.raises(ConfigError, match="TOPOLOGY=netns"):
        from_env({"LINK": "1gbit", "SERVER": "nginx"}, ["nginx"], ["siege"],
                 available_cpus={0, 1})


# ---------------------------------------------------------------- check, as root and not

@ROOT_ONLY
def test_check_as_root_passes_and_names_the_plan(netns_env: tuple[dict[str, str], int]) -> None:
    env, _port = netns_env
    out = lab(env, "check", timeout=60)
    assert out.returncode == 0, out.stderr


@ROOT_ONLY
def test_bind_cannot_be_chosen(netns_env: tuple[dict[str, str], int]) -> None:
    env, _port = netns_env
    out = lab({**env, "BIND": "0.0.0.0"}, "check", timeout=60)
    assert out.returncode == 2
    assert "TOPOLOGY=netns sets the server's address itself" in out.stderr


@ROOT_ONLY
def test_link_delay_needs_netem(netns_env: tuple[dict[str, str], int]) -> None:
    """With netem in the kernel, the delay is a netem qdisc under the tbf on
    both ends; without it, `lab check` says so and exits 2."""
    env, port = netns_env
    env = {**env, "LINK": "1gbit", "LINK_DELAY": "0.1ms"}
    has_netem, _ = netns.kernel_has(["tc", "qdisc", "add", "dev", "lo", "root", "netem",
                                     "delay", "1ms"])
    if not has_netem:
        out = lab(env, "check", timeout=60)
        assert out.returncode == 2
        assert "LINK_DELAY: this kernel has no tc qdisc netem" in out.stderr
        assert "modprobe sch_netem" in out.stderr
        return
    up = lab(env, "up", timeout=60)
    assert up.returncode == 0, up.stderr
    n = ours(port)
    for ns in (n.server_ns, n.client_ns):
        shown = subprocess.run(["tc", "-n", ns, "qdisc", "show", "dev", ns],
                               capture_output=True, text=True, check=True).stdout
        assert "tbf 1: root" in shown and "netem 10: parent 1:1" in shown
        assert "delay 100us" in shown or "delay 0.1ms" in shown
    assert lab(env, "down", timeout=60).returncode == 0
    assert_gone(port)


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None
                    or not Path(SYSTEM_PYTHON).exists(),
                    reason="needs root, setpriv and a system python3 to run as another user")
def test_without_root_check_exits_2_saying_so() -> None:
    top = Path(tempfile.mkdtemp(prefix="lab-netns-", dir="/tmp"))
    try:
        checkout = readable_copy(top / "lab")
        shutil.copytree(FAKES, checkout / "fakes")
        results, cache = top / "results", top / "cache"
        for folder in (results, cache):           # lab check requires both writable
            folder.mkdir(mode=0o777)
            folder.chmod(0o777)
        for path in [top, *checkout.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "TOPOLOGY": "netns", "SERVER": "sturdy", "PORT": str(free_port()),
               "LAB_SERVER_PATH": str(checkout / "fakes"), "RESULTS": str(results),
               "LAB_CACHE": str(top / "cache"), "LAB_NETNS_PREFIX": PREFIX}
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              SYSTEM_PYTHON, "-m", "lab", "check"], cwd=checkout, env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2, out.stderr
        assert "TOPOLOGY=netns makes network namespaces" in out.stderr
        assert "needs root" in out.stderr
        assert not list(results.iterdir())                 # nothing made
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ---------------------------------------------------------------- up and down by hand

@ROOT_ONLY
def test_up_makes_two_hosts_joined_by_a_veth_and_down_removes_them(
        netns_env: tuple[dict[str, str], int], monkeypatch: pytest.MonkeyPatch) -> None:
    env, port = netns_env
    n = ours(port)
    out = lab(env, "up", timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"{n.client_addr} -> {n.server_addr}" in out.stderr
    assert {n.server_ns, n.client_ns} <= set(namespaces())
    assert n.server_dev not in devices_here()             # nothing of ours in this host's
    for ns, dev, addr in n.sides():
        shown = subprocess.run(["ip", "-n", ns, "-o", "-4", "addr", "show", "dev", dev],
                               capture_output=True, text=True, check=True).stdout
        assert f"inet {addr}/30" in shown
        peer = subprocess.run(["ip", "-n", ns, "-d", "link", "show", dev],
                              capture_output=True, text=True, check=True).stdout
        assert "veth" in peer and "mtu 1500" in peer
    # the emulated hosts start from this host's sysctls (somaxconn caps backlogs)
    here = Path("/proc/sys/net/core/somaxconn").read_text().strip()
    there = subprocess.run(["ip", "netns", "exec", n.server_ns, "cat",
                            "/proc/sys/net/core/somaxconn"], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert there == here

    # a connection from the client's side crosses the pair (the server's end counts it)
    def rx() -> int:
        return int(subprocess.run(["ip", "netns", "exec", n.server_ns, "cat",
                                   f"/sys/class/net/{n.server_dev}/statistics/rx_packets"],
                                  capture_output=True, text=True, check=True).stdout)
    before = rx()
    listener = netns.inside(n.server_ns, lambda: socket.create_server((n.server_addr, 0)))
    with listener:
        target = listener.getsockname()
        netns.inside(n.client_ns, lambda: socket.create_connection(target, timeout=5).close())
    assert rx() > before
    # nothing listens in this host's namespace on that address
    with pytest.raises(OSError):
        socket.create_connection((n.server_addr, target[1]), timeout=1).close()

    # TIME_WAIT is counted in each namespace: here the server closes first
    monkeypatch.setenv(netns.PREFIX_ENV, PREFIX)
    topo = netns.topology(params(port))
    listener = netns.inside(n.server_ns, lambda: socket.create_server((n.server_addr, 0)))
    with listener:
        client = netns.inside(n.client_ns,
                              lambda: socket.create_connection(listener.getsockname(), 5))
        accepted, _ = listener.accept()
        accepted.close()                                # the server's side closes first
        client.recv(1)
        client.close()
    deadline = time.monotonic() + 10
    while topo.server.time_wait_sockets() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert topo.server.time_wait_sockets() == 1
    assert topo.clients[0].time_wait_sockets() == 0
    assert topo.time_wait() == 1

    # up again: the same names are made afresh (leftovers removed first)
    inode = ns_inode(n.server_ns)
    again = lab(env, "up", timeout=60)
    assert again.returncode == 0, again.stderr
    assert ns_inode(n.server_ns) != inode

    assert lab(env, "down", timeout=60).returncode == 0
    assert_gone(port)
    assert lab(env, "down", timeout=60).returncode == 0     # idempotent


@ROOT_ONLY
def test_a_namespace_in_use_is_not_taken_and_down_stops_what_is_left(
        netns_env: tuple[dict[str, str], int]) -> None:
    env, port = netns_env
    n = ours(port)
    assert lab(env, "up", timeout=60).returncode == 0
    inode = ns_inode(n.server_ns)
    squatter = subprocess.Popen(["ip", "netns", "exec", n.server_ns, "sleep", "300"],
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while squatter.pid not in processes_in(inode) and time.monotonic() < deadline:
            time.sleep(0.05)
        out = lab(env, "check", timeout=60)
        assert out.returncode == 2
        assert f"network namespace {n.server_ns} is in use by pid {squatter.pid}" in out.stderr
        assert lab(env, "up", timeout=60).returncode == 2
        assert ns_inode(n.server_ns) == inode              # left alone
        # down: what runs inside is stopped, then the namespaces go
        assert lab(env, "down", timeout=60).returncode == 0
        assert squatter.wait(timeout=10) is not None
    finally:
        if squatter.poll() is None:
            squatter.kill()
            squatter.wait()
    assert_gone(port)
    assert processes_in(inode) == []


@ROOT_ONLY
def test_a_step_without_up_exits_2_saying_what_to_do(
        netns_env: tuple[dict[str, str], int], tmp_path: Path) -> None:
    env, port = netns_env
    out = lab(env, "sweep", str(tmp_path / "no-run"), "nginx", timeout=60)
    assert out.returncode == 2
    assert f"network namespace {ours(port).client_ns} does not exist" in out.stderr
    assert "lab up" in out.stderr


@ROOT_ONLY
def test_a_pair_left_in_this_hosts_namespace_is_removed(
        netns_env: tuple[dict[str, str], int]) -> None:
    env, port = netns_env
    n = ours(port)
    subprocess.run(["ip", "link", "add", n.server_dev, "type", "veth", "peer", "name",
                    n.client_dev], check=True)
    try:
        out = lab(env, "up", timeout=60)
        assert out.returncode == 0, out.stderr
        assert n.server_dev not in devices_here() and n.client_dev not in devices_here()
    finally:
        subprocess.run(["ip", "link", "delete", n.server_dev], capture_output=True)
    assert lab(env, "down", timeout=60).returncode == 0
    assert_gone(port)


@ROOT_ONLY
def test_link_shaping_holds_a_bulk_transfer_to_the_rate(
        netns_env: tuple[dict[str, str], int]) -> None:
    """LINK=20mbit: tbf on both ends; a transfer that wants more is held back
    (the qdisc counts overlimits) and never exceeds the rate plus one bucket."""
    env, port = netns_env
    n = ours(port)
    env = {**env, "LINK": "20mbit"}
    out = lab(env, "up", timeout=60)
    assert out.returncode == 0, out.stderr
    for ns in (n.server_ns, n.client_ns):
        shown = subprocess.run(["tc", "-n", ns, "qdisc", "show", "dev", ns],
                               capture_output=True, text=True, check=True).stdout
        assert "tbf 1: root" in shown and "rate 20Mbit" in shown
    listener = netns.inside(n.server_ns, lambda: socket.create_server((n.server_addr, 0)))
    received = [0]

    def sink() -> None:
        conn, _ = listener.accept()
        with conn:
            while chunk := conn.recv(1 << 16):
                received[0] += len(chunk)

    reader = threading.Thread(target=sink, daemon=True)
    reader.start()
    seconds = 1.0

    def flood() -> float:
        with socket.create_connection(listener.getsockname(), timeout=5) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
            block = b"x" * 65536
            t0 = time.monotonic()
            s.settimeout(0.2)
            while time.monotonic() - t0 < seconds:
                try:
                    s.send(block)
                except socket.timeout:
                    pass
            return time.monotonic() - t0

    try:
        took = netns.inside(n.client_ns, flood)
        reader.join(timeout=10)
    finally:
        listener.close()
    stats = subprocess.run(["tc", "-s", "-n", n.client_ns, "qdisc", "show", "dev", n.client_ns],
                           capture_output=True, text=True, check=True).stdout
    overlimits = int(stats.split("overlimits")[1].split()[0])
    assert overlimits > 0, stats                        # the bucket ran dry: shaping acted
    burst = int(netns.qdiscs("20mbit", "")[0][7])
    queue = netns.TX_QUEUE * netns.WIRE_FRAME
    # what got through: at most the rate for the time, one bucket, the queue it drained
    assert received[0] <= 20e6 / 8 * (took + 1.0) + burst + queue, (received[0], took)
    assert lab(env, "down", timeout=60).returncode == 0
    assert_gone(port)


# ---------------------------------------------------------------- the pipeline, end to end

def manifest(run: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((run / "manifest.json").read_text())


def rows(run: Path) -> list[str]:
    csv = run / "results.csv"
    return csv.read_text().splitlines()[1:] if csv.exists() else []


@ROOT_ONLY
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_mid_sweep_leaves_nothing(tmp_path: Path,
                                              netns_env: tuple[dict[str, str], int],
                                              how: signal.Signals) -> None:
    env, port = netns_env
    n = ours(port)
    env = {**env, "LINK": "1gbit", **SHORT}
    proc = subprocess.Popen([str(ROOT / "run-benchmark.sh")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    inodes: list[int] = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            runs = run_folders(tmp_path)
            if runs and rows(runs[0]):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        else:
            raise AssertionError("no level finished in time")
        [run] = run_folders(tmp_path)
        inodes = [ns_inode(n.server_ns), ns_inode(n.client_ns)]
        server_pid = manifest(run)["servers"]["nginx"]["starts"][-1]["pid"]
        assert processes_in(inodes[0]) and server_pid in processes_in(inodes[0])
        os.killpg(proc.pid, how)                          # Ctrl-C, or a kill of the group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # Ctrl-C or a SIGTERM to the group: the step stops, the script finishes
    # the run and exits 130.
    assert proc.returncode == 130, err
    m = manifest(run)
    assert m["status"] == "interrupted", m["problems"]
    assert m["servers"]["nginx"]["status"] == "interrupted"
    assert "interrupted" in " ".join(m["problems"])
    assert len(rows(run)) >= 1                            # what was measured is kept
    assert_gone(port)
    assert all(processes_in(i) == [] for i in inodes)     # the namespaces are really gone
    assert leftovers(run) == []


def short_sweep(tmp_path: Path, env: dict[str, str], port: int, server: str
                ) -> tuple[Path, dict]:  # type: ignore[type-arg]
    """A short netns sweep through run-benchmark.sh, with the probe; checked
    for what every server's run must show."""
    n = ours(port)
    out = bench({**env, "SERVER": server, "LINK": "1gbit", "CONCURRENCY": "1 8",
                 "DURATION": "1s", "WARMUP": "0", "PROBE": "1", "CLIENT": "wrk"},
                timeout=1800)
    assert out.returncode == 0, out.stderr[-4000:]
    [run] = run_folders(tmp_path)
    m = manifest(run)
    assert m["status"] == "complete"
    assert m["topology"].startswith("netns ")
    details = m["topology_details"]
    assert details["bind"] == details["connect"] == n.server_addr
    assert details["names"]["server_namespace"] == n.server_ns
    for side in ("server", "client"):                     # the kernel's own view, recorded
        assert any("tbf 1: root" in line and "rate 1Gbit" in line
                   for line in details["live"][side]["qdisc"])
    [start] = m["servers"][server]["starts"]
    # ss in the server's namespace saw it on its address only (check_listening)
    assert start["listening"]["address"] == n.server_addr
    assert start["bind"] == n.server_addr
    assert "exact body" in start["verified"]
    # the probe's connections came from the client's side; it could ask the
    # server's namespace how much of the 1 MiB of headers the server read
    probed = json.loads((run / server / "probe.json").read_text())
    assert probed["host"] == n.server_addr and probed["final_ok"], probed
    [big] = [r for r in probed["results"] if r["probe"] == "headers-1m"]
    assert big["facts"]["paced"] and big["facts"]["read_by_server"] > 0, big
    assert len(rows(run)) == 2
    assert_gone(port)
    assert leftovers(run) == []
    return run, m


@ROOT_ONLY
def test_a_short_sweep_of_nginx_across_the_link(tmp_path: Path,
                                                netns_env: tuple[dict[str, str], int]) -> None:
    env, port = netns_env
    short_sweep(tmp_path, env, port, "nginx")


@pytest.mark.real_server
@ROOT_ONLY
def test_a_short_sweep_of_aws_across_the_link(tmp_path: Path,
                                              netns_env: tuple[dict[str, str], int]) -> None:
    """The published Ada server, built as `make bench` builds it (the toolchain
    from LAB_CACHE when it is there), swept across the shaped link."""
    env, port = netns_env
    run, m = short_sweep(tmp_path, env, port, "aws")
    assert m["servers"]["aws"]["status"] == "complete"
    assert len(rows(run)) == 2
