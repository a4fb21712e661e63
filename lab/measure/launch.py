"""Starting one server the way every step does (probe, sweep, calibration):
its knobs in the environment and in the manifest's placeholders, pinned to
its CPUs, in a session of its own, then waited for on its address."""
from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lab.host import procs
from lab.host.procfs import TreeSample
from lab.measure.topologies import ServerHost, Started
from lab.measure.topologies.local import LocalServerHost
from lab.setup.servers import Server, expand


class ListenError(RuntimeError):
    """A server listening elsewhere than BIND:PORT, or with another backlog than BACKLOG."""


@dataclass(frozen=True)
class Knobs:
    """What every server start is given (PORT, WORKERS, BACKLOG, BIND);
    workers None: no WORKERS, the server's library sizes its pools itself."""
    port: int
    workers: int | None
    backlog: int
    bind: str


def placeholders(root: Path, cache: Path, knobs: Knobs) -> dict[str, str]:
    """Tokens a manifest's commands may use: {port} {workers} {backlog} {bind} {root} {cache}."""
    return {"port": str(knobs.port),
            "workers": "" if knobs.workers is None else str(knobs.workers),
            "backlog": str(knobs.backlog), "bind": knobs.bind,
            "root": str(root), "cache": str(cache)}


def lab_env(root: Path, cache: Path, run_id: str, knobs: Knobs,
            server: Server | None = None) -> dict[str, str]:
    """The environment of a server's commands: the lab's, the manifest's `env`
    (a variant's switch, e.g. JAXRS_CONTAINER), then the knobs, which a
    manifest cannot override."""
    env = dict(os.environ)
    if server is not None:
        env.update(server.env)
    env.update(PORT=str(knobs.port), BACKLOG=str(knobs.backlog),
               BIND=knobs.bind, LAB_ROOT=str(root), LAB_CACHE=str(cache),
               **{procs.MARKER: run_id})
    env.pop("WORKERS", None)                    # the user's own: given below, or not at all
    if knobs.workers is not None:
        env["WORKERS"] = str(knobs.workers)
    return env


ELF = b"\x7fELF"                 # the first bytes of a native binary (Linux)


def executable(word: str, cwd: Path, path: str) -> Path | None:
    """The file a command's first word runs: relative to `cwd` (the run
    command's dir) when it holds a slash, else found on `path` (the start's
    PATH); None when there is none."""
    if "/" in word:
        found = cwd / word
        return found if found.is_file() else None
    which = shutil.which(word, path=path)
    return Path(which) if which else None


def native_binary(file: Path) -> bool:
    """Whether a file is a native executable (ELF), not a script (#!)."""
    try:
        with file.open("rb") as f:
            return f.read(len(ELF)) == ELF
    except OSError:
        return False


def wrapped_by(server: Server, command: list[str], env: dict[str, str]) -> str:
    """Who puts a tool's words (make cost's valgrind) before the server's
    executable: the manifest's `[run] wrap` when given; else "lab" when the
    run command's executable is a native binary (the lab puts them before
    the whole command), "command" when it is a script, which puts
    LAB_WRAPPER before the executable it runs itself (servers/nginx/run.sh,
    servers/ada/toolchain.sh)."""
    if server.wrap is not None:
        return server.wrap
    exe = executable(command[0], server.run.dir, env.get("PATH", os.defpath))
    return "lab" if exe is not None and native_binary(exe) else "command"


RAN_WITH = re.compile(r"^lab-workers: ([0-9]+)(?: \((.*)\))?\s*$", re.M)


def ran_with(log: Path, offset: int = 0) -> dict[str, object] | None:
    """What a server says it runs with, in its log: a line
    `lab-workers: N (pool sizes, threads, in its own words)`; None if none."""
    try:
        with log.open("rb") as f:
            f.seek(offset)
            text = f.read(1 << 20).decode(errors="replace")
    except OSError:
        return None
    m = RAN_WITH.search(text)
    if m is None:
        return None
    return {"workers": int(m.group(1)), "detail": m.group(2) or ""}


