"""`make reproduce STUDY=<id>`: run a published study's setup and check its claims.

The study comes from docs/claims.toml (lab.analyse.claims). Its setup becomes lab
settings: client, connection mode, levels, duration, warm-up, repetitions,
each server as NAME@N with the published worker count, every NAME@N a claim
names, and the ceiling. Because a client can be the limit, the setup runs
twice: once with the study's client and once with a second client (Siege and
wrk swap roles), same connection mode and levels. Each is an ordinary lab run
(./run-benchmark.sh as a child process) with its own run folder, report,
probe and verification. Settings the user gives override the study's; QUICK=1
is a smoke version whose verdicts mean nothing. Before the first run it
prints each run's estimated wall time and their sum (Estimate: every
WARMUP=auto from its first slices to its cap).

Where the study has a [study.cost], each throughput ratio between two
servers also gets a duet of its two servers (PAIRED=duet, the study's cost
client and levels): where a client was the limit at a server's peak, the
claim is judged by their server CPU per request instead (lab.analyse.claimcost).

The result is results/reproduce-<study>-<stamp>[-N]/ with claims.md (printed
too), claims.json and plan.json: per claim and client, the measured value as
median [min–max], the verdict and its reason.

Exit codes: 0 done, 1 a run failed (what was measured is still judged),
2 bad input (nothing run, no folder made), 130 interrupted.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lab.setup.paths import ROOT
from lab.analyse import (analysis, claimcost, claimjudge, claims, claimsfile, claimtext,
                         costview, claimreasons)
from lab.present import claimsmd
from lab.record import costs, files, folder, rows
from lab.record.manifest import MANIFEST, Manifest, read_manifest
from lab.setup import stepcheck
from lab.analyse.claimsfile import ClaimsError, Study
from lab.analyse.claims import ClaimResult
from lab.analyse.claimjudge import Judged
from lab.measure.clients import clients
from lab.analyse.metrics import LevelStats
from lab.setup.params import (WARMUP_LEAST_SLICES, WARMUP_SLICE_S, ConfigError, default, flag, parse_duration,
                              run_settings)
from lab.measure.sweep import CHECK_S
from lab.setup.servers import ManifestError, Server, ServerSpec, discover, found_here
from lab.setup.markdown import Table

CLAIMS = ROOT / "docs" / "claims.toml"
# Settings the study decides; a user's value would make it another experiment.
STUDY_OWNED = ("SERVER", "CLIENT", "KEEPALIVE", "AXIS", "VALUES", "WORKERS", "PAIRED")
QUICK = {"DURATION": "1s", "REPEAT": "1", "WARMUP": "0", "PROBE": "0"}
QUICK_PAIRS = "2"          # QUICK=1's start pairs a duet: both seats, no verdict
SMOKE = "smoke run: verdicts not meaningful"
# (key, value here, the study's value): why the difference does not matter
SYSCTL_SAME = {("net.ipv4.tcp_tw_reuse", "2", "1"):
               "2 = reuse for loopback only; the lab runs over loopback, so in effect as published"}
RUN_FOLDER = re.compile(r"^run folder: (.+)$")
# After an interrupt, how long run-benchmark.sh gets to stop its step and close
# its run (finish, plot, report: a few seconds) before it is killed.
STOP_WAIT_S = 40.0


class ReproduceError(ValueError):
    """Bad input: nothing has run."""


COST_ROLE = "cost pair"      # a RunPlan's role: a duet that judges claims by cost


@dataclass(frozen=True)
class RunPlan:
    role: str                    # "published client" | "second client" | COST_ROLE
    client: str
    settings: dict[str, str]     # what the run's environment gets
    claims: tuple[str, ...] = ()  # a cost pair: the ids of the claims it judges

    @property
    def paired(self) -> bool:
        return self.role == COST_ROLE


@dataclass(frozen=True)
class Plan:
    study: Study
    quick: bool
    specs: dict[str, ServerSpec]  # name in the study (aws, aws@16) -> how it starts (aws@8)
    runs: tuple[RunPlan, ...]
    overrides: dict[str, str]    # the user's settings that replaced the study's


# --------------------------------------------------------------------------- plan

def server_specs(study: Study) -> dict[str, ServerSpec]:
    """Each server the run loads, as named in the study -> how it starts.
    A plain name gets the study's worker count (NAME@N); a claim's NAME@N is
    its own entry, placed after its plain name; the ceiling comes last."""
    workers = study.setup.workers

    def spec(name: str) -> ServerSpec:
        s = claimsfile.spec_of(name)
        return s if s.workers is not None or name not in workers else \
            replace(s, workers=workers[name])

    named = {s: claimsfile.spec_of(s) for c in study.claims for s in c.servers}
    named = {s: x for s, x in named.items() if x.workers is not None}
    lab = {x.name for x in named.values()} | set(study.setup.servers)
    specs: dict[str, ServerSpec] = {}
    for name in study.setup.servers:
        specs[name] = spec(name)
        for s, x in named.items():
            if x.name == name:
                specs[s] = x
    for s, x in named.items():            # NAME@N of a server the setup does not list
        if x.name in lab:
            specs.setdefault(s, x)
    if study.setup.ceiling:
        specs.setdefault(study.setup.ceiling, spec(study.setup.ceiling))
    return specs


def quick_levels(study: Study) -> tuple[int, ...]:
    """Three published levels at most: the lowest, the highest, and a level a
    claim is judged at (else the middle one)."""
    level_values = sorted(study.setup.levels)
    wanted = {level_values[0], level_values[-1]}
    for c in study.claims:
        if c.at in level_values and len(wanted) < 3:
            wanted.add(c.at)
    if len(wanted) < 3 and len(level_values) >= 3:
        wanted.add(level_values[len(level_values) // 2])
    return tuple(sorted(wanted))


def study_settings(study: Study, quick: bool) -> dict[str, str]:
    """The study's setup as lab settings (without CLIENT)."""
    s = study.setup
    settings = {
        "SERVER": " ".join(dict.fromkeys(map(str, server_specs(study).values()))),
        "KEEPALIVE": "1" if s.connection == "keep-alive" else "0",
        "CONCURRENCY": " ".join(map(str, s.levels)),
        "DURATION": f"{s.duration_s}s",
        "REPEAT": str(s.repetitions),
    } | s.warmup.settings()
    if quick:
        settings |= QUICK | {"CONCURRENCY": " ".join(map(str, quick_levels(study)))}
    return settings


