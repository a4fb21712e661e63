"""`make profile RUN=results/<run> PROFILE_AT=<level>`: where each server of a
run spends its CPU at one of the run's levels.

Like the robustness probe, each server gets a start of its own (never a
measured level): the run's knobs, CPUs and client, the client at that level
for a short warm-up, then for DURATION while a sampling profiler records it:

- native servers: `perf record -e cpu-clock` (a software clock: this VM has no
  PMU) with DWARF call graphs, attached to every process of the server's
  tree; perf reads a chrooted server's libraries through /proc/PID/root.
  Stacks are folded by perf's own `perf script report stackcollapse --kernel`
  (kernel frames end in `_[k]`).
- JVMs: async-profiler (Maven Central's tools.profiler:async-profiler jar,
  fetched once into LAB_CACHE), loaded into the running JVM with
  `jcmd PID JVMTI.agent_load` in cpu mode (perf_events' cpu-clock, with
  kernel frames), stopped after DURATION with its folded ("collapsed") output.

The client's rate while the profiler ran is recorded beside the run's rate at
that level: the difference is the profiler's overhead. Writes
<run>/<server>/profile/<level>/{profile.folded, profile.json, flamegraph.svg,
server.log} (<level>: c8, or r500 for a rate; c8-2 for a second profile there);
lab.analyse.profileview reads them for the report (a table of top functions with the
user/kernel split; the flame graphs are linked, the report stays script-free).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any, TypeVar

from lab.studies import cost
from lab.measure import deps, hostinfo
from lab.host import procfs, procs
from lab.record import files, manifest, rows, runlock
from lab.present import report
from lab.measure.clients import ClientError, Load, Options, clients
from lab.analyse.costview import JIT_LANGUAGES
from lab.measure.launch import Knobs, ServerProcess
from lab.setup.params import SETTINGS, ConfigError, parse_duration, positive_int
from lab.setup.paths import ROOT, cache_dir
from lab.analyse.profileview import write_flamegraph
from lab.record.profiles import FOLDED, PROFILE_DIR, PROFILE_JSON
from lab.setup.servers import Server, ServerSpec, discover, is_built, lookup
from lab.measure.launch import placeholders

PERF_HZ = 499
PERF_STACK = 16384                 # bytes of user stack copied per sample (DWARF unwinding)
ASPROF = ("tools.profiler", "async-profiler", "4.0")
ASPROF_INTERVAL_NS = 2_000_000     # 500 Hz, as perf's
WARMUP_NATIVE_S, WARMUP_JVM_S = 3, 15


class ProfileError(RuntimeError):
    """A server could not be profiled: the message says why."""


def asprof_library(cache: Path) -> Path:
    """libasyncProfiler.so for linux-x64, from the Maven Central jar (fetched once)."""
    group, artifact, version = ASPROF
    folder = cache / "async-profiler" / version
    lib = folder / "libasyncProfiler.so"
    if lib.is_file():
        return lib
    folder.mkdir(parents=True, exist_ok=True)
    jar = folder / f"{artifact}-{version}.jar"
    if not jar.is_file():
        out = subprocess.run(["mvn", "-q", "-B", "dependency:copy",
                              f"-Dartifact={group}:{artifact}:{version}",
                              f"-DoutputDirectory={folder}"],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0 or not jar.is_file():
            raise ProfileError(f"mvn could not fetch {group}:{artifact}:{version}: "
                               f"{out.stdout[-500:]}{out.stderr[-500:]}")
    with zipfile.ZipFile(jar) as z:
        files.write_atomic(lib, z.read("linux-x64/libasyncProfiler.so"))
    return lib


def perf_version() -> str:
    """perf's version line ("not installed" when it is not there: the tool's
    absence is recorded, never a traceback)."""
    return hostinfo.probe_version(["perf", "--version"], r"(perf version \S+)") or \
        "not installed"


def check(env: dict[str, str], run: Path) -> tuple[dict[str, Any], list[Server], int, int]:
    """The run, its servers, the level and the duration; ConfigError (exit 2) when bad."""
    try:
        man = manifest.read_manifest(run)
    except files.RecordError as e:
        raise ConfigError(f"RUN={run}: not a run folder ({e.problem})") from None
    runlock.refuse_busy(run, "make profile")          # nothing loads the host under a run
    m = man.to_json()
    from lab.setup import stepcheck
    stepcheck.warn(stepcheck.check_step("profile", env, recorded=man.settings))
    p = m.get("params") or {}
    if m.get("kind") == "cost" or p.get("axis") not in ("concurrency", "rate"):
        raise ConfigError(f"RUN={run}: make profile needs a make bench run swept over "
                          "concurrency or rate")
    at_text = env.get("PROFILE_AT", "").strip()
    if not at_text:
        raise ConfigError(f"PROFILE_AT is empty: give one of the run's levels "
                          f"({' '.join(map(str, p.get('values', [])))})")
    at = positive_int("PROFILE_AT", at_text, 1, 10_000_000)
    if at not in p.get("values", []):
        raise ConfigError(f"PROFILE_AT={at}: the run has no such level (its levels: "
                          f"{' '.join(map(str, p.get('values', [])))})")
    try:
        measured = sorted({r.value for r in rows.read_rows(run)})
    except files.RecordError as e:
        raise ConfigError(f"RUN={run}: {e}") from None
    if at not in measured:              # an interrupted run did not reach every level
        raise ConfigError(f"PROFILE_AT={at}: the run ({m.get('status')}) never measured this "
                          f"level (measured: {' '.join(map(str, measured)) or 'none'})")
    duration = parse_duration("DURATION", env.get("DURATION", "10s"))
    if cost.headers(env) and p.get("load_axis") != "concurrency":
        raise ConfigError("HEADERS drives h2load at the level's concurrency: profile a run "
                          "swept over concurrency")
    known = discover(ROOT, env.get("LAB_SERVER_PATH", ""))
    missing = [n for n in p["servers"] if ServerSpec.parse(n).name not in known]
    if missing:
        raise ConfigError(f"the run's server {', '.join(missing)} is not in this checkout")
    servers = [lookup(known, n) for n in p["servers"]]
    values = placeholders(ROOT, cache_dir(), Knobs(0, 0, 0, ""))
    unbuilt = [s.name for s in servers if not is_built(s, values)]
    if unbuilt:
        raise ConfigError(f"not built: {' '.join(unbuilt)} (make build "
                          f"SERVER=\"{' '.join(unbuilt)}\")")
    port = SETTINGS["PORT"].number(env.get("PORT") or str(p["port"]))
    procs.check_port_free(port, p["bind"])
    return m, servers, at, duration


L = TypeVar("L", "LoadRun", "HeaderLoad")


class LoadRun:
    """The run's client at one level, in the background."""

    def __init__(self, m: dict[str, Any], url: str, at: int, seconds: int, out: Path) -> None:
        p = m["params"]
        self.client = clients()[p["client"]]()
        self.client.prepare(out, Options(p["keepalive"], p["client_threads"],
                                         int(p.get("connections") or 0)))
        load = Load(concurrency=at) if p["load_axis"] == "concurrency" else Load(rate=at)
        argv = procs.pinned(self.client.command(url, load, seconds), tuple(p["client_cpus"]))
        self.out, self.err = out / "client.out", out / "client.err"
        with files.open_binary(self.out) as fo, files.open_binary(self.err) as fe:
            self.proc = procs.start(argv, Path.cwd(), dict(os.environ), fe, stdout=fo)
        self.limit = seconds + 60

    def finish(self) -> float | None:
        """The achieved rate, or None when the client's output is unreadable."""
        try:
            self.proc.wait(timeout=self.limit)
        except subprocess.TimeoutExpired:
            procs.stop(self.proc, grace=2)
        procs.kill_group(self.proc.pid)
        try:
            return self.client.parse(self.out.read_text(errors="replace"),
                                     self.err.read_text(errors="replace")).rate_rps
        except ClientError:
            return None

    def stop(self) -> None:
        procs.stop(self.proc, grace=2)
        procs.kill_group(self.proc.pid)


