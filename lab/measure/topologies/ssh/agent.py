"""The lab's helper on a remote host (TOPOLOGY ssh), run there as a script:

    python3 <remote root>/lab/measure/topologies/ssh/agent.py COMMAND ...

It reads that host's /proc so that the lab does not need one ssh round trip
per figure. Every command talks JSON, one object per line, on stdout; a
command that waits ends when its stdin reaches end of file, which is what
happens when the lab closes the session, is interrupted or dies (ssh
forwards the end of file), so nothing of it outlives the lab.

  hello                  facts the preflight needs (Python, CPUs, boot id, network namespace)
  stop SID SINCE RUN     stop a server session a step left running (`lab down`), if its
                         leader is still the process that started at SINCE
  serve                  requests in (one JSON array a line), answers out: sample, cpu_times,
                         time_wait, listeners, somaxconn, tcp_counters, bindable, facts, alive,
                         stop, marked,
                         watch / unwatch: a server tree sampled in a thread
                         (lab.host.procfs.Sampler) for the length of one client run;
                         client_start / client_wait / client_stop: a load client run pinned
                         in a session of its own, its CPU from wait4's rusage as here;
                         started at a wall-clock time when given one (several hosts)

Written for Python 3.9 and newer (Debian 11's python3), standard library
only; it imports lab.host.procfs, lab.host.tcpstat and lab.measure.hostinfo from the shipped copy.
"""
from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from lab.host import procfs, tcpstat
from lab.host.procs import MARKER, bind_error
from lab.measure import hostinfo
from lab.measure.clients import host_tools


