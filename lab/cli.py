"""`python3 -m lab STEP`: the steps run-benchmark.sh calls, top-down.

Exit codes: 0 done, 1 a failure while running (results kept, marked
incomplete), 2 bad input or missing prerequisites (nothing started),
130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from types import FrameType

from lab import calibrate, deps, hostinfo, procs, record, report, results, runtimes
from lab.paths import cache_dir
from lab.clients import Client, Options, axes, clients
from lab.launch import Knobs, lab_env, placeholders
from lab.params import SETTINGS, ConfigError, Params, format_cpus, from_env
from lab.servers import ManifestError, Server, discover, expand, is_built, lookup
from lab.sweep import ServerSweep, SweepError

ROOT = Path(__file__).resolve().parents[1]




def fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def servers_found() -> dict[str, Server]:
    return discover(ROOT, os.environ.get("LAB_SERVER_PATH", ""))


def load_params() -> tuple[Params, dict[str, Server]]:
    servers = servers_found()
    params = from_env(os.environ, list(servers), axes())
    return params, servers


def client_for(params: Params, run: Path) -> tuple[Client, dict[str, str]]:
    """The run's client, prepared in the run folder; and its conditions."""
    client = clients()[params.client]()
    return client, client.prepare(run, Options(params.keepalive, params.client_threads))


def cmd_list(_: argparse.Namespace) -> int:
    servers = servers_found()
    values = placeholders(ROOT, cache_dir(), Knobs(0, 0, 0, ""))
    table = [("server", "language", "framework", "version", "workers", "built", "role")]
    table += [(s.name, s.language, s.framework, s.version, str(s.workers_default),
               "yes" if is_built(s, values) else "no", s.role) for s in servers.values()]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def cmd_check(_: argparse.Namespace) -> int:
    params, _servers = load_params()
    problem = results.unwritable(ROOT / params.results)     # before deps or builds run
    if problem:
        raise ConfigError(f"RESULTS={params.results}: {problem}; choose a writable place")
    if params.topology == "local" and params.runtime == "process":
        procs.check_port_free(params.port, params.bind)   # other topologies: in `lab up`
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
    reps = f" x {p.repeat} repetitions (interleaved)" if p.repeat > 1 else ""
    where = bind or (p.bind if p.topology == "local" else p.server_host if p.topology == "ssh"
                     else f"({p.topology} address)")
    return (f"{' '.join(p.servers)}{reps} | {sweep} | {p.duration_s}s each, warm-up {warm} | "
            f"{p.client} {'keep-alive' if p.keepalive else 'connection close'} | "
            f"{where}:{p.port} backlog {p.backlog} | server CPU {format_cpus(p.server_cpus)}, "
            f"client CPU {format_cpus(p.client_cpus)}")


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
    with log.open("ab") as f:
        f.write(f"\n$ {shlex.join(argv)}  (in {cwd})\n".encode())
        f.flush()
        return subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=f, stderr=f).returncode


def cmd_build(args: argparse.Namespace) -> int:
    params, servers = load_params()
    cache = cache_dir()
    logs = cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    builds = {(lookup(servers, n).folder, lookup(servers, n).artifact): lookup(servers, n)
              for n in args.servers or params.servers}
    for s in builds.values():                   # aws and aws@16 are one build
        name = s.name.partition("@")[0]
        if not runtimes.needs_build(params, s):
            print(f"[{name}] build: in its image (RUNTIME={params.runtime}, `lab up`)",
                  file=sys.stderr)
            continue
        knobs = Knobs(params.port, s.workers(params.workers), params.backlog,
                      params.bind)
        values = placeholders(ROOT, cache, knobs)
        env = lab_env(ROOT, cache, "build", knobs, s)
        log = logs / f"build-{name}.log"
        for step, command in (("setup", s.setup), ("build", s.build)):
            if command is None or (step == "build" and is_built(s, values)):
                continue
            t0 = time.monotonic()
            print(f"[{name}] {step}: {shlex.join(command.argv)}", file=sys.stderr, flush=True)
            code = run_logged(expand(command.argv, values), command.dir, env, log)
            if code != 0:
                print(procs.tail(log, 25), file=sys.stderr)
                return fail(f"{name}: {step} failed with exit code {code} (log: {log})",
                            2 if code == 2 else 1)
            print(f"[{name}] {step} done in {time.monotonic() - t0:.1f}s", file=sys.stderr)
        if not is_built(s, values):
            return fail(f"{name}: the build did not produce {s.artifact}", 1)
        print(f"[{name}] built: up to date", file=sys.stderr)
    return 0


