"""`python3 -m lab STEP`: the steps run-benchmark.sh calls, top-down.

Exit codes: lab/setup/exits.py (`python3 -m lab exits`): 0 done, 1 a failure
while running (results kept, marked incomplete), 2 bad input or missing
prerequisites (nothing started), 3 compare: nothing comparable, 130
interrupted.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from types import FrameType

from lab.setup.paths import ROOT
from lab.measure.clients import host_tools
from lab.studies import calibrate
from lab.measure import deps, hostinfo, runtimes
from lab.host import procs
from lab.record import checked, files, folder, manifest, outputs, pinning, runlock, runrecord
from lab.present import report
from lab.setup import checklist, stepcheck
from lab.setup.exits import Exit
from lab.setup.paths import cache_dir
from lab.measure.clients import Client, Options, axes, clients
from lab.measure.launch import Knobs, lab_env, placeholders
from lab.setup.makeflags import command_line_variables, misspelt
from lab.setup.params import (SETTINGS, ConfigError, Params, Traits, check_lab_settings,
                        cpu_ranges, format_cpus, from_env, results_folder, run_settings)
from lab.setup.settings_doc import Found, help_text, markdown_table
from lab.setup.servers import (Discovered, ManifestError, Server, expand, found_here, is_built,
                               lookup, outside)
from lab.measure.sweep import ServerSweep, SweepError





def fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def servers_found() -> Discovered:
    return found_here(ROOT)


def refuse_unusable(servers: Discovered, words: list[str]) -> None:
    """ConfigError (exit 2) when a server asked for has a manifest that cannot be used."""
    bad = [why for w in words if w not in servers and (why := servers.why_unusable(w))]
    if bad:
        raise ManifestError("; ".join(dict.fromkeys(bad)))


def traits(servers: dict[str, Server]) -> dict[str, Traits]:
    return {name: Traits(s.language, s.has_workers) for name, s in servers.items()}


def load_params() -> tuple[Params, Discovered]:
    """The run's settings, checked (ConfigError: exit 2). A variable given on
    make's command line that is close to a setting's name is refused."""
    wrong = misspelt(command_line_variables(os.environ.get("MAKEFLAGS", "")))
    if wrong:
        raise ConfigError("; ".join(wrong))
    check_lab_settings(os.environ)
    servers = servers_found()
    refuse_unusable(servers, os.environ.get("SERVER", "").split())
    params = from_env(os.environ, list(servers), axes(), traits=traits(servers),
                      topologies=runtimes.selectable())
    return params, servers


def recorded_settings(params: Params) -> dict[str, str]:
    """The run's settings as its manifest and reproduce line keep them: those
    of a run (not where the lab keeps things), without the other loop's load."""
    skip = {"concurrency": {"RATE"}, "rate": {"CONCURRENCY"}}[params.load_axis]
    return {k: os.environ.get(k, SETTINGS[k].default) for k in run_settings() if k not in skip}


def client_for(params: Params, run: Path) -> tuple[Client, dict[str, str]]:
    """The run's client, prepared in the run folder; and its conditions."""
    client = clients()[params.client]()
    return client, client.prepare(run, Options(params.keepalive, params.client_threads))


def cmd_list(_: argparse.Namespace) -> int:
    servers = servers_found()
    values = placeholders(ROOT, cache_dir(), Knobs(0, None, 0, ""))
    table = [("server", "language", "framework", "version", "workers", "built", "role")]
    table += [(s.name, s.language, s.framework, s.version,
               "none" if not s.has_workers else
               "as shipped" if s.workers_default is None else str(s.workers_default),
               "yes" if is_built(s, values) else "no", s.role) for s in servers.values()]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    for name, why in sorted(servers.broken.items()):
        print(f"unusable: {name}: {why}", file=sys.stderr)
    for note in servers.skipped:
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_check_servers(args: argparse.Namespace) -> int:
    """The servers' checklist (lab.setup.checklist): every server found, or the
    one in FOLDER; one line per problem with its fix, exit 2 if any."""
    from lab.setup.paths import server_path
    from lab.setup.servers import SERVER_TOML, manifests
    paths = (checklist.folder_manifests(Path(args.folder).resolve()) if args.folder
             else manifests(ROOT, ":".join(map(str, server_path()))))
    count, found = checklist.check(paths, checklist.Tree(ROOT, compose_services()))
    for finding in found:
        print(finding.line())
    if found:
        return fail(f"{checklist.counted(len(found), 'problem')} in "
                    f"{len({f.server for f in found})} of "
                    f"{checklist.counted(len(paths), 'server folder')}: fix them before "
                    "`make build`", Exit.BAD_INPUT)
    print(f"{checklist.counted(len(paths), 'server folder')}, "
          f"{checklist.counted(count, 'server')}: every check passes", file=sys.stderr)
    return 0


def compose_services() -> dict[str, checklist.Service]:
    """compose.yaml's services (ConfigError: exit 2)."""
    from lab.measure.runtimes import compose
    try:
        return dict(compose.services())
    except compose.ComposeFileError as e:
        raise ConfigError(str(e)) from None


