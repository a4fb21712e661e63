"""One server, top-down: start pinned → wait → verify → warm up → sweep the
concurrency levels (client pinned apart, server tree sampled) → stop."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab import procfs, procs, results
from lab.clients import Client, ClientError, Level
from lab.params import Params
from lab.servers import Server, expand
from lab.verify import VerifyError, verify

CLIENT_BOUND_PCT = 90.0
HOST_BUSY_PCT = 10.0
STEAL_PCT = 10.0
HOST = "127.0.0.1"


class SweepError(RuntimeError):
    """The server could not be measured; the message says why."""


class ClientHung(SweepError):
    """The client ran far past its time limit and was stopped."""


@dataclass(frozen=True)
class HostLoad:
    """CPU time on the lab's CPUs during a level, taken from /proc/stat."""
    busy_s: float
    steal_s: float


@dataclass(frozen=True)
class ClientRun:
    stdout: str
    stderr: str
    exit_code: int | None
    cpu_s: float
    wall_s: float


def lab_env(root: Path, cache: Path, run_id: str, port: int, workers: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PORT=str(port), WORKERS=str(workers), LAB_ROOT=str(root),
               LAB_CACHE=str(cache), **{procs.MARKER: run_id})
    return env


def placeholders(root: Path, cache: Path, port: int, workers: int) -> dict[str, str]:
    return {"port": str(port), "workers": str(workers), "root": str(root), "cache": str(cache)}