def emit(data: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def tree_sample(pid: int) -> Optional[Dict[str, Any]]:
    s = procfs.sample(pid)
    return None if s is None else sample_json(s)


def sample_json(s: Optional[procfs.TreeSample]) -> Optional[Dict[str, Any]]:
    if s is None:
        return None
    return {"processes": s.processes, "cpu_s": s.cpu_s, "threads": s.threads, "rss_kb": s.rss_kb,
            "pss_kb": s.pss_kb, "private_kb": s.private_kb, "shared_kb": s.shared_kb,
            "anon_kb": s.anon_kb, "user_s": s.user_s, "sys_s": s.sys_s}


# ---------------------------------------------------------------- processes

def stat_fields(pid: int) -> Optional[List[str]]:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()


def session_members(sid: int) -> List[int]:
    """Live (not zombie) processes of session `sid`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = stat_fields(int(name))
            if fields and fields[0] != "Z" and int(fields[3]) == sid:
                found.append(int(name))
    return sorted(found)


def ancestors() -> set[int]:
    """This agent and the processes above it (its shell, sshd)."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        fields = stat_fields(pid)
        pid = int(fields[1]) if fields else 0
    return out


def marked(run: str) -> List[int]:
    """Live processes carrying LAB_RUN=<run> in their environment, this agent's line aside."""
    needle = f"{MARKER}={run}".encode() + b"\0"
    mine = ancestors()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in mine:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        fields = stat_fields(int(name))
        if needle in env and fields and fields[0] != "Z":
            found.append(int(name))
    return sorted(found)


def alive(pid: int) -> Dict[str, Any]:
    """Whether it runs (a zombie does not), and since when (boot clock ticks:
    with the id, it tells this process from a later one given the same id)."""
    fields = stat_fields(pid)
    running = fields is not None and fields[0] not in ("Z", "X")
    return {"alive": running, "since": int(fields[19]) if fields and running else None}


def signal_all(pids: List[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_session(sid: int, grace: float, run: str) -> Dict[str, Any]:
    """TERM every process of the session; after `grace` s (or once its leader is
    gone) KILL what is left of it, then anything else still marked with the run."""
    signal_all(session_members(sid), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and sid in session_members(sid):
        time.sleep(0.05)
    killed: List[int] = []
    for _ in range(100):                       # up to 5 s for SIGKILL to land
        left = session_members(sid) + (marked(run) if run else [])
        if not left:
            break
        killed += [p for p in left if p not in killed]
        signal_all(left, signal.SIGKILL)
        time.sleep(0.05)
    left = session_members(sid) + (marked(run) if run else [])
    return {"killed": killed, "left": left}


# ---------------------------------------------------------------- serve

def listeners(port: int) -> Dict[str, Any]:
    flags = "-Hltnp" if os.geteuid() == 0 else "-Hltn"
    try:
        out = subprocess.run(["ss", flags, f"sport = :{port}"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": f"ss: {e}"}
    if out.returncode != 0:
        return {"error": f"ss exited {out.returncode}: {out.stderr.strip()}"}
    return {"text": out.stdout}


def bindable(bind: str, port: int) -> Dict[str, Any]:
    e = bind_error(bind, port)
    if e is not None:
        return {"ok": False, "errno": e.errno, "error": e.strerror or str(e)}
    return {"ok": True}


def somaxconn() -> Optional[int]:
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        return None


NUMBERS = itertools.count(1)        # a sampler's or a client's number, never reused
WATCHES: Dict[int, procfs.Sampler] = {}


def watch(pid: int, interval: float, port: Optional[int] = None) -> Dict[str, Any]:
    """Start sampling a tree in a thread (and the accept queue on `port`, in
    its network namespace); its first sample now."""
    sampler = procfs.Sampler(pid, interval, port=port)
    sampler.__enter__()
    number = next(NUMBERS)
    WATCHES[number] = sampler
    return {"watch": number, "first": sample_json(sampler.first)}


def unwatch(number: int) -> Dict[str, Any]:
    """Stop one: its last sample, peaks and the sampler thread's own CPU."""
    sampler = WATCHES.pop(number)
    sampler.__exit__(None, None, None)
    return {"last": sample_json(sampler.last), "rss_peak_kb": sampler.rss_peak_kb,
            "threads_peak": sampler.threads_peak, "own_cpu_s": sampler.own_cpu_s,
            "memory_error": sampler.memory_error, "queue": sampler.queue.to_json()}


def answer(request: List[Any]) -> Dict[str, Any]:
    what, args = request[0], request[1:]
    if what == "client_start":
        at = args[6] if len(args) > 6 else None
        if at is not None:      # several client hosts: each waits for the same time
            time.sleep(min(max(0.0, float(at) - time.time()), float(args[7])))
        return client_start([str(a) for a in args[0]], str(args[1]),
                            {str(k): str(v) for k, v in args[2].items()}, str(args[3]),
                            str(args[4]), str(args[5]))
    if what == "client_wait":
        return client_end(int(args[0]), stop=False, timeout=float(args[1]))
    if what == "client_stop":
        return client_end(int(args[0]), stop=True)
    if what == "watch":
        return watch(int(args[0]), float(args[1]), int(args[2]) if len(args) > 2 else None)
    if what == "unwatch":
        return unwatch(int(args[0]))
    if what == "sample":
        return {"sample": tree_sample(int(args[0]))}
    if what == "cpu_times":
        busy, steal = procfs.cpu_times(tuple(int(c) for c in args[0]))
        return {"busy": busy, "steal": steal}
    if what == "time_wait":
        return {"count": procfs.time_wait_sockets()}
    if what == "listeners":
        return listeners(int(args[0]))
    if what == "somaxconn":
        return {"value": somaxconn()}
    if what == "tcp_counters":
        return {"counters": tcpstat.read_or_none()}
    if what == "bindable":
        return bindable(str(args[0]), int(args[1]))
    if what == "facts":
        return {"host": hostinfo.host(), "tools": host_tools()}
    if what == "stop":
        return stop_session(int(args[0]), float(args[1]), str(args[2]))
    if what == "marked":
        return {"pids": marked(str(args[0]))}
    if what == "session":
        return {"pids": session_members(int(args[0]))}
    if what == "alive":
        return alive(int(args[0]))
    return {"error": f"unknown request {what!r}"}


def serve() -> int:
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if not isinstance(request, list) or not request:
                raise ValueError("a request is a non-empty JSON array")
            emit(answer(request))
        except Exception as e:      # one bad request must not end the session
            emit({"error": f"{type(e).__name__}: {e}"})
    for number in list(CLIENTS):                # the lab is gone: so are its clients
        client_end(number, stop=True)
    for number in list(WATCHES):
        unwatch(number)
    return 0


# ---------------------------------------------------------------- clients

# where a client may keep files of its own during the run (vegeta's results),
# removed with the run's folder there
CLIENT_DIR = "LAB_CLIENT_DIR"


class ClientProcess:
    """One load client run: pinned, in a session of its own, output to files
    (in `folder`, which it is told as $LAB_CLIENT_DIR)."""

    def __init__(self, argv: List[str], cpus: str, env: Dict[str, str], cwd: str,
                 folder: str, name: str) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        self.out = Path(folder) / f"{name}.out"
        self.err = Path(folder) / f"{name}.err"
        self.started = time.time()
        self.t0 = time.monotonic()
        with self.out.open("wb") as fo, self.err.open("wb") as fe:
            self.proc = subprocess.Popen(["taskset", "-c", cpus, *argv], cwd=cwd,
                                         env={**os.environ, **env, CLIENT_DIR: folder},
                                         stdin=subprocess.DEVNULL,
                                         stdout=fo, stderr=fe, start_new_session=True)
        self.result: Optional[Dict[str, Any]] = None
        self.stops = procfs.StopClock(self.proc.pid)    # stopped mid-level (SIGSTOP)?

    def reap(self, block: bool) -> bool:
        """True once it has ended (and been waited for, with its rusage)."""
        if self.result is not None:
            return True
        pid, status, usage = os.wait4(self.proc.pid, 0 if block else os.WNOHANG)
        if not pid:
            self.stops.tick()
            return False
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)    # what outlived it in its session
        except ProcessLookupError:
            pass
        self.result = {"exit_code": os.waitstatus_to_exitcode(status), "started": self.started,
                       "cpu_s": usage.ru_utime + usage.ru_stime,
                       "wall_s": time.monotonic() - self.t0,
                       "stopped_s": self.stops.stopped_s,
                       "stdout": self.out.read_text(errors="replace"),
                       "stderr": self.err.read_text(errors="replace")}
        return True

    def wait(self, timeout: float) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout
        while not self.reap(block=False):
            if time.monotonic() >= deadline:
                return {"done": False}
            time.sleep(0.02)
        return {"done": True, **(self.result or {})}

    def stop(self) -> Dict[str, Any]:
        """TERM its session, KILL it after 2 s; what it had written by then."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            if self.wait(2.0)["done"]:
                break
        self.reap(block=True)
        return {"done": True, **(self.result or {})}


CLIENTS: Dict[int, ClientProcess] = {}


def client_start(argv: List[str], cpus: str, env: Dict[str, str], cwd: str, folder: str,
                 name: str) -> Dict[str, Any]:
    number = next(NUMBERS)
    CLIENTS[number] = ClientProcess(argv, cpus, env, cwd, folder, name)
    return {"client": number, "started": CLIENTS[number].started}


def client_end(number: int, stop: bool, timeout: float = 0.0) -> Dict[str, Any]:
    c = CLIENTS[number]
    got = c.stop() if stop else c.wait(timeout)
    if got["done"]:
        del CLIENTS[number]
    return got


# ---------------------------------------------------------------- hello

def hello() -> int:
    def read(path: str) -> str:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return ""
    try:
        netns = os.readlink("/proc/self/ns/net")
    except OSError:
        netns = ""
    emit({"python": list(sys.version_info[:3]), "uid": os.geteuid(), "home": str(Path.home()),
          "cpus": sorted(os.sched_getaffinity(0)), "boot_id": read("/proc/sys/kernel/random/boot_id"),
          "netns": netns, "hostname": socket.gethostname()})
    return 0


def main(argv: List[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 64
    what, rest = argv[0], argv[1:]
    if what == "hello":
        return hello()
    if what == "stop":
        sid, since, run = int(rest[0]), int(rest[1]), rest[2]
        if alive(sid)["since"] != since:
            emit({"gone": True, "left": []})
            return 0
        emit(stop_session(sid, 10.0, run))
        return 0
    if what == "serve":
        return serve()
    print(f"agent: unknown command {what!r}", file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
