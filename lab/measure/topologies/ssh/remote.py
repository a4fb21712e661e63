"""TOPOLOGY ssh, the processes the lab runs on a host: its agent asked over
one session (`Host`), the server started in an ssh session of its own
(`SshServerHost`, `RemoteProcess`) and sampled there (`RemoteSampler`),
clients run through the agent (`SshClientHost`), and the starts not yet
stopped (`Registry`, in the lab cache, for `lab down`)."""
from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lab.setup import paths
from lab.host import acceptq, procs
from lab.record import files
from lab.host.procfs import Span, TreeSample
from lab.record.series import Point
from lab.measure.topologies import (START_WAIT_MAX_S, ClientHost, ClientHung, ClientRun,
                                    HostLost, ServerDied, ServerHost, Started, TreeSampler)
from lab.measure.topologies.ssh.session import SshLink, Remote, Session, key, last_line
from lab.measure.topologies.ssh.ship import ROOT, SHIPPED, PathMap, env_words, path_map, remote_env

START_TIMEOUT_S = 30     # for a remote start to say its process id


class Host:
    """What every remote host does for the lab: its agent, asked over one session."""

    def __init__(self, remote: Remote, link: SshLink) -> None:
        self.remote, self.link = remote, link
        self.name = remote.dest
        self.mapped = path_map(remote)
        self._agent: Session | None = None
        self._lock = threading.Lock()

    def agent_argv(self, *args: str) -> list[str]:
        r = self.remote
        words = " ".join(shlex.quote(a) for a in (r.python, r.agent, *args))
        return self.link.ssh(f"exec env LAB_CACHE={shlex.quote(r.cache)} {words}")

    def ask(self, *request: object) -> dict[str, Any]:
        """One request to the agent (a session kept for the step's life)."""
        with self._lock:
            for attempt in (1, 2):
                if self._agent is None or self._agent.popen.poll() is not None:
                    self._agent = Session(self.agent_argv("serve"),
                                          f"the lab's agent on {self.name}")
                try:
                    self._agent.send(json.dumps(list(request)))
                    answer = self._agent.json()
                    break
                except HostLost:
                    self._agent.close(wait=1)
                    self._agent = None
                    if attempt == 2:
                        raise
                except BaseException:
                    # Ctrl-C between a question and its answer: that session is
                    # out of step; ending it makes the agent stop what it runs
                    self._agent.close(wait=5)
                    self._agent = None
                    raise
        if "error" in answer and len(answer) == 1:
            raise HostLost(f"the lab's agent on {self.name}: {answer['error']}")
        return answer

    def cpu_times(self, cpus: tuple[int, ...]) -> tuple[float, float]:
        a = self.ask("cpu_times", list(cpus))
        return float(a["busy"]), float(a["steal"])

    def time_wait_sockets(self) -> int:
        return int(self.ask("time_wait")["count"])

    def facts(self) -> dict[str, object]:
        a = self.ask("facts")
        facts: dict[str, object] = dict(a["host"])
        facts.update(ssh=self.name, tools=a["tools"], lab_folder=self.remote.base)
        return facts


# ---------------------------------------------------------------- the server host

class RemoteProcess:
    """A server started there, in the session sshd made for it: its process id
    there is its session and group id. Its local ssh ends when it does, unless
    a child it left holds the session's output open (nginx's workers when
    their master dies): so poll() also asks the agent, at most every
    CHECK_S."""
    CHECK_S = 0.5

    def __init__(self, host: SshServerHost, popen: subprocess.Popen[bytes], pid: int,
                 run: str) -> None:
        self.host, self.popen, self._pid, self.run = host, popen, pid, run
        self.code: int | None = None
        self.since: int | None = None
        self.checked = time.monotonic()

    @property
    def pid(self) -> int:
        return self._pid

    def undo_argv(self, since: int | None) -> list[str]:
        """The ssh command that stops its session there (the agent's `stop`,
        which checks the session leader is still the process the lab started)."""
        self.since = since
        return self.host.link.ssh(shlex.join([
            "python3", self.host.remote.agent, "stop", str(self._pid), str(since), self.run]))

    @property
    def returncode(self) -> int | None:
        return self.code

    def poll(self) -> int | None:
        if self.code is None:
            self.code = self.popen.poll()
        if self.code is None and time.monotonic() - self.checked >= self.CHECK_S:
            self.checked = time.monotonic()
            if not self.host.ask("alive", self.pid)["alive"]:
                try:                            # its exit code, if ssh can say it now
                    self.code = self.popen.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    self.code = 255             # as ssh says when it cannot tell
        return self.code

    def stop(self, grace: float = 10.0) -> int | None:
        """TERM its session there, KILL what is left after `grace` s (and any
        process still marked with the run); then its ssh ends by itself."""
        try:
            left = self.host.ask("stop", self.pid, grace, self.run)
        finally:
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if left.get("left"):
            raise HostLost(f"{self.host.name}: processes {left['left']} of the run outlived "
                           "SIGKILL")
        self.host.registry.stopped(self.host.name, self.pid)
        if self.since is not None:
            procs.Keeper.done(self.undo_argv(self.since))
        procs.kill_group(self.popen.pid)
        self.code = self.popen.returncode if self.code is None else self.code
        if self.code == 255:        # ssh's code for a command a signal ended: ours
            self.code = -(signal.SIGKILL if self.pid in left.get("killed", []) else
                          signal.SIGTERM)
        return self.code