class HeaderLoad:
    """HEADERS=N: h2load (keep-alive, N extra headers per request) at the
    level's concurrency, in exact-count rounds until stopped: the run's
    clients cannot add headers."""

    ROUND = 2000

    def __init__(self, url: str, at: int, cpus: tuple[int, ...], pads: int) -> None:
        self.url, self.at, self.cpus, self.pads = url, at, cpus, pads
        self.done, self.error = 0, ""
        self.stopping = threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while not self.stopping.is_set():
            try:
                cost.drive(self.url, self.ROUND, self.at, self.cpus, 300, self.pads)
            except cost.CostError as e:
                self.error = str(e)
                return
            self.done += self.ROUND

    def finish(self) -> float | None:
        self.stopping.set()
        self.thread.join(timeout=330)
        if self.error:
            raise ProfileError(f"h2load with {self.pads} headers: {self.error}")
        return self.done / (time.monotonic() - self.t0) if self.done else None

    def stop(self) -> None:
        self.stopping.set()             # its h2load round is a group the keeper watches


class Loads:
    """The loads a profile started, stopped together when it ends early."""

    def __init__(self) -> None:
        self.started: list[LoadRun | HeaderLoad] = []

    def add(self, load: L) -> L:
        self.started.append(load)
        return load

    def stop(self) -> None:
        for load in self.started:
            load.stop()


