"""`make cost`: instructions per request, counted by valgrind's cachegrind.

On a shared VM a server's requests/s and even its CPU µs/request move by
10-200% between repetitions. The number of instructions it executes per
request does not: cachegrind counts them exactly, whatever else the host
does. So each native server gets separate starts under
`valgrind --tool=cachegrind --cache-sim=no`, never during a measured level:

- a start is driven by h2load with an exact request count (`-n`, HTTP/1.1
  keep-alive) at one concurrency, then stopped; cachegrind writes each
  process's total instruction count (Ir) when it exits;
- two starts per level, with COST_REQUESTS = N1 < N2 requests: what start-up,
  shutdown and the connections cost is the same in both, so
  (Ir(N2) - Ir(N1)) / (N2 - N1) is the cost of one more request;
- at each COST_LEVELS concurrency (1 and one higher), REPEAT times (5 when
  REPEAT is not given), servers interleaved.

The figure is user space only: valgrind sees the instructions the server's
process executes, not what the kernel does for it (TCP, syscalls). So each
repetition also makes one plain start (no valgrind) and records the server
tree's CPU per request from /proc, split into user and kernel time.

How a server is wrapped (lab.measure.launch.wrapped_by): valgrind writes
into LAB_WRAP_OUT, a folder of the start's own. When the run command's
executable is a native binary (ELF: a user's Go or C server), the lab puts
valgrind's words before the whole command. When it is a script, the lab
sets LAB_WRAPPER (the valgrind command line) and the script puts it before
the executable it runs (servers/nginx/run.sh; the Ada servers' toolchain.sh
runs the Debian 11 root's own valgrind inside the root, in a mount
namespace of the start's own with /proc and the folder mounted). A
manifest's `[run] wrap = "lab"` or `"command"` says which instead. A script
that ignores LAB_WRAPPER leaves no cachegrind files and gets an error saying
so. JVM servers get no number: see JIT_REASON.

Writes <run>/cost.json; lab.analyse.costview reads it (summary.md, report.html).
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from lab.measure.clients import host_tools
from lab.measure import deps, hostinfo
from lab.host import hang, procfs, procs
from lab.record import checked, files, folder, manifest, pinning, runlock
from lab.present import report
from lab.analyse.costview import JIT_LANGUAGES, JIT_REASON
from lab.record.costs import COST as COST_FILE
from lab.measure.launch import Knobs, ServerProcess
from lab.setup.fromenv import Traits, from_env
from lab.setup.params import SETTINGS, ConfigError, Params, Repeat, format_cpus, parse_list
from lab.setup.paths import ROOT, cache_dir
from lab.setup.plan import RunPlan
from lab.measure.topologies.local import LocalServerHost
from lab.setup.servers import Server, discover, lookup, outside
from lab.measure.sweep import server_facts
from lab.record.hostfacts import HostFacts

TOOLS = {"valgrind": "valgrind", "h2load": "nghttp2-client"}
VALGRIND = ("valgrind --tool=cachegrind --cache-sim=no --branch-sim=no --vgdb=no "
            "--trace-children=yes --cachegrind-out-file=%q{LAB_WRAP_OUT}/cachegrind.out.%p")
DEFAULT_REPEAT = 5      # the fewest starts an exact rank test at 1% can decide on (decide.py)
NATIVE_REQUESTS = 20_000           # a plain start: enough CPU for /proc's 10 ms ticks
SETTLE_S = 2.0                     # after ready(): at most this for the server to close the check's socket
READY_UNDER_VALGRIND_S = 180.0     # valgrind starts a server 5-50 times slower
SUMMARY = re.compile(r"^summary:\s+(\d+)", re.M)
ENDED = re.compile(r"^==(\d+)== I\s+refs:", re.M)
USING = re.compile(r"Using (Valgrind-\S+)")
H2LOAD_DONE = re.compile(r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, "
                         r"(\d+) failed")
H2LOAD_2XX = re.compile(r"status codes: (\d+) 2xx")


WRAPPED = {"lab": "the lab (its run command's executable is a native binary, or its "
                  "manifest says wrap = \"lab\")",
           "command": "its run command (LAB_WRAPPER)"}


class CostError(RuntimeError):
    """A start could not be counted (it did not start, answer, or leave its files)."""


def cost_settings(env: dict[str, str]) -> tuple[tuple[int, ...], tuple[int, int], int]:
    """COST_LEVELS, COST_REQUESTS and the repetitions; ConfigError when bad."""
    def get(name: str) -> str:
        value = env.get(name)
        return SETTINGS[name].default if value is None else value
    concurrencies = parse_list("COST_LEVELS", get("COST_LEVELS"), 256)
    counts = parse_list("COST_REQUESTS", get("COST_REQUESTS"), 10_000_000)
    if len(counts) != 2:
        raise ConfigError(f"COST_REQUESTS={get('COST_REQUESTS')!r}: give two request counts, "
                          "e.g. '2000 6000' (the difference is what is counted)")
    small, large = counts
    if small < max(concurrencies):
        raise ConfigError(f"COST_REQUESTS: {small} requests is fewer than the "
                          f"{max(concurrencies)} connections of COST_LEVELS")
    return concurrencies, (small, large), DEFAULT_REPEAT


def planned(env: dict[str, str], params: Params) -> RunPlan:
    """The run's plan (lab.setup.plan): COST_LEVELS, and REPEAT as given
    (checked by from_env's Params), else make cost's own."""
    concurrencies, _, repeat = cost_settings(env)
    return RunPlan.of_cost(concurrencies,
                           repeat if env.get("REPEAT") is None else params.repeat.least)


def headers(env: dict[str, str]) -> int:
    """HEADERS: extra request headers, 0 to 10000; ConfigError when bad."""
    return SETTINGS["HEADERS"].number(env.get("HEADERS") or SETTINGS["HEADERS"].default)


def native(server: Server) -> bool:
    return server.language not in JIT_LANGUAGES


def check(env: dict[str, str]) -> tuple[Params, list[Server], tuple[int, ...], tuple[int, int],
                                         int]:
    """Every input checked before anything is installed, built or started."""
    from lab.setup import stepcheck
    notes = stepcheck.check_step("cost", env)     # what make cost would not use: exit 2
    known = discover(ROOT, env.get("LAB_SERVER_PATH", ""))
    from lab.measure.clients import axes
    params = from_env(env, list(known), axes(),   # bench's checks and warnings (ews@4, WORKERS)
                      traits={n: Traits(s.language, s.has_workers) for n, s in known.items()})
    params = replace(params, warnings=tuple(notes) + params.warnings)
    if params.topology != "local":          # RUNTIME=docker: topology docker
        raise ConfigError("make cost runs the servers on this host as processes: "
                          "TOPOLOGY=local and RUNTIME=process (the defaults)")
    if params.axis not in ("concurrency", "rate"):
        raise ConfigError(f"AXIS={params.axis}: make cost counts at COST_LEVELS; unset AXIS")
    concurrencies, counts, _ = cost_settings(env)
    repeat = planned(env, params).repeat.least
    headers(env)
    problem = folder.why_not_writable(ROOT / params.results)
    if problem:
        raise ConfigError(f"RESULTS={params.results}: {problem}")
    procs.check_port_free(params.port, params.bind)
    return params, [lookup(known, n) for n in params.servers], concurrencies, counts, repeat


# ---------------------------------------------------------------- one start

def header_args(count: int) -> list[str]:
    """HEADERS=N: N extra headers of 32 bytes each (h2load -H)."""
    return [a for i in range(count) for a in ("-H", f"X-Lab-Pad-{i:05d}: {'x' * 16}")]


def drive(url: str, requests: int, level: int, cpus: tuple[int, ...],
          timeout: float, headers: int = 0) -> str:
    """h2load with an exact request count over keep-alive HTTP/1.1; its report."""
    argv = procs.pinned(["h2load", "--h1", "-n", str(requests), "-c", str(level), "-t", "1",
                         *header_args(headers), url], cpus)
    try:                # a group the keeper watches: it ends with the step, however
        code, raw_out, raw_err = procs.run(argv, timeout)
    except subprocess.TimeoutExpired:
        raise CostError(f"h2load -n {requests} -c {level} did not finish within "
                        f"{timeout:.0f}s") from None
    stdout = raw_out.decode(errors="replace")
    stderr = raw_err.decode(errors="replace")
    done, ok = H2LOAD_DONE.search(stdout), H2LOAD_2XX.search(stdout)
    if code != 0 or done is None or ok is None:
        raise CostError(f"h2load failed (exit {code}): "
                        f"{(stdout + stderr).strip()[-400:]}")
    if int(done.group(2)) != requests or int(ok.group(1)) != requests:
        raise CostError(f"h2load: {done.group(2)} of {requests} requests succeeded, "
                        f"{ok.group(1)} answered 2xx: the count would be wrong")
    return stdout


def instructions(folder: Path) -> tuple[int, int]:
    """Total Ir over every cachegrind file in folder, and how many files (processes)."""
    files = sorted(folder.glob("cachegrind.out.*"))
    total = 0
    for f in files:
        found = SUMMARY.findall(f.read_text(errors="replace"))
        if not found:
            raise CostError(f"{f}: no summary line (the process did not exit cleanly?)")
        total += int(found[-1])
    return total, len(files)


def timeout_for(requests: int) -> float:
    return 120.0 + requests / 50.0      # valgrind's slowest server here: ~600 req/s


SCRATCH = "scratch"                 # cache_dir()/scratch/: what a start writes before the run


def scratch_folder(server: Server, run: Path) -> Path:
    """Where valgrind writes a start's files: a new folder in the cache, with
    the user's umask (never world-writable). nginx's workers write theirs as
    `nobody` when the lab runs as root, and may not reach the run folder (a
    results folder under a private home): as root, the folder is nobody's."""
    top = cache_dir() / SCRATCH
    top.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"cost-{run.name}-{server.name}.", dir=top))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(folder, 0o777 & ~umask)
    if os.geteuid() == 0:
        try:
            nobody = pwd.getpwnam("nobody")
            os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        except (KeyError, OSError):
            pass
    return folder


