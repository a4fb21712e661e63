"""`python3 -m lab live [RUN]`: a line a second while a run measures, for
Brendan Gregg's active benchmarking (look at the system while it is loaded).

It follows a run folder (default: the newest running one in RESULTS) from a
second terminal and reads only what is public: the manifest's start being
measured (its server's PID), /proc for the server tree's CPU and RSS, the
busy time of the server's and the client's CPUs (the run's pinning), the
run queue and the sockets in TIME_WAIT; and the client's output as it grows
(vegeta's report every second gives the rate; wrk and Siege report at the
end of a level only). It starts nothing and writes nothing."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from lab.host import procfs
from lab.record import files, manifest, series
from lab.setup.params import parse_cpus

LIVE = ("starting", "running", "verified", "measuring")


def newest_running(results: Path) -> Path | None:
    """The run in `results` whose manifest says running, newest first."""
    found = []
    for run in results.iterdir() if results.is_dir() else []:
        try:
            m = manifest.read_manifest(run)
        except (OSError, files.RecordError):
            continue
        if m.status == "running":
            found.append((run.stat().st_mtime, run))
    return max(found)[1] if found else None


def current(m: manifest.Manifest) -> tuple[str, str, int] | None:
    """(server, start id, PID) of the start the run is on, or None."""
    for name, rec in m.servers.items():
        for start in rec.starts:
            pid = start.extra.get("pid")
            if start.status in LIVE and isinstance(pid, int):
                return name, start.id, pid
    return None


def run_queue() -> int | None:
    """Runnable tasks now (procs_running of /proc/stat), the lab's sampler included."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def client_rate(folder: Path, start_id: str = "") -> tuple[str, float | None]:
    """The newest client output of a server's folder (of the start
    `start_id` alone, when given: "<client>-<start id>-<level>.out"): its
    tag, and the last second's rate where the client reports one while it
    runs (vegeta). A start that has not reached a level yet has none: the
    previous start's last level is not this one's."""
    outs = sorted((p for p in folder.glob("*.out") if p.is_file()
                   and (not start_id or f"-{start_id}-" in p.name)),
                  key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    if not outs:
        return "", None
    newest = outs[-1]
    try:
        rates = series.vegeta_per_second(newest.read_text(errors="replace"))
    except OSError:
        rates = []
    return newest.stem, rates[-1] if rates else None


def pct(busy_s: float, span_s: float, cpus: int) -> float:
    """Busy seconds over a span on `cpus` CPUs, as % of them (clock ticks can
    round a full second a little over 100%)."""
    return min(100.0, 100 * busy_s / span_s / cpus)


def line(m: manifest.Manifest, run: Path, state: dict[str, float], now: float) -> str:
    """One second's line; `state` keeps the previous readings for the deltas."""
    got = current(m)
    if got is None:
        return "waiting: no server start running (building, probing, or between starts)"
    name, start_id, pid = got
    sample = procfs.sample(pid)
    server_cpus = parse_cpus("SERVER_CPUS", m.pinning.server_cpus, None) \
        if m.pinning.server_cpus else ()
    client_cpus = parse_cpus("CLIENT_CPUS", m.pinning.client_cpus, None) \
        if m.pinning.client_cpus else ()
    s_busy = procfs.cpu_times(server_cpus)[0] if server_cpus else 0.0
    c_busy = procfs.cpu_times(client_cpus)[0] if client_cpus else 0.0
    tree_cpu = sample.cpu_s if sample else 0.0
    parts = [f"[{name} {start_id}] PID {pid}"]
    tag, rate = client_rate(run / name, start_id)
    parts.append(tag or "no level yet (starting, verifying or warming up)")
    if state.get("pid") != pid:
        # a new start is a new process, its CPU counted from 0: no delta
        # against the previous start's (that gave server CPU -1050%)
        state.clear()
    if "t" in state:
        span = max(now - state["t"], 1e-3)
        parts.append(f"rate {rate:,.0f}/s" if rate is not None else "rate: at the level's end")
        used = tree_cpu - state["tree"]
        # a process of the tree that ended took its CPU time with it: no figure
        parts.append(f"server CPU {100 * used / span:.0f}%" if used >= 0 else
                     "server CPU: a process of its tree ended, next second")
        if server_cpus:
            parts.append(f"(its CPUs {pct(s_busy - state['s'], span, len(server_cpus)):.0f}%"
                         " busy)")
        if client_cpus:
            parts.append(f"client CPUs {pct(c_busy - state['c'], span, len(client_cpus)):.0f}%"
                         " busy")
    if sample:
        parts.append(f"RSS {sample.rss_kb / 1024:.1f} MB, {sample.threads} threads")
    queue = run_queue()
    if queue is not None:
        parts.append(f"run queue {queue}")
    parts.append(f"TIME_WAIT {procfs.time_wait_sockets():,}")
    state.update(t=now, tree=tree_cpu, s=s_busy, c=c_busy, pid=pid)
    return "  ".join(parts)


def main(run_arg: str, seconds: int) -> int:
    results = Path(os.environ.get("RESULTS") or "results")
    t0 = time.monotonic()
    run = Path(run_arg) if run_arg else newest_running(results)
    if run is None:
        print(f"waiting for a run in {results} to start (make bench ... in another "
              "terminal; Ctrl-C to stop)", file=sys.stderr, flush=True)
    while run is None:
        if seconds and time.monotonic() - t0 >= seconds:
            print(f"error: no run started in {results} within {seconds}s", file=sys.stderr)
            return 2
        time.sleep(0.5)
        run = newest_running(results)
    manifest.read_manifest(run)                 # not a run folder: RecordError, exit 2
    print(f"following {run} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    state: dict[str, float] = {}
    last = ""
    while not seconds or time.monotonic() - t0 < seconds:
        try:
            m = manifest.read_manifest(run)
        except (OSError, files.RecordError):
            time.sleep(0.2)                   # being rewritten: read it again
            continue
        if m.status != "running" and not seconds:
            print(f"the run ended ({m.status})", flush=True)
            return 0
        said = line(m, run, state, time.monotonic())
        if said != last or not said.startswith("waiting"):
            print(said, flush=True)
        last = said
        time.sleep(1.0)
    return 0