def tool_said(code: int, stdout: bytes, stderr: bytes, chars: int = 500) -> str:
    """A failed tool's own words, always: the end of its error output (else of
    its output), with its exit status; a tool that printed nothing is said so."""
    words = (stderr.decode(errors="replace").strip()
             or stdout.decode(errors="replace").strip())
    words = " | ".join(line.strip() for line in words[-chars:].splitlines() if line.strip())
    status = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    return f"{words} ({status})" if words else f"{status}, and it printed no message"


def record_native(instance: ServerProcess, seconds: int, out: Path) -> dict[str, Any]:
    pids = ",".join(str(s.pid) for s in procfs.tree(instance.pid))
    data = out / "perf.data"
    # no -q: it silences perf's own error messages too, and a failure must say why
    argv = ["perf", "record", "-e", "cpu-clock", "-F", str(PERF_HZ),
            "--call-graph", f"dwarf,{PERF_STACK}", "-p", pids, "-o", str(data),
            "--", "sleep", str(seconds)]
    # each a group the keeper watches: an interrupt or a kill of the step ends
    # perf and its `sleep` too
    code, stdout, err = procs.run(argv, seconds + 120, cwd=out)
    if code != 0 or not data.is_file():
        missing = "" if code != 0 else f"; it wrote no {data.name}"
        raise ProfileError(f"perf record failed: {tool_said(code, stdout, err)}{missing}")
    with files.open_binary(out / FOLDED) as f:
        code, stdout, err = procs.run(["perf", "script", "report", "stackcollapse", "-i",
                                       str(data), "--", "--kernel"], 600, stdout=f, cwd=out)
    if code != 0:
        raise ProfileError(f"perf script report stackcollapse failed: {tool_said(code, b'', err)}")
    data.unlink()                   # tens of MB; the folded stacks are what is read
    return {"profiler": perf_version(), "thread_root": True,
            "settings": f"perf record -e cpu-clock -F {PERF_HZ} --call-graph "
                        f"dwarf,{PERF_STACK} -p <server tree>; perf script report "
                        "stackcollapse --kernel"}


def jvm_profiler() -> tuple[Path, str]:
    """async-profiler's library (fetched once) and jcmd: checked before any
    server starts (ProfileError)."""
    lib = asprof_library(cache_dir())
    jcmd = shutil.which("jcmd")
    if jcmd is None:
        raise ProfileError("jcmd not found (it comes with the JDK)")
    return lib, jcmd