def merged(base: Mapping[str, str], given: Mapping[str, str]) -> dict[str, str]:
    """The study's settings with the user's over them; the study's WARMUP_MAX
    is dropped where the warm-up is no longer auto (QUICK=1, a fixed WARMUP)."""
    out = dict(base) | dict(given)
    if out.get("WARMUP", "auto") != "auto" and "WARMUP_MAX" not in given:
        out.pop("WARMUP_MAX", None)
    return out


def cost_runs(study: Study, quick: bool, given: Mapping[str, str]) -> list[RunPlan]:
    """A duet a pair of servers that a throughput ratio compares (claims that
    share their two starts share one), with the study's [study.cost]."""
    cost = study.cost
    if cost is None:
        return []
    specs = server_specs(study)
    found: dict[tuple[str, ...], tuple[tuple[int, ...], list[str]]] = {}
    for c in study.claims:
        if claimcost.way(c) != claimcost.DUET or any(x in c.unavailable for x in c.requires):
            continue
        starts = tuple(str(claimsfile.start_of(specs, x)) for x in c.servers)
        levels = claimcost.levels_of(c, cost.levels)
        had = found.get(starts, ((), []))
        found[starts] = (tuple(dict.fromkeys(had[0] + levels)), had[1] + [c.id])
    out = []
    for starts, (levels, ids) in found.items():
        settings = {"SERVER": " ".join(starts), "PAIRED": "duet", "CLIENT": cost.client,
                    "KEEPALIVE": "1" if study.setup.connection == "keep-alive" else "0",
                    "CONCURRENCY": " ".join(map(str, sorted(levels))),
                    "DURATION": f"{cost.duration_s}s", "REPEAT": str(cost.pairs)}
        if quick:
            settings |= QUICK | {"REPEAT": QUICK_PAIRS, "CONCURRENCY": str(min(levels))}
        out.append(RunPlan(COST_ROLE, cost.client, settings | dict(given), tuple(ids)))
    return out


def user_settings(env: Mapping[str, str]) -> dict[str, str]:
    """The lab settings the user gave; those the study owns are refused."""
    owned = [k for k in STUDY_OWNED if env.get(k, "").strip()]
    if owned:
        raise ReproduceError(
            f"{', '.join(owned)} {'is' if len(owned) == 1 else 'are'} set by the study "
            f"(docs/claims.toml); unset {'it' if len(owned) == 1 else 'them'} for "
            "`make reproduce`, or use `make bench` for another setup")
    return {k: env[k] for k in run_settings() if k in env and k not in STUDY_OWNED}


