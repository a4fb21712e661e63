"""The steps of one run, as run-benchmark.sh calls them: a new run folder,
the topology up and down, the probe, a sweep, the next round of starts, the
run finished (or found gone); and `lab rerun`, which repeats a run."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from lab.setup.paths import ROOT
from lab.measure.clients import host_tools
from lab.measure import hostinfo, topologies
from lab.host import cgroup, procs
from lab.record import calibration, checked, files, folder, manifest, pinning, runlock
from lab.setup import stepcheck
from lab.setup.exits import Exit
from lab.setup.paths import cache_dir
from lab.setup.plan import RunPlan
from lab.setup.params import SETTINGS, ConfigError, Params, format_cpus, run_settings
from lab.setup.servers import Discovered, lookup, outside
from lab.cli.common import (STOP_SIGNALS, client_for, fail, interrupted_text, load_params,
                             recorded_settings)
from lab.record.hostfacts import HostFacts


def cmd_new_run(_: argparse.Namespace) -> int:
    params, servers = load_params()
    with ThreadPoolExecutor(max_workers=1) as pool:    # the tools' versions (mvn -v starts
        return start_run(params, servers, pool.submit(host_tools))   # a JVM), probed meanwhile


def start_run(params: Params, servers: Discovered,
              tools: Future[dict[str, str | None]]) -> int:
    """A new run folder and its manifest; prints the folder."""
    from lab.cli.prepare import compared, plan   # here: the family's other steps need no
    #                                              launch, deps
    topo = topologies.current(params)
    for gone in folder.mark_gone_runs(ROOT / params.results):
        print(f"note: {gone.name} was left running by a lab that is gone: marked interrupted",
              file=sys.stderr)
    run = folder.new_run(ROOT / params.results, params.servers,
                         (params.client, "keepalive" if params.keepalive else "close"))
    files.hold(run)                        # written through its descriptor from now on
    files.open_binary(run / folder.LOCK, run, append=True).close()   # run-benchmark.sh holds it
    files.reserve(run)                     # room for the manifest's last words on a full disk
    _client, conditions = client_for(params, run)
    settings = recorded_settings(params)
    held = cgroup.describe()
    if not held["used"]:
        print(f"warning: no cgroup of the lab's own here ({held['why']}): a process a server "
              "or client starts that leaves its process group and drops its environment "
              "can outlive the run", file=sys.stderr)
    manifest.write_manifest(run, manifest.Manifest(
        run_id=run.name,
        status="running",
        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        reproduce=stepcheck.reproduce_line("bench", settings, outside(params.servers, servers)),
        settings=settings,
        params=manifest.RunParams.parse(checked.obj(params.to_json(), run / manifest.MANIFEST,
                                                 "params")),
        plan=plan(params, topo.bind, compared(params, servers)),
        run_plan=RunPlan.of(params),
        topology=topo.summary,
        topology_details=topo.describe(),
        pinning=pinning.Pinning(server_cpus=format_cpus(params.server_cpus),
                               client_cpus=format_cpus(params.client_cpus)),
        client=manifest.ClientInfo.parse(checked.obj(conditions, run / manifest.MANIFEST, "client")),
        calibration=calibration.last(cache_dir()),
        host=HostFacts.of(topo.server.facts()),
        client_hosts=[HostFacts.of(c.facts(), "client_hosts")
                      for c in topo.clients if not c.same_host_as(topo.server)],
        tools=dict(tools.result()),
        lab=hostinfo.lab_revision(ROOT),
        cgroups=held,
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


def held(args: argparse.Namespace) -> Path:
    """The run folder of a step that writes it while the run is measured,
    held from here to the step's end (lab.record.files.hold): a swap of the
    folder mid-step stops its writes instead of redirecting them; a folder
    that is already a link is refused (UnsafePath: exit 2)."""
    run = Path(args.run)
    files.hold(run)
    return run


def cmd_next(args: argparse.Namespace) -> int:
    """The next round of starts of a run (lab.analyse.nextstarts): "SERVER REP"
    lines in the order to start them (ABBA), nothing when the run is done; the
    starts spent so far go into the manifest (`starts_spent`)."""
    from lab.analyse import nextstarts
    run = held(args)
    m = manifest.read_manifest(run)
    past_min = m.planned.repeat.auto and min((nextstarts.done(m, s)[0] for s in args.servers),
                                            default=0) >= nextstarts.minimum(m)
    a = None
    if past_min:                 # the analysis (and its imports) only when it decides
        from lab.analyse import analysis
        a = analysis.of(run)[1]
    nxt = nextstarts.plan(m, list(args.servers), a)

    def spent(rec: manifest.Manifest) -> None:
        rec.extra["starts_spent"] = {s: nextstarts.done(rec, s)[0] for s in args.servers}
    manifest.update(run, spent)
    print(f"[repeat] {nxt.said}" + ("" if nxt.starts else ": no more starts"),
          file=sys.stderr, flush=True)
    for server, rep in nxt.starts:
        print(f"{server} {rep}")
    return 0


def cmd_up(_: argparse.Namespace) -> int:
    """Set up the topology for the run (namespaces, links, ssh master); exit 2 if it can't."""
    params, _servers = load_params()
    try:
        topologies.chosen(params).up(params)
    except topologies.SetupError as e:
        return fail(str(e), Exit.FAILED)
    topo = topologies.current(params)
    print(f"topology: {topo.summary}", file=sys.stderr)
    return 0