class ServerProcess:
    """One start of a server: `start()`, `ready()`, `stop()` (always)."""

    def __init__(self, server: Server, root: Path, cache: Path, run_id: str, knobs: Knobs,
                 cpus: tuple[int, ...], log: Path, where: ServerHost | None = None,
                 connect: str | None = None, log_max: int | None = None) -> None:
        self.server, self.knobs, self.log, self.cpus = server, knobs, log, cpus
        self.log_max = log_max          # SERVER_LOG_MAX (lab.host.logcap); None: uncapped
        self.where: ServerHost = where or LocalServerHost()
        self.connect = connect
        self.values = placeholders(root, cache, knobs)
        self.env = lab_env(root, cache, run_id, knobs, server)
        self.command = expand(server.run.argv, self.values)
        self.argv = procs.pinned(self.command, cpus)      # as recorded in the manifest
        self.proc: Started | None = None
        self.scratch: Path | None = None
        self.log_offset = 0
        # after stop(): what was left of it (its cgroup's escaped processes, its
        # own child still holding its port), killed; None: no cgroup to tell
        self.left: list[dict[str, object]] | None = None
        self.exit_code: int | None = None       # stop()'s, also when its port stayed busy

    @property
    def host(self) -> str:
        """Where clients reach it: the topology's address, else BIND (loopback
        when BIND is every interface)."""
        return self.connect or procs.connect_host(self.knobs.bind)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.knobs.port}/api"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("not started")
        return self.proc.pid

    def wrap(self, words: list[str], out: Path) -> str:
        """Run this start under a tool (make cost: valgrind's words), its
        files into `out` (LAB_WRAP_OUT); before start(). Who puts the words
        before the executable (wrapped_by): "lab", before the whole command
        (LAB_WRAPPER is then empty, so a script it runs does not wrap
        again), or "command", its own script (LAB_WRAPPER)."""
        how = wrapped_by(self.server, self.command, self.env)
        self.env["LAB_WRAP_OUT"] = str(out)
        if how == "lab":
            self.command = list(words) + self.command
            self.argv = procs.pinned(self.command, self.cpus)
            self.env["LAB_WRAPPER"] = ""
        else:
            self.env["LAB_WRAPPER"] = " ".join(words)
        return how

    def start(self) -> Started:
        self.where.check_port_free(self.knobs.port, self.knobs.bind)
        # A private scratch folder (LAB_SCRATCH) for what a server writes at
        # run time (nginx's prefix); removed when the server is stopped.
        self.log_offset = self.log.stat().st_size if self.log.exists() else 0
        self.scratch = Path(tempfile.mkdtemp(prefix=f"lab-{self.server.name}."))
        self.env["LAB_SCRATCH"] = str(self.scratch)
        procs.Keeper.undo(self._undo_scratch())    # the step killed: its keeper removes it
        self.proc = self.where.start(self.command, self.server.run.dir, self.env, self.log,
                                     self.cpus, self.log_max)
        return self.proc

    def _undo_scratch(self) -> list[str]:
        return ["rm", "-rf", "--", str(self.scratch)]

    def ready(self) -> float:
        """Seconds until it accepts on its address; NotReady (with its log's tail) if never."""
        assert self.proc is not None
        try:
            return self.where.wait_ready(self.proc, self.host, self.knobs.port,
                                         self.server.ready_timeout)
        except procs.NotReady as e:
            raise procs.NotReady(f"{e}\n--- last lines of {self.log}:\n"
                                 f"{procs.tail(self.log)}") from None

    def ran_with(self) -> dict[str, object] | None:
        """What this start says it runs with (its `lab-workers:` line), after ready()."""
        return ran_with(self.log, self.log_offset)

    def check_listening(self) -> dict[str, object]:
        """Check, from `ss`, every socket listening on this start's port (after
        ready()): each must be on BIND, with BACKLOG as its backlog (at most
        net.core.somaxconn: the kernel caps it there). Returns {"address",
        "backlog"} for the manifest; ListenError says what differs."""
        port, bind, backlog = self.knobs.port, self.knobs.bind, self.knobs.backlog
        name = self.server.name
        found = self.where.listeners(port)
        if not found:
            raise ListenError(f"{name}: nothing listens on port {port} (ss -ltn)")
        # Several sockets are normal: nginx's reuseport opens one per worker.
        elsewhere = [s for s in found if not procs.same_address(s.address, bind)]
        if elsewhere:
            raise ListenError(f"{name} listens on {_describe(elsewhere)}, not only on "
                              f"BIND={bind}: it must take its address from BIND")
        cap = self.where.somaxconn()
        want = backlog if cap is None else min(backlog, cap)
        capped = (f" (BACKLOG={backlog}, capped by net.core.somaxconn={cap})"
                  if want != backlog else "")
        other = [s for s in found if s.backlog != want]
        if other:
            raise ListenError(f"{name} listens on {_describe(other)}, expected backlog "
                              f"{want}{capped}: it must pass BACKLOG to its listen()")
        return {"address": bind, "backlog": want}

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exited(self) -> str:
        """"exited with code 0", "killed by SIGKILL" once it has ended; "" while it runs."""
        code = None if self.proc is None else self.proc.poll()
        return "" if code is None else exit_words(code)

    def strangers(self) -> str:
        """Who else holds its port now: "" when every socket listening on it is
        held by its own processes (its tree, its cgroup, or a process that
        carries this step's token: lab.host.procs.strangers), or where the
        topology cannot tell (another host, a container)."""
        assert self.proc is not None
        own = self.where.own_pids(self.proc)
        if own is None:
            return ""
        others = procs.strangers(self.where.listeners(self.knobs.port), own,
                                 procs.Keeper.token())
        return "" if not others else (f"port {self.knobs.port} also held by "
                                      f"{procs.holders(others)}")

    def stop(self) -> int | None:
        """Stop its whole process group (and cgroup); wait until its port is
        free again. A child of its own that still holds the port (it left the
        group, and there is no cgroup) is killed and counted in `left`;
        PortBusy when a stranger holds it."""
        if self.proc is None:
            return None
        code = self.exit_code = self.proc.stop()
        self.left = self.where.left_over(self.proc)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            procs.Keeper.done(self._undo_scratch())
        self._kill_own_holders()
        self.where.wait_port_released(self.knobs.port, self.knobs.bind)
        return code

    def left_said(self) -> str:
        """What was left of it after stop(), in words ("" : nothing)."""
        if not self.left:
            return ""
        what = ", ".join(f"{x['comm']} (pid {x['pid']})" for x in self.left)
        whose = "its own child" if len(self.left) == 1 else "its own children"
        how = (f"holding its port {self.knobs.port}: killed"
               if any(x.get("held_port") for x in self.left)
               else "outside its process group: killed with its cgroup")
        return f"{what}, {whose}, outlived {self.server.name} {how}"

    def _kill_own_holders(self) -> None:
        """SIGKILL the processes of this step (its token) that still hold the
        port after the server stopped, out of its process group (what is in
        it is being killed already): its own child that left the group."""
        if not isinstance(self.where, LocalServerHost) or self.proc is None:
            return
        token = procs.Keeper.token()
        own = sorted({(p, s.process or "?") for s in self.where.listeners(self.knobs.port)
                      for p in s.pids if procs.carries(p, token) and _group(p) != self.proc.pid})
        for pid, _ in own:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if own:
            self.left = (self.left or []) + [{"pid": pid, "comm": comm, "held_port": True}
                                             for pid, comm in own]

    def sample(self) -> TreeSample | None:
        """Its process tree now, wherever it runs."""
        assert self.proc is not None
        return self.where.sample(self.proc)


def _group(pid: int) -> int | None:
    """A process's group id; None when it is gone."""
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def exit_words(code: int) -> str:
    """'exited with code 3', or 'killed by SIGKILL' for a negative code (subprocess's way)."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def _describe(sockets: list[procs.Listener]) -> str:
    """Each socket as `127.0.0.1:8080 backlog 50 (java pid 12)`, joined by "; "."""
    def one(s: procs.Listener) -> str:
        host = f"[{s.address}]" if ":" in s.address else s.address
        owner = (f" ({s.process} pid {','.join(map(str, s.pids))})" if s.process else "")
        return f"{host}:{s.port} backlog {s.backlog}{owner}"
    return "; ".join(one(s) for s in sockets)