def record_jvm(instance: ServerProcess, seconds: int, out: Path,
               event: str) -> dict[str, Any] | None:
    """async-profiler's folded stacks with `event`; None when it gathered no sample."""
    lib, jcmd = jvm_profiler()
    folded = (out / FOLDED).resolve()        # the JVM runs in its own folder

    def agent(args: str) -> None:
        # quoted: jcmd would read the '=' in the agent's options as its own option syntax
        got = subprocess.run([jcmd, str(instance.pid), "JVMTI.agent_load", str(lib),
                              f'"{args}"'], capture_output=True, text=True, timeout=60)
        if got.returncode != 0 or "return code: 0" not in got.stdout:
            raise ProfileError(f"jcmd JVMTI.agent_load {args}: {got.stdout.strip()} "
                               f"{got.stderr.strip()}")
    start_args = f"start,event={event},interval={ASPROF_INTERVAL_NS}"
    agent(start_args)
    time.sleep(seconds)
    agent(f"stop,file={folded},collapsed")
    if not folded.is_file() or folded.stat().st_size == 0:
        return None
    return {"profiler": f"async-profiler {ASPROF[2]} ({':'.join(ASPROF)}, Maven Central)",
            "settings": f"jcmd PID JVMTI.agent_load libasyncProfiler.so "
                        f"{start_args}; after {seconds}s: stop,collapsed"}


def profile_server(m: dict[str, Any], server: Server, run: Path, out: Path, at: int,
                   seconds: int, port: int, pads: int = 0) -> dict[str, Any]:
    """One start of `server`, profiled at `at`; everything goes into `out`."""
    p = m["params"]
    jvm = server.language in JIT_LANGUAGES
    knobs = Knobs(port, server.workers(p.get("workers")), p["backlog"], p["bind"])
    instance = ServerProcess(server, ROOT, cache_dir(), run.name, knobs,
                             tuple(p["server_cpus"]), out / "server.log")
    info: dict[str, Any] = {"server": server.name, "level": at, "seconds": seconds,
                            "headers": pads,
                            "axis": p["load_axis"], "client": p["client"],
                            "keepalive": p["keepalive"]}
    loads = Loads()
    try:
        instance.start()
        instance.ready()
        warm = WARMUP_JVM_S if jvm else WARMUP_NATIVE_S
        load: LoadRun | HeaderLoad
        if pads:
            warming = loads.add(HeaderLoad(instance.url, at, tuple(p["client_cpus"]), pads))
            time.sleep(warm)
            warming.finish()
            load = loads.add(HeaderLoad(instance.url, at, tuple(p["client_cpus"]), pads))
            info.update(client=f"h2load --h1, {pads} extra headers (HEADERS)", keepalive=True)
        else:
            loads.add(LoadRun(m, instance.url, at, warm, out)).finish()
            load = loads.add(LoadRun(m, instance.url, at, seconds + 2, out))
        time.sleep(1)
        if not jvm:
            info.update(record_native(instance, seconds, out))
        else:
            # cpu mode (perf_events' cpu-clock, kernel frames too) first; where
            # it gathers no sample (perf_events refused or starved), itimer under
            # a new load: it always samples, but sees no kernel frames
            got = record_jvm(instance, seconds, out, "cpu")
            if got is None:
                load.finish()
                if pads:
                    load = loads.add(HeaderLoad(instance.url, at, tuple(p["client_cpus"]), pads))
                else:
                    load = loads.add(LoadRun(m, instance.url, at, seconds + 2, out))
                time.sleep(1)
                got = record_jvm(instance, seconds, out, "itimer")
                if got is None:
                    load.finish()
                    raise ProfileError(f"async-profiler gathered no sample in {seconds}s "
                                       "with event=cpu or event=itimer")
                got["settings"] += " (event=cpu had gathered no sample)"
            info.update(got)
        info["rate_during_profile"] = load.finish()
    except (procs.NotReady, subprocess.TimeoutExpired) as e:
        raise ProfileError(str(e)) from None
    finally:
        loads.stop()                    # an interrupt: the client goes with the server
        instance.stop()
    with_headers = f", {pads} extra request headers" if pads else ""
    info["flamegraph"] = write_flamegraph(
        out, f"{server.name} at {p['load_axis']} {at}{with_headers} ({info['profiler']})",
        bool(info.get("thread_root")))
    files.write_json(out / PROFILE_JSON, info)
    return info