def make_plan(study: Study, env: Mapping[str, str]) -> Plan:
    try:
        quick = flag("QUICK", env.get("QUICK", "").strip() or "0")
    except ConfigError as e:
        raise ReproduceError(str(e)) from None
    given = user_settings(env)
    base = study_settings(study, quick)
    first = study.setup.client
    found = clients()
    second = found[first].cross_check if first in found else ""   # a client's own pairing
    published = study.setup.published_client
    role = "published client" if first in published.lower() else \
        f"study's client (published: {published.split(' (')[0] or first})"
    runs = [RunPlan(role, first, merged(base, given) | {"CLIENT": first})]
    if second:
        runs.append(RunPlan("second client", second, merged(base, given) | {"CLIENT": second}))
    runs += cost_runs(study, quick, given)
    overrides = {k: v for k, v in given.items() if base.get(k) != v}
    return Plan(study, quick, server_specs(study), tuple(runs), overrides)


# A start's launch, readiness check and stop beyond its load: lab.cli.prepare's
# PAIR_OVERHEAD_S, measured for a start pair, taken for a sweep's start too.
START_OVERHEAD_S = 4


@dataclass(frozen=True)
class Estimate:
    """A run's (or a plan's) wall time, estimated from its settings: every
    start's warm-up, its levels (DURATION and the check slice each) and
    START_OVERHEAD_S. `low_s`: each WARMUP=auto settles after its first 3
    slices; `high_s`: each runs to its cap (WARMUP_MAX), as a JVM still
    compiling does. Not counted: the probe's separate starts, builds, and
    the instruction counts (`make cost`) after the runs."""
    low_s: int
    high_s: int

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.low_s + other.low_s, self.high_s + other.high_s)

    def text(self) -> str:
        """'2 h 58 min to 3 h 55 min'."""
        low, high = hm(self.low_s), hm(self.high_s)
        return low if low == high else f"{low} to {high}"


def hm(seconds: int) -> str:
    """'40 s', '45 min', '3 h 05 min'."""
    if seconds < 60:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def run_estimate(run: RunPlan) -> Estimate:
    """One run's estimate (Estimate) from its settings, the lab's defaults where
    it gives none. A sweep starts each server REPEAT times; a duet starts both
    at once, REPEAT start pairs. REPEAT=auto: REPEAT_MIN to REPEAT_MAX."""
    def get(key: str) -> str:
        return run.settings.get(key, "").strip() or default(key)
    level_s = len(get("CONCURRENCY").split()) * (parse_duration("DURATION", get("DURATION"))
                                                 + CHECK_S)
    if get("WARMUP") == "auto":
        warm = (min(WARMUP_LEAST_SLICES * WARMUP_SLICE_S,
                    parse_duration("WARMUP_MAX", get("WARMUP_MAX"))),
                parse_duration("WARMUP_MAX", get("WARMUP_MAX")))
    else:
        fixed = parse_duration("WARMUP", get("WARMUP"), allow_zero=True)
        warm = (fixed, fixed)
    repeat = get("REPEAT")
    reps = (int(get("REPEAT_MIN")), int(get("REPEAT_MAX"))) if repeat == "auto" else \
        (int(repeat), int(repeat))
    each = 1 if run.paired else len(get("SERVER").split())
    low, high = (each * r * (level_s + w + START_OVERHEAD_S) for r, w in zip(reps, warm))
    return Estimate(low, high)


def plan_estimate(plan: Plan) -> Estimate:
    """The whole reproduction: its runs one after another."""
    total = Estimate(0, 0)
    for run in plan.runs:
        total += run_estimate(run)
    return total


def estimate_lines(plan: Plan) -> list[str]:
    """What `make reproduce` says before it starts: each run's estimate and the sum."""
    lines = []
    for run in plan.runs:
        def get(key: str, s: Mapping[str, str] = run.settings) -> str:
            return s.get(key, "").strip() or default(key)
        warm = get("WARMUP") + (f" (cap {get('WARMUP_MAX')})" if get("WARMUP") == "auto" else "")
        lines.append(f"[reproduce] {run.client} ({run.role}): {get('SERVER')}, "
                     f"REPEAT={get('REPEAT')}, WARMUP={warm}: estimated "
                     f"{run_estimate(run).text()}")
    lines.append(f"[reproduce] {plan.study.id}: estimated {plan_estimate(plan).text()} "
                 "(the lower figure with every WARMUP=auto settled after its first 8 slices, the "
                 "higher with each at its cap; probes and `make cost` not counted)")
    return lines