def closed(port: int, bound_s: float = SETTLE_S) -> bool:
    """Wait until no socket on the server's port is in a state where the
    server still holds its descriptor (the readiness check's connection is
    closed on both sides), at most bound_s. False: it was still open."""
    deadline = time.monotonic() + bound_s
    # ESTABLISHED, CLOSE_WAIT: the server may still hold the descriptor (no close() yet)
    while any(procfs.tcp_sockets(state, port=port) for state in (hang.ESTABLISHED,
                                                                  hang.CLOSE_WAIT)):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def counted_start(server: Server, params: Params, run: Path, level: int, requests: int,
                  out: Path, pads: int = 0) -> dict[str, Any]:
    """One start under cachegrind: `requests` at `level`, then stopped. Its Ir."""
    out.mkdir(parents=True, exist_ok=True)
    scratch = scratch_folder(server, run)
    undo = ["rm", "-rf", "--", str(scratch)]
    procs.Keeper.undo(undo)             # the step killed: the keeper removes it
    slow = replace(server, ready_timeout=max(server.ready_timeout, READY_UNDER_VALGRIND_S))
    knobs = Knobs(params.port, server.workers(params.workers), params.backlog, params.bind)
    log = out / "server.log"
    instance = ServerProcess(slow, ROOT, cache_dir(), run.name, knobs, params.server_cpus, log)
    wrapped = instance.wrap(VALGRIND.split(), scratch)
    t0 = time.monotonic()
    try:
        instance.start()
        instance.ready()
        # The readiness check's connection must be gone before the count: a
        # select()-based server (ada-mini) scans its descriptors up to the
        # highest, so a client socket that got the next number would cost
        # ~27 more instructions per request in this start only.
        closed(params.port)
        drive(instance.url, requests, level, params.client_cpus, timeout_for(requests), pads)
    except procs.NotReady as e:
        raise CostError(str(e)) from None
    finally:
        instance.stop()
        for f in scratch.iterdir():
            shutil.move(f, out / f.name)
        shutil.rmtree(scratch, ignore_errors=True)
        procs.Keeper.done(undo)
    total, files = instructions(out)
    if files == 0 and wrapped == "command":
        raise CostError(f"{server.name}: no cachegrind file in {out}: its run command "
                        f"({instance.command[0]}) wraps itself, being no native binary (or "
                        "by its manifest's wrap = \"command\"), but does not put LAB_WRAPPER "
                        "before its executable; make it do so, or set wrap = \"lab\" in its "
                        "manifest's [run] to have the lab put valgrind before the whole "
                        "command (servers/README.md)")
    if files == 0:
        raise CostError(f"{server.name}: no cachegrind file in {out}: valgrind ran its run "
                        f"command but wrote none (see {log})")
    text = log.read_text(errors="replace")
    # Every process valgrind saw end prints "==PID== I   refs: N": each must have
    # left its file, or the sum would silently miss it.
    ended = set(ENDED.findall(text))
    missing = sorted(ended - {f.name.rpartition(".")[2] for f in out.glob("cachegrind.out.*")})
    if missing:
        raise CostError(f"{server.name}: process {', '.join(missing)} ended without leaving "
                        f"its cachegrind file (see {log})")
    version = USING.search(text)
    return {"requests": requests, "level": level, "instructions": total, "processes": files,
            "seconds": round(time.monotonic() - t0, 2),
            "valgrind": version.group(1) if version else "unknown", "wrapped": wrapped}


