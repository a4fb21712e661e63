"""NEIGHBOUR=N: a noisy neighbour the lab makes, beside a start.

N processes on each CPU of the run (SERVER_CPUS and CLIENT_CPUS together),
each pinned to its CPU (sched_setaffinity), each busy and idle by turns: a
burst of a busy loop, then a sleep, each drawn uniformly from 20 to 200 ms
(busy about half the time), from a seed, so a rerun repeats the pattern.
A user sees what such a host does to the figures and verdicts: its realized
noise, on purpose.

The lab side (`beside`, `Neighbour`) starts it as one process group through
lab.host.procs (its cgroup, the step's keeper), waits until every process is
pinned, and stops it (killed and reaped) when the start ends. The other side
is this file run as `python3 -m lab.measure.neighbour` (`main`): it forks
the processes and watches them. It is bounded three ways besides: each
process ends by itself at its deadline (twice the start's planned length
plus a minute), and when its parent is gone (the parent's pid, read each
burst: the watcher for a process, the lab's step for the watcher).
Standard library only on that side.
"""
from __future__ import annotations

import argparse
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from lab.setup.params import Params

BURST_MS = (20, 200)           # a busy loop, drawn uniformly
GAP_MS = (20, 200)             # then a sleep, drawn the same way: busy about half the time
MARGIN_S = 60                  # the deadline: twice the start's planned length, plus this
READY_S = 10.0                 # every process pinned within this, or the start fails


class NeighbourError(RuntimeError):
    """The neighbour could not start; the message says why."""


@dataclass(frozen=True)
class Plan:
    """What runs beside one start: `per_cpu` processes on each of `cpus`,
    for at most `seconds`, drawn from `seed`."""
    per_cpu: int
    cpus: tuple[int, ...]
    seconds: int
    seed: str

    @property
    def processes(self) -> int:
        return self.per_cpu * len(self.cpus)

    def said(self) -> str:
        """'2 bursty processes on CPU 0-1 (NEIGHBOUR=1), for at most 64s'."""
        from lab.setup.params import cpu_ranges
        return (f"{self.processes} bursty process{'es' * (self.processes != 1)} on CPU "
                f"{cpu_ranges(self.cpus)} (NEIGHBOUR={self.per_cpu}), for at most "
                f"{self.seconds}s")

    def record(self) -> dict[str, object]:
        """The start's record of it in manifest.json (`neighbour`)."""
        return {"per_cpu": self.per_cpu, "cpus": list(self.cpus),
                "processes": self.processes, "burst_ms": list(BURST_MS),
                "gap_ms": list(GAP_MS), "seconds": self.seconds, "seed": self.seed}


def plan_for(params: Params, levels: int, seed: str) -> Plan | None:
    """The neighbour of a start that measures `levels` levels (None:
    NEIGHBOUR=0). Its deadline is twice the start's planned length (the
    warm-up at its cap, each level and its 1 s check slice) plus MARGIN_S:
    a level measured again, a paired run's two warm-ups, fit in it."""
    if not params.neighbour:
        return None
    warm = params.warmup_max_s if params.warmup_auto else params.warmup_s
    planned = warm + levels * (params.duration_s + 1)
    cpus = tuple(sorted(set(params.server_cpus) | set(params.client_cpus)))
    return Plan(params.neighbour, cpus, 2 * planned + MARGIN_S, seed)


class Neighbour:
    """The running neighbour: one process group (lab.host.procs.start), its
    processes' pids and CPUs (`pinned`)."""

    def __init__(self, plan: Plan, proc: subprocess.Popen[bytes], err: IO[bytes],
                 pinned: dict[int, int]) -> None:
        self.plan, self.proc, self.err, self.pinned = plan, proc, err, pinned
        self.ended: str | None = None          # set by stop()

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> str:
        """Kill and reap it (its group and cgroup); "" when it ran until
        now, else how it had ended before (its exit code, its last words).
        Stopping it again says the same."""
        if self.ended is not None:
            return self.ended
        from lab.host import procs
        code = self.proc.poll()
        procs.stop(self.proc, grace=2)
        procs.kill_group(self.proc.pid)
        said = last_words(self.err)
        self.ended = "" if code is None else \
            f"it had ended by itself ({exit_said(code)}{f': {said}' if said else ''})"
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.err.close()
        return self.ended


def exit_said(code: int) -> str:
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}" if code else "its deadline passed"


def last_words(err: IO[bytes]) -> str:
    """Its last three lines on stderr, as one (a process that could not pin, then
    how many could)."""
    err.seek(0)
    lines = err.read().decode(errors="replace").strip().splitlines()
    return "; ".join(dict.fromkeys(x.strip() for x in lines[-3:] if x.strip()))[-300:]


def beside(params: Params, levels: int, seed: str, run_id: str) -> Neighbour | None:
    """NEIGHBOUR's processes started beside a start of `levels` levels, each
    pinned (None: NEIGHBOUR=0); NeighbourError when they cannot be."""
    from lab.host import procs
    plan = plan_for(params, levels, seed)
    return None if plan is None else start(plan, {**os.environ, procs.MARKER: run_id})


