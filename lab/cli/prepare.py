"""The steps before a run: list the servers, check the settings and the
servers' checklist, print the settings' and exit codes' tables, install
what is missing and build what changed."""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from lab.setup.paths import ROOT
from lab.analyse import policy
from lab.measure import buildlock, deps, topologies
from lab.host import procs
from lab.record import files, folder
from lab.setup import checklist, stepcheck
from lab.setup.exits import Exit
from lab.setup import paths
from lab.setup.paths import cache_dir
from lab.measure.clients import axes
from lab.measure.launch import Knobs, lab_env, placeholders
from lab.setup.params import ConfigError, Params, cpu_ranges
from lab.setup.settings_doc import Found, help_text, markdown_table
from lab.setup.servers import Server, ServerSpec, artifact_path, expand, is_built, lookup
from lab.cli.common import compose_services, fail, load_params, refuse_unchecked, servers_found


def shown(text: str) -> str:
    """A manifest's text as one table cell: a newline or another control
    character written as its escape (\\n), so that it cannot break the table."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in text)


def cmd_list(_: argparse.Namespace) -> int:
    servers = servers_found()
    values = placeholders(ROOT, cache_dir(), Knobs(0, None, 0, ""))
    table = [("server", "language", "framework", "version", "workers", "built", "role")]
    table += [(s.name, s.language, s.framework, s.version,
               "none" if not s.has_workers else
               "as shipped" if s.workers_default is None else str(s.workers_default),
               "yes" if is_built(s, values) else "no", s.role) for s in servers.values()]
    cells = [[shown(cell) for cell in row] for row in table]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    for row in cells:
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
    from lab.setup.servers import manifests
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


def cmd_check(_: argparse.Namespace) -> int:
    notes = stepcheck.check_step("bench", os.environ)   # what make bench would not use: exit 2
    params, servers = load_params()
    refuse_unchecked(params, servers, list(params.servers))
    problem = folder.why_not_writable(ROOT / params.results)     # before deps or builds run
    if problem:
        raise ConfigError(f"RESULTS={params.results}: {problem}; choose a writable place")
    if params.topology in ("local", "docker"):
        procs.check_local_address("BIND", params.bind)      # an address of this host
    if params.topology == "local":
        procs.check_port_free(params.port, params.bind)   # other topologies: in `lab up`
    stepcheck.warn(notes)
    for name, why in sorted(servers.broken.items()):     # those asked for: refused above
        print(f"warning: server {name} cannot be used: {why}", file=sys.stderr)
    for note in servers.skipped:
        print(f"note: {note}", file=sys.stderr)
    topologies.chosen(params).check(params)   # exit 2: not here, host unreachable or lacking
    for w in params.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"plan: {plan(params, servers=compared(params, servers))}", file=sys.stderr)
    print(" ".join(params.servers))                   # for run-benchmark.sh: the servers SERVER names
    return 0


def compared(p: Params, servers: dict[str, Server]) -> int:
    """How many of the run's servers its verdicts compare (the ceiling
    reference, nginx, is never ranked: lab.analyse.analysis)."""
    return sum(1 for n in p.servers if lookup(servers, n).role != "ceiling")


def looks_of(p: Params) -> policy.LookSchedule:
    """The run's looks as the analysis will replay them (lab.analyse.policy:
    start pairs placed for the levels its per-level verdicts split α over)."""
    from lab.setup.plan import RunPlan
    return policy.planned_looks(RunPlan.of(p), p.verdict_at)


def family_need(p: Params, servers: int) -> str:
    """The plan's last words on a run that compares `servers` servers: how
    many starts a side its family of verdicts needs to decide at all
    (lab.analyse.verdicts.starts_needed), and whether REPEAT gives them."""
    from lab.analyse import verdicts
    from lab.analyse.decide import pct
    if servers < 2:
        return ""
    pairs = servers * (servers - 1) // 2
    unit = "start pairs" if p.paired else "starts a side"
    r = p.repeat
    looks = looks_of(p)
    need = verdicts.starts_needed(servers, p.alpha, looks, bool(p.paired))
    fam = f"{pairs} pair{'s' * (pairs != 1)} at α={pct(100 * p.alpha)}%" + (
        f" split to {pct(100 * p.alpha / pairs)}% a pair" if pairs > 1 else "")
    if need is None:
        return (f" | verdicts: {fam}: no look up to REPEAT_MAX={r.most} can decide "
                "(raise REPEAT_MAX)")
    if r.auto:
        return (f" | verdicts: {fam}: from {need} {unit} (REPEAT=auto spreads α over its "
                "looks)")
    short = "" if r.least >= need else \
        f", REPEAT={r.least} cannot (every pair would stay undecided)"
    return f" | verdicts: {fam}: {need} {unit} can decide{short}{level_need(p, pairs, need)}"


def level_need(p: Params, pairs: int, need: int) -> str:
    """', each level's own verdicts (split to 0.17%) from 7, REPEAT=6 cannot
    decide them': where the per-level verdicts (the table under the primary
    ones: a family split over every level, and under one server at a time
    over req/s and CPU per request too, as lab.analyse.verdicts.verdicts and
    lab.analyse.pairverdict split it) need more starts a side than the
    primary verdicts; their α as that table states it; "" where they need
    no more."""
    from lab.analyse import decide, paired
    levels = len(p.verdict_at or p.load)
    if p.paired:
        each = policy.family_alpha(p.alpha, levels)
        more = paired.min_pairs(each / 2)
    else:
        each = policy.family_alpha(p.alpha, 2 * pairs * levels)
        more = decide.min_starts(each / 2)
    if more <= need:
        return ""
    short = f", REPEAT={p.repeat.least} cannot decide them" \
        if need <= p.repeat.least < more else ""
    return f", each level's own verdicts (split to {decide.pct(100 * each)}%) from {more}{short}"


PAIR_OVERHEAD_S = 4          # a start pair's two starts, checks and stops, measured here


def pair_seconds(p: Params, warm_s: int) -> int:
    """One start pair's seconds: each level DURATION and its check slice, a
    warm-up of `warm_s` and PAIR_OVERHEAD_S."""
    from lab.measure.sweep import CHECK_S
    return len(p.load) * (p.duration_s + CHECK_S) + warm_s + PAIR_OVERHEAD_S


def budget(p: Params) -> str:
    """'about 9 min at 13 s a pair': REPEAT_MAX start pairs (pair_seconds). A
    fixed WARMUP gives one figure; WARMUP=auto both ends, its shortest
    warm-up (WARMUP_LEAST_SLICES slices) and every warm-up run to its WARMUP_MAX
    cap (a server that never steadies: undertow's 18 s a pair took 75 s)."""
    from lab.setup.params import WARMUP_LEAST_SLICES, WARMUP_SLICE_S
    most = p.repeat.most
    if not p.warmup_auto:
        each = pair_seconds(p, p.warmup_s)
        return f"about {most * each / 60:.0f} min at {each} s a pair"
    least = pair_seconds(p, min(WARMUP_LEAST_SLICES * WARMUP_SLICE_S, p.warmup_max_s))
    capped = pair_seconds(p, p.warmup_max_s)
    return (f"about {most * least / 60:.0f} min at {least} s a pair with the shortest "
            f"warm-up, up to {most * capped / 60:.0f} min ({capped} s a pair) where every "
            f"warm-up runs to its WARMUP_MAX cap ({p.warmup_max_s}s)")


def plan(p: Params, bind: str | None = None, servers: int = 0) -> str:
    """One line: what the run will do; `bind`: the topology's server address
    (before `lab up`, a topology other than local only names it); `servers`:
    how many of them the verdicts compare (`compared`)."""
    warm = (f"auto (cap {p.warmup_max_s}s)" if p.warmup_auto
            else f"{p.warmup_s}s" if p.warmup_s else "none")
    if p.axis in ("concurrency", "rate"):
        sweep = f"{p.axis} {' '.join(map(str, p.values))}"
    else:
        load = f"c={p.load[0]}" if p.load_axis == "concurrency" else f"rate={p.load[0]}/s"
        sweep = f"{p.axis} {' '.join(map(str, p.values))} at {load}"
    r = p.repeat
    looks = looks_of(p)
    reps = (f" x REPEAT=auto ({r.least} starts each, then one more at a time for pairs still "
            f"undecided, up to {r.most}; ABBA order)" if r.auto
            else f" x {r.least} repetitions (interleaved, ABBA order)" if r.least > 1 else "")
    if p.paired:
        how = ("both loaded at the same moment, PORT and PORT+1" if p.paired == "duet" else
               "both up, each level in alternating slices of one at a time")
        count = (f"REPEAT=auto: {looks.points()[0]} start pairs, then one at a time while "
                 f"undecided, looked at after {', '.join(map(str, looks.points()))} pairs; budget {r.most} "
                 f"pairs, {budget(p)}" if r.auto else f"{r.least} start pairs")
        reps = f" x {count} (PAIRED={p.paired}: {how}; seats swapped every other pair)"
    where = bind or (p.bind if p.topology in ("local", "docker") else p.server_host if p.topology == "ssh"
                     else f"({p.topology} address)")
    if ":" in where and not where.startswith("(") and "@" not in where:
        where = f"[{where}]"                     # an IPv6 address, as in a URL
    return (f"{' '.join(p.servers)}{reps} | {sweep} | {p.duration_s}s each, warm-up {warm} | "
            f"{p.client} {'keep-alive' if p.keepalive else 'connection close'}"
            f"{f', at most {p.connections} connections' if p.connections else ''} | "
            f"{where}:{p.port} backlog {p.backlog} | server CPU {cpu_ranges(p.server_cpus)}, "
            f"client CPU {cpu_ranges(p.client_cpus)}{neighbour_said(p)}"
            f"{family_need(p, servers)}")


def neighbour_said(p: Params) -> str:
    """The plan's words on NEIGHBOUR (lab.measure.neighbour), "" without one."""
    if not p.neighbour:
        return ""
    cpus = set(p.server_cpus) | set(p.client_cpus)
    count = p.neighbour * len(cpus)
    return (f" | neighbour: {count} bursty process{'es' * (count != 1)} on CPU "
            f"{cpu_ranges(cpus)} (NEIGHBOUR={p.neighbour}), its levels flagged neighbour")


def cmd_settings(args: argparse.Namespace) -> int:
    """The settings registry as `make help` shows it, or docs/settings.md's table."""
    from lab.measure.clients import described
    found = Found(described(), axes(), topologies.selectable())
    print(markdown_table(found) if args.markdown else help_text(found))
    return 0


def cmd_exits(args: argparse.Namespace) -> int:
    """The exit codes as `make help` shows them, or docs/settings.md's table."""
    from lab.setup import exits
    print(exits.markdown_table() if args.markdown else exits.help_text())
    return 0


def cmd_deps(args: argparse.Namespace) -> int:
    params, servers = load_params()
    chosen = [lookup(servers, n) for n in (args.servers or params.servers)]
    return deps.ensure(deps.needed(chosen, params.client)) or \
        deps.ensure_client(params.client, cache_dir()) or topologies.deps(params)


def run_logged(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> int:
    """A setup or build command to its end, output to the log (appended,
    never through a link: lab.record.files); watched by the step's keeper (a
    killed `lab build` leaves no compiler running)."""
    try:
        with files.open_binary(log, append=True) as f:
            f.write(f"\n$ {shlex.join(argv)}  (in {cwd})\n".encode())
            f.flush()
            proc = procs.start(argv, cwd, env, f)
    except OSError as e:                    # a full LAB_CACHE: nothing started, the path said
        raise LogLost(paths.cannot_write(log.parent, e)) from None
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
    previous run's or another checkout's. LogLost when the log could not be
    written whole (a full LAB_CACHE): then the output stays in its own log."""
    own = log.with_name(f"{log.stem}.{os.getpid()}.log")
    try:
        files.open_binary(own).close()      # new: whatever was at its name is replaced
    except OSError as e:
        raise LogLost(paths.cannot_write(log.parent, e)) from None
    try:
        code = run_logged(argv, cwd, env, own)
        said = procs.tail(own, 25)
    finally:                                # interrupted too: the shared log keeps it
        lost = keep(own, log)
    if lost:
        raise LogLost(lost)
    if paths.nearly_full(log.parent):       # its output (and what it built) may be cut short
        raise LogLost(f"{paths.cannot_write(log.parent)}; its output in {log} may be cut "
                      f"short (it exited with code {code})")
    return code, said


def keep(own: Path, log: Path) -> str:
    """`own` appended to the shared `log` and removed; "" when done, else why
    not (it then stays, whole, where it is: never a command without its log)."""
    try:
        data = own.read_bytes()
        with files.open_binary(log, append=True) as f:      # never through a link
            f.write(data)
    except OSError as e:
        return f"{paths.cannot_write(log.parent, e)}; this command's output is kept in {own}"
    except files.RecordError as e:          # it became a link during the build
        return f"{e}; this command's output is kept in {own}"
    own.unlink(missing_ok=True)
    return ""


class LogLost(OSError):
    """A setup or build's log could not be written whole (a full LAB_CACHE):
    its outcome cannot be trusted, whatever its exit code."""


def check_log(log: Path) -> None:
    """The shared build log can be appended to (made when missing): UnsafePath
    when it is a link, hard or symbolic (its folder, like LAB_CACHE itself,
    may be one: a cache whose entries are another's)."""
    files.open_binary(log, append=True).close()


def cmd_build(args: argparse.Namespace) -> int:
    params, servers = load_params()
    refuse_unchecked(params, servers, list(args.servers or params.servers))
    cache = cache_dir()
    logs = cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    builds = {(lookup(servers, n).folder, lookup(servers, n).artifact): lookup(servers, n)
              for n in args.servers or params.servers}
    # The lock only where there is a setup or build to run (the test doubles
    # and nginx have none, and never wait for another lab's long build).
    work = any(topologies.needs_build(params, s) and (s.setup or s.build)
               for s in builds.values())
    with buildlock.held(cache) if work else nullcontext():
        return build_all(params, list(builds.values()), cache, logs)


def build_all(params: Params, builds: list[Server], cache: Path, logs: Path) -> int:
    """Every server's setup (toolchains; pinned sources checked, exit 2),
    then every build that is not up to date."""
    for step, s in [(step, s) for step in ("setup", "build") for s in builds]:
        name = ServerSpec.parse(s.name).name
        if not topologies.needs_build(params, s):
            if step == "build":
                print(f"[{name}] build: in its image (RUNTIME={params.runtime}, `lab up`)",
                      file=sys.stderr)
            continue
        knobs = Knobs(params.port, s.workers(params.workers), params.backlog,
                      params.bind)
        values = placeholders(ROOT, cache, knobs)
        env = lab_env(ROOT, cache, "build", knobs, s)
        log = logs / f"build-{name}.log"
        commands = [c for c in [s.setup if step == "setup" else s.build]
                    if c is not None and not (step == "build" and is_built(s, values))]
        try:
            if commands:
                check_log(log)                      # a link there: exit 2, nothing run
        except files.UnsafePath as e:
            return fail(f"{e} (remove it: the lab keeps its build logs there)",
                        Exit.BAD_INPUT)
        for command in commands:
            t0 = time.monotonic()
            print(f"[{name}] {step}: {shlex.join(command.argv)}", file=sys.stderr, flush=True)
            try:
                code, own = run_own_log(expand(command.argv, values), command.dir, env, log)
            except LogLost as e:
                made = artifact_path(s, values) if step == "build" else None
                again = (f"; remove {made} (it may be incomplete) and build again once there "
                         "is room" if made is not None and made.exists() else "")
                return fail(f"{name}: {step} not trusted: {e}{again}", Exit.FAILED)
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
