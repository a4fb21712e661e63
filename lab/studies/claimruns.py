"""`make claims STUDY=<id> RUNS="results/<x> results/<y>"`: a study's claims
judged on runs made earlier (`make bench`, `make reproduce`); nothing is run.

Each run's conditions are checked against the study's setup (lab.analyse.claimsfile.Setup):
client, connection mode, levels, duration, repetitions, servers with their @N,
pinning, topology, JAVA_OPTS. A mismatch is either

- blocking (the claim is not judged on that run: inconclusive, and why):
  another connection mode, a server started with another worker count than
  the study's; or
- noted beside the verdict: another client than the study's (the claims are
  judged per client, as `make reproduce` judges its two), fewer levels,
  shorter levels, fewer repetitions, other pinning, a server sharing the
  client's CPU, another topology, a JAVA_OPTS variant, a run not complete.

Runs are grouped by client. Within a client, a claim is judged on the last
run (in RUNS order) that holds all its servers; when its servers are in
different runs (parts made on different days), it is judged across them only
when their conditions match (connection, duration, repetitions, pinning,
topology, JAVA_OPTS, host CPU): the reason says so.

A duet (PAIRED=duet) among RUNS judges the throughput ratios between its two
servers by cost, and a sweep judges a flatness claim by cost
(lab.analyse.claimcost): where every client's req/s was the limit at a
point the claim needs, that verdict by cost stands for the claim. A duet's
conditions are checked as a sweep's: another connection mode blocks it.

Each claim that is not reproduced or inconclusive carries its reasons
(lab.analyse.claimreasons). The result is results/claims-<study>-<stamp>[-N]/ with
claims.md (printed too) and claims.json.

Exit codes (lab.setup.exits): 0 judged, 2 bad input (no RUNS, unknown STUDY, a folder
that is not a run, a run still running): nothing written.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lab.setup.paths import ROOT
from lab.analyse import analysis, claimjudge, claims, claimsfile, claimtext, claimreasons
from lab.present import claimsmd
from lab.record import files, folder, rows, runlock
from lab.record.manifest import MANIFEST, Manifest
from lab.setup import stepcheck
from lab.analyse.claimjudge import Judged
from lab.analyse.claimsfile import Study
from lab.analyse.claims import ClaimResult
from lab.setup.exits import Exit
from lab.analyse.metrics import MIN_REPS_FOR_VERDICT, LevelStats
from lab.setup.params import ConfigError
from lab.setup.servers import ServerSpec
from lab.setup.markdown import Table



class BadInput(ValueError):
    """Nothing judged, nothing written: exit 2."""


@dataclass(frozen=True)
class Run:
    folder: Path
    manifest: Manifest
    stats: dict[str, list[LevelStats]]       # keyed as the run started them (aws@8)

    @property
    def client(self) -> str:
        return self.manifest.client.tool or self.manifest.params.client

    @property
    def paired(self) -> str:
        """PAIRED of the run: "" for a sweep, duet or rmit."""
        return self.manifest.planned.design


@dataclass(frozen=True)
class RunCheck:
    """A run's conditions against the study's setup (check)."""
    blocking: tuple[str, ...]                # server-independent: the run cannot judge
    noted: tuple[str, ...]
    wrong_workers: dict[str, str]            # study name -> why its start is not the study's


# --------------------------------------------------------------------------- input

def open_run(folder: Path) -> Run:
    """A finished run folder, read; BadInput when it is not a run or still running."""
    if not folder.is_dir():
        raise BadInput(f"{folder}: no such folder")
    if not (folder / MANIFEST).exists() or not (folder / rows.CSV).exists():
        raise BadInput(f"{folder}: not a run folder (no {MANIFEST} and {rows.CSV}); "
                       "give folders made by `make bench` or `make reproduce`")
    try:
        runlock.refuse_busy(folder, "make claims")
    except runlock.Busy as e:
        raise BadInput(str(e)) from None
    try:
        rec, a = analysis.of(folder)
    except files.RecordError as e:
        raise BadInput(f"{folder}: unreadable run ({e})") from None
    return Run(folder, rec.manifest, a.stats)


def expand(words: Sequence[str]) -> list[Path]:
    """RUNS words as folders; a `make reproduce` folder stands for its runs."""
    out: list[Path] = []
    for w in words:
        p = Path(w)
        plan = p / "claims.json"
        if not (p / MANIFEST).exists() and plan.exists():
            data = files.read_json(plan)
            found = [Path(r["folder"]) for r in data.get("runs", []) if r.get("folder")]
            if not found:
                raise BadInput(f"{p}: a reproduce folder without run folders")
            out += found
        else:
            out.append(p)
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- conditions

def started_as(run: Run, name: str, spec: ServerSpec) -> str | None:
    """The key under which `run` holds study server `name` (wanted as `spec`)."""
    if str(spec) in run.stats:
        return str(spec)
    if name in run.stats and spec.workers is not None:
        rec = run.manifest.servers.get(name)
        if rec is not None and rec.workers == spec.workers:
            return name
    return None


def check(study: Study, run: Run, specs: Mapping[str, ServerSpec]) -> RunCheck:
    s, m = study.setup, run.manifest
    blocking: list[str] = []
    noted: list[str] = []
    conn = analysis.mode(m.params.keepalive)
    if conn != s.connection:
        blocking.append(f"connection {conn}, the study's is {s.connection}")
    if run.paired:
        return check_duet(study, run, specs, blocking)
    if run.client != s.client:
        noted.append(f"client {run.client}, the study's is {s.client} (judged as a second "
                     "client)")
    level_values = sorted({x.value for v in run.stats.values() for x in v})
    missing = sorted(set(s.levels) - set(level_values))
    if m.params.axis != "concurrency":
        blocking.append(f"axis {m.params.axis}, the study sweeps concurrency")
    elif missing:
        noted.append(f"{len(set(s.levels) & set(level_values))} of the study's {len(s.levels)} "
                     f"levels (missing {' '.join(map(str, missing))})")
    if m.params.duration_s < s.duration_s:
        noted.append(f"{m.params.duration_s}s per level, the study's is {s.duration_s}s")
    if m.planned.repeat.least < s.repetitions:
        noted.append(f"{m.planned.repeat.text()} repetition(s), the study's setup has "
                     f"{s.repetitions}"
                     + (" (no spread: no verdict)" if m.planned.repeat.least < MIN_REPS_FOR_VERDICT
                        else ""))
    if claimreasons.shares_client_cpu(m):
        noted.append(f"server CPU {m.pinning.server_cpus} shares the client's CPU "
                     f"{m.pinning.client_cpus}: they compete")
    topo = str(m.topology_details.get("name") or m.params.topology or "local")
    if topo != "local":
        noted.append(f"topology {topo}")
    opts = claimreasons.java_opts(m)
    if opts:
        noted.append(f"variant JAVA_OPTS={opts}")
    if m.status != "complete":
        noted.append(f"run {m.status}")
    return RunCheck(tuple(blocking), tuple(noted), wrong_workers(run, specs))


def check_duet(study: Study, run: Run, specs: Mapping[str, ServerSpec],
               blocking: list[str]) -> RunCheck:
    """A paired run's conditions against the study's [study.cost]."""
    m, cost = run.manifest, study.cost
    noted: list[str] = []
    if run.paired != "duet":
        blocking.append(f"PAIRED={run.paired}: claims are judged by cost on a duet")
    if cost is None:
        blocking.append("the study judges no claim by cost (no [study.cost])")
    else:
        if run.client != cost.client:
            noted.append(f"client {run.client}, the study's cost pairs use {cost.client}")
        if m.params.duration_s < cost.duration_s:
            noted.append(f"{m.params.duration_s}s per level, the study's cost pairs have "
                         f"{cost.duration_s}s")
        if m.planned.repeat.least < cost.pairs:
            noted.append(f"{m.planned.repeat.text()} start pair(s), the study's cost pairs "
                         f"have {cost.pairs}")
    if m.status != "complete":
        noted.append(f"run {m.status}")
    return RunCheck(tuple(blocking), tuple(noted), wrong_workers(run, specs))


def by_name(run: Run, specs: Mapping[str, ServerSpec]) -> dict[str, list[LevelStats]]:
    """A run's statistics under the study's names (aws for aws@8)."""
    return {name: run.stats[key] for name, spec in specs.items()
            if (key := started_as(run, name, spec)) is not None}


def wrong_workers(run: Run, specs: Mapping[str, ServerSpec]) -> dict[str, str]:
    """Study name -> why the run's start of that server is not the study's
    (another worker count), for each such server."""
    wrong: dict[str, str] = {}
    wanted = {str(s) for s in specs.values()}
    for name, spec in specs.items():
        if started_as(run, name, spec) is None:
            other = [k for k in run.stats if ServerSpec.parse(k).name == spec.name
                     and k not in wanted]
            if other:
                wrong[name] = f"{', '.join(other)} started, the study's is {spec}"
    return wrong


def same_conditions(a: Run, b: Run) -> list[str]:
    """What differs between two runs that a joined claim needs equal."""
    def key(r: Run) -> dict[str, str]:
        m = r.manifest
        return {"connection": analysis.mode(m.params.keepalive),
                "duration": f"{m.params.duration_s}s", "repetitions": m.planned.repeat.text(),
                "server CPU": m.pinning.server_cpus, "client CPU": m.pinning.client_cpus,
                "topology": (m.topology or "?").split(" ")[0],
                "JAVA_OPTS": claimreasons.java_opts(m),
                "host": f"{m.host.cpu_model or '?'} x{m.host.cores or '?'}"}
    ka, kb = key(a), key(b)
    return [f"{k} {ka[k] or '-'} against {kb[k] or '-'}" for k in ka if ka[k] != kb[k]]


# --------------------------------------------------------------------------- judge

def judge_claim(study: Study, c: claimsfile.Claim, runs: list[Run], checks: dict[Path, RunCheck],
                specs: Mapping[str, ServerSpec], available: set[str]) -> Judged | None:
    """One claim on one client's runs; None when no run holds any of its servers."""
    client = runs[0].client

    def holds(r: Run, x: str) -> str | None:
        return started_as(r, x, claimsfile.start_of(specs, x))

    usable = [r for r in runs if not checks[r.folder].blocking]
    blocked = [f"{r.folder.name}: {'; '.join(checks[r.folder].blocking)}" for r in runs
               if checks[r.folder].blocking]
    whole = [r for r in usable if all(holds(r, x) for x in c.servers)]
    chosen: list[Run]
    joined = ""
    also = ""
    if whole:
        chosen = [whole[-1]]
        if len(whole) > 1:
            also = (f"also measured in {', '.join(r.folder.name for r in whole[:-1])}: "
                    "the last given in RUNS is judged")
    else:
        chosen = []
        for x in c.servers:
            r = next((r for r in reversed(usable) if holds(r, x)), None)
            if r is not None and r not in chosen:
                chosen.append(r)
        if not chosen:
            if not any(any(holds(r, x) or checks[r.folder].wrong_workers.get(x)
                           for x in c.servers) for r in runs):
                return None
            why = [f"{r.folder.name}: {checks[r.folder].wrong_workers[x]}"
                   for r in runs for x in c.servers if x in checks[r.folder].wrong_workers]
            res = ClaimResult(c, claims.INCONCLUSIVE,
                              "not judged: " + "; ".join(blocked + why or ["not measured"]))
            return Judged(client, res, tuple(r.folder for r in runs), (), ())
        differ = [f"{a.folder.name} / {b.folder.name}: {d}" for a, b in zip(chosen, chosen[1:])
                  for d in same_conditions(a, b)]
        if differ:
            res = ClaimResult(c, claims.INCONCLUSIVE,
                              "its servers are in runs whose conditions differ, so they are "
                              "not judged across them: " + "; ".join(differ))
            return Judged(client, res, tuple(r.folder for r in chosen), (), ())
        if len(chosen) > 1:
            joined = ("judged across runs " + ", ".join(r.folder.name for r in chosen)
                      + " (their conditions match)")
    stats: dict[str, list[LevelStats]] = {}
    for x in c.servers:
        r = next((r for r in chosen if holds(r, x)), None)
        if r is not None:
            key = holds(r, x)
            assert key is not None
            stats[x] = r.stats[key]
    res = claimjudge.judge(c, stats, specs, available)
    wrong = [f"{checks[r.folder].wrong_workers[x]}" for r in chosen for x in c.servers
             if x not in stats and x in checks[r.folder].wrong_workers]
    if wrong:
        res = claimjudge.with_reason(res, res.reason + "; " + "; ".join(wrong))
    if joined:
        res = claimjudge.with_reason(res, f"{res.reason}; {joined}")
    notes = tuple(dict.fromkeys([n for r in chosen for n in checks[r.folder].noted]
                                + ([also] if also else [])))
    said: tuple[str, ...] = ()
    if res.verdict != claims.REPRODUCED and stats:
        said = tuple(claimreasons.reasons(res, study, chosen[-1].manifest, stats))
    return Judged(client, res, tuple(r.folder for r in chosen), notes, said)