def find_study(name: str, lab_servers: set[str]) -> Study:
    """The study `name` from docs/claims.toml, its names checked against the lab's."""
    try:
        if not name:
            raise ReproduceError(f"give STUDY=<id>; known studies: "
                                 f"{', '.join(claimsfile.ids(CLAIMS))}")
        studies = claimsfile.load(CLAIMS, lab_servers, only=name)
    except ClaimsError as e:
        raise ReproduceError(str(e)) from None
    return next(s for s in studies if s.id == name)


# --------------------------------------------------------------------------- run

@dataclass(frozen=True)
class RunDone:
    plan: RunPlan
    code: int
    folder: Path | None          # the run folder run-benchmark.sh made


def child_env(env: Mapping[str, str], run: RunPlan) -> dict[str, str]:
    """A run's environment: without make reproduce's own settings (STUDY,
    QUICK), which make bench would refuse."""
    return {**stepcheck.only_for("bench", env), **run.settings}


def preflight(plan: Plan, env: Mapping[str, str]) -> int:
    """`lab check` for every run before anything starts: bad settings exit 2."""
    for run in plan.runs:
        code = subprocess.run([sys.executable, "-m", "lab", "check"], cwd=ROOT,
                              env=child_env(env, run), stdin=subprocess.DEVNULL).returncode
        if code:
            return code
    return 0


def run_benchmark(run: RunPlan, env: Mapping[str, str]) -> RunDone:
    """./run-benchmark.sh with the run's settings; its stderr is passed on and
    read for the run folder it names."""
    folder: Path | None = None
    # A SIGTERM when this process dies, however (util-linux setpriv, where it
    # is): the script then stops its step and finishes the run, as on `kill`.
    wrap = ["setpriv", "--pdeathsig", "TERM"] if shutil.which("setpriv") else []
    with subprocess.Popen([*wrap, str(ROOT / "run-benchmark.sh")], cwd=ROOT,
                          env=child_env(env, run),
                          stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          errors="replace") as child:
        assert child.stderr is not None
        try:
            for line in child.stderr:
                sys.stderr.write(line)
                sys.stderr.flush()
                m = RUN_FOLDER.match(line.rstrip("\n"))
                if m and folder is None:
                    folder = (ROOT / m.group(1)).resolve()
            code = child.wait()
        except KeyboardInterrupt:     # Ctrl-C reached the child too; SIGTERM only us: pass it on
            child.terminate()         # it stops its step and closes its run (a few seconds);
            # a script that has not ended by then is killed: its guard (lab guard)
            # then undoes the topology and marks the run interrupted
            watchdog = threading.Timer(STOP_WAIT_S, stop_late, (child,))
            watchdog.daemon = True
            watchdog.start()
            for line in child.stderr:  # its last lines still say where and why
                sys.stderr.write(line)
                m = RUN_FOLDER.match(line.rstrip("\n"))
                if m and folder is None:
                    folder = (ROOT / m.group(1)).resolve()
            child.wait()
            watchdog.cancel()
            raise Interrupted(RunDone(run, 130, folder)) from None
    return RunDone(run, code, folder)


def stop_late(child: subprocess.Popen[str]) -> None:
    """run-benchmark.sh still running STOP_WAIT_S after its SIGTERM: killed."""
    if child.poll() is None:
        print(f"[reproduce] run-benchmark.sh had not stopped {STOP_WAIT_S:g} s after its "
              "SIGTERM: killed; its guard marks the run interrupted", file=sys.stderr,
              flush=True)
        child.kill()


class Interrupted(KeyboardInterrupt):
    """The run was interrupted; what it measured is in `done`."""

    def __init__(self, done: RunDone) -> None:
        super().__init__()
        self.done = done


# --------------------------------------------------------------------------- judge

# what the one judge adds when two of a claim's servers are one start here
BY_CONSTRUCTION = "; a comparison would hold by construction"


@dataclass(frozen=True)
class JudgedRun:
    """One run of the reproduction (one client) and the study's claims judged
    on it, in the study's order; its manifest (None: none readable)."""
    done: RunDone
    judged: tuple[claimjudge.Judged, ...]
    conditions: str
    manifest: Manifest | None = None

    @property
    def results(self) -> tuple[ClaimResult, ...]:
        return tuple(j.result for j in self.judged)


def run_stats(folder: Path) -> dict[str, list[LevelStats]]:
    """A run's level statistics, from its analysis (RecordError when unreadable)."""
    return analysis.of(folder)[1].stats