class RemoteSampler(Span):
    """A server tree sampled there for the length of one client run, by a
    thread of the agent (lab.host.procfs.Sampler, as here): its first sample now,
    the rest at the end. Two requests a level, no new process."""

    def __init__(self, host: Host, pid: int, interval: float = 0.2,
                 port: int | None = None) -> None:
        self.host, self.port = host, port
        started = host.ask("watch", pid, interval, *([] if port is None else [port]))
        self.number = int(started["watch"])
        self.first: TreeSample | None = tree_sample(started.get("first"))
        self.last: TreeSample | None = self.first
        self.rss_peak_kb = self.first.rss_kb if self.first else 0
        self.threads_peak = self.first.threads if self.first else 0
        self.own_cpu_s = 0.0
        self.memory_error = ""
        self.points: list[Point] = []         # the agent keeps its samples: no series here
        self.cgroup_mem_peak_kb: int | None = None
        self.queue = acceptq.Tally()          # its figures at the end, no points (no series)

    def __enter__(self) -> RemoteSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        end = self.host.ask("unwatch", self.number)
        self.last = tree_sample(end.get("last")) or self.last
        self.rss_peak_kb = max(self.rss_peak_kb, int(end.get("rss_peak_kb", 0)))
        self.threads_peak = max(self.threads_peak, int(end.get("threads_peak", 0)))
        self.own_cpu_s = float(end.get("own_cpu_s", 0.0))
        self.memory_error = str(end.get("memory_error") or "")
        if self.port is not None:
            self.queue = acceptq.Tally.from_json(end.get("queue"))
        if self.last is not None and self.last.pss_kb is None and not self.memory_error:
            self.memory_error = "smaps_rollup unavailable (the server host's agent is older)"

    @property
    def sys_s(self) -> float | None:
        """The kernel's part of cpu_s; None from an agent that does not send it."""
        if self.first is not None and self.last is not None and \
                not (self.first.sys_s or self.last.sys_s):
            return None
        return super().sys_s


def tree_sample(data: object) -> TreeSample | None:
    if not isinstance(data, dict):
        return None
    def kb(key: str) -> int | None:
        value = data.get(key)
        return None if value is None else int(value)
    return TreeSample(processes=int(data["processes"]), cpu_s=float(data["cpu_s"]),
                      threads=int(data["threads"]), rss_kb=int(data["rss_kb"]),
                      pss_kb=kb("pss_kb"), private_kb=kb("private_kb"),
                      shared_kb=kb("shared_kb"), anon_kb=kb("anon_kb"),
                      user_s=float(str(data.get("user_s") or 0.0)),
                      sys_s=float(str(data.get("sys_s") or 0.0)))