def judge_all(study: Study, runs: list[Run], specs: Mapping[str, ServerSpec],
              available: set[str]) -> tuple[list[Judged], dict[Path, RunCheck]]:
    checks = {r.folder: check(study, r, specs) for r in runs}
    by_client: dict[str, list[Run]] = {}
    for r in runs:
        if not r.paired:
            by_client.setdefault(r.client, []).append(r)
    out: list[Judged] = []
    for c in study.claims:
        found = [j for client_runs in by_client.values()
                 if (j := judge_claim(study, c, client_runs, checks, specs, available))]
        if not found:                      # listed all the same: the study is judged whole
            missing = ", ".join(str(claimsfile.start_of(specs, x)) for x in c.servers)
            found = [Judged("—", ClaimResult(c, claims.INCONCLUSIVE, "not measured: no run "
                                             f"holds {missing}"), (), (), ())]
        out += found
    return out, checks


def judge_costs(study: Study, runs: list[Run], checks: dict[Path, RunCheck],
                specs: Mapping[str, ServerSpec]) -> list[Judged]:
    """Each throughput claim judged by cost (lab.analyse.claimjudge.by_cost) on
    the runs whose conditions do not block it: ratios on the duets, a
    flatness on the sweeps; the runs' noted conditions beside each."""
    usable = [r for r in runs if not checks[r.folder].blocking]
    sweeps = [claimjudge.Sweep(r.client, r.folder, by_name(r, specs),
                               claimreasons.cpus(r.manifest.pinning.server_cpus))
              for r in usable if not r.paired]
    duets = [claimjudge.Duet(r.folder, by_name(r, specs)) for r in usable if r.paired]
    if not sweeps and not duets:
        return []
    out = []
    for c in study.claims:
        cost = claimjudge.by_cost(study, c, sweeps, duets)
        if cost is not None:
            noted = tuple(dict.fromkeys(n for f in cost.runs for n in checks[f].noted))
            out.append(replace(cost, notes=noted))
    return out