def native_start(server: Server, params: Params, run: Path, level: int, requests: int,
                 out: Path, pads: int = 0) -> dict[str, Any]:
    """One plain start: the server tree's CPU per request (user, kernel) from
    /proc around an exact-count h2load run, and the rate (noisy)."""
    out.mkdir(parents=True, exist_ok=True)
    knobs = Knobs(params.port, server.workers(params.workers), params.backlog, params.bind)
    instance = ServerProcess(server, ROOT, cache_dir(), run.name, knobs, params.server_cpus,
                             out / "server.log")
    try:
        instance.start()
        instance.ready()
        drive(instance.url, min(requests, 1000), level, params.client_cpus, 60,
              pads)                                                      # warm-up
        before = procfs.user_sys(instance.pid)
        t0 = time.monotonic()
        drive(instance.url, requests, level, params.client_cpus, timeout_for(requests), pads)
        wall = time.monotonic() - t0
        after = procfs.user_sys(instance.pid)
    except procs.NotReady as e:
        raise CostError(str(e)) from None
    finally:
        instance.stop()
    if before is None or after is None:
        raise CostError(f"{server.name}: its process tree vanished during the count")
    return {"requests": requests, "level": level,
            "user_us_per_req": round(1e6 * (after[0] - before[0]) / requests, 3),
            "sys_us_per_req": round(1e6 * (after[1] - before[1]) / requests, 3),
            "rate_rps": round(requests / wall, 1)}


