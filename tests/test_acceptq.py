"""The accept queue under load (issue 45): at each of the sampler's samples
the lab reads the server's listening socket, in the server's network
namespace: how many connections the kernel completed that the server has
not accepted yet (ss's Recv-Q) against its backlog (Send-Q). The series
keeps each second's highest queue; results.csv the level's highest, the
backlog and the share of samples at it; a level whose queue sat at its
backlog is flagged accept-queue-full.

The live tests run tests/servers/deaf (once loaded, it stops calling
accept() for 2 s) with BACKLOG=4 at two levels: 16 connections, whose
queue fills while it is deaf, and 2, whose queue cannot reach 4.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import bench, free_port, lab_env, leftovers, run_folders
from lab.analyse import levelrow, metrics
from lab.present.usetable import tables as use_tables
from lab.record import runrecord, series
from test_integrity import WHERE, assert_legend, measured
from test_cpu_verdict import LEVEL
from test_topology_netns import ROOT_ONLY, assert_gone, netns_env  # noqa: F401 (a fixture)

pytestmark = pytest.mark.fault

BACKLOG = 4
SETTINGS = {"SERVER": "deaf", "CLIENT": "wrk", "CONCURRENCY": "2 16",
            "DURATION": "2s", "WARMUP": "0", "BACKLOG": str(BACKLOG)}


def show(out: object) -> str:
    return f"{getattr(out, 'stdout', '')}\n{getattr(out, 'stderr', '')}"


def assert_deaf_flagged(tmp_path: Path, env: dict[str, str], per_second: bool = True) -> Path:
    """per_second: the sampler keeps each sample (a server on this host), so
    the level has its per-second series; not one on an ssh server host."""
    out = bench({**env, **SETTINGS}, timeout=300)
    assert out.returncode == 0, show(out)[-4000:]
    [run] = run_folders(tmp_path)
    assert leftovers(run) == []
    data = json.loads((run / "results.json").read_text())
    two, deaf = data["rows"]["deaf"]
    # the kernel's figures: the backlog as the socket holds it, and a queue
    # that reached it while deaf did not accept
    assert deaf["accept_queue_backlog"] == two["accept_queue_backlog"] == BACKLOG, deaf
    assert deaf["accept_queue_max"] >= BACKLOG, deaf
    assert deaf["accept_queue_full_pct"] >= 50, deaf
    assert "accept-queue-full" in deaf["flags"].split(), deaf
    # two connections cannot fill a backlog of 4, deaf or not: not flagged
    assert two["accept_queue_max"] <= 2, two
    assert two["accept_queue_full_pct"] == 0, two
    assert "accept-queue-full" not in two["flags"].split()
    at2, at16 = data["levels"]["deaf"]
    assert "accept-queue-full" in at16["flags"] and "accept-queue-full" not in at2["flags"]
    # the kernel's side (lab.record.tcpkinds): the handshakes a full queue dropped,
    # the listen queue's counters, which are the server's alone in any namespace
    assert at16["tcp"] is not None, at16
    [listen] = [k for k in at16["tcp"]["kinds"] if k["kind"] == "listen"]
    assert listen["count"] > 0 and listen["server_alone"], at16["tcp"]
    # the series: each second's highest queue, at the backlog while deaf
    if per_second:
        with open(run / "deaf" / "series-rep1-c16.csv", newline="") as f:
            seconds = list(csv.DictReader(f))
        assert seconds and max(int(s["accept_queue"]) for s in seconds) >= BACKLOG, seconds
    # said where the other flags are: the progress line, summary.md, report.html
    assert "accept-queue-full" in out.stderr
    summary = (run / "summary.md").read_text()
    assert "accept-queue-full" in summary
    # the USE table's saturation of the connections (make use)
    [(_, _, at2_use), (_, _, at16_use)] = use_tables(runrecord.load(run).rows)
    assert at16_use[3][2].startswith(f"accept queue up to {deaf['accept_queue_max']} of backlog "
                                     f"{BACKLOG}, at it in ")
    assert "(accept-queue-full)" in at16_use[3][2] and "(accept" not in at2_use[3][2]
    # a warning with what to do, at the level flagged alone
    [warned] = [f for f in data["findings"] if f["kind"] == "accept-queue-full"]
    assert "deaf's accept queue sat at its backlog at c=16 (1 of 2 levels" in warned["text"]
    assert "AXIS=backlog" in warned["text"] and warned["text"] in summary
    assert_legend(run, "accept-queue-full")
    return run


def test_a_server_that_stops_accepting_fills_its_queue_live(tmp_path: Path) -> None:
    env = lab_env(tmp_path, PORT=str(free_port()))
    assert_deaf_flagged(tmp_path, env)


@ROOT_ONLY
@pytest.mark.root
def test_the_queue_is_read_in_the_servers_namespace_live(
        tmp_path: Path, netns_env: tuple[dict[str, str], int]) -> None:   # noqa: F811
    """TOPOLOGY=netns: the listening socket is in the server's namespace
    only; read from this one, the lab would see nothing on the port."""
    env, port = netns_env
    assert_deaf_flagged(tmp_path, env)
    assert_gone(port)


# --------------------------------------------------------------------------- the reader

@pytest.mark.unit
def test_the_reader_gives_the_kernels_queue_and_backlog() -> None:
    """A socket listening with backlog 3, never accepting: each connection
    made waits in its queue, until the queue holds backlog + 1 (the kernel
    takes one past the backlog); one accepted leaves it."""
    from lab.host import acceptq
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(3)
        port = listener.getsockname()[1]
        reader = acceptq.Reader(port)
        try:
            assert reader.read() == acceptq.Queue(waiting=0, backlog=3, full=False)
            clients = []
            for n in range(1, 5):
                c = socket.socket()
                c.connect(("127.0.0.1", port))
                clients.append(c)
                got = reader.read()
                assert got is not None and got.waiting == n and got.backlog == 3
                assert got.full == (n >= 3)
            listener.accept()[0].close()
            assert reader.read() == acceptq.Queue(waiting=3, backlog=3, full=True)
            for c in clients:
                c.close()
        finally:
            reader.close()
        assert acceptq.Reader(free_port()).read() is None      # nothing listens there


LISTEN_ALONE = """
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(3)
c = socket.socket(); c.connect(("127.0.0.1", int(sys.argv[1])))
print("ready", flush=True); time.sleep(60)
"""


@pytest.mark.unit
@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="entering another network namespace needs root (and unshare)")
def test_the_reader_reads_in_the_namespace_it_is_given() -> None:
    """A process in a network namespace of its own listens on a port with one
    connection waiting: read in its namespace (/proc/PID/ns/net), the queue
    is there; read in this one, nothing listens on that port."""
    from lab.host import acceptq
    port = free_port()
    proc = subprocess.Popen(["unshare", "-n", "sh", "-c",
                             f"ip link set lo up && exec {sys.executable} -c '{LISTEN_ALONE}' "
                             f"{port}"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        theirs = acceptq.Reader(port, f"/proc/{proc.pid}/ns/net")
        here = acceptq.Reader(port, "/proc/self/ns/net")
        try:
            assert theirs.read() == acceptq.Queue(waiting=1, backlog=3, full=False)
            assert here.read() is None
        finally:
            theirs.close()
            here.close()
    finally:
        proc.kill()
        proc.wait()


# --------------------------------------------------------------------------- the record

@pytest.mark.unit
@pytest.mark.parametrize("full, flagged", [(0, False), (1, False), (2, True), (20, True)])
def test_a_level_is_flagged_when_its_queue_sat_at_the_backlog(full: int, flagged: bool) -> None:
    """At the backlog in ACCEPT_QUEUE_FULL_PCT (10%) of 20 samples or more:
    flagged, and still ranked (a property of the server at this load)."""
    m = replace(measured(), accept_queue_max=5, accept_queue_backlog=4,
                accept_queue_samples=20, accept_queue_full=full)
    row = levelrow.make_row(WHERE, LEVEL, m)
    assert row.has("accept-queue-full") == flagged
    assert (row.accept_queue_max, row.accept_queue_backlog) == (5, 4)
    assert row.accept_queue_full_pct == 100 * full / 20
    assert row.unranked == "" and "accept-queue-full" not in metrics.UNRANKED
    unread = levelrow.make_row(WHERE, LEVEL, measured())      # not read: no figure, no flag
    assert unread.accept_queue_full_pct is None and unread.accept_queue_max is None
    assert not unread.has("accept-queue-full")


@pytest.mark.unit
def test_the_series_keeps_each_seconds_highest_queue() -> None:
    points = [(100.0 + 0.2 * i, 0.0, 1000) for i in range(13)]     # 2.4 s of samples
    queue = [(100.1, 3), (100.5, 5), (100.9, 1), (101.6, 2), (102.4, 4)]
    assert series.queue_per_second(points, queue, 2) == [5, 4]      # past the last bin: in it
    assert series.queue_per_second(points, [], 2) == [None, None]
    assert series.queue_per_second([], queue, 0) == []
