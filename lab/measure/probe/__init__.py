"""Robustness probe: what a server does with the requests a benchmark never sends.

A sweep only ever sends well-formed GET /api. Servers differ most in what
they do with everything else, and some of it hurts a later measurement (CPU
still burning after a client left) or ends it (a server that stops
answering). So, before a server is loaded, a separate start of it gets
eleven small probes (PROBES): garbage bytes, oversized headers, a request
line without a version, half a request, slow clients beside normal ones,
many idle connections, pipelining, HTTP/1.0 without Host, a body that never
comes, a very long path.

Every probe is bounded in time (its own deadline, `Limits`) and in what it
sends: a small fixed payload, or, for the 1 MiB of headers, only as fast as
the server reads (its socket's receive queue, asked of the kernel) and only
until the server has spent a CPU budget. That bounds the server CPU a probe
can cause even in a server whose header handling is quadratic. The server's
process-tree CPU is sampled before each probe and after it has settled, and
recorded. After each probe the server must still pass the contract
(lab.measure.verify); a server that stopped answering gets a bounded chance to
recover before the next probe, and the remaining probes are skipped if it
does not (they would only measure a dead server). The probes that occupy many
connections run last, so that a server slow to recover from them has been
probed on everything else.

The probe reports, it never fixes: `ProbeReport.still_answers` tells the
pipeline whether the server is fit to be loaded at all.

Entry points: `run_probe` (a server already running), `probe_server` (start a
separate instance, probe it, stop it, wait for its CPUs to go quiet),
and `main_step` (the pipeline step: params in, report and exit code out).
One Markdown table for several servers: lab.present.probetable (by hand:
`python3 -m lab.studies.probetable`).
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from lab.analyse import contract
from lab.analyse.contract import Check
from lab.record.probe import PROBE, Limits, ProbeReport, ProbeResult
from lab.host import procfs, procs
from lab.measure import topologies
from lab.record import files
from lab.setup.markdown import Table, md_text as cell
from lab.analyse.probeview import settled_text
from lab.host.procfs import TreeSample
from lab.measure.topologies import Placement, ServerHost
from lab.measure.launch import Knobs, ServerProcess
from lab.setup.params import Params
from lab.setup.servers import Server
from lab.measure.verify import checks
from lab.measure.probe.wire import (Target, describe, exchange, parse_answers,
                             receive_queue)

__all__ = ["PROBES", "Limits", "ProbeReport", "ProbeResult", "Target", "describe",
           "exchange", "main_step", "markdown", "parse_answers", "probe_server",
           "receive_queue", "run_probe"]
from lab.measure.probe.probes import PROBES, Probe, tree_cpu


SERVER_LOG = "probe-server.log"


# ---------------------------------------------------------------- CPU and contract checks

def wait_quiet(t: Target, bound_s: float, window_s: float, share: float) -> float | None:
    """Seconds until the tree used less than `share` of a core over one
    window (or is gone); None if it never did within bound_s."""
    t0 = time.monotonic()
    prev = tree_cpu(t)
    while True:
        time.sleep(window_s)
        cur = tree_cpu(t)
        elapsed = time.monotonic() - t0
        if cur is None or prev is None or (cur - prev) / window_s < share:
            return elapsed
        if elapsed >= bound_s:
            return None
        prev = cur


def wait_cpus_quiet(cpus: tuple[int, ...], bound_s: float, share: float = 0.10,
                    where: ServerHost | None = None, window_s: float = 1.0) -> float | None:
    """Seconds until these CPUs (of the server's host) were less than `share`
    busy over one window (all of them together); None if they never were
    within bound_s."""
    times = where.cpu_times if where is not None else procfs.cpu_times
    t0 = time.monotonic()
    prev, _ = times(cpus)
    while True:
        time.sleep(window_s)
        cur, _ = times(cpus)
        elapsed = time.monotonic() - t0
        if (cur - prev) / len(cpus) / window_s < share:
            return elapsed
        if elapsed >= bound_s:
            return None
        prev = cur


def check(t: Target) -> tuple[Check, ...]:
    """The contract (lab.measure.verify), with the probe's short timeout: every
    breach (none: it answers)."""
    return tuple(contract.breaches(checks(t.host, t.port, timeout=t.limits.verify_timeout_s)))


def check_until(t: Target, bound_s: float) -> tuple[tuple[Check, ...], float]:
    """Check the contract until it passes or bound_s is over; (the last breaches, seconds)."""
    t0 = time.monotonic()
    while True:
        breaches = check(t)
        elapsed = time.monotonic() - t0
        if not breaches or elapsed >= bound_s:
            return breaches, elapsed
        time.sleep(min(0.5, max(bound_s - elapsed, 0.0)))


# ---------------------------------------------------------------- results

def markdown(report: ProbeReport) -> str:
    """A table row per probe, then the verdict and the CPU waits."""
    cells: list[list[str]] = []
    for r in report.results:
        if not r.ran:
            cells.append([r.title, cell(r.outcome), "-", "-", "-", "-"])
            continue
        after = "yes" if r.answers_after else f"**no**: {cell(r.error_after)}"
        if r.recovered_s is not None:
            after += f" (recovered {r.recovered_s:.1f} s before it)"
        cells.append([r.title, cell(r.outcome), f"{r.cpu_s:.2f}", f"{r.elapsed_s:.2f}",
                      settled_text(r.settled_s, report.limits.settle_s), after])
    rows = Table(["probe", "outcome", "CPU s", "time s", "CPU quiet after", "answers after"],
                 cells, right={2, 3}).lines()
    notes = [f"**{report.verdict()}**",
             f"CPU quiet after the last probe: "
             f"{settled_text(report.quiet_s, report.limits.quiet_s)}; "
             f"probe time {report.elapsed_s:.1f} s, server CPU {report.cpu_s:.2f} s"]
    if report.cpus_quiet_s is not None or report.error:
        notes.append(f"CPUs quiet after the stop: "
                     f"{settled_text(report.cpus_quiet_s, report.limits.cpus_quiet_s)}")
    return "\n".join(rows) + "\n\n" + "  \n".join(notes) + "\n"


# ---------------------------------------------------------------- running the probes

def run_one(probe: Probe, t: Target) -> ProbeResult:
    """One probe: CPU before, the probe, settling, CPU after, the contract."""
    before = tree_cpu(t)
    t0 = time.monotonic()
    try:
        outcome, facts = probe.run(t)
    except OSError as e:
        # Our side failed (out of descriptors, say): say so, do not guess.
        outcome, facts = f"probe error: {type(e).__name__}: {e}", {}
    elapsed = time.monotonic() - t0
    settled = wait_quiet(t, t.limits.settle_s, window_s=t.limits.settle_window_s, share=0.10)
    after = tree_cpu(t)
    if after is None:
        outcome += "; server process exited"
    breaches = check(t)
    cpu = after - before if after is not None and before is not None else 0.0
    return ProbeResult(probe=probe.name, title=probe.title, ran=True, outcome=outcome,
                       cpu_s=round(max(cpu, 0.0), 3), elapsed_s=round(elapsed, 3),
                       settled_s=None if settled is None else round(settled, 2),
                       answers_after=not breaches,
                       error_after=contract.one_line(list(breaches)), facts=facts,
                       breaches_after=breaches)


def skipped(probe: Probe, since: str) -> ProbeResult:
    return ProbeResult(probe=probe.name, title=probe.title, ran=False,
                       outcome=f"not run: not answering since {since}", cpu_s=0.0,
                       elapsed_s=0.0, settled_s=None, answers_after=False)


def run_probe(host: str, port: int, pid: int, workers: int, limits: Limits | None = None,
              server: str = "", sample: Callable[[], TreeSample | None] | None = None,
              queue: Callable[[tuple[str, int], tuple[str, int]], int | None] | None = None
              ) -> ProbeReport:
    """Probe a running server (pid: the root of its process tree, for CPU).

    Each probe is followed by a contract check. A server that failed it gets
    `recover_s` to answer again before the next probe; if it does not, the
    remaining probes are skipped. Then, bounded by `quiet_s`, we wait for the
    server's CPU to go quiet, and check the contract a last time."""
    lim = limits or Limits()
    t = Target(host, port, pid, workers, lim, sample, queue)
    t0 = time.monotonic()
    results: list[ProbeResult] = []
    gave_up = ""
    for probe in PROBES:
        previous = results[-1] if results else None
        if gave_up:
            results.append(skipped(probe, gave_up))
            continue
        recovered: float | None = None
        if previous is not None and not previous.answers_after:
            still, waited = check_until(t, lim.recover_s)
            if still:
                gave_up = previous.probe
                results.append(skipped(probe, gave_up))
                continue
            recovered = round(waited, 2)
        result = run_one(probe, t)
        results.append(replace(result, recovered_s=recovered))
    quiet = wait_quiet(t, lim.quiet_s, window_s=lim.quiet_window_s, share=0.05)
    final, _ = check_until(t, lim.recover_s)
    return ProbeReport(server=server, host=host, port=port, workers=workers, limits=lim,
                       results=tuple(results), final_ok=not final,
                       final_error=contract.one_line(list(final)), final_breaches=final,
                       quiet_s=None if quiet is None else round(quiet, 2),
                       elapsed_s=round(time.monotonic() - t0, 2))


def probe_server(server: Server, root: Path, cache: Path, run_dir: Path, knobs: Knobs,
                 cpus: tuple[int, ...], limits: Limits | None = None,
                 topology: Placement | None = None, log_max: int | None = None) -> ProbeReport:
    """Start a separate instance of `server` (its log: <run_dir>/<server>/
    probe-server.log), probe it, stop it, then wait (bounded) until its CPUs
    are quiet so that nothing the probe left running leaks into the measured
    run that follows. Writes <run_dir>/<server>/probe.json."""
    lim = limits or Limits()
    out = run_dir / server.name
    files.make_dirs(out, run_dir)           # never a link planted in the run (UnsafePath)
    where = topology.server if topology is not None else None
    instance = ServerProcess(server, root, cache, run_dir.name, knobs, cpus, out / SERVER_LOG,
                             where, topology.connect if topology is not None else None,
                             log_max)
    host = instance.host
    report = ProbeReport(server=server.name, host=host, port=knobs.port,
                         workers=knobs.workers or 0, limits=lim)
    try:
        instance.start()
        instance.ready()
        where = instance.where
        # as shipped: the pool the server says it has; unknown: the most the probe holds
        said = instance.ran_with()
        workers = knobs.workers or (int(str(said["workers"])) if said else lim.slow_max)
        report = run_probe(host, knobs.port, instance.pid, workers, lim, server.name,
                           instance.sample,
                           lambda ours, theirs: where.in_network(
                               lambda: receive_queue(ours, theirs)))
        gone = instance.exited()        # it did not stop answering: it was gone
        if gone:
            after = f", answering no more after {report.stopped_after}" \
                if report.stopped_after else ""
            report = replace(report, error=f"the server {gone} during the probe{after}")
    except (procs.PortBusy, procs.NotReady, topologies.HostLost) as e:
        report = replace(report, error=str(e))
    finally:
        try:
            instance.stop()
        except procs.PortBusy as e:
            # The port outlived the stop: the sweep that follows would fail on it.
            report = replace(report, error=report.error or f"after the stop: {e}")
    report = replace(report, cpus_quiet_s=wait_cpus_quiet(cpus, lim.cpus_quiet_s,
                                                          where=instance.where,
                                                          window_s=lim.quiet_window_s))
    save(report, out / PROBE, run_dir)
    return report


def save(report: ProbeReport, path: Path, root: Path | None = None) -> None:
    files.write_atomic(path, json.dumps(report.to_json(), indent=2) + "\n", root)


def exit_code(report: ProbeReport, force: bool) -> int:
    """0: load it; 1: it stopped answering (or could not be probed) and FORCE is off."""
    return 0 if report.still_answers or force else 1


def main_step(params: Params, server: Server, root: Path, cache: Path, run_dir: Path,
              limits: Limits | None = None) -> tuple[ProbeReport | None, int]:
    """The pipeline step `lab probe RUN SERVER`: (report, exit code).

    PROBE=0: (None, 0), nothing started. Otherwise a separate start of the
    server on params.port with the run's knobs, pinned to params.server_cpus.
    Exit 1 when the server stopped answering (or its probe instance could not
    be started) unless FORCE=1, which turns that into a warning."""
    if not params.probe:
        print(f"[{server.name}] probe skipped (PROBE=0)", file=sys.stderr)
        return None, 0
    topology = topologies.current(params)
    knobs = Knobs(port=params.port, workers=server.workers(params.workers),
                  backlog=params.backlog, bind=topology.bind)
    print(f"[{server.name}] probe: {len(PROBES)} probes on a separate start "
          f"(CPU {','.join(map(str, params.server_cpus))})", file=sys.stderr, flush=True)
    report = probe_server(server, root, cache, run_dir, knobs, params.server_cpus, limits,
                          topology, params.server_log_max)
    print(markdown(report), file=sys.stderr)
    code = exit_code(report, params.force)
    if not report.still_answers:
        what = "loading it anyway (FORCE=1)" if params.force else \
            "not loading it (FORCE=1 loads it anyway)"
        print(f"{'warning' if params.force else 'error'}: {report.verdict()}; {what}",
              file=sys.stderr)
    return report, code