FUNCTION_LINE = re.compile(r"^\s*(-?[\d,]+)\s+\(\s*-?[\d.]+%\)\s+(\S.*)$")
TOP_FUNCTIONS = 15


def function_view(small: Path, large: Path, extra: int) -> list[list[Any]]:
    """Where the extra requests' instructions went, per function: cachegrind's
    own tools (cg_merge each start's processes, cg_diff the two starts,
    cg_annotate the difference), divided by the extra requests."""
    merged = []
    for start in (small, large):
        out = start / "merged.cg"
        counted = [str(f) for f in sorted(start.glob("cachegrind.out.*"))]
        got = subprocess.run(["cg_merge", "-o", str(out), *counted], capture_output=True,
                             text=True, timeout=300)
        if got.returncode != 0:
            return []
        merged.append(str(out))
    diff = subprocess.run(["cg_diff", *merged], capture_output=True, text=True, timeout=300)
    if diff.returncode != 0:
        return []
    files.write_atomic(large / "diff.cg", diff.stdout)
    ann = subprocess.run(["cg_annotate", "--auto=no", str(large / "diff.cg")],
                         capture_output=True, text=True, timeout=300)
    rows = []
    for line in ann.stdout.splitlines():
        m = FUNCTION_LINE.match(line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            where, _, fn = m.group(2).rpartition(":")
            name = fn if fn != "???" else f"??? ({where})" if where != "???" else "??? (no symbol)"
            rows.append([name, round(int(m.group(1).replace(",", "")) / extra, 1)])
    return rows[:TOP_FUNCTIONS]


# ---------------------------------------------------------------- the run

def write_manifest(run: Path, params: Params, concurrencies: tuple[int, ...],
                   counts: tuple[int, int], repeat: int, servers: list[Server]) -> None:
    from lab.setup import stepcheck
    run_plan = RunPlan.of_cost(concurrencies, repeat)
    settings = recorded_settings(os.environ, run_plan)
    # None when h2load is not installed: a run of JVMs only starts nothing, and
    # no install step ran for it (make cost installs only for native servers)
    h2load = hostinfo.probe_version(["h2load", "--version"], r"nghttp2/(\S+)")
    path = run / manifest.MANIFEST
    manifest.write_manifest(run, manifest.Manifest(
        run_id=run.name, status="running", started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        reproduce=stepcheck.reproduce_line(
            "cost", settings, outside([s.name for s in servers], {s.name: s for s in servers})),
        settings=settings,
        params=manifest.RunParams.parse(checked.obj({**params.to_json(), **Repeat(repeat, repeat).to_json()},
                                                    path, "params")),
        plan=(f"{' '.join(params.servers)}: cachegrind counts at "
              f"c={' '.join(map(str, concurrencies))} with {counts[0]} and {counts[1]} requests, "
              f"{repeat} repetitions, {headers(os.environ.copy())} extra request headers"),
        topology="loopback (one host, server and client pinned to disjoint CPUs)",
        pinning=pinning.Pinning(server_cpus=format_cpus(params.server_cpus),
                                client_cpus=format_cpus(params.client_cpus)),
        client=manifest.ClientInfo(tool="h2load", version=h2load or "not installed",
                                   connection="keep-alive", threads="1"),
        host=HostFacts.of(hostinfo.host()), tools=dict(host_tools()), lab=hostinfo.lab_revision(ROOT),
        servers={s.name: manifest.ServerRecord.new({**s.describe(), "status": "pending",
                                                    "facts": build_facts(s, params, run)})
                 for s in servers},
        run_plan=run_plan, extra={"kind": "cost", **rerun_note()}))


def recorded_settings(env: Mapping[str, str], run_plan: RunPlan) -> dict[str, str]:
    """The settings a cost run's manifest and Reproduce line keep: make cost's,
    REPEAT and COST_LEVELS from the run's plan (as checked)."""
    from lab.setup import stepcheck
    return {**{k: env.get(k, SETTINGS[k].default) for k in SETTINGS if k in stepcheck.COST},
            **run_plan.settings()}


def rerun_note() -> dict[str, Any]:
    """make rerun's note (LAB_RERUN): which run this one repeats."""
    import json
    try:
        data = json.loads(os.environ.get("LAB_RERUN") or "null")
    except ValueError:
        return {}
    return {"rerun": data} if isinstance(data, dict) else {}


def build_facts(server: Server, params: Params, run: Path) -> dict[str, str]:
    """The server's facts as a run records them (its manifest's facts command:
    versions, commits, when it was built): a run's CPU-per-request verdicts
    find this cost run by them, as one of the same build (lab.analyse.costlink)."""
    knobs = Knobs(params.port, server.workers(params.workers), params.backlog, params.bind)
    sp = ServerProcess(server, ROOT, cache_dir(), run.name, knobs, params.server_cpus,
                       run / f"{server.name}-facts.log")
    return server_facts(server, sp.values, sp.env, params.server_cpus, LocalServerHost())


def measure(run: Path, params: Params, servers: list[Server], concurrencies: tuple[int, ...],
            counts: tuple[int, int], repeat: int, pads: int = 0) -> int:
    data: dict[str, Any] = {
        "tool": "valgrind --tool=cachegrind (Ir: instructions executed in user space)",
        "wrapper": VALGRIND, "levels": list(concurrencies), "requests": list(counts),
        "repeat": repeat, "headers": pads, "servers": {}}
    for s in servers:
        data["servers"][s.name] = ({"applicable": True, "reps": []} if native(s) else
                                   {"applicable": False, "reason": JIT_REASON})
    files.write_json(run / COST_FILE, data)
    failed: dict[str, str] = {}
    for rep in range(1, repeat + 1):
        for s in servers:
            if not native(s) or s.name in failed:
                continue
            entry = data["servers"][s.name]
            try:
                for level in concurrencies:
                    base = run / s.name / "cost" / f"rep{rep}-c{level}"
                    starts = [counted_start(s, params, run, level, n, base / f"n{n}", pads)
                              for n in counts]
                    ir = (starts[1]["instructions"] - starts[0]["instructions"]) / \
                        (counts[1] - counts[0])
                    plain = native_start(s, params, run, level,
                                         max(counts[1], NATIVE_REQUESTS), base / "native", pads)
                    entry["reps"].append({"rep": rep, "level": level, "starts": starts,
                                          "per_request": round(ir, 2), "native": plain})
                    entry["valgrind"] = starts[0]["valgrind"]
                    if "wrapped" not in entry:
                        print(f"[{s.name}] valgrind put before its executable by "
                              f"{WRAPPED[starts[0]['wrapped']]}", file=sys.stderr, flush=True)
                    entry["wrapped"] = starts[0]["wrapped"]
                    if rep == 1:
                        entry.setdefault("functions", {})[str(level)] = function_view(
                            base / f"n{counts[0]}", base / f"n{counts[1]}",
                            counts[1] - counts[0])
                    print(f"[{s.name}] rep {rep} c={level}: {ir:,.1f} instructions/request "
                          f"(user space); plain start: {plain['user_us_per_req']:.1f} µs user "
                          f"+ {plain['sys_us_per_req']:.1f} µs kernel per request",
                          file=sys.stderr, flush=True)
            except (CostError, procs.PortBusy) as e:
                failed[s.name] = str(e)
                entry["error"] = str(e)
                print(f"[{s.name}] cost failed: {e}", file=sys.stderr, flush=True)
            files.write_json(run / COST_FILE, data)
    def change(m: manifest.Manifest) -> None:
        for s in servers:
            m.server(s.name).status = "failed" if s.name in failed else "complete"
            m.servers[s.name] = m.server(s.name)
            if s.name in failed:
                m.servers[s.name].error = failed[s.name]
        m.status = "incomplete" if failed else "complete"
        m.problems += [f"{n}: {e}" for n, e in failed.items()]
        m.finished = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest.update(run, change)
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    """`python3 -m lab cost [--check]`: --check validates and prints the native
    servers to build (exit 2 when bad); without it, the counts."""
    env = dict(os.environ)
    try:
        params, servers, concurrencies, counts, repeat = check(env)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if argv[:1] == ["--check"]:
        print(" ".join(s.name for s in servers if native(s)))
        return 0
    for w in params.warnings:             # once: `make cost` runs --check first
        print(f"warning: {w}", file=sys.stderr)
    if any(native(s) for s in servers):
        code = deps.ensure(TOOLS)
        if code:
            return code
    run = folder.new_folder(ROOT / params.results, time.strftime("%Y%m%d-%H%M%S") + "-cost-"
                             + "+".join(params.servers)[:80])
    print(f"run folder: {run}", file=sys.stderr, flush=True)
    # Held while this step lives (a report or profile of the run waits); if it
    # vanishes (SIGKILL), its keeper marks the run interrupted (lab gone).
    lock = runlock.hold(run, "lab cost")
    gone = runlock.guard(run)
    try:
        write_manifest(run, params, concurrencies, counts, repeat, servers)
        code = measure(run, params, servers, concurrencies, counts, repeat, headers(env))
    except KeyboardInterrupt:
        code = 130
        if not (run / manifest.MANIFEST).exists():
            # interrupted before the run had a manifest: nothing was measured,
            # and the folder holds only what this step just made
            runlock.unguard(gone)
            os.close(lock)
            shutil.rmtree(run, ignore_errors=True)
            print("error: interrupted before anything was counted (its empty run folder "
                  "removed)", file=sys.stderr)
            return code
        interrupted(run)
        print("error: interrupted: the counts made so far are kept", file=sys.stderr)
    print(report.write(run))
    from lab.present import reportpage
    reportpage.main_report(run)
    runlock.unguard(gone)
    os.close(lock)
    return code


def interrupted(run: Path) -> None:
    """SIGINT, SIGTERM or SIGHUP: the run and every server not done are interrupted."""
    def change(m: manifest.Manifest) -> None:
        for rec in m.servers.values():
            if rec.status not in ("complete", "failed"):
                rec.status = "interrupted"
        m.status = "interrupted"
        m.problems.append("interrupted (SIGINT, SIGTERM or SIGHUP): the counts made so far "
                          "are kept")
        m.finished = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        manifest.update(run, change)
    except files.RecordError:
        pass                            # interrupted before its manifest was written