# --------------------------------------------------------------------------- output

def render(study: Study, runs: list[Run], judged: list[Judged], checks: dict[Path, RunCheck],
           specs: Mapping[str, ServerSpec], out: Path) -> str:
    lines = [f"# Claims of `{study.id}` judged on runs made earlier", "",
             f"{study.title}: {study.author}, {study.source}, {study.date}. Nothing was run: "
             "`make claims` reads the runs below.", "", "## Runs", ""]
    rows = []
    for r in runs:
        ch = checks[r.folder]
        said = [f"**not judged**: {b}" for b in ch.blocking] + list(ch.noted) + \
            [f"**not the study's**: {w}" for w in ch.wrong_workers.values()]
        rel = os.path.relpath(r.folder, out)
        rows.append([f"[{r.folder.name}]({rel}/)", r.client,
                     analysis.conditions(r.manifest), "; ".join(said) or "—"])
    lines += Table(["run", "client", "conditions", "differs from the study's setup"],
                   rows).escaped().lines()
    lines += ["", "## Claims", ""]
    lines += Table(["claim", "published", "client", "measured", "verdict", "reason",
                    "conditions noted"],
                   [[claimsmd.label(j.result.claim), claimtext.published_text(j.result.claim),
                     j.client, claimtext.measured_text(j.result),
                     f"**{claimtext.verdict_text(j.result)}**", j.result.reason,
                     "; ".join(j.notes) or "—"] for j in judged]
                   ).escaped().lines()
    lines += ["", "## Each claim, all clients together", "",
              "A client that was the limit at a point a claim needs yields to one that "
              "decided; where every client was, the verdict by cost (server CPU per "
              "request) stands for the claim.", ""]
    lines += Table(["claim", "verdict"],
                   [[f"`{c.id}`", claimjudge.overall([j.result for j in judged
                                                      if j.result.claim.id == c.id])]
                    for c in study.claims]).escaped().lines()
    lines += ["", "## Why not reproduced", ""]
    lines += claimsmd.why_lines(study, judged, specs) or ["Every claim judged was reproduced."]
    if runs:
        lines += ["", "## Conditions, published against here", "",
                  f"Here: the manifest of {runs[-1].folder.name}.", ""]
        lines += claimsmd.conditions_table(study, runs[-1].manifest)
    return "\n".join(lines) + "\n"