def stats_by_name(plan: Plan, folder: Path | None) -> dict[str, list[LevelStats]]:
    """The run's level statistics under the names the claims use (aws, not aws@8)."""
    if folder is None or not (folder / rows.CSV).exists():
        return {}
    try:
        by_spec = run_stats(folder)
    except files.RecordError as e:
        print(f"warning: {e}", file=sys.stderr)
        return {}
    return {name: by_spec[str(spec)] for name, spec in plan.specs.items()
            if str(spec) in by_spec}


def stand_in_note(study: Study, c: claimsfile.Claim) -> str:
    notes = [f"stand-in: {s.lab} for {s.published} ({s.note})" for s in study.stands_for
             if s.stand_in and s.lab in {claimsfile.spec_of(x).name for x in c.servers}]
    return "; ".join(notes)


def judge(plan: Plan, done: RunDone, available: set[str]) -> JudgedRun:
    """Every claim of the study on one run (lab.analyse.claimjudge), with a
    stand-in's note and, where not reproduced, its reasons."""
    stats = stats_by_name(plan, done.folder)
    manifest, cond = None, "no run folder"
    if done.folder is not None and (done.folder / MANIFEST).exists():
        try:
            manifest = read_manifest(done.folder)
            cond = analysis.conditions(manifest)
        except files.RecordError as e:
            cond = f"manifest unreadable ({e})"
    out = []
    for c in plan.study.claims:
        r = claimjudge.judge(c, stats, plan.specs, available, BY_CONSTRUCTION)
        note = stand_in_note(plan.study, c)
        if note and claimjudge.one_start(c, plan.specs) is None:
            r = claimjudge.with_reason(r, f"{r.reason}; {note}")
        why = (claimreasons.reasons(r, plan.study, manifest, stats)
               if manifest is not None and stats and r.verdict != claims.REPRODUCED else [])
        out.append(claimjudge.Judged(done.plan.client, r,
                                     (done.folder,) if done.folder else (), (), tuple(why)))
    return JudgedRun(done, tuple(out), cond, manifest)


def server_cpus(m: Manifest | None) -> int:
    """How many CPUs a run pinned its servers to (0: not recorded)."""
    return claimreasons.cpus(m.pinning.server_cpus) if m is not None else 0


def cost_judged(plan: Plan, sweeps: list[JudgedRun], done: Sequence[RunDone]) -> list[Judged]:
    """Each throughput claim judged by cost (lab.analyse.claimjudge.by_cost):
    ratios on the cost pairs' duets, a flatness on the sweeps."""
    swept = [claimjudge.Sweep(j.done.plan.client, j.done.folder,
                              stats_by_name(plan, j.done.folder), server_cpus(j.manifest))
             for j in sweeps]
    duets = [claimjudge.Duet(d.folder, stats_by_name(plan, d.folder)) for d in done
             if d.plan.paired and d.folder is not None]
    return [j for c in plan.study.claims
            if (j := claimjudge.by_cost(plan.study, c, swept, duets)) is not None]


# --------------------------------------------------------------------------- output

def sysctl_lines(study: Study) -> list[str]:
    out = []
    for item in study.setup.sysctl:
        key, _, want = item.partition("=")
        try:
            here = Path("/proc/sys", *key.split(".")).read_text().strip()
        except OSError:
            here = "not present"
        same = "as published" if here == want.strip() else \
            SYSCTL_SAME.get((key, here, want.strip()), "differs; the lab does not change it")
        out.append(f"- `{key}`: study {want.strip()}, here {here} ({same})")
    return out


def pair_conditions(d: RunDone) -> str:
    """A cost pair's conditions, from its manifest."""
    if d.folder is None or not (d.folder / MANIFEST).exists():
        return "no run folder"
    try:
        return analysis.conditions(read_manifest(d.folder))
    except files.RecordError as e:
        return f"manifest unreadable ({e})"


def runs_section(folder: Path, judged: list[JudgedRun], pairs: Sequence[RunDone] = ()
                 ) -> list[str]:
    rows = []
    for d, cond in [(j.done, j.conditions) for j in judged] + \
            [(p, pair_conditions(p)) for p in pairs]:
        if d.folder is None:
            where, rep = "—", "—"
        else:
            rel = os.path.relpath(d.folder, folder)
            where, rep = f"[{d.folder.name}]({rel}/)", f"[report.html]({rel}/report.html)"
        rows.append([d.plan.client, d.plan.role, str(d.code), where, rep, cond])
    return Table(["client", "role", "exit", "run folder", "report", "conditions"],
                 rows).escaped().lines()