def main(argv: list[str]) -> int:
    """`python3 -m lab profile RUN [--check]`."""
    env = dict(os.environ)
    run = Path(argv[0]) if argv else Path()
    try:
        m, servers, at, seconds = check(env, run)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except procs.PortBusy as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if "--check" in argv:
        return 0
    want = {"perf": "linux-perf"} if any(s.language not in JIT_LANGUAGES for s in servers) \
        else {}
    port = int(env.get("PORT") or m["params"]["port"])
    pads = cost.headers(env)
    if pads:
        want["h2load"] = "nghttp2-client"
    code = deps.ensure(want)
    if code:
        return code
    if any(s.language in JIT_LANGUAGES for s in servers):
        try:                            # before any server starts (a JVM warms for 15 s)
            jvm_profiler()
        except (ProfileError, OSError, subprocess.SubprocessError, zipfile.BadZipFile) as e:
            print(f"error: the JVM profiler is not available: {e}", file=sys.stderr)
            return 2
    try:
        lock = runlock.hold(run, "lab profile")   # a report or another profile waits
    except runlock.Busy as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    failed: list[str] = []
    stopped = ""
    axis = m["params"]["load_axis"]
    for s in servers:
        what = f"profile of {s.name} at {axis} {at}"
        print(f"[{s.name}] {what.partition(' at ')[2]} for {seconds}s (a separate start)",
              file=sys.stderr, flush=True)
        final = level_folder(run, s, axis, at)
        partial = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o777 & ~umask)
        gone = runlock.guard(run, remove=partial,
                             problem=f"{what}: interrupted (the lab's step was killed); "
                                     "nothing of it is kept")
        try:
            info = profile_server(m, s, run, partial, at, seconds, port, pads)
            partial.rename(final)
            print(f"[{s.name}] {info['profiler']}; flame graph: {final / info['flamegraph']}",
                  file=sys.stderr)
        except (ProfileError, ClientError, procs.PortBusy) as e:
            failed.append(f"{what}: {e}")
            print(f"[{s.name}] profile failed: {e}", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            stopped = f"{what}: interrupted (SIGINT, SIGTERM or SIGHUP); nothing of it is kept"
            print(f"[{s.name}] interrupted: the server is stopped, nothing of this profile "
                  "is kept", file=sys.stderr, flush=True)
        finally:
            shutil.rmtree(partial, ignore_errors=True)  # perf.data, a half-written profile
            runlock.unguard(gone)
        if stopped:
            break
    for problem in failed + ([stopped] if stopped else []):
        manifest.add_problem(run, problem)
    report.write(run)
    from lab.present import reportpage
    reportpage.main_report(run)
    os.close(lock)
    return 130 if stopped else 1 if failed else 0


def level_folder(run: Path, server: Server, axis: str, at: int) -> Path:
    """<run>/<server>/profile/c8 (rate: r500): one profile per level, each start
    its own folder and log; a second profile at a level gets c8-2, never
    replacing the first."""
    top = files.make_dirs(run / server.name / PROFILE_DIR, run)   # no link on the way
    name = f"{'c' if axis == 'concurrency' else 'r'}{at}"
    for n in range(1, 1000):
        path = top / (name if n == 1 else f"{name}-{n}")
        if not path.exists():
            return path
    raise ProfileError(f"no free folder name for {name} under {top}")
