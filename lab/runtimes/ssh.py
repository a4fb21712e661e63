"""SERVER_HOST=user@host (TOPOLOGY ssh): the server on a real host over
OpenSSH, the client here or on CLIENT_HOST="user@host ...".

The steps, top-down:
  lab check   each host answers ssh (your config and keys, never a prompt) and has
              python3 3.9+, taskset, ss, rsync, the CPUs asked for, what the chosen
              servers run with (java, nginx) and the client tool; else exit 2 naming it
  lab up      one master connection per host (ControlMaster; every later ssh rides
              on it), then rsync of what runs there into REMOTE_DIR: lab/, client/,
              the servers' folders with their builds, the cache parts a build
              names (the Ada servers' Debian 11 root); then the address the server
              binds is checked there, and the hosts' facts saved for later steps
  lab probe/sweep
              the server starts there pinned (taskset) in an ssh session of its own
              whose output is its log here; its tree is sampled from that host's
              /proc by the lab's agent (lab/runtimes/agent.py) over the master;
              clients on client hosts run through the agent, which reports their
              rusage; every start is noted in a file so that `down` can stop it
  lab down    what a step left running is stopped (by its process id, checked
              against the run's LAB_RUN marker), remote run folders removed,
              master connections closed: after success, failure and Ctrl-C

State across steps (separate processes) lives in the lab cache, under ssh/:
the hosts' facts from `up` and the starts not yet stopped. Control sockets
are derived from the settings, under /tmp/labssh-<uid>/ (short: a socket
path has a limit of about 100 characters).
"""
from __future__ import annotations

import atexit
import hashlib
import ipaddress
import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import deps, paths, procs
from lab.params import ConfigError, Params
from lab.procfs import TreeSample
from lab.runtimes import (ClientHost, ClientHung, ClientRun, HostLost, ServerDied, ServerHost,
                          Started, Topology, TreeSampler)
from lab.runtimes.local import LocalClientHost
from lab.servers import LAB_VARIABLES, Server, artifact_path, discover, lookup

ROOT = paths.ROOT
AGENT = "lab/runtimes/agent.py"
PYTHON_MIN = (3, 9)
SHIPPED = ("lab", "servers", "client")      # what of the checkout goes to the server host
# Tools the lab only builds with, on this host: the server host gets the builds.
BUILD_TOOLS = {"mvn", "javac", "debootstrap", "gprbuild"}
# Besides the lab's own variables, what a remote start is given of this environment.
PASSED = ("JAVA_OPTS", "ADA_TOOLCHAIN")
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
               "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3")
PERSIST = "10m"          # a master left behind (down never ran) ends after this idle time
START_TIMEOUT_S = 30     # for a remote start to say its process id
ANSWER_TIMEOUT_S = 60    # for the agent to answer one request

_sessions: list["Session"] = []


@atexit.register
def _close_sessions() -> None:
    """A step's sessions end with it (the agents see end of file and exit)."""
    for s in list(_sessions):
        s.close(wait=2.0)


# ---------------------------------------------------------------- how to reach a host