def claims_section(judged: list[JudgedRun], costs: Sequence[Judged] = ()) -> list[str]:
    head = ["claim", "published"]
    for j in judged:
        head += [f"{j.done.plan.client}: measured", f"{j.done.plan.client}: verdict (reason)"]
    by_cost = {j.result.claim.id: j.result for j in costs}
    if by_cost:
        head.append("by cost: verdict (reason)")
    head.append("overall" if len(judged) < 2 else
                "both clients, or cost where they were the limit" if by_cost else "both clients")
    rows = []
    for i, c in enumerate(judged[0].results if judged else []):
        cells = [claimsmd.label(c.claim), claimtext.published_text(c.claim)]
        for j in judged:
            r = j.results[i]
            cells += [claimtext.measured_text(r), f"**{r.verdict}**: {r.reason}"]
        cost = by_cost.get(c.claim.id)
        if by_cost:
            cells.append(f"**{claimtext.verdict_text(cost)}**: {cost.reason}" if cost else "—")
        cells.append(claimjudge.overall([j.results[i] for j in judged]
                                        + ([cost] if cost else [])))
        rows.append(cells)
    return Table(head, rows).escaped().lines()


def render(plan: Plan, folder: Path, judged: list[JudgedRun],
           pairs: Sequence[RunDone] = (), costs: Sequence[Judged] = ()) -> str:
    st = plan.study
    lines = [f"# Reproduction of `{st.id}`: {st.title}", "",
             f"{st.author}, {st.source}, {st.date}. {st.url}", ""]
    if plan.quick:
        duets = [r for r in plan.runs if r.paired]
        few = (f"; cost pairs: {QUICK_PAIRS} pairs at c={duets[0].settings['CONCURRENCY']}"
               if duets else "")
        lines += [f"**{SMOKE}** (QUICK=1: {', '.join(f'{k}={v}' for k, v in QUICK.items())}, "
                  f"levels {plan.runs[0].settings['CONCURRENCY']}{few}).", ""]
    if plan.overrides:
        lines += ["Settings given by the user (they replace the study's): "
                  + ", ".join(f"{k}={v}" for k, v in plan.overrides.items()) + ".", ""]
    lines += ["## Claims", ""] + claims_section(judged, costs) + [""]
    lines += why_section(plan, judged, costs)
    lines += ["## Runs", ""]
    lines += runs_section(folder, judged, pairs) + [""]
    for d in [j.done for j in judged] + list(pairs):
        s = d.plan.settings
        who = f"{d.plan.client} ({COST_ROLE}: {', '.join(d.plan.claims)})" if d.plan.paired \
            else d.plan.client
        lines.append(f"- {who}: " + " ".join(
            f"{k}={s[k]!r}" if " " in s[k] else f"{k}={s[k]}" for k in sorted(s)))
    lines += ["", "## Published conditions", "", st.conditions, ""]
    lines += [f"Published client: {st.setup.published_client or st.setup.client}. "
              + st.setup.notes, ""]
    lines += sysctl_lines(st)
    lines += ["", "## Servers", ""]
    lines += [f"- {name} runs as `{spec}`" for name, spec in plan.specs.items()]
    lines += [f"- {s.published}: `{s.lab}`{' (stand-in)' if s.stand_in else ''}: {s.note}"
              for s in st.stands_for]
    lines += [f"- {u.published}: unavailable ({u.reason})" for u in st.unavailable]
    return "\n".join(lines) + "\n"


def why_section(plan: Plan, judged: list[JudgedRun], costs: Sequence[Judged] = ()
                ) -> list[str]:
    """Each claim not reproduced, per client: its three measured reasons
    (lab.analyse.claimreasons) and the variants that test them; then the conditions,
    published against here. Only runs with a readable manifest."""
    read = [j for j in judged if j.manifest is not None]
    if not read or read[-1].manifest is None:
        return []
    lines = claimsmd.why_lines(plan.study, [x for j in read for x in j.judged] + list(costs),
                                 plan.specs)
    return (["## Why not reproduced", ""] + (lines or ["Every claim was reproduced."])
            + ["", "## Conditions, published against here", ""]
            + claimsmd.conditions_table(plan.study, read[-1].manifest) + [""])