def cmd_new_run(_: argparse.Namespace) -> int:
    params, servers = load_params()
    topo = runtimes.current(params)
    run = results.new_run(ROOT / params.results, params.servers)
    _client, conditions = client_for(params, run)
    settings = {k: os.environ.get(k, default) for k, (default, _) in SETTINGS.items()}
    record.write_manifest(run, record.Manifest(
        run_id=run.name,
        status="running",
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        reproduce="make bench " + " ".join(f"{k}={shlex.quote(v)}"
                                           for k, v in settings.items() if v),
        settings=settings,
        params=record.RunParams.parse(record.obj(params.to_json(), run / record.MANIFEST,
                                                 "params")),
        plan=plan(params, topo.bind),
        topology=topo.summary,
        topology_details=topo.describe(),
        pinning=record.Pinning(server_cpus=format_cpus(params.server_cpus),
                               client_cpus=format_cpus(params.client_cpus)),
        client=record.ClientInfo.parse(record.obj(conditions, run / record.MANIFEST, "client")),
        calibration=calibrate.last(cache_dir()),
        host=topo.server.facts(),
        client_hosts=[c.facts() for c in topo.clients if not c.same_host_as(topo.server)],
        tools=dict(hostinfo.tools()),
        lab=hostinfo.lab_revision(ROOT),
    ))
    print(run)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    params, servers = load_params()
    runtimes.join(params)                  # the lab's own connections leave from the clients' side
    run = Path(args.run)
    client, _ = client_for(params, run)
    sweep = ServerSweep(ROOT, cache_dir(), run, lookup(servers, args.server), params, client,
                        args.rep)
    try:
        sweep.run_all()
        sweep.save(status="complete" if args.rep == params.repeat else "running",
                   reps_done=args.rep)
        return 0
    except (SweepError, procs.PortBusy, procs.NotReady, runtimes.HostLost) as e:
        status, message, code = "failed", str(e), 1
    except KeyboardInterrupt:
        status, message, code = "interrupted", "interrupted (Ctrl-C or SIGTERM)", 130
    if sweep.start_record:
        sweep.start_record["status"] = status
    sweep.save(status=status, error=message)
    where = f"{args.server} (rep {args.rep})" if params.repeat > 1 else args.server
    # incomplete now, not only in `lab finish`: a SIGTERM to the whole group
    # ends run-benchmark.sh before it gets there
    record.add_problem(run, f"{where}: {message}", status="incomplete")
    return fail(f"{where}: {message}\n  finished levels are kept in {run}", code)


def cmd_up(_: argparse.Namespace) -> int:
    """Set up the topology for the run (namespaces, links, ssh master); exit 2 if it can't."""
    params, _servers = load_params()
    try:
        runtimes.up(params)
    except runtimes.SetupError as e:
        return fail(str(e), 1)
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
    from lab.runtimes import docker
    try:
        return docker.images_step()
    except runtimes.SetupError as e:
        return fail(str(e), 1)


def cmd_probe(args: argparse.Namespace) -> int:
    """The robustness probe on a separate start of the server; exit 1: not to be loaded."""
    from lab import probe
    params, servers = load_params()
    runtimes.join(params)                  # the probe's connections leave from the clients' side
    run = Path(args.run)
    try:
        found, code = probe.main_step(params, lookup(servers, args.server), ROOT, cache_dir(),
                                     run)
    except KeyboardInterrupt:
        record.add_problem(run, f"probe of {args.server}: interrupted", status="incomplete")
        return fail("interrupted", 130)
    if found is not None and code:
        record.add_problem(run, f"{found.verdict()}: not loaded (FORCE=1 loads it anyway)")
    return code


def cmd_calibrate(_: argparse.Namespace) -> int:
    return calibrate.run(ROOT, cache_dir(), servers_found())


def cmd_compare(args: argparse.Namespace) -> int:
    from lab import compare
    params_root = ROOT / (os.environ.get("RESULTS") or "results")
    return compare.main(Path(args.a), Path(args.b), os.environ.get("FORCE") == "1", params_root)