def key(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Link:
    """ssh to one host, the lab's way: its options, over the master connection."""
    dest: str              # user@host as given
    config: str            # SSH_CONFIG, absolute ("" = ssh's own)
    control: str           # ControlPath of the master connection

    @staticmethod
    def to(dest: str, params: Params) -> Link:
        sockets = Path("/tmp") / f"labssh-{os.geteuid()}"
        return Link(dest, params.ssh_config,
                    str(sockets / key(params.ssh_config, dest, str(paths.cache_dir()))))

    def options(self) -> list[str]:
        return [*(["-F", self.config] if self.config else []), *SSH_OPTIONS,
                "-o", f"ControlPath={self.control}"]

    def ssh(self, script: str) -> list[str]:
        """argv running `script` (sh) there, through the master when it is up."""
        return ["ssh", *self.options(), "-o", "ControlMaster=no", "--", self.dest, script]

    def rsync_shell(self) -> str:
        return shlex.join(["ssh", *self.options(), "-o", "ControlMaster=no"])

    def run(self, script: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(self.ssh(script), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HostLost(f"{self.dest} did not answer within {timeout:.0f}s") from None

    def open_master(self) -> str | None:
        """Open the master connection (in the background); None, or why it failed."""
        Path(self.control).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.master_up():
            return None
        # The master goes to the background with -f: its stderr goes to a
        # file, since a pipe would stay open as long as it runs.
        errfile = Path(self.control + ".err")
        with errfile.open("w") as err:
            try:
                code = subprocess.run(["ssh", *self.options(), "-o", "ControlMaster=yes",
                                       "-o", f"ControlPersist={PERSIST}", "-f", "-N", "--",
                                       self.dest], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=err,
                                      timeout=60).returncode
            except subprocess.TimeoutExpired:
                return "no connection within 60s"
        text = errfile.read_text(errors="replace").strip()
        errfile.unlink(missing_ok=True)
        if code != 0 or not self.master_up():
            return last_line(text) or f"ssh exited with code {code}"
        return None

    def master_up(self) -> bool:
        return subprocess.run(["ssh", *self.options(), "-O", "check", "--", self.dest],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=30).returncode == 0

    def close_master(self) -> None:
        if Path(self.control).exists():
            subprocess.run(["ssh", *self.options(), "-O", "exit", "--", self.dest],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=30)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def unreachable(what: str, link: Link, why: str) -> ConfigError:
    config = f" -F {link.config}" if link.config else ""
    return ConfigError(f"{what}={link.dest}: ssh cannot reach it: {why}. The lab runs ssh "
                       f"with your config and keys and never prompts (BatchMode): check that "
                       f"`ssh{config} {link.dest} true` works without a password prompt")


# ---------------------------------------------------------------- a running ssh session

class Session:
    """One ssh session running the agent there: questions in, one JSON line
    out per question; the tail of its stderr says what went wrong; closing
    its stdin tells the agent to end (and stop what it still runs)."""

    def __init__(self, argv: list[str], what: str) -> None:
        self.what = what
        self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, bufsize=1,
                                      start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: deque[str] = deque(maxlen=20)
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        _sessions.append(self)

    def _read_out(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_err(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self.errors.append(line.rstrip())

    def send(self, line: str) -> None:
        assert self.popen.stdin is not None
        try:
            self.popen.stdin.write(line + "\n")
            self.popen.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self.lost() from None

    def lost(self) -> HostLost:
        code = self.popen.poll()
        why = last_line("\n".join(self.errors)) or (f"exit code {code}" if code is not None
                                                    else "no answer")
        return HostLost(f"{self.what}: {why}")

    def json(self, timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
        """The next line, as JSON."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise HostLost(f"{self.what}: no answer within {timeout:.0f}s") from None
        if line is None:
            self.lines.put(None)                 # stays at its end
            raise self.lost()
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            raise HostLost(f"{self.what}: unexpected output {line.strip()[:200]!r}") from None
        if not isinstance(data, dict):
            raise HostLost(f"{self.what}: unexpected output {line.strip()[:200]!r}")
        return data

    def end_input(self) -> None:
        try:
            if self.popen.stdin is not None:
                self.popen.stdin.close()
        except OSError:
            pass

    def close(self, wait: float = 10.0) -> None:
        """End of file to it, then wait; the local ssh is killed if it lingers."""
        self.end_input()
        try:
            self.popen.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        if self in _sessions:
            _sessions.remove(self)


# ---------------------------------------------------------------- one remote host

@dataclass(frozen=True)
class Remote:
    """A host the lab uses, as `lab up` found it."""
    dest: str
    base: str                  # the lab's folder there (REMOTE_DIR), absolute
    python: str
    boot_id: str               # same boot id: same machine, same CPU counters
    netns: str                 # with the boot id: same network stack
    cpus: tuple[int, ...]
    uid: int
    hostname: str

    @property
    def root(self) -> str:
        return f"{self.base}/root"

    @property
    def cache(self) -> str:
        return f"{self.base}/cache"

    @property
    def runs(self) -> str:
        return f"{self.base}/runs"

    @property
    def agent(self) -> str:
        return f"{self.root}/{AGENT}"


class PathMap:
    """This host's paths, rewritten to where the same files are there: the
    checkout, the lab cache, server folders from LAB_SERVER_PATH."""

    def __init__(self, pairs: Iterable[tuple[Path | str, str]]) -> None:
        self.pairs = sorted(((str(a), b) for a, b in pairs), key=lambda p: -len(p[0]))
        self.pattern = re.compile("|".join(re.escape(a) for a, _ in self.pairs)
                                  + r"(?![A-Za-z0-9._-])") if self.pairs else None
        self.to = dict(self.pairs)

    def __call__(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.pattern.sub(lambda m: self.to[m.group(0)], text)


def extra_server_dirs() -> list[Path]:
    """LAB_SERVER_PATH folders (test doubles, a user's own servers)."""
    return [Path(p).resolve() for p in os.environ.get("LAB_SERVER_PATH", "").split(":") if p]


def path_map(remote: Remote) -> PathMap:
    pairs: list[tuple[Path | str, str]] = [(ROOT, remote.root), (paths.cache_dir(), remote.cache)]
    for d in extra_server_dirs():
        if not d.is_relative_to(ROOT):
            pairs.append((d, f"{remote.base}/extra/{key(str(d))}"))
    return PathMap(pairs)


def remote_env(env: dict[str, str], mapped: PathMap, passed: Iterable[str] = ()
               ) -> dict[str, str]:
    """What a remote command gets of `env`: the lab's own variables, those the
    lab set or changed, JAVA_OPTS, ADA_TOOLCHAIN and `passed` (the servers'
    manifest env); paths rewritten. Not this shell's other variables (PATH,
    HOME are the host's)."""
    names = {*LAB_VARIABLES, procs.MARKER, *PASSED, *passed}
    keep = {k: v for k, v in env.items()
            if (k in names or os.environ.get(k) != v)
            and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)}
    keep.pop("LAB_SCRATCH", None)              # made there, per start
    return {k: mapped(v) for k, v in keep.items()}


def env_words(env: dict[str, str]) -> str:
    return " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items()))


class Host:
    """What every remote host does for the lab: its agent, asked over one session."""

    def __init__(self, remote: Remote, link: Link) -> None:
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
        self.checked = time.monotonic()

    @property
    def pid(self) -> int:
        return self._pid

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
        self.code = self.popen.returncode if self.code is None else self.code
        if self.code == 255:        # ssh's code for a command a signal ended: ours
            self.code = -(signal.SIGKILL if self.pid in left.get("killed", []) else
                          signal.SIGTERM)
        return self.code


class RemoteSampler:
    """A server tree sampled there for the length of one client run, by a
    thread of the agent (lab.procfs.Sampler, as here): its first sample now,
    the rest at the end. Two requests a level, no new process."""

    def __init__(self, host: Host, pid: int, interval: float = 0.2) -> None:
        self.host = host
        started = host.ask("watch", pid, interval)
        self.number = int(started["watch"])
        self.first: TreeSample | None = tree_sample(started.get("first"))
        self.last: TreeSample | None = self.first
        self.rss_peak_kb = self.first.rss_kb if self.first else 0
        self.threads_peak = self.first.threads if self.first else 0
        self.own_cpu_s = 0.0

    def __enter__(self) -> RemoteSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        end = self.host.ask("unwatch", self.number)
        self.last = tree_sample(end.get("last")) or self.last
        self.rss_peak_kb = max(self.rss_peak_kb, int(end.get("rss_peak_kb", 0)))
        self.threads_peak = max(self.threads_peak, int(end.get("threads_peak", 0)))
        self.own_cpu_s = float(end.get("own_cpu_s", 0.0))

    @property
    def cpu_s(self) -> float:
        if self.first is None or self.last is None:
            return 0.0
        return self.last.cpu_s - self.first.cpu_s


def tree_sample(data: object) -> TreeSample | None:
    if not isinstance(data, dict):
        return None
    return TreeSample(processes=int(data["processes"]), cpu_s=float(data["cpu_s"]),
                      threads=int(data["threads"]), rss_kb=int(data["rss_kb"]))


class SshServerHost(Host, ServerHost):
    """The server host: starts, samples and stops the server there."""

    def __init__(self, remote: Remote, link: Link, registry: Registry,
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
              cpus: tuple[int, ...]) -> Started:
        run = env.get(procs.MARKER, "run")
        folder = shlex.quote(f"{self.remote.runs}/{run}")
        # sshd made this shell a session leader; exec keeps its id for the server
        script = (f"mkdir -p {folder} && s=$(mktemp -d {folder}/scratch.XXXXXX) && "
                  f'echo "lab-remote: pid $$ on {self.name}, scratch $s" && '
                  + self.command(argv, cwd, env, cpus, '"$s"'))
        offset = log.stat().st_size if log.exists() else 0
        with log.open("ab") as f:
            popen = subprocess.Popen(self.link.ssh(script), stdin=subprocess.DEVNULL,
                                     stdout=f, stderr=f, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            m = re.search(rb"lab-remote: pid (\d+) on ", log.read_bytes()[offset:])
            if m:
                pid = int(m.group(1))
                since = self.ask("alive", pid)["since"]
                self.registry.started(self.name, pid, since, run, popen.pid)
                return RemoteProcess(self, popen, pid, run)
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

    def sampler(self, proc: Started) -> TreeSampler:
        return RemoteSampler(self, proc.pid)

    def sample(self, proc: Started) -> TreeSample | None:
        return tree_sample(self.ask("sample", proc.pid).get("sample"))

    def listeners(self, port: int) -> list[procs.Listener]:
        a = self.ask("listeners", port)
        if "text" not in a:
            raise HostLost(f"{self.name}: cannot list listening sockets: {a.get('error')}")
        return [x for x in procs.parse_listeners(str(a["text"])) if x.port == port]

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

    def __init__(self, remote: Remote, link: Link) -> None:
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

    def run_client(self, argv: list[str], cpus: tuple[int, ...], env: dict[str, str],
                   out: Path, timeout: float, server_alive: Callable[[], bool]) -> ClientRun:
        """Run it there through the agent (a child of the agent, which reads its
        rusage); stdout to `out` here at its end, stderr beside it (.err)."""
        run = env.get(procs.MARKER, "run")
        there = self.ship_files(argv, run)
        started = self.ask("client_start", there, ",".join(map(str, cpus)),
                           remote_env(env, self.mapped), self.remote.root,
                           f"{self.remote.runs}/{run}/clients", out.stem)
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
            out.write_text(str(result.get("stdout", "")))
            out.with_suffix(".err").write_text(str(result.get("stderr", "")))
        code = result.get("exit_code")
        return ClientRun(str(result["stdout"]), str(result["stderr"]),
                         int(code) if code is not None else None, float(result["cpu_s"]),
                         float(result["wall_s"]), self.name, started=float(result["started"]))

    def same_host_as(self, server: ServerHost) -> bool:
        """The same host: same machine (boot id) and same network stack. Hosts
        that only share a machine (namespaces) are told apart here, and their
        CPU counters merged by SshTopology."""
        return isinstance(server, Host) and \
            (server.remote.boot_id, server.remote.netns) == (self.remote.boot_id,
                                                             self.remote.netns)


# ---------------------------------------------------------------- the topology

def local_identity() -> tuple[str, str]:
    """This host's boot id and network namespace (as the agent reports a host's)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    try:
        netns = os.readlink("/proc/self/ns/net")
    except OSError:
        netns = ""
    return boot, netns


@dataclass
class SshTopology(Topology):
    """Hosts on one machine (same boot id) share CPU counters; on one network
    stack (and namespace), TIME_WAIT sockets: each is counted once."""
    identity: dict[int, tuple[str, str]] = field(default_factory=dict)   # id(host): (boot, netns)

    def _who(self, host: object) -> tuple[str, str]:
        return self.identity.get(id(host), (f"host-{id(host)}", ""))

    def _machines(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]
                  ) -> dict[str, tuple[Callable[[tuple[int, ...]], tuple[float, float]], set[int]]]:
        groups: dict[str, tuple[Callable[[tuple[int, ...]], tuple[float, float]], set[int]]] = {}
        hosts: list[tuple[object, Callable[[tuple[int, ...]], tuple[float, float]],
                          tuple[int, ...]]] = [(self.server, self.server.cpu_times, server_cpus)]
        hosts += [(c, c.cpu_times, client_cpus) for c in self.clients]
        for host, reader, cpus in hosts:
            boot = self._who(host)[0]
            if boot in groups:
                groups[boot][1].update(cpus)
            else:
                groups[boot] = (reader, set(cpus))
        return groups

    def cpu_times(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]
                  ) -> tuple[float, float]:
        busy = steal = 0.0
        for reader, cpus in self._machines(server_cpus, client_cpus).values():
            b, s = reader(tuple(sorted(cpus)))
            busy, steal = busy + b, steal + s
        return busy, steal

    def lab_cpus(self, server_cpus: tuple[int, ...], client_cpus: tuple[int, ...]) -> int:
        return sum(len(cpus) for _, cpus in self._machines(server_cpus, client_cpus).values())

    def time_wait(self) -> int:
        seen: dict[tuple[str, str], Callable[[], int]] = {
            self._who(self.server): self.server.time_wait_sockets}
        for host in self.clients:
            seen.setdefault(self._who(host), host.time_wait_sockets)
        return sum(count() for count in seen.values())


# ---------------------------------------------------------------- what lives across steps

class Registry:
    """Remote starts not yet stopped, in the lab cache: `down` stops what a
    step that died could not."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _add(self, entry: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")

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


@dataclass(frozen=True)
class Plan:
    """Where things go, from the settings alone."""
    params: Params
    id: str

    @staticmethod
    def of(params: Params) -> Plan:
        return Plan(params, key(params.ssh_config, params.server_host,
                                " ".join(params.client_hosts), params.remote_dir, str(ROOT),
                                str(paths.cache_dir())))

    @property
    def dests(self) -> list[str]:
        return list(dict.fromkeys([self.params.server_host, *self.params.client_hosts]))

    def link(self, dest: str) -> Link:
        return Link.to(dest, self.params)

    def role(self, dest: str) -> str:
        return "SERVER_HOST" if dest == self.params.server_host else "CLIENT_HOST"

    @property
    def state_file(self) -> Path:
        return paths.cache_dir() / "ssh" / f"{self.id}.json"

    @property
    def registry(self) -> Registry:
        return Registry(paths.cache_dir() / "ssh" / f"{self.id}.started")

    def base(self) -> str:
        """REMOTE_DIR as the remote shell reads it (relative: under the home)."""
        given = self.params.remote_dir.removeprefix("~/").removeprefix("~")
        if given:
            return given
        checkout = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
        return f".cache/polyglot-lab/{checkout}-{key(str(ROOT), str(paths.cache_dir()))[:8]}"


def load_state(plan: Plan) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(plan.state_file.read_text())
    except (OSError, ValueError):
        raise ConfigError(f"SERVER_HOST={plan.params.server_host}: the ssh hosts are not set "
                          "up for this step: `python3 -m lab up` does it (run-benchmark.sh "
                          "runs it before the run)") from None
    return data


def remote_of(data: dict[str, Any]) -> Remote:
    return Remote(dest=data["dest"], base=data["base"], python=data["python"],
                  boot_id=data["boot_id"], netns=data["netns"], cpus=tuple(data["cpus"]),
                  uid=int(data["uid"]), hostname=data["hostname"])


SPLIT = ("each level's concurrency or rate is shared among the client hosts (the first "
         "hosts one more); rates and counts are summed, mean latency weighted by responses, "
         "percentiles are the worst host's; client CPU and client-bound are per host "
         "(<server>/client-hosts.jsonl)")


def topology(params: Params) -> Topology:
    plan = Plan.of(params)
    state = load_state(plan)
    hosts = {d: remote_of(h) for d, h in state["hosts"].items()}
    server = SshServerHost(hosts[params.server_host], plan.link(params.server_host),
                           plan.registry, {k for s in chosen_servers(params) for k in s.env})
    clients: tuple[ClientHost, ...] = tuple(
        SshClientHost(hosts[d], plan.link(d)) for d in params.client_hosts) or \
        (LocalClientHost(),)
    identity = {id(server): (server.remote.boot_id, server.remote.netns)}
    for c in clients:
        identity[id(c)] = ((c.remote.boot_id, c.remote.netns) if isinstance(c, Host)
                           else local_identity())
    where = "here" if not params.client_hosts else " ".join(params.client_hosts)
    several = len(params.client_hosts) > 1
    return SshTopology(
        name="ssh", server=server, clients=clients, bind=state["bind"],
        connect=state["connect"],
        summary=(f"ssh (server on {params.server_host} at {state['connect']}; "
                 f"client{'s' * several} {'on ' if params.client_hosts else ''}{where})"),
        details={"ssh_config": params.ssh_config or "(ssh's own)",
                 "bind_from": state["bind_from"],
                 "remote_folders": {d: h.base for d, h in hosts.items()},
                 "shipped": state.get("shipped", {}),
                 **({"load_split": SPLIT} if several else {})},
        identity=identity)


# ---------------------------------------------------------------- lab check

def chosen_servers(params: Params) -> list[Server]:
    found = discover(ROOT, os.environ.get("LAB_SERVER_PATH", ""))
    return [lookup(found, n) for n in params.servers]


def needs(params: Params) -> dict[str, dict[str, str]]:
    """Per host: command -> Debian package it needs there."""
    base = {"python3": "python3", "taskset": "util-linux", "rsync": "rsync"}
    server = {**base, "ss": "iproute2"}
    for s in chosen_servers(params):
        server.update({c: p for c, p in s.requires.items() if c not in BUILD_TOOLS})
    want = {params.server_host: server}
    tool = client_tool(params)
    for d in params.client_hosts:
        want[d] = {**want.get(d, {}), **base, **({} if tool else {params.client: params.client})}
    return want


def client_tool(params: Params) -> Path | None:
    """A client tool the lab built into its cache (vegeta): shipped, not needed there."""
    from lab.clients import clients
    binary = getattr(clients()[params.client](), "binary", None)
    if isinstance(binary, Path) and binary.is_relative_to(paths.cache_dir()):
        return binary
    return None


PREFLIGHT = r"""
echo "uid=$(id -u)"
for c in {commands}; do
  if command -v "$c" >/dev/null 2>&1; then echo "have=$c"; else echo "lack=$c"; fi
done
python3 -c 'import os, sys; print("python=%d.%d" % sys.version_info[:2]); print("cpus=" + ",".join(map(str, sorted(os.sched_getaffinity(0)))))' 2>/dev/null || true
"""


def preflight(link: Link, role: str, want: dict[str, str], cpus: tuple[int, ...]) -> list[str]:
    """What the host lacks (empty: nothing); ConfigError when ssh cannot reach it."""
    script = PREFLIGHT.format(commands=" ".join(shlex.quote(c) for c in want))
    try:
        out = link.run(script, timeout=40)
    except HostLost as e:
        raise unreachable(role, link, str(e)) from None
    if out.returncode == 255:
        raise unreachable(role, link, last_line(out.stderr) or "ssh exited with code 255")
    facts: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        k, _, v = line.partition("=")
        facts.setdefault(k.strip(), []).append(v.strip())
    if "uid" not in facts:
        raise unreachable(role, link, f"the preflight script did not run (exit "
                          f"{out.returncode}: {last_line(out.stderr)})")
    problems = []
    python = facts.get("python", [""])[0]
    # python3 counts as there when it runs (a wrapper on PATH may not)
    lacking = [c for c in want if c in facts.get("lack", []) or (c == "python3" and not python)]
    if lacking:
        packages = sorted({want[c] for c in lacking})
        problems.append(f"lacks {', '.join(lacking)} (Debian: apt-get install "
                        f"{' '.join(packages)})")
    if python:
        major, minor = (int(x) for x in python.split("."))
        if (major, minor) < PYTHON_MIN:
            problems.append(f"has Python {python}; the lab's agent needs "
                            f"{'.'.join(map(str, PYTHON_MIN))} or newer")
    have = {int(c) for c in facts.get("cpus", [""])[0].split(",") if c}
    missing = sorted(set(cpus) - have) if have else []
    if missing:
        what = "SERVER_CPUS" if role == "SERVER_HOST" else "CLIENT_CPUS"
        problems.append(f"has no CPU {','.join(map(str, missing))} for {what} (usable there: "
                        f"{','.join(map(str, sorted(have)))})")
    return problems


def check(params: Params) -> None:
    """`lab check`: every host reachable and fit, before anything is built."""
    plan = Plan.of(params)
    if deps.ensure({"ssh": "openssh-client", "rsync": "rsync"}) != 0:   # installs as root
        raise ConfigError("SERVER_HOST needs ssh and rsync on this host")
    if not params.client_hosts:
        missing = sorted(set(params.client_cpus) - os.sched_getaffinity(0))
        if missing:
            raise ConfigError(f"CLIENT_CPUS: CPU {','.join(map(str, missing))} does not exist "
                              f"here, where the client runs (usable: "
                              f"{','.join(map(str, sorted(os.sched_getaffinity(0))))})")
    want = needs(params)
    problems = []
    for dest in plan.dests:
        role = plan.role(dest)
        cpus = params.server_cpus if dest == params.server_host else params.client_cpus
        if dest == params.server_host and dest in params.client_hosts:
            cpus = tuple(sorted(set(params.server_cpus) | set(params.client_cpus)))
        for problem in preflight(plan.link(dest), role, want[dest], cpus):
            problems.append(f"{role}={dest} {problem}")
    if problems:
        raise ConfigError("; ".join(problems))


# ---------------------------------------------------------------- lab up / down

def cache_parts(server: Server) -> set[str]:
    """Top folders of the lab cache a start of `server` reads: its build
    artifact's, and those of the cache paths the artifact names (the Ada
    servers' stamp names their binary inside the Debian 11 root)."""
    cache = paths.cache_dir()
    values = {"port": "0", "workers": "0", "backlog": "0", "bind": "", "root": str(ROOT),
              "cache": str(cache)}
    art = artifact_path(server, values)
    if art is None or not art.is_relative_to(cache) or not art.is_file():
        return set()
    parts = {art.relative_to(cache).parts[0]}
    if art.stat().st_size < 65536:
        for text in re.findall(r"/[^\s'\"=:]+", art.read_text(errors="replace")):
            p = Path(text)
            if p.is_relative_to(cache) and p != cache:
                parts.add(p.relative_to(cache).parts[0])
    return parts


def rsync(link: Link, sources: list[str], cwd: Path, there: str, extra: Iterable[str] = ()
          ) -> None:
    """rsync -a --delete of `sources` (relative to cwd, kept relative) into `there`."""
    made = link.run(f"mkdir -p {shlex.quote(there)}")
    if made.returncode != 0:
        raise ConfigError(f"{link.dest}: cannot make {there}: {last_line(made.stderr)}")
    argv = ["rsync", "-aR", "--delete", "--exclude=__pycache__",
            "--exclude=.mypy_cache", "--exclude=.pytest_cache", *extra,
            "-e", link.rsync_shell(), *sources, f"{link.dest}:{there}/"]
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise ConfigError(f"{link.dest}: copying {', '.join(sources)} failed: "
                          f"{last_line(out.stderr)}")


def hello(link: Link, role: str, base: str) -> dict[str, Any]:
    out = link.run(f"cd {shlex.quote(base)} && exec python3 root/{AGENT} hello", timeout=60)
    try:
        data: dict[str, Any] = json.loads(out.stdout)
    except ValueError:
        raise ConfigError(f"{role}={link.dest}: the lab's agent did not run there: "
                          f"{last_line(out.stderr) or out.stdout[:200]}") from None
    return data


def server_address(params: Params, link: Link) -> tuple[str, str, str]:
    """(bind, connect, why): where the server listens there and clients reach it."""
    out = subprocess.run(["ssh", *(["-F", link.config] if link.config else []), "-G", "--",
                          link.dest], capture_output=True, text=True, timeout=30)
    name = next((line.split(None, 1)[1] for line in out.stdout.splitlines()
                 if line.startswith("hostname ")), "")
    try:
        addr = str(ipaddress.ip_address(name))
        how = f"the HostName ssh uses for {link.dest} (ssh -G)"
    except ValueError:
        try:
            addr = str(socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)[0][4][0])
        except (OSError, IndexError):
            raise ConfigError(f"SERVER_HOST={link.dest}: its host name {name!r} does not "
                              "resolve here; give BIND=<its address>") from None
        how = f"{name}, the HostName ssh uses for {link.dest}, resolved here"
    given = ipaddress.ip_address(params.bind)
    if not given.is_loopback:                  # BIND given for this host: as asked
        connect = addr if given.is_unspecified else params.bind
        return params.bind, connect, "BIND"
    return addr, addr, how


def up(params: Params) -> None:
    """Open the masters, ship what runs there, check the server's address, save the facts."""
    plan = Plan.of(params)
    hosts: dict[str, dict[str, Any]] = {}
    shipped: dict[str, list[str]] = {}
    servers = chosen_servers(params)
    for dest in plan.dests:
        link, role = plan.link(dest), plan.role(dest)
        failed = link.open_master()
        if failed:
            raise unreachable(role, link, failed)
        made = link.run(f"mkdir -p {shlex.quote(plan.base())} && cd {shlex.quote(plan.base())} "
                        "&& pwd -P")
        if made.returncode != 0 or not made.stdout.strip():
            raise ConfigError(f"{role}={dest}: cannot make the lab's folder {plan.base()} "
                              f"there: {last_line(made.stderr)}; set REMOTE_DIR")
        base = made.stdout.strip().splitlines()[-1]
        what = ship(params, link, base, dest == params.server_host, servers, dest)
        shipped[dest] = what
        facts = hello(link, role, base)
        if tuple(facts["python"][:2]) < PYTHON_MIN:
            raise ConfigError(f"{role}={dest}: Python {facts['python']} there; the lab's agent "
                              f"needs {'.'.join(map(str, PYTHON_MIN))} or newer")
        hosts[dest] = {"dest": dest, "base": base, "python": "python3", **{
            k: facts[k] for k in ("boot_id", "netns", "cpus", "uid", "hostname")}}
    server_link = plan.link(params.server_host)
    bind, connect, how = server_address(params, server_link)
    state = {"hosts": hosts, "bind": bind, "connect": connect, "bind_from": how,
             "shipped": shipped, "opened": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    tmp = plan.state_file.with_suffix(".tmp")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(plan.state_file)
    server = SshServerHost(remote_of(hosts[params.server_host]), server_link, plan.registry)
    try:
        server.check_port_free(params.port, bind)     # PortBusy: exit 2, nothing started
    except procs.PortBusy as e:
        raise procs.PortBusy(f"SERVER_HOST={params.server_host}: {e} ({how})") from None


def ship(params: Params, link: Link, base: str, to_server: bool, servers: list[Server],
         dest: str) -> list[str]:
    """Copy what runs on this host (rsync: a second run copies only changes)."""
    role = "SERVER_HOST" if to_server else "CLIENT_HOST"
    root = f"{base}/root"
    what = ["lab"]
    if to_server:
        what = list(SHIPPED)
        for d in extra_server_dirs():
            if d.is_relative_to(ROOT):
                what.append(str(d.relative_to(ROOT)))
    rsync(link, [f"./{w}" for w in what], ROOT, root)
    if to_server:
        for d in extra_server_dirs():
            if not d.is_relative_to(ROOT):
                rsync(link, ["./"], d, f"{base}/extra/{key(str(d))}")
    cache = paths.cache_dir()
    parts = sorted(set().union(*(cache_parts(s) for s in servers))) if to_server else []
    tool = client_tool(params)
    if tool is not None and (dest in params.client_hosts):
        parts.append(str(tool.parent.relative_to(cache)))
    if parts:
        print(f"topology: copying {', '.join(parts)} of the lab cache to {dest} "
              "(only changes after the first time)", file=sys.stderr, flush=True)
        rsync(link, [f"./{p}" for p in parts], cache, f"{base}/cache", ["-H", "--numeric-ids"])
    for p in parts:                 # a Debian root is entered with chroot: it must work there
        if (cache / p / "etc" / "os-release").exists():
            tried = link.run(f"chroot {shlex.quote(f'{base}/cache/{p}')} /bin/true", timeout=60)
            if tried.returncode != 0:
                raise ConfigError(f"{role}={dest}: the servers' Debian root ({p}) is entered "
                                  f"with chroot, which failed there "
                                  f"({last_line(tried.stderr) or tried.returncode}): log in "
                                  "as root (SERVER_HOST=root@...) or use servers without it")
    return what + [f"cache/{p}" for p in parts]


def down(params: Params) -> None:
    """Stop whatever a step left running there, remove the run folders there,
    close the masters. Never fails: says what it could not do."""
    plan = Plan.of(params)
    try:
        hosts = json.loads(plan.state_file.read_text()).get("hosts", {})
    except (OSError, ValueError):
        hosts = {}
    for entry in plan.registry.running():
        dest, pid, since = entry["dest"], int(entry["pid"]), entry.get("since")
        if dest not in hosts or since is None:
            continue
        # the agent stops its session only if its leader is still the process
        # the lab started (the id may have been given to another since)
        agent = f"{hosts[dest]['base']}/root/{AGENT}"
        try:
            out = plan.link(dest).run(shlex.join(["python3", agent, "stop", str(pid), str(since),
                                                  str(entry["run"])]), timeout=60)
            if '"killed"' in out.stdout:
                print(f"topology: stopped what a step left running on {dest} (pid {pid})",
                      file=sys.stderr)
            elif out.returncode != 0:
                print(f"warning: could not stop pid {pid} on {dest}: "
                      f"{last_line(out.stderr)}", file=sys.stderr)
        except HostLost as e:
            print(f"warning: could not stop pid {pid} on {dest}: {e}", file=sys.stderr)
        stop_local_ssh(int(entry.get("ssh_pid", 0)))
    for dest, h in hosts.items():               # the runs' files there (logs came here)
        try:
            plan.link(dest).run(f"rm -rf -- {shlex.quote(h['base'] + '/runs')}", timeout=60)
        except HostLost as e:
            print(f"warning: could not remove {h['base']}/runs on {dest}: {e}", file=sys.stderr)
    for dest in plan.dests:
        try:
            plan.link(dest).close_master()
        except subprocess.SubprocessError as e:
            print(f"warning: could not close the ssh connection to {dest}: {e}",
                  file=sys.stderr)
    plan.registry.path.unlink(missing_ok=True)
    plan.state_file.unlink(missing_ok=True)


def stop_local_ssh(pid: int) -> None:
    """The local ssh of a start a dead step left behind, if it still runs (checked by name)."""
    if pid <= 0:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if cmdline and cmdline[0].endswith(b"ssh"):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