def to_json(plan: Plan, judged: list[JudgedRun], pairs: Sequence[RunDone] = (),
            costs: Sequence[Judged] = ()) -> dict[str, Any]:
    """claims.json (lab.analyse.claimjudge.to_json) with the plan and each run's
    exit, the cost pairs' runs among them."""
    def run(d: RunDone, conditions: str) -> dict[str, Any]:
        return {"client": d.plan.client, "role": d.plan.role, "settings": d.plan.settings,
                "exit": d.code, "folder": str(d.folder) if d.folder else None,
                "report": str(d.folder / "report.html") if d.folder else None,
                "conditions": conditions}
    runs = [run(j.done, j.conditions) for j in judged] + \
        [run(d, pair_conditions(d)) for d in pairs]
    return claimjudge.to_json("reproduce", plan.study, runs,
                              [x for j in judged for x in j.judged] + list(costs),
                              quick=plan.quick, smoke=SMOKE if plan.quick else None,
                              specs=specs_json(plan), overrides=plan.overrides)


def specs_json(plan: Plan) -> dict[str, str]:
    return {name: str(spec) for name, spec in plan.specs.items()}


def plan_json(plan: Plan) -> dict[str, Any]:
    est = plan_estimate(plan)
    return {"study": plan.study.id, "quick": plan.quick, "specs": specs_json(plan),
            "overrides": plan.overrides,
            "estimated_s": {"low": est.low_s, "high": est.high_s},
            "runs": [{"client": r.client, "role": r.role, "settings": r.settings,
                      **({"claims": list(r.claims)} if r.paired else {})}
                     for r in plan.runs]}


# --------------------------------------------------------------------------- main

# --------------------------------------------------------------------------- instructions

def ada_claims(plan: Plan, known: dict[str, Server]) -> list[claimsfile.Claim]:
    """Throughput ratios between Ada servers (ASF against AWS, EWS against AWS)."""
    return [c for c in plan.study.claims if c.kind == "ratio" and c.metric == "peak_rps"
            and all(x in c.unavailable or (x in known and known[x].language == "Ada")
                    for x in (claimsfile.spec_of(s).name for s in c.servers))]


def instruction_ratios(plan: Plan, env: Mapping[str, str]) -> list[str]:
    """`make cost` (lab.studies.cost, cachegrind) on the Ada servers of the throughput
    claims between Ada servers, and each claim's instruction ratio beside its
    throughput ratio: noise-free where the throughput is not. Each side is
    counted as the throughput run started it (plan.specs: aws as aws@8, aws@16
    with 16 workers); two sides that are one start get no ratio."""
    known = discover(ROOT, env.get("LAB_SERVER_PATH", ""))
    found = ada_claims(plan, known)
    if not found:
        return []
    # a ratio needs both sides: a claim with an unavailable server is not counted
    names = sorted({str(claimsfile.start_of(plan.specs, x)) for c in found for x in c.servers
                    if not any(claimsfile.spec_of(y).name in c.unavailable for y in c.servers)})
    lines = ["## Instructions per request beside the throughput ratio", "",
             "Claims that compare Ada servers, counted by `make cost` (cachegrind, user "
             "space only, c=1, a separate start each, each server with the workers the "
             "throughput runs gave it): for a throughput ratio a/b, "
             "instructions(b)/instructions(a) is what that ratio would be if both spent "
             "their time in their own user-space code.", ""]
    per: dict[str, float] = {}
    if names:
        cost_env = {**stepcheck.only_for("cost", env), "SERVER": " ".join(names),
                    "COST_LEVELS": "1"}
        if plan.quick:
            cost_env.update(COST_REQUESTS="1000 3000", REPEAT="1")
        out = subprocess.run([sys.executable, "-m", "lab", "cost"], cwd=ROOT, env=cost_env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True)
        folder = next((Path(m.group(1)) for line in out.stderr.splitlines()
                       if (m := RUN_FOLDER.match(line))), None)
        counted = costs.read_costs(folder) if folder is not None else None
        if counted is None:
            lines += [f"- make cost failed (exit {out.returncode}): "
                      f"{out.stderr.strip()[-300:]}", ""]
        else:
            for sc in costview.server_costs(counted):
                if sc.levels:
                    per[sc.server] = sc.levels[0].per_request.median
            lines += [f"Run folder: `{folder}`.", ""]
    for c in found:
        lines.append(instruction_line(c, plan.specs, per))
    return lines + [""]