def to_json(study: Study, runs: list[Run], judged: list[Judged],
            checks: dict[Path, RunCheck], specs: Mapping[str, ServerSpec]) -> dict[str, Any]:
    """claims.json (lab.analyse.claimjudge.to_json) with each run's checks."""
    return claimjudge.to_json(
        "claims", study,
        [{"folder": str(r.folder), "client": r.client,
          "conditions": analysis.conditions(r.manifest),
          "blocking": list(checks[r.folder].blocking), "noted": list(checks[r.folder].noted),
          "wrong_workers": checks[r.folder].wrong_workers} for r in runs],
        judged, specs={name: str(s) for name, s in specs.items()})


# --------------------------------------------------------------------------- main

def prepare(name: str, words: Sequence[str], env: Mapping[str, str]
            ) -> tuple[Study, list[Run], dict[str, ServerSpec], set[str]]:
    from lab.studies import reproduce
    try:
        stepcheck.warn(stepcheck.check_step("claims", env))
    except ConfigError as e:
        raise BadInput(str(e)) from None
    if not words:
        raise BadInput('give RUNS="results/<run> ..." (runs made by make bench or make '
                       "reproduce)")
    try:
        available = reproduce.lab_servers(env)
        study = reproduce.find_study(name, available)
    except (reproduce.ReproduceError, ValueError) as e:
        raise BadInput(str(e)) from None
    runs = [open_run(p) for p in expand(words)]
    return study, runs, reproduce.server_specs(study), available


def main(name: str, words: Sequence[str], env: Mapping[str, str]) -> int:
    try:
        study, runs, specs, available = prepare(name, words, env)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return int(Exit.BAD_INPUT)
    judged, checks = judge_all(study, runs, specs, available)
    order = [c.id for c in study.claims]
    judged = sorted(judged + judge_costs(study, runs, checks, specs),
                    key=lambda j: order.index(j.result.claim.id))
    root = ROOT / (env.get("RESULTS", "").strip() or "results")
    out = folder.new_folder(root, f"claims-{study.id}-{time.strftime('%Y%m%d-%H%M%S')}")
    text = render(study, runs, judged, checks, specs, out)
    files.write_atomic(out / "claims.md", text)
    files.write_json(out / "claims.json", to_json(study, runs, judged, checks, specs))
    print(text)
    print(f"claims: {out / 'claims.md'}", file=sys.stderr)
    return int(Exit.OK)