def server_facts(server: Server, values: dict[str, str], env: dict[str, str],
                 cpus: tuple[int, ...]) -> dict[str, str]:
    """key=value lines of the manifest's facts command, run pinned like the server."""
    if server.facts is None:
        return {}
    argv = procs.pinned(expand(server.facts.argv, values), cpus)
    try:
        out = subprocess.run(argv, cwd=server.facts.dir, env=env, capture_output=True,
                             text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    facts = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    if out.returncode != 0:
        facts["error"] = out.stderr.strip()[-300:] or f"exit {out.returncode}"
    return {k.strip(): v.strip() for k, v in facts.items()}


def run_client(argv: list[str], env: dict[str, str], out: Path, timeout: float,
               server: subprocess.Popen[bytes]) -> ClientRun:
    """Run the client to its end; its CPU comes from wait4's rusage."""
    err = out.with_suffix(".err")
    with out.open("wb") as fo, err.open("wb") as fe:
        proc = procs.start(argv, Path.cwd(), env, fe, stdout=fo)
    t0 = time.monotonic()
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            if server.poll() is not None:
                raise SweepError(f"the server exited with code {server.returncode} during the level")
            if time.monotonic() - t0 > timeout:
                raise ClientHung(f"the client did not finish within {timeout:.0f}s")
            time.sleep(0.05)
    finally:
        if proc.returncode is None:
            procs.stop(proc, grace=2)
        procs.kill_group(proc.pid)
    return ClientRun(out.read_text(errors="replace"), err.read_text(errors="replace"),
                     proc.returncode, usage.ru_utime + usage.ru_stime, time.monotonic() - t0)


def make_row(server: str, c: int, duration: int, level: Level, sampler: procfs.Sampler,
             client: ClientRun, host: HostLoad, params: Params, time_wait: int) -> results.Row:
    last = sampler.last
    client_pct = 100 * client.cpu_s / (len(params.client_cpus) * client.wall_s)
    bound = client_pct >= CLIENT_BOUND_PCT
    allotment = len(set(params.server_cpus) | set(params.client_cpus)) * client.wall_s
    other_pct = max(0.0, 100 * (host.busy_s - sampler.cpu_s - client.cpu_s) / allotment)
    steal_pct = 100 * host.steal_s / allotment
    flags = ((["client-bound"] if bound else []) + (["failures"] if level.failed else [])
             + (["host-busy"] if other_pct > HOST_BUSY_PCT else [])
             + (["steal"] if steal_pct > STEAL_PCT else []))
    return results.Row(
        server=server, concurrency=c, duration_s=duration,
        transactions=level.transactions, successful=level.successful, failed=level.failed,
        availability_pct=level.availability_pct, elapsed_s=level.elapsed_s,
        rate_rps=round(level.rate_rps, 2), resp_ms=round(level.resp_ms, 4),
        longest_ms=level.longest_ms, in_flight=level.in_flight,
        littles_ratio=round(level.in_flight / c, 3),
        rss_end_kb=last.rss_kb if last else 0, rss_peak_kb=sampler.rss_peak_kb,
        threads_end=last.threads if last else 0, threads_peak=sampler.threads_peak,
        server_cpu_s=round(sampler.cpu_s, 3),
        server_cpu_us_per_req=round(1e6 * sampler.cpu_s / level.transactions, 2)
        if level.transactions else 0.0,
        server_cpu_pct=round(100 * sampler.cpu_s / (len(params.server_cpus) * client.wall_s), 1),
        client_cpu_s=round(client.cpu_s, 3), client_cpu_pct=round(client_pct, 1),
        client_bound=bound, other_cpu_pct=round(other_pct, 1), steal_pct=round(steal_pct, 1),
        time_wait=time_wait, flags=" ".join(flags))


def fmt_eta(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class ServerSweep:
    def __init__(self, root: Path, cache: Path, run: Path, server: Server,
                 params: Params, client: Client) -> None:
        self.root, self.cache, self.run, self.server = root, cache, run, server
        self.params, self.client = params, client
        self.workers = params.workers or server.workers_default
        self.out = run / server.name
        self.values = placeholders(root, cache, params.port, self.workers)
        self.env = lab_env(root, cache, run.name, params.port, self.workers)
        self.url = f"http://{HOST}:{params.port}/api"
        self.record: dict[str, Any] = {**server.describe(), "workers": self.workers,
                                       "status": "starting", "levels_done": 0}

    def save(self, **changes: Any) -> None:
        self.record.update(changes)
        servers = results.read_manifest(self.run).get("servers", {})
        servers[self.server.name] = self.record
        results.update_manifest(self.run, servers=servers)

    def level(self, c: int, duration: int, tag: str, proc: subprocess.Popen[bytes]
              ) -> tuple[Level, ClientRun, procfs.Sampler, HostLoad]:
        argv = procs.pinned(self.client.command(self.url, c, duration), self.params.client_cpus)
        cpus = tuple(sorted(set(self.params.server_cpus) | set(self.params.client_cpus)))
        out = self.out / f"{self.client.name}-{tag}.out"
        for attempt in (1, 2):
            busy0, steal0 = procfs.cpu_times(cpus)
            try:
                with procfs.Sampler(proc.pid) as sampler:
                    ran = run_client(argv, self.env, out,
                                     duration + self.params.client_grace_s, proc)
                break
            except ClientHung as hung:
                if attempt == 2:
                    raise
                # Siege sometimes overruns or hangs at the end of a timed run
                # (JoeDog/siege#66, #178): keep its output, note it, retry once.
                note = f"{tag}: {self.client.name} hung ({hung}); stopped and retried once"
                progress(f"[{self.server.name}] warning: {note}")
                for suffix in (".out", ".err"):
                    out.with_suffix(suffix).rename(out.with_suffix(".hung" + suffix))
                self.save(notes=self.record.get("notes", []) + [note])
        busy1, steal1 = procfs.cpu_times(cpus)
        host = HostLoad(busy1 - busy0, steal1 - steal0)
        if proc.poll() is not None:
            raise SweepError(f"the server exited with code {proc.returncode} during {tag}")
        try:
            level = self.client.parse(ran.stdout, ran.stderr)
        except ClientError as e:
            raise SweepError(f"{tag}: {e}") from e
        return level, ran, sampler, host

    def run_all(self) -> None:
        p, name = self.params, self.server.name
        self.out.mkdir()
        procs.check_port_free(p.port)
        facts = server_facts(self.server, self.values, self.env, p.server_cpus)
        argv = procs.pinned(expand(self.server.run.argv, self.values), p.server_cpus)
        self.save(facts=facts, command=argv, status="starting")
        log_path = self.out / "server.log"
        with log_path.open("ab") as log:
            proc = procs.start(argv, self.server.run.dir, self.env, log)
        self.save(pid=proc.pid)             # also its session and process group id
        try:
            self.measure(proc, log_path)
        finally:
            code = procs.stop(proc)
            procs.kill_group(proc.pid)
            self.save(exit_code=code)
        procs.wait_port_released(p.port)
        progress(f"[{name}] stopped")

    def measure(self, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        p, name = self.params, self.server.name
        try:
            took = procs.wait_ready(p.port, proc, self.server.ready_timeout)
        except procs.NotReady as e:
            raise SweepError(f"{name} {e}\n--- last lines of {log_path}:\n{procs.tail(log_path)}")
        try:
            passed = verify(HOST, p.port)
        except VerifyError as e:
            raise SweepError(f"{name} failed verification, not loaded: {e}") from e
        idle = procfs.sample(proc.pid)
        self.save(status="verified", ready_s=round(took, 2), verified=passed,
                  rss_idle_kb=idle.rss_kb if idle else None)
        progress(f"[{name}] ready in {took:.1f}s, verified: {', '.join(passed)}")
        if p.warmup_s:
            top = p.levels[-1]
            level, _, _, _ = self.level(top, p.warmup_s, "warmup", proc)
            progress(f"[{name}] warm-up {p.warmup_s}s at c={top}: {level.rate_rps:,.0f} req/s "
                     "(not recorded)")
        self.save(status="running")
        started = time.monotonic()
        for i, c in enumerate(p.levels, 1):
            level, ran, sampler, host = self.level(c, p.duration_s, f"c{c}", proc)
            row = make_row(name, c, p.duration_s, level, sampler, ran, host, p,
                           procfs.time_wait_sockets())
            results.append_row(self.run, row)
            self.save(levels_done=i)
            if level.successful == 0:
                raise SweepError(f"c={c}: no request completed in {p.duration_s}s "
                                 f"({level.failed} failed): {name} stopped answering")
            eta = (time.monotonic() - started) / i * (len(p.levels) - i)
            note = f"  {row.flags}" if row.flags else ""
            progress(f"[{name}] c={c} ({i}/{len(p.levels)}) {p.duration_s}s  "
                     f"{row.rate_rps:,.0f} req/s  {row.resp_ms:.2f} ms  "
                     f"rss {row.rss_end_kb / 1024:.1f} MB  cpu server {row.server_cpu_pct:.0f}% "
                     f"client {row.client_cpu_pct:.0f}%  "
                     f"ETA {fmt_eta(eta)}{note}")
        self.save(status="complete")