def not_counted(plan: Plan, env: Mapping[str, str]) -> list[str]:
    """In place of instruction_ratios after an interrupt: what was not counted."""
    if not ada_claims(plan, discover(ROOT, env.get("LAB_SERVER_PATH", ""))):
        return []
    return ["## Instructions per request beside the throughput ratio", "",
            "Not counted: the reproduction was interrupted (`make cost` runs after both "
            "runs).", ""]
def instruction_line(c: claimsfile.Claim, specs: Mapping[str, ServerSpec],
                     per: Mapping[str, float]) -> str:
    """One claim's instruction figures, each named by the start it was counted
    on (NAME@N); none when both sides are one start or one was not counted."""
    x, y = c.servers[:2]
    started = {s: str(claimsfile.start_of(specs, s)) for s in (x, y)}
    a, b = started[x], started[y]
    head = f"- {claimsmd.label(c)}: published throughput ratio {c.published}; "
    if a == b:
        return head + (f"no instruction count: both sides are {a} as started, so a ratio "
                       "would be 1 by construction")
    missing = [s for s in (x, y) if started[s] not in per]
    if missing:
        why = "; ".join(c.unavailable.get(claimsfile.spec_of(s).name, "not counted")
                        for s in missing)
        return head + (f"instructions not counted for "
                       f"{', '.join(started[s] for s in missing)} ({why})")
    return head + (f"instructions per request {a} {per[a]:,.0f} instructions, "
                   f"{b} {per[b]:,.0f} instructions: instruction ratio {b}/{a} = "
                   f"{per[b] / per[a]:.3f} ×")


def lab_servers(env: Mapping[str, str]) -> set[str]:
    return set(found_here(ROOT))            # LAB_SERVER_PATH as lab.setup.paths reads it


def prepare(name: str, env: Mapping[str, str]) -> Plan:
    """The plan for study `name`; ReproduceError (exit 2) when it cannot run."""
    try:
        stepcheck.warn(stepcheck.check_step("reproduce", env))   # what it would not use
    except ConfigError as e:
        raise ReproduceError(str(e)) from None
    try:
        servers = lab_servers(env)
    except ManifestError as e:
        raise ReproduceError(str(e)) from None
    return make_plan(find_study(name, servers), env)


def main(name: str, env: Mapping[str, str]) -> int:
    try:
        plan = prepare(name, env)
    except ReproduceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    code = preflight(plan, env)
    if code:
        return code
    root = ROOT / (env.get("RESULTS", "").strip() or "results")
    out = folder.new_folder(root, f"reproduce-{plan.study.id}-"
                                      f"{time.strftime('%Y%m%d-%H%M%S')}")
    files.write_json(out / "plan.json", plan_json(plan))
    print(f"reproduce folder: {out}", file=sys.stderr, flush=True)
    print("\n".join(estimate_lines(plan)), file=sys.stderr, flush=True)
    done: list[RunDone] = []
    stopped = False
    try:
        for run in plan.runs:
            print(f"[reproduce] {plan.study.id}: {run.client} ({run.role})", file=sys.stderr,
                  flush=True)
            done.append(run_benchmark(run, env))
            if done[-1].code in (2, 130):     # bad input or interrupted: the next fares no better
                stopped = done[-1].code == 130
                break
    except Interrupted as e:
        done.append(e.done)
        stopped = True
    except KeyboardInterrupt:
        stopped = True
    if stopped:                             # nothing new starts after an interrupt
        print("[reproduce] interrupted: judging what was measured, nothing more is run",
              file=sys.stderr, flush=True)
    available = lab_servers(env)
    judged = [judge(plan, d, available) for d in done if not d.plan.paired]
    pairs = [d for d in done if d.plan.paired]
    costs = cost_judged(plan, judged, pairs)
    text = render(plan, out, judged, pairs, costs)
    counted: list[str] = []
    if not stopped:
        try:
            counted = instruction_ratios(plan, env)
        except KeyboardInterrupt:           # during `make cost`: it stops and marks its run
            stopped = True
            print("[reproduce] interrupted: the claims are written without instruction counts",
                  file=sys.stderr, flush=True)
    if stopped:
        counted = not_counted(plan, env)
    text += "\n" + "\n".join(counted)
    files.write_atomic(out / "claims.md", text)
    files.write_json(out / "claims.json", to_json(plan, judged, pairs, costs))
    print(text)
    print(f"claims: {out / 'claims.md'}", file=sys.stderr)
    codes = [d.code for d in done]
    if stopped and 2 not in codes:
        return 130
    if 2 in codes or 130 in codes:
        return 2 if 2 in codes else 130
    if len(done) < len(plan.runs):
        return 130
    return 1 if any(codes) else 0
