"""Every sampler a topology returns has every member of TreeSampler, which the
sweep reads as attributes (no getattr with a default): procfs.Sampler (local,
netns), the docker topology's ContainerSampler and the ssh topology's
RemoteSampler, each run over a real process (the remote one through the
lab's agent, run here without ssh)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from conftest import ROOT

from lab.host import procfs
from lab.measure.topologies import TreeSampler
from lab.measure.topologies.docker import ContainerSampler
from lab.measure.topologies.ssh import remote, session

pytestmark = pytest.mark.unit

MEMBERS = sorted({*TreeSampler.__annotations__,
                  *(n for n in vars(TreeSampler) if isinstance(vars(TreeSampler)[n], property))})
SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"


def test_the_protocol_declares_what_the_sweep_reads() -> None:
    assert MEMBERS == ["cgroup_mem_peak_kb", "cpu_s", "first", "last", "memory_error",
                       "own_cpu_s", "points", "queue", "rss_peak_kb", "sys_s", "threads_peak"]


def lacking(sampler: object) -> list[str]:
    return [m for m in MEMBERS if not hasattr(sampler, m)]


def test_a_process_trees_sampler_has_every_member() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        with procfs.Sampler(proc.pid, interval=0.05) as s:
            proc.wait(timeout=30)
        assert lacking(s) == []
        assert s.cgroup_mem_peak_kb is None and s.points and isinstance(s.memory_error, str)
    finally:
        proc.kill()
        proc.wait()


class NoCgroup:
    """A container as ContainerSampler reads it, here a plain process without a
    memory cgroup of its own (as when the cgroup cannot be found)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.cgroup = pid, None
        self.recorded: list[object] = []

    def record_memory(self, last: object) -> None:
        self.recorded.append(last)


def test_a_containers_sampler_has_every_member() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        container = NoCgroup(proc.pid)
        with ContainerSampler(container) as s:    # type: ignore[arg-type]
            proc.wait(timeout=30)
        assert lacking(s) == []
        assert s.cgroup_mem_peak_kb is None and len(container.recorded) == 1
    finally:
        proc.kill()
        proc.wait()


class AgentHere:
    """A remote host as RemoteSampler asks it: the lab's agent, run here."""

    def __init__(self) -> None:
        self.agent = session.Session([sys.executable, str(ROOT / session.AGENT), "serve"],
                                     "agent")

    def ask(self, *request: object) -> dict[str, Any]:
        self.agent.send(json.dumps(list(request)))
        answer: dict[str, Any] = self.agent.json(timeout=30)
        return answer


def test_a_remote_sampler_has_every_member() -> None:
    host = AgentHere()
    try:
        with remote.RemoteSampler(host, os.getpid(), interval=0.05) as s:  # type: ignore[arg-type]
            pass
        assert lacking(s) == []
        # the agent keeps its samples: no server series, no cgroup over ssh
        assert s.points == [] and s.cgroup_mem_peak_kb is None
        assert s.last is not None and s.last.rss_kb > 0
    finally:
        host.agent.close()


def test_each_sampler_reads_the_accept_queue_on_the_port_it_is_given() -> None:
    """A socket listening here with backlog 2 and one connection never
    accepted: every sampler counts it at each sample, in the namespace of the
    tree it samples (here this one), the remote one through the agent."""
    with socket.socket() as listener, socket.socket() as waiting:
        listener.bind(("127.0.0.1", 0))
        listener.listen(2)
        port = listener.getsockname()[1]
        waiting.connect(("127.0.0.1", port))
        with procfs.Sampler(os.getpid(), interval=0.05, port=port) as s:
            time.sleep(0.3)
        assert (s.queue.max, s.queue.backlog, s.queue.full, s.queue.error) == (1, 2, 0, "")
        assert s.queue.samples >= 3 and [w for _, w in s.queue.points] == [1] * s.queue.samples
        with ContainerSampler(NoCgroup(os.getpid()), port=port) as c:  # type: ignore[arg-type]
            pass
        assert (c.queue.max, c.queue.backlog) == (1, 2) and c.queue.samples >= 2
        host = AgentHere()
        try:
            with remote.RemoteSampler(host, os.getpid(), interval=0.05,  # type: ignore[arg-type]
                                      port=port) as r:
                time.sleep(0.2)
        finally:
            host.agent.close()
        assert (r.queue.max, r.queue.backlog, r.queue.error) == (1, 2, "")
        assert r.queue.samples >= 2 and r.queue.points == []    # no series over ssh
        with procfs.Sampler(os.getpid(), interval=0.05) as none:
            pass
        assert none.queue.samples == 0 and none.queue.max is None   # no port: not read