def cmd_finish(args: argparse.Namespace) -> int:
    """Mark the run complete or incomplete; exit 1 when it is incomplete
    although every step succeeded (a knob value a server could not serve)."""
    run = Path(args.run)

    def finish(m: record.Manifest) -> tuple[bool, list[str]]:
        done = all(s.status == "complete" for s in m.servers.values())
        complete = (args.status == 0 and done and not m.problems
                    and len(m.servers) == len(m.params.servers))
        m.problems = m.problems or ([] if complete else
                                    ["not every server finished every repetition"])
        m.status = "complete" if complete else "incomplete"
        m.finished = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        return complete, m.problems
    complete, problems = record.update(run, finish)
    if not complete and args.status == 0:
        print(f"error: {run.name} is incomplete: {'; '.join(problems)}", file=sys.stderr)
        return 1
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from lab import plot
    run = Path(args.run)
    record.load(run)                    # a folder that is not a readable run: exit 2
    return plot.draw(run)


def cmd_report(args: argparse.Namespace) -> int:
    from lab import html
    run = Path(args.run)
    record.load(run)                    # a folder that is not a readable run: exit 2
    print(report.write(run))
    return html.main_report(run)


def rerun_settings(recorded: dict[str, str], environ: Mapping[str, str],
                   given: Collection[str]) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The settings of a rerun: the recorded ones, except those the user gave
    (`given`, on make's command line or in the environment), which win.
    Returns them and what was overridden: name: (recorded, given)."""
    settings = {k: str(v) for k, v in recorded.items() if k in SETTINGS}
    overridden = {}
    for k in SETTINGS:
        if k in given and k in environ:
            if settings.get(k, "") != environ[k]:
                overridden[k] = (settings.get(k, ""), environ[k])
            settings[k] = environ[k]
    return settings, overridden


def cmd_rerun(args: argparse.Namespace) -> int:
    """Run the benchmark again with the settings a run's manifest recorded;
    settings given now (LAB_GIVEN from make, else the environment) override them."""
    run = Path(args.run)
    m = record.read_manifest(run)
    if not m.settings:
        raise record.RecordError(run / record.MANIFEST, "records no `settings`: it cannot "
                                 "be rerun (made by a lab before settings were recorded?)")
    recorded = m.lab.get("commit")
    now = hostinfo.lab_revision(ROOT)
    if recorded and recorded != now["commit"]:
        print(f"warning: {run.name} was made by lab {recorded}; this is {now['commit']}",
              file=sys.stderr)
    given = os.environ.get("LAB_GIVEN")
    names = given.split() if given is not None else \
        [k for k in SETTINGS if k in os.environ]
    settings, overridden = rerun_settings(m.settings, os.environ, names)
    print(f"rerun of {run.name}: {m.reproduce}", file=sys.stderr)
    for k, (old, new) in overridden.items():
        print(f"rerun: {k}={new!r} given now overrides the recorded {k}={old!r}",
              file=sys.stderr)
    sys.stderr.flush()
    env = {**os.environ, **settings}
    env.pop("LAB_GIVEN", None)
    os.execve(str(ROOT / "run-benchmark.sh"), [str(ROOT / "run-benchmark.sh")], env)


def cmd_reproduce(args: argparse.Namespace) -> int:
    from lab import reproduce
    return reproduce.main(args.study, os.environ)


def cmd_cost(args: argparse.Namespace) -> int:
    """make cost: instructions per request under cachegrind (lab.cost)."""
    from lab import cost
    return cost.main(["--check"] if args.check else [])


def cmd_profile(args: argparse.Namespace) -> int:
    """make profile: CPU profiles of a run's servers at one level (lab.profile)."""
    from lab import profile
    return profile.main([args.run] + (["--check"] if args.check else []))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m lab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    sub.add_parser("list", help="servers found from their manifests").set_defaults(fn=cmd_list)
    sub.add_parser("check", help="validate the settings (exit 2 when bad)").set_defaults(fn=cmd_check)
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
    return p


def on_term(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):
        return fail("the lab needs Python 3.11 or newer (tomllib)", 2)
    signal.signal(signal.SIGTERM, on_term)
    args = parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except (ConfigError, ManifestError, procs.PortBusy, record.RecordError) as e:
        return fail(str(e), 2)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