def refuse_unchecked(params: Params, servers: dict[str, Server], names: list[str]) -> None:
    """The checklist of the servers asked, before anything is built: what the
    build would meet (and under RUNTIME=docker, the images); ConfigError
    (exit 2) with every line."""
    tree = checklist.Tree(ROOT, compose_services() if params.runtime == "docker" else {})
    found = checklist.asked(servers, names, tree)
    if found:
        raise ConfigError("the servers' checklist (python3 -m lab check-servers):\n  "
                          + "\n  ".join(f.line() for f in found))


def cmd_check(_: argparse.Namespace) -> int:
    notes = stepcheck.check_step("bench", os.environ)   # what make bench would not use: exit 2
    params, servers = load_params()
    refuse_unchecked(params, servers, list(params.servers))
    problem = folder.why_not_writable(ROOT / params.results)     # before deps or builds run
    if problem:
        raise ConfigError(f"RESULTS={params.results}: {problem}; choose a writable place")
    if params.topology == "local":
        procs.check_local_address("BIND", params.bind)      # an address of this host
    if params.topology == "local" and params.runtime == "process":
        procs.check_port_free(params.port, params.bind)   # other topologies: in `lab up`
    stepcheck.warn(notes)
    for name, why in sorted(servers.broken.items()):     # those asked for: refused above
        print(f"warning: server {name} cannot be used: {why}", file=sys.stderr)
    for note in servers.skipped:
        print(f"note: {note}", file=sys.stderr)
    runtimes.check(params)          # exit 2: not available here, host unreachable or lacking
    for w in params.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"plan: {plan(params)}", file=sys.stderr)
    return 0


def plan(p: Params, bind: str | None = None) -> str:
    """One line: what the run will do; `bind`: the topology's server address
    (before `lab up`, a topology other than local only names it)."""
    warm = (f"auto (cap {p.warmup_max_s}s)" if p.warmup_auto
            else f"{p.warmup_s}s" if p.warmup_s else "none")
    if p.axis in ("concurrency", "rate"):
        sweep = f"{p.axis} {' '.join(map(str, p.values))}"
    else:
        load = f"c={p.load[0]}" if p.load_axis == "concurrency" else f"rate={p.load[0]}/s"
        sweep = f"{p.axis} {' '.join(map(str, p.values))} at {load}"
    reps = (f" x REPEAT=auto ({p.repeat} starts each, then one more at a time for pairs still "
            f"undecided, up to {p.repeat_max}; ABBA order)" if p.repeat_auto
            else f" x {p.repeat} repetitions (interleaved, ABBA order)" if p.repeat > 1 else "")
    where = bind or (p.bind if p.topology == "local" else p.server_host if p.topology == "ssh"
                     else f"({p.topology} address)")
    if ":" in where and not where.startswith("(") and "@" not in where:
        where = f"[{where}]"                     # an IPv6 address, as in a URL
    return (f"{' '.join(p.servers)}{reps} | {sweep} | {p.duration_s}s each, warm-up {warm} | "
            f"{p.client} {'keep-alive' if p.keepalive else 'connection close'} | "
            f"{where}:{p.port} backlog {p.backlog} | server CPU {cpu_ranges(p.server_cpus)}, "
            f"client CPU {cpu_ranges(p.client_cpus)}")


def cmd_settings(args: argparse.Namespace) -> int:
    """The settings registry as `make help` shows it, or docs/settings.md's table."""
    from lab.measure.clients import described
    found = Found(described(), axes(), runtimes.selectable())
    print(markdown_table(found) if args.markdown else help_text(found))
    return 0


def cmd_exits(args: argparse.Namespace) -> int:
    """The exit codes as `make help` shows them, or docs/settings.md's table."""
    from lab.setup import exits
    print(exits.markdown_table() if args.markdown else exits.help_text())
    return 0


def cmd_next(args: argparse.Namespace) -> int:
    """The next round of starts of a run (lab.analyse.nextstarts): "SERVER REP"
    lines in the order to start them (ABBA), nothing when the run is done; the
    starts spent so far go into the manifest (`starts_spent`)."""
    from lab.analyse import analysis, nextstarts
    run = Path(args.run)
    m = manifest.read_manifest(run)
    auto = bool(m.params.extra.get("repeat_auto"))
    past_min = auto and min((nextstarts.done(m, s)[0] for s in args.servers),
                            default=0) >= m.params.repeat
    a = analysis.of(run)[1] if past_min else None
    nxt = nextstarts.plan(m, list(args.servers), a)

    def spent(rec: manifest.Manifest) -> None:
        rec.extra["starts_spent"] = {s: nextstarts.done(rec, s)[0] for s in args.servers}
    manifest.update(run, spent)
    print(f"[repeat] {nxt.said}" + ("" if nxt.starts else ": no more starts"),
          file=sys.stderr, flush=True)
    for server, rep in nxt.starts:
        print(f"{server} {rep}")
    return 0


def cmd_resolve(args: argparse.Namespace) -> int:
    params, _servers = load_params()
    print(params.repeat if args.repeat else " ".join(params.servers))
    return 0