class SshServerHost(Host, ServerHost):
    """The server host: starts, samples and stops the server there."""

    def __init__(self, remote: Remote, link: SshLink, registry: Registry,
                 passed: Iterable[str] = ()) -> None:
        super().__init__(remote, link)
        self.registry = registry
        self.passed = tuple(passed)              # the servers' manifest env names

    def command(self, argv: list[str], cwd: Path, env: dict[str, str], cpus: tuple[int, ...],
                scratch: str = "") -> str:
        """The sh line that runs argv there pinned, in cwd's copy, with env."""
        cpu_list = ",".join(map(str, cpus))
        extra = f"LAB_SCRATCH={scratch}" if scratch else ""
        return (f"cd {shlex.quote(self.mapped(str(cwd)))} && exec taskset -c {cpu_list} env "
                f"{env_words(remote_env(env, self.mapped, self.passed))} {extra} "
                + " ".join(shlex.quote(self.mapped(a)) for a in argv))

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], log: Path,
              cpus: tuple[int, ...], log_max: int | None = None) -> Started:
        # log_max: not applied here yet (the server's log is not capped in this topology)
        run = env.get(procs.MARKER, "run")
        folder = shlex.quote(f"{self.remote.runs}/{run}")
        # sshd made this shell a session leader; exec keeps its id for the server
        script = (f"mkdir -p {folder} && s=$(mktemp -d {folder}/scratch.XXXXXX) && "
                  f'echo "lab-remote: pid $$ on {self.name}, scratch $s" && '
                  + self.command(argv, cwd, env, cpus, '"$s"'))
        offset = log.stat().st_size if log.exists() else 0
        with files.open_binary(log, append=True) as f:
            popen = subprocess.Popen(self.link.ssh(script), stdin=subprocess.DEVNULL,
                                     stdout=f, stderr=f, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            m = re.search(rb"lab-remote: pid (\d+) on ", log.read_bytes()[offset:])
            if m:
                pid = int(m.group(1))
                since = self.ask("alive", pid)["since"]
                self.registry.started(self.name, pid, since, run, popen.pid)
                proc = RemoteProcess(self, popen, pid, run)
                # if this step vanishes (SIGKILL, OOM), its keeper stops the session there
                if since is not None:
                    procs.Keeper.undo(proc.undo_argv(since))
                procs.Keeper.watch(popen.pid)
                return proc
            if popen.poll() is not None or time.monotonic() > deadline:
                if popen.poll() is None:
                    popen.kill()
                    popen.wait()
                raise procs.NotReady(f"could not be started on {self.name} (ssh exit "
                                     f"{popen.returncode})\n--- {log}:\n{procs.tail(log)}")
            time.sleep(0.05)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], cpus: tuple[int, ...],
            timeout: float) -> tuple[int, str, str]:
        out = self.link.run(self.command(argv, cwd, env, cpus), timeout)
        return out.returncode, out.stdout, out.stderr

    def sampler(self, proc: Started, port: int | None = None) -> TreeSampler:
        return RemoteSampler(self, proc.pid, port=port)

    def sample(self, proc: Started) -> TreeSample | None:
        return tree_sample(self.ask("sample", proc.pid).get("sample"))

    def listeners(self, port: int) -> list[procs.Listener]:
        a = self.ask("listeners", port)
        if "text" not in a:
            raise HostLost(f"{self.name}: cannot list listening sockets: {a.get('error')}")
        return [x for x in procs.parse_listeners(str(a["text"])) if x.port == port]

    def tcp_counters(self) -> dict[str, int] | None:
        """That host's (lab.host.tcpstat, read by the agent); None: unreadable."""
        found = self.ask("tcp_counters").get("counters")
        return {str(k): int(v) for k, v in found.items()} if isinstance(found, dict) else None

    def somaxconn(self) -> int | None:
        value = self.ask("somaxconn").get("value")
        return int(value) if value is not None else None

    def check_port_free(self, port: int, bind: str) -> None:
        found = self.listeners(port)
        if found:
            raise procs.PortBusy(f"on {self.name}: {procs.busy_message(port, found)}")
        a = self.ask("bindable", bind, port)
        if not a.get("ok"):
            if a.get("errno") == 99:        # EADDRNOTAVAIL
                raise procs.PortBusy(f"{self.name} has no address {bind}: the server could "
                                     "not listen there; give BIND=<an address of that host>")
            raise procs.PortBusy(f"on {self.name}: {procs.busy_message(port, [])} "
                                 f"({a.get('error')})")


# ---------------------------------------------------------------- client hosts