def cmd_down(_: argparse.Namespace) -> int:
    """Undo `lab up`, whatever state it reached."""
    params, _servers = load_params()
    topologies.chosen(params).down(params)
    return 0


def cmd_images(_: argparse.Namespace) -> int:
    """RUNTIME=docker's base images, made locally where they cannot be pulled."""
    from lab.measure.topologies.docker import images
    try:
        return images.images_step()
    except topologies.SetupError as e:
        return fail(str(e), Exit.FAILED)


def cmd_probe(args: argparse.Namespace) -> int:
    """The robustness probe on a separate start of the server; exit 1: not to be loaded."""
    params, servers = load_params()
    topologies.chosen(params).join(params)   # the probe's connections leave from the clients' side
    run = held(args)
    from lab.measure import probe
    try:
        found, code = probe.main_step(params, lookup(servers, args.server), ROOT, cache_dir(),
                                     run)
    except KeyboardInterrupt:
        manifest.add_problem(run, f"probe of {args.server}: interrupted", status="incomplete")
        return fail("interrupted", Exit.INTERRUPTED)
    if found is not None and code:
        manifest.add_problem(run, f"{found.verdict()}: not loaded (FORCE=1 loads it anyway)")
    return code


def cmd_sweep(args: argparse.Namespace) -> int:
    """One start of a server, or (PAIRED: "A+B", as `lab next` prints it) one
    start pair of two (lab.measure.pair)."""
    from lab.measure.sweep import ServerSweep, SweepError
    from lab.measure.pair import PairSweep
    params, servers = load_params()
    topologies.chosen(params).join(params)   # the lab's own connections leave from the clients' side
    run = held(args)
    client, _ = client_for(params, run)
    names = args.server.split("+")
    if len(names) == 2 and params.paired:
        pair = PairSweep(ROOT, cache_dir(), run, (lookup(servers, names[0]),
                                                  lookup(servers, names[1])),
                         params, client, args.rep)
        sides: tuple[ServerSweep, ...] = pair.sides
        work = pair.run_all
    else:
        sides = (ServerSweep(ROOT, cache_dir(), run, lookup(servers, args.server), params,
                             client, args.rep),)
        work = sides[0].run_all
    try:
        work()
        for sweep in sides:
            sweep.save(status="complete" if args.rep >= params.repeat.least else "running",
                       reps_done=args.rep)
        return 0
    except (SweepError, procs.PortBusy, procs.NotReady, topologies.HostLost) as e:
        status, message, code = "failed", str(e), Exit.FAILED
    except files.UnsafePath as e:       # a link planted in the run folder: not written through
        status, message, code = "failed", str(e), Exit.BAD_INPUT
    except OSError as e:                # a full disk, a missing folder: what was written stays
        where = f": {e.filename}" if e.filename else ""
        status, message, code = "failed", f"{e.strerror or e}{where}", Exit.FAILED
    except KeyboardInterrupt as e:
        status, message, code = "interrupted", interrupted_text(e), Exit.INTERRUPTED
    for sweep in sides:
        if sweep.start_record:
            sweep.start_record["status"] = status
    where = f"{args.server} (rep {args.rep})" if params.repeat.most > 1 else args.server
    try:
        with files.last_words():
            for sweep in sides:
                sweep.save(status=status, error=message)
            # incomplete now, not only in `lab finish`: a SIGTERM to the whole
            # group ends run-benchmark.sh before it gets there
            manifest.add_problem(run, f"{where}: {message}", status="incomplete")
    except OSError as e:
        message += f" (and the manifest could not record it: {e.strerror or e})"
    except files.RecordError as e:      # the run folder swapped: its last words go nowhere else
        message += " (so the manifest could not record it)" if str(e) == message else \
            f" (and the manifest could not record it: {e})"
    return fail(f"{where}: {message}\n  finished levels are kept in {run}", code)


def not_measured(m: manifest.Manifest) -> list[str]:
    """Each server and repetition the run did not measure to its end, with why
    (REPEAT=auto: the minimum; a start past it was not owed)."""
    missing = []
    repeat = m.planned.repeat.least
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
    run = held(args)

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
            try:
                files.hold(run)                  # held to the run's end: a swap for a link
            except files.UnsafePath:             # later leaves the link's target alone
                run = None
        elif word == "done":
            finished = True
    if finished:
        return 0
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    try:
        params, _servers = load_params()
        topologies.chosen(params).down(params)
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
    run = held(args)
    if args.remove:
        partial = Path(args.remove).resolve()
        if run.resolve() in partial.parents:
            import shutil
            shutil.rmtree(partial, ignore_errors=True)
    if args.problem:
        manifest.add_problem(run, args.problem)
    folder.mark_gone(run)
    try:
        from lab.present import report, reportpage
        report.write(run)
        reportpage.main_report(run)
    except (OSError, files.RecordError) as e:
        print(f"lab gone: cannot write the report of {run}: {e}", file=sys.stderr)
    return 0


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
    recorded_now.pop({"concurrency": "RATE", "rate": "CONCURRENCY"}[m.planned.load_axis],
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
