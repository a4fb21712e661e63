"""TOPOLOGY=local: server and client on this host, over loopback, pinned to
disjoint CPUs. Processes are local children in sessions of their own; the
server is sampled from this host's /proc, the client's CPU is wait4's rusage
(children included)."""
from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from lab.host import cgroup, hang, logcap, procfs, procs
from lab.record import files
from lab.measure import hostinfo
from lab.setup.params import Params
from lab.host.procfs import TreeSample
from lab.measure.topologies import (START_WAIT_MAX_S, ClientHost, ClientHung, ClientRun,
                                    HostCounters, Placement, ServerDied, ServerHost, Started,
                                    Topology, TreeSampler)


class LocalProcess:
    """A local child in a session of its own (its process group is its tree);
    `log_reader`: what keeps its log under its cap (lab.host.logcap), if any."""

    def __init__(self, popen: subprocess.Popen[bytes],
                 log_reader: subprocess.Popen[bytes] | None = None) -> None:
        self.popen, self.log_reader = popen, log_reader
        self.left: list[cgroup.Left] = []       # stop(): what escaped its group (lab.host.cgroup)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)

    def stop(self, grace: float = 10.0) -> int | None:
        code = procs.stop(self.popen, grace)
        self.left = procs.kill_group(self.popen.pid)
        if self.log_reader is not None:
            logcap.finish(self.log_reader)
        return code


class ThisHost(HostCounters):
    """This machine's own counters, read here: for the server host and the client host."""

    def cpu_times(self, cpus: tuple[int, ...]) -> tuple[float, float]:
        return procfs.cpu_times(cpus)

    def time_wait_sockets(self) -> int:
        return procfs.time_wait_sockets()

    def facts(self) -> dict[str, object]:
        return hostinfo.host()


class LocalServerHost(ThisHost, ServerHost):
    """This host. `prefix` runs every command through a wrapper (TOPOLOGY=netns
    gives `ip netns exec NAME`); /proc is this host's either way."""
    name = "local"

    def __init__(self, prefix: tuple[str, ...] = ()) -> None:
        self.prefix = prefix

    def command(self, argv: list[str], cpus: tuple[int, ...]) -> list[str]:
        return [*self.prefix, *procs.pinned(argv, cpus)]

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], log: Path,
              cpus: tuple[int, ...], log_max: int | None = None) -> Started:
        if log_max is None:
            with files.open_binary(log, append=True) as f:
                return LocalProcess(procs.start(self.command(argv, cpus), cwd, env, f))
        writer, reader = logcap.start(files.open_fd(log, append=True), log_max, cpus)
        try:
            proc = procs.start(self.command(argv, cpus), cwd, env, writer)
        except BaseException:
            os.close(writer)
            logcap.finish(reader)
            raise
        os.close(writer)                # the server holds its own copy
        return LocalProcess(proc, reader)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], cpus: tuple[int, ...],
            timeout: float) -> tuple[int, str, str]:
        out = subprocess.run(self.command(argv, cpus), cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=timeout)
        return out.returncode, out.stdout, out.stderr

    def sampler(self, proc: Started, port: int | None = None) -> TreeSampler:
        return procfs.Sampler(proc.pid, port=port)

    def own_pids(self, proc: Started) -> set[int] | None:
        if not isinstance(proc, LocalProcess):
            return None
        return {s.pid for s in procfs.tree(proc.pid)} | set(procs.cgroup_pids(proc.pid))

    def left_over(self, proc: Started) -> list[dict[str, object]] | None:
        if not isinstance(proc, LocalProcess) or cgroup.status():
            return None
        return [x.to_json() for x in proc.left]

    def sample(self, proc: Started) -> TreeSample | None:
        return procfs.sample(proc.pid)

    def listeners(self, port: int) -> list[procs.Listener]:
        return procs.listeners(port)

    def somaxconn(self) -> int | None:
        return procs.somaxconn()

    def check_port_free(self, port: int, bind: str) -> None:
        procs.check_port_free(port, bind)


class LocalClientHost(ThisHost, ClientHost):
    """This host: the client is a local child, its CPU from wait4's rusage."""
    name = "local"

    def __init__(self, prefix: tuple[str, ...] = ()) -> None:
        self.prefix = prefix

    def run_client(self, argv: list[str], cpus: tuple[int, ...], env: dict[str, str],
                   out: Path, timeout: float, server_alive: Callable[[], bool],
                   at: float | None = None) -> ClientRun:
        err = out.with_suffix(".err")
        if at is not None:
            time.sleep(min(max(0.0, at - time.time()), START_WAIT_MAX_S))
        with files.open_binary(out) as fo, files.open_binary(err) as fe:
            proc = procs.start([*self.prefix, *procs.pinned(argv, cpus)], Path.cwd(), env, fe,
                               stdout=fo)
        t0 = time.monotonic()
        stops = procfs.StopClock(proc.pid)      # a client stopped mid-level (SIGSTOP)
        left: list[cgroup.Left] = []
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    break
                stops.tick()
                if not server_alive():
                    raise ServerDied("the server exited during the level")
                if time.monotonic() - t0 > timeout:
                    # which side stalls, read before the client is stopped (lab.host.hang)
                    why = hang.diagnose(proc.pid, argv, time.monotonic() - t0)
                    raise ClientHung(f"the client did not finish within {timeout:.0f}s"
                                     + (f": {why}" if why else ""))
                time.sleep(0.05)
        finally:
            if proc.returncode is None:
                procs.stop(proc, grace=2)
            left = procs.kill_group(proc.pid)
        return ClientRun(out.read_text(errors="replace"), err.read_text(errors="replace"),
                         proc.returncode, usage.ru_utime + usage.ru_stime,
                         time.monotonic() - t0, self.name, stopped_s=stops.stopped_s,
                         left=tuple(f"{x.comm} (pid {x.pid})" for x in left))

    def same_host_as(self, server: ServerHost) -> bool:
        return isinstance(server, LocalServerHost)


def topology(params: Params) -> Placement:
    return Placement(name="local", server=LocalServerHost(), clients=(LocalClientHost(),),
                     bind=params.bind, connect=procs.connect_host(params.bind),
                     summary="loopback (one host, server and client pinned to disjoint CPUs)")


class Local(Topology):
    name = "local"
    chosen_by = "TOPOLOGY"
    summary = "one host, loopback (the default)"

    def place(self, params: Params) -> Placement:
        return topology(params)


TOPOLOGY = Local()
