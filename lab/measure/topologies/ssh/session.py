"""TOPOLOGY ssh, how the lab reaches a host: ssh with the lab's options over
one master connection per host (`SshLink`), a host as `lab up` found it
(`Remote`), and a session running the lab's agent there (`Session`): one
JSON question in, one JSON line out.

Control sockets are derived from the settings, under /tmp/labssh-<uid>/
(short: a socket path has a limit of about 100 characters).
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import queue
import shlex
import subprocess
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.record import files
from lab.setup import paths
from lab.setup.params import ConfigError, Params
from lab.setup.whynot import Reason
from lab.measure.topologies import HostLost

AGENT = "lab/measure/topologies/ssh/agent.py"
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
               "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3")
PERSIST = "10m"          # a master left behind (down never ran) ends after this idle time
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
class SshLink:
    """ssh to one host, the lab's way: its options, over the master connection."""
    dest: str              # user@host as given
    config: str            # SSH_CONFIG, absolute ("" = ssh's own)
    control: str           # ControlPath of the master connection

    @staticmethod
    def to(dest: str, params: Params) -> SshLink:
        sockets = Path("/tmp") / f"labssh-{os.geteuid()}"
        return SshLink(dest, params.ssh_config,
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

    def open_master(self) -> Reason:
        """Open the master connection (in the background): why it failed, or None
        when it is open."""
        Path(self.control).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.master_up():
            return None
        # The master goes to the background with -f: its stderr goes to a
        # file, since a pipe would stay open as long as it runs.
        errfile = Path(self.control + ".err")
        with files.open_binary(errfile) as err:
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


def unreachable(what: str, link: SshLink, why: str) -> ConfigError:
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
