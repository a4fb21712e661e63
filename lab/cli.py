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
from pathlib import Path
from types import FrameType

from lab import deps, hostinfo, procs, report, results
from lab.clients import clients
from lab.params import SETTINGS, ConfigError, Params, format_cpus, from_env
from lab.servers import ManifestError, Server, discover, expand, is_built
from lab.sweep import ServerSweep, SweepError, placeholders, lab_env

ROOT = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    return Path(os.environ.get("LAB_CACHE") or ROOT / ".cache").resolve()


def fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def servers_found() -> dict[str, Server]:
    return discover(ROOT, os.environ.get("LAB_SERVER_PATH", ""))


def load_params() -> tuple[Params, dict[str, Server]]:
    servers = servers_found()
    params = from_env(os.environ, list(servers), list(clients()))
    return params, servers


def cmd_list(_: argparse.Namespace) -> int:
    servers = servers_found()
    values = placeholders(ROOT, cache_dir(), 0, 0)
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
    procs.check_port_free(params.port, params.bind)
    for w in params.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"plan: {' '.join(params.servers)} | levels {' '.join(map(str, params.levels))} | "
          f"{params.duration_s}s each, warm-up {params.warmup_s}s | {params.client} "
          f"{'keep-alive' if params.keepalive else 'connection close'} | server CPU "
          f"{format_cpus(params.server_cpus)}, client CPU {format_cpus(params.client_cpus)}",
          file=sys.stderr)
    return 0


def cmd_resolve(_: argparse.Namespace) -> int:
    params, _servers = load_params()
    print(" ".join(params.servers))
    return 0


def cmd_deps(args: argparse.Namespace) -> int:
    params, servers = load_params()
    chosen = [servers[n] for n in (args.servers or params.servers)]
    return deps.ensure(deps.needed(chosen, params.client))


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
    for name in args.servers or params.servers:
        s = servers[name]
        workers = params.workers or s.workers_default
        values = placeholders(ROOT, cache, params.port, workers)
        env = lab_env(ROOT, cache, "build", params.port, workers)
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
    run = results.new_run(ROOT / params.results, params.servers)
    client = clients()[params.client]()
    conditions = client.prepare(run, params.keepalive)
    settings = {k: os.environ.get(k, default) for k, (default, _) in SETTINGS.items()}
    results.write_json(run / results.MANIFEST, {
        "run_id": run.name,
        "status": "running",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "reproduce": "make bench " + " ".join(f"{k}={shlex.quote(v)}"
                                              for k, v in settings.items() if v),
        "settings": settings,
        "params": params.to_json(),
        "topology": "loopback (one host, server and client pinned to disjoint CPUs)",
        "pinning": {"server_cpus": format_cpus(params.server_cpus),
                    "client_cpus": format_cpus(params.client_cpus)},
        "client": conditions,
        "host": hostinfo.host(),
        "tools": hostinfo.tools(),
        "lab": hostinfo.lab_revision(ROOT),
        "servers": {},
        "problems": [],
    })
    print(run)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    params, servers = load_params()
    run = Path(args.run)
    client = clients()[params.client]()
    client.prepare(run, params.keepalive)
    sweep = ServerSweep(ROOT, cache_dir(), run, servers[args.server], params, client)
    try:
        sweep.run_all()
        return 0
    except (SweepError, procs.PortBusy, procs.NotReady) as e:
        status, message, code = "failed", str(e), 1
    except KeyboardInterrupt:
        status, message, code = "interrupted", "interrupted (Ctrl-C or SIGTERM)", 130
    sweep.save(status=status, error=message)
    problems = results.read_manifest(run).get("problems", [])
    results.update_manifest(run, problems=problems + [f"{args.server}: {message}"])
    return fail(f"{args.server}: {message}\n  finished levels are kept in {run}", code)


def cmd_finish(args: argparse.Namespace) -> int:
    run = Path(args.run)
    data = results.read_manifest(run)
    done = all(s.get("status") == "complete" for s in data["servers"].values())
    complete = args.status == 0 and done and len(data["servers"]) == len(data["params"]["servers"])
    results.update_manifest(run, status="complete" if complete else "incomplete",
                            finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from lab import plot
    run = Path(args.run)
    if not (run / results.MANIFEST).exists():
        return fail(f"{run} is not a run folder (no {results.MANIFEST})", 2)
    return plot.draw(run)


def cmd_report(args: argparse.Namespace) -> int:
    run = Path(args.run)
    if not (run / results.MANIFEST).exists():
        return fail(f"{run} is not a run folder (no {results.MANIFEST})", 2)
    print(report.write(run))
    return 0


def cmd_rerun(args: argparse.Namespace) -> int:
    """Run the benchmark again with the settings a run's manifest recorded."""
    run = Path(args.run)
    if not (run / results.MANIFEST).exists():
        return fail(f"{run} is not a run folder (no {results.MANIFEST})", 2)
    m = results.read_manifest(run)
    recorded = m.get("lab", {}).get("commit")
    now = hostinfo.lab_revision(ROOT)
    if recorded and recorded != now["commit"]:
        print(f"warning: {run.name} was made by lab {recorded}; this is {now['commit']}",
              file=sys.stderr)
    settings = {k: str(v) for k, v in m["settings"].items() if k in SETTINGS}
    print(f"rerun of {run.name}: {m['reproduce']}", file=sys.stderr, flush=True)
    env = {**os.environ, **settings}
    os.execve(str(ROOT / "run-benchmark.sh"), [str(ROOT / "run-benchmark.sh")], env)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m lab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    sub.add_parser("list", help="servers found from their manifests").set_defaults(fn=cmd_list)
    sub.add_parser("check", help="validate the settings (exit 2 when bad)").set_defaults(fn=cmd_check)
    sub.add_parser("resolve", help="print the servers SERVER names").set_defaults(fn=cmd_resolve)
    for name, fn, text in (("deps", cmd_deps, "install missing system packages"),
                           ("build", cmd_build, "set up toolchains and build what changed")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("servers", nargs="*")
        sp.set_defaults(fn=fn)
    sub.add_parser("new-run", help="make a run folder, print its path").set_defaults(fn=cmd_new_run)
    sp = sub.add_parser("sweep", help="verify, warm up and sweep one server")
    sp.add_argument("run")
    sp.add_argument("server")
    sp.set_defaults(fn=cmd_sweep)
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
    except (ConfigError, ManifestError, procs.PortBusy) as e:
        return fail(str(e), 2)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