def start(plan: Plan, env: dict[str, str]) -> Neighbour:
    """The plan's processes, started as one group (lab.host.procs.start: its
    own session and cgroup, the keeper told), once every one is pinned."""
    from lab.host import procs
    from lab.setup.paths import ROOT
    argv = [sys.executable, "-S", "-m", "lab.measure.neighbour", "--per-cpu",
            str(plan.per_cpu), "--cpus", ",".join(map(str, plan.cpus)), "--seconds",
            str(plan.seconds), "--seed", plan.seed, "--parent", str(os.getpid())]
    err = tempfile.TemporaryFile()
    try:
        proc = procs.start(argv, ROOT, env, err, stdout=subprocess.PIPE)
    except OSError as e:
        err.close()
        raise NeighbourError(f"the neighbour (NEIGHBOUR={plan.per_cpu}) did not start: "
                             f"{e}") from None
    hog = Neighbour(plan, proc, err, {})
    try:
        words = ready_line(proc, READY_S).split()
        if words[:1] != ["ready"]:
            raise ValueError(" ".join(words))
        hog.pinned = {int(p): int(c) for p, _, c in (w.partition(":") for w in words[1:])}
    except ValueError:
        try:
            proc.wait(timeout=1)              # its end said (its stdout closed), not yet reaped
        except subprocess.TimeoutExpired:
            pass
        why = hog.stop() or f"not ready within {READY_S:g}s"
        raise NeighbourError(f"the neighbour (NEIGHBOUR={plan.per_cpu}) did not start: "
                             f"{why}") from None
    except BaseException:                     # interrupted while it started: stopped too
        hog.stop()
        raise
    return hog


def ready_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The watcher's first line ("ready PID:CPU ..."), or "" at its end or the timeout."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    got = b""
    end = time.monotonic() + timeout
    while b"\n" not in got and time.monotonic() < end:
        readable, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not readable:
            break
        part = os.read(fd, 4096)
        if not part:
            break
        got += part
    return got.decode(errors="replace").partition("\n")[0] if b"\n" in got else ""


# ---- the neighbour's own side: python3 -m lab.measure.neighbour ------------------

def burn(seed: str, until: float, parent: int) -> None:
    """Busy, then idle, by turns, until `until` (time.monotonic) or until
    the parent is gone (checked each burst)."""
    rng = random.Random(seed)
    while time.monotonic() < until and os.getppid() == parent:
        end = min(until, time.monotonic() + rng.uniform(*BURST_MS) / 1000)
        while time.monotonic() < end:
            pass
        gap = rng.uniform(*GAP_MS) / 1000
        time.sleep(max(0.0, min(gap, until - time.monotonic())))


def one(cpu: int, seed: str, until: float, ready: int) -> int:
    """A forked process: pinned to `cpu`, said on `ready` (+, or - when it
    cannot be), then bursts until its deadline or its parent's end."""
    parent = os.getppid()
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError as e:
        print(f"neighbour: cannot pin a process to CPU {cpu}: {e}", file=sys.stderr,
              flush=True)                      # before os._exit, and before the watcher's
        os.write(ready, b"-")
        return 2
    os.write(ready, b"+")
    os.close(ready)
    burn(seed, until, parent)
    return 0


def end_all(children: dict[int, int]) -> None:
    """SIGKILL every child still there, and reap them."""
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    children.clear()


def watch(children: dict[int, int], until: float, parent: int) -> None:
    """Reap the children as they end; end them all past the deadline or
    when this process's parent (the lab's step) is gone."""
    while children:
        if time.monotonic() > until + 1 or os.getppid() != parent:
            end_all(children)
            return
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            children.pop(pid, None)
        else:
            time.sleep(0.1)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab.measure.neighbour")
    ap.add_argument("--per-cpu", type=int, required=True)
    ap.add_argument("--cpus", required=True, help="comma-separated CPU numbers")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--seed", default="")
    ap.add_argument("--parent", type=int, default=0,
                    help="the pid whose end ends it (default: its parent now)")
    args = ap.parse_args(argv)
    parent = args.parent or os.getppid()
    until = time.monotonic() + args.seconds
    cpus = [int(c) for c in args.cpus.split(",") if c]
    read, write = os.pipe()
    children: dict[int, int] = {}
    sys.stdout.flush()
    for k, cpu in enumerate(c for c in cpus for _ in range(args.per_cpu)):
        pid = os.fork()
        if pid == 0:
            os.close(read)
            os._exit(one(cpu, f"{args.seed}/{k}", until, write))
        children[pid] = cpu
    os.close(write)
    said = b""
    while len(said) < len(children):
        part = os.read(read, len(children) - len(said))
        if not part:
            break
        said += part
    os.close(read)
    if said != b"+" * len(children):
        end_all(children)
        print(f"neighbour: {said.count(b'+')} of {args.per_cpu * len(cpus)} processes "
              "pinned", file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):     # stopped: its processes with it, reaped
        signal.signal(sig, stopped)
    try:
        print("ready " + " ".join(f"{pid}:{cpu}" for pid, cpu in children.items()),
              flush=True)
        watch(children, until, parent)
    except (SystemExit, BrokenPipeError):
        pass
    finally:
        end_all(children)
    return 0


def stopped(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