class SshClientHost(Host, ClientHost):
    """A client host: runs the load client through the agent, which reports its rusage."""

    def __init__(self, remote: Remote, link: SshLink) -> None:
        super().__init__(remote, link)
        self.shipped: set[str] = set()

    def ship_files(self, argv: list[str], run: str) -> list[str]:
        """Files argv names that are not in the shipped trees (the client's run
        files: siege rc, wrk script) copied to the run's folder there; argv
        rewritten to use them."""
        folder = f"{self.remote.runs}/{run}/files"
        trees = [ROOT / d for d in SHIPPED] + [paths.cache_dir()]
        found: dict[str, str] = {}
        for word in argv:
            for text in re.findall(r"/[^\s'\"=:]+", word):
                path = Path(text)
                if path.is_file() and not any(path.resolve().is_relative_to(t) for t in trees):
                    found[text] = f"{folder}/{key(str(path.parent))}-{path.name}"
        todo = {local: there for local, there in found.items() if local not in self.shipped}
        if todo:
            made = self.link.run(f"mkdir -p {shlex.quote(folder)}")
            if made.returncode != 0:
                raise HostLost(f"{self.name}: cannot make {folder}: {last_line(made.stderr)}")
        for local, there in todo.items():
            out = subprocess.run(["rsync", "-a", "-e", self.link.rsync_shell(), "--", local,
                                  f"{self.link.dest}:{there}"],
                                 capture_output=True, text=True, timeout=120)
            if out.returncode != 0:
                raise HostLost(f"{self.name}: could not copy {local} there: "
                               f"{last_line(out.stderr)}")
            self.shipped.add(local)
        fixed = PathMap(found.items())
        return [self.mapped(fixed(word)) for word in argv]

    def prepare(self, argv: list[str], env: dict[str, str]) -> None:
        self.ship_files(argv, env.get(procs.MARKER, "run"))

    def run_client(self, argv: list[str], cpus: tuple[int, ...], env: dict[str, str],
                   out: Path, timeout: float, server_alive: Callable[[], bool],
                   at: float | None = None) -> ClientRun:
        """Run it there through the agent (a child of the agent, which reads its
        rusage, and waits there for `at`); stdout to `out` here at its end,
        stderr beside it (.err)."""
        run = env.get(procs.MARKER, "run")
        there = self.ship_files(argv, run)
        started = self.ask("client_start", there, ",".join(map(str, cpus)),
                           remote_env(env, self.mapped), self.remote.root,
                           f"{self.remote.runs}/{run}/clients", out.stem,
                           at, START_WAIT_MAX_S)
        number = int(started["client"])
        t0 = time.monotonic()
        result: dict[str, Any] = {}
        try:
            while not result.get("done"):
                result = self.ask("client_wait", number, 0.25)
                if result.get("done"):
                    break
                if not server_alive():
                    raise ServerDied("the server exited during the level")
                if time.monotonic() - t0 > timeout:
                    raise ClientHung(f"the client on {self.name} did not finish within "
                                     f"{timeout:.0f}s")
        finally:
            if not result.get("done"):
                try:
                    result = self.ask("client_stop", number)
                except HostLost:
                    pass
            files.write_atomic(out, str(result.get("stdout", "")))
            files.write_atomic(out.with_suffix(".err"), str(result.get("stderr", "")))
        code = result.get("exit_code")
        return ClientRun(str(result["stdout"]), str(result["stderr"]),
                         int(code) if code is not None else None, float(result["cpu_s"]),
                         float(result["wall_s"]), self.name, started=float(result["started"]),
                         stopped_s=float(result.get("stopped_s", 0.0)))

    def same_host_as(self, server: ServerHost) -> bool:
        """The same host: same machine (boot id) and same network stack. Hosts
        that only share a machine (namespaces) are told apart here, and their
        CPU counters merged by SshPlacement."""
        return isinstance(server, Host) and \
            (server.remote.boot_id, server.remote.netns) == (self.remote.boot_id,
                                                             self.remote.netns)


# ---------------------------------------------------------------- what lives across steps

class Registry:
    """Remote starts not yet stopped, in the lab cache: `down` stops what a
    step that died could not."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _add(self, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with files.open_binary(self.path, append=True) as f:
            f.write((json.dumps(entry) + "\n").encode())

    def started(self, dest: str, pid: int, since: int | None, run: str, ssh_pid: int) -> None:
        self._add({"dest": dest, "pid": pid, "since": since, "run": run, "ssh_pid": ssh_pid})

    def stopped(self, dest: str, pid: int) -> None:
        self._add({"dest": dest, "stopped": pid})

    def entries(self) -> list[dict[str, Any]]:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def running(self) -> list[dict[str, Any]]:
        items = self.entries()
        done = {(e["dest"], e["stopped"]) for e in items if "stopped" in e}
        return [e for e in items if "pid" in e and (e["dest"], e["pid"]) not in done]