def cmd_deps(args: argparse.Namespace) -> int:
    params, servers = load_params()
    chosen = [lookup(servers, n) for n in (args.servers or params.servers)]
    return deps.ensure(deps.needed(chosen, params.client)) or \
        deps.ensure_client(params.client, cache_dir()) or runtimes.deps(params)


def run_logged(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> int:
    """A setup or build command to its end, output to the log; watched by the
    step's keeper (a killed `lab build` leaves no compiler running)."""
    with log.open("ab") as f:
        f.write(f"\n$ {shlex.join(argv)}  (in {cwd})\n".encode())
        f.flush()
        proc = procs.start(argv, cwd, env, f)
    try:
        return proc.wait()
    finally:
        if proc.returncode is None:         # interrupted: stop it and what it forked
            procs.stop(proc, grace=5)
        procs.kill_group(proc.pid)


def run_own_log(argv: list[str], cwd: Path, env: dict[str, str], log: Path
                ) -> tuple[int, str]:
    """run_logged into a log of this command's own, then appended to the
    shared `log` (LAB_CACHE/logs: every run and checkout appends to it); the
    exit code and the last 25 lines of this command's own output, never a
    previous run's or another checkout's."""
    own = log.with_name(f"{log.stem}.{os.getpid()}.log")
    own.unlink(missing_ok=True)
    try:
        code = run_logged(argv, cwd, env, own)
        return code, procs.tail(own, 25)
    finally:                                # interrupted too: the shared log keeps it
        try:
            with log.open("ab") as f:
                f.write(own.read_bytes())
        except OSError:
            pass
        own.unlink(missing_ok=True)


def cmd_build(args: argparse.Namespace) -> int:
    params, servers = load_params()
    refuse_unchecked(params, servers, list(args.servers or params.servers))
    cache = cache_dir()
    logs = cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    builds = {(lookup(servers, n).folder, lookup(servers, n).artifact): lookup(servers, n)
              for n in args.servers or params.servers}
    # every server's setup (toolchains; pinned sources checked, exit 2) before any build
    for step, s in [(step, s) for step in ("setup", "build") for s in builds.values()]:
        name = s.name.partition("@")[0].partition("#")[0]
        if not runtimes.needs_build(params, s):
            if step == "build":
                print(f"[{name}] build: in its image (RUNTIME={params.runtime}, `lab up`)",
                      file=sys.stderr)
            continue
        knobs = Knobs(params.port, s.workers(params.workers), params.backlog,
                      params.bind)
        values = placeholders(ROOT, cache, knobs)
        env = lab_env(ROOT, cache, "build", knobs, s)
        log = logs / f"build-{name}.log"
        for command in [s.setup if step == "setup" else s.build]:
            if command is None or (step == "build" and is_built(s, values)):
                continue
            t0 = time.monotonic()
            print(f"[{name}] {step}: {shlex.join(command.argv)}", file=sys.stderr, flush=True)
            code, own = run_own_log(expand(command.argv, values), command.dir, env, log)
            if code != 0:
                print(own, file=sys.stderr)             # this command's output only
                return fail(f"{name}: {step} failed with exit code {code} (log: {log})",
                            Exit.BAD_INPUT if code == 2 else Exit.FAILED)
            print(f"[{name}] {step} done in {time.monotonic() - t0:.1f}s", file=sys.stderr)
        if step == "setup":
            continue
        if not is_built(s, values):
            return fail(f"{name}: the build did not produce {s.artifact}", Exit.FAILED)
        print(f"[{name}] built: up to date", file=sys.stderr)
    return 0


def cmd_new_run(_: argparse.Namespace) -> int:
    params, servers = load_params()
    topo = runtimes.current(params)
    for gone in folder.mark_gone_runs(ROOT / params.results):
        print(f"note: {gone.name} was left running by a lab that is gone: marked interrupted",
              file=sys.stderr)
    run = folder.new_run(ROOT / params.results, params.servers,
                         (params.client, "keepalive" if params.keepalive else "close"))
    files.open_binary(run / folder.LOCK, run, append=True).close()   # run-benchmark.sh holds it
    files.reserve(run)                     # room for the manifest's last words on a full disk
    _client, conditions = client_for(params, run)
    settings = recorded_settings(params)
    manifest.write_manifest(run, manifest.Manifest(
        run_id=run.name,
        status="running",
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        reproduce=stepcheck.reproduce_line("bench", settings, outside(params.servers, servers)),
        settings=settings,
        params=manifest.RunParams.parse(checked.obj(params.to_json(), run / manifest.MANIFEST,
                                                    "params")),
        plan=plan(params, topo.bind),
        topology=topo.summary,
        topology_details=topo.describe(),
        pinning=pinning.Pinning(server_cpus=format_cpus(params.server_cpus),
                                client_cpus=format_cpus(params.client_cpus)),
        client=manifest.ClientInfo.parse(checked.obj(conditions, run / manifest.MANIFEST, "client")),
        calibration=calibrate.last(cache_dir()),
        host=topo.server.facts(),
        client_hosts=[c.facts() for c in topo.clients if not c.same_host_as(topo.server)],
        tools=dict(host_tools()),
        lab=hostinfo.lab_revision(ROOT),
        extra=rerun_of(os.environ.get("LAB_RERUN")),
    ))
    print(run)
    return 0


def rerun_of(text: str | None) -> dict[str, object]:
    """`lab rerun`'s note for the new run's manifest: which run, what was overridden."""
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return {"rerun": data} if isinstance(data, dict) else {}


def cmd_sweep(args: argparse.Namespace) -> int:
    params, servers = load_params()
    runtimes.join(params)                  # the lab's own connections leave from the clients' side
    run = Path(args.run)
    client, _ = client_for(params, run)
    sweep = ServerSweep(ROOT, cache_dir(), run, lookup(servers, args.server), params, client,
                        args.rep)
    try:
        sweep.run_all()
        sweep.save(status="complete" if args.rep >= params.repeat else "running",
                   reps_done=args.rep)
        return 0
    except (SweepError, procs.PortBusy, procs.NotReady, runtimes.HostLost) as e:
        status, message, code = "failed", str(e), Exit.FAILED
    except files.UnsafePath as e:       # a link planted in the run folder: not written through
        status, message, code = "failed", str(e), Exit.BAD_INPUT
    except OSError as e:                # a full disk, a missing folder: what was written stays
        where = f": {e.filename}" if e.filename else ""
        status, message, code = "failed", f"{e.strerror or e}{where}", Exit.FAILED
    except KeyboardInterrupt:
        status, message, code = "interrupted", "interrupted (Ctrl-C or SIGTERM)", Exit.INTERRUPTED
    if sweep.start_record:
        sweep.start_record["status"] = status
    where = f"{args.server} (rep {args.rep})" if params.repeat > 1 else args.server
    try:
        with files.last_words():
            sweep.save(status=status, error=message)
            # incomplete now, not only in `lab finish`: a SIGTERM to the whole
            # group ends run-benchmark.sh before it gets there
            manifest.add_problem(run, f"{where}: {message}", status="incomplete")
    except OSError as e:
        message += f" (and the manifest could not record it: {e.strerror or e})"
    return fail(f"{where}: {message}\n  finished levels are kept in {run}", code)


def cmd_up(_: argparse.Namespace) -> int:
    """Set up the topology for the run (namespaces, links, ssh master); exit 2 if it can't."""
    params, _servers = load_params()
    try:
        runtimes.up(params)
    except runtimes.SetupError as e:
        return fail(str(e), Exit.FAILED)
    topo = runtimes.current(params)
    print(f"topology: {topo.summary}", file=sys.stderr)
    return 0


def cmd_down(_: argparse.Namespace) -> int:
    """Undo `lab up`, whatever state it reached."""
    params, _servers = load_params()
    runtimes.down(params)
    return 0


def cmd_images(_: argparse.Namespace) -> int:
    """RUNTIME=docker's base images, made locally where they cannot be pulled."""
    from lab.measure.runtimes import docker_images
    try:
        return docker_images.images_step()
    except runtimes.SetupError as e:
        return fail(str(e), Exit.FAILED)


def cmd_probe(args: argparse.Namespace) -> int:
    """The robustness probe on a separate start of the server; exit 1: not to be loaded."""
    from lab.measure import probe
    params, servers = load_params()
    runtimes.join(params)                  # the probe's connections leave from the clients' side
    run = Path(args.run)
    try:
        found, code = probe.main_step(params, lookup(servers, args.server), ROOT, cache_dir(),
                                     run)
    except KeyboardInterrupt:
        manifest.add_problem(run, f"probe of {args.server}: interrupted", status="incomplete")
        return fail("interrupted", Exit.INTERRUPTED)
    if found is not None and code:
        manifest.add_problem(run, f"{found.verdict()}: not loaded (FORCE=1 loads it anyway)")
    return code


def cmd_calibrate(_: argparse.Namespace) -> int:
    return calibrate.run(ROOT, cache_dir(), servers_found())


def cmd_compare(args: argparse.Namespace) -> int:
    from lab.present import compare
    for run in (args.a, args.b):
        runlock.refuse_busy(Path(run), "make compare")
    params_root = ROOT / results_folder(os.environ)
    settings = compare.gate_settings(os.environ.get, cache_dir())   # ConfigError: exit 2
    return compare.main(Path(args.a), Path(args.b), os.environ.get("FORCE") == "1", params_root,
                        settings)


def cmd_noise(_: argparse.Namespace) -> int:
    from lab.studies import noise
    return noise.main()


def cmd_history(args: argparse.Namespace) -> int:
    from lab.analyse import history
    return history.main(ROOT / results_folder(os.environ),
                        os.environ.get("SERVER", ""))


def not_measured(m: manifest.Manifest) -> list[str]:
    """Each server and repetition the run did not measure to its end, with why."""
    missing = []
    repeat = m.params.repeat
    for name in m.params.servers:
        rec = m.servers.get(name)
        if rec is None:
            missing.append(f"{name}: not measured (never started)")
            continue
        for rep in range(1, repeat + 1):
            starts = [st for st in rec.starts if (st.rep or 1) == rep]
            bad = [st for st in starts if st.status not in ("complete", "not loaded")]
            if starts and not bad:
                continue
            where = f"{name} rep {rep}" if repeat > 1 else name
            why = bad[0].status or "?" if bad else "not started"
            died = bad[0].extra.get("died_at") if bad else None
            if died:
                why += f" at {died}"
            code = bad[0].extra.get("exit_code") if bad else None
            if bad and code is not None and bad[0].status == "failed":
                why += f", {exit_text(int(code))}"
            missing.append(f"{where}: not measured ({why})")
    return missing


def exit_text(code: int) -> str:
    """'exit code 3', or 'killed by SIGKILL' for a negative code (subprocess's way)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def cmd_finish(args: argparse.Namespace) -> int:
    """Mark the run complete, incomplete (something failed; the problems say
    what, and which server and repetition was not measured) or interrupted
    (status 130: a signal stopped it); exit 1 when it is incomplete although
    every step succeeded (a knob value a server could not serve)."""
    run = Path(args.run)

    def finish(m: manifest.Manifest) -> tuple[bool, list[str]]:
        for rec in m.servers.values():         # a step killed mid-start left these
            cut = [st for st in rec.starts if st.status in ("starting", "verified", "measuring")]
            for st in cut:
                st.status = "interrupted"
            if cut and rec.status in ("starting", "running"):
                rec.status = "interrupted"
        missing = not_measured(m)
        complete = args.status == 0 and not missing and not m.problems
        m.problems += [p for p in missing if p not in m.problems]
        if not complete and not m.problems:
            m.problems = ["not every server finished every repetition"]
        # complete: written by the report step once every output exists
        m.status = ("incomplete" if complete else "interrupted" if args.status == 130
                    else "incomplete")
        if complete:
            m.problems = [manifest.REPORT_PENDING]
        m.finished = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        return complete, m.problems
    try:
        with files.last_words():
            complete, problems = manifest.update(run, finish)
    except OSError as e:
        return fail(f"cannot record the end of {run.name} ({e.strerror or e}): its manifest "
                    "still says it runs", Exit.FAILED)
    if not complete and args.status == 0:
        print(f"error: {run.name} is incomplete: {'; '.join(problems)}", file=sys.stderr)
        return Exit.FAILED
    return 0


def cmd_guard(_args: argparse.Namespace) -> int:
    """run-benchmark.sh's guard (started first, in a session of its own): reads
    the script's pipe ("run PATH", "done"); at its end without "done", the
    script and all its steps are gone (SIGKILL, the OOM killer): undo the
    topology (lab down) and mark the run interrupted."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)      # it ends with the script's pipe, not before
    try:
        os.setsid()                              # out of the script's group: a kill -9 -PGID
    except OSError:                              # of it does not reach the guard
        pass
    run: Path | None = None
    finished = False
    for line in sys.stdin:
        word, _, rest = line.strip().partition(" ")
        if word == "run":
            run = Path(rest)
        elif word == "done":
            finished = True
    if finished:
        return 0
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    try:
        params, _servers = load_params()
        runtimes.down(params)
    except Exception as e:                       # noqa: BLE001  (nobody to tell but the log)
        print(f"lab guard: lab down failed: {e}", file=sys.stderr)
    if run is not None:
        folder.mark_gone(run)
    return 0


def cmd_gone(args: argparse.Namespace) -> int:
    """A step's keeper, when the step vanished (SIGKILL, the OOM killer): remove
    its partial folder (inside the run), record why, mark the run interrupted
    if it says running (lab.record.runlock.guard), and write its report again."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    run = Path(args.run)
    if args.remove:
        partial = Path(args.remove).resolve()
        if run.resolve() in partial.parents:
            import shutil
            shutil.rmtree(partial, ignore_errors=True)
    if args.problem:
        manifest.add_problem(run, args.problem)
    folder.mark_gone(run)
    try:
        from lab.present import reportpage
        report.write(run)
        reportpage.main_report(run)
    except (OSError, files.RecordError) as e:
        print(f"lab gone: cannot write the report of {run}: {e}", file=sys.stderr)
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from lab.present import plot
    run = Path(args.run)
    runrecord.load(run)                    # a folder that is not a readable run: exit 2
    runlock.refuse_busy(run, "make plots")
    try:
        with manifest.as_reported():
            return plot.draw(run)
    except OSError as e:
        return fail(f"cannot write the charts into {run}: {e.strerror or e}", Exit.FAILED)


def cmd_bmf(args: argparse.Namespace) -> int:
    """A run in bencher.dev's metric format (lab.present.bmf): to --output,
    else stdout; what was left out (flagged levels, the ceiling) on stderr."""
    from lab.present import bmf
    run = Path(args.run)
    runrecord.load(run)                    # a folder that is not a readable run: exit 2
    data, left_out = bmf.of_run(run)
    for why in left_out:
        print(f"note: left out of the BMF export: {why}", file=sys.stderr)
    if args.output:
        bmf.write(Path(args.output), data)
        print(f"bmf: {args.output} ({len(data)} benchmarks)", file=sys.stderr)
    else:
        print(json.dumps(data, indent=2, sort_keys=True))
    return 0


def cmd_use(args: argparse.Namespace) -> int:
    """The USE method read off a run (lab.analyse.use): a table per server and level."""
    from lab.analyse import use
    rec = runrecord.load(Path(args.run))       # not a readable run: exit 2
    if not rec.rows:
        return fail(f"{args.run} has no measured level to read", Exit.BAD_INPUT)
    print(use.markdown(rec.rows, rec.manifest.params.axis))
    return 0


def cmd_live(args: argparse.Namespace) -> int:
    """A line a second while a run's level is measured (lab.studies.live)."""
    from lab.studies import live
    return live.main(args.run, args.seconds)


def cmd_workshop_prepare(_: argparse.Namespace) -> int:
    """make workshop-prepare (lab.studies.workshop)."""
    from lab.studies import workshop
    return workshop.prepare()


def cmd_report(args: argparse.Namespace) -> int:
    from lab.present import reportpage
    run = Path(args.run)
    runrecord.load(run)                    # a folder that is not a readable run: exit 2
    runlock.refuse_busy(run, "make report")
    folder.mark_gone_runs(run.resolve().parent)    # this run's index says it too
    done, why = False, ""
    try:
        if manifest.read_manifest(run).status == "complete":   # written again: pending until done
            manifest.update(run, pend)
        with manifest.as_reported():
            print(report.write(run))
            code = reportpage.main_report(run)
        missing = [name for name in outputs.OUTPUTS if not (run / name).is_file()]
        if code == 0 and not missing:
            manifest.update(run, manifest.reported)
            done = True
            files.release(run)              # the run has ended: its reserve is not needed
        elif code == 0:
            why = f"not written: {', '.join(missing)}"
        return code
    except OSError as e:
        why = f"{e.strerror or e}"
        return fail(f"cannot write the report into {run}: {why}", Exit.FAILED)
    except KeyboardInterrupt:
        why = "interrupted"
        raise
    finally:
        if not done:
            try:
                with files.last_words():
                    manifest.update(run, lambda m: pend(m, why))
            except (OSError, files.RecordError):
                pass


def pend(m: manifest.Manifest, why: str = "") -> None:
    """A complete run whose report is being (re)written, or could not be: incomplete
    (REPORT_PENDING, and why) until every output is written."""
    if m.status == "complete":
        m.status = "incomplete"
    elif not manifest.pending(m):
        return                          # incomplete for its own reasons: they stand
    m.problems = [p for p in m.problems if not p.startswith(manifest.REPORT_PENDING)]
    m.problems.append(f"{manifest.REPORT_PENDING}{f' ({why})' if why else ''}")


def rerun_settings(recorded: dict[str, str], environ: Mapping[str, str],
                   given: Collection[str], names: Collection[str] | None = None
                   ) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The settings of a rerun: the recorded ones, except those the user gave
    (`given`, on make's command line or in the environment), which win.
    `names`: the settings the repeated step reads (default: a bench run's).
    Returns them and what was overridden: name: (recorded, given)."""
    read = run_settings() if names is None else [k for k in SETTINGS if k in names]
    settings = {k: str(v) for k, v in recorded.items() if k in read}
    overridden = {}
    for k in read:
        if k in given and k in environ:
            if settings.get(k, "") != environ[k]:
                overridden[k] = (settings.get(k, ""), environ[k])
            settings[k] = environ[k]
    return settings, overridden


def cmd_rerun(args: argparse.Namespace) -> int:
    """Repeat the step that made a run (make bench or make cost) with the
    settings its manifest recorded; settings given now (LAB_GIVEN from make,
    else the environment) override them. Another kind of run: exit 2."""
    run = Path(args.run)
    m = manifest.read_manifest(run)
    runlock.refuse_busy(run, "make rerun")
    step = str(m.extra.get("kind") or "bench")
    if step not in RERUN_STEPS:
        raise ConfigError(f"RUN={run}: made by make {step}; make rerun repeats "
                          f"{' and '.join('make ' + k for k in RERUN_STEPS)} runs: run "
                          f"make {step} again")
    if not m.settings:
        raise files.RecordError(run / manifest.MANIFEST, "records no `settings`: it cannot "
                                "be rerun (made by a lab before settings were recorded?)")
    stepcheck.warn(stepcheck.check_step(step, os.environ))   # what that step would not use
    recorded = m.lab.get("commit")
    now = hostinfo.lab_revision(ROOT)
    if recorded and recorded != now["commit"]:
        print(f"warning: {run.name} was made by lab {recorded}; this is {now['commit']}",
              file=sys.stderr)
    given = os.environ.get("LAB_GIVEN")
    names = given.split() if given is not None else \
        [k for k in run_settings() if k in os.environ]
    recorded_now = dict(m.settings)
    load_axis = m.params.extra.get("load_axis")
    recorded_now.pop({"concurrency": "RATE", "rate": "CONCURRENCY"}.get(str(load_axis), ""),
                     None)                         # older runs recorded the other loop's too
    settings, overridden = rerun_settings(recorded_now, os.environ, names,
                                          RERUN_STEPS[step])
    print(f"rerun of {run.name}: {m.reproduce}", file=sys.stderr)
    for k, (old, new) in overridden.items():
        print(f"rerun: {k}={new!r} given now overrides the recorded {k}={old!r}",
              file=sys.stderr)
    sys.stderr.flush()
    env = {**os.environ, **settings,
           "LAB_RERUN": json.dumps({"of": m.run_id, "folder": str(run),
                                    "overridden": {k: {"recorded": old, "given": new}
                                                   for k, (old, new) in overridden.items()}})}
    env.pop("LAB_GIVEN", None)
    if step == "cost":              # make's own steps: deps, build, then the counts
        for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):    # the settings are in env now
            env.pop(k, None)
        argv = ["make", "-s", "--no-print-directory", "-C", str(ROOT), "cost"]
        os.execvpe("make", argv, env)
    os.execve(str(ROOT / "run-benchmark.sh"), [str(ROOT / "run-benchmark.sh")], env)


# the steps make rerun repeats, and the settings each reads
RERUN_STEPS: dict[str, Collection[str]] = {"bench": run_settings(),
                                           "cost": stepcheck.COST}


def cmd_reproduce(args: argparse.Namespace) -> int:
    from lab.studies import reproduce
    return reproduce.main(args.study, os.environ)


def cmd_claims(args: argparse.Namespace) -> int:
    from lab.studies import claimruns
    return claimruns.main(args.study, args.runs, os.environ)


def cmd_agree(args: argparse.Namespace) -> int:
    """How many verdicts two runs share (lab.analyse.agree)."""
    from lab.analyse import agree
    return agree.main([args.run_a, args.run_b])


def cmd_cost(args: argparse.Namespace) -> int:
    """make cost: instructions per request under cachegrind (lab.studies.cost)."""
    from lab.studies import cost
    return cost.main(["--check"] if args.check else [])


def cmd_profile(args: argparse.Namespace) -> int:
    """make profile: CPU profiles of a run's servers at one level (lab.studies.profile)."""
    from lab.studies import profile
    return profile.main([args.run] + (["--check"] if args.check else []))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m lab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    sub.add_parser("list", help="servers found from their manifests").set_defaults(fn=cmd_list)
    sub.add_parser("check", help="validate the settings (exit 2 when bad)").set_defaults(fn=cmd_check)
    sp = sub.add_parser("check-servers", help="each server's checklist: manifest, Maven module "
                        "or Ada project, build inputs, Dockerfile and compose service (exit 2 "
                        "with one line per problem)")
    sp.add_argument("folder", nargs="?", default="", help="one server folder (default: all)")
    sp.set_defaults(fn=cmd_check_servers)
    sp = sub.add_parser("settings", help="every setting the lab reads (make help)")
    sp.add_argument("--markdown", action="store_true", help="docs/settings.md's table")
    sp.set_defaults(fn=cmd_settings)
    sp = sub.add_parser("exits", help="the lab's exit codes (make help)")
    sp.add_argument("--markdown", action="store_true", help="docs/settings.md's table")
    sp.set_defaults(fn=cmd_exits)
    sp = sub.add_parser("next", help="print the next round of starts of a run (ABBA), "
                        "nothing when done (REPEAT=auto: only undecided pairs)")
    sp.add_argument("run")
    sp.add_argument("servers", nargs="*")
    sp.set_defaults(fn=cmd_next)
    sp = sub.add_parser("resolve", help="print the servers SERVER names (or REPEAT)")
    sp.add_argument("--repeat", action="store_true", help="print the number of repetitions")
    sp.set_defaults(fn=cmd_resolve)
    for name, fn, text in (("deps", cmd_deps, "install missing system packages"),
                           ("build", cmd_build, "set up toolchains and build what changed")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("servers", nargs="*")
        sp.set_defaults(fn=fn)
    sub.add_parser("up", help="set up the topology (namespaces, links, ssh master)"
                   ).set_defaults(fn=cmd_up)
    sub.add_parser("down", help="undo `up` (always safe to run)").set_defaults(fn=cmd_down)
    sub.add_parser("guard", help="run-benchmark.sh's guard: lab down and the run marked "
                   "interrupted when the script and its steps vanish").set_defaults(fn=cmd_guard)
    sp = sub.add_parser("gone", help="a vanished step's keeper: mark its run interrupted "
                        "(lab.record.runlock.guard)")
    sp.add_argument("run")
    sp.add_argument("--remove", default="", help="a partial folder inside the run")
    sp.add_argument("--problem", default="", help="what to record in the manifest")
    sp.set_defaults(fn=cmd_gone)
    sub.add_parser("images", help="RUNTIME=docker: make debian:bullseye and debian:bookworm "
                   "locally (debootstrap, docker import) unless they exist"
                   ).set_defaults(fn=cmd_images)
    sub.add_parser("new-run", help="make a run folder, print its path").set_defaults(fn=cmd_new_run)
    sp = sub.add_parser("probe", help="robustness probe of one server (a separate start)")
    sp.add_argument("run")
    sp.add_argument("server")
    sp.set_defaults(fn=cmd_probe)
    sp = sub.add_parser("sweep", help="verify, warm up and sweep one server, one repetition")
    sp.add_argument("run")
    sp.add_argument("server")
    sp.add_argument("rep", type=int, nargs="?", default=1)
    sp.set_defaults(fn=cmd_sweep)
    sub.add_parser("calibrate", help="what each installed client drives against the ceiling"
                   ).set_defaults(fn=cmd_calibrate)
    sp = sub.add_parser("compare", help="run B against run A, with noise-aware verdicts")
    sp.add_argument("a")
    sp.add_argument("b")
    sp.set_defaults(fn=cmd_compare)
    sub.add_parser("noise", help="this host's A/A noise of SERVER: the same server twice in "
                   "one run; its floor kept for compare (make noise)").set_defaults(fn=cmd_noise)
    sub.add_parser("history", help="SERVER across the runs in RESULTS, as a table "
                   "(make history)").set_defaults(fn=cmd_history)
    sp = sub.add_parser("finish", help="mark a run complete or incomplete")
    sp.add_argument("run")
    sp.add_argument("status", type=int)
    sp.set_defaults(fn=cmd_finish)
    for name, fn, text in (("plot", cmd_plot, "draw the charts of a run"),
                           ("report", cmd_report, "summarise a run"),
                           ("rerun", cmd_rerun, "run again with a run's recorded settings")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("run")
        sp.set_defaults(fn=fn)
    sp = sub.add_parser("bmf", help="a run in bencher.dev's metric format (BMF JSON), one "
                        "measure per gated figure")
    sp.add_argument("run")
    sp.add_argument("--output", default="", help="the file to write (default: stdout)")
    sp.set_defaults(fn=cmd_bmf)
    sp = sub.add_parser("use", help="the USE method read off a run: utilisation, saturation "
                        "and errors of each resource (make use)")
    sp.add_argument("run")
    sp.set_defaults(fn=cmd_use)
    sp = sub.add_parser("live", help="a line a second (rate, server and client CPU, run "
                        "queue, TIME_WAIT) while a run measures")
    sp.add_argument("run", nargs="?", default="", help="a run folder (default: the newest "
                    "running one in RESULTS)")
    sp.add_argument("--seconds", type=int, default=0, help="stop after this many (0: when "
                    "the run ends)")
    sp.set_defaults(fn=cmd_live)
    sub.add_parser("workshop-prepare", help="build, install and calibrate everything "
                   "docs/workshop.md uses, then say ready (make workshop-prepare)"
                   ).set_defaults(fn=cmd_workshop_prepare)
    sp = sub.add_parser("cost", help="instructions per request under cachegrind, "
                        "separate starts (make cost)")
    sp.add_argument("--check", action="store_true",
                    help="validate only; print the native servers to build")
    sp.set_defaults(fn=cmd_cost)
    sp = sub.add_parser("profile", help="CPU profiles of a run's servers at PROFILE_AT "
                        "(separate starts; make profile)")
    sp.add_argument("run")
    sp.add_argument("--check", action="store_true", help="validate only")
    sp.set_defaults(fn=cmd_profile)
    sp = sub.add_parser("reproduce", help="a published study, with two clients; claims judged")
    sp.add_argument("study", nargs="?", default="", help="a study id from docs/claims.toml")
    sp.set_defaults(fn=cmd_reproduce)
    sp = sub.add_parser("claims", help="a study's claims judged on runs made earlier")
    sp.add_argument("--study", default="", help="a study id from docs/claims.toml")
    sp.add_argument("runs", nargs="*", help="run folders (or make reproduce folders)")
    sp.set_defaults(fn=cmd_claims)
    sp = sub.add_parser("agree", help="the verdicts two runs share (an A/A or a rerun check)")
    sp.add_argument("run_a")
    sp.add_argument("run_b")
    sp.set_defaults(fn=cmd_agree)
    return p


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def on_stop(signum: int, frame: FrameType | None) -> None:
    """The first INT, TERM or HUP interrupts the step (KeyboardInterrupt: it
    stops its server and client and saves what it has); repeats are ignored,
    so that the cleanup is not cut short (a Ctrl-C reaches the step both from
    the terminal and through run-benchmark.sh)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):
        return fail("the lab needs Python 3.11 or newer (tomllib)", Exit.BAD_INPUT)
    for sig in STOP_SIGNALS:         # INT too: a background step starts with it ignored
        signal.signal(sig, on_stop)
    args = parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except (ConfigError, ManifestError, procs.PortBusy, files.RecordError) as e:
        return fail(str(e), Exit.BAD_INPUT)
    except OSError as e:               # a full disk, a folder that cannot be written: one line
        where = f"{e.filename}: " if e.filename else ""
        return fail(f"{where}{e.strerror or e}", Exit.FAILED)
    except KeyboardInterrupt:
        return fail("interrupted", Exit.INTERRUPTED)
